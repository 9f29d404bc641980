"""Rigged creatures of other body plans built from tubes: a snake, a spider, a fish and a bird,
each with its own proportions (``PLANS``: the builder and another build's arguments).

As ``tests/quadruped.py`` builds a four-legged creature: each part a capped tube weighted to
the bones along it, blended between them; Y up, facing +Z, the left at +X; joint names in no
humanoid convention (``Leg2_Tip_L``, ``Fin_R``).  The joints are the truth a transfer onto
the other build is scored against (``bench/bench_creature_plans.py``,
``tests/test_creature_markers.py``).
"""
from __future__ import annotations

import numpy as np

import asetransfer as at
from quadruped import SIDES, tube_rig


def snake(length=3.0, radius=0.12, segments=10, wave=0.3, head=0.18) -> at.Rig:
    """A snake lying in a wave on the ground: a chain of ``segments`` spine joints, a head."""
    joints = {"root": ([0.0, 0.0, 0.0], None)}
    spine = [f"Spine_{k:02d}" for k in range(segments + 1)]
    for k, name in enumerate(spine):
        joints[name] = ([wave * np.sin(0.9 * k), radius, length / 2 - k * length / segments],
                        "Head" if k == 0 else spine[k - 1])
    joints["Head"] = (joints["Spine_00"][0], "root")
    joints["Head_Tip"] = (np.add(joints["Head"][0], [0.0, 0.02, 0.35]), "Head")
    joints = {name: joints[name] for name in ("root", "Head", *spine, "Head_Tip")}
    pieces = [("Head", "Head_Tip", head, ("Head", "Head"))]
    pieces += [(a, b, radius, (a, b)) for a, b in zip(spine[:-1], spine[1:])]
    return tube_rig(joints, pieces)


def spider(body=0.5, abdomen=0.7, leg=1.0, height=0.5, spread=1.0) -> at.Rig:
    """A spider: a body with a head and an abdomen, four legs a side, each raised to a knee."""
    joints = {"root": ([0.0, 0.0, 0.0], None), "Body": ([0.0, height, 0.1], "root"),
              "Abdomen": ([0.0, height + 0.05, -0.3], "Body"),
              "Abdomen_Tip": ([0.0, height + 0.1, -0.3 - abdomen], "Abdomen"),
              "Head": ([0.0, height, 0.1 + body], "Body")}
    pieces = [("Body", "Head", 0.22, ("Body", "Head")), ("Abdomen", "Abdomen_Tip", 0.3, ("Abdomen", "Abdomen"))]
    for side, x in SIDES:
        for i, angle in enumerate(np.radians([40, 10, -20, -50])):
            out = np.array([x * np.cos(angle), 0.0, np.sin(angle)]) * spread
            top = np.array([x * 0.15, height, 0.1 + 0.12 * (1.5 - i)])
            foot = top + out * leg * 1.1
            foot[1] = 0.03
            upper, lower, tip = (f"Leg{i + 1}_{part}_{side}" for part in ("Upper", "Lower", "Tip"))
            joints[upper] = (top, "Body")
            joints[lower] = (top + out * leg * 0.5 + [0.0, 0.35 * leg, 0.0], upper)
            joints[tip] = (foot, lower)
            pieces += [(upper, lower, 0.05, (upper, upper, lower)), (lower, tip, 0.04, (lower, lower))]
    return tube_rig(joints, pieces)


def fish(length=1.6, depth=0.35, tail=0.5, fin=0.35) -> at.Rig:
    """A fish: a body, a head, a tail bending in two joints to a forked fin, a dorsal fin and
    two pectoral fins."""
    z = 0.2
    joints = {"root": ([0.0, 0.0, 0.0], None), "Body": ([0.0, 0.0, z], "root"),
              "Head": ([0.0, 0.0, z + 0.4 * length], "Body"), "Head_Tip": ([0.0, 0.0, z + 0.6 * length], "Head"),
              "Tail_1": ([0.0, 0.0, z - 0.3 * length], "Body"), "Tail_2": ([0.0, 0.0, z - 0.5 * length], "Tail_1"),
              "Tail_Fin": ([0.0, 0.0, z - 0.5 * length - 0.05], "Tail_2"),
              "Tail_Fin_Up": ([0.0, 0.8 * tail, z - 0.5 * length - 0.6 * tail], "Tail_Fin"),
              "Tail_Fin_Down": ([0.0, -0.8 * tail, z - 0.5 * length - 0.6 * tail], "Tail_Fin"),
              "Fin_Top": ([0.0, 0.9 * depth, 0.1], "Body"), "Fin_Top_Tip": ([0.0, 0.9 * depth + 0.8 * fin, -0.1], "Fin_Top")}
    pieces = [("Body", "Head", depth, ("Body", "Head")), ("Head", "Head_Tip", 0.7 * depth, ("Head", "Head")),
              ("Tail_1", "Body", 0.8 * depth, ("Tail_1", "Body")), ("Tail_2", "Tail_1", 0.45 * depth, ("Tail_2", "Tail_1")),
              ("Tail_Fin", "Tail_Fin_Up", 0.07, ("Tail_Fin", "Tail_Fin")),
              ("Tail_Fin", "Tail_Fin_Down", 0.07, ("Tail_Fin", "Tail_Fin")),
              ("Fin_Top", "Fin_Top_Tip", 0.06, ("Fin_Top", "Fin_Top"))]
    for side, x in SIDES:
        joints[f"Fin_{side}"] = ([x * 0.8 * depth, -0.1, z + 0.25 * length], "Body")
        joints[f"Fin_Tip_{side}"] = ([x * (0.8 * depth + fin), -0.25, z + 0.1 * length], f"Fin_{side}")
        pieces.append((f"Fin_{side}", f"Fin_Tip_{side}", 0.06, (f"Fin_{side}", f"Fin_{side}")))
    return tube_rig(joints, pieces)


def bird(span=1.2, body=0.35, neck=0.25, legs=0.35, tail=0.3, beak=0.15) -> at.Rig:
    """A standing bird, wings spread: a body, a neck to a head with a beak, a tail, two wings
    of two bones and two legs with a toe."""
    h = legs + body
    joints = {"root": ([0.0, 0.0, 0.0], None), "Body": ([0.0, h, 0.0], "root"), "Chest": ([0.0, h + 0.05, 0.3], "Body"),
              "Neck": ([0.0, h + 0.15, 0.4], "Chest"), "Head": ([0.0, h + 0.15 + neck, 0.45], "Neck"),
              "Beak": ([0.0, h + 0.12 + neck, 0.57], "Head"), "Beak_Tip": ([0.0, h + 0.1 + neck, 0.57 + beak], "Beak"),
              "Tail": ([0.0, h, -0.25], "Body"), "Tail_Tip": ([0.0, h + 0.05, -0.25 - tail], "Tail")}
    pieces = [("Body", "Chest", 0.6 * body, ("Body", "Chest")), ("Tail", "Body", 0.5 * body, ("Tail", "Body")),
              ("Chest", "Head", 0.08, ("Neck", "Head")), ("Head", "Beak", 0.1, ("Head", "Head")),
              ("Beak", "Beak_Tip", 0.04, ("Beak", "Beak")), ("Tail", "Tail_Tip", 0.1, ("Tail", "Tail"))]
    for side, x in SIDES:
        wing, mid, tip = f"Wing_{side}", f"Wing_Mid_{side}", f"Wing_Tip_{side}"
        leg, shin, foot, toe = f"Leg_{side}", f"Shin_{side}", f"Foot_{side}", f"Toe_{side}"
        joints.update({wing: ([x * 0.15, h + 0.15, 0.25], "Chest"), mid: ([x * (0.15 + 0.4 * span), h + 0.2, 0.2], wing),
                       tip: ([x * (0.15 + span), h + 0.22, 0.1], mid), leg: ([x * 0.12, h - 0.1, 0.05], "Body"),
                       shin: ([x * 0.12, 0.5 * legs, 0.0], leg), foot: ([x * 0.12, 0.03, 0.02], shin),
                       toe: ([x * 0.12, 0.02, 0.15], foot)})
        pieces += [(wing, mid, 0.07, (wing, wing, mid)), (mid, tip, 0.05, (mid, mid)), (leg, shin, 0.05, (leg, shin)),
                   (shin, foot, 0.03, (shin, foot)), (foot, toe, 0.03, (foot, foot))]
    return tube_rig(joints, pieces)


#: plan -> (builder, another build's arguments: the target of a same-plan transfer)
PLANS = {"snake": (snake, dict(length=2.2, radius=0.16, wave=0.15, head=0.22)),
         "spider": (spider, dict(body=0.35, abdomen=0.5, leg=1.3, height=0.4, spread=1.2)),
         "fish": (fish, dict(length=1.2, depth=0.45, tail=0.6, fin=0.25)),
         "bird": (bird, dict(span=1.6, body=0.42, neck=0.15, legs=0.25, tail=0.2, beak=0.25))}
