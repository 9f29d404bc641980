"""``asetransfer calibrate-source RIG.glb -o CAL.json``: propose a calibration for a humanoid rig."""
from __future__ import annotations

from asetransfer.model.roles import ROLES



def add_parser(sub):
    p = sub.add_parser(
        "calibrate-source", help="propose a retargeting calibration for a humanoid rig",
        description="Skeleton map from the joint names (Mixamo, HumanIK, MakeHuman, Unreal, Rigify, Biped, VRoid, "
                    "Unity, Character Creator, Daz, Auto-Rig Pro, Second Life, MikuMikuDance), "
                    "Tonoli's body-surface points and 41 key vertices by geometric rules, limb capsules, "
                    "segment lengths, root height and the T-pose check, as JSON (docs/calibration.md). "
                    "Edit it as needed, then pass it to 'asetransfer transfer --calibration'.")
    p.add_argument("rig", help="rigged character (.glb .gltf .vrm .fbx .dae .pmx .usda .usdc .usdz)")
    p.add_argument("-o", "--output", required=True, help="calibration file to write (.json)")
    p.add_argument("--map", metavar="ROLE=JOINT", action="append", default=[],
                   help="set one skeleton-map role by hand (repeatable), e.g. --map neck=neck_01; "
                        "roles: " + ", ".join(ROLES))
    p.set_defaults(run=run)


def run(args) -> int:
    from asetransfer.io.outputs import Output, check_outputs
    from asetransfer.humanoid.skeleton_map import propose_skeleton_map

    from asetransfer.errors import InputError
    from asetransfer.handoff.calibration import propose_calibration
    from asetransfer.io import load_rig
    from asetransfer.io.calibration import write_calibration

    check_outputs([Output(args.output, "-o", (".json",))], (args.rig,))
    rig = load_rig(args.rig)
    mapping, _ = propose_skeleton_map(rig.skeleton)
    given = {}
    for item in args.map:
        role, sep, joint = item.partition("=")
        if not sep or role not in ROLES:
            raise InputError(None, f"--map {item!r}: expected ROLE=JOINT with ROLE one of {', '.join(ROLES)}")
        if joint not in rig.skeleton.names:
            raise InputError(args.rig, f"--map {item!r}: the rig has no joint {joint!r}")
        if given.get(role, joint) != joint:  # which one was meant cannot be told
            raise InputError(None, f"--map {item!r}: role {role!r} is already mapped to {given[role]!r}")
        mapping[role] = given[role] = joint
    try:
        cal = propose_calibration(rig, args.rig, mapping if args.map else None)
    except ValueError as e:
        raise InputError(args.rig, str(e)) from None
    write_calibration(args.output, cal, inputs=(args.rig,))
    if not getattr(args, "quiet", False):
        print(f"{args.output}: {len(cal.skeleton_map)} mapped joints, {len(cal.surface_points)} surface points, "
              f"{len(cal.key_vertices)} key vertices, {len(cal.capsules)} capsules; root height "
              f"{cal.root_height:.4g} {cal.units.get('length', '')}")
    return 0
