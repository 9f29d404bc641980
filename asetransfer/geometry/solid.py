"""The one solid a mesh's pieces make together, as a closed surface.

Production characters come in pieces: a robot's plates with gaps at the joints, joint
covers, a helmet, gear, a mannequin cut at every joint.  Rules that read a body's shape
along its surface (geodesic extremities) see each piece alone.  :func:`solid_surface`
gives them the body the pieces form: the generalised winding number of all pieces on a
grid (inside where it is at least a half: overlapping pieces add up, open shells count
by the solid angle they close), closed morphologically by a few cells so that gaps
narrower than that between pieces fill, and polygonised by marching cubes.
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

    v = np.ascontiguousarray(vertices, dtype=np.float64)
    f = np.ascontiguousarray(faces, dtype=np.int64)
    lo, hi = v[np.unique(f)].min(axis=0), v[np.unique(f)].max(axis=0)
    step = float(np.max(hi - lo)) / cells
    pad = closing + 2
    shape = np.ceil((hi - lo) / step).astype(np.int64) + 1 + 2 * pad
    axes = [lo[d] + step * (np.arange(shape[d]) - pad) for d in range(3)]
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
    return out_v, out_f
