"""The skeleton and skin of an FBX scene: joint models, bind matrices from skin clusters
and ``BindPose`` objects, per-vertex influences from cluster ``Indexes``/``Weights``.

Joints are ``LimbNode``/``Limb``/``Root`` models and every model a skin cluster binds,
depth-first (children in file order); other nodes between joints are folded into the
world transforms.
"""
from __future__ import annotations

import logging

import numpy as np
import scipy.sparse as sp

from ..model.skin import SkinWeights
from .fbx_scene import FbxScene, fbx_matrix, geometric_matrix

log = logging.getLogger("asetransfer")

JOINT_TYPES = ("LimbNode", "Limb", "Root")


def skeleton_models(scene: FbxScene, bound: set) -> tuple:
    """The joint models, depth-first (children in file order), and (J,) parent joint indices.

    Joints: ``LimbNode``/``Limb``/``Root`` models and the models skin clusters bind (``bound``).
    """
    is_joint = {m for m in scene.of_class("Model") if scene.kinds[m] in JOINT_TYPES or m in bound}
    below = {}
    for m in sorted(scene.parent_model, key=scene.order.get):
        a = scene.parent_model[m]
        while a != 0 and a not in is_joint:
            a = scene.parent_model.get(a, 0)
        if m in is_joint:
            below.setdefault(a, []).append(m)
    joints, parents, stack = [], [], [(m, -1) for m in reversed(below.get(0, []))]
    while stack:
        m, p = stack.pop()
        joints.append(m)
        parents.append(p)
        stack.extend((c, len(joints) - 1) for c in reversed(below.get(m, [])))
    return joints, np.array(parents, dtype=np.int64)


def cluster_matrices(scene: FbxScene, cluster) -> tuple:
    """A cluster's (4, 4) ``Transform`` and ``TransformLink`` (None where missing)."""
    node = scene.objects[cluster]
    out = []
    for key in ("Transform", "TransformLink"):
        c = node.child(key)
        vals = c.props[0] if c is not None and c.props else None
        ok = isinstance(vals, np.ndarray) and vals.size == 16 and np.isfinite(vals).all()
        out.append(fbx_matrix(vals) if ok else None)
    return tuple(out)


def bind_pose_matrices(scene: FbxScene) -> dict:
    """model id -> (4, 4) world matrix from the file's ``BindPose`` objects."""
    out = {}
    for pose in scene.of_class("Pose", "BindPose"):
        for pn in scene.objects[pose].all("PoseNode"):
            node, mat = pn.child("Node"), pn.child("Matrix")
            if node is not None and mat is not None and node.props and mat.props \
                    and isinstance(mat.props[0], np.ndarray) and mat.props[0].size == 16:
                out.setdefault(node.props[0], fbx_matrix(mat.props[0]))
    return out


def joint_bind_matrices(scene: FbxScene, joints, parents, links: dict) -> np.ndarray:
    """(J, 4, 4) bind-pose world matrix of every joint.

    ``links``: joint model -> ``TransformLink``.  A joint no cluster binds takes its
    ``BindPose`` matrix, else its parent's bind matrix times its rest offset from the
    parent (its rest matrix for a root).
    """
    pose = bind_pose_matrices(scene)
    rest = np.array([scene.world(m) for m in joints])
    bind = np.empty_like(rest)
    for j, m in enumerate(joints):  # parents come first (depth-first order)
        if m in links:
            bind[j] = links[m]
        elif m in pose:
            bind[j] = pose[m]
        elif parents[j] >= 0:
            bind[j] = bind[parents[j]] @ np.linalg.inv(rest[parents[j]]) @ rest[j]
        else:
            bind[j] = rest[j]
    return bind


def skin_clusters(scene: FbxScene, geometry) -> list:
    """(cluster, joint model) of every cluster of the skins deforming ``geometry``."""
    out = []
    for skin in scene.linked(geometry, "Deformer", "Skin"):
        for c in scene.linked(skin, "Deformer", "Cluster"):
            bone = scene.linked(c, "Model")
            if bone:
                out.append((c, bone[0]))
    return out


def cluster_links(scene: FbxScene, clusters: list) -> dict:
    """Joint model -> ``TransformLink``; clusters of several meshes must agree on a joint."""
    links = {}
    for c, m in clusters:
        link = cluster_matrices(scene, c)[1]
        if link is None:
            continue
        if m in links and not np.allclose(links[m], link, atol=1e-5 * max(1.0, np.abs(link).max())):
            scene.fail(f"skin clusters disagree on the bind pose of joint {scene.names[m]!r}")
        links.setdefault(m, link)
    return links


def mesh_bind_matrix(scene: FbxScene, model, clusters: list) -> np.ndarray:
    """(4, 4) world matrix of a skinned mesh's geometry at bind time.

    A cluster's ``Transform`` is stored as ``inv(TransformLink) @ mesh matrix`` (the FBX
    SDK's files, assimp's and Blender's alike; reading it as the mesh matrix itself misplaced
    an assimp-written mesh by up to 1 m).  Without cluster matrices: the node's.
    """
    for c, _ in clusters:
        transform, link = cluster_matrices(scene, c)
        if transform is not None and link is not None:
            return link @ transform @ geometric_matrix(scene.props(model))
    return scene.geometry_world(model)


def cluster_influences(scene: FbxScene, clusters: list, jindex: dict, n: int) -> tuple:
    """(n, k) joint indices and weights of one mesh's vertices from its clusters."""
    rows, cols, vals = [], [], []
    for c, m in clusters:
        node = scene.objects[c]
        idx, w = node.child("Indexes"), node.child("Weights")
        if idx is None or w is None or not idx.props or not w.props:
            continue
        if not all(isinstance(x.props[0], np.ndarray) for x in (idx, w)) or idx.props[0].dtype.kind not in "iu":
            scene.fail(f"skin cluster of joint {scene.names[m]!r} has malformed Indexes or Weights")
        idx, w = idx.props[0].astype(np.int64), w.props[0].astype(np.float64)
        if idx.shape != w.shape:
            scene.fail(f"skin cluster of joint {scene.names[m]!r} has {len(idx)} vertex indices and {len(w)} weights")
        if not np.isfinite(w).all() or (w < -1e-6).any():
            scene.fail(f"skin cluster of joint {scene.names[m]!r} has negative, NaN or infinite weights")
        idx, w = idx[w > 0], w[w > 0]  # an entry of weight 0 binds nothing, whatever index it names (-1 padding)
        outside = (idx < 0) | (idx >= n)
        if outside.any():
            scene.fail(f"skin cluster of joint {scene.names[m]!r} names vertex {int(idx[outside][0])}, "
                       f"the mesh has {n} vertices")
        rows.append(idx)
        cols.append(np.full(len(idx), jindex[m]))
        vals.append(np.maximum(w, 0.0))
    m = sp.csr_matrix((np.concatenate(vals or [[]]), (np.concatenate(rows or [[]]).astype(np.int64),
                                                      np.concatenate(cols or [[]]).astype(np.int64))),
                      shape=(n, len(jindex)))
    total = np.asarray(m.sum(axis=1)).ravel()
    raw = SkinWeights.from_sparse(m)
    return raw.indices, raw.weights * total[:, None]


def rigid_piece(scene: FbxScene, model, *, jindex: dict, bind, rest, verts) -> tuple | None:
    """A static mesh below a joint, bound to it with weight 1: ``(matrix, indices, weights)``,
    the (4, 4) matrix that places its points in the joint's bind pose (``B_j inv(G_j) M``) and
    its (n, 1) influences.  None if no joint is above."""
    a = scene.parent_model.get(model, 0)
    while a != 0 and a not in jindex:
        a = scene.parent_model.get(a, 0)
    if a == 0:
        log.warning("%s: mesh %r is neither skinned nor below a joint; left out", scene.path, scene.names[model])
        return None
    j = jindex[a]
    return bind[j] @ np.linalg.inv(rest[j]) @ scene.geometry_world(model), np.full((len(verts), 1), j), \
        np.ones((len(verts), 1))

