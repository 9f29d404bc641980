"""Production humans rigged by others, every source onto every target, automatic and hand markers.

    python bench/bench_production.py [--out DIR] [--json FILE] [--arms-down DEG]

The production dev set (``../shared/data/production-dev``) holds four humans sharing one
skeleton, each rigged by its own artist: the Quaternius male and female mannequins (61
and 51 pieces), Blender Studio's cartoon bunny and Kenney's blocky low-poly zombie.  Every
one of them rigs every other target (female, bunny, zombie: the targets whose own rig is
the ground truth, ``gt.json``) with automatic markers; the case's own pair also with its
60 hand markers.  Scored by ``../shared/eval/creatures/score.py`` (joints by name, %H of
the target's height; weights; posed surface), with the verdict and the time of the whole
job (``asetransfer.job.transfer_files``, in this process).

``--arms-down DEG``: each target first posed by its artist's rig (``gt.json``'s joints and
weights, the scorer's own skinning) with both upper arms turned DEG down about its forward
axis, an A-pose; the posed joints are the truth.  Automatic markers only (the hand markers
lie on the unposed target).
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


AXES = {"+X": (1, 0, 0), "-X": (-1, 0, 0), "+Y": (0, 1, 0), "-Y": (0, -1, 0), "+Z": (0, 0, 1), "-Z": (0, 0, -1)}


def arms_down(case: Path, degrees: float, out: Path) -> Path:
    """A copy of the production ``case`` (its target.obj and gt.json) in ``out``, the target
    posed by its artist's rig with both upper arms turned ``degrees`` down about its forward
    axis; the posed joints in gt.json."""
    import numpy as np
    from score import _rotation, load_case, posed_skin

    meta, vertices, faces, weights = load_case(str(case))
    names = [j["name"] for j in meta["joints"]]
    parents = np.array([names.index(j["parent"]) if j["parent"] else -1 for j in meta["joints"]])
    joints = np.array([j["position"] for j in meta["joints"]])
    left, up, front = (np.array(AXES[meta[f"{a}_axis"]], float) for a in ("left", "up", "front"))
    down = degrees * np.sign(np.cross(left, up) @ front)  # turning about front takes left toward -up
    turns = {"upperarm_l": _rotation(front, -down), "upperarm_r": _rotation(front, down)}
    posed = out / f"{case.name}_arms{degrees:g}"
    posed.mkdir(parents=True, exist_ok=True)
    v = posed_skin(names, parents, joints, weights, vertices, turns)
    with open(posed / "target.obj", "w") as f:
        f.writelines(f"v {x:.6f} {y:.6f} {z:.6f}\n" for x, y, z in v)
        f.writelines(f"f {a + 1} {b + 1} {c + 1}\n" for a, b, c in faces)
    moved = posed_skin(names, parents, joints, np.eye(len(names)), joints, turns)
    for joint, at in zip(meta["joints"], moved):
        joint["position"] = at.tolist()
    (posed / "gt.json").write_text(json.dumps(meta))
    return posed


def run(source: str, target: str, markers: Path | None, out: Path, score, case: Path | None = None) -> dict:
    """One transfer, scored (on ``case``, default the target's own)."""
    from asetransfer.errors import InputError
    from asetransfer.job import transfer_files

    case = case or PRODUCTION / TARGETS[target]
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
    p.add_argument("--arms-down", type=float, metavar="DEG", help="targets posed with their arms DEG down (A-pose)")
    args = p.parse_args(argv)
    sys.path.insert(0, str(SHARED / "eval" / "creatures"))
    from score import score

    out = Path(args.out or tempfile.mkdtemp(prefix="asetransfer-production-"))
    if not args.out:  # a scratch folder, removed at exit (--out keeps the rigs)
        atexit.register(shutil.rmtree, out, True)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for target, case in TARGETS.items():
        posed = arms_down(PRODUCTION / case, args.arms_down, out) if args.arms_down else None
        if posed is None:
            rows.append(run(CASE_SOURCE[case], target, PRODUCTION / case / "markers.json", out, score))
        for source in CHARACTERS:
            if source != target:
                rows.append(run(source, target, None, out, score, posed))
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
