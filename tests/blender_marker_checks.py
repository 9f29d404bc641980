"""Checks of the add-on's markers and reports, run by tests/blender_checks.py (see there).

  found_markers SOURCE.glb TARGET           Transfer rig alone; Find markers then Transfer
      rig; one fingertip marker moved 5 cm; 11 markers left (TARGET: a fixture's file
      name, an absolute path, or ``robot``: the source cut into plates)
  shown_surface SOURCE.glb TARGET           a posed source and a target with a Displace
      modifier: markers on the surfaces shown, Save / Load bit-exact, Remove pair
  reports SOURCE.glb TARGET                 a shield no marker holds, hands swapped by hand:
      the operator's report lines and what it selects
  hand_markers SOURCE.glb TARGET MARKERS    Add pair at the cursor and at selected
      vertices, Remove pair, a marker file placed pair by pair, a target Find cannot read
  fitted_markers SOURCE.glb TARGET          a creature: Find markers reads them off the
      fitted skin; saved, loaded and transferred they stay so flagged
"""
from __future__ import annotations

import json
import pathlib

import bpy
import numpy as np
from mathutils import Matrix

import asetransfer as at
from asetransfer_blender import actions, convert, empties, scene
from blender_scene import (apart, add_target, beside, captured_reports, fresh_scene, heads, import_source,
                           marker_distances, marker_state, move_along_surface, pose_source, remove_result, rigged,
                           run, select, surface_distance, target_character)


def check_found_markers(out: pathlib.Path, source_path: str, kind: str) -> dict:
    """Transfer alone; Find markers then Transfer; one fingertip marker moved 5 cm then Transfer."""
    fresh_scene()
    armature = import_source(source_path)
    target = add_target(target_character(kind, source_path), "target")
    beside(target)
    settings = select(armature, target)
    results, lines = {}, []
    with captured_reports(lines):
        results["alone"] = run(bpy.ops.asetransfer.transfer)
    alone = heads()
    remove_result()
    with captured_reports(lines):
        results["find"] = run(bpy.ops.asetransfer.find_markers)
        results["found_transfer"] = run(bpy.ops.asetransfer.transfer)
    found = heads()
    marked = empties.scene_markers(bpy.context)
    results["markers"], results["automatic"] = len(marked), sorted(marked.automatic)
    chars, config = actions.characters(bpy.context, settings), actions.config_of(settings)
    read = actions.read_markers(bpy.context, chars, marked, config)
    results["read_automatic"] = sorted(read.automatic)
    results["found_vs_alone"] = apart(found, alone)
    # a TD moves one fingertip marker on the target 5 cm along the body
    tip = next(n for n in ("index_tip.L", "middle_tip.L", "hand_tip.L", "thumb_tip.L") if n in marked.names)
    results["moved_marker"] = tip
    results["moved_by"] = move_along_surface(empties.marker_empties("target")[tip], target, 0.05)
    results["hand_after_move"] = empties.scene_markers(bpy.context).hand
    remove_result()
    with captured_reports(lines):
        results["moved_transfer"] = run(bpy.ops.asetransfer.transfer)
    results["moved_vs_found"] = apart(heads(), found)
    # fewer found markers than the library completes (MarkersConfig.complete_below): still
    # read back automatic, not completed (which would read them as hand markers)
    empties.remove([tip] + [n for n in marked.names if n != tip][11:])
    remove_result()
    with captured_reports(lines):
        results["few_transfer"] = run(bpy.ops.asetransfer.transfer)
    results["height"] = float(np.ptp(scene.read_target(bpy.context, [target], False).vertices[:, 1]))
    results["reports"] = lines
    return results


def check_shown_surface(out: pathlib.Path, source_path: str, target_path: str) -> dict:
    """Markers on a posed source and a target with a Displace modifier: on the surfaces shown;
    saved and loaded bit-exact; the same rig as without the pose and the modifier."""
    fresh_scene()
    armature = import_source(source_path)
    target = add_target(at.load_mesh(target_path), "target")
    beside(target)
    displace = target.modifiers.new("inflate", "DISPLACE")
    displace.strength, displace.mid_level = 0.02, 0.5  # 1 cm along the normals, shown only
    pose_source(armature, {"upperarm.L": (0.0, 0.0, -0.7), "forearm.L": (0.0, 0.0, -0.5), "thigh.R": (0.5, 0, 0)})
    select(armature, target)
    results = {"find": run(bpy.ops.asetransfer.find_markers)}
    meshes = scene.skinned_meshes(armature)
    results["source_to_shown"] = marker_distances("source", meshes)
    results["target_to_shown"] = marker_distances("target", [target])
    with scene.armature_modifiers_off(meshes):
        results["source_to_rest"] = marker_distances("source", meshes)
    displace.show_viewport = False
    results["target_to_modelled"] = marker_distances("target", [target])
    displace.show_viewport = True
    results["transfer"] = run(bpy.ops.asetransfer.transfer)
    posed, found = heads(), sorted(empties.scene_markers(bpy.context).names)
    results.update(saved_and_loaded(out, target))
    # without the pose and the modifier, Find then Transfer gives the same rig
    remove_result()
    pose_source(armature, {"upperarm.L": (0, 0, 0), "forearm.L": (0, 0, 0), "thigh.R": (0, 0, 0)})
    target.modifiers.remove(displace)
    results["find_rest"] = run(bpy.ops.asetransfer.find_markers)
    results["transfer_rest"] = run(bpy.ops.asetransfer.transfer)
    results["posed_vs_rest"] = apart(posed, heads())
    results["same_markers_found"] = sorted(empties.scene_markers(bpy.context).names) == found
    results["size"] = float(np.ptp(at.load_mesh(target_path).vertices, axis=0).max())
    return results


def saved_and_loaded(out: pathlib.Path, target) -> dict:
    """A TD moves a marker, saves, loads (every empty back, with its properties), loads a file
    without the scene's locations, and removes a pair."""
    results = {}
    move_along_surface(empties.marker_empties("target")["crotch"], target, 0.02)
    before = marker_state()
    results["save"] = run(lambda: bpy.ops.asetransfer.save_markers(filepath=str(out / "a.json")))
    empties.remove_all()
    results["load"] = run(lambda: bpy.ops.asetransfer.load_markers(filepath=str(out / "a.json")))
    results["round_trip_exact"] = marker_state() == before
    results["save_again"] = run(lambda: bpy.ops.asetransfer.save_markers(filepath=str(out / "b.json")))
    results["files_equal"] = (out / "a.json").read_bytes() == (out / "b.json").read_bytes()
    results["automatic_after_load"] = marker_state()["automatic"]
    # a file without the scene's locations (as the command line writes it): the points are
    # resolved on the surfaces shown, the flags and confidences kept
    doc = json.loads((out / "a.json").read_text())
    for entry in doc["markers"]:
        del entry[actions.SCENE_KEY]
    (out / "c.json").write_text(json.dumps(doc))
    results["load_plain"] = run(lambda: bpy.ops.asetransfer.load_markers(filepath=str(out / "c.json")))
    plain = marker_state()
    results["plain_properties_equal"] = ({k: v[::2] for k, v in plain.items() if k != "automatic"}
                                         == {k: v[::2] for k, v in before.items() if k != "automatic"}
                                         and plain["automatic"] == before["automatic"])
    results["plain_shift"] = max(float(np.linalg.norm(np.subtract(plain[k][1], before[k][1])))
                                 for k in before if k != "automatic")
    # Remove marker pair, one of its empties selected; Find again brings the crotch back
    empties.select(bpy.context, [empties.marker_empties("source")["crotch"]])
    results["remove"] = run(bpy.ops.asetransfer.remove_markers)
    results["after_remove"] = sorted(empties.scene_markers(bpy.context).names)
    return results


def check_reports(out: pathlib.Path, source_path: str, target_path: str) -> dict:
    """A target carrying a shield no marker holds: the operator's reports and what it selects."""
    fresh_scene()
    armature = import_source(source_path)
    target = add_target(at.load_mesh(target_path), "target")
    bpy.ops.mesh.primitive_cube_add(size=1.0, location=(0.75, -0.1, 1.0), scale=(0.03, 0.5, 0.6))
    shield = bpy.context.active_object
    shield.name, shield.parent = "shield", target
    settings = select(armature, target)
    lines = []
    with captured_reports(lines):
        results = {"find": run(bpy.ops.asetransfer.find_markers), "transfer": run(bpy.ops.asetransfer.transfer)}
    results["reports"] = lines
    arm, copy = rigged("target")
    results["selected_bones"] = sorted(b.name for b in arm.data.bones if b.select)
    results["active"] = bpy.context.view_layer.objects.active.name
    shield_copy = bpy.data.objects["shield rigged"]
    results["selected_vertices"] = {o.name: int(sum(v.select for v in o.data.vertices)) for o in (copy, shield_copy)}
    results["vertices"] = {o.name: len(o.data.vertices) for o in (copy, shield_copy)}
    # markers misplaced by hand: the target's left and right hands swapped
    remove_result()
    shield.parent = None
    bpy.data.objects.remove(shield)
    on_target = empties.marker_empties("target")
    for name in [n for n in on_target if n.endswith(".L") and "tip" in n and n[:-1] + "R" in on_target]:
        left, right = on_target[name], on_target[name[:-1] + "R"]
        left.matrix_world, right.matrix_world = right.matrix_world.copy(), left.matrix_world.copy()
    lines = []
    with captured_reports(lines):
        results["misplaced"] = run(bpy.ops.asetransfer.transfer)
    results["misplaced_reports"] = lines
    arm, copy = rigged("target")
    results["misplaced_selected_bones"] = sorted(b.name for b in arm.data.bones if b.select)
    results["misplaced_selected_objects"] = sorted(o.name for o in bpy.context.selected_objects)
    return results


def check_hand_markers(out: pathlib.Path, source_path: str, target_path: str, markers_path: str) -> dict:
    """Marker pairs added by hand: at the 3D cursor, at a selected vertex of each character,
    a marker file's pairs placed one by one; removed; and on a target Find cannot read."""
    fresh_scene()
    armature = import_source(source_path)
    target = add_target(at.load_mesh(target_path), "target")
    beside(target)
    select(armature, target)
    results = added_at_cursor_and_vertices(target, bpy.data.objects["body"])
    results.update(file_placed_by_hand(out, source_path, target_path, markers_path))
    # where Find fails (no body layout), pairs can still be added
    empties.remove_all()
    bpy.ops.mesh.primitive_cube_add(size=1.0, location=(3.0, 0.0, 0.5))
    select(armature, bpy.context.active_object)
    bpy.context.scene.cursor.location = (3.0, 0.0, 1.0)
    results["find_crate"] = run(bpy.ops.asetransfer.find_markers)
    results["add_crate"] = run(lambda: bpy.ops.asetransfer.add_marker(name="lid"))
    return results


def added_at_cursor_and_vertices(target, body) -> dict:
    """Add pair at the cursor by the source's head (its partner guessed on the target from the
    boxes), at a selected vertex of each character (both in Edit mode); Remove pair."""
    results = {}
    bpy.context.scene.cursor.location = (0.0, 0.05, 1.9)
    results["cursor"] = run(lambda: bpy.ops.asetransfer.add_marker(name="head"))
    pair = [empties.marker_empties(side)["head"] for side in ("source", "target")]
    results["cursor_pair"] = [empties.location(o) for o in pair]
    results["cursor_to_surfaces"] = [surface_distance(np.array([empties.location(pair[0])]), body),
                                     surface_distance(np.array([empties.location(pair[1])]), target)]
    results["cursor_selected"] = sorted(o.name for o in bpy.context.selected_objects)
    # at one selected vertex of each character, both in Edit mode
    picks = {"body": 123, "target": 456}
    for name, index in picks.items():
        obj = bpy.data.objects[name]
        chosen = np.zeros(len(obj.data.vertices), bool)
        chosen[index] = True
        obj.data.vertices.foreach_set("select", chosen)
        for elements in (obj.data.edges, obj.data.polygons):  # a selected face would select its corners
            elements.foreach_set("select", np.zeros(len(elements), bool))
    empties.select(bpy.context, [target, body])
    bpy.ops.object.mode_set(mode="EDIT")
    results["vertex"] = run(lambda: bpy.ops.asetransfer.add_marker(name="head"))
    bpy.ops.object.mode_set(mode="OBJECT")
    empties.select(bpy.context, empties.empties_of(["head.001"]))
    named = {side: empties.marker_empties(side)["head.001"] for side in ("source", "target")}
    shown = {name: scene.displayed_vertices(bpy.context, bpy.data.objects[name])[index] for name, index in picks.items()}
    results["vertex_offsets"] = [float(np.linalg.norm(np.array(empties.location(named["source"])) - shown["body"])),
                                 float(np.linalg.norm(np.array(empties.location(named["target"])) - shown["target"]))]
    # Remove marker pair: the selected ones (the last added)
    results["remove"] = run(bpy.ops.asetransfer.remove_markers)
    results["after_remove"] = sorted(empties.scene_markers(bpy.context).names)
    return results


def file_placed_by_hand(out: pathlib.Path, source_path: str, target_path: str, markers_path: str) -> dict:
    """A marker file's pairs placed by hand: the cursor at the source point, the target empty
    moved to the target point; Transfer then rigs as the file (moved with the target) loaded does."""
    from asetransfer.io.markers import points_to_json

    results = {}
    empties.remove_all()
    rig_mesh, file_mesh = at.load_rig(source_path).mesh, at.load_mesh(target_path)
    given = at.load_markers(markers_path, rig_mesh, file_mesh)
    on_source = given.source.positions(rig_mesh.vertices, rig_mesh.faces)
    on_target = given.target.positions(file_mesh.vertices, file_mesh.faces) + np.array([1.2, 0.0, 0.0])
    (out / "moved.json").write_text(points_to_json(given.names, on_source, on_target))
    for name, p, q in zip(given.names, convert.from_asetransfer(on_source, 1.0), convert.from_asetransfer(on_target,
                                                                                                          1.0)):
        bpy.context.scene.cursor.location = p.tolist()
        assert run(lambda: bpy.ops.asetransfer.add_marker(name=name)) == "FINISHED"
        empties.marker_empties("target")[name].matrix_world = Matrix.Translation(q.tolist())
    results["by_hand"] = run(bpy.ops.asetransfer.transfer)
    by_hand = heads()
    results["hand_markers"] = len(empties.scene_markers(bpy.context).hand)
    remove_result()
    results["load"] = run(lambda: bpy.ops.asetransfer.load_markers(filepath=str(out / "moved.json")))
    results["loaded"] = run(bpy.ops.asetransfer.transfer)
    results["by_hand_vs_loaded"] = apart(by_hand, heads())
    results["size"] = float(np.ptp(file_mesh.vertices, axis=0).max())
    return results


def check_fitted_markers(out: pathlib.Path, source_path: str, target_path: str) -> dict:
    """Find markers on a creature (read off the source's fitted skin), Transfer rig from the
    scene's markers, Save and Load markers: the markers stay flagged fitted and the rig keeps
    the fit's doubt, as the command line's does."""
    fresh_scene()
    armature = import_source(source_path)
    target = add_target(at.load_mesh(target_path), "target")
    beside(target)
    settings = select(armature, target)
    results = {"find": run(bpy.ops.asetransfer.find_markers)}
    marked = empties.scene_markers(bpy.context)
    results["markers"], results["automatic"], results["fitted"] = len(marked), len(marked.automatic), len(marked.fitted)
    _, result, _ = actions.transfer_rig(bpy.context, settings)
    results["method"], results["reasons"] = result.report.marker_origin.method, result.report.quality.reasons
    chars, config = actions.characters(bpy.context, settings), actions.config_of(settings)
    saved = json.loads(actions.markers_text(bpy.context, chars, marked, config))["markers"]
    results["saved_fitted"] = sum(bool(m.get("fitted")) for m in saved)
    (out / "m.json").write_text(json.dumps({"markers": saved}))
    results["load"] = run(lambda: bpy.ops.asetransfer.load_markers(filepath=str(out / "m.json")))
    results["loaded_fitted"] = len(empties.scene_markers(bpy.context).fitted)
    return results


CHECKS = {"found_markers": check_found_markers, "shown_surface": check_shown_surface, "reports": check_reports,
          "hand_markers": check_hand_markers, "fitted_markers": check_fitted_markers}
