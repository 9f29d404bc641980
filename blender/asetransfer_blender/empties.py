"""The scene's markers: sphere empties in two collections, one per character.

A marker is a pair of empties, ``NAME (source)`` in *asetransfer markers (source)* and
``NAME (target)`` in *asetransfer markers (target)*, each holding the marker's name in
its ``asetransfer_marker`` property (object names may get a .001 suffix).  An empty the
add-on placed also holds where it placed it (``asetransfer_placed``), the surface point
it stands for on the mesh the transfer reads (``asetransfer_face``, ``asetransfer_bary``:
a triangle and barycentric coordinates) and its place in the marker order
(``asetransfer_order``).  One of an automatic marker (found by *Find markers*, or read
flagged automatic from a marker file) holds ``automatic`` and its ``confidence``, and
``fitted`` when it was read off the source's skin fitted onto the target (a creature's).

An empty still where it was placed stands for exactly that surface point; a marker both
of whose empties are still there and that was automatic stays automatic: the transfer
registers it as it registers the automatic markers it finds itself.  A moved empty
stands for the surface point nearest to it, and its marker is a hand marker.

Locations here are Blender world coordinates (Blender units, Z-up), as float64 copies of
the empties' float32 values, so that they compare and round-trip exactly.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import bpy
import numpy as np
from mathutils import Matrix

SOURCE_MARKERS, TARGET_MARKERS = "asetransfer markers (source)", "asetransfer markers (target)"
COLLECTIONS = {"source": SOURCE_MARKERS, "target": TARGET_MARKERS}
#: custom properties of a marker empty (see the module's text)
MARKER_KEY, PLACED_KEY, FACE_KEY, BARY_KEY, ORDER_KEY = ("asetransfer_marker", "asetransfer_placed", "asetransfer_face",
                                                         "asetransfer_bary", "asetransfer_order")
AUTOMATIC_KEY, CONFIDENCE_KEY, FITTED_KEY = "automatic", "confidence", "fitted"


@dataclass(eq=False)
class SceneMarkers:
    """Markers in the scene (or to place there), in marker order.

    ``source``, ``target``: (K, 3) the empties' world locations; ``automatic``: the names of
    the automatic markers (in the scene: neither of whose empties moved); ``confidence``:
    marker name -> confidence; ``placed_on``: marker name -> ``((face, bary), (face, bary))``,
    the source and target surface points of the markers standing where they were placed;
    ``fitted``: the automatic markers read off the source's fitted skin."""

    names: list
    source: np.ndarray
    target: np.ndarray
    automatic: set = field(default_factory=set)
    confidence: dict = field(default_factory=dict)
    placed_on: dict = field(default_factory=dict)
    fitted: set = field(default_factory=set)

    def __len__(self):
        return len(self.names)

    @property
    def hand(self) -> list:
        """The markers that are not automatic, in order."""
        return [n for n in self.names if n not in self.automatic]

    def subset(self, names) -> "SceneMarkers":
        keep = [self.names.index(n) for n in names]
        return SceneMarkers([self.names[k] for k in keep], self.source[keep], self.target[keep],
                            self.automatic & set(names), {n: c for n, c in self.confidence.items() if n in names},
                            {n: s for n, s in self.placed_on.items() if n in names}, self.fitted & set(names))


def location(obj) -> tuple:
    """An object's world location as three Python floats (the float32 values, exactly)."""
    return tuple(float(x) for x in obj.matrix_world.translation)


def unmoved(obj) -> bool:
    """True when the empty stands exactly where the add-on placed it."""
    placed = obj.get(PLACED_KEY)
    return placed is not None and tuple(float(x) for x in placed) == location(obj)


def placed_on(obj):
    """``(face, (3,) bary)`` the unmoved empty stands for, or None (moved, or placed otherwise)."""
    if not unmoved(obj) or FACE_KEY not in obj or BARY_KEY not in obj:
        return None
    return int(obj[FACE_KEY]), np.array([float(b) for b in obj[BARY_KEY]])


def marker_empties(side: str) -> dict:
    """Marker name -> empty of one side's collection (``side``: "source" or "target"); of two
    empties with one name, the last by object name."""
    col = bpy.data.collections.get(COLLECTIONS[side])
    objs = sorted(col.objects, key=lambda o: o.name) if col is not None else []
    return {o.get(MARKER_KEY, o.name): o for o in objs}


def scene_markers(context) -> SceneMarkers:
    """The markers with an empty on both sides, in the order they were placed (by name for
    empties placed otherwise)."""
    context.view_layer.update()  # empties moved by a script since the last redraw
    source, target = marker_empties("source"), marker_empties("target")
    names = sorted((n for n in target if n in source), key=lambda n: (target[n].get(ORDER_KEY, 1 << 30), n))
    automatic = {n for n in names if all(bool(e.get(AUTOMATIC_KEY)) and unmoved(e) for e in (source[n], target[n]))}
    fitted = {n for n in automatic if all(bool(e.get(FITTED_KEY)) for e in (source[n], target[n]))}
    confidence = {n: float(target[n][CONFIDENCE_KEY]) for n in names if CONFIDENCE_KEY in target[n]}
    surfaces = {n: (placed_on(source[n]), placed_on(target[n])) for n in names}
    points = [np.array([location(side[n]) for n in names], dtype=np.float64).reshape(-1, 3) for side in (source,
                                                                                                         target)]
    return SceneMarkers(names, points[0], points[1], automatic, confidence,
                        {n: s for n, s in surfaces.items() if None not in s}, fitted)


def marker_collection(scene, side: str, created):
    """The marker collection of ``side`` under the scene's collection, made if missing."""
    col = bpy.data.collections.get(COLLECTIONS[side])
    if col is None:
        col = created.add(bpy.data.collections.new(COLLECTIONS[side]))
        scene.collection.children.link(col)
    return col


def remove(names) -> None:
    """Remove both empties of each named marker."""
    names = set(names)
    for side in COLLECTIONS:
        for name, obj in list(marker_empties(side).items()):
            if name in names:
                bpy.data.objects.remove(obj)


def remove_all() -> None:
    """Remove every empty of the marker collections."""
    for name in COLLECTIONS.values():
        col = bpy.data.collections.get(name)
        for obj in list(col.objects) if col is not None else []:
            bpy.data.objects.remove(obj)


def place(context, created, markers: SceneMarkers, size: float) -> list:
    """Empties (spheres of ``size``) at the markers' world locations, after the scene's in
    marker order, recording each location and surface point and, for the automatic
    markers, their flag and confidence.  Returns the new empties."""
    made = []
    first = 1 + max((o.get(ORDER_KEY, -1) for side in COLLECTIONS for o in marker_empties(side).values()), default=-1)
    for k, (side, points) in enumerate((("source", markers.source), ("target", markers.target))):
        col = marker_collection(context.scene, side, created)
        for order, (name, p) in enumerate(zip(markers.names, points), start=first):
            empty = created.add(bpy.data.objects.new(f"{name} ({side})", None))
            empty.empty_display_type, empty.empty_display_size = "SPHERE", size
            empty.matrix_world = Matrix.Translation([float(x) for x in p])
            empty[MARKER_KEY], empty[ORDER_KEY] = name, order
            empty[PLACED_KEY] = location(empty)
            if name in markers.placed_on:
                face, bary = markers.placed_on[name][k]
                empty[FACE_KEY], empty[BARY_KEY] = int(face), [float(b) for b in bary]
            if name in markers.automatic:
                empty[AUTOMATIC_KEY] = True
                if name in markers.fitted:
                    empty[FITTED_KEY] = True
            if name in markers.confidence:
                empty[CONFIDENCE_KEY] = float(markers.confidence[name])
            col.objects.link(empty)
            made.append(empty)
    return made


def select(context, objects) -> None:
    """Select exactly ``objects`` (the first becomes active), as a TD's click would."""
    for obj in context.view_layer.objects:
        if obj is not None:  # an object removed since the view layer was last synced
            obj.select_set(False)
    for obj in objects:
        obj.select_set(True)
    if objects:
        context.view_layer.objects.active = objects[0]


def selected_markers(context) -> list:
    """Names of the markers one of whose empties is selected, in the scene's order."""
    chosen = {o.get(MARKER_KEY, o.name) for o in context.selected_objects
              if any(c.name in COLLECTIONS.values() for c in o.users_collection)}
    return [n for n in dict.fromkeys(list(marker_empties("target")) + list(marker_empties("source"))) if n in chosen]


def empties_of(names) -> list:
    """Both empties of each named marker that has them."""
    return [side[n] for n in names for side in (marker_empties("target"), marker_empties("source")) if n in side]
