"""COLLADA morph controllers: a mesh's blend shapes.

A ``<morph>`` names its base geometry (``source``), its target geometries (``MORPH_TARGET``,
each with the base's points in the same order) and their weights (``MORPH_WEIGHT``).  With
``method="NORMALIZED"`` (the default) a target holds the shaped points, with ``RELATIVE`` the
offsets.  Exporters tie it to the mesh two ways: a skin whose ``source`` is the morph
controller (Maya, OpenCOLLADA), or a morph controller beside the skin, over the same
geometry (Blender): both are read, and a geometry's shapes are every morph over it.
"""
from __future__ import annotations

import logging

import numpy as np

from .collada import ColladaScene, geometry_points

log = logging.getLogger("asetransfer")
def geometry_morphs(scene: ColladaScene, geometry, linear: np.ndarray, n_points: int) -> tuple:
    """``(shapes, weights)`` of ``geometry``: name -> (vertices (k,), offsets (k, 3), None) of
    the targets of every morph over it, offsets turned by ``linear`` (the (3, 3) part of the
    matrix placing its points), and name -> default weight.  A target whose points do not
    match the base's is named in a warning and left out."""
    shapes, weights = {}, {}
    base = None
    for morph in scene.root.iter("morph"):
        if morph.get("source") != "#" + (geometry.get("id") or ""):
            continue
        if base is None:
            base = geometry_points(scene, geometry)
        relative = morph.get("method", "NORMALIZED").upper() == "RELATIVE"
        targets, amounts = _morph_inputs(scene, morph)
        for target_id, weight in zip(targets, amounts):
            target = scene.ref("#" + target_id, "a morph target")
            points = geometry_points(scene, target)
            name = target.get("name") or target_id
            if len(points) != n_points:
                log.warning("%s: morph target %r has %d points where its mesh has %d; left out", scene.path, name,
                            len(points), n_points)
                continue
            offsets = points if relative else points - base
            moved = np.flatnonzero(np.abs(offsets).max(axis=1) > 0)
            shapes[name] = (moved, offsets[moved] @ linear.T, None)
            weights[name] = float(weight)
    return shapes, weights


def _morph_inputs(scene: ColladaScene, morph) -> tuple:
    """The target geometry ids and their weights (0 where the file gives none) of a ``<morph>``."""
    sources = {}
    for semantic in ("MORPH_TARGET", "MORPH_WEIGHT"):
        put = morph.find(f"targets/input[@semantic='{semantic}']")
        sources[semantic] = scene.ref(put.get("source"), "a morph's targets") if put is not None else None
    if sources["MORPH_TARGET"] is None:
        scene.fail(f"morph over {morph.get('source')!r} has no MORPH_TARGET input")
    names = sources["MORPH_TARGET"].find("IDREF_array")
    if names is None:
        names = sources["MORPH_TARGET"].find("Name_array")
    ids = (names.text or "").split() if names is not None else []
    amounts = np.zeros(len(ids))
    if sources["MORPH_WEIGHT"] is not None and sources["MORPH_WEIGHT"].find("float_array") is not None:
        given = scene.numbers(sources["MORPH_WEIGHT"].find("float_array"), "a morph's weights")
        amounts[:min(len(given), len(ids))] = given[:len(ids)]
    return ids, amounts
