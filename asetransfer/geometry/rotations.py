"""Rotations between directions.

The Kabsch step (the proper rotation closest to a cross-covariance matrix, via SVD) is
:func:`asetransfer.model.transforms.rotation_svd` / ``closest_rotation``, in the model
layer because matrix decomposition needs it too; :func:`~asetransfer.geometry.alignment.umeyama`
and the per-joint Procrustes fits of :mod:`asetransfer.stages.joints` build on it.
"""
from __future__ import annotations

import numpy as np

from ..model.transforms import rotation_angle


def unit(v: np.ndarray) -> np.ndarray:
    """Vectors ``v`` (..., 3) scaled to length 1 (zero vectors stay zero)."""
    length = np.linalg.norm(v, axis=-1, keepdims=True)
    return np.divide(v, length, out=np.zeros_like(v, dtype=np.float64), where=length > 0)


def across(direction: np.ndarray) -> np.ndarray:
    """(3, 2) two orthonormal axes perpendicular to the unit ``direction`` (3,): a basis of
    the plane it is the normal of."""
    return np.linalg.svd(np.eye(3) - np.outer(direction, direction))[0][:, :2]


def swing(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(K, 3, 3) the smallest rotations taking directions ``a`` to ``b`` (K, 3) (a *swing*:
    no twist about the direction).

    With unit ``a``, ``b``, ``v = a x b``, ``c = a . b`` and ``[v]`` the cross-product
    matrix of ``v`` (Rodrigues' formula without trigonometry)::

        R = I + [v] + [v]^2 / (1 + c)

    Opposite directions (``c <= -1 + 1e-9``) have no unique smallest rotation; the
    quadratic term is dropped there (``R = I + [v]``), so callers must avoid them.
    """
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    v = np.cross(a, b)
    c = np.einsum("ij,ij->i", a, b)
    K = np.zeros((len(a), 3, 3))
    K[:, 0, 1], K[:, 0, 2], K[:, 1, 2] = -v[:, 2], v[:, 1], -v[:, 0]
    K -= np.swapaxes(K, 1, 2)
    factor = np.where(c > -1 + 1e-9, 1.0 / (1.0 + np.maximum(c, -1 + 1e-9)), 0.0)
    return np.eye(3) + K + (K @ K) * factor[:, None, None]


def angle_between(a: np.ndarray, b: np.ndarray) -> float:
    """Angle in degrees between vectors ``a`` and ``b`` (3,).

    ``atan2(|a x b|, a . b)`` rather than ``arccos`` of the normalised dot product:
    arccos is ill-conditioned near 0 (equal directions come out 8.5e-7 degrees apart).
    """
    return float(np.degrees(np.arctan2(np.linalg.norm(np.cross(a, b)), a @ b)))


def rotation_about(axis: np.ndarray, angle: np.ndarray) -> np.ndarray:
    """(K, 3, 3) rotations by ``angle`` (K,) radians about unit ``axis`` (K, 3) (Rodrigues)."""
    K = np.zeros((len(axis), 3, 3))
    K[:, 0, 1], K[:, 0, 2], K[:, 1, 2] = -axis[:, 2], axis[:, 1], -axis[:, 0]
    K -= np.swapaxes(K, 1, 2)
    s, c = np.sin(angle)[:, None, None], np.cos(angle)[:, None, None]
    return np.eye(3) + s * K + (1 - c) * (K @ K)


def nearest_axis_frame(rotation: np.ndarray, tolerance_deg: float) -> np.ndarray:
    """``rotation`` (3, 3) snapped to the nearest signed permutation of the axes when it is
    within ``tolerance_deg`` of one (files are drawn on their axes: a target turned to
    face +X keeps its up exactly on Z), else unchanged."""
    column = np.argmax(np.abs(rotation), axis=0)
    snapped = np.zeros((3, 3))
    snapped[column, np.arange(3)] = np.sign(rotation[column, np.arange(3)])
    if len(set(column)) < 3 or np.linalg.det(snapped) < 0.5:
        return rotation
    return snapped if np.degrees(rotation_angle(snapped.T @ rotation)) <= tolerance_deg else rotation
