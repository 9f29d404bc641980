"""The look of a COLLADA target (its texture coordinates, normals and materials with their
diffuse colour and texture) as a glTF document (:func:`~.look_build.build_look`), so that a
rig written over a .dae carries it as over an OBJ or an FBX.

Each mesh instance is a part; its corners (control point, texture coordinate of the first
set, normal) are its glTF vertices, one primitive per polygon element with the material
its ``instance_material`` binds.  A material's effect gives the base colour: the diffuse
colour of its ``phong``, ``lambert``, ``blinn`` or ``constant`` technique, or the image
its diffuse texture samples (``texture`` -> ``sampler2D`` -> ``surface`` -> ``image``,
or the image directly), read beside the .dae.  Other channels (specular, emission,
transparency, bump) are named as not carried.
"""
from __future__ import annotations

import urllib.parse

import numpy as np

from ..model.look import Look
from ..model.mesh import Mesh
from .collada import PRIMITIVES, ColladaScene, primitive_corners, source_rows
from .look_build import LookPart, build_look, image_beside

#: the effect techniques whose diffuse channel gives the base colour
_TECHNIQUES = ("phong", "lambert", "blinn", "constant")


def collada_look(scene: ColladaScene, instances: list, mesh: Mesh, shapes=()) -> Look:
    """The look of ``mesh``, made of the mesh ``instances`` ``[(node, geometry, (4, 4) placing
    matrix)]`` in the order their control points follow one another in it; ``shapes``: its
    morph targets (:mod:`.collada_morph`)."""
    materials, images, lost, index_of = [], [], [], {}
    parts, offset = [], 0
    for node, geometry, placed in instances:
        name = mesh.parts[len(parts)]
        part, count = _part(scene, node, geometry, placed, name, offset, mesh, materials, images, lost, index_of)
        parts.append(part)
        offset += count
    return build_look(scene.path, parts, materials, images, sorted(set(lost)), shapes=shapes)


def _part(scene, node, geometry, placed, name, offset, mesh, materials, images, lost, index_of) -> tuple:
    """One instance's :class:`LookPart` and its number of control points."""
    gname = geometry.get("name") or geometry.get("id")
    cmesh = geometry.find("mesh")
    points = len(source_rows(scene, scene.ref(cmesh.find("vertices/input[@semantic='POSITION']").get("source"),
                                             gname), 3))
    keys, prims, uv_source, normal_source = [], [], None, None
    for prim in (p for p in cmesh if p.tag in PRIMITIVES):
        rows, tris, offsets = primitive_corners(scene, prim, gname)
        columns = [rows[:, offsets["VERTEX"]]] + [rows[:, offsets[s]] if s in offsets else np.full(len(rows), -1)
                                                  for s in ("TEXCOORD", "NORMAL")]
        keys.append(np.stack(columns, axis=1)[tris.ravel()])
        prims.append((len(tris), _material(scene, node, prim.get("material"), materials, images, lost, index_of)))
        if "TEXCOORD" in offsets:
            uv_source = prim.find("input[@semantic='TEXCOORD']").get("source")
        if "NORMAL" in offsets:
            normal_source = prim.find("input[@semantic='NORMAL']").get("source")
    keys = np.concatenate(keys) if keys else np.zeros((0, 3), np.int64)
    unique, local = np.unique(keys, axis=0, return_inverse=True)
    part = LookPart(name, offset + unique[:, 0], mesh.vertices[offset + unique[:, 0]])
    if len(unique) and (unique[:, 1] >= 0).all() and uv_source is not None:
        uv = source_rows(scene, scene.ref(uv_source, gname), 2)
        part.attributes["TEXCOORD_0"] = uv[_checked(scene, unique[:, 1], len(uv), gname)] * [1, -1] + [0, 1]
    if len(unique) and (unique[:, 2] >= 0).all() and normal_source is not None:
        normals = source_rows(scene, scene.ref(normal_source, gname), 3)
        n = normals[_checked(scene, unique[:, 2], len(normals), gname)] @ np.linalg.inv(placed[:3, :3])
        part.attributes["NORMAL"] = n / np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-30)
    local = local.reshape(-1, 3)
    start = 0
    for count, material in prims:
        part.primitives.append((local[start:start + count], material))
        start += count
    return part, points


def _checked(scene: ColladaScene, indices: np.ndarray, size: int, name: str) -> np.ndarray:
    if len(indices) and (indices.min() < 0 or indices.max() >= size):
        scene.fail(f"geometry {name!r} names a texture coordinate or normal it does not have")
    return indices


def _material(scene, node, symbol, materials, images, lost, index_of):
    """The glTF material index of a polygon element's material symbol (None: none bound)."""
    bound = next((m for m in node.iter("instance_material") if m.get("symbol") == symbol), None)
    target = bound.get("target") if bound is not None else None
    element = scene.ids.get(target[1:]) if isinstance(target, str) and target.startswith("#") else None
    if element is None:
        return None
    if target in index_of:
        return index_of[target]
    pbr = {"baseColorFactor": [1.0, 1.0, 1.0, 1.0], "metallicFactor": 0.0, "roughnessFactor": 1.0}
    effect = scene.ids.get((element.find("instance_effect").get("url") or "")[1:]) \
        if element.find("instance_effect") is not None else None
    technique = next((t for name in _TECHNIQUES for t in effect.iter(name)), None) if effect is not None else None
    diffuse = technique.find("diffuse") if technique is not None else None
    if diffuse is not None and diffuse.find("color") is not None:
        rgba = scene.numbers(diffuse.find("color"), f"material {target!r} diffuse colour")
        pbr["baseColorFactor"] = [float(v) for v in np.clip(np.resize(rgba, 4), 0, 1)]
    elif diffuse is not None and diffuse.find("texture") is not None:
        image = _image(scene, effect, diffuse.find("texture").get("texture"), lost)
        if image is not None:
            images.append(image)
            pbr["baseColorTexture"] = {"index": len(images) - 1}
    if technique is not None and any(c.tag not in ("diffuse", "index_of_refraction") for c in technique):
        lost.append("the COLLADA materials' channels but the diffuse one (specular, emission, transparency...)")
    materials.append({"name": element.get("name") or element.get("id"), "pbrMetallicRoughness": pbr})
    index_of[target] = len(materials) - 1
    return index_of[target]


def _image(scene: ColladaScene, effect, key, lost: list):
    """(bytes, MIME type) of the image a diffuse texture samples, or None (named in ``lost``)."""
    params = {p.get("sid"): p for p in effect.iter("newparam")}
    param = params.get(key)
    if param is not None and param.find("sampler2D") is not None:  # a sampler: of an image, or of a surface
        instance, source = param.find("sampler2D/instance_image"), param.findtext("sampler2D/source")
        key = (instance.get("url") or "")[1:] if instance is not None else (source or "").strip()
        param = params.get(key)
    if param is not None and param.find("surface/init_from") is not None:
        key = param.findtext("surface/init_from").strip()
    image = scene.ids.get(key)
    uri = image.findtext("init_from/ref") or image.findtext("init_from") if image is not None else None
    if not uri:
        lost.append(f"the COLLADA texture {key!r} (no image file)")
        return None
    return image_beside(scene.path, urllib.parse.unquote(uri.strip()), "the COLLADA image", "COLLADA file", lost)
