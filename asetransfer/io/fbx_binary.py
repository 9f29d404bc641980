"""The node tree of a binary FBX file (FBX 7.x, the format every DCC writes by default; FBX 6
turned into FBX 7's form by :mod:`.fbx_legacy`).

A binary FBX is a 27-byte header (``Kaydara FBX Binary  \\0``, 0x1A 0x00, the version as
a little-endian uint32) and a list of node records.  A record is its end offset, the
number and byte length of its properties (uint32 before version 7500, uint64 from it),
its name (uint8 length + bytes), the properties and then its child records, closed by
an all-zero record.  A property is a one-letter type code and its value: ``Y`` int16,
``C`` bool, ``I`` int32, ``F`` float32, ``D`` float64, ``L`` int64, ``S`` string,
``R`` raw bytes (uint32 length + bytes), and ``i l f d b`` arrays (uint32 count,
uint32 encoding -- 0 raw, 1 zlib -- uint32 byte length, data).

Only the reading is here; what the nodes mean is :mod:`.fbx`.  Every inconsistency
(truncated file, offsets out of range, unknown type codes, a broken zlib stream)
raises :class:`~asetransfer.errors.InputError` naming the file.

Every declared size is a cap: a compressed array is inflated to at most the bytes its
element count declares (a stream that would inflate further is refused, not inflated),
its count may not exceed what its compressed bytes can inflate to (:data:`DEFLATE_RATIO`),
and all the arrays of a file together may not inflate to more than
:data:`INFLATE_FLOOR` + :data:`INFLATE_RATIO` times the file's size: a few kilobytes that
inflate to gigabytes are one line, not a ``MemoryError`` after half a minute.
"""
from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError

MAGIC = b"Kaydara FBX Binary  \x00"
HEADER_SIZE = 27
#: scalar property codes -> struct format
SCALARS = {b"Y": "<h", b"C": "<?", b"I": "<i", b"F": "<f", b"D": "<d", b"L": "<q"}
#: array property codes -> numpy dtype
ARRAYS = {b"i": "<i4", b"l": "<i8", b"f": "<f4", b"d": "<f8", b"b": "u1"}
#: deepest node nesting accepted (real files use < 10; a cap keeps recursion bounded)
MAX_DEPTH = 64
#: deflate cannot inflate a stream more than 1032:1 (a 258-byte match from every 2 bits), plus its header
DEFLATE_RATIO = 1032
#: [bytes] the arrays of any file may inflate to this much ...
INFLATE_FLOOR = 64 << 20
#: ... plus this multiple of the file's size (1.5-2.2 on the fixtures written by Blender's exporter)
INFLATE_RATIO = 64


@dataclass
class FbxNode:
    """One node record: its name, property values and child nodes."""

    name: str
    props: list
    children: list = field(default_factory=list)

    def child(self, name: str):
        """The first child called ``name``, or None."""
        return next((c for c in self.children if c.name == name), None)

    def all(self, name: str) -> list:
        """Every child called ``name``, in file order."""
        return [c for c in self.children if c.name == name]


def is_ascii_fbx(data: bytes) -> bool:
    """True for an ASCII FBX file (``; FBX 7.x.x project file`` comment, or ``FBXHeaderExtension:``)."""
    head = data[:2048].lstrip(b"\xef\xbb\xbf \t\r\n")
    return head.startswith(b"; FBX") or head.startswith(b"FBXHeaderExtension:")


def parse_fbx(path, data: bytes) -> tuple:
    """The file's version and top-level nodes.

    Returns
    -------
    version : int, e.g. 7400.
    nodes : list of :class:`FbxNode`.
    """
    if not data.startswith(MAGIC):
        if is_ascii_fbx(data):
            from .fbx_ascii import parse_ascii_fbx  # here: it builds this module's nodes
            version, nodes = parse_ascii_fbx(path, data)
            return version, _as_fbx7(path, version, nodes)
        raise InputError(path, "not a binary FBX file (it does not start with 'Kaydara FBX Binary')")
    if len(data) < HEADER_SIZE:
        raise InputError(path, "truncated FBX file (shorter than its header)")
    version = struct.unpack_from("<I", data, 23)[0]
    if not 6000 <= version < 8000:
        raise InputError(path, f"FBX version {version} is not supported (FBX 6.x and 7.x are)")
    reader = _Reader(path, data, wide=version >= 7500)
    nodes, _ = reader.node_list(HEADER_SIZE, len(data), depth=0, top=True)
    return version, _as_fbx7(path, version, nodes)


def _as_fbx7(path, version: int, nodes: list) -> list:
    """FBX 6's node tree as FBX 7 holds it (:mod:`.fbx_legacy`); FBX 7's as it is."""
    if version >= 7000:
        return nodes
    from .fbx_legacy import as_fbx7  # here: it builds this module's nodes
    return as_fbx7(path, nodes)


class _Reader:
    """Walks the records of one file; ``wide``: 64-bit record headers (version >= 7500)."""

    def __init__(self, path, data: bytes, wide: bool):
        self.path, self.data, self.wide = path, data, wide
        self.head = struct.Struct("<QQQ" if wide else "<III")
        self.inflate_left = INFLATE_FLOOR + INFLATE_RATIO * len(data)  # bytes the arrays may still inflate to

    def fail(self, msg):
        raise InputError(self.path, f"corrupt or truncated FBX file: {msg}")

    def node_list(self, pos: int, end: int, depth: int, top: bool = False) -> tuple:
        """Records from ``pos`` to the closing null record (or ``end``); returns (nodes, next pos)."""
        if depth > MAX_DEPTH:
            self.fail(f"nodes nested more than {MAX_DEPTH} deep")
        nodes = []
        while pos < end:
            if pos + self.head.size + 1 > len(self.data):
                if top and nodes:  # the footer after the last top-level record is optional
                    break
                self.fail(f"record at byte {pos} runs past the end of the file")
            node_end, n_props, props_len = self.head.unpack_from(self.data, pos)
            if node_end == 0:  # null record: end of this list
                return nodes, pos + self.head.size + 1
            if not pos < node_end <= end:
                self.fail(f"record at byte {pos} ends at byte {node_end}, outside its parent (..{end})")
            node, pos = self.node(pos, node_end, n_props, props_len, depth)
            nodes.append(node)
        if not top:
            self.fail(f"a node list has no end before byte {end}")
        return nodes, pos

    def node(self, pos, node_end, n_props, props_len, depth) -> tuple:
        """One record at ``pos`` (its header already read); returns (node, its end)."""
        pos += self.head.size
        name_len = self.data[pos]
        name = self.data[pos + 1:pos + 1 + name_len].decode("utf-8", "replace")
        pos += 1 + name_len
        props_end = pos + props_len
        if props_end > node_end:
            self.fail(f"the properties of node {name!r} run past its end")
        props = []
        for _ in range(n_props):
            value, pos = self.prop(pos, props_end, name)
            props.append(value)
        if pos != props_end:
            self.fail(f"node {name!r} announces {props_len} bytes of properties, holds {pos - props_end + props_len}")
        children = []
        if pos < node_end:
            children, pos = self.node_list(pos, node_end, depth + 1)
        if pos != node_end:
            self.fail(f"node {name!r} ends at byte {pos}, its header says {node_end}")
        return FbxNode(name, props, children), node_end

    def prop(self, pos: int, end: int, node: str) -> tuple:
        """One property value at ``pos``; returns (value, next pos)."""
        if pos >= end:
            self.fail(f"node {node!r} has fewer properties than it announces")
        code = self.data[pos:pos + 1]
        pos += 1
        if code in SCALARS:
            fmt = struct.Struct(SCALARS[code])
            if pos + fmt.size > end:
                self.fail(f"a property of node {node!r} runs past its end")
            return fmt.unpack_from(self.data, pos)[0], pos + fmt.size
        if code in (b"S", b"R"):
            if pos + 4 > end:
                self.fail(f"a property of node {node!r} runs past its end")
            n = struct.unpack_from("<I", self.data, pos)[0]
            if pos + 4 + n > end:
                self.fail(f"a string of node {node!r} runs past its end")
            raw = self.data[pos + 4:pos + 4 + n]
            return (raw.decode("utf-8", "replace") if code == b"S" else raw), pos + 4 + n
        if code in ARRAYS:
            return self.array(pos, end, code, node)
        self.fail(f"node {node!r} has a property of unknown type {code!r}")

    def array(self, pos: int, end: int, code: bytes, node: str) -> tuple:
        """An array property (``i l f d b``) as a numpy array; returns (array, next pos)."""
        if pos + 12 > end:
            self.fail(f"an array of node {node!r} runs past its end")
        count, encoding, size = struct.unpack_from("<III", self.data, pos)
        pos += 12
        if pos + size > end:
            self.fail(f"an array of node {node!r} runs past its end")
        raw = self.data[pos:pos + size]
        dtype = np.dtype(ARRAYS[code])
        if encoding == 1:
            raw = self.inflate(raw, count, dtype.itemsize, node)
        elif encoding != 0:
            self.fail(f"an array of node {node!r} has unknown encoding {encoding}")
        if len(raw) != count * dtype.itemsize:
            self.fail(f"an array of node {node!r} holds {len(raw)} bytes for {count} values")
        return np.frombuffer(raw, dtype=dtype).astype(dtype.newbyteorder("="), copy=True), pos + size

    def inflate(self, compressed: bytes, count: int, itemsize: int, node: str) -> bytes:
        """A zlib-compressed array's bytes, inflated to at most its declared ``count`` values.

        Refused before inflating: a count its compressed bytes cannot hold (more than
        ``DEFLATE_RATIO`` times them), and one beyond what the file's arrays may still
        inflate to (``inflate_left``); while inflating, a stream that holds more.
        """
        expected = count * itemsize
        if expected > DEFLATE_RATIO * len(compressed) + 64:
            self.fail(f"a compressed array of node {node!r} declares {count} values ({expected} bytes) in "
                      f"{len(compressed)} compressed bytes, more than they can inflate to")
        if expected > self.inflate_left:
            raise InputError(self.path, f"compressed arrays inflate to more than {INFLATE_FLOOR >> 20} MiB + "
                                        f"{INFLATE_RATIO} times the file's size (node {node!r} declares {count} "
                                        "values); refusing a file that is mostly compressed padding")
        self.inflate_left -= expected
        stream = zlib.decompressobj()
        try:
            raw = stream.decompress(compressed, expected)
            # the output is full: what is left may only close the stream (inflating to nothing)
            if stream.unconsumed_tail and stream.decompress(stream.unconsumed_tail, 1):
                self.fail(f"a compressed array of node {node!r} inflates past its {count} declared values")
        except zlib.error as e:
            self.fail(f"a compressed array of node {node!r} cannot be decompressed ({e})")
        if not stream.eof:
            self.fail(f"a compressed array of node {node!r} cannot be decompressed (the stream is cut short)")
        return raw
