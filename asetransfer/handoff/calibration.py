"""Calibration of a character for surface-aware motion retargeting (Tonoli Ch. 3, Molla §4.2,
ReConForM §3.1), made once on a source rig and carried to every target.

A :class:`Calibration` holds

* ``skeleton_map``: generic roles -> the rig's joints (:mod:`asetransfer.humanoid.skeleton_map`);
* ``surface_points``: Tonoli's Table 3.1 body-surface points, each a surface location
  (triangle + barycentric coordinates) attached to a joint;
* ``meshes``: the crude torso and head meshes spanned by those points (Tonoli §3.2.1);
* ``capsules``: upper arms, forearms, thighs and shins, radius measured on the mesh;
* ``key_vertices``: ReConForM-style key vertices (41 by default);
* ``segment_lengths`` (Tonoli Table 3.2), ``root_height`` (§3.1.4), ``units``, ``axes``
  and, when made, the ``tpose`` check.

:func:`propose_calibration` makes one automatically for a humanoid rig;
:func:`transfer_calibration` carries it through a dense correspondence to a rigged
target (same points on the target surface, everything measured anew on the
target); :func:`write_calibration` / :func:`read_calibration` store it as JSON
(``docs/calibration.md``).
"""
from __future__ import annotations

import logging
import os

import numpy as np

from ..humanoid.body_points import CALIBRATION_MESHES, KEY_VERTICES, SURFACE_POINTS, finger_chains, locate
from ..model.correspondence import Correspondence
from ..model.rig import Rig
from ..humanoid.body import body_axes, height_above_ground
from ..humanoid.skeleton_map import propose_skeleton_map
from ..model.roles import CENTRE_ROLES, SIDES, validate_skeleton_map
from ..model.surface import SurfacePoints, interpolate
from ..geometry.surface import closest_points
from ..humanoid.tpose import tpose
from ..model.calibration import Calibration, Capsule, rounded, rounded_vector, surface_point_on

log = logging.getLogger("asetransfer")

#: Tonoli Table 3.2: bone segments between mapped joints (per side unless centre)
SEGMENTS = (("spine", "hips", "upper_spine"), ("neck", "head", "upper_spine"),
            ("clavicle", "upper_spine", "shoulder"), ("arm", "shoulder", "elbow"), ("forearm", "elbow", "wrist"),
            ("hip", "hips", "upper_leg"), ("femur", "upper_leg", "knee"), ("tibia", "knee", "ankle"))
#: limb capsules: name, start role, end role, Table 3.1 limb point
CAPSULES = (("upper_arm", "shoulder", "elbow", "arm"), ("forearm", "elbow", "wrist", "forearm"),
            ("thigh", "upper_leg", "knee", "thigh"), ("shin", "knee", "ankle", "shin"))
_SUFFIX = {"l": ".L", "r": ".R"}
#: capsule radius (Tonoli Eq. 3.23; Molla §4.1-4.2 average a few picked surface points, we
#: average whole limbs, docs/calibration.md "Capsules"): a vertex belongs to a limb when at
#: least this share of its skin weight is on the limb's joints ...
CAPSULE_MIN_WEIGHT = 0.5
#: ... and its projection on the bone falls in this part of it, as fractions of the bone from
#: its start (the middle half: clear of the bulges at shoulder, elbow, hip and knee)
CAPSULE_SPAN = (0.25, 0.75)


# ---------------------------------------------------------------------- measuring a rig
def _joint_index(rig: Rig, mapping: dict) -> dict:
    idx = {n: i for i, n in enumerate(rig.skeleton.names)}
    return {role: idx[name] for role, name in mapping.items()}


def guess_units(height: float) -> dict:
    """Length unit of a human-sized character from its height in file units."""
    for name, mpu, lo, hi in (("m", 1.0, 0.3, 3.5), ("cm", 0.01, 30.0, 350.0), ("mm", 0.001, 300.0, 3500.0),
                              ("in", 0.0254, 12.0, 138.0)):
        if lo <= height <= hi:
            return {"length": name, "metres_per_unit": mpu, "angles": "degrees",
                    "source": "guessed from the body height"}
    return {"length": "unknown", "metres_per_unit": None, "angles": "degrees",
            "source": "body height fits no usual unit"}


def _limb_joints(rig: Rig, start: int, end: int) -> list:
    """Joints from ``start`` down to ``end``, ``start`` included and ``end`` excluded
    (just ``[start]`` when ``end`` is not below it)."""
    return [start] + rig.skeleton.hierarchy.path(start, end).tolist()[:-1]


def capsule_radius(rig: Rig, start: int, end: int) -> float | None:
    """Mean distance from the bone ``start -> end`` to the limb's surface (Molla §4.1).

    Measured on the mesh as modelled: the vertices weighted at least
    :data:`CAPSULE_MIN_WEIGHT` (0.5) to the joints from ``start`` down to ``end`` (twist
    joints included) whose projection falls in :data:`CAPSULE_SPAN` of the bone (the
    middle half).  ``None`` if no vertex qualifies.
    """
    pos = rig.skeleton.bind_world[:, :3, 3]
    a, b = pos[start], pos[end]
    bone = b - a
    length2 = float(bone @ bone)
    if not length2 > 0:
        return None
    joints = _limb_joints(rig, start, end)
    w = np.asarray(rig.skin.to_sparse()[:, joints].sum(axis=1)).ravel()
    v = rig.mesh.vertices
    t = (v - a) @ bone / length2
    sel = (w >= CAPSULE_MIN_WEIGHT) & (t >= CAPSULE_SPAN[0]) & (t <= CAPSULE_SPAN[1])
    if not sel.any():
        return None
    d = np.linalg.norm((v[sel] - a) - t[sel, None] * bone, axis=1)
    return float(d.mean())


def measure(rig: Rig, mapping: dict) -> dict:
    """What a calibration measures on a rig: ``axes``, ``height`` (extent along up of the
    rest-pose mesh), ``units``, ``segments`` (Tonoli Table 3.2, rest pose), ``root_height``
    (hips above the lowest vertex, rest pose) and ``capsules`` (radii on the mesh as modelled)."""
    j = _joint_index(rig, mapping)
    rest = rig.skeleton.rest_world()[:, :3, 3]
    up, fwd, left = body_axes({r: rest[k] for r, k in j.items()})
    rest_mesh = rig.posed_vertices()
    height = float(np.ptp(rest_mesh @ up))
    segments = {}
    for name, a, b in SEGMENTS:
        sided = a not in CENTRE_ROLES or b not in CENTRE_ROLES
        for s in (SIDES if sided else (None,)):
            ra, rb = (r if r in CENTRE_ROLES or s is None else f"{r}_{s}" for r in (a, b))
            if ra in j and rb in j:
                segments[name + (_SUFFIX[s] if sided else "")] = {
                    "from": mapping[ra], "to": mapping[rb],
                    "length": rounded(np.linalg.norm(rest[j[rb]] - rest[j[ra]]))}
    capsules = []
    for name, a, b, point in CAPSULES:
        for s in SIDES:
            ra, rb = f"{a}_{s}", f"{b}_{s}"
            if ra in j and rb in j:
                radius = capsule_radius(rig, j[ra], j[rb])
                if radius is None:
                    log.warning("capsule %s: no vertex is weighted to it; radius left empty", name + _SUFFIX[s])
                capsules.append(Capsule(name=name + _SUFFIX[s], start=mapping[ra], end=mapping[rb],
                                        radius=None if radius is None else rounded(radius),
                                        length=rounded(np.linalg.norm(rest[j[rb]] - rest[j[ra]])),
                                        point=point + _SUFFIX[s]))
    return {
        "axes": {"up": rounded_vector(up), "forward": rounded_vector(fwd), "left": rounded_vector(left)},
        "height": height,
        "units": guess_units(height),
        "segments": segments,
        "root_height": rounded(height_above_ground(rest[j["hips"]], rest_mesh, up)),
        "capsules": capsules,
    }


def _tpose_section(rig: Rig, mapping: dict, up) -> dict:
    anim, report = tpose(rig.skeleton, mapping)
    world = anim.world(rig.skeleton)[0]
    hips = world[rig.skeleton.index(mapping["hips"]), :3, 3]
    return {"checks": report["checks"], "root_height": rounded(height_above_ground(hips, rig.posed_vertices(world), up)),
            "bvh": None, "glb": None,
            "bvh_channels": "root: Xposition Yposition Zposition Zrotation Xrotation Yrotation; "
                            "joints: Zrotation Xrotation Yrotation (R = Rz Rx Ry, degrees)"}


def _character(rig: Rig, file, height: float) -> dict:
    return {"file": None if file is None else os.path.basename(os.fspath(file)),
            "vertices": int(rig.mesh.n_vertices), "faces": int(rig.mesh.n_faces),
            "joints": int(rig.skeleton.n_joints), "height": rounded(height)}


#: optional roles' stand-ins for attaching points when a rig lacks them
_ATTACH_FALLBACK = {"spine": "hips", "neck": "head", "clavicle": "upper_spine", "mid_hand": "wrist",
                    "thumb": "wrist", "index": "wrist", "pinky": "wrist", "toe": "ankle"}


def _attached_joint(role: str, mapping: dict) -> str:
    """The joint a point of ``role`` attaches to: the role's joint, or its stand-in's."""
    while role not in mapping:
        side = role[-2:] if role[-2:] in ("_l", "_r") else ""
        nxt = _ATTACH_FALLBACK[role[: len(role) - len(side)]]
        role = nxt if nxt in CENTRE_ROLES else nxt + side
    return mapping[role]


def _make_points(rig: Rig, rules_out, joint_role: dict, mapping: dict, kinds: dict, groups: dict,
                 key: bool) -> list:
    names, pts, _, _ = rules_out
    out = []
    for k, n in enumerate(names):
        face, bary = int(pts.face[k]), pts.bary[k]
        vertex = int(rig.mesh.faces[face][int(np.argmax(bary))]) if key else None
        joint = _attached_joint(joint_role[n], mapping)
        out.append(surface_point_on(rig, name=n, joint=joint, kind=kinds[n], group=groups[n], face=face, bary=bary,
                                    vertex=vertex))
    return out


def propose_calibration(rig: Rig, file=None, mapping: dict | None = None) -> Calibration:
    """An automatic calibration of a humanoid rig.

    Parameters
    ----------
    rig : the character.
    file : its file name (recorded in ``character``).
    mapping : a skeleton map to use instead of the proposed one.

    Raises
    ------
    ValueError naming the roles that cannot be mapped.
    """
    if mapping is None:
        mapping, missing = propose_skeleton_map(rig.skeleton)
        if missing:
            raise ValueError("cannot map the humanoid joint role(s) " + ", ".join(missing)
                             + " from the joint names; write a skeleton_map by hand (docs/calibration.md)")
    problems = validate_skeleton_map(mapping, rig.skeleton.names)
    if problems:
        raise ValueError("; ".join(problems))
    m = measure(rig, mapping)
    bind = rig.skeleton.bind_world[:, :3, 3]
    j = _joint_index(rig, mapping)
    joints = {r: bind[k] for r, k in j.items()}
    chains = finger_chains(rig.skeleton, mapping, bind)
    surface, keys = [], []
    for rules, key, sink in ((SURFACE_POINTS, False, surface), (KEY_VERTICES, True, keys)):
        out = locate(rules, rig.mesh, joints, chains, snap_to_vertex=key)
        if out[3]:
            log.warning("no surface found along the ray of %s; used the closest surface point", ", ".join(out[3]))
        role = {r.name: r.joint for r in rules}
        sink += _make_points(rig, out, role, mapping, {r.name: r.kind for r in rules},
                             {r.name: r.group for r in rules}, key)
    meshes = _oriented_meshes(surface)
    return Calibration(skeleton_map=dict(mapping), surface_points=surface, key_vertices=keys, meshes=meshes,
                       capsules=m["capsules"], segment_lengths=m["segments"], root_height=m["root_height"],
                       units=m["units"], axes=m["axes"], character=_character(rig, file, m["height"]),
                       tpose=_tpose_section(rig, mapping, m["axes"]["up"]))


def _oriented_meshes(points) -> dict:
    """Tonoli's calibration meshes over the points present, each triangle turned to face
    away from the centroid of its mesh's points."""
    pos = {p.name: p.position for p in points}
    out = {}
    for name, tris in CALIBRATION_MESHES.items():
        keep = [t for t in tris if all(n in pos for n in t)]
        if not keep:
            continue
        centre = np.mean([pos[n] for t in keep for n in t], axis=0)
        fixed = []
        for a, b, c in keep:
            n = np.cross(pos[b] - pos[a], pos[c] - pos[a])
            fixed.append([a, b, c] if n @ ((pos[a] + pos[b] + pos[c]) / 3 - centre) >= 0 else [a, c, b])
        out[name] = fixed
    return out


# ---------------------------------------------------------------------- transfer
def transfer_points(points: SurfacePoints, source_faces: np.ndarray, target_vertices: np.ndarray,
                    target_faces: np.ndarray, corr: Correspondence) -> SurfacePoints:
    """Source surface locations carried to the target: the barycentric combination of the
    target images of the source triangle's corners, snapped onto the target surface."""
    image = corr.source_to_target.positions(target_vertices, target_faces)  # per source vertex
    p = interpolate(image, source_faces, points.face, points.bary)
    face, bary, _ = closest_points(p, target_vertices, target_faces)
    return SurfacePoints(face, bary)


def transfer_calibration(cal: Calibration, source: Rig, target: Rig, corr: Correspondence,
                         file=None, source_file=None) -> Calibration:
    """``cal`` (made on ``source``) carried to ``target`` through ``corr``.

    The skeleton map, point names, attachments and meshes are kept; every point is
    moved to the corresponding target surface location (key vertices then snap to
    the nearest target vertex); capsule radii, segment lengths, root height, units,
    axes and the T-pose check are measured on the target.
    """
    problems = validate_skeleton_map(cal.skeleton_map, target.skeleton.names)
    if problems:
        raise ValueError("the calibration does not fit the target skeleton: " + "; ".join(problems))
    m = measure(target, cal.skeleton_map)
    idx = {n: i for i, n in enumerate(target.skeleton.names)}
    tv, tf = target.mesh.vertices, target.mesh.faces
    moved = {}
    for group in (cal.surface_points, cal.key_vertices):
        if not group:
            continue
        src = SurfacePoints([p.face for p in group], [p.bary for p in group])
        dst = transfer_points(src, source.mesh.faces, tv, tf, corr)
        for k, p in enumerate(group):
            face, bary = int(dst.face[k]), dst.bary[k]
            vertex = None
            if p.vertex is not None:
                corner = int(np.argmax(bary))
                vertex, bary = int(tf[face][corner]), np.eye(3)[corner]
            if p.joint not in idx:
                raise ValueError(f"point {p.name!r} is attached to joint {p.joint!r}, which the target lacks")
            moved[id(p)] = surface_point_on(target, name=p.name, joint=p.joint, kind=p.kind, group=p.group,
                                            face=face, bary=bary, vertex=vertex)
    surface = [moved[id(p)] for p in cal.surface_points]
    keys = [moved[id(p)] for p in cal.key_vertices]
    meshes = {k: [list(t) for t in v] for k, v in cal.meshes.items()}
    return Calibration(skeleton_map=dict(cal.skeleton_map), surface_points=surface, key_vertices=keys,
                       meshes=meshes, capsules=m["capsules"], segment_lengths=m["segments"],
                       root_height=m["root_height"], units=m["units"], axes=m["axes"],
                       character=_character(target, file, m["height"]),
                       tpose=_tpose_section(target, cal.skeleton_map, m["axes"]["up"]),
                       transferred_from={
                           "calibration_of": cal.character.get("file"),
                           "source_file": None if source_file is None else os.path.basename(os.fspath(source_file)),
                           "method": "dense correspondence (source vertex -> target surface), "
                                     "barycentric within the source triangle, snapped to the target surface"})
