"""Write skinned characters as glTF 2.0 (.glb, or self-contained .gltf).

Layout: one node per joint (node ``j`` is joint ``j``, TRS of the rest pose), one
mesh node per mesh part bound to a single skin whose ``inverseBindMatrices`` are
the inverse bind-pose world matrices.  ``POSITION`` is the bind-pose mesh in the
input vertex order; the rig's blend shapes are its morph targets (:mod:`.gltf_shapes`).  A joint whose rest rotation is not its orientation (Maya's
jointOrient vs rotate, spec §3.2) keeps its orientation in the node's extras so a
round trip preserves the distinction.  Output bytes depend only on the input.
"""
from __future__ import annotations

import os

import numpy as np

from .._version import __version__
from ..config import influence_limit
from ..model.rig import Rig
from ..model.skin import SkinWeights
from ..model.transforms import matrix_to_quat
from .atomic import atomic_write
from .glb import ARRAY_BUFFER, ELEMENT_ARRAY_BUFFER, FLOAT, UBYTE, UINT, USHORT, BufferBuilder, pack_glb, pack_gltf
from .gltf_animation import animation_to_gltf
from .gltf_shapes import add_morph_targets
from .gltf_skin import EXTRAS_KEY

#: the asset's ``generator``
GENERATOR = f"asetransfer {__version__}"


def _float32_weights(w: np.ndarray) -> np.ndarray:
    """Cast normalised weights to float32 so each row sums to 1 in float32 too."""
    w32 = w.astype(np.float32)
    rest = w32[:, 1:].sum(axis=1, dtype=np.float32)
    w32[:, 0] = np.float32(1.0) - rest  # largest weight absorbs the rounding
    return w32


def _clean(x: float) -> float:
    """Round-off noise to exact values so identical rigs give identical text."""
    return float(x) + 0.0  # -0.0 -> 0.0


def rig_to_document(rig: Rig, max_influences: int | None = 8, extras: dict | None = None, animation=None,
                    clips=()):
    """The glTF JSON document and binary buffer of a rig.

    Parameters
    ----------
    rig : the character; its skin is pruned to ``max_influences`` (1 to 8; None: the
        skin's own, at most 8) per vertex and renormalised.
    extras : JSON-serialisable data stored as the asset's extras.
    animation : optional :class:`~asetransfer.animation.Animation` of the rig's joints,
        written as the file's animation (see :mod:`.gltf_animation`).
    clips : ``(name, Animation)`` of the rig's joints, written as named animations after it.

    Returns
    -------
    doc : dict, blob : bytes
    """
    sk = rig.skeleton
    joints, weights = influence_slots(rig, max_influences)
    joint_type = joint_component_type(sk)
    bb = BufferBuilder()
    nodes, skin_doc, roots = skeleton_skin(bb, sk)
    first_mesh = len(nodes)
    meshes, mesh_nodes = [], []
    for part, pname in enumerate(rig.mesh.parts):
        m = _part_mesh(bb, rig.mesh, part, joints=joints, weights=weights, joint_type=joint_type)
        if m is not None:
            add_morph_targets(bb, m, [(np.flatnonzero(rig.mesh.vertex_part == part), m["primitives"])], rig.shapes,
                              with_normals=rig.mesh.normals is not None)
            meshes.append(m)
            mesh_nodes.append({"name": pname, "mesh": len(meshes) - 1, "skin": 0})
    animations = [animation_to_gltf(bb, sk, animation)] if animation is not None else []
    animations += [animation_to_gltf(bb, sk, clip, name) for name, clip in clips]
    nodes.extend(mesh_nodes)
    asset = {"version": "2.0", "generator": GENERATOR}
    if extras:
        asset["extras"] = extras
    doc = {
        "asset": asset,
        "scene": 0,
        "scenes": [{"nodes": roots + list(range(first_mesh, len(nodes)))}],
        "nodes": nodes,
        "meshes": meshes,
        "skins": [skin_doc],
        **({"animations": animations} if animations else {}),
        "accessors": bb.accessors,
        "bufferViews": bb.views,
        "buffers": [{"byteLength": len(bb.blob)}],
    }
    return doc, bytes(bb.blob)


def influence_slots(rig: Rig, max_influences: int | None) -> tuple:
    """(V, k) joint indices and float32 weights, k = 4 or 8 (one or two glTF sets): the skin
    pruned to ``max_influences`` per vertex (None: :func:`~asetransfer.config.influence_limit`
    of the skin's own), unused slots padded with weight 0."""
    skin, n = rig.skin, rig.mesh.n_vertices
    max_influences = influence_limit(max_influences, skin.indices.shape[1])
    if skin.indices.shape[1] > max_influences:
        skin = SkinWeights.from_influences(skin.indices, skin.weights, skin.n_joints, max_influences)
    k = 4 if skin.indices.shape[1] <= 4 else 8
    idx = np.zeros((n, k), np.int64)
    w = np.zeros((n, k))
    idx[:, : skin.indices.shape[1]] = skin.indices
    w[:, : skin.weights.shape[1]] = skin.weights
    return idx, _float32_weights(w)


def joint_component_type(sk) -> int:
    """The component type of ``JOINTS_n`` for skeleton ``sk``: unsigned bytes up to 256 joints."""
    return UBYTE if sk.n_joints <= 256 else USHORT


#: the name of the node parenting the roots of a skeleton with several
COMMON_ROOT = "skeleton"


def skeleton_skin(bb: BufferBuilder, sk, first: int = 0) -> tuple:
    """The joint nodes of skeleton ``sk`` (:func:`joint_nodes`), the skin binding them (its
    inverse bind matrices added to ``bb``) and the skeleton's root nodes.

    Returns
    -------
    nodes : list of node objects, node ``first + j`` is joint ``j``; a skeleton of several
        roots (an MMD model's IK bones beside its centre) has one node more after them, at
        rest, parenting the roots: glTF wants a skin's joints under one common root.
    skin : the skin object (joints in skeleton order, ``skeleton`` = the common root).
    roots : node indices of the scene's new root nodes (the root joint, or that node).
    """
    nodes = joint_nodes(sk, first)
    ibm = np.linalg.inv(sk.bind_world).astype(np.float32).transpose(0, 2, 1).reshape(-1, 16)
    skin = {"name": "skin", "joints": list(range(first, first + sk.n_joints)),
            "inverseBindMatrices": bb.add(ibm, FLOAT, "MAT4")}
    roots = [first + int(r) for r in sk.roots()]
    if len(roots) > 1:
        nodes.append({"name": COMMON_ROOT, "children": roots})
        roots = [first + sk.n_joints]
    skin["skeleton"] = roots[0]
    return nodes, skin, roots


def joint_nodes(sk, first: int = 0) -> list:
    """One glTF node per joint (node ``first + j`` is joint ``j``): children and rest-pose TRS,
    the joint orientation in our extras when the rest rotation is not the orientation alone."""
    nodes = []
    quat = matrix_to_quat(sk.rest_rotation_local())
    orient_q = matrix_to_quat(sk.orient)
    has_rot = np.abs(sk.rotation - np.eye(3)).max(axis=(1, 2)) > 1e-12
    for j, name in enumerate(sk.names):
        node = {"name": name}
        children = [first + int(c) for c in sk.children(j)]
        if children:
            node["children"] = children
        node["translation"] = [_clean(x) for x in sk.translation[j]]
        node["rotation"] = [_clean(x) for x in quat[j]]
        if np.abs(sk.scale[j] - 1.0).max() > 1e-12:
            node["scale"] = [_clean(x) for x in sk.scale[j]]
        if has_rot[j]:
            node["extras"] = {EXTRAS_KEY: {"orient": [_clean(x) for x in orient_q[j]]}}
        nodes.append(node)
    return nodes


def _part_mesh(bb: BufferBuilder, mesh, part: int, *, joints: np.ndarray, weights: np.ndarray,
               joint_type: int) -> dict | None:
    """The glTF mesh of mesh part ``part`` (its vertices renumbered from 0), its accessors
    added to ``bb``; None for a part without vertices.

    ``joints``, ``weights`` : (V, k) influence slots of the whole mesh; ``joint_type``:
    the component type of ``JOINTS_n``.
    """
    pname = mesh.parts[part]
    vsel = np.flatnonzero(mesh.vertex_part == part)
    if len(vsel) == 0:
        return None
    fsel = mesh.part_faces(part)
    remap = np.full(mesh.n_vertices, -1, np.int64)
    remap[vsel] = np.arange(len(vsel))
    faces = remap[mesh.faces[fsel]]
    if len(faces) and faces.min() < 0:
        raise ValueError(f"mesh part {pname!r} has faces that use vertices of another part")
    attrs = {"POSITION": bb.add(mesh.vertices[vsel].astype(np.float32), FLOAT, "VEC3", ARRAY_BUFFER, True)}
    if mesh.normals is not None:
        nrm = mesh.normals[vsel]
        nrm = nrm / np.maximum(np.linalg.norm(nrm, axis=1, keepdims=True), 1e-30)
        nrm[np.linalg.norm(nrm, axis=1) < 0.5] = (0.0, 0.0, 1.0)
        attrs["NORMAL"] = bb.add(nrm.astype(np.float32), FLOAT, "VEC3", ARRAY_BUFFER)
    if mesh.uv is not None:
        attrs["TEXCOORD_0"] = bb.add(mesh.uv[vsel].astype(np.float32), FLOAT, "VEC2", ARRAY_BUFFER)
    for s in range(joints.shape[1] // 4):
        attrs[f"JOINTS_{s}"] = bb.add(joints[vsel, 4 * s:4 * s + 4], joint_type, "VEC4", ARRAY_BUFFER)
        attrs[f"WEIGHTS_{s}"] = bb.add(weights[vsel, 4 * s:4 * s + 4], FLOAT, "VEC4", ARRAY_BUFFER)
    itype = USHORT if len(vsel) < 65536 else UINT
    prim = {"attributes": attrs, "mode": 4}
    if len(faces):
        prim["indices"] = bb.add(faces.reshape(-1, 1), itype, "SCALAR", ELEMENT_ARRAY_BUFFER)
    return {"name": pname, "primitives": [prim]}


def check_writable(rig: Rig) -> None:
    """Raise ``ValueError`` unless ``rig`` makes a valid file: every value finite (in float32
    too), weights non-negative and normalised, bind matrices affine and accurately invertible.

    A rig that fails this is never written (no NaN or half-valid rig reaches a user).
    """
    rig.validate()  # mesh, skeleton (finite, non-singular bind), skin (finite, >= 0, rows sum to 1)
    sk, names = rig.skeleton, rig.skeleton.names
    bind = sk.bind_world
    not_affine = np.abs(bind[:, 3] - [0.0, 0.0, 0.0, 1.0]).max(axis=1) > 1e-9
    if not_affine.any():
        raise ValueError(f"joint {names[int(np.argmax(not_affine))]!r} has a bind matrix that is not affine")
    with np.errstate(all="ignore"):
        inv = np.linalg.inv(bind)
        # the translation column measured against the translation's size: it cancels to
        # rounding of that size (a body 2e10 units tall left 2e-6 in it, however invertible)
        scale = np.maximum(1.0, np.linalg.norm(bind[:, :3, 3], axis=1))[:, None, None]
        err = (np.abs(inv @ bind - np.eye(4)) / np.concatenate(
            [np.ones_like(bind[:, :, :3]), np.broadcast_to(scale, (len(bind), 4, 1))], axis=2)).max(axis=(1, 2))
    bad = ~np.isfinite(err) | (err > 1e-6)
    if bad.any():
        raise ValueError(f"joint {names[int(np.argmax(bad))]!r} has a bind matrix that cannot be inverted accurately")
    rest = sk.rest_world()
    if not np.isfinite(rest).all():
        raise ValueError("the rest pose has NaN or infinite joint transforms")
    big = float(np.finfo(np.float32).max) / 16  # headroom: products of stored values stay finite
    for what, arr in (("vertex positions", rig.mesh.vertices), ("joint translations", sk.translation),
                      ("inverse bind matrices", inv), ("rest pose", rest)):
        if np.abs(arr).max(initial=0.0) >= big:
            raise ValueError(f"{what} are too large for a glTF file (32-bit floats)")


def write_rig(path, rig: Rig, max_influences: int | None = 8, extras: dict | None = None, inputs=(),
              animation=None, clips=()) -> None:
    """Write ``rig`` to ``path`` (.glb, or .gltf with the buffer embedded), atomically.

    ``inputs`` are paths the output must not overwrite.  The rig is checked first
    (:func:`check_writable`); an invalid rig raises ``ValueError`` and nothing is written.
    ``animation``: an optional :class:`~asetransfer.animation.Animation` of the rig's joints;
    ``clips``: ``(name, Animation)`` more, named.
    """
    check_writable(rig)
    doc, blob = rig_to_document(rig, max_influences, extras, animation, clips)
    ext = os.path.splitext(os.fspath(path))[1].lower()
    data = pack_gltf(doc, blob) if ext == ".gltf" else pack_glb(doc, blob)
    atomic_write(path, data, inputs=inputs)
