"""Step 1 of the correspondence: align the source to the target by the markers (Umeyama),
normalise both to the target body's unit diagonal, and prepare each mesh for the solvers
(weld, find the marked pieces, the pieces glued to them and the layers riding along)."""
from __future__ import annotations

import logging

import numpy as np
import scipy.sparse as sp

from ...config import CorrespondenceConfig
from ...geometry.alignment import Similarity, umeyama
from ...geometry.geodesic import bridge_edges, unique_edges
from ...geometry.laplacian import degenerate_triangles
from ...geometry.pieces import LayerRule, layer_pieces
from ...geometry.topology import used_vertices, vertex_components, weld
from ...model.markers import Markers
from ...model.mesh import Mesh
from ...model.surface import SurfacePoints
from .side import PreparedSide

log = logging.getLogger("asetransfer")


def aligned_sides(source: Mesh, target: Mesh, markers: Markers, cfg: CorrespondenceConfig):
    """Step 1: the marker similarity (source -> target frame), the unit-diagonal frame of the
    target's fitted pieces (not of layers or props riding along), and both meshes prepared
    in it (warning about large unmarked pieces).

    Parameters
    ----------
    source, target : the meshes as given; markers : their linked surface points.

    Returns
    -------
    alignment : :class:`Similarity` source -> target frame (Umeyama on the marker pairs),
    normalising : :class:`Similarity` target frame -> normalised frame,
    source_side, target_side : :class:`PreparedSide` each, in the normalised frame.
    """
    source_markers = markers.source.positions(source.vertices, source.faces)
    target_markers = markers.target.positions(target.vertices, target.faces)
    alignment = umeyama(source_markers, target_markers)
    used = used_vertices(target.faces)  # vertices used by triangles: a stray vertex has no say
    normalising = normalising_similarity(target.vertices[used], alignment.rotation)
    target_side = prepare_side(normalising.apply(target.vertices), target.faces, markers.target, cfg)
    body_normalising = normalising_similarity(target.vertices[target_side.solved[target_side.input_to_welded]],
                                              alignment.rotation)
    if body_normalising.scale != normalising.scale:
        # the parameters are fractions of the body's diagonal: layers and props riding
        # along (a sword held forward) do not change them.  Prepared again in that frame
        normalising = body_normalising
        target_side = prepare_side(normalising.apply(target.vertices), target.faces, markers.target, cfg)
    source_side = prepare_side(normalising.apply(alignment.apply(source.vertices)), source.faces,
                               markers.source, cfg)
    target_side.given = (target.vertices, target.faces, normalising)
    _warn_unmarked(source_side, target_side, cfg)
    return alignment, normalising, source_side, target_side


def _warn_unmarked(source_side: PreparedSide, target_side: PreparedSide, cfg: CorrespondenceConfig) -> None:
    """Warn when more than ``cfg.unmarked_area_warning`` of a mesh's surface is in pieces
    without a marker: they are not fitted, only carried along."""
    for side, what in ((source_side, "source"), (target_side, "target")):
        n_unmarked, n_pieces, fraction = side.unmarked
        if fraction > cfg.unmarked_area_warning:
            log.warning("%d of the %s's %d pieces (%.0f%% of its surface) carry no marker; they are not fitted, "
                        "only carried along with the nearest marked piece: add markers on them or join them",
                        n_unmarked, what, n_pieces, 100 * fraction)


def normalising_similarity(points: np.ndarray, axes: np.ndarray) -> Similarity:
    """Similarity turning ``points`` into the frame of ``axes`` and scaling them to a unit
    bounding-box diagonal around the origin: ``x -> s axes^T x - s (lo + hi) / 2`` with
    ``s = 1 / |hi - lo|``, ``lo``, ``hi`` the box corners in that frame.

    Parameters
    ----------
    points : (n, 3) the target's points.
    axes : (3, 3) rotation whose columns are the source's axes in the target's frame (the
        marker similarity's): the box is the same however the target is turned, so every
        length that is a fraction of its diagonal is too (the grid of the fairing proxies).

    Returns
    -------
    :class:`Similarity` target frame -> normalised frame.
    """
    local = points @ axes
    lo, hi = local.min(axis=0), local.max(axis=0)
    scale = 1.0 / max(float(np.linalg.norm(hi - lo)), 1e-300)
    return Similarity(scale, axes.T, -scale * 0.5 * (lo + hi))


def prepare_side(vertices: np.ndarray, faces: np.ndarray, points: SurfacePoints,
                 cfg: CorrespondenceConfig) -> PreparedSide:
    """One mesh prepared for the solvers: welded, its marked part (pieces holding a marker
    and pieces glued to them) numbered on its own, the markers and the glue as sparse rows.

    Parameters
    ----------
    vertices : (n, 3) the mesh's vertices in the normalised frame; faces : (F, 3) its triangles.
    points : the K markers on this mesh (input triangles).

    Returns
    -------
    :class:`PreparedSide`.
    """
    welded_vertices, welded_faces, input_to_welded = weld(vertices, faces, cfg.weld_tolerance)
    bridges, labels, own_pieces, layer = _glue_pairs(welded_vertices, welded_faces, points, cfg)
    marked = np.unique(labels[welded_faces[points.face].ravel()])
    face_active = np.isin(labels[welded_faces[:, 0]], marked)
    active_mask = np.isin(labels, marked)
    # a vertex of the marked part in no triangle of non-zero area (the loose corner of one
    # bad triangle) has no row in the smoothness operators: left free, it makes the fairing
    # singular.  It leaves the solve with its triangles and rides along (carry) instead.
    loose = _loose_vertices(welded_vertices, welded_faces, face_active, points)
    active_mask[loose] = False
    face_active &= ~loose[welded_faces].any(axis=1)
    active = np.flatnonzero(active_mask)
    renumber = np.full(len(welded_vertices), -1, dtype=np.int64)
    renumber[active] = np.arange(len(active))
    held = bridges[np.isin(labels[bridges[:, 0]], marked)] if len(bridges) else bridges
    return PreparedSide(welded_vertices, welded_faces, input_to_welded, active, renumber[welded_faces[face_active]],
                        _marker_rows(points, renumber[welded_faces[points.face]], len(active)),
                        _unmarked_summary(welded_vertices, welded_faces, labels, face_active, layer),
                        _glue_rows(renumber[held], len(active)), np.isin(labels, marked),
                        len(np.unique(own_pieces[welded_faces[points.face, 0]])),
                        ~np.isin(labels, marked) & ~layer)


def _marker_rows(points: SurfacePoints, corners: np.ndarray, n_active: int) -> sp.csr_matrix:
    """(K, a) the markers' barycentric rows ``B`` (``r_k = B x``, Eq. A I-1b/c, A I-2c) on
    the active numbering; ``corners`` (K, 3) are each marker's triangle corners on it."""
    rows = np.repeat(np.arange(len(points)), 3)
    return sp.csr_matrix((points.bary.ravel(), (rows, corners.ravel())), shape=(len(points), n_active))


def _glue_rows(pairs: np.ndarray, n_active: int) -> sp.csr_matrix:
    """(G, a) rows ``e_i - e_j`` of the glued vertex ``pairs`` (G, 2) on the active numbering."""
    rows = np.repeat(np.arange(len(pairs)), 2)
    return sp.csr_matrix((np.tile([1.0, -1.0], len(pairs)), (rows, pairs.ravel())), shape=(len(pairs), n_active))


def _unmarked_summary(vertices, faces, labels, face_active, layer) -> tuple:
    """(pieces carried without a marker, all pieces, their fraction of the surface area).
    Layers (covers, clothes, eyes) ride along by design: they are not counted."""
    area = np.linalg.norm(np.cross(vertices[faces[:, 1]] - vertices[faces[:, 0]],
                                   vertices[faces[:, 2]] - vertices[faces[:, 0]]), axis=1)
    pieces = len(np.unique(labels[faces[:, 0]]))
    carried = ~face_active & ~layer[faces[:, 0]]
    return (len(np.unique(labels[faces[carried, 0]])), pieces,
            float(area[carried].sum() / max(area.sum(), 1e-300)))


def _glue_pairs(vertices, faces, points: SurfacePoints, cfg: CorrespondenceConfig):
    """Vertex pairs on different pieces within ``cfg.piece_gap`` (armour plates, a body cut
    at the joints).  Pieces that lie over another (:func:`_layer_pieces`: joint covers,
    clothes, hair, eyes) are not glued: they ride along with the body like a piece without
    a marker.

    Returns
    -------
    bridges : (B, 2) the glued vertex pairs; labels : (n,) each vertex's piece with glued
    pieces joined; pieces : (n,) each vertex's own piece; layer : (n,) True on layers' vertices.
    """
    pieces = vertex_components(len(vertices), faces)
    layer = np.zeros(len(vertices), bool)
    if cfg.piece_gap <= 0 or pieces.max(initial=0) == 0:  # one piece (the usual body): nothing to bridge
        return np.zeros((0, 2), int), pieces, pieces, layer
    bridges = bridge_edges(vertices, unique_edges(faces), cfg.piece_gap, connect_all=False)
    if len(bridges) and cfg.layer_distance > 0:
        layer = _layer_pieces(vertices, faces, pieces, bridges, points, cfg)[pieces]
        bridges = bridges[~layer[bridges].any(axis=1)]
    labels = vertex_components(len(vertices), np.concatenate([faces, bridges[:, [0, 1, 1]]])) if len(bridges) else pieces
    return bridges, labels, pieces, layer


def _layer_pieces(vertices, faces, pieces, bridges, points: SurfacePoints, cfg: CorrespondenceConfig) -> np.ndarray:
    """(P,) True for the pieces that lie over a larger piece they are glued to, rather than
    continue it (:func:`~asetransfer.geometry.pieces.layer_pieces` by ``cfg``'s
    :class:`~asetransfer.geometry.pieces.LayerRule`).  The source is one skin: a
    layer glued in is faired and registered as body surface (with 20 automatic markers,
    joint covers moved the heavy fixture's joints 2.6 %H).  Pieces holding a marker are the
    body by definition and are never layers.

    Parameters
    ----------
    vertices, faces : welded vertices and triangles; pieces : (n,) each vertex's piece;
    bridges : (B, 2) vertex pairs within ``piece_gap`` on different pieces;
    points : the markers (their triangles' pieces are kept).

    Returns
    -------
    (P,) bool per piece label.
    """
    marked = np.zeros(int(pieces.max()) + 1, bool)
    marked[pieces[faces[points.face, 0]]] = True
    rule = LayerRule.of(cfg)
    return layer_pieces(vertices, faces, pieces, bridges, distance=rule.distance, angle=rule.angle,
                        fraction=rule.fraction, hanging=rule.hanging) & ~marked


def _loose_vertices(vertices, faces, face_active, points: SurfacePoints) -> np.ndarray:
    """(n,) True for vertices of active faces used by none of non-zero area (and by no marker)."""
    good = face_active.copy()
    good[face_active] = ~degenerate_triangles(vertices, faces[face_active])
    loose = np.zeros(len(vertices), bool)
    loose[faces[face_active].ravel()] = True
    loose[faces[good].ravel()] = False
    loose[faces[points.face].ravel()] = False  # a marker ties its corners: they stay in the solve
    return loose
