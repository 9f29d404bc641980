"""Skin-weight transfer: interpolation (spec) and the robust inpainting mode."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import FIXTURES, tube_rig

from asetransfer.config import Config, WeightsConfig
from asetransfer.model.mesh import Mesh
from asetransfer.model.surface import SurfacePoints
from asetransfer.geometry.surface import vertex_faces
from asetransfer.stages.weights import accepted_matches, inpaint_weights

#: inpainting alone: no neighbour averaging afterwards, the default rigid attachment of pieces
NO_SMOOTHING = {"smooth_iterations": 0, "contact_neighbours": WeightsConfig().contact_neighbours}


def linear_weights(vertices):
    """Two joints blending linearly along the tube axis: bi-harmonic on the (flat) tube wall."""
    t = vertices[:, 1] / np.ptp(vertices[:, 1])
    return sp.csr_matrix(np.stack([1.0 - t, t], axis=1))


def test_inpainting_keeps_known_rows_and_reproduces_linear_weights():
    mesh = tube_rig(n_ring=16, n_seg=24).mesh
    v, f = mesh.vertices, mesh.faces
    W = linear_weights(v)
    same, copied = inpaint_weights(v, f, W, np.ones(len(v), bool), **NO_SMOOTHING)
    np.testing.assert_allclose(same.toarray(), W.toarray(), atol=1e-12)
    assert not copied.any()
    # forget a band of the wall (and garble it): the inpainted band is the linear blend again
    band = (v[:, 1] > 1.0) & (v[:, 1] < 2.0)
    garbled = W.toarray()
    garbled[band] = [1.0, 0.0]
    out, _ = inpaint_weights(v, f, sp.csr_matrix(garbled), ~band, **NO_SMOOTHING)
    np.testing.assert_allclose(out.toarray()[band], W.toarray()[band], atol=1e-6)


def test_smoothing_moves_only_inpainted_rows_and_rows_stay_normalised():
    mesh = tube_rig(n_ring=16, n_seg=24).mesh
    v, f = mesh.vertices, mesh.faces
    W = linear_weights(v).toarray()
    W[:, 0] = (W[:, 0] > 0.5).astype(float)  # a hard step: smoothing has something to do
    W[:, 1] = 1 - W[:, 0]
    band = (v[:, 1] > 1.2) & (v[:, 1] < 1.8)
    out = inpaint_weights(v, f, sp.csr_matrix(W), ~band, smooth_iterations=20,
                          contact_neighbours=WeightsConfig().contact_neighbours)[0].toarray()
    np.testing.assert_array_equal(out[~band], W[~band])
    np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-12)
    assert (out >= 0).all()
    assert np.ptp(out[band, 0]) < 1.0  # the step inside the band is softened


def test_a_piece_without_accepted_vertices_copies_its_nearest_neighbours():
    tube = tube_rig().mesh
    hat = Mesh(tube.vertices * 0.2 + [0.0, 3.2, 0.0], tube.faces)  # a small separate piece above the top
    v = np.concatenate([tube.vertices, hat.vertices])
    f = np.concatenate([tube.faces, hat.faces + len(tube.vertices)])
    W = np.concatenate([linear_weights(tube.vertices).toarray(), np.tile([1.0, 0.0], (len(hat.vertices), 1))])
    known = np.arange(len(v)) < len(tube.vertices)
    out, copied = inpaint_weights(v, f, sp.csr_matrix(W), known, **NO_SMOOTHING)
    assert copied[~known].all() and not copied[known].any()
    np.testing.assert_allclose(out.toarray()[~known, 1], 1.0, atol=0.05)  # the top of the tube: joint 1


def test_matches_are_rejected_by_distance_and_by_normal():
    mesh = tube_rig().mesh
    v, f = mesh.vertices, mesh.faces
    face, corner = vertex_faces(len(v), f)
    to_src = SurfacePoints(face, np.eye(3)[corner])
    ok, dist, angle = accepted_matches(v, f, v, f, to_src, max_distance=0.05, max_angle=30.0)
    assert ok.all() and dist.max() < 1e-12
    moved = v.copy()
    moved[5] += [0.3, 0.0, 0.0]                      # far from its source point
    flipped = v.copy()
    flipped[:, 0] = -flipped[:, 0]                 # mirrored: every normal turns the other way
    ok, _, _ = accepted_matches(moved, f, v, f, to_src, max_distance=0.05, max_angle=30.0)
    assert not ok[5] and ok.sum() >= len(v) - 7    # the neighbours' normals may tilt too
    ok, _, angle = accepted_matches(flipped, f[:, ::-1], v, f, to_src, max_distance=10.0, max_angle=30.0)
    assert not ok[np.abs(v[:, 0]) > 0.2].any()


def test_robust_mode_on_a_clean_target_agrees_with_interpolation(fixture_source):
    """On a target the source fits everywhere, robust = interp except a few rejected rows."""
    from test_skeleton_transfer import _fixture_markers

    from asetransfer.io import load_mesh
    from asetransfer.stages.transfer import transfer
    target = load_mesh(FIXTURES / "target_heavy.ply")
    markers = _fixture_markers(fixture_source.mesh, target)
    a = transfer(fixture_source, target, markers, Config(weights=WeightsConfig(method="interp")))
    b = transfer(fixture_source, target, markers, Config(weights=WeightsConfig(method="robust")))
    diff = 0.5 * np.abs(a.rig.skin.to_dense() - b.rig.skin.to_dense()).sum(axis=1)
    stats = b.report.weights.robust
    assert stats.accepted_fraction > 0.95
    assert np.mean(diff) < 0.01
    np.testing.assert_allclose(a.rig.skeleton.bind_world, b.rig.skeleton.bind_world)  # weights only
    # the default ("auto") interpolates on a target in one piece
    c = transfer(fixture_source, target, markers)
    assert c.report.weights.method == "interp" and c.report.weights.target_pieces == 1
    assert np.array_equal(c.rig.skin.weights, a.rig.skin.weights)


def test_robust_mode_attaches_a_held_prop_to_the_hand(fixture_source):
    """A staff held in the left hand reaches down past the thigh.  Interpolation gives its
    lower end the thigh's weights (it bends when the leg moves); robust mode rejects the
    staff's matches and attaches the whole piece rigidly where it touches the body."""
    import trimesh
    from scipy.spatial.transform import Rotation
    from test_skeleton_transfer import _fixture_markers

    from asetransfer.io import load_mesh
    from asetransfer.stages.transfer import transfer
    body = load_mesh(FIXTURES / "target_heavy.ply")
    staff = trimesh.creation.cylinder(radius=0.02, height=1.4, sections=12)
    upright = Rotation.from_euler("x", -90, degrees=True).as_matrix()
    staff_v = staff.vertices @ upright.T + [0.70, 0.85, -0.03]  # through the left palm, y 0.15 - 1.55
    n = len(body.vertices)
    target = Mesh(np.concatenate([body.vertices, staff_v]), np.concatenate([body.faces, staff.faces + n]))
    markers = _fixture_markers(fixture_source.mesh, body)
    bend = Rotation.from_euler("x", 30, degrees=True).as_matrix()

    rigs = {m: transfer(fixture_source, target, markers, Config(weights=WeightsConfig(method=m))).rig
            for m in ("interp", "robust", "auto")}

    def staff_moves(method, joint):
        rig = rigs[method]
        sk = rig.skeleton
        return rig.posed_vertices(sk.posed_world({sk.index(joint): bend}))[n:], rig.posed_vertices()[n:]

    posed, rest = staff_moves("interp", "thigh.L")
    assert np.linalg.norm(posed - rest, axis=1).max() > 0.1  # interp: the staff's foot follows the thigh
    posed, rest = staff_moves("robust", "thigh.L")
    assert np.linalg.norm(posed - rest, axis=1).max() < 1e-9
    posed, rest = staff_moves("robust", "forearm.L")
    assert np.linalg.norm(posed - rest, axis=1).min() > 0.1   # every staff vertex follows the forearm
    W = rigs["robust"].skin.to_dense()[n:]
    assert np.abs(W - W[0]).max() == 0.0                      # one set of weights: a rigid attachment
    names = rigs["robust"].skeleton.names
    assert names[int(np.argmax(W[0]))] in ("forearm.L", "hand.L") and W[0].max() > 0.9
    # the default ("auto") is robust on a target in several pieces
    assert np.array_equal(rigs["auto"].skin.weights, rigs["robust"].skin.weights)


@pytest.mark.parametrize("scenery", [("crate",), ("floor",), ("crate", "floor"), ("twin",)])
def test_pieces_standing_apart_are_bound_to_the_root(fixture_source, caplog, scenery):
    """A crate beside the character and the floor under its feet are pieces the source has no
    surface for, held by no limb: bound whole to the root (by their weights the crate took
    the nearer hand's, the floor a hand's), and the verdict measures the body, not the floor
    (three times its height: every bone read as too short, 'poor').  A crate standing on
    the floor touches it: one piece standing apart.  A second character beside the first is
    named as one."""
    import trimesh
    from test_skeleton_transfer import _fixture_markers

    from asetransfer.io import load_mesh
    from asetransfer.stages.transfer import transfer
    body = load_mesh(FIXTURES / "target_heavy.ply")
    lo, hi = body.bounds()
    h, middle = float(hi[1] - lo[1]), 0.5 * (lo + hi)
    made = {"crate": trimesh.creation.box(extents=[0.3 * h] * 3).apply_translation(
                [hi[0] + 0.4 * h, lo[1] + 0.15 * h, middle[2]]),
            "floor": trimesh.creation.box(extents=[3 * h, 0.01 * h, 3 * h]).apply_translation(
                [middle[0], lo[1] - 0.005 * h, middle[2]]),
            "twin": trimesh.Trimesh(body.vertices + [1.5 * (hi[0] - lo[0]), 0, 0], body.faces, process=False)}
    parts = [(body.vertices, body.faces)] + [(made[k].vertices, made[k].faces) for k in scenery]
    offsets = np.cumsum([0] + [len(v) for v, _ in parts[:-1]])
    target = Mesh(np.concatenate([v for v, _ in parts]), np.concatenate([f + o for (_, f), o in zip(parts, offsets)]))
    caplog.set_level("WARNING", logger="asetransfer")
    result = transfer(fixture_source, target, _fixture_markers(fixture_source.mesh, body), Config())

    W = result.rig.skin.to_dense()[body.n_vertices:]
    root = int(fixture_source.skeleton.roots()[0])
    assert np.array_equal(W, np.eye(W.shape[1])[np.full(len(W), root)])
    said = "50 % of the vertices: another character?" if scenery == ("twin",) else "a floor, a prop beside"
    assert caplog.text.count(f"a piece standing apart from the body ({len(W)} vertices, {said}") == 1
    quality = result.report.quality
    assert quality.bones_out_of_proportion == [] and quality.verdict != "poor"


def _heavy_with_sword():
    """The heavy fixture with a sword of three intersecting parts (grip, guard, blade) in its
    right hand (tests/dressing.sword_parts), and its body's vertex count."""
    import json

    from dressing import FIXTURE_JOINTS, dress

    from asetransfer.io import load_mesh
    body = load_mesh(FIXTURES / "target_heavy.ply")
    truth = json.loads((FIXTURES / "target_heavy.truth.json").read_text())["joints"]
    joints = {r: np.array(truth[n]) for r, n in FIXTURE_JOINTS.items()}
    return dress(body, "sword_parts", joints, [0, 1, 0], [0, 0, 1]), body.n_vertices


def test_a_prop_of_intersecting_parts_is_bound_whole_to_one_joint(fixture_source, caplog):
    """Weighted piece by piece, the sword's parts were split between the hand and thumb joints
    (it bent when the thumb curled); now its parts are one rigid group on the hand."""
    import logging

    from test_skeleton_transfer import _fixture_markers

    from asetransfer.stages.transfer import transfer
    target, n = _heavy_with_sword()
    markers = _fixture_markers(fixture_source.mesh, target)
    with caplog.at_level(logging.WARNING, logger="asetransfer"):
        rig = transfer(fixture_source, target, markers).rig
    W = rig.skin.to_dense()[n:]
    joint = int(np.argmax(W[0]))
    np.testing.assert_array_equal(W[:, joint], 1.0)  # every sword vertex: 100 % one joint
    assert rig.skeleton.names[joint] == "hand.R"
    assert "bound rigidly to joint 'hand.R'" in caplog.text
    bend = np.eye(3)[[0, 2, 1]] * [1, 1, -1]  # 90 degrees about x
    sk = rig.skeleton
    posed = rig.posed_vertices(sk.posed_world({sk.index("thumb.02.R"): bend}))[n:]
    np.testing.assert_allclose(posed, rig.posed_vertices()[n:], atol=1e-9)  # curling the thumb leaves it


def test_prop_groups_join_the_props_that_touch_and_leave_the_body():
    from dressing import bar

    from asetransfer.stages.weights import prop_groups
    tube = tube_rig().mesh
    x, y, z = np.eye(3)
    parts = [(tube.vertices, tube.faces),
             bar(np.array([0.0, 1.0, 0.0]), x, 1.0, 0.1, 0.1, y),        # crosses the tube: a grip in a hand
             bar(np.array([0.5, 0.8, 0.0]), y, 0.4, 0.05, 0.05, x),      # crosses the grip: a guard
             bar(np.array([3.0, 1.0, 0.0]), x, 0.5, 0.1, 0.1, y),        # apart: another prop
             bar(np.array([3.5, 1.0, 0.0]), x, 0.5, 0.1, 0.1, y)]        # touching it end to end
    offsets = np.cumsum([0] + [len(v) for v, _ in parts[:-1]])
    v = np.concatenate([p[0] for p in parts])
    f = np.concatenate([p[1] + o for p, o in zip(parts, offsets)])
    accepted = np.arange(len(v)) < len(tube.vertices)
    groups = prop_groups(v, f, accepted, prop_fraction=0.25, touch_distance=1e-3)
    part = np.repeat(np.arange(len(parts)), [len(p[0]) for p in parts])
    assert (groups[part == 0] == -1).all()
    assert len(set(groups[(part == 1) | (part == 2)])) == 1 and len(set(groups[(part == 3) | (part == 4)])) == 1
    assert groups[part == 1][0] != groups[part == 3][0]
    # a group that matched the source (the source has it: its weights say how it moves) is no prop
    accepted[part == 2] = True
    groups = prop_groups(v, f, accepted, prop_fraction=0.25, touch_distance=1e-3)
    assert (groups[(part == 1) | (part == 2)] == -1).all() and (groups[part == 3] == 0).all()


def test_cli_transfer_on_a_fixture_is_bound_and_reimports(tmp_path, fixture_source):
    """The README's main job on the Z-up cartoon fixture: the written file is the in-memory rig,
    and bending the left forearm moves exactly the vertices weighted to it or below it."""
    from conftest import assert_rigs_equal
    from scipy.spatial.transform import Rotation

    from asetransfer.config import SkeletonConfig
    from asetransfer.io import load_markers, load_mesh, load_rig
    from asetransfer.stages.transfer import transfer
    from asetransfer_cli.main import main
    src, tgt, mk = FIXTURES / "source.glb", FIXTURES / "target_cartoon.off", FIXTURES / "markers_cartoon.json"
    out = tmp_path / "cartoon.glb"
    assert main(["transfer", str(src), str(tgt), "--markers", str(mk), "-o", str(out), "-q",
                 "--weights", "robust", "--pose-normalize"]) == 0
    got = load_rig(out)
    target = load_mesh(tgt)
    expected = transfer(fixture_source, target, load_markers(mk, fixture_source.mesh, target),
                        Config(skeleton=SkeletonConfig(pose_normalize=True),
                               weights=WeightsConfig(method="robust"))).rig
    assert_rigs_equal(got, expected, tol=1e-5)  # float32 in the file
    sk = got.skeleton
    arm = sk.index("forearm.L")
    below = [j for j in range(sk.n_joints) if j == arm or arm in _ancestors(sk.parents, j)]
    bend = Rotation.from_euler("x", 40, degrees=True).as_matrix()
    moved = np.linalg.norm(got.posed_vertices(sk.posed_world({arm: bend})) - got.posed_vertices(), axis=1) > 1e-6
    weighted = got.skin.to_dense()[:, below].sum(axis=1) > 0
    np.testing.assert_array_equal(moved, weighted)
    assert 100 < moved.sum() < len(moved) / 4


def _ancestors(parents, j):
    out = []
    while parents[j] >= 0:
        j = parents[j]
        out.append(j)
    return out
