"""The throat and the nape: where the head ends, on the body's mid-plane, in front and behind.

The head's landmarks (top, nose, ears, back) say where the head is, not where it ends: a fit
that holds only them stretches a source's head over a cartoon's (the Kenney zombie's head is a
third of its height) and its head joint lands in the middle of the head, 11 %H above the
artist's, at the head's base.  Lines cast front to back on the mid-plane, from ``NECK_FROM`` of
the way from the crotch to the nose up to the nose, cross the chest, the neck and the head: the
body is deep at the chest, shallow at the neck, deep again at the head.  Followed down from the
nose, the head ends at the first line no deeper than the neck's shallowest plus ``HEAD_END`` of
the way to the nose's line (the neck of a mannequin is a cone and of a cartoon a stub: its
shallowest line lies at its foot on one and its top on the other, where the head ends lies
under the chin on both).  The line's front is the throat, its back the nape.  A chibi's head
sits on its body without a neck: its head is ``HEAD_ON_BODY`` deeper than the body under it,
and ends where the body begins.  A body without a neck (no line ``NECK_RISE`` deeper both
above and below the shallowest, nor a head that much deeper: Blender's metaball bodies) has
neither.  Automatic markers
link them only between characters whose heads differ in proportion, taller and wider, or
between big heads (:func:`~asetransfer.stages.markers.automatic_markers`).
"""
from __future__ import annotations

import numpy as np

from ...geometry.rays import cast_rays
from .frame import BodyFrame

#: lines cast between the lowest height looked at and the nose's
LINES = 48
#: the neck is looked for above this fraction of the way from the crotch to the nose (a
#: cartoon's neck at 0.55 of it, a MakeHuman body's at 0.8; the waist below can be shallower
#: than a thick neck)
NECK_FROM = 0.4
#: without a crotch (thighs joined), its height above the ground stands at this fraction of the height
NO_CROTCH = 0.45
#: a neck: lines this much deeper (a fraction of the shallowest's depth) above and below the
#: shallowest (measured: 1.4-3.3 above and 1.45-2.25 below on the dev bodies, fixtures and production
#: humans; Blender's metaball bodies at most 1.3 on one side only)
NECK_RISE = 0.2
#: a head this much deeper than the shallowest line below it (a fraction of that line's depth)
#: sits on the body without a neck (KayKit's chibis 0.88-1.28 over their trunks; Blender's
#: metaball bodies, deeper from the chest up, at most 0.33)
HEAD_ON_BODY = 0.6
#: the head ends at the first line, from the nose down, no deeper than the neck's shallowest
#: plus this fraction of the way to the nose's line
HEAD_END = 0.25
#: triangles this near the mid-plane (a fraction of the body's height) are tested against the lines
PLANE_SLACK = 1e-6


def throat_and_nape(vertices: np.ndarray, faces: np.ndarray, frame: BodyFrame, mid: float, crotch: float | None,
                    nose: float) -> dict:
    """The throat and the nape (module docstring), ``name -> (face, bary)``.

    Parameters
    ----------
    vertices : (N, 3); faces : (F, 3) the body's surface.
    frame : its :class:`~.frame.BodyFrame`; mid : the mid-plane's offset along its left.
    crotch, nose : the crotch's and the nose's heights along its up (crotch None: none found,
        ``NO_CROTCH`` of the height above the ground stands for it).
    """
    low = float(frame.ground @ frame.up) + NO_CROTCH * frame.height if crotch is None else crotch
    return neck(vertices, faces, (frame.left, frame.up, frame.forward), mid, low + NECK_FROM * (nose - low), nose)


def neck(vertices: np.ndarray, faces: np.ndarray, axes: tuple, mid: float, low: float, high: float):
    """The throat and the nape between the heights ``low`` and ``high`` (module docstring).

    Parameters
    ----------
    vertices : (N, 3); faces : (F, 3) the body's surface.
    axes : ``(left, up, forward)``, (3,) unit axes of the body frame.
    mid : the mid-plane's offset along ``left`` (the plane ``x @ left = mid``).
    low, high : the heights along ``up`` between which lines are cast (the top one at ``high``).

    Returns
    -------
    ``{"throat": (face, bary), "nape": (face, bary)}`` (bary (3,)), or ``{}`` when the lines
    find no neck below the head.
    """
    left, up, forward = (np.asarray(a, dtype=np.float64) for a in axes)
    if not high > low:
        return {}
    # only the triangles the mid-plane cuts between the heights can be crossed (10x faster);
    # a symmetric body's midline vertices lie on the plane, within rounding once the body is
    # turned and scaled, so the triangles within rounding of it count too (without, most
    # lines through a MakeHuman body turned and scaled x37 missed a triangle and measured nothing)
    across, rise = vertices[faces] @ left, vertices[faces] @ up
    slack = PLANE_SLACK * float(np.ptp(rise))
    strip = np.flatnonzero((across.min(axis=1) <= mid + slack) & (across.max(axis=1) >= mid - slack)
                           & (rise.max(axis=1) >= low) & (rise.min(axis=1) <= high))
    levels = np.linspace(low, high, LINES + 1)[1:]
    ends = _front_and_back(vertices, faces[strip], mid * left + levels[:, None] * up, forward)
    depth = np.array([np.nan if e is None else e[0][2] - e[1][2] for e in ends])
    if np.isnan(depth[-1]) or np.isnan(depth).all():
        return {}
    if not _has_neck(depth):
        return {}
    end = np.nanmin(depth) + HEAD_END * (depth[-1] - np.nanmin(depth))
    below_head = np.flatnonzero(depth <= end)
    if not len(below_head):
        return {}
    i = int(below_head[-1])
    found = ends[i]
    if i + 1 < len(depth) and not np.isnan(depth[i + 1]):
        # between the two lines, where the depth reaches the head's end: the lines are 0.6 %H
        # apart, and a one-line step moved the throat that much between two meshings of a body
        level = levels[i] + (end - depth[i]) / (depth[i + 1] - depth[i]) * (levels[i + 1] - levels[i])
        found = _front_and_back(vertices, faces[strip], (mid * left + level * up)[None], forward)[0] or found
    return {"throat": (int(strip[found[0][0]]), found[0][1]), "nape": (int(strip[found[1][0]]), found[1][1])}


def _has_neck(depth: np.ndarray) -> bool:
    """Whether the lines' depths (bottom to top, NaN where a line does not measure) dip at a neck:
    the shallowest line has lines ``NECK_RISE`` deeper both above it (the head) and below it (the
    chest), or ``HEAD_ON_BODY`` deeper above it (a head on a body without a neck).  A body
    sculpted without a neck (Blender metaballs: deeper all the way up to the head, or all the
    way down) has no place where the head ends, and no throat or nape."""
    shallowest = int(np.nanargmin(depth))
    above, below = depth[shallowest + 1:], depth[:shallowest]
    deeper = (1.0 + NECK_RISE) * depth[shallowest]
    return bool(np.any(above >= deeper) and np.any(below >= deeper)
                or np.any(above >= (1.0 + HEAD_ON_BODY) * depth[shallowest]))


def _front_and_back(vertices: np.ndarray, faces: np.ndarray, origins: np.ndarray, forward: np.ndarray) -> list:
    """For each line ``origins[k] + t * forward``, its first and last crossings with ``faces``
    as ``((face, bary, along), (face, bary, along))`` (``along`` the crossing's coordinate along
    ``forward``), or None where the line does not enter through a front face and leave through a
    back one: a line through a cut (a body in pieces, open at the neck) meets a wall from inside."""
    hits = cast_rays(vertices, faces, origins, np.tile(forward, (len(origins), 1)), first=False,
                     behind=np.inf, exact=True)
    along = hits.point @ forward
    corner = vertices[faces[hits.face]]
    facing = np.cross(corner[:, 1] - corner[:, 0], corner[:, 2] - corner[:, 0]) @ forward
    out = []
    for line in range(len(origins)):
        mine = np.flatnonzero(hits.ray == line)
        front, back = (mine[np.argmax(along[mine])], mine[np.argmin(along[mine])]) if len(mine) >= 2 else (0, 0)
        if len(mine) < 2 or not facing[front] > 0 > facing[back]:
            out.append(None)
            continue
        out.append(tuple((int(hits.face[k]), hits.bary[k], float(along[k])) for k in (front, back)))
    return out


def nearest_corner(faces: np.ndarray, point: tuple) -> int:
    """The corner of ``point``'s triangle (``(face, bary)``) it lies nearest to."""
    face, bary = point
    return int(faces[face][int(np.argmax(bary))])
