"""The look of a mesh read from a file: everything but its triangles, kept for the writers.

A transfer rigs a :class:`~asetransfer.Mesh` (positions and triangles); what made the
target look as it did (materials, textures, every UV set, vertex colours, tangents,
morph targets, the scene around it) is kept beside it as a :class:`Look`: a glTF 2.0
document holding the file's content, and for each of its mesh primitives the mesh
vertex each of its vertices is.  A glTF file is its own document; OBJ and PLY readers
make one.  A writer that can hold it (glTF) writes the rig over a copy of it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(eq=False)
class LookPiece:
    """Primitives of a glTF mesh, placed by a node, that became vertices of the mesh.

    Attributes
    ----------
    node : the document's node that places the mesh.
    mesh : the document's mesh.
    primitives : indices of the mesh's primitives that share this vertex array.
    vertices : (n,) int64, the :class:`~asetransfer.Mesh` vertex of each of their n vertices.
    placement : (4, 4) the affine map from the document's positions to the mesh's:
        ``mesh.vertices[vertices] = placement @ POSITION`` (the node's world matrix for a
        static mesh, the identity for a skinned one read in its bind pose).
    """

    node: int
    mesh: int
    primitives: tuple
    vertices: np.ndarray
    placement: np.ndarray = field(default_factory=lambda: np.eye(4))

    def __post_init__(self):
        self.primitives = tuple(int(k) for k in self.primitives)
        self.vertices = np.ascontiguousarray(self.vertices, dtype=np.int64).reshape(-1)
        self.placement = np.asarray(self.placement, dtype=np.float64).reshape(4, 4)


@dataclass(eq=False)
class Look:
    """A glTF 2.0 document with the look of a mesh, and where the mesh's vertices are in it.

    Attributes
    ----------
    path : the file the look was read from (a .gltf's external images lie beside it).
    document : the glTF JSON (never modified: writers copy it).
    buffers : the bytes of each of ``document["buffers"]``.
    pieces : one :class:`LookPiece` per group of primitives that became mesh vertices.
    lost : what the reader could not put in the document, one short name each
        (``"MTL Ns"``, ``"PLY property quality"``), named in the writer's warning.
    """

    path: str
    document: dict
    buffers: list
    pieces: list
    lost: tuple = ()
