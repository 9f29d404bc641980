"""Wavefront OBJ targets: the mesh (positions, ``o`` objects as parts, polygons
fan-triangulated, the file's vertex order) and its look (:mod:`.look_build`): ``vt`` and
``vn`` per corner, ``usemtl`` groups and the ``.mtl`` libraries' materials (``Kd``, ``d``
or ``Tr``, ``map_Kd``, and ``map_Bump``/``bump``/``norm`` read as a normal map, as
Blender's importer reads them) with their images.

A glTF vertex is an OBJ corner (position, UV, normal), so a seam in the UVs or a hard
edge splits an OBJ vertex in the output as it does in any exporter; the transfer itself
rigs the OBJ's own vertices.  glTF's UV origin is the image's top left: ``v`` is flipped.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError
from ..model.mesh import Mesh
from .assembly import mesh_of_arrays
from .files import decode_mesh_text
from .glb import read_beside
from .look_build import LookPart, build_look, image_beside

_MAX_INDEX = np.iinfo(np.int64).max  # an index past it is no index (and would overflow the face array)
#: texture map options and how many values each takes (``-o``, ``-s``, ``-t``: one to three)
MAP_OPTIONS = {"-blendu": 1, "-blendv": 1, "-bm": 1, "-boost": 1, "-cc": 1, "-clamp": 1, "-imfchan": 1,
               "-mm": 2, "-texres": 1, "-type": 1, "-o": 3, "-s": 3, "-t": 3}


@dataclass
class ObjFile:
    """What an OBJ file holds: positions and, per triangle, its corners' indices.

    ``corner_uv``, ``corner_normal`` : (F, 3) indices into ``uv``/``normals``, -1 where a
    corner has none; ``face_material`` : (F,) index into ``materials`` (-1: none).
    """

    vertices: list = field(default_factory=list)
    uv: list = field(default_factory=list)
    normals: list = field(default_factory=list)
    faces: list = field(default_factory=list)
    corners: list = field(default_factory=list)      # per triangle: ((vt, vn), (vt, vn), (vt, vn))
    face_object: list = field(default_factory=list)
    face_material: list = field(default_factory=list)
    objects: list = field(default_factory=lambda: ["mesh"])
    materials: list = field(default_factory=list)
    libraries: list = field(default_factory=list)
    ignored: set = field(default_factory=set)

    def has_look(self) -> bool:
        return bool(self.uv or self.normals or self.materials or self.libraries)


def read_obj_file(path, data: bytes) -> tuple:
    """The :class:`~asetransfer.Mesh` of an OBJ file's bytes, its look attached when the
    file has UVs, normals or materials."""
    obj = _parse(path, data)
    mesh = _mesh(path, obj)
    if obj.has_look():
        mesh.look = _look(path, obj, mesh)
    return mesh


def _parse(path, data: bytes) -> ObjFile:
    text = decode_mesh_text(data)
    obj, current, material = ObjFile(), 0, -1
    for lineno, line in enumerate(text.splitlines(), 1):
        parts = line.split()
        if not parts or parts[0].startswith("#"):
            continue
        tag = parts[0]
        try:
            if tag == "v":
                obj.vertices.append([float(x) for x in parts[1:4]])
                if len(obj.vertices[-1]) != 3:
                    raise ValueError
            elif tag == "vt":
                obj.uv.append([float(x) for x in (parts[1:3] + ["0"])[:2]])
            elif tag == "vn":
                obj.normals.append([float(x) for x in parts[1:4]])
                if len(obj.normals[-1]) != 3:
                    raise ValueError
            elif tag == "f":
                _face(obj, parts[1:], current, material)
            elif tag == "o":
                current = _object(obj, " ".join(parts[1:]))
            elif tag == "usemtl":
                name = " ".join(parts[1:])
                if name not in obj.materials:
                    obj.materials.append(name)
                material = obj.materials.index(name)
            elif tag == "mtllib":
                obj.libraries += [p for p in parts[1:] if p not in obj.libraries]
            else:
                obj.ignored.add(tag)
        except ValueError:
            raise InputError(path, f"malformed OBJ line {lineno}: {line.strip()[:60]!r}") from None
    return obj


def _object(obj: ObjFile, name: str) -> int:
    """Start object ``name`` (the first one renames the default part); its part index."""
    name = name or f"object{len(obj.objects)}"
    if obj.faces or len(obj.objects) > 1 or obj.objects[0] != "mesh":
        obj.objects.append(name)
    else:
        obj.objects[0] = name
    return len(obj.objects) - 1


def _face(obj: ObjFile, tokens: list, current: int, material: int) -> None:
    """Append the fan triangles of an ``f`` line's ``v[/vt[/vn]]`` tokens (1-based; negatives
    count back).  Raises ValueError for a malformed vertex index; a ``vt`` or ``vn`` index
    that is no index reads as none (the look names the corners it leaves without)."""
    def index(text, count):
        i = int(text)
        k = i - 1 if i > 0 else count + i
        if i == 0 or k < 0 or k > _MAX_INDEX:
            raise ValueError
        return k

    def optional(text, count):
        try:
            return index(text, count) if text else -1
        except ValueError:
            return count  # past the end: counted as missing by the look

    corners = []
    for token in tokens:
        fields = token.split("/") + ["", ""]
        corners.append((index(fields[0], len(obj.vertices)), optional(fields[1], len(obj.uv)),
                        optional(fields[2], len(obj.normals))))
    if len(corners) < 3:
        raise ValueError
    for k in range(1, len(corners) - 1):  # fan triangulation
        tri = (corners[0], corners[k], corners[k + 1])
        obj.faces.append(tuple(c[0] for c in tri))
        obj.corners.append(tuple(c[1:] for c in tri))
        obj.face_object.append(current)
        obj.face_material.append(material)


def _mesh(path, obj: ObjFile) -> Mesh:
    """The mesh of the parsed file: its objects as parts (one part when objects share vertices)."""
    faces = np.asarray(obj.faces, dtype=np.int64).reshape(-1, 3)
    n = len(obj.vertices)
    if len(faces) and faces.max() >= n:
        raise InputError(path, f"an OBJ face uses vertex {int(faces.max()) + 1}, but the file has {n} vertices")
    objects, part = obj.objects, np.zeros(n, np.int32)
    face_obj = np.asarray(obj.face_object, np.int32)
    if len(objects) > 1 and len(faces):
        # a vertex belongs to the object of the first face that uses it
        first = np.full(n, -1, np.int32)
        for k in (2, 1, 0):
            first[faces[::-1, k]] = face_obj[::-1]
        part = np.where(first >= 0, first, 0).astype(np.int32)
        if (part[faces] != face_obj[:, None]).any():  # objects share vertices: keep one part
            objects, part = ["mesh"], np.zeros(n, np.int32)
    used = sorted(set(part.tolist())) if n else [0]
    remap = {p: i for i, p in enumerate(used)}
    part = np.array([remap[p] for p in part.tolist()], np.int32) if n else part
    return mesh_of_arrays(path, np.array(obj.vertices, dtype=np.float64).reshape(-1, 3), faces,
                          parts=tuple(objects[p] for p in used), vertex_part=part)


# ---------------------------------------------------------------------- the look
def _look(path, obj: ObjFile, mesh: Mesh):
    """The :class:`~asetransfer.model.look.Look` of a parsed OBJ file and its mesh."""
    faces = np.asarray(obj.faces, dtype=np.int64).reshape(-1, 3)
    corners = np.asarray(obj.corners, dtype=np.int64).reshape(-1, 3, 2)
    lost = []
    for k, (what, values) in enumerate((("texture coordinates", obj.uv), ("normals", obj.normals))):
        if len(corners) and corners[:, :, k].max() >= len(values):
            lost.append(f"OBJ {what} of faces naming ones the file does not have")
            corners[:, :, k][corners[:, :, k] >= len(values)] = -1
    face_material = np.asarray(obj.face_material, dtype=np.int64)
    uv = np.asarray(obj.uv, dtype=np.float64).reshape(-1, 2)
    normals = np.asarray(obj.normals, dtype=np.float64).reshape(-1, 3)
    face_part = mesh.vertex_part[faces[:, 0]]
    parts = []
    for p, name in enumerate(mesh.parts):
        sel = np.flatnonzero(face_part == p)
        keys = np.concatenate([faces[sel][:, :, None], corners[sel]], axis=2).reshape(-1, 3)
        unique, local = np.unique(keys, axis=0, return_inverse=True)
        part = LookPart(name, unique[:, 0], mesh.vertices[unique[:, 0]])
        if (unique[:, 1] >= 0).any():
            part.attributes["TEXCOORD_0"] = np.where(unique[:, 1:2] >= 0, uv[unique[:, 1]] * [1, -1] + [0, 1], 0.0)
        if (unique[:, 2] >= 0).all() and len(unique):
            n = normals[unique[:, 2]]
            part.attributes["NORMAL"] = n / np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-30)
        elif (unique[:, 2] >= 0).any():
            lost.append(f"the normals of {name!r} (some of its faces have none)")
        local = local.reshape(-1, 3)
        for m in np.unique(face_material[sel]):
            part.primitives.append((local[face_material[sel] == m], None if m < 0 else int(m)))
        parts.append(part)
    materials, images, mtl_lost = _materials(path, obj)
    ignored = sorted(obj.ignored - {"g", "s"})  # groups and smoothing groups: the corners' normals hold the shading
    lost += mtl_lost + ([f"OBJ statements {' '.join(ignored)}"] if ignored else [])
    extensions = ["KHR_texture_transform"] if any("KHR_texture_transform" in str(m) for m in materials) else []
    return build_look(path, parts, materials, images, lost, extensions)


def _materials(path, obj: ObjFile) -> tuple:
    """glTF materials of the names ``usemtl`` used, from the file's ``.mtl`` libraries;
    the images they use as (bytes, MIME type); what could not be read or has no glTF form."""
    defined, images, lost, unread = {}, {}, [], set()
    for library in obj.libraries:
        library = library.replace("\\", "/")
        try:
            text = read_beside(path, library, f"material library {library!r}", "keep it next to the .obj",
                               kind="OBJ file").decode("utf-8", "replace")
        except InputError as e:
            lost.append(f"material library {library!r} ({e.message})")
            continue
        mtl_path = os.path.join(os.path.dirname(os.fspath(path)), library)
        for name, statements in _mtl_blocks(text):
            defined.setdefault(name, _material(mtl_path, name, statements, images, lost, unread))
    if unread:
        lost.append("MTL " + " ".join(sorted(unread)))
    return [defined.get(name, {"name": name}) for name in obj.materials], list(images.values()), lost


def _mtl_blocks(text: str) -> list:
    """``[(material name, [(statement, rest of its line)])]`` of an MTL file, in file order."""
    blocks = []
    for line in text.splitlines():
        words = line.split(None, 1)
        if not words or words[0].startswith("#"):
            continue
        if words[0] == "newmtl":
            blocks.append((words[1].strip() if len(words) > 1 else "", []))
        elif blocks:
            blocks[-1][1].append((words[0], words[1].strip() if len(words) > 1 else ""))
    return blocks


def _material(mtl_path, name: str, statements: list, images: dict, lost: list, unread: set) -> dict:
    """The glTF material of one MTL material: ``Kd`` and ``d`` (``Tr = 1 - d``) as the base
    colour factor (white under a ``map_Kd``, which Blender's importer shows instead of
    ``Kd``), ``map_Kd`` as the base colour texture (``-s``/``-o`` as KHR_texture_transform),
    a bump or normal map as the normal texture (``-bm`` its scale).  Images are added to
    ``images`` (file -> (bytes, MIME type)); what is not read goes to ``lost``/``unread``."""
    colour, alpha, texture, normal = [1.0, 1.0, 1.0], 1.0, None, None
    for keyword, rest in statements:
        values = rest.split()
        try:
            if keyword == "Kd":
                colour = [float(x) for x in values[:3]]
            elif keyword in ("d", "Tr"):
                alpha = float(values[-1]) if keyword == "d" else 1.0 - float(values[-1])
            elif keyword == "map_Kd":
                texture = _texture(mtl_path, rest, images, lost)
            elif keyword in ("map_Bump", "map_bump", "bump", "norm"):
                normal = _texture(mtl_path, rest, images, lost)
            else:
                unread.add(keyword)
        except (ValueError, IndexError):
            lost.append(f"MTL {keyword} of {name!r} (malformed: {rest[:40]!r})")
    pbr = {"baseColorFactor": [*(colour if texture is None else [1.0, 1.0, 1.0]), alpha], "metallicFactor": 0.0}
    material = {"name": name, "pbrMetallicRoughness": pbr}
    if texture is not None:
        pbr["baseColorTexture"] = texture[0]
    if normal is not None:
        material["normalTexture"] = dict(normal[0], scale=normal[1].get("-bm", [1.0])[0])
    if alpha < 1.0:
        material["alphaMode"] = "BLEND"
    return material


def _texture(mtl_path, rest: str, images: dict, lost: list):
    """``({"index": i[, "extensions": ...]}, options)`` of a texture map statement's options and
    file, its image added to ``images``; None when the image cannot be read (named in ``lost``)."""
    words, options = rest.split(), {}
    while words and words[0] in MAP_OPTIONS:
        option, count = words[0], MAP_OPTIONS[words[0]]
        taken = []
        for word in words[1:count + 1]:
            try:
                taken.append(float(word))
            except ValueError:
                break
        options[option] = taken if taken else words[1:count + 1]
        words = words[1 + max(len(taken), 1 if not taken and count else 0):]
    file = " ".join(words).replace("\\", "/")
    if file not in images:
        image = image_beside(mtl_path, file, "texture", "MTL file", lost)
        if image is None:
            return None
        images[file] = image
    ref = {"index": list(images).index(file)}
    transform = _texture_transform(options.get("-s", []), options.get("-o", []))
    if transform:
        ref["extensions"] = {"KHR_texture_transform": transform}
    unused = sorted(set(options) - {"-s", "-o", "-bm"})
    if unused:
        lost.append(f"texture {file!r} options {' '.join(unused)}")
    return ref, options


def _texture_transform(scale: list, offset: list) -> dict:
    """KHR_texture_transform of a map's ``-s`` and ``-o`` (OBJ: ``t = o + s uv``, v up), in
    glTF's flipped v: ``offset = (o_u, 1 - o_v - s_v)``, ``scale = (s_u, s_v)``; {} for none."""
    s = [float(x) for x in (list(scale) + [1.0, 1.0])[:2]]
    o = [float(x) for x in (list(offset) + [0.0, 0.0])[:2]]
    if s == [1.0, 1.0] and o == [0.0, 0.0]:
        return {}
    return {"offset": [o[0], 1.0 - o[1] - s[1]], "scale": s}
