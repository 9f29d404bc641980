"""Pose matching: a target standing in another pose than the source rigs as well.

The target is the fixture source posed by its own rig (linear blend skinning), so
its true skeleton is the posed one; the markers are the same surface points on
both (same triangles).  Without pose matching the transfer is centimetres off;
with it the joints come back within a millimetre.
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import asetransfer as at
from asetransfer.config import Config, CorrespondenceConfig, PoseConfig
from asetransfer.humanoid.skeleton_map import propose_skeleton_map
from asetransfer.model.markers import Markers
from asetransfer.model.mesh import Mesh
from asetransfer.stages.markers import automatic_markers
from asetransfer.stages.pose import in_source_frame, landmark_pose, limb_angles, match_pose
from conftest import FIXTURES


@pytest.fixture(scope="module")
def source():
    return at.load_rig(FIXTURES / "source.glb")


@pytest.fixture(scope="module")
def markers(source):
    # the fixture's hand markers as source surface points, used on both sides
    m = at.load_markers(FIXTURES / "markers_heavy.json", source.mesh, at.load_mesh(FIXTURES / "target_heavy.ply"))
    return Markers(m.names, m.source, m.source)


def _posed(source, turns_by_role):
    """The source posed by world-space turns (role -> (axis, degrees)) of its left limbs and
    their mirror images (through x = 0) on the right."""
    sk = source.skeleton
    mapping, _ = propose_skeleton_map(sk)
    world = sk.rest_world()
    turns = {}
    for role, (axis, degrees) in turns_by_role.items():
        left = np.radians(degrees) * np.asarray(axis, float)
        for side, rotvec in (("l", left), ("r", -np.diag([-1.0, 1.0, 1.0]) @ left)):  # an axial vector's mirror
            j = sk.index(mapping[f"{role}_{side}"])
            r = Rotation.from_rotvec(rotvec).as_matrix()
            turns[j] = world[j, :3, :3].T @ r @ world[j, :3, :3]
    posed = sk.posed_world(turns)
    return Mesh(source.posed_vertices(posed), source.mesh.faces), posed[:, :3, 3]


@pytest.mark.parametrize("pose", [
    {"shoulder": ([0, 0, 1], -40.0)},                                       # arms lowered 40 deg (an A-pose)
    {"shoulder": ([0, 0, 1], -25.0), "upper_leg": ([0, 0, 1], 20.0), "knee": ([1, 0, 0], 15.0)},  # legs apart
])
def test_a_posed_target_gets_the_posed_skeleton_back(source, markers, pose):
    target, truth = _posed(source, pose)
    off = at.transfer(source, target, markers, Config(pose=PoseConfig(match_angle=180.0)))
    on = at.transfer(source, target, markers)
    error = lambda r: np.linalg.norm(r.rig.skeleton.bind_world[:, :3, 3] - truth, axis=1)  # noqa: E731
    assert off.report.pose_match.passes == 0 and error(off).max() > 0.008  # measured: 16 mm, 9 mm
    assert on.report.pose_match.passes >= 1
    assert error(on).max() < 0.001  # measured: 0.6 mm, 0.4 mm
    first = on.report.pose_match.limb_angles_deg[0]
    assert abs(first["shoulder_l"] - abs(pose["shoulder"][1])) < 8.0  # the pose was read from the first pass


def test_the_report_and_the_rig_keep_the_source_rest_orientations(source, markers):
    target, _ = _posed(source, {"shoulder": ([0, 0, 1], -40.0)})
    rig = at.transfer(source, target, markers).rig
    # the joint orientation (jointOrient) is the source's; the pose difference lives in the rotation
    np.testing.assert_allclose(rig.skeleton.orient, source.skeleton.orient, atol=1e-9)
    # bind pose = the target as modelled: skinning with the rest pose leaves the mesh in place
    np.testing.assert_allclose(rig.posed_vertices(), target.vertices, atol=1e-6)


def test_same_pose_targets_are_not_matched(source):
    target = at.load_mesh(FIXTURES / "target_tall.obj")
    markers = at.load_markers(FIXTURES / "markers_tall.json", source.mesh, target)
    report = at.transfer(source, target, markers).report.pose_match
    assert report.passes == 0 and max(report.limb_angles_deg[0].values()) < 12.0


def test_match_pose_turns_each_limb_bone_onto_the_wanted_direction(source):
    _, truth = _posed(source, {"shoulder": ([0, 0, 1], -50.0), "elbow": ([0, 1, 0], 30.0)})
    posed = match_pose(source, truth)
    got = posed.skeleton.bind_world[:, :3, 3]
    angles = limb_angles(source.skeleton, got, truth)
    assert max(angles.values()) < 1e-6
    # posing by the rig moves the mesh with the bones: the hand follows the forearm
    back = in_source_frame(source.skeleton, truth * 3.0 + 1.0)  # the trunk fit removes scale and shift
    np.testing.assert_allclose(back, truth, atol=1e-6)


def test_passes_register_in_stiffness_levels_only_with_automatic_markers(source, markers, monkeypatch):
    # hand markers keep every registration as it was (their results must not change);
    # automatic ones, which leave the trunk free, use automatic_stiffness in every pass
    import asetransfer.stages.transfer as transfer_module
    seen = []
    real = transfer_module.correspond

    def recording(src, tgt, m, cc=None):
        seen.append(cc.register_stiffness)
        return real(src, tgt, m, cc)
    monkeypatch.setattr(transfer_module, "correspond", recording)
    target, _ = _posed(source, {"shoulder": ([0, 0, 1], -40.0)})
    hand = at.transfer(source, target, markers)
    assert hand.report.pose_match.passes >= 1 and seen == [()] * len(seen)
    seen.clear()
    auto = at.transfer(source, target, None)
    # the first pass already registers a posed source (the landmarks' pose)
    assert auto.report.marker_origin.automatic and auto.report.pose_match.landmark_pose_deg is not None
    levels = CorrespondenceConfig().automatic_stiffness
    assert len(levels) > 1 and seen == [levels] * (1 + auto.report.pose_match.passes)


def test_automatic_markers_register_first_from_the_landmarks_pose(source):
    # arms lowered 40 degrees: the automatic landmarks' guess of the pose (each limb swung
    # whole to its end landmark) is the true pose within 0.2 degrees (measured 0.11-0.18),
    # so the first pass registers a source already posed like the target and no further
    # pass is needed (before: 3 passes from the source as modelled, joints within 0.6 mm)
    target, truth = _posed(source, {"shoulder": ([0, 0, 1], -40.0)})
    markers, report = automatic_markers(source, target, Config())
    names = report.automatic
    index = [markers.names.index(n) for n in names]
    on_source = markers.source.positions(source.mesh.vertices, source.mesh.faces)[index]
    on_target = markers.target.positions(target.vertices, target.faces)[index]
    guess = landmark_pose(source.skeleton, dict(zip(names, on_source)), dict(zip(names, on_target)))
    assert max(limb_angles(source.skeleton, guess, truth).values()) < 1.0
    result = at.transfer(source, target, None)
    pose = result.report.pose_match
    assert abs(pose.landmark_pose_deg["shoulder_l"] - 40.0) < 1.0 and pose.passes == 0
    assert np.linalg.norm(result.rig.skeleton.bind_world[:, :3, 3] - truth, axis=1).max() < 0.001  # measured 0.3 mm
    # a target standing like the source is registered as modelled
    same = at.transfer(source, at.load_mesh(FIXTURES / "target_tall.obj"), None).report.pose_match
    assert same.landmark_pose_deg is None and same.passes == 0


def test_no_landmark_pose_when_the_source_names_left_and_right_the_other_way(source, caplog):
    # joint names swapped .L <-> .R: the guess would swing each arm to the other side's
    # hand, so the first pass registers the source as modelled (and the names are warned of)
    from asetransfer.model.rig import Rig
    swapped = tuple(n.replace(".L", ".tmp").replace(".R", ".L").replace(".tmp", ".R") for n in source.skeleton.names)
    assert swapped != source.skeleton.names
    mislabelled = Rig(source.mesh, source.skeleton.copy(names=swapped), source.skin)
    target, _ = _posed(source, {"shoulder": ([0, 0, 1], -40.0)})
    with caplog.at_level("WARNING", logger="asetransfer"):
        report = at.transfer(mislabelled, target, None).report
    assert report.marker_origin.source_frame_agreement < 0.5
    assert report.pose_match.landmark_pose_deg is None and "disagree" in caplog.text
