"""KHR_draco_mesh_compression: Draco-compressed primitives read as plain ones.

Blender's exporter, gltf-transform and gltf-pipeline compress a primitive's vertex
attributes and triangles into one Draco bufferView; the primitive's accessors then carry
only their count and type.  :func:`decode_draco_primitives` decodes each such primitive
once, at the boundary (:func:`~.glb.read_document`), into a buffer appended to the
document, and points its accessors at it: every reader after it sees an uncompressed
document, and outputs built over it are written uncompressed.

Decoding uses DracoPy (Google's Draco decoder, Apache-2.0 wheels), imported only when a
file holds compressed primitives.
"""
from __future__ import annotations

import numpy as np

from ..errors import InputError
from .glb import ARRAY_BUFFER, COMPONENT_DTYPE, ELEMENT_ARRAY_BUFFER, TYPE_SIZE, UINT, Accessors, drop_extension, is_index

EXTENSION = "KHR_draco_mesh_compression"


def decode_draco_primitives(path, doc: dict, buffers: list) -> None:
    """Decode, in place, every primitive of ``doc`` carrying :data:`EXTENSION`.

    Parameters
    ----------
    path : the file (for errors).
    doc : the glTF JSON; each compressed primitive's accessors (its attributes the
        extension lists, and its indices) get a bufferView on a new buffer, the extension
        is removed from the primitive and from ``extensionsUsed`` / ``extensionsRequired``.
    buffers : list of bytes, one per ``doc['buffers']``; the decoded buffer is appended.
    """
    compressed = [(m, p, prim) for m, mesh in enumerate(doc.get("meshes") or []) if isinstance(mesh, dict)
                  for p, prim in enumerate(mesh.get("primitives") or []) if isinstance(prim, dict)
                  and isinstance(prim.get("extensions"), dict) and EXTENSION in prim["extensions"]]
    if compressed:
        try:
            import DracoPy
        except ImportError:
            raise InputError(path, f"has Draco-compressed meshes ({EXTENSION}); install DracoPy to read them "
                                   "(pip install DracoPy)") from None
        out = _DecodedBuffer(path, doc, len(buffers))
        for m, p, prim in compressed:
            _decode_primitive(path, doc, buffers, prim, f"mesh {m} primitive {p}", out, DracoPy)
        doc.setdefault("buffers", []).append({"byteLength": len(out.blob)})
        buffers.append(bytes(out.blob))
    drop_extension(doc, EXTENSION, [prim for _, _, prim in compressed])


class _DecodedBuffer:
    """The buffer decoded arrays go to, one bufferView per accessor filled.  An accessor two
    compressed primitives share (Blender's exporter gives both eyes one index accessor: it
    only declares a count there) is copied for the second."""

    def __init__(self, path, doc: dict, index: int):
        self.path, self.doc, self.index = path, doc, index
        self.blob, self.filled = bytearray(), set()

    def fill(self, accessor, data: np.ndarray, target: int, what: str) -> int:
        """Point accessor ``accessor`` (or a copy of it, if filled already) at ``data`` (N,
        components), cast to its component type, on a view for ``target`` (vertex or index
        data).  Its bounds, if it declares them, become the decoded data's (quantised by
        the encoder: the declared ones are the original's).  Returns the accessor filled."""
        accessors = self.doc.get("accessors")
        if not is_index(accessor) or not isinstance(accessors, list) or not 0 <= accessor < len(accessors) \
                or not isinstance(accessors[accessor], dict):
            raise InputError(self.path, f"{what} refers to accessor {accessor!r}, which does not exist")
        if accessor in self.filled:
            accessors.append(dict(accessors[accessor]))
            accessor = len(accessors) - 1
        acc = accessors[accessor]
        dtype, ncomp = COMPONENT_DTYPE.get(acc.get("componentType")), TYPE_SIZE.get(acc.get("type"))
        if dtype is None or ncomp is None or data.shape != (acc.get("count"), ncomp):
            raise InputError(self.path, f"{what}: the Draco data decodes to {data.shape[0]} x {data.shape[1]} "
                                        f"values, accessor {accessor} declares {acc.get('count')!r} x {ncomp!r}")
        if np.dtype(dtype).kind in "iu" and (data.dtype.kind == "f" or len(data) and (
                data.min() < np.iinfo(dtype).min or data.max() > np.iinfo(dtype).max)):
            raise InputError(self.path, f"{what}: the Draco data does not fit accessor {accessor}'s "
                                        f"{np.dtype(dtype).name} values")
        arr = np.ascontiguousarray(data, dtype=np.dtype(dtype).newbyteorder("<"))
        self.blob.extend(b"\x00" * (-len(self.blob) % 4))
        views = self.doc.setdefault("bufferViews", [])
        views.append({"buffer": self.index, "byteOffset": len(self.blob), "byteLength": arr.nbytes, "target": target})
        self.blob.extend(arr.tobytes())
        acc["bufferView"], acc["byteOffset"] = len(views) - 1, 0
        acc.pop("sparse", None)
        if len(arr) and ("min" in acc or "max" in acc):
            acc["min"], acc["max"] = [x.item() for x in arr.min(axis=0)], [x.item() for x in arr.max(axis=0)]
        self.filled.add(accessor)
        return accessor


def _decode_primitive(path, doc: dict, buffers: list, prim: dict, what: str, out: _DecodedBuffer, draco) -> None:
    """Decode one compressed primitive into ``out`` (its accessors filled)."""
    ext = prim["extensions"][EXTENSION]
    attributes = ext.get("attributes") if isinstance(ext, dict) else None
    if not isinstance(attributes, dict) or not isinstance(prim.get("attributes"), dict):
        raise InputError(path, f"{what} has a malformed {EXTENSION} (needs bufferView and attributes)")
    raw, _ = Accessors(path, doc, buffers).view_bytes(ext.get("bufferView"), f"{what}'s Draco data")
    try:
        mesh = draco.decode(bytes(raw))
    except Exception as e:  # the decoder's own errors (corrupt or truncated data)
        raise InputError(path, f"{what}: its Draco data cannot be decoded ({e})") from None
    faces = getattr(mesh, "faces", None)
    if faces is None or prim.get("mode", 4) != 4:
        raise InputError(path, f"{what}: Draco data without triangles (a point cloud) is not a mesh")
    for name, uid in sorted(attributes.items()):
        attr = mesh.get_attribute_by_unique_id(uid) if isinstance(uid, int) and not isinstance(uid, bool) else None
        if attr is None or name not in prim["attributes"]:
            raise InputError(path, f"{what}: its Draco attribute {name} ({uid!r}) is not in the data or the primitive")
        data = np.asarray(attr["data"])
        prim["attributes"][name] = out.fill(prim["attributes"][name], data.reshape(len(data), -1), ARRAY_BUFFER,
                                            f"{what} {name}")
    indices = np.asarray(faces).reshape(-1, 1)
    if prim.get("indices") is None:  # the spec asks for an accessor; make one when it is missing
        accessors = doc.setdefault("accessors", [])
        accessors.append({"componentType": UINT, "type": "SCALAR", "count": len(indices)})
        prim["indices"] = len(accessors) - 1
    prim["indices"] = out.fill(prim["indices"], indices, ELEMENT_ARRAY_BUFFER, f"{what} indices")
