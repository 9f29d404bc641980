"""The whole job: correspondence -> skeleton -> weights -> a rigged target (spec Ch. 2-3)."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..config import Config
from .correspondence import Correspondence, correspond
from .quality import assess
from ..model.markers import Markers
from ..model.mesh import Mesh
from ..model.rig import Rig
from .skeleton import transfer_skeleton
from .weights import transfer_weights, transfer_weights_robust


@dataclass(eq=False)
class Result:
    """A transfer's output: the rigged target, the correspondence used, a JSON-ready report."""

    rig: Rig
    correspondence: Correspondence
    report: dict = field(default_factory=dict)


def transfer(source: Rig, target: Mesh, markers: Markers, config: Config | None = None,
             progress=None) -> Result:
    """Rig ``target`` with ``source``'s skeleton and skin weights.

    Parameters
    ----------
    source : the rigged source character.
    target : the target mesh (kept exactly: vertex order, units, frame).
    markers : linked markers between ``source.mesh`` and ``target``.
    config : parameters (:class:`~asetransfer.config.Config` defaults).
    progress : optional callable ``progress(stage_name)`` called as stages start.

    Returns
    -------
    :class:`Result`; ``result.rig`` is the target mesh skinned to the transferred skeleton.
    """
    cfg = config or Config()
    say = progress or (lambda stage: None)
    t0 = time.perf_counter()
    say("correspondence")
    corr = correspond(source.mesh, target, markers, cfg.correspondence)
    say("skeleton")
    skeleton, sk_report = transfer_skeleton(source, target, corr, cfg.skeleton)
    say("weights")
    t = time.perf_counter()
    wc = cfg.weights
    weights_report = {"method": wc.method}
    if wc.method == "robust":
        diagonal = float(np.linalg.norm(np.diff(target.bounds(), axis=0)))
        skin, weights_report["robust"] = transfer_weights_robust(
            source.skin, corr.target_to_source, target_vertices=target.vertices, target_faces=target.faces,
            registered_source=corr.registered_source, source_faces=source.mesh.faces,
            max_distance=wc.robust_distance * diagonal, max_angle=wc.robust_angle,
            smooth_iterations=wc.smooth_iterations, contact_neighbours=wc.contact_neighbours,
            max_influences=wc.max_influences, prune=wc.prune)
    else:
        skin = transfer_weights(source.skin, corr.target_to_source, source.mesh.faces,
                                max_influences=wc.max_influences, prune=wc.prune)
    t_weights = time.perf_counter() - t
    rig = Rig(target, skeleton, skin)
    rig.validate()
    counts = skin.influence_counts()
    report = {
        "source_vertices": int(len(source.mesh.vertices)), "target_vertices": int(len(target.vertices)),
        "joints": int(skeleton.n_joints), "markers": len(markers),
        "correspondence": corr.stats, "skeleton": sk_report,
        "weights": {**weights_report, "max_influences": int(counts.max(initial=0)),
                    "mean_influences": float(np.mean(counts)), "time": t_weights},
        "timings": {"correspondence": corr.stats["timings"]["total"], "skeleton": sk_report["timings"]["total"],
                    "weights": t_weights, "total": time.perf_counter() - t0},
    }
    report["quality"] = assess(source, rig, corr.target_to_source.positions(corr.registered_source, source.mesh.faces),
                               marker_residual_max=corr.stats["marker_residual_max"], n_markers=len(markers),
                               config=cfg.quality)
    return Result(rig, corr, report)
