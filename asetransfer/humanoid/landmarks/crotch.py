"""The crotch: where the vertical midway between the thighs leaves the body's underside.

The highest point of the shortest path between the toe tips is the fork of the legs.  The
thighs' cross-sections ``CROTCH_DEPTH`` below it (surface within ``THIGH_REACH`` of the fork)
give the front-to-back place: the vertical line midway between their middles, followed down
from ``PELVIS_DEPTH`` above the fork, leaves the body at the crotch.  On the vertices the
sections are the thighs' vertices in a ``RING_BAND`` thick ring; between vertices (coarse
bodies) they are cut out of the triangles exactly (:func:`~asetransfer.geometry.slicing.
section`).  Thighs joined above the fork (a body sculpted as one volume) have no crotch on
the surface (:func:`_joined_above`).  All lines are cast in body coordinates by the exact
test of :func:`~asetransfer.geometry.rays.cast_rays`.
"""
from __future__ import annotations

import numpy as np

from ...geometry import geodesic
from ...geometry.rays import cast_rays
from ...geometry.slicing import section
from .frame import BodyFrame
from .surface import BodySurface

# where the rules look, as fractions of the body height H (the package docstring)
# the crotch: the thighs' cross-sections this far below the fork of the legs (0.06-0.14
# put the dev bodies' crotch within 1.3 %H of each other, whole or cut at the knees), a
# ring this thick, on surface within THIGH_REACH of the fork; the line midway between them
# is followed down from PELVIS_DEPTH above the fork (inside the pelvis)
CROTCH_DEPTH = 0.12
RING_BAND = 0.005
THIGH_REACH = 0.3
PELVIS_DEPTH = 0.05
# thighs joined above the fork (a heavy body remeshed or sculpted as one volume, the
# thighs fused down to the knees): the fork is not the crotch.  Horizontal sections
# JOINED_CHECKS above the fork, within THIGH_SPAN either side of it, are cut by lines front
# to back; joined thighs leave each at most JOINED_RATIO as deep on the midline as where it
# is deepest (creased in front and behind, or filled in short of the full depth).  Above a
# crotch it is one trunk: 0.87-1.0 on the dev bodies and fixtures (a cut through a body in
# pieces lowers one section only); thighs fused to the knees 0.17 (a Blender-built heavy
# body, whose crotch found at its knees put its hips 14 %H low) and 0.56-0.63 (the heavy
# fixture with flesh filling the gap, a test)
JOINED_CHECKS = (0.05, 0.07, 0.09)
JOINED_RATIO = 0.75
THIGH_SPAN = 0.15


def crotch(surface: BodySurface, frame: BodyFrame, feet: list):
    """The crotch: where the vertical midway between the thighs meets the underside of the body.

    The highest point of the shortest path between the toes finds the fork of the legs, but
    on a flat saddle it slides front to back with the route: 7.9 %H on the heavy dev body cut
    at the knees, whose path climbed the backs of the legs.  The thighs' cross-sections
    ``CROTCH_DEPTH`` below that point fix the front-to-back place instead: the vertical line
    midway between their middles, followed down from inside the pelvis, leaves the body at
    the crotch.

    Returns the vertex the rule gives on the vertices (the thighs' vertices within
    ``RING_BAND`` of the section, the vertex of the hit triangle nearest the hit) and the
    point it gives between them, ``(face, bary)`` (the exact section, the hit itself; None
    when the rule falls back on the fork).  On the dev bodies decimated to 2k vertices the
    band holds 2-9 vertices a thigh (10-88 dense) and the vertex was 0.3-1.7 %H off the dense
    body's crotch; the point is within 0.33 %H of the dense body's point.  ``(None, None)``
    where the thighs are joined above the fork (:func:`_joined_above`): the crotch lies
    inside the body there, and no point of the surface stands for it.
    """
    v, h = surface.vertices, frame.height
    between = geodesic.shortest_path(surface.graph, feet[0], feet[1])
    fork = int(between[np.argmax(v[between] @ frame.up)])
    c = frame.coordinates(v)  # (left, up, forward) / H
    # the thighs: surface near the fork (not a hand hanging beside them), on either side
    near = surface.distance_from(fork) < THIGH_REACH * h
    if _joined_above(c, surface.faces[near[surface.faces].any(axis=1)], c[fork]):
        return None, None
    level = c[fork, 1] - CROTCH_DEPTH
    band = c[near & (np.abs(c[:, 1] - level) < RING_BAND)]
    cut = section(c, surface.faces[near[surface.faces].any(axis=1)], 1, level)
    vertex, point = fork, None
    hit = _midway_hit(c, surface.faces, band, c[fork])
    if hit is not None:
        face = surface.faces[hit[0]]
        vertex = int(face[np.argmin(np.linalg.norm(c[face] - hit[1], axis=1))])
    hit = _midway_hit(c, surface.faces, cut, c[fork])
    if hit is not None:
        point = (hit[0], hit[2])
    return vertex, point


def _joined_above(c: np.ndarray, faces: np.ndarray, fork: np.ndarray) -> bool:
    """Whether the legs stay joined above the ``fork`` (3,): every section ``JOINED_CHECKS``
    above it is shallower on the midline than ``JOINED_RATIO`` of its deepest (creased front
    and back, or filled in short of the full depth).  ``c`` (N, 3) vertex coordinates
    (left, up, forward) / H; ``faces`` the surface around the fork.  15-64 ms on the dev
    bodies."""
    lefts = fork[0] + np.linspace(-THIGH_SPAN, THIGH_SPAN, 31)
    forward = np.tile([0.0, 0.0, 1.0], (len(lefts), 1))
    for up in JOINED_CHECKS:
        # lines front to back across the section, its depth at each the span of the crossings
        origins = np.column_stack([lefts, np.full(len(lefts), fork[1] + up), np.zeros(len(lefts))])
        hits = cast_rays(c, faces, origins, forward, first=False, behind=np.inf, exact=True)
        depth = []
        for line in range(len(lefts)):
            along = hits.point[hits.ray == line, 2]
            depth.append(float(np.ptp(along)) if len(along) else 0.0)
        if not (max(depth) > 0 and depth[len(depth) // 2] < JOINED_RATIO * max(depth)):
            return False
    return True


def _midway_hit(c: np.ndarray, faces: np.ndarray, ring: np.ndarray, fork: np.ndarray):
    """Where the vertical line midway between the thighs' cross-sections ``ring`` (K, 3) leaves
    the body's underside below ``PELVIS_DEPTH`` above the ``fork`` (3,): (face, (3,) point,
    (3,) bary), or None.  All in body coordinates (left, up, forward) / H, like ``c`` (N, 3)."""
    middles = []
    for side in (1.0, -1.0):
        thigh = ring[side * (ring[:, 0] - fork[0]) > 0][:, [0, 2]]
        if len(thigh) == 0:
            return None
        # the middle of the bounding box: a round section's, whatever the vertex density
        middles.append(0.5 * (thigh.min(axis=0) + thigh.max(axis=0)))
    left, forward = np.mean(middles, axis=0)
    line = cast_rays(c, faces, np.array([[left, 0.0, forward]]), np.array([[0.0, 1.0, 0.0]]),
                     first=False, behind=np.inf, exact=True)
    height = line.point[:, 1]
    below = np.flatnonzero(height < fork[1] + PELVIS_DEPTH)
    if len(below) == 0:
        return None
    top = below[int(np.argmax(height[below]))]
    return int(line.face[top]), np.array([left, height[top], forward]), line.bary[top]
