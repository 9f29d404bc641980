"""Play a motion authored for the source skeleton on a transferred target (Tonoli §3.1).

Every target joint takes the local rotation its namesake has in the source motion
(:mod:`asetransfer.animation`).  The transfer copies the source's joint
orientations (spec Alg. 2), so the same local rotations give the same limb
directions (spec Fig. 3.10).  By default (``rest="source"``) the source's rest
rotations are carried along with the motion: the target is pose-normalised on the
fly (§3.3), whether or not its file stores the normalised rest pose, so a target
kept in its modelled pose (rest = bind, what Blender and game engines expect)
plays source motions exactly as a pose-normalised one does.  ``rest="target"``
applies the motion's rotations on top of the target's own rest pose instead, for
rigs whose rest pose already matches the source's.  The root's path is the
source's displacement from its rest position, turned into the target's frame and
scaled by the ratio of the root heights above the ground (Tonoli §3.1.4,
Eq. 3.21-3.22), so feet stay on the ground of a shorter or taller target.

:func:`bone_angles` measures the result: the angle between corresponding bone
directions of source and target, frame by frame.
"""
from __future__ import annotations

import numpy as np

from ..geometry.alignment import umeyama
from ..model.animation import Animation
from ..model.bvh import Bvh
from .motion import bvh_to_animation
from ..model.rig import Rig
from ..model.skeleton import Skeleton
from ..stages.skeleton import bone_alignment
from .calibration import SEGMENTS
from ..humanoid.body import body_frame, root_height  # noqa: F401  (body_frame: part of this module's API)
from ..model.roles import CENTRE_ROLES, SIDES

#: weight of the frame term in the per-joint bone alignment ``K`` (``frame_weight`` of
#: :func:`~asetransfer.stages.skeleton.bone_alignment`, the value skeleton transfer uses): small,
#: it only settles the twist about collinear child bones and barely moves the bones themselves
FRAME_WEIGHT = 1e-3


def frame_rotation(source: Rig, target: Rig) -> np.ndarray:
    """Rotation taking source world directions to target world directions: the rotation
    of the similarity best matching the bind joint positions (the skeletons as they sit
    in their meshes, whatever rest pose the files keep) of same-named joints."""
    ti = {n: i for i, n in enumerate(target.skeleton.names)}
    pairs = [(i, ti[n]) for i, n in enumerate(source.skeleton.names) if n in ti]
    if len(pairs) < 3:
        return np.eye(3)
    s, t = np.array(pairs).T
    return umeyama(source.skeleton.bind_world[s, :3, 3], target.skeleton.bind_world[t, :3, 3]).rotation


def _bone_alignment(source: Skeleton, target: Skeleton, match: np.ndarray) -> np.ndarray:
    """:func:`~asetransfer.skeleton_transfer.bone_alignment` of ``target``'s joints from the
    rest offsets of same-named bones (a target bone counts when the source has it too)."""
    def offsets(sk):
        parent_scale = np.where(sk.parents[:, None] >= 0, sk.scale[sk.parents], 1.0)
        return parent_scale * sk.translation  # in the parent's rotated frame
    src = np.full((target.n_joints, 3), np.nan)
    tp = target.parents
    same = (match >= 0) & (tp >= 0)
    same[same] = (match[tp[same]] >= 0) & (source.parents[match[same]] == match[tp[same]])
    src[same] = offsets(source)[match[same]]
    return bone_alignment(tp, src, offsets(target), frame_weight=FRAME_WEIGHT)


def retarget(source_motion: Animation, source: Rig, target: Rig, rest: str = "source"):
    """``source_motion`` (on ``source``'s skeleton) played on ``target``.

    Joints are matched by name; target joints the source lacks keep their rest pose.
    ``rest``: ``"source"`` (default) gives every matched joint the source's whole local
    rotation, rest included: ``R_t M_t = K_p^T R_s M_s K_j`` with ``R = orient @ rest
    rotation`` and ``K`` the per-joint turn that best aligns the joint's bones with the
    source's (:func:`~asetransfer.skeleton_transfer.bone_alignment`; ``K_p`` is the frame
    rotation ``A`` for the root), i.e. the target's rest pose is normalised to the
    source's (§3.3) as the motion is applied; ``"target"`` copies only the motion's
    rotations, ``M_t = M_s``, on top of the target's own rest pose.

    Returns
    -------
    animation : :class:`Animation` on ``target``'s skeleton.
    report : dict: ``matched`` joints, ``rest``, ``root_ratio`` (h_target / h_source), the
        two root heights (the target's in the pose the motion starts from), and
        ``frame_rotation`` (source -> target world, 3x3).
    """
    if rest not in ("source", "target"):
        raise ValueError(f"rest must be 'source' or 'target', not {rest!r}")
    ss, ts = source.skeleton, target.skeleton
    si = {n: i for i, n in enumerate(ss.names)}
    match = np.array([si.get(n, -1) for n in ts.names])
    tj, sj = np.flatnonzero(match >= 0), match[match >= 0]
    nf = source_motion.n_frames
    A = frame_rotation(source, target)
    start = np.tile(np.eye(3), (ts.n_joints, 1, 1))  # the pose the motion starts from, in rest frames
    K = start.copy()
    if rest == "source":
        # local rotation K_p^T (R_s M) K_j (the root's turned by A): in every frame the world
        # rotations are the source's times K (:func:`bone_alignment`), so bones point alike
        K = _bone_alignment(ss, ts, match)
        parent = ts.parents[tj]
        left = np.where(parent[:, None, None] >= 0, np.swapaxes(K[parent], 1, 2), A)
        start[tj] = np.swapaxes(ts.rest_rotation_local()[tj], 1, 2) @ left @ ss.rest_rotation_local()[sj] @ K[tj]
    rot = np.tile(start, (nf, 1, 1, 1))
    rot[:, tj] = start[tj] @ np.swapaxes(K[tj], 1, 2) @ source_motion.rotations[:, sj] @ K[tj]
    trans = np.tile(ts.translation, (nf, 1, 1))
    h_s = root_height(source)
    h_t = root_height(target, Animation(start[None], ts.translation[None], 1.0).world(ts)[0])
    ratio = h_t / h_s if h_s > 0 else 1.0
    for r in ts.roots():
        i = match[r]
        if i >= 0 and ss.parents[i] < 0:
            d = source_motion.translations[:, i] - ss.translation[i]  # source world displacement
            trans[:, r] = ts.translation[r] + ratio * d @ A.T
    report = {"matched": int((match >= 0).sum()), "target_joints": int(ts.n_joints), "rest": rest,
              "source_root_height": h_s, "target_root_height": h_t, "root_ratio": ratio,
              "frame_rotation": [[float(x) for x in row] for row in A]}
    return Animation(rot, trans, source_motion.frame_time), report


def retarget_bvh(motion: Bvh, source: Rig, target: Rig, path=None, rest: str = "source"):
    """A BVH motion authored for ``source`` played on ``target``: ``(animation, report)``."""
    src_anim, bvh_report = bvh_to_animation(motion, source.skeleton, path=path)
    anim, report = retarget(src_anim, source, target, rest)
    report["bvh"] = bvh_report
    return anim, report


def bone_angles(source_world: np.ndarray, target_world: np.ndarray, bones, rotation=None) -> np.ndarray:
    """(F, B) angles in degrees between corresponding bone directions.

    Parameters
    ----------
    source_world, target_world : (F, J, 4, 4) posed joint world matrices.
    bones : (B, 4) rows ``(source_from, source_to, target_from, target_to)`` joint indices;
        a bone's direction is ``to - from``.
    rotation : source -> target world rotation (default identity).
    """
    b = np.asarray(bones, dtype=np.int64).reshape(-1, 4)
    ps, pt = source_world[..., :3, 3], target_world[..., :3, 3]
    ds = ps[:, b[:, 1]] - ps[:, b[:, 0]]
    if rotation is not None:
        ds = ds @ np.asarray(rotation).T
    dt = pt[:, b[:, 3]] - pt[:, b[:, 2]]
    cos = np.einsum("fbi,fbi->fb", ds, dt) / (np.linalg.norm(ds, axis=2) * np.linalg.norm(dt, axis=2))
    return np.degrees(np.arccos(np.clip(cos, -1.0, 1.0)))


def skeleton_bones(source: Rig, target: Rig, min_length: float = 1e-6) -> np.ndarray:
    """(B, 4) every bone (parent -> joint) both skeletons have, by joint names, longer than
    ``min_length`` times the source's height in both rest poses."""
    ti = {n: i for i, n in enumerate(target.skeleton.names)}
    ss, ts = source.skeleton, target.skeleton
    ps, pt = ss.rest_world()[:, :3, 3], ts.rest_world()[:, :3, 3]
    size = float(np.ptp(source.mesh.vertices, axis=0).max())
    out = []
    for j, n in enumerate(ss.names):
        p = ss.parents[j]
        if p < 0 or n not in ti or ss.names[p] not in ti:
            continue
        a, b = ti[ss.names[p]], ti[n]
        if min(np.linalg.norm(ps[j] - ps[p]), np.linalg.norm(pt[b] - pt[a])) > min_length * size:
            out.append((p, j, a, b))
    return np.array(out, dtype=np.int64).reshape(-1, 4)


def map_bones(source: Rig, target: Rig, mapping: dict) -> tuple:
    """Names and (B, 4) joint indices of the limb and spine segments between mapped joints
    (Tonoli Table 3.2 plus hands and feet): the bones a retargeter aligns."""
    si = {n: i for i, n in enumerate(source.skeleton.names)}
    ti = {n: i for i, n in enumerate(target.skeleton.names)}
    segs = list(SEGMENTS) + [("hand", "wrist", "mid_hand"), ("foot", "ankle", "toe"), ("head", "neck", "head")]
    names, rows = [], []
    for name, a, b in segs:
        sided = a not in CENTRE_ROLES or b not in CENTRE_ROLES
        for s in (SIDES if sided else (None,)):
            ra, rb = (r if r in CENTRE_ROLES or s is None else f"{r}_{s}" for r in (a, b))
            ja, jb = mapping.get(ra), mapping.get(rb)
            if ja in si and jb in si and ja in ti and jb in ti and ja != jb:
                names.append(name + ({"l": ".L", "r": ".R"}[s] if sided else ""))
                rows.append((si[ja], si[jb], ti[ja], ti[jb]))
    return names, np.array(rows, dtype=np.int64).reshape(-1, 4)
