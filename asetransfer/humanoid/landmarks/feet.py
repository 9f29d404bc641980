"""The soles, heels and toe tips of a standing body.

A foot is the surface within ``FOOT_REACH`` of its toe tip (the foot's extremity) along the
surface, its sole the part within ``HEEL_BAND`` of the foot's lowest point.  The heel is the
middle of the sole's rearmost strip, ``HEEL_STRIP`` deep along the body's forward axis (a
flat heel has no single rearmost point): on the vertices (:func:`rearmost`) and, for coarse
bodies, cut out of the triangles (:func:`sole_end_point`, which with the forward axis reversed
gives the toe tip between vertices: the middle of the sole's front strip).
"""
from __future__ import annotations

import numpy as np

from ...geometry.slicing import clipped_middle
from .surface import BodySurface

# where the rules look, as fractions of the body height H (the package docstring)
FOOT_REACH = 0.2        # a foot: surface within this geodesic distance of its toe tip
HEEL_BAND = 0.05        # the sole: this close to the foot's lowest point
HEEL_STRIP = 0.01       # the heel: the middle of the sole's rearmost strip this deep
# the leg over its foot: its section this high over the ground, within LEG_REACH of the foot's
# line; it stands over the back of the foot (0.05-0.46 of the way from heel to toe tip on every
# body read the right way round: dev bodies 0.09-0.17, fixtures 0.20-0.28, held-out Sintel and
# Sophia 0.35-0.46), and a foot read with it at LEG_AHEAD or more is read backwards (a chibi's
# boot whose extremity is its back: KayKit's barbarian 0.72-0.75)
LEG_LEVEL = 0.10
LEG_REACH = 0.06
LEG_AHEAD = 0.6


def foot(surface: BodySurface, toe: int, height: float) -> np.ndarray:
    """The vertices of the foot whose toe tip is ``toe``."""
    return np.flatnonzero(surface.distance_from(toe) < FOOT_REACH * height)


def sole(surface: BodySurface, toe: int, up: np.ndarray, height: float) -> np.ndarray:
    """The vertices of a foot near its lowest point (along ``up``); the lowest at least (a
    body far from the file's origin and small beside it: the band rounds away)."""
    region = foot(surface, toe, height)
    h = surface.vertices[region] @ up
    return region[h <= h.min() + HEEL_BAND * height]


def rearmost(v: np.ndarray, sole_vertices: np.ndarray, forward: np.ndarray, height: float) -> int:
    """The heel, once the facing is known: the middle of the sole's rearmost strip (a flat
    heel has no single rearmost point); ``sole_vertices`` from :func:`sole`."""
    f = v[sole_vertices] @ forward
    rear = sole_vertices[f < f.min() + HEEL_STRIP * height]
    return int(rear[np.argmin(np.linalg.norm(v[rear] - v[rear].mean(axis=0), axis=1))])


def leg_over_foot(v: np.ndarray, toe: np.ndarray, heel: np.ndarray, up: np.ndarray, ground: float,
                  height: float) -> float | None:
    """Where the leg stands over its foot, as a fraction of the way from ``heel`` (3,) to
    ``toe`` (3,) along the ground: the centroid of the surface ``v`` (V, 3) ``LEG_LEVEL`` over
    the ``ground`` (its height along ``up``) within ``LEG_REACH`` of the foot's line; None
    when no surface is there (fractions of ``height``)."""
    step = (toe - heel) - ((toe - heel) @ up) * up
    length = float(np.linalg.norm(step))
    if not length > 0:
        return None
    along = step / length
    rel = v - 0.5 * (toe + heel)
    across = rel - np.outer(rel @ along, along) - np.outer(rel @ up, up)
    level = np.abs(v @ up - ground - LEG_LEVEL * height) < 0.01 * height
    near = level & (np.linalg.norm(across, axis=1) < LEG_REACH * height) & (np.abs(rel @ along) < 0.6 * length)
    if near.sum() < 3:
        return None
    return float((v[near].mean(axis=0) - heel) @ along / length)


def sole_end_point(surface: BodySurface, toe: int, up: np.ndarray, forward: np.ndarray, height: float):
    """The heel of :func:`rearmost` between vertices (``forward`` the body's; the toe tip
    with it reversed): ``(face, bary)`` on the surface, or None.

    The same strip (the rearmost ``HEEL_STRIP`` of the sole, ``HEEL_BAND`` above the foot's
    lowest point along ``up``), cut out of the triangles exactly, and the surface point nearest
    its area-weighted centroid.  On the dev bodies decimated to 2k vertices the strip holds
    6-9 vertices (15-42 dense) and the vertex nearest their middle was 0.3-1.1 %H off the
    dense body's; this point is within 0.3 %H of the dense body's point.  (The two rules
    differ by 0.3-0.5 %H on a dense body: its vertices are not evenly spread over the heel.)
    The toe tip, the foot's extremity, is one toe or another on a coarse body (the heavy dev
    body at 3k vertices: 0.40 and 1.44 %H off the dense body's on the two feet); the front
    strip's middle is between the first toes on every body.
    """
    v, faces = surface.vertices, surface.faces
    foot = surface.distance_from(toe) < FOOT_REACH * height
    f = faces[foot[faces].any(axis=1)]
    ids = np.flatnonzero(foot[faces].any(axis=1))
    h, fw = v @ up, v @ forward
    top = h[foot].min() + HEEL_BAND * height
    # the rearmost point of the band: a corner inside it or where an edge crosses its top
    hh, ff = h[f], fw[f]  # (K, 3)
    rear = np.where(hh <= top, ff, np.inf).min(initial=np.inf)
    a, b = hh, np.roll(hh, -1, axis=1)
    cross = (a - top) * (b - top) < 0
    t = np.where(cross, (top - a) / np.where(cross, b - a, 1.0), 0.0)
    at = ff + t * (np.roll(ff, -1, axis=1) - ff)
    rear = min(rear, np.where(cross, at, np.inf).min(initial=np.inf))
    if not np.isfinite(rear):
        return None
    return clipped_middle(v, faces, ids, ((up, top), (forward, rear + HEEL_STRIP * height)))
