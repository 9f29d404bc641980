"""Animation clips of a COLLADA file, as :class:`~asetransfer.model.animation.Animation` on its rig.

A ``<channel>`` drives one transform element of a node (its target ``node-id/sid``: the
whole element, as Blender and Mixamo write baked ``matrix`` keys, or one component:
``sid.X`` ``.Y`` ``.Z`` ``.ANGLE``, ``sid(i)``, ``sid(row)(column)``) with the INPUT times
and OUTPUT values of its ``<sampler>``.  The clips are the ``<animation_clip>`` elements of
``library_animation_clips`` (each its animations between its start and end) or, without
them, every animation of the file as one clip named after the visual scene.  A clip is
sampled at the union of its key times, linearly between keys (the exporters bake a key a
frame); each joint's world matrix is rebuilt per frame through its ancestors' transform
elements, so the motion is relative to the rig's rest pose as :mod:`.collada` reads it.
"""
from __future__ import annotations

import re

import numpy as np

from ..errors import InputError
from ..model.animation import Animation
from .collada import TRANSFORM_SIZE, ColladaScene, compose_transform
from .collada_rig import rig_of_scene, skinned_joints
from .files import read_bytes

#: ``node-id/sid`` and an optional component: ``.X``, ``(i)`` or ``(row)(column)``
_TARGET = re.compile(r"^([^/]+)/([^.(]+)(?:\.(\w+)|\((\d+)\)(?:\((\d+)\))?)?$")
_NAMED = {"X": 0, "Y": 1, "Z": 2, "ANGLE": 3}


def has_clips(path) -> bool:
    """Whether a .dae file holds animation channels (the file is parsed only if it might)."""
    data = read_bytes(path)
    if b"<channel" not in data:
        return False
    return ColladaScene(path).root.find("library_animations//channel") is not None


def read_collada_clips(path) -> tuple:
    """``(rig, [(name, animation)], [(name, reason)])`` like :func:`~.gltf_animation.read_clips`:
    every clip of a skinned .dae file on its rig (a clip that cannot be read is left out
    with its reason; one that moves nothing is no clip)."""
    scene = ColladaScene(path)
    rig = rig_of_scene(scene)
    joints = skinned_joints(scene)[3]
    clips, skipped = [], []
    for name, clip in _clips(scene):
        try:
            animations, start, end = _clip_span(scene, clip)
            channels = [c for a in animations for c in _channels(scene, a)]
        except InputError as e:
            skipped.append((name, e.message))
            continue
        keyed = [t[(t >= start) & (t <= end)] for _, _, _, t, _ in channels]
        times = np.unique(np.concatenate(keyed)) if keyed else np.zeros(0)
        if len(times) == 0:
            continue
        world = _joint_worlds(scene, joints, channels, times)
        clips.append((name, Animation.from_world(rig.skeleton, world, times)))
    return rig, clips, skipped


def _clips(scene: ColladaScene) -> list:
    """``[(name, animation_clip element)]`` of the file, or ``[(scene name, None)]`` for all its
    animations as one clip."""
    clips = scene.root.findall("library_animation_clips/animation_clip")
    if clips:
        return [(clip.get("name") or clip.get("id") or f"clip {k}", clip) for k, clip in enumerate(clips)]
    scene_el = scene.root.find("library_visual_scenes/visual_scene")
    name = (scene_el.get("name") or scene_el.get("id")) if scene_el is not None else None
    return [(name or "animation", None)]


def _clip_span(scene: ColladaScene, clip) -> tuple:
    """A clip's animation elements and its start and end times (the whole file: all of them,
    no bound)."""
    if clip is None:
        return scene.root.findall("library_animations/animation"), -np.inf, np.inf
    animations = [scene.ref(i.get("url"), "an animation clip") for i in clip.findall("instance_animation")]
    try:
        start, end = float(clip.get("start", "-inf")), float(clip.get("end", "inf"))
    except ValueError:
        scene.fail(f"animation clip {clip.get('name')!r} has a start or end that is not a number")
    return animations, start, end


def _channels(scene: ColladaScene, animation) -> list:
    """``[(node index, element, components, (K,) times, (K, c) values)]`` of an animation's
    channels (nested animations included); ``components`` the element's value indices the
    channel sets, None for all of them."""
    nodes_by_id = {}
    for i, (node, _, _) in enumerate(scene.nodes):
        nodes_by_id.setdefault(node.get("id"), []).append(i)
    out = []
    for channel in animation.iter("channel"):
        target = _TARGET.match(channel.get("target", ""))
        if target is None or target.group(1) not in nodes_by_id:
            continue  # a material's or a camera's channel, or a node outside the scene
        node_id, sid, named, row, column = target.groups()
        for i in nodes_by_id[node_id]:
            element = next((e for e in scene.nodes[i][0] if e.get("sid") == sid and e.tag in TRANSFORM_SIZE), None)
            if element is None:
                continue
            components = _components(scene, element.tag, named, row, column, channel.get("target"))
            times, values = _sampler(scene, channel, animation)
            width = TRANSFORM_SIZE[element.tag] if components is None else len(components)
            if values.shape[1] != width:
                scene.fail(f"animation channel {channel.get('target')!r} holds {values.shape[1]} values a key, "
                           f"{width} expected")
            out.append((i, element, components, times, values))
    return out


def _components(scene, kind: str, named, row, column, target) -> list | None:
    """The value indices a channel sets in an element of ``kind`` (None: all)."""
    if named is not None:
        k = _NAMED.get(named.upper())
        if k is None or k >= TRANSFORM_SIZE[kind] or (k == 3) != (kind == "rotate"):
            scene.fail(f"animation channel {target!r} names a component {named!r} its element does not have")
        return [k]
    if row is not None:
        k = int(row) * 4 + int(column) if column is not None else int(row)
        if k >= TRANSFORM_SIZE[kind]:
            scene.fail(f"animation channel {target!r} names value {k} of a {TRANSFORM_SIZE[kind]}-value element")
        return [k]
    return None


def _sampler(scene: ColladaScene, channel, animation) -> tuple:
    """A channel's sampler: its (K,) increasing times and (K, c) values."""
    sampler = scene.ref(channel.get("source"), f"animation channel {channel.get('target')!r}")
    sources = {}
    for semantic in ("INPUT", "OUTPUT"):
        put = sampler.find(f"input[@semantic='{semantic}']")
        if put is None:
            scene.fail(f"the sampler of animation channel {channel.get('target')!r} has no {semantic}")
        source = scene.ref(put.get("source"), "an animation sampler")
        accessor = source.find("technique_common/accessor")
        stride = scene.integer(accessor, "stride", 1) if accessor is not None else 1
        values = scene.numbers(source.find("float_array"), f"animation source {source.get('id')!r}")
        if stride < 1 or len(values) % stride:
            scene.fail(f"animation source {source.get('id')!r} is not a whole number of keys")
        sources[semantic] = values.reshape(-1, stride)
    times, values = sources["INPUT"][:, 0], sources["OUTPUT"]
    if len(times) == 0 or len(times) != len(values) or np.any(np.diff(times) <= 0):
        scene.fail(f"animation channel {channel.get('target')!r} has mismatched or unordered keys")
    return times, values


def _joint_worlds(scene: ColladaScene, joints: list, channels: list, times: np.ndarray) -> np.ndarray:
    """(F, J, 4, 4) world matrices of the joint nodes at every time: every node on their
    chains to the root rebuilt from its transform elements, its animated values sampled."""
    animated = {}
    for i, element, components, t, v in channels:
        animated.setdefault((i, id(element)), []).append((components, t, v))
    worlds = {}

    def world(i):
        if i not in worlds:
            node, parent, _ = scene.nodes[i]
            elements = []
            for element, kind, rest in scene.transform_elements(node):
                values = np.tile(rest, (len(times), 1))
                for components, t, v in animated.get((i, id(element)), []):
                    for column, k in enumerate(components if components is not None else range(values.shape[1])):
                        values[:, k] = np.interp(times, t, v[:, column])
                elements.append((kind, values))
            above = world(parent) if parent >= 0 else np.tile(np.eye(4), (len(times), 1, 1))
            worlds[i] = above @ compose_transform(elements) if elements else above
        return worlds[i]

    return np.stack([world(i) for i in joints], axis=1)
