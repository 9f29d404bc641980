"""PLY files: a reader for ASCII and binary (either byte order), and a binary writer.

PLY is how targets usually arrive (scanners, MeshLab, Blender), and importing
trimesh just to read one costs ~0.2 s of a ~3 s transfer, so PLY is read here.
Every element and property the format allows is parsed; only ``vertex`` (x, y, z)
and ``face`` (its index list) are kept.  Polygons are fan-triangulated, as in OBJ.
Reference: Paul Bourke, "PLY - Polygon File Format" (the header grammar and types).
The writer (debug meshes, test files) is deterministic: no header comments.
"""
from __future__ import annotations

import numpy as np

from ..errors import InputError
from .atomic import atomic_write

_TYPES = {"char": "i1", "int8": "i1", "uchar": "u1", "uint8": "u1",
          "short": "i2", "int16": "i2", "ushort": "u2", "uint16": "u2",
          "int": "i4", "int32": "i4", "uint": "u4", "uint32": "u4",
          "float": "f4", "float32": "f4", "double": "f8", "float64": "f8"}
_FORMATS = {"ascii": None, "binary_little_endian": "<", "binary_big_endian": ">"}


class _Malformed(ValueError):
    pass


def read_ply(path, data: bytes) -> tuple:
    """Vertices and fan-triangulated faces of a PLY file, in file order, and the rest.

    Returns
    -------
    vertices : (n, 3) float64.
    faces : (m, 3) int64, polygon ``(v0, ..., vk)`` giving ``(v0, vi, vi+1)``;
        (0, 3) when the file has no face element (the caller reports it).
    rest : dict: ``vertex`` (property name -> (n,) array, every vertex property),
        ``face`` (names of the face properties besides the index list), ``elements``
        (names of the other elements), ``comments`` (the header's comment lines).

    Raises
    ------
    InputError ("cannot parse PLY file (...)") for anything malformed or truncated.
    """
    try:
        vertices, polygons, order, rest = _read(data)
        return vertices, _triangulate(polygons, order), rest
    except (ValueError, IndexError) as e:  # _Malformed is a ValueError
        raise InputError(path, f"cannot parse PLY file ({e})") from None


def _triangulate(polygons: list[np.ndarray], order: np.ndarray) -> np.ndarray:
    """Fan triangles ``(v0, vk, vk+1)`` of the polygons, in file order of the faces."""
    tris, face, fan = [], [], []
    for poly, rows in zip(polygons, order):
        for k in range(1, poly.shape[1] - 1):
            tris.append(poly[:, [0, k, k + 1]])
            face.append(rows)
            fan.append(np.full(len(rows), k))
    if not tris:
        return np.zeros((0, 3), np.int64)
    return np.concatenate(tris)[np.lexsort((np.concatenate(fan), np.concatenate(face)))]


def _header(data: bytes):
    if not data.startswith(b"ply"):
        raise _Malformed("no 'ply' magic at the start")
    end = data.find(b"end_header")
    if end < 0:
        raise _Malformed("no end_header line")
    newline = data.find(b"\n", end)
    body = len(data) if newline < 0 else newline + 1
    fmt, elements, comments = "", [], []
    for raw in data[:end].decode("ascii", "replace").splitlines()[1:]:
        words = raw.split()
        if words and words[0] == "comment":
            comments.append(raw.split(None, 1)[1].strip() if len(words) > 1 else "")
        if not words or words[0] in ("comment", "obj_info"):
            continue
        if words[0] == "format":
            if len(words) < 2 or words[1] not in _FORMATS:
                raise _Malformed(f"unknown format line {raw.strip()!r}")
            fmt = _FORMATS[words[1]]
        elif words[0] == "element":
            if len(words) != 3 or not (words[2].isascii() and words[2].isdigit()):  # not "²"
                raise _Malformed(f"bad element line {raw.strip()!r}")
            elements.append((words[1], int(words[2]), []))
        elif words[0] == "property" and elements:
            if len(words) == 5 and words[1] == "list" and words[2] in _TYPES and words[3] in _TYPES:
                elements[-1][2].append((words[4], _TYPES[words[2]], _TYPES[words[3]]))
            elif len(words) == 3 and words[1] in _TYPES:
                elements[-1][2].append((words[2], _TYPES[words[1]], None))
            else:
                raise _Malformed(f"bad property line {raw.strip()!r}")
        else:
            raise _Malformed(f"unexpected header line {raw.strip()!r}")
    if fmt == "":
        raise _Malformed("no format line")
    return fmt, elements, body, comments


def _read(data: bytes):
    fmt, elements, offset, comments = _header(data)
    names = [e[0] for e in elements]
    if "vertex" not in names:
        raise _Malformed("no vertex element")
    reader = _AsciiReader(data[offset:]) if fmt is None else _BinaryReader(data, offset, fmt)
    vertices, polygons, order = None, [], []
    rest = {"vertex": {}, "face": [], "elements": [], "comments": comments}
    for name, count, props in elements:
        table = reader.element(count, props)
        if name == "vertex":
            missing = [a for a in "xyz" if a not in table]
            if missing:
                raise _Malformed(f"vertex element has no {'/'.join(missing)} property")
            vertices = np.stack([table[a] for a in "xyz"], axis=1).astype(np.float64)
            rest["vertex"] = table
        elif name == "face":
            lists = [p[0] for p in props if p[2] is not None]
            key = next((k for k in ("vertex_indices", "vertex_index") if k in lists), lists[0] if lists else None)
            if key is None:
                raise _Malformed("face element has no index list")
            polygons, order = table[key]
            rest["face"] = [p[0] for p in props if p[0] != key]
        else:
            rest["elements"].append(name)
    return vertices, polygons, order, rest


class _BinaryReader:
    def __init__(self, data: bytes, offset: int, endian: str):
        self.data, self.offset, self.endian = data, offset, endian

    def _take(self, dtype, count):
        dtype = np.dtype(dtype)
        end = self.offset + dtype.itemsize * count
        if end > len(self.data):
            raise _Malformed(f"file truncated: {len(self.data)} bytes, the header needs at least {end}")
        out = np.frombuffer(self.data, dtype, count, self.offset)
        self.offset = end
        return out

    def element(self, count: int, props) -> dict:
        e = self.endian
        if all(p[2] is None for p in props):
            rows = self._take([(n, e + t) for n, t, _ in props], count)
            return {n: rows[n] for n, _, _ in props}
        # Lists: try a constant length per list (read from the first row), then
        # check every row's counts; otherwise walk the rows one by one.
        if count and (table := self._fixed(count, props)) is not None:
            return table
        return self._rows(count, props)

    def _fixed(self, count, props):
        e, start, lengths, pos = self.endian, self.offset, [], self.offset
        fields = []
        for n, t, item in props:
            if item is None:
                fields.append((n, e + t))
                pos += np.dtype(t).itemsize
                continue
            if pos + np.dtype(t).itemsize > len(self.data):
                raise _Malformed("file truncated inside a list")
            k = int(np.frombuffer(self.data, e + t, 1, pos)[0])
            fields += [(n + "#count", e + t), (n, e + item, (k,))]
            lengths.append((n, k))
            pos += np.dtype(t).itemsize + k * np.dtype(item).itemsize
        if start + np.dtype(fields).itemsize * count > len(self.data):
            return None  # the rows are not all as long as the first: walk them
        rows = self._take(fields, count)
        if all((rows[n + "#count"] == k).all() for n, k in lengths):
            return {n: (rows[n] if item is None else ([rows[n].astype(np.int64)], [np.arange(count)]))
                    for n, _, item in props}
        self.offset = start
        return None

    def _rows(self, count, props):
        e = self.endian
        return _walk_rows(count, props, lambda t: self._take(e + t, 1)[0],
                          lambda item, k: self._take(e + item, k).astype(np.int64))


class _AsciiReader:
    def __init__(self, body: bytes):
        self.tokens = body.split()
        self.pos = 0

    def _next(self, k: int) -> list:
        if self.pos + k > len(self.tokens):
            raise _Malformed("file truncated: fewer values than the header announces")
        out = self.tokens[self.pos:self.pos + k]
        self.pos += k
        return out

    def element(self, count: int, props) -> dict:
        if all(p[2] is None for p in props):
            rows = np.array(self._next(count * len(props)), dtype=np.float64).reshape(count, len(props))
            # through the declared type, so ASCII and binary files of one mesh agree
            return {n: rows[:, i].astype(t) for i, (n, t, _) in enumerate(props)}
        return _walk_rows(count, props, lambda t: float(self._next(1)[0]),
                          lambda item, k: _indices(np.array(self._next(k), dtype=np.float64), item))


def _indices(values: np.ndarray, declared: str) -> np.ndarray:
    """ASCII list values as int64; a value no int64 holds (inf, 1e30) is malformed, not
    wrapped, and so is a fraction in a list ``declared`` integral (an index 1.5 truncated
    would name another vertex, silently)."""
    if not (np.abs(values) < 2.0 ** 63).all():
        raise _Malformed(f"list value {values[~(np.abs(values) < 2.0 ** 63)][0]} is not an index")
    if np.dtype(declared).kind in "iu" and (values != np.floor(values)).any():
        raise _Malformed(f"list value {values[values != np.floor(values)][0]} is not a whole number, "
                         f"in a list of integers")
    return values.astype(np.int64)


def _walk_rows(count: int, props, scalar, index_list) -> dict:
    """Read ``count`` rows one value at a time: ``scalar(type)`` reads a value,
    ``index_list(type, k)`` a list of ``k``.  Lists come back grouped by length."""
    values = {n: [] for n, _, _ in props}
    for _ in range(count):
        for n, t, item in props:
            v = scalar(t)
            if item is not None:
                if not (np.isfinite(v) and v >= 0 and v == int(v)):
                    raise _Malformed(f"list length {v} is not a count")
                v = index_list(item, int(v))
            values[n].append(v)
    return {n: (np.asarray(values[n]) if item is None else _by_length(values[n])) for n, _, item in props}


def _by_length(lists: list) -> tuple:
    """Variable-length index lists grouped by length, with each group's row numbers."""
    lengths = np.array([len(x) for x in lists], dtype=np.int64)
    groups, rows = [], []
    for k in np.unique(lengths):
        r = np.flatnonzero(lengths == k)
        groups.append(np.array([lists[i] for i in r], dtype=np.int64).reshape(len(r), k))
        rows.append(r)
    return groups, rows


def write_ply(path, vertices: np.ndarray, faces: np.ndarray, inputs=()) -> None:
    """Write a triangle mesh as binary PLY, atomically."""
    atomic_write(path, ply_bytes(vertices, faces), inputs)


def ply_bytes(vertices: np.ndarray, faces: np.ndarray) -> bytes:
    """A binary little-endian PLY of a triangle mesh (float32 positions)."""
    v = np.ascontiguousarray(vertices, dtype="<f4")
    f = np.asarray(faces, dtype=np.int64)
    header = (f"ply\nformat binary_little_endian 1.0\nelement vertex {len(v)}\n"
              "property float x\nproperty float y\nproperty float z\n"
              f"element face {len(f)}\nproperty list uchar int vertex_indices\nend_header\n").encode("ascii")
    rec = np.zeros(len(f), dtype=[("n", "u1"), ("i", "<i4", (3,))])
    rec["n"], rec["i"] = 3, f
    return header + v.tobytes() + rec.tobytes()
