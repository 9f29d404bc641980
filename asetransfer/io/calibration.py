"""Calibration files: a :class:`~asetransfer.model.calibration.Calibration` as JSON
(the schema is documented in ``docs/calibration.md``).

The document is an object whose first keys are ``"format": "asetransfer-calibration"``
and ``"version": 1`` (the only version; any other is refused), then ``generator``,
``character``, ``units``, ``axes``, ``skeleton_map`` (roles in the order of
:data:`~asetransfer.humanoid.skeleton_map.ROLES`), ``segment_lengths``,
``root_height``, ``surface_points``, ``meshes``, ``capsules``, ``key_vertices`` and,
when present, ``tpose``, ``transferred_from`` and ``extras``.

Writing (:func:`write_calibration`) is deterministic and atomic: keys in that fixed
order, one surface point / capsule / key vertex per line, lengths and coordinates
rounded to 7 decimals and barycentric coordinates to 9 (still summing to 1), so the
same calibration always gives the same bytes and reads back to the same numbers.

Reading (:func:`read_calibration`) checks every field and reports the first fault as
an :class:`~asetransfer.errors.InputError` naming the entry.  Given the rig it
calibrates, joint names are checked against it and point locations -- ``face`` +
``bary``, ``vertex`` or ``point``, as in marker files (:mod:`.markers`) -- are
resolved on its mesh, with ``position`` and ``local`` recomputed.
"""
from __future__ import annotations

import json
import logging
import math

import numpy as np

from .._version import __version__
from ..errors import InputError
from .atomic import atomic_write
from .files import parse_json_file
from .markers import parse_location, resolve_locations
from ..model.rig import Rig
from ..model.roles import ROLES, validate_skeleton_map
from ..model.calibration import (KINDS, Calibration, Capsule, SurfacePoint, quantized_bary, rounded, rounded_vector,
                                 surface_point_on)

log = logging.getLogger("asetransfer")

FORMAT = "asetransfer-calibration"
VERSION = 1


def _point_json(p: SurfacePoint) -> dict:
    d = {"name": p.name, "joint": p.joint, "kind": p.kind, "group": p.group, "face": int(p.face),
         "bary": [float(x) for x in quantized_bary(p.bary)]}
    if p.vertex is not None:
        d["vertex"] = int(p.vertex)
    d["position"] = rounded_vector(p.position)
    d["local"] = rounded_vector(p.local)
    return d


def calibration_to_dict(cal: Calibration) -> dict:
    """The JSON document (top-level keys in a fixed order)."""
    doc = {
        "format": FORMAT, "version": VERSION, "generator": f"asetransfer {__version__}",
        "character": cal.character,
        "units": cal.units,
        "axes": cal.axes,
        "skeleton_map": {r: cal.skeleton_map[r] for r in ROLES if r in cal.skeleton_map},
        "segment_lengths": cal.segment_lengths,
        "root_height": rounded(cal.root_height),
        "surface_points": [_point_json(p) for p in cal.surface_points],
        "meshes": cal.meshes,
        "capsules": [{"name": c.name, "start": c.start, "end": c.end,
                      "radius": None if c.radius is None else rounded(c.radius), "length": rounded(c.length),
                      "point": c.point} for c in cal.capsules],
        "key_vertices": [_point_json(p) for p in cal.key_vertices],
    }
    if cal.tpose is not None:
        doc["tpose"] = cal.tpose
    if cal.transferred_from is not None:
        doc["transferred_from"] = cal.transferred_from
    if cal.extras:
        doc["extras"] = cal.extras
    return doc


def calibration_to_json(cal: Calibration) -> str:
    """Deterministic JSON text: one point per line."""
    doc = calibration_to_dict(cal)
    parts = []
    for k, v in doc.items():
        if k in ("surface_points", "key_vertices", "capsules") and v:
            inner = ",\n".join("  " + json.dumps(x, allow_nan=False) for x in v)
            parts.append(f" {json.dumps(k)}: [\n{inner}\n ]")
        else:
            parts.append(f" {json.dumps(k)}: {json.dumps(v, allow_nan=False)}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def write_calibration(path, cal: Calibration, inputs=()) -> None:
    """Write ``cal`` as JSON to ``path`` atomically."""
    atomic_write(path, calibration_to_json(cal).encode("utf-8"), inputs=inputs)


def _num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _need(path, cond, msg):
    if not cond:
        raise InputError(path, msg)


def read_calibration(path, rig: Rig | None = None) -> Calibration:
    """Read and check a calibration file.

    With ``rig`` (the character it calibrates) joints must exist in the rig, surface
    locations are resolved on its mesh -- ``face`` + ``bary``, or ``vertex``, or
    ``point`` (snapped to the surface), as in marker files -- and ``position`` and
    ``local`` are recomputed, so a hand-edited location takes effect.

    Raises
    ------
    InputError naming the entry and field at fault.
    """
    doc = parse_json_file(path, "calibration file")
    _check_header(path, doc)
    smap = _read_skeleton_map(path, doc["skeleton_map"], rig)
    joints = set(rig.skeleton.names) if rig is not None else None
    groups = {}
    for key in ("surface_points", "key_vertices"):
        groups[key] = _read_points(path, key, doc[key], rig, joints, key == "key_vertices")
    meshes = _read_meshes(path, doc.get("meshes", {}), [p.name for p in groups["surface_points"]])
    capsules = _read_capsules(path, doc.get("capsules", []), joints)
    seg = doc.get("segment_lengths", {})
    _need(path, isinstance(seg, dict) and all(isinstance(v, dict) and _num(v.get("length")) for v in seg.values()),
          "'segment_lengths' must map names to objects with a numeric 'length'")
    rh = doc.get("root_height", 0.0)
    _need(path, _num(rh), "'root_height' must be a number")
    for key in ("units", "axes", "character"):
        _need(path, isinstance(doc.get(key, {}), dict), f"'{key}' must be an object")
    tp = doc.get("tpose")
    _need(path, tp is None or isinstance(tp, dict), "'tpose' must be an object")
    return Calibration(skeleton_map=smap, surface_points=groups["surface_points"],
                       key_vertices=groups["key_vertices"], meshes=meshes, capsules=capsules,
                       segment_lengths=seg, root_height=float(rh), units=doc.get("units", {}),
                       axes=doc.get("axes", {}), character=doc.get("character", {}), tpose=tp,
                       transferred_from=doc.get("transferred_from"), extras=doc.get("extras", {}) or {})


def _check_header(path, doc) -> None:
    """Fail unless ``doc`` is a calibration document of this version with the required keys."""
    _need(path, isinstance(doc, dict), "a calibration file must be a JSON object")
    _need(path, doc.get("format") == FORMAT, f"not a calibration file ('format' must be {FORMAT!r})")
    _need(path, doc.get("version") == VERSION, f"calibration version {doc.get('version')!r} is not supported "
                                               f"(this is version {VERSION})")
    for key in ("skeleton_map", "surface_points", "key_vertices"):
        _need(path, key in doc, f"missing {key!r}")


def _read_skeleton_map(path, smap, rig: Rig | None) -> dict:
    """The ``skeleton_map`` object checked: known roles to joint names (of ``rig``, if given)."""
    _need(path, isinstance(smap, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in smap.items()),
          "'skeleton_map' must map role names to joint names (strings)")
    unknown = [r for r in smap if r not in ROLES]
    _need(path, not unknown, f"skeleton_map: unknown role {unknown[0]!r}" if unknown else "")
    if rig is not None:
        problems = validate_skeleton_map(smap, rig.skeleton.names)
        _need(path, not problems, "skeleton_map: " + (problems[0] if problems else ""))
    return dict(smap)


def _read_meshes(path, meshes, names: list) -> dict:
    """The ``meshes`` object checked: name -> list of triangles of surface point ``names``."""
    _need(path, isinstance(meshes, dict), "'meshes' must be an object of triangle lists")
    for mname, tris in meshes.items():
        _need(path, isinstance(tris, list), f"meshes.{mname} must be a list of triangles")
        for k, t in enumerate(tris):
            _need(path, isinstance(t, list) and len(t) == 3 and all(isinstance(n, str) for n in t),
                  f"meshes.{mname}[{k}] must be 3 surface point names")
            bad = [n for n in t if n not in names]
            _need(path, not bad, f"meshes.{mname}[{k}] uses {bad[0]!r}, which is not a surface point" if bad else "")
    return {k: [list(t) for t in v] for k, v in meshes.items()}


def _read_capsules(path, items, joints: set | None) -> list:
    """The ``capsules`` list checked, as :class:`Capsule` (joints in ``joints`` if given)."""
    _need(path, isinstance(items, list), "'capsules' must be a list of objects (or left out)")
    capsules = []
    for k, c in enumerate(items):
        label = f"capsules[{k}]"
        _need(path, isinstance(c, dict) and isinstance(c.get("name"), str), f"{label} must be an object with a name")
        for f in ("start", "end"):
            _need(path, isinstance(c.get(f), str), f"{label} ({c['name']!r}): '{f}' must be a joint name")
            _need(path, joints is None or c[f] in joints,
                  f"{label} ({c['name']!r}): joint {c[f]!r} is not in the rig")
        _need(path, c.get("radius") is None or (_num(c["radius"]) and c["radius"] > 0),
              f"{label} ({c['name']!r}): radius must be a positive number or null")
        _need(path, _num(c.get("length")) and c["length"] >= 0,
              f"{label} ({c['name']!r}): length must be a non-negative number")
        point = c.get("point")
        _need(path, point is None or isinstance(point, str),
              f"{label} ({c['name']!r}): point must be a surface point name or null")
        capsules.append(Capsule(name=c["name"], start=c["start"], end=c["end"], radius=c.get("radius"),
                                length=float(c["length"]), point=c.get("point")))
    return capsules


def _read_points(path, key, items, rig, joints, is_key) -> list:
    _need(path, isinstance(items, list), f"'{key}' must be a list")
    entries, locs, labels, seen = [], [], [], {}
    for k, p in enumerate(items):
        label = f"{key}[{k}]"
        _need(path, isinstance(p, dict), f"{label} must be an object")
        name = p.get("name")
        _need(path, isinstance(name, str) and name.strip(), f"{label}: missing or empty 'name'")
        label = f"{label} ({name!r})"
        _need(path, name not in seen, f"{label}: name already used by {key}[{seen.get(name)}]")
        seen[name] = k
        _need(path, isinstance(p.get("joint"), str), f"{label}: 'joint' must be a joint name")
        _need(path, joints is None or p["joint"] in joints, f"{label}: joint {p.get('joint')!r} is not in the rig")
        kind = p.get("kind", "key" if is_key else "mesh")
        _need(path, kind in KINDS, f"{label}: kind must be one of {', '.join(KINDS)}")
        loc = ({"face": p["face"], "bary": p.get("bary")} if "face" in p else
               {"vertex": p["vertex"]} if "vertex" in p else {"point": p["point"]} if "point" in p else None)
        _need(path, loc is not None, f"{label}: needs a location: 'face' + 'bary', 'vertex' or 'point'")
        if "bary" in loc and loc["bary"] is None:
            loc.pop("bary")
        locs.append(parse_location(path, label, loc))
        labels.append(label)
        entries.append(p)
    out = []
    if rig is not None:
        sp = resolve_locations(path, locs, rig.mesh, side="character", labels=labels)
    for k, p in enumerate(entries):
        kind, group = p.get("kind", "key" if is_key else "mesh"), str(p.get("group", ""))
        if rig is not None:  # locations resolved on the mesh; position and local recomputed
            face, bary = int(sp.face[k]), sp.bary[k]
            vertex = locs[k].get("vertex", int(rig.mesh.faces[face][int(np.argmax(bary))]) if is_key else None)
            out.append(surface_point_on(rig, name=p["name"], joint=p["joint"], kind=kind, group=group, face=face,
                                        bary=bary, vertex=vertex))
            continue
        for f in ("position", "local"):  # no mesh to resolve on: the stored coordinates are used
            _need(path, isinstance(p.get(f), list) and len(p[f]) == 3 and all(_num(x) for x in p[f]),
                  f"{labels[k]}: '{f}' must be 3 numbers")
        vertex = p.get("vertex") if isinstance(p.get("vertex"), int) else None
        out.append(SurfacePoint(name=p["name"], joint=p["joint"], kind=kind, group=group, face=int(p.get("face", -1)),
                                bary=np.asarray(p.get("bary", [1.0, 0.0, 0.0]), float),
                                position=np.asarray(p["position"], float), local=np.asarray(p["local"], float),
                                vertex=vertex))
    return out
