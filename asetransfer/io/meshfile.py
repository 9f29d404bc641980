"""Read target meshes from .obj .ply .off .stl files (:data:`~asetransfer.io.MESH_READERS`
names these readers and the glTF and FBX ones by extension).

Vertex order is the file's (so per-vertex output lines up with the user's file);
polygons are fan-triangulated.  OBJ and PLY are read by our own readers (OBJ keeps
its objects as parts; PLY skips trimesh's import time), OFF and STL by trimesh.
STL has no shared vertices, so its coincident corners are merged.
"""
from __future__ import annotations

import io

import numpy as np

from ..errors import InputError
from ..model.mesh import Mesh
from .assembly import checked_mesh
from .files import read_bytes
from .ply import read_ply


def read_obj(path) -> Mesh:
    """The mesh of a Wavefront .obj file, its ``o`` objects as parts."""
    return _read_obj(path, read_bytes(path))


def read_ply_mesh(path) -> Mesh:
    """The mesh of a .ply file (ASCII or binary)."""
    return _as_mesh(path, *read_ply(path, read_bytes(path)))


def read_off(path) -> Mesh:
    """The mesh of an .off file (read by trimesh)."""
    return _read_trimesh(path, read_bytes(path), ".off")


def read_stl(path) -> Mesh:
    """The mesh of an ASCII or binary .stl file (read by trimesh), coincident corners welded."""
    return _read_trimesh(path, read_bytes(path), ".stl")


def _as_mesh(path, vertices, faces, **kw) -> Mesh:
    vertices = np.asarray(vertices, dtype=np.float64).reshape(-1, 3)
    faces = np.asarray(faces, dtype=np.int64).reshape(-1, 3)
    if len(vertices) == 0:
        raise InputError(path, "mesh has no vertices")
    if len(faces) == 0:
        raise InputError(path, "mesh has no faces (a point cloud cannot be rigged)")
    return checked_mesh(path, vertices, faces, **kw)


def _check_stl(path, data: bytes) -> None:
    """A binary STL is 84 + 50 n bytes; anything else must be ASCII (``solid ...``).

    Checked here because trimesh's ASCII fallback needs an optional package to even
    say that a file is garbage.
    """
    if data.lstrip()[:5].lower() == b"solid":
        return
    if len(data) < 84:
        raise InputError(path, f"truncated or not an STL file ({len(data)} bytes, a binary STL has at least 84)")
    n = int.from_bytes(data[80:84], "little")
    if len(data) != 84 + 50 * n:
        raise InputError(path, f"truncated or not an STL file: its header announces {n} triangles "
                               f"({84 + 50 * n} bytes), the file has {len(data)} bytes")


def _read_trimesh(path, data, ext) -> Mesh:
    import trimesh

    if ext == ".stl":
        _check_stl(path, data)
    try:
        loaded = trimesh.load(io.BytesIO(data), file_type=ext[1:], process=False)
        if isinstance(loaded, trimesh.Scene):
            loaded = loaded.to_mesh()
    except Exception as e:  # trimesh raises many kinds on malformed files
        raise InputError(path, f"cannot parse {ext[1:].upper()} file ({type(e).__name__}: {e})") from None
    if isinstance(loaded, trimesh.PointCloud):
        raise InputError(path, "mesh has no faces (a point cloud cannot be rigged)")
    vertices = np.asarray(getattr(loaded, "vertices", np.zeros((0, 3))))
    faces = np.asarray(getattr(loaded, "faces", np.zeros((0, 3))))
    if ext == ".stl" and len(faces):
        # a triangle soup: weld identical corners so the surface is connected
        vertices, inv = np.unique(vertices, axis=0, return_inverse=True)
        faces = inv.reshape(-1)[faces]
    return _as_mesh(path, vertices, faces)


_MAX_INDEX = np.iinfo(np.int64).max  # an index past it is no index (and would overflow the face array)


def _read_obj(path, data: bytes) -> Mesh:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    verts, faces, face_obj, objects = [], [], [], ["mesh"]
    current = 0
    for lineno, line in enumerate(text.splitlines(), 1):
        parts = line.split()
        if not parts or parts[0].startswith("#"):
            continue
        tag = parts[0]
        try:
            if tag == "v":
                verts.append([float(x) for x in parts[1:4]])
                if len(verts[-1]) != 3:
                    raise ValueError
            elif tag == "f":
                raw = [int(p.split("/")[0]) for p in parts[1:]]
                n = len(verts)
                idx = [i - 1 if i > 0 else n + i for i in raw]  # 1-based; negatives count back
                if len(idx) < 3 or 0 in raw or min(idx) < 0 or max(idx) > _MAX_INDEX:
                    raise ValueError
                for k in range(1, len(idx) - 1):  # fan triangulation
                    faces.append((idx[0], idx[k], idx[k + 1]))
                    face_obj.append(current)
            elif tag == "o":
                name = " ".join(parts[1:]) or f"object{len(objects)}"
                if faces or len(objects) > 1 or objects[0] != "mesh":
                    objects.append(name)
                else:
                    objects[0] = name
                current = len(objects) - 1
        except ValueError:
            raise InputError(path, f"malformed OBJ line {lineno}: {line.strip()[:60]!r}") from None
    faces = np.asarray(faces, dtype=np.int64).reshape(-1, 3)
    n = len(verts)
    if len(faces) and faces.max() >= n:
        raise InputError(path, f"an OBJ face uses vertex {int(faces.max()) + 1}, but the file has {n} vertices")
    part = np.zeros(n, np.int32)
    face_obj = np.asarray(face_obj, np.int32)
    if len(objects) > 1 and len(faces):
        # a vertex belongs to the object of the first face that uses it
        first = np.full(n, -1, np.int32)
        for k in (2, 1, 0):
            first[faces[::-1, k]] = face_obj[::-1]
        part = np.where(first >= 0, first, 0).astype(np.int32)
        if (part[faces] != face_obj[:, None]).any():  # objects share vertices: keep one part
            objects, part = ["mesh"], np.zeros(n, np.int32)
    used = sorted(set(part.tolist())) if n else [0]
    remap = {p: i for i, p in enumerate(used)}
    part = np.array([remap[p] for p in part.tolist()], np.int32) if n else part
    return _as_mesh(path, np.array(verts, dtype=np.float64).reshape(-1, 3), faces,
                    parts=tuple(objects[p] for p in used), vertex_part=part)
