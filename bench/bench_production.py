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

``--arms-down DEG``: each target first posed by its artist's rig (``gt.glb``, by its own
weights: ``apose.posed_truth``) with both upper arms turned DEG down, an A-pose; the posed
joints are the truth.  Automatic markers only (the hand markers lie on the unposed target).
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


def arms_down(case: Path, degrees: float, out: Path) -> Path:
    """A copy of the production ``case`` (target, gt.json) in ``out``, its target posed by its
    artist's rig with both upper arms turned ``degrees`` down (``apose.posed_truth``); the
    posed joints in gt.json."""
    import numpy as np
    import trimesh
    from apose import posed_truth

    from asetransfer.io import load_mesh, load_rig

    meta = json.loads((case / "gt.json").read_text())
    up = np.array({"+X": (1, 0, 0), "+Y": (0, 1, 0), "+Z": (0, 0, 1)}[meta["up_axis"]], float)
    posed = posed_truth(load_rig(case / "gt.glb"), up, degrees, 0.0)
    where = out / f"{case.name}_arms{degrees:g}"
    where.mkdir(parents=True, exist_ok=True)
    target = load_mesh(case / "target.obj")
    if target.vertices.shape != posed.mesh.vertices.shape:
        raise ValueError(f"{case.name}: the ground truth's mesh is not the target's")
    trimesh.Trimesh(posed.mesh.vertices, target.faces, process=False).export(where / "target.obj")  # the scorer reads OBJ
    at = dict(zip(posed.skeleton.names, posed.skeleton.bind_world[:, :3, 3].tolist()))
    for joint in meta["joints"]:
        joint["position"] = at[joint["name"]]
    (where / "gt.json").write_text(json.dumps(meta))
    return where


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
