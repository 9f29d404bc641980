"""Automatic markers for bodies that are not two-legged: the source's skin fitted onto the target.

A quadruped, a bird, a fish or a monster has no humanoid landmarks to find, but its source is
rigged: its skin says how its surface may bend, stretch and thicken bone by bone.  The
source is fitted onto the target by its joints' maps (:func:`~asetransfer.geometry.skinned_fit.skinned_fit`)
and markers are read off the fit: points spread over the source, each linked to the target
point its fitted position lies on.  Both bodies are scaled to a unit box diagonal; the
target is read in each of the few axis turns whose short, stiff fits lie closest, fitted
in full, and the best fit wins, so a file facing another way or with another up axis is
read alike (3 or more hand markers say which way instead).  When the fit had to stretch the
source's bones very unevenly, or stays far from the target, the bodies' plans differ (a
fox onto a bird): refused with one line.
"""
from __future__ import annotations

import copy
import itertools
import logging

import numpy as np

from ..config import Config, MarkersConfig
from ..geometry.alignment import umeyama
from ..geometry.decimate import proxy_mesh
from ..geometry.skinned_fit import skinned_fit
from ..geometry.surface import closest_points
from ..geometry.topology import used_vertices, vertex_components, weld
from ..model.markers import Markers
from ..model.mesh import Mesh
from ..model.report import MarkerOrigin
from ..model.rig import Rig
from ..model.surface import SurfacePoints
from .markers import MarkerError

log = logging.getLogger("asetransfer")


def fitted_markers(source: Rig, target: Mesh, config: Config, hand: Markers | None = None):
    """Markers linking ``source`` to ``target`` read off the source's skin fitted onto the target.

    Parameters
    ----------
    source : the rigged source; target : the target mesh.
    config : :class:`~asetransfer.config.Config` (its ``markers`` part: ``fit_*``).
    hand : hand-placed markers to keep (a fitted marker within ``hand_radius`` of one gives way), or None.

    Returns
    -------
    markers : :class:`Markers` (the hand markers first); origin : :class:`MarkerOrigin` with
    ``method`` "fitted", the fit's mean distance, the spread of its bone stretches, the
    target's turn and how much better it fits than the next turn tried.

    Raises
    ------
    MarkerError when the fit stretched the source's bones by more than ``fit_stretch_limit``
    or lies farther than ``fit_distance_limit`` (the bodies' plans differ).
    """
    cfg = config.markers
    src = _Body(source.mesh.vertices, source.mesh.faces, cfg, cfg.fit_vertices)
    joints = src.placed(source.skeleton.bind_world[:, :3, 3])
    skin = _skin_at(source, src)
    given = _hand_turn(source, target, hand)
    if given is not None:  # any rotation: the body is read anew in it
        bodies = [(given, _Body(target.vertices @ given.T, target.faces, cfg, cfg.fit_vertices))]
    else:
        plain = _Body(target.vertices, target.faces, cfg, cfg.fit_vertices)
        bodies = [(turn, plain.turned(turn)) for turn in likely_turns(source, joints, target, cfg)]
    fits = sorted((_Fit(source, src, joints, skin, tgt, turn, cfg) for turn, tgt in bodies), key=lambda f: f.score)
    best = fits[0]
    margin = fits[1].score / best.score if len(fits) > 1 and best.score > 0 else None
    _refuse_other_plans(best.stretch, best.distance, cfg)
    picked = spread_vertices(src.vertices, cfg.fit_markers)
    names = _names(source.skeleton.names, skin, picked)
    auto = Markers(tuple(names), src.on_surface(src.vertices[picked]), best.tgt.on_surface(best.fitted[picked]),
                   frozenset(names), frozenset(names))
    if hand is not None and len(hand):
        auto = _give_way(auto, hand, target, cfg.hand_radius)
    markers = auto if hand is None or not len(hand) else hand.then(auto)
    log.debug("markers read off the source's skin fitted onto the target: %d, mean distance %.2f %% of the diagonal, "
              "bone stretch %.2f", len(auto), 100 * best.distance, best.stretch)
    origin = MarkerOrigin(automatic=list(auto.names), hand=list(hand.names) if hand is not None else [],
                          method="fitted", fit_distance=round(best.distance, 5), fit_stretch=round(best.stretch, 4),
                          target_turn=np.round(best.turn, 4).tolist(),
                          facing_margin=None if margin is None else round(margin, 4))
    return markers, origin


def _refuse_other_plans(stretch: float, distance: float, cfg: MarkersConfig) -> None:
    """MarkerError when the fit stretched the bones too unevenly or lies too far: the bodies'
    plans differ."""
    if stretch > cfg.fit_stretch_limit:
        how = (f"only with its bones stretched {stretch:.2f} apart (log-lengths' deviation; same-plan bodies "
               f"stay under {cfg.fit_stretch_limit})")
    elif distance > cfg.fit_distance_limit:
        how = (f"no closer than {100 * distance:.1f} % of its size on average (same-plan bodies within "
               f"{100 * cfg.fit_distance_limit:g} %)")
    else:
        return
    raise MarkerError("target", f"the source's skin fits it {how}: the bodies' plans differ, give linked markers")


class _Body:
    """A mesh's surface as the fit sees it: the pieces holding at least ``fit_least_piece`` of
    its area (seams welded; crumbs, eyes and a prop's bits left out), moved and scaled into a
    box centred at 0 with a unit diagonal, and fitted as a proxy of ``most`` vertices when larger.

    Attributes: ``vertices`` (n, 3), ``faces`` (F, 3) the surface fitted (the proxy or the
    kept surface); ``surface``, ``surface_faces`` the kept surface at full resolution, whose
    vertex ``k`` is the mesh's vertex ``used[k]`` and triangle ``t`` its triangle ``face_ids[t]``."""

    def __init__(self, vertices: np.ndarray, faces: np.ndarray, cfg: MarkersConfig, most: int):
        faces = np.asarray(faces, dtype=np.int64)
        self.face_ids = _main_pieces(vertices, faces, cfg.fit_least_piece)
        kept = faces[self.face_ids]
        self.used = used_vertices(kept)
        at = np.full(len(vertices), -1, dtype=np.int64)
        at[self.used] = np.arange(len(self.used))
        self.surface_faces = at[kept]
        surface = vertices[self.used]
        lo, hi = surface.min(axis=0), surface.max(axis=0)
        self.middle, self.size = (lo + hi) / 2, float(np.linalg.norm(hi - lo)) or 1.0
        self.surface = self.placed(surface)
        self.vertices, self.faces = self.surface, self.surface_faces
        if len(self.used) > most:
            self.vertices, self.faces = proxy_mesh(self.surface, self.surface_faces, most)

    def placed(self, points: np.ndarray) -> np.ndarray:
        """Points of the mesh's frame in the body's unit box."""
        return (points - self.middle) / self.size

    def turned(self, turn: np.ndarray) -> "_Body":
        """The body of the mesh turned by an axis turn (:func:`axis_turns`): its box turns with
        it, so the pieces, the proxy and the unit box are these, turned (not made again)."""
        other = copy.copy(self)
        other.vertices, other.surface, other.middle = self.vertices @ turn.T, self.surface @ turn.T, turn @ self.middle
        return other

    def on_surface(self, points: np.ndarray) -> SurfacePoints:
        """The closest points of the kept surface to ``points`` (unit box), on the mesh's triangles."""
        face, bary, _ = closest_points(points, self.surface, self.surface_faces)
        return SurfacePoints(self.face_ids[face], bary)


def _skin_at(source: Rig, src: _Body) -> tuple:
    """(n, K') joint indices and weights of the fitted surface's vertices: the source's own, or
    on a proxy those of its closest point of the source (the corners' blended by barycentrics)."""
    if src.vertices is src.surface:
        return source.skin.indices[src.used], source.skin.weights[src.used]
    face, bary, _ = closest_points(src.vertices, src.surface, src.surface_faces)
    corners = src.used[src.surface_faces[face]]  # (n, 3) the source's vertices
    weights = source.skin.weights[corners] * bary[:, :, None]
    return source.skin.indices[corners].reshape(len(face), -1), weights.reshape(len(face), -1)


def _main_pieces(vertices: np.ndarray, faces: np.ndarray, least_piece: float) -> np.ndarray:
    """Indices of the triangles in welded pieces holding at least ``least_piece`` of the area
    (the largest piece always)."""
    welded, on, _ = weld(vertices, faces)
    piece = vertex_components(len(welded), on)[on[:, 0]]
    area = np.linalg.norm(np.cross(welded[on[:, 1]] - welded[on[:, 0]], welded[on[:, 2]] - welded[on[:, 0]]), axis=1)
    labels, which = np.unique(piece, return_inverse=True)
    share = np.bincount(which, area, minlength=len(labels)) / (area.sum() or 1.0)
    return np.flatnonzero((share >= min(least_piece, share.max()))[which])


def _fit(src: _Body, joints, skin: tuple, parents, tgt: _Body, cfg: MarkersConfig, iterations: int,
         stiffness: tuple):
    """The source's skin fitted onto the target, its box first scaled per axis to the
    target's.  Returns the fitted vertices, the joints' maps and that scale."""
    scale = np.ptp(tgt.vertices, axis=0) / np.maximum(np.ptp(src.vertices, axis=0), 1e-12)
    fitted, maps = skinned_fit(src.vertices * scale, src.faces, skin[0], skin[1], parents, joints * scale,
                               tgt.vertices, tgt.faces, iterations=iterations, stiffness=stiffness,
                               rigidity=cfg.fit_rigidity, smoothness=cfg.fit_smoothness)
    return fitted, maps, scale


class _Fit:
    """The source's skin fitted onto the target read in ``turn`` (full iterations): the
    fitted vertices, the target's body, the bones' stretch, the mean distance both ways, and
    its score, ``distance * (1 + stretch)`` (of two turns fitting as close, the one that
    bends the bones less: a whale fitted upside down lies as close, its bones twice as
    stretched)."""

    def __init__(self, source: Rig, src: _Body, joints, skin: tuple, tgt: _Body, turn, cfg: MarkersConfig):
        self.turn, self.tgt = turn, tgt
        self.fitted, maps, scale = _fit(src, joints, skin, source.skeleton.parents, self.tgt, cfg,
                                        cfg.fit_iterations, cfg.fit_stiffness)
        moved = np.einsum("jab,jb->ja", maps, np.c_[joints * scale, np.ones(len(joints))])
        self.stretch = bone_stretch(moved, joints, source.skeleton.parents, _weighted(source))
        self.distance = _distance(self.fitted, src, self.tgt)
        self.score = self.distance * (1 + self.stretch)


def likely_turns(source: Rig, joints: np.ndarray, target: Mesh, cfg: MarkersConfig) -> list:
    """The ``fit_facing_candidates`` axis turns of the target (of the 24) whose short, stiff
    fits (both surfaces as proxies of ``fit_facing_vertices``) lie closest, closest first;
    the file's own frame first among equals.  ``joints``: the source's in its unit box."""
    src = _Body(source.mesh.vertices, source.mesh.faces, cfg, cfg.fit_facing_vertices)
    skin = _skin_at(source, src)
    plain = _Body(target.vertices, target.faces, cfg, cfg.fit_facing_vertices)
    scored = []
    for turn in axis_turns():
        tgt = plain.turned(turn)
        fitted, _, _ = _fit(src, joints, skin, source.skeleton.parents, tgt, cfg, cfg.fit_facing_iterations,
                            cfg.fit_facing_stiffness)
        scored.append((_distance(fitted, src, tgt), len(scored), turn))
    return [turn for _, _, turn in sorted(scored, key=lambda x: x[:2])[:cfg.fit_facing_candidates]]


def _hand_turn(source: Rig, target: Mesh, hand: Markers | None) -> np.ndarray | None:
    """(3, 3) the rotation of the similarity taking the hand markers' target points onto their
    source points (the user says which way the target faces); None for fewer than 3 or
    markers on one line."""
    if hand is None or len(hand) < 3:
        return None
    on_source = hand.source.positions(source.mesh.vertices, source.mesh.faces)
    on_target = hand.target.positions(target.vertices, target.faces)
    spread = np.linalg.svd(on_target - on_target.mean(axis=0), compute_uv=False)
    if not spread[1] > 1e-6 * (spread[0] or 1.0):
        return None
    return umeyama(on_target, on_source).rotation


def axis_turns() -> list:
    """The 24 proper rotations permuting the coordinate axes with signs (every way a file may
    face and stand), the identity first."""
    turns = []
    for order in itertools.permutations(range(3)):
        for signs in itertools.product((1, -1), repeat=3):
            turn = np.zeros((3, 3))
            turn[list(order), range(3)] = signs
            if np.linalg.det(turn) > 0:
                turns.append(turn)
    turns.sort(key=lambda t: not np.array_equal(t, np.eye(3)))
    return turns


def _distance(fitted: np.ndarray, src: _Body, tgt: _Body) -> float:
    """Mean closest-surface distance both ways between the fitted source and the target."""
    there = closest_points(fitted, tgt.vertices, tgt.faces)[2].mean()
    back = closest_points(tgt.vertices, fitted, src.faces)[2].mean()
    return float(there + back) / 2


def _weighted(source: Rig) -> np.ndarray:
    """(J,) bool: joints that weight some vertex."""
    used = np.zeros(source.skeleton.n_joints, dtype=bool)
    used[np.unique(source.skin.indices[source.skin.weights > 0])] = True
    return used


def bone_stretch(moved: np.ndarray, rest: np.ndarray, parents: np.ndarray, weighted: np.ndarray) -> float:
    """Standard deviation of the log length ratios of the bones (parent -> child, the parent
    weighting some vertex) from ``rest`` to ``moved``: 0 when every bone scales alike.

    Parameters
    ----------
    moved, rest : (J, 3) joint positions after and before (both bodies in unit boxes: the
        box's own stretch per axis counts); parents : (J,) parent index (-1 root);
    weighted : (J,) bool.
    """
    ratios = []
    for child, parent in enumerate(parents):
        length = np.linalg.norm(rest[child] - rest[parent]) if parent >= 0 else 0.0
        if parent >= 0 and weighted[parent] and length > 1e-3:
            ratios.append(np.linalg.norm(moved[child] - moved[parent]) / length)
    return float(np.std(np.log(np.maximum(ratios, 1e-9)))) if ratios else 0.0


def spread_vertices(points: np.ndarray, count: int) -> np.ndarray:
    """(min(count, n),) indices of points spread by farthest-point sampling (Euclidean), from
    the point farthest from the bounding box's middle."""
    middle = (points.min(axis=0) + points.max(axis=0)) / 2
    picked = [int(np.argmax(np.linalg.norm(points - middle, axis=1)))]
    nearest = np.linalg.norm(points - points[picked[0]], axis=1)
    for _ in range(min(count, len(points)) - 1):
        picked.append(int(np.argmax(nearest)))
        nearest = np.minimum(nearest, np.linalg.norm(points - points[picked[-1]], axis=1))
    return np.array(picked, dtype=np.int64)


def _names(joint_names, skin: tuple, picked: np.ndarray) -> list:
    """Each marker named by the joint weighting its vertex most, numbered along that joint."""
    seen: dict = {}
    names = []
    for v in picked:
        weights = np.bincount(skin[0][v], skin[1][v])
        joint = joint_names[int(np.argmax(weights))]
        seen[joint] = seen.get(joint, 0) + 1
        names.append(f"{joint}.fit{seen[joint]}")
    return names


def _give_way(auto: Markers, hand: Markers, target: Mesh, radius: float) -> Markers:
    """``auto`` without the markers whose target point lies within ``radius`` (of the target's
    surface's largest side) of a hand marker's, or that share a hand marker's name."""
    size = float(np.ptp(target.vertices[used_vertices(target.faces)], axis=0).max())
    on_target = auto.target.positions(target.vertices, target.faces)
    hand_points = hand.target.positions(target.vertices, target.faces)
    gap = np.linalg.norm(on_target[:, None] - hand_points[None], axis=2).min(axis=1)
    keep = np.flatnonzero((gap > radius * size) & np.array([n not in hand.names for n in auto.names]))
    return auto.subset(keep)
