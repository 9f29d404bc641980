"""BVH motions as rig rotations and back (reading and writing BVH files: :mod:`asetransfer.io.bvh`).

A BVH file is a joint hierarchy (``OFFSET``: the joint's position relative to its
parent when every angle is zero, in the parent's frame, which at zero angles is
parallel to the world) followed by one row of channel values per frame.  A joint's
local transform is ``T @ R`` with

* ``T`` the translation: its ``Xposition Yposition Zposition`` channels when it has
  them (the root: its absolute position, replacing the OFFSET, as Blender and most
  tools read it), else its OFFSET;
* ``R`` the product of its rotation channels in the order listed, angles in degrees:
  ``CHANNELS 3 Zrotation Xrotation Yrotation`` means ``R = Rz @ Rx @ Ry``.

The *zero pose* (all angles zero) of a BVH is therefore its rest pose, with every
joint frame parallel to the world.  A rig's joints have their own rest frames; a
BVH rotation is a *world-aligned local delta*.  :func:`bvh_to_animation` and
:func:`animation_to_bvh` convert between the two (the BVH zero pose must be the rig's
rest pose; both keep forward kinematics exact).
"""
from __future__ import annotations

import logging
import re

import numpy as np

from ..model.animation import Animation
from ..errors import InputError
from ..model.skeleton import Skeleton
from ..model.transforms import closest_rotation
from ..model.bvh import POSITION_CHANNELS, ROTATION_ORDER, Bvh, euler_from_matrix

log = logging.getLogger("asetransfer")

#: a guessed BVH-to-rig scale this close to 1 is taken as exactly 1 (units agree; bone
#: lengths differ by rounding or small modelling changes)
SCALE_SNAP = 1e-3
#: warn when a BVH zero-pose bone and the rig's rest bone are further apart than this, in
#: degrees (the BVH was made for another rest pose: the motion will look off)
REST_MISMATCH_WARN_DEG = 5.0


# ---------------------------------------------------------------------- rig <-> BVH
def _rest_rotations(skeleton: Skeleton) -> np.ndarray:
    return closest_rotation(skeleton.rest_world()[:, :3, :3])


def bvh_to_animation(bvh: Bvh, skeleton: Skeleton, scale: float | None = None, path=None):
    """A BVH motion as rotations in the rig's rest frames (BVH zero pose = rig rest pose).

    Each rig joint gets ``R = W0^T G_parent^T G W0`` where ``W0`` is its rest world
    rotation and ``G`` the world-space rotation change of the BVH joint with the same
    name (its parent's for rig joints the BVH lacks).  Root joints take the BVH's
    world position (times ``scale``); other joints keep their rest translation.

    Parameters
    ----------
    scale : rig units per BVH unit; default: the ratio of the rig's rest bone lengths
        to the BVH's offsets (1 when they agree to 0.1 %).

    Returns
    -------
    animation : :class:`Animation` on ``skeleton``.
    report : dict with ``matched`` joint count, ``scale``, ``missing`` (rig joints not in
        the BVH) and ``rest_mismatch_deg`` (largest angle between BVH zero-pose and rig
        rest bone directions).
    """
    index = {n: i for i, n in enumerate(bvh.names)}
    matched = np.array([index.get(bvh_name(n), -1) for n in skeleton.names])
    if (matched < 0).all():
        raise InputError(path, "no joint of the BVH has the name of a rig joint")
    scale, mismatch = _rest_agreement(bvh, skeleton, matched, scale)
    if mismatch > REST_MISMATCH_WARN_DEG:
        log.warning("%s: the BVH zero pose differs from the rig's rest pose (bones up to %.1f deg apart); "
                    "rotations are applied in the rig's rest frames anyway", path or "BVH", mismatch)
    W = bvh.world()
    rot = _rest_frame_rotations(W[:, :, :3, :3], skeleton, matched)
    trans = np.tile(skeleton.translation, (bvh.n_frames, 1, 1))
    for r in skeleton.roots():
        if matched[r] >= 0:
            trans[:, r] = W[:, matched[r], :3, 3] * scale
    report = {"matched": int((matched >= 0).sum()), "joints": int(skeleton.n_joints), "scale": scale,
              "missing": [skeleton.names[j] for j in np.flatnonzero(matched < 0)],
              "rest_mismatch_deg": mismatch}
    return Animation(rot, trans, bvh.frame_time), report


def _rest_agreement(bvh: Bvh, skeleton: Skeleton, matched: np.ndarray, scale: float | None) -> tuple:
    """``(scale, mismatch)`` over the bones whose both ends are matched: rig units per BVH unit
    (given, or the ratio of bone lengths, snapped to 1 within ``SCALE_SNAP``) and the largest
    angle in degrees between a BVH zero-pose bone and the rig's rest bone."""
    parents = skeleton.parents
    rest = skeleton.rest_world()[:, :3, 3]
    zero = bvh.rest_positions()
    both = np.flatnonzero((parents >= 0) & (matched >= 0))
    both = both[matched[parents[both]] >= 0]
    rig_bones = rest[both] - rest[parents[both]]
    bvh_bones = zero[matched[both]] - zero[matched[parents[both]]]
    lr, lb = np.linalg.norm(rig_bones, axis=1), np.linalg.norm(bvh_bones, axis=1)
    if scale is None:
        scale = float(lr.sum() / lb.sum()) if lb.sum() > 0 else 1.0
        if abs(scale - 1.0) < SCALE_SNAP:
            scale = 1.0
    ok = (lr > 1e-9 * max(lr.max(initial=0), 1e-300)) & (lb > 0)
    cos = np.einsum("ij,ij->i", rig_bones[ok], bvh_bones[ok]) / (lr[ok] * lb[ok])
    return scale, float(np.degrees(np.arccos(np.clip(cos, -1, 1))).max(initial=0.0))


def _rest_frame_rotations(bvh_world_rotations: np.ndarray, skeleton: Skeleton, matched: np.ndarray) -> np.ndarray:
    """(F, J, 3, 3) local rotations of the rig's joints, ``R = W0^T G_parent^T G W0``, from the
    BVH joints' (F, B, 3, 3) world rotations (BVH zero-pose frames are the identity, so a world
    rotation is the change from rest); rig joints the BVH lacks follow their parent."""
    parents = skeleton.parents
    frames = bvh_world_rotations.shape[0]
    G = np.empty((frames, skeleton.n_joints, 3, 3))
    for j in skeleton.order():
        if matched[j] >= 0:
            G[:, j] = bvh_world_rotations[:, matched[j]]
        elif parents[j] >= 0:
            G[:, j] = G[:, parents[j]]
        else:
            G[:, j] = np.eye(3)
    R0 = _rest_rotations(skeleton)
    Gp = np.where((parents >= 0)[None, :, None, None], G[:, np.maximum(parents, 0)], np.eye(3))
    return closest_rotation(np.swapaxes(R0, 1, 2)[None] @ np.swapaxes(Gp, 2, 3) @ G @ R0[None])


def bvh_name(name: str) -> str:
    """A joint name as written in BVH files (no whitespace)."""
    return re.sub(r"\s+", "_", name.strip()) or "joint"


def animation_to_bvh(skeleton: Skeleton, animation: Animation) -> Bvh:
    """A BVH whose zero pose is ``skeleton``'s rest pose, playing ``animation``.

    OFFSETs are the rest pose's world-space bone vectors (the root's: its rest world
    position), rotations the world-aligned local deltas ``G_parent^T G`` with
    ``G = W W0^T``, channels ``Zrotation Xrotation Yrotation`` (``R = Rz Rx Ry``, degrees)
    and, for roots, ``Xposition Yposition Zposition`` first (absolute).  Leaf joints get
    an End Site half their incoming bone further on.  Forward kinematics of the BVH
    gives the rig's posed joint positions (exactly, for unscaled skeletons).
    """
    order = skeleton.hierarchy.depth_first().tolist()  # BVH lists joints depth first
    new = {old: k for k, old in enumerate(order)}
    parents = skeleton.parents
    P0 = skeleton.rest_world()[:, :3, 3]
    R0 = _rest_rotations(skeleton)
    W = animation.world(skeleton)
    G = closest_rotation(W[:, :, :3, :3]) @ np.swapaxes(R0, 1, 2)[None]
    Gp = np.where((parents >= 0)[None, :, None, None], G[:, np.maximum(parents, 0)], np.eye(3))
    delta = np.swapaxes(Gp, 2, 3) @ G
    angles = euler_from_matrix(delta, "".join(c[0] for c in ROTATION_ORDER))  # (F, J, 3)
    offsets, channels, columns, ends = [], [], [], {}
    has_child = np.zeros(len(parents), bool)
    has_child[parents[parents >= 0]] = True
    for j in order:
        p = parents[j]
        if p < 0:
            offsets.append(P0[j])
            channels.append(POSITION_CHANNELS + ROTATION_ORDER)
            columns.append(W[:, j, :3, 3])
        else:
            offsets.append(P0[j] - P0[p])
            channels.append(ROTATION_ORDER)
        columns.append(angles[:, j])
        if not has_child[j]:
            ends[new[j]] = 0.5 * (P0[j] - P0[p]) if p >= 0 else np.zeros(3)
    motion = np.concatenate(columns, axis=1)
    return Bvh([bvh_name(skeleton.names[j]) for j in order],
               [new[parents[j]] if parents[j] >= 0 else -1 for j in order],
               offsets, channels, ends, animation.frame_time, motion)
