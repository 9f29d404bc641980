"""Landmarks of dressed and cut bodies against the one-piece body's.

    python bench/bench_dressed_landmarks.py [heavy d01_female d02_heavy_male d05_apose_male]

Each body (the heavy fixture, MakeHuman dev bodies, Y-up, facing +Z) is dressed with
every kind of tests/dressing.py (and all at once, and hair cards) and cut into pieces at the joints;
the body's vertices keep their indices, so each landmark found on the dressed mesh is
compared with the one found on the body alone (distance in % of the height H).  A row
gives the largest distance, the landmarks farther than 0.3 %H, and the tilt of the
body frame's up axis.
"""
from __future__ import annotations

import json
import sys
import time

import numpy as np

from devdata import DEV, ROOT

sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
import asetransfer as at  # noqa: E402
from asetransfer.config import Config  # noqa: E402
from asetransfer.model.mesh import Mesh  # noqa: E402
from asetransfer.stages.markers import landmarks_of  # noqa: E402
from dressing import FIXTURE_JOINTS, KINDS, MAKEHUMAN_JOINTS, cut_faces, dress  # noqa: E402
from test_landmarks import _cut_into_pieces  # noqa: E402

UP, FORWARD = np.array([0.0, 1.0, 0.0]), np.array([0.0, 0.0, 1.0])


def body(case: str):
    """The one-piece body mesh and its joints by dressing role."""
    if case == "heavy":
        truth = json.loads((ROOT / "fixtures" / "target_heavy.truth.json").read_text())["joints"]
        return at.load_mesh(ROOT / "fixtures" / "target_heavy.ply"), {r: np.array(truth[n]) for r, n in FIXTURE_JOINTS.items()}
    rig = at.load_rig(DEV / case / "gt.glb")
    sk = rig.skeleton
    return rig.mesh, {r: sk.bind_world[sk.index(n), :3, 3] for r, n in MAKEHUMAN_JOINTS.items()}


def main(cases):
    config = Config()
    for case in cases:
        whole, joints = body(case)
        height = float(np.ptp(whole.vertices @ UP))
        one = landmarks_of(whole, "target", config)
        print(f"== {case}")
        for kind in ("pieces", *KINDS, "all", "cards"):
            if kind == "pieces":  # the fixture's own cut (tests), the dev bodies' at their joints
                mesh = _cut_into_pieces(whole, 0.01 * height / 1.7) if case == "heavy" else Mesh(whole.vertices, whole.faces[cut_faces(whole, joints, UP, FORWARD)])
            else:
                mesh = dress(whole, kind, joints, UP, FORWARD)
            t = time.time()
            try:
                lm = landmarks_of(mesh, "target", config)
            except Exception as e:  # noqa: BLE001 -- a refusal is a result here
                print(f"  {kind:7s} FAILED {e}")
                continue
            seconds = time.time() - t
            moved = {n: (np.linalg.norm(whole.vertices[v] - mesh.vertices[lm.vertex[n]]) / height * 100
                         if n in lm.vertex else np.inf) for n, v in one.vertex.items()}
            worst = max(moved, key=moved.get)
            far = " ".join(f"{n}:{d:.2f}" for n, d in sorted(moved.items(), key=lambda x: -x[1]) if d > 0.3)
            tilt = float(np.degrees(np.arccos(np.clip(one.frame.up @ lm.frame.up, -1.0, 1.0))))
            print(f"  {kind:7s} max {moved[worst]:.2f} %H ({worst})  tilt {tilt:.2f} deg  {seconds:.2f} s  {far}")


if __name__ == "__main__":
    main(sys.argv[1:] or ["heavy", "d01_female", "d02_heavy_male", "d05_apose_male"])
