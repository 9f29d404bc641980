"""Triangles drawn into an image with a depth buffer (numpy only): the shaded bodies of
the preview picture, at a fraction of what a vector renderer spends on thousands of
tiny polygons."""
from __future__ import annotations

import numpy as np

def rasterize(triangles: np.ndarray, colours: np.ndarray, lo, hi, size: tuple, supersample: int = 2) -> np.ndarray:
    """An RGBA image of ``triangles``, the nearest one at each pixel.

    Each pixel of a ``supersample`` x ``supersample`` finer grid takes the colour of the
    nearest triangle that covers its centre (largest depth: toward the viewer; depth
    interpolated on the triangle's plane and compared at 30 bits); a triangle that covers
    no centre (smaller than a fine pixel) still marks the pixel under its centroid, so
    dense meshes draw without holes.  Pixels are found row by row (each triangle's span
    on each row it crosses), a depth buffer keeps the nearest.  The fine grid is averaged
    down to ``size``: edges are antialiased, the alpha channel is the covered fraction.

    Parameters
    ----------
    triangles : (G, 3, 3) screen coordinates: x right, y up, depth toward the viewer.
    colours : (G, 3) RGB in [0, 1].
    lo, hi : (2,) the image's lower-left and upper-right corners (screen units).
    size : (width, height) pixels.
    supersample : fine pixels per pixel along each side.

    Returns
    -------
    (height, width, 4) float RGBA, row 0 at the top (``hi``'s y).
    """
    width, height = int(size[0]) * supersample, int(size[1]) * supersample
    # continuous pixel coordinates, pixel centres at integers; depth as a 30-bit level
    x = (triangles[:, :, 0] - lo[0]) / (hi[0] - lo[0]) * width - 0.5
    y = (hi[1] - triangles[:, :, 1]) / (hi[1] - lo[1]) * height - 0.5
    z = triangles[:, :, 2] - (triangles[:, :, 2].min() if len(triangles) else 0.0)
    extent = float(z.max(initial=0.0))
    z = z * ((2 ** 30 - 2) / extent) if extent > 0 else z
    near = np.zeros(width * height, dtype=np.int64)  # (level + 1) << 32 | (2^31 - triangle); 0: empty
    pixel, level, triangle = _spans(x, y, z, width, height)
    np.maximum.at(near, pixel, _keys(level, triangle))
    drawn = np.zeros(len(triangles), dtype=bool)
    drawn[triangle] = True
    pixel, level, triangle = _centroids(x, y, z, np.flatnonzero(~drawn), width, height)
    np.maximum.at(near, pixel, _keys(level, triangle))
    return _downsampled(near, colours, width, height, supersample)


def _keys(level: np.ndarray, triangle: np.ndarray) -> np.ndarray:
    """Depth-buffer keys: the depth level above, the triangle below (the lower index wins a
    tie), so the largest key is the nearest candidate."""
    level = np.clip(np.rint(level), 0, 2 ** 30 - 2).astype(np.int64)
    return ((level + 1) << 32) | (2 ** 31 - triangle.astype(np.int64))


def _spans(x, y, z, width: int, height: int) -> tuple:
    """``(pixel, depth, triangle)`` of every fine pixel centre inside a triangle: for each
    triangle and each row it crosses, the columns between its edges' crossings."""
    top = np.clip(np.ceil(y.min(axis=1)), 0, height).astype(np.int64)
    bottom = np.clip(np.floor(y.max(axis=1)), -1, height - 1).astype(np.int64)
    rows = np.maximum(bottom - top + 1, 0)
    tri = np.repeat(np.arange(len(x)), rows)
    row = top[tri] + np.arange(len(tri)) - np.repeat(np.cumsum(rows) - rows, rows)
    left, right = np.full(len(tri), np.inf), np.full(len(tri), -np.inf)
    for a, b in ((0, 1), (1, 2), (2, 0)):
        ya, yb, xa, xb = y[tri, a], y[tri, b], x[tri, a], x[tri, b]
        crosses = (np.minimum(ya, yb) <= row) & (row <= np.maximum(ya, yb)) & (ya != yb)
        t = np.where(crosses, (row - ya) / np.where(ya != yb, yb - ya, 1.0), 0.0)
        at = np.where(crosses, xa + t * (xb - xa), np.nan)
        left, right = np.fmin(left, at), np.fmax(right, at)
    first = np.clip(np.ceil(left), 0, width).astype(np.int64)
    last = np.clip(np.floor(right), -1, width - 1).astype(np.int64)
    cols = np.maximum(last - first + 1, 0)
    # pixel k of the spans lies at column first + (k - start) of its span: the pixel index and
    # the depth are linear in k along a span, so each is one gather and one add or multiply-add
    start = np.cumsum(cols) - cols
    gx, gy, c = _planes(x, y, z)
    slope = gx[tri]
    k = np.arange(int(cols.sum()))
    span = np.repeat(np.arange(len(tri)), cols)
    pixel = (row * width + first - start)[span] + k
    depth = slope[span] * k + (gy[tri] * row + c[tri] + slope * (first - start))[span]
    return pixel, depth, tri[span]


def _planes(x, y, z) -> tuple:
    """Each triangle's plane ``depth = gx col + gy row + c`` (a triangle seen edge-on: its
    mean depth)."""
    e1x, e1y, e2x, e2y = x[:, 1] - x[:, 0], y[:, 1] - y[:, 0], x[:, 2] - x[:, 0], y[:, 2] - y[:, 0]
    dz1, dz2 = z[:, 1] - z[:, 0], z[:, 2] - z[:, 0]
    det = e1x * e2y - e1y * e2x
    flat = np.abs(det) < 1e-12
    det = np.where(flat, 1.0, det)
    gx = np.where(flat, 0.0, (dz1 * e2y - dz2 * e1y) / det)  # the plane z = gx col + gy row + c
    gy = np.where(flat, 0.0, (dz2 * e1x - dz1 * e2x) / det)
    c = np.where(flat, z.mean(axis=1), z[:, 0] - gx * x[:, 0] - gy * y[:, 0])
    return gx, gy, c


def _centroids(x, y, z, which: np.ndarray, width: int, height: int) -> tuple:
    """``(pixel, depth, triangle)`` of the pixel under the centroid of each triangle ``which``."""
    cx = np.rint(x[which].mean(axis=1)).astype(np.int64)
    cy = np.rint(y[which].mean(axis=1)).astype(np.int64)
    seen = (cx >= 0) & (cx < width) & (cy >= 0) & (cy < height)
    return (cy * width + cx)[seen], z[which].mean(axis=1)[seen], which[seen]


def _downsampled(near: np.ndarray, colours: np.ndarray, width: int, height: int, k: int) -> np.ndarray:
    """(height / k, width / k, 4) RGBA: the mean colour of the covered fine pixels of each
    k x k block, alpha the covered fraction."""
    hit = np.flatnonzero(near)
    colour = colours[2 ** 31 - (near[hit] & 0xFFFFFFFF)]
    w, h = width // k, height // k
    block = (hit // width // k) * w + (hit % width) // k
    count = np.bincount(block, minlength=w * h).astype(np.float64)
    rgb = [np.bincount(block, weights=colour[:, c], minlength=w * h) / np.maximum(count, 1.0) for c in range(3)]
    return np.stack([*rgb, count / (k * k)], axis=1).reshape(h, w, 4)
