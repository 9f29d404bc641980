"""A hard-surface robot made from a one-piece rigged body, for tests and benchmarks.

Production robots and armoured characters are tens of separate rigid plates: every limb
segment ends at its joint and is split around its length into plates, the hands come
apart at the knuckles, separate joint covers sit in the gaps, neighbouring plates are
a little apart or slightly overlap, and each plate is weighted 100 % to one bone.
:func:`robot` builds such a character from any rig (the fixture source, or a target
rigged once as one piece), deterministically, so its joints can be compared with the
one-piece body's: the plates are the body's own surface, cut and barely moved.

The plates' vertices and faces come first, in the body's order, and the covers' after
them, so ``faces[:n_body_faces]`` are the body's plates.
"""
from __future__ import annotations

import numpy as np

from asetransfer.geometry.surface import closest_points
from asetransfer.model.markers import Markers
from asetransfer.model.mesh import Mesh
from asetransfer.model.rig import Rig
from asetransfer.model.skin import SkinWeights
from asetransfer.model.surface import SurfacePoints

from dressing import sphere


def segments(rig: Rig) -> np.ndarray:
    """Each vertex's segment: the bone with its largest weight (where a hard-surface
    modeller would cut the body, at the joints between bones)."""
    return rig.skin.indices[np.arange(rig.mesh.n_vertices), np.argmax(rig.skin.weights, axis=1)]


def plates_around(vertices: np.ndarray, count: int, turn: float) -> np.ndarray:
    """Split one segment's vertices into ``count`` plates by their angle about the
    segment's long axis (its first principal axis), starting ``turn`` radians round.

    Returns
    -------
    (N,) plate index 0..count-1 of each vertex.
    """
    if count < 2 or len(vertices) < 3:
        return np.zeros(len(vertices), np.int64)
    rel = vertices - vertices.mean(axis=0)
    axes = np.linalg.svd(rel, full_matrices=False)[2]
    angle = np.arctan2(rel @ axes[2], rel @ axes[1]) + np.pi + turn
    return (np.floor(angle / (2 * np.pi / count)).astype(np.int64)) % count


def plate_labels(rig: Rig, plates: int, small: float) -> np.ndarray:
    """Each vertex's plate: its segment, split around into ``plates`` plates when the
    segment holds more than ``small`` of the vertices (fingers and toes stay whole).

    Returns
    -------
    (N,) int labels; vertices with equal labels form one plate.
    """
    seg = segments(rig)
    label = seg * plates
    for s in np.unique(seg):
        on = np.flatnonzero(seg == s)
        if len(on) > small * len(seg):
            # a different start angle per bone, so the seams do not line up along a limb
            label[on] += plates_around(rig.mesh.vertices[on], plates, turn=0.7 * s)
    return label


def spread(vertices: np.ndarray, faces: np.ndarray, piece: np.ndarray, gap: float, overlap: float) -> np.ndarray:
    """Vertices with every piece scaled about its own centroid: even pieces shrink by
    ``gap``, odd ones grow by ``overlap`` (the plates interpenetrate their neighbours)."""
    out = vertices.copy()
    vp = np.full(len(vertices), -1)
    vp[faces.ravel()] = np.repeat(piece, 3)
    for p in np.unique(piece):
        on = np.flatnonzero(vp == p)
        c = vertices[on].mean(axis=0)
        out[on] = c + (vertices[on] - c) * (1 - gap if p % 2 == 0 else 1 + overlap)
    return out


def joint_covers(rig: Rig, label: np.ndarray, cut: np.ndarray, minimum: int, round_: float):
    """A ball joint over each limb joint where the body was cut: a sphere at the joint as
    wide as the cut loop around it (its median distance from the joint, 5 % more so it
    closes the gap), for every joint whose cut loop has ``minimum`` or more vertices and
    is round (nearest loop vertex at least ``round_`` times the farthest's distance: a
    limb, not the trunk, whose covers are bands rather than balls).

    Returns
    -------
    list of (joint index, vertices, faces).
    """
    seg = segments(rig)
    pos = rig.skeleton.bind_world[:, :3, 3]
    out = []
    for j, p in enumerate(rig.skeleton.parents):
        if p < 0:
            continue
        # vertices of the cut faces between the parent's and this bone's segments
        f = rig.mesh.faces[cut]
        s = seg[f]
        ring = np.unique(f[(s == j).any(axis=1) & (s == p).any(axis=1)])
        if len(ring) < minimum:
            continue
        dist = np.linalg.norm(rig.mesh.vertices[ring] - pos[j], axis=1)
        if dist.min() < round_ * dist.max():
            continue
        r = 1.05 * float(np.median(dist))
        v, fc = sphere(pos[j], r, subdivisions=2 if len(ring) >= 4 * minimum else 1)
        out.append((j, v, fc))
    return out


def robot(rig: Rig, plates: int = 3, small: float = 0.01, gap: float = 0.01, overlap: float = 0.01,
          covers: bool = True, cover_minimum: int = 8,
          cover_round: float = 0.5, rigid: bool = True) -> tuple[Rig, int]:
    """A hard-surface robot with ``rig``'s skeleton, rigidly weighted.

    Parameters
    ----------
    rig : the one-piece rigged body.
    plates : plates around each segment holding more than ``small`` of the vertices.
    small : that fraction.
    gap, overlap : relative shrink of even plates and growth of odd ones about their
        centroids (gaps and interpenetration between neighbours, besides the row of
        triangles removed along every cut).
    covers : add a joint cover at every cut joint (see :func:`joint_covers`).
    cover_minimum : fewest cut-loop vertices a joint needs for a cover.
    cover_round : how round its cut loop must be (see :func:`joint_covers`).
    rigid : weight every plate 100 % to one bone; False keeps the body's smooth weights
        on the plates (to tell what the rigid weights do from what the cuts do).

    Returns
    -------
    (robot rig, number of body faces): every plate weighted 100 % to the bone with its
    largest summed weight, every cover to its joint's bone.
    """
    from asetransfer.geometry.topology import vertex_components
    v, f = rig.mesh.vertices, rig.mesh.faces
    label = plate_labels(rig, plates, small)
    lf = label[f]
    keep = (lf == lf[:, :1]).all(axis=1)  # triangles across a cut are removed: the gap
    body = f[keep]
    # a plate is a connected piece of one label (a label can fall into several pieces)
    comp = vertex_components(len(v), body)
    piece = comp[body[:, 0]]
    moved = spread(v, body, piece, gap, overlap)
    dense = rig.skin.to_dense()
    bone = np.zeros(len(v), np.int64)
    for p in np.unique(piece):
        on = np.unique(body[piece == p])
        bone[on] = int(np.argmax(dense[on].sum(axis=0)))
    unused = np.setdiff1d(np.arange(len(v)), np.unique(body))
    bone[unused] = np.argmax(dense[unused], axis=1)
    parts_v, parts_f, parts_b = [moved], [body], [bone]
    n = len(v)
    if covers:
        for j, cv, cf in joint_covers(rig, label, ~keep, cover_minimum, cover_round):
            parts_v.append(cv)
            parts_f.append(cf + n)
            parts_b.append(np.full(len(cv), j))
            n += len(cv)
    bones = np.concatenate(parts_b)
    skin = SkinWeights(bones[:, None], np.ones((len(bones), 1)), rig.skeleton.n_joints)
    if not rigid:
        k = rig.skin.indices.shape[1]
        extra = len(bones) - len(v)
        skin = SkinWeights(np.concatenate([rig.skin.indices, np.pad(bones[len(v):, None], ((0, 0), (0, k - 1)))]),
                           np.concatenate([rig.skin.weights, np.pad(np.ones((extra, 1)), ((0, 0), (0, k - 1)))]),
                           rig.skeleton.n_joints)
    # the vertices of the cut rows are on no plate: a modelled robot has none (their
    # weights would still count in the joint fit)
    faces = np.concatenate(parts_f)
    used = np.unique(faces)
    renumber = np.full(n, -1)
    renumber[used] = np.arange(len(used))
    mesh = Mesh(np.concatenate(parts_v)[used], renumber[faces])
    skin = SkinWeights(skin.indices[used], skin.weights[used], skin.n_joints)
    return Rig(mesh, rig.skeleton, skin), len(body)


def carry_markers(markers: Markers, whole: Mesh, robot_mesh: Mesh, body_faces: int, side: str) -> Markers:
    """``markers`` placed on the one-piece ``whole`` moved onto the robot made from it
    (on its ``side``, ``"source"`` or ``"target"``): each to the closest point of the
    robot's body plates, not its covers (a marker whose triangle a cut removed lands
    on the nearest surviving plate).
    """
    points = getattr(markers, side)
    pos = points.positions(whole.vertices, whole.faces)
    face, bary, _ = closest_points(pos, robot_mesh.vertices, robot_mesh.faces[:body_faces])
    moved = SurfacePoints(face, bary)
    return Markers(markers.names, moved if side == "source" else markers.source,
                   moved if side == "target" else markers.target)
