"""Write a rig over its target's look: the target's own glTF document with the transferred
skeleton and skin added, everything else carried over untouched.

Carried as the target had it: materials (with their extensions), textures, samplers,
images, every vertex attribute (``TEXCOORD_n``, ``COLOR_n``, ``NORMAL``, ``TANGENT``),
morph targets with their names and default weights, nodes (names, hierarchy, transforms,
extras), cameras, lights, other meshes, animations, a VRM's declarations (its humanoid
then names the new joints: :mod:`.vrm`).  Added: one node per joint at the
scene's root, one skin, ``JOINTS_n``/``WEIGHTS_n`` on every primitive the transfer
rigged, and the rig's blend shapes after the target's own morph targets on each of those
primitives (:mod:`.gltf_shapes`); a skin those meshes had is replaced (a warning says so).

glTF ignores the transform of a skinned mesh's node ("Only the joint transforms are
applied to the skinned mesh; the transform of the skinned mesh node MUST be ignored",
glTF 2.0 §3.7.3.1): a skinned vertex is in the skin's bind space, here the target's
world space.  A primitive whose node placed it (a static mesh under a moved, turned or
scaled node) therefore gets its positions as the rig has them, its normals, tangents and
morph-target offsets turned the same way (and its triangles' winding reversed under a
mirroring node); a primitive already in that space keeps its own arrays, byte for byte.

Images: in a .glb every image is in the file's buffer; in a .gltf an image the target
held as a file beside it is embedded as a ``data:`` URI (the output is one file, so
nothing beside it is overwritten or left behind).
"""
from __future__ import annotations

import base64
import copy
import logging
import os

import numpy as np

from ..errors import InputError
from ..model.look import Look, LookPiece
from ..model.rig import Rig
from .assembly import unique_names
from .atomic import atomic_write
from .glb import (ARRAY_BUFFER, ELEMENT_ARRAY_BUFFER, FLOAT, UINT, Accessors, BufferBuilder, image_mime, pack_glb,
                  pack_gltf, read_beside)
from .gltf_document import triangles
from .gltf_animation import animation_to_gltf
from .gltf_shapes import add_morph_targets
from .gltf_write import GENERATOR, check_writable, influence_slots, joint_component_type, skeleton_skin
from .vrm import follow_mesh_copies, is_vrm, rehome_humanoid

log = logging.getLogger("asetransfer")


def write_rig_over(look: Look, rig: Rig, path, max_influences: int | None = None, inputs=(), clips=()) -> None:
    """Write ``rig`` to ``path`` (.glb, or .gltf with everything embedded) over ``look``, the
    target's document, atomically; ``inputs`` are never overwritten; ``clips``: ``(name,
    Animation)`` of the rig's joints, added after the target's own animations.

    ``rig.mesh`` must be the mesh the look was read with (its vertices are the look's
    pieces').  What the output cannot hold is named in one warning line.  Raises
    ``ValueError`` for a rig :func:`~.gltf_write.check_writable` refuses.
    """
    check_writable(rig)
    binary = os.path.splitext(os.fspath(path))[1].lower() != ".gltf"
    doc, blob, lost = rig_over_document(look, rig, max_influences, binary=binary, clips=clips)
    if lost:
        log.warning("%s: not carried to %s: %s", look.path, os.path.basename(os.fspath(path)), "; ".join(lost))
    atomic_write(path, pack_glb(doc, blob) if binary else pack_gltf(doc, blob), inputs=inputs)


def rig_over_document(look: Look, rig: Rig, max_influences: int | None = None, binary: bool = True,
                      clips=()) -> tuple:
    """The glTF document of ``rig`` over ``look`` (module docstring).

    Parameters
    ----------
    look : the target's :class:`~asetransfer.model.look.Look`; ``rig.mesh`` its mesh.
    max_influences : joints per vertex (None: the skin's own, at most 8).
    binary : images from files go into the buffer (.glb), else into ``data:`` URIs (.gltf).
    clips : ``(name, Animation)`` of the rig's joints, written as animations.

    Returns
    -------
    doc : dict, blob : bytes (buffer 0), lost : what was not carried, one short phrase each.
    """
    if len(look.pieces) and max(int(p.vertices.max(initial=-1)) for p in look.pieces) >= rig.mesh.n_vertices:
        raise ValueError("the look does not belong to the rig's mesh (it refers to vertices the mesh does not have)")
    doc = copy.deepcopy(look.document)
    bb = _one_buffer(doc, look.buffers)
    lost = list(look.lost) + _embed_images(doc, bb, look.path, binary)
    nodes = doc.setdefault("nodes", [])
    if is_vrm(doc):  # its humanoid names the new joints, appended next
        index = {name: j for j, name in enumerate(rig.skeleton.names)}
        lost += rehome_humanoid(doc, {b: index[j] for b, j in rig.skeleton.humanoid_bones.items()}, len(nodes))
    joint_nodes, skin, roots = skeleton_skin(bb, rig.skeleton, first=len(nodes))
    for name, animation in clips:
        named = _unused_animation_name(doc, name, look.path)
        doc.setdefault("animations", []).append(animation_to_gltf(bb, rig.skeleton, animation, named, len(nodes)))
    nodes.extend(joint_nodes)
    _add_to_scene(doc, roots, first_new=len(nodes) - len(joint_nodes))
    skinned = sorted({p.node for p in look.pieces})
    _replace_skins(doc, skin, skinned, look.path)
    slots = influence_slots(rig, max_influences)
    skin_lost, copies = _skin_meshes(doc, bb, Accessors(look.path, look.document, look.buffers), look.pieces, rig, slots)
    lost += skin_lost
    if is_vrm(doc):  # a VRM 0.x names meshes by index: its binds and annotations follow the copies
        follow_mesh_copies(doc, copies)
    doc["asset"] = dict(doc.get("asset", {}), generator=GENERATOR)
    doc["accessors"], doc["bufferViews"] = bb.accessors, bb.views
    doc["buffers"] = [{"byteLength": len(bb.blob)}]
    return doc, bytes(bb.blob), lost


def _unused_animation_name(doc: dict, name: str, path) -> str:
    """``name``, or ``"name (source)"`` (then ``.001``...: :func:`~.assembly.unique_names`) when
    the target's document already has an animation of that name: its own clips stay on its old joint
    nodes, and an engine asked for the clip by name would play the first one, which moves
    no joint of the new skin (Mixamo characters exported by Blender all name theirs
    ``Armature|mixamo.com|Layer0``)."""
    taken = [a.get("name") for a in doc.get("animations", []) if isinstance(a, dict)]
    if name not in taken:
        return name
    named = unique_names(taken + [f"{name} (source)"])[-1]
    log.warning("%s: the source's clip %r is written as %r: the target already has an animation of that name",
                path, name, named)
    return named


def _one_buffer(doc: dict, buffers: list) -> BufferBuilder:
    """A :class:`~.glb.BufferBuilder` holding the document's buffers one after the other
    (16-byte aligned, so every view keeps its alignment), its views and accessors moved onto
    it; the builder appends after them."""
    bb = BufferBuilder()
    starts = []
    for buf, data in zip(doc.get("buffers", []), buffers):
        bb.blob.extend(b"\x00" * (-len(bb.blob) % 16))
        starts.append(len(bb.blob))
        bb.blob.extend(data[:buf.get("byteLength", len(data))])
    bb.views = [dict(v, buffer=0, byteOffset=starts[v["buffer"]] + v.get("byteOffset", 0))
                for v in doc.get("bufferViews", [])]
    bb.accessors = doc.get("accessors", [])
    return bb


def _embed_images(doc: dict, bb: BufferBuilder, path, binary: bool) -> list:
    """Images the document names by a file beside it, embedded (in place): into ``bb`` for a
    binary output, as ``data:`` URIs otherwise.  Returns the images that could not be read
    (they keep their URI, which the output's folder may not hold)."""
    lost = []
    for i, image in enumerate(doc.get("images", [])):
        uri = image.get("uri")
        if not isinstance(uri, str) or uri.startswith("data:"):
            continue
        try:
            data = read_beside(path, uri, f"image {i} file {uri!r}", "keep textures next to the .gltf")
        except InputError as e:
            lost.append(f"image {i} ({e.message})")
            continue
        mime = image.get("mimeType") or image_mime(data)
        if mime is None:
            lost.append(f"image {i} ({uri!r}: not a PNG, JPEG, WebP or KTX2 image)")
            continue
        del image["uri"]
        image["mimeType"] = mime
        if binary:
            image["bufferView"] = bb.add_bytes(data)
        else:
            image["uri"] = f"data:{mime};base64," + base64.b64encode(data).decode("ascii")
    return lost


def _add_to_scene(doc: dict, roots: list, first_new: int) -> None:
    """Put the joint ``roots`` in the default scene (made of every old root node when the
    document has no scene: a reader shows all nodes then)."""
    scenes = doc.setdefault("scenes", [])
    if not scenes:
        children = {c for n in doc["nodes"][:first_new] for c in n.get("children", [])}
        scenes.append({"nodes": [i for i in range(first_new) if i not in children]})
        doc["scene"] = 0
    scene = scenes[doc.get("scene", 0)]
    scene["nodes"] = list(scene.get("nodes", [])) + roots


def _replace_skins(doc: dict, skin: dict, skinned: list, path) -> None:
    """Bind the ``skinned`` nodes to ``skin``, appended to the document's skins; a skin no
    other node uses any more is removed (with a warning), the rest renumbered."""
    nodes, old = doc["nodes"], doc.get("skins", [])
    replaced = sorted({nodes[n]["skin"] for n in skinned if "skin" in nodes[n]})
    for n in skinned:
        nodes[n]["skin"] = -1
    used = sorted({n["skin"] for n in nodes if n.get("skin", -1) >= 0})
    renumber = {s: k for k, s in enumerate(used)}
    for n in nodes:
        if "skin" in n:
            n["skin"] = renumber.get(n["skin"], len(used))
    doc["skins"] = [old[s] for s in used] + [skin]
    gone = [s for s in replaced if s not in renumber]
    if gone:
        joints = sum(len(old[s].get("joints", [])) for s in gone)
        log.warning("%s: the target's skin (%d joints) is replaced by the transferred one; its joint nodes "
                    "are kept as plain nodes", path, joints)


def _skin_meshes(doc: dict, bb: BufferBuilder, acc: Accessors, pieces: list, rig: Rig, slots: tuple) -> tuple:
    """Add the skin's attributes to every primitive of the ``pieces`` (in place), each mesh
    node given a mesh of its own when others share it; primitives of those meshes that no
    piece holds (points, lines) cannot be skinned and are removed.  Returns what was removed,
    and {mesh index: [the indices of its copies]}."""
    meshes, nodes = doc.setdefault("meshes", []), doc["nodes"]
    skinned = sorted({p.node for p in pieces})
    unskinned_users = {n.get("mesh") for i, n in enumerate(nodes) if i not in skinned}
    joint_type = joint_component_type(rig.skeleton)
    moved, lost, claimed, copies = {}, [], set(), {}
    for node in skinned:
        mi = nodes[node]["mesh"]
        if mi in claimed or mi in unskinned_users:  # an instance placed elsewhere: its own positions
            meshes.append(copy.deepcopy(meshes[mi]))
            nodes[node]["mesh"] = len(meshes) - 1
            copies.setdefault(mi, []).append(len(meshes) - 1)
        claimed.add(mi)
        mesh = meshes[nodes[node]["mesh"]]
        kept, groups, bases = set(), [], []
        for piece in (p for p in pieces if p.node == node):
            influences = _influence_attributes(bb, slots, piece.vertices, joint_type)
            bases.append(_normal_frames(acc, mesh["primitives"][piece.primitives[0]], piece.placement))
            for k in piece.primitives:
                prim = mesh["primitives"][k]
                _move_primitive(prim, bb, acc, piece, rig, moved)
                attrs = {a: v for a, v in prim["attributes"].items() if not a.startswith(("JOINTS_", "WEIGHTS_"))}
                prim["attributes"] = {**attrs, **influences}
                kept.add(k)
            groups.append((piece.vertices, [mesh["primitives"][k] for k in piece.primitives]))
        lost += [f"mesh {mi} primitive {k} (mode {prim.get('mode', 4)}: not triangles, cannot be skinned)"
                 for k, prim in enumerate(mesh["primitives"]) if k not in kept]
        mesh["primitives"] = [prim for k, prim in enumerate(mesh["primitives"]) if k in kept]
        add_morph_targets(bb, mesh, groups, rig.shapes, with_normals=True, bases=bases)  # after the target's own
        if not nodes[node].get("children"):  # a skinned mesh ignores its node's transform (validators warn
            for key in ("translation", "rotation", "scale", "matrix"):  # on one): gltfpack's dequantisation
                nodes[node].pop(key, None)
        for user in (n for n in nodes if n.get("mesh") == nodes[node]["mesh"] and isinstance(n.get("weights"), list)):
            user["weights"] = list(user["weights"]) + [0.0] * (len(mesh.get("weights", [])) - len(user["weights"]))
    return lost, copies


def _normal_frames(acc: Accessors, prim: dict, placement: np.ndarray):
    """A primitive's (n, 3) unit normals and tangents as written (turned by its placement),
    None unless it has both: the base of the carried shapes' TANGENT offsets."""
    attrs = prim["attributes"]
    if "NORMAL" not in attrs or "TANGENT" not in attrs:
        return None
    normals = turned_normals(placement, acc.read(attrs["NORMAL"]))
    return normals, turned_tangents(placement, acc.read(attrs["TANGENT"]))[:, :3]


def _influence_attributes(bb: BufferBuilder, slots: tuple, vertices: np.ndarray, joint_type: int) -> dict:
    """``JOINTS_s``/``WEIGHTS_s`` accessors (added to ``bb``) of the mesh ``vertices`` (n,),
    from the rig's (V, k) influence ``slots``."""
    joints, weights = slots
    out = {}
    for s in range(joints.shape[1] // 4):
        out[f"JOINTS_{s}"] = bb.add(joints[vertices, 4 * s:4 * s + 4], joint_type, "VEC4", ARRAY_BUFFER)
        out[f"WEIGHTS_{s}"] = bb.add(weights[vertices, 4 * s:4 * s + 4], FLOAT, "VEC4", ARRAY_BUFFER)
    return out


def _move_primitive(prim: dict, bb: BufferBuilder, acc: Accessors, piece: LookPiece, rig: Rig,
                    moved: dict) -> None:
    """Bring a primitive placed by ``piece.placement`` into the skin's space (in place): the
    rig's positions, normals and tangents turned, morph-target offsets turned, winding
    reversed under a mirroring placement.  Nothing changes for an identity placement.

    ``moved``: (accessor, what, placement) -> new accessor, so arrays shared stay shared.
    """
    m = piece.placement
    if np.array_equal(m, np.eye(4)):
        return
    key = m.tobytes()
    attrs = prim["attributes"]
    vertex_array = attrs["POSITION"]

    def once(index, what, make):
        if (index, what, key) not in moved:
            moved[(index, what, key)] = make()
        return moved[(index, what, key)]

    base_normals = acc.read(attrs["NORMAL"]) if "NORMAL" in attrs else None
    base_tangents = acc.read(attrs["TANGENT"])[:, :3] if "TANGENT" in attrs else None
    attrs["POSITION"] = once(attrs["POSITION"], "position", lambda: bb.add(
        rig.mesh.vertices[piece.vertices].astype(np.float32), FLOAT, "VEC3", ARRAY_BUFFER, minmax=True))
    if "NORMAL" in attrs:
        attrs["NORMAL"] = once(attrs["NORMAL"], "normal", lambda: bb.add(
            turned_normals(m, base_normals).astype(np.float32), FLOAT, "VEC3", ARRAY_BUFFER))
    if "TANGENT" in attrs:
        attrs["TANGENT"] = once(attrs["TANGENT"], "tangent", lambda: bb.add(
            turned_tangents(m, acc.read(attrs["TANGENT"])).astype(np.float32), FLOAT, "VEC4", ARRAY_BUFFER))
    for target in prim.get("targets", []):
        for name, index in [(a, i) for a, i in target.items() if a in ("POSITION", "NORMAL", "TANGENT")]:
            offsets = acc.read(index)
            target[name] = once(index, name, lambda: bb.add(
                turned_offsets(m, name, offsets, base_normals, base_tangents).astype(np.float32),
                FLOAT, "VEC3", ARRAY_BUFFER, minmax=name == "POSITION"))
    if np.linalg.det(m[:3, :3]) < 0:  # a mirroring node reversed the winding; skinning does not
        mode = prim.get("mode", 4)
        idx = acc.read(prim["indices"]).ravel().astype(np.int64) if prim.get("indices") is not None \
            else np.arange(len(piece.vertices))
        prim["indices"] = once((prim.get("indices"), vertex_array), f"reversed {mode}", lambda: bb.add(
            triangles(idx, mode)[:, ::-1].astype(np.uint32).reshape(-1, 1), UINT, "SCALAR", ELEMENT_ARRAY_BUFFER))
        prim["mode"] = 4


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-30)


def turned_normals(m: np.ndarray, normals: np.ndarray) -> np.ndarray:
    """(n, 3) unit normals under the (4, 4) affine ``m``: ``n' = normalize(A^-T n)``, A its 3x3 part."""
    return _unit(normals @ np.linalg.inv(m[:3, :3]))


def turned_tangents(m: np.ndarray, tangents: np.ndarray) -> np.ndarray:
    """(n, 4) glTF tangents under ``m``: ``xyz' = normalize(A xyz)``, the handedness ``w``
    flipped under a mirroring ``A`` (det < 0)."""
    xyz = _unit(tangents[:, :3] @ m[:3, :3].T)
    return np.concatenate([xyz, tangents[:, 3:4] * np.sign(np.linalg.det(m[:3, :3]))], axis=1)


def turned_offsets(m: np.ndarray, name: str, offsets: np.ndarray, normals, tangents) -> np.ndarray:
    """(n, 3) morph-target offsets of attribute ``name`` under ``m``.

    POSITION offsets are vectors: ``d' = A d``.  NORMAL (TANGENT) offsets move a unit
    vector ``b`` to ``b + d``; both ends are turned as normals (tangents) are and
    ``d' = turn(b + d) - turn(b)``, the offset the turned base needs.  Without the base
    attribute the offset is turned as a vector.
    """
    a = m[:3, :3]
    base = normals if name == "NORMAL" else tangents if name == "TANGENT" else None
    if name == "POSITION" or base is None:
        return offsets @ a.T
    turn = (lambda v: _unit(v @ np.linalg.inv(a))) if name == "NORMAL" else (lambda v: _unit(v @ a.T))
    return turn(base + offsets) - turn(base)


def look_contents(look: Look, carried=()) -> list:
    """What ``look`` holds beyond positions and triangles, one short phrase each (empty for a
    plain mesh): materials, images, vertex attributes (but those ``carried`` by the writer),
    morph targets, the other nodes."""
    doc = look.document
    prims = [doc["meshes"][p.mesh]["primitives"][k] for p in look.pieces for k in p.primitives]
    attributes = sorted({a for prim in prims for a in prim.get("attributes", {})
                         if a != "POSITION" and not a.startswith(("JOINTS_", "WEIGHTS_")) and a not in carried})
    targets = max((len(prim.get("targets", [])) for prim in prims), default=0)
    placed = {p.node for p in look.pieces}
    others = [i for i, n in enumerate(doc.get("nodes", [])) if i not in placed]
    counts = [(len(doc.get("materials", [])), "material"), (len(doc.get("images", [])), "image"),
              (targets, "morph target"), (len(others), "other node"), (len(doc.get("animations", [])), "animation")]
    out = [f"{n} {what}{'s' if n > 1 else ''}" for n, what in counts if n]
    if attributes:
        out.insert(0, "vertex attributes " + " ".join(attributes))
    return out + list(look.lost)
