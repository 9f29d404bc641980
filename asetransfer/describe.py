"""Summary of a character file: counts, hierarchy, influences, extent, up axis."""
from __future__ import annotations

import numpy as np

from .humanoid.naming import is_head_name
from .model.mesh import Mesh
from .model.rig import Rig

_AXES = ("X", "Y", "Z")


def _axis_name(v: np.ndarray) -> str:
    k = int(np.argmax(np.abs(v)))
    return ("+" if v[k] >= 0 else "-") + _AXES[k]


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
                return _axis_name(up), "skeleton"
    lo, hi = mesh.bounds()
    ext = hi - lo
    return "+" + _AXES[int(np.argmax(ext))], "bounding box"


def describe(obj, path: str | None = None) -> dict:
    """JSON-ready summary of a :class:`Rig` or :class:`Mesh`.

    Keys: ``file``, ``kind`` ("rig" or "mesh"), ``vertices``, ``faces``, ``parts``,
    ``joints`` (names), ``joint_count``, ``hierarchy_depth`` (levels, 0 without a
    skeleton), ``max_influences``, ``mean_influences``, ``bounding_box`` (min, max),
    ``size``, ``up_axis``, ``up_axis_source``.
    """
    rig = obj if isinstance(obj, Rig) else None
    mesh = rig.mesh if rig is not None else obj
    lo, hi = mesh.bounds()
    up, up_src = guess_up_axis(mesh, rig)
    out = {
        "file": path,
        "kind": "rig" if rig is not None else "mesh",
        "vertices": mesh.n_vertices,
        "faces": mesh.n_faces,
        "parts": list(mesh.parts),
        "joints": list(rig.skeleton.names) if rig is not None else [],
        "joint_count": rig.skeleton.n_joints if rig is not None else 0,
        "hierarchy_depth": int(rig.skeleton.depth().max()) + 1 if rig is not None else 0,
        "max_influences": int(rig.skin.influence_counts().max()) if rig is not None else 0,
        "mean_influences": round(float(rig.skin.influence_counts().mean()), 4) if rig is not None else 0.0,
        "bounding_box": {"min": [float(x) for x in lo], "max": [float(x) for x in hi]},
        "size": [float(x) for x in hi - lo],
        "up_axis": up,
        "up_axis_source": up_src,
    }
    return out
