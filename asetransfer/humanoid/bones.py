"""Humanoid bones as Unity's Mecanim and VRM 1.0 name them (``hips``, ``leftUpperArm``,
``leftThumbMetacarpal``...), and the skeleton-map roles they play.

A file may declare them (a VRM's humanoid: ``Skeleton.humanoid_bones``): the skeleton map
takes its roles from the declaration before the joint names (:func:`declared_roles`).  A rig
written over a VRM declares its new skeleton's bones (:func:`humanoid_bones`): the source's
declaration, else the roles of its skeleton map, the chest between the spine and where the
arms meet, and each finger's further segments down its chain.
"""
from __future__ import annotations

import numpy as np

from ..model.roles import SIDES
from ..model.skeleton import Skeleton
from .naming import lr_pairs, spine_chain

#: a side role -> the bone playing it, after "left" or "right"
_SIDE_ROLE_BONES = {"clavicle": "Shoulder", "shoulder": "UpperArm", "elbow": "LowerArm", "wrist": "Hand",
                    "mid_hand": "MiddleProximal", "thumb": "ThumbMetacarpal", "index": "IndexProximal",
                    "pinky": "LittleProximal", "upper_leg": "UpperLeg", "knee": "LowerLeg", "ankle": "Foot",
                    "toe": "Toes"}
#: a skeleton-map role -> the humanoid bone playing it (``upper_spine``, where the arms meet,
#: is the chest or the upper chest: read from the hands)
ROLE_BONES = {"hips": "hips", "spine": "spine", "neck": "neck", "head": "head",
              **{f"{role}_{side}": ("left" if side == "l" else "right") + bone
                 for role, bone in _SIDE_ROLE_BONES.items() for side in SIDES}}
#: each finger's segments from the hand out (the thumb's first is its metacarpal)
FINGER_SEGMENTS = {"Thumb": ("Metacarpal", "Proximal", "Distal"),
                   **{f: ("Proximal", "Intermediate", "Distal") for f in ("Index", "Middle", "Ring", "Little")}}


def declared_roles(skeleton: Skeleton) -> dict:
    """Role -> joint index from the skeleton's declared humanoid bones; ``upper_spine`` is
    where the declared hands' chains meet.  Empty when it declares none."""
    index = {name: j for j, name in enumerate(skeleton.names)}
    bones = {bone: index[joint] for bone, joint in skeleton.humanoid_bones.items()}
    roles = {role: bones[bone] for role, bone in ROLE_BONES.items() if bone in bones}
    if "wrist_l" in roles and "wrist_r" in roles:
        meet = skeleton.hierarchy.common_ancestor(roles["wrist_l"], roles["wrist_r"])
        if meet >= 0:
            roles["upper_spine"] = meet
    return roles


def humanoid_bones(skeleton: Skeleton, mapping: dict) -> dict:
    """Humanoid bone -> joint name of ``skeleton``: its declared bones, and those its
    skeleton map (``mapping``, role -> joint name) gives.

    The chest is the first joint past the spine on the way to where the arms meet, the
    upper chest that joint when it is another; the ring finger lies between the middle and
    little fingers; a finger's further segments follow its first down a chain without
    branches.  A joint plays one bone, the declared one first.
    """
    index = {name: j for j, name in enumerate(skeleton.names)}
    tree = skeleton.hierarchy
    found = {ROLE_BONES[role]: index[joint] for role, joint in mapping.items() if role in ROLE_BONES}
    if "spine" in found and "upper_spine" in mapping:
        chest = tree.path(found["spine"], index[mapping["upper_spine"]]).tolist()
        if chest:
            found["chest"] = chest[0]
        if len(chest) > 1:
            found["upperChest"] = chest[-1]
    for side in ("left", "right"):
        ring = _ring_finger(skeleton, found.get(side + "MiddleProximal"), found.get(side + "LittleProximal"))
        if ring is not None:
            found[side + "RingProximal"] = ring
        for finger, segments in FINGER_SEGMENTS.items():
            joint = found.get(side + finger + segments[0])
            for segment in segments[1:]:
                below = tree.children(joint) if joint is not None else ()
                if len(below) != 1:
                    break
                joint = int(below[0])
                found[side + finger + segment] = joint
    bones = dict(skeleton.humanoid_bones)
    taken = set(bones.values())
    for bone, j in found.items():  # one joint plays one bone (a VRM runtime needs them apart)
        if bone not in bones and skeleton.names[j] not in taken:
            bones[bone] = skeleton.names[j]
            taken.add(skeleton.names[j])
    return bones


def _ring_finger(skeleton: Skeleton, middle: int | None, little: int | None) -> int | None:
    """The ring finger's first joint: the joint beside the middle and little fingers' first
    joints (the same parent) nearest the middle between them, or None."""
    if middle is None or little is None or skeleton.parents[middle] != skeleton.parents[little]:
        return None
    at = skeleton.bind_world[:, :3, 3]
    between = (at[middle] + at[little]) / 2
    others = [int(j) for j in skeleton.hierarchy.children(int(skeleton.parents[middle])) if j not in (middle, little)]
    if not others:
        return None
    ring = min(others, key=lambda j: (float(np.linalg.norm(at[j] - between)), j))
    return ring if np.linalg.norm(at[ring] - between) < np.linalg.norm(at[middle] - at[little]) else None


def side_pairs(skeleton: Skeleton) -> list:
    """``[(left, right), ...]`` joint index pairs: the declared bones' (``leftHand`` with
    ``rightHand``...), each followed down both sides while each has one child (a finger's
    end joint), then the pairs the joint names give (:func:`~.naming.lr_pairs`) of the other
    joints; in the order of the left joints."""
    index = {name: j for j, name in enumerate(skeleton.names)}
    bones = {bone: index[joint] for bone, joint in skeleton.humanoid_bones.items()}
    tree = skeleton.hierarchy
    pairs = {}
    for bone, left in bones.items():
        right = bones.get("right" + bone[4:]) if bone.startswith("left") else None
        while right is not None and left != right and left not in pairs and right not in pairs.values():
            pairs[left] = right
            below_left, below_right = tree.children(left), tree.children(right)
            if len(below_left) != 1 or len(below_right) != 1:
                break
            left, right = int(below_left[0]), int(below_right[0])
    taken = set(pairs) | set(pairs.values())
    pairs.update({a: b for a, b in lr_pairs(skeleton.names) if a not in taken and b not in taken})
    return sorted(pairs.items())


def spine_joints(skeleton: Skeleton) -> np.ndarray:
    """Joint indices from the root to the head (spec §3.1.3): up from the declared head, else
    as the joint names give them (:func:`~.naming.spine_chain`)."""
    head = skeleton.humanoid_bones.get("head")
    if head is None:
        return spine_chain(skeleton.names, skeleton.parents)
    j = skeleton.index(head)
    return np.concatenate([skeleton.hierarchy.ancestors(j)[::-1], [j]]).astype(np.int64)
