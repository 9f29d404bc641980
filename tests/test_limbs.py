"""The elbows and knees (humanoid/landmarks/limbs.py): where a limb narrows again past the
forearm or the calf, found on a body whose arms are pinched there, read from a rig at its
joints, and steering the rig's elbows."""
from __future__ import annotations

import json

import numpy as np
import pytest

import asetransfer as at
from asetransfer.config import Config
from asetransfer.humanoid.landmarks import find_landmarks
from asetransfer.humanoid.landmarks.limbs import LIMB_RADIUS, waists
from asetransfer.humanoid.landmarks.rig import rig_landmarks
from asetransfer.humanoid.skeleton_map import propose_skeleton_map
from asetransfer.model.mesh import Mesh
from conftest import FIXTURES
from test_landmarks import KW

TRUTH = json.loads((FIXTURES / "target_heavy.truth.json").read_text())["joints"]


@pytest.fixture(scope="module")
def heavy():
    return at.load_mesh(FIXTURES / "target_heavy.ply")


def _arm(side: str):
    """The fixture's true shoulder, elbow and wrist joints of one side, and the arm's unit axis."""
    shoulder, elbow, wrist = (np.array(TRUTH[f"{n}.{side}"]) for n in ("upperarm", "forearm", "hand"))
    return shoulder, elbow, wrist, (wrist - shoulder) / np.linalg.norm(wrist - shoulder)


def _pinched(mesh: Mesh, shift: float, depth: float = 0.3, width: float = 0.012) -> Mesh:
    """``mesh`` with both arms narrowed by ``depth`` in a band ``width`` (fractions of the
    height) wide, ``shift`` of the height from the true elbow toward the hand: an elbow
    modelled as game characters' are."""
    v = mesh.vertices.copy()
    h = float(np.ptp(v[:, 1]))
    for side in "LR":
        shoulder, elbow, wrist, axis = _arm(side)
        along = (v - shoulder) @ axis
        foot = shoulder + np.outer(along, axis)
        out = v - foot
        arm = (np.linalg.norm(out, axis=1) < 0.08 * h) & (along > 0) & (along < (wrist - shoulder) @ axis)
        at_elbow = (elbow - shoulder) @ axis + shift * h
        scale = 1 - depth * np.exp(-(((along - at_elbow) / (width * h)) ** 2))
        v[arm] = foot[arm] + out[arm] * scale[arm, None]
    return Mesh(v, mesh.faces)


def test_waists_are_narrowings_between_wider_parts():
    # hand, wrist, forearm, elbow, upper arm, body: the wrist and the elbow
    assert waists(np.array([10, 9, 6, 8, 11, 10, 8, 9, 10, 10, 20, 22.0])) == [2, 6]
    # an elbow only 0.95 as wide as the forearm is no waist; nor a narrowing at an end
    assert waists(np.array([10, 9, 6, 8, 11, 10.6, 10.45, 10.5, 11, 20, 5.0])) == [2]


def test_a_smooth_arm_has_no_elbow(heavy):
    # the fixture's elbow is 0.87 as wide as its forearm: no waist, no elbow or knee landmark
    found = find_landmarks(heavy, **KW)
    assert not [n for n in found.vertex if n.startswith(("elbow", "knee"))]


@pytest.mark.parametrize("shift", (0.0, 0.04))
def test_the_elbow_is_where_the_arm_narrows(heavy, shift):
    mesh = _pinched(heavy, shift)
    found = find_landmarks(mesh, **KW)
    at_points = found.positions(mesh.vertices, mesh.faces)
    h = found.frame.height
    for side in "LR":
        shoulder, elbow, _, axis = _arm(side)
        top, bottom = at_points[f"elbow_top.{side}"], at_points[f"elbow_bottom.{side}"]
        for point in (top, bottom):
            assert abs((point - elbow) @ axis / h - shift) < 0.01
        assert (top - bottom) @ found.frame.up > 0.03 * h
        assert found.confidence[f"elbow_top.{side}"] > 0.5


def _arms_lowered(points: np.ndarray, degrees: float, h: float) -> np.ndarray:
    """``points`` (N, 3) with those of each arm (within 0.08 ``h`` of its axis, past the
    shoulder joint) turned down about the forward axis through its shoulder: an A-pose."""
    v = points.copy()
    for side in "LR":
        shoulder, _, _, axis = _arm(side)
        along = (v - shoulder) @ axis
        arm = (np.linalg.norm(v - shoulder - np.outer(along, axis), axis=1) < 0.08 * h) & (along > 0)
        angle = np.radians(-degrees) * np.sign(axis[0])
        turn = np.array([[np.cos(angle), -np.sin(angle), 0], [np.sin(angle), np.cos(angle), 0], [0, 0, 1]])
        v[arm] = (v[arm] - shoulder) @ turn.T + shoulder
    return v


@pytest.mark.parametrize("degrees", (30.0, 45.0))
def test_an_arm_held_low_reads_its_elbow(heavy, degrees):
    # held low, the arm's sections past the elbow cut the side of the chest too: the arm is
    # its own loop of each cut, and ends where its sections become the chest's
    pinched = _pinched(heavy, 0.0)
    h = float(np.ptp(pinched.vertices[:, 1]))
    mesh = Mesh(_arms_lowered(pinched.vertices, degrees, h), pinched.faces)
    found = find_landmarks(mesh, **KW)
    at_points = found.positions(mesh.vertices, mesh.faces)
    for side in "LR":
        shoulder, elbow, wrist = _arms_lowered(np.array(_arm(side)[:3]), degrees, h)
        axis = (wrist - shoulder) / np.linalg.norm(wrist - shoulder)
        for name in ("elbow_top", "elbow_bottom"):
            assert abs((at_points[f"{name}.{side}"] - elbow) @ axis) < 0.01 * h


def test_a_rig_has_its_elbows_and_knees_at_its_joints():
    rig = at.load_rig(FIXTURES / "source.glb")
    found = rig_landmarks(rig)
    mapping, _ = propose_skeleton_map(rig.skeleton)
    joint = {r: rig.skeleton.bind_world[rig.skeleton.names.index(n), :3, 3] for r, n in mapping.items()}
    points = found.positions(rig.mesh.vertices, rig.mesh.faces)
    h = found.frame.height
    for side, s in (("l", "L"), ("r", "R")):
        for before, at_joint, after, names in (("shoulder", "elbow", "wrist", ("elbow_top", "elbow_bottom")),
                                               ("upper_leg", "knee", "ankle", ("knee_front", "knee_back"))):
            a, j, b = joint[f"{before}_{side}"], joint[f"{at_joint}_{side}"], joint[f"{after}_{side}"]
            axis = (j - a) / np.linalg.norm(j - a) + (b - j) / np.linalg.norm(b - j)
            axis /= np.linalg.norm(axis)
            for name in names:
                p = points[f"{name}.{s}"]
                assert abs((p - j) @ axis) < 0.005 * h  # on the section across the bone
                assert np.linalg.norm(p - j) < LIMB_RADIUS * h
    assert (points["elbow_top.L"] - points["elbow_bottom.L"]) @ found.frame.up > 0
    assert (points["knee_front.L"] - points["knee_back.L"]) @ found.frame.forward > 0


def test_the_elbows_steer_the_rigs_elbow_joints(heavy):
    # the same body with its elbows modelled 8 %H apart along the arm: the rigs' elbow
    # joints follow (without the elbow landmarks both would be placed alike)
    source = at.load_rig(FIXTURES / "source.glb")
    h = float(np.ptp(heavy.vertices[:, 1]))
    along = {}
    for shift in (-0.04, 0.04):
        done = at.transfer(source, _pinched(heavy, shift), config=Config())
        skeleton = done.rig.skeleton
        along[shift] = [(skeleton.bind_world[skeleton.names.index(f"forearm.{s}"), :3, 3] - _arm(s)[1]) @ _arm(s)[3] / h
                        for s in "LR"]
    moved = np.subtract(along[0.04], along[-0.04])
    assert (moved > 0.06).all(), moved


def test_a_source_whose_limbs_do_not_narrow_links_its_joints_sections(heavy):
    # the fixture source's arms narrow (2 %H inside its elbow joints): its own waists stand,
    # read as a target's are (the same body scaled reads the same); its legs do not: its
    # knees are the sections through its knee joints
    from asetransfer.stages.markers import source_landmarks

    rig = at.load_rig(FIXTURES / "source.glb")
    geometric, linked, from_rig = (find_landmarks(rig.mesh, **KW), source_landmarks(rig, Config()),
                                   rig_landmarks(rig))
    knees = sorted(n for n in from_rig.vertex if n.startswith("knee"))
    elbows = sorted(n for n in geometric.vertex if n.startswith("elbow"))
    assert len(knees) == 4 and len(elbows) == 4 and not [n for n in geometric.vertex if n.startswith("knee")]
    at_rig, at_shape, at_linked = (lm.positions(rig.mesh.vertices, rig.mesh.faces) for lm in (from_rig, geometric, linked))
    assert all(np.allclose(at_rig[n], at_linked[n]) for n in knees)
    assert all(np.allclose(at_shape[n], at_linked[n]) for n in elbows)
    # the other landmarks keep their order (the markers' order, and so the rig's bytes)
    assert [n for n in linked.vertex if n not in knees] == list(geometric.vertex)


def _ringed(mesh: Mesh, shift: float) -> Mesh:
    """``mesh`` with a ring around each arm, ``shift`` of the height from the true elbow toward
    the hand: a robot's joint cover, a piece of its own as long as it is wide."""
    import trimesh

    h = float(np.ptp(mesh.vertices[:, 1]))
    vertices, faces = [mesh.vertices], [mesh.faces]
    for side in "LR":
        shoulder, elbow, _, axis = _arm(side)
        ring = trimesh.creation.annulus(r_min=0.045 * h, r_max=0.055 * h, height=0.06 * h, sections=32)
        turn = trimesh.geometry.align_vectors([0, 0, 1], axis)
        ring.apply_transform(turn)
        ring.apply_translation(elbow + shift * h * axis)
        faces.append(np.asarray(ring.faces) + sum(len(v) for v in vertices))
        vertices.append(np.asarray(ring.vertices))
    return Mesh(np.concatenate(vertices), np.concatenate(faces))


def test_an_arm_in_pieces_reads_no_elbow(heavy):
    # a ring around a pinched arm: the profile is the pieces', not the limb's (a joint ring
    # read as a forearm's bulge put X Bot's elbows 9 cm in): no elbow landmark
    assert "elbow_top.L" in find_landmarks(_pinched(heavy, 0.0), **KW).vertex
    found = find_landmarks(_ringed(_pinched(heavy, 0.0), 0.04), **KW)
    assert not [n for n in found.vertex if n.startswith("elbow")]
