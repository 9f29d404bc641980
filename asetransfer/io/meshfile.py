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
from .assembly import mesh_of_arrays
from .files import read_bytes
from .obj import read_obj_file
from .ply import read_ply
from .ply_look import ply_attributes, ply_look


def read_obj(path) -> Mesh:
    """The mesh of a Wavefront .obj file, its ``o`` objects as parts, with its look (UVs,
    normals, materials: :mod:`.obj`)."""
    return read_obj_file(path, read_bytes(path))


def read_ply_mesh(path) -> Mesh:
    """The mesh of a .ply file (ASCII or binary), with its normals, UVs and colours as its
    look (:mod:`.ply_look`)."""
    vertices, faces, rest = read_ply(path, read_bytes(path))
    normals, uv, _, _ = ply_attributes(rest["vertex"])
    if uv is not None:
        uv = uv * [1.0, -1.0] + [0.0, 1.0]  # PLY's origin is the image's bottom left, a Mesh's its top left
    finite = {name: a for name, a in (("normals", normals), ("uv", uv)) if a is not None and np.isfinite(a).all()}
    mesh = mesh_of_arrays(path, vertices, faces, **finite)
    mesh.look = ply_look(path, mesh, rest)
    return mesh


def read_off(path) -> Mesh:
    """The mesh of an .off file (read by trimesh)."""
    return _read_trimesh(path, read_bytes(path), ".off")


def read_stl(path) -> Mesh:
    """The mesh of an ASCII or binary .stl file (read by trimesh), coincident corners welded."""
    return _read_trimesh(path, read_bytes(path), ".stl")


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
    return mesh_of_arrays(path, vertices, faces)
