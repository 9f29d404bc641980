"""Left/right structure of a character: joint pairs, spine chain, symmetry plane (spec §3.1.3-3.1.4)."""
from __future__ import annotations

import re

import numpy as np

from .surface import SurfaceIndex
from .transforms import hierarchy_depth

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
    parents = np.asarray(parents)
    if head is None:
        sided = {i for p in lr_pairs(names) for i in p}
        cands = [i for i, n in enumerate(names) if re.search(r"(^|[^a-z])head($|[^a-z])", n.lower())
                 and not re.search(r"end|top|tip|nub", n.lower()) and i not in sided]
        if not cands:
            return np.zeros(0, dtype=np.int64)
        depth = hierarchy_depth(parents)[cands]
        h = cands[int(np.argmin(depth))]
    else:
        h = list(names).index(head)
    chain = [h]
    while parents[chain[-1]] >= 0:
        chain.append(int(parents[chain[-1]]))
    return np.array(chain[::-1], dtype=np.int64)


def reflect(points: np.ndarray, plane: np.ndarray) -> np.ndarray:
    """Mirror points through the plane ``(a, b, c, d)``: ``n . x = d``, ``|n| = 1``."""
    n, d = plane[:3], plane[3]
    return points - 2.0 * (points @ n - d)[:, None] * n


def plane_from_pairs(points: np.ndarray, pairs) -> np.ndarray:
    """The plane bisecting left/right point pairs: normal = summed L - R direction,
    offset = mean midpoint.  ``None`` if the pairs do not define a direction."""
    left, right = np.array(pairs).T
    n = (points[left] - points[right]).sum(axis=0)
    if not np.linalg.norm(n) > 0:
        return None
    n = n / np.linalg.norm(n)
    return np.append(n, float(np.mean(0.5 * (points[left] + points[right]) @ n)))


def normalize_plane(plane) -> np.ndarray:
    plane = np.asarray(plane, dtype=np.float64)
    norm = np.linalg.norm(plane[:3])
    if not norm > 0:
        raise ValueError("symmetry plane normal is zero")
    return plane / norm


def estimate_symmetry_plane(vertices: np.ndarray, faces: np.ndarray, initial: np.ndarray,
                            iterations: int = 30, index: SurfaceIndex | None = None) -> np.ndarray:
    """Refine a mirror plane of a mesh by mirrored closest points (an ICP on reflections).

    Each step reflects the vertices through the current plane, pairs every vertex
    with the closest surface point to its reflection, and refits the plane as the
    perpendicular bisector of the pairs (normal = mean pair direction, offset = mean
    midpoint).  Pairs farther apart than 3x the median mismatch are ignored.
    The offset converges fast; a tilted normal is corrected only slowly (closest
    points hide tangential mismatch), so ``initial`` should already be close, as
    the plane bisecting the placed L/R joint pairs is.  ``index``: a prebuilt
    :class:`SurfaceIndex` of the mesh, to share.
    """
    plane = normalize_plane(initial)
    index = index or SurfaceIndex(vertices, faces)
    for _ in range(iterations):
        _, _, dist, q = index.closest(reflect(vertices, plane))
        keep = dist <= 3 * np.median(dist) + 1e-12
        diff = vertices[keep] - q[keep]  # vertex minus its twin's position: along the normal
        side = np.sign(diff @ plane[:3])
        dirs = diff * side[:, None]
        n = dirs.sum(axis=0)
        n /= np.linalg.norm(n)
        mid = 0.5 * (vertices[keep] + q[keep])
        new = np.append(n, float(np.mean(mid @ n)))
        done = np.abs(new - plane).max() < 1e-9
        plane = new
        if done:
            break
    return plane
