"""Skin-weight transfer (spec Ch. 2, last step): target vertices read the source weights.

Two methods:

* ``interp`` (the spec): every target vertex takes the source weights interpolated
  at its source point (reverse map).
* ``robust`` (after Abdrashitov et al. 2023, *Robust Skin Weights Transfer via Weight
  Inpainting*): the interpolated weights are kept only where the target vertex lies
  close to its registered source point and the normals agree; the other vertices
  (props, clothing, parts the source does not have) get weights inpainted from the
  accepted ones by minimising the bi-Laplacian energy over the target mesh.

  A prop -- a piece of the target the source has no surface for (most of its matches
  rejected) -- moves rigidly: the prop pieces that touch or cross each other (a sword's
  grip, guard and blade) are one rigid group, bound whole to the one joint with the
  largest share of the group's weights (the wrist for a finger), with a warning naming it
  (:func:`prop_groups`, :func:`bind_rigidly`).  Weighted piece by piece, such a sword was split between the hand
  and a thumb joint and bent when the thumb curled.  A group standing apart from the body
  (:func:`standing_apart`: a crate beside the character, the floor under it) is bound to
  the root: no limb holds it.
"""
from __future__ import annotations

import logging

import numpy as np
import scipy.sparse as sp

from ..geometry.laplacian import bilaplacian
from ..geometry.linsolve import Factorization
from ..humanoid.skeleton_map import propose_skeleton_map
from ..model.report import RobustStats
from ..model.skeleton import Skeleton
from ..model.skin import SkinWeights
from ..model.surface import SurfacePoints, interpolate
from ..geometry.topology import components, vertex_components, vertex_normals, weld

log = logging.getLogger("asetransfer")
#: a vertex whose match the normals reject still shows the source has surface there when the
#: match lies within this share of the robust distance: a flat-shaded mannequin's finger pieces
#: riding along lie on the source's hand (as props they were bound to the wrist: the production
#: female's weight error 0.32, 0.18 without), a sword's blade held along the thigh does not
#: (0.25 took it for the thigh)
PROP_NEAR = 0.1
#: a piece standing apart from the body with this share of the target's vertices or more is
#: named as another character in the warning (a floor or a crate has a few dozen vertices)
ANOTHER_BODY_SHARE = 0.2


def barycentric_matrix(points: SurfacePoints, faces: np.ndarray, n_vertices: int) -> sp.csr_matrix:
    """(K, n) sparse matrix whose row k interpolates per-vertex values at point k."""
    rows = np.repeat(np.arange(len(points)), 3)
    return sp.csr_matrix((points.bary.ravel(), (rows, np.asarray(faces)[points.face].ravel())),
                         shape=(len(points), n_vertices))


def transfer_weights(skin: SkinWeights, target_to_source: SurfacePoints, source_faces: np.ndarray, *,
                     max_influences: int, prune: float) -> SkinWeights:
    """Each target vertex takes the source weights interpolated at its source point.

    Barycentric interpolation over the source triangle, then weights under ``prune``
    are dropped, at most ``max_influences`` kept, and rows renormalised to sum to 1
    (``WeightsConfig.prune``, ``WeightsConfig.max_influences``).
    """
    B = barycentric_matrix(target_to_source, source_faces, skin.n_vertices)
    return SkinWeights.from_sparse(B @ skin.to_sparse(), max_influences=max_influences, prune=prune)


def accepted_matches(target_vertices, target_faces, registered_source, source_faces,
                     target_to_source: SurfacePoints, *, max_distance: float, max_angle: float):
    """Target vertices whose source match is trustworthy (Abdrashitov et al. 2023, §4.1).

    A match is accepted when the target vertex is within ``max_distance`` of its point
    on the registered source and their normals are less than ``max_angle`` degrees apart.

    Returns
    -------
    accepted : (n,) bool, distance : (n,) float, angle : (n,) float degrees.
    """
    point = target_to_source.positions(registered_source, source_faces)
    distance = np.linalg.norm(np.asarray(target_vertices) - point, axis=1)
    n_src = interpolate(vertex_normals(registered_source, source_faces), source_faces,
                        target_to_source.face, target_to_source.bary)
    n_src /= np.maximum(np.linalg.norm(n_src, axis=1, keepdims=True), 1e-300)
    n_tgt = vertex_normals(target_vertices, target_faces)
    angle = np.degrees(np.arccos(np.clip(np.einsum("ij,ij->i", n_src, n_tgt), -1.0, 1.0)))
    return (distance <= max_distance) & (angle <= max_angle), distance, angle


def inpaint_weights(vertices, faces, weights: sp.spmatrix, known: np.ndarray, *,
                    smooth_iterations: int, contact_neighbours: int) -> tuple[sp.csr_matrix, np.ndarray]:
    """Fill the rows of ``weights`` not ``known`` by bi-Laplacian inpainting.

    Solves ``min trace(W^T Q W)``, ``Q = L^T M^-1 L``, with the known rows fixed
    (Abdrashitov et al. 2023, Eq. 4): ``Q_uu W_u = -Q_uk W_k``, one factorisation
    for all joints.  Seams are welded first so weights flow across them.  A piece
    of the mesh with no known vertex is attached rigidly where it comes closest to
    the known surface: all its vertices take the mean weights of the
    ``contact_neighbours`` known vertices there (a hat takes the head's weights; a
    staff held in the hand follows the hand even where it passes the thigh).
    ``smooth_iterations`` steps of neighbour averaging then relax the inpainted rows
    only (``WeightsConfig.contact_neighbours``, ``WeightsConfig.smooth_iterations``).  Negative values are clipped and
    rows renormalised.

    Returns
    -------
    weights : (n, J) csr matrix, copied : (n,) bool, rows filled by rigid attachment
        (pieces without any known vertex).
    """
    V, F, index = weld(vertices, faces)
    n = len(V)
    W = sp.csr_matrix(weights, dtype=np.float64)
    first = np.full(n, -1)
    first[index[::-1]] = np.arange(len(index))[::-1]  # an input vertex of each welded one
    known_w = np.ones(n, dtype=bool)
    np.logical_and.at(known_w, index, np.asarray(known, dtype=bool))  # all copies accepted
    Wd = W[first].toarray()
    used = np.zeros(n, dtype=bool)
    used[np.asarray(F).ravel()] = True
    known_w |= ~used                                   # unreferenced vertices keep theirs
    copied = np.zeros(n, dtype=bool)
    if known_w[used].any():
        orphan = _attach_orphans(V, F, Wd, known_w & used, used, contact_neighbours=contact_neighbours)
        if orphan.any():
            known_w |= orphan
            copied = orphan
    unknown = np.flatnonzero(~known_w)
    if len(unknown):
        _inpaint_unknown(V, F, Wd, known_w, smooth_iterations=smooth_iterations)
    Wd = np.clip(Wd, 0.0, None)
    s = Wd.sum(axis=1, keepdims=True)
    Wd = np.where(s > 0, Wd / np.where(s > 0, s, 1), W[first].toarray())
    return sp.csr_matrix(Wd[index]), copied[index]


def _attach_orphans(V, F, Wd, reference, used, *, contact_neighbours: int) -> np.ndarray:
    """Rigid attachment of the pieces with no ``reference`` (known, used) vertex: every
    vertex of such a piece takes, in ``Wd`` (rows changed in place), the mean weights of
    the ``contact_neighbours`` reference vertices where the piece comes closest.

    Returns the (n,) bool mask of the attached (orphan) vertices.
    """
    labels = vertex_components(len(V), F)
    has_known = np.zeros(labels.max() + 1, dtype=bool)
    has_known[labels[reference]] = True
    orphan = ~has_known[labels] & used
    if orphan.any():
        ref = np.flatnonzero(reference)
        # imported on use: only pieces without weights need it
        from scipy.spatial import cKDTree

        tree = cKDTree(V[ref])
        dist, nearest = tree.query(V[orphan])
        piece = labels[orphan]
        for p in np.unique(piece):  # rigid attachment where the piece comes closest
            here = np.flatnonzero(piece == p)
            contact = ref[nearest[here[np.argmin(dist[here])]]]
            _, around = tree.query(V[contact], k=min(contact_neighbours, len(ref)))
            Wd[np.flatnonzero(orphan)[here]] = Wd[ref[np.atleast_1d(around)]].mean(axis=0)
    return orphan


def _inpaint_unknown(V, F, Wd, known, *, smooth_iterations: int) -> None:
    """Rows of ``Wd`` not ``known`` (changed in place) by bi-Laplacian inpainting,
    ``Q_uu W_u = -Q_uk W_k`` (Abdrashitov et al. 2023, Eq. 4), then ``smooth_iterations``
    steps of neighbour averaging of those rows only."""
    n = len(V)
    unknown = np.flatnonzero(~known)
    Q = bilaplacian(V, F).tocsr()
    k = np.flatnonzero(known)
    Quu = Q[unknown][:, unknown]
    cols = np.flatnonzero(np.abs(Wd[k]).sum(axis=0) > 0)
    rhs = -(Q[unknown][:, k] @ Wd[np.ix_(k, cols)])
    Wd[np.ix_(unknown, cols)] = Factorization(Quu, "weight inpainting system").solve(rhs)
    if smooth_iterations:
        f = np.asarray(F)
        adj = sp.coo_matrix((np.ones(3 * len(f)), (f[:, [0, 1, 2]].ravel(), f[:, [1, 2, 0]].ravel())),
                            shape=(n, n))
        adj = ((adj + adj.T) > 0).astype(np.float64).tocsr()
        avg = sp.diags(1.0 / np.maximum(np.asarray(adj.sum(axis=1)).ravel(), 1)) @ adj
        for _ in range(smooth_iterations):
            Wd[unknown] = 0.5 * Wd[unknown] + 0.5 * (avg[unknown] @ Wd)


def prop_groups(vertices, faces, accepted: np.ndarray, *, prop_fraction: float, touch_distance: float,
                fitted: np.ndarray | None = None) -> np.ndarray:
    """The rigid group of every target vertex: pieces that touch, which the source has no surface for.

    The target's pieces (connected once seams are welded) other than the body -- the piece
    with the most accepted matches (:func:`accepted_matches`) -- are grouped: two are in one
    group when vertices of theirs lie within ``touch_distance`` of each other or an edge of
    one crosses a triangle of the other (:func:`_crossing_pieces`), and groups are the
    connected components of that relation (touching the body joins nothing: a grip sits in
    the hand).  A group is a prop when fewer than ``prop_fraction`` of its vertices have an
    accepted match: the source has no surface there to say how it deforms.  Pieces the
    correspondence fitted as the body (``fitted``: a mannequin cut at its joints, armour
    plates) are the body whatever their matches: a flat-shaded 51-piece mannequin, whose
    normals reject most matches, had its limbs bound rigidly to its hands.

    Parameters
    ----------
    vertices : (n, 3), faces : (F, 3) the target mesh.
    accepted : (n,) bool, the vertices whose match with the source was kept.
    prop_fraction : ``WeightsConfig.prop_fraction``; touch_distance : in the target's units.
    fitted : (n,) bool, the vertices of the pieces the correspondence fitted
        (``Correspondence.target_solved``), or None.

    Returns
    -------
    (n,) int64: the prop group of each vertex, numbered from 0, or -1 outside any prop.
    """
    V, F, index = weld(vertices, faces)
    none = np.full(len(index), -1, dtype=np.int64)
    if not len(F):
        return none
    labels = vertex_components(len(V), F)
    # any copy accepted: a flat-shaded body's copies of a corner each carry one face's normal,
    # and the copies turned away from the source's normal are rejected where the body matches
    known = np.zeros(len(V), dtype=bool)
    np.logical_or.at(known, index, np.asarray(accepted, dtype=bool))
    if fitted is not None:
        np.logical_or.at(known, index, np.asarray(fitted, dtype=bool))  # fitted as the body: no prop
    used = np.unique(F)
    pieces = int(labels.max()) + 1
    matched = np.bincount(labels[used], weights=known[used], minlength=pieces)
    others = np.bincount(labels[used], minlength=pieces) > 0
    others[int(np.argmax(matched))] = False  # the body, however badly it matched
    if not others.any():
        return none
    pairs = _touching_pieces(V, F, labels, others, touch_distance)
    group = components(pieces, pairs[:, 0], pairs[:, 1])[labels]
    size = np.bincount(group[used], minlength=pieces)
    prop = np.bincount(group[used], weights=known[used], minlength=pieces) < prop_fraction * size
    prop &= np.bincount(group[used], weights=others[labels[used]], minlength=pieces) > 0
    numbered = np.full(pieces, -1, dtype=np.int64)
    numbered[np.flatnonzero(prop)] = np.arange(int(prop.sum()))
    return numbered[group][index]


def _touching_pieces(V, F, labels, pieces, touch_distance: float) -> np.ndarray:
    """(P, 2) pairs of the pieces ``pieces`` ((n_pieces,) bool) whose vertices lie within
    ``touch_distance`` of each other or whose surfaces cross (:func:`_crossing_pieces`)."""
    from scipy.spatial import cKDTree  # on use: only targets in pieces need it

    faces = F[pieces[labels[F[:, 0]]]]
    ids = np.unique(faces)
    near = cKDTree(V[ids]).query_pairs(touch_distance, output_type="ndarray")
    pairs = np.column_stack([labels[ids[near[:, 0]]], labels[ids[near[:, 1]]]]).reshape(-1, 2)
    pairs = np.concatenate([pairs, _crossing_pieces(V, faces, labels)])
    return pairs[pairs[:, 0] != pairs[:, 1]]


def _crossing_pieces(V, faces, labels) -> np.ndarray:
    """(P, 2) pairs of pieces an edge of one of which crosses a triangle of the other.

    Candidates are the (edge, triangle) pairs whose bounding spheres meet (the triangles
    searched in classes of radii within a factor 2, so one long blade does not widen the
    search around every small triangle); each is tested by Moeller and Trumbore (1997): the
    edge ``p + s (q - p)`` crosses the triangle ``a + u (b - a) + v (c - a)`` when
    ``u, v >= 0``, ``u + v <= 1`` and ``0 <= s <= 1``.
    """
    from scipy.spatial import cKDTree

    edges = np.unique(np.sort(faces[:, [0, 1, 1, 2, 2, 0]].reshape(-1, 2), axis=1), axis=0)
    corners = V[faces]
    centres = corners.mean(axis=1)
    radius = np.linalg.norm(corners - centres[:, None], axis=2).max(axis=1)
    start, end = V[edges[:, 0]], V[edges[:, 1]]
    middle, half = 0.5 * (start + end), 0.5 * np.linalg.norm(end - start, axis=1)
    size_class = np.floor(np.log2(np.maximum(radius, 1e-300) / max(float(radius.max()), 1e-300))).clip(-60)
    edge, face = [], []
    for c in np.unique(size_class):
        members = np.flatnonzero(size_class == c)
        near = cKDTree(centres[members]).query_ball_point(middle, half + float(radius[members].max()))
        counts = np.fromiter((len(k) for k in near), dtype=np.int64, count=len(near))
        edge.append(np.repeat(np.arange(len(edges)), counts))
        face.append(members[np.concatenate([np.asarray(k, dtype=np.int64) for k in near])])
    edge, face = np.concatenate(edge), np.concatenate(face)
    other = labels[edges[edge, 0]] != labels[faces[face, 0]]
    edge, face = edge[other], face[other]
    crossed = _segments_cross(start[edge], end[edge], corners[face])
    return np.column_stack([labels[edges[edge[crossed], 0]], labels[faces[face[crossed], 0]]]).reshape(-1, 2)


def _segments_cross(start: np.ndarray, end: np.ndarray, corners: np.ndarray) -> np.ndarray:
    """(K,) whether segment k from ``start[k]`` to ``end[k]`` crosses triangle ``corners[k]``
    (K, 3, 3) (Moeller and Trumbore 1997; a segment in the triangle's plane does not)."""
    a, e1, e2 = corners[:, 0], corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0]
    direction = end - start
    h = np.cross(direction, e2)
    det = np.einsum("ij,ij->i", e1, h)
    scale = np.linalg.norm(e1, axis=1) * np.linalg.norm(e2, axis=1) * np.linalg.norm(direction, axis=1)
    ok = np.abs(det) > 1e-12 * scale
    inv = np.divide(1.0, det, out=np.zeros_like(det), where=ok)
    offset = start - a
    u = inv * np.einsum("ij,ij->i", offset, h)
    q = np.cross(offset, e1)
    v = inv * np.einsum("ij,ij->i", direction, q)
    s = inv * np.einsum("ij,ij->i", e2, q)
    return ok & (u >= 0) & (v >= 0) & (u + v <= 1) & (s >= 0) & (s <= 1)


def bind_rigidly(weights: sp.spmatrix, groups: np.ndarray, skeleton: Skeleton | None = None,
                 apart: np.ndarray | None = None) -> sp.csr_matrix:
    """``weights`` with every rigid group's rows set to one joint: the one with the largest
    summed weight over the group, ``argmax_j sum_{i in group} W_ij`` -- or, when that is a
    finger (a joint below a wrist of the humanoid skeleton map), the wrist: a prop is held
    by the hand, and bound to a finger it would swing when the finger curls.  A group that
    stands apart from the body (``apart``, :func:`standing_apart`: a crate beside the
    character, the floor it stands on) is held by nothing: it is bound to the skeleton's
    root.  A warning names the joint.

    Parameters
    ----------
    weights : (n, J) the weights.
    groups : (n,) the group of each row, -1 for none (:func:`prop_groups`).
    skeleton : the J joints (their names for the warning, the wrists); None: joint numbers.
    apart : (G,) bool, the groups that stand apart from the body, or None (none).
    """
    W = sp.csr_matrix(weights)
    if not (groups >= 0).any():
        return W
    rows, joints = [], []
    for g in range(int(groups.max()) + 1):
        members = np.flatnonzero(groups == g)
        if apart is not None and apart[g]:
            joint = _main_root(skeleton)
            share = len(members) / len(groups)
            what = (f"{100 * share:.0f} % of the vertices: another character?" if share >= ANOTHER_BODY_SHARE
                    else "a floor, a prop beside the character?")
            log.warning("robust weights: a piece standing apart from the body (%d vertices, %s) is bound rigidly to "
                        "the root joint %s; take it out of the file if it is not the character's", len(members),
                        what, _joint_name(skeleton, joint))
        else:
            total = np.asarray(W[members].sum(axis=0)).ravel()
            joint = _holding_joint(skeleton, int(np.argmax(total)))
            moved = [joint] if skeleton is None else [joint, *skeleton.hierarchy.descendants(joint).tolist()]
            log.warning("robust weights: a prop the source has no surface for (%d vertices) is bound rigidly to "
                        "joint %s, which with the joints below it carried %.0f %% of its weights; weight it in the "
                        "source, or by hand, if it should follow another", len(members), _joint_name(skeleton, joint),
                        100 * total[moved].sum() / max(total.sum(), 1e-300))
        rows.append(members)
        joints.append(np.full(len(members), joint))
    rows, joints = np.concatenate(rows), np.concatenate(joints)
    keep = sp.diags((groups < 0).astype(np.float64))
    return sp.csr_matrix(keep @ W + sp.csr_matrix((np.ones(len(rows)), (rows, joints)), shape=W.shape))


def _joint_name(skeleton: Skeleton | None, joint: int) -> str:
    return repr(skeleton.names[joint]) if skeleton is not None else f"number {joint}"


def _main_root(skeleton: Skeleton | None) -> int:
    """The root with the most joints below it (0 without a skeleton)."""
    if skeleton is None:
        return 0
    roots = skeleton.roots()
    return int(roots[np.argmax([len(skeleton.hierarchy.descendants(int(r))) for r in roots])])


def standing_apart(vertices, faces, groups: np.ndarray, *, gap: float, body_side: float) -> np.ndarray:
    """(G,) bool: the prop groups (:func:`prop_groups`) that stand apart from the body.

    A group stands apart when its surface comes nowhere within ``gap`` of the rest of the
    mesh's (a crate beside the character; a staff held through a palm touches it where it
    has no vertex, a ring floating over a palm is within a few cm), or when its box's
    second-longest side is longer than ``body_side``, the body's longest (the floor under
    the feet: a spear longer than the character is long one way only).

    Parameters
    ----------
    vertices : (n, 3), faces : (F, 3) the target mesh; groups : (n,) the group of each
        vertex, -1 outside any.
    gap, body_side : in the target's units.
    """
    from ..geometry.surface import SurfaceIndex  # on use: only targets with props need it

    n_groups = int(groups.max(initial=-1)) + 1
    apart = np.zeros(n_groups, dtype=bool)
    face_group = groups[faces[:, 0]]  # a face's corners are on one piece, so in one group
    for g in range(n_groups):
        own, rest = faces[face_group == g], faces[face_group != g]
        members = np.unique(own)
        if not len(rest):
            continue
        if np.sort(np.ptp(vertices[members], axis=0))[1] > body_side:
            apart[g] = True
            continue
        # both ways: the surfaces meet where either has no vertex
        near = SurfaceIndex(vertices, rest).closest(vertices[members], bary=False)[2].min() <= gap
        if not near:
            near = SurfaceIndex(vertices, own).closest(vertices[np.unique(rest)], bary=False)[2].min() <= gap
        apart[g] = not near
    return apart


def _holding_joint(skeleton: Skeleton | None, joint: int) -> int:
    """``joint``, or the wrist (skeleton map roles ``wrist_l``, ``wrist_r``) it lies below."""
    if skeleton is None:
        return joint
    mapping, _ = propose_skeleton_map(skeleton)
    above = set(skeleton.hierarchy.ancestors(joint).tolist())
    for side in ("l", "r"):
        wrist = mapping.get(f"wrist_{side}")
        if wrist is not None and skeleton.names.index(wrist) in above:
            return skeleton.names.index(wrist)
    return joint


def transfer_weights_robust(skin: SkinWeights, target_to_source: SurfacePoints, *, target_vertices, target_faces,
                            registered_source, source_faces, max_distance: float, max_angle: float,
                            smooth_iterations: int, contact_neighbours: int, max_influences: int, prune: float,
                            prop_fraction: float = 0.25, touch_distance: float = 0.0, skeleton: Skeleton | None = None,
                            fitted: np.ndarray | None = None, apart_gap: float = np.inf, body_side: float = np.inf):
    """Robust weight transfer: interpolated where the match is trustworthy, inpainted elsewhere.

    Parameters
    ----------
    target_vertices, target_faces : (n, 3) the target mesh.
    registered_source : (n_source, 3) the source registered onto the target (target frame).
    source_faces : (F_source, 3) the source's triangles.
    max_distance : target-frame distance above which a match is rejected.
    max_angle : normal disagreement (degrees) above which a match is rejected.
    smooth_iterations, contact_neighbours : of :func:`inpaint_weights`.
    max_influences, prune : of :func:`transfer_weights`.
    prop_fraction, touch_distance : of :func:`prop_groups` (each group bound to one joint,
        :func:`bind_rigidly`); skeleton : the source's (the joint a prop is bound to, named in a warning).
    fitted : (n,) bool, the target vertices the correspondence fitted as the body
        (``Correspondence.target_solved``; :func:`prop_groups`), or None.
    apart_gap, body_side : of :func:`standing_apart` (a group standing apart is bound to the
        root); the defaults find none.

    Returns
    -------
    skin : :class:`SkinWeights`; stats : :class:`~asetransfer.model.report.RobustStats` (accepted
    fraction, inpainted and copied counts, rejections).
    """
    B = barycentric_matrix(target_to_source, source_faces, skin.n_vertices)
    W = B @ skin.to_sparse()
    accepted, distance, angle = accepted_matches(target_vertices, target_faces, registered_source, source_faces,
                                                 target_to_source, max_distance=max_distance, max_angle=max_angle)
    if not accepted.any():  # nothing to inpaint from: the spec's interpolation is all we have
        log.warning("robust weights: no target vertex matched the source within the thresholds; "
                    "using the interpolated weights everywhere")
        accepted[:] = True
    filled, copied = inpaint_weights(target_vertices, target_faces, W, accepted, smooth_iterations=smooth_iterations,
                                     contact_neighbours=contact_neighbours)
    # a prop is where the source has no surface: its match is far, whatever the normals say (a
    # flat-shaded mannequin's finger pieces riding along are turned from the source's normals)
    near = accepted | (distance <= PROP_NEAR * max_distance)
    groups = prop_groups(target_vertices, target_faces, near, prop_fraction=prop_fraction,
                         touch_distance=touch_distance, fitted=fitted)
    apart = standing_apart(target_vertices, target_faces, groups, gap=apart_gap, body_side=body_side)
    filled = bind_rigidly(filled, groups, skeleton, apart)
    stats = RobustStats(accepted_fraction=float(accepted.mean()), inpainted_vertices=int((~accepted & ~copied).sum()),
                        copied_vertices=int(copied.sum()), rejected_by_distance=int((distance > max_distance).sum()),
                        rejected_by_angle=int((angle > max_angle).sum()))
    return SkinWeights.from_sparse(filled, max_influences=max_influences, prune=prune), stats
