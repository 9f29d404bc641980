"""Blend shapes carried onto the MakeHuman dev targets, scored with ``mheval.blendshapes``.

    python bench/bench_blendshapes.py [--cases d01_female ...] [--out DIR] [--json FILE]

For every dev case with blend-shape ground truth (``source_blendshapes.glb``: the dev source
with 16 facial expression units as morph targets), the transfer runs in this process with
automatic markers (as ``asetransfer transfer SOURCE TARGET -o OUT.glb``) and its rig is
written over the target's look; ``DIR/<case>.glb`` is scored.  Two baselines are written and
scored beside it:

* ``map``: every source offset carried through the transfer's own whole-body map (each
  target vertex takes the offsets interpolated at its point on the source), turned and
  scaled by the correspondence's alignment: no finer map, no region similarity;
* ``markers``: the scorer's ``copy_through_map`` baseline (``../shared/eval/README.md``):
  the Umeyama similarity of all source markers (sparse and dense files) onto the target's,
  each target vertex taking the offsets of the nearest aligned source vertex.

Columns: relative error (the headline number, 0 = exact, 1 = no motion), mean vertex error
(%H) and missing shapes, each for ours and both baselines; the worst shape; the seconds the
shapes add: the blend-shape stage (``report.blendshapes.time``, wall; and its CPU seconds,
run again) and writing them.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np
from scipy.spatial import cKDTree

from devdata import DEV, EVAL, SHARED, target_path

import asetransfer as at
from asetransfer.geometry.alignment import umeyama
from asetransfer.io import load_character, save_rig
from asetransfer.model.shapes import sparse_target
from asetransfer.model.surface import interpolate
from asetransfer.stages.shapes import carry_shapes


def blendshape_cases() -> list:
    """The dev cases whose ``index.json`` entry names blend-shape files."""
    return [c["case"] for c in json.loads((DEV / "index.json").read_text())["cases"] if "blendshapes" in c]


def map_baseline(source, result) -> tuple:
    """The source's shapes carried through the whole-body map with the alignment's rotation and scale."""
    corr = result.correspondence
    turn = corr.alignment.scale * corr.alignment.rotation
    return tuple(sparse_target(s.name, interpolate(s.dense(source.mesh.n_vertices), source.mesh.faces,
                                                   corr.target_to_source.face, corr.target_to_source.bary) @ turn.T)
                 for s in source.shapes)


def marker_baseline(source, target, case: str) -> tuple:
    """The scorer's ``copy_through_map``: nearest source vertex after the markers' similarity."""
    src, dst = [], []
    for kind in ("sparse", "dense"):
        markers = at.load_markers(DEV / case / f"markers_{kind}.json", source.mesh, target)
        src.append(markers.source.positions(source.mesh.vertices, source.mesh.faces))
        dst.append(markers.target.positions(target.vertices, target.faces))
    fit = umeyama(np.concatenate(src), np.concatenate(dst))
    _, nearest = cKDTree(fit.apply(source.mesh.vertices)).query(target.vertices)
    turn = fit.scale * fit.rotation
    return tuple(sparse_target(s.name, s.dense(source.mesh.n_vertices)[nearest] @ turn.T) for s in source.shapes)


def scored(case: str, rig, path: Path, score) -> dict:
    """Write ``rig`` over its look to ``path`` and score its morph targets; the overall numbers,
    the worst shape and the seconds the writing took."""
    start = time.perf_counter()
    save_rig(path, rig, look=rig.mesh.look)
    seconds = time.perf_counter() - start
    result = score(str(DEV / case), str(path))
    worst = max(result["per_unit"], key=lambda u: result["per_unit"][u]["relative_error"])
    return {**result["overall"], "worst": worst, "worst_rel": result["per_unit"][worst]["relative_error"],
            "write_s": seconds}


def stage_cpu(source, target, result) -> float:
    """CPU seconds of the blend-shape stage run again on the transfer's correspondence (the
    wall time of a loaded machine counts the other processes' turns too)."""
    start = time.process_time()
    carry_shapes(source.shapes, source.mesh.vertices, source.mesh.faces, target.vertices, target.faces,
                 result.correspondence, reject_angle=at.Config().correspondence.reject_angle,
                 config=at.Config().shapes, base_normals=target.normals)
    return time.process_time() - start


def run_case(case: str, out: Path, score) -> dict:
    """One case: ours and both baselines scored, and the seconds the shapes added."""
    source = at.load_rig(DEV / case / "source_blendshapes.glb")
    target = load_character(target_path(case))
    result = at.transfer(source, target)
    ours = scored(case, result.rig, out / f"{case}.glb", score)
    bare = dataclasses.replace(result.rig, shapes=())
    without = scored(case, bare, out / f"{case}.none.glb", score)
    row = {"case": case, "ours": ours, "stage_s": result.report.blendshapes.time, "stage_cpu_s": stage_cpu(
        source, target, result), "write_added_s": ours["write_s"] - without["write_s"]}
    for name, shapes in (("map", map_baseline(source, result)), ("markers", marker_baseline(source, target, case))):
        row[name] = scored(case, dataclasses.replace(result.rig, shapes=shapes), out / f"{case}.{name}.glb", score)
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", nargs="*")
    ap.add_argument("--out", default="/tmp/asetransfer-bench-blendshapes")
    ap.add_argument("--json", help="write all rows here")
    args = ap.parse_args()
    if not DEV.is_dir() or not EVAL.is_dir():
        sys.exit(f"{SHARED}: dev data or scorer not found")
    sys.path.insert(0, str(EVAL))
    from mheval.blendshapes import score

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print("| case | rel. err | mean %H | missing | map baseline rel. / %H | markers baseline rel. / %H "
          "| ours / markers | worst shape (rel.) | stage s (CPU s) | writing s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    rows = []
    for case in args.cases or blendshape_cases():
        row = run_case(case, out, score)
        rows.append(row)
        o, m, k = row["ours"], row["map"], row["markers"]
        print(f"| {case} | {o['relative_error']:.3f} | {o['mean_pct_height']:.4f} | {o['missing']} "
              f"| {m['relative_error']:.3f} / {m['mean_pct_height']:.4f} "
              f"| {k['relative_error']:.3f} / {k['mean_pct_height']:.4f} "
              f"| {o['relative_error'] / k['relative_error']:.2f} | {o['worst']} ({o['worst_rel']:.2f}) "
              f"| {row['stage_s']:.2f} ({row['stage_cpu_s']:.2f}) | {row['write_added_s']:.2f} |", flush=True)
    if len(rows) > 1:
        mean = lambda who, key: np.mean([r[who][key] for r in rows])  # noqa: E731
        print(f"| **mean of {len(rows)}** | {mean('ours', 'relative_error'):.3f} | "
              f"{mean('ours', 'mean_pct_height'):.4f} | {sum(r['ours']['missing'] for r in rows)} "
              f"| {mean('map', 'relative_error'):.3f} / {mean('map', 'mean_pct_height'):.4f} "
              f"| {mean('markers', 'relative_error'):.3f} / {mean('markers', 'mean_pct_height'):.4f} | | "
              f"| {np.mean([r['stage_s'] for r in rows]):.2f} ({np.mean([r['stage_cpu_s'] for r in rows]):.2f}) "
              f"| {np.mean([r['write_added_s'] for r in rows]):.2f} |")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
