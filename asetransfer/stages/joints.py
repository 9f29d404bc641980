"""Joint positions inside the target (spec §3.1.1 energy minimisation, §3.1.2 Procrustes).

Both methods see the source through its skin weights: a joint's *weighted vertices*
``v_i`` (source, already similarity-aligned to the target's frame) and their
corresponding target points ``p_i`` (the source -> target map).  Everything is
batched over joints with segment sums; no per-joint solver calls.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ..geometry.alignment import umeyama
from ..geometry.rays import cast_rays
from ..model.hierarchy import Hierarchy
from ..model.transforms import closest_rotation, rotation_svd, topological_order


def _entries(weights: sp.spmatrix, threshold: float):
    """(joint, vertex, weight) of every weight above ``threshold``, grouped by joint."""
    w = sp.csc_matrix(weights)
    w.sort_indices()
    joint = np.repeat(np.arange(w.shape[1]), np.diff(w.indptr))
    keep = w.data > threshold
    return joint[keep], w.indices[keep].astype(np.int64), w.data[keep]


def _segment_sum(values: np.ndarray, joint: np.ndarray, n_joints: int) -> np.ndarray:
    """Sum of ``values`` rows per joint (joints without entries get zeros): one sparse
    product for all columns (half the time of a bincount per column, same sums)."""
    flat = values.reshape(len(values), int(np.prod(values.shape[1:])))  # -1 cannot be read from no rows
    rows = sp.csr_matrix((np.ones(len(joint)), (joint, np.arange(len(joint)))), shape=(n_joints, len(joint)))
    return (rows @ flat).reshape((n_joints,) + values.shape[1:])


def procrustes_transforms(source: np.ndarray, target: np.ndarray, weights: sp.spmatrix, threshold: float):
    """Per-joint similarity from its weighted source vertices to their target points.

    Parameters
    ----------
    source, target : (N, 3) source vertices (aligned) and their target points.
    weights : (N, J) skin weights.
    threshold : only vertices with weight above it form the joint's point cloud
        (spec §3.1.2: 0.01).

    Returns
    -------
    scale (J,), rotation (J, 3, 3), source_centroid (J, 3), target_centroid (J, 3),
    valid (J,) bool: the joint has at least 3 points spanning more than a line.
    A point maps as ``scale R (x - source_centroid) + target_centroid``.
    """
    n_joints = weights.shape[1]
    joint, vert, _ = _entries(weights, threshold)
    count = np.bincount(joint, minlength=n_joints).astype(float)
    safe = np.maximum(count, 1)[:, None]
    mu_s = _segment_sum(source[vert], joint, n_joints) / safe
    mu_t = _segment_sum(target[vert], joint, n_joints) / safe
    xs = source[vert] - mu_s[joint]
    xt = target[vert] - mu_t[joint]
    cov = _segment_sum(xt[:, :, None] * xs[:, None, :], joint, n_joints) / safe[:, :, None]
    var = _segment_sum(np.einsum("ij,ij->i", xs, xs)[:, None], joint, n_joints)[:, 0] / safe[:, 0]
    rot, sig, d = rotation_svd(cov)
    sv = np.linalg.svd(_segment_sum(xs[:, :, None] * xs[:, None, :], joint, n_joints), compute_uv=False)
    valid = (count >= 3) & (sv[:, 1] > 1e-10 * np.maximum(sv[:, 0], 1e-300))
    scale = np.where(var > 0, (sig * d).sum(axis=1) / np.where(var > 0, var, 1), 1.0)
    return scale, rot, mu_s, mu_t, valid


def joint_positions_pa(source: np.ndarray, target: np.ndarray, weights: sp.spmatrix, joints: np.ndarray,
                       parents: np.ndarray, *, threshold: float):
    """Joint positions by per-joint Procrustes analysis (spec §3.1.2).

    Each joint is moved by the similarity that best maps its weighted source vertices
    (weight > ``threshold``) onto their target points.  A joint without such
    vertices (finger tips, end sites, helper joints) takes its nearest ancestor's
    transform; with no such ancestor, the similarity of the whole mesh.

    Returns
    -------
    positions (J, 3), fallback (J,) bool: placed by an ancestor's (or the global) transform.
    """
    scale, rot, mu_s, mu_t, valid = procrustes_transforms(source, target, weights, threshold)
    owner = Hierarchy(parents).nearest_where(valid)
    out = np.empty_like(joints, dtype=np.float64)
    has = owner >= 0
    o = owner[has]
    out[has] = scale[o, None] * np.einsum("jab,jb->ja", rot[o], joints[has] - mu_s[o]) + mu_t[o]
    if (~has).any():
        out[~has] = umeyama(source, target).apply(joints[~has])
    return out, owner != np.arange(len(parents))


def fibonacci_sphere(n: int) -> np.ndarray:
    """(n, 3) nearly uniform unit directions."""
    i = np.arange(n) + 0.5
    phi = np.arccos(1.0 - 2.0 * i / n)
    theta = np.pi * (1.0 + 5.0 ** 0.5) * i
    return np.stack([np.cos(theta) * np.sin(phi), np.sin(theta) * np.sin(phi), np.cos(phi)], axis=1)


def joint_rays(vertices: np.ndarray, faces: np.ndarray, joints: np.ndarray, n_rays: int):
    """First hits on the mesh of ``n_rays`` rays cast from every joint in all directions.

    Returns
    -------
    joint (H,), face (H,), bary (H, 3) of the H rays that hit.
    """
    origin = np.repeat(np.asarray(joints, dtype=np.float64), n_rays, axis=0)
    direction = np.tile(fibonacci_sphere(n_rays), (len(joints), 1))
    hits = cast_rays(vertices, faces, origin, direction, first=True)
    return hits.ray // n_rays, hits.face, hits.bary


@dataclass(frozen=True)
class SurfaceRays:
    """How EM also sees the surface around each joint (:func:`joint_positions_em`):
    the first hits of ``n_rays`` rays cast from it (``SkeletonConfig.em_rays``,
    ``em_ray_share``, ``em_min_hit_fraction``)."""

    faces: np.ndarray         # (F, 3) source triangles the rays hit
    n_rays: int
    share: float              # prior mass of the hits of a joint that has weighted vertices
    min_hit_fraction: float   # fewer hits than this fraction: the joint is not enclosed
    far_spread: float = np.inf  # a joint this many spreads from its weighted vertices (far_from_weights)
    far_share: float = 0.0      # takes this prior mass for its hits instead, when it is larger than share
    _cast: list = field(default_factory=list, compare=False, repr=False)  # the last cast, see hits()

    def hits(self, vertices: np.ndarray, joints: np.ndarray):
        """:func:`joint_rays` from ``joints`` on ``(vertices, self.faces)``.  The hits of each
        ray depend only on its origin, so joints already cast from (the same vertices array,
        the same position: the coincident groups after every joint) reuse the last cast."""
        joints = np.asarray(joints, dtype=np.float64)
        if self._cast and self._cast[0] is vertices:
            _, cast_joints, (r_joint, r_face, r_bary) = self._cast
            same = (joints[:, None, :] == cast_joints[None, :, :]).all(axis=2)
            if same.any(axis=1).all():
                row = np.argmax(same, axis=1)  # each joint -> a cast joint at its place
                # each joint's hits in ray order, joints in the order asked: as a new cast lists them
                own = [np.flatnonzero(r_joint == c) for c in row]
                k = np.concatenate(own) if own else np.zeros(0, dtype=np.int64)
                return np.repeat(np.arange(len(row)), [len(o) for o in own]), r_face[k], r_bary[k]
        result = joint_rays(vertices, self.faces, joints, self.n_rays)
        self._cast[:] = [vertices, joints.copy(), result]
        return result


def _em_fit(source: np.ndarray, target: np.ndarray, joint: np.ndarray, prior: np.ndarray, joints: np.ndarray,
            *, omega, unit: float):
    """Eq. 3.1 / 3.2 for every joint over the points ``(source[k], target[k])`` it owns
    (``joint[k]``), with prior coefficients ``prior[k] / sum`` (Eq. 3.1b); see
    :func:`joint_positions_em`.  Returns positions (J, 3) and placed (J,)."""
    w1, w2, w3 = omega
    n_joints = len(joints)
    count = np.bincount(joint, minlength=n_joints).astype(float)
    psum = np.bincount(joint, weights=prior, minlength=n_joints)
    what = prior / np.where(psum > 0, psum, 1)[joint]                    # normalised prior (3.1b)
    vbar = _segment_sum(what[:, None] * source, joint, n_joints)          # weighted centroids
    pbar = _segment_sum(what[:, None] * target, joint, n_joints)
    x = (source - vbar[joint]) / unit
    d = target - source
    y = (joints - vbar) / unit
    G = _segment_sum(x[:, :, None] * x[:, None, :], joint, n_joints)
    sx = _segment_sum(x, joint, n_joints)
    gw = _segment_sum(what[:, None] * x, joint, n_joints)
    sw = np.bincount(joint, weights=what, minlength=n_joints)
    Dx = _segment_sum(d[:, :, None] * x[:, None, :], joint, n_joints)
    sd = _segment_sum(d, joint, n_joints)
    wd = _segment_sum(what[:, None] * d, joint, n_joints)
    r1, r3 = np.sqrt(w1), np.sqrt(w3)
    UtU = np.zeros((n_joints, 4, 4))
    UtU[:, :3, :3] = w1 * G
    UtU[:, :3, 3] = UtU[:, 3, :3] = r1 * r3 * sx
    UtU[:, 3, 3] = w3 * count
    Gy = np.einsum("jab,jb->ja", G, y)
    sxy = np.einsum("ja,ja->j", sx, y)
    Utb = np.concatenate([r1 * (w1 * Gy + w2 * gw + w3 * sx), (r3 * (w1 * sxy + w2 * sw + w3 * count))[:, None]], 1)
    y4 = np.linalg.solve(w2 * np.eye(4) + UtU, Utb[:, :, None])[:, :, 0]
    # sum_i c_i d_i and sum_i c_i, with c = (b - U y4) / w2
    sum_bd = w1 * np.einsum("jab,jb->ja", Dx, y) + w2 * wd + w3 * sd
    sum_Ud = np.concatenate([r1 * Dx, r3 * sd[:, :, None]], axis=2)  # (J, 3, 4)
    cd = (sum_bd - np.einsum("jak,jk->ja", sum_Ud, y4)) / w2
    sum_b = w1 * sxy + w2 * sw + w3 * count
    sum_U = np.concatenate([r1 * sx, r3 * count[:, None]], axis=1)
    csum = (sum_b - np.einsum("jk,jk->j", sum_U, y4)) / w2
    out = joints + cd + (1.0 - csum)[:, None] * (pbar - vbar)
    placed = count > 0
    return np.where(placed[:, None], out, joints), placed


def joint_positions_em(source: np.ndarray, target: np.ndarray, weights: sp.spmatrix, joints: np.ndarray,
                       *, omega, unit: float, rays: SurfaceRays | None = None):
    """Joint positions by energy minimisation (spec Eq. 3.1 / 3.2).

    Per joint, coefficients ``c`` over its weighted vertices minimise
    ``w1 |sum c_i v_i - J|^2 + w2 sum (c_i - w_i / sum w)^2 + w3 (sum c_i - 1)^2``
    (Eq. 3.1a-c) and the target joint is ``sum c_i p_i`` (Eq. 3.2), evaluated in the
    translation-invariant form ``J + sum c_i (p_i - v_i) + (1 - sum c)(pbar - vbar)``
    (identical when the fit is exact; a transfer onto an identical mesh gives the
    source joint exactly).  The m x m normal equations are ``w2 I + U U^T`` with
    ``U = [sqrt(w1) v, sqrt(w3) 1]`` (m x 4), solved through the Woodbury identity:
    one 4 x 4 system per joint, batched.

    With ``rays``, the points may also include the surface *around* the joint: the
    first hits of ``rays.n_rays`` rays cast from it in all directions (a hit maps to
    the target through its triangle and barycentric coordinates), with a uniform prior
    of total mass ``rays.share`` (the skin weights keep ``1 - rays.share``), or
    ``rays.far_share`` for a joint far from the vertices it moves (:func:`far_from_weights`).
    A joint with no weighted vertex (a hips root, say) is then placed from its hits alone; a
    joint that is not enclosed by the surface (fewer than ``rays.min_hit_fraction`` of
    its rays hit: it lies outside the mesh or at an open end) uses its weighted
    vertices only.

    Parameters
    ----------
    source, target : (N, 3) aligned source vertices and their target points.
    weights : (N, J) skin weights; vertices with weight > 0 count.
    joints : (J, 3) source joint positions (aligned).
    omega : (w1, w2, w3), ``SkeletonConfig.omega`` (the spec's 1000, 1, 10).
    unit : lengths are divided by this before Eq. 3.1a (the omegas are tuned for
        lengths in centimetres on a human-size character).
    rays : :class:`SurfaceRays` (None: skin-weighted vertices only).

    Returns
    -------
    positions (J, 3), placed (J,) bool: False for joints with neither weighted vertices
    nor enough ray hits.
    """
    n_joints = weights.shape[1]
    joint, vert, w = _entries(weights, 0.0)
    wsum = np.bincount(joint, weights=w, minlength=n_joints)
    if rays is None:
        return _em_fit(source[vert], target[vert], joint, w, joints, omega=omega, unit=unit)
    r_joint, r_face, r_bary = rays.hits(source, joints)
    hits = np.bincount(r_joint, minlength=n_joints)
    own = np.full(n_joints, rays.share)
    if rays.far_share > rays.share:
        far = far_from_weights(source[vert], joint, w, joints, rays.far_spread)
        own[far] = rays.far_share
    share = np.where(hits >= rays.min_hit_fraction * rays.n_rays, np.where(wsum > 0, own, 1.0), 0.0)
    s_prior = w * ((1.0 - share) / np.where(wsum > 0, wsum, 1.0))[joint]
    r_prior = (share / np.maximum(hits, 1))[r_joint]
    tri = rays.faces[r_face]
    s, r = s_prior > 0, r_prior > 0
    return _em_fit(np.concatenate([source[vert[s]], np.einsum("kj,kjd->kd", r_bary[r], source[tri[r]])]),
                   np.concatenate([target[vert[s]], np.einsum("kj,kjd->kd", r_bary[r], target[tri[r]])]),
                   np.concatenate([joint[s], r_joint[r]]), np.concatenate([s_prior[s], r_prior[r]]),
                   joints, omega=omega, unit=unit)


def far_from_weights(points: np.ndarray, joint: np.ndarray, weight: np.ndarray, joints: np.ndarray,
                     spread: float) -> np.ndarray:
    """Joints farther from the weighted centroid of the points they move than ``spread`` times
    those points' RMS distance from it.

    Eq. 3.1-3.2 place a joint as an affine combination of its weighted vertices: where those
    lie far from it and close together (a spine joint on the back whose few vertices are in
    the belly), the combination extrapolates, and the joint lands where the registration
    carries those distant vertices rather than where the surface around it goes.

    Parameters
    ----------
    points : (K, 3) weighted vertices, one row per (joint, vertex) entry; joint : (K,) their
    joint; weight : (K,) their weights; joints : (J, 3) joint positions; spread : the ratio.

    Returns
    -------
    (J,) bool; False for joints without weighted vertices.
    """
    n = len(joints)
    mass = np.bincount(joint, weights=weight, minlength=n)
    safe = np.where(mass > 0, mass, 1.0)
    centre = _segment_sum(weight[:, None] * points, joint, n) / safe[:, None]
    square = weight * ((points - centre[joint]) ** 2).sum(axis=1)
    rms = np.sqrt(np.bincount(joint, weights=square, minlength=n) / safe)
    return (mass > 0) & (np.linalg.norm(joints - centre, axis=1) > spread * rms)


def delta_rotations(source: np.ndarray, target: np.ndarray, weights: sp.spmatrix, parents: np.ndarray):
    """Global rotation of every joint's region, accumulated down the hierarchy (spec Alg. 2).

    For joint ``j`` the best rotation (Umeyama) maps its weighted source vertices
    (centred) onto their target points (centred) after these are rotated back by the
    parent's accumulated rotation; ``C_j = C_parent @ delta_j``.  Points are weighted
    by their skin weight.  Joints without weighted vertices inherit ``C_parent``.

    Returns
    -------
    (J, 3, 3) accumulated global rotations ``C``.
    """
    n_joints = weights.shape[1]
    joint, vert, w = _entries(weights, 0.0)
    wsum = np.bincount(joint, weights=w, minlength=n_joints)
    safe = np.where(wsum > 0, wsum, 1)[:, None]
    mu_s = _segment_sum(w[:, None] * source[vert], joint, n_joints) / safe
    mu_t = _segment_sum(w[:, None] * target[vert], joint, n_joints) / safe
    xs = source[vert] - mu_s[joint]
    xt = target[vert] - mu_t[joint]
    M = _segment_sum(w[:, None, None] * xt[:, :, None] * xs[:, None, :], joint, n_joints)  # sum y x^T
    C = np.broadcast_to(np.eye(3), (n_joints, 3, 3)).copy()
    has = wsum > 0
    for j in topological_order(parents):
        parent = C[parents[j]] if parents[j] >= 0 else np.eye(3)
        C[j] = parent @ closest_rotation(parent.T @ M[j]) if has[j] else parent
    return C


def rigid_vertices(piece: np.ndarray, weights: sp.spmatrix, tolerance: float) -> np.ndarray:
    """(N,) True on the vertices of rigidly weighted pieces: every vertex of the piece is
    weighted (within ``tolerance`` of 1) to one and the same bone.

    A hard-surface plate weighted 100 % to its bone says where the bone is, not where
    along the cut to its neighbour the joint lies (smooth weights fade across the joint).

    Parameters
    ----------
    piece : (N,) each vertex's piece label (0..P-1; e.g. connected components of the welded mesh).
    weights : (N, J) skin weights.
    tolerance : a vertex is weighted to one bone when its largest weight is at least
        ``1 - tolerance`` (below 0.5: that weight is the row's only one so large).

    Returns
    -------
    (N,) bool.
    """
    w = sp.csr_matrix(weights)
    # the entries of at least 1 - tolerance, one per row at most (scipy's row argmax loops
    # in Python: 80 ms on a 13k source)
    big = w.data >= 1.0 - tolerance
    row = np.repeat(np.arange(w.shape[0]), np.diff(w.indptr))[big]
    one = np.zeros(w.shape[0], bool)
    one[row] = True
    bone = np.full(w.shape[0], -1, dtype=np.int64)
    bone[row] = w.indices[big]
    n_pieces = int(piece.max()) + 1 if len(piece) else 0
    # a piece is rigid when all its vertices are single-bone and their bones agree
    lowest = np.full(n_pieces, np.iinfo(np.int64).max)
    highest = np.full(n_pieces, -1)
    np.minimum.at(lowest, piece, bone)
    np.maximum.at(highest, piece, bone)
    single = np.bincount(piece, weights=~one, minlength=n_pieces) == 0
    size = np.bincount(piece, minlength=n_pieces)
    rigid = single & (lowest == highest) & (size > 1)
    return rigid[piece]


#: blend_weights evaluates this many rows at a time: a 1M-vertex robot in one go held
#: 50M vertex-cell pairs (3.6 GB peak, 14 s)
BLEND_CHUNK = 100_000


def blend_weights(vertices: np.ndarray, weights: sp.spmatrix, area: np.ndarray, rows: np.ndarray,
                  sources: np.ndarray, sigma: float, reach: float) -> sp.csr_matrix:
    """Skin weights with the rows ``rows`` replaced by the Gaussian average (width ``sigma``)
    over the surface of the weights around them, across gaps between pieces.

    The average is ``sum_k g(|x - c_k|) a_k w_k / sum_k g(|x - c_k|) a_k`` over the cells of a
    grid ``sigma / 2`` wide binning the ``sources`` vertices: ``a_k`` the cell's area,
    ``c_k`` and ``w_k`` its area-weighted centroid and mean weight row.  Areas, not vertex
    counts, so a densely tessellated plate weighs as much as a coarse one of the same
    size; cells, so the cost is bounded by the cells within ``reach * sigma`` (about
    ``(4 reach)^2`` on a surface), not by the tessellation.  A row with no cell within
    reach keeps its weights.

    Parameters
    ----------
    vertices : (N, 3); weights : (N, J) skin weights;
    area : (N,) each vertex's share of the surface (a third of its triangles' areas);
    rows : (R,) vertex indices whose weights are replaced;
    sources : (S,) vertex indices whose weights are averaged;
    sigma : Gaussian width (units of ``vertices``); reach : cut-off in ``sigma``s.

    Returns
    -------
    (N, J) csr weights, rows summing to 1 where the input's did.
    """
    from scipy.spatial import cKDTree

    w = sp.csr_matrix(weights, dtype=np.float64)
    rows, sources = np.asarray(rows, dtype=np.int64), np.asarray(sources, dtype=np.int64)
    a = np.asarray(area, dtype=np.float64)[sources]
    if not len(rows) or not (a > 0).any() or sigma <= 0:
        return w
    sources, a = sources[a > 0], a[a > 0]
    p = np.asarray(vertices, dtype=np.float64)[sources]
    _, cell = np.unique(np.floor(p / (0.5 * sigma)).astype(np.int64), axis=0, return_inverse=True)
    cell = cell.ravel()
    n_cells = int(cell.max()) + 1
    mass = np.bincount(cell, weights=a, minlength=n_cells)
    share = sp.csr_matrix((a / mass[cell], (cell, np.arange(len(cell)))), shape=(n_cells, len(cell)))
    centre, mean = share @ p, (share @ w[sources]).tocsr()
    cells = cKDTree(centre)
    x = np.asarray(vertices, dtype=np.float64)[rows]
    parts, total = [], np.zeros(len(rows))
    for start in range(0, len(rows), BLEND_CHUNK):  # a kernel row holds ~50 cells: bounded memory
        near = cKDTree(x[start:start + BLEND_CHUNK]).sparse_distance_matrix(cells, reach * sigma,
                                                                              output_type="coo_matrix")
        kernel = sp.csr_matrix((np.exp(-0.5 * (near.data / sigma) ** 2) * mass[near.col], (near.row, near.col)),
                               shape=(min(BLEND_CHUNK, len(rows) - start), n_cells))
        total[start:start + BLEND_CHUNK] = np.asarray(kernel.sum(axis=1)).ravel()
        parts.append((kernel @ mean).tocsr())
    found = total > 0
    blended = sp.diags(1.0 / np.where(found, total, 1.0)) @ sp.vstack(parts).tocsr()
    keep = np.ones(w.shape[0])
    keep[rows[found]] = 0.0
    placed = sp.csr_matrix((np.ones(found.sum()), (rows[found], np.flatnonzero(found))),
                           shape=(w.shape[0], len(rows)))
    return (sp.diags(keep) @ w + placed @ blended).tocsr()


def fitted_weights(weights: sp.spmatrix, fitted: np.ndarray) -> sp.csr_matrix:
    """Skin weights without the vertices that were not fitted, for the joints that keep others.

    Layers (joint covers, clothes, eyes) and unmarked pieces ride along with their closest
    fitted point: where they land says nothing of their own about the target.  A joint
    weighted only on such vertices keeps them (they are all it has).

    Parameters
    ----------
    weights : (N, J) skin weights; fitted : (N,) bool, the vertices the registration fitted.

    Returns
    -------
    (N, J) csr weights (rows need not sum to 1).
    """
    w = sp.csr_matrix(weights, dtype=np.float64)
    fitted = np.asarray(fitted, dtype=bool)
    has_fitted = np.asarray(w[fitted].sum(axis=0)).ravel() > 0
    return (sp.diags(fitted.astype(np.float64)) @ w
            + sp.diags((~fitted).astype(np.float64)) @ w @ sp.diags((~has_fitted).astype(np.float64))).tocsr()
