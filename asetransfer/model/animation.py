"""Animation: joint rotations over time on one skeleton, in each joint's rest frame.

A frame rotates joint ``j`` by ``rotations[f, j]`` *after* its rest rotation and
sets its translation to ``translations[f, j]``::

    local[f, j] = T(translations[f, j]) @ orient[j] @ rotation[j] @ rotations[f, j] @ S[j]

so all-identity rotations with the rest translations give the rest pose.  This is
the form a retargeter copies between characters (spec Fig. 3.10): the same
rotation in corresponding rest frames.  :mod:`asetransfer.bvh` converts BVH
motions to and from it, :mod:`asetransfer.io.gltf_animation` writes it as a glTF
animation.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .skeleton import Skeleton
from .transforms import compose_trs, decompose_trs, global_from_local, local_from_global


@dataclass(eq=False)
class Animation:
    """Per-frame local joint rotations (rest frames) and translations.

    Attributes
    ----------
    rotations : (F, J, 3, 3) rotation of each joint after its rest rotation.
    translations : (F, J, 3) local translation of each joint (the rest translation
        for joints that do not move; the root's carries the motion's path).
    frame_time : seconds per frame.
    """

    rotations: np.ndarray
    translations: np.ndarray
    frame_time: float

    def __post_init__(self):
        self.rotations = np.asarray(self.rotations, dtype=np.float64)
        self.translations = np.asarray(self.translations, dtype=np.float64)
        self.frame_time = float(self.frame_time)
        f, j = self.rotations.shape[:2]
        if self.rotations.shape != (f, j, 3, 3) or self.translations.shape != (f, j, 3):
            raise ValueError("animation rotations must be (F, J, 3, 3) and translations (F, J, 3)")
        if f == 0:
            raise ValueError("an animation needs at least one frame")
        if not self.frame_time > 0:
            raise ValueError("frame time must be positive")
        if not (np.isfinite(self.rotations).all() and np.isfinite(self.translations).all()):
            raise ValueError("animation has NaN or infinite values")

    @classmethod
    def rest(cls, skeleton: Skeleton, n_frames: int = 1, frame_time: float = 1.0 / 30.0) -> "Animation":
        """``n_frames`` frames of the rest pose."""
        j = skeleton.n_joints
        return cls(np.tile(np.eye(3), (n_frames, j, 1, 1)), np.tile(skeleton.translation, (n_frames, 1, 1)),
                   frame_time)

    @classmethod
    def from_world(cls, skeleton: Skeleton, world: np.ndarray, seconds: np.ndarray) -> "Animation":
        """The animation whose frames put the joints at ``world`` (F, J, 4, 4) at the times
        ``seconds`` (F,): each joint's local rotation after its rest rotation and its local
        translation, frame by frame (the frame time: the median step between the times)."""
        local = np.stack([local_from_global(w, skeleton.parents) for w in world])
        t, r, _, _ = decompose_trs(local.reshape(-1, 4, 4))
        n_frames, n_joints = world.shape[:2]
        rest_inv = np.swapaxes(skeleton.rest_rotation_local(), 1, 2)
        rotations = rest_inv[None] @ r.reshape(n_frames, n_joints, 3, 3)
        frame_time = float(np.median(np.diff(seconds))) if n_frames > 1 else 1.0 / 30.0
        return cls(rotations, t.reshape(n_frames, n_joints, 3), frame_time)

    @property
    def n_frames(self) -> int:
        return len(self.rotations)

    @property
    def n_joints(self) -> int:
        return self.rotations.shape[1]

    def local_matrices(self, skeleton: Skeleton) -> np.ndarray:
        """(F, J, 4, 4) local transforms of every frame."""
        self._check(skeleton)
        rot = skeleton.rest_rotation_local()[None] @ self.rotations
        return compose_trs(self.translations, rot, np.broadcast_to(skeleton.scale, self.translations.shape))

    def world(self, skeleton: Skeleton) -> np.ndarray:
        """(F, J, 4, 4) world transforms of every frame (forward kinematics)."""
        local = np.swapaxes(self.local_matrices(skeleton), 0, 1)  # (J, F, 4, 4): one matmul per level
        return np.ascontiguousarray(np.swapaxes(global_from_local(local, skeleton.parents), 0, 1))

    def _check(self, skeleton: Skeleton) -> None:
        if self.n_joints != skeleton.n_joints:
            raise ValueError(f"animation has {self.n_joints} joints, skeleton has {skeleton.n_joints}")
