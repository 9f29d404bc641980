"""Skeleton transfer (spec Ch. 3): positions, spine, mirroring, orientation, pose normalisation.

Reads top to bottom: joint positions (EM or PA) -> spine alignment -> mirroring ->
orientation copy with Delta rotations (Alg. 2) -> bind and (pose-normalised) rest pose.
Everything happens in the target's frame: the source is first moved there by the
marker similarity of the correspondence.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..config import SkeletonConfig
from ..model.correspondence import Correspondence
from .joints import (SurfaceRays, blend_weights, delta_rotations, fitted_weights, joint_positions_em,
                     joint_positions_pa, procrustes_transforms, rigid_vertices)
from .ground import grounded_roots
from .quality import between_pieces, inside
from .orientation import aimed_children, orient_bones, roll_axes, roll_planes
from ..model.mesh import Mesh
from ..model.report import DeltaRotation, SkeletonReport, SkeletonTimings, Stopwatch
from ..model.rig import Rig
from ..model.skeleton import Skeleton
from ..geometry.rotations import nearest_axis_frame, swing
from ..geometry.interior import depth_and_chord, moved_inside
from ..geometry.surface import closest_points, surface_index
from ..geometry.topology import components, vertex_areas, vertex_pieces
from ..geometry.symmetry import estimate_symmetry_plane, normalize_plane, plane_from_pairs, reflect
from ..humanoid.bones import side_pairs, spine_joints
from ..model.transforms import closest_rotation


#: skeletons up to this many joints are searched for coincident joints pair by pair
COINCIDENT_DIRECT = 2000


def coincident_joints(positions: np.ndarray, tolerance: float) -> np.ndarray:
    """(J,) group label of every joint: joints closer than ``tolerance`` to one another
    (transitively) share a label; the label is the group's lowest joint index."""
    n = len(positions)
    if n <= COINCIDENT_DIRECT:  # every pair at once: no k-d tree (nor SciPy's spatial import) for a skeleton
        p = np.asarray(positions, dtype=np.float64)
        i, j = np.triu_indices(n, k=1)
        pairs = np.stack([i, j], axis=1)[np.linalg.norm(p[i] - p[j], axis=1) <= tolerance]
    else:
        from scipy.spatial import cKDTree

        pairs = cKDTree(positions).query_pairs(tolerance, output_type="ndarray")
    comp = components(n, pairs[:, 0], pairs[:, 1])
    first = np.full(comp.max() + 1, n)
    np.minimum.at(first, comp, np.arange(n))
    return first[comp]


@dataclass(frozen=True)
class SkinnedCloud:
    """The source as the joint fits see it, in the target's frame (Eq. 3.1-3.2, §3.1.2)."""

    source: np.ndarray        # (N, 3) source vertices, moved by the marker similarity
    target: np.ndarray        # (N, 3) their corresponding target points
    weights: sp.csc_matrix    # (N, J) skin weights
    joints: np.ndarray        # (J, 3) source joint positions, moved by the marker similarity
    # (N, J) the weights the joint positions are fitted from (:func:`_fit_weights`); the
    # symmetry test and the orientations read ``weights``
    fit: sp.csc_matrix | None = None

    def fit_weights(self) -> sp.csc_matrix:
        """(N, J) the weights the joint positions are fitted from."""
        return self.weights if self.fit is None else self.fit


def place_coincident(cloud: SkinnedCloud, positions, label, *, method: str, omega, unit: float,
                     threshold: float, rays: SurfaceRays | None):
    """Joints that share a position in the source share one in the target: the group is
    placed by Eq. 3.1-3.2 (``em``) or one similarity (``pa``) over the union of its members'
    weighted vertices, weights summed per vertex (as the spine cloud of Alg. 1); a group
    with no weighted vertex takes its members' mean.

    Parameters
    ----------
    positions : (J, 3) joint positions so far; label : (J,) :func:`coincident_joints`.
    omega, unit, rays : of :func:`joint_positions_em`; threshold : of :func:`procrustes_transforms`.
    """
    groups = np.flatnonzero(np.bincount(label, minlength=len(label)) > 1)
    out = positions.copy()
    if not len(groups):
        return out
    column = np.full(len(label), len(groups))  # joint -> its group's column (the last: no group)
    column[np.isin(label, groups)] = np.searchsorted(groups, label[np.isin(label, groups)])
    member = sp.csr_matrix((np.ones(len(label)), (np.arange(len(label)), column)),
                           shape=(len(label), len(groups) + 1))[:, :len(groups)]
    summed = (sp.csr_matrix(cloud.fit_weights()) @ member).tocsc()
    joints = cloud.joints[groups]
    if method == "em":
        if rays is not None and not rays.share and (np.diff(summed.indptr) > 0).all():
            rays = None  # every group has weighted vertices and the hits get no share: no rays to cast
        new, ok = joint_positions_em(cloud.source, cloud.target, summed, joints, omega=omega, unit=unit, rays=rays)
    else:
        s, r, mu_s, mu_t, ok = procrustes_transforms(cloud.source, cloud.target, summed, threshold)
        new = s[:, None] * np.einsum("gab,gb->ga", r, joints - mu_s) + mu_t
    for g, j in enumerate(groups):
        out[label == j] = new[g] if ok[g] else positions[label == j].mean(axis=0)
    return out


def align_spine(cloud: SkinnedCloud, positions, spine, normal, *, method: str, omega, unit: float,
                threshold: float):
    """Spine alignment (spec §3.1.3, Table 3.1 / Alg. 1): new lateral coordinates of the spine.

    The spine joints share one point cloud, the union of their weighted vertices with
    the weights summed per vertex (Alg. 1).  ``em``: Eq. 3.1 per spine joint over that
    cloud, keeping only the lateral coordinate (Eq. 3.3).  ``pa``: one similarity for
    the cloud applied to every spine joint, lateral coordinate kept.

    Parameters
    ----------
    positions : (J, 3) joint positions so far; spine : (S,) joint indices root..head;
    normal : (3,) unit normal of the symmetry plane (the lateral direction).
    """
    summed = sp.csr_matrix(cloud.fit_weights()[:, spine].sum(axis=1))
    if method == "em":
        cols = sp.hstack([summed] * len(spine)).tocsc()
        new, _ = joint_positions_em(cloud.source, cloud.target, cols, cloud.joints[spine], omega=omega, unit=unit)
    else:
        s, r, mu_s, mu_t, valid = procrustes_transforms(cloud.source, cloud.target, summed, threshold)
        if not valid[0]:
            return positions
        new = s[0] * (cloud.joints[spine] - mu_s[0]) @ r[0].T + mu_t[0]
    out = positions.copy()
    out[spine] += ((new - positions[spine]) @ normal)[:, None] * normal
    return out


def asymmetric_pairs(cloud: SkinnedCloud, pairs, plane, tolerance: float, skeleton: Skeleton) -> np.ndarray:
    """(P,) True for the L/R pairs whose surface is not a mirror image (beyond spec §3.1.4).

    A pair's surface is where its joints' weights carry it in the target: the
    weight-averaged target points of the left joint are compared with the mirror of the
    right joint's.  Farther apart than ``tolerance``, the body itself is asymmetric
    there (one shoulder higher, a raised arm) and mirroring would push the joints off
    the surface that placed them.  A pair without weights follows its parent pair.
    """
    out = np.zeros(len(pairs), dtype=bool)
    if not pairs:
        return out
    w = cloud.weights
    mass = np.asarray(w.sum(axis=0)).ravel()
    centre = np.asarray((w.T @ cloud.target)) / np.where(mass > 0, mass, 1.0)[:, None]
    parents, depth = skeleton.parents, skeleton.hierarchy.depth()
    pair_of = {j: k for k, pair in enumerate(pairs) for j in pair}
    order = sorted(range(len(pairs)), key=lambda k: depth[pairs[k][0]])  # parent pairs first
    for k in order:
        left, right = pairs[k]
        if mass[left] > 0 and mass[right] > 0:
            out[k] = np.linalg.norm(centre[left] - reflect(centre[right][None], plane)[0]) > tolerance
        elif parents[left] in pair_of:
            out[k] = out[pair_of[parents[left]]]
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


def transfer_skeleton(source: Rig, target: Mesh, corr: Correspondence, cfg: SkeletonConfig | None = None, *,
                      rest_source=None):
    """The source skeleton placed and oriented inside ``target``.

    ``rest_source`` is the skeleton whose bind pose a normalised rest pose aims for
    (§3.3; default ``source.skeleton``): a source posed to match the target
    (:mod:`~asetransfer.stages.pose`) is fitted, but the rest pose stays the source's own.

    Returns
    -------
    skeleton : :class:`Skeleton` with ``bind_world`` = the joints inside the target as
        modelled and the rest pose = the bind pose rotated by the inverse Delta
        rotations (§3.3) when ``pose_normalize`` (else rest = bind).
    report : :class:`~asetransfer.model.report.SkeletonReport`.
    """
    cfg = cfg or SkeletonConfig()
    watch = Stopwatch()
    sk = source.skeleton
    al = corr.alignment
    report = SkeletonReport(joints=cfg.joints)
    with watch.timed("positions"):
        cloud, height, size = _skinned_cloud(source, target, corr, cfg)
        unit = cfg.em_unit * height
        pos, label = _joint_positions(cloud, source, target, cfg, unit, size, report)
        pos, report.grounded_joints = grounded_roots(cloud, pos, sk, target, al.apply(np.zeros((1, 3)))[0],
                                                     al.rotation[:, 1], cfg.ground_tolerance * height)
    with watch.timed("spine_mirror"):
        pos = _spine_and_mirror(cloud, pos, label, sk=sk, target=target, cfg=cfg, unit=unit, height=height,
                                report=report)
        grounded = np.isin(sk.names, report.grounded_joints)  # on the floor, not in the body
        pos, report.moved_inside = _kept_inside(cloud, source, target, pos, cfg, height, grounded, corr.target_solved)
    with watch.timed("orientation"):
        rest = (rest_source or sk).bind_world
        skeleton, C, rolled = _oriented_skeleton(
            cloud, pos, sk, alignment_rotation=al.rotation, label=label if cfg.keep_coincident else None, cfg=cfg,
            size=size, rest=(al.rotation @ closest_rotation(rest[:, :3, :3]), al.apply(rest[:, :3, 3])))
        report.bones_rolled = [sk.names[j] for j in np.flatnonzero(rolled)]
        delta = np.degrees(np.arccos(np.clip((np.trace(C, axis1=1, axis2=2) - 1) / 2, -1, 1)))
        report.delta_rotation_deg = DeltaRotation(float(delta.mean()), float(delta.max()),
                                                  sk.names[int(np.argmax(delta))])
        report.pose_normalized = cfg.pose_normalize
    report.timings = SkeletonTimings(**watch.laps, total=watch.elapsed())
    return skeleton, report


def _skinned_cloud(source: Rig, target: Mesh, corr: Correspondence, cfg: SkeletonConfig):
    """The source as the joint fits see it (:class:`SkinnedCloud`), moved into the target's
    frame by the marker similarity, with the body's height (layers and props, a hair cap or
    a sword, do not scale the fits) and the skeleton's size along the source's axes (the
    same however the target is turned).

    Returns
    -------
    cloud : :class:`SkinnedCloud`; height : float; size : float, the longest side of the
    box around the moved source joints.
    """
    al = corr.alignment
    height = float(corr.body_extent(target.vertices).max())
    moved = al.apply(source.mesh.vertices)
    weights = source.skin.to_sparse()
    cloud = SkinnedCloud(source=moved, target=corr.source_to_target.positions(target.vertices, target.faces),
                         weights=weights.tocsc(), joints=al.apply(source.skeleton.bind_world[:, :3, 3]),
                         fit=_fit_weights(moved, source.mesh.faces, weights, corr.source_solved, cfg, height))
    size = float(np.ptp(cloud.joints @ al.rotation, axis=0).max())
    return cloud, height, size


def _fit_weights(moved: np.ndarray, faces: np.ndarray, weights: sp.spmatrix, solved: np.ndarray | None,
                 cfg: SkeletonConfig, height: float) -> sp.csc_matrix:
    """The skin weights the joint fits see: the source's, without the vertices that only
    rode along (:func:`~asetransfer.stages.joints.fitted_weights`), with rigidly weighted
    pieces blended across their gaps (:func:`~asetransfer.stages.joints.blend_weights`,
    ``rigid_blend``).

    Parameters
    ----------
    moved : (N, 3) source vertices in the target's frame; faces : (F, 3) the source's
    triangles; weights : (N, J) its skin weights; solved : (N,) bool fitted vertices
    (None: all); height : the body's height (the blend's width is a fraction of it).

    Returns
    -------
    (N, J) csc weights.
    """
    w = sp.csr_matrix(weights)
    fitted = np.ones(len(moved), bool) if solved is None else np.asarray(solved, dtype=bool)
    if cfg.rigid_blend > 0:
        # pieces of the welded mesh: split UV seams do not make islands of a smooth body rigid
        rigid = rigid_vertices(vertex_pieces(moved, faces), w, cfg.rigid_tolerance)
        rows = np.flatnonzero(rigid & fitted)
        if len(rows):
            w = blend_weights(moved, w, vertex_areas(moved, faces), rows, np.flatnonzero(fitted),
                              cfg.rigid_blend * height, cfg.rigid_blend_reach)
    return fitted_weights(w, fitted).tocsc()


def _joint_positions(cloud: SkinnedCloud, source: Rig, target: Mesh, cfg: SkeletonConfig, unit: float,
                     size: float, report: SkeletonReport):
    """Step 1, joint positions (§3.1.1 EM / §3.1.2 PA); joints EM cannot place (no
    weighted vertex, not enclosed by the surface), or places outside ``target`` and farther
    than ``cfg.em_pa_limit`` of ``size`` from a PA position inside it (or nearer its
    surface), take their PA position.  Joints that share a source position are then placed
    as one (``keep_coincident``).

    ``size``: the skeleton's (its box's longest side); ``unit``: EM's length unit.
    Returns (J, 3) positions and the (J,) :func:`coincident_joints` labels; fills
    ``report.fallback_joints`` and ``report.coincident_groups``.
    """
    sk = source.skeleton
    V, P, W, J = cloud.source, cloud.target, cloud.fit_weights(), cloud.joints
    pa_pos, pa_fallback = joint_positions_pa(V, P, W, J, sk.parents, threshold=cfg.pa_threshold)
    rays = SurfaceRays(source.mesh.faces, n_rays=cfg.em_rays, share=cfg.em_ray_share,
                       min_hit_fraction=cfg.em_min_hit_fraction, far_spread=cfg.em_far_spread,
                       far_share=cfg.em_far_share) if cfg.em_rays else None
    if cfg.joints == "em":
        pos, placed = joint_positions_em(V, P, W, J, omega=cfg.omega, unit=unit, rays=rays)
        # EM's coefficients extrapolate: a joint far from the points it owns (a tail joint
        # ahead of a thin rigid segment) moves by their stretch several times over, and
        # landed 0.25 of the body's size off, on the floor beside a tail, where its region's
        # own similarity (PA) put it within 0.02 of its artist's.  Only a joint EM puts
        # outside the body, and PA inside it or nearer its surface, is taken from PA:
        # elsewhere EM is the better of the two when they differ (a cartoon's chest: 4.7 %H
        # against PA's 11)
        strayed = placed & ~pa_fallback & (np.linalg.norm(pos - pa_pos, axis=1) > cfg.em_pa_limit * size)
        if strayed.any():
            k = np.flatnonzero(strayed)
            em_gap = closest_points(pos[k], target.vertices, target.faces)[2]
            pa_gap = closest_points(pa_pos[k], target.vertices, target.faces)[2]
            strayed[k] = ~inside(pos[k], target) & (inside(pa_pos[k], target) | (pa_gap < em_gap))
        fallback = ~placed | strayed
        pos[fallback] = pa_pos[fallback]
    else:
        pos, fallback = pa_pos, pa_fallback
    label = coincident_joints(J, cfg.coincident_tolerance * size)
    if cfg.keep_coincident:
        pos = place_coincident(cloud, pos, label, method=cfg.joints, omega=cfg.omega, unit=unit,
                               threshold=cfg.pa_threshold, rays=rays if cfg.joints == "em" else None)
    report.fallback_joints = [sk.names[j] for j in np.flatnonzero(fallback)]
    report.coincident_groups = int((np.bincount(label) > 1).sum()) if cfg.keep_coincident else 0
    return pos, label


def _kept_inside(cloud: SkinnedCloud, source: Rig, target: Mesh, pos: np.ndarray, cfg: SkeletonConfig, height: float,
                 fixed: np.ndarray, fitted: np.ndarray | None):
    """``(positions, names)``: the (J, 3) joint positions ``pos`` with those of the source's thin
    parts (the chord through the joint at most ``cfg.inside_thin_part``: a finger, an ear tip, a
    toe; :func:`~asetransfer.geometry.interior.depth_and_chord`) that land outside the target's
    body by less than ``cfg.inside_reach``, nearest its fitted part (``fitted`` (n,) bool vertices,
    None: all; not a held sword's grip) and not in a gap between two of its pieces (a knee between
    armour plates), moved just inside through that nearest wall: to their source depth, at most
    ``cfg.inside_depth``, or halfway across a thinner part
    (:func:`~asetransfer.geometry.interior.moved_inside`); and the names of those moved.  Lengths
    are fractions of ``height``; ``fixed`` (J,) bool: joints left where they are (roots placed on
    the ground).  A joint near the skin of a thick part is no hair's miss (the male mannequin's
    pelvis, 0.8 %H over his crotch, went 1.4 %H into Sintel's thigh, while her artist's own lies
    outside her body under the skirt), and a joint moved deeper than needed leaves its artist's
    place farther behind (the T. rex's feet, whose artist put them under its soles)."""
    reach = cfg.inside_reach * height
    if reach <= 0:
        return pos, []
    # near the target's fitted skin (its shared closest-point tree: no cost), then outside it:
    # on most rigs no joint is, and the rest is skipped
    joints = np.flatnonzero(~fixed)
    face, _, gap = closest_points(pos[joints], target.vertices, target.faces)
    near = (gap > 0) & (gap <= reach)
    if fitted is not None:
        near &= np.asarray(fitted, bool)[target.faces[face]].all(axis=1)
    joints, gap = joints[near], gap[near]
    if len(joints):
        out = ~inside(pos[joints], target)
        joints, gap = joints[out], gap[out]
    if len(joints) == 0:
        return pos, []
    # of those, the joints of the source's thin parts, in no gap between the target's pieces
    was = inside(cloud.joints[joints], Mesh(cloud.source, source.mesh.faces))
    depth, chord = depth_and_chord(cloud.joints[joints], cloud.source, source.mesh.faces)
    thin = was & (depth > 0) & (chord <= cfg.inside_thin_part * height)
    joints, depth, gap = joints[thin], np.minimum(depth[thin], cfg.inside_depth * height), gap[thin]
    if len(joints):
        apart = ~between_pieces(pos[joints], gap, target)
        joints, depth = joints[apart], depth[apart]
    if len(joints) == 0:
        return pos, []
    moved = moved_inside(pos[joints], depth, target.vertices, target.faces)
    now = inside(moved, target)  # a way in that crossed no wall (a crease) leaves the joint as it was
    pos = pos.copy()
    pos[joints[now]] = moved[now]
    return pos, [source.skeleton.names[j] for j in joints[now]]


#: the symmetry test (median distance of the reflected target to itself) uses at most
#: about this many vertices: on a 1M target every vertex took 30 s, for the same median
#: (a regular subsample: a target below twice this size, every dev target, is tested whole)
SYMMETRY_TEST_VERTICES = 12_500


def _symmetry_plane(target: Mesh, pos, pairs, cfg: SkeletonConfig, height: float):
    """The target's mirror plane (§3.1.4): the configured one, or the plane bisecting the
    L/R joint pairs refined on the target's surface.  Returns ``(plane or None,
    symmetric)``: whether the target matches its reflection within ``symmetric_tolerance``."""
    if cfg.symmetry_plane is not None:
        return normalize_plane(cfg.symmetry_plane), True
    if not pairs or plane_from_pairs(pos, pairs) is None:
        return None, False
    index = surface_index(target.vertices, target.faces)  # shared with marker snapping and the quality checks
    plane = estimate_symmetry_plane(target.vertices, target.faces, plane_from_pairs(pos, pairs),
                                    iterations=cfg.symmetry_iterations, index=index)
    # how well the target mirrors: every vertex, or a regular subsample of a large target
    sample = target.vertices[:: max(1, len(target.vertices) // SYMMETRY_TEST_VERTICES)]
    _, _, dist, _ = index.closest(reflect(sample, plane), bary=False)
    return plane, bool(np.median(dist) <= cfg.symmetric_tolerance * height)


def _spine_and_mirror(cloud: SkinnedCloud, pos, label, *, sk: Skeleton, target: Mesh, cfg: SkeletonConfig,
                      unit: float, height: float, report: SkeletonReport):
    """Step 2: symmetry plane, spine alignment (§3.1.3), mirroring (§3.1.4).

    Returns the (J, 3) positions; fills the symmetry fields of ``report``.
    """
    names = sk.names
    pairs = side_pairs(sk)
    if cfg.spine_joints:
        spine = np.array([sk.index(n) for n in cfg.spine_joints], dtype=np.int64)
    else:
        spine = spine_joints(sk)
    plane, symmetric = _symmetry_plane(target, pos, pairs, cfg, height)
    if plane is not None and cfg.spine != "off" and len(spine):
        pos = align_spine(cloud, pos, spine, plane[:3], method=cfg.spine, omega=cfg.omega, unit=unit,
                          threshold=cfg.pa_threshold)
    asym_before = _asymmetry(pos, pairs, plane) if plane is not None else None
    mirrored = plane is not None and (cfg.mirror == "on" or (cfg.mirror == "auto" and symmetric))
    kept = []
    if mirrored:
        apart = asymmetric_pairs(cloud, pairs, plane, cfg.symmetric_tolerance * height, sk)
        kept = [names[pairs[k][0]] for k in np.flatnonzero(apart)]
        pos = mirror_joints(pos, [p for p, a in zip(pairs, apart) if not a], spine, plane)
    if cfg.keep_coincident:  # spine alignment and mirroring move members apart: join them again
        pos = _group_mean(pos, label)
    report.symmetry_plane = None if plane is None else [float(x) for x in plane]
    report.target_symmetric, report.mirrored, report.lr_pairs = symmetric, mirrored, len(pairs)
    report.pairs_not_mirrored = kept
    report.spine, report.spine_alignment = [names[j] for j in spine], cfg.spine if len(spine) else "off"
    report.asymmetry_before_mirroring = asym_before
    report.asymmetry = _asymmetry(pos, pairs, plane) if plane is not None else None
    return pos


def _oriented_skeleton(cloud: SkinnedCloud, pos, sk: Skeleton, *, alignment_rotation, label, cfg: SkeletonConfig,
                       size: float, rest):
    """Steps 3-4: orientation copy with Delta rotations (§3.2, Alg. 2), the rig's aim
    and roll conventions (:mod:`~asetransfer.stages.orientation`), bind and rest pose (§3.3).

    Parameters
    ----------
    pos : (J, 3) placed joints; alignment_rotation : (3, 3) rotation of the marker similarity;
    label : coincident labels for :func:`~asetransfer.stages.orientation.aimed_children`
        (None: every joint apart); size : the skeleton's (:func:`_joint_positions`);
    rest : ((J, 3, 3) rotations, (J, 3) positions) of the pose a normalised rest pose aims
        for, aligned like the cloud (the source's bind pose).

    Returns
    -------
    skeleton : :class:`Skeleton`; C : (J, 3, 3) the accumulated Delta rotations;
    rolled : (J,) bool, the bones whose roll follows a world axis or a plane of joints.
    """
    parents = sk.parents
    C = delta_rotations(cloud.source, cloud.target, cloud.weights, parents)
    src_rot = alignment_rotation @ closest_rotation(sk.bind_world[:, :3, :3])
    aimed = aimed_children(src_rot, cloud.joints, parents, label=label, tolerance_deg=cfg.aim_tolerance)
    planes = roll_planes(src_rot, cloud.joints, parents, aimed, tolerance_deg=cfg.roll_plane_tolerance,
                         min_bend_deg=cfg.roll_plane_min_bend, reach=cfg.roll_plane_reach,
                         min_height=cfg.roll_plane_min_height * size,
                         usable=np.diff(cloud.weights.tocsc().indptr) > 0) if cfg.roll_planes \
        else np.full((len(parents), 3), -1)
    axis = roll_axes(src_rot, cloud.joints, aimed, alignment_rotation, tolerance_deg=cfg.roll_plane_tolerance) \
        if cfg.roll_world_axes else None
    bind_rot, rolled = orient_bones(C @ src_rot, src_rot, cloud.joints, pos, parents=parents, aimed=aimed,
                                    planes=planes, axis=axis, src_axes=alignment_rotation,
                                    tgt_axes=nearest_axis_frame(alignment_rotation, cfg.roll_axis_snap),
                                    min_bend_deg=cfg.roll_plane_min_bend, max_roll_deg=cfg.roll_plane_max_turn)
    bind_world = np.tile(np.eye(4), (len(sk.names), 1, 1))
    bind_world[:, :3, :3], bind_world[:, :3, 3] = bind_rot, pos
    if cfg.pose_normalize:
        rest_rot = _normalised_rest_rotations(bind_rot, rest[0], pos, rest[1], parents)
    else:
        rest_rot = bind_rot
    translation, local_rot = _rest_pose(bind_rot, pos, parents, rest_rot)
    orient = sk.orient.copy()
    rotation = np.swapaxes(orient, 1, 2) @ local_rot
    skeleton = Skeleton(sk.names, parents, translation, orient, rotation, np.ones((len(sk.names), 3)), bind_world,
                        sk.humanoid_bones)
    return skeleton, C, rolled


def _normalised_rest_rotations(bind_rot, src_rot, pos, src_pos, parents):
    """§3.3: the source's world rotations ``src_rot``, each turned so that the joint's
    bones (target ``pos``, source ``src_pos``) point alike (:func:`bone_alignment`)."""
    parent_rot = np.where(parents[:, None, None] >= 0, bind_rot[parents], np.eye(3))
    src_parent = np.where(parents[:, None, None] >= 0, src_rot[parents], np.eye(3))
    target_off = np.einsum("jba,jb->ja", parent_rot, pos - pos[parents])
    source_off = np.einsum("jba,jb->ja", src_parent, src_pos - src_pos[parents])
    return src_rot @ bone_alignment(parents, source_off, target_off)
