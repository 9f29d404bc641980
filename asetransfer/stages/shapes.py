"""Blend shapes carried from the source onto the target through the correspondence.

Each shape's offsets are carried to every target vertex from its point on the source,
turned and scaled by the similarity that takes the source's region under the shape (its
vertices weighted by how far they move) onto the registered source there::

    d_t(v) = s_k R_k sum_j b_j d_k(f_j)        (v -> point b on source triangle f)

so a smaller face opens its jaw less, a larger head blinks wider, and a target turned or in
centimetres gets the shapes in its own frame.  The map is first made finer where the shapes
move (:func:`~.correspondence.refine.refine_region`): the whole-body map leaves facial
features millimetres off, and a blink carried through it closes the wrong strip of skin.

Measured on the 16 facial expressions of the five dev cases (mean relative error over the
moving region, ``mheval.blendshapes``): carried through the whole-body map 0.163, through
the refined map 0.114.  Deformation transfer (Sumner & Popovic 2004: each target triangle
takes the deformation gradient of the source triangle its centroid maps to, solved in least
squares with anchors where nothing moves) did worse through the same refined map, 0.238
(0.40 on the remeshed target, whose coarser triangles each straddle source triangles of
different gradients), and also with the exact vertex-to-vertex map of a same-topology case
(0.17 against 0.12 copied): the expressions are bone rotations, whose displacement a
gradient field integrated from anchors reproduces less well than the displacement itself.
"""
from __future__ import annotations

import logging

import numpy as np

from ..geometry.alignment import umeyama
from ..geometry.rotations import swing
from ..geometry.topology import vertex_areas, vertex_normals
from ..config import ShapesConfig
from ..model.report import BlendshapesReport, ShapeRecord, Stopwatch
from ..model.shapes import MorphTarget, sparse_target
from ..model.surface import interpolate
from .correspondence.refine import grown, refine_region

log = logging.getLogger("asetransfer")

def carry_shapes(shapes, source_vertices: np.ndarray, source_faces: np.ndarray, target_vertices: np.ndarray,
                 target_faces: np.ndarray, corr, *, reject_angle: float, config: ShapesConfig, own_names=(),
                 base_normals=None):
    """The target's blend shapes, carried from the source's (module docstring).

    Parameters
    ----------
    shapes : the source's :class:`~asetransfer.model.shapes.MorphTarget` list.
    source_vertices : (n_s, 3), source_faces : (F_s, 3) the source as modelled (the shapes' mesh).
    target_vertices : (n_t, 3), target_faces : (F_t, 3) the target.
    corr : the :class:`~asetransfer.model.correspondence.Correspondence` between them.
    reject_angle : degrees (``CorrespondenceConfig.reject_angle``) for the refined fit.
    config : :class:`~asetransfer.config.ShapesConfig` (the refined region, fit and confidence).
    own_names : names of the target's own morph targets: they are kept, and a source shape
        of the same name is not carried (reported in ``dropped``, with a warning).
    base_normals : (n_t, 3) the target's normals (the file's), or None: its geometric normals.

    Returns
    -------
    carried : tuple of MorphTarget on the target (default weight 0: the target as given);
    report : :class:`~asetransfer.model.report.BlendshapesReport`.
    """
    watch = Stopwatch()
    given = len(shapes)
    dropped = [s.name for s in shapes if s.name in set(own_names)]
    if dropped:
        log.warning("the target has its own morph target(s) %s: kept, the source's of the same name not carried",
                    ", ".join(repr(n) for n in dropped))
    shapes = [s for s in shapes if s.name not in set(dropped)]
    height = float(corr.body_extent(target_vertices).max())
    region = _region(shapes, len(source_vertices), source_faces, config.margin_rings)
    registered, mapped = refine_region(
        source_vertices, source_faces, corr.registered_source, target_vertices, target_faces,
        corr.target_to_source, region, height=height, reject_angle=reject_angle, config=config,
        source_solved=corr.source_solved, target_solved=corr.target_solved)
    receives = _receiving(mapped, source_faces, corr.source_solved, corr.target_solved)
    confident = _confidently_mapped(registered, source_faces, target_vertices, target_faces, mapped,
                                    config.close_distance * height, config.close_angle)
    areas = vertex_areas(target_vertices, target_faces)
    carried, records = [], []
    for shape in shapes:
        offsets, touched = _carried_offsets(shape, source_vertices, source_faces, registered, mapped, receives, corr)
        normals = None
        if shape.normals is not None:
            normals = _normal_offsets(target_vertices, target_faces, touched, offsets, base_normals)
        target = _sparse(shape.name, len(target_vertices), touched, offsets, normals)
        carried.append(target)
        records.append(_record(target, areas, confident[0], confident[1], height))
    uncertain = [r.name for r in records if r.target_vertices and r.confidence < config.warn_confidence]
    if uncertain:
        log.warning("blend shape(s) %s: the map is uncertain where they move (confidence under %.1f); check them",
                    ", ".join(repr(n) for n in uncertain), config.warn_confidence)
    report = BlendshapesReport(mode="auto", source_shapes=given, carried=records, dropped=dropped,
                               refined_vertices=int(region.sum()), time=watch.elapsed())
    return tuple(carried), report


def _region(shapes, n_vertices: int, faces: np.ndarray, rings: int) -> np.ndarray:
    """(n_s,) bool: the source vertices any of ``shapes`` moves, and ``rings`` rings around them."""
    moving = np.zeros(n_vertices, bool)
    for shape in shapes:
        moving[shape.vertices[np.any(shape.positions != 0, axis=1)]] = True
    return grown(moving, faces, rings)


def _region_similarity(shape: MorphTarget, source_vertices: np.ndarray, registered: np.ndarray, corr):
    """(scale, (3, 3) rotation) of the similarity taking the source's vertices under ``shape``
    (weighted by how far they move) onto the registered source; the correspondence's
    alignment when they span no volume or plane (a shape of one or two vertices)."""
    weight = np.linalg.norm(shape.positions, axis=1)
    moved = weight > 0
    points = source_vertices[shape.vertices[moved]]
    if len(points) >= 3:
        spread = np.linalg.svd(points - points.mean(axis=0), compute_uv=False)
        if spread[1] > 1e-6 * spread[0]:
            fit = umeyama(points, registered[shape.vertices[moved]], weights=weight[moved])
            return fit.scale, fit.rotation
    return corr.alignment.scale, corr.alignment.rotation


def _receiving(mapped, source_faces: np.ndarray, source_solved, target_solved) -> np.ndarray:
    """(n_t,) True for the target vertices that take the shapes of the source triangle they
    map onto: all but the fitted (skin) vertices still mapped onto a piece of the source that
    rides along (an eyeball turning must not turn the skin over it)."""
    if source_solved is None or target_solved is None:
        return np.ones(len(mapped), bool)
    return ~target_solved | source_solved[source_faces[mapped.face]].all(axis=1)


def _carried_offsets(shape: MorphTarget, source_vertices, source_faces, registered, mapped, receives, corr) -> tuple:
    """(k, 3) offsets of the k ``receives`` target vertices mapped onto a source triangle the
    shape moves, and (k,) those vertices: ``s R (interpolated source offsets)`` (module docstring)."""
    dense = shape.dense(len(source_vertices))
    moves_face = np.any(dense[source_faces] != 0, axis=(1, 2))
    touched = np.flatnonzero(moves_face[mapped.face] & receives)
    scale, rotation = _region_similarity(shape, source_vertices, registered, corr)
    offsets = interpolate(dense, source_faces, mapped.face[touched], mapped.bary[touched])
    return scale * offsets @ rotation.T, touched


def _normal_offsets(vertices: np.ndarray, faces: np.ndarray, moved: np.ndarray, offsets: np.ndarray,
                    base_normals) -> np.ndarray:
    """(n_t, 3) normal offsets of the target shaped by ``offsets`` at ``moved``: each base
    normal turned by the smallest rotation taking the vertex's geometric normal before the
    shape to the one after, minus itself (zero where no triangle around the vertex moves)."""
    n = len(vertices)
    mask = np.zeros(n, bool)
    mask[moved] = True
    around = grown(mask, faces, 1)
    near = faces[around[faces].any(axis=1)]
    shaped = vertices.copy()
    shaped[moved] += offsets
    before, after = vertex_normals(vertices, near), vertex_normals(shaped, near)
    out = np.zeros((n, 3))
    changed = np.flatnonzero(np.any(before != after, axis=1) & (np.linalg.norm(before, axis=1) > 0)
                             & (np.linalg.norm(after, axis=1) > 0))
    base = before[changed] if base_normals is None else base_normals[changed]
    out[changed] = np.einsum("kij,kj->ki", swing(before[changed], after[changed]), base) - base
    return out


def _sparse(name: str, n: int, touched: np.ndarray, offsets: np.ndarray, normals) -> MorphTarget:
    """The MorphTarget of a target of ``n`` vertices: position ``offsets`` at the ``touched``
    vertices, normal offsets (n, 3) or None; only the vertices with a non-zero offset."""
    positions = np.zeros((n, 3))
    positions[touched] = offsets
    return sparse_target(name, positions, normals)


def _confidently_mapped(registered, source_faces, target_vertices, target_faces, mapped, close: float,
                        angle: float) -> tuple:
    """(n_t,) distance from each target vertex to its point on the registered source, and
    (n_t,) True where that is within ``close`` (target units) and the normals within ``angle`` degrees."""
    on_source = interpolate(registered, source_faces, mapped.face, mapped.bary)
    distance = np.linalg.norm(on_source - target_vertices, axis=1)
    source_normals = interpolate(vertex_normals(registered, source_faces), source_faces, mapped.face, mapped.bary)
    cosine = np.einsum("ij,ij->i", source_normals, vertex_normals(target_vertices, target_faces))
    cosine /= np.maximum(np.linalg.norm(source_normals, axis=1), 1e-30)
    return distance, (distance <= close) & (cosine >= np.cos(np.radians(angle)))


def _record(shape: MorphTarget, areas: np.ndarray, distance: np.ndarray, confident: np.ndarray,
            height: float) -> ShapeRecord:
    """A carried shape's line in the report: how many target vertices it moves, how far, and
    how well the map held where it moves (weighted by area times offset)."""
    length = np.linalg.norm(shape.positions, axis=1)
    moved = length > 0
    vertices = shape.vertices[moved]
    weight = areas[vertices] * length[moved]
    total = float(weight.sum())
    if total <= 0:
        return ShapeRecord(shape.name, 0, 0.0, None, None)
    return ShapeRecord(shape.name, int(moved.sum()), round(float(length.max()) / height * 100, 4),
                       round(float(weight @ confident[vertices]) / total, 4),
                       round(float(weight @ distance[vertices]) / total / height * 100, 4))
