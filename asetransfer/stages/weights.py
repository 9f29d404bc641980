"""Skin-weight transfer (spec Ch. 2, last step): target vertices read the source weights.

Two methods:

* ``interp`` (the spec): every target vertex takes the source weights interpolated
  at its source point (reverse map).
* ``robust`` (after Abdrashitov et al. 2023, *Robust Skin Weights Transfer via Weight
  Inpainting*): the interpolated weights are kept only where the target vertex lies
  close to its registered source point and the normals agree; the other vertices
  (props, clothing, parts the source does not have) get weights inpainted from the
  accepted ones by minimising the bi-Laplacian energy over the target mesh.
"""
from __future__ import annotations

import logging

import numpy as np
import scipy.sparse as sp

from ..geometry.laplacian import bilaplacian
from ..geometry.linsolve import Factorization
from ..model.report import RobustStats
from ..model.skin import SkinWeights
from ..model.surface import SurfacePoints, interpolate
from ..geometry.topology import vertex_components, vertex_normals, weld

log = logging.getLogger("asetransfer")


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


def transfer_weights_robust(skin: SkinWeights, target_to_source: SurfacePoints, *, target_vertices, target_faces,
                            registered_source, source_faces, max_distance: float, max_angle: float,
                            smooth_iterations: int, contact_neighbours: int, max_influences: int, prune: float):
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
    stats = RobustStats(accepted_fraction=float(accepted.mean()), inpainted_vertices=int((~accepted & ~copied).sum()),
                        copied_vertices=int(copied.sum()), rejected_by_distance=int((distance > max_distance).sum()),
                        rejected_by_angle=int((angle > max_angle).sum()))
    return SkinWeights.from_sparse(filled, max_influences=max_influences, prune=prune), stats
