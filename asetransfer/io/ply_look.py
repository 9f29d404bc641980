"""The look of a PLY target: normals, UVs and vertex colours under their common property
names, and the texture MeshLab names in a ``comment TextureFile`` line.

Properties read: ``nx ny nz``; ``s t``, ``u v``, ``texture_u texture_v`` or ``texture_s
texture_t`` (v up, as OBJ: flipped for glTF); ``red green blue [alpha]`` (unsigned bytes
kept as normalised bytes, other types scaled to 0..1).  Every other vertex property, face
property and element is named in the writer's warning.
"""
from __future__ import annotations

import numpy as np

from .look_build import LookPart, build_look, image_beside

UV_NAMES = (("s", "t"), ("u", "v"), ("texture_u", "texture_v"), ("texture_s", "texture_t"))
NORMAL_NAMES = ("nx", "ny", "nz")
COLOUR_NAMES = ("red", "green", "blue", "alpha")


def ply_attributes(table: dict) -> tuple:
    """(normals (n, 3) or None, uv (n, 2) or None, colours (n, 3|4) or None, names of the
    vertex properties none of them uses) of a PLY vertex table (property -> (n,) array)."""
    used = {"x", "y", "z"}
    normals = uv = colours = None
    if all(k in table for k in NORMAL_NAMES):
        normals = np.stack([table[k] for k in NORMAL_NAMES], axis=1).astype(np.float64)
        used.update(NORMAL_NAMES)
    names = next((pair for pair in UV_NAMES if all(k in table for k in pair)), None)
    if names is not None:
        uv = np.stack([table[k] for k in names], axis=1).astype(np.float64)
        used.update(names)
    channels = [k for k in COLOUR_NAMES if k in table]
    if channels[:3] == list(COLOUR_NAMES[:3]):
        values = np.stack([table[k] for k in channels], axis=1)
        colours = values if values.dtype == np.uint8 else \
            values.astype(np.float64) / (np.iinfo(values.dtype).max if values.dtype.kind in "iu" else 1.0)
        used.update(channels)
    return normals, uv, colours, sorted(set(table) - used)


def ply_look(path, mesh, rest: dict):
    """The :class:`~asetransfer.model.look.Look` of a PLY file's mesh (its normals and uv
    already on ``mesh``) and the rest of what :func:`~.ply.read_ply` read; None when the file
    holds nothing beyond positions and faces."""
    normals, uv, colours, other = ply_attributes(rest["vertex"])
    lost = [f"PLY vertex properties {' '.join(other)}"] if other else []
    lost += [f"PLY face properties {' '.join(rest['face'])}"] if rest["face"] else []
    lost += [f"PLY elements {' '.join(rest['elements'])}"] if rest["elements"] else []
    part = LookPart(mesh.parts[0], np.arange(mesh.n_vertices), mesh.vertices, primitives=[(mesh.faces, None)])
    if mesh.normals is not None:
        part.attributes["NORMAL"] = mesh.normals / np.maximum(np.linalg.norm(mesh.normals, axis=1, keepdims=True),
                                                              1e-30)
    if mesh.uv is not None:
        part.attributes["TEXCOORD_0"] = mesh.uv  # a Mesh's uv are glTF's already
    if colours is not None and np.isfinite(colours).all():
        part.attributes["COLOR_0"] = colours
    elif colours is not None:
        lost.append("PLY vertex colours (NaN or infinite values)")
    images, materials = _texture(path, rest["comments"], lost)
    if materials:
        part.primitives = [(mesh.faces, 0)]
    if not (part.attributes or lost or materials):
        return None
    return build_look(path, [part], materials, images, lost)


def _texture(path, comments: list, lost: list) -> tuple:
    """([(bytes, MIME type)], [material]) of the header's ``TextureFile`` comment (MeshLab's)."""
    files = [c.split(None, 1)[1] for c in comments if c.startswith("TextureFile") and len(c.split(None, 1)) > 1]
    if not files:
        return [], []
    image = image_beside(path, files[0], "texture", "PLY file", lost)
    if image is None:
        return [], []
    material = {"name": "texture", "pbrMetallicRoughness": {"baseColorTexture": {"index": 0}, "metallicFactor": 0.0}}
    return [image], [material]
