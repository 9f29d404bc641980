"""Points on a triangle mesh surface: closest points, barycentric coordinates."""
from __future__ import annotations

import igl
import numpy as np

from ..model.surface import SurfacePoints


def barycentric(points: np.ndarray, vertices: np.ndarray, faces: np.ndarray, face: np.ndarray) -> np.ndarray:
    """Barycentric coordinates of ``points`` (K, 3) in triangles ``face`` (K,).

    Points are projected onto the triangle's plane; degenerate triangles give the
    coordinates of the closest of their vertices.  Rows sum to 1.
    """
    tri = np.asarray(vertices, dtype=np.float64)[np.asarray(faces)[face]]
    a, b, c = tri[:, 0], tri[:, 1], tri[:, 2]
    v0, v1, v2 = b - a, c - a, np.asarray(points, dtype=np.float64) - a
    d00 = np.einsum("ij,ij->i", v0, v0)
    d01 = np.einsum("ij,ij->i", v0, v1)
    d11 = np.einsum("ij,ij->i", v1, v1)
    d20 = np.einsum("ij,ij->i", v2, v0)
    d21 = np.einsum("ij,ij->i", v2, v1)
    den = d00 * d11 - d01 * d01
    ok = den > 1e-30 * np.maximum(d00 * d11, 1e-300)
    safe = np.where(ok, den, 1.0)
    v = (d11 * d20 - d01 * d21) / safe
    w = (d00 * d21 - d01 * d20) / safe
    out = np.stack([1.0 - v - w, v, w], axis=1)
    if not ok.all():
        bad = np.flatnonzero(~ok)
        dist = np.linalg.norm(tri[bad] - np.asarray(points)[bad, None, :], axis=2)
        out[bad] = np.eye(3)[np.argmin(dist, axis=1)]
    return out


class SurfaceIndex:
    """An AABB tree over a triangle mesh for repeated closest-point queries.

    Build once per surface, query many times (the registration loop queries the
    same target every iteration).
    """

    def __init__(self, vertices: np.ndarray, faces: np.ndarray):
        self.vertices = np.ascontiguousarray(vertices, dtype=np.float64)
        self.faces = np.ascontiguousarray(faces, dtype=np.int64)
        self._tree = igl.AABB()
        self._tree.init(self.vertices, self.faces)

    def closest(self, points: np.ndarray):
        """Closest surface point of each query point.

        Returns
        -------
        face : (K,) triangle index, bary : (K, 3) barycentric coordinates clipped to
        the triangle, dist : (K,) Euclidean distance, point : (K, 3) the closest points.
        """
        points = np.ascontiguousarray(points, dtype=np.float64).reshape(-1, 3)
        sqd, face, cp = self._tree.squared_distance(self.vertices, self.faces, points)
        face = face.astype(np.int64)
        bary = np.clip(barycentric(cp, self.vertices, self.faces, face), 0.0, None)
        bary /= bary.sum(axis=1, keepdims=True)
        return face, bary, np.sqrt(np.maximum(sqd, 0.0)), cp


def closest_points(points: np.ndarray, vertices: np.ndarray, faces: np.ndarray):
    """Closest surface point of each query point (igl AABB tree).

    Returns
    -------
    face : (K,) triangle index, bary : (K, 3) barycentric coordinates clipped to
    the triangle, dist : (K,) Euclidean distance.
    """
    face, bary, dist, _ = SurfaceIndex(vertices, faces).closest(points)
    return face, bary, dist


def vertex_faces(n_vertices: int, faces: np.ndarray):
    """For each vertex one triangle that uses it and the corner it sits at (-1 if unused)."""
    face = np.full(n_vertices, -1, dtype=np.int64)
    corner = np.full(n_vertices, -1, dtype=np.int64)
    for k in (2, 1, 0):  # lowest corner and face index win: deterministic
        idx = np.asarray(faces)[:, k]
        order = np.arange(len(idx))[::-1]
        face[idx[order]] = order
        corner[idx[order]] = k
    return face, corner


def vertex_points(vertices: np.ndarray, faces: np.ndarray) -> SurfacePoints:
    """Vertices as surface locations: the corner of a triangle that uses each (barycentric 1).

    Parameters
    ----------
    vertices : (K,) vertex indices, each used by at least one face.
    faces : (F, 3) triangles.
    """
    vertices = np.asarray(vertices, dtype=np.int64)
    f = np.asarray(faces, dtype=np.int64)
    face, corner = vertex_faces(int(max(f.max(initial=-1), vertices.max(initial=-1))) + 1, f)
    if (face[vertices] < 0).any():
        raise ValueError("a vertex used by no face is not a surface location")
    bary = np.zeros((len(vertices), 3))
    bary[np.arange(len(vertices)), corner[vertices]] = 1.0
    return SurfacePoints(face[vertices], bary)
