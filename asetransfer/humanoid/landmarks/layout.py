"""The body's layout: which extremities are the head, the hands and the feet, and held props.

1. **Extremities.**  On the surface graph (pieces bridged, :mod:`~asetransfer.geometry.
   geodesic`) the points farthest from the middle of the body (of its large pieces)
   within a large geodesic ball are the tips, merged one per limb (``LIMB_SEPARATION``);
   the ``CANDIDATE_TIPS`` farthest limbs are examined.
2. **Which is which, intrinsically.**  The head is the tip with the smallest summed
   geodesic distance to the others (the neck is short; hands reach the head over the
   shoulders, feet over the whole body); the feet have the largest sums.  Bridges
   between pieces can shorten a limb, so the other readings are tried after it, then
   each with the hands and feet the other way round (a chibi's short legs) and the other
   pairings of the four limbs, and then the other sets of five tips, needing hands and
   feet that mirror each other.
3. **A body's layout.**  A reading stands when its frame (:mod:`.frame`) puts the head top
   at the top and the feet at the bottom, the hands between them on either side, and the
   geodesics are a body's (:func:`_check_layout`).
4. **Props.**  A held prop (a sword, a staff) is a piece whose far end stands out as an
   extremity with no mirror image on the body (``PROP_ASYMMETRY``); it is left out when the
   rest still has a body layout (:func:`body_layout`).  So are pieces standing apart from
   the body (``APART``) that the layout reads as the head (a halo, a quest marker floating
   over it) or that leave no body layout (a floor below the feet).

A shape with no such reading (a quadruped, a cube, a single limb) is refused with
:class:`~.surface.NotHumanoidError`.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from ...geometry import geodesic
from ...geometry.alignment import principal_box_sides
from ...geometry.symmetry import reflect
from ...geometry.topology import used_vertices, vertex_components
from .frame import HEAD_REACH, BodyFrame, frame_from_feet
from .surface import BodySurface, NotHumanoidError

# limbs examined for the five, farthest first (a prop's end, a chin, a cut's corner add
# one or two to the body's five); counted after the extremities are merged into limbs: a
# hand whose fingers stand apart along the surface (long fingers, claws) has an
# extremity a finger, and ten of them came before the feet and the head
CANDIDATE_TIPS = 8
# extremities nearer each other than this fraction of the bounding box along the surface
# are one limb's: head top to chin is ~0.2 of it, while the five limbs' tips are >= 0.45
# apart (hands to head in a T-pose; farther in an A-pose, and between the others)
LIMB_SEPARATION = 0.3
# a hand or foot tip whose mirror image is farther than this from the surface is a
# prop's end (a sword's tip: 0.2 H and more; a limb's mirror image: < 0.02 H on the
# dev bodies, posed symmetrically)
PROP_ASYMMETRY = 0.05
# pieces farther than this fraction of the largest side from the body (its largest piece and
# the pieces within this of it, and of those) stand apart: a halo or a marker floating over
# the head (read as the head's top: the fixture rigged 7 %H off), a floor below the feet, a
# cartoon's floating hands.  A body's own pieces lie within 0.02 (joint covers, plates, hair
# cards, a held weapon)
APART = 0.05
# a piece standing apart that the reading takes for the head is left out when it is lower than
# this fraction of the height (a halo 0.01, a marker ball 0.04): a head floating over its neck
# (0.13 on the heavy fixture) is the head
HEAD_PIECE = 0.08


def _roles(surface: BodySurface, tips: list) -> list:
    """Five extremities as [head, hands, feet] assignments, most likely first.

    The head has the smallest summed geodesic distance to the others (the neck is short;
    hands reach the head over the shoulders, feet over the whole body), the feet the
    largest.  Bridges between pieces can shorten a limb's geodesics (an elbow cover
    touching the hip brings a hand near the feet), so every tip is offered as the head,
    in that order, with the others split by their sums again.
    """
    total = {t: sum(surface.distance_from(t)[u] for u in tips) for t in tips}
    if not all(np.isfinite(list(total.values()))):
        raise NotHumanoidError("the extremities are not connected")
    order = sorted(tips, key=lambda t: (total[t], t))
    out = []
    for head in order:
        rest = [t for t in order if t != head]
        out.append([head, rest[:2], rest[2:]])
    # a chibi's short legs bring its feet nearer everything than its long arms bring its
    # hands (KayKit's adventurers): the hands and feet the other way round, after every
    # reading by the sums; then the other pairings of the four (their sums interleave: the
    # plain Rogue's)
    out += [[head, feet, hands] for head, hands, feet in out]
    seen = {(head, frozenset(hands)) for head, hands, _ in out}
    for head in order:
        rest = [t for t in order if t != head]
        for mate in rest[1:]:
            pair, other = [rest[0], mate], [t for t in rest[1:] if t != mate]
            for hands, feet in ((pair, other), (other, pair)):
                if (head, frozenset(hands)) not in seen:
                    seen.add((head, frozenset(hands)))
                    out.append([head, hands, feet])
    return out


@dataclass(frozen=True)
class Layout:
    """The five tips of a body (``head`` its head top), its frame, its heels and the feet's
    agreement (:func:`~.frame.frame_from_feet`)."""

    head: int
    hands: list
    feet: list
    frame: BodyFrame
    heels: dict
    agreement: float


def _tips(surface: BodySurface, radius: float) -> list:
    """The extremities, farthest first, one per limb: an extremity within ``LIMB_SEPARATION``
    along the surface of a farther one is the same limb's (a chin below the head top when
    the middle of the body is on the belly's front, a corner of a cut)."""
    kept = []
    for t in geodesic.extremities(surface.graph, surface.from_middle, radius * surface.size):
        if all(surface.distance_from(k)[t] > LIMB_SEPARATION * surface.size for k in kept):
            kept.append(int(t))
            if len(kept) == CANDIDATE_TIPS:
                break
    return kept


def _candidates(surface: BodySurface, tips: list):
    """(head, hands, feet) candidates among the limbs' extremities, most likely first: the
    five farthest under each of their roles (:func:`_roles`), then the other sets of five
    (a cut's rim or a prop can stand out farther than a hand)."""
    for five in itertools.combinations(tips, 5):  # farthest first: the top five come first
        yield from _roles(surface, list(five))


def _layout(surface: BodySurface, radius: float, symmetry_iterations: int) -> Layout:
    """Head, two hands and two feet among the limbs' extremities, in a standing body's
    layout: the first of :func:`_candidates` that has one.  All but the first also need
    hands and feet that mirror each other (:func:`_paired`: more evidence for a less
    likely reading).

    Raises :class:`NotHumanoidError` with the likeliest candidate's reason if none does.
    """
    tips = _tips(surface, radius)
    if len(tips) < 5:
        raise NotHumanoidError(f"found {len(tips)} extremities where a body has 5 (head, hands, feet)")
    refusal = None
    for k, (head, hands, feet) in enumerate(_candidates(surface, tips)):
        try:
            # the feet's frame, without the mirror-plane fit, weeds out wrong roles cheaply
            frame, _, _, top = frame_from_feet(surface, head, feet, 0, hands)
            _check_layout(surface, frame, top, hands, feet)
            frame, heels, agreement, top = frame_from_feet(surface, head, feet, symmetry_iterations, hands)
            _check_layout(surface, frame, top, hands, feet)
            layout = Layout(top, hands, feet, frame, heels, agreement)
            if k > 0 and not _paired(surface.vertices, layout):
                raise NotHumanoidError("the hands and feet are not mirror images")
        except NotHumanoidError as e:
            refusal = refusal or e
            continue
        return layout
    raise refusal


def _pieces(surface: BodySurface) -> np.ndarray:
    """(N,) piece label of each vertex of the surface (its triangles, without bridges)."""
    return vertex_components(len(surface.vertices), surface.faces)


def _unmirrored(surface: BodySurface, layout: Layout) -> list:
    """The hand and foot tips whose mirror image across the body's mid-plane is off the
    surface by more than ``PROP_ASYMMETRY``: the tip of a prop, not of a limb."""
    from scipy.spatial import cKDTree  # loaded on use, like the other rules' trees

    v, f = surface.vertices, layout.frame
    tips = np.array([*layout.hands, *layout.feet])
    gap, _ = cKDTree(v).query(reflect(v[tips], _mid_plane(v, layout)))
    return tips[gap > PROP_ASYMMETRY * f.height].tolist()


def _paired(v: np.ndarray, layout: Layout) -> bool:
    """Whether each hand tip and each foot tip is the other's mirror image across the
    body's mid-plane, within ``PROP_ASYMMETRY``."""
    plane = _mid_plane(v, layout)
    for a, b in (layout.hands, layout.feet):
        if np.linalg.norm(reflect(v[[a]], plane)[0] - v[b]) > PROP_ASYMMETRY * layout.frame.height:
            return False
    return True


def _mid_plane(v: np.ndarray, layout: Layout) -> np.ndarray:
    """The body's mid-plane ``(left, offset)``: through the head top, normal to the left axis."""
    left = layout.frame.left
    return np.append(left, v[layout.head] @ left)


def _prop_suspects(surface: BodySurface, layout, radius: float) -> list:
    """Pieces that may be held props, most suspect first: with a layout, the pieces
    (not the largest) of its unmirrored tips; without one, those of every extremity."""
    label = _pieces(surface)
    body = np.argmax(np.bincount(label))
    if layout is not None:
        tips = _unmirrored(surface, layout)
    else:
        tips = _tips(surface, radius)
    out = []
    for t in tips:
        if label[t] != body and label[t] not in out:
            out.append(int(label[t]))
    return out


def body_layout(vertices: np.ndarray, faces: np.ndarray, original: np.ndarray, face_ids: np.ndarray,
                 bridge_gap: float, radius: float, symmetry_iterations: int):
    """The surface of the body without held props (and pieces standing apart from it, where
    they would be its head), and its layout.

    A prop held in a hand (a sword, a staff, a shield) is a piece of its own whose far end is
    an extremity with no mirror image on the body: it hides the hand's own tip or breaks the
    layout.  Such a piece is left out when the rest has a body layout.  The pieces standing
    apart from the body (:func:`faces_apart`) are left out when the layout reads one of them,
    lower than ``HEAD_PIECE``, as the head (a halo, a marker over it) or reads no body with
    them (a floor below the feet), and the rest has a body layout; a body's own floating
    hands, feet and head stay.

    Parameters
    ----------
    vertices : (N, 3) welded; faces : (F, 3) the triangles searched; original : (N,) the input
        vertex of each vertex; face_ids : (F,) the input triangle of each face.
    bridge_gap, radius, symmetry_iterations : of :func:`~.find.find_landmarks`.

    Returns
    -------
    surface : :class:`BodySurface` of the body; layout : its :class:`Layout`.
    """
    apart = faces_apart(vertices, faces)
    try:
        surface, layout = _layout_without_props(vertices, faces, original, face_ids, bridge_gap, radius,
                                                symmetry_iterations)
    except NotHumanoidError:
        if not apart.any():
            raise
        return _layout_without_props(vertices, faces[~apart], original, face_ids[~apart], bridge_gap, radius,
                                     symmetry_iterations)
    if apart.any() and _apart_vertices(surface)[layout.head] and _low_piece(surface, layout):
        try:
            return _layout_without_props(vertices, faces[~apart], original, face_ids[~apart], bridge_gap, radius,
                                         symmetry_iterations)
        except NotHumanoidError:
            pass
    return surface, layout


def _low_piece(surface: BodySurface, layout: Layout) -> bool:
    """Whether the piece the layout's head top lies on is lower than ``HEAD_PIECE`` of the
    height along the body's up: a halo, a marker, a hat floating over the head, not a head
    of its own floating over the neck."""
    label = _pieces(surface)
    rise = surface.vertices[label == label[layout.head]] @ layout.frame.up
    return float(np.ptp(rise)) < HEAD_PIECE * layout.frame.height


def _apart_vertices(surface: BodySurface) -> np.ndarray:
    """(N,) bool: the surface's vertices on pieces standing apart from its body."""
    apart = np.zeros(len(surface.vertices), dtype=bool)
    apart[surface.faces[faces_apart(surface.vertices, surface.faces)].ravel()] = True
    return apart


def faces_apart(vertices: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """(F,) bool: the faces of the pieces standing apart from the body.

    The body is the largest piece (most vertices) grown by every piece that comes within
    ``APART`` times the largest side of the faces' box, again until none does; the pieces
    left stand apart.
    """
    from scipy.spatial import cKDTree  # loaded on use, like the other rules' trees

    used = used_vertices(faces)
    label = vertex_components(len(vertices), faces)
    if len(np.unique(label[used])) < 2:
        return np.zeros(len(faces), dtype=bool)
    gap = APART * float(principal_box_sides(vertices[used])[0])
    body = label == np.argmax(np.bincount(label[used]))
    rest = np.setdiff1d(used, np.flatnonzero(body))
    while len(rest):
        near, _ = cKDTree(vertices[body]).query(vertices[rest], distance_upper_bound=gap)
        joining = np.unique(label[rest[np.isfinite(near)]])
        if not len(joining):
            break
        body |= np.isin(label, joining)
        rest = rest[~np.isin(label[rest], joining)]
    return ~body[faces[:, 0]]


def _layout_without_props(vertices: np.ndarray, faces: np.ndarray, original: np.ndarray, face_ids: np.ndarray,
                          bridge_gap: float, radius: float, symmetry_iterations: int):
    """:func:`body_layout` of the pieces given: held props left out."""
    surface = BodySurface(vertices, faces, original, face_ids, bridge_gap)
    try:
        layout, refusal = _layout(surface, radius, symmetry_iterations), None
    except NotHumanoidError as e:
        layout, refusal = None, e
    suspects = _prop_suspects(surface, layout, radius)
    if suspects:
        label = _pieces(surface)
        for piece in suspects:
            # the surface's faces on its own vertices: keep those off the piece
            kept = np.isin(np.searchsorted(used_vertices(faces), faces[:, 0]), np.flatnonzero(label != piece))
            rest = BodySurface(vertices, faces[kept], original, face_ids[kept], bridge_gap)
            try:
                return rest, _layout(rest, radius, symmetry_iterations)
            except NotHumanoidError:
                continue
    if layout is None:
        raise refusal
    return surface, layout


def _check_layout(surface: BodySurface, frame: BodyFrame, head: int, hands: list, feet: list) -> None:
    """Refuse shapes whose tips are not laid out like a standing body: the head top is the
    highest point but for the head's own surface (horns, a hat) and the feet the lowest;
    hands sit between them, one on each side, and the geodesics are a body's (feet a leg's
    length from the crotch, far from the head)."""
    v, h = surface.vertices, frame.height
    extent = v @ frame.up
    from_head = surface.distance_from(head)
    body = extent[from_head >= HEAD_REACH * h]
    if body.max(initial=-np.inf) - v[head] @ frame.up > 0.03 * h \
            or (v[feet] @ frame.up).max() - extent.min() > 0.1 * h:
        raise NotHumanoidError("the head is not the top or the feet are not the bottom of the shape")
    if min(from_head[f] for f in feet) < 0.8 * h or min(from_head[t] for t in hands) < 0.25 * h:
        raise NotHumanoidError("the hands and feet are too close to the head along the surface")
    if surface.distance_from(feet[0])[feet[1]] < 0.4 * h:
        raise NotHumanoidError("the feet are too close to each other along the surface: no legs")
    c = {t: frame.coordinates(v[t]) for t in [head, *hands, *feet]}
    if max(c[h][1] for h in hands) > c[head][1] - 0.05:
        raise NotHumanoidError("no head above the hands")
    if min(c[h][1] for h in hands) < max(c[f][1] for f in feet) + 0.15:
        raise NotHumanoidError("no hands above the feet")
    middle = c[head][0]
    for pair, what in ((hands, "hands"), (feet, "feet")):
        if (c[pair[0]][0] - middle) * (c[pair[1]][0] - middle) >= 0:
            raise NotHumanoidError(f"the {what} are not on either side of the head")
