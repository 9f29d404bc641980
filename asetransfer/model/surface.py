"""Points on a triangle mesh surface as a triangle and barycentric coordinates each, and
values interpolated at them (finding closest points: :mod:`asetransfer.geometry.surface`)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(eq=False)
class SurfacePoints:
    """Locations on a mesh: a triangle index and barycentric coordinates each.

    Attributes
    ----------
    face : (K,) int64 triangle indices.
    bary : (K, 3) float64 barycentric coordinates (rows sum to 1).
    """

    face: np.ndarray
    bary: np.ndarray

    def __post_init__(self):
        self.face = np.asarray(self.face, dtype=np.int64).reshape(-1)
        self.bary = np.asarray(self.bary, dtype=np.float64).reshape(-1, 3)

    def __len__(self):
        return len(self.face)

    def positions(self, vertices: np.ndarray, faces: np.ndarray) -> np.ndarray:
        """(K, 3) positions of the points on the mesh ``(vertices, faces)``."""
        return interpolate(vertices, faces, self.face, self.bary)


def interpolate(values: np.ndarray, faces: np.ndarray, face: np.ndarray, bary: np.ndarray) -> np.ndarray:
    """Barycentric interpolation of per-vertex ``values`` (N, d) at (face, bary) points."""
    tri = np.asarray(faces)[np.asarray(face)]  # (K, 3)
    return np.einsum("kj,kjd->kd", bary, np.asarray(values, dtype=np.float64)[tri])
