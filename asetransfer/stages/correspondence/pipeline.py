"""The correspondence from end to end (:func:`correspond`): align and prepare, fair,
register, map; with the fallback from a singular proxy to the meshes themselves and the
statistics the report reads."""
from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from ...config import CorrespondenceConfig
from ...geometry.alignment import Similarity
from ...geometry.linsolve import NumericalError
from ...model.correspondence import Correspondence
from ...model.markers import Markers
from ...model.mesh import Mesh
from ...model.report import CorrespondenceStats, CorrespondenceTimings, Stopwatch
from .fairing import fair
from .maps import closest_point_maps, fit_stats
from .prepare import aligned_sides
from .proxies import carry, fitting_sides, lift
from .registration import RegistrationSystem, register_both, stiffness_levels
from .side import PreparedSide

log = logging.getLogger("asetransfer")


@dataclass(eq=False)
class _Fit:
    """What the fairing and the registration (steps 2 and 3) produced."""

    coarse_source: PreparedSide   # the side the source was faired on (itself or its proxy)
    coarse_target: PreparedSide   # the same for the target
    faired_source: np.ndarray     # (a_cs, 3) faired active vertices of coarse_source
    faired_target: np.ndarray     # (a_ct, 3) faired active vertices of coarse_target
    system: RegistrationSystem    # stage 2's system at mu1
    registered: np.ndarray        # (a_s, 3) registered active source vertices
    iterations: list              # [stage 1, stage 2 on proxies, stage 2]


def correspond(source: Mesh, target: Mesh, markers: Markers,
               config: CorrespondenceConfig | None = None) -> Correspondence:
    """Dense correspondence between ``source`` and ``target`` guided by ``markers``.

    Parameters
    ----------
    source, target : the meshes (any units and frames; several pieces allowed).
    markers : linked surface points on both (at least 3, not collinear).
    config : parameters (defaults: :class:`CorrespondenceConfig`).

    Returns
    -------
    :class:`Correspondence` with both maps indexed by the input vertices and triangles.
    """
    cfg = config or CorrespondenceConfig()
    watch = Stopwatch()
    with watch.timed("align"):                                                                # 1. align
        alignment, normalising, source_side, target_side = aligned_sides(source, target, markers, cfg)
    with watch.timed("proxy"):
        registration_target, coarse_source, coarse_target = fitting_sides(source_side, target_side, cfg)
    fit = _fair_and_register(source_side, registration_target, coarse_source, coarse_target,  # 2. fair, 3. register
                             cfg, watch)
    with watch.timed("maps"):                                                                 # 4. maps
        registered = carry(fit.registered, source_side)
        source_to_target, target_to_source, source_distance, target_distance = closest_point_maps(
            registered, source_side, target_side, markers.names, cfg)
    timings = CorrespondenceTimings(**watch.laps, total=watch.elapsed())
    stats = CorrespondenceStats(alignment_scale=alignment.scale,
                                **fit_stats(source_side, target_side, fit.registered, source_distance,
                                            target_distance, names=markers.names, unit=1.0 / normalising.scale),
                                **_solve_stats(source_side, target_side, registration_target, fit, cfg),
                                timings=timings)
    back = normalising.inverse()
    faired_source, faired_target = _faired_shapes(fit, source_side, target_side, back)
    return Correspondence(
        source_to_target=source_to_target, target_to_source=target_to_source, alignment=alignment,
        faired_source=faired_source, faired_target=faired_target,
        registered_source=back.apply(registered)[source_side.input_to_welded], stats=stats,
        target_solved=target_side.solved[target_side.input_to_welded],
        source_solved=source_side.solved[source_side.input_to_welded],
        source_carried=source_side.carried[source_side.input_to_welded],
        target_carried=target_side.carried[target_side.input_to_welded])


def _fair_and_register(source: PreparedSide, registration_target: PreparedSide, coarse_source: PreparedSide,
                       coarse_target: PreparedSide, cfg: CorrespondenceConfig, watch: Stopwatch) -> _Fit:
    """Steps 2 and 3 (:func:`_fit`); when a proxy's system is singular (a decimation gone
    wrong), again on the meshes themselves, as if the proxies were off."""
    try:
        return _fit(source, registration_target, coarse_source, coarse_target, cfg, watch)
    except NumericalError:
        if coarse_source is source and coarse_target is registration_target:
            raise
        log.debug("correspondence: a fairing proxy's system is singular; fitting without proxies")
        return _fit(source, registration_target, source, registration_target, cfg, watch)


def _fit(source: PreparedSide, registration_target: PreparedSide, coarse_source: PreparedSide,
         coarse_target: PreparedSide, cfg: CorrespondenceConfig, watch: Stopwatch) -> _Fit:
    """Steps 2 and 3: fairing (Eq. A I-1) of ``coarse_source`` and ``coarse_target`` (the
    sides or their proxies), then registration (Eq. A I-2) of ``source`` onto
    ``registration_target`` (:func:`~.registration.register_both`).  ``watch`` times the
    ``fair`` step and the registration's."""
    with watch.timed("fair"):
        faired_source, faired_target = fair(coarse_source, coarse_target, cfg)
    system, registered, iterations = register_both(source, registration_target, coarse_source, coarse_target,
                                                   faired_source, faired_target, cfg=cfg, watch=watch)
    return _Fit(coarse_source, coarse_target, faired_source, faired_target, system, registered, iterations)


def _solve_stats(source: PreparedSide, target: PreparedSide, registration_target: PreparedSide, fit: _Fit,
                 cfg: CorrespondenceConfig) -> dict:
    """The report's account of the solves (keyword arguments of :class:`CorrespondenceStats`):
    iterations, stiffness levels, solver, vertices left out of the fit, and the sizes of the
    proxies (0: none)."""
    return {"iterations": fit.iterations, "stiffness_levels": list(stiffness_levels(source, target, cfg)),
            "solver": fit.system.factor.backend,
            "unmarked_source_vertices": int(len(source.vertices) - len(source.active)),
            "unmarked_target_vertices": int(len(target.vertices) - len(target.active)),
            "proxy_vertices": int(len(registration_target.active)) if registration_target is not target else 0,
            "fairing_proxy_vertices": [int(len(coarse.active)) if coarse is not side else 0
                                       for coarse, side in ((fit.coarse_source, source), (fit.coarse_target, target))]}


def _faired_shapes(fit: _Fit, source: PreparedSide, target: PreparedSide, back: Similarity):
    """Functions computing the faired shapes on the input meshes, in the target's frame
    (``back``: normalised frame -> target frame): only ``--debug-dir`` asks for them, and
    carrying them from a large mesh's proxy costs a closest-point query per vertex.

    Returns
    -------
    faired_source () -> (n_s, 3), faired_target () -> (n_t, 3).
    """
    def faired_source():
        return back.apply(carry(lift(fit.faired_source, fit.coarse_source, source), source))[source.input_to_welded]

    def faired_target():
        out = target.vertices.copy()
        out[target.active] = lift(fit.faired_target, fit.coarse_target, target)
        return back.apply(out)[target.input_to_welded]
    return faired_source, faired_target
