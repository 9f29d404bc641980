"""Characters rigged by Blender, not by us: automatic transfer against Blender's own rig.

    python bench/bench_blender_rigs.py [--out DIR] [--blender-python PY] [--json FILE]

bench/blender_humans.py builds eight characters in Blender (Rigify's human meta-rig
without its face, stretched per body part -- ``neutral`` as shipped, ``heavy``,
``tall``, ``stocky``, ``chibi`` (a head two fifths of the height) -- or posed -- ``tpose``, ``arms_down``, ``bent`` elbows -- a body
of metaballs over the bones, weights from Blender's bone heat; arms ~45 degrees down).
It runs in the interpreter with ``bpy`` (``--blender-python``, else
``$ASETRANSFER_BLENDER_PYTHON``) and writes them under ``--out`` (kept: delete them to
build again).  Then ``neutral`` is rigged onto each of the others and each of the others
onto ``neutral``, in-process with automatic markers, and compared with the target's
own Blender rig: the mean distance of the body joints (all but the palms and fingers)
and of the finger joints, in % of the target's height, against *copy* -- the source's
joints scaled by the height ratio about the feet, the similarity a TD would start
from -- and the weight error (half the L1 distance between our weights and Blender's,
mean over vertices).  ``worst`` names the three body joints farthest from the truth.
No hand markers exist for these bodies, so the question is only how close automatic
transfer gets to a rig made by other software.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import asetransfer as at

HERE = Path(__file__).resolve().parent
BODIES = ("neutral", "heavy", "tall", "stocky", "chibi", "tpose", "arms_down", "bent")
HAND = ("thumb", "f_", "palm")  # Rigify's finger and palm bones


def build(out: Path, python: str) -> None:
    """The characters, by Blender (skipped when they exist)."""
    if all((out / f"{n}.glb").exists() for n in BODIES):
        return
    run = subprocess.run([python, str(HERE / "blender_humans.py"), str(out)], capture_output=True, text=True)
    if run.returncode:
        sys.exit(f"blender_humans.py failed:\n{run.stdout[-2000:]}\n{run.stderr[-2000:]}")


def copy_baseline(source: at.Rig, target: at.Mesh) -> np.ndarray:
    """(J, 3) the source's joints scaled by the height ratio about the middle of its feet."""
    def floor_centre(v):
        return np.array([v[:, 0].mean(), v[:, 1].min(), v[:, 2].mean()])
    scale = np.ptp(target.vertices[:, 1]) / np.ptp(source.mesh.vertices[:, 1])
    joints = source.skeleton.bind_world[:, :3, 3]
    return (joints - floor_centre(source.mesh.vertices)) * scale + floor_centre(target.vertices)


def row(source_name: str, target_name: str, out: Path) -> dict:
    source, truth = at.load_rig(out / f"{source_name}.glb"), at.load_rig(out / f"{target_name}.glb")
    t = time.perf_counter()
    result = at.transfer(source, truth.mesh, None)
    seconds = time.perf_counter() - t
    names = truth.skeleton.names
    assert result.rig.skeleton.names == names
    height = float(np.ptp(truth.mesh.vertices[:, 1]))
    true = truth.skeleton.bind_world[:, :3, 3]
    ours = np.linalg.norm(result.rig.skeleton.bind_world[:, :3, 3] - true, axis=1) / height * 100
    copy = np.linalg.norm(copy_baseline(source, truth.mesh) - true, axis=1) / height * 100
    hand = np.array([any(h in n for h in HAND) for n in names])
    ours_w = result.rig.skin.to_sparse().toarray()
    weight_error = 0.5 * np.abs(ours_w - truth.skin.to_sparse().toarray()).sum(axis=1)
    body = np.flatnonzero(~hand)
    worst = body[np.argsort(-ours[body])[:3]]
    return {"source": source_name, "target": target_name, "body": float(ours[~hand].mean()),
            "body_copy": float(copy[~hand].mean()), "fingers": float(ours[hand].mean()),
            "fingers_copy": float(copy[hand].mean()), "weights": float(weight_error.mean()),
            "worst": {names[j]: round(float(ours[j]), 2) for j in worst},
            "quality": result.report.quality.verdict, "passes": result.report.pose_match.passes,
            "seconds": seconds}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("/tmp/asetransfer-blender-rigs"))
    ap.add_argument("--blender-python", default=os.environ.get("ASETRANSFER_BLENDER_PYTHON"))
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if not args.blender_python:
        sys.exit("needs an interpreter with bpy: --blender-python or $ASETRANSFER_BLENDER_PYTHON")
    args.out.mkdir(parents=True, exist_ok=True)
    build(args.out, args.blender_python)
    pairs = [("neutral", n) for n in BODIES[1:]] + [(n, "neutral") for n in BODIES[1:]]
    rows = [row(s, t, args.out) for s, t in pairs]
    print("| source -> target | body %H (copy) | fingers %H (copy) | weights | passes | quality | worst body joints %H |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        worst = ", ".join(f"{k} {v}" for k, v in r["worst"].items())
        print(f"| {r['source']} -> {r['target']} | {r['body']:.2f} ({r['body_copy']:.2f}) | {r['fingers']:.2f} "
              f"({r['fingers_copy']:.2f}) | {r['weights']:.3f} | {r['passes']} | {r['quality']} | {worst} |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
