"""Hand-off to motion retargeting on the MakeHuman dev cases: bone directions and calibration points.

    python bench/bench_retarget.py [--cases d01_female ...] [--markers sparse|dense] [--json FILE]

For every case the transfer runs in-process (``asetransfer.transfer``) twice, without
(the default) and with pose normalisation; ``retarget`` normalises on the fly, so the
two must give the same angles.  The dev motion authored for the case's source
skeleton (``motion_default.bvh`` or ``motion_reduced.bvh``, 131 frames) is played on
the source and, by :func:`asetransfer.retarget.retarget_bvh`, on the transferred
target.  Per frame, the angle between corresponding bone directions of source and
target is measured (source directions turned into the target's frame by the
correspondence's marker alignment), mean and max over bones and frames:

* *map bones*: the segments between skeleton-map joints (Tonoli Table 3.2: spine,
  neck, clavicles, arms, forearms, hips, femurs, tibias, plus hands, feet, head);
* *all bones*: every parent -> joint bone of the skeleton (fingers, toes, face).

Calibration points: the source calibration proposed by
:func:`asetransfer.calibration.propose_calibration` is transferred through the
correspondence; on same-topology targets the ground truth of a point is the same
triangle and barycentric coordinates on the target mesh (of a key vertex: the same
vertex).  Distances in % of the target's body height (``gt.json``).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from devdata import DEV, ROOT, cases as dev_cases, target_path  # noqa: E402
sys.path.insert(0, str(ROOT))

from asetransfer.handoff.motion import bvh_to_animation  # noqa: E402
from asetransfer.io.bvh import read_bvh  # noqa: E402
from asetransfer.handoff.calibration import measure, propose_calibration, transfer_calibration  # noqa: E402
from asetransfer.config import Config, SkeletonConfig  # noqa: E402
from asetransfer.io import load_markers, load_mesh, load_rig  # noqa: E402
from asetransfer.handoff.retarget import bone_angles, map_bones, retarget_bvh, skeleton_bones  # noqa: E402
from asetransfer.model.surface import interpolate  # noqa: E402
from asetransfer.stages.transfer import transfer  # noqa: E402


def motion_for(source, motions):
    """The dev motion whose joints are exactly the source's."""
    for path, bvh in motions.items():
        if set(bvh.names) == set(source.skeleton.names):
            return path, bvh
    raise SystemExit("no dev motion matches the source skeleton")


def angle_stats(src_world, tgt_world, bones, names, rotation):
    ang = bone_angles(src_world, tgt_world, bones, rotation)
    worst = np.unravel_index(int(np.argmax(ang)), ang.shape)
    return {"mean": float(ang.mean()), "max": float(ang.max()), "bones": int(ang.shape[1]),
            "worst_bone": names[worst[1]], "worst_frame": int(worst[0]),
            "rest_mean": float(ang[0].mean()), "rest_max": float(ang[0].max()),
            "over_10deg": sorted({names[b] for b in np.flatnonzero((ang > 10.0).any(axis=0))})}


def point_errors(cal_t, cal_s, target, height):
    """% of height: transferred point vs. the source location on the same-topology target."""
    out = {}
    for key, pts_t, pts_s in (("surface", cal_t.surface_points, cal_s.surface_points),
                              ("key", cal_t.key_vertices, cal_s.key_vertices)):
        got = np.array([p.position for p in pts_t])
        if key == "key":
            truth = target.vertices[[p.vertex for p in pts_s]]
            exact = float(np.mean([a.vertex == b.vertex for a, b in zip(pts_t, pts_s)]))
        else:
            truth = interpolate(target.vertices, target.faces, np.array([p.face for p in pts_s]),
                                np.array([p.bary for p in pts_s]))
            exact = None
        e = np.linalg.norm(got - truth, axis=1) / height * 100.0
        k = int(np.argmax(e))
        out[key] = {"mean": float(e.mean()), "max": float(e.max()), "worst": pts_s[k].name, "n": len(e),
                    "same_vertex": exact}
    return out


def measurement_errors(cal_t, gt_rig, height):
    """Capsule radii (% of the GT radius), segment lengths and root height (% of height) measured
    on the transferred rig vs. the same measurements on the ground-truth rig."""
    m = measure(gt_rig, cal_t.skeleton_map)
    radius = {c.name: c.radius for c in m["capsules"]}
    r = np.array([abs(c.radius - radius[c.name]) / radius[c.name] * 100 for c in cal_t.capsules])
    s = np.array([abs(v["length"] - m["segments"][k]["length"]) / height * 100
                  for k, v in cal_t.segment_lengths.items()])
    return {"capsule_radius_pct": {"mean": float(r.mean()), "max": float(r.max())},
            "segment_length_pctH": {"mean": float(s.mean()), "max": float(s.max())},
            "root_height_pctH": abs(cal_t.root_height - m["root_height"]) / height * 100}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", nargs="*", default=None)
    ap.add_argument("--markers", default="sparse", choices=("sparse", "dense"))
    ap.add_argument("--json", help="write the rows as JSON here")
    args = ap.parse_args()
    if not DEV.is_dir():
        sys.exit(f"{DEV}: dev data not found")
    cases = args.cases or dev_cases()
    motions = {p.name: read_bvh(p) for p in sorted(DEV.glob("motion_*.bvh"))}
    rows = []
    print(f"{'case':22} {'pose norm':9} {'map mean':>8} {'map max':>8} {'(rest)':>8} {'all mean':>8} {'all max':>8} "
          f"{'(rest)':>8}  {'worst map bone':15} {'pts mean':>8} {'pts max':>8} {'key mean':>8} {'key max':>8}"
          "  times s")
    for case in cases:
        d = DEV / case
        gt = json.loads((d / "gt.json").read_text())
        source = load_rig(d / "source.glb")
        target = load_mesh(target_path(case))
        markers = load_markers(d / f"markers_{args.markers}.json", source.mesh, target)
        mname, motion = motion_for(source, motions)
        src_anim, _ = bvh_to_animation(motion, source.skeleton)
        src_world = src_anim.world(source.skeleton)
        t = time.perf_counter()
        cal = propose_calibration(source, d / "source.glb")
        t_cal = time.perf_counter() - t
        for pn in (False, True):
            t = time.perf_counter()
            res = transfer(source, target, markers, Config(skeleton=SkeletonConfig(pose_normalize=pn)))
            t_transfer = time.perf_counter() - t
            t = time.perf_counter()
            anim, rep = retarget_bvh(motion, source, res.rig)
            tgt_world = anim.world(res.rig.skeleton)
            t_retarget = time.perf_counter() - t
            A = res.correspondence.alignment.rotation
            mb_names, mb = map_bones(source, res.rig, cal.skeleton_map)
            ab = skeleton_bones(source, res.rig)
            ab_names = [f"{source.skeleton.names[a]}->{source.skeleton.names[b]}" for a, b, _, _ in ab]
            row = {"case": case, "markers": args.markers, "motion": mname, "frames": motion.n_frames,
                   "pose_normalize": pn, "root_ratio": rep["root_ratio"],
                   "map_bones": angle_stats(src_world, tgt_world, mb, mb_names, A),
                   "all_bones": angle_stats(src_world, tgt_world, ab, ab_names, A),
                   "times": {"calibrate_source": t_cal, "transfer": t_transfer, "retarget": t_retarget}}
            pts = ""
            if not pn:  # the default transfer (rest = bind), comparable with the ground truth's
                t = time.perf_counter()
                tcal = transfer_calibration(cal, source, res.rig, res.correspondence)
                row["times"]["transfer_calibration"] = time.perf_counter() - t
                row["measures"] = measurement_errors(tcal, load_rig(d / "gt.glb"), float(gt["body_height"]))
                if target.n_vertices == source.mesh.n_vertices:
                    row["points"] = point_errors(tcal, cal, target, float(gt["body_height"]))
                    p, k = row["points"]["surface"], row["points"]["key"]
                    pts = f"{p['mean']:8.3f} {p['max']:8.3f} {k['mean']:8.3f} {k['max']:8.3f}"
            pts = pts or f"{'-':>8} {'-':>8} {'-':>8} {'-':>8}"
            m, a = row["map_bones"], row["all_bones"]
            times = " ".join(f"{k}={v:.2f}" for k, v in row["times"].items())
            print(f"{case:22} {'on' if pn else 'off':9} {m['mean']:8.3f} {m['max']:8.3f} {m['rest_max']:8.3f} "
                  f"{a['mean']:8.3f} {a['max']:8.3f} {a['rest_max']:8.3f}  {m['worst_bone']:15} {pts}  {times}",
                  flush=True)
            rows.append(row)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
