"""``asetransfer info FILE``: what a character file holds."""
from __future__ import annotations

import json


def add_parser(sub):
    p = sub.add_parser("info", help="summarise a rig or mesh file",
                       description="Print vertex/face counts, joints, hierarchy depth, influences per vertex, "
                                   "bounding box, a guess of the up axis, and a rig's animation clips (glTF "
                                   "animations, FBX takes, COLLADA animations).")
    p.add_argument("file", help=".glb .gltf .vrm .fbx .dae .pmx .usda .usdc .usdz rig or mesh (.obj .ply .off .stl)")
    p.add_argument("--json", action="store_true", help="print JSON (keys: vertices, faces, joints, max_influences, "
                                                       "clips, ...)")
    p.set_defaults(run=run)


def run(args) -> int:
    from asetransfer.describe import describe
    from asetransfer.io import file_frame, has_clips, load_character, load_clips
    from asetransfer.job import warnings_said_once

    with warnings_said_once():  # the file is read again for its clips
        d = describe(load_character(args.file), args.file)
        d["declared_frame"] = file_frame(args.file)  # FBX/USD: the units and up axis the file states
        d["clips"], d["clips_left_out"] = [], []
        if d["kind"] == "rig" and has_clips(args.file):
            _, clips, skipped = load_clips(args.file)
            d["clips"] = [{"name": name, "frames": clip.n_frames, "seconds": round(clip.n_frames * clip.frame_time, 4)}
                          for name, clip in clips]
            d["clips_left_out"] = [{"name": name, "reason": reason} for name, reason in skipped]
    if args.json:
        print(json.dumps(d, indent=1))
        return 0
    lo, hi = d["bounding_box"]["min"], d["bounding_box"]["max"]
    print(f"{d['file']}: {d['kind']}")
    print(f"  vertices        {d['vertices']}")
    print(f"  faces           {d['faces']}")
    print(f"  parts           {', '.join(d['parts'])}")
    if d["kind"] == "rig":
        print(f"  joints          {d['joint_count']} (hierarchy depth {d['hierarchy_depth']})")
        print(f"  influences      max {d['max_influences']}, mean {d['mean_influences']:.2f} per vertex")
        if d["humanoid_bones"]:
            bones = d["humanoid_bones"]
            print(f"  humanoid        {len(bones)} bones declared by the file (hips {bones.get('hips', '-')}, "
                  f"head {bones.get('head', '-')}): the skeleton map reads them before the names")
    print(f"  bounding box    [{lo[0]:.4g}, {lo[1]:.4g}, {lo[2]:.4g}] .. [{hi[0]:.4g}, {hi[1]:.4g}, {hi[2]:.4g}]")
    print(f"  size            {d['size'][0]:.4g} x {d['size'][1]:.4g} x {d['size'][2]:.4g}")
    print(f"  up axis         {d['up_axis']} (from {d['up_axis_source']})")
    if d["declared_frame"]:
        f = d["declared_frame"]
        print(f"  declared        {f['metres_per_unit']:g} m per unit, {f['up_axis']} up (from the file)")
    if d["clips"] or d["clips_left_out"]:
        print("  clips           " + ", ".join(f"{c['name']} ({c['frames']} frames)" for c in d["clips"]) +
              "".join(f"; {c['name']} left out: {c['reason']}" for c in d["clips_left_out"]))
    if d["kind"] == "rig":
        print("  joint names     " + " ".join(d["joints"]))
    return 0
