"""Read skinned characters (and static meshes) from glTF 2.0 files.

Accepts what real exporters write: several mesh nodes and primitives merged into
one mesh (the part of each vertex recorded), non-joint nodes between or above the
joints (their transforms folded into the joints' local transforms), scale in node
transforms, any number of ``JOINTS_n``/``WEIGHTS_n`` sets, unnormalised weights
(normalised, with a warning), rigid meshes parented under a joint (bound to it with
weight 1), and skins whose ``skeleton`` root is not the scene root.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError
from ..model.mesh import COORDINATE_LIMIT, DEGENERATE_MESSAGE, Mesh
from ..model.rig import Rig
from ..model.skeleton import Skeleton
from ..model.skin import SkinWeights
from ..model.transforms import apply, decompose_trs, quat_to_matrix, topological_order
from .glb import UBYTE, USHORT, UINT, Accessors, is_index, read_document

log = logging.getLogger("asetransfer")

#: node extras key under which we store a joint's orientation (see skeleton.py)
EXTRAS_KEY = "asetransfer"


@dataclass
class _Piece:
    """Vertices of one primitive instance, before merging."""

    name: str
    positions: np.ndarray            # bind space for skinned pieces, world space otherwise
    faces: np.ndarray
    normals: np.ndarray | None
    uv: np.ndarray | None
    skin: int | None                 # glTF skin index
    joint_node: int | None = None    # rigidly attached pieces: the joint node they follow
    influences: list = field(default_factory=list)  # [(joints (N,4) skin-local, weights (N,4))]
    world: np.ndarray | None = None  # node world matrix (static pieces)


class GltfDocument:
    """The node graph of a glTF document, checked.

    Attributes
    ----------
    path : the file.
    doc : the JSON document; ``acc`` : its typed :class:`~.glb.Accessors`.
    nodes, meshes, skins : the document's lists of objects.
    parent : (N,) parent node of each node, -1 for roots (the hierarchy is a tree).
    local, world : (N, 4, 4) node matrices, ``world[i] = world[parent[i]] @ local[i]``.
    scene_nodes : indices of the default scene's nodes, in index order.
    """

    def __init__(self, path):
        self.path = path
        self.doc, buffers = read_document(path)
        self.acc = Accessors(path, self.doc, buffers)
        self.nodes = self.objects("nodes")
        self.meshes = self.objects("meshes")
        self.skins = self.objects("skins")
        self.parent = self._parents()
        self.local = np.array([self._node_matrix(i, n) for i, n in enumerate(self.nodes)]).reshape(-1, 4, 4)
        self.world = self._world()
        self.scene_nodes = self._scene_nodes()

    def fail(self, msg):
        raise InputError(self.path, msg)

    def objects(self, key) -> list:
        """The document's top-level list ``key`` (empty if absent); each entry must be an object."""
        value = self.doc.get(key, [])
        if not isinstance(value, list) or not all(isinstance(x, dict) for x in value):
            self.fail(f"'{key}' is not a list of objects")
        return value

    def _parents(self):
        parent = np.full(len(self.nodes), -1, dtype=np.int64)
        for i, n in enumerate(self.nodes):
            children = n.get("children", [])
            if not isinstance(children, list):
                self.fail(f"node {i} has a 'children' field that is not a list")
            for c in children:
                if not is_index(c) or not 0 <= c < len(self.nodes):
                    self.fail(f"node {i} lists child {c!r}, which does not exist")
                if c == i:
                    self.fail(f"node {i} lists itself as a child")
                if parent[c] >= 0:
                    self.fail(f"node {c} has two parents (nodes {parent[c]} and {i}); the hierarchy must be a tree")
                parent[c] = i
        try:
            topological_order(parent)
        except ValueError:
            self.fail("the node hierarchy has a cycle")
        return parent

    def _node_matrix(self, i, n):
        def numbers(key, size):
            v = n.get(key)
            if v is None:
                return None
            if not isinstance(v, list) or len(v) != size \
                    or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
                self.fail(f"node {i} ({n.get('name', '')!r}) has a malformed '{key}'")
            a = np.array(v, dtype=np.float64)
            if not np.isfinite(a).all():
                self.fail(f"node {i} ({n.get('name', '')!r}) has a NaN or infinite '{key}'")
            if np.abs(a).max() > COORDINATE_LIMIT:  # JSON numbers are float64; the file's own floats are 32-bit
                self.fail(f"node {i} ({n.get('name', '')!r}) has a '{key}' beyond {COORDINATE_LIMIT:.3g} "
                          "(the 32-bit float range)")
            return a

        m = numbers("matrix", 16)
        if m is not None:
            if not np.array_equal(m[3::4], [0.0, 0.0, 0.0, 1.0]):
                self.fail(f"node {i} ({n.get('name', '')!r}) has a 'matrix' that is not affine "
                          f"(its last row must be 0 0 0 1)")
            return m.reshape(4, 4).T  # column-major in glTF
        t, r, s = numbers("translation", 3), numbers("rotation", 4), numbers("scale", 3)
        out = np.eye(4)
        rot = np.eye(3)
        if r is not None:
            if np.linalg.norm(r) < 1e-8:
                self.fail(f"node {i} ({n.get('name', '')!r}) has a zero rotation quaternion")
            rot = quat_to_matrix(r)
        out[:3, :3] = rot * (s if s is not None else 1.0)
        if t is not None:
            out[:3, 3] = t
        return out

    def _world(self):
        world = np.empty_like(self.local)
        for i in topological_order(self.parent):
            p = self.parent[i]
            world[i] = self.local[i] if p < 0 else world[p] @ self.local[i]
        return world

    def _scene_nodes(self):
        """Nodes of the default scene (all nodes when the file has no scene), in index order."""
        scenes = self.objects("scenes")
        roots = [i for i in range(len(self.nodes)) if self.parent[i] < 0]
        if scenes:
            s = self.doc.get("scene", 0)
            if not is_index(s) or not 0 <= s < len(scenes):
                self.fail(f"default scene {s!r} does not exist")
            roots = scenes[s].get("nodes", [])
            if not isinstance(roots, list):
                self.fail(f"scene {s} has a 'nodes' field that is not a list")
            for r in roots:
                if not is_index(r) or not 0 <= r < len(self.nodes):
                    self.fail(f"scene {s} lists node {r!r}, which does not exist")
        keep = np.zeros(len(self.nodes), bool)
        keep[roots] = True
        for i in topological_order(self.parent):
            if self.parent[i] >= 0 and keep[self.parent[i]]:
                keep[i] = True
        return np.flatnonzero(keep)

    def node_name(self, i):
        name = self.nodes[i].get("name")
        return name if isinstance(name, str) and name else f"node{i}"

    # ------------------------------------------------------------------ primitives
    def pieces(self):
        """Every triangle primitive instance of the default scene, in node order."""
        out = []
        for ni in self.scene_nodes:
            node = self.nodes[ni]
            if node.get("mesh") is None:
                continue
            mi, skin, prims = self._node_mesh(ni, node)
            mesh = self.meshes[mi]
            base = next((x for x in (node.get("name"), mesh.get("name")) if isinstance(x, str) and x), f"mesh{mi}")
            blocks = {p["attributes"]["POSITION"] for p in prims}
            shared = {}
            for k, prim in enumerate(prims):
                piece = self._piece(ni, mi, k, prim, skin, base if len(blocks) == 1 else f"{base}.{k}")
                if piece is None:
                    continue
                key = prim["attributes"]["POSITION"]
                if key in shared:  # primitives sharing one vertex array: one block of vertices
                    shared[key].faces = np.concatenate([shared[key].faces, piece.faces])
                    continue
                shared[key] = piece
                out.append(piece)
        return out

    def _node_mesh(self, ni, node):
        """Node ``ni``'s mesh index, skin index (or None) and primitives, checked."""
        mi = node.get("mesh")
        if not is_index(mi) or not 0 <= mi < len(self.meshes):
            self.fail(f"node {ni} refers to mesh {mi!r}, which does not exist")
        skin = node.get("skin")
        if skin is not None and (not is_index(skin) or not 0 <= skin < len(self.skins)):
            self.fail(f"node {ni} refers to skin {skin!r}, which does not exist")
        prims = self.meshes[mi].get("primitives")
        if not isinstance(prims, list) or not prims:
            self.fail(f"mesh {mi} has no primitives")
        for k, prim in enumerate(prims):
            if not isinstance(prim, dict):
                self.fail(f"mesh {mi} primitive {k} is not an object")
            if not isinstance(prim.get("attributes"), dict) or not is_index(prim["attributes"].get("POSITION")):
                self.fail(f"mesh {mi} primitive {k} has no POSITION attribute")
        return mi, skin, prims

    def _piece(self, ni, mi, k, prim, skin, name):
        """Primitive ``k`` of mesh ``mi`` placed by node ``ni``; None if it is not made of triangles."""
        what = f"mesh {mi} primitive {k}"
        attrs = prim.get("attributes")
        if not isinstance(attrs, dict) or "POSITION" not in attrs:
            self.fail(f"{what} has no POSITION attribute")
        mode = prim.get("mode", 4)
        if mode not in (4, 5, 6):
            log.warning("%s: %s is not made of triangles (mode %s); skipped", self.path, what, mode)
            return None
        if prim.get("targets"):
            log.warning("%s: %s has morph targets; they are ignored", self.path, what)
        pos = self.acc.read(attrs["POSITION"], f"{what} POSITION")
        if pos.shape[1] != 3:
            self.fail(f"{what} POSITION is not VEC3")
        if not np.isfinite(pos).all():
            self.fail(f"{what} has NaN or infinite vertex positions")
        faces = self._faces(what, prim, len(pos), mode)
        normals, uv = self._normals_and_uv(what, attrs, len(pos))
        piece = _Piece(name, pos, faces, normals, uv, skin)
        if skin is not None:
            piece.influences = self._influences(what, attrs, len(pos), skin)
        else:
            piece.world = self.world[ni]
            piece.joint_node = ni
        return piece

    def _faces(self, what, prim, n, mode):
        """(F, 3) triangles of a primitive of ``n`` vertices, those repeating a corner dropped."""
        if prim.get("indices") is not None:
            idx = self.acc.read(prim["indices"], f"{what} indices")
            if self.acc.accessors[prim["indices"]].get("componentType") not in (UBYTE, USHORT, UINT) \
                    or idx.shape[1] != 1:
                self.fail(f"{what} indices are not unsigned integer scalars")
            idx = idx.ravel().astype(np.int64)
        else:
            idx = np.arange(n, dtype=np.int64)
        if len(idx) and idx.max() >= n:
            self.fail(f"{what} has a vertex index {int(idx.max())} out of range (it has {n} vertices)")
        faces = _triangles(idx, mode)
        return faces[(faces[:, 0] != faces[:, 1]) & (faces[:, 1] != faces[:, 2]) & (faces[:, 0] != faces[:, 2])]

    def _normals_and_uv(self, what, attrs, n):
        """The primitive's (n, 3) NORMAL and (n, 2) TEXCOORD_0, each None if absent
        (normals also when not finite: they are then ignored with a warning)."""
        normals = self.acc.read(attrs["NORMAL"], f"{what} NORMAL") if "NORMAL" in attrs else None
        uv = self.acc.read(attrs["TEXCOORD_0"], f"{what} TEXCOORD_0") if "TEXCOORD_0" in attrs else None
        for label, arr, width in (("NORMAL", normals, 3), ("TEXCOORD_0", uv, 2)):
            if arr is not None and (arr.shape != (n, width)):
                self.fail(f"{what} {label} does not have one {width}-vector per vertex")
        if normals is not None and not np.isfinite(normals).all():
            log.warning("%s: %s has NaN or infinite normals; they are ignored", self.path, what)
            normals = None
        return normals, uv

    def _influences(self, what, attrs, n, skin):
        """Every ``JOINTS_s``/``WEIGHTS_s`` pair of a skinned primitive of ``n`` vertices:
        a list of ((n, 4) skin-local joint indices, (n, 4) weights)."""
        sets = sorted({int(a.split("_")[1]) for a in attrs if a.startswith(("JOINTS_", "WEIGHTS_"))
                       and a.split("_")[1].isdigit()})
        out = []
        for s in sets:
            if f"JOINTS_{s}" not in attrs or f"WEIGHTS_{s}" not in attrs:
                self.fail(f"{what} has JOINTS_{s} or WEIGHTS_{s} without the other")
            j = self.acc.read(attrs[f"JOINTS_{s}"], f"{what} JOINTS_{s}")
            w = self.acc.read(attrs[f"WEIGHTS_{s}"], f"{what} WEIGHTS_{s}")
            if j.shape != (n, 4) or w.shape != (n, 4):
                self.fail(f"{what} JOINTS_{s}/WEIGHTS_{s} are not one VEC4 per vertex")
            out.append((j.astype(np.int64), w.astype(np.float64)))
        if not out:
            self.fail(f"{what} is bound to skin {skin} but has no JOINTS_0/WEIGHTS_0")
        return out


def _singular(m: np.ndarray) -> np.ndarray:
    """(K,) True where the (K, 3, 3) matrices are singular or nearly so (relative to their size)."""
    size = np.maximum(np.abs(m).max(axis=(1, 2)), 1e-300)
    with np.errstate(over="ignore", invalid="ignore"):
        return ~(np.abs(np.linalg.det(m)) > 1e-12 * size ** 3)


def _triangles(idx, mode):
    if mode == 4:
        if len(idx) % 3:
            idx = idx[: len(idx) - len(idx) % 3]
        return idx.reshape(-1, 3)
    if len(idx) < 3:
        return np.zeros((0, 3), np.int64)
    k = np.arange(len(idx) - 2)
    if mode == 5:  # strip: flip every other triangle to keep the winding
        a, b = np.where(k % 2 == 0, k, k + 1), np.where(k % 2 == 0, k + 1, k)
        return np.stack([idx[a], idx[b], idx[k + 2]], axis=1)
    return np.stack([np.full(len(k), idx[0]), idx[k + 1], idx[k + 2]], axis=1)  # fan


def _merge(d, pieces, names):
    """Concatenate pieces into one Mesh (with at least one proper triangle); returns (mesh, offsets)."""
    if not any(len(p.faces) for p in pieces):
        d.fail("mesh has no faces")
    offsets = np.cumsum([0] + [len(p.positions) for p in pieces])
    uniq, seen = [], {}
    for nm in names:
        seen[nm] = seen.get(nm, 0) + 1
        uniq.append(nm if seen[nm] == 1 else f"{nm}.{seen[nm] - 1}")
    faces = np.concatenate([p.faces + o for p, o in zip(pieces, offsets)])
    part = np.concatenate([np.full(len(p.positions), i, np.int32) for i, p in enumerate(pieces)])
    normals = np.concatenate([p.normals for p in pieces]) if all(p.normals is not None for p in pieces) else None
    uv = np.concatenate([p.uv for p in pieces]) if all(p.uv is not None for p in pieces) else None
    verts = np.concatenate([p.positions for p in pieces])
    try:
        mesh = Mesh(verts, faces, tuple(uniq), part, normals, uv)
    except ValueError as e:
        d.fail(str(e))
    if mesh.all_faces_degenerate():
        d.fail(DEGENERATE_MESSAGE)
    return mesh, offsets


def read_gltf_mesh(path) -> Mesh:
    """The meshes of a glTF file as one static mesh in world space (rest pose).

    Skinned meshes are posed with the file's node transforms (linear blend
    skinning); other meshes are placed with their node's world matrix.
    """
    d = GltfDocument(path)
    return mesh_from_document(d, d.pieces())


def mesh_from_document(d: GltfDocument, pieces: list) -> Mesh:
    """:func:`read_gltf_mesh` of a parsed document and its :meth:`~GltfDocument.pieces`."""
    if not pieces:
        d.fail("contains no triangle mesh")
    if any(p.skin is not None for p in pieces):
        return rig_from_document(d, pieces).rest_mesh()
    for p in pieces:
        p.positions = apply(p.world, p.positions)
        if p.normals is not None and _singular(p.world[None, :3, :3])[0]:
            p.normals = None  # a zero scale flattens the piece: its normals mean nothing
        elif p.normals is not None:
            nm = p.normals @ np.linalg.inv(p.world[:3, :3])
            p.normals = nm / np.maximum(np.linalg.norm(nm, axis=1, keepdims=True), 1e-30)
    mesh, _ = _merge(d, pieces, [p.name for p in pieces])
    return mesh


def read_gltf_rig(path) -> Rig:
    """Read a skinned character.

    Parameters
    ----------
    path : .glb or .gltf file.

    Returns
    -------
    Rig whose mesh is in the bind pose, skeleton joints in the order of the first
    skin's ``joints`` (then joints only other skins use), weights normalised.

    Raises
    ------
    InputError with a one-line message for anything we cannot read.
    """
    d = GltfDocument(path)
    return rig_from_document(d, d.pieces())


def rig_from_document(d: GltfDocument, pieces: list) -> Rig:
    """:func:`read_gltf_rig` of a parsed document and its :meth:`~GltfDocument.pieces`."""
    skinned = [p for p in pieces if p.skin is not None]
    if not d.skins:
        d.fail("has no skin (no skeleton bound to the mesh)")
    if not skinned:
        d.fail("has a skin but no triangle mesh bound to it")
    joint_nodes, inverse_bind = skin_joints(d, list(dict.fromkeys(p.skin for p in skinned)))
    _check_not_mirrored(d, joint_nodes, inverse_bind)
    display = display_transform(d, skinned, inverse_bind)
    if display is not None:
        _to_display_frame(skinned, display)
        inv_display = np.linalg.inv(display)
        inverse_bind = {n: m @ inv_display for n, m in inverse_bind.items()}
    skeleton = _skeleton(d, joint_nodes, inverse_bind)
    jindex = {n: j for j, n in enumerate(joint_nodes)}
    kept, rows = [], []
    for p in pieces:
        row = (_skinned_influences(d, p, jindex) if p.skin is not None else
               _rigid_influences(d, p, jindex, skeleton.bind_world, d.world[joint_nodes]))
        if row is not None:
            rows.append(row)
            kept.append(p)
    mesh, _ = _merge(d, kept, [p.name for p in kept])
    idx, w = _padded_influences(rows)
    skin = _normalise_weights(d.path, mesh, idx, w, len(joint_nodes))
    try:
        return Rig(mesh, skeleton, skin)
    except ValueError as e:
        d.fail(str(e))


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
        d.fail(f"skin {s} has no joints")
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
              (finite & _singular(np.where(finite[:, None, None], m, 0.0)[:, :3, :3]), "is singular"),
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


def _joint_local_matrices(d: GltfDocument, joint_nodes: list, parents, direct) -> np.ndarray:
    """(J, 4, 4) joint transforms relative to the parent joint, ``inv(G_parent) @ G``, with
    the file's own node matrix where no node is folded in (exact values)."""
    world = d.world[joint_nodes]
    singular = _singular(world[:, :3, :3])
    if singular.any():
        d.fail(f"joint {d.node_name(joint_nodes[int(np.argmax(singular))])!r} has a "
               f"singular transform (a zero scale on it or on a node above it)")
    local = world.copy()
    child = parents >= 0
    local[child] = np.linalg.inv(world[parents[child]]) @ world[child]
    local[direct] = d.local[np.asarray(joint_nodes)[direct]]
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
            or _singular(common[None, :3, :3])[0]:
        return None
    return common


def _to_display_frame(pieces: list, display: np.ndarray) -> None:
    """Move skinned pieces' positions and normals by the (4, 4) ``display`` matrix, in place."""
    inv_t = np.linalg.inv(display[:3, :3]).T
    for p in pieces:
        p.positions = apply(display, p.positions)
        if p.normals is not None:
            nm = p.normals @ inv_t.T
            p.normals = nm / np.maximum(np.linalg.norm(nm, axis=1, keepdims=True), 1e-30)


def _check_not_mirrored(d: GltfDocument, joint_nodes: list, inverse_bind: dict) -> None:
    """Fail on a joint whose rest or bind transform mirrors (negative determinant).

    Joint rotations cannot represent a reflection: decomposed, a mirrored armature's bone
    axes come out wrong (tens of degrees), silently.  A negative scale is refused instead.
    """
    world = d.world[joint_nodes][:, :3, :3]
    bind = np.array([inverse_bind[n][:3, :3] for n in joint_nodes])
    mirrored = (np.linalg.det(world) < 0) | (np.linalg.det(bind) < 0)
    if mirrored.any():
        j = int(np.flatnonzero(mirrored)[0])
        d.fail(f"joint {d.node_name(joint_nodes[j])!r} is mirrored (a negative scale on it or on a node above "
               "it, determinant < 0); apply the scale in the DCC tool (Blender: Apply > Scale) and export again")


def _skeleton(d: GltfDocument, joint_nodes: list, inverse_bind: dict) -> Skeleton:
    """The skeleton of the joint nodes: rest pose from the node transforms, bind pose
    from the inverse bind matrices."""
    parents, direct = _joint_parents(d, joint_nodes)
    local = _joint_local_matrices(d, joint_nodes, parents, direct)
    t, r, s, resid = decompose_trs(local)
    scale_mag = np.maximum(1.0, np.abs(local).max(axis=(1, 2)))
    if (resid > 1e-6 * scale_mag).any():
        j = int(np.argmax(resid / scale_mag))
        log.warning("%s: joint %r has sheared transforms that joints cannot represent; approximated",
                    d.path, d.node_name(joint_nodes[j]))
    orient, rotation = _joint_orientations(d, joint_nodes, direct, r)
    names = _unique_names(d.path, [d.node_name(n) for n in joint_nodes])
    bind_world = np.linalg.inv(np.array([inverse_bind[n] for n in joint_nodes]))
    try:
        return Skeleton(names, parents, t, orient, rotation, s, bind_world)
    except ValueError as e:
        d.fail(str(e))


# ---------------------------------------------------------------------- skin weights
def _skinned_influences(d: GltfDocument, p: _Piece, jindex: dict) -> tuple:
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
        if (jj[used] >= len(jl)).any() or (jj < 0).any():
            bad = int(jj[used].max())
            d.fail(f"mesh part {p.name!r} JOINTS_{k} refers to joint {bad}, but skin {p.skin} "
                   f"has {len(jl)} joints")
        js.append(remap[np.clip(jj, 0, len(jl) - 1)])
        ws.append(np.where(used, ww, 0.0))
    return np.concatenate(js, axis=1), np.concatenate(ws, axis=1)


def _rigid_influences(d: GltfDocument, p: _Piece, jindex: dict, bind_world, rest_world):
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
    p.positions = apply(to_bind, p.positions)
    p.normals = None
    return np.full((len(p.positions), 1), j), np.ones((len(p.positions), 1))


def _padded_influences(rows: list) -> tuple:
    """The pieces' (joint indices, weights) stacked, narrower ones padded with weight-0 slots."""
    width = max(r[0].shape[1] for r in rows)
    idx = np.concatenate([np.pad(r[0], ((0, 0), (0, width - r[0].shape[1]))) for r in rows])
    w = np.concatenate([np.pad(r[1], ((0, 0), (0, width - r[1].shape[1]))) for r in rows])
    return idx, w


def _unique_names(path, names):
    out, seen = [], {}
    for n in names:
        if n in seen:
            k = seen[n]
            while f"{n}.{k:03d}" in seen:
                k += 1
            seen[n] = k + 1
            new = f"{n}.{k:03d}"
            log.warning("%s: joint name %r is used twice; the second is renamed %r", path, n, new)
            seen[new] = 1
            out.append(new)
        else:
            seen[n] = 1
            out.append(n)
    return out


def _normalise_weights(path, mesh, idx, w, nj) -> SkinWeights:
    total = w.sum(axis=1)
    if not (total > 0).any():
        raise InputError(path, "every skin weight is zero")
    off = np.abs(total - 1.0) > 1e-3
    zero = total <= 0
    if (off & ~zero).any():
        log.warning("%s: skin weights of %d vertices do not sum to 1; normalised", path, int((off & ~zero).sum()))
    skin = SkinWeights.from_influences(idx, w, nj)
    if zero.any():
        # unweighted vertices follow their nearest weighted neighbour
        log.warning("%s: %d vertices have no skin weight; they take their nearest weighted vertex's", path,
                    int(zero.sum()))
        src = np.flatnonzero(~zero)
        from scipy.spatial import cKDTree  # imported on use: ~0.15 s

        _, near = cKDTree(mesh.vertices[src]).query(mesh.vertices[zero])
        ind, wt = skin.indices.copy(), skin.weights.copy()
        ind[zero], wt[zero] = ind[src[near]], wt[src[near]]
        skin = SkinWeights(ind, wt, nj)
    return skin


def read_gltf(path):
    """A glTF file as a :class:`Rig` if it has a skinned mesh, else as a static :class:`Mesh`."""
    d = GltfDocument(path)
    pieces = d.pieces()
    if not pieces:
        d.fail("contains no triangle mesh")
    if d.skins and any(p.skin is not None for p in pieces):
        return rig_from_document(d, pieces)
    return mesh_from_document(d, pieces)


#: the weight normalisation (with its warnings and the fill-in of unweighted vertices) and
#: the renaming of repeated joint names (with a warning), shared with the FBX reader
normalise_weights = _normalise_weights
unique_joint_names = _unique_names
