"""Blender data <-> asetransfer arrays, as plain functions on NumPy arrays (no ``bpy``).

Frames.  Blender's world is Z-up and measured in Blender units (BU); one BU is
``unit_scale`` metres (``scene.unit_settings.scale_length``).  asetransfer works in the
frame of the files the command line reads from a glTF exported from the same scene
(Y-up, metres), so that a marker file saved in Blender feeds ``asetransfer transfer``
as it is.  A world point ``p`` (BU, Z-up) maps to::

    q = s C p,    C = [[1, 0, 0], [0, 0, 1], [0, -1, 0]]     (x, y, z) -> (x, z, -y)

which is the glTF exporter's axis conversion (and the importer's inverse).

Joint orientation <-> bone.  A Blender bone's rest matrix (``Bone.matrix_local`` in
armature space) is a full frame: its Y axis runs head -> tail and the roll turns X and
Z about it.  asetransfer keeps each joint's world frame ``bind_world``.  The two are
mapped one to one: the joint frame is the bone's rest frame (rotation ``C R``, scale
removed), and a built bone gets exactly the joint's frame back (``EditBone.matrix`` =
the frame, which sets head, tail direction and roll).  So a bone's tail points along
its joint's local Y axis -- towards the child when the source's bones did (every
Blender-made rig) -- and the bone's length, which carries no information in
asetransfer, is the distance to its children (or a share of its parent's for a leaf).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from asetransfer.model.mesh import Mesh
from asetransfer.model.skeleton import Skeleton
from asetransfer.model.skin import SkinWeights

#: Blender world axes (Z-up) -> asetransfer / glTF axes (Y-up)
Z_UP_TO_Y_UP = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])


def to_asetransfer(points: np.ndarray, unit_scale: float) -> np.ndarray:
    """Blender world points (N, 3) in BU, Z-up -> asetransfer frame (N, 3), metres, Y-up: ``q = s C p``."""
    return (np.asarray(points, dtype=np.float64) @ Z_UP_TO_Y_UP.T) * float(unit_scale)


def from_asetransfer(points: np.ndarray, unit_scale: float) -> np.ndarray:
    """asetransfer points (N, 3) -> Blender world points (N, 3): ``p = C^T q / s``."""
    return (np.asarray(points, dtype=np.float64) @ Z_UP_TO_Y_UP) / float(unit_scale)


def transform_points(matrix: np.ndarray, points: np.ndarray) -> np.ndarray:
    """``M [p, 1]`` for (N, 3) points and a (4, 4) affine matrix, in float64."""
    m = np.asarray(matrix, dtype=np.float64)
    return np.asarray(points, dtype=np.float64) @ m[:3, :3].T + m[:3, 3]


def nearest_rotation(a: np.ndarray) -> np.ndarray:
    """(..., 3, 3) the rotation closest to each matrix (polar factor, ``U V^T`` of its SVD):
    strips scale and shear that object transforms put into a frame."""
    u, _, vt = np.linalg.svd(np.asarray(a, dtype=np.float64))
    r = u @ vt
    flip = np.linalg.det(r) < 0  # a mirroring object transform: keep a right-handed frame
    u[flip, :, 2] *= -1
    return np.where(flip[..., None, None], u @ vt, r)


def joint_frames(bone_rest: np.ndarray, armature_world: np.ndarray, unit_scale: float) -> np.ndarray:
    """Joint world frames (J, 4, 4) in the asetransfer frame from Blender bones.

    Parameters
    ----------
    bone_rest : (J, 4, 4) ``Bone.matrix_local`` (rest frame in armature space).
    armature_world : (4, 4) the armature object's ``matrix_world``.
    unit_scale : metres per BU.

    Returns
    -------
    (J, 4, 4) orthonormal frames: rotation ``C polar(A R)``, origin ``s C (A h)``.
    """
    world = np.asarray(armature_world, dtype=np.float64) @ np.asarray(bone_rest, dtype=np.float64)
    out = np.tile(np.eye(4), (len(world), 1, 1))
    out[:, :3, :3] = Z_UP_TO_Y_UP @ nearest_rotation(world[:, :3, :3])
    out[:, :3, 3] = to_asetransfer(world[:, :3, 3], unit_scale)
    return out


def bone_frames(bind_world: np.ndarray, unit_scale: float) -> np.ndarray:
    """Blender world bone frames (J, 4, 4) from asetransfer joint frames: the inverse of
    :func:`joint_frames` for an armature at the origin (rotation ``C^T polar(R)``)."""
    bind_world = np.asarray(bind_world, dtype=np.float64)
    out = np.tile(np.eye(4), (len(bind_world), 1, 1))
    out[:, :3, :3] = Z_UP_TO_Y_UP.T @ nearest_rotation(bind_world[:, :3, :3])
    out[:, :3, 3] = from_asetransfer(bind_world[:, :3, 3], unit_scale)
    return out


def bone_lengths(heads: np.ndarray, parents: np.ndarray, minimum: float) -> np.ndarray:
    """(J,) display lengths of bones: mean distance from a joint to its children; a leaf
    gets half its parent's; never below ``minimum`` (Blender drops zero-length bones)."""
    heads = np.asarray(heads, dtype=np.float64)
    parents = np.asarray(parents, dtype=np.int64)
    total, count = np.zeros(len(heads)), np.zeros(len(heads))
    child = np.flatnonzero(parents >= 0)
    np.add.at(total, parents[child], np.linalg.norm(heads[child] - heads[parents[child]], axis=1))
    np.add.at(count, parents[child], 1.0)
    length = np.where(count > 0, total / np.maximum(count, 1.0), 0.0)
    for j in np.argsort(_depths(parents), kind="stable"):  # parents first
        if count[j] == 0 and parents[j] >= 0:
            length[j] = 0.5 * length[parents[j]]
    return np.maximum(length, minimum)


def _depths(parents: np.ndarray) -> np.ndarray:
    depth = np.zeros(len(parents), dtype=np.int64)
    for j in range(len(parents)):
        p = parents[j]
        while p >= 0:
            depth[j] += 1
            p = parents[p]
    return depth


def skin_from_groups(rows: np.ndarray, joints: np.ndarray, weights: np.ndarray, *, n_vertices: int,
                     n_joints: int, fallback: int) -> tuple[SkinWeights, np.ndarray]:
    """Skin weights from vertex-group memberships.

    Parameters
    ----------
    rows, joints, weights : (M,) vertex index, joint index, weight of each membership
        (vertex groups named like no bone are left out by the caller).
    n_vertices, n_joints : the sizes of the skin.
    fallback : joint given weight 1 where a vertex has no weight at all (Blender
        leaves such a vertex in place: it follows the armature object, i.e. its root).

    Returns
    -------
    skin : rows normalised to sum 1 (``w_vj / sum_k w_vk``), largest first.
    unweighted : (U,) vertices that got the fallback.
    """
    w = sp.csr_matrix((np.asarray(weights, dtype=np.float64), (rows, joints)), shape=(n_vertices, n_joints))
    w.data = np.maximum(w.data, 0.0)
    unweighted = np.flatnonzero(np.asarray(w.sum(axis=1)).ravel() <= 0)
    if len(unweighted):
        w = w + sp.csr_matrix((np.ones(len(unweighted)), (unweighted, np.full(len(unweighted), fallback))),
                              shape=w.shape)
    return SkinWeights.from_sparse(w), unweighted


def vertex_groups(skin: SkinWeights, start: int, stop: int) -> list:
    """Per joint, the ``(vertices, weights)`` of vertices ``start..stop-1`` it weights
    (vertex indices counted from ``start``): one Blender vertex group per joint."""
    m = skin.to_sparse()[start:stop].tocsc()
    return [(m.indices[m.indptr[j]:m.indptr[j + 1]].copy(), m.data[m.indptr[j]:m.indptr[j + 1]].copy())
            for j in range(skin.n_joints)]


def joined_mesh(pieces: list) -> Mesh:
    """One :class:`Mesh` from ``(name, vertices (N_i, 3), faces (F_i, 3))`` pieces, in order;
    each piece is a part (the object it came from)."""
    offsets = np.cumsum([0] + [len(v) for _, v, _ in pieces])
    return Mesh(np.concatenate([v for _, v, _ in pieces]),
                np.concatenate([np.asarray(f, dtype=np.int64) + o for (_, _, f), o in zip(pieces, offsets)]),
                parts=[name for name, _, _ in pieces],
                vertex_part=np.repeat(np.arange(len(pieces)), np.diff(offsets)))


def skeleton_from_frames(names, parents, frames: np.ndarray) -> Skeleton:
    """A skeleton whose bind and rest poses are the given joint world frames (the armature's
    rest pose: Blender binds a mesh to the rest pose, so the two are one)."""
    return Skeleton.from_world(tuple(names), np.asarray(parents, dtype=np.int64), frames)


def offsets_to_asetransfer(offsets: np.ndarray, matrix_world: np.ndarray, unit_scale: float) -> np.ndarray:
    """Shape-key offsets (k, 3) in an object's local space -> the asetransfer frame: ``s C M d``
    (``M`` the object's linear part: offsets move with it but not with its translation)."""
    linear = np.asarray(matrix_world, dtype=np.float64)[:3, :3]
    return to_asetransfer(np.asarray(offsets, dtype=np.float64) @ linear.T, unit_scale)


def offsets_from_asetransfer(offsets: np.ndarray, matrix_world: np.ndarray, unit_scale: float) -> np.ndarray:
    """The inverse of :func:`offsets_to_asetransfer`: asetransfer offsets -> an object's local space."""
    world = (np.asarray(offsets, dtype=np.float64) / float(unit_scale)) @ Z_UP_TO_Y_UP  # C^T, rows
    return world @ np.linalg.inv(np.asarray(matrix_world, dtype=np.float64)[:3, :3]).T


def joined_shapes(per_object: list, offsets: np.ndarray) -> tuple:
    """Blend shapes of a joined mesh from each object's shape keys.

    Parameters
    ----------
    per_object : per object, a list of ``(name, vertices (k,), offsets (k, 3), value)`` in
        the asetransfer frame (vertices numbered in the object).
    offsets : (n_objects + 1,) where each object's vertices start in the joined mesh.

    Returns
    -------
    tuple of :class:`~asetransfer.model.shapes.MorphTarget`: one per name (keys of one name on
    several objects -- a face and its teeth -- are one shape), in first-seen order, default
    weight the first object's value.
    """
    from asetransfer.model.shapes import MorphTarget

    found: dict = {}
    for start, keys in zip(offsets, per_object):
        for name, vertices, moved, value in keys:
            entry = found.setdefault(name, ([], [], float(value)))
            entry[0].append(np.asarray(vertices, dtype=np.int64) + int(start))
            entry[1].append(np.asarray(moved, dtype=np.float64).reshape(-1, 3))
    shapes = []
    for name, (vertices, moved, value) in found.items():
        v, d = np.concatenate(vertices), np.concatenate(moved)
        order = np.argsort(v, kind="stable")
        shapes.append(MorphTarget(name, v[order], d[order], weight=value))
    return tuple(shapes)
