"""The typed transfer report (asetransfer/model/report.py, docs/report.md): every key always
there, a file read back gives the same report, and another schema is refused."""
from __future__ import annotations

import json
import time

import numpy as np
import pytest

import asetransfer as at
from asetransfer.model.report import REPORT_SCHEMA, LandmarkFrame, ReportSchemaError, Stopwatch, TransferReport
from conftest import FIXTURES

#: the sections of docs/report.md and their keys, in the file's order
KEYS = {
    "marker_origin": ["automatic", "hand", "confidence", "low_confidence", "source_frame_agreement", "thighs_joined",
                      "crotch_heights", "head_shares", "between_vertices", "frames", "not_completed", "time",
                      "method", "fit_distance", "fit_stretch", "target_turn", "facing_margin",
                      "target_unread"],
    "correspondence": ["alignment_scale", "marker_residual_mean", "marker_residual_max", "marker_residual_worst",
                       "fit_distance_mean", "fit_distance_p95", "reverse_fit_distance_mean", "iterations",
                       "stiffness_levels", "solver", "unmarked_source_vertices", "unmarked_target_vertices",
                       "proxy_vertices", "fairing_proxy_vertices", "timings"],
    "pose_match": ["limb_angles_deg", "passes", "landmark_pose_deg", "time"],
    "skeleton": ["joints", "fallback_joints", "coincident_groups", "grounded_joints", "moved_inside",
                 "symmetry_plane", "target_symmetric", "mirrored",
                 "lr_pairs", "pairs_not_mirrored", "spine", "spine_alignment", "asymmetry_before_mirroring",
                 "asymmetry", "bones_rolled", "delta_rotation_deg", "pose_normalized", "timings"],
    "weights": ["method", "chosen", "target_pieces", "robust", "max_influences", "influence_limit", "mean_influences",
                "time"],
    "timings": ["markers", "correspondence", "skeleton", "weights", "total"],
    "quality": ["verdict", "reasons", "marker_residual_pct_height", "mapped_area_fraction", "fit_distance_pct_height",
                "joints_outside_body", "bones_out_of_proportion", "feet_pointing_back", "limbs_crossed",
                "joints_on_carried_pieces", "hanging_arms"],
}


@pytest.fixture(scope="module")
def hand_and_automatic(fixture_source):
    """The tall fixture rigged with its hand markers (no marker search) and without (automatic markers)."""
    target = at.load_mesh(FIXTURES / "target_tall.obj")
    hand = at.load_markers(FIXTURES / "markers_tall.json", fixture_source.mesh, target)
    return at.transfer(fixture_source, target, hand).report, at.transfer(fixture_source, target).report


def test_every_key_is_there_whichever_way_the_markers_came(hand_and_automatic):
    for report in hand_and_automatic:
        data = report.to_json()
        assert list(data) == ["schema", "source_vertices", "target_vertices", "joints", "markers", *KEYS,
                              "warnings", "inputs", "output_sha256"]
        assert data["schema"] == REPORT_SCHEMA
        for section, keys in KEYS.items():
            assert list(data[section]) == keys, section
        json.dumps(data, allow_nan=False)  # plain JSON data
    hand, automatic = (r.marker_origin for r in hand_and_automatic)
    # no marker search: its findings are empty or null, not missing
    assert hand.automatic == [] and hand.confidence == {} and hand.frames == {}
    assert hand.crotch_heights is None and hand.source_frame_agreement is None and hand.time is None
    assert hand.method is None and automatic.method == "landmarks" and automatic.fit_stretch is None
    assert automatic.automatic and set(automatic.confidence) == set(automatic.automatic) and automatic.time > 0
    assert hand_and_automatic[0].timings.markers == 0.0


def test_a_report_read_back_is_the_same_report(hand_and_automatic):
    for report in hand_and_automatic:
        back = TransferReport.from_json(json.loads(json.dumps(report.to_json())))
        assert back == report and back.to_json() == report.to_json()
        assert back.correspondence.timings.total == report.correspondence.timings.total


def test_the_body_frames_are_vectors_with_a_left(hand_and_automatic):
    frame = hand_and_automatic[1].marker_origin.frames["target"]
    assert isinstance(frame, LandmarkFrame) and frame.up.shape == (3,)
    np.testing.assert_allclose(frame.left, np.cross(frame.up, frame.forward))
    assert abs(np.linalg.norm(frame.up) - 1) < 1e-9 and abs(frame.up @ frame.forward) < 1e-6
    back = LandmarkFrame.from_json(frame.to_json())
    assert back == frame and np.abs(back.up - frame.up).max() <= 5e-7  # 6 decimals in the file


def test_another_schema_or_a_broken_report_is_refused(hand_and_automatic):
    data = hand_and_automatic[0].to_json()
    older = {k: v for k, v in data.items() if k != "schema"}  # written before the schema was named
    for bad in (older, {**data, "schema": "asetransfer.report/2"}, [data], {**data, "quality": None},
                {k: v for k, v in data.items() if k != "weights"}, {**data, "timings": {"total": 1.0}}):
        with pytest.raises(ReportSchemaError):
            TransferReport.from_json(bad)
    # keys a later version adds are ignored; keys with a default may be missing
    extra = {**data, "new_section": {}, "marker_origin": {**data["marker_origin"], "new_key": 1}}
    assert TransferReport.from_json(extra) == hand_and_automatic[0]
    assert TransferReport.from_json({k: v for k, v in data.items() if k != "warnings"}).warnings == []


def test_the_stopwatch_times_steps_and_the_whole():
    watch = Stopwatch()
    with watch.timed("first"):
        time.sleep(0.01)
    with pytest.raises(KeyError):
        with watch.timed("failed"):
            raise KeyError("x")
    assert list(watch.laps) == ["first"] and watch.laps["first"] >= 0.01
    assert watch.elapsed() >= watch.laps["first"]
