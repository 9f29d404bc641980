"""Skeleton: joint names, hierarchy, rest pose (local) and bind pose (world).

The data model follows UsdSkel: a skeleton is arrays indexed by joint.

* The **bind pose** is where each joint sits inside the mesh as given:
  ``bind_world`` (J, 4, 4), the inverse of glTF's ``inverseBindMatrices``.
* The **rest pose** is the pose animations start from, stored as local
  transforms: ``T @ orient @ rotation @ S`` per joint, relative to the parent.

The rest rotation is split as in Maya (spec §3.2): ``orient`` is the joint's fixed
orientation (Maya's *jointOrient*), which sets the local axes animation rotates
about; ``rotation`` is the animated rotation on top of it (Maya's *rotate*).  A
freshly rigged character has ``rotation = I``.  After skeleton transfer the target
copies the source's ``orient`` and carries its Δ-rotation in ``rotation``
(spec Alg. 2); pose normalisation sets ``rotation`` back to identity (§3.3).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .hierarchy import Hierarchy
from .transforms import compose_trs, global_from_local


@dataclass(eq=False)
class Skeleton:
    """A joint hierarchy with its rest and bind poses.

    Attributes
    ----------
    names : tuple of str, unique joint names.
    parents : (J,) int64, parent joint index, ``-1`` for roots.
    translation : (J, 3) rest translation in the parent's frame.
    orient : (J, 3, 3) fixed joint orientation relative to the parent (jointOrient).
    rotation : (J, 3, 3) rest rotation applied after ``orient`` (rotate).
    scale : (J, 3) rest scale.
    bind_world : (J, 4, 4) world matrix of every joint in the bind pose.
    humanoid_bones : dict, the humanoid bones the file declares (a VRM's humanoid: VRM 1.0
        bone name -> joint name, ``{"hips": "J_Bip_C_Hips", "leftUpperArm": ...}``); empty
        when it declares none.  The skeleton map reads them before the joint names.
    """

    names: tuple
    parents: np.ndarray
    translation: np.ndarray
    orient: np.ndarray
    rotation: np.ndarray
    scale: np.ndarray
    bind_world: np.ndarray
    humanoid_bones: dict = field(default_factory=dict)

    def __post_init__(self):
        self.names = tuple(str(n) for n in self.names)
        j = len(self.names)
        self.parents = np.asarray(self.parents, dtype=np.int64).reshape(j)
        self.translation = np.asarray(self.translation, dtype=np.float64).reshape(j, 3)
        self.orient = np.asarray(self.orient, dtype=np.float64).reshape(j, 3, 3)
        self.rotation = np.asarray(self.rotation, dtype=np.float64).reshape(j, 3, 3)
        self.scale = np.asarray(self.scale, dtype=np.float64).reshape(j, 3)
        self.bind_world = np.asarray(self.bind_world, dtype=np.float64).reshape(j, 4, 4)
        self.humanoid_bones = dict(self.humanoid_bones)
        self.validate()

    @classmethod
    def from_world(cls, names, parents, world: np.ndarray, bind_world: np.ndarray | None = None,
                   humanoid_bones: dict | None = None) -> "Skeleton":
        """A skeleton whose rest pose has the given world matrices (rotation = I).

        ``bind_world`` defaults to ``world`` (rest pose = bind pose).
        """
        from .transforms import decompose_trs, local_from_global

        world = np.asarray(world, dtype=np.float64)
        t, r, s, _ = decompose_trs(local_from_global(world, parents))
        eye = np.broadcast_to(np.eye(3), r.shape).copy()
        return cls(names, parents, t, r, eye, s, world if bind_world is None else bind_world, humanoid_bones or {})

    def validate(self) -> None:
        """Raise ``ValueError`` naming the first inconsistency found."""
        if len(self.names) == 0:
            raise ValueError("the skeleton has no joints")
        if len(set(self.names)) != len(self.names):
            seen, dup = set(), None
            for n in self.names:
                if n in seen:
                    dup = n
                    break
                seen.add(n)
            raise ValueError(f"joint name {dup!r} is used twice")
        self._hierarchy, self._hierarchy_of = Hierarchy(self.parents), self.parents  # raises on cycles
        for name in ("translation", "orient", "rotation", "scale", "bind_world"):
            arr = getattr(self, name)
            if not np.isfinite(arr).all():
                j = int(np.flatnonzero(~np.isfinite(arr.reshape(len(arr), -1)).all(axis=1))[0])
                raise ValueError(f"joint {self.names[j]!r} has a NaN or infinite {name.replace('_', ' ')}")
        a = self.bind_world[:, :3, :3]
        singular = np.abs(np.linalg.det(a)) <= 1e-12 * np.abs(a).max(axis=(1, 2)) ** 3
        if singular.any():
            j = int(np.flatnonzero(singular)[0])
            raise ValueError(f"joint {self.names[j]!r} has a singular bind matrix")
        unknown = [bone for bone, joint in self.humanoid_bones.items() if joint not in self.names]
        if unknown:
            raise ValueError(f"humanoid bone {unknown[0]!r} names joint {self.humanoid_bones[unknown[0]]!r}, which "
                             "the skeleton does not have")

    # ------------------------------------------------------------------ queries
    @property
    def n_joints(self) -> int:
        return len(self.names)

    def index(self, name: str) -> int:
        """Index of the joint called ``name`` (``KeyError`` if absent)."""
        try:
            return self.names.index(name)
        except ValueError:
            raise KeyError(name) from None

    @property
    def hierarchy(self) -> Hierarchy:
        """The joint hierarchy's :class:`~asetransfer.model.hierarchy.Hierarchy`, built once
        (again when ``parents`` is replaced by another array; do not edit it in place)."""
        if self._hierarchy_of is not self.parents:
            self._hierarchy, self._hierarchy_of = Hierarchy(self.parents), self.parents
        return self._hierarchy

    def children(self, j: int) -> np.ndarray:
        """Joints whose parent is ``j``, in index order."""
        return self.hierarchy.children(j)

    def roots(self) -> np.ndarray:
        """Joints without a parent, in index order."""
        return self.hierarchy.roots()

    def order(self) -> np.ndarray:
        """Joint indices with every parent before its children (by depth, then index)."""
        return self.hierarchy.order()

    def depth(self) -> np.ndarray:
        """(J,) depth of each joint; roots are 0."""
        return self.hierarchy.depth()

    # ------------------------------------------------------------------ poses
    def rest_rotation_local(self) -> np.ndarray:
        """(J, 3, 3) local rest rotation ``orient @ rotation``."""
        return self.orient @ self.rotation

    def rest_local(self) -> np.ndarray:
        """(J, 4, 4) local rest transforms ``T @ orient @ rotation @ S``."""
        return compose_trs(self.translation, self.rest_rotation_local(), self.scale)

    def rest_world(self) -> np.ndarray:
        """(J, 4, 4) world transforms of the rest pose."""
        return global_from_local(self.rest_local(), self.parents)

    def skinning_matrices(self, world: np.ndarray | None = None) -> np.ndarray:
        """(J, 4, 4) ``world @ inv(bind_world)``: moves bind-pose vertices to ``world``.

        ``world`` defaults to the rest pose.
        """
        world = self.rest_world() if world is None else world
        return world @ np.linalg.inv(self.bind_world)

    def posed_world(self, local_rotations: dict | np.ndarray) -> np.ndarray:
        """World matrices after rotating joints in their own rest frames.

        ``local_rotations`` maps joint index -> (3, 3) rotation (or is a (J, 3, 3)
        array) applied after the rest rotation: ``local = T @ orient @ rotation @ R @ S``.
        """
        rot = self.rest_rotation_local().copy()
        if isinstance(local_rotations, dict):
            for j, r in local_rotations.items():
                rot[j] = rot[j] @ np.asarray(r, dtype=np.float64)
        else:
            rot = rot @ np.asarray(local_rotations, dtype=np.float64)
        return global_from_local(compose_trs(self.translation, rot, self.scale), self.parents)

    def copy(self, **changes) -> "Skeleton":
        """A copy, with the given fields replaced."""
        fields = dict(names=self.names, parents=self.parents.copy(), translation=self.translation.copy(),
                      orient=self.orient.copy(), rotation=self.rotation.copy(), scale=self.scale.copy(),
                      bind_world=self.bind_world.copy(), humanoid_bones=dict(self.humanoid_bones))
        fields.update(changes)
        return Skeleton(**fields)
