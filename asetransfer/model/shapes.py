"""Blend shapes (morph targets): named displacements of a mesh's vertices.

A character's face is driven by them (expressions, visemes, the 52 ARKit shapes) and its
body by corrective shapes.  A shape moves few of the mesh's vertices, so it is kept
sparse: the vertices it moves and their offsets.  The posed mesh is
``vertices + sum_k weight_k * dense(shape_k)`` (glTF 2.0 §3.7.2.2, UsdSkelBlendShape).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(eq=False)
class MorphTarget:
    """One blend shape of a mesh.

    Attributes
    ----------
    name : the shape's name (glTF ``mesh.extras.targetNames``, a USD BlendShape's name).
    vertices : (k,) int64, the mesh vertices it moves (sorted, distinct).
    positions : (k, 3) float64, their position offsets (mesh units and frame).
    normals : (k, 3) float64, their normal offsets (``normal + offset`` is the shaped
        vertex's normal, before normalising), or None when the shape has none.
    weight : the shape's default weight (glTF ``mesh.weights``; 0: the mesh as modelled).
    """

    name: str
    vertices: np.ndarray
    positions: np.ndarray
    normals: np.ndarray | None = None
    weight: float = 0.0

    def __post_init__(self):
        self.name = str(self.name)
        self.vertices = np.ascontiguousarray(self.vertices, dtype=np.int64).reshape(-1)
        self.positions = np.ascontiguousarray(self.positions, dtype=np.float64).reshape(-1, 3)
        if self.normals is not None:
            self.normals = np.ascontiguousarray(self.normals, dtype=np.float64).reshape(-1, 3)
        self.weight = float(self.weight)

    def validate(self, n_vertices: int) -> None:
        """Raise ``ValueError`` naming the first inconsistency with a mesh of ``n_vertices``."""
        k = len(self.vertices)
        if len(self.positions) != k or (self.normals is not None and len(self.normals) != k):
            raise ValueError(f"blend shape {self.name!r} does not have one offset per vertex it moves")
        if k and (self.vertices.min() < 0 or self.vertices.max() >= n_vertices):
            raise ValueError(f"blend shape {self.name!r} moves a vertex the mesh does not have")
        if k > 1 and not (np.diff(self.vertices) > 0).all():
            raise ValueError(f"blend shape {self.name!r} lists its vertices out of order or twice")
        for what, arr in (("position", self.positions), ("normal", self.normals)):
            if arr is not None and not np.isfinite(arr).all():
                raise ValueError(f"blend shape {self.name!r} has NaN or infinite {what} offsets")
        if not np.isfinite(self.weight):
            raise ValueError(f"blend shape {self.name!r} has a NaN or infinite default weight")

    def dense(self, n_vertices: int, what: str = "positions") -> np.ndarray:
        """(n_vertices, 3) the offsets of every vertex (zero where the shape does not move it);
        ``what``: ``"positions"`` or ``"normals"`` (zeros when the shape has none)."""
        out = np.zeros((n_vertices, 3))
        values = getattr(self, what)
        if values is not None:
            out[self.vertices] = values
        return out


def sparse_target(name: str, positions: np.ndarray, normals: np.ndarray | None = None,
                  weight: float = 0.0) -> MorphTarget:
    """The :class:`MorphTarget` of dense (n, 3) offsets: only the vertices whose position or
    normal offset is not zero."""
    moved = np.any(positions != 0, axis=1)
    if normals is not None:
        moved |= np.any(normals != 0, axis=1)
    vertices = np.flatnonzero(moved)
    return MorphTarget(name, vertices, positions[vertices], None if normals is None else normals[vertices], weight)


def check_shapes(shapes, n_vertices: int) -> None:
    """Raise ``ValueError`` unless every shape fits a mesh of ``n_vertices`` and no name repeats."""
    seen = set()
    for shape in shapes:
        if shape.name in seen:
            raise ValueError(f"two blend shapes are named {shape.name!r}")
        seen.add(shape.name)
        shape.validate(n_vertices)
