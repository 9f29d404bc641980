"""The sides the correspondence's solves run on (a large mesh's decimated proxy, or the mesh)
and carrying positions back: from a proxy to its mesh (:func:`lift`) and from a mesh's
marked part to the vertices riding along with it (:func:`carry`)."""
from __future__ import annotations

import numpy as np

from ...config import CorrespondenceConfig
from ...geometry.decimate import proxy_mesh
from ...geometry.surface import SurfaceIndex
from ...model.surface import SurfacePoints, interpolate
from .prepare import prepare_side
from .side import PreparedSide


def fitting_sides(source: PreparedSide, target: PreparedSide, cfg: CorrespondenceConfig):
    """The sides each step runs on.

    Returns
    -------
    registration_target : the target stage 2 registers onto: a proxy of
        ``cfg.proxy_vertices`` when its marked part has more than ``cfg.proxy_above``
        vertices, else the target.
    coarse_source, coarse_target : the sides the fairing and stage 1 run on
        (:func:`coarse_side`); a target of glued pieces, faired as it is, is faired on the
        registration target (a large target: on its proxy).
    """
    large = cfg.proxy_vertices and len(target.active) > cfg.proxy_above
    registration_target = proxy_side(target, cfg) if large else target
    coarse_source, coarse_target = coarse_side(source, cfg), coarse_side(target, cfg)
    if coarse_target is target:  # glued pieces are faired as they are registered
        coarse_target = registration_target
    return registration_target, coarse_source, coarse_target


def coarse_side(side: PreparedSide, cfg: CorrespondenceConfig) -> PreparedSide:
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
    return proxy_side(side, cfg, cfg.fair_proxy_vertices) if big and not side.glue.shape[0] else side


def proxy_side(side: PreparedSide, cfg: CorrespondenceConfig, n_vertices: int | None = None) -> PreparedSide:
    """A side's marked part decimated to about ``n_vertices`` (default ``cfg.proxy_vertices``)
    vertices, prepared like the side (its markers at their closest points on the proxy)."""
    full = side.vertices[side.active]
    vertices, faces = proxy_mesh(full, side.active_faces, n_vertices or cfg.proxy_vertices, cfg.weld_tolerance)
    face, bary, _, _ = SurfaceIndex(vertices, faces).closest(side.markers @ full)
    return prepare_side(vertices, faces, SurfacePoints(face, bary), cfg)


def lift(moved: np.ndarray, proxy: PreparedSide, side: PreparedSide) -> np.ndarray:
    """The marked vertices of ``side`` moved with its proxy: each follows its closest point
    on the proxy (same triangle, same barycentric coordinates on ``moved``).

    Parameters
    ----------
    moved : (a_p, 3) the proxy's active vertices, moved.
    proxy : the proxy of ``side``; a side is its own proxy: ``moved`` comes back as it is.

    Returns
    -------
    (a, 3) the active vertices of ``side``.
    """
    if proxy is side:
        return moved
    face, bary, _, _ = proxy.surface("active").closest(side.vertices[side.active])
    return interpolate(moved, proxy.active_faces, face, bary)


def carry(moved_active: np.ndarray, side: PreparedSide) -> np.ndarray:
    """Positions of all welded vertices: active ones as solved, the rest riding along.

    An unmarked vertex keeps its offset to its closest point on the marked part and
    follows that point (rigidly translated with it).

    Parameters
    ----------
    moved_active : (a, 3) the side's active vertices, moved.

    Returns
    -------
    (n', 3) every welded vertex of the side.
    """
    out = side.vertices.copy()
    out[side.active] = moved_active
    riding = np.setdiff1d(np.arange(len(side.vertices)), side.active)
    if len(riding):
        face, bary, _, anchor = side.surface("active").closest(side.vertices[riding])
        out[riding] = side.vertices[riding] - anchor + interpolate(moved_active, side.active_faces, face, bary)
    return out
