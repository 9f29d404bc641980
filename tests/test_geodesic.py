"""Graph geodesics and the integer-set helpers the landmark search runs on."""
import numpy as np
import trimesh
from scipy.sparse.csgraph import dijkstra

from asetransfer.geometry.geodesic import MAX_CANDIDATES, distances, extremities, peaks, surface_graph, unique_edges
from asetransfer.geometry.topology import distinct, used_vertices


def _spiky_sphere(seed: int):
    """An icosphere with six spikes (a body's tips) and radial noise."""
    s = trimesh.creation.icosphere(subdivisions=4)
    rng = np.random.default_rng(seed)
    u = s.vertices
    tips = rng.normal(size=(6, 3))
    tips /= np.linalg.norm(tips, axis=1)[:, None]
    spike = np.clip(u @ tips.T - 0.85, 0.0, None).sum(axis=1) * 6.0
    return u * (1.0 + spike + 0.15 * rng.random(len(u)))[:, None], np.asarray(s.faces)


def _by_definition(g, d, radius):
    """Peaks, farthest first (the first ``MAX_CANDIDATES``), that no vertex within ``radius``
    along the graph exceeds."""
    return [int(p) for p in sorted(peaks(g, d), key=lambda p: (-d[p], p))[:MAX_CANDIDATES]
            if d[np.isfinite(dijkstra(g, indices=int(p), limit=radius))].max() <= d[p]]


def test_extremities_are_the_peaks_no_farther_vertex_overlooks():
    # the search skips candidates inside the ball of a farther one; it must keep exactly
    # what the definition keeps, candidate by candidate
    kept = []
    for seed in range(3):
        v, f = _spiky_sphere(seed)
        g = surface_graph(v, f, gap=0.0)
        rng = np.random.default_rng(seed)
        # the distance from a vertex (a few tips), and a random field (hundreds of peaks)
        for d in (distances(g, 0), rng.random(len(v))):
            for radius in (0.05, 0.3, 0.8):
                found = extremities(g, d, radius)
                assert found.tolist() == _by_definition(g, d, radius)
                kept.append(len(found))
    assert min(kept) >= 1 and max(kept) >= 20


def test_distinct_values_and_used_vertices_are_numpys_unique():
    rng = np.random.default_rng(1)
    values = rng.integers(0, 2 ** 40, size=(5000, 2))
    assert np.array_equal(distinct(values), np.unique(values))
    faces = rng.integers(3, 900, size=(700, 3))  # vertices 0-2 and some others unused
    assert np.array_equal(used_vertices(faces), np.unique(faces))
    assert len(distinct(np.zeros((0, 3), dtype=np.int64))) == 0
    assert len(used_vertices(np.zeros((0, 3), dtype=np.int64))) == 0


def test_unique_edges_are_each_edge_once():
    v, f = _spiky_sphere(0)
    e = unique_edges(f)
    assert len(e) == len(v) + len(f) - 2  # Euler: a closed genus-0 surface
    assert (e[:, 0] < e[:, 1]).all()
    assert len(np.unique(e, axis=0)) == len(e)
