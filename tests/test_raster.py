"""The depth-buffered triangle rasterizer of the preview picture (geometry/raster.py)."""
import numpy as np

from asetransfer.geometry.raster import rasterize

RED, BLUE = [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]


def _square(x0, y0, x1, y1, depth):
    """Two triangles covering the rectangle at one depth, wound differently."""
    a, b, c, d = [x0, y0, depth], [x1, y0, depth], [x1, y1, depth], [x0, y1, depth]
    return [[a, b, c], [a, d, c]]


def test_a_square_fills_its_pixels_and_nothing_else():
    tri = np.array(_square(0.0, 0.0, 0.5, 1.0, 0.0))
    image = rasterize(tri, np.array([RED, RED]), lo=(0.0, 0.0), hi=(1.0, 1.0), size=(10, 10))
    assert image.shape == (10, 10, 4)
    np.testing.assert_allclose(image[:, :5, 3], 1.0)   # left half covered, both windings
    np.testing.assert_allclose(image[:, 5:, 3], 0.0)
    np.testing.assert_allclose(image[:, :5, :3], np.broadcast_to(RED, (10, 5, 3)))


def test_the_nearest_triangle_wins_whatever_the_order():
    near, far = _square(0.0, 0.0, 1.0, 1.0, 1.0), _square(0.0, 0.0, 1.0, 1.0, 0.0)
    for triangles, colours in ((near + far, [BLUE, BLUE, RED, RED]), (far + near, [RED, RED, BLUE, BLUE])):
        image = rasterize(np.array(triangles), np.array(colours), (0.0, 0.0), (1.0, 1.0), (8, 8))
        np.testing.assert_allclose(image[..., :3], np.broadcast_to(BLUE, (8, 8, 3)))


def test_depth_is_compared_per_pixel_on_crossing_triangles():
    # two slopes crossing at x = 0.5: red nearer on the left, blue on the right
    red = [[0, 0, 1], [1, 0, 0], [1, 1, 0]], [[0, 0, 1], [1, 1, 0], [0, 1, 1]]
    blue = [[0, 0, 0], [1, 0, 1], [1, 1, 1]], [[0, 0, 0], [1, 1, 1], [0, 1, 0]]
    image = rasterize(np.array([*red, *blue], dtype=float), np.array([RED, RED, BLUE, BLUE]), (0, 0), (1, 1), (10, 10))
    assert (image[:, :4, 0] == 1.0).all() and (image[:, 6:, 2] == 1.0).all()


def test_a_triangle_smaller_than_a_pixel_is_drawn_and_edges_are_antialiased():
    tiny = np.array([[[0.51, 0.51, 0.0], [0.52, 0.51, 0.0], [0.51, 0.52, 0.0]]])
    image = rasterize(tiny, np.array([RED]), (0.0, 0.0), (1.0, 1.0), (10, 10))
    assert np.count_nonzero(image[..., 3]) == 1
    half = np.array(_square(0.0, 0.0, 0.55, 1.0, 0.0))  # the edge halves column 5 (2x2 supersampled)
    image = rasterize(half, np.array([RED, RED]), (0.0, 0.0), (1.0, 1.0), (10, 10))
    np.testing.assert_allclose(image[:, 5, 3], 0.5)
