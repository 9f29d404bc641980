"""Write hand-made glTF documents for reader tests (exporter quirks, broken files)."""
from __future__ import annotations

import numpy as np

from asetransfer.io.glb import FLOAT, UINT, USHORT, BufferBuilder, pack_glb


def quat_z(deg):
    h = np.radians(deg) / 2
    return [0.0, 0.0, float(np.sin(h)), float(np.cos(h))]


class Doc:
    """Incrementally build a glTF document with one binary buffer."""

    def __init__(self):
        self.bb = BufferBuilder()
        self.nodes, self.meshes, self.skins, self.scene = [], [], [], []

    def node(self, **kw) -> int:
        self.nodes.append(kw)
        return len(self.nodes) - 1

    def add(self, arr, ctype, atype, **kw):
        return self.bb.add(np.asarray(arr), ctype, atype, **kw)

    def primitive(self, verts, faces, joints=None, weights=None, mode=None, extra=None):
        attrs = {"POSITION": self.add(np.asarray(verts, np.float32), FLOAT, "VEC3", minmax=True)}
        if joints is not None:
            for s in range(len(joints)):
                attrs[f"JOINTS_{s}"] = self.add(np.asarray(joints[s], np.uint16), USHORT, "VEC4")
                attrs[f"WEIGHTS_{s}"] = self.add(np.asarray(weights[s], np.float32), FLOAT, "VEC4")
        prim = {"attributes": attrs}
        if faces is not None:
            prim["indices"] = self.add(np.asarray(faces, np.uint32).reshape(-1, 1), UINT, "SCALAR")
        if mode is not None:
            prim["mode"] = mode
        if extra:
            prim.update(extra)
        return prim

    def mesh(self, *prims, name=None) -> int:
        m = {"primitives": list(prims)}
        if name:
            m["name"] = name
        self.meshes.append(m)
        return len(self.meshes) - 1

    def skin(self, joints, ibm=None, **kw) -> int:
        s = {"joints": list(joints), **kw}
        if ibm is not None:
            s["inverseBindMatrices"] = self.add(np.asarray(ibm, np.float32).transpose(0, 2, 1).reshape(-1, 16),
                                                FLOAT, "MAT4")
        self.skins.append(s)
        return len(self.skins) - 1

    def document(self) -> dict:
        doc = {"asset": {"version": "2.0"}, "scene": 0, "scenes": [{"nodes": self.scene}], "nodes": self.nodes,
               "accessors": self.bb.accessors, "bufferViews": self.bb.views,
               "buffers": [{"byteLength": len(self.bb.blob)}]}
        if self.meshes:
            doc["meshes"] = self.meshes
        if self.skins:
            doc["skins"] = self.skins
        return doc

    def save(self, path, doc=None) -> str:
        with open(path, "wb") as f:
            f.write(pack_glb(doc or self.document(), bytes(self.bb.blob)))
        return str(path)


# ---------------------------------------------------------------------------- editing written rigs
def rig_document(rig, max_influences: int = 4):
    """The glTF document of ``rig`` as our writer makes it, with a writable buffer.

    Returns ``(doc, blob)``; edit ``doc`` (a dict) and the arrays of
    :func:`accessor_array` in place, then :func:`save_glb`.
    """
    from asetransfer.io.gltf_write import rig_to_document

    doc, blob = rig_to_document(rig, max_influences)
    return doc, bytearray(blob)


def accessor_array(doc: dict, blob: bytearray, index: int) -> np.ndarray:
    """A writable (count, components) view of accessor ``index`` inside ``blob`` (tightly packed views)."""
    from asetransfer.io.glb import COMPONENT_DTYPE, TYPE_SIZE

    acc = doc["accessors"][index]
    view = doc["bufferViews"][acc["bufferView"]]
    dtype = np.dtype(COMPONENT_DTYPE[acc["componentType"]]).newbyteorder("<")
    n = TYPE_SIZE[acc["type"]]
    offset = view.get("byteOffset", 0) + acc.get("byteOffset", 0)
    return np.frombuffer(blob, dtype, count=acc["count"] * n, offset=offset).reshape(acc["count"], n)


def glb_bytes(doc: dict, blob: bytes) -> bytes:
    """:func:`asetransfer.io.glb.pack_glb` with NaN and infinities written as the
    ``NaN`` / ``Infinity`` tokens some exporters emit (not valid JSON, read by Python's json)."""
    return pack_glb(doc, blob, allow_nan=True)


def save_glb(path, doc: dict, blob: bytes) -> str:
    with open(path, "wb") as f:
        f.write(glb_bytes(doc, blob))
    return str(path)


def add_morph_targets(doc: dict, blob: bytearray, mesh: int, offsets: dict, normals: dict | None = None) -> None:
    """Give every primitive of ``doc``'s mesh ``mesh`` the morph targets ``offsets`` (name ->
    (n, 3) POSITION offsets of the primitive's n vertices; ``normals``: name -> NORMAL
    offsets), named in ``mesh.extras.targetNames`` with default weights 0, as Blender writes them."""
    def accessor(values):
        values = np.ascontiguousarray(values, dtype="<f4")
        blob.extend(b"\x00" * (-len(blob) % 4))
        doc["bufferViews"].append({"buffer": 0, "byteOffset": len(blob), "byteLength": values.nbytes})
        blob.extend(values.tobytes())
        doc["accessors"].append({"bufferView": len(doc["bufferViews"]) - 1, "componentType": FLOAT,
                                 "count": len(values), "type": "VEC3", "min": values.min(axis=0).tolist(),
                                 "max": values.max(axis=0).tolist()})
        return len(doc["accessors"]) - 1

    m = doc["meshes"][mesh]
    for prim in m["primitives"]:
        prim["targets"] = [{"POSITION": accessor(d), **({"NORMAL": accessor(normals[name])} if normals else {})}
                           for name, d in offsets.items()]
    m["extras"] = {"targetNames": list(offsets)}
    m["weights"] = [0.0] * len(offsets)
    doc["buffers"][0]["byteLength"] = len(blob)
