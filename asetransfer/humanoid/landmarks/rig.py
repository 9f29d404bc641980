"""Landmarks of a rigged character read from its skeleton and skin weights.

A source carries a named skeleton: its skeleton map (:mod:`~asetransfer.humanoid.skeleton_map`)
says where the head, the hands and the feet are, and its weights say which surface each
of them moves.  So a source made of separate pieces (a robot's plates, a soldier's gear),
or one whose shape the geometric rules read the wrong way round, still has its landmarks:
the same names and meanings as the geometric rules (:mod:`.find`), each taken on the surface
its joints move, in the body frame of its joints (up from the hips to the head, left from
its left/right joints, :func:`~asetransfer.humanoid.body.body_axes`):

* head top, nose tip, back of the head, ears: the head's region (vertices moved at least
  half by the head joint and its descendants): its highest point near the midline; its most
  forward point on the midline; straight behind the nose on the midline; its farthest
  points left and right at the nose's height;
* hand tips and fingertips: the hand's region's farthest point from the wrist, and each
  finger's from its first joint (fingers named from their joints,
  :func:`~asetransfer.humanoid.naming.finger_of`, numbered ones counted as the skeleton
  map counts them);
* toe tips and heels: the foot's region's most forward point below the ankle, and its
  rearmost point at the sole;
* the crotch: where a ray cast down from between the upper legs leaves the body;
* the elbows and knees: the sections through the elbow and knee joints across their bones,
  their top and bottom, front and back (:mod:`.limbs`: what the waist a target's limb
  narrows to stands for).
"""
from __future__ import annotations

import numpy as np

from ...geometry.rays import cast_rays
from ...geometry.topology import vertex_pieces, welded_surface
from ...model.rig import Rig
from ..body import body_axes
from ..naming import finger_of
from ..skeleton_map import numbered_from_zero, propose_skeleton_map
from .find import Landmarks, on_triangles, spacing_of
from .frame import BodyFrame
from .limbs import ELBOW, KNEE, extremes, joint_section
from .neck import nearest_corner, throat_and_nape
from .surface import NotHumanoidError

#: a vertex belongs to a joint set's region when the set moves it at least this much
REGION_WEIGHT = 0.5
#: the midline band of the head (nose, top, back), as a fraction of the body height
MIDLINE = 0.02
#: the ears are looked for within this height of the nose, a fraction of the body height
EAR_BAND = 0.03
#: the sole: the foot's region within this height of its lowest point, a fraction of the height
SOLE = 0.02
#: the confidence of a landmark read from the rig (its joints name what it is)
RIG_CONFIDENCE = 1.0

def rig_landmarks(rig: Rig) -> Landmarks:
    """The landmarks of a rigged humanoid from its skeleton map and weights (module docstring);
    the throat and the nape by the geometric rule (:mod:`.neck`) in the rig's frame.

    Raises
    ------
    NotHumanoidError when the skeleton map misses a role the landmarks need (head, hips,
    wrists, ankles) or the rig's left and right joints coincide.
    """
    skeleton, mesh = rig.skeleton, rig.mesh
    mapping, missing = propose_skeleton_map(skeleton)
    need = [r for r in ("head", "hips", "wrist_l", "wrist_r", "ankle_l", "ankle_r") if r not in mapping]
    if need:
        said = [f"{'left' if r.endswith('_l') else 'right'} {r[:-2]}" if r[-2:] in ("_l", "_r") else r
                for r in need]
        raise NotHumanoidError("the skeleton's joint names do not say where its " + ", ".join(said) + " are")
    index = {n: i for i, n in enumerate(skeleton.names)}
    role = {r: index[n] for r, n in mapping.items()}
    joints = skeleton.bind_world[:, :3, 3]
    try:
        up, forward, left = body_axes({r: joints[j] for r, j in role.items()})
    except ValueError as e:
        raise NotHumanoidError(str(e)) from None
    v = mesh.vertices
    height_of = v @ up
    height = float(height_of.max() - height_of.min())
    if not height > 0:
        raise NotHumanoidError("the mesh has no height")
    named = {}
    named.update(_head(rig, role["head"], up, forward, left, height))
    for side, s in (("l", "L"), ("r", "R")):
        named.update({f"{k}.{s}": x for k, x in _hand(rig, role[f"wrist_{side}"], height).items()})
        named.update({f"{k}.{s}": x for k, x in _foot(rig, role[f"ankle_{side}"], up, forward, height).items()})
    crotch = _crotch(rig, role, up, forward)
    if crotch is not None:
        named["crotch"] = crotch
    top = v[named["head_top"]] if "head_top" in named else v[int(np.argmax(height_of))]
    ground = top - (float(top @ up) - float(height_of.min())) * up
    frame = BodyFrame(up, forward, left, height, ground)
    surface = _neck(mesh, frame, named, float(rig.skeleton.bind_world[role["head"], :3, 3] @ left))
    named.update({k: nearest_corner(mesh.faces, p) for k, p in surface.items()})
    limbs = _limbs(mesh, joints, role, frame)
    if limbs:
        face, bary, corners = on_triangles(v, mesh.faces, np.array(list(limbs.values())))
        named.update({k: int(c) for k, c in zip(limbs, corners)})
        surface.update({k: (int(f), b) for k, f, b in zip(limbs, face, bary)})
    return Landmarks(frame, {k: int(x) for k, x in named.items()}, {k: RIG_CONFIDENCE for k in named}, surface,
                     spacing_of(v, mesh.faces, height))


def _limbs(mesh, joints: np.ndarray, role: dict, frame: BodyFrame) -> dict:
    """The elbows' and knees' landmarks (:mod:`.limbs`) on the sections through the elbow and
    knee joints across their bones, as points (name -> (3,))."""
    out = {}
    for side, s in (("l", "L"), ("r", "R")):
        other = "r" if side == "l" else "l"
        for chain, names, direction in ((("shoulder", "elbow", "wrist"), ELBOW, frame.up),
                                        (("upper_leg", "knee", "ankle"), KNEE, frame.forward)):
            if not all(f"{r}_{side}" in role for r in chain):
                continue
            mate = joints[role[f"{chain[1]}_{other}"]] if f"{chain[1]}_{other}" in role else None
            cut = joint_section(mesh.vertices, mesh.faces, *(joints[role[f"{r}_{side}"]] for r in chain),
                                frame.height, mate)
            if cut is not None:
                out.update({f"{n}.{s}": p for n, p in extremes(cut, names, direction).items()})
    return out


def region(rig: Rig, joints) -> np.ndarray:
    """(V,) True on the vertices the joints ``joints`` move together at least ``REGION_WEIGHT``."""
    skin = rig.skin
    moved = (np.isin(skin.indices, np.asarray(list(joints), dtype=np.int64)) * skin.weights).sum(axis=1)
    return moved >= REGION_WEIGHT


def _with_below(rig: Rig, joint: int) -> list:
    return [joint, *rig.skeleton.hierarchy.descendants(joint).tolist()]


def _head(rig: Rig, head: int, up, forward, left, height: float) -> dict:
    """Head top, nose tip, back of the head and ears on the head's region."""
    v = rig.mesh.vertices
    ids = np.flatnonzero(region(rig, _with_below(rig, head)))
    if not len(ids):
        return {}
    centre = rig.skeleton.bind_world[head, :3, 3]
    across = (v[ids] - centre) @ left
    mid = ids[np.abs(across) <= MIDLINE * height]
    mid = mid if len(mid) else ids[np.argsort(np.abs(across))[:1]]
    rise, ahead = v[mid] @ up, v[mid] @ forward
    out = {"head_top": int(mid[np.argmax(rise)]), "nose_tip": int(mid[np.argmax(ahead)])}
    nose = float(v[out["nose_tip"]] @ up)
    back = _last_crossing(rig, v[out["nose_tip"]], -np.asarray(forward, dtype=np.float64))
    if back is not None:
        out["head_back"] = back
    ring = ids[np.abs(v[ids] @ up - nose) <= EAR_BAND * height]
    if len(ring):
        out["ear.L"] = int(ring[np.argmax(v[ring] @ left)])
        out["ear.R"] = int(ring[np.argmin(v[ring] @ left)])
    return out


def _hand(rig: Rig, wrist: int, height: float) -> dict:
    """Hand tip and fingertips: the farthest points from the wrist of the hand's region and of
    each named finger's."""
    v, skeleton = rig.mesh.vertices, rig.skeleton
    base = skeleton.bind_world[wrist, :3, 3]
    out = {}
    below = skeleton.hierarchy.descendants(wrist).tolist()
    zero_based = numbered_from_zero([skeleton.names[j] for j in below], skeleton.bind_world[below, :3, 3])
    fingers = {}
    for j in below:
        finger = finger_of(skeleton.names[j], zero_based)
        if finger is not None:
            fingers.setdefault(finger, []).append(j)
    in_fingers = {j for joints in fingers.values() for j in joints}
    hand = _without_held(rig, np.flatnonzero(region(rig, [wrist, *below])), [j for j in below if j not in in_fingers])
    if len(hand):
        out["hand_tip"] = int(hand[np.argmax(np.linalg.norm(v[hand] - base, axis=1))])
    for finger, joints in fingers.items():
        ids = np.flatnonzero(region(rig, joints))
        root = skeleton.bind_world[min(joints, key=lambda j: (len(skeleton.hierarchy.ancestors(j)), j)), :3, 3]
        if len(ids):
            out[f"{finger}_tip"] = int(ids[np.argmax(np.linalg.norm(v[ids] - root, axis=1))])
    return out


def _without_held(rig: Rig, hand: np.ndarray, others: list) -> np.ndarray:
    """The vertices ``hand`` (the hand's region) without the pieces it holds: a piece wholly in
    the region and moved mostly by joints below the wrist that are no finger (``others``: a
    weapon slot).  KayKit's knight holds its swords by ``handslot.r``: their tips were its
    hand tips, and its arms were stretched to them.  A piece reaching past the region (an
    arm with its hand) or held by fingers (a mannequin's knuckle chains) stays; so does
    everything when nothing else would."""
    if not others or not len(hand):
        return hand
    piece = vertex_pieces(rig.mesh.vertices, rig.mesh.faces)
    size = np.bincount(piece, minlength=piece.max() + 1)
    inside = np.bincount(piece[hand], minlength=len(size))
    held = np.bincount(piece[hand], weights=region(rig, others)[hand], minlength=len(size))
    prop = (inside == size) & (held > 0.5 * size)
    kept = hand[~prop[piece[hand]]]
    return kept if len(kept) else hand


def _foot(rig: Rig, ankle: int, up, forward, height: float) -> dict:
    """Toe tip (the foot's most forward point below the ankle) and heel (its rearmost point at
    the sole)."""
    v = rig.mesh.vertices
    ids = np.flatnonzero(region(rig, _with_below(rig, ankle)))
    if not len(ids):
        return {}
    rise = v[ids] @ up
    low = ids[rise <= float(rig.skeleton.bind_world[ankle, :3, 3] @ up)]
    low = low if len(low) else ids
    sole = ids[rise <= rise.min() + SOLE * height]
    return {"toe_tip": int(low[np.argmax(v[low] @ forward)]), "heel": int(sole[np.argmin(v[sole] @ forward)])}


def _neck(mesh, frame: BodyFrame, named: dict, mid: float) -> dict:
    """The throat and the nape by the geometric rule (:func:`.neck.throat_and_nape`) on the
    welded surface, as ``name -> (face, bary)``."""
    if "nose_tip" not in named and "head_top" not in named:
        return {}
    vertices, faces, _ = welded_surface(mesh.vertices, mesh.faces)
    up = frame.up
    crotch = float(mesh.vertices[named["crotch"]] @ up) if "crotch" in named else None
    nose = float(mesh.vertices[named.get("nose_tip", named.get("head_top"))] @ up)
    return throat_and_nape(vertices, faces, frame, mid, crotch, nose)


def _crotch(rig: Rig, role: dict, up, forward) -> int | None:
    """The vertex nearest where a ray cast down from between the thighs (midway between the
    upper legs' joints, at the depth of the middle of their regions; else from the hips
    joint) first leaves the body; None when it hits nothing.

    The joints place the ray across the body: a region's middle moves with whatever its
    weights carry besides the thigh (Sintel's knife and pouch on her right hip: the middle
    of the regions 4 cm right of her mid-plane, the ray down her right thigh, her crotch read
    at a third of her height, 0.18 H below her legs' parting)."""
    joints = rig.skeleton.bind_world[:, :3, 3]
    start = joints[role["hips"]]
    if "upper_leg_l" in role and "upper_leg_r" in role:
        v = rig.mesh.vertices
        start = 0.5 * (joints[role["upper_leg_l"]] + joints[role["upper_leg_r"]])
        thighs = [region(rig, [role[f"upper_leg_{s}"]]) for s in "lr"]
        if all(t.any() for t in thighs):
            depth = 0.5 * sum(float(np.median(v[t] @ forward)) for t in thighs)
            start = start + (depth - start @ forward) * np.asarray(forward)
    mesh = rig.mesh
    hits = cast_rays(mesh.vertices, mesh.faces, start[None], -np.asarray(up, dtype=np.float64)[None], first=True)
    if not len(hits.face):
        return None
    corners = mesh.faces[hits.face[0]]
    return int(corners[np.argmax(hits.bary[0])])


def _last_crossing(rig: Rig, origin: np.ndarray, direction: np.ndarray) -> int | None:
    """The vertex nearest the farthest crossing of the ray from ``origin`` along ``direction``
    with the mesh (the outside of the head behind the nose); None when it crosses nothing."""
    mesh = rig.mesh
    hits = cast_rays(mesh.vertices, mesh.faces, origin[None], direction[None], first=False)
    if not len(hits.face):
        return None
    k = int(np.argmax(hits.t))
    return int(mesh.faces[hits.face[k]][np.argmax(hits.bary[k])])


def checked_by(geometric: Landmarks, from_rig: Landmarks, tolerance: float, mesh) -> Landmarks:
    """``geometric`` with each landmark farther than ``tolerance`` (a fraction of the height)
    from ``from_rig``'s of the same name replaced by it (its point between vertices dropped
    with it); the frame, confidences and spacing stay the geometric ones."""
    at, rig_at = geometric.positions(mesh.vertices), from_rig.positions(mesh.vertices)
    limit = tolerance * geometric.frame.height
    wrong = {k for k in at if k in rig_at and np.linalg.norm(at[k] - rig_at[k]) > limit}
    if not wrong:
        return geometric
    vertex = {k: (from_rig.vertex[k] if k in wrong else x) for k, x in geometric.vertex.items()}
    surface = {k: p for k, p in geometric.surface.items() if k not in wrong}
    shape = {k: (geometric.vertex[k], geometric.surface.get(k)) for k in sorted(wrong)}
    return Landmarks(geometric.frame, vertex, geometric.confidence, surface, geometric.spacing, geometric.agreement,
                     shape)


def read_as_the_target(source: Landmarks, source_vertices: np.ndarray, target: Landmarks,
                       target_vertices: np.ndarray) -> tuple:
    """``(landmarks, names)``: ``source`` with each landmark its rig replaced
    (``Landmarks.shape_reading``) back at its shape's reading where that lies nearer the
    target's landmark of the same name, each in its body frame
    (:meth:`~.frame.BodyFrame.coordinates`, in units of the height); ``names`` those moved back.

    The target is read by the shape rules alone.  Where they misread a kind of body they
    misread the source and the target alike, and the two shape readings link what corresponds:
    Blender's metaball humans have no nose, the rules take the chin for it (2-11 %H below the
    rig's nose), and linking the rig's nose to the target's chin put the neck joints 4-8 %H
    low.  Where the source's shape is misread its own way (a cartoon bunny's ears and boots),
    the rig's reading lies nearer the target's and stays."""
    names = [k for k in source.shape_reading if k in target.vertex]
    if not names:
        return source, []
    by_rig, theirs = source.positions(source_vertices), target.positions(target_vertices)
    apart = lambda p, k: np.linalg.norm(source.frame.coordinates(p) - target.frame.coordinates(theirs[k]))  # noqa: E731
    reading = source.shape_reading
    back = [k for k in names if apart(source_vertices[reading[k][0]], k) < apart(by_rig[k], k)]
    if not back:
        return source, []
    vertex = {**source.vertex, **{k: int(reading[k][0]) for k in back}}
    surface = {**source.surface, **{k: reading[k][1] for k in back if reading[k][1] is not None}}
    kept = {k: x for k, x in reading.items() if k not in back}
    return Landmarks(source.frame, vertex, source.confidence, surface, source.spacing, source.agreement, kept), back


def with_rig_limbs(geometric: Landmarks, from_rig: Landmarks) -> Landmarks:
    """``geometric`` with the elbows and knees of ``from_rig`` (the sections through its
    joints) where its shape has none (limbs that do not narrow: the bunny's, the zombie's,
    MakeHuman's): a target's waists stand for its joints.  Where the shape has them, its own
    stand, read by the target's rule: the same body scaled reads the same (the fixture
    source's arms narrow 2 %H inside its elbow joints)."""
    groups = [names for names in (ELBOW, KNEE) if not any(k.partition(".")[0] in names for k in geometric.vertex)]
    added = [k for k in from_rig.vertex if any(k.partition(".")[0] in names for names in groups)]
    if not added:
        return geometric
    return Landmarks(geometric.frame, {**geometric.vertex, **{k: from_rig.vertex[k] for k in added}},
                     {**geometric.confidence, **{k: from_rig.confidence[k] for k in added}},
                     {**geometric.surface, **{k: from_rig.surface[k] for k in added if k in from_rig.surface}},
                     geometric.spacing, geometric.agreement, geometric.shape_reading)
