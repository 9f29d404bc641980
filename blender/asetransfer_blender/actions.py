"""What the panel's buttons do, as functions of the context and the panel settings.

Each raises :class:`~asetransfer.errors.InputError` with the command line's one-line
message (the file it names is here the object or collection at fault) and leaves the
scene as it found it on failure.  The operators in ``__init__`` only report.
"""
from __future__ import annotations

import numpy as np

from asetransfer.config import Config, CorrespondenceConfig, MarkersConfig, SkeletonConfig, WeightsConfig
from asetransfer.errors import InputError

from . import scene

#: stages of :func:`asetransfer.transfer`, in order, for the progress bar
STAGES = ("markers", "correspondence", "skeleton", "weights")


def config_of(settings) -> Config:
    """The transfer options of the panel as a Config (every other value the library's default)."""
    return Config(CorrespondenceConfig(), SkeletonConfig(joints=settings.joints, mirror=settings.mirror),
                  WeightsConfig(method=settings.weights, max_influences=int(settings.max_influences)),
                  MarkersConfig())


def characters(context, settings):
    """The source Rig, the target objects and their Mesh, as the transfer sees them."""
    rig = scene.read_source(context, settings.source, settings.apply_modifiers)
    targets = scene.target_meshes(settings.target, settings.target_children)
    return rig, targets, scene.read_target(context, targets, settings.apply_modifiers)


def markers_text(context) -> tuple[str, int]:
    """The scene's marker empties as marker-file text (what Save markers writes) and their count."""
    names, src, tgt = scene.scene_markers(context.scene)
    from asetransfer.io.markers import points_to_json

    return points_to_json(names, src, tgt), len(names)


def scene_markers(context, rig, target, config: Config):
    """The markers in the scene resolved on both meshes, read exactly as the command line reads
    the file Save markers writes; None when the scene has none."""
    from asetransfer.io.markers import load_markers

    from asetransfer.job import minimum_markers

    text, count = markers_text(context)
    if count == 0:
        return None
    return load_markers(scene.TARGET_MARKERS, rig.mesh, target, minimum=minimum_markers(config),
                        data=text.encode("utf-8"), config=config)


def library_errors(settings, call, *args, **kwargs):
    """Run a library call, its errors about inputs as the command line's InputError
    (naming the objects at fault instead of files)."""
    from asetransfer.job import named_errors

    with named_errors(settings.source.name, settings.target.name, scene.TARGET_MARKERS):
        return call(*args, **kwargs)


def marker_size(mesh) -> float:
    """Display size of marker empties (BU): 1.5% of the character's height."""
    lo, hi = mesh.bounds()
    return 0.015 * float(np.max(hi - lo))


def find_markers(context, settings):
    """Automatic markers (completing the ones in the scene, which win) as empties; returns
    their :class:`~asetransfer.model.report.MarkerOrigin`."""
    from asetransfer.stages.markers import automatic_markers

    rig, _, target = characters(context, settings)
    config = config_of(settings)
    hand = scene_markers(context, rig, target, config)
    markers, origin = library_errors(settings, automatic_markers, rig, target, config, hand=hand)
    place(context, rig, target, markers, origin.confidence)
    return origin


def place(context, rig, target, markers, confidence=None) -> None:
    """Markers as empties on both characters (replacing the scene's), or nothing on failure."""
    created = scene.Created()
    try:
        scene.place_markers(context, created, names=markers.names,
                            source_points=markers.source.positions(rig.mesh.vertices, rig.mesh.faces),
                            target_points=markers.target.positions(target.vertices, target.faces),
                            size=marker_size(target) / scene.unit_scale(context.scene), confidence=confidence)
    except Exception:
        created.remove_all()
        raise


def transfer_rig(context, settings, progress=None):
    """Run the transfer with the scene's markers and build the rig; returns (objects, its
    :class:`~asetransfer.model.report.TransferReport`)."""
    from asetransfer.stages.transfer import transfer

    rig, targets, target = characters(context, settings)
    config = config_of(settings)
    markers = scene_markers(context, rig, target, config)
    result = library_errors(settings, transfer, rig, target, markers, config, progress=progress)
    created = scene.Created()
    try:
        objects = scene.build_result(context, result.rig, name=f"{settings.target.name} rig", originals=targets,
                                     apply_modifiers=settings.apply_modifiers, created=created)
    except Exception:
        created.remove_all()
        raise
    return objects, result.report


def save_markers(context, path) -> int:
    """Write the scene's markers as a marker file the command line reads; returns their count."""
    from asetransfer.io.atomic import atomic_write

    text, count = markers_text(context)
    if count == 0:
        raise InputError(path, "the scene has no markers to save (Find markers or Load markers first)")
    atomic_write(path, text.encode("utf-8"))
    return count


def load_markers(context, settings, path) -> int:
    """Marker empties from a marker file (resolved on both characters, as the command line does)."""
    from asetransfer.io.markers import load_markers as read

    rig, _, target = characters(context, settings)
    markers = read(path, rig.mesh, target, minimum=1)
    place(context, rig, target, markers)
    return len(markers)
