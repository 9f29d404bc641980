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
the head leans far from the upright of the ground under the feet (a four-legged body), the
feet have no length, or they point in opposite directions.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial import ConvexHull, QhullError

from ...geometry.symmetry import estimate_symmetry_plane
from .feet import LEG_AHEAD, foot, leg_over_foot, rearmost, sole
from .surface import BodySurface, NotHumanoidError

# where the rules look, as fractions of the body height H (the package docstring)
# the head: surface within this geodesic distance of the head top -- the whole head of
# a cartoon (head radius 0.1 H), short of the hands in a T-pose (>= 0.45 H away)
HEAD_REACH = 0.35
HEAD_STRIP = 0.01       # the head top: the middle of the head's topmost strip this deep
MIDLINE_BAND = 0.015    # head top, nose and back of the head: this close to the mid-plane
# [deg] the head-to-feet line leans at most this from the upright of the feet's ground:
# standing bodies 0.4-33 (dev bodies dressed, cut, A-posed, decimated <= 7.5; a chibi's hair
# bun 17.5, a biped kaiju 19; Blender's metaball bodies 26-33, their round feet's hull leaning
# up the shins), four-legged bodies read as two-legged 34-72 (a cat 34 is still read)
STANDING_LEAN = 40.0


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


def frame_from_feet(surface: BodySurface, head: int, feet: list, symmetry_iterations: int):
    """The body frame from the head's extremity ``head`` and the toe tips ``feet`` (module docstring).

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
    if _lean_from_ground(v[np.unique(np.concatenate([foot(surface, t, height) for t in feet]))], rough_up) \
            > STANDING_LEAN:
        raise NotHumanoidError(f"the head does not stand above the feet: it leans more than {STANDING_LEAN:g} "
                               "degrees from the upright of the ground they stand on (a four-legged body?)")
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


def _lean_from_ground(feet: np.ndarray, rough_up: np.ndarray) -> float:
    """Degrees between the head-to-feet line ``rough_up`` and the upright of the ground the
    ``feet`` (K, 3), the vertices of both, stand on: the normal of the largest facet of
    their convex hull facing away from the head (0 without a hull).

    A four-legged body read as two-legged stands its "head" (snout or tail) over its back
    paws, its front paws passing for hands: 57-72 degrees from the upright of the ground
    under them for Mesh2Motion's panda and dog, whose readings stood (the soles' plane
    tells no more than the head-to-feet line: its band of the feet is cut across it).
    Standing bodies lean 0.4-19 degrees (a hair bun behind a chibi's head) and 26-33 on
    round metaball feet, whose hull's largest facet runs up the shins; as much as
    Mesh2Motion's horse and cat (30, 34), which are still read."""
    try:
        hull = ConvexHull(feet)
    except QhullError:  # the feet in one plane or on a line
        return 0.0
    normals = hull.equations[:, :3]
    corner = feet[hull.simplices]
    area = 0.5 * np.linalg.norm(np.cross(corner[:, 1] - corner[:, 0], corner[:, 2] - corner[:, 0]), axis=1)
    away = normals @ rough_up < 0
    if not away.any():
        return 0.0
    ground = -normals[np.flatnonzero(away)[np.argmax(area[away])]]
    return float(np.degrees(np.arccos(np.clip(ground @ rough_up, -1.0, 1.0))))


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
