"""A skinned surface fitted onto another surface by its joints' transforms: articulated ICP.

The source surface deforms only as its skin lets it: each joint ``j`` carries an affine map
``A_j`` (3 x 4) and a vertex moves by the blend of its joints' maps (linear blend skinning),
so a leg can turn, stretch and thicken but cannot tear from the body or grow where no joint
weights it.  A free per-vertex deformation may draw a tail into the hind legs or fold a
wing onto the back; a fit of bones keeps the parts the skin holds together.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg

from .surface import closest_points
from .topology import face_normals, vertex_areas, vertex_normals


def skinning_matrix(vertices: np.ndarray, joint_index: np.ndarray, joint_weight: np.ndarray,
                    n_joints: int) -> sp.csr_matrix:
    """The linear map from the joints' stacked affine maps to the skinned vertices.

    Parameters
    ----------
    vertices : (N, 3) rest positions.
    joint_index, joint_weight : (N, K) each vertex's joints and weights (rows sum to 1).
    n_joints : J.

    Returns
    -------
    (N, 4 J) sparse ``M`` with ``M[i, 4 j:4 j + 4] = w_ij [v_i, 1]``: the skinned vertices are
    ``M @ T`` for ``T`` (4 J, 3) the joints' maps stacked (``T[4 j:4 j + 4] = A_j^T``).
    """
    n, k = joint_index.shape
    homogeneous = np.c_[vertices, np.ones(n)]
    rows = np.repeat(np.arange(n), 4 * k)
    cols = (joint_index[:, :, None] * 4 + np.arange(4)).reshape(n, -1).ravel()
    vals = (joint_weight[:, :, None] * homogeneous[:, None, :]).ravel()
    return sp.csr_matrix((vals, (rows, cols)), shape=(n, 4 * n_joints))


def nearest_similarity(linear: np.ndarray) -> np.ndarray:
    """(3, 3) the rotation times uniform scale nearest a linear map (its polar factor times the
    mean singular value)."""
    u, s, vt = np.linalg.svd(linear)
    if np.linalg.det(u @ vt) < 0:
        u[:, -1] *= -1
    return (u @ vt) * s.mean()


def _regularisers(parents: np.ndarray, joints: np.ndarray):
    """Sparse rows of the three regularisers over the stacked maps ``T`` (4 J, 3): each joint's
    position moved alike by its map and its parent's (continuity), each map near its
    parent's (smoothness), and each map's linear part (the rows picking it)."""
    n_joints = len(parents)
    child = np.array([j for j in range(n_joints) if parents[j] >= 0], dtype=np.int64)
    parent = np.asarray(parents)[child]
    k = len(child)
    at = np.c_[joints[child], np.ones(k)]
    rows = np.repeat(np.arange(k), 8)
    cols = np.stack([child[:, None] * 4 + np.arange(4), parent[:, None] * 4 + np.arange(4)], 1).reshape(k, 8)
    vals = np.c_[at, -at]
    continuity = sp.csr_matrix((vals.ravel(), (rows, cols.ravel())), shape=(k, 4 * n_joints))
    rows = np.repeat(np.arange(4 * k), 2)
    cols = np.stack([(child[:, None] * 4 + np.arange(4)).ravel(), (parent[:, None] * 4 + np.arange(4)).ravel()], 1)
    smooth = sp.csr_matrix((np.tile([1.0, -1.0], 4 * k), (rows, cols.ravel())), shape=(4 * k, 4 * n_joints))
    linear = (np.arange(n_joints)[:, None] * 4 + np.arange(3)).ravel()
    pick = sp.csr_matrix((np.ones(3 * n_joints), (np.arange(3 * n_joints), linear)), shape=(3 * n_joints, 4 * n_joints))
    return continuity, smooth, pick


def skinned_fit(vertices, faces, joint_index, joint_weight, parents, joints, target_vertices, target_faces, *,
                iterations: int, stiffness: tuple, rigidity: float, smoothness: float):
    """Fit a skinned surface onto a target surface by its joints' affine maps (articulated ICP).

    Each iteration pairs every source vertex with its closest target point ``c_i`` and every
    target vertex ``t_k`` with its closest point ``y_k`` on the deformed source (a pair whose
    normals point apart is dropped), then solves the linear least squares

        min_T  sum_i a_i |x_i - c_i|^2 + sum_k b_k |y_k - t_k|^2
               + lam [ sum_j |(A_j - A_p(j)) [p_j, 1]|^2 + s sum_j |A_j - A_p(j)|_F^2
                       + r / J sum_j |L_j - S_j|_F^2 ]

    where ``a_i``, ``b_k`` are the vertices' shares of their surface's area,
    ``x_i = sum_j w_ij A_j [v_i, 1]``, ``p_j`` is joint ``j``'s rest position, ``L_j``
    ``A_j``'s linear part and ``S_j`` the similarity nearest the last iterate's ``L_j``
    (local-global, as ARAP).  ``lam`` falls geometrically from ``stiffness[0]`` to
    ``stiffness[1]``: bones first move as a near-rigid skeleton, then each fits its part.

    Parameters
    ----------
    vertices, faces : (N, 3), (F, 3) the source surface at rest (both surfaces in one frame,
        of comparable size: the stiffness is relative to a unit-sized body).
    joint_index, joint_weight : (N, K) its skin.
    parents : (J,) parent joint (-1 for a root); joints : (J, 3) rest positions.
    target_vertices, target_faces : the target surface.
    iterations : ICP iterations (>= 1).
    stiffness : (start, end) ``lam``; rigidity : ``r``; smoothness : ``s``.

    Returns
    -------
    fitted : (N, 3) the deformed source vertices; maps : (J, 3, 4) each joint's ``A_j``.
    """
    n_joints = len(parents)
    skin = skinning_matrix(vertices, joint_index, joint_weight, n_joints)
    maps = np.tile(np.eye(4, 3), (n_joints, 1))  # T: (4 J, 3), every A_j the identity
    continuity, smooth, pick = _regularisers(parents, joints)
    shape_rows = continuity.T @ continuity + smoothness * (smooth.T @ smooth)
    rigid_rows = (rigidity / n_joints) * (pick.T @ pick)
    # each vertex counts by its share of its surface's area: a dense face, a sparse body and
    # loose crumbs of triangles weigh what their surface does
    source_share = _shares(vertices, faces)
    target_share = _shares(target_vertices, target_faces)
    target_normals = vertex_normals(target_vertices, target_faces)
    target_face_normals = face_normals(target_vertices, target_faces)
    for it in range(iterations):
        lam = stiffness[0] * (stiffness[1] / stiffness[0]) ** (it / max(iterations - 1, 1))
        fitted = skin @ maps
        keep, closest = _source_to_target(fitted, faces, target_vertices, target_faces, target_face_normals)
        rows, back_keep = _target_to_source(fitted, faces, target_vertices, target_normals)
        weight, back_weight = keep * source_share, back_keep * target_share
        back = rows @ skin  # the deformed source's closest points, linear in T
        similar = np.vstack([nearest_similarity(maps[4 * j:4 * j + 3].T).T for j in range(n_joints)])
        system = (skin.T @ sp.diags(weight) @ skin + back.T @ sp.diags(back_weight) @ back
                  + lam * (shape_rows + rigid_rows) + 1e-9 * sp.identity(4 * n_joints))
        rhs = (skin.T @ (weight[:, None] * closest) + back.T @ (back_weight[:, None] * target_vertices)
               + lam * (rigidity / n_joints) * (pick.T @ similar))
        maps = sp.linalg.splu(system.tocsc()).solve(rhs)
    return skin @ maps, maps.reshape(n_joints, 4, 3).transpose(0, 2, 1)


def _shares(vertices: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """(N,) each vertex's share of the surface's area (a third of each triangle it is a corner of)."""
    areas = vertex_areas(vertices, faces)
    return areas / (areas.sum() or 1.0)


def _source_to_target(fitted, faces, target_vertices, target_faces, target_face_normals):
    """(N,) bool: pairs kept (their normals do not point apart) and (N, 3) closest target
    points of the deformed source's vertices."""
    face, bary, _ = closest_points(fitted, target_vertices, target_faces)
    closest = np.einsum("ij,ijk->ik", bary, target_vertices[target_faces[face]])
    keep = np.einsum("ij,ij->i", vertex_normals(fitted, faces), target_face_normals[face]) > 0
    return keep, closest


def _target_to_source(fitted, faces, target_vertices, target_normals):
    """(K, N) sparse barycentric rows over the source's vertices: each target vertex's closest
    point on the deformed source; and (K,) bool: pairs kept (normals not pointing apart)."""
    face, bary, _ = closest_points(target_vertices, fitted, faces)
    keep = np.einsum("ij,ij->i", target_normals, face_normals(fitted, faces)[face]) > 0
    n = len(target_vertices)
    rows = sp.csr_matrix((bary.ravel(), (np.repeat(np.arange(n), 3), faces[face].ravel())), shape=(n, len(fitted)))
    return rows, keep
