"""The hands' landmarks: fingertips named thumb to pinky, and each hand's side.

The fingertips are the hand's extremities (the surface within ``HAND_REACH`` of the hand
tip, grown while its rim cuts a finger) seen from the middle of the body: nothing within
``FINGER_PROMINENCE`` along the surface is farther, and each is at least
``FINGER_SEPARATION`` along the surface from a farther one.  More than five such tips are
cut down by merging the corners of one blunt fingertip and leaving out bumps.  The thumb
is the one standing apart from the others when one does, else the one farthest from the
hand tip, along the surface when the fingers are curled next to it; with exactly four
others they are index to pinky in the order of the shortest chain through them, from the
end on the thumb's side across the hand.  A hand with another count names only its thumb.

Between vertices (coarse bodies), a fingertip is the middle of the finger's end, cut out of
its triangles (:func:`fingertip_point`).  A hand's side is the side of the foot it is
nearer along the surface (:func:`hand_sides`), so hands crossed over the body keep theirs.
"""
from __future__ import annotations

import itertools

import numpy as np

from ...geometry import geodesic
from ...geometry.slicing import clipped_middle
from .surface import BodySurface

FINGERS = ("index_tip", "middle_tip", "ring_tip", "pinky_tip")
# where the rules look, as fractions of the body height H (the package docstring)
HAND_REACH = 0.12       # a hand: surface within this geodesic distance of its tip
# ... grown by this step, up to this reach, while the hand's rim cuts a finger (:func:`_hand_and_tips`)
FINGER_REACH_STEP = 0.02
FINGER_REACH_MAX = 0.16
THUMB_MIN = 0.03        # a thumb tip lies at least this far from the hand tip (else along the surface)
# the thumb's tip is this many times farther from its nearest fingertip than any finger's from
# theirs, or it is not told by that (the dev and Blender-built bodies, the fixtures, the
# mannequins 1.8-3.9; Sintel's hands 1.7 and 2.2; the bunny's three-fingered mitts 1.06)
THUMB_APART = 1.5
# fingertips are this far apart along the surface at least (down one finger and up the
# next: >= 0.046 H on the fixtures and more on the dev bodies), while the corners of a
# blunt fingertip or a bump on a finger are nearer their fingertip (<= 0.022 H measured)
FINGER_SEPARATION = 0.03
# a fingertip is the farthest point from the middle of the body within this geodesic
# radius: less than a short thumb's length (0.025 H lost the cartoon fixture's thumb)
FINGER_PROMINENCE = 0.015
# a fingertip between vertices: the middle of the finger's end this deep, along the line
# from the middle of the hand (the thumb of the A-pose dev body at 3k vertices has two
# corners 1.5 %H apart; its vertex was 1.09 %H off the dense body's tip)
FINGER_STRIP = 0.005
# a hand tip found on the solid of a character's pieces is carried out along the hand to the
# farthest point of the character's own surface this far (fraction of H) beyond it and this
# near the hand's line: a solid's voxels lose fingers thinner than they are, and the gaps
# between them (Mesh2Motion's mannequin, its fingers chains of pieces: hand tips on the
# palm, 10 cm (5.5 %H) short of the fingertips; a hand is 0.10-0.11 H long)
SOLID_HAND_REACH = 0.08
SOLID_HAND_WIDTH = 0.04
# ... to a point this far (fraction of H) from the solid at least: the solid is cut on cells
# of 1 % of the largest side and closed over 2, so the surface it keeps lies within ~3 cells
SOLID_HAND_BEYOND = 0.025


def fingertips(surface: BodySurface, tip: int, height: float) -> dict:
    """The fingertips of the hand whose tip is ``tip``, by name.

    The fingertips are the hand's extremities seen from the middle of the body
    (:func:`_hand_tips`).  The thumb is the fingertip that stands apart, farthest from its
    nearest other fingertip, when one does (``THUMB_APART``) or the hand tip lies behind
    them all (a sleeve's end); else the one farthest from the hand tip: in space, or along
    the surface when curled fingers bring every tip within ``THUMB_MIN`` of the hand tip;
    with exactly four others they are index, middle, ring and pinky
    (:func:`_fingers_in_order`).  A hand with another count (mittens, three cartoon
    fingers) names only its thumb.
    """
    v = surface.vertices
    hand, tips = _hand_and_tips(surface, tip, height)
    apart = np.linalg.norm(v[tips][:, None] - v[tips][None], axis=2)
    np.fill_diagonal(apart, np.inf)
    apart = apart.min(axis=1) if len(tips) >= 2 else np.zeros(len(tips))
    behind = len(tips) >= 2 and surface.from_middle[tip] < surface.from_middle[tips].min()
    if behind or _stands_apart(apart):
        # the hand tip behind every fingertip: the end of a sleeve at the wrist, the hand a
        # piece of its own (a held-out girl's right hand: every fingertip equally far from
        # it, the thumb named on the index and each finger one off); or the index's tip the
        # hand's, as far from the pinky's as from the thumb's (Sintel's left hand).  The
        # thumb stands apart from the four fingers side by side: the tip farthest from its
        # nearest other tip
        spread = apart
    else:
        spread = np.linalg.norm(v[tips] - v[tip], axis=1)
    if not (spread > THUMB_MIN * height).any():
        # curled fingers bring their tips next to the thumb's (a relaxed hand, a fist: 2.8 %H
        # on the female dev body with its fingers bent 24-38 degrees), but not along the surface
        spread = surface.distance_from(tip)[tips]
    if not (spread > THUMB_MIN * height).any():
        return {}
    thumb = int(tips[np.argmax(spread)])
    out = {"thumb_tip": thumb}
    others = [int(t) for t in tips if t != thumb]
    if len(others) == 4:
        out.update(zip(FINGERS, _fingers_in_order(v, others, thumb, v[tip] - v[hand].mean(axis=0))))
    return out


def _stands_apart(apart: np.ndarray) -> bool:
    """Whether one of three or more fingertips stands ``THUMB_APART`` times farther from its
    nearest other fingertip than any other does (``apart`` (K,): those distances)."""
    if len(apart) < 3:
        return False
    second, first = np.sort(apart)[-2:]
    return bool(first >= THUMB_APART * second)


def _hand_and_tips(surface: BodySurface, tip: int, height: float) -> tuple:
    """``(hand, tips)``: the hand's vertices (within ``HAND_REACH`` of the hand tip along the
    surface) and its fingertips (:func:`_hand_tips`), the hand grown by ``FINGER_REACH_STEP``
    up to ``FINGER_REACH_MAX`` while a tip is only the hand's rim cutting a finger
    (:func:`_cut_by_rim`).

    From the tip of the middle or index finger, down it, across the palm and up a long
    thumb or pinky is longer than ``HAND_REACH``: Sintel's left thumb and pinky tips lie 14.4
    and 14.9 %H from her hand tip, and the rim across them was read as their tips (4.2 and
    2.9 %H off).  A hand whose tips are all the surface's own stays as it was."""
    reach = HAND_REACH
    while True:
        hand = np.flatnonzero(surface.distance_from(tip) < reach * height)
        tips = _hand_tips(surface, hand, height)
        if reach + FINGER_REACH_STEP > FINGER_REACH_MAX + 1e-9 or not _cut_by_rim(surface, hand, tips):
            return hand, tips
        reach += FINGER_REACH_STEP


def _cut_by_rim(surface: BodySurface, hand: np.ndarray, tips: np.ndarray) -> bool:
    """Whether any of the ``tips`` of the ``hand`` vertices lies on the hand's rim with the
    surface going on past it, farther from the middle of the body: an edge from the tip
    leads out of the hand to a farther vertex (a finger cut by the rim).  A fingertip's
    farther neighbours along the surface are its own finger's, inside the hand."""
    inside = np.zeros(len(surface.vertices), dtype=bool)
    inside[hand] = True
    g, far = surface.graph, surface.from_middle
    for t in tips:
        out = g.indices[g.indptr[t]:g.indptr[t + 1]]
        out = out[~inside[out]]
        if len(out) and far[out].max() > far[t]:
            return True
    return False


def _hand_tips(surface: BodySurface, hand: np.ndarray, height: float) -> np.ndarray:
    """The fingertips among the vertices ``hand``, farthest from the middle of the body first.

    The hand's extremities seen from the middle of the body (nothing within
    ``FINGER_PROMINENCE`` along the surface is farther: not a bump in the web between two
    fingers), each at least ``FINGER_SEPARATION`` along the surface from a farther one (the
    corners of one blunt fingertip make one tip); past five, the corners still apart are
    merged (:func:`_merged_corners`) and bumps on the hand left out (:func:`_without_bumps`).
    """
    sub, far = surface.graph[hand][:, hand], surface.from_middle[hand]
    peaks = geodesic.extremities(sub, far, FINGER_PROMINENCE * height)
    from scipy.sparse.csgraph import dijkstra  # loaded on use: a transfer with hand markers never needs it
    near = dijkstra(sub, indices=peaks, limit=FINGER_SEPARATION * height)[:, peaks]
    kept = []
    for k in sorted(range(len(peaks)), key=lambda k: (-far[peaks[k]], peaks[k])):  # farthest first
        if not any(np.isfinite(near[k, m]) for m in kept):
            kept.append(k)
    if len(kept) > 5:
        paths = dijkstra(sub, indices=peaks[kept])
        isolation = dict(zip(kept, _isolation(paths, far, far[peaks[kept]])))
        kept = _merged_corners(kept, paths[:, peaks[kept]])
        if len(kept) > 5:
            kept = _without_bumps(kept, [isolation[k] for k in kept])
    return hand[peaks[kept]]


def _fingers_in_order(v: np.ndarray, others: list, thumb: int, along: np.ndarray) -> tuple:
    """The four fingertips ``others`` as (index, middle, ring, pinky): the shortest chain
    through them, from the end on the ``thumb``'s side across the hand (``along`` (3,): from
    the middle of the hand to its tip).

    Side by side, neighbouring fingertips are the nearest: their order is the shortest chain
    through all four (a distance along the surface would cut across the palm to the short
    pinky).  Not the end nearest the thumb tip: a thumb lying along the hand (Rigify's) is as
    near the pinky's tip, and the shortest chain from it named one hand's fingers in reverse
    on a Blender-built body.
    """
    def chain(order):
        return float(np.linalg.norm(np.diff(v[list(order)], axis=0), axis=1).sum())
    best = min(itertools.permutations(sorted(others)), key=chain)
    # across the hand: the chain's ends less their offset along the hand (a short
    # pinky's tip lies back toward the wrist, as the thumb's does)
    along = along / np.linalg.norm(along)
    across = v[best[-1]] - v[best[0]]
    across -= (across @ along) * along
    if (v[thumb] - v[list(best)].mean(axis=0)) @ across > 0:
        best = best[::-1]
    return best


def _isolation(paths: np.ndarray, far: np.ndarray, height: np.ndarray) -> np.ndarray:
    """(k,) each peak's distance along the surface to the nearest point farther from the
    middle of the body (infinite for the farthest): a finger's length and more for a
    fingertip, a few centimetres for a bump on a knuckle.

    Parameters
    ----------
    paths : (k, N) distances along the surface from each peak; far : (N,) distance of each
    vertex from the middle of the body; height : (k,) each peak's ``far``.
    """
    higher = far[None, :] > height[:, None]
    return np.where(higher, paths, np.inf).min(axis=1)


def _without_bumps(kept: list, isolation: list) -> list:
    """``kept`` (a hand's tips) without its bumps while there are more than five: the least
    isolated tip is dropped while it is less than half the median of the others'.  Rigify
    bodies built with metaballs (bench_blender_rigs.py) had a knuckle bump 0.015-0.034 H from
    anything farther beside fingertips of 0.045-0.089, and the bump, farther from the hand
    tip than the thumb, was named the thumb; a sixth finger stays (then only the thumb is
    named)."""
    kept, isolation = list(kept), list(isolation)
    while len(kept) > 5:
        least = int(np.argmin(isolation))
        others = isolation[:least] + isolation[least + 1:]
        if isolation[least] >= 0.5 * np.median(others):
            break
        kept.pop(least)
        isolation.pop(least)
    return kept


def _merged_corners(kept: list, distance: np.ndarray) -> list:
    """``kept`` (a hand's tips, farthest first) with the corners of one blunt fingertip
    merged while there are more than five: the closest two tips are one finger's when they
    are less than half as far apart as any other two (the nearer of them is dropped).  On a
    coarse mesh the paths along the edges zig-zag: a 3k-vertex body's thumb had two corners
    0.031 H apart, beyond ``FINGER_SEPARATION``, while its fingertips were >= 0.085 apart.

    Parameters
    ----------
    kept : the tips, farthest from the middle first; distance : (k, k) between them along
        the surface.
    """
    kept = list(kept)
    while len(kept) > 5:
        i, j = np.triu_indices(len(kept), 1)
        order = np.argsort(distance[i, j], kind="stable")
        if distance[i[order[0]], j[order[0]]] >= 0.5 * distance[i[order[1]], j[order[1]]]:
            break
        drop = int(j[order[0]])  # j > i: the nearer to the middle of the two
        kept.pop(drop)
        distance = np.delete(np.delete(distance, drop, axis=0), drop, axis=1)
    return kept


def farthest_along_hand(vertices: np.ndarray, tip: np.ndarray, hand: np.ndarray, height: float) -> int | None:
    """The vertex of ``vertices`` (V, 3) farthest out on the hand beyond ``tip`` (3,) where the
    solid lost the surface, or None when it lost none there.  ``hand`` (K, 3): the points of
    the solid around the tip (the hand and the end of the forearm); its principal axis is
    the hand's line (not the line to the tip: a solid that lost the fingers may end on a
    corner of the palm).  The vertices searched lie beyond the tip along it, farther than
    aside, within ``SOLID_HAND_REACH``, within ``SOLID_HAND_WIDTH`` of it across (not on
    another limb) and farther than ``SOLID_HAND_BEYOND`` from the solid (a held-out chibi's
    mittens have a thin part at their backs, 5 cm from her solid: her hand tips were
    carried 16 cm round to it)."""
    from scipy.spatial import cKDTree  # on use: only characters read as a solid get here

    centre = hand.mean(axis=0)
    axis = np.linalg.svd(hand - centre, full_matrices=False)[2][0]
    axis = axis if (tip - centre) @ axis >= 0 else -axis
    out = (vertices - tip) @ axis
    offset = vertices - centre
    across = np.linalg.norm(offset - (offset @ axis)[:, None] * axis, axis=1)
    # out along the line more than aside from the tip: carried out, not round the hand
    aside = np.linalg.norm(vertices - tip - out[:, None] * axis, axis=1)
    near = np.flatnonzero((out > aside) & (out < SOLID_HAND_REACH * height) & (across < SOLID_HAND_WIDTH * height))
    near = near[cKDTree(hand).query(vertices[near])[0] > SOLID_HAND_BEYOND * height]
    # the farthest from the middle of the hand and forearm, less its distance from the hand's
    # line: the long middle finger's tip, as a hand tip is (farthest along the line, the
    # fixture's hands, turned a little, ended on the index finger; farthest alone, one hand
    # on its index and the other on its middle finger, 2.7 %H apart and as far out)
    score = np.linalg.norm(offset[near], axis=1) - across[near]
    return int(near[np.argmax(score)]) if len(near) else None


def fingertip_point(surface: BodySurface, tip: int, palm: np.ndarray, height: float):
    """A fingertip between vertices: the middle of the finger's end (``FINGER_STRIP`` deep
    along the line from ``palm``, the middle of the hand, to the ``tip`` vertex), cut out of
    the triangles within ``FINGER_SEPARATION`` of the tip along the surface (no other
    finger's).  ``(face, bary)`` or None."""
    from scipy.sparse.csgraph import dijkstra  # only this far: a full search per fingertip cost 2 ms
    v, faces = surface.vertices, surface.faces
    near = np.isfinite(dijkstra(surface.graph, indices=tip, limit=FINGER_SEPARATION * height))
    ids = np.flatnonzero(near[faces].all(axis=1))
    direction = v[tip] - palm
    if not len(ids) or not np.linalg.norm(direction) > 0:
        return None
    direction = direction / np.linalg.norm(direction)
    end = float((v[faces[ids]] @ direction).max())
    return clipped_middle(v, faces, ids, ((-direction, -(end - FINGER_STRIP * height)),))


def hand_sides(surface: BodySurface, hands: list, feet: list, side: dict) -> dict:
    """Each hand's side by the body, not by where it is: the side of the foot it is nearer
    along the surface (down its own flank; the other foot is a crotch further).  Hands
    crossed over the body, or hanging past the mid-plane, keep their own side; read by
    their place they were swapped (d01 with its arms turned 70 degrees down: each hand
    tip on the other hand).  The sides by place stand when both hands are nearer one foot.
    """
    foot = {side[f]: f for f in feet}
    if len(foot) < 2:
        return {}
    own = {t: "L" if surface.distance_from(t)[foot["L"]] < surface.distance_from(t)[foot["R"]] else "R"
           for t in hands}
    return own if len(set(own.values())) == 2 else {}
