"""Reading and writing the files users have: glTF rigs, target meshes, marker files."""
import os

from .gltf_read import read_gltf, read_gltf_mesh, read_gltf_rig
from .gltf_write import write_rig
from .markers import load_markers
from .meshfile import MESH_EXTENSIONS, load_mesh

load_rig = read_gltf_rig
save_rig = write_rig


def load_character(path):
    """Any supported file: a :class:`~asetransfer.Rig` for skinned glTF, else a :class:`~asetransfer.Mesh`."""
    if os.path.splitext(os.fspath(path))[1].lower() in (".glb", ".gltf"):
        return read_gltf(path)
    return load_mesh(path)


__all__ = ["MESH_EXTENSIONS", "load_character", "load_markers", "load_mesh", "load_rig",
           "read_gltf", "read_gltf_mesh", "read_gltf_rig", "save_rig", "write_rig"]
