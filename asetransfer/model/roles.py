"""The skeleton-map vocabulary (Tonoli §3.1.2): generic humanoid joint roles.

A skeleton map names, for each role, the joint of a particular rig that plays it
(``upper_leg_l`` -> ``mixamorig:LeftUpLeg``).  :mod:`asetransfer.humanoid.skeleton_map`
proposes one from joint names; calibrations store one.  No imports: the command
line lists the roles in its help without loading the library.
"""
from __future__ import annotations

SIDES = ("l", "r")
CENTRE_ROLES = ("hips", "spine", "upper_spine", "neck", "head")
SIDE_ROLES = ("clavicle", "shoulder", "elbow", "wrist", "mid_hand", "thumb", "index", "pinky",
              "upper_leg", "knee", "ankle", "toe")
#: every role, in the order the JSON lists them
ROLES = CENTRE_ROLES + tuple(f"{r}_{s}" for r in SIDE_ROLES for s in SIDES)
#: roles every calibration needs (Tonoli §3.1.2: the minimal skeleton)
REQUIRED = ("hips", "upper_spine", "head") + tuple(
    f"{r}_{s}" for r in ("shoulder", "elbow", "wrist", "upper_leg", "knee", "ankle") for s in SIDES)


def validate_skeleton_map(mapping: dict, names) -> list:
    """Problems with a role -> joint mapping (empty when it is usable)."""
    problems = []
    known = set(names)
    for role, joint in mapping.items():
        if role not in ROLES:
            problems.append(f"unknown role {role!r}")
        elif joint not in known:
            problems.append(f"role {role!r} maps to joint {joint!r}, which the rig does not have")
    problems += [f"required role {r!r} is not mapped" for r in REQUIRED if r not in mapping]
    return problems
