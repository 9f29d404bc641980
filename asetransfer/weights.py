"""Skin-weight transfer (spec Ch. 2, last step): target vertices read the source weights."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .skin import SkinWeights
from .surface import SurfacePoints


def barycentric_matrix(points: SurfacePoints, faces: np.ndarray, n_vertices: int) -> sp.csr_matrix:
    """(K, n) sparse matrix whose row k interpolates per-vertex values at point k."""
    rows = np.repeat(np.arange(len(points)), 3)
    return sp.csr_matrix((points.bary.ravel(), (rows, np.asarray(faces)[points.face].ravel())),
                         shape=(len(points), n_vertices))


def transfer_weights(skin: SkinWeights, target_to_source: SurfacePoints, source_faces: np.ndarray,
                     max_influences: int = 8, prune: float = 1e-3) -> SkinWeights:
    """Each target vertex takes the source weights interpolated at its source point.

    Barycentric interpolation over the source triangle, then weights under ``prune``
    are dropped, at most ``max_influences`` kept, and rows renormalised to sum to 1.
    """
    B = barycentric_matrix(target_to_source, source_faces, skin.n_vertices)
    return SkinWeights.from_sparse(B @ skin.to_sparse(), max_influences=max_influences, prune=prune)
