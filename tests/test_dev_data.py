"""Checks on the real MakeHuman dev characters (skipped when ../shared is absent)."""
import json

import numpy as np
import pytest

import asetransfer as at
from asetransfer_cli.main import main
from conftest import DEV, DEV_CASES, assert_rigs_equal, dev_target, needs_dev

pytestmark = needs_dev


@pytest.mark.parametrize("case, joints", [("d01_female", 163), ("d04_reduced_female", 58)])
def test_info_reports_joint_counts(capsys, case, joints):
    assert main(["info", str(DEV / case / "source.glb"), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert len(d["joints"]) == joints
    assert d["vertices"] == 13380 and d["up_axis"] == "+Y" and d["max_influences"] <= 8


@pytest.mark.parametrize("name", [f"{c}/{f}" for c in DEV_CASES for f in ("source.glb", "gt.glb")])
def test_round_trip_of_every_dev_glb_is_exact(tmp_path, name):
    rig = at.load_rig(DEV / name)
    out = tmp_path / "rt.glb"
    at.save_rig(out, rig)
    back = at.load_rig(out)
    assert_rigs_equal(rig, back, tol=1e-6)
    # and the same world-space mesh as the original file in its rest pose
    np.testing.assert_allclose(back.posed_vertices(), rig.posed_vertices(), atol=1e-6)


@pytest.mark.parametrize("case", DEV_CASES)
def test_dev_markers_resolve_on_the_surface(case):
    src = at.load_rig(DEV / case / "source.glb").mesh
    tgt = at.load_mesh(dev_target(case))
    for kind in ("dense", "sparse"):
        m = at.load_markers(DEV / case / f"markers_{kind}.json", src, tgt)
        assert len(m) == (300 if kind == "dense" else 46)
        raw = json.loads((DEV / case / f"markers_{kind}.json").read_text())["markers"]
        pts = np.array([r["target"]["point"] for r in raw])
        # target points were placed on the target surface: snapping moves them by ~nothing
        assert np.abs(m.target.positions(tgt.vertices, tgt.faces) - pts).max() < 1e-5
