"""Calibration types: a character calibrated for surface-aware motion retargeting
(Tonoli Ch. 3, Molla §4.2, ReConForM §3.1), made once on a source rig and carried to
every target.

A :class:`Calibration` holds

* ``skeleton_map``: generic roles -> the rig's joints (:mod:`asetransfer.humanoid.skeleton_map`);
* ``surface_points``: Tonoli's Table 3.1 body-surface points, each a :class:`SurfacePoint`
  (triangle + barycentric coordinates) attached to a joint;
* ``meshes``: the crude torso and head meshes spanned by those points (Tonoli §3.2.1);
* ``capsules``: upper arms, forearms, thighs and shins (:class:`Capsule`), radius
  measured on the mesh;
* ``key_vertices``: ReConForM-style key vertices (41 by default);
* ``segment_lengths`` (Tonoli Table 3.2), ``root_height`` (§3.1.4), ``units``, ``axes``
  and, when made, the ``tpose`` check.

:func:`asetransfer.handoff.calibration.propose_calibration` makes one automatically
for a humanoid rig and :func:`~asetransfer.handoff.calibration.transfer_calibration`
carries it to a rigged target; :mod:`asetransfer.io.calibration` stores it as JSON
(``docs/calibration.md``).  The numeric helpers here (:func:`quantized_bary`,
:func:`rounded`) fix the precision both share, so that a calibration read back from
its file gives the same numbers.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np

from .rig import Rig

from .surface import interpolate

log = logging.getLogger("asetransfer")
KINDS = ("mesh", "limb", "key")


@dataclass(eq=False)
class SurfacePoint:
    """A named point on the character's surface, attached to a joint.

    ``position`` is on the mesh as modelled (the bind pose, glTF ``POSITION``);
    ``local`` is the same point in the attached joint's bind frame, so in any pose
    it is at ``world[joint] @ local`` (Tonoli Eq. 3.25).  ``vertex`` is set for key
    vertices (the mesh vertex the point sits on).
    """

    name: str
    joint: str
    kind: str
    group: str
    face: int
    bary: np.ndarray
    position: np.ndarray
    local: np.ndarray
    vertex: int | None = None


@dataclass(eq=False)
class Capsule:
    """A limb as a capsule around the bone ``start`` -> ``end`` (Tonoli Eq. 3.23)."""

    name: str
    start: str
    end: str
    radius: float | None
    length: float
    point: str | None = None


@dataclass(eq=False)
class Calibration:
    """A calibrated character (see the module docstring and ``docs/calibration.md``)."""

    skeleton_map: dict
    surface_points: list
    key_vertices: list
    meshes: dict
    capsules: list
    segment_lengths: dict
    root_height: float
    units: dict
    axes: dict
    character: dict
    tpose: dict | None = None
    transferred_from: dict | None = None
    extras: dict = field(default_factory=dict)

    def point(self, name: str) -> SurfacePoint:
        for p in self.surface_points + self.key_vertices:
            if p.name == name:
                return p
        raise KeyError(name)


def quantized_bary(b) -> np.ndarray:
    """Barycentric coordinates rounded to 9 decimals, still summing to 1 (the largest absorbs
    the rounding), so that writing and reading a calibration gives the same numbers."""
    b = np.round(np.asarray(b, dtype=np.float64), 9)
    k = int(np.argmax(b))
    b[k] = round(1.0 - float(b.sum() - b[k]), 9)
    return b + 0.0


def surface_point_on(rig: Rig, *, name: str, joint: str, kind: str, group: str, face: int, bary,
                     vertex: int | None = None) -> SurfacePoint:
    """The point at (``face``, ``bary``) of ``rig``'s mesh as modelled, attached to ``joint``.

    ``bary`` is first quantized (:func:`quantized_bary`) so a written and re-read point is
    the same; then ``position = sum_i bary_i v_i`` over the triangle's corners and
    ``local = B^-1 position`` with ``B`` the joint's bind-pose world matrix.
    """
    bary = quantized_bary(bary)
    pos = interpolate(rig.mesh.vertices, rig.mesh.faces, np.array([face]), bary[None])[0]
    inv = np.linalg.inv(rig.skeleton.bind_world[rig.skeleton.index(joint)])
    return SurfacePoint(name=name, joint=joint, kind=kind, group=group, face=int(face), bary=bary, position=pos,
                        local=inv[:3, :3] @ pos + inv[:3, 3], vertex=vertex)


# ---------------------------------------------------------------------- stored numbers
def rounded(x) -> float:
    """``x`` as a float rounded to 7 decimals, -0.0 made 0.0: how a calibration stores
    lengths and coordinates, so that its JSON text is reproducible."""
    return round(float(x), 7) + 0.0


def rounded_vector(v) -> list:
    """A vector as a list of :func:`rounded` floats."""
    return [rounded(x) for x in v]
