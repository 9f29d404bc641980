"""A-posed copies of the dev cases: the case's ground-truth rig posed by its own weights.

    python bench/apose.py [--cases d01_female ...] [--arms 35] [--legs 6] [--out DIR]

``d05_apose_male`` is the only dev target standing in another pose than its source;
a change to the posed passes is measured on one body unless more exist.  A copy
turns the ground truth's upper arms ``arms`` degrees down (towards -up) and its
thighs ``legs`` degrees outwards (the d05 pose is 35 and 6), skins the mesh with
the ground truth's own weights (linear blend skinning) and writes a case directory
the scorer reads: ``gt.glb`` (the posed rig, rest = bind = the pose), ``gt.json``,
``target.ply`` (the target's triangles, posed vertices), the case's ``source.glb``
and ``markers_sparse.json`` (each hand marker moved with its triangle).  The truth
is exact by construction; the target keeps the case's body, topology and frame.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

import numpy as np

from devdata import DEV, ROOT, cases as dev_cases, target_path  # noqa: E402

sys.path.insert(0, str(ROOT))
import asetransfer as at  # noqa: E402
from asetransfer.geometry.rotations import rotation_about  # noqa: E402
from asetransfer.geometry.surface import SurfaceIndex  # noqa: E402
from asetransfer.humanoid.skeleton_map import propose_skeleton_map  # noqa: E402
from asetransfer.io.ply import write_ply  # noqa: E402
from asetransfer.model.rig import Rig  # noqa: E402
from asetransfer.model.skeleton import Skeleton  # noqa: E402
from asetransfer.model.skin import linear_blend_skinning  # noqa: E402
from asetransfer.model.transforms import closest_rotation  # noqa: E402


def posed_truth(gt: Rig, up: np.ndarray, arms: float, legs: float) -> Rig:
    """``gt`` posed: upper arms ``arms`` degrees towards ``-up``, thighs ``legs`` degrees
    away from the body's middle (perpendicular to ``up``), by its own weights.

    Returns the posed rig with rest = bind = the pose (what a rig modelled in that
    pose stores)."""
    sk = gt.skeleton
    mapping, _ = propose_skeleton_map(sk)
    start = Skeleton.from_world(sk.names, sk.parents, sk.bind_world)
    p0 = sk.bind_world[:, :3, 3]
    across = p0[sk.index(mapping["upper_leg_l"])] - p0[sk.index(mapping["upper_leg_r"])]
    across = across - (across @ up) * up
    across /= np.linalg.norm(across)
    turns = {}
    for side, sign in (("l", 1.0), ("r", -1.0)):
        for start_role, end_role, degrees, towards in (("shoulder", "elbow", arms, -up),
                                                       ("upper_leg", "knee", legs, sign * across)):
            j, c = sk.index(mapping[f"{start_role}_{side}"]), sk.index(mapping[f"{end_role}_{side}"])
            world = start.posed_world(turns)
            bone = world[c, :3, 3] - world[j, :3, 3]
            axis = np.cross(bone, towards)
            axis /= np.linalg.norm(axis)
            r = rotation_about(axis[None], np.array([np.radians(degrees)]))[0]
            w = closest_rotation(world[j, :3, :3])
            turns[j] = turns.get(j, np.eye(3)) @ (w.T @ r @ w)  # the world turn, after the local rotation
    posed = start.posed_world(turns)
    vertices = linear_blend_skinning(gt.mesh.vertices, gt.skin, posed @ np.linalg.inv(start.bind_world))
    return Rig(gt.mesh.with_vertices(vertices), Skeleton.from_world(sk.names, sk.parents, posed), gt.skin)


def a_posed_copy(case: str, out: Path, arms: float = 35.0, legs: float = 6.0) -> Path:
    """Write the A-posed copy of dev ``case`` under ``out``; returns its case directory."""
    meta = json.loads((DEV / case / "gt.json").read_text())
    name = f"{case}_arms{arms:g}_legs{legs:g}"
    where = out / name
    where.mkdir(parents=True, exist_ok=True)
    gt = at.load_rig(DEV / case / "gt.glb")
    target = at.load_mesh(target_path(case))
    if len(target.vertices) != len(gt.mesh.vertices) or np.abs(target.vertices - gt.mesh.vertices).max() > 1e-4 * np.ptp(
            target.vertices):
        raise ValueError(f"{case}: the ground truth's mesh is not the target's")
    posed = posed_truth(gt, np.asarray(meta["up_axis"], float), arms, legs)
    at.save_rig(where / "gt.glb", posed)
    write_ply(where / "target.ply", posed.mesh.vertices, target.faces)
    shutil.copy(DEV / case / "source.glb", where / "source.glb")
    meta.update(case=name, target_file="target.ply", description=f"{case} posed: arms {arms:g} deg down, "
                                                                   f"legs {legs:g} deg out (bench/apose.py)")
    (where / "gt.json").write_text(json.dumps(meta))
    markers = json.loads((DEV / case / "markers_sparse.json").read_text())
    index = SurfaceIndex(target.vertices, target.faces)
    for m in markers["markers"]:
        face, bary, _, _ = index.closest(np.asarray(m["target"]["point"], float)[None])
        m["target"]["point"] = (bary[0] @ posed.mesh.vertices[target.faces[face[0]]]).tolist()
    (where / "markers_sparse.json").write_text(json.dumps(markers, indent=1))
    return where


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", nargs="*")
    ap.add_argument("--arms", type=float, default=35.0)
    ap.add_argument("--legs", type=float, default=6.0)
    ap.add_argument("--out", default="/tmp/asetransfer-apose")
    args = ap.parse_args()
    for case in args.cases or dev_cases():
        print(a_posed_copy(case, Path(args.out), args.arms, args.legs))


if __name__ == "__main__":
    main()
