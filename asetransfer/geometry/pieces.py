"""Which pieces of a character's mesh lie over the others (layers) and which continue them.

Production characters come in pieces.  A joint cover sunk into a limb, a shirt or a hair
cap a little outside the body, an eye inside the head all lie *over* the body: most of
their area is close to a larger surface, straight above or below it.  A body (or a
robot's plates) cut at the joints meets its neighbours only at the cut rims, side by
side, where the offset runs along the surface.  The correspondence carries layers along
with the body instead of fitting them as skin, and the landmark search reads the body
without them; both ask :func:`layer_pieces` (the parameters: ``CorrespondenceConfig.
piece_gap``, ``layer_distance``, ``layer_angle``, ``layer_fraction``).
"""
from __future__ import annotations

import numpy as np

from .geodesic import bridge_edges, unique_edges
from .laplacian import boundary_vertices
from .surface import SurfaceIndex
from .topology import face_normals, vertex_areas, vertex_components


def layer_pieces(v: np.ndarray, f: np.ndarray, pieces: np.ndarray, bridges: np.ndarray, *, distance: float,
                 angle: float, fraction: float) -> np.ndarray:
    """(P,) True for the pieces that lie over a larger surface they come close to: at least
    ``fraction`` of their area is within ``distance`` of it, straight above or below it
    (:func:`area_over_larger`).

    Parameters
    ----------
    v, f : welded vertices and triangles; pieces : (n,) each vertex's piece label (0..P-1).
    bridges : (B, 2) vertex pairs on different pieces that come close (the neighbours).
    distance : in the units of ``v``; angle : degrees; fraction : of a piece's area.
    """
    return area_over_larger(v, f, pieces, bridges, distance, angle) >= fraction


def layer_faces(v: np.ndarray, f: np.ndarray, *, gap: float, distance: float, angle: float,
                fraction: float) -> np.ndarray:
    """(F,) True on the triangles of layers (:func:`layer_pieces`), pieces coming within
    ``gap`` of each other being neighbours; ``gap`` and ``distance`` are fractions of the
    bounding-box diagonal of the triangles' vertices."""
    pieces = vertex_components(len(v), f)
    if pieces[f[:, 0]].max(initial=0) == 0:
        return np.zeros(len(f), bool)
    used = np.unique(f)
    diagonal = float(np.linalg.norm(np.ptp(v[used], axis=0)))
    bridges = bridge_edges(v, unique_edges(f), gap * diagonal, connect_all=False)
    if not len(bridges):
        return np.zeros(len(f), bool)
    layer = layer_pieces(v, f, pieces, bridges, distance=distance * diagonal, angle=angle, fraction=fraction)
    return layer[pieces[f[:, 0]]]


def area_over_larger(v, f, pieces, bridges, distance: float, angle: float) -> np.ndarray:
    """(P,) per piece, the fraction of its area (vertex areas) within ``distance`` of the
    larger pieces it is bridged to and straight above or below them: the offset to the
    closest point within ``angle`` degrees of that triangle's normal, or touching it.  0 for
    a piece bridged to no larger piece.

    Parameters
    ----------
    v, f : welded vertices and triangles; pieces : (n,) each vertex's piece;
    bridges : (B, 2) vertex pairs on different pieces.
    """
    n_pieces = int(pieces.max()) + 1
    face_piece = pieces[f[:, 0]]
    face_area = 0.5 * np.linalg.norm(np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]]), axis=1)
    piece_area = np.bincount(face_piece, face_area, minlength=n_pieces)
    vertex_area = vertex_areas(v, f)
    pairs = np.unique(pieces[bridges], axis=0)
    cos_min = np.cos(np.radians(angle))
    rim = boundary_vertices(len(v), f)
    size = side_by_side_area(pieces, piece_area, bridges, rim)
    out = np.zeros(n_pieces)
    for p in np.unique(pairs[:, 0]):
        larger = np.unique(pairs[pairs[:, 0] == p, 1])
        larger = larger[size[larger] > size[p]]
        if not len(larger):
            continue
        under = f[np.isin(face_piece, larger)]
        mine = np.flatnonzero(pieces == p)
        face, bary, dist, point = SurfaceIndex(v, under).closest(v[mine])
        normal = face_normals(v, under)[face]
        # along the normal (a layer's offset) or touching (where a cover cuts into the limb)
        along = np.abs(np.einsum("ij,ij->i", v[mine] - point, normal)) >= cos_min * dist
        over = (dist <= distance) & along & ~on_rim(under[face], bary, rim)
        out[p] = vertex_area[mine][over].sum() / max(vertex_area[mine].sum(), 1e-300)
    return out


def side_by_side_area(pieces: np.ndarray, piece_area: np.ndarray, bridges: np.ndarray,
                       rim: np.ndarray) -> np.ndarray:
    """(P,) per piece, the area of the pieces it continues: those joined to it rim to rim
    (bridges between boundary vertices of both, as where a body or a robot's plates were
    cut), so a piece is measured with the surface it belongs to.

    A robot is tens of plates smaller than its ball joints; measured alone, the plates
    under a hip or waist ball were taken for layers over it and left unfitted (robot
    fixture target, hand markers: upper arm 1.5 %H).  A closed piece (a cover, an eye, a
    one-piece body) has no rim and keeps its own area.

    Parameters
    ----------
    pieces : (n,) each vertex's piece; piece_area : (P,) each piece's area;
    bridges : (B, 2) vertex pairs on different pieces; rim : (n,) True on boundary vertices.
    """
    side = bridges[rim[bridges].all(axis=1)]
    group = vertex_components(len(piece_area), pieces[side][:, [0, 1, 1]]) if len(side) else np.arange(len(piece_area))
    return np.bincount(group, piece_area, minlength=group.max() + 1)[group]


def on_rim(corners: np.ndarray, bary: np.ndarray, rim: np.ndarray) -> np.ndarray:
    """(K,) True for closest points on an open rim of the surface: every corner they are
    weighted on (barycentric coordinate above 1e-9) is a boundary vertex.

    A point whose closest point on a neighbour is that neighbour's cut rim lies beside it,
    not over it: plates wrapping round a limb (a robot's, cut lengthwise) reach their
    neighbours' rims within ``angle`` of the rim triangles' normals, and were taken
    for layers and left unfitted (robot fixture target, hand markers: upper arms 1.5 %H).

    Parameters
    ----------
    corners : (K, 3) vertex indices of each point's triangle; bary : (K, 3) its
    barycentric coordinates there; rim : (n,) True on boundary vertices.
    """
    return (rim[corners] | (bary <= 1e-9)).all(axis=1)
