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

A file can be well formed and still wrong for these meshes; before any fit
:func:`load_markers` refuses (or warns about) one whose source and target points are
exchanged (:func:`_check_sides`), whose points were placed on another mesh, and one whose
two sides do not have one shape (:func:`_check_shape`: the names link unrelated points).
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
from ..geometry.alignment import umeyama
from ..geometry.surface import closest_points, vertex_faces
from .atomic import atomic_write
from .files import parse_json_file
from ..model.markers import Markers

log = logging.getLogger("asetransfer")

#: barycentric coordinates may sum to 1 within this and are divided by their sum: tools round them
#: (0.333 x 3 = 0.999 at three decimals); a sum 1 % off is no rounding
BARY_SUM = 1e-2
#: ... and be negative down to this (set to 0): a corner's coordinate rounded from -0.0004 to -0.001
BARY_NEGATIVE = 1e-3


def parse_markers(path, data: bytes | None = None, minimum: int = 3) -> list:
    """Parse and check the structure of a marker file (at least ``minimum`` markers).

    Returns
    -------
    list of ``(name, source_loc, target_loc, automatic, fitted)`` with locations as validated
    dicts and the entry's optional ``"automatic"`` and ``"fitted"`` flags (False when absent).
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
        flags = [m.get(key, False) for key in ("automatic", "fitted")]
        for key, flag in zip(("automatic", "fitted"), flags):
            if not isinstance(flag, bool):
                raise InputError(path, f"{label}: '{key}' must be true or false")
        out.append((name, locs[0], locs[1], *flags))
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
    if min(b) < -BARY_NEGATIVE or abs(sum(b) - 1.0) > BARY_SUM:
        raise InputError(path, f"{label}.bary {b} must be non-negative and sum to 1")
    b = [max(float(x), 0.0) for x in b]
    return {"face": f, "bary": [x / sum(b) for x in b]}


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


def _diagonal(mesh: Mesh) -> float:
    lo, hi = mesh.bounds()
    return max(float(np.linalg.norm(hi - lo)), 1e-300)


def side_distances(specs: list, source: Mesh, target: Mesh):
    """How far each marker's given points lie from their own mesh and from the other one.

    Only ``point`` locations tell (a vertex or face index lies on its mesh by definition).

    Parameters
    ----------
    specs : K ``(name, source_loc, target_loc, automatic, fitted)`` from :func:`parse_markers`.
    source, target : the meshes.

    Returns
    -------
    own : (K, 2) ``d(p_s, S) / diag(S)`` and ``d(p_t, T) / diag(T)``, with ``d(p, M)`` the
        distance from a given point to the surface of mesh ``M`` (source ``S``, target ``T``).
    other : (K, 2) the same on the other mesh: ``d(p_s, T) / diag(T)``, ``d(p_t, S) / diag(S)``.
    given : (K, 2) bool, the sides given as points (the others are 0 in ``own`` and ``other``).
    """
    own, other = np.zeros((len(specs), 2)), np.zeros((len(specs), 2))
    given = np.zeros((len(specs), 2), dtype=bool)
    for side, mesh, twin in ((0, source, target), (1, target, source)):
        ks = [k for k, spec in enumerate(specs) if "point" in spec[1 + side]]
        if not ks:
            continue
        points = np.array([specs[k][1 + side]["point"] for k in ks])
        own[ks, side] = closest_points(points, mesh.vertices, mesh.faces)[2] / _diagonal(mesh)
        other[ks, side] = closest_points(points, twin.vertices, twin.faces)[2] / _diagonal(twin)
        given[ks, side] = True
    return own, other, given


def _check_sides(path, specs: list, source: Mesh, target: Mesh, quality: QualityConfig) -> list:
    """Refuse a marker file whose source and target points are exchanged; returns the warning
    about single markers that are (a list of one or none).

    A given point lies on the other mesh when ``other < own / marker_side_ratio`` and
    ``own > marker_side_floor`` (:func:`side_distances`), on its own when the reverse holds;
    where the two bodies coincide (a head and its heavier twin's) neither holds.  A marker
    lies on the other mesh when one of its points does and neither lies on its own.  When
    at least 3 markers, and ``marker_swapped_refuse`` of those whose points tell, lie on
    the other mesh, the file's sides are exchanged: a transfer from it is several
    centimetres off with residuals like a good one's.
    """
    own, other, given = side_distances(specs, source, target)
    ratio, floor = quality.marker_side_ratio, quality.marker_side_floor
    on_other = (given & (own > floor) & (ratio * other < own)).any(axis=1)
    on_own = (given & (other > floor) & (ratio * own < other)).any(axis=1)
    swapped, straight = on_other & ~on_own, on_own & ~on_other
    n_swapped, n_telling = int(swapped.sum()), int(swapped.sum() + straight.sum())
    if n_swapped >= 3 and n_swapped >= quality.marker_swapped_refuse * n_telling:
        off = own[swapped].sum(axis=1) / given[swapped].sum(axis=1)
        raise InputError(path, f"source and target are exchanged: {n_swapped} of the {n_telling} markers whose "
                               f"points tell lie on the other mesh (their source points on the target's surface, "
                               f"their target points on the source's, {100 * float(np.median(off)):.3g} % "
                               f"of the size from their own); exchange 'source' and 'target' in every marker")
    if not n_swapped:
        return []
    names = [specs[k][0] for k in np.flatnonzero(swapped)]
    listed = ", ".join(map(repr, names[:5])) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    return [f"{path}: marker(s) {listed} lie on the other mesh (the source point on the target's surface, the "
            "target point on the source's): are their source and target exchanged?"]


def _off_surface(path, specs: list, source: Mesh, target: Mesh, quality: QualityConfig) -> list:
    """The warnings for the sides whose given points lie off their surface: tools write points
    on it, so a median distance above ``marker_off_surface_warn`` (of the mesh's diagonal)
    says they were placed on another mesh or another version of it (a file for another
    character)."""
    out = []
    for side, what, mesh in ((1, "source", source), (2, "target", target)):
        points = [spec[side]["point"] for spec in specs if "point" in spec[side]]
        if len(points) < 3:
            continue
        off = float(np.median(closest_points(np.array(points), mesh.vertices, mesh.faces)[2])) / _diagonal(mesh)
        if off > quality.marker_off_surface_warn:
            out.append(f"{path}: the {what} points lie a median {100 * off:.3g} % of the {what}'s size off its surface "
                       "(tools place them on it): were they placed on another mesh, or another version of it?")
    return out


def marker_shape_residual(source_points: np.ndarray, target_points: np.ndarray) -> float:
    """How far the markers' two sides are from one shape: with ``f`` the least-squares
    similarity (:func:`~asetransfer.geometry.alignment.umeyama`) from the source points
    ``s_k`` to the target points ``t_k``,
    ``sqrt(mean_k |f(s_k) - t_k|^2) / sqrt(mean_k |t_k - mean(t)|^2)``: 0 for one shape,
    about 1 for unrelated points (the best similarity then shrinks them to the mean).

    Parameters
    ----------
    source_points, target_points : (K, 3) the markers' points on each mesh.
    """
    fit = umeyama(source_points, target_points)
    residual = fit.apply(source_points) - target_points
    spread = target_points - target_points.mean(axis=0)
    return float(np.sqrt((residual ** 2).sum(axis=1).mean() / max((spread ** 2).sum(axis=1).mean(), 1e-300)))


def _check_shape(path, source_points: np.ndarray, target_points: np.ndarray, quality: QualityConfig) -> None:
    """Refuse markers whose two sides have no shape in common (:func:`marker_shape_residual`
    above ``marker_shape_refuse``: the names link unrelated points, a file for other characters
    or one whose lists were reordered); warn above ``marker_shape_warn``.  Judged from
    ``few_markers`` markers on (fewer fit any shape)."""
    if len(source_points) < quality.few_markers:
        return
    residual = marker_shape_residual(source_points, target_points)
    what = (f"the markers' source and target points do not have one shape: after the best rotation, scale and "
            f"shift they lie {100 * residual:.3g} % of their spread apart")
    if residual > quality.marker_shape_refuse:
        raise InputError(path, f"{what} (unrelated points: about 100 %); the names link other points on the two "
                               "meshes (a file for other characters, or its lists reordered)")
    if residual > quality.marker_shape_warn:
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
    config : the snap distance and the plausibility thresholds (:class:`~asetransfer.config.Config`).

    Raises
    ------
    InputError naming the marker and field at fault, or saying why the markers cannot be
    these meshes' (exchanged sides, other units, unrelated points).
    """
    config = config or Config()
    snap = config.correspondence.marker_snap_distance
    specs = parse_markers(path, data, minimum=minimum)
    # warnings are said once every check passed: a refused file gets its one line alone
    warnings = _check_sides(path, specs, source, target, config.quality)
    labels = [f"marker {i} ({spec[0]!r})" for i, spec in enumerate(specs)]
    src = resolve_locations(path, [spec[1] for spec in specs], source, side="source", labels=labels,
                            snap_distance=snap)
    tgt = resolve_locations(path, [spec[2] for spec in specs], target, side="target", labels=labels,
                            snap_distance=snap)
    warnings += _off_surface(path, specs, source, target, config.quality)
    if len(specs) >= 3:  # fewer are completed by automatic markers, which bring their own spread
        _check_spread(path, "source", src, source)
        _check_spread(path, "target", tgt, target)
        source_points, target_points = src.positions(source.vertices, source.faces), tgt.positions(
            target.vertices, target.faces)
        _check_units(path, source_points, source, target_points, target, config.quality)
        _check_shape(path, source_points, target_points, config.quality)
    for warning in warnings:
        log.warning("%s", warning)
    return Markers(tuple(spec[0] for spec in specs), src, tgt, frozenset(spec[0] for spec in specs if spec[3]),
                   frozenset(spec[0] for spec in specs if spec[3] and spec[4]))


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
