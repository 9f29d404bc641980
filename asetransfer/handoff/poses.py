"""Test poses that stress a transferred rig: arms raised, a squat, elbows bent.

A joint placed a little off inside the target is invisible in the rest pose; bent,
the surface folds at the wrong place and the limb shows a kink.  Each pose is made
on the *source's* rig, whose joints an artist placed, from its skeleton map
(:mod:`~asetransfer.humanoid.skeleton_map`): every limb bone is aimed at a direction
of the body frame (:func:`~asetransfer.humanoid.body.body_axes`) by the smallest
world rotation about its joint, so the pose is the same whatever the rig's joint axes
are.  The pose is then carried to the target by retargeting
(:func:`~asetransfer.handoff.retarget.retarget`): each joint the pose turns takes the
local rotation that gives its bones the source's directions, whatever rest pose the
target keeps (pose-normalised or as modelled); every other joint stays in the target's
rest pose, and the clip turns each joint from the rest at a constant rate.  The hips
then sink so the feet stay on the ground.  A skeleton without a complete humanoid map
gets no test pose.
"""
from __future__ import annotations

import numpy as np

from ..geometry.rotations import swing
from ..humanoid.body import body_axes
from ..humanoid.skeleton_map import propose_skeleton_map
from ..humanoid.tpose import Poser
from ..model.animation import Animation
from ..model.rig import Rig
from ..model.roles import SIDES
from ..model.skeleton import Skeleton
from ..model.transforms import closest_rotation
from .retarget import retarget

#: the test poses, in the order they are shown
POSE_NAMES = ("arms raised", "squat", "elbows bent")
#: arms raised: the arm this many degrees out from straight up (clear of the head)
ARMS_RAISED_OUT_DEG = 25.0
#: squat: the thighs this many degrees below horizontal and the shins this many degrees
#: forward of vertical (knees over the toes), the chest leaning forward to balance
SQUAT_THIGH_DEG, SQUAT_SHIN_DEG, SQUAT_LEAN_DEG = 20.0, 25.0, 25.0


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


def _arms_raised(pose: Poser, joint: dict, axes: tuple) -> None:
    up, _, left = axes
    out = np.radians(ARMS_RAISED_OUT_DEG)
    for s in SIDES:
        side = left if s == "l" else -left
        pose.aim(joint[f"shoulder_{s}"], joint[f"elbow_{s}"], side)  # through horizontal: no half turn
        raised = np.cos(out) * up + np.sin(out) * side
        pose.aim(joint[f"shoulder_{s}"], joint[f"elbow_{s}"], raised)
        pose.aim(joint[f"elbow_{s}"], joint[f"wrist_{s}"], raised)


def _elbows_bent(pose: Poser, joint: dict, axes: tuple) -> None:
    forward = axes[1]
    for s in SIDES:
        upper = _unit(pose.position(joint[f"elbow_{s}"]) - pose.position(joint[f"shoulder_{s}"]))
        bent = forward - (forward @ upper) * upper  # a right angle, in the plane of the arm and forward
        if np.linalg.norm(bent) > 1e-6:
            pose.aim(joint[f"elbow_{s}"], joint[f"wrist_{s}"], _unit(bent))


def _squat(pose: Poser, joint: dict, axes: tuple) -> None:
    """Bend hips and knees, the chest leaning forward, the feet turned back flat."""
    up, forward, left = axes
    if "spine" in joint:
        lean = np.radians(SQUAT_LEAN_DEG)
        pose.turn(joint["spine"], swing(up[None], (np.cos(lean) * up + np.sin(lean) * forward)[None])[0])
    thigh, shin = np.radians(SQUAT_THIGH_DEG), np.radians(SQUAT_SHIN_DEG)
    for s in SIDES:
        side = left if s == "l" else -left
        ankle = joint[f"ankle_{s}"]
        foot = closest_rotation(pose.world[ankle, :3, :3])
        pose.aim(joint[f"upper_leg_{s}"], joint[f"knee_{s}"],
                 _unit(np.cos(thigh) * forward - np.sin(thigh) * up + 0.25 * side))
        pose.aim(joint[f"knee_{s}"], ankle, -np.cos(shin) * up - np.sin(shin) * forward)
        pose.turn(ankle, foot @ closest_rotation(pose.world[ankle, :3, :3]).T)


def source_pose(skeleton: Skeleton, mapping: dict, name: str) -> np.ndarray:
    """(J, 3, 3) test pose ``name`` (one of :data:`POSE_NAMES`) of a humanoid skeleton: the
    local rotations after the rest rotations (an :class:`Animation` frame's).

    ``mapping`` : role -> joint name (:func:`~asetransfer.humanoid.skeleton_map.propose_skeleton_map`,
    every required role mapped).
    """
    poses = {"arms raised": _arms_raised, "elbows bent": _elbows_bent, "squat": _squat}
    if name not in poses:
        raise ValueError(f"unknown test pose {name!r}; one of {', '.join(POSE_NAMES)}")
    joint = {role: skeleton.index(n) for role, n in mapping.items()}
    pose = Poser(skeleton)
    position = skeleton.rest_world()[:, :3, 3]
    poses[name](pose, joint, body_axes({role: position[j] for role, j in joint.items()}))
    return pose.rotations


def pose_motion(skeleton: Skeleton, rotations: np.ndarray, frames: int = 9, seconds: float = 1.0) -> Animation:
    """``frames`` frames from the rest pose to the pose of local ``rotations`` (J, 3, 3), each
    joint turning at a constant rate about a fixed axis: ``R(t) = exp(t log R)``, ``t`` from 0 to 1."""
    from scipy.spatial.transform import Rotation  # imported on use: ~0.15 s

    t = np.linspace(0.0, 1.0, frames)
    rotvec = Rotation.from_matrix(rotations).as_rotvec()  # (J, 3)
    turned = Rotation.from_rotvec((t[:, None, None] * rotvec[None]).reshape(-1, 3)).as_matrix()
    return Animation(turned.reshape(frames, -1, 3, 3), np.tile(skeleton.translation, (frames, 1, 1)),
                     seconds / max(frames - 1, 1))


def feet_on_the_ground(animation: Animation, skeleton: Skeleton, mapping: dict) -> Animation:
    """``animation`` with the hips moved along up, frame by frame, so the lower ankle stays at
    its height in the first frame (a squat sinks instead of lifting the feet).

    The hips' local translation takes the world shift ``d`` as ``P^-1 d`` (``P`` the linear
    part of the hips' parent's world matrix), so a root joint on the floor stays there.
    """
    joint = {role: skeleton.index(n) for role, n in mapping.items()}
    world = animation.world(skeleton)
    position = world[0, :, :3, 3]
    up = body_axes({role: position[j] for role, j in joint.items()})[0]
    ankles = [joint[f"ankle_{s}"] for s in SIDES]
    height = world[:, ankles][:, :, :3, 3] @ up  # (F, 2)
    drop = height[0].min() - height.min(axis=1)
    hips, translations = joint["hips"], animation.translations.copy()
    parent = skeleton.parents[hips]
    shift = drop[:, None] * up[None]
    if parent >= 0:
        shift = np.einsum("fij,fj->fi", np.linalg.inv(world[:, parent, :3, :3]), shift)
    translations[:, hips] += shift
    return Animation(animation.rotations, translations, animation.frame_time)


def stress_poses(source: Rig, target: Rig, frames: int = 9) -> dict:
    """The test poses played on ``target``: name -> :class:`Animation` on its skeleton, from
    the rest pose (first frame) to the pose (last frame), feet on the ground.  Empty when
    either skeleton has no complete humanoid skeleton map (no role to pose a creature by)."""
    mapping, missing = propose_skeleton_map(source.skeleton)
    target_mapping, target_missing = propose_skeleton_map(target.skeleton)
    if missing or target_missing:
        return {}
    names = {n: j for j, n in enumerate(source.skeleton.names)}
    match = np.array([names.get(n, -1) for n in target.skeleton.names])
    poses = {}
    for name in POSE_NAMES:
        rotations = source_pose(source.skeleton, mapping, name)
        turned = np.abs(rotations - np.eye(3)).max(axis=(1, 2)) > 1e-9
        moved = (match >= 0) & turned[match]
        pose = Animation(rotations[None], source.skeleton.translation[None], 1.0)
        carried = retarget(pose, source, target)[0].rotations[0]  # the source's directions, any target rest
        final = np.where(moved[:, None, None], carried, np.eye(3))
        poses[name] = feet_on_the_ground(pose_motion(target.skeleton, final, frames), target.skeleton, target_mapping)
    return poses
