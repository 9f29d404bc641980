"""Joint orientations that keep the source rig's own conventions (beyond spec Alg. 2).

Alg. 2 turns every source joint frame by the Delta rotation of its vertex cloud.  The
bone axis then misses the placed child by a few degrees, and the roll about it follows
the flesh, not the rig.  Riggers (and rig generators) set both from the joints:

* **aim**: a bone points at one child.  A joint with one child aims at it; a joint
  with several (a chest with neck and clavicles) aims at the child that lies on one
  of its local axes in the source, if one does.
* **roll from a world axis**: rigs oriented with a world "up" (Maya's *Orient Joint*
  with a secondary world axis, Blender's roll 0) keep a local axis on that world axis
  seen across the bone; the target keeps its matching axis.
* **roll from a bend plane**: a limb bone's roll is set so that one of its local axes
  is the normal of a plane through three joints of its chain (the arm's elbow plane
  for the upper and lower arm); the plane stays with the joints when proportions change.
  The source shows which plane, if any: one whose normal, seen from the joint, lies on
  a local axis to within a hundredth of a degree.
* **leaves follow their parent**: a bone with no child keeps its rotation relative to
  its parent; the few vertices at a finger or toe tip (or a round eye) hold no
  rotation worth fitting.

:func:`aimed_children`, :func:`roll_axes` and :func:`roll_planes` read the conventions off the source;
:func:`orient_bones` applies them to the placed target joints.
"""
from __future__ import annotations

from itertools import combinations

import numpy as np

from ..geometry.rotations import rotation_about, swing, unit


def _on_axis(local: np.ndarray, tolerance_deg: float) -> np.ndarray:
    """(K,) True where unit vectors ``local`` (K, 3) lie along a coordinate axis (+ or -)."""
    return np.abs(local).max(axis=1) >= np.cos(np.radians(tolerance_deg))


def aimed_children(src_rot: np.ndarray, src_pos: np.ndarray, parents: np.ndarray, *, label: np.ndarray | None,
                   tolerance_deg: float) -> np.ndarray:
    """The child each source bone points at.

    Parameters
    ----------
    src_rot : (J, 3, 3) source world rotations; src_pos : (J, 3) source joint positions.
    parents : (J,) parent indices.
    label : (J,) :func:`~asetransfer.stages.skeleton.coincident_joints` labels (children
        sharing one position count as one); None: every joint apart.
    tolerance_deg : a child among several is aimed at when its offset, in the joint's
        frame, lies within this angle of a local axis.

    Returns
    -------
    (J,) the aimed child of every joint, -1 for none (a leaf, or several children none
    of which, or more than one of which, lies on an axis).
    """
    n = len(parents)
    label = np.arange(n) if label is None else label
    has = np.flatnonzero(parents >= 0)
    # one representative child per distinct (parent, child position)
    pairs, first = np.unique(np.stack([parents[has], label[has]], axis=1), axis=0, return_index=True)
    child = has[first]
    parent = pairs[:, 0]
    offset = np.einsum("kba,kb->ka", src_rot[parent], src_pos[child] - src_pos[parent])
    usable = np.linalg.norm(offset, axis=1) > 0
    count = np.bincount(parent, minlength=n)
    on_axis = usable & _on_axis(unit(offset), tolerance_deg)
    axis_count = np.bincount(parent[on_axis], minlength=n)
    out = np.full(n, -1)
    single = usable & (count[parent] == 1)
    chosen = on_axis & (count[parent] > 1) & (axis_count[parent] == 1)
    out[parent[single | chosen]] = child[single | chosen]
    return out


def _chain(j: int, parents: np.ndarray, aimed: np.ndarray, reach: int) -> list:
    """Joint ``j`` with up to ``reach`` ancestors and ``reach`` aimed descendants."""
    up, down = [], []
    k = j
    while len(up) < reach and parents[k] >= 0:
        k = parents[k]
        up.append(k)
    k = j
    while len(down) < reach and aimed[k] >= 0:
        k = aimed[k]
        down.append(k)
    return up[::-1] + [j] + down


def _plane_normals(pos: np.ndarray, triples: np.ndarray):
    """Unit normals (T, 3) of the planes through joint triples (a, b, c), and the
    sines (T,) of the bend at ``b`` (0 for a straight or degenerate triple)."""
    ab = pos[triples[:, 1]] - pos[triples[:, 0]]
    bc = pos[triples[:, 2]] - pos[triples[:, 1]]
    n = np.cross(ab, bc)
    scale = np.linalg.norm(ab, axis=1) * np.linalg.norm(bc, axis=1)
    sine = np.divide(np.linalg.norm(n, axis=1), scale, out=np.zeros(len(n)), where=scale > 0)
    return unit(n), sine


def _across(normal: np.ndarray, axis: np.ndarray) -> np.ndarray:
    """Components of ``normal`` (K, 3) across unit ``axis`` (K, 3), not normalised."""
    return normal - np.einsum("ka,ka->k", normal, axis)[:, None] * axis


def roll_planes(src_rot: np.ndarray, src_pos: np.ndarray, parents: np.ndarray, aimed: np.ndarray, *,
                tolerance_deg: float, min_bend_deg: float, reach: int, min_height: float = 0.0,
                usable: np.ndarray | None = None) -> np.ndarray:
    """The joint triple whose plane sets each bone's roll in the source, if any.

    A triple of joints on the bone's chain (up to ``reach`` ancestors and aimed
    descendants; the joint itself may or may not be one of them) sets the roll when its
    plane's normal, across the bone and in the joint's frame, lies within
    ``tolerance_deg`` of a local axis.  Plane rules are exact in the rigs that use them;
    a loose tolerance would find planes by chance.  Among several, the triple whose
    middle joint lies furthest from the line through the other two wins (a joint
    placed off tilts its plane least).

    Parameters
    ----------
    src_rot, src_pos : (J, 3, 3), (J, 3) source world rotations and positions.
    parents, aimed : (J,) parents and :func:`aimed_children`.
    min_bend_deg : triples bent less than this at their middle joint define no plane.
    min_height : nor do triples whose middle joint lies closer than this to the line
        through the other two: a finger's curl plane, through joints millimetres apart,
        turns by the placement error over that height.
    usable : optional (J,) bool, the joints a plane may pass through (the transfer
        leaves out joints no vertex is weighted to: placed from the surface around
        them alone, they are the least certain).

    Returns
    -------
    (J, 3) joint triples (-1 rows: the bone's roll follows no plane).
    """
    n = len(parents)
    chains = np.full((n, 2 * reach + 1), -1)
    for j in np.flatnonzero(aimed >= 0):
        chain = _chain(j, parents, aimed, reach)
        chains[j, :len(chain)] = chain
    triples = chains[:, np.array(list(combinations(range(2 * reach + 1), 3)))]  # (J, T, 3)
    joint = np.broadcast_to(np.arange(n)[:, None], triples.shape[:2])
    real = (triples >= 0).all(axis=2)
    if usable is not None:
        real &= np.where(triples >= 0, np.asarray(usable, dtype=bool)[triples], False).all(axis=2)
    joint, triples = joint[real], triples[real]
    normal, sine = _plane_normals(src_pos, triples)
    bone = unit(src_pos[aimed[joint]] - src_pos[joint])
    across = _across(normal, bone)
    local = unit(np.einsum("ka,kab->kb", across, src_rot[joint]))  # in the joint's frame
    height = _bend_height(src_pos, triples)
    ok = (sine >= np.sin(np.radians(min_bend_deg))) & (np.linalg.norm(across, axis=1) >= 0.5) \
        & (height >= min_height) & _on_axis(local, tolerance_deg)
    out = np.full((n, 3), -1)
    # per joint, the matching triple least tilted by a joint placed off: the one whose
    # middle joint lies furthest from the line through the other two
    k = np.flatnonzero(ok)
    k = k[np.lexsort((height[k], joint[k]))]
    last = np.r_[joint[k][1:] != joint[k][:-1], True][:len(k)]
    out[joint[k][last]] = triples[k][last]
    return out


def roll_axes(src_rot: np.ndarray, src_pos: np.ndarray, aimed: np.ndarray, axes: np.ndarray, *,
              tolerance_deg: float) -> np.ndarray:
    """The world axis that sets each bone's roll in the source, if any.

    Rigs oriented with a world "up" (Maya's *Orient Joint* with a secondary world axis,
    Blender's roll 0) keep one of a bone's local axes on a world axis seen across the
    bone.  A world axis sets the roll when its part across the bone, in the joint's
    frame, lies within ``tolerance_deg`` of a local axis (and is at least half its length).

    Parameters
    ----------
    src_rot, src_pos : (J, 3, 3), (J, 3) source world rotations and positions.
    aimed : (J,) :func:`aimed_children`.
    axes : (3, 3) the source's world axes as columns (in the frame of ``src_rot``).

    Returns
    -------
    (J, 3) bool: which axes (columns of ``axes``) set each bone's roll.  A bone lying in
    a world plane matches that plane's normal as well as its "up";
    :func:`orient_bones` then follows the one nearer Alg. 2's estimate.
    """
    out = np.zeros((len(aimed), 3), dtype=bool)
    j = np.flatnonzero(aimed >= 0)
    bone = unit(src_pos[aimed[j]] - src_pos[j])
    for k in range(3):
        across = _across(np.broadcast_to(axes[:, k], bone.shape), bone)
        local = unit(np.einsum("ja,jab->jb", across, src_rot[j]))
        out[j, k] = (np.linalg.norm(across, axis=1) >= 0.5) & _on_axis(local, tolerance_deg)
    return out


def _bend_height(pos: np.ndarray, triples: np.ndarray) -> np.ndarray:
    """(T,) distance of each triple's middle joint from the line through its outer two:
    how far a position error can tilt the triple's plane (by about error / height)."""
    ab = pos[triples[:, 1]] - pos[triples[:, 0]]
    bc = pos[triples[:, 2]] - pos[triples[:, 1]]
    span = np.linalg.norm(ab + bc, axis=1)
    return np.divide(np.linalg.norm(np.cross(ab, bc), axis=1), span, out=np.zeros(len(span)), where=span > 0)


def orient_bones(bind_rot, src_rot, src_pos, pos, *, parents, aimed, planes, axis=None, src_axes=None,
                 tgt_axes=None, min_bend_deg: float, max_roll_deg: float):
    """Target joint rotations: each bone aimed at its child, rolled to its world axis or
    plane; a leaf bone (no child) keeps its rotation relative to its parent, as in the
    source (the few vertices at a finger or toe tip, or a round eye, hold no rotation
    Alg. 2 can trust).

    Parameters
    ----------
    bind_rot : (J, 3, 3) first estimate (Alg. 2: Delta rotation times the source's).
    src_rot, src_pos : (J, 3, 3), (J, 3) source world rotations and positions (aligned
        to the target's frame).
    pos : (J, 3) placed target joints.
    parents : (J,) parent indices.
    aimed, planes : :func:`aimed_children` and :func:`roll_planes` of the source.
    axis, src_axes, tgt_axes : :func:`roll_axes` of the source (None: no bone follows a
        world axis), the source's world axes (3, 3) as columns and the target's that
        correspond to them (:func:`~asetransfer.geometry.rotations.nearest_axis_frame` of the alignment).  A bone on a
        world axis follows it rather than a plane; on several, the one that turns it least.
    min_bend_deg : a plane bent less than this in the target is ill-defined there; the
        bone keeps its estimated roll.
    max_roll_deg : nor is an axis or a plane followed when that turns the bone further
        than this from its estimate (the limb bends the other way: a rule that would flip
        the bone is not the one the rigger meant).

    Returns
    -------
    rot : (J, 3, 3) rotations; rolled : (J,) bool, the bones whose roll an axis or a plane set.
    """
    out = bind_rot.copy()
    j = np.flatnonzero(aimed >= 0)
    c = aimed[j]
    bone_local = np.einsum("jba,jb->ja", src_rot[j], src_pos[c] - src_pos[j])
    predicted = np.einsum("jab,jb->ja", bind_rot[j], bone_local)
    actual = pos[c] - pos[j]
    ok = (np.linalg.norm(actual, axis=1) > 0) & (np.linalg.norm(predicted, axis=1) > 0)
    j, bone_local = j[ok], bone_local[ok]
    out[j] = swing(predicted[ok], actual[ok]) @ bind_rot[j]
    rolled = np.zeros(len(aimed), dtype=bool)
    axis = np.zeros((len(aimed), 3), dtype=bool) if axis is None else axis
    turn = _roll_turns(out[j], j, bone_local, src_rot, src_pos, pos, aimed, planes, axis, src_axes, tgt_axes,
                       min_bend_deg)
    has = ~np.isnan(turn).all(axis=1)
    angle = np.zeros(len(j))
    angle[has] = np.take_along_axis(turn[has], np.nanargmin(np.abs(turn[has]), axis=1)[:, None], axis=1)[:, 0]
    use = has & (np.abs(angle) <= np.radians(max_roll_deg))
    bone = unit(np.einsum("jab,jb->ja", out[j[use]], bone_local[use]))
    out[j[use]] = rotation_about(bone, angle[use]) @ out[j[use]]
    rolled[j[use]] = True
    leaf = np.flatnonzero((parents >= 0) & (np.bincount(parents[parents >= 0], minlength=len(parents)) == 0))
    p = parents[leaf]
    out[leaf] = out[p] @ np.swapaxes(src_rot[p], 1, 2) @ src_rot[leaf]
    return out, rolled


def _roll_turns(rot, j, bone_local, src_rot, src_pos, pos, aimed, planes, axis, src_axes, tgt_axes,
                min_bend_deg: float) -> np.ndarray:
    """(K, 4) each aimed bone's turn (radians) about itself to each of its references: the
    three world axes it follows in the source (columns 0-2), then its plane (column 3, where
    the target's plane bends at least ``min_bend_deg``); NaN where it has no such reference.
    ``rot``: (K, 3, 3) the bones' aimed rotations; ``j``: their joints; the other arguments
    as :func:`orient_bones` takes them."""
    src_bone = unit(src_pos[aimed[j]] - src_pos[j])
    turn = np.full((len(j), 4), np.nan)
    for k in range(3 if axis.any() else 0):
        m = axis[j, k]
        turn[m, k] = _roll_angle(rot[m], src_rot[j[m]], bone_local[m], src_bone[m],
                                 np.broadcast_to(src_axes[:, k], (m.sum(), 3)),
                                 np.broadcast_to(tgt_axes[:, k], (m.sum(), 3)))
    m = ~axis[j].any(axis=1) & (planes[j, 0] >= 0)
    normal, sine = _plane_normals(pos, planes[j[m]])
    turn[m, 3] = np.where(sine >= np.sin(np.radians(min_bend_deg)), _roll_angle(
        rot[m], src_rot[j[m]], bone_local[m], src_bone[m], _plane_normals(src_pos, planes[j[m]])[0], normal),
        np.nan)
    return turn


def _roll_angle(rot, src_rot, bone_local, src_bone, src_ref, tgt_ref) -> np.ndarray:
    """(K,) the turn (radians) about each aimed bone (rotations ``rot``) that puts its
    reference direction (a plane normal or a world axis: ``src_ref`` in the source,
    ``tgt_ref`` in the target, (K, 3)) across it as in the source; NaN where the target's
    reference runs nearly along the bone."""
    bone = unit(np.einsum("jab,jb->ja", rot, bone_local))  # the bone axis as aimed
    local = np.einsum("jba,jb->ja", src_rot, unit(_across(src_ref, src_bone)))
    now = np.einsum("jab,jb->ja", rot, local)  # where the estimate puts the reference
    want = _across(tgt_ref, bone)
    angle = np.arctan2(np.einsum("ja,ja->j", np.cross(now, want), bone), np.einsum("ja,ja->j", now, want))
    return np.where(np.linalg.norm(want, axis=1) >= 0.5, angle, np.nan)
