"""Points on a triangle mesh surface: closest points, barycentric coordinates."""
from __future__ import annotations

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


#: meshes with more triangles are searched through a k-d tree of their vertices:
#: libigl's AABB tree takes 11 s to build on 2M triangles (a k-d tree 0.5 s).  Below
#: it the AABB tree is faster as well as exact: on a 50k-vertex body (100k triangles)
#: build 0.2 s, 13k queries 0.11 s, against a k-d tree's 0.28 s for the same queries
#: (and the symmetry plane's repeated 4000-point queries, 0.05 s against 0.10 s); on
#: 400k triangles the build (0.9 s) outweighs the queries
LARGE_MESH_FACES = 150_000
#: a query point's closest triangle is looked for among the triangles around its
#: this many nearest vertices.  Measured on a 200k body against the exact AABB search,
#: points 1 cm off the surface: 2 -> 0.25 % of the points 0.05 um farther on average,
#: 0.16 mm at most, 0.18 s per 13k points; 4 -> 0.1 mm, 0.31 s; 8 -> exact, 0.58 s
NEAREST_VERTICES = 2
#: query points farther than this many times the mesh's size from it are searched from this
#: far (each coordinate clamped): the same closest point, and squares that stay finite
FAR = 1e6


class SurfaceIndex:
    """A search structure over a triangle mesh for repeated closest-point queries.

    Build once per surface, query many times (the registration loop queries the
    same target every iteration).  Up to ``LARGE_MESH_FACES`` triangles: libigl's
    AABB tree (exact).  Larger meshes: a k-d tree of the vertices, and each point's
    closest point on the triangles around its ``NEAREST_VERTICES`` nearest vertices
    (exact unless the closest triangle has none of them as a corner, which needs a
    triangle much larger than its neighbours).
    """

    def __init__(self, vertices: np.ndarray, faces: np.ndarray):
        self.vertices = np.ascontiguousarray(vertices, dtype=np.float64)
        self.faces = np.ascontiguousarray(faces, dtype=np.int64)
        if len(self.faces) > LARGE_MESH_FACES:
            from scipy.spatial import cKDTree
            self._tree, self._kd = None, cKDTree(self.vertices)
            self._around = vertex_triangles(len(self.vertices), self.faces)
        else:
            import igl  # on use: loading markers for `asetransfer info` or a parse error needs no libigl
            self._tree = igl.AABB()
            self._tree.init(self.vertices, self.faces)

    def closest(self, points: np.ndarray, *, bary: bool = True):
        """Closest surface point of each query point.

        ``bary=False`` skips the barycentric coordinates (None is returned in their
        place): a loop that needs only the points saves their cost on every query.

        Returns
        -------
        face : (K,) triangle index, bary : (K, 3) barycentric coordinates clipped to
        the triangle, dist : (K,) Euclidean distance, point : (K, 3) the closest points.
        """
        points = np.ascontiguousarray(points, dtype=np.float64).reshape(-1, 3)
        query, far = self._within_reach(points)
        if self._tree is None:
            face, cp = self._closest_near_vertices(query)
            sqd = np.einsum("ij,ij->i", cp - query, cp - query)
        else:
            sqd, face, cp = self._tree.squared_distance(self.vertices, self.faces, query)
        face = face.astype(np.int64)
        dist = np.sqrt(np.maximum(sqd, 0.0))
        if far.any():  # measured from the point itself, scaled: its square would overflow
            gap = points[far] - cp[far]
            scale = np.abs(gap).max(axis=1)
            with np.errstate(invalid="ignore"):
                dist[far] = np.where(np.isfinite(scale), scale * np.linalg.norm(gap / scale[:, None], axis=1),
                                     np.inf)
        if not bary:
            return face, None, dist, cp
        coords = np.clip(barycentric(cp, self.vertices, self.faces, face), 0.0, None)
        coords /= coords.sum(axis=1, keepdims=True)
        return face, coords, dist, cp

    def _within_reach(self, points: np.ndarray):
        """The query points, those farther than ``FAR`` times the mesh's size from its middle
        (a marker typed as 1e200) or not finite moved in to that reach, where their squared
        distances do not overflow (the libraries return no triangle then); and (K,) bool: moved."""
        if not len(self.vertices):
            return points, np.zeros(len(points), dtype=bool)
        lo, hi = self.vertices.min(axis=0), self.vertices.max(axis=0)
        middle, reach = (lo + hi) / 2, FAR * max(float((hi - lo).max()), 1.0)
        off = points - middle
        far = ~(np.abs(off) <= reach).all(axis=1)
        if not far.any():
            return points, far
        query = points.copy()
        # each coordinate clamped to the reach: seen from that far, the nearest side of the
        # mesh is the one the point lies beyond, and the others still choose where on it (a NaN
        # coordinate, which has no side, searches from the middle's)
        query[far] = middle + np.nan_to_num(np.clip(off[far], -reach, reach), nan=0.0)
        return query, far

    def _closest_near_vertices(self, points: np.ndarray, chunk: int = 8192):
        """(K,) triangle and (K, 3) closest point among the triangles around the nearest vertices."""
        face = np.empty(len(points), dtype=np.int64)
        point = np.empty_like(points)
        k = min(NEAREST_VERTICES, len(self.vertices))
        for lo in range(0, len(points), chunk):
            p = points[lo:lo + chunk]
            _, near = self._kd.query(p, k=k)
            candidates = self._around[np.asarray(near).reshape(len(p), -1)].reshape(len(p), -1)  # (m, C), -1 pads
            tri = self.vertices[self.faces[np.maximum(candidates, 0)]]                            # (m, C, 3, 3)
            q = closest_on_triangles(p[:, None, :], tri[..., 0, :], tri[..., 1, :], tri[..., 2, :])
            d = np.einsum("mcd,mcd->mc", q - p[:, None, :], q - p[:, None, :])
            d[candidates < 0] = np.inf
            best = np.argmin(d, axis=1)  # first of equals: deterministic
            rows = np.arange(len(p))
            face[lo:lo + chunk], point[lo:lo + chunk] = candidates[rows, best], q[rows, best]
        return face, point


def vertex_triangles(n_vertices: int, faces: np.ndarray) -> np.ndarray:
    """(n, d) the triangles around each vertex in increasing order, padded with -1 (d: the largest valence)."""
    import scipy.sparse as sp
    f = np.asarray(faces, dtype=np.int64)
    corner_vertex = f.ravel()
    # corners grouped by vertex, in corner order within a vertex: a CSR conversion is a
    # linear counting sort (a stable argsort took 1 s on 6M corners)
    corners = np.arange(len(corner_vertex))
    order = sp.csr_matrix((np.ones(len(corners), dtype=np.int8), (corner_vertex, corners)),
                          shape=(n_vertices, len(corners))).indices.astype(np.int64)
    count = np.bincount(corner_vertex, minlength=n_vertices)
    start = np.concatenate([[0], np.cumsum(count)[:-1]])
    slot = np.arange(len(order)) - np.repeat(start, count)
    # int32 where it holds every triangle index: half the memory (76 -> 38 MB on a 1M-vertex mesh)
    dtype = np.int32 if len(f) < 2 ** 31 else np.int64
    out = np.full((n_vertices, max(int(count.max(initial=1)), 1)), -1, dtype=dtype)
    out[corner_vertex[order], slot] = order // 3
    return out


def closest_on_triangles(p, a, b, c) -> np.ndarray:
    """Closest point to ``p`` on triangle ``abc``, element-wise over broadcast (..., 3) arrays.

    Ericson, *Real-Time Collision Detection* (2005) §5.1.5: the Voronoi region of
    ``p`` (a corner, an edge or the face) decides the projection.
    """
    ab, ac, ap, bp, cp = b - a, c - a, p - a, p - b, p - c
    dot = lambda u, v: np.einsum("...d,...d->...", u, v)  # noqa: E731
    d1, d2, d3, d4, d5, d6 = dot(ab, ap), dot(ac, ap), dot(ab, bp), dot(ac, bp), dot(ab, cp), dot(ac, cp)
    va, vb, vc = d3 * d6 - d5 * d4, d5 * d2 - d1 * d6, d1 * d4 - d3 * d2
    ratio = lambda num, den: num / np.where(den != 0, den, 1.0)  # noqa: E731
    total = va + vb + vc
    out = a + ab * ratio(vb, total)[..., None] + ac * ratio(vc, total)[..., None]   # inside the face
    regions = [  # later entries take precedence, as in Ericson's order of tests
        ((va <= 0) & (d4 - d3 >= 0) & (d5 - d6 >= 0), b + (c - b) * ratio(d4 - d3, (d4 - d3) + (d5 - d6))[..., None]),
        ((vb <= 0) & (d2 >= 0) & (d6 <= 0), a + ac * ratio(d2, d2 - d6)[..., None]),
        ((d6 >= 0) & (d5 <= d6), c),
        ((vc <= 0) & (d1 >= 0) & (d3 <= 0), a + ab * ratio(d1, d1 - d3)[..., None]),
        ((d3 >= 0) & (d4 <= d3), b),
        ((d1 <= 0) & (d2 <= 0), a),
    ]
    for where, value in regions:
        out = np.where(where[..., None], np.broadcast_to(value, out.shape), out)
    return out


#: the search trees :func:`surface_index` built last, newest first:
#: (weak reference to the vertices array, to the faces array, the tree)
_RECENT: list = []
#: how many of them are kept (a run queries the target and the source mesh)
RECENT_INDEXES = 2


def surface_index(vertices: np.ndarray, faces: np.ndarray) -> SurfaceIndex:
    """A :class:`SurfaceIndex` of a mesh's own arrays, shared by the steps of a run that query
    the same mesh for a few points each (marker snapping, the symmetry plane, the quality
    checks): the tree of the last ``RECENT_INDEXES`` meshes is kept and found again when the
    very same arrays (``is``, not equal values) come back.  A 50k-vertex target's tree takes
    0.1-0.2 s to build, a 1M one's ~1 s.  Arrays changed in place after their tree was built
    would not be seen: meshes here are never modified in place (a new pose is a new mesh).
    """
    import weakref

    for ref_v, ref_f, index in _RECENT:
        if ref_v() is vertices and ref_f() is faces:
            return index
    index = SurfaceIndex(vertices, faces)
    try:
        entry = (weakref.ref(vertices), weakref.ref(faces), index)
    except TypeError:  # not an ndarray (a list): nothing to recognise it by
        return index
    _RECENT.insert(0, entry)
    del _RECENT[RECENT_INDEXES:]
    return index


def closest_points(points: np.ndarray, vertices: np.ndarray, faces: np.ndarray):
    """Closest surface point of each query point on the mesh ``(vertices, faces)``
    (its tree shared through :func:`surface_index`).

    Returns
    -------
    face : (K,) triangle index, bary : (K, 3) barycentric coordinates clipped to
    the triangle, dist : (K,) Euclidean distance.
    """
    face, bary, dist, _ = surface_index(vertices, faces).closest(points)
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


def winding_numbers(points: np.ndarray, vertices: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """(K,) generalised winding number of each point: the signed solid angle of every
    triangle summed exactly, over 4 pi (Jacobson et al. 2013, Eq. 5, with the solid angle
    of Van Oosterom and Strackee 1983: ``2 atan2(a . (b x c), |a||b||c| + (a.b)|c| +
    (b.c)|a| + (c.a)|b|)`` for the corners ``a, b, c`` relative to the point).

    1 inside a closed surface with outward faces, 0 outside, -1 inside inward faces; about
    right through small holes.  Costs K x F triangle evaluations (~3 ms a point on 26k
    triangles): for a few points, where a fast (tree) evaluation would cost more to set up.

    Parameters
    ----------
    points : (K, 3); vertices : (n, 3); faces : (F, 3).
    """
    tri = np.asarray(vertices, dtype=np.float64)[np.asarray(faces, dtype=np.int64)]  # (F, 3, 3)
    out = np.empty(len(points))
    for k, p in enumerate(np.asarray(points, dtype=np.float64).reshape(-1, 3)):
        a, b, c = (tri[:, i] - p for i in range(3))
        la, lb, lc = (np.sqrt(np.einsum("ij,ij->i", e, e)) for e in (a, b, c))
        det = np.einsum("ij,ij->i", a, np.cross(b, c))
        den = (la * lb * lc + np.einsum("ij,ij->i", a, b) * lc + np.einsum("ij,ij->i", b, c) * la
               + np.einsum("ij,ij->i", c, a) * lb)
        out[k] = 2.0 * np.arctan2(det, den).sum() / (4.0 * np.pi)
    return out
