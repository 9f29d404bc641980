"""A character's body frame: up, forward and left directions, and the root height.

* :func:`body_axes`: the axes from mapped joint positions (the skeleton map's roles);
* :func:`guess_up_axis`: the up axis from the joint names alone, or the bounding box,
  for a summary of any file;
* :func:`body_frame`: up and the hips joint of a rig, from its skeleton map when one can
  be proposed, else from :func:`guess_up_axis`;
* :func:`root_height`: the hips above the lowest point of the mesh (Tonoli §3.1.4).
"""
from __future__ import annotations

import numpy as np

from ..model.mesh import Mesh
from ..model.rig import Rig
from .naming import is_head_name
from .skeleton_map import propose_skeleton_map

_AXES = ("X", "Y", "Z")


def body_axes(positions: dict):
    """Unit ``(up, forward, left)`` of a character from mapped joint positions.

    ``positions`` maps roles to points.  Up is the coordinate axis closest to hips ->
    head (files store characters upright along an axis); left is the mean left-minus-
    right direction of shoulders and upper legs, made perpendicular to up; forward =
    left x up (a right-handed frame: left +X, up +Y gives forward +Z).
    """
    up = np.asarray(positions["head"], float) - np.asarray(positions["hips"], float)
    k = int(np.argmax(np.abs(up)))
    up = np.sign(up[k]) * np.eye(3)[k]
    left = np.zeros(3)
    for role in ("shoulder", "upper_leg", "wrist", "ankle"):
        if f"{role}_l" in positions and f"{role}_r" in positions:
            d = np.asarray(positions[f"{role}_l"], float) - np.asarray(positions[f"{role}_r"], float)
            left += d / max(np.linalg.norm(d), 1e-300)
    left -= (left @ up) * up
    if not np.linalg.norm(left) > 1e-9:
        raise ValueError("cannot tell left from right: the left and right joints coincide")
    left /= np.linalg.norm(left)
    return up, np.cross(left, up), left


def axis_name(v: np.ndarray) -> str:
    """The signed coordinate axis closest to ``v``: ``"+Y"``, ``"-Z"``, ..."""
    k = int(np.argmax(np.abs(v)))
    return ("+" if v[k] >= 0 else "-") + _AXES[k]


def axis_vector(name: str) -> np.ndarray:
    """(3,) unit vector of a signed axis name (``"-Z"`` -> ``[0, 0, -1]``)."""
    return (1.0 if name[0] == "+" else -1.0) * np.eye(3)[_AXES.index(name[1])]


def guess_up_axis(mesh: Mesh, rig: Rig | None = None):
    """Best guess of the character's up axis.

    With a skeleton: the axis closest to the direction from the root joint to the
    head joint (found by name).  Without a head joint: the longest extent of the
    bounding box, assumed positive (a standing character is taller than deep;
    T-poses can make this ambiguous, hence ``source`` in the result).

    Returns
    -------
    (axis, source): e.g. ``("+Y", "skeleton")`` or ``("+Z", "bounding box")``.
    """
    if rig is not None:
        sk = rig.skeleton
        heads = [j for j, n in enumerate(sk.names) if is_head_name(n)]
        if heads:
            pos = sk.bind_world[:, :3, 3]
            root = int(sk.roots()[0])
            up = pos[heads[0]] - pos[root]
            if np.linalg.norm(up) > 0:
                return axis_name(up), "skeleton"
    lo, hi = mesh.bounds()
    ext = hi - lo
    return "+" + _AXES[int(np.argmax(ext))], "bounding box"


def body_frame(rig: Rig):
    """``(up, hips)``: unit up direction and the hips joint index of a character, from its
    mapped joints (:func:`~asetransfer.humanoid.skeleton_map.propose_skeleton_map`,
    :func:`body_axes` in the rest pose); without a usable map, the guessed up axis
    (:func:`guess_up_axis`) and the skeleton's root."""
    mapping, missing = propose_skeleton_map(rig.skeleton)
    if not missing:
        rest = rig.skeleton.rest_world()[:, :3, 3]
        up = body_axes({r: rest[rig.skeleton.index(n)] for r, n in mapping.items()})[0]
        return up, rig.skeleton.index(mapping["hips"])
    axis, _ = guess_up_axis(rig.mesh, rig)
    return axis_vector(axis), int(rig.skeleton.roots()[0])


def height_above_ground(point: np.ndarray, vertices: np.ndarray, up) -> float:
    """``point . up - min_i v_i . up``: how far ``point`` (3,) lies above the lowest of the
    ``vertices`` (N, 3) along the unit direction ``up`` (3,)."""
    up = np.asarray(up)
    return float(point @ up - (vertices @ up).min())


def root_height(rig: Rig, world: np.ndarray | None = None) -> float:
    """Height of the hips (root) joint above the lowest point of the mesh, in the rest pose
    or in the pose of the joint world matrices ``world`` (Tonoli §3.1.4); up and hips from
    :func:`body_frame`."""
    up, hips = body_frame(rig)
    world = rig.skeleton.rest_world() if world is None else world
    return height_above_ground(world[hips, :3, 3], rig.posed_vertices(world), up)
