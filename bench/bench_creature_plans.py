"""Creatures of other body plans, built here, rigged with automatic markers: same plan, other plans, turned.

    python bench/bench_creature_plans.py

The builds of ``tests/creature_plans.py`` (a snake, a spider, a fish, a bird) and
``tests/quadruped.py`` (a fox-like quadruped onto a dog-like one): each source onto the
other build of its plan (rows *same plan*), the same target turned to face +X and to stand
Z up, and sources onto targets of other plans (a refusal is the right answer; a rig must
not be "ok").  Printed: body joints' mean and largest error in % of the target's largest
side against the build's own joints, the copy of the source's joints (no transfer) for
scale, the verdict and the marker method, or the refusal's first words.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
import asetransfer as at  # noqa: E402
from asetransfer.errors import InputError  # noqa: E402
from asetransfer.stages.transfer import MarkerError, transfer  # noqa: E402
from creature_plans import PLANS  # noqa: E402
from quadruped import DOG, quadruped  # noqa: E402

BUILDS = {**PLANS, "quadruped": (quadruped, DOG)}
#: a turn of the target (rows: the turned frame's axes in the file's) by name
TURNS = {"": np.eye(3), "face +X": np.array([[0, 0, 1], [0, 1, 0], [-1, 0, 0]], float),
         "Z up": np.array([[1, 0, 0], [0, 0, -1], [0, 1, 0]], float)}
OTHER_PLANS = (("snake", "fish"), ("fish", "bird"), ("quadruped", "spider"), ("spider", "quadruped"),
               ("bird", "quadruped"), ("snake", "quadruped"))


def row(source_plan: str, target_plan: str, turn: str = "") -> str:
    source = BUILDS[source_plan][0]()
    build, arguments = BUILDS[target_plan]
    truth = build(**arguments)
    rotation = TURNS[turn]
    target = at.Mesh(truth.mesh.vertices @ rotation.T, truth.mesh.faces)
    case = f"| {source_plan} | {target_plan}{' ' + turn if turn else ''} |"
    try:
        result = transfer(source, target)
    except (InputError, MarkerError) as e:
        return f"{case} refused: {str(e)[:90]} | | | |"
    verdict, method = result.report.quality.verdict, result.report.marker_origin.method
    if source.skeleton.names != truth.skeleton.names:
        return f"{case} rigged | | | {verdict} ({method}) |"
    size = float(np.ptp(target.vertices, axis=0).max())
    joints = truth.skeleton.bind_world[:, :3, 3] @ rotation.T
    error = np.linalg.norm(result.rig.skeleton.bind_world[:, :3, 3] - joints, axis=1) / size * 100
    copy = np.linalg.norm(source.skeleton.bind_world[:, :3, 3] - joints, axis=1).mean() / size * 100
    return f"{case} {error.mean():.2f} | {error.max():.1f} | {copy:.2f} | {verdict} ({method}) |"


def main() -> int:
    print("| source | target | body % of size | max | copy | verdict |")
    print("|---|---|---|---|---|---|")
    for plan in BUILDS:
        for turn in TURNS:
            print(row(plan, plan, turn), flush=True)
    for source_plan, target_plan in OTHER_PLANS:
        print(row(source_plan, target_plan), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
