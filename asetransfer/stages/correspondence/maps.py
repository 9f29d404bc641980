"""Step 4 of the correspondence: the closest-point maps between the registered source and
the target in both directions, with the symmetric filter of spec Appendix I (last part),
and how well they fit."""
from __future__ import annotations

import numpy as np

from ...config import CorrespondenceConfig
from ...geometry.surface import SurfaceIndex
from ...geometry.symmetry import plane_from_pairs, reflect
from ...humanoid.naming import lr_pairs
from ...model.surface import SurfacePoints, interpolate
from .side import PreparedSide


def closest_point_maps(registered: np.ndarray, source: PreparedSide, target: PreparedSide, names,
                       cfg: CorrespondenceConfig):
    """Step 4: closest-point maps in both directions, on the input triangles.

    Parameters
    ----------
    registered : (n_s', 3) every welded source vertex, registered onto the target.
    source, target : the prepared sides (the full target, not its proxy).
    names : the marker names (the symmetric filter's left/right pairs, ``cfg.symmetric``).

    Returns
    -------
    source_to_target, target_to_source : :class:`SurfacePoints` per input vertex;
    source_distance, target_distance : (n_s',), (n_t',) closest-point distances of the
    welded vertices (normalised frame).
    """
    target_index = target.surface("whole")
    to_target_face, to_target_bary, source_distance, _ = target_index.closest(registered)
    to_source_face, to_source_bary, target_distance, _ = SurfaceIndex(registered, source.faces).closest(target.vertices)
    if cfg.symmetric:
        to_target_face, to_target_bary = _symmetric_filter(source, target, names, target_index=target_index,
                                                           face=to_target_face, bary=to_target_bary)
    source_to_target = SurfacePoints(to_target_face[source.input_to_welded], to_target_bary[source.input_to_welded])
    target_to_source = SurfacePoints(to_source_face[target.input_to_welded], to_source_bary[target.input_to_welded])
    return source_to_target, target_to_source, source_distance, target_distance


def _marker_plane(points: np.ndarray, names) -> np.ndarray:
    """Mirror plane ``(n, d)`` bisecting the L/R marker pairs (names like ``knee.L``/``knee.R``)
    among ``points`` (K, 3)."""
    pairs = lr_pairs(names)
    plane = plane_from_pairs(points, pairs) if len(pairs) >= 3 else None
    if plane is None:
        raise ValueError("the symmetric filter needs at least 3 left/right marker pairs "
                         "(names like 'knee.L' / 'knee.R')")
    return plane


def _symmetric_filter(source: PreparedSide, target: PreparedSide, names, *, target_index: SurfaceIndex,
                      face: np.ndarray, bary: np.ndarray):
    """Appendix I, last part: average each vertex's target point with the mirror of its
    mirror vertex's target point, then snap back onto the target surface.

    Mirror planes of both meshes bisect their L/R marker pairs (``names``).

    Parameters
    ----------
    face : (n_s',), bary : (n_s', 3) each welded source vertex's point on the welded target
        (``target_index``).

    Returns
    -------
    face (n_s',), bary (n_s', 3): the filtered points on the welded target.
    """
    source_plane = _marker_plane(source.markers @ source.vertices[source.active], names)
    target_plane = _marker_plane(target.markers @ target.vertices[target.active], names)
    reflected = reflect(source.vertices, source_plane)
    twin_face, _, _, _ = SurfaceIndex(source.vertices, source.faces).closest(reflected)
    # the twin of vertex i: the closest vertex of the triangle nearest to its reflection
    corners = source.faces[twin_face]
    corner_distance = np.linalg.norm(source.vertices[corners] - reflected[:, None, :], axis=2)
    twin_vertex = corners[np.arange(len(corners)), np.argmin(corner_distance, axis=1)]
    on_target = interpolate(target.vertices, target.faces, face, bary)
    mid = 0.5 * (on_target + reflect(on_target[twin_vertex], target_plane))
    new_face, new_bary, _, _ = target_index.closest(mid)
    return new_face, new_bary


def fit_stats(source: PreparedSide, target: PreparedSide, registered_active: np.ndarray,
              source_distance: np.ndarray, target_distance: np.ndarray, *, names, unit: float) -> dict:
    """Marker residuals of the registered source and the maps' fit distances (over each side's
    fitted part, ``PreparedSide.solved``), in target file units.

    Parameters
    ----------
    registered_active : (a_s, 3) the registered active source vertices.
    source_distance, target_distance : (n_s',), (n_t',) the maps' closest-point distances
        (:func:`closest_point_maps`).
    names : the K marker names (the worst marker is named); unit : file units per normalised unit.

    Returns
    -------
    keyword arguments of :class:`~asetransfer.model.report.CorrespondenceStats`:
    ``marker_residual_mean``, ``_max``, ``_worst``, ``fit_distance_mean``, ``_p95``,
    ``reverse_fit_distance_mean``.
    """
    target_positions = target.vertices[target.active]
    marker_residual = np.linalg.norm(source.markers @ registered_active - target.markers @ target_positions,
                                     axis=1) * unit
    # over the fitted part of each side: pieces without a marker (props, a cape, clothes) are
    # carried along, not fitted, and a warning names them; their distance is no misfit
    source_distance, target_distance = _fitted(source_distance, source.solved), _fitted(target_distance, target.solved)
    return {
        "marker_residual_mean": float(marker_residual.mean()),
        "marker_residual_max": float(marker_residual.max()),
        "marker_residual_worst": names[int(np.argmax(marker_residual))],
        "fit_distance_mean": float(source_distance.mean() * unit),
        "fit_distance_p95": float(np.percentile(source_distance, 95) * unit),
        "reverse_fit_distance_mean": float(target_distance.mean() * unit),
    }


def _fitted(distance: np.ndarray, solved: np.ndarray) -> np.ndarray:
    """``distance`` (n',) of the vertices ``solved`` (n',) bool, or all of them when none is."""
    return distance[solved] if solved.any() else distance
