"""A correspondence made finer in one region of the source: the registered source fitted
closer to the target there, and the target's map onto it found again.

The whole-body registration keeps the source's details stiff enough that the trunk and
limbs fall into place; on a face that leaves features a few millimetres off (dev targets:
an eyelid 2.8 mm from where it belongs, the registered face 1.2-2 mm off the target's
surface), and the blend shapes carried through the map move the wrong strip of skin.  The
region (the vertices the shapes move, and a margin) is registered again from where the
whole-body fit left it, in levels of decreasing smoothing length, the rest of the source
held where it is::

    min_x  lambda^4 (x - x0)^T L^T M^-1 L (x - x0)  +  sum_i A_i |x_i - c_i|^2

``x0`` the registered source, ``L`` its cotangent Laplacian and ``M`` its vertex areas
(``sum A |Laplacian u|^2``, Eq. A I-2a on the displacement), ``c_i`` the closest target point
(a pair whose normals differ by more than ``reject_angle`` pulls the vertex where it is),
``lambda`` the level's smoothing length: a displacement varying over less than ``lambda``
costs more than it gains.  One factorisation per level, a back-substitution per iteration.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ...config import ShapesConfig
from ...geometry.laplacian import bilaplacian, mixed_voronoi_areas
from ...geometry.linsolve import Factorization
from ...geometry.surface import SurfaceIndex
from ...geometry.topology import face_normals, vertex_normals, weld
from ...model.surface import SurfacePoints, interpolate

def grown(mask: np.ndarray, faces: np.ndarray, rings: int) -> np.ndarray:
    """(n,) bool: ``mask`` and every vertex within ``rings`` edges of it (through ``faces``)."""
    out = np.asarray(mask, dtype=bool).copy()
    for _ in range(rings):
        touching = out[faces].any(axis=1)
        out[faces[touching].ravel()] = True
    return out


def refine_region(source_vertices: np.ndarray, source_faces: np.ndarray, registered: np.ndarray,
                  target_vertices: np.ndarray, target_faces: np.ndarray, target_to_source: SurfacePoints,
                  region: np.ndarray, *, height: float, reject_angle: float, config: ShapesConfig,
                  source_solved=None, target_solved=None) -> tuple:
    """Register the source's ``region`` closer to the target, and map the target there again.

    Parameters
    ----------
    source_vertices : (n_s, 3) the source as modelled (welded across seams here, so a seam
        cannot open); source_faces : (F_s, 3).
    registered : (n_s, 3) the source registered onto the target (target frame).
    target_vertices : (n_t, 3), target_faces : (F_t, 3) the target.
    target_to_source : the target's map onto ``registered``.
    region : (n_s,) bool, the source vertices to fit again (others stay where they are).
    height : the body's height (the smoothing lengths are fractions of it).
    reject_angle : degrees; a closest-point pair whose normals differ more is not used.
    config : the fit's levels, iterations, tolerance and rider slack (:class:`~asetransfer.config.ShapesConfig`).
    source_solved, target_solved : (n,) bool, the vertices the whole-body fit solved (None:
        all); pieces that ride along (eyes, props) are neither moved nor fitted onto.

    Returns
    -------
    registered : (n_s, 3) the refined registered source; target_to_source : the target's map
    onto it (:func:`_remapped`).
    """
    welded, faces, welded_of = weld(source_vertices, source_faces)
    positions = np.zeros_like(welded)
    positions[welded_of] = registered
    free = np.zeros(len(welded), bool)
    free[welded_of[region if source_solved is None else region & source_solved]] = True
    near_region = grown(free, faces, 2)[faces].any(axis=1)  # the faces of the free vertices' operator rows
    mapped_near = near_region[target_to_source.face] & (True if target_solved is None else target_solved)
    surface = _target_surface(target_vertices, target_faces, mapped_near, target_solved)
    if not free.any() or surface is None:
        return registered, target_to_source
    refined = _fit(positions, faces[near_region], free, surface, height, reject_angle, config)[welded_of]
    solved_faces = (np.ones(len(source_faces), bool) if source_solved is None
                    else source_solved[source_faces].all(axis=1))
    return refined, _remapped(refined, source_faces, registered, target_vertices, target_to_source,
                              near_region & solved_faces, solved_faces, target_solved, height * config.rider_slack)


def _remapped(refined, source_faces, registered, target_vertices, target_to_source: SurfacePoints, usable,
              solved_faces, target_solved, slack: float) -> SurfacePoints:
    """The target's map onto the ``refined`` source: its solved vertices mapped onto the
    ``usable`` (F_s,) bool triangles (the region's fitted ones) or onto a piece riding along
    (an eyeball between the lids) are mapped onto the closest usable triangle; one from a
    riding piece only when that is within twice its distance plus ``slack`` (target units)
    (skin follows skin; an eyeball far from the region keeps its point).  The others keep theirs."""
    mapped = SurfacePoints(target_to_source.face.copy(), target_to_source.bary.copy())
    on_rider = ~solved_faces[mapped.face]
    again = np.flatnonzero((usable[mapped.face] | on_rider) & (True if target_solved is None else target_solved))
    if not len(again) or not usable.any():
        return mapped
    local = np.flatnonzero(usable)
    face, bary, distance, _ = SurfaceIndex(refined, source_faces[local]).closest(target_vertices[again])
    was = interpolate(registered, source_faces, target_to_source.face[again], target_to_source.bary[again])
    before = np.linalg.norm(was - target_vertices[again], axis=1)
    take = ~on_rider[again] | (distance <= 2 * before + slack)
    mapped.face[again[take]], mapped.bary[again[take]] = local[face[take]], bary[take]
    return mapped


def _target_surface(vertices: np.ndarray, faces: np.ndarray, near: np.ndarray, solved):
    """The target's triangles around the vertices ``near`` (n_t,) bool, four rings wide (the
    refined source moves at most a few millimetres), those touching an unsolved vertex left
    out; None when no triangle is left."""
    keep = grown(near, faces, 4)[faces].all(axis=1)
    if solved is not None:
        keep &= solved[faces].all(axis=1)
    return SurfaceIndex(vertices, faces[keep]) if keep.any() else None


def _fit(positions: np.ndarray, faces: np.ndarray, free: np.ndarray, surface: SurfaceIndex, height: float,
         reject_angle: float, config: ShapesConfig) -> np.ndarray:
    """The levels of the module docstring's fit: (n, 3) ``positions`` with the ``free`` (n,)
    vertices fitted onto ``surface``, ``faces`` the triangles around them."""
    used = np.unique(faces)
    local = np.full(len(positions), -1, np.int64)
    local[used] = np.arange(len(used))
    f, start = local[faces], positions[used]
    detail, area = bilaplacian(start, f), mixed_voronoi_areas(start, f)
    unknown, held = np.flatnonzero(free[used]), np.flatnonzero(~free[used])
    if not len(unknown):  # the free vertices are on no triangle
        return positions
    target_normals = face_normals(surface.vertices, surface.faces)
    cos_max = np.cos(np.radians(reject_angle))
    x = start.copy()
    for length in config.smoothing_lengths:
        system = ((length * height) ** 4 * detail + sp.diags(area)).tocsr()
        factor = Factorization(system[unknown][:, unknown], "blend-shape region fit")
        coupling = system[unknown][:, held] @ x[held]
        pull = (system @ start - area[:, None] * start)[unknown] - coupling  # l^4 D x0, the held vertices moved over
        for _ in range(config.iterations):
            face, _, _, closest = surface.closest(x[unknown], bary=False)
            agree = np.einsum("ij,ij->i", vertex_normals(x, f)[unknown], target_normals[face]) >= cos_max
            goal = np.where(agree[:, None], closest, x[unknown])
            # normal equations: (l^4 D + A) x = l^4 D x0 + A c
            rhs = pull + area[unknown, None] * goal
            moved = factor.solve(rhs)
            step = float(np.mean(np.linalg.norm(moved - x[unknown], axis=1)))
            x[unknown] = moved
            if step < config.tolerance * height:
                break
    out = positions.copy()
    out[used] = x
    return out
