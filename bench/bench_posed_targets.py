"""Dev targets standing in other poses: does the transfer hold when the target is not posed like the source?

    python bench/bench_posed_targets.py [--cases d01_female ...] [--frames NAME ...] [--scale 1.0]
                                        [--markers hand auto]

Each case's ground-truth rig is posed by its own weights (linear blend skinning) by a
frame of the scorer's test poses (``../shared/eval/mheval/data/poses.json``: arms
forward, one arm up, elbows or wrists bent, a half squat, a hip flexed, the spine
bent or twisted, the head turned, fists, two motion-capture frames), each joint's
rotation scaled by ``--scale`` (0.4: the mild version a modelled or scanned rest pose
shows).  The posed mesh, with the case's triangles, is the target; the posed ground
truth's joints and its weights are exact by construction.  The source rig is
transferred onto it with the case's 46 hand markers (moved with their triangles) and
with automatic markers.  Printed per row: body joints' mean and largest error in %
of height (fingers and face left out, as the scorer's ``body`` group), the weight
error (half the L1 difference, area-weighted, the scorer's), the wall time of the
transfer, and the refusal when the transfer stops (exit 2 on the command line).
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
from scipy.spatial.transform import Rotation

from devdata import DEV, EVAL, ROOT, target_path  # noqa: E402

sys.path.insert(0, str(ROOT))
import asetransfer as at  # noqa: E402
from asetransfer.geometry.topology import vertex_areas  # noqa: E402
from asetransfer.model.mesh import Mesh  # noqa: E402
from asetransfer.stages.markers import MarkerError  # noqa: E402

POSES = EVAL / "mheval" / "data" / "poses.json"


def frame_rotations(frame: dict, names: list, scale: float) -> dict:
    """joint index -> (3, 3) local rotation of a poses.json frame (x, y, z, w quaternions),
    its angle scaled by ``scale``."""
    return {names.index(n): Rotation.from_rotvec(scale * Rotation.from_quat(q).as_rotvec()).as_matrix()
            for n, q in frame["rotations"].items() if n in names}


def run_case(case: str, frames: list, scale: float, modes: list) -> None:
    meta = json.loads((DEV / case / "gt.json").read_text())
    hidden = set(meta["finger_joints"]) | set(meta["face_joints"])
    source = at.load_rig(DEV / case / "source.glb")
    gt = at.load_rig(DEV / case / "gt.glb")
    target = at.load_mesh(target_path(case))
    if gt.mesh.n_vertices != target.n_vertices or not np.array_equal(gt.mesh.faces, target.faces):
        raise SystemExit(f"{case}: the ground truth's mesh is not the target's; cannot pose it")
    sk = gt.skeleton
    body = [sk.index(n) for n in sk.names if n not in hidden]
    hand = at.load_markers(DEV / case / "markers_sparse.json", source.mesh, target)
    area = vertex_areas(target.vertices, target.faces)
    area /= area.sum()
    truth_weights = gt.skin.to_sparse().toarray()
    unit = 100.0 / meta["body_height"]
    for frame in frames:
        world = sk.posed_world(frame_rotations(frame, list(sk.names), scale))
        posed = Mesh(gt.posed_vertices(world), target.faces)
        for mode in modes:
            t = time.perf_counter()
            label = f"{case:22s} {frame['name']:20s} {mode:5s}"
            try:
                result = at.transfer(source, posed, hand if mode == "hand" else None)
            except MarkerError as e:
                print(f"{label} refused: {e}", flush=True)
                continue
            out = result.rig.skeleton
            order = [out.index(n) for n in sk.names]
            err = np.linalg.norm(out.bind_world[order, :3, 3] - world[:, :3, 3], axis=1)[body] * unit
            weights = result.rig.skin.to_sparse().toarray()[:, order]
            werr = area @ (0.5 * np.abs(truth_weights - weights).sum(axis=1))
            worst = sk.names[body[int(np.argmax(err))]]
            print(f"{label} body %H {err.mean():5.2f} max {err.max():5.2f} ({worst})  weights {werr:.3f}  "
                  f"{time.perf_counter() - t:5.1f} s", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", nargs="+", default=["d01_female", "d02_heavy_male"])
    ap.add_argument("--frames", nargs="+", help="frame names of poses.json (default: all, after the unposed target)")
    ap.add_argument("--scale", type=float, default=1.0, help="each joint's rotation angle times this")
    ap.add_argument("--markers", nargs="+", default=["hand", "auto"], choices=["hand", "auto"])
    args = ap.parse_args()
    if not DEV.is_dir() or not POSES.is_file():
        raise SystemExit(f"needs the dev data and the scorer's poses: {DEV}, {POSES}")
    frames = [{"name": "unposed", "rotations": {}}] + json.loads(POSES.read_text())["frames"]
    if args.frames:
        frames = [f for f in frames if f["name"] in args.frames]
    print(f"scale {args.scale:g}")
    for case in args.cases:
        run_case(case, frames, args.scale, args.markers)


if __name__ == "__main__":
    main()
