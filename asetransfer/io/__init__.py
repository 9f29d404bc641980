"""Reading and writing the files users have: glTF and FBX rigs, USD output, target meshes,
marker files.  The readers and writers are chosen by file extension, each in one table."""
import os

from .gltf_read import read_gltf, read_gltf_mesh, read_gltf_rig
from .gltf_write import write_rig
from .markers import load_markers
from .meshfile import MESH_EXTENSIONS, load_mesh

#: extensions of the USD writer and reader (usd-core, the optional ``usd`` extra)
USD_EXTENSIONS = (".usda", ".usdc", ".usdz")
#: extension -> reader of a rigged character ("module:function": loaded when such a file is read)
RIG_READERS = {".glb": read_gltf_rig, ".gltf": read_gltf_rig, ".fbx": "fbx:read_fbx_rig",
               **{ext: "usd:read_usd_rig" for ext in USD_EXTENSIONS}}
#: extension -> reader of "whatever the file holds" (a Rig if skinned, else a Mesh)
CHARACTER_READERS = {".glb": read_gltf, ".gltf": read_gltf, ".fbx": "fbx:read_fbx",
                     **{ext: "usd:read_usd" for ext in USD_EXTENSIONS}}
#: every rig output format
RIG_OUTPUT_EXTENSIONS = (".glb", ".gltf") + USD_EXTENSIONS


def _extension(path) -> str:
    return os.path.splitext(os.fspath(path))[1].lower()


def _reader(table: dict, ext: str):
    reader = table[ext]
    if isinstance(reader, str):  # FBX and USD: their modules (and usd-core) loaded on use
        import importlib

        module, name = reader.split(":")
        reader = getattr(importlib.import_module(f".{module}", __name__), name)
    return reader


def load_rig(path):
    """A rigged character from a .glb, .gltf, .fbx, .usda, .usdc or .usdz file (other
    extensions: read as glTF, whose reader names the problem)."""
    return _reader(RIG_READERS, _extension(path) if _extension(path) in RIG_READERS else ".glb")(path)


def load_character(path):
    """Any supported file: a :class:`~asetransfer.Rig` for skinned glTF/FBX/USD, else a :class:`~asetransfer.Mesh`."""
    ext = _extension(path)
    if ext in CHARACTER_READERS:
        return _reader(CHARACTER_READERS, ext)(path)
    return load_mesh(path)


def file_frame(path):
    """The units and up axis a file declares (FBX ``GlobalSettings``, USD stage metadata):
    ``{"metres_per_unit": float, "up_axis": "+Y"}``, or None for formats that declare none."""
    ext = _extension(path)
    if ext == ".fbx":
        from .fbx_scene import fbx_frame

        return fbx_frame(path)
    if ext in USD_EXTENSIONS:
        from .usd import usd_frame

        return usd_frame(path)
    return None


def save_rig(path, rig, max_influences: int = 8, inputs=(), **options) -> None:
    """Write ``rig`` in the format its extension names: .glb/.gltf (:func:`write_rig`,
    ``options`` such as ``animation``, ``extras``) or .usda/.usdc/.usdz
    (:func:`~.usd.write_usd`, ``options`` ``metres_per_unit``, ``up_axis``), atomically."""
    if _extension(path) in USD_EXTENSIONS:
        from .usd import write_usd

        return write_usd(path, rig, max_influences=max_influences, inputs=inputs, **options)
    return write_rig(path, rig, max_influences=max_influences, inputs=inputs, **options)


__all__ = ["MESH_EXTENSIONS", "RIG_OUTPUT_EXTENSIONS", "USD_EXTENSIONS", "file_frame", "load_character", "load_markers",
           "load_mesh", "load_rig", "read_gltf", "read_gltf_mesh", "read_gltf_rig", "save_rig", "write_rig"]
