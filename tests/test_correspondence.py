"""Correspondence: Umeyama, Laplacian, exact solves, welding, registration, maps, CLI."""
from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp
import trimesh
from scipy.spatial.transform import Rotation

from asetransfer.geometry.alignment import principal_box_sides, umeyama
from asetransfer.config import CorrespondenceConfig
from asetransfer.stages.correspondence import correspond
from asetransfer.stages.correspondence.registration import _level_iterations, _stage2_segments
from asetransfer.io.mapfile import npz_bytes, read_map
from asetransfer.model.markers import Markers
from asetransfer.geometry.laplacian import bilaplacian, cotangent_laplacian, mixed_voronoi_areas, seamed_laplacian
from asetransfer.geometry.linsolve import Factorization, NumericalError
from asetransfer.model.mesh import Mesh
from asetransfer.model.surface import SurfacePoints
from asetransfer.geometry.topology import vertex_components, weld
from asetransfer_cli.main import main


def blob(subdivisions=3, scale=(1.0, 1.0, 1.0), bump=0.0):
    """An icosphere, scaled, with an optional smooth bump on +x (a 'nose')."""
    s = trimesh.creation.icosphere(subdivisions=subdivisions)
    v = s.vertices.copy()
    v += bump * np.exp(-8 * np.sum((v - [1, 0, 0]) ** 2, axis=1))[:, None] * v
    return Mesh(v * scale, s.faces)


def vertex_markers(ids_src, ids_tgt, src: Mesh, tgt: Mesh) -> Markers:
    """Markers at given vertices of both meshes."""
    def at(mesh, ids):
        face = np.array([np.flatnonzero((mesh.faces == i).any(axis=1))[0] for i in ids])
        bary = (mesh.faces[face] == np.asarray(ids)[:, None]).astype(float)
        return SurfacePoints(face, bary)
    return Markers(tuple(f"m{i}" for i in range(len(ids_src))), at(src, ids_src), at(tgt, ids_tgt))


def spread(vertices, k):
    """k vertices by farthest-point sampling from vertex 0 (deterministic)."""
    ids = [0]
    d = np.linalg.norm(vertices - vertices[0], axis=1)
    for _ in range(k - 1):
        ids.append(int(np.argmax(d)))
        d = np.minimum(d, np.linalg.norm(vertices - vertices[ids[-1]], axis=1))
    return ids


def map_error(corr, src, tgt):
    """Mean distance (fraction of target diagonal) of each source vertex's image from its twin."""
    diag = np.linalg.norm(np.ptp(tgt.vertices, axis=0))
    p = corr.source_to_target.positions(tgt.vertices, tgt.faces)
    return np.linalg.norm(p - tgt.vertices, axis=1).mean() / diag


# --- building blocks ---------------------------------------------------------------

def test_umeyama_recovers_similarity():
    rng = np.random.default_rng(0)
    p = rng.normal(size=(20, 3))
    R = Rotation.from_euler("xyz", [30, -70, 115], degrees=True).as_matrix()
    q = 2.5 * p @ R.T + [1, -2, 3]
    s = umeyama(p, q)
    assert s.scale == pytest.approx(2.5)
    np.testing.assert_allclose(s.rotation, R, atol=1e-12)
    np.testing.assert_allclose(s.apply(p), q, atol=1e-12)
    np.testing.assert_allclose(s.inverse().apply(q), p, atol=1e-12)


def test_principal_box_is_the_box_of_an_upright_body_and_does_not_turn():
    # a box 1.8 x 0.5 x 0.3, densest along its height (like a standing body's vertices),
    # is its own principal box; turned about a tilted axis its axis-aligned box grows
    grid = np.stack(np.meshgrid(*(np.linspace(-0.5, 0.5, n) for n in (5, 18, 3)), indexing="ij"), -1)
    x = grid.reshape(-1, 3) * [0.5, 1.8, 0.3]
    turned = Rotation.from_rotvec([0.7, 1.1, -0.4]).apply(x) * 3.0 + [1.0, 2.0, -5.0]
    np.testing.assert_allclose(principal_box_sides(x), [1.8, 0.5, 0.3], rtol=1e-9)
    np.testing.assert_allclose(principal_box_sides(turned), 3.0 * principal_box_sides(x), rtol=1e-9)
    assert np.linalg.norm(np.ptp(turned, axis=0)) > 1.2 * 3.0 * np.linalg.norm([1.8, 0.5, 0.3])


def test_umeyama_never_reflects():
    p = np.random.default_rng(1).normal(size=(10, 3))
    s = umeyama(p, p * [-1, 1, 1])  # a mirror image: best proper rotation instead
    assert np.linalg.det(s.rotation) == pytest.approx(1.0)


def test_laplacian_kills_constants_and_linear_functions_on_a_flat_grid():
    x, y = np.meshgrid(np.arange(6.0), np.arange(5.0))
    v = np.stack([x.ravel(), y.ravel() * 1.3, np.zeros(x.size)], axis=1)
    faces = []
    for r in range(4):
        for c in range(5):
            a = r * 6 + c
            faces += [(a, a + 1, a + 7), (a, a + 7, a + 6)]
    f = np.array(faces)
    L = cotangent_laplacian(v, f)
    assert abs(L - L.T).max() < 1e-14
    np.testing.assert_allclose(L @ np.ones(len(v)), 0, atol=1e-12)
    interior = [(r * 6 + c) for r in range(1, 4) for c in range(1, 5)]
    lin = v @ [0.7, -0.2, 0.0] + 3
    np.testing.assert_allclose((L @ lin)[interior], 0, atol=1e-12)
    assert mixed_voronoi_areas(v, f).sum() == pytest.approx(5 * 4 * 1.3)


def test_a_seam_makes_the_rows_of_a_cut_those_of_the_whole_grid():
    # a flat grid with one column of cells removed: two pieces one cell apart.  Linear
    # functions have zero Laplacian inside; at the cut the one-sided rows do not, and
    # the seamed rows (partners across the gap) are zero again; other rows unchanged
    nx, ny = 12, 5
    x, y = np.meshgrid(np.arange(float(nx)), np.arange(float(ny)))
    v = np.stack([x.ravel(), y.ravel() * 1.3, np.zeros(x.size)], axis=1)
    f = np.array([t for r in range(ny - 1) for c in range(nx - 1) if c != 5
                  for t in ((r * nx + c, r * nx + c + 1, (r + 1) * nx + c + 1),
                            (r * nx + c, (r + 1) * nx + c + 1, (r + 1) * nx + c))])
    seams = np.array([(r * nx + 5, r * nx + 6) for r in range(ny)])
    L = cotangent_laplacian(v, f)
    S = seamed_laplacian(L, v, f, seams)
    cut = seams[1:-1].ravel()  # the corners of the grid keep their along-the-edge part
    lin = v @ [0.7, -0.2, 0.0] + 3
    assert np.abs(L @ lin)[cut].min() > 0.1
    np.testing.assert_allclose((S @ lin)[cut], 0, atol=1e-12)
    np.testing.assert_allclose(S @ np.ones(len(v)), 0, atol=1e-12)
    other = np.setdiff1d(np.arange(len(v)), seams.ravel())
    assert abs(S[other] - L[other]).max() == 0
    # no seam: the same operator
    assert abs(bilaplacian(v, f, seams=np.zeros((0, 2), int)) - bilaplacian(v, f)).max() == 0


def test_laplacian_survives_degenerate_triangles():
    m = blob(2)
    v = np.vstack([m.vertices, m.vertices[:1], m.vertices[:1]])  # two coincident extra vertices
    n = len(m.vertices)
    f = np.vstack([m.faces, [[0, n, n + 1], [0, 1, 1]]])  # zero-area and repeated-index triangles
    H = bilaplacian(v, f)
    assert np.isfinite(H.data).all()
    assert np.isfinite(mixed_voronoi_areas(v, f)).all() and (mixed_voronoi_areas(v, f) > 0).all()


def test_factorization_solves_and_detects_singular_systems():
    m = blob(2)
    H = bilaplacian(m.vertices, m.faces)
    A = H + sp.identity(H.shape[0])
    b = np.random.default_rng(2).normal(size=(H.shape[0], 3))
    x = Factorization(A).solve(b)
    np.testing.assert_allclose(A @ x, b, atol=1e-8)
    with pytest.raises(NumericalError, match="singular"):
        Factorization(H, "test system").solve(b)  # constants are in the null space


def test_weld_merges_seams_and_keeps_triangle_order():
    m = blob(1)
    v = np.vstack([m.vertices, m.vertices[:5]])
    f = m.faces.copy()
    f[:3] = np.where(f[:3] < 5, f[:3] + len(m.vertices), f[:3])  # first triangles use the duplicates
    wv, wf, index = weld(v, f)
    assert len(wv) == len(m.vertices)
    np.testing.assert_array_equal(wf, m.faces)
    np.testing.assert_array_equal(index[len(m.vertices):], np.arange(5))
    assert len(np.unique(vertex_components(len(wv), wf))) == 1


# --- correspondence ----------------------------------------------------------------

def test_identity_correspondence():
    m = blob(3, (1, 1.5, 0.8), bump=0.3)
    c = correspond(m, m, vertex_markers(spread(m.vertices, 12), spread(m.vertices, 12), m, m))
    assert map_error(c, m, m) < 1e-3
    p = c.target_to_source.positions(m.vertices, m.faces)
    assert np.linalg.norm(p - m.vertices, axis=1).max() < 1e-2


@pytest.mark.parametrize("turn", [[90, 0, 0], [40, 113, -25]])
def test_correspondence_is_invariant_to_units_and_axes(turn):
    # Y-up -> Z-up in centimetres, or turned about a tilted axis (its axis-aligned box grows)
    src = blob(3, (1, 1.5, 0.8), bump=0.3)
    tgt = blob(3, (1.3, 1.2, 0.8), bump=0.5)
    ids = spread(src.vertices, 14)
    base = correspond(src, tgt, vertex_markers(ids, ids, src, tgt))
    R = Rotation.from_euler("xyz", turn, degrees=True).as_matrix()
    moved = Mesh(100 * tgt.vertices @ R.T + [5, 0, 30], tgt.faces)
    other = correspond(src, moved, vertex_markers(ids, ids, src, moved))
    pa = base.source_to_target.positions(tgt.vertices, tgt.faces)
    pb = other.source_to_target.positions(tgt.vertices, tgt.faces)  # same triangles, read on tgt
    assert np.linalg.norm(pa - pb, axis=1).max() < 1e-6
    assert other.stats.alignment_scale > 50


def test_registration_recovers_a_nonrigid_deformation():
    # same topology, different proportions and a bigger nose: the true map is i <-> i
    src = blob(3, (1, 1.5, 0.8), bump=0.2)
    tgt = blob(3, (1.4, 1.1, 0.9), bump=0.6)
    ids = spread(src.vertices, 16)
    c = correspond(src, tgt, vertex_markers(ids, ids, src, tgt))
    err = map_error(c, src, tgt)
    # measured 0.0063; similarity alignment + closest point alone gives 0.059
    assert err < 0.01, err
    assert c.stats.fit_distance_p95 < 0.005 * np.linalg.norm(np.ptp(tgt.vertices, axis=0))


def test_a_stiffness_schedule_keeps_a_body_marked_only_at_its_ends_from_sliding():
    # an elongated body marked only at its ends (automatic markers on a trunk): the faired
    # shapes place its middle differently, and closest points on the smooth sides cannot
    # pull it back along itself; a stiff first level lets the whole surface place it
    src = blob(3, (1, 3, 1), bump=0.3)
    tgt = blob(3, (1.1, 3, 1.05), bump=0.4)
    v = src.vertices
    ids = [int(np.argmax(v[:, 1])), int(np.argmin(v[:, 1])), int(np.argmax(v[:, 1] - 2 * v[:, 0])),
           int(np.argmin(v[:, 1] - 2 * v[:, 2]))]
    m = vertex_markers(ids, ids, src, tgt)
    one = correspond(src, tgt, m)
    levels = correspond(src, tgt, m, CorrespondenceConfig(register_stiffness=(100.0, 10.0, 1.0)))
    # measured 0.0122 and 0.0026 of the diagonal
    assert map_error(levels, src, tgt) < 0.5 * map_error(one, src, tgt)
    assert levels.stats.iterations[1] <= CorrespondenceConfig().max_iterations
    # one level at mu1 is the registration as it was
    same = correspond(src, tgt, m, CorrespondenceConfig(register_stiffness=(1.0,)))
    assert np.array_equal(same.registered_source, one.registered_source)


def test_stiffness_levels_share_the_iterations():
    assert _level_iterations(15, 1) == [15]
    assert _level_iterations(15, 3) == [5, 5, 5]
    assert _level_iterations(4, 3) == [1, 1, 2]
    # one sequence of iterations: the first coarse_iterations on the proxies, a level split there
    assert _stage2_segments((1.0,), 15, 10) == [(True, 1.0, 10), (False, 1.0, 5)]
    assert _stage2_segments((100.0, 1.0), 15, 10) == [(True, 100.0, 7), (True, 1.0, 3), (False, 1.0, 5)]
    assert _stage2_segments((100.0, 10.0, 1.0), 15, 0) == [(False, 100.0, 5), (False, 10.0, 5), (False, 1.0, 5)]
    with pytest.raises(ValueError):
        CorrespondenceConfig(register_stiffness=(100.0, -1.0))
    with pytest.raises(ValueError):
        CorrespondenceConfig(automatic_stiffness=(1.0,) * 16)


@pytest.mark.parametrize("src_x, tgt_x, glued", [(1.12, 1.32, True), (1.5, 1.8, False)])
def test_unmarked_pieces_are_glued_or_ride_along_without_nans(src_x, tgt_x, glued):
    # a small unmarked piece next to the body (an eye) is solved with it, glued where it
    # comes within piece_gap (here with layer_hanging off: a ball touching the body at one
    # point hangs off it, and rides along by default, below); one farther away rides along
    # with the closest body point
    src = blob(3, (1, 1.5, 0.8))
    tgt = blob(3, (1.2, 1.4, 0.9))
    eye = blob(1, (0.1, 0.1, 0.1))
    n = len(tgt.vertices)
    tgt2 = Mesh(np.vstack([tgt.vertices, eye.vertices + [tgt_x, 0, 0]]), np.vstack([tgt.faces, eye.faces + n]))
    src2 = Mesh(np.vstack([src.vertices, eye.vertices + [src_x, 0, 0]]),
                np.vstack([src.faces, eye.faces + len(src.vertices)]))
    ids = spread(src.vertices, 12)
    markers = vertex_markers(ids, ids, src2, tgt2)
    if glued:  # nearly all of the ball is farther than layer_distance from the body
        assert correspond(src2, tgt2, markers).stats.unmarked_source_vertices == len(eye.vertices)
    c = correspond(src2, tgt2, markers, CorrespondenceConfig(layer_hanging=2.0))
    for sp_ in (c.source_to_target, c.target_to_source):
        assert np.isfinite(sp_.bary).all()
    assert c.stats.unmarked_source_vertices == (0 if glued else len(eye.vertices))
    # carried (no marker, no layer): exactly the ball, when it is not glued
    for carried, body in ((c.source_carried, len(src.vertices)), (c.target_carried, n)):
        assert not carried[:body].any() and carried[body:].all() == (not glued) and carried[body:].any() == (not glued)
    # the source eye lands on the target eye, the target eye maps to the source eye
    assert (c.source_to_target.face[len(src.vertices):] >= len(tgt.faces)).all()
    assert (c.target_to_source.face[n:] >= len(src.faces)).all()
    # glued or not, a piece without markers does not make a body in pieces: the glue comes
    # and goes with its distance, the registration's schedule must not
    assert c.stats.stiffness_levels == [1.0]


def test_markers_on_several_pieces_register_in_stiffness_levels():
    src = blob(3, (1, 1.5, 0.8))
    tgt = blob(3, (1.2, 1.4, 0.9))
    eye = blob(1, (0.1, 0.1, 0.1))

    def with_eye(body, x):
        return Mesh(np.vstack([body.vertices, eye.vertices + [x, 0, 0]]),
                    np.vstack([body.faces, eye.faces + len(body.vertices)]))
    src2, tgt2 = with_eye(src, 1.12), with_eye(tgt, 1.32)
    ids = spread(src.vertices, 12)
    one = correspond(src2, tgt2, vertex_markers(ids, ids, src2, tgt2))
    eyes = vertex_markers(ids + [len(src.vertices)], ids + [len(tgt.vertices)], src2, tgt2)
    two = correspond(src2, tgt2, eyes)
    assert one.stats.stiffness_levels == [1.0]
    assert two.stats.stiffness_levels == list(CorrespondenceConfig().glued_stiffness)


def test_correspondence_is_deterministic():
    src, tgt = blob(3, (1, 1.5, 0.8)), blob(3, (1.2, 1.4, 0.9))
    ids = spread(src.vertices, 10)
    a = correspond(src, tgt, vertex_markers(ids, ids, src, tgt))
    b = correspond(src, tgt, vertex_markers(ids, ids, src, tgt))
    assert np.array_equal(a.source_to_target.bary, b.source_to_target.bary)
    assert np.array_equal(a.target_to_source.face, b.target_to_source.face)


# --- files and command line --------------------------------------------------------

def _write_case(tmp_path):
    src, tgt = blob(3, (1, 1.5, 0.8)), blob(2, (1.2, 1.4, 0.9))
    trimesh.Trimesh(src.vertices, src.faces, process=False).export(tmp_path / "src.ply")
    trimesh.Trimesh(tgt.vertices, tgt.faces, process=False).export(tmp_path / "tgt.obj")
    dirs = np.array([[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1], [0.6, 0.6, 0.5]])
    dirs = dirs / np.linalg.norm(dirs, axis=1, keepdims=True)
    ms = [{"name": f"p{i}", "source": {"point": (d * [1, 1.5, 0.8]).tolist()},
           "target": {"point": (d * [1.2, 1.4, 0.9]).tolist()}} for i, d in enumerate(dirs)]
    (tmp_path / "m.json").write_text(json.dumps({"markers": ms}))
    return src, tgt


def test_large_target_fitted_on_a_proxy_keeps_the_map():
    # a 4x denser target (icosphere level 4, 2562 vertices) fitted on a ~650-vertex proxy:
    # the map still recovers the deformation, the faired target comes through the proxy
    from asetransfer.config import CorrespondenceConfig
    src = blob(3, (1, 1.5, 0.8), bump=0.2)
    tgt = blob(4, (1.4, 1.1, 0.9), bump=0.6)
    ids_s = spread(src.vertices, 16)
    ids_t = ids_s  # icosphere levels share their first vertices
    cfg = CorrespondenceConfig(proxy_vertices=650, proxy_above=1000)
    c = correspond(src, tgt, vertex_markers(ids_s, ids_t, src, tgt), cfg)
    full = correspond(src, tgt, vertex_markers(ids_s, ids_t, src, tgt))
    assert 500 < c.stats.proxy_vertices <= 700 and full.stats.proxy_vertices == 0
    # the true target point of source vertex i is target vertex i (shared first vertices)
    diag = np.linalg.norm(np.ptp(tgt.vertices, axis=0))
    for corr in (c, full):
        p = corr.source_to_target.positions(tgt.vertices, tgt.faces)
        assert np.linalg.norm(p - tgt.vertices[: len(src.vertices)], axis=1).mean() < 0.01 * diag
    assert c.faired_target.shape == tgt.vertices.shape and np.isfinite(c.faired_target).all()
    again = correspond(src, tgt, vertex_markers(ids_s, ids_t, src, tgt), cfg)  # deterministic proxy
    assert np.array_equal(again.target_to_source.bary, c.target_to_source.bary)
    assert c.stats.fit_distance_p95 < 0.005 * diag


def test_fairing_and_stage_one_on_proxies_keep_the_map():
    # both sides denser than fair_proxy_above: the fairing and stage 1 run on ~600-vertex
    # proxies, stage 2 on the meshes as given; the map matches the one faired in full
    from asetransfer.config import CorrespondenceConfig
    src = blob(4, (1, 1.5, 0.8), bump=0.2)
    tgt = blob(4, (1.4, 1.1, 0.9), bump=0.6)
    ids = spread(src.vertices, 16)
    on = correspond(src, tgt, vertex_markers(ids, ids, src, tgt),
                    CorrespondenceConfig(fair_proxy_vertices=600, fair_proxy_above=1000))
    off = correspond(src, tgt, vertex_markers(ids, ids, src, tgt), CorrespondenceConfig(fair_proxy_vertices=0))
    assert all(400 < n <= 700 for n in on.stats.fairing_proxy_vertices)
    assert off.stats.fairing_proxy_vertices == [0, 0]
    diag = np.linalg.norm(np.ptp(tgt.vertices, axis=0))
    p_on, p_off = (c.source_to_target.positions(tgt.vertices, tgt.faces) for c in (on, off))
    assert np.linalg.norm(p_on - tgt.vertices, axis=1).mean() < 0.01 * diag  # same vertex order
    assert np.linalg.norm(p_on - p_off, axis=1).mean() < 0.002 * diag
    # the faired shapes, carried from the proxies, are smooth stand-ins of the whole meshes
    for faired, mesh in ((on.faired_source, src), (on.faired_target, tgt)):
        assert faired.shape == mesh.vertices.shape and np.isfinite(faired).all()
    assert np.linalg.norm(on.faired_target - off.faired_target, axis=1).mean() < 0.01 * diag
    # a mesh registered onto itself through proxies comes back exactly (spec Appendix II):
    # the vertices follow the proxy's displacement, which is zero, not its surface
    self_map = correspond(src, src, vertex_markers(ids, ids, src, src),
                          CorrespondenceConfig(fair_proxy_vertices=600, fair_proxy_above=1000))
    assert self_map.stats.fairing_proxy_vertices[0] > 0
    np.testing.assert_allclose(self_map.registered_source, src.vertices, atol=1e-9 * diag)


def test_a_singular_proxy_falls_back_to_the_meshes_themselves(monkeypatch):
    # a decimation gone wrong makes a proxy's fairing system singular: the correspondence
    # is then computed without proxies, as if they were off, instead of failing
    import asetransfer.stages.correspondence.pipeline as pipeline_module
    from asetransfer.config import CorrespondenceConfig
    from asetransfer.geometry.linsolve import NumericalError
    src = blob(4, (1, 1.5, 0.8), bump=0.2)
    tgt = blob(4, (1.4, 1.1, 0.9), bump=0.6)
    ids = spread(src.vertices, 16)
    on = CorrespondenceConfig(fair_proxy_vertices=600, fair_proxy_above=1000)
    off = correspond(src, tgt, vertex_markers(ids, ids, src, tgt), CorrespondenceConfig(fair_proxy_vertices=0))
    fair = pipeline_module.fair

    def fair_failing_on_proxies(source, target, cfg):
        if len(source.active) < len(src.vertices):
            raise NumericalError("fairing system (Eq. A I-1): singular")
        return fair(source, target, cfg)
    monkeypatch.setattr(pipeline_module, "fair", fair_failing_on_proxies)
    c = correspond(src, tgt, vertex_markers(ids, ids, src, tgt), on)
    assert c.stats.fairing_proxy_vertices == [0, 0]
    np.testing.assert_array_equal(c.source_to_target.face, off.source_to_target.face)
    np.testing.assert_allclose(c.source_to_target.bary, off.source_to_target.bary, atol=1e-12)


def test_cli_correspond_writes_both_maps(tmp_path, capsys):
    src, tgt = _write_case(tmp_path)
    out = tmp_path / "map.npz"
    args = ["correspond", str(tmp_path / "src.ply"), str(tmp_path / "tgt.obj"), "--markers",
            str(tmp_path / "m.json"), "-o", str(out), "--debug-dir", str(tmp_path)]
    assert main(args) == 0
    s2t, t2s, sf, tf = read_map(out, len(src.vertices), len(tgt.vertices))
    np.testing.assert_array_equal(sf, src.faces)
    np.testing.assert_array_equal(tf, tgt.faces)
    assert len(s2t) == len(src.vertices) and len(t2s) == len(tgt.vertices)
    with np.load(out) as z:
        assert set(z.files) == {"src_to_tgt_face", "src_to_tgt_bary", "tgt_to_src_face", "tgt_to_src_bary",
                                "src_faces", "tgt_faces"}
    for name in ("faired_source", "faired_target", "registered_source"):
        assert len(trimesh.load(tmp_path / f"{name}.ply", process=False).vertices) > 0
    first = out.read_bytes()
    assert main(args + ["-q"]) == 0
    assert out.read_bytes() == first  # same inputs, same bytes


def test_cli_correspond_bad_inputs(tmp_path, capsys):
    _write_case(tmp_path)
    base = ["correspond", str(tmp_path / "src.ply"), str(tmp_path / "tgt.obj"), "--markers", str(tmp_path / "m.json")]
    assert main(base + ["-o", str(tmp_path / "tgt.obj")]) == 2  # would overwrite an input
    assert "input" in capsys.readouterr().err
    assert main(base + ["-o", str(tmp_path / "missing" / "map.npz")]) == 2
    assert "does not exist" in capsys.readouterr().err
    (tmp_path / "bad.json").write_text('{"markers": [{"name": "a", "source": {"point": [0, 0, 1]}}]}')
    code = main(base[:4] + [str(tmp_path / "bad.json"), "-o", str(tmp_path / "x.npz")])
    err = capsys.readouterr().err
    assert code == 2 and "bad.json" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x.npz").exists()


def test_read_map_rejects_inconsistent_files(tmp_path):
    good = {"src_to_tgt_face": np.array([0, 5]), "src_to_tgt_bary": np.full((2, 3), 1 / 3),
            "tgt_to_src_face": np.array([0]), "tgt_to_src_bary": np.full((1, 3), 1 / 3),
            "src_faces": np.array([[0, 1, 1]]), "tgt_faces": np.array([[0, 0, 0]])}
    p = tmp_path / "m.npz"
    p.write_bytes(npz_bytes(good))
    with pytest.raises(Exception, match="out of range"):
        read_map(p)
    p.write_bytes(b"not a zip")
    with pytest.raises(Exception, match="not a correspondence map"):
        read_map(p)


def test_symmetric_filter_makes_the_map_mirror_consistent():
    src = blob(3, (1, 1.5, 0.8), bump=0.2)
    # symmetric meshes and markers: the registration alone is symmetric only approximately
    tgt = blob(3, (1.3, 1.2, 0.9), bump=0.4)
    left = [i for i in spread(src.vertices, 24) if src.vertices[i, 2] > 0.05]
    refl = src.vertices * [1, 1, -1]
    right = [int(np.argmin(np.linalg.norm(src.vertices - refl[i], axis=1))) for i in left]
    ids = left + right
    mk = vertex_markers(ids, ids, src, tgt)
    mk = Markers(tuple([f"m{k}.L" for k in range(len(left))] + [f"m{k}.R" for k in range(len(right))]),
                 mk.source, mk.target)

    def mismatch(c):
        p = c.source_to_target.positions(tgt.vertices, tgt.faces)
        twin = [int(np.argmin(np.linalg.norm(src.vertices - r, axis=1))) for r in refl]
        return np.linalg.norm(p - p[twin] * [1, 1, -1], axis=1).mean()

    from asetransfer.config import CorrespondenceConfig
    plain = correspond(src, tgt, mk)
    sym = correspond(src, tgt, mk, CorrespondenceConfig(symmetric=True))
    # measured: 1.1e-4 without the filter, 1.3e-8 with it
    assert mismatch(plain) > 1e-5
    assert mismatch(sym) < 1e-6


@pytest.mark.parametrize("seed", range(6))
def test_components_label_as_scipy(seed, monkeypatch):
    """geometry.topology.components numbers components as SciPy's csgraph does (lowest vertex
    first), by its numpy path and by its SciPy path."""
    from scipy.sparse.csgraph import connected_components

    from asetransfer.geometry import topology

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    e = rng.integers(0, n, size=(int(rng.integers(0, n)), 2))
    g = sp.coo_matrix((np.ones(len(e)), (e[:, 0], e[:, 1])), shape=(n, n))
    expected = connected_components(g, directed=False)[1]
    np.testing.assert_array_equal(topology.components(n, e[:, 0], e[:, 1]), expected)
    monkeypatch.setattr(topology, "DIRECT_COMPONENTS", 0)
    np.testing.assert_array_equal(topology.components(n, e[:, 0], e[:, 1]), expected)
