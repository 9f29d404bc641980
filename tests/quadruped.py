"""A rigged four-legged creature built from tubes, of any proportions: the test creature.

Y up, facing +Z, its left at +X (the production set's conventions).  Each part (trunk, neck,
head with its snout and ears, tail, legs with their paws) is a capped tube of its own that
overlaps the trunk, as a low-poly game creature in pieces is; a tube's vertices are weighted
to its bones, blended at the joints.  Joint names follow no humanoid convention (a fox-like
game rig's: ``Spine_1``, ``Back_Leg_Upper_L``...), so automatic markers read it as no
two-legged body.  The joints are the truth a transfer onto another build is scored against.
"""
from __future__ import annotations

import numpy as np

import asetransfer as at

SIDES = (("L", 1.0), ("R", -1.0))


def _tube(a, b, radius, n_ring=10, n_seg=6):
    """A capped tube from ``a`` to ``b``: (vertices, faces, t) with ``t`` in [0, 1] along it."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    axis = (b - a) / np.linalg.norm(b - a)
    side = np.cross(axis, [0.0, 1.0, 0.0] if abs(axis[1]) < 0.9 else [1.0, 0.0, 0.0])
    side /= np.linalg.norm(side)
    other = np.cross(axis, side)
    ang = np.linspace(0, 2 * np.pi, n_ring, endpoint=False)
    ring = radius * (np.cos(ang)[:, None] * side + np.sin(ang)[:, None] * other)
    ts = np.linspace(0.0, 1.0, n_seg + 1)
    verts = [a + t * (b - a) + ring for t in ts]
    verts = np.concatenate(verts + [[a - 0.6 * radius * axis], [b + 0.6 * radius * axis]])
    t = np.concatenate([np.repeat(ts, n_ring), [0.0, 1.0]])
    faces = []
    for s in range(n_seg):
        for k in range(n_ring):
            p, q = s * n_ring + k, s * n_ring + (k + 1) % n_ring
            faces += [(p, q, p + n_ring), (q, q + n_ring, p + n_ring)]
    start, end, last = len(verts) - 2, len(verts) - 1, n_seg * n_ring
    for k in range(n_ring):
        faces += [(start, (k + 1) % n_ring, k), (end, last + k, last + (k + 1) % n_ring)]
    return verts, np.array(faces), t


#: a dog to the default fox-like build: shorter, taller, bigger head and ears, short raised tail
DOG = dict(length=1.3, height=1.2, tail=0.45, tail_lift=0.5, neck=0.45, head=0.3, ears=0.35, girth=0.27, rings=12)


def quadruped(length=1.6, height=1.0, tail=0.8, tail_lift=0.3, neck=0.35, head=0.22, ears=0.2,
              girth=0.22, rings=10):
    """A rigged quadruped (:class:`asetransfer.Rig`) of the given proportions (body units).

    ``length``: hips to chest; ``height``: the back's height (the legs reach from the
    trunk's middle to the ground); ``tail``, ``tail_lift``: the tail's length and
    its rise over its length; ``neck``; ``head``: the head's radius; ``ears``; ``girth``:
    the trunk's radius."""
    back = height - girth
    hips, chest = np.array([0.0, back, -length / 2]), np.array([0.0, back, length / 2])
    joints = {"root": ([0.0, 0.0, 0.0], None), "Spine_1": (hips, "root"),
              "Spine_2": ((hips + chest) / 2, "Spine_1"), "Spine_3": (chest, "Spine_2")}
    neck_top = chest + [0.0, neck * 0.8, neck * 0.6]
    joints["Neck"] = (chest + [0.0, 0.1 * neck, 0.05 * neck], "Spine_3")
    joints["Head"] = (neck_top, "Neck")
    joints["Head_Tip"] = (neck_top + [0.0, 0.0, 2.2 * head], "Head")
    tail_end = hips + [0.0, tail_lift, -tail]
    joints["Tail_1"] = (hips + [0.0, 0.0, -0.1 * tail], "Spine_1")
    joints["Tail_2"] = ((joints["Tail_1"][0] + tail_end) / 2, "Tail_1")
    joints["Tail_Tip"] = (tail_end, "Tail_2")
    for side, x in SIDES:
        joints[f"Ear_{side}"] = (neck_top + [x * 0.5 * head, 0.6 * head, 0.0], "Head")
        joints[f"Ear_Tip_{side}"] = (neck_top + [x * 0.7 * head, 0.6 * head + ears, 0.0], f"Ear_{side}")
        for leg, at_z, parent in (("Front", chest[2] - 0.3 * girth, "Spine_3"),
                                  ("Back", hips[2] + 0.3 * girth, "Spine_1")):
            top = np.array([x * 0.6 * girth, back, at_z])
            paw = np.array([x * 0.6 * girth, 0.06, at_z])
            knee = (top + paw) / 2 + [0.0, 0.0, 0.04 * (1 if leg == "Back" else -1)]
            joints[f"{leg}_Leg_Upper_{side}"] = (top, parent)
            joints[f"{leg}_Leg_Lower_{side}"] = (knee, f"{leg}_Leg_Upper_{side}")
            joints[f"{leg}_Paw_{side}"] = (paw, f"{leg}_Leg_Lower_{side}")
            joints[f"{leg}_Paw_Tip_{side}"] = (paw + [0.0, 0.0, 0.12], f"{leg}_Paw_{side}")
    pieces = [  # (from joint, to joint, radius, bones along it)
        ("Spine_1", "Spine_3", girth, ("Spine_1", "Spine_2", "Spine_3")),
        ("Spine_3", "Head", 0.45 * girth, ("Neck", "Head")),
        ("Head", "Head_Tip", head, ("Head", "Head")),
        ("Tail_1", "Tail_Tip", 0.25 * girth, ("Tail_1", "Tail_2")),
    ]
    for side, _ in SIDES:
        pieces.append((f"Ear_{side}", f"Ear_Tip_{side}", 0.3 * head, (f"Ear_{side}", f"Ear_{side}")))
        for leg in ("Front", "Back"):
            pieces.append((f"{leg}_Leg_Upper_{side}", f"{leg}_Leg_Lower_{side}", 0.35 * girth,
                           (f"{leg}_Leg_Upper_{side}", f"{leg}_Leg_Upper_{side}", f"{leg}_Leg_Lower_{side}")))
            pieces.append((f"{leg}_Leg_Lower_{side}", f"{leg}_Paw_{side}", 0.3 * girth,
                           (f"{leg}_Leg_Lower_{side}", f"{leg}_Leg_Lower_{side}", f"{leg}_Paw_{side}")))
            pieces.append((f"{leg}_Paw_{side}", f"{leg}_Paw_Tip_{side}", 0.3 * girth, (f"{leg}_Paw_{side}",) * 2))
    return tube_rig(joints, pieces, rings)


def tube_rig(joints: dict, pieces: list, rings: int = 10) -> at.Rig:
    """The rig of ``joints`` (name -> (position, parent name or None)) and its tube ``pieces``
    ((from joint, to joint, radius, the bones along it)), each a capped tube of ``rings``
    sides weighted to its bones."""
    names = list(joints)
    at_ = {n: np.asarray(p, float) for n, (p, _) in joints.items()}
    verts, faces, dense = [], [], []
    for a, b, radius, bones in pieces:
        v, f, t = _tube(at_[a], at_[b], radius, n_ring=rings)
        w = np.zeros((len(v), len(names)))
        # bones along the tube, each weighting its stretch and blending linearly into the next
        pos = t * (len(bones) - 1)
        lo = np.clip(np.floor(pos).astype(int), 0, len(bones) - 2)
        frac = pos - lo
        for k in range(len(v)):
            w[k, names.index(bones[lo[k]])] += 1 - frac[k]
            w[k, names.index(bones[lo[k] + 1])] += frac[k]
        faces.append(f + sum(len(x) for x in verts))
        verts.append(v)
        dense.append(w)
    world = np.tile(np.eye(4), (len(names), 1, 1))
    world[:, :3, 3] = [at_[n] for n in names]
    parents = np.array([-1 if joints[n][1] is None else names.index(joints[n][1]) for n in names])
    skeleton = at.Skeleton.from_world(tuple(names), parents, world)
    mesh = at.Mesh(np.concatenate(verts), np.concatenate(faces))
    return at.Rig(mesh, skeleton, at.SkinWeights.from_dense(np.concatenate(dense)))
