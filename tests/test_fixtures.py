"""The generated fixture characters (fixtures/): reproducible, and what fixtures/README.md says.

The regeneration test regenerates ``source.glb``, the cartoon target (mesh,
markers, truth) and every truth file (~6 s).  Set ``ASETRANSFER_FIXTURES_FULL=1``
to regenerate and compare all files (~16 s).  If a change to the generator or to
the library's writers is intended, run ``python fixtures/generate.py`` and commit
the new files.
"""
from __future__ import annotations

import importlib.util
import json
import re
import sys

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import asetransfer as at
from asetransfer.io import load_markers
from conftest import FIXTURES, assert_rigs_equal

TARGETS = {"heavy": "target_heavy.ply", "tall": "target_tall.obj", "cartoon": "target_cartoon.off"}
TARGET_FRAME = {"heavy": ("m", "+Y"), "tall": ("cm", "+Y"), "cartoon": ("m", "+Z")}


def _generator():
    """fixtures/generate.py as a module (fixtures/ is not a package)."""
    name = "asetransfer_fixtures_generate"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, FIXTURES / "generate.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up here
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture(scope="module")
def gen():
    return _generator()


@pytest.fixture(scope="module")
def source():
    return at.load_rig(FIXTURES / "source.glb")


# Regeneration on another machine or library version may differ in the last bits
# (a rotation's 0.0 written as -1.4e-17): files are compared as numbers within
# these bounds, structure and every other token exactly.  Byte identity is the
# promise within one machine (tests/test_determinism.py).
REL, ABS = 1e-9, 1e-12
_NUMBER = re.compile(rb"-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def _assert_same_text(new: bytes, old: bytes, name: str):
    """Text files (OBJ, OFF, JSON): the same tokens, numbers equal within REL/ABS."""
    assert _NUMBER.sub(b"#", new) == _NUMBER.sub(b"#", old), f"fixtures/{name}: structure differs"
    a = np.array([float(x) for x in _NUMBER.findall(new)])
    b = np.array([float(x) for x in _NUMBER.findall(old)])
    np.testing.assert_allclose(a, b, rtol=REL, atol=ABS, err_msg=f"fixtures/{name}")


def _assert_same_content(new_dir, names):
    for name in names:
        new, old = new_dir / name, FIXTURES / name
        hint = f"fixtures/{name} differs from a fresh generation; if intended, run `python fixtures/generate.py`"
        if new.read_bytes() == old.read_bytes():
            continue
        if name.endswith(".glb"):
            a, b = at.load_rig(new), at.load_rig(old)
            assert_rigs_equal(a, b, tol=1e-7)
        elif name.endswith(".ply"):
            a, b = at.load_mesh(new), at.load_mesh(old)
            np.testing.assert_allclose(a.vertices, b.vertices, rtol=REL, atol=1e-7, err_msg=hint)
            np.testing.assert_array_equal(a.faces, b.faces, err_msg=hint)
        else:
            _assert_same_text(new.read_bytes(), old.read_bytes(), name)


# ---------------------------------------------------------------------------- the source rig
def test_source_counts_and_parts(source):
    assert 5000 <= source.mesh.n_vertices <= 10000
    assert source.skeleton.n_joints >= 40
    assert source.mesh.parts == ("body", "eye.L", "eye.R")
    counts = np.bincount(source.mesh.vertex_part)
    assert counts[0] > 4000 and 100 < counts[1] < 1000 and counts[1] == counts[2]
    lo, hi = source.mesh.bounds()
    assert 1.6 < hi[1] - lo[1] < 1.8 and abs(lo[1]) < 0.01  # ~1.7 m tall, standing on y = 0


def test_source_joint_names_and_orientations(source):
    sk = source.skeleton
    for name in ("hips", "spine.001", "spine.002", "spine.003", "neck", "head", "head_end"):
        sk.index(name)
    for side in ("L", "R"):
        for name in ("clavicle", "upperarm", "forearm", "hand", "thigh", "shin", "foot", "toe", "toe_end"):
            sk.index(f"{name}.{side}")
        for finger in ("thumb", "index", "middle", "ring", "pinky"):
            for k in (1, 2, 3):
                sk.index(f"{finger}.0{k}.{side}")
            assert sk.parents[sk.index(f"{finger}_end.{side}")] == sk.index(f"{finger}.03.{side}")
    # joints are oriented along their bones (like Maya's Orient Joint), not world-aligned
    world_angles = np.degrees(Rotation.from_matrix(sk.bind_world[:, :3, :3]).magnitude())
    assert (world_angles > 10).sum() > 0.75 * sk.n_joints  # only the upright spine is near world axes
    assert np.degrees(Rotation.from_matrix(sk.orient).magnitude()).max() > 45
    np.testing.assert_allclose(sk.rotation, np.broadcast_to(np.eye(3), sk.rotation.shape), atol=1e-6)
    # bind frame: +Y along the bone to the child
    world = sk.bind_world
    for parent, child in (("upperarm.L", "forearm.L"), ("shin.R", "foot.R"), ("index.02.L", "index.03.L")):
        p, c = sk.index(parent), sk.index(child)
        bone = world[c, :3, 3] - world[p, :3, 3]
        assert world[p, :3, 1] @ bone / np.linalg.norm(bone) > 0.999


def test_source_weights(source):
    skin, sk = source.skin, source.skeleton
    skin.validate()
    np.testing.assert_allclose(skin.weights.sum(axis=1), 1.0, atol=1e-6)
    assert skin.indices.shape[1] <= 6
    dense = skin.to_dense()
    per_joint = dense.sum(axis=0)
    ends = [j for j, n in enumerate(sk.names) if n.split(".")[0].endswith("_end")]
    assert len(ends) == 13 and np.all(per_joint[ends] == 0)
    for side in ("L", "R"):
        for finger in ("thumb", "index", "middle", "ring", "pinky"):
            for k in (1, 2, 3):
                j = sk.index(f"{finger}.0{k}.{side}")
                assert (dense[:, j] > 0.5).sum() >= 5, sk.names[j]
    eyes = source.mesh.vertex_part > 0
    assert np.all(dense[eyes, sk.index("head")] == 1.0)
    assert np.mean(skin.influence_counts()[~eyes] > 1) > 0.5  # blended, not rigid


def test_source_weights_are_smooth_across_the_elbow(source):
    """Along the left arm the forearm weight rises gradually through the elbow."""
    sk, mesh = source.skeleton, source.mesh
    w = source.skin.to_dense()[:, sk.index("forearm.L")]
    shoulder, elbow, wrist = (sk.bind_world[sk.index(n), :3, 3] for n in ("upperarm.L", "forearm.L", "hand.L"))
    axis = (elbow - shoulder) / np.linalg.norm(elbow - shoulder)
    t = (mesh.vertices - elbow) @ axis
    near_arm = np.linalg.norm(np.cross(mesh.vertices - elbow, axis), axis=1) < 0.07
    profile = [w[near_arm & (t > a) & (t <= a + 0.02)].mean() for a in np.arange(-0.12, 0.08, 0.02)]
    assert profile[0] < 0.05 and profile[-1] > 0.9
    assert sum(0.15 < v < 0.85 for v in profile) >= 2  # a blend zone, not a cut
    assert np.all(np.diff(profile) > -0.05)


def test_posing_the_left_forearm_moves_only_the_left_arm(source):
    sk, mesh = source.skeleton, source.mesh
    fa = sk.index("forearm.L")
    bend = Rotation.from_euler("x", 90, degrees=True).as_matrix()
    posed = at.linear_blend_skinning(mesh.vertices, source.skin, sk.skinning_matrices(sk.posed_world({fa: bend})))
    moved = np.linalg.norm(posed - mesh.vertices, axis=1)
    dense = source.skin.to_dense()
    hand_joints = [j for j, n in enumerate(sk.names) if n.endswith(".L") and sk.depth()[j] > sk.depth()[fa]]
    hand = dense[:, hand_joints].sum(axis=1) > 0.99
    assert hand.sum() > 300
    assert moved[hand].min() > 0.05  # the whole hand swings with the forearm
    assert moved[mesh.vertices[:, 0] < -0.05].max() < 1e-6  # right side untouched (float32 round-off only)
    assert moved[mesh.vertices[:, 1] < 0.9].max() < 1e-6  # legs untouched
    upper = dense[:, [sk.index("upperarm.L"), sk.index("clavicle.L")]].sum(axis=1) > 0.999
    assert upper.sum() > 50 and moved[upper].max() < 1e-6


# ---------------------------------------------------------------------------- targets
@pytest.mark.parametrize("name", sorted(TARGETS))
def test_target_loads_and_differs_from_the_source(source, name):
    mesh = at.load_mesh(FIXTURES / TARGETS[name])
    assert 4000 <= mesh.n_vertices <= 10000
    assert mesh.n_vertices != source.mesh.n_vertices
    assert mesh.n_vertices != int((source.mesh.vertex_part == 0).sum())
    unit, up = TARGET_FRAME[name]
    size = np.ptp(mesh.vertices, axis=0) / (100.0 if unit == "cm" else 1.0)
    assert np.argmax(size) == "XYZ".index(up[1])  # tallest along the declared up axis
    assert 1.2 < size.max() < 2.0


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_target_markers_resolve(source, name):
    target = at.load_mesh(FIXTURES / TARGETS[name])
    path = FIXTURES / f"markers_{name}.json"
    markers = load_markers(path, source.mesh, target)
    assert 25 <= len(markers) <= 40
    names = set(markers.names)
    for required in ("head_top", "nose_tip", "chin", "crotch", "navel", "shoulder.L", "elbow.R", "wrist.L",
                     "thumb_tip.L", "pinky_tip.R", "knee.L", "heel.R", "toe_tip.L"):
        assert required in names
    # markers were placed on the surfaces: snapping moves them by (almost) nothing
    doc = json.loads(path.read_bytes())["markers"]
    for side, mesh, pts in (("source", source.mesh, markers.source), ("target", target, markers.target)):
        given = np.array([m[side]["point"] for m in doc])
        snapped = pts.positions(mesh.vertices, mesh.faces)
        diag = np.linalg.norm(np.ptp(mesh.vertices, axis=0))
        assert np.abs(given - snapped).max() < 1e-4 * diag
    # left and right markers are mirror images on the (symmetric) source
    src = {m["name"]: np.array(m["source"]["point"]) for m in doc}
    assert np.allclose(src["elbow.L"] * [-1, 1, 1], src["elbow.R"], atol=0.01)


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_target_truth(source, name):
    truth = json.loads((FIXTURES / f"target_{name}.truth.json").read_bytes())
    unit, up = TARGET_FRAME[name]
    assert truth["file"] == TARGETS[name] and truth["units"] == unit and truth["up_axis"] == up
    assert list(truth["joints"]) == list(source.skeleton.names)
    assert list(truth["parents"]) == list(source.skeleton.names)
    pos = np.array(list(truth["joints"].values()))
    lo, hi = at.load_mesh(FIXTURES / TARGETS[name]).bounds()
    margin = 0.01 * np.linalg.norm(hi - lo)
    assert np.all(pos >= lo - margin) and np.all(pos <= hi + margin)
    # a target has other proportions than the source
    scale = truth["metres_per_unit"]
    src_pos = source.skeleton.bind_world[:, :3, 3]
    tgt = pos * scale
    if up == "+Z":
        tgt = np.stack([tgt[:, 0], tgt[:, 2], -tgt[:, 1]], axis=1)
    assert np.abs(tgt - src_pos).max() > 0.05


def _closed_genus0(faces) -> bool:
    edges = np.sort(faces[:, [0, 1, 1, 2, 2, 0]].reshape(-1, 2), axis=1)
    _, counts = np.unique(edges, axis=0, return_counts=True)
    n_vertices = len(np.unique(faces))
    return bool(np.all(counts == 2)) and n_vertices - len(counts) + len(faces) == 2


def _body(name):
    """Vertices, faces and joint positions of the source body or of a target."""
    if name == "source":
        rig = at.load_rig(FIXTURES / "source.glb")
        body = rig.mesh.vertex_part[rig.mesh.faces[:, 0]] == 0
        return rig.mesh.vertices, rig.mesh.faces[body], dict(zip(rig.skeleton.names, rig.skeleton.bind_world[:, :3, 3]))
    mesh = at.load_mesh(FIXTURES / TARGETS[name])
    joints = json.loads((FIXTURES / f"target_{name}.truth.json").read_bytes())["joints"]
    return mesh.vertices, mesh.faces, {k: np.array(v) for k, v in joints.items()}


@pytest.mark.parametrize("name", ["source"] + sorted(TARGETS))
def test_bodies_are_closed_with_separate_fingers(name):
    import igl

    vertices, faces, joints = _body(name)
    assert _closed_genus0(faces), f"{name}: body is not a closed genus-0 surface"
    weighted = [n for n in joints if not n.split(".")[0].endswith("_end")]
    inside = igl.winding_number(vertices, faces, np.array([joints[n] for n in weighted]))
    assert inside.min() > 0.99, f"{name}: joint {weighted[int(np.argmin(inside))]} is outside the body"
    gaps = [(joints[f"{a}.0{k}.{s}"] + joints[f"{b}.0{k}.{s}"]) / 2 for s in "LR" for k in (2, 3)
            for a, b in (("thumb", "index"), ("index", "middle"), ("middle", "ring"), ("ring", "pinky"))]
    assert np.abs(igl.winding_number(vertices, faces, np.array(gaps))).max() < 0.01, f"{name}: fingers touch"
