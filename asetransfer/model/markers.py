"""The :class:`Markers` type: named markers linking a point of the source surface to a
point of the target surface, the user's hint that drives the correspondence.

Both sides are :class:`~asetransfer.model.surface.SurfacePoints` (triangle +
barycentric coordinates) on their mesh.  Marker files are read and written by
:mod:`asetransfer.io.markers`.
"""
from __future__ import annotations

from dataclasses import dataclass, field


from .surface import SurfacePoints


@dataclass(eq=False)
class Markers:
    """Linked markers resolved to surface locations on both meshes.

    ``automatic`` names the markers the landmark rules found (``"automatic": true`` in a
    marker file): they hold only the extremities, the crotch and the head, so a transfer
    registers them as it registers its own automatic markers, whether they were found in
    this run or read back from the file ``asetransfer markers`` wrote."""

    names: tuple
    source: SurfacePoints
    target: SurfacePoints
    automatic: frozenset = field(default_factory=frozenset)

    def __len__(self):
        return len(self.names)
