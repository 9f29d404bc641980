"""What the panel's buttons do, as functions of the context and the panel settings.

Each raises :class:`~asetransfer.errors.InputError` with the command line's one-line
message (the file it names is here the object or collection at fault) and leaves the
scene as it found it on failure.  The operators in ``__init__`` only report.

The scene's markers reach the library as :class:`~asetransfer.model.markers.Markers`
(:func:`read_markers`): the ones *Find markers* placed and nobody moved as exactly the
landmarks found, automatic; the others as the command line reads the marker file *Save
markers* writes -- each empty's point on the surface the viewport shows is the same
point of the mesh the transfer reads (:mod:`.surfaces`), unmoved automatic ones are
flagged ``"automatic"`` and the rest are hand markers.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from asetransfer.config import (Config, CorrespondenceConfig, MarkersConfig, ShapesConfig, SkeletonConfig,
                               WeightsConfig)
from asetransfer.errors import InputError
from asetransfer.model.rig import Rig

from . import convert, empties, scene, surfaces
from .empties import SceneMarkers

#: stages of :func:`asetransfer.transfer`, in order, for the progress bar
STAGES = ("markers", "correspondence", "skeleton", "weights")
#: key of a marker-file entry holding where its empties stood in the scene that saved it
SCENE_KEY = "blender"


def _influences(choice: str) -> int | None:
    """The panel's Max influences as ``WeightsConfig.max_influences`` (None: as the source)."""
    return None if choice == "source" else int(choice)


def config_of(settings, found: bool = False) -> Config:
    """The transfer options of the panel as a Config (every other value the library's default).

    ``found``: the scene holds markers *Find markers* placed.  Its markers are then the
    whole set -- the automatic search already completed them, and the TD may have removed
    some on purpose -- so the transfer does not complete them again, however few
    (``complete_below`` 0): completed, markers read back automatic would give way to the
    ones found again and count as hand markers."""
    return Config(CorrespondenceConfig(), SkeletonConfig(joints=settings.joints, mirror=settings.mirror),
                  WeightsConfig(method=settings.weights, max_influences=_influences(settings.max_influences)),
                  MarkersConfig(complete_below=0) if found else MarkersConfig(),
                  shapes=ShapesConfig(mode="auto" if settings.blendshapes else "off"))


@dataclass(eq=False)
class Characters:
    """The source rig and the target as the transfer reads them and as the viewport shows them."""

    rig: Rig
    targets: list                   # the target objects, one part of the target mesh each
    source: surfaces.Character
    target: surfaces.Character


def characters(context, settings) -> Characters:
    """Both characters of the panel (objects in Edit mode as edited so far)."""
    if context.object is not None and context.object.mode == "EDIT":
        for obj in context.objects_in_mode:
            obj.update_from_editmode()
    rig = scene.read_source(context, settings.source, settings.apply_modifiers)
    targets = scene.target_meshes(settings.target, settings.target_children)
    target = scene.read_target(context, targets, settings.apply_modifiers)
    sources = scene.skinned_meshes(settings.source)
    return Characters(rig, targets, surfaces.Character.of(rig.mesh, scene.shown_vertices(context, sources, rig.mesh)),
                      surfaces.Character.of(target, scene.shown_vertices(context, targets, target)))


def markers_text(context, chars: Characters, marked: SceneMarkers, config: Config) -> str:
    """Marker-file text of scene markers: each side's point on the transfer's mesh, the
    automatic flag of the unmoved automatic markers, their confidence, and where the
    empties stand (``"blender"``: Load markers puts them back exactly there)."""
    from asetransfer.io.markers import points_to_json

    scale, labels = scene.unit_scale(context.scene), [f"marker {n!r}" for n in marked.names]
    points = []
    for side, locations, character in (("source", marked.source, chars.source), ("target", marked.target,
                                                                                 chars.target)):
        on_shown = surfaces.shown_points(empties.COLLECTIONS[side], convert.to_asetransfer(locations, scale),
                                         character, side=side, labels=labels,
                                         snap_distance=config.correspondence.marker_snap_distance)
        points.append(on_shown.positions(character.mesh.vertices, character.mesh.faces))
    extras = {}
    for k, name in enumerate(marked.names):
        entry = {"automatic": True} if name in marked.automatic else {}
        if name in marked.automatic and name in marked.fitted:
            entry["fitted"] = True
        if name in marked.confidence:
            entry["confidence"] = marked.confidence[name]
        entry[SCENE_KEY] = {"source": marked.source[k].tolist(), "target": marked.target[k].tolist()}
        extras[name] = entry
    return points_to_json(marked.names, points[0], points[1], extras)


def read_markers(context, chars: Characters, marked: SceneMarkers, config: Config):
    """Scene markers as :class:`~asetransfer.model.markers.Markers` in their order (None for
    none).  A marker *Find markers* placed and left unmoved is exactly the landmarks found
    (their surface points, unrounded: on a character whose rig turns on a hair, as a
    blocky low-poly one's can, the marker file's rounding to 1 micrometre alone moved
    joints by a centimetre); the others are read from the empties' locations, as the
    command line reads the file Save markers writes."""
    from asetransfer.io.markers import load_markers

    if len(marked) == 0:
        return None
    scale, exact = scene.unit_scale(context.scene), {}
    for name, sides in marked.placed_on.items():
        k = marked.names.index(name)
        here = [convert.to_asetransfer(getattr(marked, side)[k], scale) for side in ("source", "target")]
        if all(surfaces.still_on([f], [b], p, c)[0] for (f, b), p, c in zip(sides, here, (chars.source,
                                                                                            chars.target))):
            exact[name] = sides
    # all of them read as the command line would (its checks see the whole set), then the
    # unmoved found ones put back exactly
    read = load_markers(empties.TARGET_MARKERS, chars.rig.mesh, chars.target.mesh, minimum=1, config=config,
                        data=markers_text(context, chars, marked, config).encode("utf-8"))
    for k, side in enumerate(("source", "target")):
        points = getattr(read, side)
        for row, name in enumerate(read.names):
            if name in exact:
                points.face[row], points.bary[row] = exact[name][k]
    return read


def library_errors(settings, call, *args, **kwargs):
    """Run a library call, its errors about inputs as the command line's InputError
    (naming the objects at fault instead of files)."""
    from asetransfer.job import named_errors

    with named_errors(settings.source.name, settings.target.name, empties.TARGET_MARKERS):
        return call(*args, **kwargs)


def marker_size(context, chars: Characters) -> float:
    """Display size of marker empties (BU): 1.5% of the target's height."""
    lo, hi = chars.target.mesh.bounds()
    return 0.015 * float(np.max(hi - lo)) / scene.unit_scale(context.scene)


def in_scene(context, points: np.ndarray) -> np.ndarray:
    """(K, 3) asetransfer-frame points as Blender world locations."""
    return convert.from_asetransfer(np.asarray(points).reshape(-1, 3), scene.unit_scale(context.scene))


def on_surfaces(context, chars: Characters, markers, names, automatic: set, confidence: dict,
                exact: bool = False) -> SceneMarkers:
    """The ``names`` of :class:`~asetransfer.model.markers.Markers` as empties to place, at their
    points of the surfaces shown; with ``exact`` they stand for their surface points while
    unmoved (the landmarks found), else for the surface points nearest to them.  Those of the
    ``automatic`` the markers say were read off a fitted skin stay so flagged."""
    rows = [markers.names.index(n) for n in names]
    located = [(int(markers.source.face[k]), markers.source.bary[k]) for k in rows], \
              [(int(markers.target.face[k]), markers.target.bary[k]) for k in rows]
    return SceneMarkers(list(names), in_scene(context, surfaces.shown_positions(markers.source, chars.source)[rows]),
                        in_scene(context, surfaces.shown_positions(markers.target, chars.target)[rows]),
                        automatic, {n: c for n, c in confidence.items() if n in names},
                        {n: (s, t) for n, s, t in zip(names, *located)} if exact else {},
                        set(automatic) & set(markers.fitted))


def place(context, chars: Characters, marked: SceneMarkers, replacing) -> list:
    """Marker empties for ``marked`` after removing the markers named in ``replacing`` (None:
    all); nothing changes on failure.  Returns the new empties."""
    created = scene.Created()
    try:
        empties.remove_all() if replacing is None else empties.remove(replacing)
        return empties.place(context, created, marked, marker_size(context, chars))
    except Exception:
        created.remove_all()
        raise


def find_markers(context, settings):
    """Automatic markers as empties, completing the hand markers in the scene (moved or added:
    they stay, and win); the automatic markers already there are found again.  Returns the
    :class:`~asetransfer.model.report.MarkerOrigin`; the low-confidence markers are selected."""
    from asetransfer.stages.transfer import find_markers

    chars, config = characters(context, settings), config_of(settings)
    current = empties.scene_markers(context)
    hand = read_markers(context, chars, current.subset(current.hand), config)
    markers, origin = library_errors(settings, find_markers, chars.rig, chars.target.mesh, config, hand=hand)
    found = list(origin.automatic)
    place(context, chars, on_surfaces(context, chars, markers, found, set(found),
                                      {n: round(float(c), 4) for n, c in origin.confidence.items()}, exact=True),
          replacing=current.automatic | set(found))
    if origin.low_confidence:
        empties.select(context, empties.empties_of(origin.low_confidence))
    return origin


def transfer_rig(context, settings, progress=None):
    """Run the transfer with the scene's markers and build the rig; returns (objects, the
    transfer's :class:`~asetransfer.stages.transfer.Result`, its :class:`~.findings.Findings`)."""
    from asetransfer.job import collected_warnings
    from asetransfer.stages.transfer import transfer

    from .findings import transfer_findings

    if settings.preview_path:  # before any work: a missing package must not cost a finished rig
        from asetransfer.io.preview import require_preview

        require_preview(settings.preview_path)
    chars, marked = characters(context, settings), empties.scene_markers(context)
    config = config_of(settings, found=bool(marked.automatic))
    markers = read_markers(context, chars, marked, config)
    created = scene.Created()
    with collected_warnings() as warnings:
        result = library_errors(settings, transfer, chars.rig, chars.target.mesh, markers, config, progress=progress)
        try:
            objects = scene.build_result(context, result.rig, name=f"{settings.target.name} rig",
                                         originals=chars.targets, apply_modifiers=settings.apply_modifiers,
                                         created=created)
            review_files(settings, chars, result, config, warnings)
        except Exception:
            created.remove_all()
            raise
    found = transfer_findings(result, chars.rig, warnings, config.quality)
    scene.select_findings(context, objects, found.bones, found.target_vertices)
    if found.markers:
        empties.select(context, [objects[0]] + empties.empties_of(found.markers))
    return objects, result, found


def review_files(settings, chars: Characters, result, config: Config, warnings: list) -> None:
    """The preview picture and the QA page the panel names (the command line's, by the same job
    function), written over nothing the scene was read from."""
    import bpy

    preview, qa = (bpy.path.abspath(p) if p else None for p in (settings.preview_path, settings.qa_path))
    if not (preview or qa):
        return
    from dataclasses import replace

    from asetransfer.job import write_review

    report = replace(result.report, warnings=list(warnings))
    library_errors(settings, write_review, chars.rig, chars.target.mesh, result, report, config, preview=preview,
                   qa=qa, title=f"{settings.source.name}  ->  {settings.target.name}")


def save_markers(context, settings, path) -> int:
    """Write the scene's markers as a marker file the command line reads; returns their count."""
    from asetransfer.io.atomic import atomic_write

    marked = empties.scene_markers(context)
    if len(marked) == 0:
        raise InputError(path, "the scene has no markers to save (Find markers or Load markers first)")
    text = markers_text(context, characters(context, settings), marked, config_of(settings))
    atomic_write(path, text.encode("utf-8"))
    return len(marked)


def load_markers(context, settings, path) -> int:
    """Marker empties from a marker file, resolved on both characters as the command line
    resolves them and placed on the surfaces shown; an entry's automatic flag and confidence
    are kept, and the empties go exactly where the scene that saved the file had them when
    that is still the entry's point."""
    from asetransfer.io.files import parse_json_file, read_bytes
    from asetransfer.io.markers import load_markers as read

    chars, config = characters(context, settings), config_of(settings)
    data = read_bytes(path)
    markers = read(path, chars.rig.mesh, chars.target.mesh, minimum=1, data=data, config=config)
    entries = parse_json_file(path, "marker file", data)["markers"]
    marked = on_surfaces(context, chars, markers, markers.names, set(markers.automatic),
                         {e["name"]: float(e["confidence"]) for e in entries if _is_number(e.get("confidence"))})
    for side, character in (("source", chars.source), ("target", chars.target)):
        _restore_locations(context, getattr(marked, side), getattr(markers, side), character,
                           [_saved_location(e, side) for e in entries])
    place(context, chars, marked, replacing=None)
    return len(markers)


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and bool(np.isfinite(value))


def _saved_location(entry: dict, side: str):
    """The location a marker-file entry says its ``side`` empty had in the scene that saved
    it (``"blender"``), or None."""
    saved = entry.get(SCENE_KEY)
    location = saved.get(side) if isinstance(saved, dict) else None
    ok = isinstance(location, list) and len(location) == 3 and all(map(_is_number, location))
    return [float(x) for x in location] if ok else None


def _restore_locations(context, locations: np.ndarray, points, character, saved: list) -> None:
    """Put each empty back exactly where the file says it stood (``saved``, None where it does
    not say) when that location still gives the file's point ``points`` on the transfer's
    mesh, within 1e-5 of the character's size plus 10 micrometres (the file rounds points to
    1 micrometre); otherwise, the scene's character moved or posed otherwise, the point
    resolved on the shown surface stands.  ``locations`` (K, 3) is updated in place."""
    rows = [k for k, at in enumerate(saved) if at is not None]
    if not rows:
        return
    given = convert.to_asetransfer(np.array([saved[k] for k in rows]), scene.unit_scale(context.scene))
    again = surfaces.closest_on_shown(given, character).positions(character.mesh.vertices, character.mesh.faces)
    want = points.positions(character.mesh.vertices, character.mesh.faces)[rows]
    agree = np.linalg.norm(again - want, axis=1) <= 1e-5 * surfaces.size(character) + 1e-5
    for k, ok in zip(rows, agree):
        if ok:
            locations[k] = saved[k]


def add_marker(context, settings, name: str) -> str:
    """A hand marker pair: on each character at its selected vertices (Edit mode), else the
    3D cursor snapped to the nearer character and the other side at the point the markers
    already placed (or the bodies' boxes) carry it to; in Object mode both are selected,
    the target's active.  Returns the marker's name (``name``, made unique)."""
    chars = characters(context, settings)
    current, scale = empties.scene_markers(context), scene.unit_scale(context.scene)
    sides = {"source": (chars.source, scene.skinned_meshes(settings.source), convert.to_asetransfer(current.source,
                                                                                                    scale)),
             "target": (chars.target, chars.targets, convert.to_asetransfer(current.target, scale))}
    picked = {side: picked_point(character, objects) for side, (character, objects, _) in sides.items()}
    if picked["source"] is None and picked["target"] is None:
        cursor = convert.to_asetransfer(np.array([context.scene.cursor.location]), scale)[0]
        on = {side: surfaces.snapped(cursor, character) for side, (character, _, _) in sides.items()}
        nearer = min(on, key=lambda side: float(np.linalg.norm(on[side] - cursor)))
        picked[nearer] = on[nearer]
    for side, other in (("source", "target"), ("target", "source")):
        if picked[side] is None:
            picked[side] = surfaces.counterpart(picked[other], sides[other][0], sides[side][0], sides[other][2],
                                                sides[side][2])
    taken = set(empties.marker_empties("source")) | set(empties.marker_empties("target"))
    name = unique_name(name.strip() or "marker", taken)
    marked = SceneMarkers([name], in_scene(context, picked["source"]), in_scene(context, picked["target"]))
    made = place(context, chars, marked, replacing=[])
    if context.mode == "OBJECT":  # in Edit mode the TD goes on picking vertices
        empties.select(context, made[::-1])
    return name


def picked_point(character: surfaces.Character, objects: list):
    """(3,) the selected vertices (their mean, snapped to the shown surface) of the objects in
    Edit mode among ``objects`` (one part of ``character`` each), or None if none is."""
    chosen = []
    for k, obj in enumerate(objects):
        if obj.mode != "EDIT":
            continue
        selected = np.zeros(len(obj.data.vertices), bool)
        obj.data.vertices.foreach_get("select", selected)
        rows = np.flatnonzero(character.mesh.vertex_part == k)
        if len(rows) == len(selected):  # the shown vertices are the mesh's own
            chosen.append(character.shown.vertices[rows[selected]])
    chosen = np.concatenate(chosen) if chosen else np.zeros((0, 3))
    return surfaces.snapped(chosen.mean(axis=0), character) if len(chosen) else None


def unique_name(name: str, taken: set) -> str:
    """``name``, or ``name.001``, ``name.002``... if taken (Blender's way)."""
    k = 0
    candidate = name
    while candidate in taken:
        k += 1
        candidate = f"{name}.{k:03d}"
    return candidate


def remove_markers(context) -> list:
    """Remove the pairs of the selected marker empties (either side); returns their names."""
    names = empties.selected_markers(context)
    if not names:
        raise InputError(None, "select a marker empty (either side) to remove its pair")
    empties.remove(names)
    return names
