"""Landmarks of a two-legged character found from its geometry alone.

The same rules run on the source and on the target, so a landmark links the two
characters even where its anatomical meaning is approximate: what matters is that
both meshes answer the rule the same way.  Everything is intrinsic or measured in
the body's own frame, so the result does not depend on units, up axis, facing
direction, position, or the pose of the arms (T- to A-pose) and legs.

0. **The body.**  Layers (clothes, hair: open shells just outside another piece; eyes
   just inside) are left out (:func:`~asetransfer.geometry.pieces.layer_faces`, the
   correspondence's rule), and so is a held prop (a sword, a staff):
   a piece whose far end stands out as an extremity with no mirror image on the body,
   when the rest still has a body layout (:func:`_body_layout`).
1. **Extremities.**  On the surface graph (pieces bridged, :mod:`~asetransfer.
   geometry.geodesic`) the points farthest from the middle of the body (of its largest
   piece) within a large geodesic ball are the tips: head, two hands, two feet; one per
   limb, and when the five farthest are not laid out like a body the next five are tried.
2. **Which is which, intrinsically.**  The head is the tip with the smallest summed
   geodesic distance to the others (the neck is short; hands reach the head over the
   shoulders, feet over the whole body); the feet have the largest sums.  Bridges
   between pieces can shorten a limb, so the other readings are tried after it,
   needing hands and feet that mirror each other.
3. **Body frame.**  Heels are the points of each foot farthest from its toe tip near
   the ground; up is the normal of the ground plane through heels and toe tips;
   forward is toe minus heel; left = up x forward (right-handed).  Left and right
   feet are named by their side of the head, hands by the foot they are nearer along
   the surface (hands crossed over the body keep their own side).
4. **Rules** in that frame: head top (the highest point of the head: its geodesic
   extremity slides over a flat crown when the middle moves), nose (most forward point
   of the head on its mid-plane), back of the head (straight behind the nose, on the
   head's outside) and ears (at the nose's height),
   hand tips (the hand extremities), fingertips (the hand's own extremities: the thumb
   is the one farthest from the hand tip, along the surface if the fingers are curled next
   to it; index to pinky follow in the order of the shortest chain from the thumb; only
   the thumb is named on a hand without exactly four others; two extremities of one
   blunt fingertip are merged), toe tips, heels,
   and the crotch (where the vertical midway between
   the thighs, found below the top of the shortest path between the toes, leaves the
   body's underside).
5. **Coarse meshes.**  A landmark is a vertex; the crotch, heels, toe tips, fingertips,
   head top, back of the head and ears are also given between vertices (their rules run
   on the triangles: exact cross-sections, clipped strips, line hits), which characters
   linked by landmarks use when one of them is coarse (:func:`between_vertices`): a
   2k-vertex body holds 2-9 vertices a thigh in the crotch rule's ring, and the vertex
   rules put its crotch, heels, toe tips, head top and ears 0.3-4 %H off.

:func:`find_landmarks` refuses a shape without this layout (a quadruped, a cube, a
single limb) with :class:`NotHumanoidError`, and rates every landmark with a
confidence in [0, 1] from the left/right symmetry and frame agreement it shows.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from ..geometry import geodesic
from ..geometry.alignment import principal_box_sides
from ..geometry.pieces import layer_faces
from ..geometry.symmetry import estimate_symmetry_plane, reflect
from ..geometry.topology import used_vertices, vertex_components, weld
from ..model.mesh import Mesh

# Rule proportions, as fractions of the body height H (head top to ground).  They
# describe where a rule looks, not where a landmark is, and were checked on the
# MakeHuman dev bodies (female to heavy male, T- to A-pose) and the fixtures.
FOOT_REACH = 0.2        # a foot: surface within this geodesic distance of its toe tip
HEEL_BAND = 0.05        # the sole: this close to the foot's lowest point
HEEL_STRIP = 0.01       # the heel: the middle of the sole's rearmost strip this deep
# the head: surface within this geodesic distance of the head top -- the whole head of
# a cartoon (head radius 0.1 H), short of the hands in a T-pose (>= 0.45 H away)
HEAD_REACH = 0.35
HEAD_STRIP = 0.01       # the head top: the middle of the head's topmost strip this deep
NOSE_DEPTH = 0.15       # the nose lies within this distance below the head top
EAR_BAND = 0.02         # ears and back of the head: at the nose's height, +- this
MIDLINE_BAND = 0.015    # nose and back of the head: this close to the head top's mid-plane
EAR_STRIP = 0.005       # an ear between vertices: the middle of the head's outermost strip this deep
HAND_REACH = 0.12       # a hand: surface within this geodesic distance of its tip
THUMB_MIN = 0.03        # a thumb tip lies at least this far from the hand tip (else along the surface)
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
# pieces with at least this share of the vertices place the middle of the body: a cut
# body's pieces have >= 0.1 (heavy fixture: 0.05 a hand and forearm), a joint cover 0.02
MIDDLE_PIECE = 0.04
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
# a body whose vertices are this far apart (sqrt(area / vertices), a fraction of H) or more is
# coarse: its crotch, heels, toe tips, fingertips, head top and back and ears are placed
# between vertices.  The dense dev bodies (13-20k vertices) have 0.0054-0.0075, the fixtures
# (5-8k) 0.009-0.013 (the cartoon 0.013), the dev bodies decimated to 4k / 3k / 2k vertices
# 0.0123-0.0138 / 0.0141-0.0159 / 0.0156-0.0204 (pymeshlab's quadric collapse and
# geometry.decimate).  Automatic/hand body-joint error at 4k vertices on the vertices ->
# between them: d01 1.24 -> 1.12, d02 1.33 -> 1.15, d06 1.22 -> 1.10; on the dense bodies
# between them was worse (weights d03 1.19 -> 1.27)
COARSE_SPACING = 0.012
FINGERS = ("index_tip", "middle_tip", "ring_tip", "pinky_tip")
# confidence exp(-(d / scale)^2): d is how far a left/right pair is from mirror images,
# or a midline landmark from the mid-plane (fractions of H)
SYMMETRY_SCALE = 0.03
MIDLINE_SCALE = 0.02


class NotHumanoidError(ValueError):
    """The mesh does not have a head, two hands and two feet laid out like a standing body."""


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


@dataclass(frozen=True)
class Landmarks:
    """Named landmarks of one mesh: ``vertex`` maps a name to a vertex of the mesh as
    given, ``confidence`` maps it to [0, 1]; ``frame`` is the body frame.

    ``surface`` maps the landmarks whose rule can also place them between vertices (the
    crotch, the heels, the toe tips, the fingertips, the head top and back, the ears) to
    ``(face, bary)``, a triangle of the mesh as given and (3,) barycentric coordinates: the same
    rule on the triangles rather than on the vertices.
    ``spacing`` is the distance between the body's vertices were they spread evenly
    (sqrt(area / vertices)) / height: above ``COARSE_SPACING`` they are too sparse for the
    vertex rules (:func:`between_vertices`).
    """

    frame: BodyFrame
    vertex: dict
    confidence: dict
    surface: dict = field(default_factory=dict)
    spacing: float = 0.0

    def positions(self, vertices: np.ndarray, faces: np.ndarray | None = None) -> dict:
        """name -> (3,) position on the mesh ``vertices`` the landmarks were found on; with its
        ``faces``, the landmarks of ``surface`` at their points between vertices."""
        out = {k: np.asarray(vertices[v], dtype=np.float64) for k, v in self.vertex.items()}
        if faces is not None:
            for k, (f, b) in self.surface.items():
                out[k] = np.asarray(b, dtype=np.float64) @ np.asarray(vertices[faces[f]], dtype=np.float64)
        return out

    def moved(self, found_on: Mesh, mesh: Mesh) -> "Landmarks":
        """The landmarks found on ``found_on``, a simplified copy of ``mesh``, on ``mesh``: each
        at its closest point on ``mesh``'s triangles, a vertex landmark at that triangle's
        nearest corner.  The frame, confidence and ``spacing`` stay those of the search."""
        from ..geometry.surface import SurfaceIndex  # on use: only large characters are searched on a copy

        index = SurfaceIndex(mesh.vertices, mesh.faces)
        on_vertices = self.positions(found_on.vertices)
        face, bary, _, _ = index.closest(np.array([on_vertices[k] for k in self.vertex]))
        corners = mesh.faces[face, np.argmax(bary, axis=1)]
        between = self.positions(found_on.vertices, found_on.faces)
        surface = {}
        if self.surface:
            face, bary, _, _ = index.closest(np.array([between[k] for k in self.surface]))
            surface = {k: (int(f), b) for k, f, b in zip(self.surface, face, bary)}
        return Landmarks(self.frame, {k: int(c) for k, c in zip(self.vertex, corners)}, self.confidence,
                         surface, self.spacing)


def between_vertices(*landmarks: Landmarks) -> bool:
    """Whether characters linked by their landmarks use the points between vertices
    (``Landmarks.surface``): when any of them is coarse (``COARSE_SPACING``).  All or none: a
    vertex rule and its rule on the triangles differ by up to 0.5 %H on a dense body, and a
    dense body keeps the vertices that match a source of the same topology vertex for vertex."""
    return max(lm.spacing for lm in landmarks) > COARSE_SPACING


class _Surface:
    """Part of a welded mesh with its surface graph and the geodesic distances the rules share."""

    def __init__(self, vertices: np.ndarray, faces: np.ndarray, original: np.ndarray, face_ids: np.ndarray,
                 bridge_gap: float):
        """``vertices`` and ``faces`` welded, ``original`` the input vertex of each welded vertex,
        ``face_ids`` (F,) the input triangle of each face (the same corners, in order); only the
        vertices ``faces`` use are kept (a lone vertex would be bridged as a piece)."""
        used = used_vertices(faces)
        self.vertices, self.faces = vertices[used], np.searchsorted(used, faces)
        # the input vertex of each vertex kept and the input triangle of each face:
        # landmarks are reported on the input
        self.original = original[used]
        self.face_ids = face_ids
        self.size = float(principal_box_sides(self.vertices)[0])  # however the body is turned
        self.graph = geodesic.surface_graph(self.vertices, self.faces, bridge_gap * self.size)
        # the middle: the vertex nearest the centroid of the large pieces.  Small ones (joint
        # covers, a prop, a robot's finger segments) would pull it away: the nearest vertex
        # to it jumps from the belly to the back, and the toe tips and the ground plane
        # follow (1.3 degrees with joint covers on the heavy fixture); a body's own pieces
        # (cut at the joints) are large and keep it where the whole body has it
        label = vertex_components(len(self.vertices), self.faces)
        count = np.bincount(label)
        large = count[label] >= MIDDLE_PIECE * len(label)
        centre = self.vertices[large].mean(axis=0)
        self.middle = int(np.argmin(np.linalg.norm(self.vertices - centre, axis=1)))
        self.from_middle = geodesic.distances(self.graph, self.middle)
        self._from = {}

    def distance_from(self, v: int) -> np.ndarray:
        if v not in self._from:
            self._from[v] = geodesic.distances(self.graph, v)
        return self._from[v]


def _welded(mesh: Mesh):
    """The surface of ``mesh`` welded across seams: vertices, faces, and the first input
    vertex of each welded vertex."""
    used = used_vertices(mesh.faces)
    welded, faces, index = weld(mesh.vertices[used], np.searchsorted(used, mesh.faces))
    original = np.zeros(len(welded), dtype=np.int64)
    original[index[::-1]] = used[::-1]
    return welded, faces, original


def _roles(surface: _Surface, tips: list) -> list:
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
    return out


@dataclass(frozen=True)
class _Layout:
    """The five tips of a body, its frame, its heels (toe -> heel) and the feet's agreement."""

    head: int
    hands: list
    feet: list
    frame: BodyFrame
    heels: dict
    agreement: float


def _tips(surface: _Surface, radius: float) -> list:
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


def _candidates(surface: _Surface, tips: list):
    """(head, hands, feet) candidates among the limbs' extremities, most likely first: the
    five farthest under each of their roles (:func:`_roles`), then the other sets of five
    (a cut's rim or a prop can stand out farther than a hand)."""
    for five in itertools.combinations(tips, 5):  # farthest first: the top five come first
        yield from _roles(surface, list(five))


def _layout(surface: _Surface, radius: float, symmetry_iterations: int) -> _Layout:
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
            frame, _, _, top = _frame(surface, head, feet, 0)
            _check_layout(surface, frame, top, hands, feet)
            frame, heels, agreement, top = _frame(surface, head, feet, symmetry_iterations)
            _check_layout(surface, frame, top, hands, feet)
            layout = _Layout(top, hands, feet, frame, heels, agreement)
            if k > 0 and not _paired(surface.vertices, layout):
                raise NotHumanoidError("the hands and feet are not mirror images")
        except NotHumanoidError as e:
            refusal = refusal or e
            continue
        return layout
    raise refusal


def _pieces(surface: _Surface) -> np.ndarray:
    """(N,) piece label of each vertex of the surface (its triangles, without bridges)."""
    return vertex_components(len(surface.vertices), surface.faces)


def _unmirrored(surface: _Surface, layout: _Layout) -> list:
    """The hand and foot tips whose mirror image across the body's mid-plane is off the
    surface by more than ``PROP_ASYMMETRY``: the tip of a prop, not of a limb."""
    from scipy.spatial import cKDTree  # loaded on use, like the other rules' trees

    v, f = surface.vertices, layout.frame
    tips = np.array([*layout.hands, *layout.feet])
    gap, _ = cKDTree(v).query(reflect(v[tips], _mid_plane(v, layout)))
    return tips[gap > PROP_ASYMMETRY * f.height].tolist()


def _paired(v: np.ndarray, layout: _Layout) -> bool:
    """Whether each hand tip and each foot tip is the other's mirror image across the
    body's mid-plane, within ``PROP_ASYMMETRY``."""
    plane = _mid_plane(v, layout)
    for a, b in (layout.hands, layout.feet):
        if np.linalg.norm(reflect(v[[a]], plane)[0] - v[b]) > PROP_ASYMMETRY * layout.frame.height:
            return False
    return True


def _mid_plane(v: np.ndarray, layout: _Layout) -> np.ndarray:
    """The body's mid-plane ``(left, offset)``: through the head top, normal to the left axis."""
    left = layout.frame.left
    return np.append(left, v[layout.head] @ left)


def _prop_suspects(surface: _Surface, layout, radius: float) -> list:
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


def _body_layout(vertices: np.ndarray, faces: np.ndarray, original: np.ndarray, face_ids: np.ndarray,
                 bridge_gap: float, radius: float, symmetry_iterations: int):
    """The surface of the body without held props, and its layout.

    A prop held in a hand (a sword, a staff, a shield) is a piece of its own whose far
    end is an extremity with no mirror image on the body: it hides the hand's own tip
    or breaks the layout.  Such a piece is left out when the rest has a body layout.

    Returns
    -------
    surface : :class:`_Surface` of the body; layout : its :class:`_Layout`.
    """
    surface = _Surface(vertices, faces, original, face_ids, bridge_gap)
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
            rest = _Surface(vertices, faces[kept], original, face_ids[kept], bridge_gap)
            try:
                return rest, _layout(rest, radius, symmetry_iterations)
            except NotHumanoidError:
                continue
    if layout is None:
        raise refusal
    return surface, layout


def _sole(surface: _Surface, toe: int, up: np.ndarray, height: float) -> np.ndarray:
    """The vertices of a foot near its lowest point (along ``up``)."""
    foot = np.flatnonzero(surface.distance_from(toe) < FOOT_REACH * height)
    h = surface.vertices[foot] @ up
    return foot[h < h.min() + HEEL_BAND * height]


def _rearmost(v: np.ndarray, sole: np.ndarray, forward: np.ndarray, height: float) -> int:
    """The heel, once the facing is known: the middle of the sole's rearmost strip (a flat
    heel has no single rearmost point)."""
    f = v[sole] @ forward
    rear = sole[f < f.min() + HEEL_STRIP * height]
    return int(rear[np.argmin(np.linalg.norm(v[rear] - v[rear].mean(axis=0), axis=1))])


def _sole_end_point(surface: _Surface, toe: int, up: np.ndarray, forward: np.ndarray, height: float):
    """The heel of :func:`_rearmost` between vertices (``forward`` the body's; the toe tip
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
    return _strip_middle(v, faces, ids, ((up, top), (forward, rear + HEEL_STRIP * height)))


def _strip_middle(v: np.ndarray, faces: np.ndarray, ids: np.ndarray, planes):
    """The point of the strip of triangles ``faces[ids]`` inside ``planes`` (cut out of them
    exactly, :func:`_clipped`) nearest the strip's area-weighted centroid: ``(face, bary)``
    on the surface, or None when the strip is empty."""
    f = faces[ids]
    row, tri = _clipped(v, f, planes)
    if not len(tri):
        return None
    area = 0.5 * np.linalg.norm(np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]), axis=1)
    if not area.sum() > 0:
        return None
    centre = (area @ tri.mean(axis=1)) / area.sum()
    # the nearest point of the strip to its centroid, on the triangle it lies in
    from ..geometry.surface import barycentric, closest_on_triangles
    q = closest_on_triangles(centre, tri[:, 0], tri[:, 1], tri[:, 2])
    k = int(np.argmin(np.linalg.norm(q - centre, axis=1)))
    bary = np.clip(barycentric(q[k][None], v, f, row[[k]])[0], 0.0, None)  # inside: rounding only
    return int(ids[row[k]]), bary / bary.sum()


def _head_top_point(surface: _Surface, top: int, up: np.ndarray, height: float):
    """The head top of :func:`_head_top` between vertices: the middle of the head's topmost
    ``HEAD_STRIP``, cut out of the triangles exactly (``top``: the head top's vertex).  On a
    coarse body the strip holds a few vertices, and the one nearest their middle was 0.7-1.8
    %H off the dense body's (the dev bodies at 2k vertices)."""
    v, faces = surface.vertices, surface.faces
    head = surface.distance_from(top) < HEAD_REACH * height
    ids = np.flatnonzero(head[faces].any(axis=1))
    highest = float((v[faces[ids]] @ up).max())
    return _strip_middle(v, faces, ids, ((-up, -(highest - HEAD_STRIP * height)),))


def _fingertip_point(surface: _Surface, tip: int, palm: np.ndarray, height: float):
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
    return _strip_middle(v, faces, ids, ((-direction, -(end - FINGER_STRIP * height)),))


def _clipped(v: np.ndarray, faces: np.ndarray, planes):
    """The parts of triangles ``faces`` (K, 3) on the inner side (``x @ n <= offset``) of every
    ``(n, offset)`` in ``planes``, as triangles: (T,) row in ``faces`` and (T, 3, 3) corners."""
    corner = v[faces]  # (K, 3, 3)
    maybe, inside = np.ones(len(faces), dtype=bool), np.ones(len(faces), dtype=bool)
    for n, o in planes:
        d = corner @ n
        maybe &= d.min(axis=1) <= o
        inside &= d.max(axis=1) <= o
    # whole triangles as they are; only those across a plane are cut, one at a time
    rows, out = list(np.flatnonzero(inside)), list(corner[inside])
    for k in np.flatnonzero(maybe & ~inside):
        poly = corner[k]
        for n, o in planes:
            d = poly @ n - o
            kept = []
            for i in range(len(poly)):  # Sutherland-Hodgman, one edge at a time
                j = (i + 1) % len(poly)
                if d[i] <= 0:
                    kept.append(poly[i])
                if (d[i] < 0 < d[j]) or (d[j] < 0 < d[i]):
                    kept.append(poly[i] + d[i] / (d[i] - d[j]) * (poly[j] - poly[i]))
            poly = np.array(kept).reshape(-1, 3)
            if len(poly) < 3:
                break
        for i in range(1, len(poly) - 1):  # a convex polygon's fan
            rows.append(k)
            out.append(poly[[0, i, i + 1]])
    return np.array(rows, dtype=np.int64), np.array(out).reshape(-1, 3, 3)


def _mirror_plane(surface: _Surface, left: np.ndarray, head_top: np.ndarray, iterations: int):
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


def _head_top(surface: _Surface, head: int, up: np.ndarray, height: float, midline=None) -> int:
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


def _frame(surface: _Surface, head: int, feet: list, symmetry_iterations: int):
    """The body frame, the heels (toe -> heel), the feet's agreement and the head top, from
    the head's extremity and the toe tips."""
    v = surface.vertices
    rough_up = v[head] - 0.5 * (v[feet[0]] + v[feet[1]])
    height = float(np.linalg.norm(rough_up))
    if not height > 0:
        raise NotHumanoidError("the head and feet coincide")
    rough_up /= height
    soles = {t: _sole(surface, t, rough_up, height) for t in feet}
    # a first heel, for the facing: the sole point farthest from the toe tip
    heels = {t: int(soles[t][np.argmax(np.linalg.norm(v[soles[t]] - v[t], axis=1))]) for t in feet}
    # up: the normal of the plane through both soles (the head-to-feet line leans with
    # the stance; many sole points average out a rounded or uneven foot)
    ground = v[np.concatenate([soles[t] for t in feet])]
    normal = np.linalg.svd(ground - ground.mean(axis=0), full_matrices=False)[2][2]
    normal = normal if normal @ rough_up > 0 else -normal
    up = normal if normal @ rough_up > np.cos(np.radians(30)) else rough_up
    steps = [v[t] - v[heels[t]] for t in feet]
    steps = [s - (s @ up) * up for s in steps]
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
    # each heel with the up and height its sole was found with: its point is found once, by _named
    heels = {t: (_rearmost(v, soles[t], forward, height), rough_up, height) for t in feet}
    base = ground.mean(axis=0)
    height = float((v[head] - base) @ up)
    frame = BodyFrame(up, forward, np.cross(up, forward), height, base)
    agreement = float(np.clip((steps[0] @ steps[1] - 0.5) / 0.5, 0.0, 1.0))
    return frame, heels, agreement, head


def _check_layout(surface: _Surface, frame: BodyFrame, head: int, hands: list, feet: list) -> None:
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


def _head_rules(surface: _Surface, frame: BodyFrame, head: int):
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
    if level.any():
        out["ear.L"] = region[np.argmax(np.where(level, lat, -np.inf))]
        out["ear.R"] = region[np.argmin(np.where(level, lat, np.inf))]
        points.update(_ear_points(surface, frame, region, v[region[nose]]))
    return out, points


def _ear_points(surface: _Surface, frame: BodyFrame, region: np.ndarray, nose: np.ndarray) -> dict:
    """The ears between vertices, by name, ``(face, bary)``: the middle of the outermost
    ``EAR_STRIP`` of the head's triangles (those of the vertices ``region``) cut to the band
    ``EAR_BAND`` above and below the ``nose``, on either side."""
    c = frame.coordinates(surface.vertices)  # (left, up, forward) / H: the strip is cut there
    ids = np.flatnonzero(np.isin(surface.faces, region).all(axis=1))
    f = surface.faces[ids]
    level = float(frame.coordinates(nose[None])[0, 1])
    low, high = level - EAR_BAND, level + EAR_BAND
    # the band's corners: the head's vertices in it and where its edges cross its bounds
    used = used_vertices(f)
    corners = np.concatenate([c[used][(c[used, 1] >= low) & (c[used, 1] <= high), 0],
                              _section(c, f, low)[:, 0], _section(c, f, high)[:, 0]])
    if not len(corners):
        return {}
    up, left = np.eye(3)[1], np.eye(3)[0]
    band = ((up, high), (-up, -low))
    out = {}
    for name, sign in (("ear.L", 1.0), ("ear.R", -1.0)):
        outermost = float((sign * corners).max())
        point = _strip_middle(c, surface.faces, ids, (*band, (-sign * left, -(outermost - EAR_STRIP))))
        if point is not None:
            out[name] = point
    return out


def _back_of_head(surface: _Surface, frame: BodyFrame, region: np.ndarray, nose: np.ndarray):
    """Where the line from behind straight to the ``nose`` tip first meets the head (the
    triangles of the vertices ``region``): ``((face, bary), point)``, or None when it meets
    nothing."""
    c = frame.coordinates(surface.vertices)
    inside = np.isin(surface.faces, region).all(axis=1)
    faces = surface.faces[inside]
    at = frame.coordinates(nose[None])[0]
    hits = _line_hits(c, faces, 2, (at[0], at[1]))
    if not len(hits):
        return None
    first = int(np.argmin(hits[:, 1]))  # the rearmost crossing: the outside, seen from behind
    face = int(np.flatnonzero(inside)[int(hits[first, 0])])
    bary = hits[first, 2:5]
    return (face, bary), bary @ surface.vertices[surface.faces[face]]


def _fingertips(surface: _Surface, tip: int, height: float) -> dict:
    """The fingertips of the hand whose tip is ``tip``, by name.

    The fingertips are the hand's extremities seen from the middle of the body (nothing
    within ``FINGER_PROMINENCE`` along the surface is farther: not a bump in the web
    between two fingers), farthest first, each at least ``FINGER_SEPARATION`` along the
    surface from a farther one (the corners of one blunt fingertip make one tip).  The
    thumb is the fingertip farthest from the hand tip, once bumps on the hand are left out
    (:func:`_without_bumps`): in space, or along the surface when curled fingers bring
    every tip within ``THUMB_MIN`` of the hand tip; with exactly four others they are
    index, middle, ring and pinky in the order of the shortest chain through them, from
    the end on the thumb's side (the hand's own layout, whatever its pose).  A hand with
    another count (mittens, three cartoon fingers) names only its thumb.
    """
    v, g = surface.vertices, surface.graph
    hand = np.flatnonzero(surface.distance_from(tip) < HAND_REACH * height)
    sub, far = g[hand][:, hand], surface.from_middle[hand]
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
    tips = hand[peaks[kept]]
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
        # side by side, neighbouring fingertips are the nearest: their order is the shortest
        # chain through all four (a distance along the surface would cut across the palm to
        # the short pinky), and the index is the end on the thumb's side across the hand.
        # Not the end nearest the thumb tip: a thumb lying along the hand (Rigify's) is as
        # near the pinky's tip, and the shortest chain from it named one hand's fingers in
        # reverse on a Blender-built body
        def chain(order):
            return float(np.linalg.norm(np.diff(v[list(order)], axis=0), axis=1).sum())
        best = min(itertools.permutations(sorted(others)), key=chain)
        # across the hand: the chain's ends less their offset along the hand (a short
        # pinky's tip lies back toward the wrist, as the thumb's does)
        along = v[tip] - v[hand].mean(axis=0)
        along /= np.linalg.norm(along)
        across = v[best[-1]] - v[best[0]]
        across -= (across @ along) * along
        if (v[thumb] - v[list(best)].mean(axis=0)) @ across > 0:
            best = best[::-1]
        out.update(zip(FINGERS, best))
    return out


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


def _named(surface: _Surface, frame: BodyFrame, head: int, hands: list, feet: list, heels: dict):
    """Every landmark's welded vertex, by name, and ``(face, bary)`` on the surface of those a
    rule also places between vertices (``Landmarks.surface``)."""
    v = surface.vertices
    side = {t: "L" if (v[t] - v[head]) @ frame.left > 0 else "R" for t in [*hands, *feet]}
    side.update(_hand_sides(surface, hands, feet, side))
    out, points = {"head_top": head}, {}
    for t in hands:
        out[f"hand_tip.{side[t]}"] = t
        palm = v[surface.distance_from(t) < HAND_REACH * frame.height].mean(axis=0)
        for name, x in _fingertips(surface, t, frame.height).items():
            out[f"{name}.{side[t]}"] = x
            points[f"{name}.{side[t]}"] = _fingertip_point(surface, x, palm, frame.height)
    for t in feet:
        out[f"toe_tip.{side[t]}"] = t
        heel, sole_up, sole_height = heels[t]
        out[f"heel.{side[t]}"] = heel
        points[f"heel.{side[t]}"] = _sole_end_point(surface, t, sole_up, frame.forward, sole_height)
        points[f"toe_tip.{side[t]}"] = _sole_end_point(surface, t, sole_up, -frame.forward, sole_height)
    crotch, points["crotch"] = _crotch(surface, frame, feet)
    if crotch is not None:  # none where the thighs are joined: the legs part below it
        out["crotch"] = crotch
    points["head_top"] = _head_top_point(surface, head, frame.up, frame.height)
    head_vertices, head_points = _head_rules(surface, frame, head)
    out.update(head_vertices)
    points.update(head_points)
    return {k: int(x) for k, x in out.items()}, {k: p for k, p in points.items() if p is not None}


def _crotch(surface: _Surface, frame: BodyFrame, feet: list):
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
    section = _section(c, surface.faces[near[surface.faces].any(axis=1)], level)
    vertex, point = fork, None
    hit = _midway_hit(c, surface.faces, band, c[fork])
    if hit is not None:
        face = surface.faces[hit[0]]
        vertex = int(face[np.argmin(np.linalg.norm(c[face] - hit[1], axis=1))])
    hit = _midway_hit(c, surface.faces, section, c[fork])
    if hit is not None:
        point = (hit[0], hit[2])
    return vertex, point


def _joined_above(c: np.ndarray, faces: np.ndarray, fork: np.ndarray) -> bool:
    """Whether the legs stay joined above the ``fork`` (3,): every section ``JOINED_CHECKS``
    above it is shallower on the midline than ``JOINED_RATIO`` of its deepest (creased front
    and back, or filled in short of the full depth).  ``c`` (N, 3) vertex coordinates
    (left, up, forward) / H; ``faces`` the surface around the fork.  15-64 ms on the dev
    bodies."""
    for up in JOINED_CHECKS:
        depth = []
        for left in fork[0] + np.linspace(-THIGH_SPAN, THIGH_SPAN, 31):
            hits = _line_hits(c, faces, 2, (left, fork[1] + up))
            depth.append(float(np.ptp(hits[:, 1])) if len(hits) else 0.0)
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
    below = _line_hits(c, faces, 1, (left, forward))
    below = below[below[:, 1] < fork[1] + PELVIS_DEPTH]
    if len(below) == 0:
        return None
    top = int(np.argmax(below[:, 1]))
    return int(below[top, 0]), np.array([left, below[top, 1], forward]), below[top, 2:5]


def _section(c: np.ndarray, faces: np.ndarray, level: float) -> np.ndarray:
    """(K, 3) points where the edges of ``faces`` cross the height ``level``; ``c`` (N, 3) are
    vertex coordinates (left, up, forward).  The exact cross-section, not the vertices of a
    band around it: a band holds few vertices of a coarse mesh, and their bounding box shrank
    (vertices 3-4 %H apart on the dev bodies decimated to 2k vertices)."""
    a, b = c[faces].reshape(-1, 3), c[np.roll(faces, -1, axis=1)].reshape(-1, 3)
    da, db = a[:, 1] - level, b[:, 1] - level
    cross = (da < 0) != (db < 0)
    t = da[cross] / (da[cross] - db[cross])
    return a[cross] + t[:, None] * (b[cross] - a[cross])


def _line_hits(c: np.ndarray, faces: np.ndarray, axis: int, at) -> np.ndarray:
    """(K, 5) faces crossed by the line along body axis ``axis`` (0 left, 1 up, 2 forward)
    through ``at`` (the other two coordinates, in order), with the coordinate of each crossing
    along ``axis`` and its (3) barycentric coordinates; ``c`` (N, 3) are vertex coordinates
    (left, up, forward)."""
    across = [k for k in range(3) if k != axis]
    tri = c[faces][:, :, across] - np.asarray(at, dtype=np.float64)  # (F, 3, 2) seen along it, line at 0
    # twice the signed area the line makes with each edge: all of one sign inside
    a, b = tri[:, [1, 2, 0]], tri[:, [2, 0, 1]]
    w = a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]  # (F, 3)
    area = w.sum(axis=1)
    inside = (np.abs(area) > 0) & ((w >= 0).all(axis=1) | (w <= 0).all(axis=1))
    k = np.flatnonzero(inside)
    bary = w[k] / area[k, None]
    along = (bary * c[faces[k]][:, :, axis]).sum(axis=1)
    return np.column_stack([k, along, bary])


def _hand_sides(surface: _Surface, hands: list, feet: list, side: dict) -> dict:
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


def _confidence(v: np.ndarray, frame: BodyFrame, named: dict, agreement: float) -> dict:
    """Per landmark: left/right pairs by how nearly they mirror each other, midline
    landmarks by their distance from the mid-plane, all capped by the frame's agreement."""
    midline = [named[n] for n in ("head_top", "crotch") if n in named]
    mid = float(np.mean(v[midline] @ frame.left))
    out = {}
    for name, x in named.items():
        base, _, s = name.partition(".")
        if s:
            other = named.get(f"{base}.{'R' if s == 'L' else 'L'}")
            if other is None:
                out[name] = 0.5 * agreement
                continue
            mirrored = reflect(v[[other]], np.append(frame.left, mid))[0]
            d = np.linalg.norm(v[x] - mirrored) / frame.height / SYMMETRY_SCALE
        else:
            d = abs(v[x] @ frame.left - mid) / frame.height / MIDLINE_SCALE
        out[name] = round(float(agreement * np.exp(-d * d)), 4)
    return out


def find_landmarks(mesh: Mesh, *, bridge_gap: float, extremity_radius: float,
                   symmetry_iterations: int, layers: dict | None = None) -> Landmarks:
    """Landmarks of a standing two-legged character (module docstring: the rules).

    Parameters
    ----------
    mesh : the character, in any units, frame and position; several pieces allowed.
    bridge_gap : pieces closer than this fraction of the bounding box's largest side
        are joined where they come closest (``MarkersConfig.bridge_gap``).
    extremity_radius : a tip is farthest from the middle within this geodesic radius,
        as a fraction of the bounding box's largest side (``MarkersConfig.extremity_radius``).
    symmetry_iterations : steps of the mirror-plane fit that sets left and right
        (``SkeletonConfig.symmetry_iterations``, the same fit as mirroring's; 0: left
        from the feet alone).
    layers : keyword arguments of :func:`~asetransfer.geometry.pieces.layer_faces`
        (``gap``, ``distance``, ``angle``, ``fraction``: the correspondence's layer rule,
        ``CorrespondenceConfig``); pieces lying over the body (clothes, hair, covers, eyes)
        are left out.  None: every piece is searched.

    Returns
    -------
    :class:`Landmarks` on the mesh's own vertices.

    Raises
    ------
    NotHumanoidError when the shape has no head, hands and feet laid out like a body.
    """
    if mesh.n_faces == 0:
        raise NotHumanoidError("the mesh has no faces")
    vertices, faces, original = _welded(mesh)
    kept = np.ones(len(faces), dtype=bool) if layers is None else ~layer_faces(vertices, faces, **layers)
    surface, layout = _body_layout(vertices, faces[kept], original, np.flatnonzero(kept), bridge_gap,
                                   extremity_radius, symmetry_iterations)
    frame = layout.frame
    named, points = _named(surface, frame, layout.head, layout.hands, layout.feet, layout.heels)
    confidence = _confidence(surface.vertices, frame, named, layout.agreement)
    # the vertices' spacing were they spread evenly: a decimator leaves more of them on the
    # hands and face, so the median edge of a 2k-vertex body ranged over 1.1-2.1 %H
    corner = surface.vertices[surface.faces]
    area = 0.5 * np.linalg.norm(np.cross(corner[:, 1] - corner[:, 0], corner[:, 2] - corner[:, 0]), axis=1).sum()
    spacing = float(np.sqrt(area / len(surface.vertices))) / frame.height
    return Landmarks(frame, {k: int(surface.original[x]) for k, x in named.items()}, confidence,
                     {k: (int(surface.face_ids[f]), b) for k, (f, b) in points.items()}, spacing)
