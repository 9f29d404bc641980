"""A minimal binary FBX 7.4 writer for tests: node records from nested tuples.

A node is ``(name, [props], [children])``; a prop is an int (``L``, int64), a float
(``D``), a str (``S``), a numpy float array (``d``) or int array (``i``), a tuple
``("I", value)`` for an explicit int32, ``("zlib", array)`` for an array stored compressed
(encoding 1, as exporters write large arrays), or ``("array", code, count, encoding, payload)``
for an array header and bytes as given (a broken or hostile one).  Enough to build the files a Maya / FBX SDK
exporter writes (Objects, Connections, GlobalSettings, Properties70), which the Blender
fixtures do not cover.
"""
from __future__ import annotations

import struct
import zlib

import numpy as np

HEADER = b"Kaydara FBX Binary  \x00\x1a\x00" + struct.pack("<I", 7400)
NULL_RECORD = b"\x00" * 13


def _prop(p) -> bytes:
    if isinstance(p, tuple) and p[0] == "I":
        return b"I" + struct.pack("<i", p[1])
    if isinstance(p, tuple) and p[0] == "array":
        _, code, count, encoding, payload = p
        return code + struct.pack("<III", count, encoding, len(payload)) + payload
    if isinstance(p, tuple) and p[0] == "zlib":
        a = np.asarray(p[1])
        code, dtype = (b"d", "<f8") if a.dtype.kind == "f" else (b"i", "<i4")
        return _prop(("array", code, a.size, 1, zlib.compress(a.astype(dtype).tobytes())))
    if isinstance(p, bool):
        return b"C" + struct.pack("<?", p)
    if isinstance(p, int):
        return b"L" + struct.pack("<q", p)
    if isinstance(p, float):
        return b"D" + struct.pack("<d", p)
    if isinstance(p, str):
        raw = p.encode("utf-8")
        return b"S" + struct.pack("<I", len(raw)) + raw
    a = np.asarray(p)
    code, dtype = (b"d", "<f8") if a.dtype.kind == "f" else (b"i", "<i4")
    raw = a.astype(dtype).tobytes()
    return code + struct.pack("<III", a.size, 0, len(raw)) + raw


def _node(node, offset: int) -> bytes:
    name, props, children = node
    body_props = b"".join(_prop(p) for p in props)
    head_len = 12 + 1 + len(name)  # end, count, length (uint32 each), name length, name
    pos = offset + head_len + len(body_props)
    kids = b""
    for c in children:
        k = _node(c, pos + len(kids))
        kids += k
    if children:
        kids += NULL_RECORD
    end = offset + head_len + len(body_props) + len(kids)
    return struct.pack("<III", end, len(props), len(body_props)) + bytes([len(name)]) + name.encode() \
        + body_props + kids


def fbx_bytes(nodes: list) -> bytes:
    """The file: header, top-level records, closing null record."""
    out = HEADER
    for n in nodes:
        out += _node(n, len(out))
    return out + NULL_RECORD


def p70(**values) -> tuple:
    """A ``Properties70`` node; keys use ``_`` for spaces (``Lcl_Translation``)."""
    kids = []
    for key, v in values.items():
        name = key.replace("_", " ")
        vals = [float(x) for x in v] if isinstance(v, (list, tuple, np.ndarray)) else [v]
        kids.append(("P", [name, "", "", ""] + vals, []))
    return ("Properties70", [], kids)


def model(oid: int, name: str, kind: str, **props) -> tuple:
    return ("Model", [oid, f"{name}\x00\x01Model", kind], [p70(**props)])


def matrix(m) -> np.ndarray:
    """16 doubles of a column-vector (4, 4) matrix, as FBX stores them (column by column)."""
    return np.asarray(m, dtype=np.float64).T.ravel()
