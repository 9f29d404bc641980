"""Which pieces of a character's mesh lie over the others (layers) and which continue them.

Production characters come in pieces.  A joint cover sunk into a limb, a shirt or a hair
cap a little outside the body, an eye inside the head all lie *over* the body: most of
their area is close to a larger surface, straight above or below it.  A body (or a
robot's plates) cut at the joints meets its neighbours only at the cut rims, side by
side, where the offset runs along the surface.  Hair cards (strips rooted on the scalp)
and a prop held in a hand touch the body at a small part of themselves and *hang off* it:
much of their area is far from it.  Outer cards touching only inner ones *rest on* those
layers.  The correspondence carries layers along with the body instead of fitting them as
skin, and the landmark search reads the body without them; both ask :func:`layer_pieces`
with one :class:`LayerRule` (``CorrespondenceConfig.piece_gap`` and ``layer_*``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..config import CorrespondenceConfig

from .alignment import principal_box_sides
from .geodesic import bridge_edges, unique_edges
from .laplacian import boundary_vertices
from .surface import SurfaceIndex
from .topology import face_normals, used_vertices, vertex_areas, vertex_components, vertex_normals

#: rims continue each other (a cut) when the offset between them lies within this many
#: degrees of the tangent planes at both: 90 - ``layer_angle``'s default, the offset of a
#: layer lying along the normal
RIM_ANGLE = 45.0


@dataclass(frozen=True)
class LayerRule:
    """Which pieces are layers (:func:`layer_pieces`): pieces within ``gap`` of each other are
    neighbours; one lies over a larger neighbour when ``fraction`` of its area is within
    ``distance`` of it, offset within ``angle`` degrees of its normal, and hangs off it when
    ``hanging`` of its area is farther (above 1: never).  ``gap`` and ``distance`` are
    fractions of the mesh's diagonal; ``fraction`` and ``hanging`` of a piece's area."""

    gap: float
    distance: float
    angle: float
    fraction: float
    hanging: float = 1.0

    @classmethod
    def of(cls, config: CorrespondenceConfig) -> "LayerRule | None":
        """The rule the correspondence carries layers by; None when layers are off
        (``layer_distance`` 0: every piece near another is glued to it)."""
        if config.layer_distance <= 0:
            return None
        return cls(config.piece_gap, config.layer_distance, config.layer_angle, config.layer_fraction,
                   config.layer_hanging)


def layer_pieces(v: np.ndarray, f: np.ndarray, pieces: np.ndarray, bridges: np.ndarray, *, distance: float,
                 angle: float, fraction: float, hanging: float = 1.0) -> np.ndarray:
    """(P,) True for the pieces that lie over a larger surface they come close to: at least
    ``fraction`` of their area is within ``distance`` of it, straight above or below it
    (:func:`area_over_larger`); or that hang off it: at least ``hanging`` of their area is
    farther than ``distance`` from it (:func:`area_off_larger`: hair cards, a held prop).

    Parameters
    ----------
    v, f : welded vertices and triangles; pieces : (n,) each vertex's piece label (0..P-1).
    bridges : (B, 2) vertex pairs on different pieces that come close (the neighbours).
    distance : in the units of ``v``; angle : degrees; fraction, hanging : of a piece's area
    (``hanging`` above 1: no piece hangs).

    Returns
    -------
    (P,) bool per piece label.
    """
    surfaces = {}  # the larger pieces' search trees, shared by both measures
    layer = area_over_larger(v, f, pieces, bridges, distance, angle, surfaces) >= fraction
    if hanging <= 1:
        layer |= area_off_larger(v, f, pieces, bridges, distance, surfaces) >= hanging
    return resting_on_layers(v, f, pieces, bridges, layer)


def layer_faces(v: np.ndarray, f: np.ndarray, rule: LayerRule) -> np.ndarray:
    """(F,) True on the triangles of layers by ``rule`` (:func:`layer_pieces`), its lengths
    taken on the diagonal of the triangles' vertices' box along their principal axes (the
    same pieces however the mesh is turned)."""
    pieces = vertex_components(len(v), f)
    if pieces[f[:, 0]].max(initial=0) == 0:
        return np.zeros(len(f), bool)
    used = used_vertices(f)
    diagonal = float(np.linalg.norm(principal_box_sides(v[used])))
    bridges = bridge_edges(v, unique_edges(f), rule.gap * diagonal, connect_all=False)
    if not len(bridges):
        return np.zeros(len(f), bool)
    layer = layer_pieces(v, f, pieces, bridges, distance=rule.distance * diagonal, angle=rule.angle,
                         fraction=rule.fraction, hanging=rule.hanging)
    return layer[pieces[f[:, 0]]]


def resting_on_layers(v, f, pieces, bridges, layer: np.ndarray) -> np.ndarray:
    """(P,) ``layer`` plus the pieces that touch a layer at least as large as themselves (as
    the surfaces they continue, :func:`side_by_side_area`) and no larger piece that is not a
    layer, repeated until no piece is added: they ride on those layers.

    Outer hair cards touch only cards, of their own surface, not the head: they have no
    larger piece to lie over or hang off; left in (82 of the 138 cards tests/dressing.py hangs
    on the heavy fixture), the landmark search put the back of the head, the ears and the
    head top on them (5.45, 4.76, 2.87, 1.84 %H off).  A body touching its clothes, hair or eyes is larger than them and stays; a
    robot's plates touch plates of their own surface that are not layers.

    Parameters
    ----------
    v, f : welded vertices and triangles; pieces : (n,) each vertex's piece;
    bridges : (B, 2) vertex pairs on different pieces; layer : (P,) bool.

    Returns
    -------
    (P,) bool.
    """
    n_pieces = len(layer)
    _, size, pairs = _piece_sizes(v, f, pieces, bridges, n_pieces)
    mine, other = pairs[:, 0], pairs[:, 1]
    layer = layer.copy()
    while True:
        carried = np.bincount(mine, layer[other] & (size[other] >= size[mine]), minlength=n_pieces) > 0
        held = np.bincount(mine, ~layer[other] & (size[other] > size[mine]), minlength=n_pieces) > 0
        new = carried & ~held & ~layer
        if not new.any():
            return layer
        layer |= new


def area_over_larger(v, f, pieces, bridges, distance: float, angle: float, surfaces: dict | None = None) -> np.ndarray:
    """(P,) per piece, the fraction of its area (vertex areas) within ``distance`` of the
    larger pieces it is bridged to and straight above or below them: the offset to the
    closest point within ``angle`` degrees of that triangle's normal, or touching it.  0 for
    a piece bridged to no larger piece.

    Parameters
    ----------
    v, f : welded vertices and triangles; pieces : (n,) each vertex's piece;
    bridges : (B, 2) vertex pairs on different pieces; surfaces : search trees of sets of
    pieces, built on first use and kept here (:func:`_larger_surface`), or None.
    """
    n_pieces = int(pieces.max()) + 1
    face_piece = pieces[f[:, 0]]
    _, size, pairs = _piece_sizes(v, f, pieces, bridges, n_pieces)
    vertex_area = vertex_areas(v, f)
    cos_min = np.cos(np.radians(angle))
    rim = boundary_vertices(len(v), f)
    out = np.zeros(n_pieces)
    surfaces = {} if surfaces is None else surfaces  # hundreds of hair cards share the body's tree
    for p in np.unique(pairs[:, 0]):
        larger = np.unique(pairs[pairs[:, 0] == p, 1])
        larger = larger[size[larger] > size[p]]
        if not len(larger):
            continue
        under, index, normals = _larger_surface(v, f, face_piece, larger, surfaces)
        mine = np.flatnonzero(pieces == p)
        face, bary, dist, point = index.closest(v[mine])
        normal = normals[face]
        # along the normal (a layer's offset) or touching (where a cover cuts into the limb);
        # a closest point on an edge or corner (off the rim) has its offset in the normals'
        # cone there: over a convex bend, e.g. a hair card over the ear (measured: offsets
        # 50-68 deg off the triangle's normal, 22-39 deg off the interpolated vertex normal)
        along = np.abs(np.einsum("ij,ij->i", v[mine] - point, normal)) >= cos_min * dist
        along |= (bary <= 1e-9).any(axis=1)
        over = (dist <= distance) & along & ~on_rim(under[face], bary, rim)
        out[p] = vertex_area[mine][over].sum() / max(vertex_area[mine].sum(), 1e-300)
    return out


def area_off_larger(v, f, pieces, bridges, distance: float, surfaces: dict | None = None) -> np.ndarray:
    """(P,) per piece, the fraction of its area (vertex areas) farther than ``distance``
    from every larger piece it is bridged to: the part hanging free of the surface it
    touches.  0 for a piece bridged to no larger piece.

    A hair card is rooted on the scalp and hangs: its far part is neither over the head
    (:func:`area_over_larger`) nor beside it.  Glued in, cards were fitted as the head's
    surface (300 cards on d01, hand markers: orientation 5.3 -> 10.5 deg).  Pieces a body
    or a robot was cut into continue each other rim to rim and are measured as one
    surface (:func:`side_by_side_area`), so none of them is larger than another.  "Larger"
    also asks the piece itself to be larger than the hanging one: cards touching each
    other form one surface of their own, which may outgrow the body, and the body does not
    hang off the cards.

    Parameters
    ----------
    v, f : welded vertices and triangles; pieces : (n,) each vertex's piece;
    bridges : (B, 2) vertex pairs on different pieces; distance : in the units of ``v``;
    surfaces : search trees of sets of pieces, as for :func:`area_over_larger`, or None.

    Returns
    -------
    (P,) fractions in [0, 1].
    """
    n_pieces = int(pieces.max()) + 1
    face_piece = pieces[f[:, 0]]
    piece_area, size, pairs = _piece_sizes(v, f, pieces, bridges, n_pieces)
    vertex_area = vertex_areas(v, f)
    out = np.zeros(n_pieces)
    surfaces = {} if surfaces is None else surfaces
    for p in np.unique(pairs[:, 0]):
        larger = np.unique(pairs[pairs[:, 0] == p, 1])
        larger = larger[(size[larger] > size[p]) & (piece_area[larger] > piece_area[p])]
        if not len(larger):
            continue
        mine = np.flatnonzero(pieces == p)
        dist = _larger_surface(v, f, face_piece, larger, surfaces)[1].closest(v[mine], bary=False)[2]
        out[p] = vertex_area[mine][dist > distance].sum() / max(vertex_area[mine].sum(), 1e-300)
    return out


def _piece_sizes(v, f, pieces, bridges, n_pieces: int):
    """Each piece's area (P,), the area of the surface it continues (P,)
    (:func:`side_by_side_area`), and the (Q, 2) distinct pairs of bridged pieces."""
    piece_area = np.bincount(pieces, vertex_areas(v, f), minlength=n_pieces)
    rim = boundary_vertices(len(v), f)
    side = bridges[rim[bridges].all(axis=1)]
    size = side_by_side_area(pieces, piece_area, side[along_surface(v, f, side)])
    return piece_area, size, np.unique(pieces[bridges], axis=0)


def along_surface(v: np.ndarray, f: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """(B,) True for the vertex pairs whose offset lies along the surface at both ends: within
    ``RIM_ANGLE`` of the tangent planes (vertex normals) there, as across a cut.

    A shirt made over a body cut at the waist has its hem right over the body's cut rim,
    1.2 %H out along the normal: measured as one surface with the body piece, the shirt was
    no longer smaller than it and stayed in as body (the heavy dev body cut and dressed:
    the landmark search found no body layout).
    """
    if not len(pairs):
        return np.zeros(0, bool)
    normals = vertex_normals(v, f)
    offset = v[pairs[:, 1]] - v[pairs[:, 0]]
    length = np.maximum(np.linalg.norm(offset, axis=1), 1e-300)
    sine = np.sin(np.radians(RIM_ANGLE))
    return ((np.abs(np.einsum("ij,ij->i", offset, normals[pairs[:, 0]])) <= sine * length)
            & (np.abs(np.einsum("ij,ij->i", offset, normals[pairs[:, 1]])) <= sine * length))


def _larger_surface(v, f, face_piece, larger: np.ndarray, surfaces: dict):
    """The triangles of the pieces ``larger``, their :class:`SurfaceIndex` and normals, built
    once per set of pieces and kept in ``surfaces``."""
    key = larger.tobytes()
    if key not in surfaces:
        under = f[np.isin(face_piece, larger)]
        surfaces[key] = under, SurfaceIndex(v, under), face_normals(v, under)
    return surfaces[key]


def side_by_side_area(pieces: np.ndarray, piece_area: np.ndarray, side: np.ndarray) -> np.ndarray:
    """(P,) per piece, the area of the pieces it continues: those joined to it rim to rim
    (``side``: bridges between boundary vertices of both, the offset along the surface, as
    where a body or a robot's plates were cut), so a piece is measured with the surface it
    belongs to.

    A robot is tens of plates smaller than its ball joints; measured alone, the plates
    under a hip or waist ball were taken for layers over it and left unfitted (robot
    fixture target, hand markers: upper arm 1.5 %H).  A closed piece (a cover, an eye, a
    one-piece body) has no rim and keeps its own area.

    Parameters
    ----------
    pieces : (n,) each vertex's piece; piece_area : (P,) each piece's area;
    side : (B, 2) vertex pairs on the rims of different pieces that continue each other.
    """
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
