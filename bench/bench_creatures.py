"""The production set's creatures with automatic markers (the source's skin fitted onto the target) and hand markers.

    python bench/bench_creatures.py [--out DIR] [--turn]

The production dev set (``../shared/data/production-dev``) holds three creature cases, each
source and target rigged by its artist for one skeleton: fox -> dog, dog -> cat (quadrupeds),
seagull -> eagle (birds, wings spread).  Each is rigged with no markers (automatic: for a
body the landmark rules read no two-legged layout in, markers read off the source's skin
fitted onto the target, ``stages/fitted_markers.py``) and with the case's 60 hand markers,
scored by ``../shared/eval/creatures/score.py`` (joints by name in % of the creature's
largest side and of its height, weights, posed surface), with the verdict, the seconds of
the automatic marker search and of the whole job (``asetransfer.job.transfer_files``, in
this process).  ``--turn``: the targets also turned to face +X and to stand Z-up (the
truth turned with them), automatic markers only.
"""
from __future__ import annotations

import argparse
import atexit
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from devdata import SHARED

PRODUCTION = SHARED / "data" / "production-dev"
CASES = ("fox-fox_to_fox-dog", "fox-dog_to_fox-cat", "bird-base_to_bird-eagle")
#: a turn of the target (rows: the turned frame's axes in the file's) by name
TURNS = {"face +X": ((0, 0, 1), (0, 1, 0), (-1, 0, 0)), "Z up": ((1, 0, 0), (0, 0, -1), (0, 1, 0))}


def turned(case: Path, name: str, out: Path) -> Path:
    """A copy of ``case`` (target.obj, gt.json) with its target and truth turned by ``TURNS[name]``."""
    import numpy as np
    import trimesh

    rotation = np.array(TURNS[name], dtype=float)
    where = out / f"{case.name}_{name.replace(' ', '_').replace('+', '')}"
    where.mkdir(parents=True, exist_ok=True)
    mesh = trimesh.load(case / "target.obj", process=False)
    trimesh.Trimesh(mesh.vertices @ rotation.T, mesh.faces, process=False).export(where / "target.obj")
    meta = json.loads((case / "gt.json").read_text())
    for joint in meta["joints"]:
        joint["position"] = (np.array(joint["position"]) @ rotation.T).tolist()
    (where / "gt.json").write_text(json.dumps(meta))
    return where


def run(case: Path, markers: Path | None, out: Path, score, scored: Path | None = None) -> dict:
    """One transfer of ``case``'s source onto its target (or the turned copy ``scored``), scored."""
    from asetransfer.errors import InputError
    from asetransfer.job import transfer_files

    scored = scored or case
    rig = out / f"{scored.name}{'_hand' if markers else ''}.glb"
    row = {"case": scored.name, "markers": "hand" if markers else "auto"}
    t = time.perf_counter()
    try:
        done = transfer_files(case / "source.glb", scored / "target.obj", rig, markers)
    except InputError as e:
        return {**row, "error": str(e)}
    row["seconds"] = time.perf_counter() - t
    row["search"] = done.report.marker_origin.time
    row["verdict"] = done.report.quality.verdict
    s = score(str(scored), str(rig))
    row.update({k: s.get(k) for k in ("body_pct_of_size", "body_pct", "body_max_pct", "weight_err", "posed_pct")})
    return row


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", help="folder for the rigs (default: a temporary one)")
    p.add_argument("--turn", action="store_true", help="also the targets turned to face +X and Z-up")
    args = p.parse_args(argv)
    sys.path.insert(0, str(SHARED / "eval" / "creatures"))
    from score import score

    out = Path(args.out or tempfile.mkdtemp(prefix="asetransfer-creatures-"))
    if not args.out:
        atexit.register(shutil.rmtree, out, True)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in CASES:
        case = PRODUCTION / name
        rows.append(run(case, case / "markers.json", out, score))
        rows.append(run(case, None, out, score))
        for turn in TURNS if args.turn else ():
            rows.append(run(case, None, out, score, turned(case, turn, out)))
    print("| case | markers | body % of size | body %H | max %H | weights | posed %H | verdict | search s | s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "error" in r:
            print(f"| {r['case']} | {r['markers']} | refused: {r['error'][-80:]} ||||||||")
            continue
        search = "-" if r["search"] is None else f"{r['search']:.2f}"
        print(f"| {r['case']} | {r['markers']} | {r['body_pct_of_size']:.2f} | {r['body_pct']:.2f} | "
              f"{r['body_max_pct']:.1f} | {r['weight_err']:.3f} | {r['posed_pct']:.2f} | {r['verdict']} | "
              f"{search} | {r['seconds']:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
