"""Rigid and affine transform helpers on stacks of 4x4 matrices.

Conventions used everywhere in asetransfer:

* column vectors, ``p_world = M @ [p, 1]``;
* a joint's world matrix is ``world[parent] @ local`` (roots: ``world = local``);
* quaternions are ``(x, y, z, w)``, the glTF order;
* a local transform is ``T @ R @ S`` (translation, rotation, scale), as in glTF.
"""
from __future__ import annotations

import numpy as np

from .hierarchy import hierarchy_depth, topological_order  # noqa: F401  (re-exported: long-standing home)


def global_from_local(local: np.ndarray, parents: np.ndarray) -> np.ndarray:
    """World matrices from local ones: ``world[j] = world[parent[j]] @ local[j]``.

    Parameters
    ----------
    local : (J, 4, 4) local transforms.
    parents : (J,) parent indices, ``-1`` for roots.

    Returns
    -------
    (J, 4, 4) world transforms.
    """
    local = np.asarray(local, dtype=np.float64)
    parents = np.asarray(parents, dtype=np.int64)
    world = np.empty_like(local)
    depth = hierarchy_depth(parents)
    order = np.argsort(depth, kind="stable")  # topological_order: by depth, then index
    # one batched matmul per hierarchy level; level d is order[start[d]:start[d + 1]]
    start = np.searchsorted(depth[order], np.arange(int(depth.max(initial=0)) + 2))
    for d in range(len(start) - 1):
        level = order[start[d]:start[d + 1]]
        p = parents[level]
        if d == 0:
            world[level] = local[level]
        else:
            world[level] = world[p] @ local[level]
    return world


def local_from_global(world: np.ndarray, parents: np.ndarray) -> np.ndarray:
    """Local matrices from world ones: ``local[j] = inv(world[parent[j]]) @ world[j]``."""
    world = np.asarray(world, dtype=np.float64)
    parents = np.asarray(parents, dtype=np.int64)
    local = world.copy()
    child = parents >= 0
    if child.any():
        local[child] = np.linalg.inv(world[parents[child]]) @ world[child]
    return local


def compose_trs(t: np.ndarray, r: np.ndarray, s: np.ndarray | None = None) -> np.ndarray:
    """``T @ R @ S`` matrices from translations (N,3), rotations (N,3,3), scales (N,3)."""
    t = np.asarray(t, dtype=np.float64)
    r = np.asarray(r, dtype=np.float64)
    m = np.zeros(t.shape[:-1] + (4, 4))
    m[..., :3, :3] = r if s is None else r * np.asarray(s, dtype=np.float64)[..., None, :]
    m[..., :3, 3] = t
    m[..., 3, 3] = 1.0
    return m


def decompose_trs(m: np.ndarray):
    """Split affine matrices into translation, rotation and scale (``M = T @ R @ S``).

    The rotation is the closest proper rotation to the 3x3 block (polar
    decomposition); a reflection is carried by a negative x scale.  Shear cannot be
    represented: ``residual`` says how far ``T R S`` is from ``M`` (0 for TRS input).

    Returns
    -------
    t : (N,3), r : (N,3,3), s : (N,3), residual : (N,) max abs difference.
    """
    m = np.asarray(m, dtype=np.float64)
    a = m[..., :3, :3]
    t = m[..., :3, 3].copy()
    s = np.linalg.norm(a, axis=-2)  # column norms
    safe = np.where(s > 0, s, 1.0)
    r = a / safe[..., None, :]
    det = np.linalg.det(r)
    flip = det < 0
    if np.any(flip):
        s = s.copy()
        s[flip, 0] *= -1
        r[flip, :, 0] *= -1
    r = closest_rotation(r)
    recon = compose_trs(t, r, s)
    residual = np.abs(recon - m).reshape(m.shape[:-2] + (16,)).max(axis=-1)
    return t, r, s, residual


def rotation_svd(a: np.ndarray):
    """The Kabsch step: the proper rotation closest to each 3x3 matrix, with the SVD it comes from.

    With ``a = U diag(sigma) V^T`` and ``D = diag(1, 1, sign det(U V^T))`` (a zero sign
    taken as 1), ``R = U D V^T`` maximises ``trace(R^T a)`` over rotations (never
    reflections).  For a cross-covariance ``a = sum_k w_k y_k x_k^T`` it is the rotation
    best taking the ``x_k`` onto the ``y_k`` (Kabsch 1976, Umeyama 1991).

    Parameters
    ----------
    a : (..., 3, 3) matrices.

    Returns
    -------
    rotation (..., 3, 3), sigma (..., 3) singular values, d (..., 3) the diagonal of ``D``.
    """
    u, sigma, vt = np.linalg.svd(np.asarray(a, dtype=np.float64))
    d = np.ones(sigma.shape)
    d[..., 2] = np.sign(np.linalg.det(u @ vt))
    d[d == 0] = 1.0
    return (u * d[..., None, :]) @ vt, sigma, d


def closest_rotation(a: np.ndarray) -> np.ndarray:
    """The proper rotation closest to each 3x3 matrix (Frobenius norm): :func:`rotation_svd`."""
    return rotation_svd(a)[0]


def quat_to_matrix(q: np.ndarray) -> np.ndarray:
    """Rotation matrices (N,3,3) from quaternions (N,4) ``(x, y, z, w)``; normalises.

    The standard formula (e.g. ``R[0, 0] = x^2 - y^2 - z^2 + w^2``) in numpy, written
    as SciPy's ``Rotation.from_quat(q).as_matrix()`` computes it (same bits here), so
    reading a file does not pay SciPy's ~0.15 s import.  Raises ``ValueError`` for a
    zero quaternion, as SciPy does.
    """
    q = np.asarray(q, dtype=np.float64)
    flat = q.reshape(-1, 4)
    norm = np.linalg.norm(flat, axis=1)
    if not (norm > 0).all():
        raise ValueError("Found zero norm quaternions in `quat`.")
    x, y, z, w = (flat / norm[:, None]).T
    x2, y2, z2, w2 = x * x, y * y, z * z, w * w
    xy, zw, xz, yw, yz, xw = x * y, z * w, x * z, y * w, y * z, x * w
    m = np.empty((len(flat), 3, 3))
    m[:, 0, 0], m[:, 0, 1], m[:, 0, 2] = x2 - y2 - z2 + w2, 2 * (xy - zw), 2 * (xz + yw)
    m[:, 1, 0], m[:, 1, 1], m[:, 1, 2] = 2 * (xy + zw), -x2 + y2 - z2 + w2, 2 * (yz - xw)
    m[:, 2, 0], m[:, 2, 1], m[:, 2, 2] = 2 * (xz - yw), 2 * (yz + xw), -x2 - y2 + z2 + w2
    return m.reshape(q.shape[:-1] + (3, 3))


def matrix_to_quat(r: np.ndarray) -> np.ndarray:
    """Quaternions (N,4) ``(x, y, z, w)`` with ``w >= 0`` from rotation matrices.

    SciPy's ``Rotation.from_matrix`` in numpy (writing a rig then does not pay SciPy's
    ~0.1 s ``scipy.spatial`` import): a matrix that is not orthogonal to 1e-12 is first
    replaced by its closest rotation, then the quaternion comes from the largest of the
    trace and the diagonal entries (Shepperd's method, as SciPy chooses it) and is
    normalised.  Agrees with SciPy to a few 1e-16 (tests).
    """
    r = np.asarray(r, dtype=np.float64)
    m = r.reshape(-1, 3, 3).copy()
    if (np.linalg.det(m) <= 0).any():  # as SciPy: a reflection or a null frame is no rotation
        raise ValueError("Non-positive determinant (left-handed or null coordinate frame) in rotation matrix")
    gram = m @ np.swapaxes(m, 1, 2)
    skew = ~np.isclose(gram, np.eye(3), rtol=1e-5, atol=1e-12).all(axis=(1, 2))
    if skew.any():
        m[skew] = closest_rotation(m[skew])
    trace = m[:, 0, 0] + m[:, 1, 1] + m[:, 2, 2]
    choice = np.argmax(np.stack([m[:, 0, 0], m[:, 1, 1], m[:, 2, 2], trace], axis=1), axis=1)
    q = np.empty((len(m), 4))
    for i in range(3):  # the largest diagonal entry i: component i from it, the others from i's row/column
        rows = choice == i
        j, k = (i + 1) % 3, (i + 2) % 3
        a = m[rows]
        q[rows, i] = 1 - trace[rows] + 2 * a[:, i, i]
        q[rows, j] = a[:, j, i] + a[:, i, j]
        q[rows, k] = a[:, k, i] + a[:, i, k]
        q[rows, 3] = a[:, k, j] - a[:, j, k]
    rows = choice == 3
    a = m[rows]
    q[rows, 0] = a[:, 2, 1] - a[:, 1, 2]
    q[rows, 1] = a[:, 0, 2] - a[:, 2, 0]
    q[rows, 2] = a[:, 1, 0] - a[:, 0, 1]
    q[rows, 3] = 1 + trace[rows]
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    q = np.where(q[:, 3:4] < 0, -q, q)  # canonical sign: same file bytes every run
    return q.reshape(r.shape[:-2] + (4,))


def apply(m: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Apply one 4x4 matrix to points (N,3)."""
    m = np.asarray(m, dtype=np.float64)
    return np.asarray(p, dtype=np.float64) @ m[:3, :3].T + m[:3, 3]


def rotation_angle(r: np.ndarray) -> np.ndarray:
    """Angle in radians of rotation matrices (N,3,3)."""
    tr = np.trace(np.asarray(r, dtype=np.float64), axis1=-2, axis2=-1)
    return np.arccos(np.clip((tr - 1.0) / 2.0, -1.0, 1.0))
