"""Pose matching: register a source posed like the target (beyond the spec's §5.1 limit).

Fairing and registration (Appendix I) assume both characters stand in the same
pose; an A-pose target and a T-pose source make them stretch the arms and slide
the hands.  A first transfer already places the skeleton inside the target well
enough to read its limb directions.  :func:`match_pose` turns the source's upper
arms, forearms, thighs and shins -- by its own skeleton, with its own weights
(linear blend skinning) -- until each bone points where the first pass put it in
the target, and returns the posed source.  The correspondence is then
registered from its mesh, and the joints fitted from its skeleton: its maps are barycentric on the source's triangles, so
they hold for the rest-pose source too, and joints, orientations and weights come
out in the target as modelled.

Each turn is the smallest rotation (a swing) taking the posed bone onto the
target's, applied parents first, so an elbow's turn is measured after its
shoulder's.
"""
from __future__ import annotations

import numpy as np

from ..geometry.alignment import umeyama
from ..geometry.rotations import angle_between, swing
from ..humanoid.skeleton_map import propose_skeleton_map
from ..model.rig import Rig
from ..model.skeleton import Skeleton
from ..model.skin import linear_blend_skinning
from ..model.transforms import closest_rotation

#: bones that are turned, parents first: (joint role, the role its bone points to)
LIMB_BONES = (("shoulder", "elbow"), ("elbow", "wrist"), ("upper_leg", "knee"), ("knee", "ankle"))


def _limb_bones(skeleton: Skeleton) -> list:
    """(name, joint, child joint) of every mapped limb bone, parents first."""
    mapping, _ = propose_skeleton_map(skeleton)
    out = []
    for side in ("l", "r"):
        for start, end in LIMB_BONES:
            a, b = mapping.get(f"{start}_{side}"), mapping.get(f"{end}_{side}")
            if a is not None and b is not None:
                out.append((f"{start}_{side}", skeleton.index(a), skeleton.index(b)))
    return sorted(out, key=lambda bone: skeleton.hierarchy.depth()[bone[1]])


def limb_angles(skeleton: Skeleton, a: np.ndarray, b: np.ndarray) -> dict:
    """Angle in degrees between each limb bone of ``skeleton`` at joint positions ``a`` and
    at ``b`` (J, 3), by role (``shoulder_l``: the upper arm, ``elbow_l``: the forearm, ...)."""
    out = {}
    for name, j, c in _limb_bones(skeleton):
        out[name] = angle_between(a[c] - a[j], b[c] - b[j])
    return out


def in_source_frame(source: Skeleton, placed: np.ndarray) -> np.ndarray:
    """``placed`` (J, 3) moved by the similarity that best fits its trunk onto the source's.

    The trunk is every joint outside the limbs (spine, head, clavicles, hips...), so the
    limbs' pose difference stays in the result while the target's units, up axis and
    facing (and the body's lean) are removed.
    """
    limbs = set()
    for _, j, _ in _limb_bones(source):
        limbs.update(source.hierarchy.descendants(j).tolist())
    trunk = np.array([j for j in range(source.n_joints) if j not in limbs])
    fit = umeyama(placed[trunk], source.bind_world[trunk, :3, 3])
    return fit.apply(placed)


#: automatic landmarks on the trunk and head: their fit brings the target into the source's frame
TRUNK_LANDMARKS = ("head_top", "nose_tip", "head_back", "ear.L", "ear.R", "crotch")
#: each limb root's end landmarks, the first both characters have: the limb points from
#: its root joint at it
LIMB_ENDS = {"shoulder": ("middle_tip", "hand_tip"), "upper_leg": ("heel",)}


def landmark_pose(source: Skeleton, source_points: dict, target_points: dict) -> np.ndarray | None:
    """(J, 3) the source's joints with each arm and leg turned, whole, about its root
    joint to point at the target's end landmark, in the source's frame; None without a
    trunk to fit.

    A first guess of the target's pose from the automatic landmarks alone (name -> (3,)
    point on each character): the target's trunk landmarks (``TRUNK_LANDMARKS``) are fitted
    onto the source's by a similarity, so the source's shoulder and hip joints stand for
    the target's, and each limb is swung from its end landmark on the source to the
    target's (``LIMB_ENDS``; an elbow or knee bend is left as the source has it).
    """
    trunk = [n for n in TRUNK_LANDMARKS if n in source_points and n in target_points]
    if len(trunk) < 3:
        return None
    fit = umeyama(np.array([target_points[n] for n in trunk]), np.array([source_points[n] for n in trunk]))
    placed = source.bind_world[:, :3, 3].copy()
    mapping, _ = propose_skeleton_map(source)
    for root, ends in LIMB_ENDS.items():
        for side in "lr":
            joint = mapping.get(f"{root}_{side}")
            shared = [f"{e}.{side.upper()}" for e in ends]
            shared = [n for n in shared if n in source_points and n in target_points]
            if joint is None or not shared:
                continue
            j, end = source.index(joint), shared[0]
            target_end = fit.apply(target_points[end][None])[0]
            turn = swing((source_points[end] - placed[j])[None], (target_end - placed[j])[None])[0]
            limb = source.hierarchy.descendants(j)
            placed[limb] = (placed[limb] - placed[j]) @ turn.T + placed[j]
    return placed


def match_pose(source: Rig, placed: np.ndarray) -> Rig:
    """The source posed by its own rig so its limb bones point as in ``placed``.

    Parameters
    ----------
    source : the rigged source; posing starts from its bind pose (the mesh as modelled).
    placed : (J, 3) joint positions in the source's frame (:func:`in_source_frame` of a
        first transfer's joints).

    Returns
    -------
    The posed source: a :class:`Rig` whose mesh is skinned into the pose and whose
    skeleton's bind pose is the pose (rest pose, orientations and weights unchanged), so
    the transfer's fits see a source standing like the target.
    """
    sk = source.skeleton
    start = Skeleton.from_world(sk.names, sk.parents, sk.bind_world)  # rest = bind: the mesh as modelled
    turns = {}
    for _, j, c in _limb_bones(sk):
        world = start.posed_world(turns)
        pos = world[:, :3, 3]
        r = swing((pos[c] - pos[j])[None], (placed[c] - placed[j])[None])[0]
        w = closest_rotation(world[j, :3, :3])
        # the world turn r about the joint, as a turn after its current local rotation
        turns[j] = turns.get(j, np.eye(3)) @ (w.T @ r @ w)
    posed = start.posed_world(turns)
    vertices = linear_blend_skinning(source.mesh.vertices, source.skin, posed @ np.linalg.inv(start.bind_world))
    return Rig(source.mesh.with_vertices(vertices), sk.copy(bind_world=posed), source.skin)
