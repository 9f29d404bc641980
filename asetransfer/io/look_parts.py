"""The meshes a writer without a glTF document (FBX, USD) makes of a rig: the rig's mesh,
with the target's look when it has one.

A :class:`WrittenPart` is one mesh of the file: its points (rig-mesh vertices), triangles,
and per corner its UV sets (origin at the image's bottom left, as FBX and USD have it),
normals and colour sets, and per triangle a material slot.  From a look
(:class:`~asetransfer.model.look.Look`) each piece is a part and each of its glTF
primitives' materials a slot (:class:`WrittenMaterial`: base colour, alpha, base colour
texture, roughness, metallic, emissive colour); without one, the mesh's parts with its own per-vertex normals and UVs.
"""
from __future__ import annotations

import base64
from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ..model.look import Look
from ..model.mesh import Mesh
from .assembly import mesh_parts
from .glb import Accessors, image_mime, read_beside


@dataclass(eq=False)
class WrittenMaterial:
    """A material as FBX and USD hold it: the diffuse colour (3,), the opacity, the diffuse
    texture ((bytes, file name) or None), and the glTF roughness, metallic and emissive colour
    (3,) (written to FBX's Phong properties by :func:`phong_of`)."""

    name: str
    colour: tuple
    alpha: float
    texture: tuple | None = None
    roughness: float = 1.0
    metallic: float = 0.0
    emissive: tuple = (0.0, 0.0, 0.0)


#: FBX Phong's ``SpecularFactor`` for a glTF material: Blender's importer reads twice it as the
#: specular level, 0.5 (a glTF material's 4 % reflectance at normal incidence)
SPECULAR_FACTOR = 0.25


def phong_of(roughness: float, metallic: float) -> dict:
    """FBX Phong properties for a glTF roughness and metallic, by the convention Blender's FBX
    exporter and importer share (``io_scene_fbx``): ``Shininess = ((1 - roughness) * 10)^2``,
    ``ReflectionFactor = metallic``, ``SpecularFactor`` = :data:`SPECULAR_FACTOR`."""
    shininess = ((1.0 - min(max(roughness, 0.0), 1.0)) * 10.0) ** 2
    return {"Shininess": shininess, "ShininessExponent": shininess, "ReflectionFactor": float(metallic),
            "SpecularFactor": SPECULAR_FACTOR}


def roughness_of(shininess: float) -> float:
    """The glTF roughness of an FBX Phong ``Shininess`` (the inverse of :func:`phong_of`)."""
    return float(min(max(1.0 - np.sqrt(max(shininess, 0.0)) / 10.0, 0.0), 1.0))


@dataclass(eq=False)
class WrittenPart:
    """One mesh of the file (module docstring); ``materials`` index the file's material list."""

    name: str
    ids: np.ndarray
    triangles: np.ndarray
    uv: np.ndarray | None = None
    normals: np.ndarray | None = None
    slots: np.ndarray | None = None
    materials: tuple = ()
    colours: np.ndarray | None = None  # (corners, 4) RGBA in [0, 1]
    more_uv: tuple = ()  # the further UV sets (TEXCOORD_1...), (corners, 2) each
    more_colours: tuple = ()  # the further colour sets (COLOR_1...), (corners, 4) RGBA each


#: the glTF attributes FBX and USD outputs hold (the rest of a look is named in a warning)
CARRIED_ATTRIBUTES = ("NORMAL", *(f"TEXCOORD_{k}" for k in range(8)), *(f"COLOR_{k}" for k in range(8)))


def parts_of_mesh(mesh: Mesh) -> list:
    """The mesh's parts (:func:`~.assembly.mesh_parts`), its per-vertex normals and UVs at
    every corner."""
    parts = []
    for name, ids, tris in mesh_parts(mesh):
        corners = ids[tris.ravel()]
        uv = None if mesh.uv is None else mesh.uv[corners] * [1.0, -1.0] + [0.0, 1.0]
        parts.append(WrittenPart(name, ids, tris, uv, None if mesh.normals is None else mesh.normals[corners]))
    return parts


def parts_of_look(look: Look, mesh: Mesh) -> tuple:
    """``(parts, materials, lost)`` of the target's look: one part per look piece, or None
    for parts when the pieces do not hold every triangle of ``mesh`` (then its own parts)."""
    from .gltf_over import turned_normals

    doc, acc = look.document, Accessors(look.path, look.document, look.buffers)
    materials, known, lost, parts = [], {}, [], []
    for piece in look.pieces:
        mesh_doc = doc["meshes"][piece.mesh]
        prims = [mesh_doc["primitives"][k] for k in piece.primitives if mesh_doc["primitives"][k].get("mode", 4) == 4]
        if not prims:
            continue
        attrs = prims[0]["attributes"]
        triangles = [acc.read(p["indices"]).reshape(-1, 3).astype(np.int64) if "indices" in p
                     else np.arange(len(piece.vertices)).reshape(-1, 3) for p in prims]
        glb = np.concatenate(triangles)
        points = piece.vertices[glb]
        ids = np.unique(points)
        uv = acc.read(attrs["TEXCOORD_0"])[glb.ravel()] * [1.0, -1.0] + [0.0, 1.0] if "TEXCOORD_0" in attrs else None
        normals = turned_normals(piece.placement, acc.read(attrs["NORMAL"]))[glb.ravel()] if "NORMAL" in attrs else None
        colours = _rgba(acc.read(attrs["COLOR_0"]))[glb.ravel()] if "COLOR_0" in attrs else None
        more_uv = tuple(acc.read(attrs[f"TEXCOORD_{k}"])[glb.ravel()] * [1.0, -1.0] + [0.0, 1.0]
                        for k in range(1, 8) if f"TEXCOORD_{k}" in attrs)
        more_colours = tuple(_rgba(acc.read(attrs[f"COLOR_{k}"]))[glb.ravel()] for k in range(1, 8)
                             if f"COLOR_{k}" in attrs)
        slots, used = [], []
        for p, tris in zip(prims, triangles):
            m = p.get("material")
            if m not in known:
                known[m] = len(materials)
                materials.append(_material(look, acc, m, lost))
            if known[m] not in used:
                used.append(known[m])
            slots.append(np.full(len(tris), used.index(known[m])))
        node = doc["nodes"][piece.node]
        parts.append(WrittenPart(str(node.get("name") or mesh_doc.get("name") or f"mesh {piece.mesh}"), ids,
                             np.searchsorted(ids, points), uv, normals, np.concatenate(slots), tuple(used), colours,
                             more_uv, more_colours))
    covered = np.zeros(mesh.n_vertices, bool)
    for part in parts:
        covered[part.ids] = True
    if not covered[mesh.faces].all():
        return None, [], lost
    return parts, materials, lost


def _rgba(colours: np.ndarray) -> np.ndarray:
    """(n, 4) RGBA in [0, 1] of glTF COLOR values (RGB: opaque)."""
    colours = np.clip(np.asarray(colours, dtype=np.float64), 0.0, 1.0)
    return colours if colours.shape[1] == 4 else np.concatenate([colours, np.ones((len(colours), 1))], axis=1)


def _material(look: Look, acc: Accessors, index, lost: list) -> WrittenMaterial:
    """The written form of glTF material ``index`` (None: the default material)."""
    doc = look.document
    material = doc.get("materials", [])[index] if isinstance(index, int) and 0 <= index < len(
        doc.get("materials", [])) else {}
    pbr = material.get("pbrMetallicRoughness", {}) if isinstance(material, dict) else {}
    factor = pbr.get("baseColorFactor", [1.0, 1.0, 1.0, 1.0])
    factor = [float(x) for x in factor] if isinstance(factor, list) and len(factor) == 4 else [1.0] * 4
    name = str(material.get("name") or f"material {index}") if isinstance(material, dict) else "material"
    texture = pbr.get("baseColorTexture", {}).get("index") if isinstance(pbr.get("baseColorTexture"), dict) else None
    image = _texture_image(look, acc, texture, lost) if texture is not None else None
    others = [k for k in ("normalTexture", "occlusionTexture", "emissiveTexture") if k in material] + \
        [k for k in ("metallicRoughnessTexture",) if k in pbr] + sorted(material.get("extensions", {}) or {})
    if others:
        lost.append(f"material {name!r}: {', '.join(others)}")
    emissive = material.get("emissiveFactor", [0.0, 0.0, 0.0]) if isinstance(material, dict) else [0.0] * 3
    emissive = tuple(float(x) for x in emissive) if isinstance(emissive, list) and len(emissive) == 3 else (0.0,) * 3
    return WrittenMaterial(name, tuple(factor[:3]), factor[3], image, roughness=_unit(pbr.get("roughnessFactor")),
                           metallic=_unit(pbr.get("metallicFactor")), emissive=emissive)


def _unit(value, default: float = 1.0) -> float:
    """A glTF factor in [0, 1] (its default 1 when absent or not a number)."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and np.isfinite(value)
    return float(min(max(value, 0.0), 1.0)) if ok else default


def _texture_image(look: Look, acc: Accessors, texture: int, lost: list):
    """(bytes, file name) of a glTF texture's image (in a buffer view, a data URI or a file
    beside the look's file), or None (named in ``lost``)."""
    doc = look.document
    try:
        source = doc["textures"][texture]["source"]
        image = doc["images"][source]
    except (KeyError, IndexError, TypeError):
        lost.append(f"texture {texture} (no image)")
        return None
    data = None
    if "bufferView" in image:
        view = doc["bufferViews"][image["bufferView"]]
        start = view.get("byteOffset", 0)
        data = bytes(look.buffers[view.get("buffer", 0)][start:start + view["byteLength"]])
    elif isinstance(image.get("uri"), str) and image["uri"].startswith("data:"):
        data = base64.b64decode(image["uri"].split(",", 1)[1])
    elif isinstance(image.get("uri"), str):
        try:
            data = read_beside(look.path, image["uri"], f"image {source} file {image['uri']!r}",
                               "keep textures next to the .gltf")
        except InputError as e:
            lost.append(f"image {source} ({e.message})")
            return None
    mime = image_mime(data) if data else None
    if mime not in ("image/png", "image/jpeg"):
        lost.append(f"image {source} (not PNG or JPEG: what FBX and USD readers take)")
        return None
    return data, f"image{source}.{'png' if mime == 'image/png' else 'jpg'}"  # one file per image, named once
