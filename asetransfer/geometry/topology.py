"""Mesh connectivity as users' meshes have it: duplicate vertices, several pieces."""
from __future__ import annotations

import numpy as np

from .rotations import unit


def weld(vertices: np.ndarray, faces: np.ndarray, tolerance: float = 1e-7):
    """Merge coincident vertices (UV/normal seams split a surface into pieces).

    Parameters
    ----------
    vertices, faces : the mesh.
    tolerance : merge distance as a fraction of the bounding-box diagonal.

    Returns
    -------
    welded_vertices : (n', 3) one vertex per distinct position (first occurrence).
    welded_faces : (F, 3) the same triangles, in the same order, on welded vertices.
    index : (n,) welded vertex of each input vertex.
    """
    v = np.asarray(vertices, dtype=np.float64)
    diag = float(np.linalg.norm(v.max(axis=0) - v.min(axis=0))) if len(v) else 1.0
    step = max(tolerance * diag, 1e-300)
    keys = np.round(v / step).astype(np.int64)
    first, inverse = _unique_rows(keys)
    # number welded vertices in order of first occurrence: stable and deterministic
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    index = rank[inverse]
    return v[np.sort(first)], index[np.asarray(faces, dtype=np.int64)], index


def distinct(values: np.ndarray) -> np.ndarray:
    """Sorted distinct values of an integer array of any shape (``np.unique(values)``).

    numpy 2.3+ finds ``np.unique``'s values by hashing, 20-50x slower than a sort on
    many distinct integers: 0.6 s for the faces of a 200k-vertex mesh, 0.03 s sorted."""
    s = np.sort(np.asarray(values).ravel())
    keep = np.ones(len(s), dtype=bool)
    keep[1:] = s[1:] != s[:-1]
    return s[keep]


def used_vertices(faces: np.ndarray) -> np.ndarray:
    """Sorted indices of the vertices the triangles use (a stray vertex is not a surface)."""
    f = np.asarray(faces, dtype=np.int64).ravel()
    used = np.zeros(int(f.max(initial=-1)) + 1, dtype=bool)
    used[f] = True
    return np.flatnonzero(used)


def welded_surface(vertices: np.ndarray, faces: np.ndarray):
    """The surface of a mesh welded across seams (:func:`weld`), without the vertices no triangle uses.

    Returns
    -------
    welded_vertices : (n', 3); welded_faces : (F, 3) the same triangles, in the same order,
    on them; original : (n',) the first input vertex of each welded vertex.
    """
    used = used_vertices(faces)
    welded, welded_faces, index = weld(vertices[used], np.searchsorted(used, faces))
    original = np.zeros(len(welded), dtype=np.int64)
    original[index[::-1]] = used[::-1]
    return welded, welded_faces, original


def _unique_rows(keys: np.ndarray):
    """``np.unique(keys, axis=0, return_index=True, return_inverse=True)[1:]`` for (n, 3)
    integer rows, by a lexicographic sort (4x faster than the structured sort behind
    ``axis=0``): the first index of each distinct row and each row's distinct row,
    numbered in lexicographic order."""
    order = np.lexsort(keys.T[::-1])  # stable: the first of equal rows comes first
    ranked = keys[order]
    new = np.ones(len(order), dtype=bool)
    new[1:] = (ranked[1:] != ranked[:-1]).any(axis=1)
    inverse = np.empty(len(order), dtype=np.int64)
    inverse[order] = np.cumsum(new) - 1
    return order[new], inverse


#: graphs up to this many vertices are labelled in numpy (:func:`components`: 7 ms on a
#: 13k-vertex mesh, 52 ms on 200k) rather than by SciPy's csgraph (2 ms, 27 ms), whose
#: import (it loads scipy.sparse.linalg and scipy.linalg) costs ~0.12 s of every run
DIRECT_COMPONENTS = 300_000


def components(n: int, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """(n,) connected-component label of each vertex of the undirected graph with edges
    ``(i[k], j[k])``, components numbered by their lowest vertex index (the labels of
    ``scipy.sparse.csgraph.connected_components``; tests compare them).

    Up to ``DIRECT_COMPONENTS`` vertices: every edge hooks the root of its larger end
    onto the root of its smaller one, then pointer jumping flattens the trees, until no
    edge joins two roots (a few rounds on a mesh; a root is always its tree's lowest vertex).
    """
    i = np.asarray(i, dtype=np.int64).ravel()
    j = np.asarray(j, dtype=np.int64).ravel()
    if n > DIRECT_COMPONENTS:
        import scipy.sparse as sp
        from scipy.sparse.csgraph import connected_components

        g = sp.coo_matrix((np.ones(len(i)), (i, j)), shape=(n, n))
        return connected_components(g, directed=False)[1]
    parent = np.arange(n)
    while len(i):
        pi, pj = parent[i], parent[j]
        apart = pi != pj
        if not apart.any():
            break
        i, j, pi, pj = i[apart], j[apart], pi[apart], pj[apart]
        np.minimum.at(parent, np.maximum(pi, pj), np.minimum(pi, pj))
        while True:
            up = parent[parent]
            if np.array_equal(up, parent):
                break
            parent = up
    return np.unique(parent, return_inverse=True)[1].reshape(-1).astype(np.int32)


def vertex_components(n_vertices: int, faces: np.ndarray) -> np.ndarray:
    """(n,) connected-component label of each vertex (edges of the triangles).

    Labels are numbered by each component's lowest vertex index; a vertex used by
    no triangle is a component of its own.
    """
    f = np.asarray(faces, dtype=np.int64)
    return components(n_vertices, np.concatenate([f[:, 0], f[:, 1]]), np.concatenate([f[:, 1], f[:, 2]]))


def vertex_pieces(vertices: np.ndarray, faces: np.ndarray, tolerance: float = 1e-7) -> np.ndarray:
    """(n,) the piece of each input vertex once seams are welded (:func:`weld`): UV or normal
    seams do not split a surface into pieces."""
    v, f, index = weld(vertices, faces, tolerance)
    return vertex_components(len(v), f)[index]


def piece_count(vertices: np.ndarray, faces: np.ndarray, tolerance: float = 1e-7) -> int:
    """Number of connected pieces of the triangles once seams are welded (:func:`weld`)."""
    v, f, _ = weld(vertices, faces, tolerance)
    return int(len(np.unique(vertex_components(len(v), f)[f[:, 0]]))) if len(f) else 0


def vertex_areas(vertices: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """(n,) each vertex's share of the surface: a third of the area of each of its
    triangles (the shares sum to the surface area)."""
    third = np.linalg.norm(_area_normals(vertices, faces), axis=1) / 6.0
    return np.bincount(np.asarray(faces, dtype=np.int64).ravel(), np.repeat(third, 3), minlength=len(vertices))


def _area_normals(vertices, faces):
    """(F, 3) triangle normals scaled by twice the triangle area."""
    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64)
    return np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]])


def face_normals(vertices: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """(F, 3) unit triangle normals (zero for degenerate triangles)."""
    return unit(_area_normals(vertices, faces))


def vertex_normals(vertices: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """(n, 3) area-weighted unit vertex normals (zero where undefined)."""
    n = _area_normals(vertices, faces)
    corners = np.asarray(faces, dtype=np.int64).ravel()
    per_corner = np.repeat(n, 3, axis=0)
    out = np.stack([np.bincount(corners, weights=per_corner[:, k], minlength=len(vertices)) for k in range(3)], 1)
    return unit(out)
