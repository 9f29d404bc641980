"""The review files of a transfer: the preview picture and the QA page (what a TD checks a rig
with), made from the source rig, the target and the transfer's result; the command line's
job and the Blender add-on call :func:`write_review`."""
from __future__ import annotations

import logging
import os

from ..config import Config
from ..errors import InputError
from ..model.mesh import Mesh
from ..model.report import MarkerOrigin, TransferReport
from ..model.rig import Rig

log = logging.getLogger("asetransfer")


def body_frame(mesh: Mesh, origin: MarkerOrigin, side: str, config: Config) -> dict:
    """A character's body frame (unit ``up``, ``forward``, ``left``): the one its automatic
    markers were found in, else its landmarks' now, else a guess from its up axis and box."""
    from ..handoff.review import guessed_frame
    from ..stages.markers import MarkerError, landmarks_of

    frame = origin.frames.get(side)
    if frame is None:
        try:
            frame = landmarks_of(mesh, side, config).frame
        except MarkerError:
            return guessed_frame(mesh)
    return {"up": frame.up, "forward": frame.forward, "left": frame.left}


def preview_characters(source: Rig, target: Mesh, markers, origin: MarkerOrigin, config: Config,
                       target_rig: Rig | None = None, frames: tuple | None = None) -> list:
    """What the preview draws (:func:`~asetransfer.io.preview.render_preview`): both characters
    in their body frames (``frames``: ``(source, target)``, else :func:`body_frame`) with the
    markers (coloured by confidence), the source's skeleton and, given ``target_rig``, the
    transferred one.  The source is drawn at the scale of the markers' similarity, so both
    characters share one scale."""
    from ..geometry.alignment import umeyama

    confidence = origin.confidences(markers.names)
    shown = []
    for k, (side, mesh, points) in enumerate((("source", source.mesh, markers.source),
                                              ("target", target, markers.target))):
        shown.append({"label": side, "mesh": mesh, "markers": points.positions(mesh.vertices, mesh.faces),
                      "frame": frames[k] if frames else body_frame(mesh, origin, side, config),
                      "names": list(markers.names), "confidence": confidence,
                      "low_confidence": list(origin.low_confidence)})
    if len(markers) >= 3:
        shown[0]["scale"] = umeyama(shown[0]["markers"], shown[1]["markers"]).scale
    for character, rig in zip(shown, (source, target_rig)):
        if rig is not None:
            character.update(joints=rig.skeleton.bind_world[:, :3, 3], parents=rig.skeleton.parents,
                             joint_names=list(rig.skeleton.names))
    return shown


def write_review(source: Rig, target: Mesh, result, report: TransferReport, config: Config, *, preview=None,
                 qa=None, title: str = "", source_path=None, inputs=()) -> None:
    """The preview picture (``preview``: a .png path) and the QA page (``qa``: a .html path)
    of a transfer, those asked for: the command line's and the Blender add-on's.

    Parameters
    ----------
    source : the source rig; target : the target mesh; result : the transfer's
    :class:`~asetransfer.stages.transfer.Result`; report : its report (with the run's
    warnings); config : the run's :class:`Config`; title : the first line of both;
    source_path : the source's file (its declared up axis and its glTF animation, shown as
    a test clip), None for a source that is no file; inputs : paths never written over.
    """
    from ..handoff.review import review_frames, review_transfer

    motion, up = (_source_motion(source_path), _declared_up(source_path)) if source_path else (None, None)
    review = review_transfer(source, result.rig, result.correspondence, report, motion)
    frames = review_frames(source, result.correspondence.alignment.rotation, report.marker_origin.frames, up)
    verdict = {"verdict": report.quality.verdict, "reasons": report.quality.reasons, "warnings": report.warnings}
    if preview:
        from ..io.preview import write_preview

        shown = preview_characters(source, target, result.markers, report.marker_origin, config, result.rig, frames)
        shown[1].update(joint_flags=review.joint_flags, regions=review.regions,
                        poses=review.posed(result.rig, ("arms raised", "front"), ("squat", "side")))
        write_preview(preview, shown, title=title, inputs=inputs, **verdict)
    if qa:
        from ..io.qa_page import write_qa_page

        write_qa_page(qa, result.rig, review, frames[1], result.markers, report.marker_origin, inputs,
                      title=title, fit_limit=config.quality.mapped_distance_pct / 100.0,
                      max_influences=config.weights.max_influences, **verdict)


def _source_motion(path):
    """The first animation clip of the source (a glTF animation, an FBX take), on its skeleton
    (:class:`~asetransfer.model.animation.Animation`), else None; one that cannot be read is left
    out with a warning (the rig is made by then)."""
    from ..io import has_clips, load_clips

    try:
        if not has_clips(path):
            return None
        _, clips, skipped = load_clips(path)
    except InputError as e:
        log.warning("the source's animation is left out of the QA outputs: %s", e)
        return None
    if not clips and skipped:
        log.warning("the source's animation is left out of the QA outputs: %s", skipped[0][1])
    return clips[0][1] if clips else None


def _declared_up(path) -> str | None:
    """The up axis a file declares (FBX, USD) or its format implies (glTF and VRM, MMD's PMX:
    +Y), else None."""
    from ..io import GLTF_EXTENSIONS, file_frame

    frame = file_frame(path)
    if frame is not None:
        return frame["up_axis"]
    return "+Y" if os.path.splitext(os.fspath(path))[1].lower() in (*GLTF_EXTENSIONS, ".pmx") else None
