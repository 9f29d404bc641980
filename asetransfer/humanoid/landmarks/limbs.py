"""The elbows and knees: where a limb narrows again past the forearm or the calf.

Cut across from its tip inward, an arm narrows at the wrist, widens over the forearm and
narrows again at the elbow before the upper arm widens into the body; a leg cut from the
ground up narrows at the ankle, widens over the calf and narrows at the knee.  Game
characters are modelled so: on Quaternius' male and female and Blender Studio's Sintel the
second waist of the arm lies within 1-2 cm of the artist's elbow joint, the female's knee
within 1 cm of hers.  The hand tips and the crotch fix a limb's ends only, and its middle
slid: the female's elbows were placed 5 cm out along the arm from the male's (2.95 %H).

* **Sections** are cut exactly out of the triangles of the whole mesh, pieces and layers
  included (a mannequin's forearm is a piece the layer rule leaves out; a sleeve is the
  arm's outside), across the limb: an arm along the principal axis of its surface
  ``ARM_REACH`` from the hand tip, a leg across the body's up on its own side of the
  mid-plane.  A section's size is its largest extent across the limb.  An arm's section is
  the loops of its cut that wind around the arm's axis: held low, the arm is cut across into
  the side of the chest, which is no part of it, and it ends where its sections become the
  chest's (``BODY_WIDER``).
* A **waist** is a local minimum of the sizes narrower than ``WAIST`` times the widest
  section on either side (back to the waist before it, and on to the end).
* The **elbow** is the last waist past the first (the wrist) within ``ELBOW_SPAN`` of the
  way from the hand tip to the mid-plane; the **knee** the first waist past the first (the
  ankle) within ``KNEE_SPAN`` of the way from the ground to the crotch.  A smooth limb (the
  zombie's arms, MakeHuman's legs) or a sleeve down to the wrist (Sophia's) has none.
* A limb in **pieces** within that span (cut at the joint, a ring or a ball over it) has
  its pieces' profile, not a modelled limb's, and is not read (an arm's loops there lie on
  more than one piece; a leg's vertices there do): Mixamo's X Bot's elbow rings
  bulge its profile like a forearm, and the waist past them, its upper arm's start, put its
  elbows 9 cm in; balls half sunk over the dev bodies' cut elbows rigged them up to 2.7x
  worse; Sintel's sleeves make her arms pieces.  A character read as the solid its
  pieces make is cut on its pieces (``limbs_on``).
* The landmarks are the section's top and bottom for an elbow (along up) and its front and
  back for a knee (along forward).  They are kept as left/right pairs that mirror each other
  within ``MIRROR``, or alone where the limbs' tips do not mirror (a hand tip at a sleeve's
  end reads no elbow on that arm); else one reading is wrong (a KayKit knight's elbow read
  across its shield and shoulder).  A leg shorter than ``LEG_LENGTH`` is a stub without a
  knee to find (a boot's top read as one).

A rigged source's elbows and knees are its joints' sections (:func:`joint_section`), the same
landmarks for the joint the waist stands for.
"""
from __future__ import annotations

import numpy as np

from ...geometry.rotations import across
from ...geometry.slicing import section, section_loops, sections, winding
from ...geometry.symmetry import reflect
from ...geometry.topology import vertex_components
from .frame import BodyFrame
from .surface import BodySurface

# fractions of the body height H (the package docstring)
ARM_REACH = (0.08, 0.30)  # the arm's axis: its surface this far from the hand tip, along the surface
LIMB_RADIUS = 0.12        # a limb's section: within this of its axis
SECTIONS = 60             # sections cut along a limb, from SPAN[0] to SPAN[1] of its length
SPAN = (0.05, 0.95)
# a waist is narrower than this times the widest section on either side: Quaternius' elbows
# 0.73-0.80 of the forearm, Sintel's 0.83; the heavy fixture's 0.87 and the zombie's 0.94 are none
WAIST = 0.85
ELBOW_SPAN = (0.3, 0.7)   # of the way from the hand tip to the mid-plane (those elbows: 0.43-0.57)
SIDEWAYS = 0.3            # an arm reaching out this little sideways (cosine with left) is not read
KNEE_SPAN = (0.3, 0.75)   # of the way from the ground to the crotch
# a leg shorter than this (ground to crotch) is a stub with no knee to find: the chibis' and the
# bunny's 0.15-0.16 (a boot's top read as a KayKit barbarian's knees), the humans' 0.45-0.5
LEG_LENGTH = 0.3
MIRROR = 0.03             # a pair mirrors within this (fraction of H), as confidence.SYMMETRY_SCALE
# a section this many times wider than the hand's and forearm's is the body's (the female
# mannequin's arms lowered 45 degrees: her upper arm's 1.1-1.2 times the widest of theirs, her chest's 2.9)
BODY_WIDER = 2.0
# a joint's section is its limb's loop: the points within this many times the nearest one's
# distance from the joint (a limb's section is at most twice as wide as deep)
LOOP = 3.0

#: the landmarks of a section: (name, extreme along +axis, extreme along -axis)
ELBOW = ("elbow_top", "elbow_bottom")
KNEE = ("knee_front", "knee_back")


def waists(sizes: np.ndarray) -> list:
    """Indices of the waists of a profile of section sizes (module docstring), in order.

    Parameters
    ----------
    sizes : (L,) the sections' sizes from the limb's tip inward.
    """
    minima = [k for k in range(1, len(sizes) - 1) if sizes[k] <= sizes[k - 1] and sizes[k] <= sizes[k + 1]]
    out, start = [], 0
    for k in minima:
        if sizes[k] < WAIST * sizes[start:k].max(initial=0) and sizes[k] < WAIST * sizes[k + 1:].max(initial=0):
            out.append(k)
            start = k
    return out


def _sections(c: np.ndarray, faces: np.ndarray, axis: int, levels: np.ndarray, radius: float):
    """The sections of a limb along coordinate ``axis`` of ``c`` (N, 3) at ``levels`` (L,),
    each its points within ``radius`` of the limb's axis (the other two coordinates'
    origin): ``(sizes (L,), points)``, NaN for a level the limb does not cross."""
    others = [a for a in range(3) if a != axis]
    if len(levels) == 1:
        points = section(c, faces, axis, float(levels[0]))
        level = np.zeros(len(points), dtype=np.int64)
    else:
        level, points = sections(c, faces, axis, levels)
    near = np.linalg.norm(points[:, others], axis=1) < radius
    level, points = level[near], points[near]
    bounds = np.searchsorted(level, np.arange(len(levels) + 1))
    cuts = [points[bounds[k]:bounds[k + 1]] for k in range(len(levels))]
    sizes = np.array([float(np.ptp(cut[:, others], axis=0).max()) if len(cut) >= 3 else np.nan for cut in cuts])
    return sizes, cuts


def _limb_loops(c: np.ndarray, faces: np.ndarray, levels: np.ndarray, radius: float, pieces: np.ndarray):
    """The sections of a limb along the first coordinate of ``c`` (N, 3) at ``levels`` (L,),
    each the loops of the cut that wind around the limb's axis (the origin of the other two
    coordinates), or the loop nearest it within ``radius`` when none does: the body beside
    an arm held low is cut too and is no part of it.

    Returns
    -------
    sizes : (L,) each section's largest extent across the limb, NaN where it has no loop;
    cuts : its points; on : for each level the ``pieces`` (N,) its loops lie on.
    """
    sizes, cuts, on = np.full(len(levels), np.nan), [], []
    for k, level in enumerate(levels):
        points, edges, loop, segments = section_loops(c, faces, 0, float(level))
        keep = np.zeros(len(points), dtype=bool)
        for label in np.unique(loop):
            mine = loop == label
            if abs(winding(points, segments[mine[segments[:, 0]]], 1, 2)) > 0.5:
                keep |= mine
        if not keep.any() and len(points):
            off = np.linalg.norm(points[:, 1:], axis=1)
            if off.min() < radius:
                keep = loop == loop[int(np.argmin(off))]
        cuts.append(points[keep])
        on.append(np.unique(pieces[edges[keep, 0]]))
        if np.count_nonzero(keep) >= 3:
            sizes[k] = float(np.ptp(points[keep, 1:], axis=0).max())
    return sizes, cuts, on


def _arm_end(sizes: np.ndarray, forearm: np.ndarray) -> int:
    """The first of an arm's sections (``sizes`` (L,) from its tip) past its ``forearm`` (L,)
    bool that is no longer the arm's: the body's, wider than ``BODY_WIDER`` times any of the
    hand's and forearm's (an arm held low is cut across into the side of the chest before
    its way to the mid-plane is half done), or none (NaN: its axis has left it above the
    shoulder); L when every one is."""
    past = np.arange(len(sizes)) > np.flatnonzero(forearm).max(initial=-1)
    with np.errstate(invalid="ignore"):
        end = np.flatnonzero(past & (np.isnan(sizes) | (sizes > BODY_WIDER * np.nanmax(sizes[forearm], initial=0))))
    return int(end[0]) if len(end) else len(sizes)


def _in_pieces(limb: np.ndarray, pieces: np.ndarray) -> bool:
    """Whether the vertices ``limb`` (N,) bool lie on more than one of the ``pieces`` (N,):
    a limb cut at its joint, covered or ringed there (module docstring)."""
    return len(np.unique(pieces[limb])) > 1


def _limb_frame(axis: np.ndarray) -> np.ndarray:
    """(3, 3) an orthonormal basis whose first column is ``axis``."""
    return np.column_stack([axis, across(axis)])


def elbow_section(surface: BodySurface, vertices: np.ndarray, faces: np.ndarray, pieces: np.ndarray,
                  frame: BodyFrame, hand: int, mid: float) -> np.ndarray | None:
    """(K, 3) the elbow's section of the arm whose tip is the ``surface`` vertex ``hand``, or
    None (module docstring).

    Parameters
    ----------
    surface : the body searched; vertices, faces : the whole welded mesh (pieces and layers),
    pieces : (N,) its vertices' pieces; frame : the body frame; mid : the mid-plane's offset
    along ``frame.left``.
    """
    h, tip = frame.height, surface.vertices[hand]
    distance = surface.distance_from(hand)
    near = surface.vertices[(distance > ARM_REACH[0] * h) & (distance < ARM_REACH[1] * h)]
    if len(near) < 10:
        return None
    axis = _inward(np.linalg.svd(near - near.mean(axis=0), full_matrices=False)[2][0], tip, frame, mid)
    if abs(axis @ frame.left) < SIDEWAYS:
        # else from the tip toward the middle of that surface: along the arm where it is a spread
        # hand alone (a mannequin's forearm a piece apart) whose own axis lies across an arm held low
        axis = (near.mean(axis=0) - tip) / np.linalg.norm(near.mean(axis=0) - tip)
    if abs(axis @ frame.left) < SIDEWAYS:
        return None
    # the arm around that line, its pieces and layers too, gives its own axis
    along = (vertices - tip) @ axis
    off = np.linalg.norm(vertices - tip - np.outer(along, axis), axis=1)
    length = (mid - tip @ frame.left) / (axis @ frame.left)
    tube = (along > 0.1 * length) & (along < 0.6 * length) & (off < LIMB_RADIUS * h)
    if np.count_nonzero(tube) >= 10:
        axis = _inward(np.linalg.svd(vertices[tube] - vertices[tube].mean(axis=0), full_matrices=False)[2][0],
                       tip, frame, mid)
        length = (mid - tip @ frame.left) / (axis @ frame.left) if abs(axis @ frame.left) >= SIDEWAYS else 0.0
    if not length > 0.05 * h:
        return None
    basis = _limb_frame(axis)
    c = (vertices - tip) @ basis
    inside = (c[:, 0] > 0) & (c[:, 0] < length) & (np.linalg.norm(c[:, 1:], axis=1) < 2 * LIMB_RADIUS * h)
    faces = faces[inside[faces].all(axis=1)]
    levels = np.linspace(*SPAN, SECTIONS) * length
    sizes, cuts, on = _limb_loops(c, faces, levels, LIMB_RADIUS * h, pieces)
    arm = np.arange(len(levels)) < _arm_end(sizes, levels < ELBOW_SPAN[0] * length)
    span = np.flatnonzero(arm & (levels > ELBOW_SPAN[0] * length) & (levels < ELBOW_SPAN[1] * length))
    if not len(span) or len(np.unique(np.concatenate([on[k] for k in span]))) > 1:
        return None
    found = [k for k in waists(sizes[arm])[1:] if ELBOW_SPAN[0] * length <= levels[k] <= ELBOW_SPAN[1] * length]
    if np.isnan(sizes[arm]).any() or not found:
        return None
    return cuts[found[-1]] @ basis.T + tip


def _inward(axis: np.ndarray, tip: np.ndarray, frame: BodyFrame, mid: float) -> np.ndarray:
    """``axis`` turned to point from the hand ``tip`` toward the mid-plane."""
    return axis if (axis @ frame.left) * (mid - tip @ frame.left) > 0 else -axis


def knee_section(vertices: np.ndarray, faces: np.ndarray, pieces: np.ndarray, frame: BodyFrame, toe: np.ndarray,
                 crotch: float, mid: float) -> np.ndarray | None:
    """(K, 3) the knee's section of the leg whose toe tip is ``toe`` (3,), or None (module
    docstring).  ``crotch``: the crotch's height over the ground point; ``mid``: the
    mid-plane's offset along ``frame.left``; vertices, faces: the whole welded mesh, pieces
    (N,) its vertices' pieces."""
    h = frame.height
    c = frame.coordinates(vertices) * h  # (left, up, forward) from the ground point
    x = float((toe - frame.ground) @ frame.left)
    middle = mid - float(frame.ground @ frame.left)
    side = np.sign(x - middle)
    leg = (side * (c[:, 0] - middle) > 0) & (np.abs(c[:, 0] - x) < LIMB_RADIUS * h) & (c[:, 1] < crotch)
    if not leg.any() or not crotch - float(c[leg, 1].min()) > LEG_LENGTH * h:
        return None
    ground = float(c[leg, 1].min())
    levels = ground + np.linspace(*SPAN, SECTIONS) * (crotch - ground)
    axis_at = c - np.array([x, 0.0, 0.0])
    axis_at[:, 2] -= float(np.median(c[leg, 2]))
    faces = faces[leg[faces].all(axis=1)]
    height = (c[:, 1] - ground) / (crotch - ground)
    if _in_pieces(leg & (height > KNEE_SPAN[0]) & (height < KNEE_SPAN[1]), pieces):
        return None
    sizes, cuts = _sections(axis_at, faces, 1, levels, LIMB_RADIUS * h)
    span = (levels - ground) / (crotch - ground)
    found = [k for k in waists(sizes)[1:] if KNEE_SPAN[0] <= span[k] <= KNEE_SPAN[1]]
    if np.isnan(sizes).any() or not found:
        return None
    cut = cuts[found[0]]
    if len(cut) < 3:
        return None
    points = cut + np.array([x, 0.0, float(np.median(c[leg, 2]))])
    return frame.ground + points[:, [0]] * frame.left + points[:, [1]] * frame.up + points[:, [2]] * frame.forward


def joint_section(vertices: np.ndarray, faces: np.ndarray, before: np.ndarray, joint: np.ndarray,
                  after: np.ndarray, height: float, other: np.ndarray | None = None) -> np.ndarray | None:
    """(K, 3) the section of a rigged limb through ``joint`` (3,) across its bones from
    ``before`` to ``after`` (the mean of their directions), within ``LIMB_RADIUS`` of the
    joint, nearer it than ``other`` (the other side's joint: the other knee) and within
    ``LOOP`` times the nearest point's distance, or None."""
    axis = (joint - before) / np.linalg.norm(joint - before) + (after - joint) / np.linalg.norm(after - joint)
    basis = _limb_frame(axis / np.linalg.norm(axis))
    c = (vertices - joint) @ basis
    near = np.linalg.norm(c, axis=1) < 2 * LIMB_RADIUS * height
    _, cuts = _sections(c, faces[near[faces].all(axis=1)], 0, np.zeros(1), LIMB_RADIUS * height)
    points = cuts[0] @ basis.T + joint
    if other is not None:
        points = points[np.linalg.norm(points - joint, axis=1) < np.linalg.norm(points - other, axis=1)]
    # the limb's own loop around the joint, not the body beside an arm held low
    distance = np.linalg.norm(points - joint, axis=1)
    points = points[distance <= LOOP * distance.min(initial=np.inf)]
    return points if len(points) >= 3 else None


def extremes(points: np.ndarray, names: tuple, direction: np.ndarray) -> dict:
    """``{names[0]: the point farthest along direction, names[1]: the point farthest against it}``."""
    along = points @ direction
    return {names[0]: points[int(np.argmax(along))], names[1]: points[int(np.argmin(along))]}


def limb_points(surface: BodySurface, vertices: np.ndarray, faces: np.ndarray, frame: BodyFrame, named: dict,
                crotch: np.ndarray | None) -> dict:
    """The elbows' and knees' landmarks as points (name -> (3,)), both readings of a pair
    dropped when they do not mirror each other (module docstring).

    Parameters
    ----------
    surface : the body searched, ``named`` its landmarks (surface vertices: hand and toe
    tips, head top); vertices, faces : the whole welded mesh; crotch : (3,) or None.
    """
    mid = float(surface.vertices[named["head_top"]] @ frame.left)
    pieces = vertex_components(len(vertices), faces)
    out = {}
    for s in "LR":
        if f"hand_tip.{s}" in named:
            cut = elbow_section(surface, vertices, faces, pieces, frame, named[f"hand_tip.{s}"], mid)
            if cut is not None:
                out.update({f"{n}.{s}": p for n, p in extremes(cut, ELBOW, frame.up).items()})
        if f"toe_tip.{s}" in named and crotch is not None:
            cut = knee_section(vertices, faces, pieces, frame, surface.vertices[named[f"toe_tip.{s}"]],
                               float((crotch - frame.ground) @ frame.up), mid)
            if cut is not None:
                out.update({f"{n}.{s}": p for n, p in extremes(cut, KNEE, frame.forward).items()})
    at = {s: {e: surface.vertices[named[f"{e}.{s}"]] if f"{e}.{s}" in named else np.full(3, np.inf)
              for e in ("hand_tip", "toe_tip")} for s in "LR"}
    tips = {ELBOW: (at["L"]["hand_tip"], at["R"]["hand_tip"]), KNEE: (at["L"]["toe_tip"], at["R"]["toe_tip"])}
    return mirrored(out, frame, mid, tips)


def mirrored(points: dict, frame: BodyFrame, mid: float, tips: dict) -> dict:
    """``points`` without the landmarks of a limb whose left and right are not mirror images
    across the mid-plane within ``MIRROR``, or whose other side has none while the limbs'
    tips (``tips``: (elbow or knee names) -> (left tip, right tip) (3,)) mirror each other:
    one reading is wrong (a KayKit knight's left elbow read across its shield and shoulder).
    Where the tips themselves do not mirror, the side read alone stands (Sintel's right hand
    tip is a sleeve's end, and that arm reads no elbow)."""
    plane = np.append(frame.left, mid)
    out = dict(points)
    for names in (ELBOW, KNEE):
        left_tip, right_tip = tips[names]
        alone = np.linalg.norm(reflect(left_tip[None], plane)[0] - right_tip) > MIRROR * frame.height
        pairs = [(points.get(f"{n}.L"), points.get(f"{n}.R")) for n in names]
        if any(((a is None) != (b is None) and not alone) or (a is not None and b is not None and
               np.linalg.norm(reflect(a[None], plane)[0] - b) > MIRROR * frame.height) for a, b in pairs):
            for n in names:
                out.pop(f"{n}.L", None)
                out.pop(f"{n}.R", None)
    return out
