"""Skeleton transfer (spec Ch. 3): positions, spine, mirroring, orientation, pose normalisation.

Reads top to bottom: joint positions (EM or PA) -> spine alignment -> mirroring ->
orientation copy with Delta rotations (Alg. 2) -> bind and (pose-normalised) rest pose.
Everything happens in the target's frame: the source is first moved there by the
marker similarity of the correspondence.
"""
from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree

from ..config import SkeletonConfig
from .correspondence import Correspondence
from .joints import delta_rotations, joint_positions_em, joint_positions_pa, procrustes_transforms
from ..model.mesh import Mesh
from ..model.rig import Rig
from ..model.skeleton import Skeleton
from ..geometry.rotations import swing
from ..geometry.surface import SurfaceIndex
from ..geometry.symmetry import estimate_symmetry_plane, normalize_plane, plane_from_pairs, reflect
from ..humanoid.naming import lr_pairs, spine_chain
from ..model.transforms import closest_rotation


def coincident_joints(positions: np.ndarray, tolerance: float) -> np.ndarray:
    """(J,) group label of every joint: joints closer than ``tolerance`` to one another
    (transitively) share a label; the label is the group's lowest joint index."""
    pairs = cKDTree(positions).query_pairs(tolerance, output_type="ndarray")
    n = len(positions)
    graph = sp.coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(n, n)) if len(pairs) \
        else sp.coo_matrix((n, n))
    _, comp = connected_components(graph, directed=False)
    first = np.full(comp.max() + 1, n)
    np.minimum.at(first, comp, np.arange(n))
    return first[comp]


def place_coincident(method: str, label, source, target, weights, positions, joints, omega, unit, threshold,
                     rays: dict):
    """Joints that share a position in the source share one in the target: the group is
    placed by Eq. 3.1-3.2 (``em``) or one similarity (``pa``) over the union of its members'
    weighted vertices, weights summed per vertex (as the spine cloud of Alg. 1); a group
    with no weighted vertex takes its members' mean."""
    groups = np.flatnonzero(np.bincount(label, minlength=len(label)) > 1)
    out = positions.copy()
    if not len(groups):
        return out
    column = np.full(len(label), len(groups))  # joint -> its group's column (the last: no group)
    column[np.isin(label, groups)] = np.searchsorted(groups, label[np.isin(label, groups)])
    member = sp.csr_matrix((np.ones(len(label)), (np.arange(len(label)), column)),
                           shape=(len(label), len(groups) + 1))[:, :len(groups)]
    summed = (sp.csr_matrix(weights) @ member).tocsc()
    if method == "em":
        if not rays.get("ray_share") and (np.diff(summed.indptr) > 0).all():
            rays = {}  # every group has weighted vertices and the hits get no share: no rays to cast
        new, ok = joint_positions_em(source, target, summed, joints[groups], omega, unit, **rays)
    else:
        s, r, mu_s, mu_t, ok = procrustes_transforms(source, target, summed, threshold)
        new = s[:, None] * np.einsum("gab,gb->ga", r, joints[groups] - mu_s) + mu_t
    for g, j in enumerate(groups):
        out[label == j] = new[g] if ok[g] else positions[label == j].mean(axis=0)
    return out


def align_spine(method: str, source, target, weights, positions, joints, spine, normal,
                omega=(1000.0, 1.0, 10.0), unit: float = 1.0, threshold: float = 0.01):
    """Spine alignment (spec §3.1.3, Table 3.1 / Alg. 1): new lateral coordinates of the spine.

    The spine joints share one point cloud, the union of their weighted vertices with
    the weights summed per vertex (Alg. 1).  ``em``: Eq. 3.1 per spine joint over that
    cloud, keeping only the lateral coordinate (Eq. 3.3).  ``pa``: one similarity for
    the cloud applied to every spine joint, lateral coordinate kept.
    """
    summed = sp.csr_matrix(weights[:, spine].sum(axis=1))
    if method == "em":
        cols = sp.hstack([summed] * len(spine)).tocsc()
        new, _ = joint_positions_em(source, target, cols, joints[spine], omega, unit)
    else:
        s, r, mu_s, mu_t, valid = procrustes_transforms(source, target, summed, threshold)
        if not valid[0]:
            return positions
        new = s[0] * (joints[spine] - mu_s[0]) @ r[0].T + mu_t[0]
    out = positions.copy()
    out[spine] += ((new - positions[spine]) @ normal)[:, None] * normal
    return out


def mirror_joints(positions, pairs, midline, plane):
    """Spec §3.1.4: each pair becomes the average of one side and the mirror of the other;
    midline (spine) joints are projected onto the plane."""
    out = positions.copy()
    if pairs:
        left, right = np.array(pairs).T
        new_left = 0.5 * (positions[left] + reflect(positions[right], plane))
        out[left], out[right] = new_left, reflect(new_left, plane)
    if len(midline):
        out[midline] = positions[midline] - (positions[midline] @ plane[:3] - plane[3])[:, None] * plane[:3]
    return out


def _group_mean(positions, label):
    total = np.zeros_like(positions)
    np.add.at(total, label, positions)
    return (total / np.bincount(label, minlength=len(label))[:, None].clip(1))[label]


def _asymmetry(positions, pairs, plane):
    if not pairs:
        return 0.0
    left, right = np.array(pairs).T
    return float(np.linalg.norm(positions[left] - reflect(positions[right], plane), axis=1).max())


def aim_single_children(bind_rot, src_rot, src_pos, pos, parents, label=None):
    """Turn each joint with exactly one child so its bone points at that child.

    The Delta rotation of Alg. 2 comes from the joint's vertex cloud; it can leave the
    bone axis a few degrees off the placed child joint.  The smallest extra rotation
    (a swing, keeping the twist) fixes the limb direction, which is what a motion
    played on the rig reproduces.  With ``label`` (:func:`coincident_joints`),
    children that share one position count as one (hips -> spine and both pelvis
    joints starting at the same point).
    """
    out = bind_rot.copy()
    n = len(parents)
    label = np.arange(n) if label is None else label
    has = np.flatnonzero(parents >= 0)
    # distinct child positions per joint: unique (parent, child label) pairs
    distinct = np.unique(np.stack([parents[has], label[has]], axis=1), axis=0)
    child_count = np.bincount(distinct[:, 0], minlength=n)
    only = np.flatnonzero(child_count == 1)
    if not len(only):
        return out
    child = np.full(n, -1)
    child[parents[has]] = has  # a child of each joint (any one of those sharing the position)
    c = child[only]
    bone_local = np.einsum("jba,jb->ja", src_rot[only], src_pos[c] - src_pos[only])
    predicted = np.einsum("jab,jb->ja", bind_rot[only], bone_local)
    actual = pos[c] - pos[only]
    ok = (np.linalg.norm(actual, axis=1) > 0) & (np.linalg.norm(predicted, axis=1) > 0)
    out[only[ok]] = swing(predicted[ok], actual[ok]) @ bind_rot[only[ok]]
    return out


def bone_alignment(parents: np.ndarray, source_offsets: np.ndarray, target_offsets: np.ndarray,
                   frame_weight: float = 1e-3) -> np.ndarray:
    """Per joint, the rotation ``K`` that best turns its target bones onto the source's (§3.3).

    Pose normalisation gives every target joint the source's rotation; a joint's
    outgoing bones then point as in the source only if their offsets, in the joint's
    frame, point as the source's do.  That holds for a joint with one child (aimed at
    it) but not for one with several (hips -> spine and both thighs) once proportions
    change.  ``K_j`` minimises ``sum_c |K a_c - b_c|^2 + frame_weight sum_k |K e_k - e_k|^2``
    over the unit child offsets ``a_c`` (target) and ``b_c`` (source) in the joint's
    frame (Kabsch); the small frame term only settles the twist about collinear
    children.  A joint with one bone takes the smallest turn onto it, and ``K = I``
    for a joint whose bones already match or that has none.

    Parameters
    ----------
    parents : (J,) parent indices.
    source_offsets, target_offsets : (J, 3) each joint's offset in its parent's frame;
        rows with a NaN or a zero length are left out.

    Returns
    -------
    (J, 3, 3) rotations ``K``.
    """
    a = np.asarray(target_offsets, dtype=np.float64)
    b = np.asarray(source_offsets, dtype=np.float64)
    la, lb = np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=1)
    ok = (parents >= 0) & np.isfinite(la) & np.isfinite(lb) & (la > 0) & (lb > 0)
    c = np.flatnonzero(ok)
    M = np.broadcast_to(frame_weight * np.eye(3), (len(parents), 3, 3)).copy()
    np.add.at(M, parents[c], (b[c] / lb[c, None])[:, :, None] * (a[c] / la[c, None])[:, None, :])
    K = np.broadcast_to(np.eye(3), M.shape).copy()
    count = np.bincount(parents[c], minlength=len(parents))
    K[count > 1] = closest_rotation(M[count > 1])
    one = c[count[parents[c]] == 1]
    K[parents[one]] = swing(a[one], b[one])  # one bone: the smallest turn onto it, exactly
    return K


def _rest_pose(bind_rot, positions, parents, rest_rot):
    """Local rest transforms that keep the bind-pose bone offsets (in the parent's bind
    frame) but take the world rotations ``rest_rot``."""
    n = len(parents)
    translation = np.empty((n, 3))
    local_rot = np.empty((n, 3, 3))
    for j in range(n):
        p = parents[j]
        if p < 0:
            translation[j], local_rot[j] = positions[j], rest_rot[j]
        else:
            translation[j] = bind_rot[p].T @ (positions[j] - positions[p])
            local_rot[j] = rest_rot[p].T @ rest_rot[j]
    return translation, local_rot


def transfer_skeleton(source: Rig, target: Mesh, corr: Correspondence, cfg: SkeletonConfig | None = None):
    """The source skeleton placed and oriented inside ``target``.

    Returns
    -------
    skeleton : :class:`Skeleton` with ``bind_world`` = the joints inside the target as
        modelled and the rest pose = the bind pose rotated by the inverse Delta
        rotations (§3.3) when ``pose_normalize`` (else rest = bind).
    report : dict (JSON-ready).
    """
    cfg = cfg or SkeletonConfig()
    t0 = time.perf_counter()
    sk = source.skeleton
    names, parents = sk.names, sk.parents
    al = corr.alignment
    V = al.apply(source.mesh.vertices)
    P = corr.source_to_target.positions(target.vertices, target.faces)
    J = al.apply(sk.bind_world[:, :3, 3])
    W = source.skin.to_sparse().tocsc()
    height = float(np.ptp(target.bounds(), axis=0).max())
    unit = cfg.em_unit * height
    report = {"joints": cfg.joints}
    timings = {}

    # 1. positions (§3.1.1 / §3.1.2); EM cannot place joints without weighted vertices
    pa_pos, pa_fallback = joint_positions_pa(V, P, W, J, parents, cfg.pa_threshold)
    rays = {"faces": source.mesh.faces, "ray_share": cfg.em_ray_share, "n_rays": cfg.em_rays} if cfg.em_rays else {}
    if cfg.joints == "em":
        pos, placed = joint_positions_em(V, P, W, J, cfg.omega, unit, **rays)
        pos[~placed] = pa_pos[~placed]
        fallback = ~placed
    else:
        pos, fallback = pa_pos, pa_fallback
    label = coincident_joints(J, cfg.coincident_tolerance * float(np.ptp(J, axis=0).max()))
    if cfg.keep_coincident:
        rays = rays if cfg.joints == "em" else {}
        pos = place_coincident(cfg.joints, label, V, P, W, pos, J, cfg.omega, unit, cfg.pa_threshold, rays)
    report["fallback_joints"] = [names[j] for j in np.flatnonzero(fallback)]
    report["coincident_groups"] = int((np.bincount(label) > 1).sum()) if cfg.keep_coincident else 0
    timings["positions"] = time.perf_counter() - t0

    # 2. symmetry plane, spine alignment (§3.1.3), mirroring (§3.1.4)
    t = time.perf_counter()
    pairs = lr_pairs(names)
    if cfg.spine_joints:
        spine = np.array([sk.index(n) for n in cfg.spine_joints], dtype=np.int64)
    else:
        spine = spine_chain(names, parents)
    plane, symmetric = None, False
    if cfg.symmetry_plane is not None:
        plane, symmetric = normalize_plane(cfg.symmetry_plane), True
    elif pairs and plane_from_pairs(pos, pairs) is not None:
        index = SurfaceIndex(target.vertices, target.faces)
        plane = estimate_symmetry_plane(target.vertices, target.faces, plane_from_pairs(pos, pairs), index=index)
        _, _, dist, _ = index.closest(reflect(target.vertices, plane))  # how well the target mirrors
        symmetric = bool(np.median(dist) <= cfg.symmetric_tolerance * height)
    if plane is not None and cfg.spine != "off" and len(spine):
        pos = align_spine(cfg.spine, V, P, W, pos, J, spine, plane[:3], cfg.omega, unit, cfg.pa_threshold)
    asym_before = _asymmetry(pos, pairs, plane) if plane is not None else None
    mirrored = plane is not None and (cfg.mirror == "on" or (cfg.mirror == "auto" and symmetric))
    if mirrored:
        pos = mirror_joints(pos, pairs, spine, plane)
    if cfg.keep_coincident:  # spine alignment and mirroring move members apart: join them again
        pos = _group_mean(pos, label)
    report.update({
        "symmetry_plane": None if plane is None else [float(x) for x in plane],
        "target_symmetric": symmetric, "mirrored": mirrored, "lr_pairs": len(pairs),
        "spine": [names[j] for j in spine], "spine_alignment": cfg.spine if len(spine) else "off",
        "asymmetry_before_mirroring": asym_before,
        "asymmetry": _asymmetry(pos, pairs, plane) if plane is not None else None})
    timings["spine_mirror"] = time.perf_counter() - t

    # 3. orientation: copy + Delta rotations (§3.2, Alg. 2); 4. pose normalisation (§3.3)
    t = time.perf_counter()
    C = delta_rotations(V, P, W, parents)
    src_rot = al.rotation @ closest_rotation(sk.bind_world[:, :3, :3])
    bind_rot = aim_single_children(C @ src_rot, src_rot, J, pos, parents, label if cfg.keep_coincident else None)
    bind_world = np.tile(np.eye(4), (len(names), 1, 1))
    bind_world[:, :3, :3], bind_world[:, :3, 3] = bind_rot, pos
    if cfg.pose_normalize:  # the source's rotations, turned so that every joint's bones match (§3.3)
        parent_rot = np.where(parents[:, None, None] >= 0, bind_rot[parents], np.eye(3))
        src_parent = np.where(parents[:, None, None] >= 0, src_rot[parents], np.eye(3))
        target_off = np.einsum("jba,jb->ja", parent_rot, pos - pos[parents])
        source_off = np.einsum("jba,jb->ja", src_parent, J - J[parents])
        rest_rot = src_rot @ bone_alignment(parents, source_off, target_off)
    else:
        rest_rot = bind_rot
    translation, local_rot = _rest_pose(bind_rot, pos, parents, rest_rot)
    orient = sk.orient.copy()
    rotation = np.swapaxes(orient, 1, 2) @ local_rot
    skeleton = Skeleton(names, parents, translation, orient, rotation, np.ones((len(names), 3)), bind_world)
    delta = np.degrees(np.arccos(np.clip((np.trace(C, axis1=1, axis2=2) - 1) / 2, -1, 1)))
    report["delta_rotation_deg"] = {"mean": float(delta.mean()), "max": float(delta.max()),
                                    "max_joint": names[int(np.argmax(delta))]}
    report["pose_normalized"] = cfg.pose_normalize
    timings["orientation"] = time.perf_counter() - t
    timings["total"] = time.perf_counter() - t0
    report["timings"] = timings
    return skeleton, report
