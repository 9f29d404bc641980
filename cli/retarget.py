"""``asetransfer retarget-motion MOTION.bvh --source SRC.glb --target OUT.glb -o ANIM.glb|.bvh``."""
from __future__ import annotations

import json
import os


OUTPUTS = (".glb", ".gltf", ".bvh")


def add_parser(sub):
    p = sub.add_parser(
        "retarget-motion", help="play a motion authored for the source on a transferred target",
        description="Copies every joint's local rotation from the source to the same-named target joint "
                    "(with --rest source, the default, the source's rest rotations come along: the target is "
                    "pose-normalised to the source as the motion plays, whatever rest pose its file keeps); the "
                    "root path is scaled by the ratio of the root heights (Tonoli §3.1.4). Writes the target with the motion as a glTF animation (.glb/.gltf) "
                    "or the target's skeleton and motion as BVH (.bvh; rest pose = the target's rest pose, "
                    "channels Zrotation Xrotation Yrotation, R = Rz Rx Ry, degrees).")
    p.add_argument("motion", help="BVH motion for the source skeleton (its zero pose = the source's rest pose)")
    p.add_argument("--source", required=True, help="the source rig the motion was made for (.glb .gltf .fbx .usd*)")
    p.add_argument("--target", required=True, help="the rigged target (asetransfer transfer output)")
    p.add_argument("-o", "--output", required=True, help="ANIM.glb, ANIM.gltf or ANIM.bvh")
    p.add_argument("--rest", choices=("source", "target"), default="source",
                   help="source (default): play the motion from the source's rest pose (pose normalisation on "
                        "the fly, spec §3.3); target: apply the motion's rotations on top of the target's own "
                        "rest pose")
    p.add_argument("--report", help="write a JSON report (matched joints, root heights and ratio)")
    p.set_defaults(run=run)


def run(args) -> int:
    from asetransfer.io.outputs import Output, check_outputs
    from asetransfer.errors import InputError
    from asetransfer.handoff.motion import animation_to_bvh
    from asetransfer.handoff.retarget import retarget_bvh
    from asetransfer.io import load_rig
    from asetransfer.io.atomic import atomic_write, transaction
    from asetransfer.io.bvh import read_bvh, write_bvh
    from asetransfer.io.gltf_write import write_rig

    inputs = (args.motion, args.source, args.target)
    ext = os.path.splitext(args.output)[1].lower()
    outputs = [Output(args.output, "-o", OUTPUTS)]
    if args.report:
        outputs.append(Output(args.report, "--report", (".json",)))
    check_outputs(outputs, inputs)
    motion = read_bvh(args.motion)
    source, target = load_rig(args.source), load_rig(args.target)
    if not set(source.skeleton.names) & set(target.skeleton.names):
        raise InputError(args.target, "shares no joint name with the source rig "
                                      f"{os.path.basename(args.source)}: nothing to retarget (joints are matched "
                                      "by name; give the rig transferred from that source)")
    anim, report = retarget_bvh(motion, source, target, path=args.motion, rest=args.rest)
    with transaction():  # the motion and its report: both written, or neither
        if ext == ".bvh":
            write_bvh(args.output, animation_to_bvh(target.skeleton, anim), inputs)
        else:
            write_rig(args.output, target, inputs=inputs, animation=anim)
        if args.report:
            atomic_write(args.report, (json.dumps(report, indent=1) + "\n").encode(), inputs + (args.output,))
    if not getattr(args, "quiet", False):
        print(f"{args.output}: {anim.n_frames} frames, {report['matched']} of {report['target_joints']} joints "
              f"matched, root scaled x{report['root_ratio']:.4g}")
    return 0
