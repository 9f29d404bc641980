"""The whole job: correspondence -> skeleton -> weights -> a rigged target (spec Ch. 2-3)."""
from __future__ import annotations

import logging
from dataclasses import dataclass, replace

import numpy as np

from ..config import Config, PoseConfig, influence_limit
from ..geometry.topology import piece_count
from ..model.correspondence import Correspondence
from .correspondence import correspond
from .fitted_markers import fitted_markers
from .markers import MarkerError, automatic_markers
from .pose import in_source_frame, landmark_pose, limb_angles, match_pose
from .quality import assess
from ..model.markers import Markers
from ..model.mesh import Mesh
from ..model.report import (BlendshapesReport, MarkerOrigin, PoseMatch, Stopwatch, TransferReport, TransferTimings,
                            WeightsReport)
from ..model.rig import Rig
from .shapes import carry_shapes
from .skeleton import transfer_skeleton
from .weights import transfer_weights, transfer_weights_robust

log = logging.getLogger("asetransfer")


@dataclass(eq=False)
class Result:
    """A transfer's output: the rigged target, the correspondence and markers used, and the
    report (:class:`~asetransfer.model.report.TransferReport`; ``report.to_json()`` is the
    report file's content)."""

    rig: Rig
    correspondence: Correspondence
    report: TransferReport
    markers: Markers | None = None


def find_markers(source: Rig, target: Mesh, config: Config, hand: Markers | None = None):
    """Automatic markers, completed by (and giving way to) ``hand``: linked landmarks between
    two-legged characters (:func:`~asetransfer.stages.markers.automatic_markers`); for a
    source or target the landmark rules read no two-legged layout in (a quadruped, a bird, a
    fish, a T. rex leaning forward), read off the source's skin fitted onto the target
    (:func:`~asetransfer.stages.fitted_markers.fitted_markers`), which refuses bodies of other
    plans.  A two-legged source whose target the rules could not read keeps the reason
    (``origin.target_unread``: the verdict doubts such a rig).  Returns ``(markers, origin)``;
    raises MarkerError naming both readings."""
    try:
        return automatic_markers(source, target, config, hand=hand)
    except MarkerError as layout:
        if layout.side not in ("source", "target"):
            raise
        log.debug("no two-legged layout (%s): the source's skin is fitted onto the target", layout)
        try:
            markers, origin = fitted_markers(source, target, config, hand=hand)
        except MarkerError as fit:
            raise MarkerError(fit.side, f"{fit}; and the landmark rules read the {layout.side} as no two-legged "
                                        f"body ({layout})") from None
        if layout.side == "target":
            origin.target_unread = str(layout)
        return markers, origin


def resolve_markers(source: Rig, target: Mesh, markers: Markers | None, config: Config):
    """The markers a transfer uses: the hand markers, automatic ones, or both (``config.markers.automatic``).

    Returns ``(markers, origin)``; the :class:`~asetransfer.model.report.MarkerOrigin` lists
    which markers are automatic and how confident each is
    (:func:`find_markers`).
    """
    cfg = config.markers
    given = markers is not None and len(markers) > 0
    if not given and cfg.automatic == "off":
        raise MarkerError("target", "no markers were given and automatic markers are off")
    if given and not (cfg.automatic == "on" or (cfg.automatic == "auto" and len(markers) < cfg.complete_below)):
        # markers read back from a file `asetransfer markers` wrote stay automatic, and those
        # read off a fitted skin keep saying so (the verdict doubts a rig from them alone)
        automatic = [n for n in markers.names if n in markers.automatic]
        fitted = bool(automatic) and all(n in markers.fitted for n in automatic)
        return markers, MarkerOrigin(automatic=automatic, hand=[n for n in markers.names if n not in markers.automatic],
                                     method="fitted" if fitted else None)
    watch = Stopwatch()
    try:
        markers, origin = find_markers(source, target, config, hand=markers if given else None)
    except MarkerError as e:
        if not given or cfg.automatic == "on":
            raise
        if len(markers) < 3:
            raise MarkerError("markers", f"has {len(markers)} marker(s); at least 3 are needed to align source "
                                         f"and target, and automatic markers could not complete them ({e})") from None
        # completing a few hand markers is a help, not a requirement: a character
        # without a humanoid layout (a prop, a creature) keeps its hand markers
        log.debug("hand markers not completed: %s", e)
        return markers, MarkerOrigin(hand=list(markers.names), not_completed=str(e))
    origin.time = watch.elapsed()
    return markers, origin


def _landmark_start(source, target, markers, origin: MarkerOrigin, pose: PoseConfig):
    """The pose of the source the first pass registers: the automatic landmarks' guess of the
    target's (:func:`~asetransfer.stages.pose.landmark_pose`) when a limb differs from the
    source's by more than ``pose.match_angle``, else None (the source as modelled).  A first
    pass from the source as modelled reads an A-posed target's arms short of their pose (23
    of d05's 35 degrees) and takes a pass more to converge.  No guess when the source's
    left/right joint names disagree with its shape (it would swing each arm to the other
    side's hand)."""
    names = origin.automatic
    agreement = origin.source_frame_agreement
    if not names or (agreement is not None and agreement < 0.5):
        return None
    index = [markers.names.index(n) for n in names]
    on_source = markers.source.positions(source.mesh.vertices, source.mesh.faces)[index]
    on_target = markers.target.positions(target.vertices, target.faces)[index]
    placed = landmark_pose(source.skeleton, dict(zip(names, on_source)), dict(zip(names, on_target)))
    if placed is None:
        return None
    angles = limb_angles(source.skeleton, source.skeleton.bind_world[:, :3, 3], placed)
    return placed if angles and max(angles.values()) > pose.match_angle else None


def _match_pose(source, target, markers, cfg, cc, corr, skeleton, sk_report, say, start=None):
    """Register again from a source posed like the target when their limbs differ (stages/pose.py).

    The pose is read from the skeleton the last pass placed; passes repeat until the
    pose moves less than ``cfg.pose.match_tolerance`` degrees from the one the pass registered
    (each pass registers a source closer to the target, so its joints, and the pose read
    from them, are closer too).  ``start``: the joints the first pass's source was posed
    by (None: as modelled).  ``cc``: the correspondence parameters of every pass
    (:func:`_registration`).  Returns the final correspondence, skeleton and skeleton
    report, and a :class:`~asetransfer.model.report.PoseMatch`: each limb bone's angle to
    the source's after every pass.
    """
    watch = Stopwatch()
    rest = source.skeleton.bind_world[:, :3, 3]
    registered = rest if start is None else start
    placed = in_source_frame(source.skeleton, skeleton.bind_world[:, :3, 3])
    angles = limb_angles(source.skeleton, rest, placed)
    report = PoseMatch(limb_angles_deg=[_rounded(angles)])
    if start is not None:
        report.landmark_pose_deg = _rounded(limb_angles(source.skeleton, rest, start))
    pose = cfg.pose
    if angles and (max(angles.values()) > pose.match_angle or start is not None):
        for _ in range(pose.match_passes):
            if max(limb_angles(source.skeleton, registered, placed).values()) < pose.match_tolerance:
                break
            say("pose matching")
            posed = match_pose(source, placed)
            corr = correspond(posed.mesh, target, markers, cc)
            # joints are fitted from the posed source (local fits see a near-rigid match);
            # the rest pose and orientations stay the source's
            skeleton, sk_report = transfer_skeleton(posed, target, corr, cfg.skeleton, rest_source=source.skeleton)
            registered, placed = placed, in_source_frame(source.skeleton, skeleton.bind_world[:, :3, 3])
            report.passes += 1
            report.limb_angles_deg.append(_rounded(limb_angles(source.skeleton, rest, placed)))
    report.time = watch.elapsed()
    return corr, skeleton, sk_report, report


def _rounded(angles: dict) -> dict:
    """Limb bone -> angle (degrees) to 0.01 degree, as the report gives them."""
    return {k: round(v, 2) for k, v in angles.items()}


def _registration(cc, automatic: bool):
    """The correspondence parameters of every pass: with ``automatic`` markers, which hold
    only the extremities, the crotch and the head, stage 2 registers in the stiffness levels
    of ``automatic_stiffness`` (the source's whole surface places what the markers leave
    free) unless ``register_stiffness`` asks for its own."""
    if automatic and not cc.register_stiffness:
        return replace(cc, register_stiffness=cc.automatic_stiffness)
    return cc


def _transfer_weights(source: Rig, target: Mesh, corr: Correspondence, config: Config):
    """The target's skin weights by ``config.weights.method``: ``"auto"`` is robust for a
    target in several pieces (a prop held in the hand must not take the weights of the thigh
    it passes) and the spec's interpolation for one piece.

    Returns
    -------
    skin : :class:`SkinWeights` of the target; report : :class:`~asetransfer.model.report.WeightsReport`.
    """
    watch = Stopwatch()
    wc = config.weights
    limit = influence_limit(wc.max_influences, int(source.skin.influence_counts().max(initial=0)))
    report = WeightsReport(method=wc.method, influence_limit=limit)
    if wc.method == "auto":
        pieces = piece_count(target.vertices, target.faces, config.correspondence.weld_tolerance)
        report.method, report.chosen, report.target_pieces = "robust" if pieces > 1 else "interp", "auto", pieces
    if report.method == "robust":
        # the body's diagonal: a sword held out does not widen what counts as a close match
        extent = corr.body_extent(target.vertices)
        diagonal = float(np.linalg.norm(extent))
        skin, report.robust = transfer_weights_robust(
            source.skin, corr.target_to_source, target_vertices=target.vertices, target_faces=target.faces,
            registered_source=corr.registered_source, source_faces=source.mesh.faces,
            max_distance=wc.robust_distance * diagonal, max_angle=wc.robust_angle,
            smooth_iterations=wc.smooth_iterations, contact_neighbours=wc.contact_neighbours,
            max_influences=limit, prune=wc.prune, prop_fraction=wc.prop_fraction,
            touch_distance=wc.prop_touch * diagonal, skeleton=source.skeleton, fitted=corr.target_solved,
            apart_gap=wc.prop_apart * diagonal, body_side=float(extent.max()))
    else:
        skin = transfer_weights(source.skin, corr.target_to_source, source.mesh.faces, max_influences=limit,
                                prune=wc.prune)
    counts = skin.influence_counts()
    report.max_influences, report.mean_influences = int(counts.max(initial=0)), float(np.mean(counts))
    report.time = watch.elapsed()
    return skin, report




def _blend_shapes(source: Rig, target: Mesh, corr: Correspondence, config: Config) -> tuple:
    """The source's blend shapes carried onto the target (:func:`~.shapes.carry_shapes`) and
    the report's section; none and no section for a source without them."""
    if not source.shapes:
        return (), None
    if config.shapes.mode == "off":
        return (), BlendshapesReport(mode="off", source_shapes=len(source.shapes))
    own = target.look.morph_target_names() if target.look is not None else ()
    return carry_shapes(source.shapes, source.mesh.vertices, source.mesh.faces, target.vertices, target.faces, corr,
                        reject_angle=config.correspondence.reject_angle, config=config.shapes, own_names=own,
                        base_normals=target.normals)


def transfer(source: Rig, target: Mesh, markers: Markers | None = None, config: Config | None = None,
             progress=None) -> Result:
    """Rig ``target`` with ``source``'s skeleton, skin weights and blend shapes.

    Parameters
    ----------
    source : the rigged source character.
    target : the target mesh (kept exactly: vertex order, units, frame).
    markers : linked markers between ``source.mesh`` and ``target``; None (or few, see
        :class:`~asetransfer.config.MarkersConfig`) to find them automatically.
    config : parameters (:class:`~asetransfer.config.Config` defaults).
    progress : optional callable ``progress(stage_name)`` called as stages start.

    Returns
    -------
    :class:`Result`; ``result.rig`` is the target mesh skinned to the transferred skeleton,
    with the carried blend shapes, ``result.report`` its
    :class:`~asetransfer.model.report.TransferReport`.
    """
    cfg = config or Config()
    say = progress or (lambda stage: None)
    watch = Stopwatch()
    say("markers")
    markers, origin = resolve_markers(source, target, markers, cfg)
    say("correspondence")
    cc = _registration(cfg.correspondence, bool(origin.automatic))
    start = _landmark_start(source, target, markers, origin, cfg.pose)
    first = source if start is None else match_pose(source, start)
    corr = correspond(first.mesh, target, markers, cc)
    say("skeleton")
    skeleton, sk_report = transfer_skeleton(first, target, corr, cfg.skeleton, rest_source=source.skeleton)
    corr, skeleton, sk_report, pose_report = _match_pose(source, target, markers, cfg, cc, corr, skeleton,
                                                         sk_report, say, start)
    say("weights")
    skin, weights_report = _transfer_weights(source, target, corr, cfg)
    if source.shapes:
        say("blend shapes")
    shapes, shapes_report = _blend_shapes(source, target, corr, cfg)
    rig = Rig(target, skeleton, skin, shapes)
    rig.validate()
    timings = TransferTimings(markers=origin.time or 0.0, correspondence=corr.stats.timings.total,
                              skeleton=sk_report.timings.total, weights=weights_report.time, total=watch.elapsed())
    quality = assess(source, rig, corr.target_to_source.positions(corr.registered_source, source.mesh.faces),
                     marker_residual_max=corr.stats.marker_residual_max, n_markers=len(markers), config=cfg.quality,
                     fit_distance=max(corr.stats.fit_distance_mean, corr.stats.reverse_fit_distance_mean),
                     head_shares=origin.head_shares if origin.automatic else None,
                     doubted_markers=origin.low_confidence if origin.automatic else None,
                     facing_margin=origin.facing_margin, target_unread=origin.target_unread,
                     fitted_alone=origin.method == "fitted" and not origin.hand,
                     fitted=corr.target_solved, carried=(corr.source_carried, corr.target_carried),
                     marker_points=markers.target.positions(target.vertices, target.faces))
    report = TransferReport(
        source_vertices=int(len(source.mesh.vertices)), target_vertices=int(len(target.vertices)),
        joints=int(skeleton.n_joints), markers=len(markers), marker_origin=origin, correspondence=corr.stats,
        pose_match=pose_report, skeleton=sk_report, weights=weights_report, timings=timings, quality=quality,
        blendshapes=shapes_report)
    return Result(rig, corr, report, markers)
