"""glTF animations of a rig's joints: build (for :mod:`.gltf_write`) and read back.

Written layout: per animation one shared time accessor (``frame * frame_time``
seconds); per moving joint a ``rotation`` channel (the node's whole local rotation,
``orient @ rotation @ R``, as quaternions kept on one hemisphere from frame to frame
so LINEAR interpolation takes the short way) and, for joints whose translation
changes (the root), a ``translation`` channel.  Joints that never move get no
channel: they keep their node's rest transform.  Node ``first_node + j`` is joint ``j``
(0 in the layout :func:`~asetransfer.io.gltf_write.rig_to_document` writes; after the
target's own nodes in :func:`~asetransfer.io.gltf_over.rig_over_document`).
"""
from __future__ import annotations

import logging

import numpy as np

from ..errors import InputError
from ..model.animation import Animation
from ..model.skeleton import Skeleton
from ..model.transforms import matrix_to_quat, quat_to_matrix
from .glb import FLOAT, BufferBuilder
from .gltf_document import GltfDocument
from .gltf_skin import rig_from_document, skin_joints

log = logging.getLogger("asetransfer")

_STILL = 1e-9  # rotation/translation changes below this are "not moving"


def continuous_quaternions(q: np.ndarray) -> np.ndarray:
    """(F, 4) quaternions with signs flipped so consecutive ones have a non-negative dot product."""
    q = np.array(q, dtype=np.float64)
    for f in range(1, len(q)):
        if q[f] @ q[f - 1] < 0:
            q[f] = -q[f]
    return q


def animation_to_gltf(bb: BufferBuilder, skeleton: Skeleton, animation: Animation, name: str = "motion",
                      first_node: int = 0) -> dict:
    """The glTF ``animations`` entry for ``animation``; its accessors are added to ``bb``
    (joint ``j`` is node ``first_node + j``)."""
    if animation.n_joints != skeleton.n_joints:
        raise ValueError(f"animation has {animation.n_joints} joints, skeleton has {skeleton.n_joints}")
    nf = animation.n_frames
    times = bb.add((np.arange(nf) * animation.frame_time).astype(np.float32).reshape(-1, 1), FLOAT, "SCALAR",
                   minmax=True)
    rest = skeleton.rest_rotation_local()
    samplers, channels = [], []
    rot_moves = np.abs(animation.rotations - np.eye(3)).max(axis=(0, 2, 3)) > _STILL
    trans_moves = np.abs(animation.translations - skeleton.translation[None]).max(axis=(0, 2)) > _STILL
    for j in range(skeleton.n_joints):
        if rot_moves[j]:
            q = continuous_quaternions(matrix_to_quat(rest[j][None] @ animation.rotations[:, j]))
            samplers.append({"input": times, "interpolation": "LINEAR",
                             "output": bb.add(q.astype(np.float32), FLOAT, "VEC4")})
            channels.append({"sampler": len(samplers) - 1, "target": {"node": first_node + j, "path": "rotation"}})
        if trans_moves[j]:
            samplers.append({"input": times, "interpolation": "LINEAR",
                             "output": bb.add(animation.translations[:, j].astype(np.float32), FLOAT, "VEC3")})
            channels.append({"sampler": len(samplers) - 1, "target": {"node": first_node + j, "path": "translation"}})
    if not channels:  # a still pose: keep one channel so the animation is valid glTF
        q = matrix_to_quat(rest[0][None] @ animation.rotations[:, 0])
        samplers.append({"input": times, "interpolation": "LINEAR",
                         "output": bb.add(q.astype(np.float32), FLOAT, "VEC4")})
        channels.append({"sampler": 0, "target": {"node": first_node, "path": "rotation"}})
    return {"name": name, "channels": channels, "samplers": samplers}


def read_animation(path, index: int = 0):
    """Read animation ``index`` of a skinned glTF as an :class:`Animation` on its rig.

    Channels must target joint nodes (under non-joint nodes of uniform scale, which are
    folded in: :func:`_folded_nodes`); all samplers are evaluated at the union of their
    key times (LINEAR: slerp / lerp, STEP: held).  Returns ``(rig, animation)``.
    """
    d = GltfDocument(path)
    pieces = d.pieces()
    skin_order = list(dict.fromkeys(p.skin for p in pieces if p.skin is not None))  # as read_gltf_rig
    rig = rig_from_document(d, pieces)
    anims = d.objects("animations")
    if not 0 <= index < len(anims):
        d.fail(f"has no animation {index} ({len(anims)} animations)")
    joint_nodes, _ = skin_joints(d, skin_order)  # node of each skeleton joint
    tracks = _joint_tracks(d, index, anims[index], {n: j for j, n in enumerate(joint_nodes)})
    return rig, _sampled_animation(rig.skeleton, tracks)


def has_clips(path) -> bool:
    """Whether a glTF file has animations."""
    from .glb import read_document

    return bool(read_document(path)[0].get("animations"))


def read_clips(path) -> tuple:
    """Every animation of a skinned glTF as an :class:`Animation` on its rig, read once:
    ``(rig, [(name, animation)], [(name, reason)])``: a clip that cannot be read (channels
    on nodes that are not joints, cubic interpolation...) is left out with its reason."""
    d = GltfDocument(path)
    pieces = d.pieces()
    skin_order = list(dict.fromkeys(p.skin for p in pieces if p.skin is not None))
    rig = rig_from_document(d, pieces)
    joint_nodes, _ = skin_joints(d, skin_order)
    jindex = {n: j for j, n in enumerate(joint_nodes)}
    clips, skipped = [], []
    for index, anim in enumerate(d.objects("animations")):
        name = str(anim.get("name") or f"clip {index}") if isinstance(anim, dict) else f"clip {index}"
        try:
            clips.append((name, _sampled_animation(rig.skeleton, _joint_tracks(d, index, anim, jindex))))
        except InputError as e:
            skipped.append((name, e.message))
            continue
        left = _channels_left_out(d, index, anim)
        if left:
            log.warning("%s: animation %r: its %s channel(s) are not carried (a clip carries the joints' "
                        "rotations and translations)", path, name,
                        ", ".join(f"{n} {what}" for what, n in sorted(left.items())))
    return rig, clips, skipped


def _channels_left_out(d: GltfDocument, index: int, anim: dict) -> dict:
    """Path -> count of the channels of animation ``index`` (``anim``) that a clip does not
    carry: morph weights, and scales that change (exporters key a scale of 1 on every bone)."""
    left = {}
    samplers = anim.get("samplers", [])
    for ch in anim.get("channels", []):
        what = ch.get("target", {}).get("path") if isinstance(ch, dict) else None
        if what in ("rotation", "translation"):
            continue
        if what == "scale":
            k = ch.get("sampler")
            smp = samplers[k] if isinstance(k, int) and 0 <= k < len(samplers) else {}
            try:
                keys = d.acc.read(smp.get("output"), f"animation {index} sampler {k} output")
            except InputError:
                keys = None
            if keys is not None and np.allclose(keys, 1.0, atol=1e-6):
                continue
        left[str(what)] = left.get(str(what), 0) + 1
    return left


def _joint_tracks(d, index: int, anim: dict, jindex: dict) -> list:
    """The rotation and translation channels of animation ``index`` (``anim``), checked:
    a list of ``(joint, "rotation" | "translation", (K,) key times, (K, 4 | 3) values,
    interpolation)``; ``jindex`` maps joint nodes to skeleton joints."""
    samplers = anim.get("samplers", [])
    tracks = []
    for c, ch in enumerate(anim.get("channels", [])):
        target = ch.get("target", {})
        node, what = target.get("node"), target.get("path")
        if what not in ("rotation", "translation"):
            continue  # scale and morph weights: not part of a skeleton motion
        if node not in jindex:
            d.fail(f"animation {index} channel {c} targets node {node!r}, which is not a joint")
        folded = _folded_nodes(d, node, jindex)
        if folded is None:
            d.fail(f"animation {index} channel {c} targets joint {d.node_name(node)!r} under a non-joint node "
                   "whose scale is not uniform (not supported)")
        k = ch.get("sampler")
        if not isinstance(k, int) or not 0 <= k < len(samplers):
            d.fail(f"animation {index} channel {c} refers to sampler {k!r}, which does not exist")
        smp = samplers[k]
        interp = smp.get("interpolation", "LINEAR")
        if interp not in ("LINEAR", "STEP"):
            d.fail(f"animation {index} sampler {k} uses {interp} interpolation (only LINEAR and STEP are read)")
        t = d.acc.read(smp.get("input"), f"animation {index} sampler {k} input").ravel()
        v = d.acc.read(smp.get("output"), f"animation {index} sampler {k} output")
        if len(t) == 0 or len(v) != len(t) or v.shape[1] != (4 if what == "rotation" else 3):
            d.fail(f"animation {index} sampler {k} has mismatched input and output")
        if np.any(np.diff(t) <= 0):
            d.fail(f"animation {index} sampler {k} key times are not increasing")
        tracks.append((jindex[node], what, t, _through(folded, what, v), interp))
    if not tracks:
        d.fail(f"animation {index} has no rotation or translation channel on a joint")
    return tracks


def _folded_nodes(d, node: int, jindex: dict):
    """The fixed transform ``M`` of the non-joint nodes between joint ``node`` and its parent
    joint (or the scene root), which the skeleton folds into the joint's local transform
    (:mod:`.gltf_skin`): ``(rotation (3, 3), scale, translation (3,))`` with ``M = T S R``,
    the identity for a joint whose parent is a joint or nothing, None when ``M`` scales
    unevenly or mirrors (a joint's rotation and translation cannot carry that).

    A DCC's armature object is such a node (Blender's glTF export of a Mixamo character:
    rotated 90 degrees and scaled 0.01 over the root bone; KayKit's characters): the root
    joint's animated local transform is ``M @ TRS(t)``, so its keys are read through ``M``."""
    p = d.parent[node]
    if p < 0 or p in jindex:
        return np.eye(3), 1.0, np.zeros(3)
    above = p
    while above >= 0 and above not in jindex:
        above = d.parent[above]
    m = d.world[p] if above < 0 else np.linalg.inv(d.world[above]) @ d.world[p]
    linear = m[:3, :3]
    det = np.linalg.det(linear)
    if not det > 0:
        return None
    scale = float(np.cbrt(det))
    rotation = linear / scale
    if np.abs(rotation.T @ rotation - np.eye(3)).max() > 1e-5:
        return None
    return rotation, scale, m[:3, 3].copy()


def _through(folded: tuple, what: str, values: np.ndarray) -> np.ndarray:
    """A track's key ``values`` (quaternions or translations of the node) as the folded
    joint's: the rotation turned by ``M``'s, the translation moved by the whole ``M``
    (:func:`_folded_nodes`).  A constant rotation and an affine map commute with the
    slerp and lerp between keys, so the keys alone are converted."""
    rotation, scale, offset = folded
    if what == "rotation":
        return matrix_to_quat(rotation[None] @ quat_to_matrix(values))
    return offset + scale * values @ rotation.T


def _sampled_animation(sk: Skeleton, tracks: list) -> Animation:
    """The tracks sampled at the union of their key times.  A glTF rotation is the node's
    full local rotation ``Q``; the animation stores ``R_rest^T Q`` (the rotation after
    the rest pose's); joints without a track keep the rest pose."""
    times = np.unique(np.concatenate([t for _, _, t, _, _ in tracks]))
    nf = len(times)
    rot = np.tile(np.eye(3), (nf, sk.n_joints, 1, 1))
    trans = np.tile(sk.translation, (nf, 1, 1))
    rest_inv = np.swapaxes(sk.rest_rotation_local(), 1, 2)
    for j, what, t, v, interp in tracks:
        if what == "rotation":
            q = _sample_rotation(t, v, times, interp)
            rot[:, j] = rest_inv[j][None] @ quat_to_matrix(q)
        else:
            trans[:, j] = _sample_linear(t, v, times, interp)
    frame_time = float(np.median(np.diff(times))) if nf > 1 else 1.0 / 30.0
    return Animation(rot, trans, frame_time)


def _sample_linear(t, v, times, interp):
    if interp == "STEP":
        return v[np.clip(np.searchsorted(t, times, side="right") - 1, 0, len(t) - 1)]
    return np.stack([np.interp(times, t, v[:, k]) for k in range(v.shape[1])], axis=1)


def _sample_rotation(t, q, times, interp):
    if interp == "STEP" or len(t) == 1:
        return q[np.clip(np.searchsorted(t, times, side="right") - 1, 0, len(t) - 1)]
    from scipy.spatial.transform import Rotation, Slerp  # imported on use: ~0.15 s

    r = Slerp(t, Rotation.from_quat(q))(np.clip(times, t[0], t[-1]))
    return r.as_quat()
