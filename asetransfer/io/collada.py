"""COLLADA (.dae) rigs and meshes, as Mixamo's Collada download, Blender, SketchUp and
virtual-world avatar tools write them (COLLADA 1.4 and 1.5).

What is read: the default visual scene's node tree (``matrix``, ``translate``, ``rotate``
and ``scale`` in their order; ``instance_node`` followed), each mesh's control points
(``<vertices>``' positions, the order kept) and its polygons (``triangles``, ``polylist``,
``polygons``, fan-triangulated), and each skin controller: its bind-shape matrix, its
joints (``Name_array`` of node sids, or ``IDREF_array`` of node ids), their inverse
bind matrices and the vertex weights.

The skinning of COLLADA is ``v' = sum_i w_i J_i IBM_i BSM v``: at the bind pose ``J_i =
IBM_i^-1``, so the mesh is ``BSM v`` and joint ``i`` binds at ``IBM_i^-1``.  The joints are
every node a skin names and every node typed ``JOINT``, each one's parent its nearest
joint ancestor; their rest pose is the scene's node transforms.  A joint no skin names
keeps its rest offset from its parent in the bind pose.  Static meshes below a joint are
bound to it rigidly; other static meshes are left out of a rig with a warning.

Animations are read as clips by :mod:`.collada_animation`.  Not read (a warning says so
when the file holds them): morph controllers, materials and texture coordinates (a COLLADA
target's output has no look).
"""
from __future__ import annotations

import logging
import xml.etree.ElementTree as ET

import numpy as np

from ..errors import InputError
from ..model.mesh import Mesh
from ..model.rig import Rig
from ..model.skeleton import Skeleton
from ..model.transforms import apply
from .assembly import MeshPiece, merge_pieces, normalise_weights, stack_influences, unique_joint_names
from .files import read_bytes

log = logging.getLogger("asetransfer")

#: the transform elements of a node and their number of values
TRANSFORM_SIZE = {"matrix": 16, "translate": 3, "rotate": 4, "scale": 3}
#: deepest node nesting followed (``instance_node`` can loop)
MAX_DEPTH = 128
_UP = {"X_UP": "+X", "Y_UP": "+Y", "Z_UP": "+Z"}


class ColladaScene:
    """A parsed .dae file: elements by id, the default visual scene's nodes with their world
    matrices, units and up axis.

    Attributes
    ----------
    nodes : list of (element, parent index or -1, (4, 4) world matrix), depth first.
    ids : id -> element.
    """

    def __init__(self, path):
        self.path = path
        data = read_bytes(path)
        try:
            root = ET.fromstring(data)
        except ET.ParseError as e:
            raise InputError(path, f"not a COLLADA file (XML: {e})") from None
        for el in root.iter():
            if isinstance(el.tag, str):
                el.tag = el.tag.rsplit("}", 1)[-1]  # COLLADA 1.4 and 1.5 namespaces alike
        if root.tag != "COLLADA":
            raise InputError(path, f"not a COLLADA file (its root element is <{root.tag}>)")
        self.root = root
        self.ids = {el.get("id"): el for el in root.iter() if el.get("id")}
        unit = root.find("asset/unit")
        # some exporters write the unit with the decimal comma of their locale ("0,010000")
        self.metres_per_unit = self._float(unit.get("meter", "1").replace(",", "."), "asset/unit") \
            if unit is not None else 1.0
        up = (root.findtext("asset/up_axis") or "Y_UP").strip()
        self.up_axis = _UP.get(up, "+Y")
        self.nodes = []
        scene = self._visual_scene()
        for node in scene.findall("node") if scene is not None else []:
            self._walk(node, -1, np.eye(4), 0)

    def fail(self, msg):
        raise InputError(self.path, msg)

    def _float(self, text, what) -> float:
        try:
            value = float(text)
        except (TypeError, ValueError):
            self.fail(f"{what} is not a number: {text!r}")
        if not np.isfinite(value) or value <= 0:
            self.fail(f"{what} must be a positive number, not {text!r}")
        return value

    def ref(self, url, what: str):
        """The element a ``#id`` URL names."""
        el = self.ids.get(url[1:]) if isinstance(url, str) and url.startswith("#") else None
        if el is None:
            self.fail(f"{what} refers to {url!r}, which the file does not hold")
        return el

    def numbers(self, el, what: str, count: int | None = None) -> np.ndarray:
        """The whitespace-separated numbers of ``el``'s text (``count`` of them if given); a
        file written with its locale's decimal comma (``21,920870``, and no point) read too."""
        text = el.text or ""
        if "," in text and "." not in text:
            text = text.replace(",", ".")
        try:
            values = np.array(text.split(), dtype=np.float64)
        except ValueError:
            self.fail(f"{what} holds a value that is not a number")
        if count is not None and len(values) != count:
            self.fail(f"{what} holds {len(values)} numbers, {count} expected")
        if not np.isfinite(values).all():
            self.fail(f"{what} holds NaN or infinite values")
        return values

    def _visual_scene(self):
        instance = self.root.find("scene/instance_visual_scene")
        if instance is not None:
            return self.ref(instance.get("url"), "the scene")
        return self.root.find("library_visual_scenes/visual_scene")

    def _walk(self, node, parent: int, above: np.ndarray, depth: int) -> None:
        if depth > MAX_DEPTH:
            self.fail(f"nodes nested more than {MAX_DEPTH} deep (an instance_node loop?)")
        world = above @ self._local(node)
        self.nodes.append((node, parent, world))
        me = len(self.nodes) - 1
        for child in node:
            if child.tag == "node":
                self._walk(child, me, world, depth + 1)
            elif child.tag == "instance_node":
                self._walk(self.ref(child.get("url"), "an instance_node"), me, world, depth + 1)

    def _local(self, node) -> np.ndarray:
        """The node's transform elements composed in their order."""
        return compose_transform([(kind, values[None]) for _, kind, values in self.transform_elements(node)])[0]

    def transform_elements(self, node) -> list:
        """``[(element, kind, (n,) values)]`` of the node's transform elements in their order
        (``matrix`` 16 values, row by row; ``translate``, ``scale`` 3; ``rotate`` axis and
        degrees); ``lookat`` and ``skew`` refused."""
        out = []
        for t in node:
            what = f"node {node.get('name') or node.get('id')!r} <{t.tag}>"
            if t.tag in TRANSFORM_SIZE:
                out.append((t, t.tag, self.numbers(t, what, TRANSFORM_SIZE[t.tag])))
            elif t.tag in ("lookat", "skew"):
                self.fail(f"{what} is not read (bake the node's transform into a matrix)")
        return out

    def frame(self) -> dict:
        return {"metres_per_unit": self.metres_per_unit, "up_axis": self.up_axis}


def compose_transform(elements: list) -> np.ndarray:
    """(T, 4, 4) products of transform elements ``[(kind, (T, n) values)]`` in their order,
    for T sets of values at once (the frames of an animation, or one)."""
    count = len(elements[0][1]) if elements else 1
    m = np.tile(np.eye(4), (count, 1, 1))
    for kind, values in elements:
        step = np.tile(np.eye(4), (count, 1, 1))
        if kind == "matrix":
            step = values.reshape(count, 4, 4)
        elif kind == "translate":
            step[:, :3, 3] = values
        elif kind == "scale":
            step[:, [0, 1, 2], [0, 1, 2]] = values
        else:  # rotate: Rodrigues about the axis, the angle in degrees
            norm = np.linalg.norm(values[:, :3], axis=1, keepdims=True)
            x, y, z = (values[:, :3] / np.where(norm > 0, norm, 1.0)).T
            zero = np.zeros(count)
            k = np.stack([np.stack([zero, -z, y], 1), np.stack([z, zero, -x], 1), np.stack([-y, x, zero], 1)], 1)
            angle = np.radians(values[:, 3])[:, None, None] * (norm[:, :, None] > 0)
            step[:, :3, :3] = np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k
        m = m @ step
    return m


def geometry_arrays(scene: ColladaScene, geometry) -> tuple:
    """A ``<geometry>``'s control points (n, 3) and triangles (f, 3) over them."""
    name = geometry.get("name") or geometry.get("id")
    mesh = geometry.find("mesh")
    if mesh is None:
        return np.zeros((0, 3)), np.zeros((0, 3), np.int64)
    vertices = mesh.find("vertices")
    position = vertices.find("input[@semantic='POSITION']") if vertices is not None else None
    if position is None:
        scene.fail(f"geometry {name!r} has no <vertices> with a POSITION input")
    points = _source(scene, scene.ref(position.get("source"), f"geometry {name!r}"), 3)
    triangles = [_primitive_triangles(scene, prim, name) for prim in mesh
                 if prim.tag in ("triangles", "polylist", "polygons", "trifans", "tristrips")]
    tris = np.concatenate(triangles) if triangles else np.zeros((0, 3), np.int64)
    if len(tris) and (tris.min() < 0 or tris.max() >= len(points)):
        scene.fail(f"geometry {name!r} names a vertex it does not have")
    return points, tris


def _source(scene: ColladaScene, source, width: int) -> np.ndarray:
    """A ``<source>``'s float array as (n, width) rows (its accessor's stride)."""
    arr = source.find("float_array")
    accessor = source.find("technique_common/accessor")
    if arr is None or accessor is None:
        scene.fail(f"source {source.get('id')!r} has no float_array with an accessor")
    stride = int(accessor.get("stride", "1"))
    count = int(accessor.get("count", "0"))
    values = scene.numbers(arr, f"source {source.get('id')!r}")
    if stride < width or count * stride > len(values):
        scene.fail(f"source {source.get('id')!r} is shorter than its accessor says")
    return values[:count * stride].reshape(count, stride)[:, :width]


def _primitive_triangles(scene: ColladaScene, prim, name: str) -> np.ndarray:
    """The triangles of one ``triangles``/``polylist``/``polygons`` element, over the
    control points (its VERTEX input), polygons fan-triangulated."""
    inputs = prim.findall("input")
    vertex = next((i for i in inputs if i.get("semantic") == "VERTEX"), None)
    if vertex is None:
        scene.fail(f"geometry {name!r} has a <{prim.tag}> without a VERTEX input")
    stride = max(int(i.get("offset", "0")) for i in inputs) + 1
    column = int(vertex.get("offset", "0"))
    what = f"geometry {name!r} <{prim.tag}>"
    if prim.tag in ("polygons", "trifans", "tristrips"):  # one <p> per polygon, fan or strip
        runs = []
        for p in prim.findall("p"):
            run = scene.numbers(p, what).astype(np.int64)
            if len(run) % stride:
                scene.fail(f"{what} has an index list that is not a whole number of vertices")
            runs.append(run.reshape(-1, stride)[:, column])
        if prim.tag == "tristrips":
            return np.concatenate([_strip(r) for r in runs]) if runs else np.zeros((0, 3), np.int64)
        sizes = np.array([len(r) for r in runs], np.int64)
        flat = np.concatenate(runs) if runs else np.zeros(0, np.int64)
    else:
        p = prim.find("p")
        flat = scene.numbers(p, what).astype(np.int64) if p is not None else np.zeros(0, np.int64)
        if len(flat) % stride:
            scene.fail(f"{what} has an index list that is not a whole number of vertices")
        flat = flat.reshape(-1, stride)[:, column]
        vcount = prim.find("vcount")
        sizes = scene.numbers(vcount, what).astype(np.int64) if vcount is not None else np.full(len(flat) // 3, 3)
    if sizes.sum() != len(flat) or (sizes < 0).any():
        scene.fail(f"{what}'s polygon sizes do not add up to its indices")
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    fans = [np.stack([np.full(k - 2, s), s + np.arange(1, k - 1), s + np.arange(2, k)], axis=1)
            for s, k in zip(starts, sizes) if k >= 3]
    return flat[np.concatenate(fans)] if fans else np.zeros((0, 3), np.int64)


def _strip(run: np.ndarray) -> np.ndarray:
    """The triangles of a triangle strip, every other one turned to keep the winding."""
    k = np.arange(max(len(run) - 2, 0))
    tris = np.stack([run[k], run[k + 1], run[k + 2]], axis=1)
    tris[1::2] = tris[1::2][:, [1, 0, 2]]
    return tris


def read_collada_mesh(path) -> Mesh:
    """Every mesh instance of a .dae file as one static mesh in the file's world
    coordinates (skinned ones in their bind pose, ``BSM v``); vertex order: each instance's
    control points in turn."""
    return _mesh_of_scene(ColladaScene(path))


def _mesh_of_scene(scene: ColladaScene) -> Mesh:
    """:func:`read_collada_mesh` of a parsed file."""
    pieces = []
    for node, _, world in scene.nodes:
        for geometry, placed in _instances(scene, node, world):
            points, tris = geometry_arrays(scene, geometry)
            pieces.append(MeshPiece(node.get("name") or node.get("id") or "mesh", apply(placed, points), tris))
    if not pieces:
        scene.fail("contains no triangle mesh")
    _warn_not_read(scene)
    return merge_pieces(scene.path, pieces)


def _instances(scene: ColladaScene, node, world) -> list:
    """(geometry element, matrix placing its points) of a node's mesh instances."""
    out = [(scene.ref(i.get("url"), "an instance_geometry"), world) for i in node.findall("instance_geometry")]
    for instance in node.findall("instance_controller"):
        skin = scene.ref(instance.get("url"), "an instance_controller").find("skin")
        if skin is not None:
            out.append((scene.ref(skin.get("source"), "a skin"), _bind_shape(scene, skin)))
    return out


def _bind_shape(scene: ColladaScene, skin) -> np.ndarray:
    """A skin's (4, 4) bind-shape matrix (identity if it has none)."""
    bsm = skin.find("bind_shape_matrix")
    return scene.numbers(bsm, "bind_shape_matrix", 16).reshape(4, 4) if bsm is not None else np.eye(4)


def _warn_not_read(scene: ColladaScene) -> None:
    """Say what the file holds that is not read."""
    held = [what for what, found in (
        ("morph targets", scene.root.find("library_controllers/controller/morph") is not None),
        ("materials and texture coordinates", scene.root.find("library_materials/material") is not None
         or scene.root.find(".//input[@semantic='TEXCOORD']") is not None)) if found]
    if held:
        listed = ", ".join(held[:-1]) + " and " + held[-1] if len(held) > 1 else held[0]
        log.warning("%s: its %s are not read from a COLLADA file", scene.path, listed)


def read_collada_rig(path) -> Rig:
    """A skinned character from a .dae file, in the file's own units and axes (module
    docstring): the skinned meshes (and static meshes below a joint) merged as parts in
    the bind pose, the skeleton of every joint, weights normalised.

    Raises
    ------
    InputError with a one-line message for anything we cannot read, or a file with no skin.
    """
    return rig_of_scene(ColladaScene(path))


def skinned_joints(scene: ColladaScene) -> tuple:
    """The skins of a parsed file and its joints.

    Returns
    -------
    skins : [(node index, instance_controller, skin)] of every skinned mesh instance.
    named : per skin, (the node indices of its joints, (n, 4, 4) inverse bind matrices).
    bound : node index -> bind world matrix of every node a skin names.
    joints : the rig's joint node indices, depth first (every node a skin names or typed JOINT).
    """
    skins = [(i, instance, scene.ref(instance.get("url"), "an instance_controller").find("skin"))
             for i, (node, _, _) in enumerate(scene.nodes) for instance in node.findall("instance_controller")]
    skins = [(i, instance, skin) for i, instance, skin in skins if skin is not None]
    if not skins:
        scene.fail("has no skin (no skeleton bound to a mesh)")
    named = [_skin_joints(scene, instance, skin) for _, instance, skin in skins]
    bound = _bind_matrices(scene, named)
    joints = [i for i, (node, _, _) in enumerate(scene.nodes) if i in bound or node.get("type") == "JOINT"]
    return skins, named, bound, joints


def rig_of_scene(scene: ColladaScene) -> Rig:
    """:func:`read_collada_rig` of a parsed file (also read by :mod:`.collada_animation`)."""
    path = scene.path
    skins, named, bound, joints = skinned_joints(scene)
    jindex = {n: j for j, n in enumerate(joints)}
    parents = np.array([_nearest(scene, scene.nodes[n][1], jindex) for n in joints], dtype=np.int64)
    rest = np.array([scene.nodes[n][2] for n in joints])
    bind = rest.copy()
    for j, n in enumerate(joints):  # parents come first (depth-first order)
        if n in bound:
            bind[j] = bound[n]
        elif parents[j] >= 0:  # no skin names it: its rest offset from its parent
            bind[j] = bind[parents[j]] @ np.linalg.inv(rest[parents[j]]) @ rest[j]
    pieces, rows = [], []
    for (i, _, skin), (nodes, _) in zip(skins, named):
        points, tris = geometry_arrays(scene, scene.ref(skin.get("source"), "a skin"))
        pieces.append(MeshPiece(_name(scene.nodes[i][0]), apply(_bind_shape(scene, skin), points), tris))
        rows.append(_weights(scene, skin, [jindex[n] for n in nodes], len(points)))
    _rigid_pieces(scene, jindex, rest, bind, pieces, rows)
    _warn_not_read(scene)
    mesh = merge_pieces(path, pieces)
    idx, w = stack_influences(rows)
    skin = normalise_weights(path, mesh, idx, w, len(joints))
    names = unique_joint_names(path, [_name(scene.nodes[n][0]) for n in joints])
    try:
        return Rig(mesh, Skeleton.from_world(names, parents, rest, bind), skin)
    except ValueError as e:
        scene.fail(str(e))


def _rigid_pieces(scene: ColladaScene, jindex: dict, rest, bind, pieces: list, rows: list) -> None:
    """Static meshes below a joint, bound to it with weight 1 and moved with it from rest to
    bind (appended to ``pieces`` and ``rows``); static meshes below no joint left out."""
    for i, (node, _, world) in enumerate(scene.nodes):
        for geometry in (scene.ref(g.get("url"), "an instance_geometry") for g in node.findall("instance_geometry")):
            joint = _nearest(scene, i, jindex)
            if joint < 0:
                log.warning("%s: mesh %r is neither skinned nor below a joint; left out", scene.path, _name(node))
                continue
            points, tris = geometry_arrays(scene, geometry)
            placed = bind[joint] @ np.linalg.inv(rest[joint]) @ world
            pieces.append(MeshPiece(_name(node), apply(placed, points), tris))
            rows.append((np.full((len(points), 1), joint), np.ones((len(points), 1))))


def read_collada(path):
    """A .dae file as a :class:`Rig` if a skin binds a mesh, else as a static :class:`Mesh`."""
    scene = ColladaScene(path)
    if any(n.find("instance_controller") is not None for n, _, _ in scene.nodes) \
            and scene.root.find("library_controllers/controller/skin") is not None:
        return rig_of_scene(scene)
    return _mesh_of_scene(scene)


def collada_frame(path) -> dict:
    """The units and up axis the file declares (``asset/unit``, ``asset/up_axis``)."""
    return ColladaScene(path).frame()


def _name(node) -> str:
    return node.get("name") or node.get("sid") or node.get("id") or "node"


def _nearest(scene: ColladaScene, node: int, jindex: dict) -> int:
    """The joint index of ``node`` or of its nearest joint ancestor (-1 if none)."""
    while node >= 0 and node not in jindex:
        node = scene.nodes[node][1]
    return jindex.get(node, -1)


def _skin_joints(scene: ColladaScene, instance, skin) -> tuple:
    """The scene nodes a skin's joints name (by sid under the instance's ``<skeleton>``
    roots, then by sid, name or id anywhere), and their (n, 4, 4) inverse bind matrices."""
    sources = {s.get("id"): s for s in skin.findall("source")}
    joint_input = skin.find("joints/input[@semantic='JOINT']")
    ibm_input = skin.find("joints/input[@semantic='INV_BIND_MATRIX']")
    if joint_input is None or ibm_input is None:
        scene.fail(f"skin of {skin.get('source')!r} has no JOINT or INV_BIND_MATRIX input")
    source = sources.get(joint_input.get("source", "")[1:])
    array = None if source is None else (source.find("Name_array") if source.find("Name_array") is not None
                                         else source.find("IDREF_array"))
    if array is None:
        scene.fail(f"skin of {skin.get('source')!r} names its joints in no Name_array or IDREF_array")
    keys = (array.text or "").split()
    roots = [scene.ref(s.text.strip(), "a <skeleton>") for s in instance.findall("skeleton") if s.text]
    under = {id(el) for r in roots for el in r.iter("node")}
    nodes = []
    for key in keys:
        found = [i for i, (node, _, _) in enumerate(scene.nodes) if id(node) in under and node.get("sid") == key] \
            or [i for attr in ("sid", "name", "id") for i, (node, _, _) in enumerate(scene.nodes) if node.get(attr) == key]
        if not found:
            scene.fail(f"skin of {skin.get('source')!r} names joint {key!r}, which no node of the scene is")
        nodes.append(found[0])
    ibm_source = sources.get(ibm_input.get("source", "")[1:])
    if ibm_source is None:
        scene.fail(f"skin of {skin.get('source')!r}: its INV_BIND_MATRIX source is missing")
    ibm = scene.numbers(ibm_source.find("float_array"), "INV_BIND_MATRIX", 16 * len(keys)).reshape(-1, 4, 4)
    return nodes, ibm


def _bind_matrices(scene: ColladaScene, skins: list) -> dict:
    """node index -> bind world matrix (the inverse of its inverse bind matrix); skins that
    bind one joint must agree."""
    bound = {}
    for nodes, ibm in skins:
        for n, m in zip(nodes, ibm):
            try:
                world = np.linalg.inv(m)
            except np.linalg.LinAlgError:
                scene.fail(f"joint {_name(scene.nodes[n][0])!r} has a singular inverse bind matrix")
            if n in bound and not np.allclose(bound[n], world, atol=1e-4 * (1 + np.abs(world[:3, 3]).max())):
                scene.fail(f"two skins bind joint {_name(scene.nodes[n][0])!r} at different places")
            bound.setdefault(n, world)
    return bound


def _weights(scene: ColladaScene, skin, joint_of: list, n_points: int) -> tuple:
    """A skin's (n_points, k) joint indices (into the rig's joints) and weights."""
    vw = skin.find("vertex_weights")
    what = f"skin of {skin.get('source')!r} vertex_weights"
    if vw is None:
        scene.fail(f"skin of {skin.get('source')!r} has no vertex_weights")
    inputs = vw.findall("input")
    joint_in = next((i for i in inputs if i.get("semantic") == "JOINT"), None)
    weight_in = next((i for i in inputs if i.get("semantic") == "WEIGHT"), None)
    if joint_in is None or weight_in is None:
        scene.fail(f"{what} has no JOINT or WEIGHT input")
    stride = max(int(i.get("offset", "0")) for i in inputs) + 1
    weights = _source(scene, scene.ref(weight_in.get("source"), what), 1)[:, 0]
    vcount = scene.numbers(vw.find("vcount"), what).astype(np.int64) if vw.find("vcount") is not None else None
    if vcount is None or len(vcount) != n_points or (vcount < 0).any():
        scene.fail(f"{what} weighs {0 if vcount is None else len(vcount)} vertices, the mesh has {n_points}")
    pairs = scene.numbers(vw.find("v"), what, int(vcount.sum()) * stride).astype(np.int64).reshape(-1, stride)
    ji, wi = pairs[:, int(joint_in.get("offset", "0"))], pairs[:, int(weight_in.get("offset", "0"))]
    if (ji >= len(joint_of)).any() or (ji < -1).any() or (wi < 0).any() or (wi >= len(weights)).any():
        scene.fail(f"{what} names a joint or weight it does not have")
    width = max(1, int(vcount.max(initial=1)))
    rows = np.repeat(np.arange(n_points), vcount)
    slot = np.arange(len(pairs)) - np.repeat(np.cumsum(vcount) - vcount, vcount)
    idx, w = np.zeros((n_points, width), np.int64), np.zeros((n_points, width))
    keep = ji >= 0  # -1 is the bind shape itself: no joint moves that share
    idx[rows[keep], slot[keep]] = np.asarray(joint_of, np.int64)[ji[keep]]
    w[rows[keep], slot[keep]] = weights[wi[keep]]
    if (w < 0).any():
        scene.fail(f"{what} holds negative weights")
    return idx, w
