"""Exact sparse solves: factor once, back-substitute many times.

The thesis (spec Appendix I) found iterative BiCG unreliable for these systems, so
every system here is solved by a direct factorisation.  Symmetric positive definite
matrices go to QDLDL (``qdldl``: a simplicial LDL^T with AMD ordering), else CHOLMOD
(through ``cholespy``); if neither is installed or the factorisation fails, SuperLU
with COLAMD ordering (never MMD: 100x slower here).  QDLDL first because the
``cholespy`` wheels carry the reference BLAS, which CHOLMOD's supernodal kernels need
to be fast: measured on the d01 dense systems, QDLDL factors the fairing system (26.8k
unknowns) in 0.20 s and the registration system (13.4k) in 0.055 s, CHOLMOD in 0.40 s
and 0.14 s; its solves are slower (one right-hand side at a time: 20 ms against 7 ms
for three), a net ~0.2 s per correspondence.  Every solve is checked: a non-finite or
inaccurate solution raises :class:`NumericalError` instead of leaking NaNs into a rig.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

try:  # QDLDL wheel (a dependency; optional here: CHOLMOD and SuperLU are the fallbacks)
    import qdldl
except ImportError:  # pragma: no cover - depends on the environment
    qdldl = None
try:  # CHOLMOD wheel; optional, SuperLU is the fallback
    import cholespy
except ImportError:  # pragma: no cover - depends on the environment
    cholespy = None


class NumericalError(RuntimeError):
    """A linear system could not be solved accurately (singular or near-singular)."""


#: normwise backward error ``|Ax - b| / (|A| |x| + |b|)`` above which a solve
#: counts as failed; a stable direct solve gives ~1e-15.
BACKWARD_ERROR_TOLERANCE = 1e-9
#: relative residual ``|Ax - b| / |b|`` above which a solve counts as failed: a
#: singular system with an inconsistent right-hand side has a small backward error
#: (through a huge ``x``) but cannot push its residual down.
RESIDUAL_TOLERANCE = 1e-3


class Factorization:
    """A factorised sparse SPD matrix ``A``; :meth:`solve` back-substitutes.

    Parameters
    ----------
    A : (n, n) symmetric positive definite sparse matrix.
    what : a short description used in error messages ("fairing system", ...).
    """

    def __init__(self, A, what: str = "linear system"):
        self.A = sp.csc_matrix(A, dtype=np.float64)
        self.what = what
        self.backend = None
        self._ldl = None
        self._chol = None
        self._lu = None
        if not np.isfinite(self.A.data).all():
            raise NumericalError(f"{what}: matrix has non-finite entries")
        self._norm_A = float(abs(self.A).sum(axis=0).max()) if self.A.nnz else 0.0  # the 1-norm
        if qdldl is not None:
            try:
                self._ldl = qdldl.Solver(sp.triu(self.A, format="csc"), upper=True)
                self.backend = "qdldl"
            except Exception:  # a zero pivot (singular): try CHOLMOD, then LU
                self._ldl = None
        if self._ldl is None and cholespy is not None:
            try:
                A = self.A.copy()
                A.sort_indices()
                self._chol = cholespy.CholeskySolverD(
                    A.shape[0], A.indptr.astype(np.int32), A.indices.astype(np.int32),
                    A.data.copy(), cholespy.MatrixType.CSC)
                self.backend = "cholmod"
            except Exception:  # not positive definite numerically: try LU
                self._chol = None
        if self._ldl is None and self._chol is None:
            self._factor_lu()

    def _factor_lu(self):
        import scipy.sparse.linalg as spla  # the fallback only

        try:
            self._lu = spla.splu(self.A, permc_spec="COLAMD")
        except RuntimeError as e:  # "Factor is exactly singular"
            raise NumericalError(f"{self.what}: {e}") from None
        self.backend = "superlu"

    def solve(self, b: np.ndarray) -> np.ndarray:
        """Solve ``A x = b`` for a vector or an (n, k) block of right-hand sides."""
        b = np.ascontiguousarray(b, dtype=np.float64)
        x = self._solve(b)
        if not self._accurate(x, b) and self._lu is None:
            self._factor_lu()  # CHOLMOD lost accuracy (near-singular): retry with LU
            x = self._solve(b)
        if not self._accurate(x, b):
            raise NumericalError(f"{self.what}: the system is singular or near-singular "
                                 "(is part of the mesh not tied to any marker?)")
        return x

    def _solve(self, b):
        if self._lu is not None:
            return self._lu.solve(b)
        if self._ldl is not None:
            if b.ndim == 1:
                return np.asarray(self._ldl.solve(b), dtype=np.float64)
            return np.stack([self._ldl.solve(np.ascontiguousarray(b[:, k])) for k in range(b.shape[1])], axis=1)
        x = np.zeros_like(b)
        self._chol.solve(b, x)
        return x

    def _accurate(self, x, b) -> bool:
        if not np.isfinite(x).all():
            return False
        r, nb = _norm(self.A @ x - b), _norm(b)
        bound = self._norm_A * _norm(x) + nb
        return bool(r <= BACKWARD_ERROR_TOLERANCE * bound and r <= RESIDUAL_TOLERANCE * nb)


def _norm(a: np.ndarray) -> float:
    """Frobenius norm without BLAS (its threads stall when the cores are busy)."""
    a = np.asarray(a).reshape(-1)
    return float(np.sqrt(np.einsum("i,i->", a, a)))
