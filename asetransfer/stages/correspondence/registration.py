"""Step 3 of the correspondence: non-rigid registration of the source onto the target
(spec Eq. A I-2) in two stages -- the faired source onto the faired target, then the source
as modelled onto the original target, in levels of decreasing stiffness."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ...config import CorrespondenceConfig
from ...geometry.laplacian import bilaplacian, mixed_voronoi_areas
from ...geometry.linsolve import Factorization
from ...geometry.surface import SurfaceIndex
from ...geometry.topology import face_normals, vertex_normals
from ...model.report import Stopwatch
from ...model.surface import interpolate
from .proxies import lift
from .side import PreparedSide


class RegistrationSystem:
    """The linear system of Eq. A I-2 on the source's marked part, factorised once.

    ``mu1 / sum A (L x - L xhat)^T M^-1 (L x - L xhat)`` (a) ``+ mu2 / n |x - c|^2`` (b)
    ``+ mu3 / K |B x - rhat|^2`` (c).  The operator ``L^T M^-1 L`` is built on the
    source as modelled, not on the faired source of Eq. A I-2a: fairing collapses
    thin parts (fingers) into near-degenerate triangles whose cotangents and areas
    make the faired operator singular in practice (entries of 1e20 measured on the
    dev source), while the modelled mesh measures the same bending well.  With the
    weights fixed, only the right-hand side changes between iterations and stages.

    Parameters
    ----------
    rest_shape : (n, 3) the source's active vertices as modelled; faces : (F, 3) their triangles.
    markers : (K, n) the markers' barycentric rows ``B``.
    cfg : ``register_detail``, ``register_fit``, ``register_markers`` (mu1..3), ``register_glue``.
    glue : (G, n) rows ``e_i - e_j`` holding glued pieces together, or None.
    operator : (bi-Laplacian, total area) of ``(rest_shape, faces)`` when already computed.
    stiffness : a factor on mu1 (a level of the stiffness schedule, :func:`register_original`).
    """

    def __init__(self, rest_shape: np.ndarray, faces: np.ndarray, markers: sp.csr_matrix, cfg,
                 glue: sp.csr_matrix | None = None, operator: tuple | None = None, stiffness: float = 1.0):
        n_vertices, n_markers = len(rest_shape), markers.shape[0]
        self.operator, area = operator if operator is not None else (
            bilaplacian(rest_shape, faces), mixed_voronoi_areas(rest_shape, faces).sum())
        self.detail_weight = stiffness * cfg.register_detail / area
        self.fit_weight = cfg.register_fit / n_vertices
        self.marker_weight = cfg.register_markers / n_markers
        self.markers = markers
        matrix = (self.detail_weight * self.operator + self.fit_weight * sp.identity(n_vertices)
                  + self.marker_weight * (markers.T @ markers))
        if glue is not None and glue.shape[0]:  # glued pieces move together (on the displacement)
            # shared by the bridges, like the markers' weight by the markers (c): weighed a
            # marker each, a robot's 11k bridges held its cut rims together more rigidly
            # than the missing triangles of a whole body would (config: register_glue)
            matrix = matrix + cfg.register_glue / glue.shape[0] * (glue.T @ glue)
        self.factor = Factorization(matrix, "registration system (Eq. A I-2)")

    def solve(self, rest: np.ndarray, fit: np.ndarray, marker_goal: np.ndarray) -> np.ndarray:
        """The minimiser of Eq. A I-2 for fixed closest points.

        Solved for the displacement ``u = x - rest``: the detail term's right-hand side
        ``H rest`` cancels, so a vertex already where it should be gets ``u = 0`` exactly
        (a mesh registered onto itself comes back unchanged, not to the ~1e-6 the
        conditioning of the bi-Laplacian allows on absolute positions).

        Parameters
        ----------
        rest : (n, 3) the detail term's rest shape (Eq. A I-2a).
        fit : (n, 3) each vertex's closest point ``c`` (Eq. A I-2b).
        marker_goal : (K, 3) the markers' goals ``rhat`` (Eq. A I-2c).

        Returns
        -------
        (n, 3) positions ``x``.
        """
        rhs = self.fit_weight * (fit - rest) + self.marker_weight * (self.markers.T @ (marker_goal - self.markers @ rest))
        return rest + self.factor.solve(rhs)


def registration_system(side: PreparedSide, cfg: CorrespondenceConfig, stiffness: float = 1.0) -> RegistrationSystem:
    """:class:`RegistrationSystem` of a side's marked part as modelled, at ``stiffness`` times mu1.

    The detail term's rows at cut rims see across the gaps as the fairing's do
    (``cfg.fair_across_gaps``): with one-sided rows a cut source bends freely at its rims
    (robot fixture source, hand markers, body joints vs the one-piece source's: 0.36 / 0.66 %H
    mean / max, seeing across 0.28 / 0.52; the one-piece source's 20 automatic markers:
    0.72 / 1.60 and 0.64 / 1.55, glue of a marker's weight per bridge); a source in one
    piece has one operator either way.
    """
    return RegistrationSystem(side.vertices[side.active], side.active_faces, side.markers, cfg, glue=side.glue,
                              operator=side.operator(cfg.fair_across_gaps), stiffness=stiffness)


def register(system: RegistrationSystem, rest: np.ndarray, *, faces: np.ndarray, surface: SurfaceIndex,
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
    first_fit : (n, 3) the closest points of the first iteration, or None.
    start : (n, 3) positions to start from (the last level of a stiffness schedule), or None.

    Returns
    -------
    positions : (n, 3) registered positions, iterations : int.
    """
    cos_max = np.cos(np.radians(cfg.reject_angle))
    target_normals = face_normals(surface.vertices, surface.faces)
    positions, iteration = (rest if start is None else start), 0
    for iteration in range(1, max_iterations + 1):
        if iteration == 1 and first_fit is not None:
            fit = first_fit
        else:
            face, _, dist, fit = surface.closest(positions, bary=False)
            agree = np.einsum("ij,ij->i", vertex_normals(positions, faces), target_normals[face]) >= cos_max
            keep = (dist <= cfg.reject_distance) & agree
            fit = np.where(keep[:, None], fit, positions)
        new_positions = system.solve(rest, fit, marker_goal)
        moved = float(np.mean(np.linalg.norm(new_positions - positions, axis=1)))
        positions = new_positions
        # the carried first fit is a guess: converge only on real closest-point pairs
        if moved < cfg.tolerance and (first_fit is None or iteration > 1):
            break
    return positions, iteration


def register_both(source: PreparedSide, target: PreparedSide, coarse_source: PreparedSide,
                  coarse_target: PreparedSide, faired_source: np.ndarray, faired_target: np.ndarray, *,
                  cfg: CorrespondenceConfig, watch: Stopwatch):
    """Step 3, registration (Eq. A I-2) in two stages: :func:`register_faired` (stage 1) on
    the sides the fairing ran on, then :func:`register_original` (stage 2).

    The stage 2 system at mu1 is factorised with stage 1's (one shared system when the
    source has no proxy: same weights, same matrix); every closest-point iteration is
    then a back-substitution.

    Parameters
    ----------
    source : the prepared source; target : the target or, for a large target, its proxy
        (the maps, step 4, then use the full target).
    coarse_source, coarse_target : the sides the fairing ran on (proxies of large meshes,
        :func:`~.proxies.coarse_side`); faired_source (a_cs, 3), faired_target (a_ct, 3):
        their faired active vertices.
    watch : times the steps ``factor``, ``register_faired`` and ``register_original``.

    Returns
    -------
    system : :class:`RegistrationSystem` of stage 2 (mu1 as configured), positions : (a_s, 3)
    registered active source vertices, iterations : [stage 1, stage 2 on proxies, stage 2].
    """
    with watch.timed("factor"):
        system = registration_system(source, cfg)
        coarse_system = system if coarse_source is source else registration_system(coarse_source, cfg)
    with watch.timed("register_faired"):
        faired_fit, faired_iterations = register_faired(coarse_system, coarse_source, coarse_target,
                                                        faired_source, faired_target, cfg)
    with watch.timed("register_original"):
        positions, proxy_iterations, iterations = register_original(
            {(True, 1.0): coarse_system, (False, 1.0): system}, source, target, coarse_source, coarse_target,
            faired_fit, cfg)
    return system, positions, [faired_iterations, proxy_iterations, iterations]


def register_faired(system: RegistrationSystem, coarse_source: PreparedSide, coarse_target: PreparedSide,
                    faired_source: np.ndarray, faired_target: np.ndarray, cfg: CorrespondenceConfig):
    """Stage 1: the faired source onto the faired target (Eq. A I-2, ``cfg.faired_iterations``
    at most), the pairs found then carried over to the original target (same triangles,
    same barycentric coordinates).

    Parameters
    ----------
    system : the coarse source's :class:`RegistrationSystem`.
    faired_source : (a_cs, 3), faired_target : (a_ct, 3) the faired active vertices.

    Returns
    -------
    fit : (a_cs, 3) each coarse source vertex's pair on the coarse target as modelled,
    iterations : int.
    """
    faired_index = SurfaceIndex(faired_target, coarse_target.active_faces)
    positions, iterations = register(system, faired_source, faces=coarse_source.active_faces, surface=faired_index,
                                     marker_goal=coarse_target.markers @ faired_target, cfg=cfg,
                                     max_iterations=cfg.faired_iterations)
    face, bary, _, _ = faired_index.closest(positions)
    fit = interpolate(coarse_target.vertices[coarse_target.active], coarse_target.active_faces, face, bary)
    return fit, iterations


def register_original(systems: dict, source: PreparedSide, target: PreparedSide, coarse_source: PreparedSide,
                      coarse_target: PreparedSide, faired_fit: np.ndarray, cfg: CorrespondenceConfig):
    """Stage 2: the source as modelled (its details are the Laplacian rest, Eq. A I-2a)
    deformed onto the original target, starting from stage 1's pairs ``faired_fit``.

    With a source proxy, the first ``cfg.coarse_iterations`` run on the proxies (the proxy
    as modelled onto the target's proxy), and the source as modelled then starts with each
    vertex moved as the proxy moved at the vertex's closest point on it.  The iterations
    (``cfg.max_iterations``) run in levels of decreasing stiffness
    (:func:`stiffness_levels`, our addition, after the stiffness schedule of Amberg et al.
    2007), each from where the last ended: a stiff level keeps the rest shape's details, so
    the whole surface -- shoulders, neck, hips -- places the trunk, which closest points on
    a smooth trunk cannot (they pull along its normals only); the softer levels then fit
    the details.  Each level other than mu1 itself is one more factorisation per side.

    Parameters
    ----------
    systems : ``{(on the proxies, stiffness): RegistrationSystem}`` holding at least
        stiffness 1.0 for both; the levels' systems are added to it.
    faired_fit : (a_cs, 3) stage 1's pairs on the coarse target, per coarse source vertex.

    Returns
    -------
    positions : (a_s, 3) registered active source vertices, iterations on the proxies,
    iterations on the source.
    """
    n_on_proxies = cfg.coarse_iterations if coarse_source is not source else 0
    source_rest, proxy_rest = source.vertices[source.active], coarse_source.vertices[coarse_source.active]
    # the faired pairs start the first run (on the source's vertices when no run is on the proxies)
    first_fit = faired_fit if n_on_proxies or coarse_source is source else lift(faired_fit, coarse_source, source)
    positions, iterations = None, {True: 0, False: 0}
    segments = _stage2_segments(stiffness_levels(source, target, cfg), cfg.max_iterations, n_on_proxies)
    for k, (on_proxy, stiffness, n_iterations) in enumerate(segments):
        side, onto = (coarse_source, coarse_target) if on_proxy else (source, target)
        if not on_proxy and k > 0 and segments[k - 1][0]:
            # the source as modelled takes over: each vertex moves as the proxy does at its
            # closest point (a proxy left in place, the source registered onto itself,
            # leaves every vertex exactly where it is)
            first_fit, positions = source_rest + lift(positions - proxy_rest, coarse_source, source), None
        if (on_proxy, stiffness) not in systems:
            systems[on_proxy, stiffness] = registration_system(side, cfg, stiffness)
        positions, done = register(systems[on_proxy, stiffness], side.vertices[side.active], faces=side.active_faces,
                                   surface=onto.surface("active"), marker_goal=onto.markers @ onto.vertices[onto.active],
                                   cfg=cfg, max_iterations=n_iterations, first_fit=first_fit, start=positions)
        first_fit = None
        iterations[on_proxy] += done
    return positions, iterations[True], iterations[False]


def stiffness_levels(source: PreparedSide, target: PreparedSide, cfg: CorrespondenceConfig) -> tuple:
    """Stage 2's factors on mu1: ``register_stiffness``, or when it is empty
    ``glued_stiffness`` for a body in pieces, else mu1 alone.  A body is in pieces when
    either side holds markers on several pieces; not when it is glued to a piece: bridges
    come and go with a prop's distance to the hand (a sword's grip at ``piece_gap``
    flipped the schedule of a rotated copy, joints 1 %H apart)."""
    pieces = max(source.marked_pieces, target.marked_pieces) > 1
    return cfg.register_stiffness or (cfg.glued_stiffness if pieces else ()) or (1.0,)


def _stage2_segments(levels: tuple, total: int, n_on_proxies: int) -> list:
    """Stage 2's iterations as ``(on the proxies, stiffness, iterations)`` runs: ``total``
    shared among the stiffness ``levels`` (:func:`_level_iterations`), the first
    ``n_on_proxies`` of them on the proxies (a level crossing that point is split)."""
    out, done = [], 0
    for stiffness, n_level in zip(levels, _level_iterations(total, len(levels))):
        on_proxies = min(n_level, max(0, n_on_proxies - done))
        for on_proxy, n_run in ((True, on_proxies), (False, n_level - on_proxies)):
            if n_run:
                out.append((on_proxy, stiffness, n_run))
        done += n_level
    return out


def _level_iterations(total: int, levels: int) -> list:
    """Iterations of each of ``levels`` stiffness levels: ``total`` shared equally, the
    remainder to the last (the softest, which fits the details), at least one each."""
    share = max(1, total // levels)
    return [share] * (levels - 1) + [max(1, total - share * (levels - 1))]
