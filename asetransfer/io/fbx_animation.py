"""Animation clips of a binary FBX file: every take as an :class:`~asetransfer.model.animation.Animation`
on the file's rig.

A take is an ``AnimationStack``; its ``AnimationLayer`` holds ``AnimationCurveNode`` objects, each
connected to a model's ``Lcl Translation``, ``Lcl Rotation`` or ``Lcl Scaling`` and holding up to
three ``AnimationCurve`` objects (``d|X``, ``d|Y``, ``d|Z``: key times in FBX ticks, 46 186 158 000
a second, and values); a component without a curve keeps the curve node's value.  The take is
sampled at the union of its key times, linearly between keys (exporters such as Blender's and
Mixamo's bake a key on every frame); every model's local transform is rebuilt per frame through
the full transform stack (:func:`~.fbx_scene.node_local_matrix`), so nodes between joints (an
armature scaled by 100) and pre-rotations count as at rest, and each joint's motion is its local
rotation and translation relative to its parent joint, in the file's units and axes like the rig
(:func:`~.fbx.rig_from_scene`).  Scale keys move the joints below but are not a joint's own
motion (an :class:`Animation` has none).  A take with several layers is read from its first
layer only, and said so.
"""
from __future__ import annotations

import logging

import numpy as np

from ..errors import InputError
from ..model.animation import Animation
from .fbx import joint_models, rig_from_scene
from .fbx_scene import FbxScene, node_local_matrix
from .files import read_bytes

log = logging.getLogger("asetransfer")

#: FBX time units per second
TICKS_PER_SECOND = 46_186_158_000
#: the transform properties a take animates, and their value where nothing says otherwise
CHANNELS = {"Lcl Translation": 0.0, "Lcl Rotation": 0.0, "Lcl Scaling": 1.0}


def has_clips(path) -> bool:
    """Whether an FBX file has a take with curves (exporters write an empty ``Take 001`` into
    files with no animation).  A file without the record name ``AnimationCurve`` in its bytes has
    none, and is not parsed a second time (a transfer asks of every FBX source)."""
    data = read_bytes(path)
    if b"AnimationCurve" not in data:
        return False
    scene = FbxScene(path, data)
    return bool(scene.of_class("AnimationStack")) and bool(scene.of_class("AnimationCurve"))


def read_fbx_clips(path) -> tuple:
    """Every take of a skinned FBX file as an :class:`Animation` on its rig, read once:
    ``(rig, [(name, animation)], [(name, reason)])`` like :func:`~.gltf_animation.read_clips`
    (a take that cannot be read is left out with its reason; an empty one, with no keyed
    transform, is no clip)."""
    scene = FbxScene(path)
    rig = rig_from_scene(scene)
    joints, _ = joint_models(scene)
    clips, skipped = [], []
    for stack in scene.of_class("AnimationStack"):
        name = scene.names[stack] or f"take {len(clips) + len(skipped)}"
        layers = scene.linked(stack, "AnimationLayer")
        try:
            curves = _layer_curves(scene, layers[0]) if layers else {}
        except InputError as e:
            skipped.append((name, e.message))
            continue
        keyed = [t for per_model in curves.values() for _, _, t, _ in per_model if t is not None]
        if not keyed:
            continue  # an empty take (exporters write one into files with no animation): nothing to carry
        times = np.unique(np.concatenate(keyed))
        world = _world_over_time(scene, joints, curves, times)
        clips.append((name, Animation.from_world(rig.skeleton, world, times / TICKS_PER_SECOND)))
        if len(layers) > 1:
            log.warning("%s: take %r is read from the first of its %d animation layers", path, name, len(layers))
    return rig, clips, skipped


def _layer_curves(scene: FbxScene, layer) -> dict:
    """model -> [(property, axis, (K,) key times in ticks, (K,) values)] of one layer; a
    component without a curve has times None and its curve node's value."""
    nodes = set(scene.linked(layer, "AnimationCurveNode"))
    out = {}
    for model in scene.of_class("Model"):
        for node, prop in scene.property_children.get(model, []):
            if node not in nodes or prop not in CHANNELS:
                continue
            values = scene.props(node)
            curves = {axis: c for c, axis in scene.property_children.get(node, [])}
            for k, axis in enumerate(("d|X", "d|Y", "d|Z")):
                keys = _curve_keys(scene, curves[axis]) if axis in curves else None
                if keys is None:
                    keys = (None, float(values.get(axis, CHANNELS[prop])))
                out.setdefault(model, []).append((prop, k, *keys))
    return out


def _curve_keys(scene: FbxScene, curve):
    """``(times, values)`` of an ``AnimationCurve``, or None when it has no usable keys."""
    node = scene.objects.get(curve)
    if node is None:
        return None
    time, value = node.child("KeyTime"), node.child("KeyValueFloat")
    if time is None or value is None or not time.props or not value.props:
        return None
    t = np.asarray(time.props[0], dtype=np.int64).ravel()
    v = np.asarray(value.props[0], dtype=np.float64).ravel()
    if len(t) == 0 or len(t) != len(v) or np.any(np.diff(t) <= 0) or not np.isfinite(v).all():
        scene.fail(f"animation curve {scene.names[curve]!r} has mismatched, unordered or invalid keys")
    return t, v


def _world_over_time(scene: FbxScene, joints: list, curves: dict, times: np.ndarray) -> np.ndarray:
    """(F, J, 4, 4) world matrices of the joint models at every time: each model on their
    chains to the root rebuilt from its properties, its animated ones sampled."""
    cache = {0: np.tile(np.eye(4), (len(times), 1, 1))}

    def world(model):
        if model not in cache:
            animated = {}
            for prop, axis, t, v in curves.get(model, []):
                values = animated.setdefault(prop, np.tile(_rest(scene, model, prop), (len(times), 1)))
                values[:, axis] = v if t is None else np.interp(times, t, v)
            cache[model] = world(scene.parent_model[model]) @ node_local_matrix(scene.props(model), animated)
        return cache[model]

    for m in joints:  # parents first: joints are depth-first, and chains are short
        world(m)
    return np.stack([cache[m] for m in joints], axis=1)


def _rest(scene: FbxScene, model, prop: str) -> np.ndarray:
    """(3,) a model's own value of a transform property (its template's, else the default)."""
    value = scene.props(model).get(prop)
    if value is not None and np.ndim(value) == 1 and len(value) == 3:
        return np.asarray(value, dtype=np.float64)
    return np.full(3, CHANNELS[prop])

