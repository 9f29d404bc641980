"""Dense source <-> target correspondence (spec Ch. 2 and Appendix I, after ElastiFace).

Pipeline, top to bottom:

1. :func:`asetransfer.geometry.alignment.umeyama` on the marker pairs brings the source into the
   target's frame (any units, any up axis); both meshes are then turned to the source's
   axes and scaled to a unit bounding-box diagonal, so parameters depend neither on units
   nor on how the target is turned.
2. :func:`fair` (Eq. A I-1) smooths both meshes jointly into similar featureless
   shapes on which corresponding markers coincide.
3. :func:`register` (Eq. A I-2) deforms the faired source onto the faired target,
   then from there onto the original target.  The system matrix is the same for
   both stages: it is factorised once and every closest-point iteration is a
   back-substitution.
4. Closest points between the registered source and the target give the maps in
   both directions (:class:`Correspondence`).

Pieces of a mesh that carry no marker (eyes, teeth, loose props) cannot be faired
(nothing anchors them); they ride along with the closest part of the body.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ..geometry.alignment import Similarity, umeyama
from ..geometry.geodesic import bridge_edges, unique_edges
from ..config import CorrespondenceConfig
from ..model.markers import Markers
from ..geometry.decimate import proxy_mesh
from ..geometry.laplacian import bilaplacian, degenerate_triangles, mixed_voronoi_areas
from ..geometry.pieces import layer_pieces
from ..geometry.linsolve import Factorization, NumericalError
from ..model.correspondence import Correspondence
from ..model.mesh import Mesh
from ..geometry.surface import SurfaceIndex, surface_index
from ..model.surface import SurfacePoints, interpolate
from ..humanoid.naming import lr_pairs
from ..geometry.symmetry import plane_from_pairs, reflect
from ..geometry.topology import face_normals, used_vertices, vertex_components, vertex_normals, weld

log = logging.getLogger("asetransfer")


@dataclass(eq=False)
class _Side:
    """One mesh prepared for the solver: welded, normalised, marked part extracted."""

    vertices: np.ndarray      # (n', 3) welded vertices, normalised frame
    faces: np.ndarray         # (F, 3) input triangles on welded vertices
    index: np.ndarray         # (n,) welded vertex of each input vertex
    active: np.ndarray        # (a,) welded vertices in components that hold a marker
    active_faces: np.ndarray  # (Fa, 3) triangles of those components, on active numbering
    markers: sp.csr_matrix    # (K, a) barycentric rows of the markers, active numbering
    unmarked: tuple           # (pieces without a marker but layers, all pieces, their fraction of the area)
    glue: sp.csr_matrix       # (G, a) rows e_i - e_j: vertex pairs holding neighbouring pieces together
    solved: np.ndarray        # (n',) bool: vertices of the marked pieces and those glued to them
    marked_pieces: int        # pieces of the mesh holding a marker (glued or not)
    # (mesh vertices, mesh faces, similarity) of the mesh as given and the map to this frame:
    # its search tree, shared with the steps around the correspondence, serves as this one's
    given: tuple | None = None
    _operators: dict = field(default_factory=dict)  # (bi-Laplacian, total area) of the marked part, see operator()
    _surfaces: dict = field(default_factory=dict)  # search trees, see surface()

    def operator(self, across_gaps: bool = False):
        """``(L^T M^-1 L, sum of the vertex areas)`` of the marked part as prepared (computed once:
        the fairing, Eq. A I-1a, and the registration, Eq. A I-2a, use the same operator of the source).
        ``across_gaps``: the Laplacian rows of glued pieces' cut boundaries see across the gap
        (:func:`~asetransfer.geometry.laplacian.seamed_laplacian`; the fairing's operator); a mesh
        in one piece has one operator either way."""
        key = bool(across_gaps) and self.glue.shape[0] > 0
        if key not in self._operators:
            x = self.vertices[self.active]
            areas = mixed_voronoi_areas(x, self.active_faces)
            seams = self.glue.indices.reshape(-1, 2) if key else None  # each glue row: its two vertices
            H = bilaplacian(x, self.active_faces, areas, seams=seams)
            self._operators[key] = (H, float(areas.sum()))
        return self._operators[key]

    def surface(self, part: str = "active"):
        """A closest-point search tree of the marked part (``"active"``) or of the whole welded
        mesh (``"whole"``), built once; the two are one tree when every vertex and triangle is
        marked (the registration onto the target and the maps share it).  The whole mesh is
        searched through the tree of the mesh as given when there is one (``given``: marker
        snapping built it, the skeleton and quality steps use it; a 1M target's took 0.7 s)."""
        if part not in self._surfaces:
            whole_is_active = len(self.active) == len(self.vertices) and np.array_equal(self.active_faces, self.faces)
            if whole_is_active and ("whole" if part == "active" else "active") in self._surfaces:
                self._surfaces[part] = self._surfaces["whole" if part == "active" else "active"]
            elif part == "active" and not whole_is_active:
                self._surfaces[part] = SurfaceIndex(self.vertices[self.active], self.active_faces)
            elif self.given is not None:  # its triangles are these, in the same order
                vertices, faces, similarity = self.given
                self._surfaces[part] = _MappedIndex(surface_index(vertices, faces), similarity,
                                                    self.vertices, self.faces)
            else:
                self._surfaces[part] = SurfaceIndex(self.vertices, self.faces)
        return self._surfaces[part]


@dataclass(eq=False)
class _MappedIndex:
    """A mesh's search tree queried in the frame a similarity maps the mesh to: the same
    triangles and barycentric coordinates, points and distances in that frame."""

    index: SurfaceIndex
    similarity: Similarity
    vertices: np.ndarray  # (n, 3) the triangles' corners in the mapped frame
    faces: np.ndarray     # (F, 3) the same triangles on them

    def closest(self, points: np.ndarray, *, bary: bool = True):
        """:meth:`SurfaceIndex.closest` of ``points`` given in the mapped frame."""
        face, coords, dist, point = self.index.closest(self.similarity.inverse().apply(points), bary=bary)
        return face, coords, dist * self.similarity.scale, self.similarity.apply(point)


def _glue(v, f, points: SurfacePoints, cfg):
    """Vertex pairs on different pieces within ``cfg.piece_gap`` (armour plates, a body cut
    at the joints), the piece labels with those pieces joined, the pieces' own labels, and
    (n,) True on the vertices of layers.  Pieces that lie over another
    (:func:`_layer_pieces`: joint covers, clothes, hair, eyes) are not glued: they ride
    along with the body like a piece without a marker."""
    pieces = vertex_components(len(v), f)
    layer = np.zeros(len(v), bool)
    if cfg.piece_gap <= 0 or pieces.max(initial=0) == 0:  # one piece (the usual body): nothing to bridge
        return np.zeros((0, 2), int), pieces, pieces, layer
    bridges = bridge_edges(v, unique_edges(f), cfg.piece_gap, connect_all=False)
    if len(bridges) and cfg.layer_distance > 0:
        layer = _layer_pieces(v, f, pieces, bridges, points, cfg)[pieces]
        bridges = bridges[~layer[bridges].any(axis=1)]
    labels = vertex_components(len(v), np.concatenate([f, bridges[:, [0, 1, 1]]])) if len(bridges) else pieces
    return bridges, labels, pieces, layer


def _layer_pieces(v, f, pieces, bridges, points: SurfacePoints, cfg) -> np.ndarray:
    """(P,) True for the pieces that lie over a larger piece they are glued to, rather than
    continue it (:func:`~asetransfer.geometry.pieces.layer_pieces` with ``cfg``'s
    ``layer_distance``, ``layer_angle`` and ``layer_fraction``).  The source is one skin: a
    layer glued in is faired and registered as body surface (with 20 automatic markers,
    joint covers moved the heavy fixture's joints 2.6 %H).  Pieces holding a marker are the
    body by definition and are never layers.

    Parameters
    ----------
    v, f : welded vertices and triangles; pieces : (n,) each vertex's piece;
    bridges : (B, 2) vertex pairs within ``piece_gap`` on different pieces;
    points : the markers (their triangles' pieces are kept).

    Returns
    -------
    (P,) bool per piece label.
    """
    marked = np.zeros(int(pieces.max()) + 1, bool)
    marked[pieces[f[points.face, 0]]] = True
    return layer_pieces(v, f, pieces, bridges, distance=cfg.layer_distance, angle=cfg.layer_angle,
                        fraction=cfg.layer_fraction, hanging=cfg.layer_hanging) & ~marked


def _prepare(vertices, faces, points: SurfacePoints, cfg) -> _Side:
    v, f, index = weld(vertices, faces, cfg.weld_tolerance)
    bridges, labels, own, layer = _glue(v, f, points, cfg)
    marked = np.unique(labels[f[points.face].ravel()])
    face_active = np.isin(labels[f[:, 0]], marked)
    active_mask = np.isin(labels, marked)
    # a vertex of the marked part in no triangle of non-zero area (the loose corner of one
    # bad triangle) has no row in the smoothness operators: left free, it makes the fairing
    # singular.  It leaves the solve with its triangles and rides along (_carry) instead.
    loose = _loose_vertices(v, f, face_active, points)
    active_mask[loose] = False
    face_active &= ~loose[f].any(axis=1)
    active = np.flatnonzero(active_mask)
    renumber = np.full(len(v), -1, dtype=np.int64)
    renumber[active] = np.arange(len(active))
    active_faces = renumber[f[face_active]]
    rows = np.repeat(np.arange(len(points)), 3)
    cols = renumber[f[points.face].ravel()]
    B = sp.csr_matrix((points.bary.ravel(), (rows, cols)), shape=(len(points), len(active)))
    area = np.linalg.norm(np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]]), axis=1)
    pieces = len(np.unique(labels[f[:, 0]]))
    # layers (covers, clothes, eyes) ride along by design: no warning about them
    carried = ~face_active & ~layer[f[:, 0]]
    unmarked = (len(np.unique(labels[f[carried, 0]])), pieces, float(area[carried].sum() / max(area.sum(), 1e-300)))
    held = bridges[np.isin(labels[bridges[:, 0]], marked)] if len(bridges) else bridges
    rows = np.repeat(np.arange(len(held)), 2)
    G = sp.csr_matrix((np.tile([1.0, -1.0], len(held)), (rows, renumber[held].ravel())),
                      shape=(len(held), len(active)))
    return _Side(v, f, index, active, active_faces, B, unmarked, G, np.isin(labels, marked),
                 len(np.unique(own[f[points.face, 0]])))


def _loose_vertices(vertices, faces, face_active, points: SurfacePoints) -> np.ndarray:
    """(n,) True for vertices of active faces used by none of non-zero area (and by no marker)."""
    good = face_active.copy()
    good[face_active] = ~degenerate_triangles(vertices, faces[face_active])
    loose = np.zeros(len(vertices), bool)
    loose[faces[face_active].ravel()] = True
    loose[faces[good].ravel()] = False
    loose[faces[points.face].ravel()] = False  # a marker ties its corners: they stay in the solve
    return loose


def _normalising(points: np.ndarray, axes: np.ndarray) -> Similarity:
    """Similarity turning ``points`` into the frame of ``axes`` and scaling them to a unit
    bounding-box diagonal around the origin.

    Parameters
    ----------
    points : (n, 3) the target's points.
    axes : (3, 3) rotation whose columns are the source's axes in the target's frame (the
        marker similarity's): the box is the same however the target is turned, so every
        length that is a fraction of its diagonal is too (the grid of the fairing proxies).
    """
    local = points @ axes
    lo, hi = local.min(axis=0), local.max(axis=0)
    scale = 1.0 / max(float(np.linalg.norm(hi - lo)), 1e-300)
    return Similarity(scale, axes.T, -scale * 0.5 * (lo + hi))


def fair(source: _Side, target: _Side, cfg: CorrespondenceConfig):
    """Joint fairing of the marked parts of both meshes (Eq. A I-1).

    Minimises ``lambda1 / (sum A^s + sum A^t) [sum_i A_i^s |Delta x_i^s|^2 +
    sum_j A_j^t |Delta x_j^t|^2]`` (a) ``+ lambda2 / K sum_k |r_k^s - r_k^t|^2`` (b)
    ``+ lambda3 / K sum_k |(r_k^s + r_k^t)/2 - (rbar_k^s + rbar_k^t)/2|^2`` (c)
    over the vertex positions of both meshes, ``r_k`` being the barycentric marker
    positions and ``rbar_k`` their input positions.  One sparse SPD solve, three
    right-hand sides.

    Returns
    -------
    (a_s, 3), (a_t, 3): faired positions of the active vertices of each mesh.
    """
    xs, xt = source.vertices[source.active], target.vertices[target.active]
    # glued pieces are faired as one surface: their cut boundaries see across the gap
    (Hs, area_s), (Ht, area_t) = source.operator(cfg.fair_across_gaps), target.operator(cfg.fair_across_gaps)
    area = area_s + area_t
    K = source.markers.shape[0]
    link = sp.hstack([source.markers, -target.markers]).tocsr()       # r^s - r^t
    mid = 0.5 * sp.hstack([source.markers, target.markers]).tocsr()   # (r^s + r^t) / 2
    goal = mid @ np.vstack([xs, xt])                                   # input midpoints
    glue = sp.block_diag([source.glue, target.glue]).tocsr()            # pieces keep their offsets
    A = (cfg.fair_smoothness / area * sp.block_diag([Hs, Ht])
         + cfg.fair_marker_link / K * (link.T @ link)
         + cfg.fair_marker_anchor / K * (mid.T @ mid))
    b = cfg.fair_marker_anchor / K * (mid.T @ goal)
    if glue.shape[0]:
        A = A + cfg.fair_marker_link / K * (glue.T @ glue)
        b = b + cfg.fair_marker_link / K * (glue.T @ (glue @ np.vstack([xs, xt])))
    x = Factorization(A, "fairing system (Eq. A I-1)").solve(b)
    return x[: len(xs)], x[len(xs):]


class _Registration:
    """The linear system of Eq. A I-2 on the source's marked part, factorised once.

    ``mu1 / sum A (L x - L xhat)^T M^-1 (L x - L xhat)`` (a) ``+ mu2 / n |x - c|^2`` (b)
    ``+ mu3 / K |B x - rhat|^2`` (c).  The operator ``L^T M^-1 L`` is built on the
    source as modelled, not on the faired source of Eq. A I-2a: fairing collapses
    thin parts (fingers) into near-degenerate triangles whose cotangents and areas
    make the faired operator singular in practice (entries of 1e20 measured on the
    dev source), while the modelled mesh measures the same bending well.  With the
    weights fixed, only the right-hand side changes between iterations and stages.
    """

    def __init__(self, geometry: np.ndarray, faces: np.ndarray, markers: sp.csr_matrix, cfg,
                 glue: sp.csr_matrix | None = None, operator: tuple | None = None, stiffness: float = 1.0):
        n, K = len(geometry), markers.shape[0]
        # operator: (bi-Laplacian, total area) of (geometry, faces) when already computed
        self.H, area = operator if operator is not None else (bilaplacian(geometry, faces),
                                                              mixed_voronoi_areas(geometry, faces).sum())
        # stiffness: a factor on mu1 (a level of a stiffness schedule, see _register_both)
        self.w_detail = stiffness * cfg.register_detail / area
        self.w_fit = cfg.register_fit / n
        self.w_markers = cfg.register_markers / K
        self.B = markers
        A = self.w_detail * self.H + self.w_fit * sp.identity(n) + self.w_markers * (markers.T @ markers)
        if glue is not None and glue.shape[0]:  # glued pieces move together (on the displacement)
            # shared by the bridges, like the markers' weight by the markers (c): weighed a
            # marker each, a robot's 11k bridges held its cut rims together more rigidly
            # than the missing triangles of a whole body would (config: register_glue)
            A = A + cfg.register_glue / glue.shape[0] * (glue.T @ glue)
        self.factor = Factorization(A, "registration system (Eq. A I-2)")

    def solve(self, rest: np.ndarray, fit: np.ndarray, marker_goal: np.ndarray) -> np.ndarray:
        # Solved for the displacement u = x - rest: the detail term's right-hand side
        # H @ rest cancels, so a vertex already where it should be gets u = 0 exactly
        # (a mesh registered onto itself comes back unchanged, not to the ~1e-6 the
        # conditioning of the bi-Laplacian allows on absolute positions).
        b = self.w_fit * (fit - rest) + self.w_markers * (self.B.T @ (marker_goal - self.B @ rest))
        return rest + self.factor.solve(b)


def register(system: _Registration, rest: np.ndarray, *, faces: np.ndarray, surface: SurfaceIndex,
             marker_goal: np.ndarray, cfg: CorrespondenceConfig, max_iterations: int,
             first_fit: np.ndarray | None = None, start: np.ndarray | None = None):
    """Closest-point iterations of Eq. A I-2 from ``rest`` onto ``surface``.

    Each iteration pairs every vertex with its closest point on the surface
    (Eq. A I-2b); pairs farther than ``reject_distance`` or whose normals differ by
    more than ``reject_angle`` pull the vertex to where it is instead (the matrix
    stays fixed).  ``first_fit`` replaces the first closest-point query.  Stops when
    the mean vertex move falls under ``tolerance``.

    Parameters
    ----------
    rest : (n, 3) the source's active vertices: the detail term's rest shape (Eq. A I-2a),
        and where the iterations start unless ``start`` is given.
    faces : (F, 3) their triangles (for the vertex normals).
    marker_goal : (K, 3) marker positions on ``surface`` (Eq. A I-2c).
    max_iterations : at most this many iterations (``faired_iterations`` or ``max_iterations``).
    start : (n, 3) positions to start from (the last level of a stiffness schedule), or None.

    Returns
    -------
    x : (n, 3) registered positions, iterations : int.
    """
    cos_max = np.cos(np.radians(cfg.reject_angle))
    target_normals = face_normals(surface.vertices, surface.faces)
    x, it = (rest if start is None else start), 0
    for it in range(1, max_iterations + 1):
        if it == 1 and first_fit is not None:
            fit = first_fit
        else:
            face, _, dist, fit = surface.closest(x, bary=False)
            agree = np.einsum("ij,ij->i", vertex_normals(x, faces), target_normals[face]) >= cos_max
            keep = (dist <= cfg.reject_distance) & agree
            fit = np.where(keep[:, None], fit, x)
        x_new = system.solve(rest, fit, marker_goal)
        moved = float(np.mean(np.linalg.norm(x_new - x, axis=1)))
        x = x_new
        # the carried first fit is a guess: converge only on real closest-point pairs
        if moved < cfg.tolerance and (first_fit is None or it > 1):
            break
    return x, it


def _carry(moved_active: np.ndarray, side: _Side) -> np.ndarray:
    """Positions of all welded vertices: active ones as solved, the rest riding along.

    An unmarked vertex keeps its offset to its closest point on the marked part and
    follows that point (rigidly translated with it).
    """
    out = side.vertices.copy()
    out[side.active] = moved_active
    rest = np.setdiff1d(np.arange(len(side.vertices)), side.active)
    if len(rest):
        face, bary, _, anchor = side.surface("active").closest(side.vertices[rest])
        out[rest] = side.vertices[rest] - anchor + interpolate(moved_active, side.active_faces, face, bary)
    return out


def _marker_plane(points: np.ndarray, names) -> np.ndarray:
    """Mirror plane ``(n, d)`` bisecting the L/R marker pairs (names like ``knee.L``/``knee.R``)."""
    pairs = lr_pairs(names)
    plane = plane_from_pairs(points, pairs) if len(pairs) >= 3 else None
    if plane is None:
        raise ValueError("the symmetric filter needs at least 3 left/right marker pairs "
                         "(names like 'knee.L' / 'knee.R')")
    return plane


def _symmetric_filter(src: _Side, tgt: _Side, names, *, target_index: SurfaceIndex, face, bary):
    """Appendix I, last part: average each vertex's target point with the mirror of its
    mirror vertex's target point, then snap back onto the target surface.

    Mirror planes of both meshes bisect their L/R marker pairs (``names``).  ``face``,
    ``bary``: each welded source vertex's point on the welded target (``target_index``).
    """
    plane_s = _marker_plane(src.markers @ src.vertices[src.active], names)
    plane_t = _marker_plane(tgt.markers @ tgt.vertices[tgt.active], names)
    twin, _, _, _ = SurfaceIndex(src.vertices, src.faces).closest(reflect(src.vertices, plane_s))
    # the twin of vertex i: the closest vertex of the triangle nearest to its reflection
    corners = src.faces[twin]
    d = np.linalg.norm(src.vertices[corners] - reflect(src.vertices, plane_s)[:, None, :], axis=2)
    twin_vertex = corners[np.arange(len(corners)), np.argmin(d, axis=1)]
    p = interpolate(tgt.vertices, tgt.faces, face, bary)
    mid = 0.5 * (p + reflect(p[twin_vertex], plane_t))
    new_face, new_bary, _, _ = target_index.closest(mid)
    return new_face, new_bary


def correspond(source: Mesh, target: Mesh, markers: Markers,
               config: CorrespondenceConfig | None = None) -> Correspondence:
    """Dense correspondence between ``source`` and ``target`` guided by ``markers``.

    Parameters
    ----------
    source, target : the meshes (any units and frames; several pieces allowed).
    markers : linked surface points on both (at least 3, not collinear).
    config : parameters (defaults: :class:`CorrespondenceConfig`).

    Returns
    -------
    :class:`Correspondence` with both maps indexed by the input vertices and triangles.
    """
    cfg = config or CorrespondenceConfig()
    timings = {}
    t0 = time.perf_counter()
    alignment, norm, src, tgt = _aligned_sides(source, target, markers, cfg)  # 1. align, normalise
    timings["align"] = time.perf_counter() - t0
    t = time.perf_counter()
    fit_t = _proxy_side(tgt, cfg) if cfg.proxy_vertices and len(tgt.active) > cfg.proxy_above else tgt
    src_c, tgt_c = _coarse_side(src, cfg), _coarse_side(tgt, cfg)
    if tgt_c is tgt:  # glued pieces are faired as they are registered (a large target: on its proxy)
        tgt_c = fit_t
    timings["proxy"] = time.perf_counter() - t
    try:                                                                        # 2. fair, 3. register
        faired_s, faired_t, system, x2, iterations = _fair_and_register(src, fit_t, src_c, tgt_c, cfg, timings)
    except NumericalError:
        if src_c is src and tgt_c is fit_t:
            raise
        # a proxy's system is singular (a decimation gone wrong): fit the meshes themselves
        log.debug("correspondence: a fairing proxy's system is singular; fitting without proxies")
        src_c, tgt_c = src, fit_t
        faired_s, faired_t, system, x2, iterations = _fair_and_register(src, fit_t, src_c, tgt_c, cfg, timings)
    t = time.perf_counter()
    registered = _carry(x2, src)                                                # 4. maps
    s2t, t2s, d_st, d_ts = _maps(registered, src, tgt, markers.names, cfg)
    timings["maps"] = time.perf_counter() - t
    timings["total"] = time.perf_counter() - t0

    stats = {"alignment_scale": alignment.scale,
             **_fit_stats(src, tgt, x2, d_st, d_ts, names=markers.names, unit=1.0 / norm.scale),
             "iterations": iterations, "stiffness_levels": list(_stiffness_levels(src, tgt, cfg)),
             "solver": system.factor.backend,
             "unmarked_source_vertices": int(len(src.vertices) - len(src.active)),
             "unmarked_target_vertices": int(len(tgt.vertices) - len(tgt.active)),
             "proxy_vertices": int(len(fit_t.active)) if fit_t is not tgt else 0,
             "fairing_proxy_vertices": [int(len(c.active)) if c is not side else 0
                                        for c, side in ((src_c, src), (tgt_c, tgt))],
             "timings": timings}
    back = norm.inverse()

    # the faired shapes are only asked for by --debug-dir: carried to the input meshes on demand
    def faired_full_s():
        return back.apply(_carry(_lift(faired_s, src_c, src), src))[src.index]

    def faired_full_t():
        out = tgt.vertices.copy()
        out[tgt.active] = _lift(faired_t, tgt_c, tgt)
        return back.apply(out)[tgt.index]
    return Correspondence(
        source_to_target=s2t, target_to_source=t2s, alignment=alignment,
        faired_source=faired_full_s, faired_target=faired_full_t,
        registered_source=back.apply(registered)[src.index],
        stats=stats, target_solved=tgt.solved[tgt.index], source_solved=src.solved[src.index])


def _aligned_sides(source: Mesh, target: Mesh, markers: Markers, cfg: CorrespondenceConfig):
    """Step 1: the marker similarity (source -> target frame), the unit-diagonal frame of the
    target's fitted pieces (not of layers or props riding along), and both meshes prepared
    in it (warning about large unmarked pieces).

    Returns
    -------
    alignment : :class:`Similarity`, norm : :class:`Similarity`, src : _Side, tgt : _Side.
    """
    ms = markers.source.positions(source.vertices, source.faces)
    mt = markers.target.positions(target.vertices, target.faces)
    alignment = umeyama(ms, mt)
    used = used_vertices(target.faces)  # vertices used by triangles: a stray vertex has no say
    norm = _normalising(target.vertices[used], alignment.rotation)
    tgt = _prepare(norm.apply(target.vertices), target.faces, markers.target, cfg)
    body_norm = _normalising(target.vertices[tgt.solved[tgt.index]], alignment.rotation)
    if body_norm.scale != norm.scale:
        # the parameters are fractions of the body's diagonal: layers and props riding
        # along (a sword held forward) do not change them.  Prepared again in that frame
        norm = body_norm
        tgt = _prepare(norm.apply(target.vertices), target.faces, markers.target, cfg)
    src = _prepare(norm.apply(alignment.apply(source.vertices)), source.faces, markers.source, cfg)
    tgt.given = (target.vertices, target.faces, norm)
    for side, what in ((src, "source"), (tgt, "target")):
        n_unmarked, n_pieces, fraction = side.unmarked
        if fraction > cfg.unmarked_area_warning:
            log.warning("%d of the %s's %d pieces (%.0f%% of its surface) carry no marker; they are not fitted, "
                        "only carried along with the nearest marked piece: add markers on them or join them",
                        n_unmarked, what, n_pieces, 100 * fraction)
    return alignment, norm, src, tgt


def _fair_and_register(src: _Side, fit_t: _Side, src_c: _Side, tgt_c: _Side, cfg: CorrespondenceConfig,
                       timings: dict):
    """Steps 2 and 3: fairing (Eq. A I-1) on ``src_c``, ``tgt_c`` (the sides or their proxies),
    then registration (Eq. A I-2) of ``src`` onto ``fit_t``.  Returns the faired active
    vertices of both coarse sides and :func:`_register_both`'s system, positions, iterations."""
    t = time.perf_counter()
    faired_s, faired_t = fair(src_c, tgt_c, cfg)
    timings["fair"] = time.perf_counter() - t
    system, x2, iterations = _register_both(src, fit_t, (src_c, faired_s), (tgt_c, faired_t),
                                            cfg=cfg, timings=timings)
    return faired_s, faired_t, system, x2, iterations


def _register_both(src: _Side, tgt: _Side, faired_src: tuple, faired_tgt: tuple, *,
                   cfg: CorrespondenceConfig, timings: dict):
    """Step 3, registration (Eq. A I-2) in two stages.

    Stage 1: the faired source onto the faired target, on the sides the fairing ran on
    (proxies of large meshes, see :func:`_coarse_side`).  Stage 2: the source as
    modelled (its details are the Laplacian rest, Eq. A I-2a) deformed onto the
    original target, starting from the faired pairs carried over to the original target
    (same triangles, same barycentric coordinates).  With a source proxy, stage 2's
    first ``cfg.coarse_iterations`` run on the proxies (the proxy as modelled onto the
    target's proxy), and the source as modelled starts with each vertex moved as the
    proxy moved at the vertex's closest point on it.  ``tgt`` is the target or, for a
    large target, its proxy (the maps, step 4, then use the full target).

    With ``cfg.register_stiffness`` (factors on mu1, stiffest first; when it is empty,
    ``cfg.glued_stiffness`` when either side holds markers on several pieces), stage 2 runs in
    levels of decreasing stiffness, each from where the last ended, with an equal share of
    ``max_iterations`` (our addition, after the stiffness schedule of Amberg et al. 2007):
    a stiff level keeps the rest shape's details, so the whole surface -- shoulders, neck,
    hips -- places the trunk, which closest points on a smooth trunk cannot (they pull
    along its normals only); the softer levels then fit the details.  The levels count
    stage 2's iterations as one sequence, the first ``coarse_iterations`` of which run on
    the proxies.  Each level other than mu1 itself is one more factorisation per side.

    Parameters
    ----------
    faired_src, faired_tgt : (side faired, (a_c, 3) its faired active vertices) each.

    Returns
    -------
    system : :class:`_Registration` of stage 2 (mu1 as configured), x : (a_s, 3) registered
    active source vertices, iterations : [stage 1, stage 2 on proxies, stage 2].  Adds the
    stage times to ``timings``.
    """
    (src_c, faired_s), (tgt_c, faired_t) = faired_src, faired_tgt
    t = time.perf_counter()
    # the detail term's rows at cut rims see across the gaps as the fairing's do: with
    # one-sided rows a cut source bends freely at its rims (robot fixture source, hand
    # markers, body joints vs the one-piece source's: 0.36 / 0.66 %H mean / max, seeing
    # across 0.28 / 0.52; the one-piece source's 20 automatic markers: 0.72 / 1.60 and
    # 0.64 / 1.55, glue of a marker's weight per bridge); a source in one piece has one
    # operator either way
    across = cfg.fair_across_gaps
    system = _Registration(src.vertices[src.active], src.active_faces, src.markers, cfg, glue=src.glue,
                           operator=src.operator(across))
    coarse = system if src_c is src else _Registration(src_c.vertices[src_c.active], src_c.active_faces,
                                                       src_c.markers, cfg, glue=src_c.glue,
                                                       operator=src_c.operator(across))
    timings["factor"] = time.perf_counter() - t
    t = time.perf_counter()
    faired_index = SurfaceIndex(faired_t, tgt_c.active_faces)
    x1, it1 = register(coarse, faired_s, faces=src_c.active_faces, surface=faired_index,
                       marker_goal=tgt_c.markers @ faired_t, cfg=cfg, max_iterations=cfg.faired_iterations)
    face, bary, _, _ = faired_index.closest(x1)
    fit = interpolate(tgt_c.vertices[tgt_c.active], tgt_c.active_faces, face, bary)
    timings["register_faired"] = time.perf_counter() - t
    t = time.perf_counter()
    systems = {(True, 1.0): coarse, (False, 1.0): system}
    rest, rest_c = src.vertices[src.active], src_c.vertices[src_c.active]
    n_coarse = cfg.coarse_iterations if src_c is not src else 0
    # the faired pairs start the first run (on the source's vertices when no run is on the proxies)
    x, first, its = None, fit if n_coarse or src_c is src else _lift(fit, src_c, src), {True: 0, False: 0}
    segments = _stage2_segments(_stiffness_levels(src, tgt, cfg), cfg.max_iterations, n_coarse)
    for k, (on_proxy, stiffness, n) in enumerate(segments):
        side, onto = (src_c, tgt_c) if on_proxy else (src, tgt)
        if not on_proxy and k > 0 and segments[k - 1][0]:
            # the source as modelled takes over: each vertex moves as the proxy does at its
            # closest point (a proxy left in place, the source registered onto itself,
            # leaves every vertex exactly where it is)
            first, x = rest + _lift(x - rest_c, src_c, src), None
        if (on_proxy, stiffness) not in systems:
            systems[on_proxy, stiffness] = _Registration(side.vertices[side.active], side.active_faces, side.markers,
                                                         cfg, glue=side.glue, operator=side.operator(across),
                                                         stiffness=stiffness)
        x, it = register(systems[on_proxy, stiffness], side.vertices[side.active], faces=side.active_faces,
                         surface=onto.surface("active"), marker_goal=onto.markers @ onto.vertices[onto.active],
                         cfg=cfg, max_iterations=n, first_fit=first, start=x)
        first, its[on_proxy] = None, its[on_proxy] + it
    x2, it_coarse, it2 = x, its[True], its[False]
    timings["register_original"] = time.perf_counter() - t
    return system, x2, [it1, it_coarse, it2]


def _stiffness_levels(src: _Side, tgt: _Side, cfg: CorrespondenceConfig) -> tuple:
    """Stage 2's factors on mu1: ``register_stiffness``, or when it is empty
    ``glued_stiffness`` for a body in pieces, else mu1 alone.  A body is in pieces when
    either side holds markers on several pieces; not when it is glued to a piece: bridges
    come and go with a prop's distance to the hand (a sword's grip at ``piece_gap``
    flipped the schedule of a rotated copy, joints 1 %H apart)."""
    pieces = max(src.marked_pieces, tgt.marked_pieces) > 1
    return cfg.register_stiffness or (cfg.glued_stiffness if pieces else ()) or (1.0,)


def _stage2_segments(levels: tuple, total: int, n_coarse: int) -> list:
    """Stage 2's iterations as ``(on the proxies, stiffness, iterations)`` runs: ``total``
    shared among the stiffness ``levels`` (:func:`_level_iterations`), the first
    ``n_coarse`` of them on the proxies (a level crossing that point is split)."""
    out, done = [], 0
    for stiffness, n in zip(levels, _level_iterations(total, len(levels))):
        for on_proxy, m in ((True, min(n, max(0, n_coarse - done))), (False, n - min(n, max(0, n_coarse - done)))):
            if m:
                out.append((on_proxy, stiffness, m))
        done += n
    return out


def _level_iterations(total: int, levels: int) -> list:
    """Iterations of each of ``levels`` stiffness levels: ``total`` shared equally, the
    remainder to the last (the softest, which fits the details), at least one each."""
    share = max(1, total // levels)
    return [share] * (levels - 1) + [max(1, total - share * (levels - 1))]


def _coarse_side(side: _Side, cfg: CorrespondenceConfig) -> _Side:
    """The side the fairing and stage 1 run on: a proxy of ``cfg.fair_proxy_vertices``
    vertices when its marked part has more than ``cfg.fair_proxy_above``, else the side.

    The faired shapes only start the registration, and Eq. A I-1a's bi-Laplacian makes
    them smooth between the markers, so a proxy of a few thousand vertices carries them;
    the systems to factor and the trees to search shrink with it.  A side of glued pieces
    is faired as it is: decimation erodes the pieces' open cuts, the gaps widen past
    ``piece_gap`` and the glue between them is lost (a body cut at the joints then rigged
    with automatic markers put its shins 12 %H off).
    """
    big = cfg.fair_proxy_vertices and len(side.active) > cfg.fair_proxy_above
    return _proxy_side(side, cfg, cfg.fair_proxy_vertices) if big and not side.glue.shape[0] else side


def _proxy_side(tgt: _Side, cfg: CorrespondenceConfig, n_vertices: int | None = None) -> _Side:
    """A side's marked part decimated to about ``n_vertices`` (default ``cfg.proxy_vertices``)
    vertices, prepared like the side (its markers at their closest points on the proxy)."""
    full = tgt.vertices[tgt.active]
    vertices, faces = proxy_mesh(full, tgt.active_faces, n_vertices or cfg.proxy_vertices, cfg.weld_tolerance)
    face, bary, _, _ = SurfaceIndex(vertices, faces).closest(tgt.markers @ full)
    return _prepare(vertices, faces, SurfacePoints(face, bary), cfg)


def _lift(moved: np.ndarray, proxy: _Side, side: _Side) -> np.ndarray:
    """(a, 3) the marked vertices of ``side`` moved with its proxy: each follows its closest
    point on the proxy (same triangle, same barycentric coordinates on ``moved``, the
    proxy's moved active vertices).  A side is its own proxy: ``moved`` as it is."""
    if proxy is side:
        return moved
    face, bary, _, _ = proxy.surface("active").closest(side.vertices[side.active])
    return interpolate(moved, proxy.active_faces, face, bary)


def _maps(registered, src: _Side, tgt: _Side, names, cfg: CorrespondenceConfig):
    """Step 4: closest-point maps in both directions, on the input triangles.

    Returns
    -------
    source_to_target, target_to_source : :class:`SurfacePoints` per input vertex;
    d_st, d_ts : (n_s',), (n_t',) closest-point distances of the welded vertices (normalised frame).
    """
    target_index = tgt.surface("whole")
    f_st, b_st, d_st, _ = target_index.closest(registered)
    f_ts, b_ts, d_ts, _ = SurfaceIndex(registered, src.faces).closest(tgt.vertices)
    if cfg.symmetric:
        f_st, b_st = _symmetric_filter(src, tgt, names, target_index=target_index, face=f_st, bary=b_st)
    s2t = SurfacePoints(f_st[src.index], b_st[src.index])
    t2s = SurfacePoints(f_ts[tgt.index], b_ts[tgt.index])
    return s2t, t2s, d_st, d_ts


def _fit_stats(src: _Side, tgt: _Side, x, d_st, d_ts, *, names, unit: float) -> dict:
    """Marker residuals of the registered active source ``x`` and the fit distances, in
    target file units (``unit`` per normalised unit)."""
    original_t = tgt.vertices[tgt.active]
    marker_residual = np.linalg.norm(src.markers @ x - tgt.markers @ original_t, axis=1) * unit
    return {
        "marker_residual_mean": float(marker_residual.mean()),
        "marker_residual_max": float(marker_residual.max()),
        "marker_residual_worst": names[int(np.argmax(marker_residual))],
        "fit_distance_mean": float(d_st.mean() * unit),
        "fit_distance_p95": float(np.percentile(d_st, 95) * unit),
        "reverse_fit_distance_mean": float(d_ts.mean() * unit),
    }
