"""COLLADA (.dae) scenes and meshes, as Mixamo's Collada download, Blender, SketchUp, 3ds Max
and virtual-world avatar tools write them (COLLADA 1.4 and 1.5).

What is read here: the default visual scene's node tree (``matrix``, ``translate``,
``rotate`` and ``scale`` in their order; ``instance_node`` followed), each mesh's control
points (``<vertices>``' positions, the order kept) and its polygons (``triangles``,
``polylist``, ``polygons``, ``trifans``, ``tristrips``), triangulated; a skinned mesh
instance in its bind pose (its bind-shape matrix applied), the units and the up axis.

The rig (skins and joints) is read by :mod:`.collada_rig`, animations as clips by
:mod:`.collada_animation`, a target's look (UVs, normals, materials) by
:mod:`.collada_look`, its morph controllers (blend shapes) by :mod:`.collada_morph`.
"""
from __future__ import annotations

import logging
import xml.etree.ElementTree as ET

import numpy as np

from ..errors import InputError
from ..model.mesh import Mesh
from ..model.transforms import apply
from .assembly import MeshPiece, merge_pieces, pieces_shapes
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
        except (ET.ParseError, LookupError, ValueError) as e:  # LookupError: an unknown encoding declared
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

    def integer(self, element, attribute: str, default: int = 0) -> int:
        """A non-negative integer attribute of ``element`` (``default`` when it has none)."""
        text = element.get(attribute)
        if text is None:
            return default
        if not text.strip().isdigit():
            self.fail(f"<{element.tag}> has {attribute}={text!r}, not a count")
        return int(text)

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


def geometry_points(scene: ColladaScene, geometry) -> np.ndarray:
    """A ``<geometry>``'s control points (n, 3): its ``<vertices>``' positions, in order."""
    name = geometry.get("name") or geometry.get("id")
    mesh = geometry.find("mesh")
    if mesh is None:
        return np.zeros((0, 3))
    vertices = mesh.find("vertices")
    position = vertices.find("input[@semantic='POSITION']") if vertices is not None else None
    if position is None:
        scene.fail(f"geometry {name!r} has no <vertices> with a POSITION input")
    return source_rows(scene, scene.ref(position.get("source"), f"geometry {name!r}"), 3)


def geometry_arrays(scene: ColladaScene, geometry) -> tuple:
    """A ``<geometry>``'s control points (n, 3) and triangles (f, 3) over them."""
    name = geometry.get("name") or geometry.get("id")
    points, mesh = geometry_points(scene, geometry), geometry.find("mesh")
    if mesh is None:
        return points, np.zeros((0, 3), np.int64)
    triangles = []
    for prim in (p for p in mesh if p.tag in PRIMITIVES):
        rows, corners, offsets = primitive_corners(scene, prim, name)
        triangles.append(rows[corners, offsets["VERTEX"]] if len(corners) else np.zeros((0, 3), np.int64))
    tris = np.concatenate(triangles) if triangles else np.zeros((0, 3), np.int64)
    if len(tris) and (tris.min() < 0 or tris.max() >= len(points)):
        scene.fail(f"geometry {name!r} names a vertex it does not have")
    return points, tris


def source_rows(scene: ColladaScene, source, width: int) -> np.ndarray:
    """A ``<source>``'s float array as (n, width) rows (its accessor's stride)."""
    arr = source.find("float_array")
    accessor = source.find("technique_common/accessor")
    if arr is None or accessor is None:
        scene.fail(f"source {source.get('id')!r} has no float_array with an accessor")
    stride = scene.integer(accessor, "stride", 1)
    count = scene.integer(accessor, "count")
    values = scene.numbers(arr, f"source {source.get('id')!r}")
    if stride < width or count * stride > len(values):
        scene.fail(f"source {source.get('id')!r} is shorter than its accessor says")
    return values[:count * stride].reshape(count, stride)[:, :width]


#: the polygon elements of a COLLADA mesh
PRIMITIVES = ("triangles", "polylist", "polygons", "trifans", "tristrips")


def primitive_corners(scene: ColladaScene, prim, name: str) -> tuple:
    """The corners of one polygon element (:data:`PRIMITIVES`) and its triangles over them.

    Returns
    -------
    rows : (k, stride) each corner's indices, one column per input offset.
    tris : (t, 3) triangles, indices into ``rows`` (polygons and fans fan-triangulated,
        strips with every other triangle turned).
    offsets : input semantic -> its column (the first TEXCOORD set as ``TEXCOORD``).
    """
    inputs = prim.findall("input")
    offsets = {}
    for i in sorted(inputs, key=lambda i: scene.integer(i, "set")):
        offsets.setdefault(i.get("semantic"), scene.integer(i, "offset"))
    if "VERTEX" not in offsets:
        scene.fail(f"geometry {name!r} has a <{prim.tag}> without a VERTEX input")
    stride = max(scene.integer(i, "offset") for i in inputs) + 1
    what = f"geometry {name!r} <{prim.tag}>"
    if prim.tag in ("polygons", "trifans", "tristrips"):  # one <p> per polygon, fan or strip
        runs = []
        for p in prim.findall("p"):
            run = scene.numbers(p, what).astype(np.int64)
            if len(run) % stride:
                scene.fail(f"{what} has an index list that is not a whole number of vertices")
            runs.append(run.reshape(-1, stride))
        rows = np.concatenate(runs) if runs else np.zeros((0, stride), np.int64)
        starts = np.cumsum([0] + [len(r) for r in runs])[:-1]
        if prim.tag == "tristrips":
            strips = [_strip(s + np.arange(len(r))) for s, r in zip(starts, runs)]
            return rows, (np.concatenate(strips) if strips else np.zeros((0, 3), np.int64)), offsets
        sizes = np.array([len(r) for r in runs], np.int64)
    else:
        p = prim.find("p")
        flat = scene.numbers(p, what).astype(np.int64) if p is not None else np.zeros(0, np.int64)
        if len(flat) % stride:
            scene.fail(f"{what} has an index list that is not a whole number of vertices")
        rows = flat.reshape(-1, stride)
        vcount = prim.find("vcount")
        sizes = scene.numbers(vcount, what).astype(np.int64) if vcount is not None else np.full(len(rows) // 3, 3)
    if sizes.sum() != len(rows) or (sizes < 0).any():
        scene.fail(f"{what}'s polygon sizes do not add up to its indices")
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    fans = [np.stack([np.full(k - 2, s), s + np.arange(1, k - 1), s + np.arange(2, k)], axis=1)
            for s, k in zip(starts, sizes) if k >= 3]
    return rows, (np.concatenate(fans) if fans else np.zeros((0, 3), np.int64)), offsets


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
    return mesh_of_scene(ColladaScene(path))


def mesh_of_scene(scene: ColladaScene) -> Mesh:
    """:func:`read_collada_mesh` of a parsed file, with its look (:mod:`.collada_look`: its
    morph targets too)."""
    from .collada_look import collada_look  # here: they read the scene through this module
    from .collada_morph import geometry_morphs

    pieces, instances, shapes = [], [], []
    for node, _, world in scene.nodes:
        for geometry, placed in _instances(scene, node, world):
            points, tris = geometry_arrays(scene, geometry)
            pieces.append(MeshPiece(node_name(node), apply(placed, points), tris))
            instances.append((node, geometry, placed))
            shapes.append(geometry_morphs(scene, geometry, placed[:3, :3], len(points)))
    if not pieces:
        scene.fail("contains no triangle mesh")
    mesh = merge_pieces(scene.path, pieces)
    mesh.look = collada_look(scene, instances, mesh, pieces_shapes(shapes, pieces))
    return mesh


def _instances(scene: ColladaScene, node, world) -> list:
    """(geometry element, matrix placing its points) of a node's mesh instances: its
    geometries, and the geometries its controllers deform (a skinned one in its bind shape)."""
    out = [(scene.ref(i.get("url"), "an instance_geometry"), world) for i in node.findall("instance_geometry")]
    for instance in node.findall("instance_controller"):
        controller = scene.ref(instance.get("url"), "an instance_controller")
        skin = controller.find("skin")
        out.append((deformed_geometry(scene, controller, "an instance_controller"),
                    bind_shape(scene, skin) if skin is not None else world))
    return out


#: controllers followed from a skin to its geometry (a skin over a morph over a geometry)
_MOST_CONTROLLERS = 8


def deformed_geometry(scene: ColladaScene, element, what: str):
    """The ``<geometry>`` an element names or deforms: itself, or the base geometry of the
    controller it is (a skin or a morph, followed through controllers over controllers)."""
    for _ in range(_MOST_CONTROLLERS):
        if element.tag != "controller":
            return element
        deformer = element.find("skin")
        deformer = deformer if deformer is not None else element.find("morph")
        if deformer is None:
            scene.fail(f"{what}: controller {element.get('id')!r} holds neither a skin nor a morph")
        element = scene.ref(deformer.get("source"), f"controller {element.get('id')!r}")
    scene.fail(f"{what}: controllers over controllers more than {_MOST_CONTROLLERS} deep")


def bind_shape(scene: ColladaScene, skin) -> np.ndarray:
    """A skin's (4, 4) bind-shape matrix (identity if it has none)."""
    bsm = skin.find("bind_shape_matrix")
    return scene.numbers(bsm, "bind_shape_matrix", 16).reshape(4, 4) if bsm is not None else np.eye(4)


def node_name(node) -> str:
    """A node's name: its ``name``, else its ``sid`` or ``id`` (joints and mesh parts alike)."""
    return node.get("name") or node.get("sid") or node.get("id") or "node"


def collada_frame(path) -> dict:
    """The units and up axis the file declares (``asset/unit``, ``asset/up_axis``)."""
    return ColladaScene(path).frame()
