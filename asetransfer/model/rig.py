"""Rig: a mesh bound to a skeleton by skin weights."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .mesh import Mesh
from .shapes import check_shapes
from .skeleton import Skeleton
from .skin import SkinWeights, linear_blend_skinning


@dataclass(eq=False)
class Rig:
    """A skinned character.

    Attributes
    ----------
    mesh : the mesh in the bind pose (glTF ``POSITION``: the mesh as modelled).
    skeleton : joints with bind pose (world) and rest pose (local).
    skin : one row of weights per mesh vertex.
    shapes : the mesh's blend shapes (:class:`~.shapes.MorphTarget`, names distinct), applied
        before skinning; empty when it has none.
    """

    mesh: Mesh
    skeleton: Skeleton
    skin: SkinWeights
    shapes: tuple = ()

    def __post_init__(self):
        self.shapes = tuple(self.shapes)
        self.validate()

    def validate(self) -> None:
        """Raise ``ValueError`` if a part is invalid or the parts do not fit together."""
        self.mesh.validate()
        self.skeleton.validate()
        if self.skin.n_vertices != self.mesh.n_vertices:
            raise ValueError(f"skin has {self.skin.n_vertices} rows for {self.mesh.n_vertices} vertices")
        if self.skin.n_joints != self.skeleton.n_joints:
            raise ValueError(f"skin refers to {self.skin.n_joints} joints, skeleton has {self.skeleton.n_joints}")
        self.skin.validate()
        check_shapes(self.shapes, self.mesh.n_vertices)

    def posed_vertices(self, world: np.ndarray | None = None) -> np.ndarray:
        """Mesh vertices skinned to joint world matrices ``world`` (default: rest pose)."""
        return linear_blend_skinning(self.mesh.vertices, self.skin, self.skeleton.skinning_matrices(world))

    def rest_mesh(self) -> Mesh:
        """The mesh in the rest pose (equal to ``mesh`` when rest = bind)."""
        return self.mesh.with_vertices(self.posed_vertices())
