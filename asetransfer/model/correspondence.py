"""The dense correspondence between two meshes: maps both ways and what produced them.

Computed by :func:`asetransfer.stages.correspondence.correspond` (spec Ch. 2 and Appendix I).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .report import CorrespondenceStats
from .surface import SurfacePoints


@dataclass(eq=False)
class Correspondence:
    """Maps between the vertices of two meshes and points on the other's surface.

    Attributes
    ----------
    source_to_target : per source vertex, a point on the target (target triangles).
    target_to_source : per target vertex, a point on the source (source triangles).
    alignment : the :class:`~asetransfer.geometry.alignment.Similarity` taking source
        coordinates to the target's frame (named, not imported: model imports no layer above it).
    faired_source, faired_target, registered_source : (n, 3) vertex positions in the
        target's frame, for inspection (``--debug-dir``); a large target's faired shape
        (carried from its proxy) is computed on first access.
    stats : residuals, iteration counts and timings (:class:`~asetransfer.model.report.CorrespondenceStats`;
        None for a correspondence made otherwise, as in a test).
    target_solved : (n_t,) bool, the target vertices in the pieces that were fitted (the
        body: not layers, not unmarked pieces, not stray vertices), or None (every vertex).
    source_solved : (n_s,) bool, the same for the source: False on the vertices that only
        ride along with their closest fitted point (joint covers, clothes, eyes, unmarked
        pieces), or None (every vertex).
    source_carried, target_carried : (n,) bool, each mesh's vertices of pieces without a
        marker that are not layers over the body (props, or parts of the body the markers
        missed): carried along rigidly, not fitted; or None (none known).
    """

    source_to_target: SurfacePoints
    target_to_source: SurfacePoints
    alignment: "Similarity"  # noqa: F821  (asetransfer.geometry.alignment)
    faired_source: np.ndarray
    faired_target: np.ndarray
    registered_source: np.ndarray
    stats: CorrespondenceStats | None = None
    target_solved: np.ndarray | None = None
    source_solved: np.ndarray | None = None
    source_carried: np.ndarray | None = None
    target_carried: np.ndarray | None = None

    def body_extent(self, target_vertices: np.ndarray) -> np.ndarray:
        """(3,) sides of the box around the fitted target vertices (:attr:`target_solved`),
        along the source's axes (the alignment's).

        The body's size, for the steps that scale their tolerances by it: a hair cap
        raising the top or a sword held forward is not the body (on the heavy fixture a
        cap 1 %H above the head moved a toe tip 0.26 %H through the joint fit's unit), and
        a target turned any way has the same box.

        Parameters
        ----------
        target_vertices : (n_t, 3) the target mesh's vertices.
        """
        body = target_vertices if self.target_solved is None else target_vertices[self.target_solved]
        return np.ptp(body @ self.alignment.rotation, axis=0)


def _computed_on_demand(name: str) -> property:
    """A Correspondence field that may be given as a function computing it (on first read)."""
    private = "_" + name

    def get(self):
        if callable(getattr(self, private)):
            setattr(self, private, getattr(self, private)())
        return getattr(self, private)

    def put(self, value):
        setattr(self, private, value)
    return property(get, put)


# the faired shapes (--debug-dir only) are carried from the fairing's proxies when read:
# a closest-point query per vertex (1.5 s on a 1M target)
Correspondence.faired_source = _computed_on_demand("faired_source")
Correspondence.faired_target = _computed_on_demand("faired_target")
