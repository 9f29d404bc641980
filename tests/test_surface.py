"""Surface geometry: exact winding numbers, rays cast at a mesh, a mesh cut by planes."""
import numpy as np
import pytest
import trimesh

from asetransfer.geometry.rays import cast_rays
from asetransfer.geometry.slicing import clip_triangles, clipped_middle, section, section_loops, sections, winding
from asetransfer.geometry.surface import LARGE_MESH_FACES, SurfaceIndex, winding_numbers


def test_winding_numbers_inside_outside_and_orientation():
    sphere = trimesh.creation.icosphere(subdivisions=2, radius=1.0)
    v, f = np.asarray(sphere.vertices), np.asarray(sphere.faces)
    points = np.array([[0.0, 0.0, 0.0], [0.3, -0.5, 0.2], [2.0, 0.0, 0.0], [0.0, 5.0, -1.0]])
    np.testing.assert_allclose(winding_numbers(points, v, f), [1, 1, 0, 0], atol=1e-12)
    np.testing.assert_allclose(winding_numbers(points, v, f[:, ::-1]), [-1, -1, 0, 0], atol=1e-12)
    # an open mesh (a hemisphere): at the centre of the full sphere, half a turn
    half = f[(v[f].mean(axis=1)[:, 2] > 0)]
    assert abs(winding_numbers(points[:1], v, half)[0] - 0.5) < 0.05


def test_winding_numbers_match_libigl():
    import igl

    rng = np.random.default_rng(3)
    box = trimesh.creation.box(extents=(1.0, 2.0, 0.5))
    v, f = np.asarray(box.vertices, float), np.asarray(box.faces, np.int64)
    points = rng.uniform(-1.2, 1.2, (50, 3))
    np.testing.assert_allclose(winding_numbers(points, v, f), igl.winding_number(v, f, points), atol=1e-9)


def _sphere():
    sphere = trimesh.creation.icosphere(subdivisions=2, radius=1.0)
    return np.asarray(sphere.vertices, float), np.asarray(sphere.faces, np.int64)


def test_libigl_and_the_exact_test_cross_a_sphere_alike():
    v, f = _sphere()
    rng = np.random.default_rng(5)
    origins = rng.uniform(-0.4, 0.4, (20, 3))
    directions = rng.normal(size=(20, 3))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    fast = cast_rays(v, f, origins, directions, first=True)
    exact = cast_rays(v, f, origins, directions, first=True, exact=True)
    assert fast.ray.tolist() == exact.ray.tolist() == list(range(20))  # from inside, every ray leaves
    assert (fast.face == exact.face).all()
    np.testing.assert_allclose(fast.point, exact.point, atol=1e-6)  # libigl's single precision
    np.testing.assert_allclose(exact.point, origins + exact.t[:, None] * directions, atol=1e-12)
    np.testing.assert_allclose(exact.bary @ np.ones(3), 1.0)
    # the whole line: one crossing ahead and one behind each origin
    line = cast_rays(v, f, origins, directions, first=False, behind=np.inf, exact=True)
    assert np.bincount(line.ray).tolist() == [2] * 20
    assert all(sorted(np.sign(line.t[line.ray == r])) == [-1, 1] for r in range(20))
    started = cast_rays(v, f, origins, directions, first=False, behind=4.0)
    np.testing.assert_allclose(started.t, [t for r in range(20) for t in sorted(line.t[line.ray == r])], atol=1e-5)


def test_a_ray_pointing_away_misses_and_its_line_does_not():
    v, f = _sphere()
    origin, up = np.array([[0.1, 0.05, 3.0]]), np.array([[0.0, 0.0, 1.0]])  # off the pole's vertex
    assert len(cast_rays(v, f, origin, up, first=True).face) == 0
    assert len(cast_rays(v, f, origin, up, first=False, exact=True).face) == 0
    line = cast_rays(v, f, origin, up, first=False, behind=np.inf, exact=True)
    np.testing.assert_allclose(np.sort(line.t), [-4.0, -2.0], atol=0.02)  # the icosphere's faces lie inside it
    # through a corner, every triangle around it is crossed (edges and corners count)
    pole = cast_rays(v, f, np.array([[0.0, 0.0, 3.0]]), up, first=False, behind=np.inf, exact=True)
    assert len(pole.face) > 2 and np.allclose(np.abs(pole.point[:, 2]), 1.0)
    first = cast_rays(v, f, origin, up, first=True, behind=10.0)
    assert first.t[0] == pytest.approx(-4.0, abs=0.02)


def test_a_square_cut_by_planes():
    v = np.array([[0.0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]])
    f = np.array([[0, 1, 2], [0, 2, 3]])
    x = np.array([1.0, 0, 0])
    rows, pieces = clip_triangles(v, f, [(x, 0.6), (-x, -0.4)])  # 0.4 <= x <= 0.6
    area = 0.5 * np.linalg.norm(np.cross(pieces[:, 1] - pieces[:, 0], pieces[:, 2] - pieces[:, 0]), axis=1)
    assert set(rows.tolist()) == {0, 1} and area.sum() == pytest.approx(0.2)
    assert pieces[..., 0].min() >= 0.4 - 1e-12 and pieces[..., 0].max() <= 0.6 + 1e-12
    face, bary = clipped_middle(v, f, np.arange(2), [(x, 0.6), (-x, -0.4)])
    np.testing.assert_allclose(bary @ v[f[face]], [0.5, 0.5, 0.0], atol=1e-12)
    assert clipped_middle(v, f, np.arange(2), [(x, -1.0)]) is None  # nothing left
    cut = section(v, f, 0, 0.25)  # two edges of each triangle cross x = 0.25 (the diagonal for both)
    assert len(cut) == 4 and np.allclose(cut[:, 0], 0.25)


def test_sections_at_many_levels_are_each_levels_section():
    # a sphere whose equator's vertices lie exactly on one level, and levels past its ends
    from scipy.spatial import cKDTree

    sphere = trimesh.creation.icosphere(4)
    v, f = np.asarray(sphere.vertices), np.asarray(sphere.faces)
    for levels in (np.linspace(-0.9, 0.9, 37), np.linspace(-1.5, 1.5, 7)):
        level, points = sections(v, f, 2, levels)
        assert (np.diff(level) >= 0).all()
        for k, at in enumerate(levels):
            one, many = section(v, f, 2, at), points[level == k]
            assert len(one) == len(many) == 0 or (  # the same points, both ways (to rounding)
                cKDTree(one).query(many)[0].max() < 1e-9 and cKDTree(many).query(one)[0].max() < 1e-9)
        assert len(points) < sum(len(section(v, f, 2, at)) for at in levels)  # each edge once


def test_a_sections_loops_and_how_they_wind():
    # a tube around the z axis and a sphere beside it, cut across at z = 0.1: two loops; the
    # tube's winds once around the axis (either way round by its triangles' order), the
    # sphere's not at all, and half the tube's (its triangles on one side) half way
    from scipy.spatial import cKDTree

    tube = trimesh.creation.cylinder(radius=0.5, height=2.0, sections=32)
    ball = trimesh.creation.icosphere(3, radius=0.3)
    ball.apply_translation([2.0, 0.0, 0.0])
    both = trimesh.util.concatenate([tube, ball])
    v, f = np.asarray(both.vertices), np.asarray(both.faces)
    points, edges, loop, segments = section_loops(v, f, 2, 0.1)
    assert len(np.unique(loop)) == 2
    assert np.allclose(np.abs(points[:, 2] - 0.1), 0.0)
    one = section(v, f, 2, 0.1)  # the same points, each edge once
    assert cKDTree(one).query(points)[0].max() < 1e-12 and cKDTree(points).query(one)[0].max() < 1e-12
    assert len(points) < len(one)
    around = loop[np.argmin(np.linalg.norm(points[:, :2], axis=1))]
    windings = {k: winding(points, segments[loop[segments[:, 0]] == k], 0, 1) for k in np.unique(loop)}
    assert abs(abs(windings[around]) - 1.0) < 1e-9
    assert abs(windings[1 - around]) < 1e-9
    flipped = section_loops(v, f[:, ::-1], 2, 0.1)
    assert abs(winding(flipped[0], flipped[3][flipped[2][flipped[3][:, 0]] == around], 0, 1)
               + windings[around]) < 1e-9
    half = segments[(loop[segments[:, 0]] == around) & (points[segments[:, 0], 1] > 0)
                    & (points[segments[:, 1], 1] > 0)]
    assert 0.3 < abs(winding(points, half, 0, 1)) < 0.7
    assert ((v[edges[:, 0], 2] < 0.1) != (v[edges[:, 1], 2] < 0.1)).all()  # each edge crosses


@pytest.mark.parametrize("large", [False, True], ids=["AABB tree", "k-d tree"])
def test_points_far_out_or_not_finite_find_the_surface_and_their_distance(large, monkeypatch):
    """A marker typed as 1e200: its squared distance overflows, and libigl's and the k-d
    tree's searches return no triangle for it (an index past the mesh).  Searched from nearer on
    the same line, it finds the same side of the mesh, at its true distance; an infinite or
    NaN point finds some triangle at an infinite distance."""
    import asetransfer.geometry.surface as surface

    if large:
        monkeypatch.setattr(surface, "LARGE_MESH_FACES", 0)
    box = trimesh.creation.box(extents=(2.0, 2.0, 2.0))
    index = SurfaceIndex(box.vertices, box.faces)
    points = np.array([[1e200, 0.3, -0.2], [0.0, 0.0, -1e160], [3.0, 0.0, 0.0], [np.inf, 0, 0], [np.nan, 0, 0]])
    face, bary, dist, point = index.closest(points)
    assert ((0 <= face) & (face < len(box.faces))).all() and np.isfinite(bary).all()
    np.testing.assert_allclose(point[0], [1.0, 0.3, -0.2], atol=1e-6)   # the +x side, straight across
    np.testing.assert_allclose(point[1], [0.0, 0.0, -1.0], atol=1e-6)
    np.testing.assert_allclose(dist[:3], [1e200 - 1.0, 1e160 - 1.0, 2.0], rtol=1e-12)
    assert np.isinf(dist[3:]).all()
