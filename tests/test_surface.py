"""Surface geometry: exact winding numbers."""
import numpy as np
import trimesh

from asetransfer.geometry.surface import winding_numbers


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
