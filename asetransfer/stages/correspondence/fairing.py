"""Step 2 of the correspondence: joint fairing of both meshes (spec Eq. A I-1) into similar
featureless shapes on which corresponding markers coincide."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ...config import CorrespondenceConfig
from ...geometry.linsolve import Factorization
from .side import PreparedSide


def fair(source: PreparedSide, target: PreparedSide, cfg: CorrespondenceConfig):
    """Joint fairing of the marked parts of both meshes (Eq. A I-1).

    Minimises ``lambda1 / (sum A^s + sum A^t) [sum_i A_i^s |Delta x_i^s|^2 +
    sum_j A_j^t |Delta x_j^t|^2]`` (a) ``+ lambda2 / K sum_k |r_k^s - r_k^t|^2`` (b)
    ``+ lambda3 / K sum_k |(r_k^s + r_k^t)/2 - (rbar_k^s + rbar_k^t)/2|^2`` (c)
    over the vertex positions of both meshes, ``r_k`` being the barycentric marker
    positions and ``rbar_k`` their input positions (lambda1..3: ``cfg.fair_smoothness``,
    ``fair_marker_link``, ``fair_marker_anchor``).  Glued pieces keep their offsets across
    the gap with the weight of (b).  One sparse SPD solve, three right-hand sides.

    Parameters
    ----------
    source, target : the prepared sides (or their fairing proxies), K markers each.

    Returns
    -------
    (a_s, 3), (a_t, 3): faired positions of the active vertices of each mesh.
    """
    source_positions, target_positions = source.vertices[source.active], target.vertices[target.active]
    both_positions = np.vstack([source_positions, target_positions])
    # glued pieces are faired as one surface: their cut boundaries see across the gap
    (source_operator, source_area) = source.operator(cfg.fair_across_gaps)
    (target_operator, target_area) = target.operator(cfg.fair_across_gaps)
    area = source_area + target_area
    n_markers = source.markers.shape[0]
    link = sp.hstack([source.markers, -target.markers]).tocsr()       # r^s - r^t
    mid = 0.5 * sp.hstack([source.markers, target.markers]).tocsr()   # (r^s + r^t) / 2
    goal = mid @ both_positions                                       # input midpoints
    glue = sp.block_diag([source.glue, target.glue]).tocsr()          # pieces keep their offsets
    matrix = (cfg.fair_smoothness / area * sp.block_diag([source_operator, target_operator])
              + cfg.fair_marker_link / n_markers * (link.T @ link)
              + cfg.fair_marker_anchor / n_markers * (mid.T @ mid))
    rhs = cfg.fair_marker_anchor / n_markers * (mid.T @ goal)
    if glue.shape[0]:
        matrix = matrix + cfg.fair_marker_link / n_markers * (glue.T @ glue)
        rhs = rhs + cfg.fair_marker_link / n_markers * (glue.T @ (glue @ both_positions))
    faired = Factorization(matrix, "fairing system (Eq. A I-1)").solve(rhs)
    return faired[: len(source_positions)], faired[len(source_positions):]
