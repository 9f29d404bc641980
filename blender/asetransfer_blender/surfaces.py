"""Markers between the surface the viewport shows and the meshes the transfer reads (no ``bpy``).

A TD places a marker on what the viewport shows: each mesh with its modifiers and, on the
source, the armature's current pose.  The transfer reads another shape of the same
vertices: the source's rest shape, and each mesh as modelled unless *Apply modifiers* is
on.  A pose and deforming modifiers move vertices and never add any, so the two shapes
share their vertices and triangles, and a point of the shown surface -- a triangle and
barycentric coordinates ``(f, b)`` -- is the point ``sum_i b_i v'_{F[f, i]}`` of the
transfer's mesh (``v'`` its vertices).  Marker files hold those transfer points (the
command line reads the same meshes from files); the empties stand on the shown surface.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from asetransfer.geometry.alignment import umeyama
from asetransfer.geometry.surface import closest_points
from asetransfer.io.markers import resolve_locations
from asetransfer.model.mesh import Mesh
from asetransfer.model.surface import SurfacePoints


@dataclass(eq=False)
class Character:
    """One character's two shapes, in the asetransfer frame: ``mesh`` as the transfer reads it
    and ``shown`` as the viewport shows it (the same faces; its vertices as displayed)."""

    mesh: Mesh
    shown: Mesh

    @classmethod
    def of(cls, mesh: Mesh, shown_vertices: np.ndarray) -> "Character":
        return cls(mesh, Mesh(shown_vertices, mesh.faces, parts=mesh.parts, vertex_part=mesh.vertex_part))


def shown_positions(points: SurfacePoints, character: Character) -> np.ndarray:
    """(K, 3) where surface points of the transfer's mesh are on the shown surface."""
    return points.positions(character.shown.vertices, character.shown.faces)


def shown_points(where, locations: np.ndarray, character: Character, *, side: str, labels: list,
                 snap_distance: float) -> SurfacePoints:
    """Surface points of (K, 3) locations on the shown surface (the closest point of each).

    Parameters
    ----------
    where : the marker collection, named in messages.
    locations : (K, 3) the empties' locations, asetransfer frame.
    character : the character they stand on; ``side`` ("source"/"target") names it in messages.
    labels : K labels naming each marker in messages.
    snap_distance : ``CorrespondenceConfig.marker_snap_distance``: a location further than
        this fraction of the shown mesh's bounding-box diagonal is refused, as the command
        line refuses such a point in a marker file.

    Returns
    -------
    :class:`SurfacePoints` on the shown surface, which are the same on the transfer's mesh.
    """
    locs = [{"point": [float(x) for x in p]} for p in np.asarray(locations, dtype=np.float64).reshape(-1, 3)]
    return resolve_locations(where, locs, character.shown, side=side, labels=labels, snap_distance=snap_distance)


def still_on(faces: np.ndarray, barys: np.ndarray, locations: np.ndarray, character: Character) -> np.ndarray:
    """(K,) True where an empty at ``locations`` (K, 3) still stands on the surface point
    ``(faces, barys)`` it was placed at: the character's shown surface has that point there
    within 1e-6 of its size (the empty's float32), so its mesh did not change since."""
    faces = np.asarray(faces, dtype=np.int64)
    valid = (faces >= 0) & (faces < len(character.shown.faces))
    at = SurfacePoints(np.where(valid, faces, 0), barys).positions(character.shown.vertices, character.shown.faces)
    return valid & (np.linalg.norm(at - np.asarray(locations).reshape(-1, 3), axis=1) <= 1e-6 * size(character))


def counterpart(point: np.ndarray, here: Character, there: Character, here_markers: np.ndarray,
                there_markers: np.ndarray) -> np.ndarray:
    """A first guess of where ``point`` of one character's shown surface is on the other's.

    With at least three markers not on one line, the similarity fitting them (Umeyama:
    ``x -> s R x + t`` minimising ``sum_k |s R p_k + t - q_k|^2``) carries the point;
    otherwise its place in ``here``'s bounding box is taken to the same place in
    ``there``'s.  The result is snapped to ``there``'s shown surface: the TD moves it
    where it belongs.

    Parameters
    ----------
    point : (3,) on ``here``'s shown surface.
    here_markers, there_markers : (K, 3) the markers on both shown surfaces, in pairs.

    Returns
    -------
    (3,) a point of ``there``'s shown surface.
    """
    if len(here_markers) >= 3 and _spread(here_markers) and _spread(there_markers):
        guess = umeyama(here_markers, there_markers).apply(np.asarray(point)[None])[0]
    else:
        lo, hi = here.shown.bounds()
        lo2, hi2 = there.shown.bounds()
        guess = lo2 + (np.asarray(point) - lo) / np.maximum(hi - lo, 1e-300) * (hi2 - lo2)
    return snapped(guess, there)


def closest_on_shown(locations: np.ndarray, character: Character) -> SurfacePoints:
    """The closest points of the character's shown surface to (K, 3) locations."""
    face, bary, _ = closest_points(np.asarray(locations, dtype=np.float64).reshape(-1, 3), character.shown.vertices,
                                   character.shown.faces)
    return SurfacePoints(face, bary)


def snapped(point: np.ndarray, character: Character) -> np.ndarray:
    """(3,) the closest point of the character's shown surface to ``point``."""
    return shown_positions(closest_on_shown(point, character), character)[0]


def _spread(points: np.ndarray) -> bool:
    """True when the points span a plane (not all at one point or on one line)."""
    s = np.linalg.svd(points - points.mean(axis=0), compute_uv=False)
    return bool(s[0] > 0 and s[1] > 1e-6 * s[0])


def size(character: Character) -> float:
    """The shown mesh's bounding-box diagonal."""
    lo, hi = character.shown.bounds()
    return float(np.linalg.norm(hi - lo))
