"""Automatic markers: landmarks found on both characters, linked by name.

The spec (Ch. 2) starts from hand-placed markers; a TD has none for a new
character and a batch over a cast cannot click.  :func:`automatic_markers` runs
the landmark rules of :mod:`asetransfer.humanoid.landmarks` on the source mesh and
on the target, and links the landmarks both have.  Hand markers, when given, win:
an automatic marker gives way to a hand marker of the same name or one placed
near it on the target.  The source's landmark frame is checked against its
skeleton (left/right joint names), so a geometric rule that read the source the
wrong way round is reported rather than silently mirrored.
"""
from __future__ import annotations

import hashlib
import logging

import numpy as np

from ..config import Config
from ..geometry.decimate import proxy_mesh
from ..geometry.pieces import LayerRule
from ..geometry.solid import solid_surface
from ..geometry.surface import vertex_points
from ..geometry.topology import used_vertices, vertex_components
from ..humanoid.body import body_axes
from ..humanoid.landmarks import (
    FINGERS,
    Landmarks,
    NotHumanoidError,
    between_vertices,
    find_landmarks,
    hand_tips_carried_out,
)
from ..humanoid.landmarks.limbs import ELBOW, KNEE
from ..humanoid.landmarks.rig import checked_by, read_as_the_target, rig_landmarks, with_rig_limbs
from ..humanoid.skeleton_map import propose_skeleton_map
from ..model.markers import Markers
from ..model.mesh import Mesh
from ..model.report import LandmarkFrame, MarkerOrigin
from ..model.rig import Rig
from ..model.surface import SurfacePoints

log = logging.getLogger("asetransfer")


class MarkerError(ValueError):
    """Markers could not be found or completed; ``side`` ("source", "target" or "markers")
    says which input is at fault."""

    def __init__(self, side: str, message: str):
        super().__init__(message)
        self.side = side

    def __reduce__(self):  # pickled whole (a batch worker's error), not as ValueError(message)
        return type(self), (self.side, str(self))


#: the landmarks where the head ends: linked between characters whose heads differ in
#: proportion (``MarkersConfig.neck_head_ratio``)
NECK = ("throat", "nape")

#: the landmarks of the last characters searched, by their mesh's bytes and the rules'
#: parameters: a batch rigs a cast from one source, whose landmarks (0.28 s on the dev
#: source) are then found once per process, not once per target
_FOUND: dict = {}
_FOUND_KEPT = 4


def forget_landmarks() -> None:
    """Drop the landmarks kept by :func:`landmarks_of` (a benchmark times the search itself)."""
    _FOUND.clear()


def landmarks_of(mesh: Mesh, side: str, config: Config, solid: bool = True) -> Landmarks:
    """The landmarks of one character; :class:`MarkerError` naming the side if it has no body layout.

    A character of more than twice ``MarkersConfig.search_vertices`` vertices is searched
    on a copy simplified to that many (the rules' geodesics cost time in proportion to the
    vertices, not the shape) and the landmarks are moved to its own surface.  A character
    in pieces whose surface has no body layout, or one whose feet point 60 degrees or more
    apart there (``Landmarks.agreement`` 0: the facing is unknown) while the solid's agree
    better, is read as the solid the pieces make (``solid``; :func:`_on_solid`)."""
    cfg, cc = config.markers, config.correspondence
    # the landmarks are the body's: layers by the rule the correspondence carries them by
    layers = LayerRule.of(cc)
    rules = dict(bridge_gap=cfg.bridge_gap, extremity_radius=cfg.extremity_radius,
                 symmetry_iterations=config.skeleton.symmetry_iterations, layers=layers)
    key = (*_content(mesh), cfg.search_vertices, repr(rules), solid)
    if key in _FOUND:
        return _FOUND[key]
    searched = mesh
    if len(used_vertices(mesh.faces)) > 2 * cfg.search_vertices:
        searched = Mesh(*proxy_mesh(mesh.vertices, mesh.faces, cfg.search_vertices, min_quality=0.0))
    found, solid_mesh = _read(searched, side, rules, solid)
    if solid_mesh is not None:
        found = hand_tips_carried_out(found.moved(solid_mesh, mesh), solid_mesh, mesh)
    elif searched is not mesh:
        found = found.moved(searched, mesh)
    _keep(key, found)
    return found


def _read(mesh: Mesh, side: str, rules: dict, solid: bool) -> tuple:
    """``(landmarks, solid_mesh)``: the landmarks of ``mesh``, or of the solid its pieces make
    (:func:`_on_solid`, with ``solid``) when it has no body layout or its feet point 60 degrees
    or more apart while the solid's agree better (boots read as layers over legs that end
    above the ground: Mixamo's Ely stood on her legs' stumps facing backwards); ``solid_mesh``
    is None for landmarks on ``mesh`` itself."""
    try:
        found = find_landmarks(mesh, **rules)
    except NotHumanoidError as e:
        on_solid = _on_solid(mesh, rules) if solid else None
        if on_solid is None:
            raise MarkerError(side, f"no humanoid layout found for automatic markers: {e}") from None
        return on_solid
    on_solid = _on_solid(mesh, rules) if solid and found.agreement == 0 else None
    if on_solid is not None and on_solid[0].agreement > found.agreement:
        return on_solid
    return found, None


def _content(mesh: Mesh) -> tuple:
    """The part of a kept search's key that names the mesh: its content hash and shapes."""
    digest = hashlib.blake2b(digest_size=16)
    for array in (mesh.vertices, mesh.faces):  # C-contiguous (Mesh): hashed in place, not copied
        digest.update(array)
    return digest.digest(), mesh.vertices.shape, mesh.faces.shape


def _keep(key, found: Landmarks) -> None:
    while len(_FOUND) >= _FOUND_KEPT:
        del _FOUND[next(iter(_FOUND))]  # the oldest
    _FOUND[key] = found


def kept_landmarks(mesh: Mesh) -> dict:
    """The landmarks :func:`landmarks_of` keeps for ``mesh`` (key -> :class:`Landmarks`, one
    per set of rules): what a batch finds once on its source and hands to its workers."""
    content = _content(mesh)
    return {key: found for key, found in _FOUND.items() if key[:3] == content}


def keep_landmarks(entries: dict) -> None:
    """Keep ``entries`` (:func:`kept_landmarks` of another process) as if found here; their
    keys hold the mesh's content hash and the rules, so they only answer the same search."""
    for key, found in entries.items():
        _keep(key, found)


def source_landmarks(source: Rig, config: Config) -> Landmarks:
    """The source's landmarks: by the geometric rules, as the target's (both answer the same
    rules), checked by its rig (:func:`~asetransfer.humanoid.landmarks.rig.rig_landmarks`).
    A landmark farther than ``MarkersConfig.rig_tolerance`` from the one the source's
    skeleton and weights give is taken from the rig (its shape's reading kept beside it:
    :func:`automatic_markers` links that one when it lies nearer the target's,
    :func:`~asetransfer.humanoid.landmarks.rig.read_as_the_target`); all are when the shape alone has no
    body layout (a source in pieces) or its feet point 60 degrees or more apart (the facing
    unknown); so are the elbows and knees where its limbs do not narrow
    (:func:`~asetransfer.humanoid.landmarks.rig.with_rig_limbs`: the sections through its
    joints).  Where the joint names say left and right the other way round than the shape,
    the shape's landmarks stand (the names are only labels; the disagreement is warned of),
    and so they do without a humanoid skeleton map."""
    try:
        from_rig = rig_landmarks(source)
    except NotHumanoidError as unnamed:
        try:
            return landmarks_of(source.mesh, "source", config)
        except MarkerError as e:
            # neither its names nor its shape say two-legged: a creature's rig, most likely
            raise MarkerError("source", f"{e}; {unnamed}") from None
    try:
        geometric = landmarks_of(source.mesh, "source", config, solid=False)
    except MarkerError:
        log.info("the source's landmarks are read from its rig: its shape alone has no body layout")
        return from_rig
    if geometric.agreement == 0:
        log.info("the source's landmarks are read from its rig: its shape's feet point apart")
        return from_rig
    if float(geometric.frame.left @ from_rig.frame.left) < 0.5:
        return geometric  # the joint names say left and right the other way round: warned of below
    return with_rig_limbs(checked_by(geometric, from_rig, config.markers.rig_tolerance, source.mesh), from_rig)


def _on_solid(mesh: Mesh, rules: dict):
    """``(landmarks, solid)``: the landmarks of the solid a character in several pieces makes
    (:func:`~asetransfer.geometry.solid.solid_surface`: joint covers, plates, a mannequin cut
    at its joints), or None for a one-piece mesh or a solid without a body layout (or with
    no volume: pieces of flat sheets)."""
    if vertex_components(mesh.n_vertices, mesh.faces)[mesh.faces[:, 0]].max(initial=0) == 0:
        return None
    vertices, faces = solid_surface(mesh.vertices, mesh.faces)
    if not len(faces):
        return None
    solid = Mesh(vertices, faces)
    try:
        return find_landmarks(solid, **rules, limbs_on=mesh), solid
    except NotHumanoidError:
        return None


def frame_agreement(source: Rig, landmarks: Landmarks) -> float | None:
    """Cosine between the source's geometric left and its skeleton's left (None without L/R joints)."""
    mapping, _ = propose_skeleton_map(source.skeleton)
    names = {n: i for i, n in enumerate(source.skeleton.names)}
    positions = {role: source.skeleton.bind_world[names[joint], :3, 3] for role, joint in mapping.items()}
    if "head" not in positions or "hips" not in positions:
        return None
    try:
        _, _, left = body_axes(positions)
    except ValueError:
        return None
    return float(left @ landmarks.frame.left)


def _points(mesh: Mesh, landmarks: Landmarks, names: list, between: bool, also: set = frozenset()) -> SurfacePoints:
    """The landmarks ``names`` as surface points: on their vertex, or with ``between`` (or for
    the names in ``also``) where their rule places them between vertices (``Landmarks.surface``)."""
    points = vertex_points(np.array([landmarks.vertex[n] for n in names], dtype=np.int64), mesh.faces)
    for i, n in enumerate(names):
        if (between or n in also) and n in landmarks.surface:
            points.face[i], points.bary[i] = landmarks.surface[n]
    return points


def _toe_corners(pairs, names: list, limit: float) -> set:
    """The toe tips among ``names`` that link between vertices (:func:`_points`): those whose
    vertex lies farther than ``limit`` (fraction of the height) from their point between
    vertices, the middle of the sole's front end, on either character (``pairs``: (landmarks,
    mesh)) -- a square shoe's extremity is a corner, a round one's its side (held-out Sintel's
    feet turned out 5 cm, 4 %H at the balls of her feet).  Both characters then use that rule
    where they have it (a source read from its rig keeps its toe tip vertex)."""
    out = set()
    for landmarks, mesh in pairs:
        at, between = landmarks.positions(mesh.vertices), landmarks.positions(mesh.vertices, mesh.faces)
        out |= {n for n in names if n.startswith("toe_tip.") and n in landmarks.surface
                and np.linalg.norm(at[n] - between[n]) > limit * landmarks.frame.height}
    return out


def automatic_markers(source: Rig, target: Mesh, config: Config, hand: Markers | None = None):
    """Linked markers from landmarks on both characters, completed by (and giving way to) ``hand``.
    The throat and the nape link only characters whose heads' shares of the height differ by
    ``MarkersConfig.neck_head_ratio`` (:func:`_head_share`), or of which one is
    ``MarkersConfig.big_head`` or more.

    Parameters
    ----------
    source : the rigged source (its skeleton checks the source's landmark frame).
    target : the target mesh.
    config : :class:`~asetransfer.config.Config` (its ``markers`` part, and the mirror-plane fit's steps).
    hand : hand-placed markers to keep, or None.

    Returns
    -------
    markers : :class:`Markers`, the hand markers first, then the automatic ones.
    origin : :class:`~asetransfer.model.report.MarkerOrigin`: the automatic and hand names,
        each automatic marker's confidence, those under ``warn_confidence``, the sides whose
        thighs are joined (no crotch landmark), the crotch heights (source, target: the
        crotch's height over the body's; the crotch is no marker when one is below
        ``crotch_height_ratio`` of the other) and both body frames.

    Raises
    ------
    MarkerError when either character has no humanoid layout.
    """
    cfg = config.markers
    src, tgt = source_landmarks(source, config), landmarks_of(target, "target", config)
    shares = [_head_share(lm, mesh) for lm, mesh in ((src, source.mesh), (tgt, target))]
    widths = [_head_width(lm, mesh) for lm, mesh in ((src, source.mesh), (tgt, target))]
    alike = _heads_alike(shares, widths, cfg.neck_head_ratio)
    if alike or shares == [None, None]:
        src = _read_alike(src, source.mesh, tgt, target)
    names = _linked(src, tgt)
    big = None not in shares and max(shares) >= cfg.big_head
    if alike is not False and not big:  # like small heads (or one unread): the extremities hold the neck
        names = [n for n in names if n not in NECK]
    else:
        names = _heads_read_alike(names, src, source.mesh, tgt, target, cfg.head_reading_tolerance)
    heights = [_crotch_height(lm, mesh) for lm, mesh in ((src, source.mesh), (tgt, target))]
    far_apart = None not in heights and min(heights) < cfg.crotch_height_ratio * max(heights)
    at_hips = not far_apart and "crotch" in names and _crotch_at_hip_joints(source, src, cfg.crotch_joint_depth)
    if far_apart or at_hips:
        names.remove("crotch")
    agreement = frame_agreement(source, src)
    confidence = _confidence(src, tgt, names, agreement)
    # a coarse character's crotch, heels, toe and fingertips, head and ears between its vertices,
    # and the other's by the same rule
    between = between_vertices(src, tgt)
    corners = _toe_corners(((src, source.mesh), (tgt, target)), names, cfg.toe_corner)
    # the elbows' and knees' section points are their landmarks; the vertices only the nearest corners
    corners |= {n for n in names if n.partition(".")[0] in ELBOW + KNEE}
    if hand is not None and len(hand):
        names = _give_way(names, tgt, target, hand, cfg.hand_radius, between, corners)
    auto = Markers(tuple(names), _points(source.mesh, src, names, between, corners),
                   _points(target, tgt, names, between, corners), frozenset(names))
    markers = auto if hand is None or not len(hand) else hand.then(auto)
    low = [n for n in names if confidence[n] < cfg.warn_confidence]
    if low:
        log.warning("automatic markers with low confidence (check them): %s", ", ".join(low))
    joined = [side for side, lm in (("source", src), ("target", tgt)) if "crotch" not in lm.vertex]
    if not (hand is not None and "crotch" in hand.names):
        _warn_no_crotch(joined, heights if far_apart else None, at_hips)
    origin = MarkerOrigin(
        automatic=names, hand=list(hand.names) if hand is not None else [], method="landmarks",
        confidence={n: confidence[n] for n in names}, low_confidence=low,
        source_frame_agreement=None if agreement is None else round(agreement, 4), thighs_joined=joined,
        crotch_heights=[None if x is None else round(x, 4) for x in heights], between_vertices=between,
        head_shares=[None if x is None else round(x, 4) for x in shares],
        frames={side: LandmarkFrame(lm.frame.up, lm.frame.forward, lm.frame.height)
                for side, lm in (("source", src), ("target", tgt))})
    return markers, origin


def _read_alike(src: Landmarks, source: Mesh, tgt: Landmarks, target: Mesh) -> Landmarks:
    """``src`` with the landmarks its rig replaced linked as its shape reads them where that
    lies nearer the target's (:func:`~asetransfer.humanoid.landmarks.rig.read_as_the_target`).
    Called between heads of one kind (alike in their share of the height, or neither with a
    neck the rules find: Blender's metaball humans): the shape rules read them alike.  Between
    a big cartoon head and a small one the rig's reading stands: in units of the body's height
    the Kenney zombie's nose (its rig's, 23 %H under its head top) lies farther from a
    mannequin's (7 %H) than its shape's reading (9 %H), and linking that one put the zombie ->
    female rig's worst joint 5.3 %H off instead of 3.1."""
    src, back = read_as_the_target(src, source.vertices, tgt, target.vertices)
    if back:
        log.info("the source's %s are linked as its shape reads them, nearer the target's than its rig's",
                 ", ".join(back))
    return src


def _confidence(src: Landmarks, tgt: Landmarks, names: list, agreement: float | None) -> dict:
    """Each linked landmark's confidence: the lower of the two characters'; at most 0.25 (with
    a warning) when the source's left/right joint names disagree with its shape (``agreement``
    under 0.5, :func:`frame_agreement`)."""
    confidence = {n: min(src.confidence[n], tgt.confidence[n]) for n in names}
    if agreement is not None and agreement < 0.5:
        log.warning("the source's left/right joint names disagree with its shape (feet or face point the other "
                    "way?): automatic markers may be mirrored; check them or give hand markers")
        confidence = {n: min(c, 0.25) for n, c in confidence.items()}
    return confidence


def _crotch_at_hip_joints(source: Rig, landmarks: Landmarks, limit: float) -> bool:
    """Whether the source's crotch lies less than ``limit`` (a fraction of the height) below
    the middle of its upper legs' joints (False without them or without a crotch)."""
    mapping, _ = propose_skeleton_map(source.skeleton)
    if "crotch" not in landmarks.vertex or not {"upper_leg_l", "upper_leg_r"} <= set(mapping):
        return False
    names = list(source.skeleton.names)
    joints = source.skeleton.bind_world[[names.index(mapping[r]) for r in ("upper_leg_l", "upper_leg_r")], :3, 3]
    crotch = landmarks.positions(source.mesh.vertices)["crotch"]
    return float((joints.mean(axis=0) - crotch) @ landmarks.frame.up) < limit * landmarks.frame.height


def _warn_no_crotch(joined: list, heights: list | None, at_hips: bool = False) -> None:
    """Warn that there is no crotch marker: the sides ``joined`` (thighs joined above where the
    legs part; landmarks.find_landmarks leaves the crotch out there), the crotch ``heights``
    (source, target) too far apart (None: they are not), or the source's legs parting at its
    hip joints (``at_hips``, :func:`_crotch_at_hip_joints`)."""
    if at_hips:
        log.warning("no crotch marker: the source's legs part at its hip joints (a pelvis piece over separate "
                    "thighs?), where no crotch of a body is; check the hips or place a crotch marker by hand")
    elif joined:
        log.warning("no crotch marker: the %s's thighs are joined above where its legs part; check the "
                    "hips or place a crotch marker by hand", " and ".join(joined))
    elif heights is not None:
        log.warning("no crotch marker: the legs part at %.0f %% of the source's height and %.0f %% of the "
                    "target's (a skirt or robe joined to the body, or far shorter legs?); check the hips or "
                    "place a crotch marker by hand", 100 * heights[0], 100 * heights[1])


#: the head's landmarks within it, below its top (the throat and the nape hold its base)
HEAD_INSIDE = ("nose_tip", "head_back", "ear.L", "ear.R")


def _heads_read_alike(names: list, src: Landmarks, source: Mesh, tgt: Landmarks, target: Mesh,
                      tolerance: float) -> list:
    """``names`` without the head's landmarks (``HEAD_INSIDE``) that the two characters read at
    heights within their heads (from the throat, 0, to the head top, 1) more than ``tolerance``
    apart: one of the readings is no face's (a helmet's visor read as the nose, its rim as the
    ears: KayKit's knight's at 0.74-0.79 of its head against a rogue's face at 0.27-0.36,
    which pulled the rogue's face up the helmet and its head joint 14 %H high).  Called when
    the throats are linked."""
    heights = []
    for lm, mesh in ((src, source), (tgt, target)):
        at = lm.positions(mesh.vertices, mesh.faces)
        base, top = (float(at[n] @ lm.frame.up) for n in ("throat", "head_top"))
        heights.append({n: (float(at[n] @ lm.frame.up) - base) / (top - base) for n in HEAD_INSIDE
                        if n in names and top > base})
    apart = [n for n in HEAD_INSIDE if n in heights[0] and n in heights[1]
             and abs(heights[0][n] - heights[1][n]) > tolerance]
    if apart:
        log.info("the heads' %s are read at other heights within the heads (a helmet, a hood?): not linked",
                 ", ".join(apart))
    return [n for n in names if n not in apart]


def _head_share(landmarks: Landmarks, mesh: Mesh) -> float | None:
    """The head's share of the body height: from the throat up to the head top (None: no throat
    or no head top)."""
    if "throat" not in landmarks.vertex or "head_top" not in landmarks.vertex:
        return None
    at = landmarks.positions(mesh.vertices, mesh.faces)
    frame = landmarks.frame
    return float((at["head_top"] - at["throat"]) @ frame.up / frame.height)


def _head_width(landmarks: Landmarks, mesh: Mesh) -> float | None:
    """The head's width, ear to ear across the body, as a share of the body height (None
    without both ears)."""
    if "ear.L" not in landmarks.vertex or "ear.R" not in landmarks.vertex:
        return None
    at = landmarks.positions(mesh.vertices, mesh.faces)
    return float((at["ear.L"] - at["ear.R"]) @ landmarks.frame.left / landmarks.frame.height)


def _heads_alike(shares: list, widths: list, ratio: float) -> bool | None:
    """Whether two heads (source, target) are alike in proportion: their ``shares`` of the
    height (throat to head top) less than ``ratio`` apart, or that far apart while their
    ``widths`` (:func:`_head_width`) are less than ``sqrt(ratio)`` apart the same way: a neck
    read low, not a bigger head (a robot's neck cover: its throat 7.5 %H low, share 0.19
    against the body's 0.12 with the same head, 0.121 wide on both; the Kenney zombie's head
    0.31 of its height and 0.24 wide against a mannequin's 0.15 and 0.095).  None when a
    share is unknown."""
    if None in shares:
        return None
    if max(shares) < ratio * min(shares):
        return True
    if None in widths or min(widths) <= 0:
        return False
    bigger = int(np.argmax(shares))
    return bool(widths[bigger] < np.sqrt(ratio) * widths[1 - bigger])


def _crotch_height(landmarks: Landmarks, mesh: Mesh) -> float | None:
    """The crotch's height above the ground as a fraction of the body's (None: no crotch)."""
    if "crotch" not in landmarks.vertex:
        return None
    point = landmarks.positions(mesh.vertices, mesh.faces)["crotch"]
    frame = landmarks.frame
    return float((point - frame.ground) @ frame.up / frame.height)


def _linked(src: Landmarks, tgt: Landmarks) -> list:
    """Landmark names both characters have; a hand tip gives way to the fingertips when both
    name all of that hand's fingers (it is one of them, and the named one is surer).  A
    fingertip named on one hand only is left out: the two hands read differently, and one
    reading is wrong (a Ready Player Me avatar's sleeve cuff, a lip folded back at the
    wrist, was its right thumb, the left hand a fist with no thumb: the right hand was
    rigged turned; its mirror-less markers had half the confidence, only warned of)."""
    names = [n for n in src.vertex if n in tgt.vertex]
    for finger in ("thumb_tip", *FINGERS):
        if sum(f"{finger}.{side}" in names for side in "LR") == 1:
            names = [n for n in names if n.partition(".")[0] != finger]
    for side in "LR":
        if all(f"{f}.{side}" in names for f in FINGERS):
            names = [n for n in names if n != f"hand_tip.{side}"]
    return names


def _give_way(names: list, tgt: Landmarks, target: Mesh, hand: Markers, radius: float, between: bool,
              also: set = frozenset()) -> list:
    """Automatic marker names not taken by a hand marker: one of the same name, or a hand
    marker placed within ``radius`` (fraction of the height) whose nearest automatic marker
    this is (the same point under another name; its neighbours, fingertips 2 %H apart,
    stay).  The automatic markers are where :func:`_points` puts them (``between``, ``also``)."""
    if not names:
        return names
    near = radius * tgt.frame.height
    taken = hand.target.positions(target.vertices, target.faces)
    vertex_at, between_at = tgt.positions(target.vertices), tgt.positions(target.vertices, target.faces)
    at = {n: between_at[n] if (between or n in also) else vertex_at[n] for n in names}
    points = np.array([at[n] for n in names])
    d = np.linalg.norm(taken[:, None, :] - points[None, :, :], axis=2)
    nearest = np.argmin(d, axis=1)
    replaced = {names[j] for i, j in enumerate(nearest) if d[i, j] < near}
    return [n for n in names if n not in hand.names and n not in replaced]
