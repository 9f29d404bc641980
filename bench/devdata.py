"""Where the MakeHuman dev cases are, and each case's files as its ``index.json`` names them."""
from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
DEV = SHARED / "data" / "makehuman-dev"
EVAL = SHARED / "eval"


def cases() -> list[str]:
    """The case names in the dev set's index order."""
    return [c["case"] for c in json.loads((DEV / "index.json").read_text())["cases"]]


def target_path(case: str) -> Path:
    """The case's target mesh (its file name and format differ between cases: ``target.ply``, ``target.obj``)."""
    entry = {c["case"]: c for c in json.loads((DEV / "index.json").read_text())["cases"]}[case]
    return DEV / case / entry["target_file"]
