"""EXT_meshopt_compression: meshoptimizer-compressed buffer views read as plain ones.

gltfpack (``-c``, ``-cc``) stores each vertex or index buffer view compressed in one buffer
and points the view itself at a *fallback* buffer that holds no bytes.
:func:`decode_meshopt_views` decodes every such view once, at the boundary
(:func:`~.glb.read_document`), into the fallback buffer at the view's place, and removes
the extension: every reader after it sees an uncompressed document, and outputs built
over it are written uncompressed.

Decoding uses meshoptimizer's own decoder through the ``meshopt`` binding (MIT; the extra
``pip install "asetransfer[meshopt]"``), imported only when a file holds compressed views.
"""
from __future__ import annotations

import numpy as np

from ..errors import InputError
from .glb import drop_extension, is_fallback, is_index

EXTENSION = "EXT_meshopt_compression"
MODES = ("ATTRIBUTES", "TRIANGLES", "INDICES")
FILTERS = ("NONE", "OCTAHEDRAL", "QUATERNION", "EXPONENTIAL", "COLOR")
#: [bytes] the decoded views of a file may fill at most this much ...
DECODED_FLOOR = 64 << 20
#: ... plus this multiple of the compressed bytes (gltfpack's ratios: 2-10)
DECODED_RATIO = 64


def decode_meshopt_views(path, doc: dict, buffers: list) -> None:
    """Decode, in place, every buffer view of ``doc`` carrying :data:`EXTENSION` into the
    buffer the view names (a fallback buffer is made its declared length of zeros first), and
    remove the extension from the views, the fallback buffers and the document's lists.

    Parameters
    ----------
    path : the file (for errors).
    doc : the glTF JSON.
    buffers : list of bytes, one per ``doc['buffers']`` (fallback ones empty); replaced in place.
    """
    views = [v for v in doc.get("bufferViews") or []
             if isinstance(v, dict) and isinstance(v.get("extensions"), dict) and EXTENSION in v["extensions"]]
    if views:
        try:
            import meshopt
        except ImportError:
            raise InputError(path, f"has meshopt-compressed meshes ({EXTENSION}); install the decoder to read "
                                   "them (pip install \"asetransfer[meshopt]\")") from None
        budget = DECODED_FLOOR + DECODED_RATIO * sum(len(b) for b in buffers)
        filled = {}
        too_much = (f"its compressed views would decode to more than {DECODED_FLOOR >> 20} MiB + {DECODED_RATIO} "
                    "times the compressed bytes; refusing it")
        for k, view in enumerate(views):
            data, at, buffer = _decoded(path, doc, buffers, view, f"compressed bufferView {k}", meshopt, budget)
            if buffer not in filled:
                length = doc["buffers"][buffer]["byteLength"]  # checked as the buffers were read
                budget -= length
                if budget < 0:
                    raise InputError(path, too_much)
                filled[buffer] = bytearray(buffers[buffer]).ljust(length, b"\0")
            if at + len(data) > len(filled[buffer]):
                raise InputError(path, f"compressed bufferView {k} decodes past the end of buffer {buffer}")
            filled[buffer][at:at + len(data)] = data
        for buffer, data in filled.items():
            buffers[buffer] = bytes(data)
    drop_extension(doc, EXTENSION, views + [b for b in doc.get("buffers") or [] if is_fallback(b)])


def _decoded(path, doc: dict, buffers: list, view: dict, what: str, meshopt, limit: int) -> tuple:
    """``(bytes, byte offset, buffer index)``: one compressed view decoded (refused before
    decoding if it would exceed ``limit`` bytes), where it goes."""
    ext = view["extensions"][EXTENSION]
    fields = {key: ext.get(key, 0 if key == "byteOffset" else None)
              for key in ("buffer", "byteOffset", "byteLength", "byteStride", "count")} if isinstance(ext, dict) else {}
    if not fields or not all(is_index(v) for v in fields.values()) or ext.get("mode") not in MODES \
            or ext.get("filter", "NONE") not in FILTERS or not is_index(view.get("buffer")) \
            or not is_index(view.get("byteOffset", 0)) or not 0 <= view["buffer"] < len(buffers) \
            or not 0 <= fields["buffer"] < len(buffers):
        raise InputError(path, f"{what} has a malformed {EXTENSION}")
    source = buffers[fields["buffer"]]
    start, length = fields["byteOffset"], fields["byteLength"]
    if start + length > len(source):
        raise InputError(path, f"{what}'s compressed bytes lie outside buffer {fields['buffer']}")
    count, stride, mode = fields["count"], fields["byteStride"], ext["mode"]
    if count * stride > limit:
        raise InputError(path, f"{what} declares {count} x {stride} bytes, more than the file's compressed bytes "
                               "can decode to")
    try:
        decoded = meshopt.decode_gltf_buffer(bytes(source[start:start + length]), count, stride, mode,
                                             ext.get("filter", "NONE"))
    except Exception as e:  # the decoder's own errors (corrupt or truncated data)
        raise InputError(path, f"{what} cannot be decoded ({e})") from None
    if mode == "ATTRIBUTES":
        data = np.ascontiguousarray(decoded, dtype=np.uint8).tobytes()
    else:  # indices, written back at the view's index size
        if stride not in (2, 4):
            raise InputError(path, f"{what} holds indices of {stride} bytes (2 or 4 expected)")
        data = np.asarray(decoded).astype("<u2" if stride == 2 else "<u4").tobytes()
    if len(data) != count * stride:
        raise InputError(path, f"{what} decodes to {len(data)} bytes, {count * stride} expected")
    return data, view.get("byteOffset", 0), view["buffer"]
