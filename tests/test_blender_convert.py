"""The add-on's conversions between Blender data and asetransfer arrays (no bpy needed)."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from conftest import ROOT

# the module alone: the add-on package's __init__ needs bpy, convert.py does not
_spec = importlib.util.spec_from_file_location("asetransfer_blender_convert",
                                               ROOT / "blender" / "asetransfer_blender" / "convert.py")
convert = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(convert)


def random_frames(n, seed=0):
    rng = np.random.default_rng(seed)
    frames = np.tile(np.eye(4), (n, 1, 1))
    frames[:, :3, :3] = Rotation.random(n, random_state=seed).as_matrix()
    frames[:, :3, 3] = rng.normal(size=(n, 3))
    return frames


def test_axes_and_units_round_trip():
    p = np.random.default_rng(1).normal(size=(20, 3))
    q = convert.to_asetransfer(p, 0.01)
    # Blender's up (Z) is asetransfer's up (Y); its forward -Y is glTF's +Z
    np.testing.assert_allclose(convert.to_asetransfer([[0, 0, 100.0], [0, -100.0, 0]], 0.01), [[0, 1, 0], [0, 0, 1]])
    np.testing.assert_allclose(convert.from_asetransfer(q, 0.01), p, atol=1e-12)


def test_bone_frames_invert_joint_frames_and_drop_object_scale():
    bones = random_frames(7)
    armature = np.diag([100.0, 100.0, 100.0, 1.0])  # an armature object scaled x100 in a centimetre scene
    armature[:3, 3] = [5.0, -2.0, 1.0]
    joints = convert.joint_frames(bones, armature, 0.01)
    np.testing.assert_allclose(joints[:, :3, :3] @ joints[:, :3, :3].transpose(0, 2, 1), np.tile(np.eye(3), (7, 1, 1)),
                               atol=1e-12)
    world = convert.bone_frames(joints, 0.01)
    expected = armature @ bones
    np.testing.assert_allclose(world[:, :3, 3], expected[:, :3, 3], atol=1e-9)
    np.testing.assert_allclose(world[:, :3, :3], bones[:, :3, :3], atol=1e-12)


def test_nearest_rotation_keeps_a_mirrored_frame_right_handed():
    r = Rotation.random(3, random_state=2).as_matrix()
    mirrored = r @ np.diag([-1.0, 2.0, 2.0])
    out = convert.nearest_rotation(mirrored)
    np.testing.assert_allclose(np.linalg.det(out), 1.0)


def test_bone_lengths_reach_children_and_halve_for_leaves():
    heads = np.array([[0, 0, 0], [0, 1, 0], [0, 3, 0], [1, 1, 0.0]])
    parents = np.array([-1, 0, 1, 1])
    lengths = convert.bone_lengths(heads, parents, minimum=0.01)
    np.testing.assert_allclose(lengths, [1.0, 1.5, 0.75, 0.75])


def test_skin_from_groups_normalises_and_gives_unweighted_vertices_the_root():
    rows, joints, weights = np.array([0, 0, 1]), np.array([1, 2, 2]), np.array([0.2, 0.6, 0.5])
    skin, unweighted = convert.skin_from_groups(rows, joints, weights, n_vertices=3, n_joints=3, fallback=0)
    dense = skin.to_dense()
    np.testing.assert_allclose(dense, [[0, 0.25, 0.75], [0, 0, 1], [1, 0, 0]])
    assert unweighted.tolist() == [2]


def test_vertex_groups_slice_one_object_of_the_joined_mesh():
    from asetransfer import SkinWeights

    skin = SkinWeights.from_dense(np.array([[1, 0], [0.5, 0.5], [0, 1], [0.25, 0.75]]))
    groups = convert.vertex_groups(skin, 2, 4)
    assert [g[0].tolist() for g in groups] == [[1], [0, 1]]
    np.testing.assert_allclose(groups[1][1], [1.0, 0.75])


def test_joined_mesh_keeps_objects_as_parts():
    tri = np.array([[0, 1, 2]])
    pts = np.eye(3)
    mesh = convert.joined_mesh([("body", pts, tri), ("eye", pts + 1, tri)])
    assert mesh.parts == ("body", "eye") and mesh.vertex_part.tolist() == [0, 0, 0, 1, 1, 1]
    assert mesh.faces.tolist() == [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(ValueError):
        convert.joined_mesh([("empty", pts, np.zeros((0, 3), int))])
