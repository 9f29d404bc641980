"""Read skinned characters (and static meshes) from glTF 2.0 files.

Accepts what real exporters write: several mesh nodes and primitives merged into
one mesh (the part of each vertex recorded), non-joint nodes between or above the
joints (their transforms folded into the joints' local transforms), scale in node
transforms, any number of ``JOINTS_n``/``WEIGHTS_n`` sets, unnormalised weights
(normalised, with a warning), rigid meshes parented under a joint (bound to it with
weight 1), and skins whose ``skeleton`` root is not the scene root.

The document and its mesh pieces: :mod:`.gltf_document`; the rig made of them: :mod:`.gltf_skin`.
"""
from __future__ import annotations

import numpy as np

from ..model.mesh import Mesh
from ..model.rig import Rig
from .assembly import merge_pieces
from .gltf_document import GltfDocument
from .gltf_skin import nearly_singular, rig_from_document


def read_gltf_mesh(path) -> Mesh:
    """The meshes of a glTF file as one static mesh in world space (rest pose).

    Skinned meshes are posed with the file's node transforms (linear blend
    skinning); other meshes are placed with their node's world matrix.
    """
    d = GltfDocument(path)
    return mesh_from_document(d, d.pieces())


def mesh_from_document(d: GltfDocument, pieces: list) -> Mesh:
    """:func:`read_gltf_mesh` of a parsed document and its :meth:`~.gltf_document.GltfDocument.pieces`."""
    if not pieces:
        d.fail("contains no triangle mesh")
    if any(p.skin is not None for p in pieces):
        return rig_from_document(d, pieces).rest_mesh()
    for p in pieces:
        p.move(p.world)
        if p.normals is not None and nearly_singular(p.world[None, :3, :3])[0]:
            p.normals = None  # a zero scale flattens the piece: its normals mean nothing
        elif p.normals is not None:
            nm = p.normals @ np.linalg.inv(p.world[:3, :3])
            p.normals = nm / np.maximum(np.linalg.norm(nm, axis=1, keepdims=True), 1e-30)
    mesh = merge_pieces(d.path, pieces)
    mesh.look = d.look(pieces)
    return mesh


def read_gltf_rig(path) -> Rig:
    """Read a skinned character.

    Parameters
    ----------
    path : .glb or .gltf file.

    Returns
    -------
    Rig whose mesh is in the bind pose, skeleton joints in the order of the first
    skin's ``joints`` (then joints only other skins use), weights normalised.

    Raises
    ------
    InputError with a one-line message for anything we cannot read.
    """
    d = GltfDocument(path)
    return rig_from_document(d, d.pieces())


def read_gltf(path):
    """A glTF file as a :class:`Rig` if it has a skinned mesh, else as a static :class:`Mesh`."""
    d = GltfDocument(path)
    pieces = d.pieces()
    if not pieces:
        d.fail("contains no triangle mesh")
    if d.skins and any(p.skin is not None for p in pieces):
        return rig_from_document(d, pieces)
    return mesh_from_document(d, pieces)

