"""The body surface every landmark rule reads, and the refusal of a shape that is no body.

:class:`BodySurface` is the welded mesh (layers and props already left out) with its surface
graph (pieces bridged, :mod:`~asetransfer.geometry.geodesic`), the middle of the body (the
vertex nearest the centroid of its large pieces), the geodesic distances from that middle
and, found once and shared by the rules, the distances from any vertex asked for, the
vertices' areas and the outermost vertices.
"""
from __future__ import annotations

from functools import cached_property

import numpy as np
from scipy.spatial import ConvexHull, QhullError

from ...geometry import geodesic
from ...geometry.alignment import principal_box_sides
from ...geometry.topology import used_vertices, vertex_areas, vertex_components

# pieces with at least this share of the vertices place the middle of the body: a cut
# body's pieces have >= 0.1 (heavy fixture: 0.05 a hand and forearm), a joint cover 0.02
MIDDLE_PIECE = 0.04


class NotHumanoidError(ValueError):
    """The mesh does not have a head, two hands and two feet laid out like a standing body."""


class BodySurface:
    """Part of a welded mesh with its surface graph and the geodesic distances the rules share."""

    def __init__(self, vertices: np.ndarray, faces: np.ndarray, original: np.ndarray, face_ids: np.ndarray,
                 bridge_gap: float):
        """``vertices`` and ``faces`` welded, ``original`` the input vertex of each welded vertex,
        ``face_ids`` (F,) the input triangle of each face (the same corners, in order); only the
        vertices ``faces`` use are kept (a lone vertex would be bridged as a piece)."""
        used = used_vertices(faces)
        self.vertices, self.faces = vertices[used], np.searchsorted(used, faces)
        # the input vertex of each vertex kept and the input triangle of each face:
        # landmarks are reported on the input
        self.original = original[used]
        self.face_ids = face_ids
        self.size = float(principal_box_sides(self.vertices)[0])  # however the body is turned
        self.graph = geodesic.surface_graph(self.vertices, self.faces, bridge_gap * self.size)
        # the middle: the vertex nearest the centroid of the large pieces.  Small ones (joint
        # covers, a prop, a robot's finger segments) would pull it away: the nearest vertex
        # to it jumps from the belly to the back, and the toe tips and the ground plane
        # follow (1.3 degrees with joint covers on the heavy fixture); a body's own pieces
        # (cut at the joints) are large and keep it where the whole body has it
        label = vertex_components(len(self.vertices), self.faces)
        count = np.bincount(label)
        large = count[label] >= MIDDLE_PIECE * len(label)
        if not large.any():  # every piece small (a robot's plates): the centroid of them all
            large[:] = True
        centre = self.vertices[large].mean(axis=0)
        self.middle = int(np.argmin(np.linalg.norm(self.vertices - centre, axis=1)))
        self.from_middle = geodesic.distances(self.graph, self.middle)
        self._from = {}
        # the ground under a pair of feet, by (feet, height, up): :func:`.frame._ground_under`
        self.grounds = {}

    def distance_from(self, v: int) -> np.ndarray:
        """(N,) geodesic distances from vertex ``v`` (computed once per vertex)."""
        if v not in self._from:
            self._from[v] = geodesic.distances(self.graph, v)
        return self._from[v]

    @cached_property
    def vertex_areas(self) -> np.ndarray:
        """(N,) each vertex's share of the surface's area."""
        return vertex_areas(self.vertices, self.faces)

    @cached_property
    def outermost(self) -> np.ndarray:
        """(K, 3) the vertices on the surface's convex hull, enough to tell its side of a plane
        (all of them for a flat surface, which has no hull)."""
        try:
            return self.vertices[ConvexHull(self.vertices).vertices]
        except QhullError:
            return self.vertices
