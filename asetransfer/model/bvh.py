"""The BVH motion type: a joint hierarchy with channels, and its exact forward kinematics.

A :class:`Bvh` is a joint hierarchy (``OFFSET``: the joint's position relative to its
parent when every angle is zero, in the parent's frame, which at zero angles is
parallel to the world) with one row of channel values per frame.  A joint's local
transform is ``T @ R`` with

* ``T`` the translation: its ``Xposition Yposition Zposition`` channels when it has
  them (the root: its absolute position, replacing the OFFSET, as Blender and most
  tools read it), else its OFFSET;
* ``R`` the product of its rotation channels in the order listed, angles in degrees:
  ``CHANNELS 3 Zrotation Xrotation Yrotation`` means ``R = Rz @ Rx @ Ry``.

and its world transform ``G_j = G_parent(j) @ T_j @ R_j`` (:meth:`Bvh.world`).

The *zero pose* (all angles zero) of a BVH is therefore its rest pose, with every
joint frame parallel to the world.  A rig's joints have their own rest frames; a
BVH rotation is a *world-aligned local delta*.
:func:`asetransfer.handoff.motion.bvh_to_animation` and
:func:`~asetransfer.handoff.motion.animation_to_bvh` convert between the two (the
BVH zero pose must be the rig's rest pose; both keep forward kinematics exact).
The text format is read and written by :mod:`asetransfer.io.bvh`.
"""
from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass, field

import numpy as np

from .transforms import compose_trs, global_from_local

log = logging.getLogger("asetransfer")

#: channel order we write for every joint (the root gets the positions first)
ROTATION_ORDER = ("Zrotation", "Xrotation", "Yrotation")
POSITION_CHANNELS = ("Xposition", "Yposition", "Zposition")


@dataclass(eq=False)
class Bvh:
    """A BVH file's content.

    Attributes
    ----------
    names : joint names in file order (depth first).
    parents : (J,) parent index (earlier in the order), -1 for roots.
    offsets : (J, 3) OFFSET of each joint.
    channels : per joint, a tuple of channel names (``"Zrotation"``, ``"Xposition"``...).
    end_sites : joint index -> (3,) OFFSET of its ``End Site``.
    frame_time : seconds per frame.
    motion : (F, C) channel values, C = total number of channels, joints in file order.
    """

    names: tuple
    parents: np.ndarray
    offsets: np.ndarray
    channels: tuple
    end_sites: dict = field(default_factory=dict)
    frame_time: float = 1.0 / 30.0
    motion: np.ndarray | None = None

    def __post_init__(self):
        self.names = tuple(str(n) for n in self.names)
        j = len(self.names)
        self.parents = np.asarray(self.parents, dtype=np.int64).reshape(j)
        self.offsets = np.asarray(self.offsets, dtype=np.float64).reshape(j, 3)
        self.channels = tuple(tuple(str(c) for c in ch) for ch in self.channels)
        self.end_sites = {int(k): np.asarray(v, dtype=np.float64).reshape(3) for k, v in sorted(self.end_sites.items())}
        self.frame_time = float(self.frame_time)
        if self.motion is None:
            self.motion = np.zeros((1, sum(len(c) for c in self.channels)))
        self.motion = np.asarray(self.motion, dtype=np.float64)
        if self.motion.ndim == 1:
            self.motion = self.motion.reshape(1, -1)
        self.validate()

    def validate(self) -> None:
        """Raise ``ValueError`` naming the first inconsistency."""
        if not self.names:
            raise ValueError("the BVH has no joints")
        if len(set(self.names)) != len(self.names):
            raise ValueError("joint names must be unique")
        if any(not n or any(c.isspace() for c in n) for n in self.names):
            raise ValueError("joint names must be non-empty and contain no spaces")
        if len(self.channels) != len(self.names):
            raise ValueError("one channel list per joint is needed")
        for j, p in enumerate(self.parents):
            if not -1 <= p < j:
                raise ValueError(f"joint {self.names[j]!r}: parent must come before it in the file order")
        for j, ch in enumerate(self.channels):
            if len(set(ch)) != len(ch) or any(c not in CHANNEL_NAMES.values() for c in ch):
                raise ValueError(f"joint {self.names[j]!r} has invalid channels {list(ch)}")
        if self.motion.ndim != 2 or self.motion.shape[1] != self.n_channels or len(self.motion) == 0:
            raise ValueError(f"motion must be (frames >= 1, {self.n_channels}) values")
        if not (np.isfinite(self.motion).all() and np.isfinite(self.offsets).all()):
            raise ValueError("the BVH has NaN or infinite values")
        if not self.frame_time > 0:
            raise ValueError("frame time must be positive")

    # ------------------------------------------------------------------ queries
    @property
    def n_joints(self) -> int:
        return len(self.names)

    @property
    def n_frames(self) -> int:
        return len(self.motion)

    @property
    def n_channels(self) -> int:
        return sum(len(c) for c in self.channels)

    def _columns(self, j: int) -> dict:
        start = sum(len(c) for c in self.channels[:j])
        return {c: start + k for k, c in enumerate(self.channels[j])}

    def local_rotations(self) -> np.ndarray:
        """(F, J, 3, 3) rotation of each joint: product of its rotation channels in order."""
        f = self.n_frames
        out = np.tile(np.eye(3), (f, self.n_joints, 1, 1))
        for j in range(self.n_joints):
            for c, col in self._columns(j).items():
                if c.endswith("rotation"):
                    out[:, j] = out[:, j] @ _axis_rotation(c[0], self.motion[:, col])
        return out

    def local_translations(self) -> np.ndarray:
        """(F, J, 3) translation of each joint: position channels where present, else OFFSET."""
        out = np.tile(self.offsets, (self.n_frames, 1, 1))
        for j in range(self.n_joints):
            for c, col in self._columns(j).items():
                if c.endswith("position"):
                    out[:, j, "XYZ".index(c[0])] = self.motion[:, col]
        return out

    def world(self) -> np.ndarray:
        """(F, J, 4, 4) world transform of every joint in every frame (exact FK)."""
        local = compose_trs(self.local_translations(), self.local_rotations())
        return np.ascontiguousarray(np.swapaxes(global_from_local(np.swapaxes(local, 0, 1), self.parents), 0, 1))

    def positions(self) -> np.ndarray:
        """(F, J, 3) world joint positions."""
        return self.world()[..., :3, 3]

    def rest_positions(self) -> np.ndarray:
        """(J, 3) world joint positions of the zero pose (offsets summed down the hierarchy)."""
        pos = np.zeros((self.n_joints, 3))
        for j, p in enumerate(self.parents):
            pos[j] = self.offsets[j] + (pos[p] if p >= 0 else 0.0)
        return pos


def _axis_rotation(axis: str, degrees: np.ndarray) -> np.ndarray:
    """(F, 3, 3) rotations about a coordinate axis (right-handed, column vectors)."""
    a = np.radians(np.asarray(degrees, dtype=np.float64))
    c, s = np.cos(a), np.sin(a)
    m = np.zeros(a.shape + (3, 3))
    i = "XYZ".index(axis)
    j, k = (i + 1) % 3, (i + 2) % 3
    m[..., i, i] = 1.0
    m[..., j, j], m[..., j, k], m[..., k, j], m[..., k, k] = c, -s, s, c
    return m


def euler_from_matrix(r: np.ndarray, order: str = "ZXY") -> np.ndarray:
    """(..., 3) angles in degrees with ``r = R_order[0] @ R_order[1] @ R_order[2]``."""
    r = np.asarray(r, dtype=np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # gimbal lock: scipy still returns a valid solution
        from scipy.spatial.transform import Rotation  # imported on use: ~0.15 s

        e = Rotation.from_matrix(r.reshape(-1, 3, 3)).as_euler(order.upper(), degrees=True)
    return e.reshape(r.shape[:-2] + (3,))


#: every BVH channel name, keyed by its lower-case spelling (files vary in case)
CHANNEL_NAMES = {c.lower(): c for c in POSITION_CHANNELS + ("Xrotation", "Yrotation", "Zrotation")}
