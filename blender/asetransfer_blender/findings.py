"""A transfer's verdict and warnings as the lines a TD reads in Blender, naming what they concern (no ``bpy``).

The library gives the verdict and its reasons (:class:`~asetransfer.model.report.QualityVerdict`)
and logs its warnings as one-line sentences.  In Blender each becomes one report line at
WARNING level (the status bar and the Info editor); the lines about surface -- pieces
carried without a marker, area the fit does not reach -- also say where it is: the
objects and, within each, the bones that weight most of it.  :class:`Findings` also
lists what to select: the bones the verdict names, the marker with the largest
residual and the target vertices concerned.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from asetransfer.geometry.topology import vertex_areas
from asetransfer.model.mesh import Mesh
from asetransfer.model.skin import SkinWeights
from asetransfer.stages.quality import height

#: how many objects, and bones within each, a line names
NAMED_PARTS, NAMED_BONES = 5, 3


@dataclass(eq=False)
class Findings:
    """What a transfer's report says, for Blender: ``lines`` (level, text) in order, then the
    bones, markers and target vertices to select."""

    lines: list = field(default_factory=list)
    bones: list = field(default_factory=list)
    markers: list = field(default_factory=list)
    target_vertices: np.ndarray | None = None   # (N,) bool over the target's joined vertices


def where(mask: np.ndarray, mesh: Mesh, skin: SkinWeights, joint_names) -> str:
    """Where the masked vertices are: per object (part) holding most of their area, the bones
    weighting most of it, e.g. ``"robot (near hand.L, forearm.L, head); hat"`` (an object
    wholly masked is named alone).

    Parameters
    ----------
    mask : (N,) bool over ``mesh``'s vertices.
    skin : the mesh's skin weights (each vertex's bone: its largest weight).
    joint_names : the names of the skin's joints.
    """
    area = vertex_areas(mesh.vertices, mesh.faces) * mask
    parts = []
    for part in np.argsort(-np.bincount(mesh.vertex_part, weights=area, minlength=len(mesh.parts)), kind="stable"):
        rows = mesh.vertex_part == part
        if not (mask & rows).any() or len(parts) == NAMED_PARTS:
            continue
        if mask[rows].all():
            parts.append(mesh.parts[part])
            continue
        by_bone = np.bincount(skin.indices[rows, 0], weights=area[rows], minlength=len(joint_names))
        bones = [joint_names[j] for j in np.argsort(-by_bone, kind="stable")[:NAMED_BONES] if by_bone[j] > 0]
        parts.append(f"{mesh.parts[part]} (near {', '.join(bones)})")
    return "; ".join(parts)


def unreached(target: Mesh, target_points: np.ndarray, mapped_distance_pct: float,
              fitted: np.ndarray | None = None) -> np.ndarray:
    """(N,) True on the target vertices of the fitted part (``fitted``; None: all) the fit
    does not reach: further than ``mapped_distance_pct`` % of the height from their point on
    the fitted source (the quality verdict's mapped area,
    :func:`~asetransfer.stages.quality.mapped_area_fraction`; pieces carried without a marker
    are named by their own warning)."""
    limit = mapped_distance_pct / 100.0 * height(target)
    missed = np.linalg.norm(target.vertices - target_points, axis=1) > limit
    return missed if fitted is None else missed & fitted


def transfer_findings(result, source, warnings: list, quality_config) -> Findings:
    """The report lines of a transfer and what they concern.

    Parameters
    ----------
    result : the transfer's :class:`~asetransfer.stages.transfer.Result`.
    source : the source :class:`~asetransfer.model.rig.Rig`.
    warnings : the log's warning lines during the transfer (``job.collected_warnings``).
    quality_config : :class:`~asetransfer.config.QualityConfig` of the verdict.
    """
    quality, corr, rig = result.report.quality, result.correspondence, result.rig
    found = Findings(bones=list(dict.fromkeys(quality.joints_outside_body + quality.bones_out_of_proportion
                                              + quality.feet_pointing_back + quality.joints_on_carried_pieces)))
    names = rig.skeleton.names
    for reason in quality.reasons:
        found.lines.append(("WARNING", f"quality '{quality.verdict}': {reason}"))
    concerned = np.zeros(rig.mesh.n_vertices, bool)
    if quality.mapped_area_fraction < quality_config.mapped_check:
        points = corr.target_to_source.positions(corr.registered_source, source.mesh.faces)
        missed = unreached(rig.mesh, points, quality_config.mapped_distance_pct, corr.target_solved)
        found.lines.append(("WARNING", f"not reached by the fit: {where(missed, rig.mesh, rig.skin, names)}"))
        concerned |= missed
    if quality.marker_residual_pct_height > quality_config.residual_check_pct and corr.stats is not None:
        found.markers.append(corr.stats.marker_residual_worst)
    for line in warnings:
        if line.startswith("result quality '"):
            continue  # its reasons are the lines above
        found.lines.append(("WARNING", line + _unmarked_places(line, result, source)))
        if "carry no marker" in line and "the target's" in line and corr.target_solved is not None:
            concerned |= ~corr.target_solved
    found.target_vertices = concerned if concerned.any() else None
    return found


def _unmarked_places(line: str, result, source) -> str:
    """For the warning about pieces without a marker, which pieces: where the vertices the
    correspondence carried instead of fitting lie (``" -- not fitted: ..."``), else ""."""
    if "carry no marker" not in line:
        return ""
    corr, names = result.correspondence, result.rig.skeleton.names
    side = "source" if "the source's" in line else "target"
    solved = corr.source_solved if side == "source" else corr.target_solved
    if solved is None or solved.all():
        return ""
    character = source if side == "source" else result.rig
    return f" -- not fitted ({side}): {where(~solved, character.mesh, character.skin, names)}"
