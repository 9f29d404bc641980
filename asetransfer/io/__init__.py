"""Reading and writing the files users have: glTF (and VRM) and FBX rigs, USD output, target meshes,
marker files.  The readers and writers are chosen by file extension, each in one table.

A table's entry is a function, or ``"module:function"`` (a module of this package) for the
formats whose modules (FBX, USD and usd-core) are loaded only when such a file is read or written.
"""
import logging
import os

from ..errors import InputError
from .gltf_read import read_gltf, read_gltf_mesh, read_gltf_rig
from .gltf_write import write_rig
from .markers import load_markers
from .meshfile import read_obj, read_off, read_ply_mesh, read_stl
from .vrm import is_vrm

log = logging.getLogger("asetransfer")

#: extensions of the USD writer and reader (usd-core, the optional ``usd`` extra)
USD_EXTENSIONS = (".usda", ".usdc", ".usdz")
#: extension -> reader of a target mesh (a rigged file's mesh as modelled, skins ignored)
MESH_READERS = {".obj": read_obj, ".ply": read_ply_mesh, ".off": read_off, ".stl": read_stl,
                ".glb": read_gltf_mesh, ".gltf": read_gltf_mesh, ".vrm": read_gltf_mesh, ".fbx": "fbx:read_fbx_mesh",
                ".dae": "collada:read_collada_mesh", ".pmx": "pmx:read_pmx_mesh"}
#: extension -> reader of a rigged character
RIG_READERS = {".glb": read_gltf_rig, ".gltf": read_gltf_rig, ".vrm": read_gltf_rig, ".fbx": "fbx:read_fbx_rig",
               ".dae": "collada_rig:read_collada_rig", ".pmx": "pmx:read_pmx_rig",
               **{ext: "usd:read_usd_rig" for ext in USD_EXTENSIONS}}
#: extension -> reader of "whatever the file holds" (a Rig if skinned, else a Mesh)
CHARACTER_READERS = {".glb": read_gltf, ".gltf": read_gltf, ".vrm": read_gltf, ".fbx": "fbx:read_fbx",
                     ".dae": "collada_rig:read_collada", ".pmx": "pmx:read_pmx",
                     **{ext: "usd:read_usd" for ext in USD_EXTENSIONS}}
#: the glTF family: files a glTF reader reads and the glTF writers write (a .vrm only over a VRM target)
GLTF_EXTENSIONS = (".glb", ".gltf", ".vrm")
#: extension -> writer of a rig, called as ``writer(path, rig, max_influences=, inputs=, **options)``
RIG_WRITERS = {".glb": write_rig, ".gltf": write_rig, ".vrm": write_rig, ".fbx": "fbx_write:write_fbx",
               **{ext: "usd:write_usd" for ext in USD_EXTENSIONS}}
#: extension -> writer of a rig over its target's look (:class:`~asetransfer.model.look.Look`),
#: called as ``writer(look, rig, path, max_influences=, inputs=)``
LOOK_WRITERS = {".glb": "gltf_over:write_rig_over", ".gltf": "gltf_over:write_rig_over",
                ".vrm": "gltf_over:write_rig_over",
                ".fbx": "fbx_write:write_fbx_over", **{ext: "usd:write_usd_over" for ext in USD_EXTENSIONS}}
#: extension -> reader of a rig's animation clips, ``reader(path) -> (rig, [(name, Animation)],
#: [(name, reason)])`` (glTF animations, FBX takes)
CLIP_READERS = {".glb": "gltf_animation:read_clips", ".gltf": "gltf_animation:read_clips",
                ".vrm": "gltf_animation:read_clips",
                ".fbx": "fbx_animation:read_fbx_clips", ".dae": "collada_animation:read_collada_clips"}
#: extension -> whether a file holds animation clips (without reading them)
CLIP_FINDERS = {".glb": "gltf_animation:has_clips", ".gltf": "gltf_animation:has_clips",
                ".vrm": "gltf_animation:has_clips",
                ".fbx": "fbx_animation:has_clips", ".dae": "collada_animation:has_clips"}
#: extension -> reader of the units and up axis a file declares
FRAME_READERS = {".fbx": "fbx_scene:fbx_frame", ".dae": "collada:collada_frame",
                 **{ext: "usd:usd_frame" for ext in USD_EXTENSIONS}}

#: every target mesh input format
MESH_EXTENSIONS = tuple(MESH_READERS)
#: every rig output format (what :func:`save_rig` writes)
RIG_OUTPUT_EXTENSIONS = tuple(RIG_WRITERS)


def _extension(path) -> str:
    return os.path.splitext(os.fspath(path))[1].lower()


def _entry(table: dict, ext: str):
    """The function ``table`` names for ``ext``, its module imported if the entry is a string."""
    function = table[ext]
    if isinstance(function, str):
        import importlib

        module, name = function.split(":")
        function = getattr(importlib.import_module(f".{module}", __name__), name)
    return function


def load_mesh(path):
    """A triangle mesh from any file of :data:`MESH_EXTENSIONS` (a rigged file's mesh as modelled).

    Raises
    ------
    InputError for unknown formats, unreadable files and meshes with no faces.
    """
    ext = _extension(path)
    if ext not in MESH_READERS:
        raise InputError(path, f"unknown mesh format {ext or '(no extension)'!r}; "
                               f"supported: {' '.join(MESH_EXTENSIONS)}")
    return _entry(MESH_READERS, ext)(path)


def load_rig(path):
    """A rigged character from a .glb, .gltf, .fbx, .usda, .usdc or .usdz file (other
    extensions: read as glTF, whose reader names the problem)."""
    return _entry(RIG_READERS, _extension(path) if _extension(path) in RIG_READERS else ".glb")(path)


def load_character(path):
    """Any supported file: a :class:`~asetransfer.Rig` for skinned glTF/FBX/USD, else a :class:`~asetransfer.Mesh`."""
    ext = _extension(path)
    if ext in CHARACTER_READERS:
        return _entry(CHARACTER_READERS, ext)(path)
    return load_mesh(path)


def file_frame(path):
    """The units and up axis a file declares (FBX ``GlobalSettings``, USD stage metadata):
    ``{"metres_per_unit": float, "up_axis": "+Y"}``, or None for formats that declare none."""
    ext = _extension(path)
    return _entry(FRAME_READERS, ext)(path) if ext in FRAME_READERS else None


def load_clips(path) -> tuple:
    """The animation clips of a rigged file (:data:`CLIP_READERS`): ``(rig, [(name, animation)],
    [(name, reason a clip is left out)])``; a format without clips is an :class:`InputError`."""
    ext = _extension(path)
    if ext not in CLIP_READERS:
        raise InputError(path, f"holds no animation clips that can be read ({' '.join(CLIP_READERS)} do)")
    return _entry(CLIP_READERS, ext)(path)


def has_clips(path) -> bool:
    """Whether a rigged file holds animation clips (False for formats without them)."""
    ext = _extension(path)
    return ext in CLIP_FINDERS and _entry(CLIP_FINDERS, ext)(path)


def save_rig(path, rig, max_influences: int | None = 8, inputs=(), look=None, **options) -> None:
    """Write ``rig`` atomically in the format its extension names (:data:`RIG_WRITERS`; an
    extension not in :data:`RIG_OUTPUT_EXTENSIONS` is written as .glb).

    ``max_influences``: 1 to 8 joints per vertex (None: as many as the skin has, at most 8);
    ``inputs``: paths never overwritten;
    ``look``: the target's look (``rig.mesh.look``) to carry: a format of :data:`LOOK_WRITERS`
    writes the rig over it (a .vrm only over a VRM's: ValueError otherwise), the others write
    the rig alone and name what they drop in one warning;
    ``options``: the writer's own, for .glb/.gltf (:func:`write_rig`) ``animation``,
    ``extras``, for .usda/.usdc/.usdz (:func:`~.usd.write_usd`) ``metres_per_unit``, ``up_axis``.
    """
    ext = _extension(path)
    ext = ext if ext in RIG_WRITERS else ".glb"
    if ext == ".vrm" and (look is None or not is_vrm(look.document)):
        raise ValueError(f"{os.fspath(path)}: a .vrm is written over a VRM target (its humanoid, metadata and "
                         "materials); this target is no VRM: write .glb")
    if look is not None and ext in LOOK_WRITERS:
        return _entry(LOOK_WRITERS, ext)(look, rig, path, max_influences=max_influences, inputs=inputs, **options)
    if look is not None:
        from .gltf_over import look_contents

        dropped = look_contents(look, carried=[name for name, values in (("NORMAL", rig.mesh.normals),
                                                                         ("TEXCOORD_0", rig.mesh.uv))
                                                 if values is not None])
        if dropped:
            log.warning("%s: not carried to %s (it holds the rig's positions, triangles and skin only): %s",
                        look.path, os.path.basename(os.fspath(path)), "; ".join(dropped))
    return _entry(RIG_WRITERS, ext)(path, rig, max_influences=max_influences, inputs=inputs, **options)


__all__ = ["CHARACTER_READERS", "CLIP_READERS", "FRAME_READERS", "GLTF_EXTENSIONS", "LOOK_WRITERS", "MESH_EXTENSIONS",
           "MESH_READERS", "RIG_OUTPUT_EXTENSIONS",
           "RIG_READERS", "RIG_WRITERS", "USD_EXTENSIONS", "file_frame", "has_clips", "load_character", "load_clips", "load_markers",
           "load_mesh", "load_rig", "read_gltf", "read_gltf_mesh", "read_gltf_rig", "save_rig", "write_rig"]
