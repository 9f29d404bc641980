"""Approximate geodesics on meshes as users have them: several pieces, seams, gaps.

Distances run along the edge graph of the (welded) surface.  Characters come in
pieces (eyes, teeth, clothing, armour plates, joint covers), so pieces closer
than a gap are bridged where they come closest, and pieces farther apart are
joined to the rest by their single closest pair: the graph is always connected
and a geodesic never jumps across open space except between separate pieces.
Edge-graph distances overestimate true geodesics by a few per cent on irregular
meshes; the landmark rules that use them compare distances on one mesh only.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .topology import components, distinct

#: local maxima examined by :func:`extremities`, farthest first (a noisy scan can
#: have thousands; the tips of a body are among the farthest few)
MAX_CANDIDATES = 400


def unique_edges(faces: np.ndarray) -> np.ndarray:
    """(E, 2) sorted vertex pairs of the triangles' edges, each once, without self-loops."""
    f = np.asarray(faces, dtype=np.int64)
    e = np.sort(np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]]), axis=1)
    n = int(f.max(initial=-1)) + 1
    keys = distinct(e[:, 0] * n + e[:, 1])  # one integer per edge: 1-D is ~5x faster than rows
    e = np.stack([keys // max(n, 1), keys % max(n, 1)], axis=1)
    return e[e[:, 0] != e[:, 1]]


def _components(n: int, edges: np.ndarray) -> np.ndarray:
    return components(n, edges[:, 0], edges[:, 1])


def bridge_edges(vertices: np.ndarray, edges: np.ndarray, gap: float, neighbours: int = 12,
                 connect_all: bool = True) -> np.ndarray:
    """(B, 2) extra edges that connect the pieces of a mesh into one graph.

    Every vertex is linked to those of its ``neighbours`` nearest vertices that lie
    on another piece within ``gap``; with ``connect_all``, pieces still apart afterwards
    are joined to the largest piece by their closest vertex pair, one at a time.
    """
    n = len(vertices)
    label = _components(n, edges)
    if label.max(initial=0) == 0:
        return np.zeros((0, 2), dtype=np.int64)
    # imported on use (~0.1 s): a mesh in one piece needs none
    from scipy.spatial import cKDTree

    dist, near = cKDTree(vertices).query(vertices, k=min(neighbours, n))
    i = np.repeat(np.arange(n), near.shape[1])
    j, d = near.ravel(), dist.ravel()
    keep = (label[i] != label[j]) & (d <= gap)
    bridges = [np.stack([i[keep], j[keep]], axis=1)]
    if not connect_all:
        return bridges[0].astype(np.int64)
    label = _components(n, np.concatenate([edges] + bridges))
    while label.max() > 0:
        main = label == np.argmax(np.bincount(label))
        inside, outside = np.flatnonzero(main), np.flatnonzero(~main)
        d, k = cKDTree(vertices[inside]).query(vertices[outside])
        best = int(np.argmin(d))
        bridges.append(np.array([[outside[best], inside[k[best]]]]))
        label = _components(n, np.concatenate([edges] + bridges))
    return np.concatenate(bridges).astype(np.int64)


def surface_graph(vertices: np.ndarray, faces: np.ndarray, gap: float) -> sp.csr_matrix:
    """Symmetric (N, N) graph of edge lengths: the triangles' edges plus bridges between pieces.

    Parameters
    ----------
    vertices : (N, 3) welded vertices.
    faces : (F, 3) triangles.
    gap : pieces closer than this are bridged where they are close (see :func:`bridge_edges`).
    """
    v = np.asarray(vertices, dtype=np.float64)
    e = unique_edges(faces)
    e = np.concatenate([e, bridge_edges(v, e, gap)])
    # a floor keeps coincident vertices connected (csgraph drops zero weights)
    w = np.maximum(np.linalg.norm(v[e[:, 0]] - v[e[:, 1]], axis=1), 1e-12 * max(gap, 1e-300))
    rows, cols = np.concatenate([e[:, 0], e[:, 1]]), np.concatenate([e[:, 1], e[:, 0]])
    return sp.csr_matrix((np.concatenate([w, w]), (rows, cols)), shape=(len(v), len(v)))


def distances(graph: sp.csr_matrix, source: int, limit: float = np.inf) -> np.ndarray:
    """(N,) graph distance of every vertex from ``source`` (``inf`` beyond ``limit``)."""
    # imported on use (~0.12 s): a transfer with markers needs none
    from scipy.sparse.csgraph import dijkstra

    return dijkstra(graph, indices=int(source), limit=limit)


def shortest_path(graph: sp.csr_matrix, start: int, end: int) -> np.ndarray:
    """Vertex indices of a shortest path from ``start`` to ``end`` (both included)."""
    from scipy.sparse.csgraph import dijkstra

    _, previous = dijkstra(graph, indices=int(start), return_predecessors=True)
    path = [int(end)]
    while path[-1] != start:
        path.append(int(previous[path[-1]]))
    return np.array(path[::-1], dtype=np.int64)


def peaks(graph: sp.csr_matrix, values: np.ndarray) -> np.ndarray:
    """Vertices whose value no edge neighbour in ``graph`` exceeds (discrete local maxima)."""
    g = graph.tocsr()
    rows = np.repeat(np.arange(len(values)), np.diff(g.indptr))
    highest_neighbour = np.full(len(values), -np.inf)
    np.maximum.at(highest_neighbour, rows, values[g.indices])
    return np.flatnonzero(values >= highest_neighbour)


def extremities(graph: sp.csr_matrix, distance: np.ndarray, radius: float) -> np.ndarray:
    """Vertices where ``distance`` is largest within a geodesic ball of ``radius``, largest first.

    These are the tips of a shape seen from where ``distance`` is measured (head,
    hands and feet of a body seen from its middle).  A vertex is a candidate when
    no edge neighbour is farther; a candidate is kept when no vertex within
    ``radius`` of it is farther either.  Ties keep the lower index.
    """
    from scipy.sparse.csgraph import dijkstra

    g = graph.tocsr()
    candidates = peaks(g, distance)
    candidates = candidates[np.lexsort((candidates, -distance[candidates]))][:MAX_CANDIDATES]
    # a candidate inside the ball of a farther one is not kept: its own ball holds that
    # one (graph distance is symmetric), so balls are grown only for the rest (a body's
    # 145 peaks at 200k vertices need ~10)
    dominated = np.zeros(len(candidates), dtype=bool)
    kept = []
    for k, v in enumerate(candidates):
        if dominated[k]:
            continue
        ball = np.isfinite(dijkstra(g, indices=int(v), limit=radius))
        if distance[ball].max() <= distance[v]:
            kept.append(int(v))
        dominated |= ball[candidates] & (distance[candidates] < distance[v])
    return np.array(kept, dtype=np.int64)
