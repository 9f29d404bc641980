"""Skin weights as two fixed-width arrays (UsdSkel style) and linear blend skinning."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # SciPy is imported where used: reading a mesh needs none
    import scipy.sparse as sp


@dataclass(eq=False)
class SkinWeights:
    """Per-vertex joint influences.

    Attributes
    ----------
    indices : (N, K) int32 joint indices, largest weight first.
    weights : (N, K) float64, non-negative, each row sums to 1; unused slots hold
        weight 0 and index 0.
    n_joints : number of joints the indices refer to.
    """

    indices: np.ndarray
    weights: np.ndarray
    n_joints: int

    def __post_init__(self):
        self.indices = np.ascontiguousarray(self.indices, dtype=np.int32)
        self.weights = np.ascontiguousarray(self.weights, dtype=np.float64)
        if self.indices.ndim != 2 or self.indices.shape != self.weights.shape:
            raise ValueError("skin indices and weights must be (N, K) arrays of the same shape")
        self.n_joints = int(self.n_joints)

    def validate(self, tol: float = 1e-6) -> None:
        """Raise ``ValueError`` if weights are not finite, negative, unnormalised or out of range."""
        if not np.isfinite(self.weights).all():
            raise ValueError("skin weights contain NaN or infinite values")
        if (self.weights < 0).any():
            raise ValueError("skin weights contain negative values")
        if self.indices.size and (self.indices.min() < 0 or self.indices.max() >= self.n_joints):
            raise ValueError(f"skin refers to a joint index outside 0..{self.n_joints - 1}")
        err = np.abs(self.weights.sum(axis=1) - 1.0)
        if len(err) and err.max() > tol:
            v = int(np.argmax(err))
            raise ValueError(f"skin weights of vertex {v} sum to {self.weights[v].sum():.6g}, not 1")

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_dense(cls, w: np.ndarray, max_influences: int | None = None, prune: float = 0.0) -> "SkinWeights":
        """From a dense (N, J) matrix (or a scipy sparse one); see :meth:`from_sparse`."""
        import scipy.sparse as sp
        return cls.from_sparse(sp.csr_matrix(w), max_influences=max_influences, prune=prune)

    @classmethod
    def from_sparse(cls, w: sp.spmatrix, max_influences: int | None = None, prune: float = 0.0) -> "SkinWeights":
        """From a sparse (N, J) matrix of non-negative weights.

        Keeps at most ``max_influences`` largest weights per vertex, drops weights
        below ``prune`` (after a first normalisation), and renormalises rows to 1.
        Ties are broken by the lower joint index so results are reproducible.
        Rows that sum to zero stay zero (the caller decides what to do with them).
        """
        import scipy.sparse as sp
        w = sp.csr_matrix(w, dtype=np.float64)
        w.sum_duplicates()
        w.eliminate_zeros()
        n, nj = w.shape
        counts = np.diff(w.indptr)
        k = int(counts.max(initial=0))
        idx = np.zeros((n, max(k, 1)), dtype=np.int64)
        val = np.zeros((n, max(k, 1)))
        rows = np.repeat(np.arange(n), counts)
        slot = np.arange(w.nnz) - np.repeat(w.indptr[:-1], counts)
        idx[rows, slot] = w.indices
        val[rows, slot] = w.data
        return cls._finish(idx, val, nj, max_influences, prune)

    @classmethod
    def from_influences(cls, indices, weights, n_joints: int, max_influences: int | None = None,
                        prune: float = 0.0) -> "SkinWeights":
        """From (N, K) joint indices and weights that may repeat joints or be unnormalised."""
        indices = np.asarray(indices, dtype=np.int64)
        weights = np.asarray(weights, dtype=np.float64)
        n, k = indices.shape
        rows = np.repeat(np.arange(n), k)
        import scipy.sparse as sp
        m = sp.csr_matrix((weights.ravel(), (rows, indices.ravel())), shape=(n, n_joints))
        return cls.from_sparse(m, max_influences=max_influences, prune=prune)

    @classmethod
    def _finish(cls, idx, val, nj, max_influences, prune):
        # sort by weight descending, then joint index ascending (deterministic)
        order = np.lexsort((idx, -val), axis=1) if idx.shape[1] > 1 else np.zeros_like(idx)
        idx = np.take_along_axis(idx, order, axis=1)
        val = np.take_along_axis(val, order, axis=1)
        if prune > 0:
            s = val.sum(axis=1, keepdims=True)
            val = np.where(val < prune * np.where(s > 0, s, 1.0), 0.0, val)
        if max_influences is not None and val.shape[1] > max_influences:
            idx, val = idx[:, :max_influences], val[:, :max_influences]
        s = val.sum(axis=1, keepdims=True)
        val = val / np.where(s > 0, s, 1.0)
        idx = np.where(val > 0, idx, 0)
        # drop trailing columns that are empty for every vertex
        used = int((val > 0).sum(axis=1).max(initial=0))
        used = max(used, 1)
        return cls(idx[:, :used], val[:, :used], nj)

    # ------------------------------------------------------------------ views
    @property
    def n_vertices(self) -> int:
        return len(self.indices)

    def to_sparse(self) -> sp.csr_matrix:
        """(N, J) CSR matrix of the weights."""
        n, k = self.indices.shape
        rows = np.repeat(np.arange(n), k)
        import scipy.sparse as sp
        m = sp.csr_matrix((self.weights.ravel(), (rows, self.indices.ravel())), shape=(n, self.n_joints))
        m.eliminate_zeros()
        return m

    def to_dense(self) -> np.ndarray:
        """(N, J) dense weights."""
        return self.to_sparse().toarray()

    def influence_counts(self) -> np.ndarray:
        """(N,) number of non-zero weights per vertex."""
        return (self.weights > 0).sum(axis=1)

    def subset(self, rows: np.ndarray) -> "SkinWeights":
        """The weights of some vertices, in the given order."""
        return SkinWeights(self.indices[rows], self.weights[rows], self.n_joints)


def linear_blend_skinning(vertices: np.ndarray, skin: SkinWeights, matrices: np.ndarray) -> np.ndarray:
    """Linear blend skinning: ``v' = sum_k w_k M_{j_k} [v, 1]``.

    Parameters
    ----------
    vertices : (N, 3) bind-pose positions.
    skin : the weights.
    matrices : (J, 4, 4) skinning matrices (``world @ inverse_bind``).

    Returns
    -------
    (N, 3) deformed positions.
    """
    m = np.asarray(matrices, dtype=np.float64)
    blended = np.einsum("nk,nkij->nij", skin.weights, m[skin.indices][:, :, :3, :])  # (N, 3, 4)
    return np.einsum("nij,nj->ni", blended[:, :, :3], vertices) + blended[:, :, 3]
