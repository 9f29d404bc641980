"""Correspondence map files (``.npz``): both directions of a dense correspondence.

A map file is a NumPy ``.npz`` archive with the arrays of :data:`MAP_ARRAYS`: for
every source vertex a target surface location (``src_to_tgt_face`` (Ns,) triangle
index, ``src_to_tgt_bary`` (Ns, 3) barycentric coordinates), the same for every
target vertex (``tgt_to_src_*``), and the (F, 3) triangles those indices refer to
(``src_faces``, ``tgt_faces``).  The writer is deterministic (sorted members, fixed
zip timestamps) and atomic (:func:`~asetransfer.io.atomic.atomic_write`); the reader
checks shapes, index ranges and barycentric sums.
"""
from __future__ import annotations

import io
import zipfile

import numpy as np

from ..errors import InputError
from ..model.surface import SurfacePoints
from .atomic import atomic_write
from .files import read_bytes

#: arrays of a map file and their dtypes
MAP_ARRAYS = {"src_to_tgt_face": np.int64, "src_to_tgt_bary": np.float64,
              "tgt_to_src_face": np.int64, "tgt_to_src_bary": np.float64,
              "src_faces": np.int64, "tgt_faces": np.int64}


def npz_bytes(arrays: dict) -> bytes:
    """An ``.npz`` archive (readable by ``numpy.load``) with reproducible bytes."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for name in sorted(arrays):
            member = io.BytesIO()
            np.lib.format.write_array(member, np.ascontiguousarray(arrays[name]), allow_pickle=False)
            info = zipfile.ZipInfo(name + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            z.writestr(info, member.getvalue())
    return buf.getvalue()


def write_map(path, source_to_target: SurfacePoints, target_to_source: SurfacePoints,
              src_faces: np.ndarray, tgt_faces: np.ndarray, inputs=()) -> None:
    """Write both maps and the triangles they index (see :data:`MAP_ARRAYS`)."""
    arrays = {"src_to_tgt_face": source_to_target.face, "src_to_tgt_bary": source_to_target.bary,
              "tgt_to_src_face": target_to_source.face, "tgt_to_src_bary": target_to_source.bary,
              "src_faces": src_faces, "tgt_faces": tgt_faces}
    atomic_write(path, npz_bytes({k: np.asarray(v, dtype=MAP_ARRAYS[k]) for k, v in arrays.items()}), inputs)


def read_map(path, n_source: int | None = None, n_target: int | None = None):
    """Read a map file written by :func:`write_map`, checking shapes and indices.

    Returns
    -------
    source_to_target, target_to_source : :class:`SurfacePoints`; src_faces, tgt_faces.
    """
    data = read_bytes(path)
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            arrays = {k: z[k] for k in MAP_ARRAYS if k in z}
    except (ValueError, OSError, zipfile.BadZipFile, EOFError) as e:
        raise InputError(path, f"not a correspondence map (.npz): {e}") from None
    missing = [k for k in MAP_ARRAYS if k not in arrays]
    if missing:
        raise InputError(path, f"correspondence map lacks array(s) {', '.join(missing)}")
    sf, tf = arrays["src_faces"], arrays["tgt_faces"]
    for prefix, faces, n_other, n_self in (("src_to_tgt", tf, n_target, n_source),
                                          ("tgt_to_src", sf, n_source, n_target)):
        face, bary = arrays[prefix + "_face"], arrays[prefix + "_bary"]
        if bary.shape != (len(face), 3) or faces.ndim != 2 or faces.shape[1:] != (3,):
            raise InputError(path, f"{prefix}: inconsistent array shapes")
        if n_self is not None and len(face) != n_self:
            raise InputError(path, f"{prefix} maps {len(face)} vertices, the mesh has {n_self}")
        if len(face) and (face.min() < 0 or face.max() >= len(faces)):
            raise InputError(path, f"{prefix}_face: triangle index out of range")
        if not np.isfinite(bary).all() or np.abs(bary.sum(axis=1) - 1).max(initial=0) > 1e-6:
            raise InputError(path, f"{prefix}_bary: rows must be finite and sum to 1")
        if n_other is not None and len(faces) and faces.max() >= n_other:
            raise InputError(path, f"{prefix}: triangles reference vertices the mesh does not have")
    return (SurfacePoints(arrays["src_to_tgt_face"], arrays["src_to_tgt_bary"]),
            SurfacePoints(arrays["tgt_to_src_face"], arrays["tgt_to_src_bary"]), sf, tf)


