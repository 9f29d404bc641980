"""Node records as binary FBX 7.4 bytes: the writing half of :mod:`.fbx_binary` (the layout
is described there).

A property's type comes from its Python value: ``bool`` C, ``str`` S, ``bytes`` R,
``float`` D, ``int`` I (int32), numpy arrays ``i l f d b`` by dtype (zlib-compressed above
:data:`COMPRESS_ABOVE` bytes, at a fixed level: the same rig gives the same bytes), and
:class:`Int64` L (object ids).  The file ends with the footer FBX SDK and Blender write.
"""
from __future__ import annotations

import struct
import zlib

import numpy as np

from .fbx_binary import MAGIC, FbxNode

VERSION = 7400
#: [bytes] arrays longer than this are stored deflated (FBX SDK's habit; small ones raw)
COMPRESS_ABOVE = 128
_FOOTER_ID = bytes.fromhex("fabcab09d0c8d466b176fb831cf7267e")
_FOOTER_MAGIC = bytes.fromhex("f85a8c6adef5d97eece90ce3758f290b")
_ARRAY_CODES = {"int32": b"i", "int64": b"l", "float32": b"f", "float64": b"d", "bool": b"b", "uint8": b"b"}


class Int64(int):
    """An int written as a 64-bit ``L`` property (object ids, times)."""


def _property(value) -> bytes:
    if isinstance(value, np.ndarray):
        raw = np.ascontiguousarray(value).astype(value.dtype.newbyteorder("<")).tobytes()
        encoding = 0
        if len(raw) > COMPRESS_ABOVE:
            raw, encoding = zlib.compress(raw, 6), 1
        return _ARRAY_CODES[value.dtype.name] + struct.pack("<III", value.size, encoding, len(raw)) + raw
    if isinstance(value, bool):
        return b"C" + struct.pack("<?", value)
    if isinstance(value, Int64):
        return b"L" + struct.pack("<q", int(value))
    if isinstance(value, (int, np.integer)):
        return b"I" + struct.pack("<i", int(value))
    if isinstance(value, (float, np.floating)):
        return b"D" + struct.pack("<d", float(value))
    if isinstance(value, str):
        text = value.encode("utf-8")
        return b"S" + struct.pack("<I", len(text)) + text
    if isinstance(value, (bytes, bytearray)):
        return b"R" + struct.pack("<I", len(value)) + bytes(value)
    raise TypeError(f"no FBX property type for {type(value).__name__}")


def _record(out: bytearray, node: FbxNode) -> None:
    start = len(out)
    out += b"\0" * 12  # end offset, property count, property bytes: filled in below
    name = node.name.encode("ascii")
    out += bytes([len(name)]) + name
    first = len(out)
    for value in node.props:
        out += _property(value)
    size = len(out) - first
    if node.children:
        for child in node.children:
            _record(out, child)
        out += b"\0" * 13  # the null record closing the children
    struct.pack_into("<III", out, start, len(out), len(node.props), size)


def fbx_bytes(nodes: list) -> bytes:
    """The binary FBX 7.4 file of the top-level ``nodes`` (:class:`~.fbx_binary.FbxNode`)."""
    out = bytearray(MAGIC + b"\x1a\x00" + struct.pack("<I", VERSION))
    for node in nodes:
        _record(out, node)
    out += b"\0" * 13
    out += _FOOTER_ID + b"\0" * 4
    out += b"\0" * ((16 - len(out) % 16) % 16)
    out += struct.pack("<I", VERSION) + b"\0" * 120 + _FOOTER_MAGIC
    return bytes(out)
