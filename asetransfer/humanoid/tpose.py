"""Canonical T-pose of a humanoid rig: arms horizontal, palms down, legs straight, feet forward.

The pose is built on the rig's rest pose by forward kinematics, one mapped joint
at a time from the body outwards (:mod:`asetransfer.humanoid.skeleton_map` roles), each
joint turned by the smallest world rotation that brings its bone onto the wanted
direction (a swing, so the bone's twist is kept):

* arms: shoulder -> elbow, elbow -> wrist and wrist -> mid-hand along the body's
  left (right) axis; then the whole arm turns about that axis until the hand's
  index-minus-little-finger direction points forward (palm down, thumb forward);
* legs: upper leg -> knee and knee -> ankle straight down;
* feet: the ankle turns about the up axis until ankle -> toe points forward
  (the foot's pitch is kept).

The spine, neck, head, clavicles and fingers keep their rest pose.  The result is
an :class:`~asetransfer.animation.Animation` frame; :func:`tpose_rig` bakes it into a
rig whose bind and rest pose are the T-pose (mesh skinned by linear blend skinning).
"""
from __future__ import annotations

import numpy as np

from ..geometry.rotations import angle_between
from ..model.animation import Animation
from ..model.rig import Rig
from ..model.skeleton import Skeleton
from .body import body_axes
from ..model.roles import SIDES
from ..model.transforms import closest_rotation


def _swing(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The smallest rotation taking direction ``a`` to direction ``b``: ``exp(theta [n])`` with
    ``n = a x b / |a x b|`` and ``theta = atan2(|a x b|, a . b)``; opposite directions give a half
    turn about a perpendicular.

    The same rotation as :func:`asetransfer.geometry.rotations.swing`, computed another way
    (axis-angle instead of ``I + [v] + [v]^2 / (1 + c)``, so the last bits differ, and it
    handles opposite directions, which an arm hanging straight down can meet); kept so
    T-poses and the calibrations recording them stay bit for bit as they were.
    """
    # imported on use: a transfer that poses nothing skips it
    from scipy.spatial.transform import Rotation

    a = a / np.linalg.norm(a)
    b = b / np.linalg.norm(b)
    axis = np.cross(a, b)
    s, c = np.linalg.norm(axis), float(a @ b)
    if s < 1e-12:
        if c > 0:
            return np.eye(3)
        perp = np.cross(a, np.eye(3)[int(np.argmin(np.abs(a)))])  # half turn about any perpendicular
        return Rotation.from_rotvec(np.pi * perp / np.linalg.norm(perp)).as_matrix()
    return Rotation.from_rotvec(axis / s * np.arctan2(s, c)).as_matrix()


def _about(axis: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Rotation about ``axis`` taking ``a``'s component perpendicular to it onto ``b``'s."""
    from scipy.spatial.transform import Rotation  # imported on use

    axis = axis / np.linalg.norm(axis)
    pa, pb = a - (a @ axis) * axis, b - (b @ axis) * axis
    if np.linalg.norm(pa) < 1e-12 or np.linalg.norm(pb) < 1e-12:
        return np.eye(3)
    angle = np.arctan2(np.cross(pa, pb) @ axis, pa @ pb)
    return Rotation.from_rotvec(axis * angle).as_matrix()


class Poser:
    """A skeleton being posed: its local rest-frame rotations and their world transforms,
    turned one joint at a time (the T-pose here, the QA page's test poses in
    :mod:`asetransfer.handoff.poses`)."""

    def __init__(self, skeleton: Skeleton):
        self.skeleton = skeleton
        self.rotations = np.tile(np.eye(3), (skeleton.n_joints, 1, 1))
        self.world = skeleton.posed_world(self.rotations)

    def position(self, j: int) -> np.ndarray:
        return self.world[j, :3, 3]

    def turn(self, j: int, world_rotation: np.ndarray) -> None:
        """Rotate joint ``j`` and everything below it by ``world_rotation`` about the joint:
        ``R_j <- R_j W^T G W`` with ``W`` the joint's world rotation, ``G`` the turn."""
        w = closest_rotation(self.world[j, :3, :3])
        self.rotations[j] = self.rotations[j] @ w.T @ world_rotation @ w
        self.world = self.skeleton.posed_world(self.rotations)

    def aim(self, j: int, child: int, direction: np.ndarray) -> None:
        """Turn joint ``j`` so the bone to ``child`` points along ``direction`` (a swing; a
        bone of no length stays)."""
        bone = self.position(child) - self.position(j)
        if np.linalg.norm(bone) > 0:
            self.turn(j, _swing(bone, direction))


def tpose(skeleton: Skeleton, mapping: dict) -> tuple:
    """The T-pose of ``skeleton`` as one :class:`Animation` frame, and its checks.

    ``mapping``: role -> joint name (:func:`~asetransfer.humanoid.skeleton_map.propose_skeleton_map`).

    Returns
    -------
    animation : one frame on ``skeleton`` (rest translations).
    report : dict: ``axes`` (up, forward, left) and ``checks``, the largest deviations in
        degrees from the canonical pose (:func:`tpose_checks`).
    """
    idx = {n: i for i, n in enumerate(skeleton.names)}
    j = {role: idx[name] for role, name in mapping.items() if name in idx}
    rest = skeleton.rest_world()[:, :3, 3]
    up, fwd, left = body_axes({r: rest[k] for r, k in j.items()})
    p = Poser(skeleton)
    for s in SIDES:
        out = left if s == "l" else -left
        chain = [r for r in (f"shoulder_{s}", f"elbow_{s}", f"wrist_{s}", f"mid_hand_{s}") if r in j]
        for a, b in zip(chain, chain[1:]):
            p.aim(j[a], j[b], out)
        if f"index_{s}" in j and f"pinky_{s}" in j and f"shoulder_{s}" in j:
            across = p.position(j[f"index_{s}"]) - p.position(j[f"pinky_{s}"])
            p.turn(j[f"shoulder_{s}"], _about(out, across, fwd))
        for a, b in ((f"upper_leg_{s}", f"knee_{s}"), (f"knee_{s}", f"ankle_{s}")):
            if a in j and b in j:
                p.aim(j[a], j[b], -up)
        if f"ankle_{s}" in j and f"toe_{s}" in j:
            p.turn(j[f"ankle_{s}"], _about(up, p.position(j[f"toe_{s}"]) - p.position(j[f"ankle_{s}"]), fwd))
    anim = Animation(p.rotations[None], skeleton.translation[None], 1.0 / 30.0)
    axes = {"up": up, "forward": fwd, "left": left}
    return anim, {"axes": {k: [float(x) for x in v] for k, v in axes.items()},
                  "checks": tpose_checks(p.world[:, :3, 3], j, axes)}


def tpose_checks(pos: np.ndarray, j: dict, axes: dict) -> dict:
    """Largest deviation, in degrees, of each canonical T-pose property in joint positions ``pos``.

    ``arms_horizontal``: upper arms and forearms from the body's left/right axis;
    ``palms_down``: the palm normal (from wrist, mid-hand, index and little finger) from
    down; ``legs_straight``: thighs and shins from down; ``feet_forward``: ankle -> toe,
    projected on the ground, from forward.  Properties whose joints are not mapped are left out.
    """
    up, fwd, left = (np.asarray(axes[k], float) for k in ("up", "forward", "left"))
    out = {"arms_horizontal": [], "palms_down": [], "legs_straight": [], "feet_forward": []}
    for s in SIDES:
        side = left if s == "l" else -left
        for a, b in ((f"shoulder_{s}", f"elbow_{s}"), (f"elbow_{s}", f"wrist_{s}")):
            if a in j and b in j:
                out["arms_horizontal"].append(angle_between(pos[j[b]] - pos[j[a]], side))
        if all(f"{r}_{s}" in j for r in ("wrist", "mid_hand", "index", "pinky")):
            h = pos[j[f"mid_hand_{s}"]] - pos[j[f"wrist_{s}"]]
            n = (1.0 if s == "l" else -1.0) * np.cross(h, pos[j[f"index_{s}"]] - pos[j[f"pinky_{s}"]])
            out["palms_down"].append(angle_between(n, -up))
        for a, b in ((f"upper_leg_{s}", f"knee_{s}"), (f"knee_{s}", f"ankle_{s}")):
            if a in j and b in j:
                out["legs_straight"].append(angle_between(pos[j[b]] - pos[j[a]], -up))
        if f"ankle_{s}" in j and f"toe_{s}" in j:
            d = pos[j[f"toe_{s}"]] - pos[j[f"ankle_{s}"]]
            out["feet_forward"].append(angle_between(d - (d @ up) * up, fwd))
    return {k: round(max(v), 6) for k, v in out.items() if v}


def posed_skeleton(skeleton: Skeleton, animation: Animation, frame: int = 0) -> Skeleton:
    """``skeleton`` with frame ``frame`` of ``animation`` as both its rest and its bind pose."""
    world = animation.world(skeleton)[frame]
    return skeleton.copy(rotation=skeleton.rotation @ animation.rotations[frame],
                         translation=animation.translations[frame].copy(), bind_world=world)


def tpose_rig(rig: Rig, animation: Animation) -> Rig:
    """The rig baked into the pose of ``animation``'s first frame: the mesh skinned there
    (linear blend skinning), bind pose = rest pose = that pose; same weights."""
    world = animation.world(rig.skeleton)[0]
    mesh = rig.mesh.with_vertices(rig.posed_vertices(world))
    return Rig(mesh, posed_skeleton(rig.skeleton, animation), rig.skin)
