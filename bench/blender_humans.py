"""Humanoid characters rigged by Blender, not by us: run by an interpreter with ``bpy``.

    $ASETRANSFER_BLENDER_PYTHON bench/blender_humans.py OUT_DIR [NAME ...]

Each character is Rigify's human meta-rig (its bones less the face: 67 -- spine, neck,
head, shoulders, arms, palms and five fingers, breasts, pelvis, legs and heels; arms
~45 degrees down) with its bones stretched per body part, a body of metaballs along
the bones but the heels' (one closed volume, symmetric; the pelvis bones give it hips;
the thighs of ``heavy`` fuse down to the knees), decimated to ~20k vertices, and weights from Blender's own bone heat (*Parent
with Automatic Weights*), written as ``OUT_DIR/NAME.glb``.  Nothing here is our code's
output: the joints are Rigify's, the weights Blender's.  (Blender's Skin modifier was
tried first: its hulls came out asymmetric, a wrist open on one side, and bone heat
then weighted a forearm on one vertex in a hundred.)
"""
from __future__ import annotations

import json
import math
import os
import sys
import traceback

import bpy
import addon_utils
from mathutils import Vector

#: per character: bone-length and body-radius factors by body part.  ``neutral`` is the
#: meta-rig as Rigify ships it.
BODIES = {
    "neutral": {"length": {}, "girth": {}},
    "heavy": {"length": {}, "girth": {"trunk": 1.3, "arm": 1.3, "leg": 1.2, "hand": 1.1}},
    "tall": {"length": {"leg": 1.12, "arm": 1.08, "trunk": 1.05}, "girth": {"trunk": 0.88, "arm": 0.85, "leg": 0.85}},
    "stocky": {"length": {"leg": 0.82, "arm": 0.9, "neck": 0.7}, "girth": {"trunk": 1.15, "leg": 1.1, "arm": 1.15,
                                                                        "head": 1.3}},
    # a chibi: a head a third of the height, short legs and arms, big hands and feet
    "chibi": {"length": {"leg": 0.6, "arm": 0.75, "trunk": 0.8, "neck": 0.5, "head": 2.0, "hand": 1.2},
              "girth": {"head": 2.2, "trunk": 1.1, "arm": 1.1, "leg": 0.95, "hand": 1.3}},
    # other rest poses of the neutral body (bone, degrees, axis through the bone's head):
    # arms near a T-pose, lower than Rigify's, and elbows bent
    "tpose": {"length": {}, "girth": {}, "turns": [("upper_arm", -38.0, (0, 1, 0))]},
    "arms_down": {"length": {}, "girth": {}, "turns": [("upper_arm", 20.0, (0, 1, 0))]},
    # elbows bent 35 degrees forward (-Y): a relaxed rest pose
    "bent": {"length": {}, "girth": {}, "turns": [("forearm", -35.0, (0.7, 0, 0.7))]},
}

#: body radius (m) at each bone's head, by the bone's base name (without .L / .R / .00n)
RADIUS = {"spine": 0.13, "spine.001": 0.13, "spine.002": 0.13, "spine.003": 0.15, "spine.004": 0.06,
          "spine.005": 0.055, "spine.006": 0.085, "shoulder": 0.055, "upper_arm": 0.05, "forearm": 0.04,
          "hand": 0.032, "palm": 0.024, "thumb": 0.0075, "f_index": 0.0065, "f_middle": 0.0065, "f_ring": 0.006,
          "f_pinky": 0.0055, "breast": 0.035, "pelvis": 0.11, "thigh": 0.07, "shin": 0.055, "foot": 0.04,
          "toe": 0.03}
RESOLUTION = 0.004  # the metaballs' polygonisation step (m)
BALL = 1.6          # a ball's radius of influence per metre of body radius (threshold 0.6, stiffness 2)
SPACING = 0.6       # balls along a bone, this many body radii apart at most
VERTICES = 20_000   # then decimated to about this many vertices
POCKET = 0.02       # pieces with fewer than this share of the vertices are dropped
#: the radius at a bone's tail, times its head's
TAIL_TAPER = {"spine.006": 1.15, "toe": 0.8, "f_index": 0.8, "f_middle": 0.8, "f_ring": 0.8, "f_pinky": 0.8,
              "thumb": 0.8, "hand": 0.9, "breast": 0.6}


def base_name(name: str) -> str:
    """A bone's name without its side and number (``f_index.02.L`` -> ``f_index``); the spine
    bones keep theirs (``spine.004``, a neck bone)."""
    parts = [p for p in name.split(".") if p not in ("L", "R") and not p.isdigit()]
    base = ".".join(parts)
    return name if base == "spine" and name.startswith("spine.") else base


def part(name: str) -> str:
    """The body part of a bone, for the per-part factors of :data:`BODIES`."""
    b = base_name(name)
    if b.startswith("spine"):
        return {"spine.004": "neck", "spine.005": "neck", "spine.006": "head"}.get(name, "trunk")
    if b in ("shoulder", "upper_arm", "forearm"):
        return "arm"
    if b in ("hand", "palm", "thumb", "f_index", "f_middle", "f_ring", "f_pinky"):
        return "hand"
    if b in ("thigh", "shin", "foot", "toe", "heel"):
        return "leg"
    return "trunk"


def metarig():
    """Rigify's human meta-rig without its face bones."""
    addon_utils.enable("rigify")
    bpy.ops.object.armature_human_metarig_add()
    arm = bpy.context.active_object
    bpy.ops.object.mode_set(mode="EDIT")
    eb = arm.data.edit_bones
    face = [b for b in eb if b.name == "face"]
    for b in face:
        for c in b.children_recursive:
            eb.remove(c)
        eb.remove(b)
    bpy.ops.object.mode_set(mode="OBJECT")
    return arm


def stretch(arm, lengths: dict):
    """Each bone lengthened by its part's factor; children follow their parent's tail."""
    bpy.ops.object.mode_set(mode="EDIT")
    eb = arm.data.edit_bones
    old = {b.name: (b.head.copy(), b.tail.copy()) for b in eb}
    new = {}
    for b in sorted(eb, key=lambda b: len(b.parent_recursive)):
        h, t = old[b.name]
        s = lengths.get(part(b.name), 1.0)
        if b.parent is None:
            head = h
        else:
            ph, nph = old[b.parent.name][0], new[b.parent.name][0]
            ps = lengths.get(part(b.parent.name), 1.0)
            head = nph + (h - ph) * ps  # the offset from the parent's head, stretched like it
        new[b.name] = (head, head + (t - h) * s)
    low = min(min(h.z, t.z) for h, t in new.values())
    floor = min(min(h.z, t.z) for h, t in old.values())
    for b in eb:
        h, t = new[b.name]
        b.head, b.tail = h - Vector((0, 0, low - floor)), t - Vector((0, 0, low - floor))
    bpy.ops.object.mode_set(mode="OBJECT")


def balls(mb, a, b, ra: float, rb: float):
    """Metaballs from ``a`` to ``b``, their body radius going from ``ra`` to ``rb``."""
    n = max(2, int((b - a).length / (SPACING * min(ra, rb))) + 1)
    for k in range(n):
        x = k / (n - 1)
        e = mb.elements.new(type="BALL")
        e.co = a.lerp(b, x)
        e.radius = BALL * (ra + (rb - ra) * x)
        e.stiffness = 2.0


def body_mesh(arm, girth: dict):
    """A body over the bones: metaballs along each bone and from a loose bone (a thigh, a
    shoulder) to its parent's nearer end, converted to a mesh and decimated."""
    mb = bpy.data.metaballs.new("body")
    mb.resolution = mb.render_resolution = RESOLUTION
    mb.threshold = 0.6

    def radius(bone):
        return RADIUS[base_name(bone.name)] * girth.get(part(bone.name), 1.0)

    for b in arm.data.bones:
        base = base_name(b.name)
        if base == "heel":
            continue  # a bone of the rig, not of the body: it lies across the heel
        r = radius(b)
        balls(mb, b.head_local, b.tail_local, r, r * TAIL_TAPER.get(base, 1.0))
        if b.parent is not None and not b.use_connect and base != "breast":
            p = b.parent
            end = p.head_local if (p.head_local - b.head_local).length < (p.tail_local - b.head_local).length \
                else p.tail_local
            balls(mb, b.head_local, end, r, radius(p))
    ob = bpy.data.objects.new("body", mb)
    bpy.context.scene.collection.objects.link(ob)
    bpy.ops.object.select_all(action="DESELECT")
    ob.select_set(True)
    bpy.context.view_layer.objects.active = ob
    bpy.ops.object.convert(target="MESH")
    body = bpy.context.active_object
    drop_pockets(body)
    decimate = body.modifiers.new("decimate", "DECIMATE")
    decimate.ratio = min(1.0, VERTICES / len(body.data.vertices))
    bpy.ops.object.modifier_apply(modifier="decimate")
    bpy.ops.object.shade_smooth()
    return body


def drop_pockets(ob):
    """Without small separate pieces (bone heat fails on closed pockets inside a body)."""
    import bmesh
    bm = bmesh.new()
    bm.from_mesh(ob.data)
    seen, pieces = set(), []
    for v in bm.verts:
        if v.index in seen:
            continue
        stack, piece = [v], []
        seen.add(v.index)
        while stack:
            u = stack.pop()
            piece.append(u)
            for e in u.link_edges:
                w = e.other_vert(u)
                if w.index not in seen:
                    seen.add(w.index)
                    stack.append(w)
        pieces.append(piece)
    small = [v for piece in pieces if len(piece) < POCKET * len(bm.verts) for v in piece]
    bmesh.ops.delete(bm, geom=small, context="VERTS")
    bm.to_mesh(ob.data)
    bm.free()


def turn(arm, bone: str, degrees: float, axis) -> None:
    """Bone ``bone.L`` and everything below it turned by ``degrees`` about ``axis`` (3,)
    through its head, and ``bone.R`` the mirror way, before the body is grown: another rest
    pose (positive degrees about +Y turn the left arm down)."""
    from mathutils import Matrix
    bpy.ops.object.mode_set(mode="EDIT")
    eb = arm.data.edit_bones
    for side, mirror in (("L", Vector((1, 1, 1))), ("R", Vector((-1, 1, 1)))):
        root = eb[f"{bone}.{side}"]
        pivot = root.head.copy()
        # the right side turns about the mirrored axis the other way
        rotation = Matrix.Rotation(math.radians(degrees if side == "L" else -degrees), 3,
                                   Vector(axis) * mirror)
        chain = [root, *root.children_recursive]
        # every end from the unturned positions first: a connected child's head moves with
        # its parent's tail
        ends = [(pivot + rotation @ (b.head - pivot), pivot + rotation @ (b.tail - pivot)) for b in chain]
        for b, (head, tail) in zip(chain, ends):
            b.head, b.tail = head, tail
    bpy.ops.object.mode_set(mode="OBJECT")


def build(name: str, out_dir: str):
    bpy.ops.wm.read_factory_settings(use_empty=True)
    body = BODIES[name]
    arm = metarig()
    arm.name = arm.data.name = "rig"
    stretch(arm, body["length"])
    for bone, degrees, axis in body.get("turns", ()):
        turn(arm, bone, degrees, axis)
    mesh = body_mesh(arm, body["girth"])
    bpy.ops.object.select_all(action="DESELECT")
    mesh.select_set(True)
    arm.select_set(True)
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.parent_set(type="ARMATURE_AUTO")
    unweighted = sum(1 for v in mesh.data.vertices if not any(g.weight > 0 for g in v.groups))
    path = os.path.join(out_dir, f"{name}.glb")
    bpy.ops.export_scene.gltf(filepath=path, export_format="GLB", export_animations=False, export_skins=True,
                              export_yup=True)
    return {"name": name, "vertices": len(mesh.data.vertices), "bones": len(arm.data.bones),
            "unweighted_vertices": unweighted, "file": path}


def main(argv):
    out_dir = argv[0]
    os.makedirs(out_dir, exist_ok=True)
    names = argv[1:] or list(BODIES)
    built = [build(n, out_dir) for n in names]
    with open(os.path.join(out_dir, "built.json"), "w") as f:
        json.dump(built, f, indent=1)
    print(json.dumps(built))


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
        code = 0
    except Exception:
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # bpy can hang in its shutdown when run as a module
