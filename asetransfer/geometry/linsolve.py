"""Exact sparse solves: factor once, back-substitute many times.

The thesis (spec Appendix I) found iterative BiCG unreliable for these systems, so
every system here is solved by a direct factorisation.  Symmetric positive definite
matrices go to CHOLMOD (through ``cholespy``); if it is not installed or the
factorisation fails, SuperLU with COLAMD ordering (never MMD: 100x slower here).
Every solve is checked: a non-finite or inaccurate solution raises
:class:`NumericalError` instead of leaking NaNs into a rig.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

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
        self._chol = None
        self._lu = None
        if not np.isfinite(self.A.data).all():
            raise NumericalError(f"{what}: matrix has non-finite entries")
        self._norm_A = spla.norm(self.A, 1)
        if cholespy is not None:
            try:
                A = self.A.copy()
                A.sort_indices()
                self._chol = cholespy.CholeskySolverD(
                    A.shape[0], A.indptr.astype(np.int32), A.indices.astype(np.int32),
                    A.data.copy(), cholespy.MatrixType.CSC)
                self.backend = "cholmod"
            except Exception:  # not positive definite numerically: try LU
                self._chol = None
        if self._chol is None:
            self._factor_lu()

    def _factor_lu(self):
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
