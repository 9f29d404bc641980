"""One mesh as the correspondence's solvers see it: welded, in the normalised frame, its
marked part extracted, with the operators and search trees built on it once."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ...geometry.alignment import Similarity
from ...geometry.laplacian import bilaplacian, mixed_voronoi_areas
from ...geometry.surface import SurfaceIndex, surface_index


@dataclass(eq=False)
class PreparedSide:
    """One mesh prepared for the solver (:func:`~.prepare.prepare_side`): welded,
    normalised, marked part extracted.

    The marked part ("active") is the pieces of the mesh holding a marker, with the pieces
    glued to them; the fairing and registration solve for its vertices only, the rest
    rides along (:func:`~.proxies.carry`).
    """

    vertices: np.ndarray         # (n', 3) welded vertices, normalised frame
    faces: np.ndarray            # (F, 3) input triangles on welded vertices
    input_to_welded: np.ndarray  # (n,) welded vertex of each input vertex
    active: np.ndarray           # (a,) welded vertices in components that hold a marker
    active_faces: np.ndarray     # (Fa, 3) triangles of those components, on active numbering
    markers: sp.csr_matrix       # (K, a) barycentric rows of the markers, active numbering
    unmarked: tuple              # (pieces without a marker but layers, all pieces, their fraction of the area)
    glue: sp.csr_matrix          # (G, a) rows e_i - e_j: vertex pairs holding neighbouring pieces together
    solved: np.ndarray           # (n',) bool: vertices of the marked pieces and those glued to them
    marked_pieces: int           # pieces of the mesh holding a marker (glued or not)
    carried: np.ndarray          # (n',) bool: vertices of pieces without a marker that are not layers (props, missed parts)
    # (mesh vertices, mesh faces, similarity) of the mesh as given and the map to this frame:
    # its search tree, shared with the steps around the correspondence, serves as this one's
    given: tuple | None = None
    _operators: dict = field(default_factory=dict)  # (bi-Laplacian, total area) of the marked part, see operator()
    _surfaces: dict = field(default_factory=dict)  # search trees, see surface()

    def operator(self, across_gaps: bool = False):
        """``(L^T M^-1 L, sum of the vertex areas)`` of the marked part as prepared, computed once:
        the fairing (Eq. A I-1a) and the registration (Eq. A I-2a) use the same operator of the source.

        Parameters
        ----------
        across_gaps : the Laplacian rows of glued pieces' cut boundaries see across the gap
            (:func:`~asetransfer.geometry.laplacian.seamed_laplacian`; the fairing's operator);
            a mesh in one piece has one operator either way.

        Returns
        -------
        (a, a) sparse bi-Laplacian, float total mixed Voronoi area.
        """
        key = bool(across_gaps) and self.glue.shape[0] > 0
        if key not in self._operators:
            positions = self.vertices[self.active]
            areas = mixed_voronoi_areas(positions, self.active_faces)
            seams = self.glue.indices.reshape(-1, 2) if key else None  # each glue row: its two vertices
            operator = bilaplacian(positions, self.active_faces, areas, seams=seams)
            self._operators[key] = (operator, float(areas.sum()))
        return self._operators[key]

    def surface(self, part: str = "active"):
        """A closest-point search tree of the marked part (``"active"``) or of the whole welded
        mesh (``"whole"``), built once.

        The two are one tree when every vertex and triangle is marked (the registration onto
        the target and the maps share it).  The whole mesh is searched through the tree of
        the mesh as given when there is one (``given``: marker snapping built it, the
        skeleton and quality steps use it; a 1M target's took 0.7 s).

        Returns
        -------
        :class:`~asetransfer.geometry.surface.SurfaceIndex` or :class:`MappedIndex`.
        """
        if part not in self._surfaces:
            other = "whole" if part == "active" else "active"
            whole_is_active = len(self.active) == len(self.vertices) and np.array_equal(self.active_faces, self.faces)
            if whole_is_active and other in self._surfaces:
                self._surfaces[part] = self._surfaces[other]
            elif part == "active" and not whole_is_active:
                self._surfaces[part] = SurfaceIndex(self.vertices[self.active], self.active_faces)
            elif self.given is not None:  # its triangles are these, in the same order
                vertices, faces, similarity = self.given
                self._surfaces[part] = MappedIndex(surface_index(vertices, faces), similarity,
                                                   self.vertices, self.faces)
            else:
                self._surfaces[part] = SurfaceIndex(self.vertices, self.faces)
        return self._surfaces[part]


@dataclass(eq=False)
class MappedIndex:
    """A mesh's search tree queried in the frame a similarity maps the mesh to: the same
    triangles and barycentric coordinates, points and distances in that frame."""

    index: SurfaceIndex
    similarity: Similarity
    vertices: np.ndarray  # (n, 3) the triangles' corners in the mapped frame
    faces: np.ndarray     # (F, 3) the same triangles on them

    def closest(self, points: np.ndarray, *, bary: bool = True):
        """:meth:`SurfaceIndex.closest` of ``points`` (m, 3) given in the mapped frame.

        Returns
        -------
        face (m,), barycentric coordinates (m, 3) or None, distance (m,) and point (m, 3)
        in the mapped frame.
        """
        face, coords, dist, point = self.index.closest(self.similarity.inverse().apply(points), bary=bary)
        return face, coords, dist * self.similarity.scale, self.similarity.apply(point)
