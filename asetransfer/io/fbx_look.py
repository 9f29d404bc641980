"""The look of an FBX target (:class:`~asetransfer.model.look.Look`, built by :mod:`.look_build`):
every UV set and colour set and its normals (``LayerElementUV`` k as ``TEXCOORD_k``,
``LayerElementColor`` k as ``COLOR_k``, ``LayerElementNormal`` 0; mapped by polygon vertex, by
vertex or all the same, direct or through an index), its
materials (``DiffuseColor`` x ``DiffuseFactor`` and ``Opacity`` as the base colour, the
texture on ``DiffuseColor`` as the base colour texture: the ``Video``'s embedded content,
else its file beside the FBX) one primitive per material (``LayerElementMaterial``).

Each mesh is a part; its glTF vertices are its distinct (control point, UV, normal,
colour) corners.  What is not carried (tangents, binormals, other texture channels, a
texture that cannot be read, a layer whose indices are broken) is named in ``Look.lost``.
"""
from __future__ import annotations

import os

import numpy as np

from ..errors import InputError
from ..model.mesh import Mesh
from .fbx_scene import FbxScene
from .files import read_bytes
from .look_build import LookPart, build_look
from .look_parts import roughness_of

#: what a texture's first bytes say it is
_MIME = ((b"\x89PNG", "image/png"), (b"\xff\xd8\xff", "image/jpeg"))


def fbx_look(scene: FbxScene, models: list, mesh: Mesh, placements: list | None = None, shapes=()):
    """The look of the meshes ``models`` ((model, geometry) in the order ``mesh`` merged them;
    ``placements``: the (4, 4) matrix that placed each one's points, default its world
    matrix; ``shapes``: their blend shapes on ``mesh``'s vertices, as morph targets), None
    when they hold nothing beyond positions and triangles."""
    parts, lost, materials, images, known = [], [], [], [], {}
    start = 0
    for p, (model, geometry) in enumerate(models):
        node = scene.objects[geometry]
        pvi = np.asarray(node.child("PolygonVertexIndex").props[0], dtype=np.int64)
        n_points = len(np.asarray(node.child("Vertices").props[0])) // 3
        corner_point, corner_polygon, triangles = _corners(pvi)
        world = scene.geometry_world(model) if placements is None else placements[p]
        attributes = _attributes(scene, node, corner_point, corner_polygon, world, lost)
        slots = [_material(scene, m, known, materials, images, lost) for m in scene.linked(model, "Material")]
        polygon_slot = _polygon_materials(node, int(corner_polygon.max(initial=-1)) + 1, len(slots))
        parts.append(_part(mesh.parts[p], start + corner_point, mesh, attributes, triangles,
                           polygon_slot[corner_polygon[triangles[:, 0]]], slots))
        start += n_points
    if not any(part.attributes for part in parts) and not materials and not shapes:
        return None
    return build_look(scene.path, parts, materials, images, sorted(set(lost)), shapes=shapes)


def _corners(pvi: np.ndarray) -> tuple:
    """Each corner's control point and polygon, and the fan triangles as corner indices (the
    order :func:`~.fbx.polygon_triangles` makes)."""
    ends = np.flatnonzero(pvi < 0)
    point = np.where(pvi < 0, ~pvi, pvi)
    starts = np.concatenate([[0], ends[:-1] + 1]) if len(ends) else np.zeros(0, np.int64)
    polygon = np.repeat(np.arange(len(starts)), ends - starts + 1)
    n_tris = np.maximum(ends - starts - 1, 0)
    poly = np.repeat(np.arange(len(starts)), n_tris)
    k = np.arange(len(poly)) - np.repeat(np.cumsum(n_tris) - n_tris, n_tris) + 1
    first = starts[poly]
    return point[:len(polygon)], polygon, np.stack([first, first + k, first + k + 1], axis=1)


def _layer(scene: FbxScene, node, element: str, values: str, index: str, width: int, corner_point, corner_polygon,
           which: int = 0):
    """(corners, width) values of layer ``element`` number ``which`` at every corner, or None."""
    layer = next((c for c in node.all(element) if c.props and c.props[0] == which), None)
    raw = _value(layer, values)
    if raw is None:
        return None
    data = np.asarray(raw, dtype=np.float64)
    if data.size % width:
        return None  # malformed: the layer is dropped
    data = data.reshape(-1, width)
    mapping, reference = str(_value(layer, "MappingInformationType", "")), str(_value(layer, "ReferenceInformationType", ""))
    key = {"ByPolygonVertex": np.arange(len(corner_point)), "ByVertice": corner_point, "ByVertex": corner_point,
           "ByPolygon": corner_polygon, "AllSame": np.zeros(len(corner_point), np.int64)}.get(mapping)
    if key is None:
        return None
    if reference in ("IndexToDirect", "Index") and _value(layer, index) is not None:
        indices = np.asarray(_value(layer, index), dtype=np.int64).reshape(-1)
        if len(key) and (key.min() < 0 or key.max() >= len(indices)):
            return None  # fewer indices than the mapping needs: the layer is dropped
        key = indices[key] if len(key) else key
    if len(key) and (key.min() < 0 or key.max() >= len(data)):
        return None  # a broken index: the layer is dropped (named as lost by the caller)
    return data[key]


def _value(node, key: str, default=None):
    """The first value of ``node``'s child ``key`` (``default`` without the node, the child or a value)."""
    child = node.child(key) if node is not None else None
    return child.props[0] if child is not None and child.props else default


def _attributes(scene: FbxScene, node, corner_point, corner_polygon, world: np.ndarray, lost: list) -> dict:
    """glTF attribute name -> per-corner values of the carried layers (in the mesh's world)."""
    out = {}
    sets = {"TEXCOORD": ("LayerElementUV", "UV", "UVIndex", 2), "COLOR": ("LayerElementColor", "Colors", "ColorIndex", 4)}
    for prefix, (element, values, index, width) in sets.items():
        numbers = sorted({int(c.props[0]) for c in node.all(element) if c.props and isinstance(c.props[0], int)})
        for which in numbers:
            data = _layer(scene, node, element, values, index, width, corner_point, corner_polygon, which)
            if data is None:
                lost.append(f"FBX {element} {which} (its values or indices are broken)")
                continue
            name = f"{prefix}_{sum(k.startswith(prefix) for k in out)}"
            # FBX's v up -> glTF's v down; colours clipped to [0, 1]
            out[name] = data * [1.0, -1.0] + [0.0, 1.0] if prefix == "TEXCOORD" else np.clip(data, 0.0, 1.0)
    normals = _layer(scene, node, "LayerElementNormal", "Normals", "NormalsIndex", 3, corner_point, corner_polygon)
    if normals is not None:
        turned = normals @ np.linalg.inv(world[:3, :3])
        out["NORMAL"] = turned / np.maximum(np.linalg.norm(turned, axis=1, keepdims=True), 1e-30)
    for element, label in (("LayerElementTangent", "tangents"), ("LayerElementBinormal", "binormals")):
        if node.all(element):
            lost.append(f"FBX {label}")
    return out


def _polygon_materials(node, n_polygons: int, n_slots: int) -> np.ndarray:
    """(polygons,) each polygon's material slot (-1: none)."""
    layer = next((c for c in node.all("LayerElementMaterial") if c.props and c.props[0] == 0), None)
    if layer is None or layer.child("Materials") is None or n_slots == 0:
        return np.full(n_polygons, 0 if n_slots else -1, np.int64)
    values = np.asarray(layer.child("Materials").props[0], dtype=np.int64)
    mapping = str(layer.child("MappingInformationType").props[0]) if layer.child("MappingInformationType") else ""
    slot = np.full(n_polygons, values[0] if len(values) else 0) if mapping == "AllSame" or len(values) != n_polygons \
        else values
    return np.where((slot >= 0) & (slot < n_slots), slot, -1)


def _part(name: str, points: np.ndarray, mesh: Mesh, attributes: dict, triangles: np.ndarray, triangle_slot,
          slots: list) -> LookPart:
    """The glTF part of one mesh: its distinct corners (point and attribute values) and one
    primitive per material."""
    columns = [points[:, None].astype(np.float64)] + [attributes[a] for a in sorted(attributes)]
    keys = np.concatenate(columns, axis=1)
    unique, local = np.unique(keys, axis=0, return_inverse=True)
    local = local.reshape(-1)
    vertices = unique[:, 0].astype(np.int64)
    part = LookPart(name, vertices, mesh.vertices[vertices])
    at = 1
    for a in sorted(attributes):
        width = attributes[a].shape[1]
        part.attributes[a] = unique[:, at:at + width]
        at += width
    faces = local[triangles]
    for s in np.unique(triangle_slot):
        part.primitives.append((faces[triangle_slot == s], None if s < 0 else slots[s]))
    return part


def _material(scene: FbxScene, material, known: dict, materials: list, images: list, lost: list) -> int:
    """The glTF material index of FBX material ``material`` (made on first use)."""
    if material in known:
        return known[material]
    props = scene.props(material)
    colour = _numbers(props.get("DiffuseColor"), 3, [0.8, 0.8, 0.8])
    factor = _numbers(props.get("DiffuseFactor"), 1, [1.0])[0]
    opacity = _numbers(props.get("Opacity"), 1, [1.0])[0]
    alpha = opacity if 0.0 <= opacity <= 1.0 else 1.0
    # roughness and metallic by the convention Blender's importer reads FBX Phong with (look_parts.phong_of)
    shininess = _numbers(props.get("Shininess", props.get("ShininessExponent")), 1, [20.0])[0]
    metallic = min(max(_numbers(props.get("ReflectionFactor"), 1, [0.0])[0], 0.0), 1.0)
    pbr = {"baseColorFactor": [c * factor for c in colour] + [alpha], "metallicFactor": metallic,
           "roughnessFactor": roughness_of(shininess)}
    texture = _diffuse_texture(scene, material, lost)
    if texture is not None:
        pbr["baseColorTexture"] = {"index": len(images)}
        pbr["baseColorFactor"] = [1.0, 1.0, 1.0, alpha]  # the texture is the colour, as DCCs show it
        images.append(texture)
    entry = {"name": scene.names[material], "pbrMetallicRoughness": pbr}
    emissive = [c * _numbers(props.get("EmissiveFactor"), 1, [1.0])[0]
                for c in _numbers(props.get("EmissiveColor"), 3, [0.0, 0.0, 0.0])]
    if any(e > 0 for e in emissive):
        entry["emissiveFactor"] = [min(max(e, 0.0), 1.0) for e in emissive]
    if alpha < 1.0:
        entry["alphaMode"] = "BLEND"
    known[material] = len(materials)
    materials.append(entry)
    return known[material]


def _numbers(value, count: int, default: list) -> list:
    """``count`` finite numbers from a property value (a number or a list), else ``default``."""
    values = value if isinstance(value, (list, tuple, np.ndarray)) else [value]
    if len(values) < count or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v)
                                      for v in values[:count]):
        return default
    return [float(v) for v in values[:count]]


def _diffuse_texture(scene: FbxScene, material, lost: list):
    """(bytes, MIME type) of the texture on the material's diffuse colour, or None."""
    for texture, channel in scene.property_children.get(material, []):
        if scene.objects[texture].name != "Texture":
            continue
        if channel not in ("DiffuseColor", "Maya|baseColor", "Maya|TEX_color_map"):
            lost.append(f"FBX textures on {channel}")
            continue
        data = _texture_bytes(scene, texture)
        if data is None:
            lost.append(f"FBX texture {scene.names[texture]!r} (neither embedded nor found beside the file)")
            continue
        mime = next((m for magic, m in _MIME if data.startswith(magic)), None)
        if mime is None:
            lost.append(f"FBX texture {scene.names[texture]!r} (not PNG or JPEG)")
            continue
        return data, mime
    return None


def _texture_bytes(scene: FbxScene, texture):
    """A texture's image: its Video's embedded ``Content``, else the file it names beside the FBX."""
    for video in scene.linked(texture, "Video"):
        content = scene.objects[video].child("Content")
        # the SDK splits a large file into several raw values: their bytes one after the other
        data = b"".join(bytes(p) for p in content.props if isinstance(p, (bytes, bytearray))) if content else b""
        if data:
            return data
    node = scene.objects[texture]
    for key in ("RelativeFilename", "FileName"):
        name = node.child(key).props[0] if node.child(key) is not None and node.child(key).props else ""
        if isinstance(name, str) and name:
            path = os.path.join(os.path.dirname(os.fspath(scene.path)), name.replace("\\", "/"))
            if os.path.isfile(path):
                try:
                    return read_bytes(path)
                except InputError:
                    return None
    return None
