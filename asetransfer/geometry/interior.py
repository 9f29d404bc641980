"""Points a hair outside a closed surface moved into it, to the middle of the part they miss.

A joint fitted into a thin part (an ear, a beak, a toe, a tail's tip) can land a fraction
of the part's thickness outside it: the fit is good to about that much.  Moved through the
nearest point of the surface along the way to it, the joint crosses the wall and stops at
the depth it had in the source, or halfway to the opposite wall when the part is thinner
than that.  Only joints of thin parts are so moved: :func:`depth_and_chord` tells how deep a
point lies and how thick the part is across it, the way its nearest skin point lies.
"""
from __future__ import annotations

import numpy as np

from .rays import cast_rays
from .surface import closest_points


def moved_inside(points: np.ndarray, depths: np.ndarray, vertices: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """(K, 3) each of the ``points`` (outside the surface) moved through its nearest surface
    point ``q``, along the direction ``u`` from the point to ``q``, to ``q + min(d, t / 2) u``:
    ``d`` its wanted depth, ``t`` the distance from ``q`` to the next wall along ``u`` (the part's
    thickness there; ``d`` when the ray leaves through a hole).

    Parameters
    ----------
    points : (K, 3) points outside the surface (not on it: the way in is the way to it).
    depths : (K,) wanted depths inside, > 0.
    vertices : (n, 3); faces : (F, 3) the surface.
    """
    points = np.asarray(points, np.float64).reshape(-1, 3)
    if len(points) == 0:
        return points.copy()
    vertices, faces = np.asarray(vertices, np.float64), np.asarray(faces)
    depths = np.asarray(depths, np.float64)
    face, bary, dist = closest_points(points, vertices, faces)
    near = np.einsum("kc,kcd->kd", bary, vertices[faces[face]])
    way = (near - points) / np.maximum(dist, 1e-300)[:, None]
    # the next wall matters within twice the depth: the rays cross only the triangles around the
    # points (a ray test builds its tree over every triangle it is given: 3 s on 1M)
    patch = faces[_around(vertices, faces, near, 2.0 * depths.max(initial=0.0))]
    # from just past the wall, so that the wall itself is not the first crossing
    step = 1e-6 * float(np.ptp(vertices, axis=0).max())
    hits = cast_rays(vertices, patch, near + step * way, way, first=True)
    thickness = np.full(len(points), np.inf)
    thickness[hits.ray] = hits.t + step
    depth = np.minimum(depths, 0.5 * thickness)
    return near + depth[:, None] * way


def _around(vertices: np.ndarray, faces: np.ndarray, points: np.ndarray, radius: float) -> np.ndarray:
    """(F,) bool: the triangles with a corner within ``radius`` (plus the longest edge) of any of the points."""
    edge = np.linalg.norm(vertices[faces[:, 1]] - vertices[faces[:, 0]], axis=1).max(initial=0.0)
    close = np.zeros(len(vertices), bool)
    for p in points:
        close |= np.einsum("nd,nd->n", vertices - p, vertices - p) <= (radius + edge) ** 2
    return close[faces].any(axis=1)


def depth_and_chord(points: np.ndarray, vertices: np.ndarray, faces: np.ndarray) -> tuple:
    """``(depth, chord)`` (K,) each: the distance from each of the (K, 3) ``points`` (inside the
    surface) to its nearest surface point, and the length of the chord through the point along
    that line (the depth plus the distance to the wall on the other side; inf through a hole):
    a finger joint's chord is the finger's thickness, a pelvis near the crotch's the body's height
    above it."""
    points = np.asarray(points, np.float64).reshape(-1, 3)
    face, bary, depth = closest_points(points, vertices, faces)
    if len(points) == 0:
        return depth, depth.copy()
    near = np.einsum("kc,kcd->kd", bary, np.asarray(vertices, np.float64)[np.asarray(faces)[face]])
    away = (points - near) / np.maximum(depth, 1e-300)[:, None]
    hits = cast_rays(vertices, faces, points, away, first=True)
    chord = np.full(len(points), np.inf)
    chord[hits.ray] = depth[hits.ray] + hits.t
    return depth, chord
