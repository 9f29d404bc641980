"""The rig of a glTF document: joints and their bind pose from the skins, the skeleton
from the joint nodes, skin weights from the pieces.

Joints are the nodes the skins list, the first skin's ``joints`` order first.  Non-joint
nodes between or above joints are folded into the joints' local transforms; scale in node
transforms is kept; a mirrored joint is refused.  When every weighted joint's rest world
matrix times its inverse bind matrix is one matrix other than the identity (quantised
positions, an armature scaled over centimetre positions), the rig is read in the frame a
viewer shows (:func:`display_transform`).  Rigid meshes parented under a joint are bound to
it with weight 1; weights are normalised (with a warning, :func:`~.assembly.normalise_weights`);
morph targets are the rig's blend shapes (:mod:`.gltf_shapes`).
"""
from __future__ import annotations

import logging

import numpy as np

from ..model.rig import Rig
from ..model.skeleton import Skeleton
from ..model.transforms import decompose_trs, quat_to_matrix
from .assembly import merge_pieces, normalise_weights, stack_influences, unique_joint_names
from .glb import is_index
from .vrm import humanoid_joints
from .gltf_document import GltfDocument, GltfPiece
from .gltf_shapes import read_morph_targets

log = logging.getLogger("asetransfer")

#: node extras key under which we store a joint's orientation (see skeleton.py)
EXTRAS_KEY = "asetransfer"


def nearly_singular(m: np.ndarray) -> np.ndarray:
    """(K,) True where the (K, 3, 3) matrices are singular or nearly so (relative to their size)."""
    size = np.maximum(np.abs(m).max(axis=(1, 2)), 1e-300)
    with np.errstate(over="ignore", invalid="ignore"):
        return ~(np.abs(np.linalg.det(m)) > 1e-12 * size ** 3)


def rig_from_document(d: GltfDocument, pieces: list) -> Rig:
    """The rig of a parsed document and its :meth:`~.gltf_document.GltfDocument.pieces` (what
    :func:`~.gltf_read.read_gltf_rig` returns)."""
    skinned = [p for p in pieces if p.skin is not None]
    if not d.skins:
        d.fail("has no skin (no skeleton bound to the mesh)")
    if not skinned:
        d.fail("has a skin but no triangle mesh bound to it")
    joint_nodes, inverse_bind = skin_joints(d, list(dict.fromkeys(p.skin for p in skinned)))
    flip = _mirrored_joints(d, joint_nodes, inverse_bind)
    inverse_bind = dict(inverse_bind)
    for j in np.flatnonzero(flip):  # B F: inverse F inv(B), F its own inverse
        inverse_bind[joint_nodes[j]] = _FLIP_X @ inverse_bind[joint_nodes[j]]
    display = display_transform(d, skinned, inverse_bind)
    if display is not None:
        _to_display_frame(skinned, display)
        inv_display = np.linalg.inv(display)
        inverse_bind = {n: m @ inv_display for n, m in inverse_bind.items()}
    skeleton = _skeleton(d, joint_nodes, inverse_bind, flip)
    jindex = {n: j for j, n in enumerate(joint_nodes)}
    rest_world = _flipped(d.world[joint_nodes], flip)
    kept, rows = [], []
    for p in pieces:
        row = (_skinned_influences(d, p, jindex) if p.skin is not None else
               _rigid_influences(d, p, jindex, skeleton.bind_world, rest_world))
        if row is not None:
            rows.append(row)
            kept.append(p)
    mesh = merge_pieces(d.path, kept)
    mesh.look = d.look(kept)
    idx, w = stack_influences(rows)
    skin = normalise_weights(d.path, mesh, idx, w, len(joint_nodes))
    _check_bind_spread(d, skeleton, skin, mesh)
    try:
        return Rig(mesh, skeleton, skin, read_morph_targets(mesh.look, mesh.n_vertices))
    except ValueError as e:
        d.fail(str(e))


def _check_bind_spread(d: GltfDocument, skeleton: Skeleton, skin, mesh) -> None:
    """Fail when the weighted joints bind at one point: a skeleton without a shape to place
    (a skin without ``inverseBindMatrices`` reads them as identities, every joint bound at
    the origin, and a viewer shows its mesh moved by the joints' rest transforms)."""
    weighted = np.unique(skin.indices[skin.weights > 0])
    if len(weighted) < 2:
        return
    at = skeleton.bind_world[weighted, :3, 3]
    size = float(np.ptp(mesh.vertices, axis=0).max()) if mesh.n_vertices else 0.0
    if float(np.ptp(at, axis=0).max()) > BIND_SPREAD * size:
        return
    missing = [s for s in range(len(d.skins)) if d.skins[s].get("inverseBindMatrices") is None]
    why = (f" (skin {missing[0]} has no inverseBindMatrices: glTF reads them as identities, binding "
           "every joint at the origin); export it with its inverse bind matrices") if missing else ""
    d.fail(f"its {len(weighted)} weighted joints all bind at one point: the skeleton has no shape to "
           f"place{why}")


#: weighted joints bound within this fraction of the mesh's size of each other bind at one point
BIND_SPREAD = 1e-6


# ---------------------------------------------------------------------- joints
def skin_joints(d: GltfDocument, skins: list) -> tuple:
    """The joint nodes of ``skins`` and their inverse bind matrices.

    Returns
    -------
    joint_nodes : node indices, the first skin's ``joints`` order first, then joints
        only later skins add.
    inverse_bind : node index -> (4, 4) inverse bind matrix (skins sharing a joint must agree).
    """
    joint_nodes, inverse_bind = [], {}
    for s in skins:
        jl = _skin_joint_list(d, s)
        m = _inverse_bind_matrices(d, s, jl)
        _check_inverse_binds(d, s, jl, m)
        for k, ji in enumerate(jl):
            if ji in inverse_bind:
                if not np.allclose(inverse_bind[ji], m[k], atol=1e-5 * max(1.0, np.abs(m[k]).max())):
                    d.fail(f"skins disagree on the bind pose of joint {d.node_name(ji)!r}")
            else:
                inverse_bind[ji] = m[k]
                joint_nodes.append(ji)
    return joint_nodes, inverse_bind


def _skin_joint_list(d: GltfDocument, s: int) -> list:
    """Skin ``s``'s ``joints``: existing node indices, none twice."""
    jl = d.skins[s].get("joints")
    if not isinstance(jl, list) or not jl:
        # early COLLADA2GLTF wrote glTF 1.0's jointNames into files marked 2.0 (Khronos' first RiggedFigure)
        old = " (it has jointNames, glTF 1.0's: export the file again as glTF 2.0)" if "jointNames" in d.skins[s] else ""
        d.fail(f"skin {s} has no joints{old}")
    for ji in jl:
        if not is_index(ji) or not 0 <= ji < len(d.nodes):
            d.fail(f"skin {s} lists joint node {ji!r}, which does not exist")
    if len(set(jl)) != len(jl):
        d.fail(f"skin {s} lists the same joint node twice")
    return jl


def _inverse_bind_matrices(d: GltfDocument, s: int, jl: list) -> np.ndarray:
    """(len(jl), 4, 4) inverse bind matrices of skin ``s`` (identities when it has none)."""
    skin = d.skins[s]
    if skin.get("inverseBindMatrices") is None:
        return np.tile(np.eye(4), (len(jl), 1, 1))
    m = d.acc.read(skin["inverseBindMatrices"], f"skin {s} inverseBindMatrices")
    if m.shape != (len(jl), 16):
        d.fail(f"skin {s} has {len(m)} inverse bind matrices for {len(jl)} joints")
    return m.reshape(-1, 4, 4).transpose(0, 2, 1)  # column-major in glTF


def _check_inverse_binds(d: GltfDocument, s: int, joint_nodes: list, m: np.ndarray) -> None:
    """Fail unless every (J, 4, 4) inverse bind matrix ``m`` is finite, invertible and affine.

    All at once (one vectorised test per rule, the first joint failing it named), so
    that skins of tens of thousands of joints read in linear time without per-joint overhead.
    """
    finite = np.isfinite(m).all(axis=(1, 2))
    checks = ((~finite, "has NaN or infinite values"),
              (finite & nearly_singular(np.where(finite[:, None, None], m, 0.0)[:, :3, :3]), "is singular"),
              (finite & (np.abs(m[:, 3] - [0.0, 0.0, 0.0, 1.0]) > 1e-6).any(axis=1),
               "is not affine (its last row must be 0 0 0 1)"))
    first_bad = np.flatnonzero(np.any([bad for bad, _ in checks], axis=0))
    for k in first_bad[:1]:  # the first joint (in skin order) breaking a rule, rules in order
        for bad, what in checks:
            if bad[k]:
                d.fail(f"skin {s} inverse bind matrix of joint {d.node_name(joint_nodes[k])!r} {what}")


def _joint_parents(d: GltfDocument, joint_nodes: list) -> tuple:
    """(J,) parent joint of each joint (its nearest joint ancestor node, -1 if none) and
    (J,) True where that node is the joint's direct parent (no non-joint node folded in)."""
    jindex = {n: j for j, n in enumerate(joint_nodes)}
    parents = np.full(len(joint_nodes), -1, dtype=np.int64)
    direct = np.zeros(len(joint_nodes), bool)
    nearest = {}  # node -> its nearest joint-or-root ancestor-or-self: each chain of nodes walked once
    for j, n in enumerate(joint_nodes):
        p = d.parent[n]
        direct[j] = p < 0 or p in jindex
        walked = []
        while p >= 0 and p not in jindex and p not in nearest:
            walked.append(p)
            p = d.parent[p]
        p = nearest.get(p, p)
        nearest.update((w, p) for w in walked)
        parents[j] = jindex.get(p, -1)
    return parents, direct


def _joint_local_matrices(d: GltfDocument, joint_nodes: list, parents, direct, flip) -> np.ndarray:
    """(J, 4, 4) joint transforms relative to the parent joint, ``inv(G_parent) @ G`` (``G``
    with the ``flip`` of :func:`_flipped`), with the file's own node matrix where no node is
    folded in and nothing flipped (exact values)."""
    world = _flipped(d.world[joint_nodes], flip)
    singular = nearly_singular(world[:, :3, :3])
    if singular.any():
        d.fail(f"joint {d.node_name(joint_nodes[int(np.argmax(singular))])!r} has a "
               f"singular transform (a zero scale on it or on a node above it)")
    local = world.copy()
    child = parents >= 0
    local[child] = np.linalg.inv(world[parents[child]]) @ world[child]
    exact = direct & ~flip & ~np.where(child, flip[np.maximum(parents, 0)], False)
    local[exact] = d.local[np.asarray(joint_nodes)[exact]]
    return local


def _joint_orientations(d: GltfDocument, joint_nodes: list, direct, r: np.ndarray) -> tuple:
    """(J, 3, 3) orient and rotation with ``orient @ rotation = r``: the orient stored in our
    node extras where a joint has one (and no node folded in), else ``orient = r``."""
    orient, rotation = r.copy(), np.tile(np.eye(3), (len(joint_nodes), 1, 1))
    for j, n in enumerate(joint_nodes):
        ours = d.nodes[n].get("extras")
        ours = ours.get(EXTRAS_KEY) if isinstance(ours, dict) else None
        q = ours.get("orient") if isinstance(ours, dict) else None
        if q is not None and direct[j]:
            if isinstance(q, list) and len(q) == 4 \
                    and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in q) \
                    and np.isfinite(q).all() and np.linalg.norm(q) > 0:
                orient[j] = quat_to_matrix(np.array(q, dtype=np.float64))
                rotation[j] = orient[j].T @ r[j]
            else:
                log.warning("%s: joint %r has a malformed orient in its extras; ignored", d.path, d.node_name(n))
    return orient, rotation


def display_transform(d: GltfDocument, skinned: list, inverse_bind: dict):
    """The one (4, 4) matrix ``S`` the file's skin applies to every vertex at rest, or None.

    A viewer shows a skinned vertex ``v`` at rest as ``sum_j w_j (W_j B_j) v`` with ``W_j``
    the joint's rest world matrix and ``B_j`` its inverse bind matrix.  Usually ``W_j B_j = I``
    (the file's positions are what is shown).  When every weighted joint has the same
    ``W_j B_j = S != I`` the positions are in another frame than the one shown: quantised
    positions (KHR_mesh_quantization: gltfpack folds the dequantisation into ``B``), or an
    armature node scaled 0.01 over centimetre positions (FBX-to-glTF).  The shown frame is
    the one users pick markers in, so the rig is read in it.  Joints that disagree (a rig
    saved posed) leave the file's positions as its bind pose: None.
    """
    mats = []
    for p in skinned:
        jl = d.skins[p.skin]["joints"]
        used = set()
        for j, w in p.influences:
            used.update(int(k) for k in np.unique(j[w > 0]) if 0 <= k < len(jl))
        mats += [d.world[jl[k]] @ inverse_bind[jl[k]] for k in sorted(used)]
    if not mats:
        return None
    mats = np.array(mats)
    common = mats[0]
    tol = 1e-5 * max(1.0, float(np.abs(common).max()))
    if not (np.abs(mats - common).max() <= tol) or np.abs(common - np.eye(4)).max() <= 1e-6 \
            or nearly_singular(common[None, :3, :3])[0]:
        return None
    return common


def _to_display_frame(pieces: list, display: np.ndarray) -> None:
    """Move skinned pieces' positions and normals by the (4, 4) ``display`` matrix, in place."""
    inv_t = np.linalg.inv(display[:3, :3]).T
    for p in pieces:
        p.move(display)
        if p.normals is not None:
            nm = p.normals @ inv_t.T
            p.normals = nm / np.maximum(np.linalg.norm(nm, axis=1, keepdims=True), 1e-30)


#: the reflection that turns a mirrored joint frame into a rotation: its local X axis reversed
_FLIP_X = np.diag([-1.0, 1.0, 1.0, 1.0])


def _flipped(world: np.ndarray, flip: np.ndarray) -> np.ndarray:
    """(J, 4, 4) ``world`` with the joints ``flip`` marks turned by :data:`_FLIP_X` (``G F``)."""
    out = world.copy()
    out[flip] = world[flip] @ _FLIP_X
    return out


def _mirrored_joints(d: GltfDocument, joint_nodes: list, inverse_bind: dict) -> np.ndarray:
    """(J,) True for the joints whose rest and bind transforms mirror (negative determinant:
    a negative scale on them or above them, as a DCC's mirror leaves).

    Joint rotations cannot represent a reflection, so such a joint is read with its local X
    axis reversed (``G F`` at rest, ``B F`` at bind): its position and every skinning matrix
    ``G inv(B)`` are unchanged, so the mesh deforms exactly as the file says (with a warning
    naming the joint).  A joint mirrored at rest and not at bind (or the reverse) has no such
    reading and fails.
    """
    world = d.world[joint_nodes][:, :3, :3]
    bind = np.array([inverse_bind[n][:3, :3] for n in joint_nodes])
    rest_mirrored, bind_mirrored = np.linalg.det(world) < 0, np.linalg.det(bind) < 0
    if (rest_mirrored != bind_mirrored).any():
        j = int(np.flatnonzero(rest_mirrored != bind_mirrored)[0])
        d.fail(f"joint {d.node_name(joint_nodes[j])!r} is mirrored in its {'rest' if rest_mirrored[j] else 'bind'} "
               "pose only (a negative scale, determinant < 0); apply the scale in the DCC tool "
               "(Blender: Apply > Scale) and export again")
    if rest_mirrored.any():
        j = int(np.flatnonzero(rest_mirrored)[0])
        log.warning("%s: %d joint(s) mirrored by a negative scale (first %r): read with their local X axis "
                    "reversed, since joint rotations cannot mirror; the mesh deforms as in the file",
                    d.path, int(rest_mirrored.sum()), d.node_name(joint_nodes[j]))
    return rest_mirrored


def _skeleton(d: GltfDocument, joint_nodes: list, inverse_bind: dict, flip: np.ndarray) -> Skeleton:
    """The skeleton of the joint nodes: rest pose from the node transforms (``flip``: the
    mirrored joints, :func:`_mirrored_joints`), bind pose from the inverse bind matrices."""
    parents, direct = _joint_parents(d, joint_nodes)
    local = _joint_local_matrices(d, joint_nodes, parents, direct, flip)
    t, r, s, resid = decompose_trs(local)
    scale_mag = np.maximum(1.0, np.abs(local).max(axis=(1, 2)))
    if (resid > 1e-6 * scale_mag).any():
        j = int(np.argmax(resid / scale_mag))
        log.warning("%s: joint %r has sheared transforms that joints cannot represent; approximated",
                    d.path, d.node_name(joint_nodes[j]))
    orient, rotation = _joint_orientations(d, joint_nodes, direct, r)
    names = unique_joint_names(d.path, [d.node_name(n) for n in joint_nodes])
    bind_world = np.linalg.inv(np.array([inverse_bind[n] for n in joint_nodes]))
    try:
        return Skeleton(names, parents, t, orient, rotation, s, bind_world, humanoid_joints(d.doc, joint_nodes, names))
    except ValueError as e:
        d.fail(str(e))


# ---------------------------------------------------------------------- skin weights
def _skinned_influences(d: GltfDocument, p: GltfPiece, jindex: dict) -> tuple:
    """A skinned piece's (n, 4k) joint indices (into the skeleton) and weights, all its sets
    side by side; weights of out-of-range or unused slots are 0."""
    jl = d.skins[p.skin]["joints"]
    remap = np.array([jindex[x] for x in jl], dtype=np.int64)
    js, ws = [], []
    for k, (jj, ww) in enumerate(p.influences):
        if not np.isfinite(ww).all():
            d.fail(f"mesh part {p.name!r} has NaN or infinite skin weights")
        if (ww < -1e-6).any():
            d.fail(f"mesh part {p.name!r} has negative skin weights")
        used = ww > 0
        wrong = used & ((jj >= len(jl)) | (jj < 0))  # an index in a slot of weight 0 is never read
        if wrong.any():
            bad = int(jj[wrong][0])
            d.fail(f"mesh part {p.name!r} JOINTS_{k} refers to joint {bad}, but skin {p.skin} "
                   f"has {len(jl)} joints")
        js.append(remap[np.clip(jj, 0, len(jl) - 1)])
        ws.append(np.where(used, ww, 0.0))
    return np.concatenate(js, axis=1), np.concatenate(ws, axis=1)


def _rigid_influences(d: GltfDocument, p: GltfPiece, jindex: dict, bind_world, rest_world):
    """A static piece parented under a joint, bound to that joint with weight 1: its
    positions moved into the joint's bind pose (``B_j inv(G_j) M_node``, in place) and its
    (n, 1) joint index and weight.  None (with a warning) if no joint is above it."""
    a = p.joint_node
    while a >= 0 and a not in jindex:
        a = d.parent[a]
    if a < 0:
        log.warning("%s: mesh %r is neither skinned nor parented to a joint; left out", d.path, p.name)
        return None
    j = jindex[a]
    # world position at rest, then back into the bind pose of its joint
    to_bind = bind_world[j] @ np.linalg.inv(rest_world[j]) @ p.world
    p.move(to_bind)
    p.normals = None
    return np.full((len(p.positions), 1), j), np.ones((len(p.positions), 1))
