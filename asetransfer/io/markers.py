"""Marker files: linked source/target surface locations, as JSON, read into
:class:`~asetransfer.model.markers.Markers`.

Format (UTF-8, a byte-order mark allowed)::

    {"markers": [{"name": "elbow.L", "source": LOC, "target": LOC}, ...]}

where ``LOC`` is ``{"point": [x, y, z]}`` (snapped to the closest surface point, and
refused if further than ``CorrespondenceConfig.marker_snap_distance`` times the mesh's
bounding-box diagonal), ``{"vertex": i}`` or ``{"face": f, "bary": [a, b, c]}``.  Names must be unique; at
least 3 markers, not all on one line, are needed on each side.  Every fault is an
:class:`~asetransfer.errors.InputError` naming the marker and field.  The location
parser and resolver are shared with calibration files (:mod:`.calibration`).
"""
from __future__ import annotations

import json
import logging
import math

import numpy as np

from ..config import Config, CorrespondenceConfig, QualityConfig
from ..errors import InputError
from ..model.mesh import Mesh
from ..model.surface import SurfacePoints
from ..geometry.surface import closest_points, vertex_faces
from .atomic import atomic_write
from .files import parse_json_file
from ..model.markers import Markers

log = logging.getLogger("asetransfer")


def parse_markers(path, data: bytes | None = None, minimum: int = 3) -> list:
    """Parse and check the structure of a marker file (at least ``minimum`` markers).

    Returns
    -------
    list of ``(name, source_loc, target_loc, automatic)`` with locations as validated dicts
    and ``automatic`` the entry's optional ``"automatic"`` flag (False when absent).
    """
    doc = parse_json_file(path, "marker file", data)
    if not isinstance(doc, dict) or "markers" not in doc:
        raise InputError(path, "marker file must be a JSON object with a 'markers' list")
    items = doc["markers"]
    if not isinstance(items, list):
        raise InputError(path, "'markers' must be a list")
    out, seen = [], {}
    for i, m in enumerate(items):
        if not isinstance(m, dict):
            raise InputError(path, f"marker {i} is not an object")
        name = m.get("name")
        label = f"marker {i}" if not isinstance(name, str) else f"marker {i} ({name!r})"
        if not isinstance(name, str) or not name.strip():
            raise InputError(path, f"{label}: missing or empty 'name'")
        if name in seen:
            raise InputError(path, f"{label}: name already used by marker {seen[name]}")
        seen[name] = i
        locs = []
        for side in ("source", "target"):
            if side not in m:
                raise InputError(path, f"{label}: missing '{side}'")
            locs.append(parse_location(path, f"{label}: {side}", m[side]))
        automatic = m.get("automatic", False)
        if not isinstance(automatic, bool):
            raise InputError(path, f"{label}: 'automatic' must be true or false")
        out.append((name, locs[0], locs[1], automatic))
    if len(out) < minimum:
        raise InputError(path, f"has {len(out)} marker(s); at least {minimum} are needed to align source and "
                               "target" + (" (or let automatic markers complete them)" if minimum >= 3 else ""))
    return out


def _finite_numbers(v, n):
    return (isinstance(v, list) and len(v) == n
            and all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in v))


def parse_location(path, label: str, loc) -> dict:
    """Check one surface location of a JSON file and return it normalised.

    Parameters
    ----------
    path : the file (for error messages).
    label : what the location is, for messages (``"marker 3 ('elbow.L'): source"``).
    loc : the parsed JSON value: ``{"point": [x, y, z]}``, ``{"vertex": i}`` or
        ``{"face": f, "bary": [a, b, c]}``.

    Returns
    -------
    the same kind of dict with floats for numbers and ``bary`` divided by its sum.

    Raises
    ------
    InputError naming ``label`` and the field at fault.
    """
    if not isinstance(loc, dict):
        raise InputError(path, f"{label} must be an object with 'point', 'vertex' or 'face'")
    kinds = [k for k in ("point", "vertex", "face") if k in loc]
    if len(kinds) != 1:
        raise InputError(path, f"{label} must have exactly one of 'point', 'vertex' or 'face'")
    kind = kinds[0]
    if kind == "point":
        if not _finite_numbers(loc["point"], 3):
            raise InputError(path, f"{label}.point must be 3 finite numbers")
        return {"point": [float(x) for x in loc["point"]]}
    if kind == "vertex":
        v = loc["vertex"]
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise InputError(path, f"{label}.vertex must be a non-negative integer")
        return {"vertex": v}
    f = loc["face"]
    if not isinstance(f, int) or isinstance(f, bool) or f < 0:
        raise InputError(path, f"{label}.face must be a non-negative integer")
    if "bary" not in loc:
        raise InputError(path, f"{label}: 'face' needs 'bary' (3 barycentric coordinates)")
    b = loc["bary"]
    if not _finite_numbers(b, 3):
        raise InputError(path, f"{label}.bary must be 3 finite numbers")
    if min(b) < -1e-6 or abs(sum(b) - 1.0) > 1e-3:
        raise InputError(path, f"{label}.bary {b} must be non-negative and sum to 1")
    return {"face": f, "bary": [float(x) / sum(b) for x in b]}


def resolve_locations(path, locations: list, mesh: Mesh, *, side: str, labels: list,
                      snap_distance: float = CorrespondenceConfig.marker_snap_distance) -> SurfacePoints:
    """Surface points on ``mesh`` of locations checked by :func:`parse_location`.

    A ``vertex`` becomes the corner of a triangle using it (barycentric coordinate 1);
    a ``face`` + ``bary`` is kept; a ``point`` is snapped to the closest surface point,
    and rejected if further than ``snap_distance`` times the mesh's bounding-box diagonal
    (such a point was almost surely placed in another frame or unit).

    Parameters
    ----------
    path : the file (for error messages).
    locations : K location dicts.
    mesh : the mesh they refer to.
    side : name of that mesh in messages (``"source"``, ``"target"``, ``"character"``).
    labels : K labels naming each location's entry in messages.
    snap_distance : ``CorrespondenceConfig.marker_snap_distance``.

    Raises
    ------
    InputError when an index is out of range or a point is far from the surface.
    """
    n, nf = mesh.n_vertices, mesh.n_faces
    face = np.zeros(len(locations), np.int64)
    bary = np.zeros((len(locations), 3))
    vf, corner = vertex_faces(n, mesh.faces)
    pts, pidx = [], []
    for k, loc in enumerate(locations):
        if "vertex" in loc:
            v = loc["vertex"]
            if v >= n:
                raise InputError(path, f"{labels[k]}: {side}.vertex {v} out of range ({side} mesh has {n} vertices)")
            if vf[v] < 0:
                raise InputError(path, f"{labels[k]}: {side}.vertex {v} is not used by any face")
            face[k] = vf[v]
            bary[k, corner[v]] = 1.0
        elif "face" in loc:
            if loc["face"] >= nf:
                raise InputError(path, f"{labels[k]}: {side}.face {loc['face']} out of range "
                                       f"({side} mesh has {nf} faces)")
            face[k], bary[k] = loc["face"], loc["bary"]
        else:
            pts.append(loc["point"])
            pidx.append(k)
    if pts:
        f, b, dist = closest_points(np.array(pts), mesh.vertices, mesh.faces)
        lo, hi = mesh.bounds()
        limit = snap_distance * float(np.linalg.norm(hi - lo))
        far = np.flatnonzero(dist > limit)
        if len(far):
            k = pidx[far[0]]
            raise InputError(path, f"{labels[k]}: {side}.point is {dist[far[0]]:.4g} from the {side} surface "
                                   f"(more than {snap_distance:.0%} of its size); wrong frame or units?")
        face[pidx], bary[pidx] = f, b
    return SurfacePoints(face, bary)


def _check_spread(path, side, points: SurfacePoints, mesh: Mesh):
    pos = points.positions(mesh.vertices, mesh.faces)
    s = np.linalg.svd(pos - pos.mean(axis=0), compute_uv=False)
    if s[0] <= 0 or s[1] <= 1e-6 * s[0]:
        raise InputError(path, f"the {side} markers are all at one point or on one line; "
                               f"the alignment needs at least 3 non-collinear markers (points given in other "
                               f"units or another frame than the {side} file collapse like this)")


def _relative_spread(points: np.ndarray, mesh: Mesh) -> float:
    """RMS distance of ``points`` from their centroid over ``mesh``'s bounding-box diagonal."""
    lo, hi = mesh.bounds()
    rms = float(np.sqrt(((points - points.mean(axis=0)) ** 2).sum(axis=1).mean()))
    return rms / max(float(np.linalg.norm(hi - lo)), 1e-300)


def _check_units(path, source_points, source: Mesh, target_points, target: Mesh, quality: QualityConfig) -> None:
    """Refuse (or warn about) markers whose spread on one mesh disagrees with the other's.

    The same markers sit on the same body parts, so they span about the same share of
    each body.  Points given in other units (metres on a centimetre target) or another
    frame snap to the bit of surface near where they land, so they collapse: their spread
    is a hundredth of the other side's.  Thresholds: ``quality.marker_spread_warn`` and
    ``marker_spread_refuse``.
    """
    rel_s, rel_t = _relative_spread(source_points, source), _relative_spread(target_points, target)
    factor = max(rel_s, rel_t) / max(min(rel_s, rel_t), 1e-300)
    if factor <= quality.marker_spread_warn:
        return
    what = (f"the markers span {100 * rel_s:.3g} % of the source's size but {100 * rel_t:.3g} % of the "
            f"target's ({factor:.3g}x apart)")
    if factor > quality.marker_spread_refuse:
        side = "target" if rel_t < rel_s else "source"
        raise InputError(path, f"{what}: the {side} points are probably in other units or another frame "
                               f"(metres vs centimetres, Z-up vs Y-up); pick them on the {side} file as given")
    log.warning("%s: %s; check that every marker sits on the same body part on both sides", path, what)


def load_markers(path, source: Mesh, target: Mesh, minimum: int = 3, data: bytes | None = None,
                 config: Config | None = None) -> Markers:
    """Read a marker file and place every marker on the source and target surfaces.

    Parameters
    ----------
    path : the JSON marker file (named in messages).
    source, target : the meshes the ``source`` and ``target`` locations refer to.
    minimum : fewest markers accepted: 3 to align the characters with these alone,
        fewer when automatic markers will complete them.
    data : the file's bytes when they are already in memory (the Blender add-on's
        markers, read exactly as the file it saves would be).
    config : the snap distance and marker-spread thresholds (:class:`~asetransfer.config.Config`).

    Raises
    ------
    InputError naming the marker and field at fault.
    """
    config = config or Config()
    snap = config.correspondence.marker_snap_distance
    specs = parse_markers(path, data, minimum=minimum)
    labels = [f"marker {i} ({n!r})" for i, (n, _, _, _) in enumerate(specs)]
    src = resolve_locations(path, [s for _, s, _, _ in specs], source, side="source", labels=labels,
                            snap_distance=snap)
    tgt = resolve_locations(path, [t for _, _, t, _ in specs], target, side="target", labels=labels,
                            snap_distance=snap)
    if len(specs) >= 3:  # fewer are completed by automatic markers, which bring their own spread
        _check_spread(path, "source", src, source)
        _check_spread(path, "target", tgt, target)
        _check_units(path, src.positions(source.vertices, source.faces), source,
                     tgt.positions(target.vertices, target.faces), target, config.quality)
    return Markers(tuple(n for n, _, _, _ in specs), src, tgt, frozenset(n for n, _, _, a in specs if a))


def markers_to_json(markers: Markers, source: Mesh, target: Mesh, extras: dict | None = None) -> str:
    """Marker file text with both sides as ``point`` locations (6 significant decimals).

    ``extras`` maps a marker name to more keys for its entry (``automatic``,
    ``confidence``); readers ignore keys they do not know, so the file feeds back
    into ``--markers`` as it is.
    """
    ps = markers.source.positions(source.vertices, source.faces)
    pt = markers.target.positions(target.vertices, target.faces)
    return points_to_json(markers.names, ps, pt, extras)


def points_to_json(names, source_points: np.ndarray, target_points: np.ndarray, extras: dict | None = None) -> str:
    """Marker file text from K names and (K, 3) source and target points (6 significant decimals).

    Each point is rounded once, here, so that reading the text back gives exactly
    the same numbers whether it went through a file or not.
    """
    ps, pt = source_points, target_points
    extras = extras or {}
    lines = [json.dumps({"name": n, "source": {"point": [round(float(x), 6) for x in a]},
                         "target": {"point": [round(float(x), 6) for x in b]}, **extras.get(n, {})})
             for n, a, b in zip(names, ps, pt)]
    return '{"markers": [\n' + ",\n".join(lines) + "\n]}\n"


def write_markers(path, markers: Markers, source: Mesh, target: Mesh, extras: dict | None = None,
                  inputs=()) -> None:
    """Write a marker file (:func:`markers_to_json`) atomically, never over one of ``inputs``."""
    atomic_write(path, markers_to_json(markers, source, target, extras).encode("utf-8"), inputs=inputs)
