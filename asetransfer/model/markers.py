"""Marker files: linked source/target surface locations, as JSON.

Format (UTF-8)::

    {"markers": [{"name": "elbow.L", "source": LOC, "target": LOC}, ...]}

where ``LOC`` is ``{"point": [x, y, z]}`` (snapped to the closest surface point),
``{"vertex": i}`` or ``{"face": f, "bary": [a, b, c]}``.
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
