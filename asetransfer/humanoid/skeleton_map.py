"""Skeleton map (Tonoli §3.1.2): generic humanoid joint roles -> a rig's joint names.

The roles are the minimal humanoid skeleton a retargeter needs (hips, two spine
joints, neck, head and, per side, clavicle, shoulder, elbow, wrist, mid-hand,
upper leg, knee, ankle, toe) plus the thumb, index and little finger bases, which
give the palm's orientation and the finger-tip key vertices.  :func:`propose_skeleton_map` fills them from the joint
names of common conventions -- Mixamo / HumanIK (``mixamorig:LeftForeArm``),
MakeHuman (``lowerarm01.L``), Unreal (``lowerarm_l``), Blender Rigify
(``DEF-forearm.L``, head ``spine.006``) -- and from the hierarchy:
the hips are where the two legs meet, the upper spine where the two arms meet.

:func:`~asetransfer.humanoid.body.body_axes` gives a character's up, forward and left
directions from its mapped joints.
"""
from __future__ import annotations

import re

import numpy as np

from ..model.roles import REQUIRED, ROLES, SIDES
from ..model.skeleton import Skeleton
from .naming import spine_chain, split_side

# name patterns per side role, on the side-free, lower-case, separator-free base name;
# earlier patterns win, then the joint nearest the root
_PATTERNS = {
    "clavicle": [r"(clavicle|collar|collarbone)\d*", r"shoulder"],
    "shoulder": [r"(upperarm|uparm|arm|humerus)(0*1)?"],
    "elbow": [r"(forearm|lowerarm|loarm|elbow)(0*1)?"],
    "wrist": [r"(hand|wrist)"],
    "mid_hand": [r"(handmiddle|middle|fmiddle|middlefinger|finger3)(0*1)?"],
    "thumb": [r"(handthumb|thumb|fthumb|finger1)(0*1)?"],
    "index": [r"(handindex|index|findex|indexfinger|finger2)(0*1)?"],
    "pinky": [r"(handpinky|pinky|fpinky|little|littlefinger|finger5)(0*1)?"],
    "upper_leg": [r"(upperleg|upleg|thigh|femur)(0*1)?", r"hip(joint)?"],
    "knee": [r"(lowerleg|loleg|calf|shin|knee|leg|tibia)(0*1)?"],
    "ankle": [r"(foot|ankle)"],
    "toe": [r"(toebase|toes?|ball)\d*"],
}
_NECK = re.compile(r"neck\d*")

def _match(role, joints, bases, depth):
    """The joint among ``joints`` matching ``role``'s patterns: best pattern, then shallowest."""
    for pat in _PATTERNS[role]:
        rx = re.compile(pat)
        hits = [j for j in joints if rx.fullmatch(bases[j])]
        if hits:
            return min(hits, key=lambda j: (depth[j], j))
    return None


def propose_skeleton_map(skeleton: Skeleton):
    """Fill the roles from joint names and the hierarchy: the wrists and ankles by name on
    each side, the hips and upper spine where their chains meet, the spine chain's joints
    between them, then each limb's joints by name along the path to its end.

    Returns
    -------
    mapping : dict role -> joint name for every role found (in :data:`ROLES` order).
    missing : list of required roles that could not be found.
    """
    names, tree = skeleton.names, skeleton.hierarchy
    split = [split_side(n) for n in names]
    sides, bases = [s for s, _ in split], [b for _, b in split]
    depth = tree.depth()
    found = {}
    for s in SIDES:
        on_side = [j for j in range(len(names)) if sides[j] == s]
        for role in ("wrist", "ankle"):
            j = _match(role, on_side, bases, depth)
            if j is not None:
                found[f"{role}_{s}"] = j
    if "ankle_l" in found and "ankle_r" in found:
        found["hips"] = tree.common_ancestor(found["ankle_l"], found["ankle_r"])
    if "wrist_l" in found and "wrist_r" in found:
        found["upper_spine"] = tree.common_ancestor(found["wrist_l"], found["wrist_r"])
    _spine_roles(skeleton, sides, bases, found)
    for s in SIDES:
        _arm_roles(tree, s, bases, depth, found)
        _leg_roles(tree, s, bases, depth, skeleton.rest_world()[:, :3, 3], found)
    mapping = {r: names[found[r]] for r in ROLES if r in found}
    missing = [r for r in REQUIRED if r not in mapping]
    return mapping, missing


def _spine_roles(skeleton: Skeleton, sides, bases, found: dict) -> None:
    """``head`` (the spine chain's end), ``spine`` (the middle of the chain between the hips
    and the upper spine) and ``neck`` (the first joint above the upper spine, one named
    neck first), added to ``found``."""
    names, parents = skeleton.names, skeleton.parents
    chain = [int(j) for j in spine_chain(names, parents)]
    if not chain:  # Rigify names the head spine.006
        rigify = [j for j in range(len(names)) if sides[j] is None and bases[j] == "spine006"]
        if rigify:
            chain = [int(j) for j in spine_chain(names, parents, head=names[rigify[0]])]
    if chain:
        found["head"] = chain[-1]
    if "hips" in found and "upper_spine" in found and found["hips"] in chain and found["upper_spine"] in chain:
        a, b = chain.index(found["hips"]), chain.index(found["upper_spine"])
        middle = chain[a + 1:b]
        if middle:
            found["spine"] = middle[(len(middle) - 1) // 2]
        if "head" in found:
            above = chain[b + 1:-1]
            named = [j for j in above if _NECK.fullmatch(bases[j])]
            if named or above:
                found["neck"] = (named or above)[0]


def _arm_roles(tree, side: str, bases, depth, found: dict) -> None:
    """Clavicle, shoulder and elbow down the path from the upper spine to the wrist (each
    below the last found), and the hand's roles among the wrist's descendants."""
    if "upper_spine" not in found or f"wrist_{side}" not in found:
        return
    arm = tree.path(found["upper_spine"], found[f"wrist_{side}"]).tolist()[:-1]
    for role in ("clavicle", "shoulder", "elbow"):
        j = _match(role, [k for k in arm if k not in found.values()], bases, depth)
        if j is not None:
            found[f"{role}_{side}"] = j
            arm = arm[arm.index(j) + 1:]  # the next role lies further down the arm
    hand = tree.descendants(found[f"wrist_{side}"]).tolist()
    for role in ("mid_hand", "thumb", "index", "pinky"):
        j = _match(role, hand, bases, depth)
        if j is not None:
            found[f"{role}_{side}"] = j


def _leg_roles(tree, side: str, bases, depth, positions: np.ndarray, found: dict) -> None:
    """Upper leg and knee down the path from the hips to the ankle, and the toe: the
    shallowest toe-named descendant of the ankle (the middle one of several at one level)."""
    if "hips" not in found or f"ankle_{side}" not in found:
        return
    leg = tree.path(found["hips"], found[f"ankle_{side}"]).tolist()[:-1]
    for role in ("upper_leg", "knee"):
        j = _match(role, leg, bases, depth)
        if j is not None:
            found[f"{role}_{side}"] = j
            leg = leg[leg.index(j) + 1:]
    toes = tree.descendants(found[f"ankle_{side}"]).tolist()
    hits = [j for j in toes if any(re.fullmatch(p, bases[j]) for p in _PATTERNS["toe"])]
    if hits:
        d = min(depth[j] for j in hits)
        top = [j for j in hits if depth[j] == d]
        centre = positions[top].mean(axis=0)  # several toes at one level: the middle one
        found[f"toe_{side}"] = min(top, key=lambda j: (float(np.linalg.norm(positions[j] - centre)), j))
