"""Read rigged characters and meshes from binary FBX files (FBX 7.x).

What is read (``docs/formats.md``):

* **Units and axes** stay the file's own: vertices and joints are returned in the
  file's world coordinates (the node transforms applied, ``UnitScaleFactor`` and the
  ``GlobalSettings`` axis system *not* converted), as for every other input format, so
  that marker files written against the file line up.  :func:`fbx_frame` reports the
  units and up axis the file declares.
* **Skeleton**: every ``LimbNode``/``Limb``/``Root`` model and every model a skin
  cluster binds, with its name as written (namespaces such as ``mixamorig:`` kept); the
  parent of a joint is its nearest joint ancestor (other nodes between them -- an
  armature or group node -- are folded into the world transforms).  Joints are ordered
  depth-first, children in file order.
* **Rest pose**: the node transforms, with FBX's full transform stack (translation,
  rotation offset and pivot, pre-rotation, Euler rotation in the node's rotation order,
  post-rotation, scaling offset and pivot, scaling; property templates as defaults).
* **Bind pose**: each cluster's ``TransformLink`` (the joint's world matrix at bind
  time); joints no cluster binds take the ``BindPose`` matrix, else keep their
  rest-pose offset from their parent.  The mesh's bind matrix is the cluster's
  ``Transform`` (Blender writes it relative to ``TransformLink``; the creator string
  tells which).
* **Meshes**: every skinned mesh bound to the skeleton is one part of the merged mesh
  (vertices = control points, in file order; polygons fan-triangulated); a static mesh
  below a joint is bound rigidly to it; other meshes are left out of a rig.

Ignored: normals, UVs, materials, blend shapes, animation, dual-quaternion blending,
inherit types other than the default ``RSrs`` (read as ``RSrs``), ASCII FBX (a one-line
error asks for binary).
"""
from __future__ import annotations

import logging

import numpy as np
import scipy.sparse as sp

from ..errors import InputError
from ..model.mesh import DEGENERATE_MESSAGE, Mesh
from ..model.rig import Rig
from ..model.skeleton import Skeleton
from ..model.skin import SkinWeights
from ..model.transforms import apply
from .fbx_binary import parse_fbx
from .files import read_bytes
from .gltf_read import normalise_weights, unique_joint_names

log = logging.getLogger("asetransfer")

JOINT_TYPES = ("LimbNode", "Limb", "Root")
#: FBX RotationOrder enum -> axes in the order they apply (eXYZ: X first, R = Rz Ry Rx)
ROTATION_ORDERS = ("xyz", "xzy", "yzx", "yxz", "zxy", "zyx")


class FbxScene:
    """The objects, connections and settings of one binary FBX file.

    Attributes
    ----------
    path : the file.  creator : the writing application (``Creator`` string).
    objects : id -> :class:`~.fbx_binary.FbxNode` of every object.
    names, kinds : id -> object name (namespace kept) and sub-type (``Mesh``, ``LimbNode``...).
    children : id -> ids of the objects connected below it (``OO`` connections, file order).
    parent_model : model id -> the model above it (0 for the scene root).
    settings : ``GlobalSettings`` properties.
    """

    def __init__(self, path, data: bytes | None = None):
        self.path = path
        _, top = parse_fbx(path, read_bytes(path) if data is None else data)
        sections = {n.name: n for n in top}
        creator = sections.get("Creator")
        self.creator = str(creator.props[0]) if creator is not None and creator.props else ""
        self.settings = _properties(sections.get("GlobalSettings"))
        self.templates = _templates(sections.get("Definitions"))
        self.objects, self.names, self.kinds, self.order = {}, {}, {}, {}
        for node in sections["Objects"].children if "Objects" in sections else []:
            if len(node.props) >= 3 and isinstance(node.props[0], int):
                oid = node.props[0]
                self.objects[oid] = node
                self.names[oid] = str(node.props[1]).split("\x00\x01")[0]
                self.kinds[oid] = str(node.props[2])
                self.order[oid] = len(self.order)
        self.children, self.parents_of = {}, {}
        for c in sections["Connections"].all("C") if "Connections" in sections else []:
            if len(c.props) >= 3 and c.props[0] == "OO" and c.props[1] in self.objects:
                self.children.setdefault(c.props[2], []).append(c.props[1])
                self.parents_of.setdefault(c.props[1], []).append(c.props[2])
        self.parent_model = {m: next((p for p in self.parents_of.get(m, []) if self.is_model(p)), 0)
                             for m in self.objects if self.is_model(m)}
        self._check_tree()
        self._world = {}

    def _check_tree(self) -> None:
        """Fail unless every model's chain of parents reaches the scene root (no cycle)."""
        reaches_root = {0}
        for m in self.parent_model:
            chain = []
            while m not in reaches_root:
                if m in chain:
                    self.fail(f"the node hierarchy has a cycle through {self.names[m]!r}")
                chain.append(m)
                m = self.parent_model.get(m, 0)
            reaches_root.update(chain)

    def fail(self, msg):
        raise InputError(self.path, msg)

    def is_model(self, oid) -> bool:
        return oid in self.objects and self.objects[oid].name == "Model"

    def of_class(self, cls: str, kind: str | None = None) -> list:
        """Ids of the objects of node class ``cls`` (``Model``, ``Geometry``, ``Deformer``),
        optionally of sub-type ``kind``, in file order."""
        return [o for o, n in self.objects.items() if n.name == cls and (kind is None or self.kinds[o] == kind)]

    def linked(self, oid, cls: str, kind: str | None = None, up: bool = False) -> list:
        """Objects of class ``cls`` connected below ``oid`` (above it with ``up``)."""
        ids = self.parents_of.get(oid, []) if up else self.children.get(oid, [])
        return [o for o in ids if o in self.objects and self.objects[o].name == cls
                and (kind is None or self.kinds[o] == kind)]

    def props(self, oid) -> dict:
        """An object's ``Properties70``, over its class template's defaults."""
        node = self.objects[oid]
        out = dict(self.templates.get(node.name, {}))
        out.update(_properties(node))
        return out

    def world(self, model) -> np.ndarray:
        """(4, 4) world matrix of a model at rest: its parents' and its own local transforms."""
        if model == 0:
            return np.eye(4)
        if model not in self._world:
            chain, m = [], model
            while m != 0 and m not in self._world:  # no cycle: checked in __init__
                chain.append(m)
                m = self.parent_model[m]
            for m in reversed(chain):
                self._world[m] = self.world(self.parent_model[m]) @ node_local_matrix(self.props(m))
        return self._world[model]

    def geometry_world(self, model) -> np.ndarray:
        """(4, 4) world matrix of the geometry of a mesh model (with its geometric transform)."""
        return self.world(model) @ geometric_matrix(self.props(model))


# ---------------------------------------------------------------------- properties
def _properties(node) -> dict:
    """``Properties70`` of a node as name -> value (a float, int, string or (3,) array)."""
    out = {}
    p70 = node.child("Properties70") if node is not None else None
    for p in p70.all("P") if p70 is not None else []:
        if len(p.props) >= 5 and isinstance(p.props[0], str):
            vals = p.props[4:]
            out[p.props[0]] = (np.array(vals, dtype=np.float64) if len(vals) == 3 and
                               all(isinstance(v, (int, float)) for v in vals) else vals[0])
    return out


def _templates(definitions) -> dict:
    """Object class -> default properties of its ``PropertyTemplate`` in ``Definitions``."""
    out = {}
    for ot in definitions.all("ObjectType") if definitions is not None else []:
        template = ot.child("PropertyTemplate")
        if ot.props and template is not None:
            out[str(ot.props[0])] = _properties(template)
    return out


def _vec(props: dict, name: str, default: float) -> np.ndarray:
    v = props.get(name)
    v = np.asarray(v, dtype=np.float64) if v is not None and np.ndim(v) == 1 and len(v) == 3 else None
    return np.full(3, default) if v is None or not np.isfinite(v).all() else v


def euler_matrix(degrees: np.ndarray, order: int = 0) -> np.ndarray:
    """(4, 4) rotation of FBX Euler angles: ``order`` 0 (eXYZ) gives ``Rz @ Ry @ Rx``.

    FBX orders name the axes in the order the rotations apply to a point (extrinsic).
    """
    from scipy.spatial.transform import Rotation  # imported on use: ~0.15 s

    axes = ROTATION_ORDERS[order] if 0 <= order < len(ROTATION_ORDERS) else "xyz"
    out = np.eye(4)
    out[:3, :3] = Rotation.from_euler(axes, np.asarray(degrees, dtype=np.float64), degrees=True).as_matrix()
    return out


def _translation(t) -> np.ndarray:
    out = np.eye(4)
    out[:3, 3] = t
    return out


def _scaling(s) -> np.ndarray:
    return np.diag([*s, 1.0])


def node_local_matrix(props: dict) -> np.ndarray:
    """(4, 4) local transform of an FBX node (Autodesk's transform stack).

    ``L = T Roff Rp Rpre R Rpost^-1 Rp^-1 Soff Sp S Sp^-1``: translation, rotation
    offset and pivot, pre-rotation, the Euler rotation in the node's ``RotationOrder``,
    post-rotation, scaling offset and pivot, scaling.
    """
    order = props.get("RotationOrder", 0)
    order = int(order) if isinstance(order, (int, float)) and np.isfinite(order) else 0
    rp, sp_ = _vec(props, "RotationPivot", 0.0), _vec(props, "ScalingPivot", 0.0)
    return (_translation(_vec(props, "Lcl Translation", 0.0)) @ _translation(_vec(props, "RotationOffset", 0.0))
            @ _translation(rp) @ euler_matrix(_vec(props, "PreRotation", 0.0))
            @ euler_matrix(_vec(props, "Lcl Rotation", 0.0), order)
            @ np.linalg.inv(euler_matrix(_vec(props, "PostRotation", 0.0))) @ _translation(-rp)
            @ _translation(_vec(props, "ScalingOffset", 0.0)) @ _translation(sp_)
            @ _scaling(_vec(props, "Lcl Scaling", 1.0)) @ _translation(-sp_))


def geometric_matrix(props: dict) -> np.ndarray:
    """(4, 4) geometric transform of a node: applies to its geometry only, not to children."""
    return (_translation(_vec(props, "GeometricTranslation", 0.0))
            @ euler_matrix(_vec(props, "GeometricRotation", 0.0))
            @ _scaling(_vec(props, "GeometricScaling", 1.0)))


def fbx_matrix(values) -> np.ndarray:
    """(4, 4) matrix of 16 FBX doubles (stored column by column)."""
    return np.asarray(values, dtype=np.float64).reshape(4, 4).T


# ---------------------------------------------------------------------- frame
def fbx_frame(path, scene: FbxScene | None = None) -> dict:
    """The units and up axis the file declares (``GlobalSettings``).

    Returns
    -------
    dict with ``metres_per_unit`` (``UnitScaleFactor`` is centimetres per unit) and
    ``up_axis`` ("+Y", "-Z"...).
    """
    s = (scene or FbxScene(path)).settings
    unit = s.get("UnitScaleFactor", 1.0)
    unit = float(unit) if isinstance(unit, (int, float)) and unit > 0 else 1.0
    axis = s.get("UpAxis", 1)
    axis = int(axis) if isinstance(axis, int) and 0 <= axis <= 2 else 1
    sign = "-" if s.get("UpAxisSign", 1) == -1 else "+"
    return {"metres_per_unit": unit / 100.0, "up_axis": sign + "XYZ"[axis]}


# ---------------------------------------------------------------------- geometry
def polygon_triangles(polygon_vertex_index: np.ndarray) -> np.ndarray:
    """(T, 3) fan triangulation of FBX polygons.

    Parameters
    ----------
    polygon_vertex_index : (I,) ``PolygonVertexIndex``: the corners of every polygon in
        turn, the last corner of each stored as ``-(v + 1)`` (bitwise not).

    Returns
    -------
    (T, 3) int64 vertex indices; polygon ``(v0 .. vn-1)`` gives ``(v0, vk, vk+1)`` for
    ``k = 1 .. n-2`` (points and lines give none).
    """
    pvi = np.asarray(polygon_vertex_index, dtype=np.int64)
    ends = np.flatnonzero(pvi < 0)
    corners = np.where(pvi < 0, ~pvi, pvi)
    starts = np.concatenate([[0], ends[:-1] + 1]) if len(ends) else np.zeros(0, np.int64)
    n_tris = np.maximum(ends - starts - 1, 0)
    poly = np.repeat(np.arange(len(starts)), n_tris)
    k = np.arange(len(poly)) - np.repeat(np.cumsum(n_tris) - n_tris, n_tris) + 1
    first = starts[poly]
    return np.stack([corners[first], corners[first + k], corners[first + k + 1]], axis=1)


def geometry_arrays(scene: FbxScene, geometry) -> tuple:
    """A ``Geometry`` object's (V, 3) control points and (T, 3) triangles, checked."""
    node, name = scene.objects[geometry], scene.names[geometry]
    v, pvi = node.child("Vertices"), node.child("PolygonVertexIndex")
    if v is None or pvi is None or not v.props or not pvi.props or not isinstance(v.props[0], np.ndarray) \
            or not isinstance(pvi.props[0], np.ndarray) or pvi.props[0].dtype.kind not in "iu":
        scene.fail(f"mesh {name!r} has no vertices or polygons")
    verts = np.asarray(v.props[0], dtype=np.float64)
    if verts.size % 3:
        scene.fail(f"mesh {name!r} has {verts.size} vertex coordinates, not a multiple of 3")
    verts = verts.reshape(-1, 3)
    tris = polygon_triangles(np.asarray(pvi.props[0]))
    if len(tris) and (tris.min() < 0 or tris.max() >= len(verts)):
        scene.fail(f"mesh {name!r} has a polygon corner outside its {len(verts)} vertices")
    return verts, tris


def mesh_models(scene: FbxScene) -> list:
    """(model, geometry) of every mesh instance, in file order."""
    out = []
    for m in scene.of_class("Model"):
        for g in scene.linked(m, "Geometry", "Mesh"):
            out.append((m, g))
    return out


def merge_pieces(scene: FbxScene, pieces: list) -> Mesh:
    """One Mesh from ``[(name, positions, triangles)]``, each piece a part (names made unique)."""
    if not any(len(t) for _, _, t in pieces):
        scene.fail("mesh has no faces")
    seen, names = {}, []
    for name, _, _ in pieces:
        seen[name] = seen.get(name, 0) + 1
        names.append(name if seen[name] == 1 else f"{name}.{seen[name] - 1}")
    offsets = np.cumsum([0] + [len(p) for _, p, _ in pieces])
    try:
        mesh = Mesh(np.concatenate([p for _, p, _ in pieces]),
                    np.concatenate([t + o for (_, _, t), o in zip(pieces, offsets)]), tuple(names),
                    np.concatenate([np.full(len(p), i, np.int32) for i, (_, p, _) in enumerate(pieces)]))
    except ValueError as e:
        scene.fail(str(e))
    if mesh.all_faces_degenerate():
        scene.fail(DEGENERATE_MESSAGE)
    return mesh


def read_fbx_mesh(path) -> Mesh:
    """Every mesh of an FBX file as one static mesh in the file's world coordinates.

    Each mesh instance is placed with its node's world matrix (and geometric
    transform); skins are ignored (the mesh as modelled).  Vertex order: the control
    points of each mesh in turn, in file order.
    """
    scene = FbxScene(path)
    return mesh_from_scene(scene)


def mesh_from_scene(scene: FbxScene) -> Mesh:
    """:func:`read_fbx_mesh` of a parsed file."""
    pieces = []
    for m, g in mesh_models(scene):
        verts, tris = geometry_arrays(scene, g)
        pieces.append((scene.names[m], apply(scene.geometry_world(m), verts), tris))
    if not pieces:
        scene.fail("contains no triangle mesh")
    return merge_pieces(scene, pieces)


# ---------------------------------------------------------------------- rig
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

    The FBX SDK stores it as each cluster's ``Transform``; Blender's exporter stores
    ``inv(TransformLink) @ mesh matrix`` instead.  Without cluster matrices: the node's.
    """
    for c, _ in clusters:
        transform, link = cluster_matrices(scene, c)
        if transform is not None and link is not None:
            mesh = link @ transform if scene.creator.startswith("Blender") else transform
            return mesh @ geometric_matrix(scene.props(model))
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
        if len(idx) and (idx.min() < 0 or idx.max() >= n):
            scene.fail(f"skin cluster of joint {scene.names[m]!r} names vertex {int(idx.max())}, "
                       f"the mesh has {n} vertices")
        if not np.isfinite(w).all() or (w < -1e-6).any():
            scene.fail(f"skin cluster of joint {scene.names[m]!r} has negative, NaN or infinite weights")
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
    """A static mesh below a joint, bound to it with weight 1: positions moved into the
    joint's bind pose (``B_j inv(G_j) M``) and its (n, 1) influences.  None if no joint is above."""
    a = scene.parent_model.get(model, 0)
    while a != 0 and a not in jindex:
        a = scene.parent_model.get(a, 0)
    if a == 0:
        log.warning("%s: mesh %r is neither skinned nor below a joint; left out", scene.path, scene.names[model])
        return None
    j = jindex[a]
    pos = apply(bind[j] @ np.linalg.inv(rest[j]) @ scene.geometry_world(model), verts)
    return pos, np.full((len(verts), 1), j), np.ones((len(verts), 1))


def read_fbx_rig(path) -> Rig:
    """Read a skinned character from a binary FBX file, in the file's own units and axes.

    Returns
    -------
    Rig: the skinned meshes (and meshes below a joint) merged as parts in the bind pose,
    the skeleton of every joint (rest pose from the node transforms, bind pose from the
    clusters), weights normalised.

    Raises
    ------
    InputError with a one-line message for anything we cannot read, or a file with no skin.
    """
    return rig_from_scene(FbxScene(path))


def rig_from_scene(scene: FbxScene) -> Rig:
    """:func:`read_fbx_rig` of a parsed file."""
    meshes = mesh_models(scene)
    skinned = {g: skin_clusters(scene, g) for _, g in meshes}
    all_clusters = [cm for cl in skinned.values() for cm in cl]  # (cluster, joint model)
    if not all_clusters:
        scene.fail("has no skin (no skeleton bound to a mesh)" if meshes else "contains no triangle mesh")
    joints, parents = skeleton_models(scene, {m for _, m in all_clusters})
    jindex = {m: j for j, m in enumerate(joints)}
    rest = np.array([scene.world(m) for m in joints])
    bind = joint_bind_matrices(scene, joints, parents, cluster_links(scene, all_clusters))
    pieces, idx_rows, w_rows = [], [], []
    for model, g in meshes:
        verts, tris = geometry_arrays(scene, g)
        if skinned[g]:
            pos = apply(mesh_bind_matrix(scene, model, skinned[g]), verts)
            ji, w = cluster_influences(scene, skinned[g], jindex, len(verts))
        else:
            piece = rigid_piece(scene, model, jindex=jindex, bind=bind, rest=rest, verts=verts)
            if piece is None:
                continue
            pos, ji, w = piece
        pieces.append((scene.names[model], pos, tris))
        idx_rows.append(ji)
        w_rows.append(w)
    return _assemble(scene, joints=joints, parents=parents, rest=rest, bind=bind, pieces=pieces,
                     idx_rows=idx_rows, w_rows=w_rows)


def _assemble(scene, *, joints, parents, rest, bind, pieces, idx_rows, w_rows) -> Rig:
    """The Rig of the joints (with rest and bind world matrices) and the weighted pieces
    (``pieces``: (name, bind-pose positions, triangles); ``idx_rows``/``w_rows``: their
    (n, k) joint indices and weights)."""
    mesh = merge_pieces(scene, pieces)
    width = max(r.shape[1] for r in idx_rows)
    idx = np.concatenate([np.pad(r, ((0, 0), (0, width - r.shape[1]))) for r in idx_rows])
    w = np.concatenate([np.pad(r, ((0, 0), (0, width - r.shape[1]))) for r in w_rows])
    skin = normalise_weights(scene.path, mesh, idx, w, len(joints))
    names = unique_joint_names(scene.path, [scene.names[m] for m in joints])  # Maya allows repeats
    try:
        return Rig(mesh, Skeleton.from_world(names, parents, rest, bind), skin)
    except ValueError as e:
        scene.fail(str(e))


def read_fbx(path):
    """An FBX file as a :class:`Rig` if a skin binds a mesh, else as a static :class:`Mesh`."""
    scene = FbxScene(path)
    meshes = mesh_models(scene)
    if any(skin_clusters(scene, g) for _, g in meshes):
        return rig_from_scene(scene)
    return mesh_from_scene(scene)
