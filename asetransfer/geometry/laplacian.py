"""Discrete Laplace operators on triangle meshes, robust to degenerate triangles.

The cotangent Laplacian ``L`` and the mixed-Voronoi mass ``M`` (Meyer et al. 2003)
give ``Delta x = M^-1 L x``.  The area-weighted squared Laplacian of spec Eq. A I-1a,
``sum_i A_i |Delta x_i|^2``, is the quadratic form of ``L^T M^-1 L``
(:func:`bilaplacian`).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

#: cotangent weights are clamped to this magnitude: a sliver triangle (angle near
#: 0 or 180 degrees) would otherwise give an unbounded weight.
MAX_COTANGENT = 1e3
#: vertex areas are floored at this fraction of the mean vertex area
MIN_AREA_FRACTION = 1e-6


def _corner_geometry(vertices, faces):
    """Per-triangle edge vectors opposite each corner and doubled areas."""
    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64)
    p0, p1, p2 = v[f[:, 0]], v[f[:, 1]], v[f[:, 2]]
    # edge opposite corner k, as a vector
    e = np.stack([p2 - p1, p0 - p2, p1 - p0], axis=1)  # (F, 3, 3)
    dbl_area = np.linalg.norm(np.cross(e[:, 0], e[:, 1]), axis=1)
    return e, dbl_area


def _area_floor(e):
    """A tiny area under which a triangle counts as degenerate (scale-aware)."""
    sq = np.einsum("fkd,fkd->fk", e, e)
    mean_sq = float(sq.mean()) if sq.size else 1.0
    return 1e-12 * max(mean_sq, 1e-300)


def degenerate_triangles(vertices, faces) -> np.ndarray:
    """(F,) True for the triangles the operators treat as zero-area (no cotangent weight, no area)."""
    e, dbl_area = _corner_geometry(vertices, faces)
    return ~(dbl_area > _area_floor(e))


def cotangents(vertices, faces) -> np.ndarray:
    """(F, 3) cotangent of the angle at each triangle corner, clamped to +-MAX_COTANGENT.

    Degenerate (zero-area) triangles get zero cotangents: they add nothing
    to the operator instead of infinities.
    """
    e, dbl_area = _corner_geometry(vertices, faces)
    # angle at corner k lies between the edges opposite the two other corners
    dots = np.stack([-np.einsum("fd,fd->f", e[:, 1], e[:, 2]),
                     -np.einsum("fd,fd->f", e[:, 2], e[:, 0]),
                     -np.einsum("fd,fd->f", e[:, 0], e[:, 1])], axis=1)
    ok = dbl_area > _area_floor(e)
    cot = np.where(ok[:, None], dots / np.where(ok, dbl_area, 1.0)[:, None], 0.0)
    return np.clip(cot, -MAX_COTANGENT, MAX_COTANGENT)


def cotangent_laplacian(vertices, faces) -> sp.csc_matrix:
    """Symmetric cotangent Laplacian ``L`` (n, n), negative semi-definite.

    ``L_ij = (cot a_ij + cot b_ij) / 2`` for an edge ij, ``L_ii = -sum_j L_ij``,
    so ``L @ constant = 0`` exactly.
    """
    n = len(vertices)
    f = np.asarray(faces, dtype=np.int64)
    cot = cotangents(vertices, f)
    # corner k weighs the edge between the two other corners
    i = np.concatenate([f[:, 1], f[:, 2], f[:, 0]])
    j = np.concatenate([f[:, 2], f[:, 0], f[:, 1]])
    w = 0.5 * np.concatenate([cot[:, 0], cot[:, 1], cot[:, 2]])
    off = sp.coo_matrix((np.concatenate([w, w]), (np.concatenate([i, j]), np.concatenate([j, i]))),
                        shape=(n, n)).tocsc()
    return (off - sp.diags(np.asarray(off.sum(axis=1)).ravel())).tocsc()


def mixed_voronoi_areas(vertices, faces) -> np.ndarray:
    """(n,) mixed Voronoi area of each vertex (Meyer et al. 2003).

    Non-obtuse triangles split their area by Voronoi regions, obtuse ones give half
    their area to the obtuse corner and a quarter to the others.  Areas are floored
    at ``MIN_AREA_FRACTION`` of the mean so that ``M^-1`` stays bounded on
    collapsed regions and vertices in no (non-degenerate) triangle.
    """
    n = len(vertices)
    f = np.asarray(faces, dtype=np.int64)
    e, dbl_area = _corner_geometry(vertices, f)
    area = 0.5 * dbl_area
    sq = np.einsum("fkd,fkd->fk", e, e)  # squared length of edge opposite each corner
    cot = cotangents(vertices, f)
    # Voronoi share of corner k: (|e_j|^2 cot_j + |e_l|^2 cot_l) / 8 over the two edges at k
    vor = np.stack([sq[:, 1] * cot[:, 1] + sq[:, 2] * cot[:, 2],
                    sq[:, 2] * cot[:, 2] + sq[:, 0] * cot[:, 0],
                    sq[:, 0] * cot[:, 0] + sq[:, 1] * cot[:, 1]], axis=1) / 8.0
    # obtuse corner: dot of its two edges < 0  <=> cot < 0
    obtuse_at = cot < 0
    any_obtuse = obtuse_at.any(axis=1)
    share = np.where(any_obtuse[:, None], np.where(obtuse_at, 0.5, 0.25) * area[:, None], vor)
    out = np.bincount(f.ravel(), weights=share.ravel(), minlength=n)
    mean = out.mean() if len(out) and out.mean() > 0 else 1.0
    return np.maximum(out, MIN_AREA_FRACTION * mean)


def bilaplacian(vertices, faces, areas=None, seams=None) -> sp.csc_matrix:
    """``L^T M^-1 L``: the matrix of ``sum_i A_i |Delta x_i|^2`` (spec Eq. A I-1a, A I-2a).

    Parameters
    ----------
    vertices, faces : the mesh whose geometry defines the operator.
    areas : optional (n,) vertex areas (default: mixed Voronoi areas).
    seams : optional (P, 2) vertex pairs across a gap between pieces that continue each
        other (a body cut at the joints); the Laplacian rows of their boundary
        vertices see across it (:func:`seamed_laplacian`).

    Returns
    -------
    (n, n) symmetric positive semi-definite sparse matrix.
    """
    L = cotangent_laplacian(vertices, faces)
    if seams is not None and len(seams):
        L = seamed_laplacian(L, vertices, faces, seams)
    a = mixed_voronoi_areas(vertices, faces) if areas is None else np.asarray(areas, dtype=np.float64)
    return (L.T @ sp.diags(1.0 / a) @ L).tocsc()


def boundary_vertices(n_vertices: int, faces) -> np.ndarray:
    """(n,) True for vertices on an edge used by one triangle only."""
    f = np.asarray(faces, dtype=np.int64)
    e = np.sort(np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]]), axis=1)
    n = max(int(n_vertices), 1)
    # one integer per edge: 1-D unique is several times faster than unique rows
    keys, count = np.unique(e[:, 0] * n + e[:, 1], return_counts=True)
    once = keys[count == 1]
    out = np.zeros(n_vertices, dtype=bool)
    out[once // n] = True
    out[once % n] = True
    return out


def seamed_laplacian(L: sp.spmatrix, vertices, faces, seams) -> sp.csc_matrix:
    """``L`` with the rows of boundary vertices that have partners across a seam completed.

    A boundary vertex's umbrella is one-sided: for the input shape its row points into
    its piece with the size of an edge, where inside the surface it measures curvature,
    so smoothing (Eq. A I-1a) pulls every cut open boundary into its piece and the
    pieces shrink.  Where the cut is only a gap in a continuing surface, the missing
    half of the umbrella lies across it: each such row gets its partners ``P_i``, each
    weighing ``c_i / |P_i|``, with ``c_i >= 0`` the weight that makes the row of the
    input shape smallest (``c_i = -r_i . u_i / |u_i|^2``, ``r_i = (L x)_i``, ``u_i`` the
    mean partner minus ``x_i``): what is left of the row is the part the gap cannot
    explain (curvature).  Rows still sum to zero; other rows are unchanged.
    """
    n = L.shape[0]
    x = np.asarray(vertices, dtype=np.float64)
    seams = np.asarray(seams, dtype=np.int64).reshape(-1, 2)
    pairs = np.concatenate([seams, seams[:, ::-1]])
    pairs = np.unique(pairs[pairs[:, 0] != pairs[:, 1]], axis=0)
    keep = boundary_vertices(n, faces)[pairs[:, 0]]
    pairs = pairs[keep]
    if not len(pairs):
        return sp.csc_matrix(L)
    count = np.bincount(pairs[:, 0], minlength=n).astype(np.float64)
    u = np.zeros_like(x)
    np.add.at(u, pairs[:, 0], x[pairs[:, 1]])
    has = count > 0
    u[has] = u[has] / count[has, None] - x[has]
    r = np.asarray(L @ x)
    uu = np.einsum("ij,ij->i", u, u)
    c = np.where(uu > 0, -np.einsum("ij,ij->i", r, u) / np.where(uu > 0, uu, 1.0), 0.0)
    c = np.maximum(c, 0.0)
    w = c[pairs[:, 0]] / count[pairs[:, 0]]
    extra = sp.coo_matrix((w, (pairs[:, 0], pairs[:, 1])), shape=(n, n)).tocsc()
    return (sp.csc_matrix(L) + extra - sp.diags(np.asarray(extra.sum(axis=1)).ravel())).tocsc()
