"""``asetransfer retarget-motion MOTION.bvh --source SRC.glb --target OUT.glb -o ANIM.glb|.bvh``, or
``asetransfer retarget-motion ANIMATED.glb|.fbx [--clip NAME] --target OUT.glb -o ANIM.glb|.bvh``."""
from __future__ import annotations

import json
import logging
import os

log = logging.getLogger("asetransfer")

OUTPUTS = (".glb", ".gltf", ".bvh")
#: fewer joints sharing a name with the source's leave nothing to retarget (the roots of a
#: dog and of a human share "root": the clip would carry the whole body along rigidly)
MATCHED_LEAST = 2


def add_parser(sub):
    p = sub.add_parser(
        "retarget-motion", help="play a motion authored for the source on a transferred target",
        description="Copies every joint's local rotation from the source to the same-named target joint "
                    "(with --rest source, the default, the source's rest rotations come along: the target is "
                    "pose-normalised to the source as the motion plays, whatever rest pose its file keeps); the "
                    "root path is scaled by the ratio of the root heights (Tonoli §3.1.4). Writes the target with the motion as a glTF animation (.glb/.gltf) "
                    "or the target's skeleton and motion as BVH (.bvh; rest pose = the target's rest pose, "
                    "channels Zrotation Xrotation Yrotation, R = Rz Rx Ry, degrees).")
    p.add_argument("motion", help="BVH motion for the source skeleton (its zero pose = the source's rest pose), or "
                                  "a rigged glTF or FBX with animations or takes (its own rig is the source)")
    p.add_argument("--source", help="the source rig a BVH motion was made for (.glb .gltf .fbx .usd*); for a glTF "
                                    "or FBX motion, its own rig")
    p.add_argument("--clip", help="the glTF animation or FBX take to play, by name (default: its first)")
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
    from asetransfer.handoff.retarget import retarget, retarget_bvh
    from asetransfer.io import load_rig
    from asetransfer.io.atomic import atomic_write, transaction
    from asetransfer.io.bvh import read_bvh, write_bvh
    from asetransfer.io.gltf_write import write_rig

    inputs = tuple(p for p in (args.motion, args.source, args.target) if p)
    ext = os.path.splitext(args.output)[1].lower()
    outputs = [Output(args.output, "-o", OUTPUTS)]
    if args.report:
        outputs.append(Output(args.report, "--report", (".json",)))
    check_outputs(outputs, inputs)
    target = load_rig(args.target)
    from asetransfer.io import CLIP_READERS

    animated = os.path.splitext(args.motion)[1].lower() in CLIP_READERS  # a rig with its clips
    if animated:
        source, clip = _clip(args.motion, args.clip)
    else:
        if not args.source:
            raise InputError(args.motion, "a BVH motion needs --source, the rig it was made for")
        source = load_rig(args.source)
    shared = [n for n in target.skeleton.names if n in set(source.skeleton.names)]
    if len(shared) < MATCHED_LEAST:
        what = f"only the joint name {shared[0]!r}" if shared else "no joint name"
        raise InputError(args.target, f"shares {what} with the source rig "
                                      f"{os.path.basename(args.source or args.motion)}: nothing to retarget (joints "
                                      "are matched by name; give the rig transferred from that source)")
    if len(shared) < 0.5 * target.skeleton.n_joints:
        log.warning("%s: only %d of its %d joints share a name with the source rig %s: the others keep their rest "
                    "pose", args.target, len(shared), target.skeleton.n_joints,
                    os.path.basename(args.source or args.motion))
    if animated:
        anim, report = retarget(clip, source, target, rest=args.rest)
    else:
        anim, report = retarget_bvh(read_bvh(args.motion), source, target, path=args.motion, rest=args.rest)
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


def _clip(path, name):
    """``(rig, animation)``: the motion file's rig and its clip ``name`` (None: the first)."""
    from asetransfer.errors import InputError
    from asetransfer.io import load_clips

    rig, clips, skipped = load_clips(path)
    if name is None and clips:
        return rig, clips[0][1]
    found = [clip for clip_name, clip in clips if clip_name == name]
    if found:
        return rig, found[0]
    why = next((reason for clip_name, reason in skipped if clip_name == name), None)
    if why:
        raise InputError(path, f"animation {name!r} cannot be read: {why}")
    names = ", ".join(repr(n) for n, _ in clips) or "none that can be read"
    raise InputError(path, f"has no animation {name!r} (its animations: {names})" if name else
                     f"has no animation ({names})")
