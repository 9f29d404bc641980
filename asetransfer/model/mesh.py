"""Triangle mesh: plain ``(V, F)`` arrays plus the part each vertex came from."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .look import Look

#: largest coordinate magnitude accepted: the outputs are 32-bit floats (glTF), and squares of
#: larger float64 values overflow in the geometry (distances, areas)
COORDINATE_LIMIT = float(np.finfo(np.float32).max)

#: the loaders' message for a mesh whose every triangle has zero area
DEGENERATE_MESSAGE = "every triangle is degenerate (zero area): there is no surface to rig"


@dataclass(eq=False)
class Mesh:
    """A triangle mesh as the user gave it.

    Vertex order is the order of the input file and is never changed, so that
    per-vertex results line up with the user's file.

    Attributes
    ----------
    vertices : (N, 3) float64
    faces : (F, 3) int64 vertex indices.
    parts : names of the pieces the mesh was merged from (glTF mesh nodes and
        primitives, OBJ objects); one name for a single-piece file.
    vertex_part : (N,) int32, index into ``parts`` of each vertex.
    normals : (N, 3) float64 or None, per-vertex normals from the file.
    uv : (N, 2) float64 or None, per-vertex texture coordinates from the file, in glTF's
        convention (origin at the image's top left, v down; readers of other conventions convert).
    look : the file's materials, attributes, morph targets and scene (:class:`~.look.Look`),
        or None; kept only while the vertices are the file's.
    """

    vertices: np.ndarray
    faces: np.ndarray
    parts: tuple = ("mesh",)
    vertex_part: np.ndarray | None = None
    normals: np.ndarray | None = None
    uv: np.ndarray | None = None
    look: Look | None = None

    def __post_init__(self):
        self.vertices = np.ascontiguousarray(self.vertices, dtype=np.float64).reshape(-1, 3)
        self.faces = np.ascontiguousarray(self.faces, dtype=np.int64).reshape(-1, 3)
        self.parts = tuple(str(p) for p in self.parts)
        n = len(self.vertices)
        if self.vertex_part is None:
            self.vertex_part = np.zeros(n, dtype=np.int32)
        self.vertex_part = np.ascontiguousarray(self.vertex_part, dtype=np.int32).reshape(-1)
        if self.normals is not None:
            self.normals = np.ascontiguousarray(self.normals, dtype=np.float64).reshape(-1, 3)
        if self.uv is not None:
            self.uv = np.ascontiguousarray(self.uv, dtype=np.float64).reshape(-1, 2)
        self.validate()

    def validate(self) -> None:
        """Raise ``ValueError`` naming the first inconsistency found."""
        n = len(self.vertices)
        if n == 0:
            raise ValueError("the mesh has no vertices")
        if len(self.faces) == 0:
            raise ValueError("the mesh has no faces")
        if not np.isfinite(self.vertices).all():
            bad = int(np.flatnonzero(~np.isfinite(self.vertices).all(axis=1))[0])
            raise ValueError(f"vertex {bad} has a NaN or infinite coordinate")
        if np.abs(self.vertices).max() > COORDINATE_LIMIT:
            bad = int(np.flatnonzero((np.abs(self.vertices) > COORDINATE_LIMIT).any(axis=1))[0])
            raise ValueError(f"vertex {bad} has a coordinate beyond {COORDINATE_LIMIT:.3g} "
                             "(the 32-bit float range the rig is written in)")
        if self.faces.min() < 0 or self.faces.max() >= n:
            bad = int(np.flatnonzero(((self.faces < 0) | (self.faces >= n)).any(axis=1))[0])
            raise ValueError(f"face {bad} uses vertex index {self.faces[bad].tolist()}, out of range 0..{n - 1}")
        if len(self.vertex_part) != n:
            raise ValueError("vertex_part does not have one entry per vertex")
        if len(self.parts) == 0 or self.vertex_part.min() < 0 or self.vertex_part.max() >= len(self.parts):
            raise ValueError("vertex_part refers to a part that does not exist")
        for name, arr in (("normals", self.normals), ("texture coordinates", self.uv)):
            if arr is not None and len(arr) != n:
                raise ValueError(f"{name} do not have one entry per vertex")
            if arr is not None and not np.isfinite(arr).all():
                raise ValueError(f"{name} contain NaN or infinite values")

    @property
    def n_vertices(self) -> int:
        return len(self.vertices)

    @property
    def n_faces(self) -> int:
        return len(self.faces)

    def degenerate_faces(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """(F,) True for triangles of zero area: repeated or collinear corners (to rounding);
        ``start``, ``stop``: only the triangles ``faces[start:stop]``."""
        p = self.vertices[self.faces[start:stop]]
        e = p[:, [1, 2, 0]] - p
        longest = np.einsum("fkd,fkd->fk", e, e).max(axis=1)
        return np.linalg.norm(np.cross(e[:, 0], e[:, 1]), axis=1) <= 1e-10 * longest

    def all_faces_degenerate(self, chunk: int = 65536) -> bool:
        """``degenerate_faces().all()``, a chunk at a time: a usable mesh answers on its first
        chunk (the whole test took 0.6 s on a 1M-vertex target, once per file read)."""
        return all(self.degenerate_faces(lo, lo + chunk).all() for lo in range(0, len(self.faces), chunk))

    def bounds(self) -> np.ndarray:
        """(2, 3) min and max corners of the vertices used by faces."""
        mask = np.zeros(len(self.vertices), dtype=bool)
        mask[self.faces.ravel()] = True  # linear: np.unique sorted 6M indices on a 1M mesh (2 s)
        used = self.vertices[mask]
        return np.stack([used.min(axis=0), used.max(axis=0)])

    def part_faces(self, part: int) -> np.ndarray:
        """Indices of the faces whose first vertex belongs to ``part``."""
        return np.flatnonzero(self.vertex_part[self.faces[:, 0]] == part)

    def with_vertices(self, vertices: np.ndarray) -> "Mesh":
        """The same mesh (faces, parts, uv) with other vertex positions; normals and look dropped."""
        return Mesh(vertices, self.faces, self.parts, self.vertex_part, None, self.uv)
