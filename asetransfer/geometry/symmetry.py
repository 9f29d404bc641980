"""Symmetry planes (spec §3.1.4): reflecting points, the plane bisecting left/right pairs, and
the plane a mesh matches its own reflection about (left/right joint pairs and the spine chain
by name: :mod:`asetransfer.humanoid.naming`)."""
from __future__ import annotations


import numpy as np

from .surface import SurfaceIndex
from .topology import face_normals


def reflect(points: np.ndarray, plane: np.ndarray) -> np.ndarray:
    """Mirror points through the plane ``(a, b, c, d)``: ``n . x = d``, ``|n| = 1``."""
    n, d = plane[:3], plane[3]
    return points - 2.0 * (points @ n - d)[:, None] * n


def plane_from_pairs(points: np.ndarray, pairs) -> np.ndarray:
    """The plane bisecting left/right point pairs: normal = summed L - R direction,
    offset = mean midpoint.  ``None`` if the pairs do not define a direction."""
    left, right = np.array(pairs).T
    n = (points[left] - points[right]).sum(axis=0)
    if not np.linalg.norm(n) > 0:
        return None
    n = n / np.linalg.norm(n)
    return np.append(n, float(np.mean(0.5 * (points[left] + points[right]) @ n)))


def normalize_plane(plane) -> np.ndarray:
    plane = np.asarray(plane, dtype=np.float64)
    norm = np.linalg.norm(plane[:3])
    if not norm > 0:
        raise ValueError("symmetry plane normal is zero")
    return plane / norm


def estimate_symmetry_plane(vertices: np.ndarray, faces: np.ndarray, initial: np.ndarray, *,
                            iterations: int, index: SurfaceIndex | None = None,
                            samples: int = 4000) -> np.ndarray:
    """Refine a mirror plane of a mesh: point-to-plane ICP on its own reflection.

    Each step reflects (a regular subsample of) the vertices through the current
    plane ``n . x = d``, takes the closest surface point ``q`` of each reflection and
    its face normal ``m``, and solves the linearised least-squares problem

        min over (dn, dd)  sum_i ((reflect(x_i; n + dn, d + dd) - q_i) . m_i)^2,  dn _|_ n

    (Gauss-Newton: three unknowns).  Measuring the mismatch along the surface normal
    lets tangential tilt be corrected in a few steps, which plain closest-point
    bisection does only slowly.  Pairs farther apart than 3x the median are ignored.

    Parameters
    ----------
    initial : (4,) starting plane ``(a, b, c, d)``, e.g. the plane bisecting L/R joint pairs.
    iterations : at most this many Gauss-Newton steps (``SkeletonConfig.symmetry_iterations``).
    index : a prebuilt :class:`SurfaceIndex` of the mesh, to share.
    samples : at most this many vertices are used (every k-th vertex: deterministic).

    Returns
    -------
    (4,) plane with unit normal.
    """
    plane = normalize_plane(initial)
    index = index or SurfaceIndex(vertices, faces)
    x = vertices[:: max(1, len(vertices) // samples)]
    normals = face_normals(vertices, faces)
    scale = float(np.ptp(vertices, axis=0).max()) or 1.0
    for _ in range(iterations):
        n, d = plane[:3], plane[3]
        u = np.cross(n, np.eye(3)[np.argmin(np.abs(n))])
        u /= np.linalg.norm(u)
        v = np.cross(n, u)
        s = x @ n - d
        face, _, dist, q = index.closest(x - 2.0 * s[:, None] * n, bary=False)
        keep = dist <= 3.0 * np.median(dist) + 1e-12 * scale
        m = normals[face[keep]]
        xk, sk = x[keep], s[keep]
        nm = m @ n
        r = np.einsum("ij,ij->i", xk - 2.0 * sk[:, None] * n - q[keep], m)
        J = -2.0 * np.stack([(xk @ u) * nm + sk * (m @ u), (xk @ v) * nm + sk * (m @ v), -nm], axis=1)
        step = np.linalg.lstsq(J, -r, rcond=None)[0]
        new_n = n + step[0] * u + step[1] * v
        norm = np.linalg.norm(new_n)
        new = np.append(new_n / norm, (d + step[2]) / norm)
        done = np.abs(new - plane).max() < 1e-9 * max(1.0, scale) and np.abs(step[:2]).max() < 1e-9
        plane = new
        if done:
            break
    return plane
