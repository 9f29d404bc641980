"""The one solid a mesh's pieces make together, as a closed surface.

Production characters come in pieces: a robot's plates with gaps at the joints, joint
covers, a helmet, gear, a mannequin cut at every joint.  Rules that read a body's shape
along its surface (geodesic extremities) see each piece alone.  :func:`solid_surface`
gives them the body the pieces form: the generalised winding number of all pieces on a
grid (inside where it is at least a half: overlapping pieces add up, open shells count
by the solid angle they close), closed morphologically by a few cells so that gaps
narrower than that between pieces fill, and polygonised by marching cubes.  The grid is
laid along the mesh's own axes (:func:`principal_frame`) and centred on it, so a character
turned or moved gives the same solid, turned or moved.
"""
from __future__ import annotations

import numpy as np



def solid_surface(vertices: np.ndarray, faces: np.ndarray, *, cells: int = 100, closing: int = 2):
    """The closed outer surface of the solid the mesh's pieces make together.

    Parameters
    ----------
    vertices : (n, 3); faces : (F, 3) triangles (pieces, open shells and overlaps allowed).
    cells : grid cells along the bounding box's largest side.
    closing : gaps between pieces up to about twice this many cells wide are filled
        (a morphological closing: dilation, filling of enclosed holes, erosion).

    Returns
    -------
    (V, 3) vertices and (G, 3) triangles of the solid's surface (marching cubes at the
    half-way level of the closed, lightly smoothed occupancy), facing outwards.
    """
    import igl  # on use: the library loads without libigl
    from scipy import ndimage

    f = np.ascontiguousarray(faces, dtype=np.int64)
    centre, frame = principal_frame(np.asarray(vertices, dtype=np.float64)[np.unique(f)])
    # the grid in the mesh's own axes: laid along the file's, it cut a character turned to
    # face +X or stood Z up differently, and the landmarks on its solid moved 2-12 %H
    v = np.ascontiguousarray((np.asarray(vertices, dtype=np.float64) - centre) @ frame)
    lo, hi = v[np.unique(f)].min(axis=0), v[np.unique(f)].max(axis=0)
    step = float(np.max(hi - lo)) / cells
    # cells about the box's middle, so that an axis the frame turns the other way round
    # (a symmetric body's left-right spread has no third moment to tell) lays the same grid
    half = np.ceil(0.5 * (hi - lo) / step).astype(np.int64) + closing + 2
    shape = 2 * half + 1
    axes = [0.5 * (lo[d] + hi[d]) + step * np.arange(-half[d], half[d] + 1) for d in range(3)]
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)
    winding = igl.fast_winding_number(v, f, grid).reshape(shape)
    occupied = np.abs(winding) >= 0.5
    ball = ndimage.generate_binary_structure(3, 1)
    occupied = ndimage.binary_dilation(occupied, ball, iterations=closing)
    occupied = ndimage.binary_fill_holes(occupied)
    occupied = ndimage.binary_erosion(occupied, ball, iterations=closing, border_value=0)
    field = ndimage.gaussian_filter(occupied.astype(np.float64), 0.7)
    # igl's grid order: x fastest
    values = np.ascontiguousarray(field.transpose(2, 1, 0).reshape(-1))
    corners = np.ascontiguousarray(grid.reshape(*shape, 3).transpose(2, 1, 0, 3).reshape(-1, 3))
    out_v, out_f, _ = igl.marching_cubes(values, corners, int(shape[0]), int(shape[1]), int(shape[2]), 0.5)
    # outward, like a modelled body: rules that read which way a triangle faces (the lines
    # through the neck enter by a front-facing wall) saw the inside-out surface igl returns
    # as all walls entered from within
    corner = out_v[out_f]
    if np.einsum("ij,ij->i", corner[:, 0], np.cross(corner[:, 1], corner[:, 2])).sum() < 0:
        out_f = np.ascontiguousarray(out_f[:, ::-1])
    return np.ascontiguousarray(out_v @ frame.T + centre), out_f


#: principal axes this near the file's are taken as the file's (:func:`principal_frame`)
AXIS_SNAP_DEG = 15.0


def principal_frame(points: np.ndarray):
    """``(centre (3,), axes (3, 3))``: the points' mean and principal axes (columns, largest
    spread first), each pointing where the points reach farther (the sign of their third
    moment), right-handed.  They turn with the points: a grid laid along them cuts a turned
    copy of a shape as it cuts the shape.  Axes each within ``AXIS_SNAP_DEG`` of one of the
    file's are the file's (signed, right-handed): a character stood along them, facing any
    of them, is cut along its own axes, not along a lean its silhouette gives them."""
    centre = points.mean(axis=0)
    d = points - centre
    spread, axes = np.linalg.eigh(d.T @ d)
    axes = axes[:, np.argsort(-spread, kind="stable")]
    skew = ((d @ axes) ** 3).sum(axis=0)
    axes = axes * np.where(skew < 0, -1.0, 1.0)
    if np.linalg.det(axes) < 0:
        axes[:, 2] = -axes[:, 2]
    # a character stands in its file along the file's axes, whatever way it faces: its
    # principal axes lean a few degrees with a ponytail or a bag, the file's do not
    snapped = np.where(np.abs(axes) >= np.cos(np.radians(AXIS_SNAP_DEG)), np.sign(axes), 0.0)
    if np.allclose(np.abs(snapped).sum(axis=0), 1) and np.allclose(np.abs(snapped).sum(axis=1), 1) \
            and np.linalg.det(snapped) > 0:
        axes = snapped
    return centre, axes
