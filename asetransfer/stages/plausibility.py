"""Checks of a transferred skeleton against the source's proportions and the target's own shape.

A wrong correspondence can be consistently wrong: the weights follow the joints, so a
rig read the wrong way round, or with its shoulders inside the head, deforms "fine" by
its own measures.  These checks compare the result with what does not come through the
correspondence -- the source's proportions and the target's geometry -- and name the
joints they concern (:func:`~asetransfer.stages.quality.assess` grades them):

* :func:`bones_out_of_proportion`: bones whose length over the body height differs from
  the source's by more than a factor (a neck collapsed inside a big head, a leg stretched
  to the ears);
* :func:`feet_pointing_back`: toe joints pointing to the back of the target's feet, which
  the target's geometry tells (its foot reaches farther in front of the ankle than behind
  it): the rig is turned or mirrored relative to the body it sits in;
* :func:`limbs_crossed`: elbows or knees on the other side of the body than their names say
  (markers that swap one limb's left and right: the arm then crosses the chest);
* :func:`joints_on_carried_pieces`: body joints whose skin lies mostly on pieces no marker
  fitted, the source's or the result's (a chest plate between joint rings): they are placed
  from surface carried along, not fitted;
* :func:`hanging_arms_unpinned`: the elbows and wrists of arms hanging beside the body, which
  the source held out, with no marker near the elbow: the fit slides along an arm lying on
  the body.
"""
from __future__ import annotations

import numpy as np

from ..geometry.topology import vertex_areas, vertex_pieces
from ..humanoid.body import body_axes
from ..humanoid.landmarks.limbs import SIDEWAYS
from ..humanoid.skeleton_map import propose_skeleton_map
from ..model.mesh import Mesh
from ..model.rig import Rig
from ..model.roles import CENTRE_ROLES, SIDES
from ..model.skeleton import Skeleton

#: half the width of a foot, a fraction of the body height (the other foot stays out)
FOOT_HALF_WIDTH = 0.05
#: a vertex with this much weight on one joint is bound to it rigidly
RIGID_WEIGHT = 0.999
#: the skeleton-map roles of the body (not the hands' and feet's small joints)
BODY_ROLES = CENTRE_ROLES + tuple(f"{r}_{s}" for r in ("clavicle", "shoulder", "elbow", "wrist", "upper_leg", "knee",
                                                        "ankle") for s in SIDES)


def bones_out_of_proportion(source: Skeleton, source_height: float, target: Skeleton, target_height: float, *,
                            factor: float, min_length: float) -> list:
    """Names of the joints ending a bone whose length, over the body height, differs from
    the source's by more than ``factor`` either way.

    Parameters
    ----------
    source, target : the source's and the transferred skeleton (same joints).
    source_height, target_height : the bodies' heights.
    factor : > 1; min_length : bones shorter than this fraction of the source's height are
        not judged (their relative error is noise: finger segments, helper joints).
    """
    parents = source.parents
    child = np.flatnonzero(parents >= 0)
    src = np.linalg.norm(source.bind_world[child, :3, 3] - source.bind_world[parents[child], :3, 3], axis=1)
    tgt = np.linalg.norm(target.bind_world[child, :3, 3] - target.bind_world[parents[child], :3, 3], axis=1)
    src, tgt = src / source_height, tgt / target_height
    judged = src >= min_length
    ratio = np.divide(tgt, src, out=np.ones_like(src), where=judged)
    off = judged & ((ratio > factor) | (ratio < 1.0 / factor))
    return [source.names[j] for j in child[off]]


def feet_pointing_back(skeleton: Skeleton, mesh: Mesh, *, reach: float) -> list:
    """Names of the toe joints (skeleton map roles ``toe_l``, ``toe_r``) that point from their
    ankle to the shorter side of the target's foot.

    The foot is the target's surface below its ankle joint, within ``reach`` (a fraction of
    the body height) of it along the toe's direction and ``FOOT_HALF_WIDTH`` across it, on the
    piece nearest the toe's bone; it reaches farther in front of the ankle (the toes) than
    behind it (the heel).  Empty when the skeleton has no mapped feet or the foot
    shows no side (a round stump), and for skeletons the humanoid skeleton map does not
    fill (a bird, a quadruped).
    """
    mapping, missing = propose_skeleton_map(skeleton)
    if missing:  # not a humanoid skeleton (a bird's feet have a hind toe): no humanoid rule applies
        return []
    index = {n: i for i, n in enumerate(skeleton.names)}
    positions = {role: skeleton.bind_world[index[name], :3, 3] for role, name in mapping.items()}
    if "head" not in positions or "hips" not in positions:
        return []
    try:
        up = body_axes(positions)[0]
    except ValueError:
        return []
    v = mesh.vertices
    height = float(np.ptp(v @ up))
    piece = vertex_pieces(mesh.vertices, mesh.faces)
    out = []
    for side in "lr":
        ankle, toe = positions.get(f"ankle_{side}"), positions.get(f"toe_{side}")
        if ankle is None or toe is None:
            continue
        aim = (toe - ankle) - ((toe - ankle) @ up) * up
        if not np.linalg.norm(aim) > 0:
            continue
        aim /= np.linalg.norm(aim)
        offset = v - ankle
        along, lateral = offset @ aim, offset @ np.cross(up, aim)
        foot = (offset @ up < 0) & (np.abs(along) < reach * height) & (np.abs(lateral) < FOOT_HALF_WIDTH * height)
        # the foot's own piece (nearest the toe's bone): a cape or a prop hanging to the ground
        # behind a chibi's short foot is no heel (KayKit's capes flagged every right rig)
        foot &= piece == piece[np.argmin(np.linalg.norm(v - 0.5 * (ankle + toe), axis=1))]
        if foot.sum() < 3:
            continue
        along = along[foot]
        if along.max() < -along.min():
            out.append(mapping[f"toe_{side}"])
    return out


#: the joints that cannot cross the body's mid-plane in any pose a body is modelled in (hands
#: can: arms folded); their side is judged along the line between the upper legs
CROSSING_ROLES = ("elbow", "knee", "ankle")


def limbs_crossed(skeleton: Skeleton, height: float, *, tolerance: float) -> list:
    """Names of the left joints of the roles ``CROSSING_ROLES`` lying to the right of their
    right partner by more than ``tolerance`` (a fraction of ``height``), left and right taken
    from the upper legs (skeleton map roles); empty for skeletons the humanoid map does not fill.

    Markers that swap one arm's left and right fit well (the arm is pulled across the chest
    onto the other hand) and leave every joint inside the body: the heavy fixture so swapped
    puts its left elbow 49 %H right of its right one.
    """
    mapping, missing = propose_skeleton_map(skeleton)
    if missing:
        return []
    index = {n: i for i, n in enumerate(skeleton.names)}
    at = {role: skeleton.bind_world[index[name], :3, 3] for role, name in mapping.items()}
    left = at["upper_leg_l"] - at["upper_leg_r"]
    if not np.linalg.norm(left) > 0:
        return []
    left = left / np.linalg.norm(left)
    return [mapping[f"{role}_l"] for role in CROSSING_ROLES
            if f"{role}_l" in at and f"{role}_r" in at and (at[f"{role}_l"] - at[f"{role}_r"]) @ left < -tolerance * height]


def joints_on_carried_pieces(rig: Rig, carried: np.ndarray | None, *, share: float) -> list:
    """Names of the body joints (skeleton-map roles, :data:`BODY_ROLES`) more than
    ``share`` of whose skin -- weight times vertex area -- lies on ``carried`` (n,) vertices of
    ``rig``: pieces no marker fitted that are not layers over the body
    (:attr:`~asetransfer.model.correspondence.Correspondence.source_carried`), but for vertices
    bound wholly to one joint (a held shield, a hat: props that follow their joint).  Such a
    joint is placed from body surface carried along: Mixamo's X Bot, whose chest is a plate
    between joint rings, skinned to the spine and clavicles, had its shoulder joints 3.5-4.0
    %H off on a one-piece body with a verdict of "ok".  Empty without ``carried`` or a
    skeleton map."""
    if carried is None:
        return []
    carried = carried & (rig.skin.weights.max(axis=1) < RIGID_WEIGHT)
    if not carried.any():
        return []
    mapping, _ = propose_skeleton_map(rig.skeleton)
    names = list(rig.skeleton.names)
    joints = [names.index(mapping[r]) for r in BODY_ROLES if r in mapping]
    if not joints:
        return []
    skin = rig.skin.to_sparse()[:, joints].T   # (J', n)
    area = vertex_areas(rig.mesh.vertices, rig.mesh.faces)
    mass, on_carried = skin @ area, skin @ (area * carried)
    return [names[j] for j, m, c in zip(joints, mass, on_carried) if m > 0 and c > share * m]


def hanging_arms_unpinned(source: Skeleton, target: Skeleton, marker_points: np.ndarray, height: float, *,
                          reach: float) -> list:
    """Names of the elbow and wrist joints (skeleton-map roles) of the target's arms that hang
    beside the body while the source's reach out, with no marker within ``reach`` (a fraction
    of ``height``) of the elbow; empty for skeletons the humanoid map does not fill.

    An arm hangs when its shoulder-to-wrist line leans less than ``SIDEWAYS`` (its cosine with
    the body's left) out from the body, the landmark rules' own limit for reading an elbow: the
    arm then lies on the body, whose side the source's arm can slide along.  The female
    mannequin posed by her own rig with her arms 80 degrees down, rigged from the T-posed male
    with automatic markers, had her elbows 3.7 %H down her arms and her wrists 2.7 (her fingers
    0.5 %H), every other measure "ok".

    Parameters
    ----------
    source, target : the source's and the transferred skeleton (same joints).
    marker_points : (K, 3) the markers' points on the target.
    height : the target's height.
    """
    mapping, missing = propose_skeleton_map(target)
    if missing:
        return []
    index = {n: i for i, n in enumerate(target.names)}

    def arms(skeleton):
        at = {role: skeleton.bind_world[index[name], :3, 3] for role, name in mapping.items()}
        left = body_axes(at)[2]
        return at, {s: abs(_unit(at[f"wrist_{s}"] - at[f"shoulder_{s}"]) @ left) for s in SIDES
                    if f"wrist_{s}" in at and f"shoulder_{s}" in at}
    try:
        (at, now), (_, was) = arms(target), arms(source)
    except (KeyError, ValueError):  # no head, hips or sides to take the body's axes from
        return []
    points = np.asarray(marker_points, np.float64).reshape(-1, 3)
    out = []
    for side, lean in now.items():
        if lean >= SIDEWAYS or was[side] < SIDEWAYS or f"elbow_{side}" not in at:
            continue
        if len(points) and np.linalg.norm(points - at[f"elbow_{side}"], axis=1).min() <= reach * height:
            continue
        out += [mapping[f"elbow_{side}"], mapping[f"wrist_{side}"]]
    return out


def _unit(v: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(v)
    return v / n if n > 0 else v
