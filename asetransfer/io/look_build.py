"""The :class:`~asetransfer.model.look.Look` of a mesh file that is not glTF (OBJ, PLY): a
glTF 2.0 document built from what the file holds, so that one writer
(:func:`~.gltf_over.write_rig_over`) carries every format's look.

Each part of the file becomes a node with a mesh; the part's vertices (as many as it has
distinct corners: an OBJ corner is a position, a UV and a normal) are one vertex array
shared by its primitives, one primitive per material.  Images are embedded in the buffer.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError
from ..model.look import Look, LookPiece
from .glb import ARRAY_BUFFER, ELEMENT_ARRAY_BUFFER, FLOAT, UBYTE, UINT, BufferBuilder, image_mime, read_beside
from .gltf_write import GENERATOR

#: the images a look embeds (what glTF outputs and their readers take)
LOOK_IMAGES = ("image/png", "image/jpeg", "image/webp")


@dataclass
class LookPart:
    """One part of a mesh file, as glTF will hold it.

    Attributes
    ----------
    name : the part's name (the node's and the mesh's).
    vertices : (n,) the mesh vertex each of the part's n glTF vertices is.
    positions : (n, 3) their positions.
    attributes : glTF attribute name -> (n, k) array (float, or uint8 for normalised colours).
    primitives : [(faces (f, 3) indices into the part's vertices, material index or None)].
    """

    name: str
    vertices: np.ndarray
    positions: np.ndarray
    attributes: dict = field(default_factory=dict)
    primitives: list = field(default_factory=list)


def build_look(path, parts: list, materials: list = (), images: list = (), lost=(), extensions=(),
               shapes=()) -> Look:
    """A :class:`~asetransfer.model.look.Look` of ``parts`` (:class:`LookPart`).

    Parameters
    ----------
    materials : glTF material objects; texture ``index`` ``i`` refers to ``images[i]``.
    images : (bytes, MIME type) of each image, embedded in the buffer, one texture each.
    lost : what the file holds that the document does not, one short phrase each.
    extensions : the glTF extensions the materials use.
    shapes : the file's own blend shapes (:class:`~asetransfer.model.shapes.MorphTarget`, on
        the mesh's vertices): each part's mesh gets those moving its vertices as morph targets
        (``POSITION`` offsets, names in ``extras.targetNames``, default weights).
    """
    bb = BufferBuilder()
    nodes, meshes, pieces = [], [], []
    for i, part in enumerate(parts):
        attrs = {"POSITION": bb.add(np.asarray(part.positions, np.float32), FLOAT, "VEC3", ARRAY_BUFFER, True)}
        for name, values in part.attributes.items():
            attrs[name] = _attribute(bb, values)
        prims = []
        for faces, material in part.primitives:
            prim = {"attributes": dict(attrs), "indices": bb.add(np.asarray(faces, np.uint32).reshape(-1, 1), UINT,
                                                                 "SCALAR", ELEMENT_ARRAY_BUFFER), "mode": 4}
            if material is not None:
                prim["material"] = int(material)
            prims.append(prim)
        meshes.append({"name": part.name, "primitives": prims})
        _add_shapes(bb, meshes[-1], part, shapes)
        nodes.append({"name": part.name, "mesh": i})
        pieces.append(LookPiece(i, i, range(len(prims)), part.vertices))
    doc = {"asset": {"version": "2.0", "generator": GENERATOR}, "scene": 0,
           "scenes": [{"nodes": list(range(len(nodes)))}], "nodes": nodes, "meshes": meshes}
    if extensions:
        doc["extensionsUsed"] = list(extensions)
    if materials:
        doc["materials"] = list(materials)
    if images:
        doc["images"] = [{"bufferView": bb.add_bytes(data), "mimeType": mime} for data, mime in images]
        doc["textures"] = [{"source": k} for k in range(len(images))]
    doc.update(accessors=bb.accessors, bufferViews=bb.views, buffers=[{"byteLength": len(bb.blob)}])
    return Look(str(path), doc, [bytes(bb.blob)], pieces, tuple(lost))


def image_beside(path, uri: str, label: str, kind: str, lost: list):
    """(bytes, MIME type) of the image ``uri`` that the file ``path`` (a ``kind``: "MTL file",
    "PMX file"...) names beside it (backslashes read as slashes), or None with the reason in
    ``lost`` (``label``, e.g. "the PMX texture", names it there): it cannot be read
    (:func:`~.glb.read_beside`), or is not a PNG, JPEG or WebP image."""
    uri = uri.replace("\\", "/")
    try:
        data = read_beside(path, uri, f"image {uri!r}", f"keep it next to the {kind.split()[0]}", kind=kind)
    except InputError as e:
        lost.append(f"{label} {uri!r} ({e.message})")
        return None
    mime = image_mime(data)
    if mime not in LOOK_IMAGES:
        lost.append(f"{label} {uri!r} (not a PNG, JPEG or WebP image)")
        return None
    return data, mime


def _attribute(bb: BufferBuilder, values: np.ndarray) -> int:
    """An accessor of a vertex attribute: uint8 values as normalised unsigned bytes (colours),
    anything else as floats."""
    values = np.asarray(values)
    kind = {1: "SCALAR", 2: "VEC2", 3: "VEC3", 4: "VEC4"}[values.shape[1]]
    if values.dtype == np.uint8:
        return bb.add(values, UBYTE, kind, ARRAY_BUFFER, normalized=True)
    return bb.add(values.astype(np.float32), FLOAT, kind, ARRAY_BUFFER)



def _add_shapes(bb: BufferBuilder, mesh: dict, part: LookPart, shapes) -> None:
    """The ``shapes`` moving any of ``part``'s vertices as morph targets of ``mesh`` (in place)."""
    own = []
    for shape in shapes:
        offsets = np.zeros((int(max(part.vertices.max(initial=-1), shape.vertices.max(initial=-1))) + 1, 3))
        offsets[shape.vertices] = shape.positions
        moved = offsets[part.vertices]
        if np.any(moved):
            own.append((shape, bb.add(moved.astype(np.float32), FLOAT, "VEC3", ARRAY_BUFFER, True)))
    if not own:
        return
    for prim in mesh["primitives"]:
        prim["targets"] = [{"POSITION": accessor} for _, accessor in own]
    mesh["weights"] = [float(shape.weight) for shape, _ in own]
    mesh["extras"] = {"targetNames": [shape.name for shape, _ in own]}
