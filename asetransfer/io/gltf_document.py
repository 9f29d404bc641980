"""The node graph of a glTF 2.0 document and the mesh pieces its default scene places.

:class:`GltfDocument` checks what real exporters write: node hierarchy (a tree, no cycle),
node transforms (TRS or affine matrix, finite, in the 32-bit float range), the default
scene, and every triangle primitive of a mesh node as a :class:`GltfPiece` (positions,
triangles from lists, strips and fans, normals, uv, and every ``JOINTS_n``/``WEIGHTS_n``
set of a skinned one).  :mod:`.gltf_skin` makes the rig of them, :mod:`.gltf_read` reads files.
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError
from ..model.look import Look, LookPiece
from ..model.mesh import COORDINATE_LIMIT
from ..model.transforms import apply, quat_to_matrix, topological_order
from .assembly import MeshPiece
from .glb import UBYTE, USHORT, UINT, Accessors, is_index, read_document

_INFLUENCE_SET = re.compile(r"(JOINTS|WEIGHTS)_(\d+)", re.ASCII)  # a skin influence set

log = logging.getLogger("asetransfer")


@dataclass
class GltfPiece(MeshPiece):
    """One primitive instance of a glTF mesh node, before merging (positions in bind space
    for skinned pieces, in the node's space otherwise)."""

    skin: int | None = None          # glTF skin index
    joint_node: int | None = None    # rigidly attached pieces: the joint node they follow
    influences: list = field(default_factory=list)  # [(joints (N,4) skin-local, weights (N,4))]
    world: np.ndarray | None = None  # node world matrix (static pieces)
    node: int = -1                   # the node placing the piece, its mesh and primitives (the look)
    mesh: int = -1
    primitives: list = field(default_factory=list)
    placement: np.ndarray = field(default_factory=lambda: np.eye(4))  # file -> current positions

    def move(self, matrix: np.ndarray) -> None:
        """Apply the (4, 4) affine ``matrix`` to the positions (normals dropped: the caller
        moves them when it can), recorded in ``placement``."""
        self.positions = apply(matrix, self.positions)
        self.placement = matrix @ self.placement


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

    def look(self, pieces: list) -> Look:
        """The :class:`~asetransfer.model.look.Look` of the mesh merged from ``pieces`` (in
        order, as :func:`~.assembly.merge_pieces` merges them): this document, and where each
        piece's vertices went."""
        offsets = np.cumsum([0] + [len(p.positions) for p in pieces])
        return Look(str(self.path), self.doc, self.acc.buffers,
                    [LookPiece(p.node, p.mesh, p.primitives, np.arange(o, o + len(p.positions)), p.placement)
                     for p, o in zip(pieces, offsets)])

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
                    shared[key].primitives.append(k)
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
        pos = self.acc.read(attrs["POSITION"], f"{what} POSITION")
        if pos.shape[1] != 3:
            self.fail(f"{what} POSITION is not VEC3")
        if not np.isfinite(pos).all():
            self.fail(f"{what} has NaN or infinite vertex positions")
        faces = self._faces(what, prim, len(pos), mode)
        normals, uv = self._normals_and_uv(what, attrs, len(pos))
        piece = GltfPiece(name, pos, faces, normals, uv, skin, node=int(ni), mesh=int(mi), primitives=[k])
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
        faces = triangles(idx, mode)
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
        # JOINTS_n / WEIGHTS_n with n in ASCII digits: other names ("JOINTS_x", "JOINTS_²") are no set
        sets = sorted({int(m.group(2)) for m in map(_INFLUENCE_SET.fullmatch, attrs) if m})
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


def triangles(idx: np.ndarray, mode: int) -> np.ndarray:
    """(T, 3) triangles of the (I,) vertex indices of a primitive of ``mode`` 4 (list: a
    trailing partial triangle dropped), 5 (strip) or 6 (fan)."""
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
