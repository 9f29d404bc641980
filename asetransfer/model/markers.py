"""The :class:`Markers` type: named markers linking a point of the source surface to a
point of the target surface, the user's hint that drives the correspondence.

Both sides are :class:`~asetransfer.model.surface.SurfacePoints` (triangle +
barycentric coordinates) on their mesh.  Marker files are read and written by
:mod:`asetransfer.io.markers`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .surface import SurfacePoints


@dataclass(eq=False)
class Markers:
    """Linked markers resolved to surface locations on both meshes.

    ``automatic`` names the markers the landmark rules found (``"automatic": true`` in a
    marker file): they hold only the extremities, the crotch and the head, so a transfer
    registers them as it registers its own automatic markers, whether they were found in
    this run or read back from the file ``asetransfer markers`` wrote.  ``fitted`` names
    those of them read off the source's skin fitted onto the target (``"fitted": true``:
    a rig from these alone is doubted as one from a fresh search is)."""

    names: tuple
    source: SurfacePoints
    target: SurfacePoints
    automatic: frozenset = field(default_factory=frozenset)
    fitted: frozenset = field(default_factory=frozenset)

    def __len__(self):
        return len(self.names)

    def subset(self, keep) -> "Markers":
        """The markers at indices ``keep``, in that order."""
        keep = np.asarray(keep, dtype=np.int64)
        names = tuple(self.names[k] for k in keep)
        return Markers(names, SurfacePoints(self.source.face[keep], self.source.bary[keep]),
                       SurfacePoints(self.target.face[keep], self.target.bary[keep]),
                       frozenset(n for n in names if n in self.automatic), frozenset(n for n in names if n in self.fitted))

    def then(self, other: "Markers") -> "Markers":
        """One marker set: these markers, then ``other``'s."""
        def cat(a: SurfacePoints, b: SurfacePoints) -> SurfacePoints:
            return SurfacePoints(np.concatenate([a.face, b.face]), np.concatenate([a.bary, b.bary]))
        return Markers(tuple(self.names) + tuple(other.names), cat(self.source, other.source),
                       cat(self.target, other.target), self.automatic | other.automatic, self.fitted | other.fitted)
