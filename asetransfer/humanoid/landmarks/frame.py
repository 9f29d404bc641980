"""The body frame: up, forward, left and height, found from the feet and the head top.

Up is the normal of the ground plane through both soles (:mod:`.feet`; the head-to-feet line
leans with the stance), unless it leans more than 30 degrees from that line.  Forward is
the sum of the feet's steps from heel to toe tip across up (a first heel: the sole point
farthest from the toe tip), turned round when both legs stand over the far ends of their
feet (:func:`~.feet.leg_over_foot`: the extremity was the back of a boot); left = up x forward (right-handed), refined as the normal of the
body's mirror plane fitted to the whole surface where it stays within 20 degrees of that.
The head top is the middle of the head's topmost strip (its geodesic extremity slides over
a flat crown when the middle of the body moves), on the mirror plane when a horn off it
rises higher.  The height is the head top's above the mean of the soles (the ground point).
The frame is refused (:class:`~.surface.NotHumanoidError`) when the head and feet coincide,
the head leans far from the upright of the ground under the feet or a hand stands on that
ground (a four-legged body), the feet have no length, or they point in opposite directions.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial import ConvexHull, QhullError

from ...geometry.rotations import across
from ...geometry.symmetry import estimate_symmetry_plane
from .feet import LEG_AHEAD, foot, leg_over_foot, rearmost, sole
from .surface import BodySurface, NotHumanoidError

# where the rules look, as fractions of the body height H (the package docstring)
# the head: surface within this geodesic distance of the head top -- the whole head of
# a cartoon (head radius 0.1 H), short of the hands in a T-pose (>= 0.45 H away)
HEAD_REACH = 0.35
HEAD_STRIP = 0.01       # the head top: the middle of the head's topmost strip this deep
MIDLINE_BAND = 0.015    # head top, nose and back of the head: this close to the mid-plane
# [deg] the head-to-feet line leans at most this from the upright of the feet's ground
# (:func:`_ground_under`): standing bodies 0.4-21 (dev bodies <= 7, Blender's metaball bodies
# 1.9-9.0, KayKit's chibis 1.2-6.3, Sophia 16.8, a biped kaiju 20.8); Mesh2Motion's fox, cat,
# horse and panda read as two-legged lean more, its dog less but with its front paws on the
# ground (HANDS_OFF_GROUND)
STANDING_LEAN = 40.0
# the ground under the feet (:func:`_ground_under`): a plane with the whole body on its side, to
# this fraction of H, that the body can rest on: its centroid over the points within RESTING_BAND
# of it (the round feet of Blender's metaball bodies touch their ground at spots: within 0.005 H
# none rests; with 0.02 a slope up their shins does)
GROUND_CONTACT = 0.005
RESTING_BAND = 0.01
# a hand tip nearer the feet's ground than this fraction of H is a front paw (a quadruped read
# as two-legged: Mesh2Motion's dog, 0.01); standing bodies' hand tips are 0.40 H or higher
# (Blender's metaball body with its arms down 0.48, the dev bodies 0.45-0.54, KayKit 0.47-0.53)
HANDS_OFF_GROUND = 0.1


@dataclass(frozen=True)
class BodyFrame:
    """A standing body's own frame: unit ``up``, ``forward``, ``left`` (3,), ``height`` and
    ``ground`` (3,), a point on the ground plane below the head top."""

    up: np.ndarray
    forward: np.ndarray
    left: np.ndarray
    height: float
    ground: np.ndarray

    def coordinates(self, points: np.ndarray) -> np.ndarray:
        """(N, 3) points as (left, up, forward) in units of the height, from the ground point."""
        d = (np.asarray(points, dtype=np.float64) - self.ground) / self.height
        return np.stack([d @ self.left, d @ self.up, d @ self.forward], axis=-1)


def frame_from_feet(surface: BodySurface, head: int, feet: list, symmetry_iterations: int, hands=()):
    """The body frame from the head's extremity ``head`` and the toe tips ``feet`` (module
    docstring); ``hands``, the hand tips, must stand off the ground (``HANDS_OFF_GROUND``).

    Returns
    -------
    frame : :class:`BodyFrame`; heels : toe tip -> (heel vertex, the up (3,) and height its
    sole was found with); agreement : how nearly the feet point the same way, ``(cos a - 0.5) / 0.5``
    clipped to [0, 1] for their angle ``a`` (1 parallel, 0 at 60 degrees or more); head : the head top's vertex.
    """
    v = surface.vertices
    rough_up = v[head] - 0.5 * (v[feet[0]] + v[feet[1]])
    height = float(np.linalg.norm(rough_up))
    if not height > 0:
        raise NotHumanoidError("the head and feet coincide")
    rough_up /= height
    soles = {t: sole(surface, t, rough_up, height) for t in feet}
    # a first heel, for the facing: the sole point farthest from the toe tip
    heels = {t: int(soles[t][np.argmax(np.linalg.norm(v[soles[t]] - v[t], axis=1))]) for t in feet}
    # up: the normal of the plane through both soles (the head-to-feet line leans with
    # the stance; many sole points average out a rounded or uneven foot)
    ground = v[np.concatenate([soles[t] for t in feet])]
    up = rough_up
    if len(ground) >= 3:  # a plane needs three points (a robot's pointed feet may have fewer)
        normal = np.linalg.svd(ground - ground.mean(axis=0), full_matrices=False)[2][2]
        normal = normal if normal @ rough_up > 0 else -normal
        up = normal if normal @ rough_up > np.cos(np.radians(30)) else rough_up
    _check_standing(surface, feet, hands, rough_up, height)
    steps = [v[t] - v[heels[t]] for t in feet]
    steps = [s - (s @ up) * up for s in steps]
    # a foot's extremity is its toe but on a chibi's boot whose back reaches farther: the leg
    # stands over the back of the foot, so both legs over the far ends read the feet backwards
    lowest = float((ground @ up).min()) if len(ground) else float(min(v[t] @ up for t in feet))
    legs = [leg_over_foot(v, v[t], v[heels[t]], up, lowest, height) for t in feet]
    if all(leg is not None and leg >= LEG_AHEAD for leg in legs):
        steps = [-s for s in steps]
    if min(np.linalg.norm(s) for s in steps) < 0.02 * height:
        raise NotHumanoidError("the feet have no length: cannot tell front from back")
    steps = [s / np.linalg.norm(s) for s in steps]
    forward = steps[0] + steps[1]
    if not np.linalg.norm(forward) > 0.5:
        raise NotHumanoidError("the feet point in opposite directions")
    forward /= np.linalg.norm(forward)
    top = _head_top(surface, head, up, height)
    left = np.cross(up, forward)
    if symmetry_iterations > 0:
        left, offset = _mirror_plane(surface, left, v[top], symmetry_iterations)
    else:  # the plane between the toe tips (a cartoon's ear as the head's extremity put both feet on one side)
        offset = float(np.mean(v[feet] @ left))
    if abs(v[top] @ left - offset) > MIDLINE_BAND * height:
        # a horn off the mirror plane rising above the crown, which is on the plane (horns
        # put the heavy fixture's head top 14 cm aside, its head joint 7 %H off)
        top = _head_top(surface, head, up, height, midline=(left, offset))
    head = top
    forward = np.cross(left, up)
    forward /= np.linalg.norm(forward)
    # each heel with the up and height its sole was found with: its point between vertices
    # is found once, with the other landmarks'
    heels = {t: (rearmost(v, soles[t], forward, height), rough_up, height) for t in feet}
    base = ground.mean(axis=0)
    height = float((v[head] - base) @ up)
    frame = BodyFrame(up, forward, np.cross(up, forward), height, base)
    agreement = float(np.clip((steps[0] @ steps[1] - 0.5) / 0.5, 0.0, 1.0))
    return frame, heels, agreement, head


def _check_standing(surface: BodySurface, feet: list, hands, rough_up: np.ndarray, height: float) -> None:
    """Refuse a head leaning more than ``STANDING_LEAN`` from the upright of the ground under
    the ``feet`` (:func:`_ground_under`) or a hand tip of ``hands`` standing on that ground
    (``HANDS_OFF_GROUND``): a four-legged body read as two-legged."""
    v = surface.vertices
    floor = _ground_under(surface, np.concatenate([foot(surface, t, height) for t in feet]), rough_up, height)
    if floor is None:
        return
    if np.degrees(np.arccos(np.clip(-floor[0] @ rough_up, -1.0, 1.0))) > STANDING_LEAN:
        raise NotHumanoidError(f"the head does not stand above the feet: it leans more than {STANDING_LEAN:g} "
                               "degrees from the upright of the ground they stand on (a four-legged body?)")
    if len(hands) and -(v[list(hands)] @ floor[0] + floor[1]).min() < HANDS_OFF_GROUND * height:
        raise NotHumanoidError("a hand stands on the ground the feet stand on (a four-legged body?)")


def _ground_under(surface: BodySurface, feet: np.ndarray, rough_up: np.ndarray, height: float):
    """The ground the feet stand on, ``(normal, offset)`` (the plane ``x @ normal + offset = 0``,
    ``normal`` (3,) pointing down into it), or None without one.

    ``feet`` (K,) are the vertices of both feet (of the body ``surface``).
    The ground is a facet of their convex hull facing away from the head (``rough_up``) with
    the whole body on its side (within ``GROUND_CONTACT`` of H): of those the body could rest
    on (its centroid over the points it touches, :func:`_rests_on`), or else of them all, the
    one the feet touch over the largest area (their vertices' areas within the band: the
    soles).  Without a facet with the body on its side, the hull's largest facing away.

    A four-legged body read as two-legged stands its "head" (snout or tail) over its back
    paws, its front paws passing for hands: 57-72 degrees from the upright of the ground
    under them for Mesh2Motion's panda and dog, whose readings stood (the soles' plane
    tells no more than the head-to-feet line: its band of the feet is cut across it).  The
    feet's largest facet alone was the back of a cartoon's seat, which its stub feet reach
    up (Blender Studio's bunny, 69 degrees; the body reaches past it); the backs of straight
    legs touch a plane over more area than their soles, but the body does not rest on it."""
    feet = np.unique(feet)
    # the readings tried share feet and heads: the test quadruped's 2160 readings ask for 510
    # grounds (its refusal takes 6 s; computing every one, 15)
    key = (feet.tobytes(), float(height), np.asarray(rough_up, dtype=np.float64).tobytes())
    if key not in surface.grounds:
        surface.grounds[key] = _facet_under(surface, feet, rough_up, height)
    return surface.grounds[key]


def _facet_under(surface: BodySurface, feet: np.ndarray, rough_up: np.ndarray, height: float):
    """:func:`_ground_under` of the sorted vertices ``feet``, computed."""
    v = surface.vertices
    try:
        hull = ConvexHull(v[feet])
    except QhullError:  # the feet in one plane or on a line
        return None
    body = surface.outermost
    normals, offsets = hull.equations[:, :3], hull.equations[:, 3]
    corner = v[feet][hull.simplices]
    area = 0.5 * np.linalg.norm(np.cross(corner[:, 1] - corner[:, 0], corner[:, 2] - corner[:, 0]), axis=1)
    away = np.flatnonzero(normals @ rough_up < 0)
    if not len(away):
        return None
    band = GROUND_CONTACT * height
    under = away[(body @ normals[away].T + offsets[away]).max(axis=0) < band]
    if not len(under):
        largest = away[np.argmax(area[away])]
        return normals[largest], float(offsets[largest])
    weights = surface.vertex_areas
    centroid = weights @ v / max(weights.sum(), 1e-300)
    touching = (v[feet] @ normals[under].T + offsets[under] > -band).T @ weights[feet]
    order = under[np.argsort(-touching, kind="stable")]  # the soles' likeliest first: the first that rests
    # the points within the band of every facet at once (one product, not one per facet)
    resting = RESTING_BAND * height
    near = np.abs(body @ normals[order].T + offsets[order]) < resting
    best = next((k for k, on in zip(order, near.T) if _rests_on(body[on], centroid, normals[k], resting)),
                order[0])
    return normals[best], float(offsets[best])


def _rests_on(touching: np.ndarray, centroid: np.ndarray, normal: np.ndarray, band: float) -> bool:
    """Whether a body could rest on a plane of unit ``normal`` (3,): ``centroid`` (3,) projects
    inside the convex hull of the points ``touching`` (P, 3), those within ``band`` of the plane."""
    if len(touching) < 3:
        return False
    in_plane = across(normal)
    try:
        outline = ConvexHull(touching @ in_plane)
    except QhullError:  # touching along a line
        return False
    return bool((outline.equations[:, :2] @ (centroid @ in_plane) + outline.equations[:, 2] <= band).all())


def _mirror_plane(surface: BodySurface, left: np.ndarray, head_top: np.ndarray, iterations: int):
    """The body's left, refined as the normal of its mirror plane, and the plane's offset
    along it (``(left, offset)``: the plane is ``x @ left = offset``).

    Toes splay and heels are round, so toe minus heel gives the facing only to a few
    degrees; the mirror plane fitted to the whole surface (ICP on its own reflection,
    started through the head top) gives it to a fraction of one.  Kept only when it
    stays within 20 degrees of the feet's estimate (a body posed far from symmetric);
    else the plane through the head top.
    """
    plane = np.append(left, left @ head_top)
    fitted = estimate_symmetry_plane(surface.vertices, surface.faces, plane, iterations=iterations)
    fitted = fitted if fitted[:3] @ left > 0 else -fitted
    if fitted[:3] @ left > np.cos(np.radians(20)):
        return fitted[:3], float(fitted[3])
    return left, float(plane[3])


def _head_top(surface: BodySurface, head: int, up: np.ndarray, height: float, midline=None) -> int:
    """The head top: the middle of the head's topmost strip (``HEAD_STRIP`` deep, along
    ``up``), the head being the surface within ``HEAD_REACH`` of its extremity, and with
    ``midline`` (``(left, offset)``, the mirror plane) only its part within
    ``MIDLINE_BAND`` of the plane.

    The extremity itself depends on where the middle of the body is, which covers and
    cuts move (4 %H on the heavy fixture with joint covers); the single highest point of
    a flat crown slides with a fraction of a degree of tilt (1.3 %H for 0.3 degrees on the
    heavy fixture cut into pieces); the middle of the top strip does neither.
    """
    v = surface.vertices
    region = np.flatnonzero(surface.distance_from(head) < HEAD_REACH * height)
    if midline is not None:
        near = region[np.abs(v[region] @ midline[0] - midline[1]) < MIDLINE_BAND * height]
        region = near if len(near) else region  # no head on the plane: not a body's, refused later
    h = v[region] @ up
    top = region[h > h.max() - HEAD_STRIP * height]
    return int(top[np.argmin(np.linalg.norm(v[top] - v[top].mean(axis=0), axis=1))])
