"""Checks of the Blender add-on, run by an interpreter that has ``bpy`` (tests/test_blender.py).

    $ASETRANSFER_BLENDER_PYTHON tests/blender_checks.py CHECK OUT_DIR [ARGS...]

Each check builds a scene headless, drives the add-on's operators as a TD's clicks
would, and writes what it measured to ``OUT_DIR/result.json`` (the thresholds live in
test_blender.py).  The interpreter leaves with ``os._exit``: bpy can hang in its
shutdown when run as a module.

Checks:
  transfer SOURCE.glb TARGET MARKERS.json   scene from files, Load markers, Transfer rig,
      Save markers; writes the source and target as Blender holds them (source.glb,
      target.obj: the glTF importer rounds positions in float32), the saved markers
      (markers.json) and the built rig (rig.npz), then poses a bone and measures what moved
  units SOURCE.glb TARGET MARKERS.json      the same transfer in metres and in a centimetre
      scene with a rotated, scaled, translated target object; world-space bones of both
  modifiers SOURCE.glb TARGET MARKERS.json  a target with a Subdivision modifier and a child
      mesh, with modifiers applied and ignored
  failure SOURCE.glb                        a non-humanoid target: the operators cancel and
      the scene's data blocks are as before
  shapes SOURCE.glb TARGET MARKERS.json     the source's shape keys carried onto the rigged
      copy, the target's own kept; the preview and QA page the panel names
  found_markers, shown_surface, reports, hand_markers: tests/blender_marker_checks.py
"""
from __future__ import annotations

import json
import os
import pathlib
import sys
import traceback

import blender_scene  # noqa: F401  (first: puts the add-on on the path)
import bpy  # noqa: E402
import numpy as np  # noqa: E402
from mathutils import Matrix, Vector  # noqa: E402

import asetransfer as at  # noqa: E402
import asetransfer_blender  # noqa: E402
import blender_marker_checks  # noqa: E402
from asetransfer_blender import actions, scene  # noqa: E402
from blender_scene import (ROOT, add_target, built_rig, captured_reports, fresh_scene, import_source,  # noqa: E402
                           marker_state, remove_result, rigged, run, select)


def write_obj(path, vertices, faces):
    """An OBJ with the vertices exactly as given (repr of float64), for the command line."""
    lines = [f"v {x!r} {y!r} {z!r}" for x, y, z in vertices.tolist()]
    lines += [f"f {a + 1} {b + 1} {c + 1}" for a, b, c in faces.tolist()]
    pathlib.Path(path).write_text("\n".join(lines) + "\n")


def state_of(armature, target) -> str:
    """What the source and target hold (bones, vertices, groups, modifiers, transforms), as text."""
    objs = [armature, target] + scene.skinned_meshes(armature)
    parts = [(o.name, [list(r) for r in o.matrix_world], [m.type for m in o.modifiers],
              [g.name for g in o.vertex_groups]) for o in objs]
    parts += [[list(r) for r in b.matrix_local] for b in armature.data.bones]
    parts += [[v.co[:] for v in o.data.vertices] for o in objs if o.type == "MESH"]
    return repr(parts)


def pose_check(armature, copy, weights: np.ndarray, names: list) -> dict:
    """Rotate one bone 30 degrees; which vertices moved vs which the bone or its descendants weight."""
    bone = next(b for b in armature.data.bones if b.children and ("arm" in b.name.lower() or "thigh" in b.name))
    family = {bone.name} | {b.name for b in bone.children_recursive}
    weighted = weights[:, [names.index(n) for n in family]].sum(axis=1) > 0
    depsgraph = bpy.context.evaluated_depsgraph_get()
    rest = np.array([v.co[:] for v in copy.evaluated_get(depsgraph).to_mesh().vertices])
    pb = armature.pose.bones[bone.name]
    pb.rotation_mode = "XYZ"
    pb.rotation_euler = (0.5236, 0.0, 0.2)
    depsgraph = bpy.context.evaluated_depsgraph_get()
    depsgraph.update()
    posed = np.array([v.co[:] for v in copy.evaluated_get(depsgraph).to_mesh().vertices])
    size = float(np.ptp(rest, axis=0).max())
    moved = np.linalg.norm(posed - rest, axis=1) > 1e-6 * size
    return {"bone": bone.name, "weighted": int(weighted.sum()), "moved": int(moved.sum()),
            "moved_not_weighted": int((moved & ~weighted).sum()), "weighted_not_moved": int((weighted & ~moved).sum())}


def check_transfer(out: pathlib.Path, source_path: str, target_path: str, markers_path: str) -> dict:
    fresh_scene()
    armature = import_source(source_path)
    target_mesh = at.load_mesh(target_path)
    target = add_target(target_mesh, "target")
    settings = select(armature, target)
    untouched = state_of(armature, target)
    results = {"load": run(lambda: bpy.ops.asetransfer.load_markers(filepath=markers_path))}
    results["save"] = run(lambda: bpy.ops.asetransfer.save_markers(filepath=str(out / "markers.json")))
    results["transfer"] = run(bpy.ops.asetransfer.transfer)
    held = scene.read_target(bpy.context, [target], settings.apply_modifiers)
    write_obj(out / "target.obj", held.vertices, held.faces)
    at.save_rig(out / "source.glb", scene.read_source(bpy.context, armature, settings.apply_modifiers))
    rig = built_rig(*rigged("target"))
    np.savez(out / "rig.npz", names=np.array(rig["names"]), frames=rig["frames"], weights=rig["weights"])
    results["pose"] = pose_check(*rigged("target"), rig["weights"], rig["names"])
    results["inputs_untouched"] = state_of(armature, target) == untouched
    # marker round trip: the saved file loads back onto the same empties
    before = marker_state()
    results["reload"] = run(lambda: bpy.ops.asetransfer.load_markers(filepath=str(out / "markers.json")))
    results["marker_round_trip_exact"] = marker_state() == before
    results["target_size"] = float(np.ptp(held.vertices, axis=0).max())
    return results


def transfer_in(scale_length: float, size: float, matrix, paths) -> dict:
    fresh_scene(scale_length)
    armature = import_source(paths[0])
    target = add_target(at.load_mesh(paths[1]), "target", size, matrix)
    select(armature, target)
    assert run(lambda: bpy.ops.asetransfer.load_markers(filepath=paths[2])) == "FINISHED"
    assert run(bpy.ops.asetransfer.transfer) == "FINISHED"
    arm, copy = rigged("target")
    depsgraph = bpy.context.evaluated_depsgraph_get()
    world = np.array([np.array(copy.matrix_world) @ np.r_[v.co[:], 1.0]
                      for v in copy.evaluated_get(depsgraph).to_mesh().vertices])[:, :3]
    rig = built_rig(arm, copy)
    return {"heads": rig["frames"][:, :3, 3], "axes": rig["frames"][:, :3, :3],
            "weights": rig["weights"], "world_vertices": world / size}


def check_units(out: pathlib.Path, source_path: str, target_path: str, markers_path: str) -> dict:
    paths = (source_path, target_path, markers_path)
    metres = transfer_in(1.0, 1.0, None, paths)
    turn = Matrix.Rotation(0.7, 4, "Z") @ Matrix.Rotation(-0.4, 4, "X")
    m = Matrix.Translation((30.0, -12.0, 5.0)) @ turn @ Matrix.Diagonal((2.5, 2.5, 2.5, 1.0))
    cm = transfer_in(0.01, 100.0, m, paths)
    # bone heads come out of joint_frames in metres (the unit scale applied) in both scenes
    size = float(np.ptp(metres["world_vertices"], axis=0).max())
    return {"size": size, "head_difference": float(np.abs(cm["heads"] - metres["heads"]).max()),
            "axis_difference": float(np.abs(cm["axes"] - metres["axes"]).max()),
            "weight_difference": float(np.abs(cm["weights"] - metres["weights"]).max()),
            "rest_vertex_difference": float(np.abs(cm["world_vertices"] - metres["world_vertices"]).max())}


def datablocks() -> dict:
    return {kind: sorted(x.name for x in getattr(bpy.data, kind))
            for kind in ("objects", "meshes", "armatures", "collections")}


def check_failure(out: pathlib.Path, source_path: str) -> dict:
    fresh_scene()
    armature = import_source(source_path)
    bpy.ops.mesh.primitive_cube_add(size=1.0)
    cube = bpy.context.active_object
    cube.name = "crate"
    settings = select(armature, cube)
    before = datablocks()
    results = {"transfer": run(bpy.ops.asetransfer.transfer), "find": run(bpy.ops.asetransfer.find_markers)}
    results["unchanged"] = datablocks() == before
    try:
        actions.transfer_rig(bpy.context, settings)
        results["message"] = None
    except at.InputError as e:
        results["message"] = str(e)
    # a failure half-way through building (the armature made, the first copy failing)
    target = add_target(at.load_mesh(str(ROOT / "fixtures" / "target_heavy.ply")), "heavy")
    settings.target = target
    before = datablocks()
    real = scene.bound_copy

    def failing(*args, **kwargs):
        real(*args, **kwargs)
        raise RuntimeError("disk full")

    scene.bound_copy = failing
    try:
        results["build_failure"] = run(bpy.ops.asetransfer.transfer)
    finally:
        scene.bound_copy = real
    results["build_failure_unchanged"] = datablocks() == before
    return results


def weight_sums(obj) -> np.ndarray:
    sums = np.zeros(len(obj.data.vertices))
    for v in obj.data.vertices:
        sums[v.index] = sum(g.weight for g in v.groups)
    return sums


def check_modifiers(out: pathlib.Path, source_path: str, target_path: str, markers_path: str) -> dict:
    """A target with a Subdivision modifier and a child mesh (a hat), modifiers applied or not."""
    results = {}
    for apply in (False, True):
        fresh_scene()
        armature = import_source(source_path)
        target = add_target(at.load_mesh(target_path), "target")
        target.modifiers.new("subdivide", "SUBSURF").levels = 1
        bpy.ops.mesh.primitive_cube_add(size=0.2, location=(0.0, 0.0, 1.8))
        hat = bpy.context.active_object
        hat.name, hat.parent = "hat", target
        settings = select(armature, target)
        settings.apply_modifiers = apply
        assert run(lambda: bpy.ops.asetransfer.load_markers(filepath=markers_path)) == "FINISHED"
        assert run(bpy.ops.asetransfer.transfer) == "FINISHED"
        copy, hat_copy = bpy.data.objects["target rigged"], bpy.data.objects["hat rigged"]
        evaluated = target.evaluated_get(bpy.context.evaluated_depsgraph_get()).to_mesh()
        results["applied" if apply else "ignored"] = {
            "vertices": len(copy.data.vertices), "base_vertices": len(target.data.vertices),
            "evaluated_vertices": len(evaluated.vertices), "modifiers": [m.type for m in copy.modifiers],
            "target_modifiers": [m.type for m in target.modifiers],
            "weight_sum_error": float(np.abs(weight_sums(copy) - 1).max()),
            "hat_weight_sum_error": float(np.abs(weight_sums(hat_copy) - 1).max()),
            "hat_parent": hat_copy.parent.name, "hat_bones": sorted({hat_copy.vertex_groups[g.group].name
                                                                     for v in hat_copy.data.vertices for g in v.groups
                                                                     if g.weight > 0.5})}
    return results


def check_shapes(out: pathlib.Path, source_path: str, target_path: str, markers_path: str) -> dict:
    """Shape keys carried (the source's 'raise' lifts its head 1 cm, 'blink' too; the target has
    its own 'blink'), and the preview and QA page written where the panel names them."""
    fresh_scene()
    armature = import_source(source_path)
    body = scene.skinned_meshes(armature)[0]
    co = np.array([list(v.co) for v in body.data.vertices])
    world_z = co @ np.array(body.matrix_world)[:3, :3].T[:, 2] + np.array(body.matrix_world)[2, 3]
    head = world_z > world_z.min() + 0.9 * np.ptp(world_z)
    lift = np.linalg.inv(np.array(body.matrix_world)[:3, :3]) @ [0.0, 0.0, 0.01]  # 1 cm up in the world
    body.shape_key_add(name="Basis", from_mix=False)
    for name in ("raise", "blink"):
        key = body.shape_key_add(name=name, from_mix=False)
        moved = co + np.where(head[:, None], lift, 0.0)
        key.data.foreach_set("co", moved.astype(np.float32).ravel())
    target = add_target(at.load_mesh(target_path), "target")
    target.shape_key_add(name="Basis", from_mix=False)
    own = target.shape_key_add(name="blink", from_mix=False)
    own.data[0].co = own.data[0].co + Vector((0.0, 0.0, 0.02))
    settings = select(armature, target)
    settings.preview_path = str(out / "preview.png")
    bpy.ops.asetransfer.load_markers(filepath=markers_path)
    lines = []
    with captured_reports(lines):  # a preview needs matplotlib, which Blender's Python may lack: said first
        results = {"with_preview": run(bpy.ops.asetransfer.transfer)}
    results["preview_reports"], lines = lines, []
    if results["with_preview"] == "FINISHED":
        results["preview"] = (out / "preview.png").read_bytes()[:8].hex()
        remove_result()
    settings.preview_path, settings.qa_path = "", str(out / "qa.html")
    with captured_reports(lines):
        results["transfer"] = run(bpy.ops.asetransfer.transfer)
    _, copy = rigged("target")
    keys = copy.data.shape_keys.key_blocks
    basis = np.array([list(v.co) for v in keys["Basis"].data])
    offsets = (np.array([list(v.co) for v in keys["raise"].data]) - basis) @ np.array(copy.matrix_world)[:3, :3].T
    moving = np.abs(offsets).max(axis=1) > 1e-6
    z = (basis @ np.array(copy.matrix_world)[:3, :3].T)[:, 2]
    results.update(keys=[k.name for k in keys], moved=int(moving.sum()), vertices=len(basis),
                   median_lift=np.median(offsets[moving], axis=0).tolist(),
                   lowest_moved=float((z[moving].min() - z.min()) / np.ptp(z)),
                   own_blink_kept=float(np.linalg.norm(np.array(keys["blink"].data[0].co) - basis[0])),
                   own_blink_moved=int((np.abs(np.array([list(v.co) for v in keys["blink"].data]) - basis).max(axis=1)
                                        > 1e-7).sum()),
                   reports=lines, qa=(out / "qa.html").read_text(encoding="utf-8")[:200],
                   objects=sorted(o.name for o in bpy.data.objects))
    return results


CHECKS = {"transfer": check_transfer, "shapes": check_shapes, "units": check_units, "failure": check_failure, "modifiers": check_modifiers,
          **blender_marker_checks.CHECKS}


def main() -> int:
    check, out, args = sys.argv[1], pathlib.Path(sys.argv[2]), sys.argv[3:]
    asetransfer_blender.register()
    try:
        result = CHECKS[check](out, *args)
    except Exception:  # noqa: BLE001  (the test shows the traceback)
        traceback.print_exc()
        return 1
    (out / "result.json").write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
