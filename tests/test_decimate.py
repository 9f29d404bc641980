"""The proxy of a large target (geometry/decimate.py) and the k-d tree closest-point search
used on large meshes (geometry/surface.py)."""
import numpy as np
import pytest
import scipy.sparse as sp

import asetransfer.geometry.surface as surface
from asetransfer.geometry.decimate import cluster_vertices, proxy_mesh, triangle_quality
from asetransfer.geometry.laplacian import bilaplacian
from asetransfer.geometry.linsolve import Factorization
from asetransfer.geometry.topology import vertex_components
from asetransfer.model.surface import interpolate


def sphere(n_lat=120, n_lon=240):
    """A closed UV sphere of radius 1 (poles as single vertices)."""
    theta = np.linspace(0, np.pi, n_lat + 1)[1:-1]
    phi = np.linspace(0, 2 * np.pi, n_lon, endpoint=False)
    t, p = np.meshgrid(theta, phi, indexing="ij")
    v = np.stack([np.sin(t) * np.cos(p), np.sin(t) * np.sin(p), np.cos(t)], axis=-1).reshape(-1, 3)
    v = np.vstack([[0, 0, 1], v, [0, 0, -1]])
    ring = lambda i: 1 + i * n_lon + np.arange(n_lon)  # noqa: E731
    faces = [np.stack([np.zeros(n_lon, int), ring(0), np.roll(ring(0), -1)], 1)]
    for i in range(n_lat - 2):
        a, b = ring(i), ring(i + 1)
        faces += [np.stack([a, b, np.roll(b, -1)], 1), np.stack([a, np.roll(b, -1), np.roll(a, -1)], 1)]
    last = ring(n_lat - 2)
    faces.append(np.stack([np.full(n_lon, len(v) - 1), np.roll(last, -1), last], 1))
    return v, np.concatenate(faces)


def test_proxy_keeps_the_shape_and_gives_a_solvable_fairing_operator():
    v, f = sphere()
    pv, pf = proxy_mesh(v, f, 2000)
    assert 1500 <= len(pv) <= 2100
    assert np.abs(np.linalg.norm(pv, axis=1) - 1.0).max() < 0.02         # still the unit sphere
    assert len(np.unique(vertex_components(len(pv), pf))) == 1
    assert triangle_quality(pv, pf).min() > 1e-3
    A = bilaplacian(pv, pf) + 1e-3 * sp.identity(len(pv))
    x = Factorization(A).solve(np.ones(len(pv)))
    assert np.isfinite(x).all()


def test_proxy_of_a_mesh_split_at_every_corner_is_the_welded_surface():
    # a triangle soup (a flat-shaded export: three vertices a triangle) has more vertices
    # than the proxy asks for but fewer triangles: it was handed to the edge collapse as
    # it came (no shared edge to collapse; fast_simplification refused the target count)
    v, f = sphere(40, 80)
    soup_v, soup_f = v[f].reshape(-1, 3), np.arange(3 * len(f)).reshape(-1, 3)
    n = len(v) + 100                          # more than the welded surface has, less than the soup
    assert len(soup_v) > n and len(soup_f) < 2 * n
    pv, pf = proxy_mesh(soup_v, soup_f, n)
    assert len(pv) == len(v) and len(pf) == len(f)  # welded, nothing collapsed
    assert len(np.unique(vertex_components(len(pv), pf))) == 1
    # a larger soup is welded, then simplified to the asked size
    pv, pf = proxy_mesh(soup_v, soup_f, 800)
    assert 600 <= len(pv) <= 1000 and len(np.unique(vertex_components(len(pv), pf))) == 1
    assert np.abs(np.linalg.norm(pv, axis=1) - 1.0).max() < 0.03


def test_cluster_vertices_merges_cells_and_drops_collapsed_triangles():
    v, f = sphere()
    cv, cf, cluster = cluster_vertices(v, f, 3000)
    assert len(cv) < len(v) and cluster.shape == (len(v),)
    assert (cf[:, 0] != cf[:, 1]).all() and (cf[:, 1] != cf[:, 2]).all() and (cf[:, 0] != cf[:, 2]).all()
    assert len(np.unique(np.sort(cf, axis=1), axis=0)) == len(cf)
    assert np.abs(np.linalg.norm(cv, axis=1) - 1.0).max() < 0.05


@pytest.mark.parametrize("k", [2, 8])
def test_kd_tree_search_matches_the_aabb_tree(monkeypatch, k):
    v, f = sphere(60, 120)
    rng = np.random.default_rng(3)
    points = rng.normal(size=(500, 3))
    points *= (1.0 + rng.uniform(-0.05, 0.05, (500, 1))) / np.linalg.norm(points, axis=1, keepdims=True)
    exact = surface.SurfaceIndex(v, f)
    assert exact._tree is not None
    monkeypatch.setattr(surface, "LARGE_MESH_FACES", 0)
    monkeypatch.setattr(surface, "NEAREST_VERTICES", k)
    fast = surface.SurfaceIndex(v, f)
    assert fast._tree is None
    face, bary, dist, point = fast.closest(points)
    _, _, dist_exact, _ = exact.closest(points)
    assert np.allclose(bary.sum(axis=1), 1.0)
    assert np.allclose(interpolate(v, f, face, bary), point, atol=1e-9)
    assert (dist >= dist_exact - 1e-12).all()
    assert np.abs(dist - dist_exact).max() < (1e-12 if k == 8 else 1e-3)


def test_closest_on_triangles_regions():
    a, b, c = np.array([0.0, 0, 0]), np.array([1.0, 0, 0]), np.array([0.0, 1, 0])
    cases = {(0.2, 0.2, 1.0): (0.2, 0.2, 0), (-1, -1, 0): (0, 0, 0), (2, -1, 0): (1, 0, 0),
             (-1, 2, 0): (0, 1, 0), (0.5, -1, 0): (0.5, 0, 0), (-1, 0.5, 0): (0, 0.5, 0), (1, 1, 0): (0.5, 0.5, 0)}
    p = np.array(list(cases), dtype=float)
    q = surface.closest_on_triangles(p, a, b, c)
    assert np.allclose(q, np.array(list(cases.values()), dtype=float))
