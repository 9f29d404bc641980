"""glTF 2.0 container: the JSON document, its binary buffers and typed accessors.

We read the JSON ourselves rather than through a glTF object model so that every
malformed file gets a precise one-line :class:`~asetransfer.errors.InputError`
(which accessor, which field), and so that written files are byte-reproducible.
"""
from __future__ import annotations

import base64
import json
import os
import struct
import urllib.parse

import numpy as np

from ..errors import InputError
from .files import load_json, read_bytes, read_regular_file

GLB_MAGIC = b"glTF"
CHUNK_JSON = 0x4E4F534A
CHUNK_BIN = 0x004E4942

FLOAT, BYTE, UBYTE, SHORT, USHORT, UINT = 5126, 5120, 5121, 5122, 5123, 5125
#: bufferView targets: vertex attributes, triangle indices
ARRAY_BUFFER, ELEMENT_ARRAY_BUFFER = 34962, 34963
COMPONENT_DTYPE = {BYTE: np.int8, UBYTE: np.uint8, SHORT: np.int16, USHORT: np.uint16,
                   UINT: np.uint32, FLOAT: np.float32}
TYPE_SIZE = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT2": 4, "MAT3": 9, "MAT4": 16}
#: extensions a file may require: geometry ones this reader decodes (quantised, Draco and
#: meshopt meshes), and those of materials, textures and lights, which only the look uses: it is
#: carried into glTF outputs as the file holds it (the extension still required there), and
#: an image FBX and USD readers cannot take (KTX2, WebP, AVIF, DDS) is named as not carried
SUPPORTED_EXTENSIONS = {"KHR_mesh_quantization", "KHR_draco_mesh_compression", "EXT_meshopt_compression",
                        "KHR_lights_punctual",
                        "KHR_texture_transform", "KHR_texture_basisu", "EXT_texture_webp", "EXT_texture_avif",
                        "MSFT_texture_dds", "KHR_materials_unlit", "KHR_materials_emissive_strength",
                        "KHR_materials_specular", "KHR_materials_ior", "KHR_materials_transmission",
                        "KHR_materials_clearcoat", "KHR_materials_sheen", "KHR_materials_volume",
                        "KHR_materials_iridescence", "KHR_materials_anisotropy", "KHR_materials_dispersion",
                        "KHR_materials_diffuse_transmission", "KHR_materials_variants",
                        "KHR_materials_pbrSpecularGlossiness"}


#: elements an accessor without a bufferView (all zeros) may have: more is not a mesh
#: accessors without a bufferView are zeros (sparse ones add values): all of them together may
#: claim MAX_ZERO_ELEMENTS components, or ZERO_ELEMENTS_PER_BYTE per byte of the file's buffers
#: (a morph target or sparse mesh has a real array of about its size elsewhere in the file)
MAX_ZERO_ELEMENTS = 1 << 22
ZERO_ELEMENTS_PER_BYTE = 4


#: image signatures (first bytes) -> MIME type, for the images glTF holds
IMAGE_SIGNATURES = ((b"\x89PNG\r\n\x1a\n", "image/png"), (b"\xff\xd8\xff", "image/jpeg"),
                    (b"\xabKTX 20\xbb", "image/ktx2"))


def image_mime(data: bytes) -> str | None:
    """The MIME type of an image from its bytes' signature (PNG, JPEG, KTX2, WebP), else None."""
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return next((mime for signature, mime in IMAGE_SIGNATURES if data.startswith(signature)), None)


def is_index(value) -> bool:
    """A JSON integer (``true``/``false`` are not indices)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _parse_glb(path, data: bytes):
    if len(data) < 20:
        raise InputError(path, "truncated GLB file (shorter than its header)")
    magic, version, length = struct.unpack_from("<4sII", data, 0)
    if version != 2:
        raise InputError(path, f"GLB version {version} is not supported (glTF 2.0 only)")
    if length > len(data):
        raise InputError(path, f"truncated GLB file: header says {length} bytes, file has {len(data)}")
    pos, doc_bytes, bin_chunk = 12, None, None
    while pos + 8 <= length:
        clen, ctype = struct.unpack_from("<II", data, pos)
        start, end = pos + 8, pos + 8 + clen
        if end > length:
            raise InputError(path, f"truncated GLB file: chunk at byte {pos} runs past the end")
        if ctype == CHUNK_JSON and doc_bytes is None:
            doc_bytes = data[start:end]
        elif ctype == CHUNK_BIN and bin_chunk is None:
            bin_chunk = data[start:end]
        pos = end + (-end % 4)
    if doc_bytes is None:
        raise InputError(path, "GLB file has no JSON chunk")
    return _parse_json(path, doc_bytes, glb=True), bin_chunk


def _parse_json(path, raw: bytes, glb: bool = False) -> dict:
    try:
        text = raw.decode("utf-8").rstrip(" \x00")
    except UnicodeDecodeError:
        raise InputError(path, "the JSON chunk of the GLB file is not UTF-8 text" if glb
                         else "not a glTF file (not UTF-8 JSON and no GLB header)") from None
    doc = load_json(path, text, "glTF JSON")
    if not isinstance(doc, dict) or not isinstance(doc.get("asset"), dict):
        raise InputError(path, "JSON is not a glTF document (no 'asset' object)")
    version = str(doc["asset"].get("version", ""))
    if not version.startswith("2."):
        raise InputError(path, f"glTF version {version!r} is not supported (glTF 2.0 only)")
    return doc


def drop_extension(doc: dict, name: str, objects=()) -> None:
    """Remove the extension ``name`` from each of ``objects`` (their ``extensions``, the dict
    itself once empty) and from the document's ``extensionsUsed`` / ``extensionsRequired``
    (a list left empty removed: glTF forbids one): what a decoder does once it has decoded
    the data the extension held."""
    for obj in objects:
        ext = obj.get("extensions")
        if isinstance(ext, dict) and name in ext:
            del ext[name]
            if not ext:
                del obj["extensions"]
    for key in ("extensionsUsed", "extensionsRequired"):
        if isinstance(doc.get(key), list) and name in doc[key]:
            doc[key] = [x for x in doc[key] if x != name]
            if not doc[key]:
                del doc[key]


def is_fallback(buffer: dict) -> bool:
    """Whether a buffer is a meshopt-compressed file's fallback: bytes its decoder provides
    (``EXT_meshopt_compression``, :mod:`.gltf_meshopt`)."""
    ext = buffer.get("extensions")
    return isinstance(ext, dict) and isinstance(ext.get("EXT_meshopt_compression"), dict) \
        and ext["EXT_meshopt_compression"].get("fallback") is True


def read_document(path):
    """Load a .glb or .gltf file.

    Returns
    -------
    doc : dict, the glTF JSON.
    buffers : list of bytes, one per ``doc['buffers']`` entry.
    """
    data = read_bytes(path)
    if data[:4] == GLB_MAGIC:
        doc, bin_chunk = _parse_glb(path, data)
    else:
        doc, bin_chunk = _parse_json(path, data), None
    required = doc.get("extensionsRequired") or []
    if not isinstance(required, list) or not all(isinstance(x, str) for x in required):
        raise InputError(path, "'extensionsRequired' is not a list of names")
    required = set(required) - SUPPORTED_EXTENSIONS
    if required:
        raise InputError(path, f"needs glTF extension(s) we cannot decode: {', '.join(sorted(required))}")
    buffers = []
    for i, buf in enumerate(_list(path, doc, "buffers")):
        if not isinstance(buf, dict):
            raise InputError(path, f"buffer {i} is not an object")
        uri = buf.get("uri")
        if uri is None and (buf.get("byteLength") == 0 or is_fallback(buf)):
            if not is_index(buf.get("byteLength")):
                raise InputError(path, f"buffer {i} has no valid byteLength")
            buffers.append(b"")  # empty, or a compressed file's fallback: its decoder fills it
            continue
        elif uri is None:
            if i != 0 or bin_chunk is None:
                raise InputError(path, f"buffer {i} has no uri and there is no GLB binary chunk")
            blob = bin_chunk
        elif not isinstance(uri, str):
            raise InputError(path, f"buffer {i} uri is not a string")
        elif uri.startswith("data:"):
            try:
                blob = base64.b64decode(uri.split(",", 1)[1], validate=False)
            except (IndexError, ValueError):
                raise InputError(path, f"buffer {i} has a malformed data URI") from None
        else:
            blob = read_beside(path, uri, f"buffer {i} file {uri!r}", "keep the .bin next to the .gltf")
        length = buf.get("byteLength")
        if not is_index(length) or length < 0:
            raise InputError(path, f"buffer {i} has no valid byteLength")
        if len(blob) < length:
            raise InputError(path, f"buffer {i} is truncated: {len(blob)} bytes of {length}")
        buffers.append(blob)
    from .gltf_draco import decode_draco_primitives  # here: they read accessors through this module
    from .gltf_meshopt import decode_meshopt_views
    decode_meshopt_views(path, doc, buffers)
    decode_draco_primitives(path, doc, buffers)
    return doc, buffers


def read_beside(path, uri: str, what: str, advice: str, kind: str = "glTF file") -> bytes:
    """The bytes of the file ``uri`` that the file ``path`` refers to (a .gltf's buffer or
    image, an OBJ's material library or texture), which must lie in ``path``'s folder (or below it).

    A URI reaching elsewhere (``../../etc/...``, an absolute path, a URL) is refused: a
    model file must not make us read other files of the machine; devices and pipes are
    refused by :func:`read_regular_file`.  ``what`` names the reference in errors, ``kind``
    the referring file, ``advice`` says what to do about a reference outside its folder.
    """
    folder = os.path.abspath(os.path.dirname(os.fspath(path)))
    rel = urllib.parse.unquote(uri)
    full = os.path.normpath(os.path.join(folder, rel))
    if ":" in uri.split("/", 1)[0] or os.path.isabs(rel) or os.path.commonpath([folder, full]) != folder:
        raise InputError(path, f"{what} lies outside the folder of the {kind}; refusing to read it ({advice})")
    return read_regular_file(full, (path, f"{what} cannot be read: "))


def _list(path, doc, key):
    value = doc.get(key, [])
    if not isinstance(value, list):
        raise InputError(path, f"'{key}' is not a list")
    return value


def _objects(path, doc, key):
    value = _list(path, doc, key)
    if not all(isinstance(x, dict) for x in value):
        raise InputError(path, f"'{key}' is not a list of objects")
    return value


class Accessors:
    """Typed reads of a document's accessors, with bounds checks."""

    def __init__(self, path, doc: dict, buffers: list):
        self.path, self.doc, self.buffers = path, doc, buffers
        self.accessors = _objects(path, doc, "accessors")
        self.views = _objects(path, doc, "bufferViews")
        self._cache = {}
        # zeros made up for accessors without a bufferView, over the whole document: a budget
        # that grows with the data the file really holds, so that a small file cannot claim GBs
        self._zero_budget = max(MAX_ZERO_ELEMENTS, ZERO_ELEMENTS_PER_BYTE * sum(len(b) for b in buffers))

    def _fail(self, msg):
        raise InputError(self.path, msg)

    def view_bytes(self, vi, what):
        """The bytes of bufferView ``vi`` and its byteStride (None if unset), bounds checked."""
        if not is_index(vi) or not 0 <= vi < len(self.views):
            self._fail(f"{what} refers to bufferView {vi!r}, which does not exist")
        view = self.views[vi]
        b = view.get("buffer")
        if not is_index(b) or not 0 <= b < len(self.buffers):
            self._fail(f"bufferView {vi} refers to buffer {b!r}, which does not exist")
        off, length = view.get("byteOffset", 0), view.get("byteLength")
        if not is_index(off) or not is_index(length) or off < 0 or length < 0 \
                or off + length > len(self.buffers[b]):
            self._fail(f"bufferView {vi} lies outside buffer {b}")
        stride = view.get("byteStride")
        if stride is not None and (not is_index(stride) or stride <= 0):
            self._fail(f"bufferView {vi} has an invalid byteStride {stride!r}")
        return self.buffers[b][off:off + length], stride

    def _strided(self, raw, stride, offset, count, dtype, ncomp, what):
        item = np.dtype(dtype).itemsize * ncomp
        stride = stride or item
        if not is_index(offset):
            self._fail(f"{what} has an invalid byteOffset {offset!r}")
        if count == 0:
            return np.zeros((0, ncomp), dtype)
        need = offset + stride * (count - 1) + item
        if offset < 0 or stride < item or need > len(raw):
            self._fail(f"{what} reads past the end of its bufferView ({need} > {len(raw)} bytes)")
        buf = np.frombuffer(raw, dtype=np.uint8, count=need - offset, offset=offset)
        rows = np.lib.stride_tricks.as_strided(buf, shape=(count, item), strides=(stride, 1))
        return np.ascontiguousarray(rows).view(dtype).reshape(count, ncomp)

    def read(self, index, what: str = "accessor") -> np.ndarray:
        """Accessor ``index`` as a (count, components) array; normalised ints become floats."""
        if not is_index(index) or not 0 <= index < len(self.accessors):
            self._fail(f"{what} refers to accessor {index!r}, which does not exist")
        key = index
        if key in self._cache:
            return self._cache[key]
        acc = self.accessors[index]
        what = f"accessor {index} ({what})"
        ctype, atype, count = acc.get("componentType"), acc.get("type"), acc.get("count")
        if not is_index(ctype) or ctype not in COMPONENT_DTYPE:
            self._fail(f"{what} has unknown componentType {ctype!r}")
        if not isinstance(atype, str) or atype not in TYPE_SIZE:
            self._fail(f"{what} has unknown type {atype!r}")
        if not is_index(count) or count < 0:
            self._fail(f"{what} has an invalid count")
        dtype, ncomp = np.dtype(COMPONENT_DTYPE[ctype]).newbyteorder("<"), TYPE_SIZE[atype]
        if acc.get("bufferView") is None:
            if count * ncomp > self._zero_budget:
                self._fail(f"{what} has no bufferView and an implausible count {count} (the file holds "
                           "too little data for it)")
            self._zero_budget -= count * ncomp
            out = np.zeros((count, ncomp), dtype)
        else:
            raw, stride = self.view_bytes(acc["bufferView"], what)
            out = self._strided(raw, stride, acc.get("byteOffset", 0), count, dtype, ncomp, what)
        sparse = acc.get("sparse")
        if sparse is not None:
            out = out.copy()
            n = sparse.get("count") if isinstance(sparse, dict) else None
            ii, vv = (sparse.get("indices"), sparse.get("values")) if isinstance(sparse, dict) else (None, None)
            if not is_index(n) or not 1 <= n <= count or not isinstance(ii, dict) or not isinstance(vv, dict):
                self._fail(f"{what} has a malformed 'sparse' (needs count, indices and values)")
            if ii.get("componentType") not in (UBYTE, USHORT, UINT) or isinstance(ii.get("componentType"), bool):
                self._fail(f"{what} has sparse indices of an invalid type")
            raw, _ = self.view_bytes(ii.get("bufferView"), what)
            idx = self._strided(raw, None, ii.get("byteOffset", 0), n,
                                np.dtype(COMPONENT_DTYPE[ii["componentType"]]).newbyteorder("<"), 1, what).ravel()
            raw, _ = self.view_bytes(vv.get("bufferView"), what)
            val = self._strided(raw, None, vv.get("byteOffset", 0), n, dtype, ncomp, what)
            if len(idx) and idx.max() >= count:
                self._fail(f"{what} has a sparse index out of range")
            out[idx.astype(np.int64)] = val
        if acc.get("normalized") and ctype != FLOAT:
            out = out.astype(np.float64) / np.iinfo(dtype).max
            if dtype.kind == "i":
                out = np.maximum(out, -1.0)
        elif ctype == FLOAT:
            out = out.astype(np.float64)
        self._cache[key] = out
        return out


def pack_glb(doc: dict, blob: bytes, allow_nan: bool = False) -> bytes:
    """GLB bytes for a document whose buffer 0 is ``blob`` (deterministic output).

    ``allow_nan`` writes NaN/infinities as the (invalid JSON) tokens some exporters
    emit; only tests use it, to make such files.
    """
    js = json.dumps(doc, separators=(",", ":"), sort_keys=False, ensure_ascii=False,
                    allow_nan=allow_nan).encode("utf-8")
    js += b" " * (-len(js) % 4)
    blob = bytes(blob) + b"\x00" * (-len(blob) % 4)
    chunks = struct.pack("<II", len(js), CHUNK_JSON) + js
    if blob:
        chunks += struct.pack("<II", len(blob), CHUNK_BIN) + blob
    return struct.pack("<4sII", GLB_MAGIC, 2, 12 + len(chunks)) + chunks


def pack_gltf(doc: dict, blob: bytes) -> bytes:
    """Self-contained .gltf JSON bytes: buffer 0 embedded as a base64 data URI."""
    doc = dict(doc)
    doc["buffers"] = [dict(doc["buffers"][0], uri="data:application/octet-stream;base64,"
                           + base64.b64encode(bytes(blob)).decode("ascii"))]
    return json.dumps(doc, indent=1, ensure_ascii=False, allow_nan=False).encode("utf-8")


class BufferBuilder:
    """Accumulates arrays into one binary buffer with 4-byte aligned views."""

    def __init__(self):
        self.blob = bytearray()
        self.views, self.accessors = [], []

    def add_bytes(self, data: bytes) -> int:
        """Append ``data`` as a new bufferView (an image's bytes); returns its index."""
        self.blob.extend(b"\x00" * (-len(self.blob) % 4))
        self.views.append({"buffer": 0, "byteOffset": len(self.blob), "byteLength": len(data)})
        self.blob.extend(data)
        return len(self.views) - 1

    def add(self, arr: np.ndarray, ctype: int, atype: str, target: int | None = None,
            minmax: bool = False, normalized: bool = False) -> int:
        """Append ``arr`` (count, components) as a new accessor; returns its index."""
        arr = np.ascontiguousarray(arr, dtype=np.dtype(COMPONENT_DTYPE[ctype]).newbyteorder("<"))
        self.blob.extend(b"\x00" * (-len(self.blob) % 4))
        view = {"buffer": 0, "byteOffset": len(self.blob), "byteLength": arr.nbytes}
        if target is not None:
            view["target"] = target
        self.views.append(view)
        self.blob.extend(arr.tobytes())
        acc = {"bufferView": len(self.views) - 1, "componentType": ctype, "count": int(len(arr)), "type": atype}
        if normalized:
            acc["normalized"] = True
        if minmax:
            flat = arr.reshape(len(arr), -1)
            acc["min"] = [_num(x) for x in flat.min(axis=0)]
            acc["max"] = [_num(x) for x in flat.max(axis=0)]
        self.accessors.append(acc)
        return len(self.accessors) - 1


def _num(x):
    x = x.item()
    return float(x) if isinstance(x, float) else int(x)
