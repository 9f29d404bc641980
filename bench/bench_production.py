"""Production humans rigged by others, every source onto every target, automatic and hand markers.

    python bench/bench_production.py [--out DIR] [--json FILE]

The production dev set (``../shared/data/production-dev``) holds four humans sharing one
skeleton, each rigged by its own artist: the Quaternius male and female mannequins (61
and 51 pieces), Blender Studio's cartoon bunny and Kenney's blocky low-poly zombie.  Every
one of them rigs every other target (female, bunny, zombie: the targets whose own rig is
the ground truth, ``gt.json``) with automatic markers; the case's own pair also with its
60 hand markers.  Scored by ``../shared/eval/creatures/score.py`` (joints by name, %H of
the target's height; weights; posed surface), with the verdict and the time of the whole
job (``asetransfer.job.transfer_files``, in this process).
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
#: character -> (case folder, file) holding it rigged by its artist
CHARACTERS = {"male": ("human-male_to_human-female", "source.glb"),
              "female": ("human-male_to_human-female", "gt.glb"),
              "bunny": ("human-female_to_human-bunny", "gt.glb"),
              "zombie": ("human-male_to_human-zombie", "gt.glb")}
#: target character -> its case folder (target.obj, gt.json, and its source's markers)
TARGETS = {"female": "human-male_to_human-female", "bunny": "human-female_to_human-bunny",
           "zombie": "human-male_to_human-zombie"}
CASE_SOURCE = {"human-male_to_human-female": "male", "human-female_to_human-bunny": "female",
               "human-male_to_human-zombie": "male"}


def run(source: str, target: str, markers: Path | None, out: Path, score) -> dict:
    """One transfer, scored."""
    from asetransfer.errors import InputError
    from asetransfer.job import transfer_files

    case = PRODUCTION / TARGETS[target]
    rig = out / f"{source}_to_{target}{'_hand' if markers else ''}.glb"
    row = {"source": source, "target": target, "markers": "hand" if markers else "auto"}
    t = time.perf_counter()
    try:
        done = transfer_files(PRODUCTION.joinpath(*CHARACTERS[source]), case / "target.obj", rig, markers)
    except InputError as e:
        return {**row, "error": str(e)}
    row["seconds"] = time.perf_counter() - t
    row["verdict"] = done.report.quality.verdict
    s = score(str(case), str(rig))
    row.update({k: s.get(k) for k in ("body_pct", "body_max_pct", "fingers_pct", "weight_err", "posed_pct")})
    return row


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", help="folder for the rigs (default: a temporary one)")
    p.add_argument("--json", help="also write the rows as JSON")
    args = p.parse_args(argv)
    sys.path.insert(0, str(SHARED / "eval" / "creatures"))
    from score import score

    out = Path(args.out or tempfile.mkdtemp(prefix="asetransfer-production-"))
    if not args.out:  # a scratch folder, removed at exit (--out keeps the rigs)
        atexit.register(shutil.rmtree, out, True)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for target, case in TARGETS.items():
        rows.append(run(CASE_SOURCE[case], target, PRODUCTION / case / "markers.json", out, score))
        for source in CHARACTERS:
            if source != target:
                rows.append(run(source, target, None, out, score))
    print("| source | target | markers | body %H | max %H | fingers %H | weights | posed %H | verdict | s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "error" in r:
            print(f"| {r['source']} | {r['target']} | {r['markers']} | refused: {r['error'][-70:]} |||||||")
            continue
        print(f"| {r['source']} | {r['target']} | {r['markers']} | {r['body_pct']:.2f} | {r['body_max_pct']:.2f} | "
              f"{r['fingers_pct'] if r['fingers_pct'] is None else round(r['fingers_pct'], 2)} | "
              f"{r['weight_err']:.3f} | {r['posed_pct']:.2f} | {r['verdict']} | {r['seconds']:.1f} |")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
