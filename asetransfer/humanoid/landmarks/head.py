"""The head's landmarks: nose tip, back of the head and ears, and the head top between vertices.

In the head's geodesic neighbourhood (the surface within ``HEAD_REACH`` of the head top,
:mod:`.frame`), in the body frame: the nose tip is the most forward point of the head on
its mid-plane (within ``MIDLINE_BAND``), no more than ``NOSE_DEPTH`` below the head top;
the back of the head is straight behind the nose, on the head's outside; the ears are the
points farthest left and right at the nose's height (within ``EAR_BAND``) around the middle of
the head's depth (within ``EAR_DEPTH`` of it: hair buns behind reach as far out).  No chin: below
the nose the most forward midline point is the chin on a lean body and the neck on a heavy
one (:func:`head_rules`).

Between vertices (for coarse bodies): the head top is the middle of the head's topmost
``HEAD_STRIP``, the ears the middles of its outermost ``EAR_STRIP`` at the nose's height
(both cut out of the triangles, :mod:`~asetransfer.geometry.slicing`), the back of the head
where the line from behind to the nose first meets the head's triangles
(:mod:`~asetransfer.geometry.rays`).
"""
from __future__ import annotations

import numpy as np

from ...geometry.rays import cast_rays
from ...geometry.slicing import clipped_middle, section
from ...geometry.topology import used_vertices
from .frame import HEAD_REACH, HEAD_STRIP, MIDLINE_BAND, BodyFrame
from .surface import BodySurface

# where the rules look, as fractions of the body height H (the package docstring)
NOSE_DEPTH = 0.15       # the nose lies within this distance below the head top
EAR_BAND = 0.02         # ears and back of the head: at the nose's height, +- this
EAR_STRIP = 0.005       # an ear between vertices: the middle of the head's outermost strip this deep
EAR_DEPTH = 0.25        # ears: within this share of the head's depth of its middle (nose to back)


def head_top_point(surface: BodySurface, top: int, frame: BodyFrame):
    """The head top (:mod:`.frame`) between vertices: the middle of the head's topmost
    ``HEAD_STRIP``, cut out of the triangles exactly (``top``: the head top's vertex).  On a
    coarse body the strip holds a few vertices, and the one nearest their middle was 0.7-1.8
    %H off the dense body's (the dev bodies at 2k vertices).  Where that point lies off the
    head top's mid-plane (two hair buns or horns above the crown: the middle of their tops is
    on one of them) the strip is the head's part within ``MIDLINE_BAND`` of the plane, as for
    the vertex."""
    v, faces, up, height = surface.vertices, surface.faces, frame.up, frame.height
    head = surface.distance_from(top) < HEAD_REACH * height
    ids = np.flatnonzero(head[faces].any(axis=1))
    point = _topmost_strip(v, faces, ids, up, height)
    if point is None or abs((point[1] @ v[faces[point[0]]] - v[top]) @ frame.left) <= MIDLINE_BAND * height:
        return point
    across = v[faces[ids]] @ frame.left - v[top] @ frame.left
    ids = ids[(np.abs(across) < MIDLINE_BAND * height).any(axis=1)]
    return _topmost_strip(v, faces, ids, up, height) if len(ids) else point


def _topmost_strip(v, faces, ids, up, height):
    """The middle of the topmost ``HEAD_STRIP`` of the triangles ``faces[ids]`` along ``up``."""
    highest = float((v[faces[ids]] @ up).max())
    return clipped_middle(v, faces, ids, ((-up, -(highest - HEAD_STRIP * height)),))


def head_rules(surface: BodySurface, frame: BodyFrame, head: int):
    """Nose tip, back of the head and ears, in the head's geodesic neighbourhood: their
    vertices by name, and the back of the head and the ears between vertices, by name,
    ``(face, bary)`` (:func:`_back_of_head`, :func:`_ear_points`).

    No chin: below the nose the most forward midline point is the chin on a lean
    body and the neck on a heavy one (2 %H apart on the heavy dev male).
    """
    v, h = surface.vertices, frame.height
    region = np.flatnonzero(surface.distance_from(head) < HEAD_REACH * h)
    rel = v[region] - v[head]
    up, fwd, lat = rel @ frame.up, rel @ frame.forward, rel @ frame.left
    midline = np.abs(lat) < MIDLINE_BAND * h
    upper = midline & (up > -NOSE_DEPTH * h)
    if not upper.any():
        return {}, {}
    nose = int(np.argmax(np.where(upper, fwd, -np.inf)))
    out, points = {"nose_tip": region[nose]}, {}
    level = np.abs(up - up[nose]) < EAR_BAND * h
    if (level & midline).any():
        # at the nose's height on the back of the head: the rearmost point of the band
        # slid 0.9 %H down the flat back of the head with a 0.8 degree tilt of the frame
        back = level & midline
        back &= fwd < 0.5 * (fwd[back].min() + fwd[nose])  # the back half of the head
        hit = _back_of_head(surface, frame, region, v[region[nose]])
        if hit is not None:
            # on the outer surface: inner surfaces (a mouth's cavity, folds a decimator left)
            # lie nearer the line (the heavy dev body at 2k vertices: 5.7 %H in front of it)
            back &= fwd < (hit[1] - v[head]) @ frame.forward + EAR_BAND * h
            points["head_back"] = hit[0]
        # nearest that point on the mid-plane: a vertex and its mirror image tie on height
        miss = (up - up[nose]) ** 2 + lat ** 2
        if back.any():
            out["head_back"] = region[np.argmin(np.where(back, miss, np.inf))]
    # the ears: halfway between the nose and the back of the head, give or take EAR_DEPTH of
    # the head's depth (hair buns or a ponytail behind them reach as far out)
    rear = fwd[back].min() if "head_back" in out else fwd.min()
    depth = (rear, fwd[nose])
    level &= np.abs(fwd - 0.5 * (depth[0] + depth[1])) <= EAR_DEPTH * (depth[1] - depth[0])
    if level.any():
        out["ear.L"] = region[np.argmax(np.where(level, lat, -np.inf))]
        out["ear.R"] = region[np.argmin(np.where(level, lat, np.inf))]
        span = np.array(depth) + float(v[head] @ frame.forward)
        points.update(_ear_points(surface, frame, region, v[region[nose]], span))
    return out, points


def _ear_points(surface: BodySurface, frame: BodyFrame, region: np.ndarray, nose: np.ndarray,
                depth: np.ndarray) -> dict:
    """The ears between vertices, by name, ``(face, bary)``: the middle of the outermost
    ``EAR_STRIP`` of the head's triangles (those of the vertices ``region``) cut to the band
    ``EAR_BAND`` above and below the ``nose``, on either side, and to the middle of the head's
    depth (``depth``: the back of the head and the nose along the frame's forward,
    :func:`head_rules`)."""
    c = frame.coordinates(surface.vertices)  # (left, up, forward) / H: the strip is cut there
    ids = np.flatnonzero(np.isin(surface.faces, region).all(axis=1))
    f = surface.faces[ids]
    level = float(frame.coordinates(nose[None])[0, 1])
    low, high = level - EAR_BAND, level + EAR_BAND
    rear, front = (np.asarray(depth, dtype=np.float64) - float(frame.ground @ frame.forward)) / frame.height
    middle, reach = 0.5 * (rear + front), EAR_DEPTH * (front - rear)
    # the band's corners: the head's vertices in it and where its edges cross its bounds
    used = used_vertices(f)
    corners = np.concatenate([c[used][(c[used, 1] >= low) & (c[used, 1] <= high)],
                              section(c, f, 1, low), section(c, f, 1, high)])
    corners = corners[np.abs(corners[:, 2] - middle) <= reach, 0]
    if not len(corners):
        return {}
    left, up, forward = np.eye(3)
    band = ((up, high), (-up, -low), (forward, middle + reach), (-forward, -(middle - reach)))
    out = {}
    for name, sign in (("ear.L", 1.0), ("ear.R", -1.0)):
        outermost = float((sign * corners).max())
        point = clipped_middle(c, surface.faces, ids, (*band, (-sign * left, -(outermost - EAR_STRIP))))
        if point is not None:
            out[name] = point
    return out


def _back_of_head(surface: BodySurface, frame: BodyFrame, region: np.ndarray, nose: np.ndarray):
    """Where the line from behind straight to the ``nose`` tip first meets the head (the
    triangles of the vertices ``region``): ``((face, bary), point)``, or None when it meets
    nothing."""
    c = frame.coordinates(surface.vertices)  # (left, up, forward) / H: the line runs along forward
    inside = np.isin(surface.faces, region).all(axis=1)
    at = frame.coordinates(nose[None])[0]
    # the whole line through the nose, its first crossing along forward the rearmost: the
    # outside, seen from behind
    hit = cast_rays(c, surface.faces[inside], np.array([[at[0], at[1], 0.0]]), np.array([[0.0, 0.0, 1.0]]),
                    first=True, behind=np.inf, exact=True)
    if not len(hit.face):
        return None
    face = int(np.flatnonzero(inside)[hit.face[0]])
    bary = hit.bary[0]
    return (face, bary), bary @ surface.vertices[surface.faces[face]]
