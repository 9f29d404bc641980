"""Skeleton map (Tonoli §3.1.2): generic humanoid joint roles -> a rig's joint names.

The roles are the minimal humanoid skeleton a retargeter needs (hips, two spine
joints, neck, head and, per side, clavicle, shoulder, elbow, wrist, mid-hand,
upper leg, knee, ankle, toe) plus the thumb, index and little finger bases, which
give the palm's orientation and the finger-tip key vertices.  :func:`propose_skeleton_map` fills them from the joint
names of common conventions -- Mixamo / HumanIK (``mixamorig:LeftForeArm``),
MakeHuman (``lowerarm01.L``), Unreal (``lowerarm_l``), Blender Rigify
(``DEF-forearm.L``, head ``spine.006``), 3ds Max Biped (``Bip01 L Forearm``), VRoid / VRM
and Unity (``J_Bip_L_LowerArm``, ``LeftThumbProximal``), Character Creator
(``CC_Base_L_Forearm``), Daz Genesis (``lForearmBend``), Auto-Rig Pro (``forearm_stretch.l``),
Second Life (``mElbowLeft``) -- and from the hierarchy: the hips are where the legs meet the
spine, the upper spine where the two arms meet.

Fingers are named by word (``HandThumb1``, ``thumb_01_l``, ``f_index.01.L``) or by number
from the thumb: MakeHuman counts from 1 (``finger1-1`` is the thumb), Biped from 0
(``Finger0`` is the thumb, ``Finger01`` its second segment, ``Finger1`` the index).  A hand
with a ``finger0`` counts from 0; one without counts from 1 unless its geometry says
otherwise (:func:`numbered_from_zero`).

:func:`~asetransfer.humanoid.body.body_axes` gives a character's up, forward and left
directions from its mapped joints.
"""
from __future__ import annotations

import re

import numpy as np

from ..model.roles import REQUIRED, ROLES, SIDES
from ..model.skeleton import Skeleton
from .bones import declared_roles
from .naming import FINGER_NUMBER, finger_of, spine_chain, split_side, without_running_index

# name patterns per side role, on the side-free, lower-case, separator-free base name;
# earlier patterns win, then the joint nearest the root
_PATTERNS = {
    "clavicle": [r"(clavicle|collar|collarbone)\d*", r"shoulder"],
    "shoulder": [r"(upperarm|uparm|arm|humerus|shldr)(0*1|bend|stretch)?", r"shoulder"],  # below a collar: Second Life
    "elbow": [r"(forearm|lowerarm|loarm|elbow)(0*1|bend|stretch)?"],
    "wrist": [r"(hand|wrist)"],
    "mid_hand": [r"(handmiddle|middle|mid|fmiddle|middlefinger|finger{middle})(0*1|proximal)?"],
    "thumb": [r"(handthumb|thumb|fthumb|finger{thumb})(0*1|0|proximal|metacarpal)?"],  # thumb0: MMD's base
    "index": [r"(handindex|index|findex|indexfinger|fore|finger{index})(0*1|proximal)?"],  # fore: MMD's
    "pinky": [r"(handpinky|pinky|fpinky|little|littlefinger|finger{pinky})(0*1|proximal)?"],
    "upper_leg": [r"(upperleg|upleg|thigh|femur)(0*1|bend|stretch)?", r"hip(joint)?"],
    "knee": [r"(lowerleg|loleg|calf|shin|knee|tibia)(0*1|stretch)?", r"leg(0*1|stretch)?"],
    "ankle": [r"(foot|ankle)"],
    "toe": [r"(toebase|toes?|ball)\d*"],
}
_NECK = re.compile(r"neck\d*")
#: a numbered finger joint (MakeHuman ``finger2-1``, Biped ``Finger21``): its first digit is the finger
#: the fingers in the order numbered names count them, from the thumb
_FINGER_ORDER = ("thumb", "index", "middle", "ring", "pinky")
#: the thumb's chain is the finger chain whose nearest other chain is farthest, when that distance
#: is at least this factor times every other chain's (2.3-2.9 on the fixture, dev and production rigs)
THUMB_SEPARATION = 1.5


def _match(role, joints, bases, depth, first_finger: int = 1):
    """The joint among ``joints`` matching ``role``'s patterns: best pattern, then shallowest.
    ``first_finger``: the number of the thumb in numbered finger names (0: Biped, 1: MakeHuman)."""
    numbers = {f: first_finger + k for k, f in enumerate(_FINGER_ORDER)}
    for pat in _PATTERNS[role]:
        rx = re.compile(pat.format(**numbers))
        hits = [j for j in joints if rx.fullmatch(bases[j])]
        if hits:
            return min(hits, key=lambda j: (depth[j], j))
    return None


def propose_skeleton_map(skeleton: Skeleton):
    """Fill the roles from the humanoid bones the file declares (``skeleton.humanoid_bones``),
    then from joint names and the hierarchy: the wrists and ankles by name on each side, the
    hips and upper spine where their chains meet, the spine chain's joints between them,
    then each limb's joints by name along the path to its end.

    Returns
    -------
    mapping : dict role -> joint name for every role found (in :data:`ROLES` order).
    missing : list of required roles that could not be found.
    """
    names, tree = skeleton.names, skeleton.hierarchy
    split = [split_side(n) for n in without_running_index(names)]
    sides, bases = [s for s, _ in split], [b for _, b in split]
    depth = tree.depth()
    found = declared_roles(skeleton)  # a file's own declaration (a VRM's humanoid) first
    for s in SIDES:
        on_side = [j for j in range(len(names)) if sides[j] == s]
        for role in ("wrist", "ankle"):
            j = _match(role, on_side, bases, depth) if f"{role}_{s}" not in found else None
            if j is not None:
                found[f"{role}_{s}"] = j
    if "wrist_l" in found and "wrist_r" in found and "upper_spine" not in found:
        found["upper_spine"] = tree.common_ancestor(found["wrist_l"], found["wrist_r"])
    if "ankle_l" in found and "ankle_r" in found and "hips" not in found:
        found["hips"] = tree.common_ancestor(found["ankle_l"], found["ankle_r"])
        if "upper_spine" in found:  # legs hung from a pelvis beside the spine (Daz, Character
            # Creator: hip -> pelvis -> thighs, hip -> abdomen): the hips carry both
            found["hips"] = tree.common_ancestor(found["hips"], found["upper_spine"])
    found = {role: j for role, j in found.items() if j >= 0}  # arms or legs in another tree
    _spine_roles(skeleton, sides, bases, found)
    positions = skeleton.rest_world()[:, :3, 3]
    for s in SIDES:
        _arm_roles(tree, s, names, bases, depth, positions, found)
        _leg_roles(tree, s, bases, depth, positions, found)
    mapping = {r: names[found[r]] for r in ROLES if r in found}
    missing = [r for r in REQUIRED if r not in mapping]
    return mapping, missing


def _spine_roles(skeleton: Skeleton, sides, bases, found: dict) -> None:
    """``head`` (the spine chain's end), ``spine`` (the middle of the chain between the hips
    and the upper spine) and ``neck`` (the first joint above the upper spine, one named
    neck first), added to ``found``."""
    names, parents = skeleton.names, skeleton.parents
    if "head" in found:  # declared: the chain is the head's ancestors
        chain = [*skeleton.hierarchy.ancestors(found["head"]).tolist()[::-1], found["head"]]
    else:
        chain = [int(j) for j in spine_chain(names, parents)]
    if not chain:  # Rigify names the head spine.006
        rigify = [j for j in range(len(names)) if sides[j] is None and bases[j] == "spine006"]
        if rigify:
            chain = [int(j) for j in spine_chain(names, parents, head=names[rigify[0]])]
    if chain:
        found.setdefault("head", chain[-1])
    if "hips" in found and "upper_spine" in found and found["hips"] in chain and found["upper_spine"] in chain:
        a, b = chain.index(found["hips"]), chain.index(found["upper_spine"])
        middle = chain[a + 1:b]
        if middle:
            found.setdefault("spine", middle[(len(middle) - 1) // 2])
        if "head" in found:
            above = chain[b + 1:-1]
            named = [j for j in above if _NECK.fullmatch(bases[j])]
            if named or above:
                found.setdefault("neck", (named or above)[0])


def _arm_roles(tree, side: str, names, bases, depth, positions: np.ndarray, found: dict) -> None:
    """Clavicle, shoulder and elbow down the path from the upper spine to the wrist (each
    below the last found), and the hand's roles among the wrist's descendants (numbered
    fingers counted as :func:`numbered_from_zero` says)."""
    if "upper_spine" not in found or f"wrist_{side}" not in found:
        return
    arm = tree.path(found["upper_spine"], found[f"wrist_{side}"]).tolist()[:-1]
    for role in ("clavicle", "shoulder", "elbow"):
        j = found.get(f"{role}_{side}")
        if j is None:
            j = _match(role, [k for k in arm if k not in found.values()], bases, depth)
        if j is not None:
            found[f"{role}_{side}"] = j
            arm = arm[arm.index(j) + 1:] if j in arm else arm  # the next role lies further down the arm
    hand = tree.descendants(found[f"wrist_{side}"]).tolist()
    first = 0 if numbered_from_zero([names[j] for j in hand], positions[hand]) else 1
    for role in ("mid_hand", "thumb", "index", "pinky"):
        j = _match(role, hand, bases, depth, first) if f"{role}_{side}" not in found else None
        if j is not None:
            found[f"{role}_{side}"] = j


def numbered_from_zero(names, positions: np.ndarray) -> bool:
    """Whether a hand's numbered finger joints count the thumb as 0 (3ds Max Biped) rather
    than 1 (MakeHuman).

    A hand with a ``finger0`` counts from 0.  Without one the names are ambiguous and the
    hand's geometry decides: the thumb is the finger chain farthest from the others
    (:func:`thumb_chain`); when that is a chain named by word (``thumb_01``), the numbered
    fingers beside it count from the index (0 would be the thumb); otherwise they count from 1.

    Parameters
    ----------
    names : the joint names below the wrist.
    positions : (N, 3) their positions.
    """
    numbers = [FINGER_NUMBER.search(split_side(n)[1]) for n in names]
    if not any(numbers):
        return False
    if any(m is not None and m.group(1) == "0" for m in numbers):
        return True
    return thumb_chain(names, positions) == "thumb"


def thumb_chain(names, positions: np.ndarray) -> str | None:
    """The key of the finger chain that is the thumb by the hand's geometry, or None when no
    chain stands out.

    The joints below a wrist are grouped into chains by finger: numbered ones by their number
    (the key ``"2"`` for ``finger2-1`` ... ``finger2-3``), the others by the finger word
    they name (``"thumb"``, ``"index"``...).  With ``c_k`` the mean position of chain ``k``'s
    joints and ``d_k = min_{m != k} |c_k - c_m|``, the thumb is ``argmax d_k`` when
    ``d_k >= THUMB_SEPARATION * d_m`` for every other chain ``m`` (it lies apart from the four
    fingers side by side).

    Parameters
    ----------
    names : the joint names below the wrist.
    positions : (N, 3) their positions.
    """
    chains = {}
    for name, at in zip(names, positions):
        number = FINGER_NUMBER.search(split_side(name)[1])
        key = number.group(1) if number else finger_word(name)
        if key is not None:
            chains.setdefault(key, []).append(at)
    if len(chains) < 3:
        return None
    keys = list(chains)
    centres = np.array([np.mean(chains[k], axis=0) for k in keys])
    gaps = np.linalg.norm(centres[:, None] - centres[None], axis=2)
    np.fill_diagonal(gaps, np.inf)
    nearest = gaps.min(axis=1)
    order = np.argsort(-nearest, kind="stable")
    if not nearest[order[0]] >= THUMB_SEPARATION * nearest[order[1]]:
        return None
    return keys[order[0]]


def finger_word(name: str) -> str | None:
    """The finger a joint name names by word (``thumb`` ... ``pinky``; numbered names: None)."""
    base = split_side(name)[1]
    return None if FINGER_NUMBER.search(base) else finger_of(name, zero_based=False)


def _leg_roles(tree, side: str, bases, depth, positions: np.ndarray, found: dict) -> None:
    """Upper leg and knee down the path from the hips to the ankle, and the toe: the
    shallowest toe-named descendant of the ankle (the middle one of several at one level)."""
    if "hips" not in found or f"ankle_{side}" not in found:
        return
    path = tree.path(found["hips"], found[f"ankle_{side}"]).tolist()[:-1]
    leg = path
    for role in ("upper_leg", "knee"):
        j = found.get(f"{role}_{side}")
        if j is None:
            j = _match(role, leg, bases, depth)
        if j is not None:
            found[f"{role}_{side}"] = j
            leg = leg[leg.index(j) + 1:] if j in leg else leg
    if f"upper_leg_{side}" not in found and f"knee_{side}" in found:  # leg over knee (MMD's leg_L, knee_L)
        above = [k for k in path[:path.index(found[f"knee_{side}"])] if re.fullmatch(r"leg(0*1)?", bases[k])]
        if above:
            found[f"upper_leg_{side}"] = above[-1]
    toes = tree.descendants(found[f"ankle_{side}"]).tolist()
    hits = [j for j in toes if any(re.fullmatch(p, bases[j]) for p in _PATTERNS["toe"])]
    if hits and f"toe_{side}" not in found:
        d = min(depth[j] for j in hits)
        top = [j for j in hits if depth[j] == d]
        centre = positions[top].mean(axis=0)  # several toes at one level: the middle one
        found[f"toe_{side}"] = min(top, key=lambda j: (float(np.linalg.norm(positions[j] - centre)), j))
