"""Accuracy and speed of the dense correspondence on the MakeHuman dev cases.

    python bench/bench_correspondence.py [--cases d01_female ...] [--markers dense sparse]
                                         [--nricp] [--set name=value ...]

On same-topology targets the true map is vertex i <-> vertex i: the error of a
source vertex is the distance from its mapped target point to target vertex i, in %
of the target's body height (and the reverse map likewise on the source).  Prints a
table; ``--nricp`` also runs trimesh.registration.nricp_amberg on the same inputs.
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from devdata import DEV, ROOT, cases as dev_cases, target_path  # noqa: E402
sys.path.insert(0, str(ROOT))

from asetransfer.config import CorrespondenceConfig  # noqa: E402
from asetransfer.stages.correspondence import correspond  # noqa: E402
from asetransfer.io import load_markers, load_mesh, load_rig  # noqa: E402
from asetransfer.geometry.surface import closest_points  # noqa: E402


def height(vertices):
    return float(np.ptp(vertices[:, 1]))


def map_error(points, truth, h):
    e = np.linalg.norm(points - truth, axis=1) / h * 100.0
    return float(e.mean()), float(np.percentile(e, 95))


def run_nricp(src, tgt, markers):
    """trimesh's non-rigid ICP (Amberg et al. 2007), markers as landmarks."""
    import trimesh
    from trimesh.registration import nricp_amberg
    from asetransfer.geometry.alignment import umeyama
    sim = umeyama(markers.source.positions(src.vertices, src.faces),
                  markers.target.positions(tgt.vertices, tgt.faces))
    s = trimesh.Trimesh(sim.apply(src.vertices), src.faces, process=False)
    t = trimesh.Trimesh(tgt.vertices, tgt.faces, process=False)
    t0 = time.perf_counter()
    out = nricp_amberg(s, t, source_landmarks=(markers.source.face, markers.source.bary),
                       target_positions=markers.target.positions(tgt.vertices, tgt.faces))
    elapsed = time.perf_counter() - t0
    f, b, _ = closest_points(out, tgt.vertices, tgt.faces)
    return f, b, elapsed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", nargs="*", default=None)
    ap.add_argument("--markers", nargs="*", default=["dense", "sparse"])
    ap.add_argument("--nricp", action="store_true")
    ap.add_argument("--set", nargs="*", default=[], help="config overrides name=value")
    ap.add_argument("--json", help="write the rows as JSON here")
    args = ap.parse_args()
    if not DEV.is_dir():
        sys.exit(f"{DEV}: dev data not found")
    cfg = CorrespondenceConfig()
    for item in args.set:
        k, v = item.split("=")
        cfg = replace(cfg, **{k: type(getattr(cfg, k))(v)})
    cases = args.cases or dev_cases()
    rows = []
    print(f"{'case':24} {'markers':7} {'verts':>11} {'s2t mean':>9} {'s2t p95':>8} {'t2s mean':>9} "
          f"{'t2s p95':>8} {'time s':>7}  stages")
    for case in cases:
        d = DEV / case
        src = load_rig(d / "source.glb").mesh
        tgt = load_mesh(target_path(case))
        same = len(src.vertices) == len(tgt.vertices)
        for kind in args.markers:
            mk = load_markers(d / f"markers_{kind}.json", src, tgt)
            t0 = time.perf_counter()
            c = correspond(src, tgt, mk, cfg)
            wall = time.perf_counter() - t0
            row = {"case": case, "markers": kind, "n_src": len(src.vertices), "n_tgt": len(tgt.vertices),
                   "time": wall, "stages": c.stats.timings.to_json(), "iterations": c.stats.iterations}
            if same:
                hs, ht = height(src.vertices), height(tgt.vertices)
                row["s2t"] = map_error(c.source_to_target.positions(tgt.vertices, tgt.faces), tgt.vertices, ht)
                row["t2s"] = map_error(c.target_to_source.positions(src.vertices, src.faces), src.vertices, hs)
            fmt = lambda r, k: f"{r[k][0]:9.3f} {r[k][1]:8.3f}" if k in r else f"{'-':>9} {'-':>8}"
            stages = " ".join(f"{k}={v:.2f}" for k, v in row["stages"].items() if k != "total")
            print(f"{case:24} {kind:7} {len(src.vertices):>5}>{len(tgt.vertices):<5} {fmt(row, 's2t')} "
                  f"{fmt(row, 't2s')} {wall:7.2f}  {stages} it={c.stats.iterations}", flush=True)
            if args.nricp and same:
                f, b, el = run_nricp(src, tgt, mk)
                from asetransfer.model.surface import interpolate
                e = map_error(interpolate(tgt.vertices, tgt.faces, f, b), tgt.vertices, height(tgt.vertices))
                row["nricp"] = {"s2t": e, "time": el}
                print(f"{'  nricp_amberg':32} {e[0]:9.3f} {e[1]:8.3f} {'-':>9} {'-':>8} {el:7.2f}", flush=True)
            rows.append(row)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory (whole bench process): {peak:.0f} MB")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
