"""FBX 6 (FBX 2006-2010: version 6000-6100, binary or ASCII) turned into the node tree of
FBX 7, so that :mod:`.fbx_scene` and every reader after it read both alike.

FBX 6 names its objects where FBX 7 numbers them, and keeps a mesh's arrays in its model:

* every object of ``Objects`` gets an id (in file order) before its name (``name\x00\x01Class``
  in both forms: the ASCII parser turns ``Class::name`` into it), the scene root (``Scene``)
  is id 0, and each ``Connect`` becomes a ``C`` of ids;
* ``Properties60`` ``Property: name, type, flags, values...`` becomes ``Properties70``
  ``P: name, type, "", flags, values...``;
* a ``Mesh`` model's vertices, polygons and layers move into a ``Geometry`` object of its
  own, connected below it;
* a bind pose's ``PoseNode`` names its model: the name becomes the model's id;
* a mesh model's ``Shape`` children (index, offset and normal arrays) become FBX 7's blend
  shape: a ``BlendShape`` deformer on the geometry, a ``BlendShapeChannel`` per shape with
  the model's property of the shape's name as its ``DeformPercent``, and the ``Shape``
  geometry below it.

Animation takes (FBX 6's ``Takes``) are not read (a warning says so).
"""
from __future__ import annotations

import logging

import numpy as np

from .fbx_binary import FbxNode

log = logging.getLogger("asetransfer")

#: nodes FBX 7 holds as one array and an FBX 6 ASCII file as a list of numbers
_ARRAYS = {"Vertices", "PolygonVertexIndex", "Edges", "Normals", "NormalsIndex", "NormalsW", "Binormals",
           "Tangents", "UV", "UVIndex", "Colors", "ColorIndex", "Materials", "Smoothing", "Indexes", "Weights",
           "Transform", "TransformLink", "Matrix", "TextureId"}
#: the children of an FBX 6 mesh model that FBX 7 keeps in its geometry
_GEOMETRY = {"Vertices", "PolygonVertexIndex", "Edges", "GeometryVersion", "Layer", "Smoothness",
             "PreviewDivisionLevels", "RenderDivisionLevels", "DisplaySubdivisions", "BoundaryRule",
             "PreserveBorders", "PreserveHardEdges", "PropagateEdgeHardness"}


def as_fbx7(path, nodes: list) -> list:
    """The top-level ``nodes`` of an FBX 6 file as FBX 7 holds them (module docstring)."""
    sections = {n.name: n for n in nodes}
    objects = sections.get("Objects")
    ids, converted, geometry_links = {"Scene\x00\x01Model": 0, "Scene": 0}, [], []
    for k, node in enumerate(objects.children if objects is not None else []):
        if node.props and isinstance(node.props[0], str):
            ids.setdefault(str(node.props[0]), 1000 + 2 * k)
    meshes = set()
    for node in objects.children if objects is not None else []:
        if not node.props or not isinstance(node.props[0], str):
            continue
        oid = ids[str(node.props[0])]
        children = [_properties70(c) if c.name == "Properties60" else _arrays(c) for c in node.children]
        if node.name == "Pose":
            children = [_pose_node(c, ids) if c.name == "PoseNode" else c for c in children]
        if node.name == "Model" and any(c.name == "Vertices" for c in children):
            name = str(node.props[0]).split("\x00\x01")[0]
            geometry = FbxNode("Geometry", [oid + 1, f"{name}\x00\x01Geometry", "Mesh"],
                               [c for c in children if c.name in _GEOMETRY or c.name.startswith("LayerElement")])
            children = [c for c in children if c not in geometry.children]
            converted.append(geometry)
            geometry_links.append(FbxNode("C", ["OO", oid + 1, oid]))
            meshes.add(oid)
            shapes = [c for c in children if c.name == "Shape"]
            if shapes:
                children = [c for c in children if c.name != "Shape"]
                _blend_shape(node, name, shapes, oid + 1, len(converted), converted, geometry_links)
        converted.append(FbxNode(node.name, [oid, str(node.props[0]), *node.props[1:2]], children))
    connections = []
    for c in sections["Connections"].all("Connect") if "Connections" in sections else []:
        if len(c.props) >= 3 and str(c.props[1]) in ids and str(c.props[2]) in ids:
            child, parent = ids[str(c.props[1])], ids[str(c.props[2])]
            if parent in meshes and str(c.props[1]).endswith("\x00\x01Deformer"):
                parent += 1  # a skin deforms the mesh's geometry in FBX 7
            connections.append(FbxNode("C", [c.props[0], child, parent, *c.props[3:]]))
    takes = sections.get("Takes")
    if takes is not None and any(t.child("Model") is not None for t in takes.all("Take")):  # a take moving a model
        log.warning("%s: the animation takes of an FBX 6 file are not read", path)
    out = []
    for node in nodes:
        if node.name == "Objects":
            out.append(FbxNode("Objects", [], converted))
        elif node.name == "Connections":
            out.append(FbxNode("Connections", [], connections + geometry_links))
        elif node.name != "Takes":
            out.append(node)
    return out


#: ids of the objects made for FBX 6 blend shapes (after every object's of the file)
_SHAPE_IDS = 1 << 40


def _blend_shape(model: FbxNode, name: str, shapes: list, geometry: int, at: int, converted: list,
                 links: list) -> None:
    """FBX 7's blend shape of an FBX 6 mesh model's ``Shape`` children (module docstring),
    appended to ``converted`` with its connections to ``links``; ``at`` makes its ids
    unique (the number of objects converted so far)."""
    percent = {str(p.props[0]): p.props[-1] for c in model.children if c.name == "Properties60"
               for p in c.all("Property") if len(p.props) >= 4}
    first = _SHAPE_IDS + 4096 * at
    converted.append(FbxNode("Deformer", [first, f"{name}\x00\x01Deformer", "BlendShape"], []))
    links.append(FbxNode("C", ["OO", first, geometry]))
    for k, shape in enumerate(shapes, 1):
        label = str(shape.props[0]) if shape.props else f"shape{k}"
        value = percent.get(label, 0.0)
        value = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0
        channel, target = first + 2 * k - 1, first + 2 * k
        converted.append(FbxNode("Deformer", [channel, f"{label}\x00\x01SubDeformer", "BlendShapeChannel"],
                                 [FbxNode("DeformPercent", [value])]))
        converted.append(FbxNode("Geometry", [target, f"{label}\x00\x01Geometry", "Shape"], shape.children))
        links += [FbxNode("C", ["OO", channel, first]), FbxNode("C", ["OO", target, channel])]


def _arrays(node: FbxNode) -> FbxNode:
    """``node`` (and its children) with a list of numbers an FBX 6 ASCII file writes where FBX 7
    holds an array made one array (int64 if every value is an integer, else float64)."""
    props = node.props
    if node.name in _ARRAYS and props \
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in props):
        integers = all(isinstance(v, int) for v in props)
        props = [np.array(props, dtype=np.int64 if integers else np.float64)]
    return FbxNode(node.name, props, [_arrays(c) for c in node.children])


def _properties70(node: FbxNode) -> FbxNode:
    """``Properties60`` as ``Properties70``: an empty label after each property's type."""
    return FbxNode("Properties70", [], [FbxNode("P", [*p.props[:2], "", *p.props[2:]])
                                       for p in node.all("Property") if len(p.props) >= 2])


def _pose_node(node: FbxNode, ids: dict) -> FbxNode:
    """A bind pose's ``PoseNode`` with its model named by id."""
    children = []
    for c in node.children:
        if c.name == "Node" and c.props and str(c.props[0]) in ids:
            c = FbxNode("Node", [ids[str(c.props[0])]])
        children.append(c)
    return FbxNode("PoseNode", node.props, children)
