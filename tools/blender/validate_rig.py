"""Real-client check: does a UsdSkel or FBX rig import into Blender and deform correctly?

    /tmp/blender-venv/bin/python tools/blender/validate_rig.py IN.usda|IN.fbx [--bone forearm_L] [--angle 30] [--json OUT]

Run with Blender as a Python module (bpy 4.5 LTS, CPython 3.11; see fixtures/README.md for
the venv), never with the project's environment.  The approach of
``../shared/tools/blender/validate_gltf.py``, for USD: imports IN with Blender's own USD
importer (default options, as File > Import > USD would), then checks

* one armature, and meshes with an Armature modifier bound to it;
* every vertex's weights sum to 1 (within 1e-3) over vertex groups that are bones;
* at rest, the deformed meshes equal the imported meshes (bind and rest poses agree);
* posing one bone (``--bone``; default the first bone named like a forearm, else the first
  weighted bone with children) by ``--angle`` degrees about its local X axis: the vertices
  weighted to it or its descendants move, the others do not, and Blender's deformation
  equals linear blend skinning computed here from the imported weights and bone matrices.

Prints a JSON summary; exit code 0 = every check passed, 1 = a check failed (listed under
"errors"), 2 = Blender could not import the file.
"""
import argparse
import json
import math
import os
import sys

import numpy as np


def world_vertices(ob, depsgraph=None) -> np.ndarray:
    """(V, 3) world positions of a mesh object, deformed (evaluated) when ``depsgraph`` is given."""
    src = ob.evaluated_get(depsgraph) if depsgraph is not None else ob
    me = src.to_mesh() if depsgraph is not None else ob.data
    co = np.empty(len(me.vertices) * 3)
    me.vertices.foreach_get("co", co)
    if depsgraph is not None:
        src.to_mesh_clear()
    m = np.array(src.matrix_world)
    return co.reshape(-1, 3) @ m[:3, :3].T + m[:3, 3]


def vertex_weights(ob, bone_names: list) -> np.ndarray:
    """(V, B) weights of a mesh object's vertex groups that name bones."""
    col = {g.index: bone_names.index(g.name) for g in ob.vertex_groups if g.name in bone_names}
    w = np.zeros((len(ob.data.vertices), len(bone_names)))
    for v in ob.data.vertices:
        for ge in v.groups:
            if ge.group in col:
                w[v.index, col[ge.group]] += ge.weight
    return w


def choose_bone(arm, weighted: set) -> str:
    names = [b.name for b in arm.data.bones]
    fore = [n for n in names if "forearm" in n.lower() and n in weighted]
    if fore:
        return fore[0]
    return next((b.name for b in arm.data.bones if b.children and b.name in weighted), names[0])


def skinning_matrices(arm) -> dict:
    """bone name -> (4, 4) world-space skinning matrix ``A P B^-1 A^-1`` of the current pose."""
    a = np.array(arm.matrix_world)
    a_inv = np.linalg.inv(a)
    return {pb.name: a @ np.array(pb.matrix) @ np.linalg.inv(np.array(pb.bone.matrix_local)) @ a_inv
            for pb in arm.pose.bones}


def lbs(points: np.ndarray, w: np.ndarray, names: list, mats: dict) -> np.ndarray:
    """Linear blend skinning of world points with (V, B) weights (rows normalised here)."""
    x = np.c_[points, np.ones(len(points))]
    acc = np.zeros_like(points)
    for k, n in enumerate(names):
        nz = w[:, k] > 0
        if nz.any():
            acc[nz] += w[nz, k, None] * (x[nz] @ mats[n].T)[:, :3]
    tot = w.sum(axis=1)
    return np.where(tot[:, None] > 0, acc / np.maximum(tot, 1e-12)[:, None], points)


def validate(path: str, bone: str | None, angle: float) -> tuple:
    import bpy
    from mathutils import Quaternion

    errors, res = [], {"file": path, "blender": bpy.app.version_string}
    bpy.ops.wm.read_factory_settings(use_empty=True)
    try:
        if path.lower().endswith(".fbx"):
            bpy.ops.import_scene.fbx(filepath=os.path.abspath(path))
        else:
            bpy.ops.wm.usd_import(filepath=os.path.abspath(path))
    except Exception as e:  # noqa: BLE001
        return {**res, "errors": [f"Blender's importer failed: {e}"]}, 2
    arms = [o for o in bpy.data.objects if o.type == "ARMATURE"]
    skinned = [o for o in bpy.data.objects if o.type == "MESH"
               and any(m.type == "ARMATURE" and m.object is not None for m in o.modifiers)]
    res.update(armatures=len(arms), bones=sum(len(a.data.bones) for a in arms), skinned_meshes=len(skinned),
               vertices=sum(len(o.data.vertices) for o in skinned))
    if len(arms) != 1 or not skinned:
        return {**res, "errors": ["expected one armature and meshes bound to it"]}, 1
    arm = arms[0]
    names = [b.name for b in arm.data.bones]
    weights = [vertex_weights(o, names) for o in skinned]
    sums = np.concatenate([w.sum(axis=1) for w in weights])
    res["weight_sum_range"] = [float(sums.min()), float(sums.max())]
    if np.abs(sums - 1).max() > 1e-3:
        errors.append(f"{int((np.abs(sums - 1) > 1e-3).sum())} vertices have weights not summing to 1")
    dg = bpy.context.evaluated_depsgraph_get()
    base = [world_vertices(o) for o in skinned]
    rest = [world_vertices(o, dg) for o in skinned]
    diag = float(np.linalg.norm(np.ptp(np.concatenate(base), axis=0))) or 1.0
    res["rest_deviation_rel"] = max(float(np.abs(r - b).max()) for r, b in zip(rest, base)) / diag
    if res["rest_deviation_rel"] > 1e-5:
        errors.append(f"at rest the skinned meshes move by {res['rest_deviation_rel']:.3g} x diagonal")
    weighted = {names[k] for w in weights for k in np.flatnonzero(w.sum(axis=0) > 0)}
    bone = bone or choose_bone(arm, weighted)
    if bone not in arm.pose.bones:
        return {**res, "errors": errors + [f"no bone {bone!r} (bones: {names[:8]}...)"]}, 1
    pb = arm.pose.bones[bone]
    pb.rotation_mode = "QUATERNION"
    pb.rotation_quaternion = Quaternion((1.0, 0.0, 0.0), math.radians(angle))
    dg.update()
    posed = [world_vertices(o, dg) for o in skinned]
    mats = skinning_matrices(arm)
    subtree = {bone} | {c.name for c in arm.data.bones[bone].children_recursive}
    cols = [k for k, n in enumerate(names) if n in subtree]
    moving = np.concatenate([w[:, cols].sum(axis=1) > 0.01 for w in weights])
    static = np.concatenate([w[:, cols].sum(axis=1) <= 0 for w in weights])
    disp = np.concatenate([np.linalg.norm(p - r, axis=1) for p, r in zip(posed, rest)]) / diag
    lbs_err = max(float(np.linalg.norm(lbs(r, w, names, mats) - p, axis=1).max())
                  for r, w, p in zip(rest, weights, posed)) / diag
    res["pose_test"] = {"bone": bone, "angle_deg": angle, "weighted_to_subtree": int(moving.sum()),
                        "moved": int((disp[moving] > 1e-6).sum()), "static": int(static.sum()),
                        "static_max_disp_rel": float(disp[static].max()) if static.any() else 0.0,
                        "max_disp_rel": float(disp.max()), "lbs_max_err_rel": lbs_err}
    t = res["pose_test"]
    if t["weighted_to_subtree"] == 0 or t["moved"] < 0.99 * t["weighted_to_subtree"]:
        errors.append(f"only {t['moved']}/{t['weighted_to_subtree']} vertices weighted to {bone} moved")
    if t["static_max_disp_rel"] > 1e-6:
        errors.append(f"vertices with no weight on {bone} moved by {t['static_max_disp_rel']:.3g} x diagonal")
    if lbs_err > 1e-4:
        errors.append(f"Blender's deformation differs from linear blend skinning by {lbs_err:.3g} x diagonal")
    res["errors"] = errors
    return res, 1 if errors else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file")
    ap.add_argument("--bone", help="bone to pose (Blender's name, e.g. forearm_L)")
    ap.add_argument("--angle", type=float, default=30.0)
    ap.add_argument("--json", help="also write the summary here")
    args = ap.parse_args(argv)
    res, code = validate(args.file, args.bone, args.angle)
    res["ok"] = code == 0
    text = json.dumps(res, indent=1)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    return code


if __name__ == "__main__":
    sys.exit(main())
