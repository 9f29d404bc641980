"""A coarse stand-in for a dense mesh: the proxy a large target is fitted on.

Quadric edge collapse (Garland and Heckbert 1997, through ``fast-simplification``)
keeps the shape of a mesh with few vertices.  Its cost grows faster than the mesh
(measured: 0.28 s for 50k -> 20k vertices, 2.0 s for 200k, 15 s for 1M on the
2-core bench machine), so a mesh much larger than the proxy is first reduced by
vertex clustering (Rossignac and Borrel 1993: every vertex of a grid cell merged
into their mean), which is linear and only has to bring the mesh down to a few
times the proxy's size, where its crude triangles are cleaned up by the collapses.
"""
from __future__ import annotations

import numpy as np

from .topology import used_vertices, weld

#: vertex clustering first brings a mesh down to about this many times the proxy's
#: size, then quadric decimation does the rest.  The collapses repair what the coarse
#: grid loses only when they have room: with 10k-vertex proxies (d01 made 1M, dense
#: markers) 3x gave joints 5.52 mm and weight error 0.0456, 6x 5.40 mm and 0.0448 (the
#: 13k target: 5.36, 0.0443; 15k proxies at 3x: 5.40, 0.0448), for 0.1 s more
CLUSTER_FACTOR = 6
#: proxy triangles of lower quality are dropped: collapses on flat regions leave
#: slivers (5 % of the triangles below 1e-3 measured on a subdivided body, down to
#: 4e-10) whose vertex areas and clamped cotangents make the fairing system singular
MIN_QUALITY = 1e-3


def cluster_vertices(vertices: np.ndarray, faces: np.ndarray, n_vertices: int):
    """Merge the vertices in each cell of a regular grid sized for about ``n_vertices`` cells.

    The cell edge is ``sqrt(A / n_vertices)`` for a surface of area ``A`` (one vertex
    per cell on a flat patch).  Triangles with two corners in one cell vanish;
    duplicates (the same three cells) are kept once.

    Parameters
    ----------
    vertices : (n, 3), faces : (F, 3) the mesh.
    n_vertices : the number of cells aimed at (the result has roughly this many vertices).

    Returns
    -------
    (m, 3) cell means, (G, 3) triangles on them, (n,) the cell (new vertex) of each input vertex.
    """
    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64)
    area = 0.5 * np.linalg.norm(np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]]), axis=1).sum()
    cell = np.sqrt(max(area, 1e-300) / max(n_vertices, 1))
    key = np.floor((v - v.min(axis=0)) / cell).astype(np.int64)
    span = key.max(axis=0) + 1
    flat = (key[:, 0] * span[1] + key[:, 1]) * span[2] + key[:, 2]
    _, cluster = np.unique(flat, return_inverse=True)
    cluster = cluster.reshape(-1)
    count = np.bincount(cluster)
    means = np.stack([np.bincount(cluster, weights=v[:, k]) for k in range(3)], axis=1) / count[:, None]
    g = cluster[f]
    g = g[(g[:, 0] != g[:, 1]) & (g[:, 1] != g[:, 2]) & (g[:, 2] != g[:, 0])]
    # one triangle per set of three cells (either orientation), first occurrence kept
    s = np.sort(g, axis=1)
    m = len(count)  # m**3 < 2**63 for any m below two million cells
    _, first = np.unique((s[:, 0] * m + s[:, 1]) * m + s[:, 2], return_index=True)
    return means, g[np.sort(first)], cluster


def triangle_quality(vertices: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """(F,) ``4 sqrt(3) A / (a^2 + b^2 + c^2)``: 1 for an equilateral triangle, 0 for a degenerate one."""
    p = np.asarray(vertices, dtype=np.float64)[np.asarray(faces)]
    e = p[:, [2, 0, 1]] - p[:, [1, 2, 0]]
    area = 0.5 * np.linalg.norm(np.cross(e[:, 0], e[:, 1]), axis=1)
    return 4.0 * np.sqrt(3.0) * area / np.maximum(np.einsum("fkd,fkd->f", e, e), 1e-300)


def proxy_mesh(vertices: np.ndarray, faces: np.ndarray, n_vertices: int, weld_tolerance: float = 1e-7,
               min_quality: float = MIN_QUALITY):
    """A mesh of about ``n_vertices`` vertices with the shape of ``(vertices, faces)``.

    Vertex clustering down to ``CLUSTER_FACTOR * n_vertices`` when the mesh is larger
    than that, then quadric edge collapse to ``n_vertices``; coincident vertices are
    welded (``weld_tolerance``, a fraction of the diagonal), slivers (quality below
    ``min_quality``; a linear system needs them gone, a search along the surface needs
    the surface closed: 0 keeps them) and the vertices they leave unused are dropped.

    Returns
    -------
    (m, 3) float64 vertices, (G, 3) int64 triangles.
    """
    import fast_simplification  # imported on use: only large targets need it

    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64)
    if len(v) > len(f):
        # split at every corner (a triangle soup, a flat-shaded export: three vertices a
        # triangle, where a closed surface has half a vertex): welded first, else an edge
        # collapse finds no shared edge to collapse
        v, f, _ = weld(v, f, weld_tolerance)
    if len(v) > 2 * CLUSTER_FACTOR * n_vertices:
        v, f, _ = cluster_vertices(v, f, CLUSTER_FACTOR * n_vertices)
    if len(f) > 2 * n_vertices:  # a closed surface has about twice as many triangles as vertices
        v, f = fast_simplification.simplify(v.astype(np.float32), f.astype(np.int32), target_count=2 * n_vertices)
    # collapses can leave distinct vertices at one position: merged, as the target's
    # own preparation would (their triangles would otherwise degenerate there)
    v, f, _ = weld(np.asarray(v, dtype=np.float64), np.asarray(f, dtype=np.int64), weld_tolerance)
    f = f[(f[:, 0] != f[:, 1]) & (f[:, 1] != f[:, 2]) & (f[:, 2] != f[:, 0])]
    if min_quality > 0:
        f = f[triangle_quality(v, f) > min_quality]
    used = used_vertices(f)
    renumber = np.full(len(v), -1, dtype=np.int64)
    renumber[used] = np.arange(len(used))
    return v[used], renumber[f]


def midpoint_subdivide(vertices: np.ndarray, faces: np.ndarray):
    """One midpoint subdivision step: every triangle into four, the surface unchanged (the
    inverse of a proxy: benchmarks and tests build dense copies of a body with it).

    Returns
    -------
    (n + E, 3) vertices (the input's, then one per edge), (4F, 3) triangles.
    """
    edges = np.sort(np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]]), axis=1)
    unique, inverse = np.unique(edges, axis=0, return_inverse=True)
    mid = len(vertices) + inverse.reshape(3, -1).T  # (F, 3): midpoints of edges 01, 12, 20
    new_vertices = np.vstack([vertices, 0.5 * (vertices[unique[:, 0]] + vertices[unique[:, 1]])])
    a, b, c = faces.T
    ab, bc, ca = mid.T
    new_faces = np.concatenate([np.stack(t, axis=1) for t in
                                ((a, ab, ca), (ab, b, bc), (ca, bc, c), (ab, bc, ca))])
    return new_vertices, new_faces
