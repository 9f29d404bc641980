"""The retargeting hand-off of ``asetransfer transfer``: ``--calibration CAL.json`` and ``--tpose``.

Kept apart from :mod:`cli.transfer`, which calls :func:`add_arguments`,
:func:`outputs_to_check`, :func:`prepare` and :func:`write` at its four steps.
Outputs sit next to ``OUT.glb``: ``OUT.calibration.json``, ``OUT.tpose.bvh`` and
``OUT.tpose.glb`` (``.gltf`` when OUT is ``.gltf``).
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from asetransfer.errors import InputError


def add_arguments(p) -> None:
    p.add_argument("--calibration", metavar="CAL.json",
                   help="the source's calibration (asetransfer calibrate-source); also write "
                        "OUT.calibration.json, the same calibration carried to the target")
    p.add_argument("--tpose", action="store_true",
                   help="also write the target in a canonical T-pose: OUT.tpose.bvh (its skeleton, one frame) "
                        "and OUT.tpose.glb, and OUT.calibration.json (units, T-pose checks; without --calibration "
                        "from the calibration asetransfer proposes for the source)")


def outputs(args) -> dict:
    """The extra output paths asked for: ``{"calibration": ..., "tpose_bvh": ..., "tpose_glb": ...}``."""
    stem, ext = os.path.splitext(args.output)
    out = {}
    if args.calibration or args.tpose:  # the T-pose BVH's units and checks live in the calibration
        out["calibration"] = stem + ".calibration.json"
    if args.tpose:
        out["tpose_bvh"] = stem + ".tpose.bvh"
        out["tpose_glb"] = stem + ".tpose" + (ext if ext.lower() in (".glb", ".gltf") else ".glb")
    return out


def outputs_to_check(args) -> list:
    """The extra outputs as :class:`~.outputs.Output` (checked with the others before any work)."""
    from .outputs import Output

    options = {"calibration": ("the calibration written next to -o", (".json",)),
               "tpose_bvh": ("the T-pose BVH written next to -o", (".bvh",)),
               "tpose_glb": ("the T-pose rig written next to -o", (".glb", ".gltf"))}
    return [Output(path, *options[key]) for key, path in outputs(args).items()]


@dataclass
class Plan:
    calibration: object = None   # the source's Calibration, or None
    mapping: dict | None = None  # skeleton map for the T-pose


def prepare(args, source) -> Plan:
    """Read and check the source calibration (and the skeleton map the T-pose needs)."""
    plan = Plan()
    if not args.calibration and not args.tpose:  # no hand-off asked for: nothing to import
        return plan
    from asetransfer.handoff.calibration import propose_calibration
    from asetransfer.humanoid.skeleton_map import propose_skeleton_map
    from asetransfer.io.calibration import read_calibration

    if args.calibration:
        plan.calibration = read_calibration(args.calibration, source)
        plan.mapping = plan.calibration.skeleton_map
    elif args.tpose:
        mapping, missing = propose_skeleton_map(source.skeleton)
        if missing:
            raise InputError(args.source, "--tpose needs a humanoid skeleton map, but the role(s) "
                             + ", ".join(missing) + " cannot be found from the joint names; "
                             "give one with --calibration CAL.json")
        plan.mapping = mapping
        try:  # the proposed calibration carries the units of OUT.tpose.bvh and the T-pose checks
            plan.calibration = propose_calibration(source, os.path.basename(args.source), mapping)
        except ValueError as e:
            raise InputError(args.source, f"--tpose: {e}") from None
    return plan


def write(args, plan: Plan, source, result, inputs) -> list:
    """Write the extra outputs; returns their paths."""
    if not args.tpose and plan.calibration is None:
        return []
    from asetransfer.handoff.calibration import transfer_calibration
    from asetransfer.handoff.motion import animation_to_bvh
    from asetransfer.humanoid.tpose import tpose, tpose_rig
    from asetransfer.io.bvh import write_bvh
    from asetransfer.io.calibration import write_calibration
    from asetransfer.io.gltf_write import write_rig
    from asetransfer.model.animation import Animation

    paths = outputs(args)
    inputs = tuple(inputs) + ((args.calibration,) if args.calibration else ()) + (args.output,)
    rig = result.rig
    tpose_info = None
    if args.tpose:
        anim, report = tpose(rig.skeleton, plan.mapping)
        posed = tpose_rig(rig, anim)
        write_bvh(paths["tpose_bvh"], animation_to_bvh(posed.skeleton, Animation.rest(posed.skeleton)), inputs)
        write_rig(paths["tpose_glb"], posed, max_influences=args.max_influences, inputs=inputs)
        tpose_info = {"bvh": os.path.basename(paths["tpose_bvh"]), "glb": os.path.basename(paths["tpose_glb"])}
    if plan.calibration is not None:
        try:
            cal = transfer_calibration(plan.calibration, source, rig, result.correspondence, file=args.output,
                                       source_file=args.source)
        except ValueError as e:
            raise InputError(args.calibration, str(e)) from None
        if tpose_info:
            cal.tpose.update(tpose_info)
        write_calibration(paths["calibration"], cal, inputs)
    return list(paths.values())
