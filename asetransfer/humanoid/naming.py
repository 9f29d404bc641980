"""Joint names of a character: sides, left/right pairs, the head and the spine chain
(spec §3.1.3-3.1.4).

One rule set says which joints are on which side (:func:`split_side`); everything
else -- the left/right pairs (:func:`lr_pairs`), the skeleton map's side roles, the
spine chain -- is built on it.  Recognised conventions: Mixamo / HumanIK
(``mixamorig:LeftArm``, ``Character1_RightHand``), MakeHuman (``upperarm01.L``),
Unreal (``upperarm_l``), Blender Rigify (``DEF-upper_arm.L``, ``hand.L.001``), prefixes
(``L_arm``, ``l_arm``), 3ds Max Biped (``Bip01 L Thigh``, Valve's ``ValveBiped.Bip01_L_Thigh``),
VRoid / VRM (``J_Bip_L_UpperArm``, centre ``J_Bip_C_Hips``), Character Creator
(``CC_Base_L_Upperarm``), Daz Genesis (``lShldrBend``), Second Life (``mShoulderLeft``),
MikuMikuDance's Japanese names (``左腕``, ``ひざ.L``) and ``_left`` / ``_right`` suffixes.
"""
from __future__ import annotations

import re
import unicodedata

import numpy as np

from ..model.hierarchy import Hierarchy

#: rig prefixes that carry no meaning for the body part (Rigify layers, Biped and Valve's,
#: Mixamo/HumanIK, VRoid's layers with their centre token, Character Creator)
_PREFIX = re.compile(r"^(?:def|org|mch|drv)[-_.]|^(?:valvebiped\.)?bip\d*[\s_]|^character\d*_|^mixamorig\d*_"
                     r"|^j_(?:bip|adj|sec|opt)_(?:c_)?|^cc_base_", re.IGNORECASE)
#: the side token, tried in this order after the namespace and prefix: (regex, group holding it)
_SIDE_RULES = [
    (re.compile(r"^(left|right)(?=[\s_.\-]|[A-Z0-9]|$)", re.IGNORECASE), 1),  # LeftArm, left_arm
    (re.compile(r"[\s_.\-](left|right)$", re.IGNORECASE), 1),                 # thigh_left
    (re.compile(r"(?<=[\s_.\-])(left|right)(?=[\s_.\-])", re.IGNORECASE), 1),  # front_left_leg
    (re.compile(r"(?:^|(?<=[\s_.\-]))([LRlr])(?=$|[\s_.\-\d])"), 1),         # arm.L, arm_l, L_arm, hand.L.001
    (re.compile(r"(Left|Right)"), 1),                                         # HandLeft
    (re.compile(r"^([lr])(?=[A-Z])"), 1),                                     # lShldrBend (Daz)
]
_SEPARATORS = re.compile(r"[\s_.\-]+")
#: Second Life's joints: ``m`` before a capitalised name (``mShoulderLeft``, ``mHead``)
_SECOND_LIFE = re.compile(r"^m(?=[A-Z][a-z])")
_HEAD = re.compile(r"(^|[^a-z])head($|[^a-z])")
_NOT_HEAD = re.compile(r"end|top|tip|nub")


#: MikuMikuDance's Japanese joint names, word by word (longer words first: 足首 before 足)
_MMD_WORDS = (("左", "Left"), ("右", "Right"), ("上半身", "UpperBody"), ("下半身", "LowerBody"),
              ("手首", "Wrist"), ("足首", "Ankle"), ("つま先", "Toe"), ("人差指", "Index"), ("人指", "Index"),
              ("親指", "Thumb"), ("中指", "Middle"), ("薬指", "Ring"), ("小指", "Little"), ("ひじ", "Elbow"),
              ("ひざ", "Knee"), ("肩", "Shoulder"), ("腕", "Arm"), ("足", "UpperLeg"), ("首", "Neck"),
              ("頭", "Head"), ("目", "Eye"))


def _in_latin(name: str) -> str:
    """``name`` with full-width characters made plain (NFKC) and MikuMikuDance's Japanese
    words in English (``左腕`` -> ``LeftArm``, ``ひざ.L`` -> ``Knee.L``); other names as they are."""
    if name.isascii():
        return name
    name = unicodedata.normalize("NFKC", name)
    for word, latin in _MMD_WORDS:
        name = name.replace(word, latin)
    return name


def _side_token(name: str):
    """``(side, skip, start, end)``: side ``"l"``, ``"r"`` or ``None``; ``name[:skip]`` is the
    namespace and prefix; ``name[start:end]`` the side token (``start = end = skip`` without
    one).  ``name`` is one :func:`_in_latin` gave."""
    n = _SECOND_LIFE.sub("", _PREFIX.sub("", re.split(r"[:|]", name)[-1]))
    skip = len(name) - len(n)
    for rx, g in _SIDE_RULES:
        m = rx.search(n)
        if m:
            return m.group(g)[0].lower(), skip, skip + m.start(g), skip + m.end(g)
    return None, skip, skip, skip


def split_side(name: str):
    """``(side, base)``: side ``"l"``, ``"r"`` or ``None``; base lower case without
    side, namespace, ``DEF-``-like prefixes and separators.

    >>> split_side("mixamorig:LeftForeArm")
    ('l', 'forearm')
    >>> split_side("DEF-upper_arm.R.001")
    ('r', 'upperarm001')
    """
    name = _in_latin(name)
    side, skip, start, end = _side_token(name)
    return side, _SEPARATORS.sub("", name[skip:start] + name[end:]).lower()


def _as_left(token: str) -> str:
    """The left-side spelling of a side token, in the token's case (``R`` -> ``L``, ``Right`` -> ``Left``)."""
    word = "l" if len(token) == 1 else "left"
    if token.isupper():
        return word.upper()
    return word.capitalize() if token[0].isupper() else word


#: a running index a converter appends to every node name (Sketchfab's glTF: ``Hips_01``,
#: ``mixamorig:LeftArm_09``, ``thigh_l_57``)
_RUNNING_INDEX = re.compile(r"^(.+)_(\d+)$")
#: names read as carrying a running index when at least this share of them does
RUNNING_SHARE = 0.9


def without_running_index(names) -> list:
    """``names`` without the running index a converter appended to each one, when they carry
    one: at least :data:`RUNNING_SHARE` of them end in ``_<number>``, every number
    different (Sketchfab numbers every node it writes).  Names of one rig's own
    (``spine_01``, ``neck_01``, ``Tail_1``..``Tail_9``) are kept: their numbers repeat or
    do not cover the rig.

    >>> without_running_index(["Hips_01", "Spine_02", "LeftArm_03", "RightArm_04"])
    ['Hips', 'Spine', 'LeftArm', 'RightArm']
    """
    names = list(names)
    found = [_RUNNING_INDEX.match(n) for n in names]
    numbers = [int(m.group(2)) for m in found if m]
    if len(names) < 4 or len(numbers) < RUNNING_SHARE * len(names) or len(set(numbers)) < len(numbers):
        return names
    return [m.group(1) if m else n for n, m in zip(names, found)]


def lr_pairs(names) -> list:
    """``[(left, right), ...]`` joint index pairs, in the order of the left joints.

    Two joints pair when :func:`split_side` gives them sides ``l`` and ``r`` and their
    names agree once the side token is spelled the same (``upperarm01.L`` /
    ``upperarm01.R``, ``hand_l`` / ``hand_r``, ``mixamorig:LeftArm`` / ``mixamorig:RightArm``,
    ``L_knee`` / ``R_knee``, ``hand.L.001`` / ``hand.R.001``), a converter's running index
    left out (:func:`without_running_index`).
    """
    first = {}  # (side-free key, side) -> the first joint with it
    for i, n in enumerate(without_running_index([_in_latin(n) for n in names])):
        side, _, start, end = _side_token(n)
        if side is not None:
            first.setdefault((n[:start] + _as_left(n[start:end]) + n[end:], side), i)
    return sorted((i, first[key, "r"]) for (key, side), i in first.items()
                  if side == "l" and (key, "r") in first)


def is_head_name(name: str) -> bool:
    """Whether a joint is named like a head (``head``, ``Head``, ``mixamorig:Head``,
    ``head_jnt``, ``mHead``) and not like its end (``head_end``, ``HeadTop_End``, ``head_nub``)."""
    name = _in_latin(name)
    n = name[_side_token(name)[1]:].lower()  # without namespace and prefix
    return bool(_HEAD.search(n)) and not _NOT_HEAD.search(n)


def spine_chain(names, parents, head: str | None = None) -> np.ndarray:
    """Joint indices from the root to the head (spec §3.1.3: the spine joints).

    The head is ``head`` if given, else the shallowest joint named like a head
    (:func:`is_head_name`) that has no side.
    """
    tree = Hierarchy(parents)
    if head is None:
        sided = {i for p in lr_pairs(names) for i in p}
        cands = [i for i, n in enumerate(without_running_index(names)) if is_head_name(n) and i not in sided]
        if not cands:
            return np.zeros(0, dtype=np.int64)
        depth = tree.depth()[cands]
        h = cands[int(np.argmin(depth))]
    else:
        h = list(names).index(head)
    return np.concatenate([tree.ancestors(h)[::-1], [h]]).astype(np.int64)


_FINGER_WORDS = (("thumb", r"thumb|pollex"), ("index", r"index|pointer|fore(?!arm)"), ("middle", r"middle|mid"),
                 ("ring", r"ring"), ("pinky", r"pinky|little|small"))
#: a numbered finger joint (MakeHuman's ``finger2-1``, 3ds Max Biped's ``Finger01``): its number
FINGER_NUMBER = re.compile(r"finger(\d)")


def finger_of(name: str, zero_based: bool) -> str | None:
    """The finger a joint name names (``thumb``, ``index``, ``middle``, ``ring``, ``pinky``) or
    None; numbered fingers count from the thumb, from 0 when ``zero_based`` (3ds Max Biped's
    ``Finger0``) else from 1 (MakeHuman's ``finger1-1``).

    >>> finger_of("mixamorig:LeftHandIndex2", zero_based=False)
    'index'
    >>> finger_of("Bip01 L Finger0", zero_based=True)
    'thumb'
    """
    base = split_side(name)[1]
    for finger, words in _FINGER_WORDS:
        if re.search(words, base):
            return finger
    number = FINGER_NUMBER.search(base)
    if number is None:
        return None
    k = int(number.group(1)) - (0 if zero_based else 1)
    return _FINGER_WORDS[k][0] if 0 <= k < len(_FINGER_WORDS) else None
