"""Summary of a character file: counts, hierarchy, influences, extent, up axis."""
from __future__ import annotations

from .humanoid.body import guess_up_axis
from .model.rig import Rig


def describe(obj, path: str | None = None) -> dict:
    """JSON-ready summary of a :class:`Rig` or :class:`Mesh`.

    Keys: ``file``, ``kind`` ("rig" or "mesh"), ``vertices``, ``faces``, ``parts``,
    ``joints`` (names), ``joint_count``, ``hierarchy_depth`` (levels, 0 without a
    skeleton), ``humanoid_bones`` (the humanoid the file declares: a VRM's bone -> joint
    name, empty without one), ``max_influences``, ``mean_influences``, ``bounding_box`` (min, max),
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
        "humanoid_bones": dict(rig.skeleton.humanoid_bones) if rig is not None else {},
        "max_influences": int(rig.skin.influence_counts().max()) if rig is not None else 0,
        "mean_influences": round(float(rig.skin.influence_counts().mean()), 4) if rig is not None else 0.0,
        "bounding_box": {"min": [float(x) for x in lo], "max": [float(x) for x in hi]},
        "size": [float(x) for x in hi - lo],
        "up_axis": up,
        "up_axis_source": up_src,
    }
    return out
