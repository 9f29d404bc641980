"""Rays cast at a triangle mesh: where each one crosses the surface.

One caster, :func:`cast_rays`, with the choices its users make explicit:

* ``first``: each ray's first crossing only (the joints' rays, :mod:`asetransfer.stages.joints`),
  or every crossing (the body points, :mod:`asetransfer.humanoid.body_points`, keep one exit
  of their own choosing; the landmarks measure a section's depth from all of them);
* ``behind``: where a ray starts, as a distance behind its origin: 0 for a ray, a length
  beyond the mesh (or ``inf``, exact test only) for the whole line through the origin;
* ``exact``: the crossing test.  libigl's (Moeller and Trumbore 1997: ``igl.AABB`` for first
  crossings, ``igl.ray_mesh_intersect`` for all) counts crossings at ``t > 0`` from the start
  and gives its coordinates in single precision.  The exact test sees the line along itself:
  a triangle is crossed when the three signed areas the line makes with its edges share a
  sign (edges and corners included, no tolerance), and the barycentric coordinates are
  those areas over their sum.  It costs R x F work in numpy: for a few lines on part of a
  mesh, where a crossing must not depend on a tolerance (a cross-section's depth).

Directions are used as given: ``t`` is in units of their length.  Normalising them here
would move libigl's coordinates in their last bits, so a caller that measures lengths
normalises first.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class RayHits:
    """Crossings of rays with a mesh, one row a crossing, grouped by ray in the rays' order
    (each ray's in the order of its test: libigl's by ``t``, the exact test's by triangle).

    ``ray`` (H,) the ray crossing, ``face`` (H,) the triangle crossed, ``bary`` (H, 3) the
    crossing's barycentric coordinates in it, ``t`` (H,) where it lies along the ray:
    ``origin + t * direction`` (negative behind the origin), ``point`` (H, 3) the crossing
    (libigl's: ``start + t_start * direction`` from the ray's start; the exact test's:
    ``bary`` over the triangle's corners).
    """

    ray: np.ndarray
    face: np.ndarray
    bary: np.ndarray
    t: np.ndarray
    point: np.ndarray


def cast_rays(vertices: np.ndarray, faces: np.ndarray, origins: np.ndarray, directions: np.ndarray, *,
              first: bool, behind: float = 0.0, exact: bool = False) -> RayHits:
    """Where the rays ``origins + t * directions`` cross the triangles, for ``t >= -behind``.

    Parameters
    ----------
    vertices : (n, 3); faces : (F, 3).
    origins, directions : (R, 3) each ray's origin and direction (used as given).
    first : only each ray's first crossing, the one of smallest ``t`` (the first of equals
        in the test's order); else every crossing.
    behind : each ray starts this far behind its origin, in units of its direction: 0 a ray,
        ``inf`` the whole line (exact test only: libigl needs a start, so pass a length
        beyond the mesh, twice its extent say).
    exact : the exact test (module docstring) instead of libigl's.

    Returns
    -------
    :class:`RayHits`.
    """
    V = np.ascontiguousarray(vertices, dtype=np.float64)
    F = np.ascontiguousarray(faces, dtype=np.int64)
    origins = np.ascontiguousarray(origins, dtype=np.float64).reshape(-1, 3)
    directions = np.ascontiguousarray(directions, dtype=np.float64).reshape(-1, 3)
    if exact:
        return _exact_hits(V, F, origins, directions, first, behind)
    if not np.isfinite(behind):
        raise ValueError("libigl's rays need a finite start: pass a length beyond the mesh as `behind`")
    # a ray from its origin takes no arithmetic: its start is the origin, bit for bit
    starts = origins if behind == 0 else np.ascontiguousarray(origins - behind * directions)
    if first:
        return _first_hits(V, F, starts, directions, behind)
    return _all_hits(V, F, starts, directions, behind)


def _first_hits(V: np.ndarray, F: np.ndarray, starts: np.ndarray, directions: np.ndarray,
                behind: float) -> RayHits:
    """Each ray's first crossing by libigl's AABB tree (built for this call)."""
    import igl  # on use: the library loads without libigl

    tree = igl.AABB()
    tree.init(V, F)
    face, t, uv = tree.intersect_ray_first(V, F, starts, directions)
    hit = face >= 0
    bary = np.column_stack([1.0 - uv[hit, 0] - uv[hit, 1], uv[hit, 0], uv[hit, 1]])
    point = starts[hit] + t[hit, None] * directions[hit]
    return RayHits(np.flatnonzero(hit), face[hit].astype(np.int64), bary, t[hit] - behind, point)


def _all_hits(V: np.ndarray, F: np.ndarray, starts: np.ndarray, directions: np.ndarray,
              behind: float) -> RayHits:
    """Every crossing of each ray by ``igl.ray_mesh_intersect`` (sorted by ``t``)."""
    import igl

    rows = []
    for r in range(len(starts)):
        for face, t, u, v in igl.ray_mesh_intersect(starts[r], directions[r], V, F) or []:
            rows.append((r, face, t, u, v))
    ray, face = (np.array([row[k] for row in rows], dtype=np.int64) for k in (0, 1))
    t, u, v = (np.array([row[k] for row in rows], dtype=np.float64) for k in (2, 3, 4))
    bary = np.column_stack([1.0 - u - v, u, v]).reshape(-1, 3)
    point = starts[ray] + t[:, None] * directions[ray]
    return RayHits(ray, face, bary, t - behind, point)


def _exact_hits(V: np.ndarray, F: np.ndarray, origins: np.ndarray, directions: np.ndarray, first: bool,
                behind: float) -> RayHits:
    """:func:`cast_rays` by the exact test, one ray at a time over every triangle."""
    corners = V[F]  # (F, 3, 3)
    parts = []
    for r, (origin, direction) in enumerate(zip(origins, directions)):
        k, bary = _line_crossings(corners, origin, direction)
        # column by column, each a (K, 3) sum: the rounding of a coordinate summed on its own
        point = np.column_stack([(bary * corners[k][:, :, axis]).sum(axis=1) for axis in range(3)])
        t = ((point - origin) @ direction) / (direction @ direction)
        keep = np.flatnonzero(t >= -behind)
        if first and len(keep):
            keep = keep[[int(np.argmin(t[keep]))]]
        parts.append((np.full(len(keep), r, dtype=np.int64), k[keep], bary[keep], t[keep], point[keep]))
    if not parts:
        return RayHits(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, 3)), np.zeros(0), np.zeros((0, 3)))
    return RayHits(*(np.concatenate(column) for column in zip(*parts)))


def _line_crossings(corners: np.ndarray, origin: np.ndarray, direction: np.ndarray):
    """The triangles the whole line ``origin + t * direction`` crosses, by the exact test.

    Seen along the line (its corners slid along it onto the coordinate plane most nearly
    across it, the line at 0), a triangle is crossed when the signed areas
    ``w_i = a_i x b_i`` of the line with its edges ``(a_i, b_i)`` (the corners opposite
    corner ``i``) are all >= 0 or all <= 0, their sum non-zero; the crossing's barycentric
    coordinates are ``w_i / sum(w)``.

    Parameters
    ----------
    corners : (F, 3, 3) each triangle's corners; origin, direction : (3,).

    Returns
    -------
    (K,) the triangles crossed, in order, and (K, 3) the crossings' barycentric coordinates.
    """
    axis = int(np.argmax(np.abs(direction)))
    across = [k for k in range(3) if k != axis]
    relative = corners - origin
    flat = relative[:, :, across]  # (F, 3, 2)
    if np.count_nonzero(direction) > 1:  # a line along a coordinate axis needs no slide (its coordinates stay exact)
        flat = flat - relative[:, :, [axis]] * (direction[across] / direction[axis])
    # twice the signed area the line makes with each edge: all of one sign inside
    a, b = flat[:, [1, 2, 0]], flat[:, [2, 0, 1]]
    w = a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]  # (F, 3)
    area = w.sum(axis=1)
    inside = (np.abs(area) > 0) & ((w >= 0).all(axis=1) | (w <= 0).all(axis=1))
    k = np.flatnonzero(inside)
    return k, w[k] / area[k, None]
