"""The add-on's conversions between Blender data and asetransfer arrays, its marker surfaces
and report lines (no bpy needed)."""
from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from asetransfer.errors import InputError
from conftest import ROOT



def addon_module(name: str):
    """One module of the add-on alone: the package's __init__ needs bpy, these do not."""
    spec = importlib.util.spec_from_file_location(f"asetransfer_blender_{name}",
                                                  ROOT / "blender" / "asetransfer_blender" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


convert, findings, surfaces = addon_module("convert"), addon_module("findings"), addon_module("surfaces")


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


def _grid(n=6, offset=(0.0, 0.0, 0.0), scale=1.0):
    """A flat n x n grid of triangles in the XY plane (vertices, faces)."""
    x, y = np.meshgrid(np.arange(n, dtype=float), np.arange(n, dtype=float))
    vertices = np.c_[x.ravel(), y.ravel(), np.zeros(n * n)] * scale + np.asarray(offset)
    quads = [(i * n + j, i * n + j + 1, (i + 1) * n + j + 1, (i + 1) * n + j) for i in range(n - 1)
             for j in range(n - 1)]
    faces = np.array([f for a, b, c, d in quads for f in ((a, b, c), (a, c, d))])
    return vertices, faces


def test_a_point_on_the_shown_surface_is_the_same_point_of_the_transfers_mesh():
    from asetransfer.model.mesh import Mesh

    rest, faces = _grid()
    shown = rest.copy()
    shown[:, 2] = 0.3 * shown[:, 0]  # posed: the sheet bent up, the same vertices
    character = surfaces.Character.of(Mesh(rest, faces), shown)
    # the empty halfway along the edge from vertex 7 to vertex 8, as shown
    location = 0.5 * (shown[7] + shown[8])
    points = surfaces.shown_points("markers", location[None], character, side="target", labels=["m"],
                                   snap_distance=0.05)
    np.testing.assert_allclose(points.positions(rest, faces)[0], 0.5 * (rest[7] + rest[8]), atol=1e-12)
    np.testing.assert_allclose(surfaces.shown_positions(points, character)[0], location, atol=1e-12)
    with pytest.raises(InputError, match="marker 'far': target.point is"):
        surfaces.shown_points("markers", location[None] + [0, 0, 2.0], character, side="target",
                              labels=["marker 'far'"], snap_distance=0.05)


def test_an_added_markers_partner_is_guessed_by_the_markers_or_the_boxes():
    from asetransfer.model.mesh import Mesh

    v, f = _grid()
    here = surfaces.Character.of(Mesh(v, f), v)
    there_v = v * 2.0 + [10.0, 0.0, 0.0]
    there = surfaces.Character.of(Mesh(there_v, f), there_v)
    # no markers: the same place in the other's box
    np.testing.assert_allclose(surfaces.counterpart(v[14], here, there, np.zeros((0, 3)), np.zeros((0, 3))),
                               there_v[14], atol=1e-9)
    # three markers: their similarity (here a mirrored box would mislead)
    flipped_v = there_v.copy()
    flipped_v[:, 0] = 20.0 - (there_v[:, 0] - 10.0)
    flipped = surfaces.Character.of(Mesh(flipped_v, f), flipped_v)
    marked = [0, 5, 30]
    np.testing.assert_allclose(surfaces.counterpart(v[14], here, flipped, v[marked], flipped_v[marked]),
                               flipped_v[14], atol=1e-9)


def test_report_lines_name_the_objects_and_bones_concerned():
    from asetransfer.model.mesh import Mesh
    from asetransfer.model.skin import SkinWeights

    body, faces = _grid()
    hat, hat_faces = _grid(3, offset=(0.0, 0.0, 5.0))
    mesh = Mesh(np.r_[body, hat], np.r_[faces, hat_faces + len(body)], parts=("robot", "hat"),
                vertex_part=np.r_[np.zeros(len(body)), np.ones(len(hat))])
    bone = np.r_[np.where(body[:, 0] < 2.5, 1, 2), np.zeros(len(hat))].astype(int)
    skin = SkinWeights(bone[:, None], np.ones((len(bone), 1)), 3)
    mask = np.r_[body[:, 0] > 3.5, np.ones(len(hat), bool)]
    # the robot's masked area (weighted to hand.L) is larger than the whole hat's
    assert findings.where(mask, mesh, skin, ["head", "spine", "hand.L"]) == "robot (near hand.L); hat"
    assert findings.where(~mask & (np.arange(len(mask)) < len(body)), mesh, skin,
                          ["head", "spine", "hand.L"]) == "robot (near spine, hand.L)"
