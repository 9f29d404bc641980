"""Reading characters from a Blender scene and building the transferred rig in it.

Thin on purpose: every computation is in :mod:`.convert` (plain arrays); this module
only moves arrays in and out of ``bpy`` data.  Nothing here changes the source or
target objects; whatever a function creates it records in a :class:`Created`, so a
failure can remove it all.
"""
from __future__ import annotations

import logging
from contextlib import contextmanager

import bpy
import numpy as np
from mathutils import Matrix

from asetransfer.errors import InputError
from asetransfer.model.rig import Rig

from . import convert

log = logging.getLogger("asetransfer")

def unit_scale(scene) -> float:
    """Metres per Blender unit."""
    return float(scene.unit_settings.scale_length) or 1.0


def matrix_array(m) -> np.ndarray:
    return np.array(m, dtype=np.float64)


def skinned_meshes(armature) -> list:
    """Mesh objects deformed by ``armature`` (an Armature modifier on it, or armature parenting), by name."""
    found = []
    for obj in bpy.data.objects:
        if obj.type != "MESH":
            continue
        by_modifier = any(m.type == "ARMATURE" and m.object == armature for m in obj.modifiers)
        by_parent = obj.parent == armature and obj.parent_type == "ARMATURE"
        if by_modifier or by_parent:
            found.append(obj)
    return sorted(found, key=lambda o: o.name)


def target_meshes(target, with_children: bool) -> list:
    """The target object and, if asked, the mesh objects below it in the hierarchy."""
    if target is None or target.type != "MESH":
        raise InputError(None, "pick a target mesh object in the asetransfer panel")
    kids = [o for o in target.children_recursive if o.type == "MESH"] if with_children else []
    return [target] + sorted(kids, key=lambda o: o.name)


@contextmanager
def evaluated_mesh(obj, depsgraph, apply_modifiers: bool):
    """The object's mesh data: as stored, or with its modifiers applied (evaluated depsgraph)."""
    if not apply_modifiers:
        yield obj.data
        return
    evaluated = obj.evaluated_get(depsgraph)
    try:
        yield evaluated.to_mesh(preserve_all_data_layers=True, depsgraph=depsgraph)
    finally:
        evaluated.to_mesh_clear()


@contextmanager
def modifiers_hidden(objects, hidden):
    """The objects' modifiers that ``hidden(modifier)`` picks hidden in the viewport while the
    block evaluates them, then restored as they were."""
    saved = [(m, m.show_viewport) for o in objects for m in o.modifiers if hidden(m)]
    try:
        for m, _ in saved:
            m.show_viewport = False
        yield
    finally:
        for m, shown in saved:
            m.show_viewport = shown


def armature_modifiers_off(objects):
    """Armature modifiers hidden: the bind shape."""
    return modifiers_hidden(objects, lambda m: m.type == "ARMATURE")


def deforming_only(objects):
    """Every modifier but the Armature modifiers hidden: the mesh as modelled, posed by its armature."""
    return modifiers_hidden(objects, lambda m: m.type != "ARMATURE")


def displayed_vertices(context, obj) -> np.ndarray:
    """(N, 3) world positions (Blender frame) of the object's vertices as the viewport shows them."""
    evaluated = obj.evaluated_get(context.evaluated_depsgraph_get())
    mesh = evaluated.to_mesh()
    try:
        co = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
        mesh.vertices.foreach_get("co", co)
        return convert.transform_points(matrix_array(evaluated.matrix_world), co.reshape(-1, 3))
    finally:
        evaluated.to_mesh_clear()


def shown_vertices(context, objects: list, mesh) -> np.ndarray:
    """(N, 3) the vertices of ``mesh`` (the objects as the transfer reads them, one part
    each) as the viewport shows them, in the asetransfer frame.

    An object's shown vertices are its evaluated mesh's (modifiers, shape keys, the
    armature's current pose) when that mesh has as many vertices as the transfer's;
    otherwise (a Subdivision the transfer does not apply) its mesh as modelled posed by
    its Armature modifiers alone; otherwise the transfer's own.
    """
    scale, shown = unit_scale(context.scene), mesh.vertices.copy()
    for k, obj in enumerate(objects):
        rows = np.flatnonzero(mesh.vertex_part == k)
        world = displayed_vertices(context, obj)
        if len(world) != len(rows):
            with deforming_only([obj]):
                world = displayed_vertices(context, obj)
            context.evaluated_depsgraph_get()  # the restored modifiers evaluated again
        if len(world) == len(rows):
            shown[rows] = convert.to_asetransfer(world, scale)
    return shown


def mesh_arrays(mesh) -> tuple:
    """(N, 3) float64 local vertex positions and (F, 3) triangles (Blender's own triangulation)."""
    co = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
    mesh.vertices.foreach_get("co", co)
    mesh.calc_loop_triangles()
    tris = np.empty(len(mesh.loop_triangles) * 3, dtype=np.int32)
    mesh.loop_triangles.foreach_get("vertices", tris)
    return co.reshape(-1, 3).astype(np.float64), tris.reshape(-1, 3).astype(np.int64)


def world_piece(obj, mesh, scale: float) -> tuple:
    """``(name, vertices, faces)`` of one object in the asetransfer frame."""
    local, faces = mesh_arrays(mesh)
    if len(faces) == 0:
        raise InputError(obj.name, "the mesh has no faces")
    world = convert.transform_points(matrix_array(obj.matrix_world), local)
    return obj.name, convert.to_asetransfer(world, scale), faces


def group_memberships(obj, mesh, bone_index: dict, offset: int) -> tuple:
    """(rows, joints, weights) of the mesh's vertex groups that are named like a bone."""
    to_joint = {g.index: bone_index.get(g.name, -1) for g in obj.vertex_groups}
    rows, joints, weights = [], [], []
    for v in mesh.vertices:
        for g in v.groups:
            j = to_joint.get(g.group, -1)
            if j >= 0 and g.weight > 0:
                rows.append(v.index + offset)
                joints.append(j)
                weights.append(g.weight)
    return rows, joints, weights


def read_target(context, objects: list, apply_modifiers: bool):
    """The target objects as one asetransfer Mesh (a part per object)."""
    depsgraph = context.evaluated_depsgraph_get()
    scale, pieces = unit_scale(context.scene), []
    for obj in objects:
        with evaluated_mesh(obj, depsgraph, apply_modifiers) as mesh:
            pieces.append(world_piece(obj, mesh, scale))
    try:
        return convert.joined_mesh(pieces)
    except ValueError as e:
        raise InputError(objects[0].name, str(e)) from None


def read_skeleton(armature, scale: float):
    """Names, parents and asetransfer-frame joint frames of the armature's bones (rest pose)."""
    bones = list(armature.data.bones)
    names = [b.name for b in bones]
    index = {n: i for i, n in enumerate(names)}
    parents = [index[b.parent.name] if b.parent else -1 for b in bones]
    rest = np.array([matrix_array(b.matrix_local) for b in bones])
    frames = convert.joint_frames(rest, matrix_array(armature.matrix_world), scale)
    return convert.skeleton_from_frames(names, parents, frames)


def read_source(context, armature, apply_modifiers: bool) -> Rig:
    """The source armature and its skinned meshes as an asetransfer Rig, in the asetransfer frame."""
    if armature is None or armature.type != "ARMATURE":
        raise InputError(None, "pick a source armature in the asetransfer panel")
    if len(armature.data.bones) == 0:
        raise InputError(armature.name, "the armature has no bones")
    objects = skinned_meshes(armature)
    if not objects:
        raise InputError(armature.name, "no mesh is deformed by this armature (Armature modifier or parent)")
    scale = unit_scale(context.scene)
    skeleton = read_skeleton(armature, scale)
    bone_index = {n: i for i, n in enumerate(skeleton.names)}
    pieces, keys, rows, joints, weights, offset = [], [], [], [], [], 0
    with armature_modifiers_off(objects if apply_modifiers else []):
        depsgraph = context.evaluated_depsgraph_get()
        for obj in objects:
            with evaluated_mesh(obj, depsgraph, apply_modifiers) as mesh:
                pieces.append(world_piece(obj, mesh, scale))
                r, j, w = group_memberships(obj, mesh, bone_index, offset)
            keys.append(shape_keys(obj, len(pieces[-1][1]), scale))
            rows, joints, weights, offset = rows + r, joints + j, weights + w, offset + len(pieces[-1][1])
    try:
        mesh = convert.joined_mesh(pieces)
        skin, _ = convert.skin_from_groups(np.array(rows, np.int64), np.array(joints, np.int64),
                                           np.array(weights), n_vertices=mesh.n_vertices,
                                           n_joints=skeleton.n_joints, fallback=int(skeleton.roots()[0]))
        starts = np.cumsum([0] + [len(v) for _, v, _ in pieces])
        return Rig(mesh, skeleton, skin, convert.joined_shapes(keys, starts))
    except ValueError as e:
        raise InputError(armature.name, str(e)) from None


def _key_points(block) -> np.ndarray:
    co = np.empty(len(block.data) * 3, dtype=np.float32)
    block.data.foreach_get("co", co)
    return co.reshape(-1, 3).astype(np.float64)


def shape_keys(obj, n_vertices: int, scale: float) -> list:
    """``(name, vertices, offsets, value)`` of each shape key of ``obj`` but its reference key:
    the vertices it moves from its relative key and their offsets in the asetransfer frame.
    None when the object's modifiers change its vertex count (keys then fit no vertex; a
    warning says so)."""
    data = obj.data.shape_keys
    if data is None or len(data.key_blocks) < 2:
        return []
    if len(data.reference_key.data) != n_vertices:
        log.warning("%s: its shape keys are not carried: its modifiers change its vertex count", obj.name)
        return []
    found = []
    for block in data.key_blocks:
        if block == data.reference_key:
            continue
        moved = _key_points(block) - _key_points(block.relative_key)
        rows = np.flatnonzero(np.abs(moved).max(axis=1) > 0.0)
        found.append((block.name, rows, convert.offsets_to_asetransfer(moved[rows], matrix_array(obj.matrix_world),
                                                                     scale), float(block.value)))
    return found


def add_shape_keys(copy, shapes, start: int, stop: int, scale: float) -> None:
    """The ``shapes`` that move vertices ``start..stop-1`` of the joined target as shape keys
    of ``copy`` (a reference key added when it has none); a key of the same name the target
    already has is kept and the source's not carried (the command line's rule), with a warning."""
    mine = [(s, (s.vertices >= start) & (s.vertices < stop)) for s in shapes]
    mine = [(s, inside) for s, inside in mine if inside.any()]
    if not mine:
        return
    if copy.data.shape_keys is None:
        copy.shape_key_add(name="Basis", from_mix=False)
    own = {block.name for block in copy.data.shape_keys.key_blocks}
    base = _key_points(copy.data.shape_keys.reference_key)
    matrix = matrix_array(copy.matrix_world)
    for shape, inside in mine:
        if shape.name in own:
            log.warning("%s has its own shape key %r: kept, the source's of that name not carried", copy.name,
                        shape.name)
            continue
        co = base.copy()
        co[shape.vertices[inside] - start] += convert.offsets_from_asetransfer(shape.positions[inside], matrix, scale)
        block = copy.shape_key_add(name=shape.name, from_mix=False)
        block.data.foreach_set("co", co.astype(np.float32).ravel())
        block.value = shape.weight


class Created:
    """Everything a build made (objects, data blocks, collections), removable in one call."""

    def __init__(self):
        self.ids = []

    def add(self, datablock):
        self.ids.append(datablock)
        return datablock

    def remove_all(self):
        """Remove what was created, newest first (objects before the data they use)."""
        for block in reversed(self.ids):
            try:
                kind = {bpy.types.Object: bpy.data.objects, bpy.types.Mesh: bpy.data.meshes,
                        bpy.types.Armature: bpy.data.armatures, bpy.types.Collection: bpy.data.collections}
                kind[type(block)].remove(block)
            except ReferenceError:  # already gone with its owner
                pass
        self.ids.clear()


def build_armature(context, created: Created, name: str, skeleton, scale: float):
    """An armature object at the origin whose bones have the joints' names, frames and hierarchy."""
    data = created.add(bpy.data.armatures.new(name))
    arm = created.add(bpy.data.objects.new(name, data))
    context.scene.collection.objects.link(arm)
    frames = convert.bone_frames(skeleton.bind_world, scale)
    size = float(np.ptp(frames[:, :3, 3], axis=0).max()) or 1.0
    lengths = convert.bone_lengths(frames[:, :3, 3], skeleton.parents, minimum=1e-3 * size)
    if bpy.context.object is not None and bpy.context.object.mode != "OBJECT":
        bpy.ops.object.mode_set(mode="OBJECT")
    context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="EDIT")
    try:
        edit = [data.edit_bones.new(n) for n in skeleton.names]
        for eb, frame, length in zip(edit, frames, lengths):
            eb.head, eb.tail = (0.0, 0.0, 0.0), (0.0, float(length), 0.0)
            eb.matrix = Matrix(frame.tolist())  # head, tail direction (+Y) and roll from the frame
        for eb, p in zip(edit, skeleton.parents):
            if p >= 0:
                eb.parent = edit[p]
    finally:
        bpy.ops.object.mode_set(mode="OBJECT")
    renamed = [b.name for b in data.bones if b.name not in set(skeleton.names)]
    if renamed:
        raise InputError(None, f"bone name {renamed[0]!r} was changed by Blender (longer than 63 bytes?)")
    return arm


def bound_copy(context, created: Created, *, original, armature, groups: list, bone_names, apply_modifiers: bool,
               depsgraph):
    """A copy of ``original`` (same place, materials, UVs) bound to ``armature``: one vertex
    group per bone holding ``groups[j] = (vertices, weights)``, an Armature modifier first.

    With ``apply_modifiers`` the copy is the evaluated mesh (its modifiers baked, as the
    weights were computed on it); otherwise the mesh data is copied and the original's
    other modifiers are kept after the Armature modifier.
    """
    if apply_modifiers:
        mesh = created.add(bpy.data.meshes.new_from_object(original.evaluated_get(depsgraph)))
        copy = created.add(bpy.data.objects.new(original.name + " rigged", mesh))
    else:
        copy = created.add(original.copy())
        copy.name = original.name + " rigged"
        copy.data = created.add(original.data.copy())
        for m in [m for m in copy.modifiers if m.type == "ARMATURE"]:
            copy.modifiers.remove(m)
    copy.vertex_groups.clear()  # the original's groups and their weights (stale for this rig)
    context.scene.collection.objects.link(copy)
    copy.parent = None
    copy.matrix_world = original.matrix_world.copy()
    for name, (vertices, weights) in zip(bone_names, groups):
        group = copy.vertex_groups.new(name=name)
        for v, w in zip(vertices.tolist(), weights.tolist()):
            group.add([v], w, "REPLACE")
    modifier = copy.modifiers.new("asetransfer", "ARMATURE")
    modifier.object = armature
    copy.modifiers.move(len(copy.modifiers) - 1, 0)  # deform first, as an Armature modifier expects
    world = copy.matrix_world.copy()
    copy.parent = armature  # the armature sits at the origin: the copy stays where the original is
    copy.matrix_world = world
    return copy


def build_result(context, rig, *, name: str, originals: list, apply_modifiers: bool, created: Created) -> list:
    """The transferred rig in the scene: an armature and a bound copy of every target object,
    with the rig's blend shapes as shape keys."""
    scale = unit_scale(context.scene)
    depsgraph = context.evaluated_depsgraph_get()
    armature = build_armature(context, created, name, rig.skeleton, scale)
    offsets = np.cumsum([0] + [int((rig.mesh.vertex_part == k).sum()) for k in range(len(rig.mesh.parts))])
    copies = []
    for k, original in enumerate(originals):
        groups = convert.vertex_groups(rig.skin, int(offsets[k]), int(offsets[k + 1]))
        copies.append(bound_copy(context, created, original=original, armature=armature, groups=groups,
                                 bone_names=rig.skeleton.names, apply_modifiers=apply_modifiers,
                                 depsgraph=depsgraph))
        add_shape_keys(copies[-1], rig.shapes, int(offsets[k]), int(offsets[k + 1]), scale)
    return [armature] + copies


def select_findings(context, objects: list, bones: list, target_vertices) -> None:
    """Point the TD at what a verdict concerns: the built armature selected and active with
    exactly the ``bones`` named selected, and in the bound copies exactly the vertices of
    ``target_vertices`` ((N,) bool over the joined target, or None: none) selected, for
    Pose and Edit mode to show."""
    armature, copies = objects[0], objects[1:]
    for bone in armature.data.bones:
        bone.select = bone.select_head = bone.select_tail = bone.name in bones
    offset = 0
    for copy in copies:
        n = len(copy.data.vertices)
        chosen = np.zeros(n, bool) if target_vertices is None else np.asarray(target_vertices[offset:offset + n])
        copy.data.vertices.foreach_set("select", chosen)
        offset += n
    for obj in context.view_layer.objects:
        if obj is not None:  # an object removed since the view layer was last synced
            obj.select_set(obj == armature)
    context.view_layer.objects.active = armature
