"""Root joints that stand on the ground: a game rig's ``root`` under the body, held by no
surface, placed on the target's ground as it stood on the source's (:func:`grounded_roots`)."""
from __future__ import annotations

import numpy as np

from ..geometry.topology import used_vertices
from ..model.mesh import Mesh
from ..model.skeleton import Skeleton

#: [deg] the ground's normal is the coordinate axis nearest the source's up carried into the
#: target's frame when it is within this angle of it
GROUND_AXIS_SNAP_DEG = 15.0


def grounded_roots(cloud, pos: np.ndarray, sk: Skeleton, target: Mesh, origin: np.ndarray, up: np.ndarray,
                   tolerance: float) -> tuple:
    """Root joints without weights that stand on the source's ground, placed on the target's.

    Such a joint (a game rig's ``root``, under the body) is held by no surface, and the
    whole-body similarity that places it otherwise carries every difference of proportion
    into it (3.6-28 %H off on the production characters, below the floor).  On the ground
    it stays: at the target file's origin when it sat at the source file's and that origin
    lies on the target's ground within its footprint (the modelling convention), else under
    the target's contact points (vertices within ``tolerance`` of the lowest) as it was
    under the source's: ``p_t = c_t + h(p_s - c_s)`` at the target's ground height.

    Parameters
    ----------
    cloud : the source moved into the target's frame (:class:`~.joints.SkinnedCloud`); pos :
    (J, 3) placed joints; origin : (3,) the source file's origin moved likewise; up : (3,)
    the source's up axis (+Y) in the target's frame; tolerance : [target units] the ground
    band (``SkeletonConfig.ground_tolerance`` x height; 0 = off).

    Returns
    -------
    (J, 3) the joints (a copy when any moved); the names of the joints placed on the ground.
    """
    unweighted = np.diff(cloud.weights.tocsc().indptr) == 0
    roots = np.flatnonzero((sk.parents < 0) & unweighted)
    if tolerance <= 0 or not len(roots):
        return pos, []
    # the source stands on its own up (+Y, carried by the similarity); the target on the axis nearest
    # to it: files stand on an axis, and the similarity tilts by proportions (5.6 deg fox -> dog)
    axis = np.eye(3)[np.argmax(np.abs(up))] * np.sign(up[np.argmax(np.abs(up))])
    up_t = axis if axis @ up >= np.cos(np.radians(GROUND_AXIS_SNAP_DEG)) else up
    ground_s = (cloud.source @ up).min()
    # at or below the lowest point (a source posed by the pose matching lifts its feet off its root)
    grounded = roots[cloud.joints[roots] @ up - ground_s <= tolerance]
    if not len(grounded):
        return pos, []
    surface = target.vertices[used_vertices(target.faces)]  # not loose points far away
    ground_t = (surface @ up_t).min()
    contact_s = cloud.source[cloud.source @ up <= ground_s + tolerance]
    contact_t = surface[surface @ up_t <= ground_t + tolerance]
    offset = cloud.joints[grounded] - contact_s.mean(axis=0)
    out = pos.copy()
    out[grounded] = contact_t.mean(axis=0) + offset - np.outer(offset @ up, up)
    if _on_footprint(np.zeros(3), contact_t, up_t, tolerance):
        at_origin = np.linalg.norm(cloud.joints[grounded] - origin, axis=1) <= tolerance
        out[grounded[at_origin]] = 0.0
    out[grounded] += np.outer(ground_t - out[grounded] @ up_t, up_t)
    return out, [sk.names[j] for j in grounded]


def _on_footprint(point: np.ndarray, contact: np.ndarray, up: np.ndarray, tolerance: float) -> bool:
    """Whether ``point`` lies on the ground of the ``contact`` points (within ``tolerance`` of
    their lowest height) and inside the box their horizontal extent spans."""
    if abs(point @ up - (contact @ up).min()) > tolerance:
        return False
    flat = contact - np.outer(contact @ up, up)
    here = point - (point @ up) * up
    return bool(((here >= flat.min(axis=0) - tolerance) & (here <= flat.max(axis=0) + tolerance)).all())
