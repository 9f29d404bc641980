"""The :class:`Markers` type: named markers linking a point of the source surface to a
point of the target surface, the user's hint that drives the correspondence.

Both sides are :class:`~asetransfer.model.surface.SurfacePoints` (triangle +
barycentric coordinates) on their mesh.  Marker files are read and written by
:mod:`asetransfer.io.markers`.
"""
from __future__ import annotations

from dataclasses import dataclass


from .surface import SurfacePoints


@dataclass(eq=False)
class Markers:
    """Linked markers resolved to surface locations on both meshes."""

    names: tuple
    source: SurfacePoints
    target: SurfacePoints

    def __len__(self):
        return len(self.names)
