"""What every character reader does with the pieces it found: merge the mesh pieces into one
:class:`~asetransfer.Mesh` (each piece a part), stack the pieces' skin influences, normalise
the weights and make repeated joint and part names unique.

One rule for repeated names, in parts and joints alike: Blender's.  The first ``body``
keeps its name, the next ones become ``body.001``, ``body.002``... (the lowest suffix no
earlier name holds), the names TDs see in Blender's outliner for duplicated objects.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ..model.mesh import DEGENERATE_MESSAGE, Mesh
from ..model.shapes import MorphTarget
from ..model.skin import SkinWeights

log = logging.getLogger("asetransfer")


@dataclass
class MeshPiece:
    """The vertices of one mesh piece of a file, before merging.

    Attributes
    ----------
    name : the piece's name in the file (repeats allowed: :func:`merge_pieces` renames them).
    positions : (n, 3) vertex positions.
    faces : (f, 3) triangles, indices into this piece's vertices.
    normals : (n, 3) per-vertex normals, or None.
    uv : (n, 2) texture coordinates, or None.
    """

    name: str
    positions: np.ndarray
    faces: np.ndarray
    normals: np.ndarray | None = None
    uv: np.ndarray | None = None


def unique_names(names) -> list:
    """``names`` with repeats renamed Blender's way (module docstring): first come keeps its
    name, a repeat of ``n`` becomes ``n.001``, ``n.002``..., skipping suffixed names already taken."""
    out, taken, next_suffix = [], set(), {}
    for name in names:
        new = name
        if name in taken:
            k = next_suffix.get(name, 1)
            while f"{name}.{k:03d}" in taken:
                k += 1
            next_suffix[name] = k + 1
            new = f"{name}.{k:03d}"
        taken.add(new)
        out.append(new)
    return out


def unique_joint_names(path, names) -> list:
    """:func:`unique_names` of a skeleton's joints, a warning for each joint renamed
    (Maya and some exporters allow repeated joint names; a rig cannot have them)."""
    out = unique_names(names)
    for name, new in zip(names, out):
        if new != name:
            log.warning("%s: joint name %r is used twice; the second is renamed %r", path, name, new)
    return out


def checked_mesh(path, vertices, faces, **parts) -> Mesh:
    """``Mesh(vertices, faces, **parts)``, its complaints (and a surface of zero area) raised
    as a one-line :class:`~asetransfer.errors.InputError` on ``path``."""
    try:
        mesh = Mesh(vertices, faces, **parts)
    except ValueError as e:
        raise InputError(path, str(e)) from None
    if mesh.all_faces_degenerate():
        raise InputError(path, DEGENERATE_MESSAGE)
    return mesh


def mesh_of_arrays(path, vertices, faces, **kw) -> Mesh:
    """:func:`checked_mesh` of a file's vertex and face arrays, an empty one refused."""
    vertices = np.asarray(vertices, dtype=np.float64).reshape(-1, 3)
    faces = np.asarray(faces, dtype=np.int64).reshape(-1, 3)
    if len(vertices) == 0:
        raise InputError(path, "mesh has no vertices")
    if len(faces) == 0:
        raise InputError(path, "mesh has no faces (a point cloud cannot be rigged)")
    return checked_mesh(path, vertices, faces, **kw)


def merge_pieces(path, pieces: list) -> Mesh:
    """One mesh from the :class:`MeshPiece` list ``pieces``, each piece a part.

    Vertices are the pieces' in turn (piece ``i``'s triangles offset by the vertex count
    of the pieces before it); part names are the pieces' made unique (:func:`unique_names`);
    normals and uv are kept only when every piece has them.

    Raises
    ------
    InputError if no piece has a triangle, the mesh is invalid or all its triangles are degenerate.
    """
    if not any(len(p.faces) for p in pieces):
        raise InputError(path, "mesh has no faces")
    offsets = np.cumsum([0] + [len(p.positions) for p in pieces])
    normals = np.concatenate([p.normals for p in pieces]) if all(p.normals is not None for p in pieces) else None
    uv = np.concatenate([p.uv for p in pieces]) if all(p.uv is not None for p in pieces) else None
    return checked_mesh(path, np.concatenate([p.positions for p in pieces]),
                        np.concatenate([p.faces + o for p, o in zip(pieces, offsets)]),
                        parts=tuple(unique_names([p.name for p in pieces])),
                        vertex_part=np.concatenate([np.full(len(p.positions), i, np.int32)
                                                    for i, p in enumerate(pieces)]),
                        normals=normals, uv=uv)


def stack_influences(rows: list) -> tuple:
    """The pieces' influences one under the other.

    Parameters
    ----------
    rows : per piece, ((n_i, k_i) joint indices, (n_i, k_i) weights).

    Returns
    -------
    (sum n_i, max k_i) joint indices and weights; a narrower piece's extra slots are joint 0
    with weight 0.
    """
    width = max(idx.shape[1] for idx, _ in rows)
    idx = np.concatenate([np.pad(i, ((0, 0), (0, width - i.shape[1]))) for i, _ in rows])
    w = np.concatenate([np.pad(wt, ((0, 0), (0, width - wt.shape[1]))) for _, wt in rows])
    return idx, w


def normalise_weights(path, mesh: Mesh, idx: np.ndarray, w: np.ndarray, n_joints: int) -> SkinWeights:
    """The skin of ``mesh`` from its (V, k) joint indices ``idx`` and weights ``w``.

    Each row is scaled to sum to 1 (a warning counts the rows that did not, within 1e-3);
    a vertex with no weight takes the influences of its nearest weighted vertex (with a
    warning).  Raises InputError if every weight is zero.
    """
    total = w.sum(axis=1)
    if not (total > 0).any():
        raise InputError(path, "every skin weight is zero")
    off = np.abs(total - 1.0) > 1e-3
    zero = total <= 0
    if (off & ~zero).any():
        log.warning("%s: skin weights of %d vertices do not sum to 1; normalised", path, int((off & ~zero).sum()))
    skin = SkinWeights.from_influences(idx, w, n_joints)
    if zero.any():
        log.warning("%s: %d vertices have no skin weight; they take their nearest weighted vertex's", path,
                    int(zero.sum()))
        weighted = np.flatnonzero(~zero)
        from scipy.spatial import cKDTree  # imported on use: ~0.15 s

        _, near = cKDTree(mesh.vertices[weighted]).query(mesh.vertices[zero])
        indices, weights = skin.indices.copy(), skin.weights.copy()
        indices[zero], weights[zero] = indices[weighted[near]], weights[weighted[near]]
        skin = SkinWeights(indices, weights, n_joints)
    return skin


def mesh_parts(mesh: Mesh) -> list:
    """``[(name, vertex ids, triangles in local ids)]``: one entry per part, or a single one when a
    triangle spans parts (the meshes a writer makes of a rig's mesh)."""
    part_of_face = mesh.vertex_part[mesh.faces]
    if len(mesh.parts) == 1 or (part_of_face != part_of_face[:, :1]).any():
        return [(mesh.parts[0] if len(mesh.parts) == 1 else "mesh", np.arange(mesh.n_vertices), mesh.faces)]
    out = []
    for p, name in enumerate(mesh.parts):
        ids = np.flatnonzero(mesh.vertex_part == p)
        local = np.full(mesh.n_vertices, -1, np.int64)
        local[ids] = np.arange(len(ids))
        out.append((name, ids, local[mesh.faces[part_of_face[:, 0] == p]]))
    return out


def pieces_shapes(found: list, pieces: list) -> tuple:
    """:func:`joined_shapes` of ``found``, each piece's ``(shapes, default weights by name)``
    as a reader gives them (FBX's ``geometry_shapes``, COLLADA's ``geometry_morphs``), over
    the :class:`MeshPiece` list ``pieces``."""
    weights = {name: w for _, default in found for name, w in default.items()}
    return joined_shapes([own for own, _ in found], [len(p.positions) for p in pieces], weights)


def joined_shapes(per_piece: list, sizes: list, weights: dict | None = None) -> tuple:
    """MorphTargets of the merged mesh from each piece's shapes (name -> (local vertices,
    (k, 3) offsets, (k, 3) normal offsets or None); pieces of ``sizes`` vertices, in merge
    order); a name on several pieces is one shape, its default weight ``weights[name]`` (0
    when not given)."""
    starts = np.cumsum([0] + sizes[:-1])
    names = list(dict.fromkeys(name for shapes in per_piece for name in shapes))
    out = []
    for name in names:
        found = [(start + s[name][0], s[name][1], s[name][2]) for s, start in zip(per_piece, starts) if name in s]
        vertices = np.concatenate([v for v, _, _ in found])
        normals = None if all(n is None for _, _, n in found) else \
            np.concatenate([np.zeros_like(p) if n is None else n for _, p, n in found])
        order = np.argsort(vertices, kind="stable")
        out.append(MorphTarget(name, vertices[order], np.concatenate([p for _, p, _ in found])[order],
                               None if normals is None else normals[order], (weights or {}).get(name, 0.0)))
    return tuple(out)
