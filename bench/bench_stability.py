"""Stability of the skeleton transfer (spec Appendix II): identity and round-trip drift.

    python bench/bench_stability.py [--cases d01_female ...] [--markers sparse] [--joints em pa]

* identity: source -> source (the source mesh as its own target, each marker linked
  to itself).  The transferred skeleton must be the source's (to 1e-6).
* round trip: source -> target -> source.  The rigged target becomes the source of a
  second transfer back onto the original source mesh (markers swapped); the drift is
  the distance between the returned joints and the original ones.

Prints joint drift in mm and % of the source's height (mean / max, and the joint
with the largest drift), and the bind-rotation drift in degrees.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

from devdata import DEV, ROOT, target_path  # noqa: E402
sys.path.insert(0, str(ROOT))

from asetransfer.config import Config, SkeletonConfig  # noqa: E402
from asetransfer.io import load_markers, load_mesh, load_rig  # noqa: E402
from asetransfer.model.markers import Markers  # noqa: E402
from asetransfer.stages.transfer import transfer  # noqa: E402
from asetransfer.model.transforms import closest_rotation, rotation_angle  # noqa: E402


def drift(a, b, height):
    """Joint position drift (mm, %H) and rotation drift (degrees) between two skeletons."""
    d = np.linalg.norm(a.bind_world[:, :3, 3] - b.bind_world[:, :3, 3], axis=1)
    r = rotation_angle(np.swapaxes(closest_rotation(a.bind_world[:, :3, :3]), 1, 2)
                       @ closest_rotation(b.bind_world[:, :3, :3]))
    return d, np.degrees(r)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", nargs="*", default=["d01_female", "d02_heavy_male", "d04_reduced_female"])
    ap.add_argument("--markers", default="sparse")
    ap.add_argument("--joints", nargs="*", default=["em", "pa"])
    args = ap.parse_args()
    if not DEV.is_dir():
        sys.exit(f"{DEV}: dev data not found")
    print(f"{'case':20} {'joints':6} {'test':10} {'mean mm':>8} {'max mm':>8} {'max %H':>7} {'rot mean°':>9} "
          f"{'rot max°':>8}  worst joint")
    for case in args.cases:
        d = DEV / case
        source = load_rig(d / "source.glb")
        target = load_mesh(target_path(case))
        markers = load_markers(d / f"markers_{args.markers}.json", source.mesh, target)
        back = Markers(markers.names, markers.target, markers.source)
        itself = Markers(markers.names, markers.source, markers.source)
        height = float(np.ptp(source.mesh.vertices[:, 1]))
        for joints in args.joints:
            cfg = Config(skeleton=SkeletonConfig(joints=joints, pose_normalize=False))
            same = transfer(source, source.mesh, itself, cfg).rig.skeleton
            there = transfer(source, target, markers, cfg).rig
            returned = transfer(there, source.mesh, back, cfg).rig.skeleton
            for test, sk in (("identity", same), ("round trip", returned)):
                dist, rot = drift(sk, source.skeleton, height)
                worst = int(np.argmax(dist))
                print(f"{case:20} {joints:6} {test:10} {dist.mean() * 1e3:8.4f} {dist.max() * 1e3:8.3f} "
                      f"{dist.max() / height * 100:7.3f} {rot.mean():9.4f} {rot.max():8.3f}  "
                      f"{source.skeleton.names[worst]}", flush=True)


if __name__ == "__main__":
    main()
