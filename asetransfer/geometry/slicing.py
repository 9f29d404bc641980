"""Triangle meshes cut by planes: cross-sections, triangles clipped to half-spaces, and the
middle of what is left.

Cut out of the triangles exactly rather than read off the vertices near a plane: a thin band
around a plane holds few vertices of a coarse mesh (3-4 % of the body's height apart on the
dev bodies decimated to 2k vertices), while its triangles cover the band whatever their size.
"""
from __future__ import annotations

import numpy as np

from .surface import barycentric, closest_on_triangles


def section(coordinates: np.ndarray, faces: np.ndarray, axis: int, level: float) -> np.ndarray:
    """(K, 3) points where the edges of ``faces`` cross the plane ``x[axis] = level``:
    ``a + t (b - a)`` with ``t = (a[axis] - level) / (a[axis] - b[axis])`` on each edge
    ``(a, b)`` whose ends lie on either side.

    Parameters
    ----------
    coordinates : (N, 3) vertex coordinates; faces : (F, 3) triangles; axis : 0, 1 or 2.
    """
    a = coordinates[faces].reshape(-1, 3)
    b = coordinates[np.roll(faces, -1, axis=1)].reshape(-1, 3)
    da, db = a[:, axis] - level, b[:, axis] - level
    cross = (da < 0) != (db < 0)
    t = da[cross] / (da[cross] - db[cross])
    return a[cross] + t[:, None] * (b[cross] - a[cross])


def sections(coordinates: np.ndarray, faces: np.ndarray, axis: int, levels: np.ndarray):
    """The cross-sections of ``faces`` at many evenly spaced planes ``x[axis] = levels[k]`` at
    once: :func:`section` at each level, each crossing edge taken once.

    Parameters
    ----------
    coordinates : (N, 3); faces : (F, 3); axis : 0, 1 or 2; levels : (L,) increasing, evenly
    spaced (L >= 2).

    Returns
    -------
    level : (K,) the index of each point's level, sorted; points : (K, 3).
    """
    edges = np.sort(np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]]), axis=1)
    key = np.unique(edges[:, 0] * np.int64(len(coordinates)) + edges[:, 1])  # each edge once
    edges = np.column_stack([key // len(coordinates), key % len(coordinates)])
    a, b = coordinates[edges[:, 0]], coordinates[edges[:, 1]]
    low, high = np.minimum(a[:, axis], b[:, axis]), np.maximum(a[:, axis], b[:, axis])
    step = (levels[-1] - levels[0]) / (len(levels) - 1)
    # the levels each edge may cross (one more each side for rounding), then section's own test
    first = np.clip(np.floor((low - levels[0]) / step).astype(np.int64), 0, len(levels))
    last = np.clip(np.ceil((high - levels[0]) / step).astype(np.int64), -1, len(levels) - 1)
    count = np.maximum(last - first + 1, 0)
    edge = np.repeat(np.arange(len(edges)), count)
    level = np.repeat(first, count) + (np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count))
    da, db = a[edge, axis] - levels[level], b[edge, axis] - levels[level]
    keep = (da < 0) != (db < 0)
    edge, level, da, db = edge[keep], level[keep], da[keep], db[keep]
    t = da / (da - db)
    points = a[edge] + t[:, None] * (b[edge] - a[edge])
    order = np.argsort(level, kind="stable")
    return level[order], points[order]


def section_loops(coordinates: np.ndarray, faces: np.ndarray, axis: int, level: float):
    """The cross-section of ``faces`` at ``x[axis] = level`` (:func:`section`) as its loops:
    each triangle across the plane joins the crossings of its two edges across it, and the
    loops are the connected runs of those segments (closed around a limb, open where the
    plane passes through a hole).

    Parameters
    ----------
    coordinates : (N, 3); faces : (F, 3); axis : 0, 1 or 2; level : the plane's offset.

    Returns
    -------
    points : (K, 3) the crossings, each edge once; edges : (K, 2) the vertices of the edge
    each lies on; loop : (K,) each point's loop, 0 .. L-1; segments : (S, 2) the rows of
    ``points`` each crossing triangle joins, from the edge it crosses upward (from below the
    level to above it, in its corners' order) to the one it crosses down: consistently
    oriented triangles give consistently directed loops.
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    below = coordinates[:, axis] < level
    faces = faces[below[faces].any(axis=1) & ~below[faces].all(axis=1)]
    empty = np.zeros((0, 2), dtype=np.int64)
    if not len(faces):
        return np.zeros((0, 3)), empty, np.zeros(0, dtype=np.int64), empty
    corner_edges = np.stack([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]], axis=1)  # (F, 3, 2)
    start, end = below[corner_edges[..., 0]], below[corner_edges[..., 1]]
    upward = np.argmax(start & ~end, axis=1)  # each triangle crosses once each way
    downward = np.argmax(~start & end, axis=1)
    rows = np.arange(len(faces))
    pairs = np.sort(np.concatenate([corner_edges[rows, upward], corner_edges[rows, downward]]), axis=1)
    edges, which = np.unique(pairs, axis=0, return_inverse=True)
    segments = which.reshape(2, -1).T
    a, b = coordinates[edges[:, 0]], coordinates[edges[:, 1]]
    t = (a[:, axis] - level) / (a[:, axis] - b[:, axis])
    points = a + t[:, None] * (b - a)
    graph = coo_matrix((np.ones(len(segments)), (segments[:, 0], segments[:, 1])), shape=(len(edges),) * 2)
    return points, edges, connected_components(graph, directed=False)[1], segments


def winding(points: np.ndarray, segments: np.ndarray, u: int, v: int) -> float:
    """How many times the directed segments ``points[segments]`` wind around the origin of
    the plane of coordinates ``u``, ``v``: their angles seen from it, summed, over 2 pi
    (+-1 for a closed loop around it, 0 for one beside it, between for an open run).

    Parameters
    ----------
    points : (K, D); segments : (S, 2) rows of points; u, v : two coordinates.
    """
    p, q = points[segments[:, 0]][:, [u, v]], points[segments[:, 1]][:, [u, v]]
    turn = np.arctan2(p[:, 0] * q[:, 1] - p[:, 1] * q[:, 0], (p * q).sum(axis=1))
    return float(turn.sum() / (2 * np.pi))


def clip_triangles(vertices: np.ndarray, faces: np.ndarray, planes):
    """The parts of triangles on the inner side (``x @ n <= offset``) of every plane.

    Whole triangles are kept as they are; each triangle across a plane is cut by
    Sutherland-Hodgman (one plane, then one edge at a time: an edge's end inside is kept,
    an edge crossing the plane adds the crossing), and the convex polygon left is fanned
    into triangles.

    Parameters
    ----------
    vertices : (N, 3); faces : (K, 3) triangles; planes : ``(n, offset)`` pairs, n (3,).

    Returns
    -------
    (T,) each piece's row in ``faces``, (T, 3, 3) its corners.
    """
    corner = vertices[faces]  # (K, 3, 3)
    maybe, inside = np.ones(len(faces), dtype=bool), np.ones(len(faces), dtype=bool)
    for n, o in planes:
        d = corner @ n
        maybe &= d.min(axis=1) <= o
        inside &= d.max(axis=1) <= o
    rows, out = list(np.flatnonzero(inside)), list(corner[inside])
    for k in np.flatnonzero(maybe & ~inside):
        poly = _clipped_polygon(corner[k], planes)
        for i in range(1, len(poly) - 1):  # a convex polygon's fan
            rows.append(k)
            out.append(poly[[0, i, i + 1]])
    return np.array(rows, dtype=np.int64), np.array(out).reshape(-1, 3, 3)


def _clipped_polygon(poly: np.ndarray, planes) -> np.ndarray:
    """(P, 3) the convex polygon ``poly`` clipped to the inner side of every plane
    (Sutherland-Hodgman); fewer than 3 corners when nothing is left."""
    for n, o in planes:
        d = poly @ n - o
        kept = []
        for i in range(len(poly)):
            j = (i + 1) % len(poly)
            if d[i] <= 0:
                kept.append(poly[i])
            if (d[i] < 0 < d[j]) or (d[j] < 0 < d[i]):
                kept.append(poly[i] + d[i] / (d[i] - d[j]) * (poly[j] - poly[i]))
        poly = np.array(kept).reshape(-1, 3)
        if len(poly) < 3:
            break
    return poly


def clipped_middle(vertices: np.ndarray, faces: np.ndarray, ids: np.ndarray, planes):
    """The point of the triangles ``faces[ids]`` clipped to ``planes`` (:func:`clip_triangles`)
    nearest the clipped area's centroid ``sum(area_i c_i) / sum(area_i)`` (``c_i`` each
    piece's centroid): the middle of a strip, on the surface even where the strip curves.

    Parameters
    ----------
    vertices : (N, 3); faces : (F, 3); ids : (K,) the triangles cut; planes : as
        :func:`clip_triangles`.

    Returns
    -------
    ``(face, bary)``: the triangle of ``faces`` it lies in and (3,) barycentric coordinates;
    None when nothing of the triangles is inside.
    """
    f = faces[ids]
    row, tri = clip_triangles(vertices, f, planes)
    if not len(tri):
        return None
    area = 0.5 * np.linalg.norm(np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]), axis=1)
    if not area.sum() > 0:
        return None
    centre = (area @ tri.mean(axis=1)) / area.sum()
    q = closest_on_triangles(centre, tri[:, 0], tri[:, 1], tri[:, 2])
    k = int(np.argmin(np.linalg.norm(q - centre, axis=1)))
    bary = np.clip(barycentric(q[k][None], vertices, f, row[[k]])[0], 0.0, None)  # inside: rounding only
    return int(ids[row[k]]), bary / bary.sum()
