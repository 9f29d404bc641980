"""Render the screenshots of docs/blender.md headless (Blender as a module, Workbench or Cycles).

    python blender/render_screenshots.py OUT_DIR      # an interpreter with bpy and asetransfer

A TD's session on the bundled fixtures: the source imported from glTF, the heavy target
standing beside it, Find markers, Transfer rig, then the left arm raised.  Renders do
not draw empties or armatures, so this script adds mesh stand-ins for them (spheres
at the marker empties, octahedra for the bones), for the pictures only.
"""
from __future__ import annotations

import math
import os
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bpy  # noqa: E402
import numpy as np  # noqa: E402
from mathutils import Matrix, Vector  # noqa: E402

import asetransfer as at  # noqa: E402
import asetransfer_blender  # noqa: E402
from asetransfer_blender import convert, empties, scene  # noqa: E402

FIXTURES = HERE.parent / "fixtures"


def stand_in(name: str, vertices, faces, color):
    data = bpy.data.meshes.new(name)
    data.from_pydata([tuple(v) for v in vertices], [], [tuple(f) for f in faces])
    obj = bpy.data.objects.new(name, data)
    obj.color = color
    bpy.context.scene.collection.objects.link(obj)
    return obj


def marker_spheres(collection: str, color, radius: float):
    """One small icosphere per marker empty (at its current, possibly moved, place)."""
    for empty in bpy.data.collections[collection].objects:
        bpy.ops.mesh.primitive_ico_sphere_add(subdivisions=2, radius=radius, location=empty.matrix_world.translation)
        bpy.context.active_object.color = color


def bone_octahedra(armature, color):
    """Bones drawn the way Blender's viewport draws them, as octahedra from head to tail."""
    verts, faces = [], []
    depsgraph = bpy.context.evaluated_depsgraph_get()
    arm = armature.evaluated_get(depsgraph)
    for pb in arm.pose.bones:
        m = armature.matrix_world @ pb.matrix
        length = pb.bone.length
        w = 0.1 * length
        local = [(0, 0, 0), (w, w, 0), (-w, w, 0), (-w, w, 0), (w, w, 0), (0, length, 0)]
        local[1:5] = [(w, w, w), (-w, w, w), (-w, w, -w), (w, w, -w)]
        base = len(verts)
        verts += [m @ Vector(p) for p in local]
        for a, b in ((1, 2), (2, 3), (3, 4), (4, 1)):
            faces += [(base, base + a, base + b), (base + 5, base + b, base + a)]
    return stand_in(f"{armature.name} bones", verts, faces, color)


def camera_on(objects, margin: float = 1.15):
    """An orthographic front camera (looking along +Y) framing the objects."""
    pts = np.array([list(o.matrix_world @ Vector(c)) for o in objects for c in o.bound_box])
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    cam = bpy.data.objects.get("camera") or bpy.data.objects.new("camera", bpy.data.cameras.new("camera"))
    if cam.name not in bpy.context.scene.collection.objects:
        bpy.context.scene.collection.objects.link(cam)
    cam.data.type = "ORTHO"
    render = bpy.context.scene.render
    aspect = render.resolution_x / render.resolution_y
    cam.data.ortho_scale = margin * max(hi[0] - lo[0], (hi[2] - lo[2]) * aspect)
    cam.location = ((lo[0] + hi[0]) / 2, lo[1] - 10.0, (lo[2] + hi[2]) / 2)
    cam.rotation_euler = (math.pi / 2, 0.0, 0.0)
    bpy.context.scene.camera = cam


def render(path: pathlib.Path, visible: list):
    for obj in bpy.data.objects:
        obj.hide_render = obj not in visible and obj.type != "CAMERA"
    camera_on([o for o in visible if o.type == "MESH"])
    bpy.context.scene.render.filepath = str(path)
    bpy.ops.render.render(write_still=True)


def setup_render():
    s = bpy.context.scene
    s.render.engine = "BLENDER_WORKBENCH"
    s.render.resolution_x, s.render.resolution_y = 720, 450
    s.render.image_settings.file_format = "PNG"
    s.render.image_settings.color_mode = "RGB"
    s.render.image_settings.compression = 100
    s.display.shading.light = "STUDIO"
    s.display.shading.color_type = "OBJECT"
    s.display.shading.show_xray = False
    s.world = s.world or bpy.data.worlds.new("world")
    s.world.color = (1.0, 1.0, 1.0)


def session():
    """The TD's steps, through the add-on's operators; returns what the pictures show."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.import_scene.gltf(filepath=str(FIXTURES / "source.glb"))
    armature = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    target_mesh = at.load_mesh(str(FIXTURES / "target_heavy.ply"))
    data = bpy.data.meshes.new("heavy")
    data.from_pydata(convert.from_asetransfer(target_mesh.vertices, 1.0).tolist(), [], target_mesh.faces.tolist())
    target = bpy.data.objects.new("heavy", data)
    target.matrix_world = Matrix.Translation((1.6, 0.0, 0.0))  # beside the source
    bpy.context.scene.collection.objects.link(target)
    settings = bpy.context.scene.asetransfer
    settings.source, settings.target = armature, target
    assert bpy.ops.asetransfer.find_markers() == {"FINISHED"}
    assert bpy.ops.asetransfer.transfer() == {"FINISHED"}
    return armature, target


def main(out: pathlib.Path) -> None:
    asetransfer_blender.register()
    armature, target = session()
    setup_render()
    grey, skin = (0.8, 0.8, 0.8, 1.0), (0.85, 0.75, 0.68, 1.0)
    source_meshes = scene.skinned_meshes(armature)
    for obj in source_meshes + [target]:
        obj.color = grey
    before = set(bpy.data.objects)
    marker_spheres(empties.SOURCE_MARKERS, (0.1, 0.6, 0.2, 1.0), 0.018)
    marker_spheres(empties.TARGET_MARKERS, (0.9, 0.4, 0.0, 1.0), 0.018)
    spheres = list(set(bpy.data.objects) - before)
    render(out / "blender_markers.png", source_meshes + [target] + spheres)
    rig, copy = bpy.data.objects["heavy rig"], bpy.data.objects["heavy rigged"]
    copy.color = skin
    bpy.context.scene.display.shading.show_xray = True
    bpy.context.scene.display.shading.xray_alpha = 0.35
    render(out / "blender_rig.png", [copy, bone_octahedra(rig, (0.1, 0.3, 0.9, 1.0))])
    bpy.context.scene.display.shading.show_xray = False
    for name, angle in (("upperarm.L", (0.0, 0.0, -1.0)), ("forearm.L", (0.0, 0.0, -0.6)),
                        ("thigh.R", (0.5, 0.0, 0.0))):
        if name in rig.pose.bones:
            rig.pose.bones[name].rotation_mode = "XYZ"
            rig.pose.bones[name].rotation_euler = angle
    render(out / "blender_posed.png", [copy])


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1]).resolve())
    sys.stdout.flush()
    os._exit(0)
