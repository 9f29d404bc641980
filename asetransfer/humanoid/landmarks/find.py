"""The landmarks of one mesh: the search that runs every rule, and its result.

:func:`find_landmarks` welds the mesh, leaves out layers (clothes, hair, eyes: the
correspondence's rule, :func:`~asetransfer.geometry.pieces.layer_faces`) and held props,
finds the body's layout and frame (:mod:`.layout`, :mod:`.frame`), names the landmarks by
side (feet by their side of the head, hands by the foot they are nearer along the surface,
:func:`~.hands.hand_sides`), places those a rule also gives between vertices, adds the
elbows and knees where a limb narrows again (:mod:`.limbs`, on the whole mesh) and rates
them (:mod:`.confidence`).  :class:`Landmarks` holds them on the mesh as given; a body whose
vertices are ``COARSE_SPACING`` apart or more is coarse, and characters linked by their
landmarks use the points between vertices when any of them is (:func:`between_vertices`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...geometry.pieces import layer_faces
from ...geometry.topology import vertex_components, welded_surface
from ...model.mesh import Mesh
from .confidence import confidence
from .crotch import crotch
from .feet import sole_end_point
from .frame import BodyFrame
from .hands import FINGERS, HAND_REACH, farthest_along_hand, fingertip_point, fingertips, hand_sides
from .head import head_rules, head_top_point
from .layout import body_layout
from .limbs import limb_points
from .neck import nearest_corner, throat_and_nape
from .surface import BodySurface, NotHumanoidError

# a body whose vertices are this far apart (sqrt(area / vertices), a fraction of H) or more is
# coarse: its crotch, heels, toe tips, fingertips, head top and back and ears are placed
# between vertices.  The dense dev bodies (13-20k vertices) have 0.0054-0.0075, the fixtures
# (5-8k) 0.009-0.013 (the cartoon 0.013), the dev bodies decimated to 4k / 3k / 2k vertices
# 0.0123-0.0138 / 0.0141-0.0159 / 0.0156-0.0204 (pymeshlab's quadric collapse and
# geometry.decimate).  Automatic/hand body-joint error at 4k vertices on the vertices ->
# between them: d01 1.24 -> 1.12, d02 1.33 -> 1.15, d06 1.22 -> 1.10; on the dense bodies
# between them was worse (weights d03 1.19 -> 1.27)
COARSE_SPACING = 0.012


@dataclass(frozen=True)
class Landmarks:
    """Named landmarks of one mesh: ``vertex`` maps a name to a vertex of the mesh as
    given, ``confidence`` maps it to [0, 1]; ``frame`` is the body frame.

    ``surface`` maps the landmarks whose rule can also place them between vertices (the
    crotch, the heels, the toe tips, the fingertips, the head top and back, the ears, the throat
    and the nape, whose vertex is the nearest corner of that point) to
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
    agreement: float = 1.0   # the frame's own confidence (how nearly the feet agree), capping every landmark's
    # a source's landmarks its rig replaced (rig.checked_by), as its shape read them:
    # name -> (vertex, (face, bary) or None)
    shape_reading: dict = field(default_factory=dict)

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
        on_vertices, between = self.positions(found_on.vertices), self.positions(found_on.vertices, found_on.faces)
        points = [on_vertices[k] for k in self.vertex] + [between[k] for k in self.surface]  # one search
        face, bary, corners = on_triangles(mesh.vertices, mesh.faces, np.array(points))
        n = len(self.vertex)
        surface = {k: (int(f), b) for k, f, b in zip(self.surface, face[n:], bary[n:])}
        return Landmarks(self.frame, {k: int(c) for k, c in zip(self.vertex, corners[:n])}, self.confidence,
                         surface, self.spacing, self.agreement)


def on_triangles(vertices: np.ndarray, faces: np.ndarray, points: np.ndarray):
    """``points`` (K, 3) at their closest points on the triangles ``faces`` of ``vertices``:
    ``(face (K,), bary (K, 3), corner (K,))``, corner the vertex of that triangle nearest the
    point (a landmark's vertex, its point between vertices being ``(face, bary)``)."""
    from ...geometry.surface import SurfaceIndex  # on use: most searches need no closest points

    face, bary, _, _ = SurfaceIndex(vertices, faces).closest(points)
    return face, bary, faces[face, np.argmax(bary, axis=1)]


def hand_tips_carried_out(landmarks: Landmarks, solid: Mesh, mesh: Mesh) -> Landmarks:
    """``landmarks`` found on ``solid`` (the solid of ``mesh``'s pieces) and moved to ``mesh``
    (:meth:`Landmarks.moved`), their hand tips carried out to ``mesh``'s farthest point
    along each hand (:func:`~.hands.farthest_along_hand`): the solid loses thin fingers."""
    h = landmarks.frame.height
    vertex = dict(landmarks.vertex)
    tips = [name for name in ("hand_tip.L", "hand_tip.R") if name in vertex]
    for name in tips:
        tip = mesh.vertices[vertex[name]]
        hand = solid.vertices[np.linalg.norm(solid.vertices - tip, axis=1) < HAND_REACH * h]
        out = farthest_along_hand(mesh.vertices, tip, hand, h) if len(hand) else None
        vertex[name] = vertex[name] if out is None else out
    # rated again where they now are (how nearly they mirror each other)
    rated = confidence(mesh.vertices, landmarks.frame, vertex, landmarks.agreement)
    return Landmarks(landmarks.frame, vertex, {**landmarks.confidence, **{n: rated[n] for n in tips}},
                     landmarks.surface, landmarks.spacing, landmarks.agreement)


def between_vertices(*landmarks: Landmarks) -> bool:
    """Whether characters linked by their landmarks use the points between vertices
    (``Landmarks.surface``): when any of them is coarse (``COARSE_SPACING``).  All or none: a
    vertex rule and its rule on the triangles differ by up to 0.5 %H on a dense body, and a
    dense body keeps the vertices that match a source of the same topology vertex for vertex."""
    return max(lm.spacing for lm in landmarks) > COARSE_SPACING


def _named(surface: BodySurface, frame: BodyFrame, head: int, hands: list, feet: list, heels: dict):
    """Every landmark's welded vertex, by name, and ``(face, bary)`` on the surface of those a
    rule also places between vertices (``Landmarks.surface``)."""
    v = surface.vertices
    side = {t: "L" if (v[t] - v[head]) @ frame.left > 0 else "R" for t in [*hands, *feet]}
    side.update(hand_sides(surface, hands, feet, side))
    out, points = {"head_top": head}, {}
    for t in hands:
        out[f"hand_tip.{side[t]}"] = t
        palm = v[surface.distance_from(t) < HAND_REACH * frame.height].mean(axis=0)
        for name, x in fingertips(surface, t, frame.height).items():
            out[f"{name}.{side[t]}"] = x
            points[f"{name}.{side[t]}"] = fingertip_point(surface, x, palm, frame.height)
    for t in feet:
        out[f"toe_tip.{side[t]}"] = t
        heel, sole_up, sole_height = heels[t]
        out[f"heel.{side[t]}"] = heel
        points[f"heel.{side[t]}"] = sole_end_point(surface, t, sole_up, frame.forward, sole_height)
        points[f"toe_tip.{side[t]}"] = sole_end_point(surface, t, sole_up, -frame.forward, sole_height)
    crotch_vertex, points["crotch"] = crotch(surface, frame, feet)
    if crotch_vertex is not None:  # none where the thighs are joined: the legs part below it
        out["crotch"] = crotch_vertex
    points["head_top"] = head_top_point(surface, head, frame)
    head_vertices, head_points = head_rules(surface, frame, head)
    out.update(head_vertices)
    points.update(head_points)
    crotch_at = float(v[out["crotch"]] @ frame.up) if "crotch" in out else None
    neck = throat_and_nape(v, surface.faces, frame, float(v[head] @ frame.left), crotch_at,
                            float(v[out.get("nose_tip", head)] @ frame.up))
    points.update(neck)
    out.update({k: nearest_corner(surface.faces, p) for k, p in neck.items()})
    return {k: int(x) for k, x in out.items()}, {k: p for k, p in points.items() if p is not None}


def _all_fingers(named: dict) -> bool:
    return all(f"{f}.{s}" in named for f in ("thumb_tip", *FINGERS) for s in "LR")


def _with_hand_layers(vertices, faces, original, kept, bridge_gap, surface, layout, named, points):
    """The landmarks again with the layers around the hands kept, when that names every finger.

    A mannequin's fingers are chains of pieces with a ball at each knuckle, and its palm rests
    on them: the layer rule (covers over a body) takes them all for layers, and the hand tip is
    left on one bone with no fingers (the Quaternius female: fingers 3.4 %H off with automatic
    markers).  The pieces left out that come within ``HAND_REACH`` of a hand tip are put back
    whole and the rules run again on that surface in the same frame.  Whole: an arm in a piece
    of its own hangs off the body as a layer does, and cut at the reach it left the hand and a
    stub of forearm joined to the body by their nearest point, the thigh of an arm held low
    (her arms 70 degrees down: the stub's end named the thumb, 13 %H off).  Kept only when
    they name all ten fingertips, so a glove or a bracelet over a hand whose fingers the rules
    already read changes nothing.  Returns ``(surface, named, points)``.
    """
    reach = HAND_REACH * layout.frame.height
    tips = surface.vertices[layout.hands]
    near = np.linalg.norm(vertices[:, None, :] - tips[None, :, :], axis=2).min(axis=1) < reach
    piece = vertex_components(len(vertices), faces)[faces[:, 0]]
    back = ~kept & np.isin(piece, piece[near[faces].any(axis=1)])
    if not back.any():
        return surface, named, points
    widened = kept | back
    wide = BodySurface(vertices, faces[widened], original, np.flatnonzero(widened), bridge_gap)
    index = {int(o): i for i, o in enumerate(wide.original)}
    move = lambda x: index[int(surface.original[x])]  # noqa: E731 -- same welded vertex, other numbering
    heels = {move(t): (move(h), up, height) for t, (h, up, height) in layout.heels.items()}
    again = _named(wide, layout.frame, move(layout.head), [move(t) for t in layout.hands],
                   [move(t) for t in layout.feet], heels)
    if not _all_fingers(again[0]):
        return surface, named, points
    return (wide, *again)


def find_landmarks(mesh: Mesh, *, bridge_gap: float, extremity_radius: float,
                   symmetry_iterations: int, layers: dict | None = None, limbs_on: Mesh | None = None) -> Landmarks:
    """Landmarks of a standing two-legged character (the rules: the package docstring).

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
    layers : the correspondence's :class:`~asetransfer.geometry.pieces.LayerRule`; pieces
        lying over the body (clothes, hair, covers, eyes) are left out.  None: every piece
        is searched.
    limbs_on : the mesh whose limbs' sections give the elbows and knees (:mod:`.limbs`), in
        the same place as ``mesh``: the character's own pieces when ``mesh`` is the solid
        they make (its solid bulges where a ring sits over a joint; its pieces tell a limb
        in pieces, which is not read).  None: ``mesh``.

    Returns
    -------
    :class:`Landmarks` on the mesh's own vertices.

    Raises
    ------
    NotHumanoidError when the shape has no head, hands and feet laid out like a body.
    """
    if mesh.n_faces == 0:
        raise NotHumanoidError("the mesh has no faces")
    vertices, faces, original = welded_surface(mesh.vertices, mesh.faces)
    kept = np.ones(len(faces), dtype=bool) if layers is None else ~layer_faces(vertices, faces, layers)
    surface, layout = body_layout(vertices, faces[kept], original, np.flatnonzero(kept), bridge_gap,
                                   extremity_radius, symmetry_iterations)
    frame = layout.frame
    named, points = _named(surface, frame, layout.head, layout.hands, layout.feet, layout.heels)
    if not kept.all() and not _all_fingers(named):
        surface, named, points = _with_hand_layers(vertices, faces, original, kept, bridge_gap, surface, layout,
                                                   named, points)
    rated = confidence(surface.vertices, frame, named, layout.agreement)
    vertex = {k: int(surface.original[x]) for k, x in named.items()}
    between = {k: (int(surface.face_ids[f]), b) for k, (f, b) in points.items()}
    crotch_at = surface.vertices[named["crotch"]] if "crotch" in named else None
    cut_on = (vertices, faces) if limbs_on is None else welded_surface(limbs_on.vertices, limbs_on.faces)[:2]
    limbs = limb_points(surface, *cut_on, frame, named, crotch_at)
    if limbs:
        mid = float(np.mean(surface.vertices[[named[n] for n in ("head_top", "crotch") if n in named]] @ frame.left))
        vertex, between, rated = _with_limbs(limbs, vertices, faces, original, frame, (layout.agreement, mid),
                                             vertex, between, rated)
    return Landmarks(frame, vertex, rated, between, spacing_of(surface.vertices, surface.faces, frame.height),
                     layout.agreement)


def _with_limbs(limbs: dict, vertices, faces, original, frame, rating, vertex, between, rated):
    """The landmarks with the elbows' and knees' (:func:`~.limbs.limb_points`, points on the
    whole welded mesh ``vertices``, ``faces``, whose vertex ``i`` is the mesh's ``original[i]``):
    each on its nearest vertex and at its point on the triangles, rated as a pair (``rating``:
    the frame's agreement and the mid-plane's offset, :func:`~.confidence.confidence`)."""
    names = list(limbs)
    face, bary, corners = on_triangles(vertices, faces, np.array([limbs[n] for n in names]))
    vertex = {**vertex, **{n: int(original[c]) for n, c in zip(names, corners)}}
    between = {**between, **{n: (int(f), b) for n, f, b in zip(names, face, bary)}}
    rated = {**rated, **confidence(vertices, frame, dict(zip(names, corners.tolist())), *rating)}
    return vertex, between, rated


def spacing_of(vertices: np.ndarray, faces: np.ndarray, height: float) -> float:
    """The distance between the vertices were they spread evenly, ``sqrt(area / N) / height``
    (``Landmarks.spacing``): a decimator leaves more of them on the hands and face, so the
    median edge of a 2k-vertex body ranged over 1.1-2.1 %H."""
    corner = vertices[faces]
    area = 0.5 * np.linalg.norm(np.cross(corner[:, 1] - corner[:, 0], corner[:, 2] - corner[:, 0]), axis=1).sum()
    return float(np.sqrt(area / len(vertices))) / height
