"""Left/right structure of a character: joint pairs, spine chain, symmetry plane (spec §3.1.3-3.1.4)."""
from __future__ import annotations

import re

import numpy as np

from ..model.hierarchy import Hierarchy

# (left pattern, right replacement) pairs; each regex matches a left-side token
_SIDE_RULES = [
    (r"([._\-\s])L$", r"\1R"), (r"([._\-\s])l$", r"\1r"),          # arm.L, arm_l, arm-L
    (r"^L([._\-])", r"R\1"), (r"^l([._\-])", r"r\1"),              # L_arm, l_arm
    (r"Left", "Right"), (r"left", "right"), (r"LEFT", "RIGHT"),    # mixamorig:LeftArm, upperarm_left
    (r"([._\-])L([._\-])", r"\1R\2"),                              # hand.L.001
]


def lr_pairs(names) -> list:
    """``[(left, right), ...]`` joint index pairs found from common naming conventions.

    Recognised: ``.L/.R``, ``_L/_R``, ``_l/_r``, ``-L/-R`` suffixes, ``L_/R_`` and
    ``l_/r_`` prefixes, ``Left/Right`` anywhere (Mixamo ``mixamorig:LeftArm``).
    """
    index = {n: i for i, n in enumerate(names)}
    pairs, used = [], set()
    for i, n in enumerate(names):
        if i in used:
            continue
        for pat, rep in _SIDE_RULES:
            if re.search(pat, n):
                other = re.sub(pat, rep, n, count=1)
                j = index.get(other)
                if j is not None and j != i and j not in used:
                    pairs.append((i, j))
                    used.update((i, j))
                    break
    return pairs


def spine_chain(names, parents, head: str | None = None) -> np.ndarray:
    """Joint indices from the root to the head (spec §3.1.3: the spine joints).

    The head is ``head`` if given, else the shallowest joint named like a head
    (``head``, ``Head``, ``mixamorig:Head``, ``head_jnt``) that has no side.
    """
    tree = Hierarchy(parents)
    if head is None:
        sided = {i for p in lr_pairs(names) for i in p}
        cands = [i for i, n in enumerate(names) if re.search(r"(^|[^a-z])head($|[^a-z])", n.lower())
                 and not re.search(r"end|top|tip|nub", n.lower()) and i not in sided]
        if not cands:
            return np.zeros(0, dtype=np.int64)
        depth = tree.depth()[cands]
        h = cands[int(np.argmin(depth))]
    else:
        h = list(names).index(head)
    return np.concatenate([tree.ancestors(h)[::-1], [h]]).astype(np.int64)
