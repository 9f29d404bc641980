"""One transfer, files in and files out: the job that ``asetransfer transfer``, a batch and
the Blender add-on all run, so that every option means the same everywhere.

:func:`transfer_files` reads the source, the target and the markers, checks every
option and every output before any work, runs :func:`~asetransfer.stages.transfer.transfer`,
and writes the rig (in the format its extension names), the report, the preview and
the retargeting hand-off as one transaction: a failure leaves none of them.  Library
errors become :class:`~asetransfer.errors.InputError` naming the input at fault here
and nowhere else (:func:`named_errors`).

Like ``batch``, this module sits at the top of the library and may import ``io``
(docs/architecture.md).
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
from dataclasses import dataclass, field, replace

import numpy as np

from ..config import Config
from ..errors import InputError
from ..model.mesh import Mesh
from ..model.report import InputsRecord, TransferReport
from ..model.rig import Rig
from .review import body_frame, preview_characters, write_review  # noqa: F401 -- the preview and QA page

log = logging.getLogger("asetransfer")


@dataclass(frozen=True)
class JobOptions:
    """Every option of a transfer of files, with one meaning wherever it is given.

    config : the transfer's parameters (:class:`~asetransfer.config.Config`).
    calibration : the source's calibration file (``asetransfer calibrate-source``), carried
        to the target as ``OUT.calibration.json``; None: none.
    tpose : also write the target in a canonical T-pose (``OUT.tpose.bvh``, ``OUT.tpose.glb``)
        and its calibration.
    clips : ``"auto"``: the source's animations (glTF), retargeted onto the target, go into a
        glTF output under their names; ``"off"``: none.
    """

    config: Config = field(default_factory=Config)
    calibration: str | None = None
    tpose: bool = False
    clips: str = "auto"


@dataclass(frozen=True)
class OutputPaths:
    """Every file one transfer writes.  The hand-off files sit beside the rig:
    ``OUT.calibration.json``, ``OUT.tpose.bvh``, ``OUT.tpose.glb`` (``.gltf`` beside a ``.gltf``)."""

    rig: str
    report: str | None = None
    preview: str | None = None
    calibration: str | None = None
    tpose_bvh: str | None = None
    tpose_rig: str | None = None
    qa: str | None = None

    @classmethod
    def plan(cls, rig, options: JobOptions, report=None, preview=None, qa=None) -> "OutputPaths":
        """The outputs of a transfer writing its rig to ``rig``."""
        rig = os.fspath(rig)
        stem, ext = os.path.splitext(rig)
        handoff = options.calibration is not None or options.tpose  # the T-pose's units live in the calibration
        return cls(rig, None if report is None else os.fspath(report), None if preview is None else os.fspath(preview),
                   stem + ".calibration.json" if handoff else None,
                   stem + ".tpose.bvh" if options.tpose else None,
                   stem + ".tpose" + (ext if ext.lower() in (".glb", ".gltf") else ".glb") if options.tpose else None,
                   None if qa is None else os.fspath(qa))

    def checked(self) -> list:
        """The outputs as :class:`~asetransfer.io.outputs.Output`, named by the options that ask for them."""
        from ..io import RIG_OUTPUT_EXTENSIONS
        from ..io.outputs import Output

        named = (("rig", "-o", RIG_OUTPUT_EXTENSIONS), ("report", "--report", (".json",)),
                 ("preview", "--preview", (".png",)),
                 ("calibration", "the calibration written next to -o", (".json",)),
                 ("tpose_bvh", "the T-pose BVH written next to -o", (".bvh",)),
                 ("tpose_rig", "the T-pose rig written next to -o", (".glb", ".gltf")),
                 ("qa", "--qa", (".html",)))
        return [Output(getattr(self, key), option, exts) for key, option, exts in named if getattr(self, key)]


@dataclass(eq=False)
class SourceFile:
    """A rigged source read once: its path, the SHA-256 of its bytes and its :class:`Rig`."""

    path: str
    digest: str
    rig: Rig


_SOURCES: dict = {}   # per process: (path, digest) -> SourceFile, so a batch worker reads its source once


def file_digest(path) -> str:
    """SHA-256 of a file's bytes (hex); InputError when it cannot be read or is empty."""
    from ..io.files import read_bytes

    return hashlib.sha256(read_bytes(path)).hexdigest()


def load_source(path, digest: str | None = None) -> SourceFile:
    """The rigged source at ``path``, read once per process (kept by path and content hash).

    Raises InputError for an unreadable source, or when its content no longer has
    ``digest`` (the file changed while a batch ran).
    """
    from ..io import load_rig

    path = os.fspath(path)
    actual = file_digest(path)
    if digest is not None and actual != digest:
        raise InputError(path, "the source changed while the batch was running")
    key = (os.path.abspath(path), actual)
    if key not in _SOURCES:
        rig = load_rig(path)
        _warn_separate_characters(path, rig)
        remember_source(SourceFile(path, actual, rig))  # one source at a time per process
    return _SOURCES[key]


#: a joint tree moving at least this share of a source's vertices is read as a character of its own
CHARACTER_SHARE = 0.2


def _warn_separate_characters(path, rig: Rig) -> None:
    """Warn when a source file holds several characters: two or more joint trees (roots) that
    each move :data:`CHARACTER_SHARE` or more of the vertices (by their largest weight), no
    mesh part moved by two of them.  The transfer would put every skeleton into the one
    target (a scene exported whole); a prop skeleton or a cape's moving less is no character."""
    sk = rig.skeleton
    roots = sk.roots()
    if len(roots) < 2:
        return
    tree = np.zeros(sk.n_joints, dtype=np.int64)
    for k, r in enumerate(roots):
        tree[[r, *sk.hierarchy.descendants(r).tolist()]] = k
    owner = tree[rig.skin.indices[:, 0]]
    shares = np.bincount(owner, minlength=len(roots)) / max(len(owner), 1)
    big = np.flatnonzero(shares >= CHARACTER_SHARE)
    if len(big) < 2:
        return
    for part in range(len(rig.mesh.parts)):
        if len(set(owner[rig.mesh.vertex_part == part].tolist()) & set(big.tolist())) > 1:
            return  # one body moved by both: not two characters
    names = ", ".join(repr(sk.names[roots[k]]) for k in big)
    log.warning("%s: holds %d skeletons that each move their own part of the mesh (roots %s): %d characters "
                "in one file? The rig will carry all of them; keep one character in the source", path, len(big),
                names, len(big))


def remember_source(source: SourceFile) -> None:
    """Make ``source`` the one :func:`load_source` returns for its path and content (a
    batch worker given its prepared source)."""
    _SOURCES.clear()
    _SOURCES[(os.path.abspath(source.path), source.digest)] = source


def load_target(path) -> Mesh:
    """The mesh of a target file (a rigged file's own skin is replaced by the transfer); its
    own blend shapes ride in its look where the format's look holds them, the others are
    named in a warning."""
    from ..io import load_character

    item = load_character(path)
    if not isinstance(item, Rig):
        return item
    look = item.mesh.look
    kept = set(look.morph_target_names()) if look is not None else set()
    dropped = [shape.name for shape in item.shapes if shape.name not in kept]
    if dropped:
        log.warning("%s: the target's own blend shape(s) %s are not carried (the output holds the source's "
                    "carried shapes only)", path, ", ".join(repr(n) for n in dropped))
    return item.mesh


def minimum_markers(config: Config) -> int:
    """How many hand markers a marker file must hold: 1 when automatic markers may complete
    them, else 3 (the fewest that fix the alignment)."""
    return 1 if config.markers.automatic != "off" else 3


@contextlib.contextmanager
def named_errors(source, target, markers=None):
    """Within the block, the library's errors about inputs become one-line InputErrors
    naming the input at fault: ``source``, ``target`` or ``markers`` (file paths, or the
    names of Blender objects)."""
    from ..geometry.linsolve import NumericalError
    from ..stages.markers import MarkerError

    try:
        yield
    except NumericalError as e:
        raise InputError(markers or target, f"transfer failed: {e}") from None
    except MarkerError as e:  # automatic markers found no body layout
        raise InputError({"source": source, "markers": markers}.get(e.side, target), str(e)) from None


@contextlib.contextmanager
def collected_warnings():
    """The ``asetransfer`` log's warnings during the block, as one-line strings (they still
    reach the log's own handlers)."""
    messages = []

    class Collect(logging.Handler):
        def emit(self, record):
            messages.append(" ".join(record.getMessage().split()))

    handler = Collect(logging.WARNING)
    log.addHandler(handler)
    try:
        yield messages
    finally:
        log.removeHandler(handler)


@contextlib.contextmanager
def warnings_said_once():
    """Within the block, a warning the ``asetransfer`` log has said is not said again: a file
    read twice (a source, then for its animation clips) warns once, on stderr and in the
    report."""
    said = set()

    class Once(logging.Filter):
        def filter(self, record):
            if record.levelno != logging.WARNING:
                return True
            message = record.getMessage()
            if message in said:
                return False
            said.add(message)
            return True

    once = Once()
    log.addFilter(once)
    try:
        yield
    finally:
        log.removeFilter(once)


def check_symmetry_plane(config: Config, target: Mesh, target_path) -> None:
    """Refuse a given symmetry plane that does not cut the target's body (before any work):
    mirroring about it would put joints off the body."""
    from ..stages.quality import plane_offset

    plane = config.skeleton.symmetry_plane
    if plane is None or config.skeleton.mirror == "off":
        return
    offset, limit = plane_offset(plane, target), config.quality.plane_offset_refuse
    if offset > limit:
        raise InputError(target_path, f"--symmetry-plane lies {offset:.3g} heights from the target's centre "
                                      f"(more than {limit:.3g}): it does not cut the body, and mirroring about it "
                                      "would put joints off the body; give the plane in the target's frame and units")


def rig_frame(target_path, rig: Rig) -> dict:
    """The units and up axis to declare in a USD or FBX rig: those the target's file declares (FBX,
    USD), else guesses: the up axis from the skeleton, the unit from the body height."""
    from ..handoff.calibration import guess_units
    from ..humanoid.body import guess_up_axis
    from ..io import file_frame

    frame = file_frame(target_path)
    if frame is not None:
        return frame
    up, _ = guess_up_axis(rig.mesh, rig)
    lo, hi = rig.mesh.bounds()
    height = float(hi["XYZ".index(up[1])] - lo["XYZ".index(up[1])])
    return {"metres_per_unit": guess_units(height)["metres_per_unit"] or 1.0, "up_axis": up}


@dataclass(eq=False)
class FilesResult:
    """What :func:`transfer_files` did: the transfer's :class:`~asetransfer.stages.transfer.Result`,
    its report as written (with the run's warnings, the inputs record and the rig's digest),
    and the paths of every file written."""

    result: object
    report: TransferReport
    outputs: OutputPaths


def transfer_files(source, target, output, markers=None, *, options: JobOptions | None = None, report=None,
                   preview=None, qa=None, record: InputsRecord | None = None, progress=None) -> FilesResult:
    """Rig the target file with the source file and write the rigged target.

    Parameters
    ----------
    source : path of the rigged source (.glb .gltf .vrm .fbx .dae .pmx .usd*), or a :class:`SourceFile`.
    target : path of the target (.obj .ply .off .stl .glb .gltf .vrm .fbx .dae .pmx .usd*).
    output : the rig to write; its extension chooses the format (``io.RIG_OUTPUT_EXTENSIONS``).
    markers : path of a marker file, or None (automatic markers, humanoids).
    options : :class:`JobOptions` (the transfer's Config and the hand-off).
    report, preview, qa : paths of the JSON report, the PNG preview and the HTML QA page to
        write, or None.
    record : what the output depends on (a batch's content hashes), stored in the report's ``inputs``.
    progress : optional callable ``progress(stage_name)``.

    Every output is checked before any work (extension, directory, never an input) and all
    are written as one transaction.  Raises InputError for anything wrong with an input.
    """
    with warnings_said_once():
        return _transfer_files(source, target, output, markers, options=options, report=report, preview=preview,
                               qa=qa, record=record, progress=progress)


def _transfer_files(source, target, output, markers, *, options, report, preview, qa, record, progress) -> FilesResult:
    """:func:`transfer_files`, its warnings said once."""
    from ..io.atomic import transaction
    from ..stages.transfer import transfer

    options = options or JobOptions()
    config = options.config
    source_path = source.path if isinstance(source, SourceFile) else os.fspath(source)
    target, markers = os.fspath(target), None if markers is None else os.fspath(markers)
    inputs = tuple(p for p in (source_path, target, markers, options.calibration) if p)
    outputs = OutputPaths.plan(output, options, report, preview, qa)
    _check_before_work(outputs, inputs)
    source = source if isinstance(source, SourceFile) else load_source(source_path)
    target_mesh = load_target(target)
    _check_vrm_output(outputs.rig, target_mesh, target)
    hand = read_hand_markers(markers, source.rig, target_mesh, config)
    check_symmetry_plane(config, target_mesh, target)
    handoff = _prepare_handoff(options, source)
    with collected_warnings() as warnings, named_errors(source_path, target, markers):
        result = transfer(source.rig, target_mesh, hand, config, progress=progress)
    written = replace(result.report, warnings=list(warnings), inputs=record)
    with transaction():
        with collected_warnings() as writer_warnings:  # what the output format cannot carry
            _write_rig(outputs.rig, result.rig, target, config, inputs, _clips(options, source, result.rig, output))
        written.warnings += writer_warnings
        written.output_sha256 = _written_digest(outputs.rig)
        _write_handoff(outputs, handoff, options, source, result, inputs + (outputs.rig,))
        if outputs.report:
            _write_json(outputs.report, written.to_json(), inputs + (outputs.rig,))
        if outputs.preview or outputs.qa:
            write_review(source.rig, target_mesh, result, written, config, preview=outputs.preview, qa=outputs.qa,
                         title=f"{source_path}  ->  {target}", source_path=source.path, inputs=inputs + (outputs.rig,))
    return FilesResult(result, written, outputs)


def _check_before_work(outputs: OutputPaths, inputs: tuple) -> None:
    """Every output writable and no input overwritten; the optional packages the outputs
    need installed (a missing one is one line, not a lost run)."""
    from ..io import USD_EXTENSIONS
    from ..io.outputs import check_outputs

    check_outputs(outputs.checked(), inputs)
    if os.path.splitext(outputs.rig)[1].lower() in USD_EXTENSIONS:
        from ..io.usd import require_usd

        require_usd(outputs.rig)
    if outputs.preview:
        from ..io.preview import require_preview

        require_preview(outputs.preview)


def _check_vrm_output(output, target: Mesh, target_path) -> None:
    """InputError, before any work, for a .vrm output over a target that is no VRM (a .vrm
    holds its avatar's humanoid and metadata, which only a VRM target has)."""
    from ..io.vrm import is_vrm

    if os.path.splitext(output)[1].lower() == ".vrm" and (target.look is None or not is_vrm(target.look.document)):
        raise InputError(output, f"a .vrm is written over a VRM target (its humanoid, metadata and materials); "
                                 f"{os.path.basename(os.fspath(target_path))} is no VRM: write .glb")


def read_hand_markers(path, source: Rig, target: Mesh, config: Config):
    """The hand markers of the file ``path`` resolved on both meshes (at least
    :func:`minimum_markers`), or None without a file."""
    from ..io import load_markers

    if path is None:
        return None
    return load_markers(path, source.mesh, target, minimum=minimum_markers(config), config=config)


def _clips(options: JobOptions, source: SourceFile, rig: Rig, output) -> list:
    """``(name, Animation)`` of the source's animation clips (glTF animations, FBX takes)
    retargeted onto ``rig``, for a glTF output with ``options.clips`` "auto"; a clip that cannot
    be read, or clips an output of another format cannot hold, are named in a warning."""
    from ..io import has_clips, load_clips

    if options.clips == "off" or not has_clips(source.path):
        return []
    from ..handoff.retarget import retarget
    from ..io import GLTF_EXTENSIONS

    if os.path.splitext(os.fspath(output))[1].lower() not in GLTF_EXTENSIONS:
        log.warning("the source's animation clips are not written to %s (glTF outputs hold them; or "
                    "retarget-motion)", os.path.basename(os.fspath(output)))
        return []
    from ..io.assembly import unique_names

    animated, clips, skipped = load_clips(source.path)
    for name, reason in skipped:
        log.warning("the source's animation %r is left out: %s", name, reason)
    # an engine asked for a clip by name plays the first of that name: each clip keeps one
    names = unique_names([name for name, _ in clips])
    for (name, _), new in zip(clips, names):
        if new != name:
            log.warning("the source has more than one animation named %r: one is written as %r", name, new)
    return [(new, retarget(clip, animated, rig)[0]) for new, (_, clip) in zip(names, clips)]


def _write_rig(path, rig: Rig, target_path, config: Config, inputs, clips=()) -> None:
    from ..io import GLTF_EXTENSIONS, USD_EXTENSIONS, save_rig

    ext = os.path.splitext(path)[1].lower()
    frame = rig_frame(target_path, rig) if ext in (*USD_EXTENSIONS, ".fbx") else {}  # units and axes it declares
    if ext == ".fbx" and os.path.splitext(os.fspath(target_path))[1].lower() == ".fbx":
        from ..io.fbx_scene import fbx_axis_system

        frame["fbx_axes"] = fbx_axis_system(target_path)  # an FBX target's whole axis system
    if clips:  # glTF outputs only (_clips)
        frame["clips"] = clips
    if rig.mesh.look is not None and ext in GLTF_EXTENSIONS:  # over a VRM its humanoid names them
        rig = _with_humanoid_bones(rig)
    save_rig(path, rig, max_influences=config.weights.max_influences, inputs=inputs, look=rig.mesh.look, **frame)


def _with_humanoid_bones(rig: Rig) -> Rig:
    """``rig`` whose skeleton declares its humanoid bones (:func:`~asetransfer.humanoid.bones.humanoid_bones`)."""
    from ..humanoid.bones import humanoid_bones
    from ..humanoid.skeleton_map import propose_skeleton_map

    bones = humanoid_bones(rig.skeleton, propose_skeleton_map(rig.skeleton)[0])
    return replace(rig, skeleton=rig.skeleton.copy(humanoid_bones=bones))


def _written_digest(path) -> str:
    """SHA-256 of the bytes just written to ``path`` (still staged in the transaction)."""
    from ..io.atomic import written_path

    return file_digest(written_path(path))


def _write_json(path, data: dict, inputs) -> None:
    from ..io.atomic import atomic_write

    atomic_write(path, (json.dumps(data, indent=1) + "\n").encode(), inputs)


@dataclass
class _Handoff:
    """The hand-off to retargeting, read before the transfer: the source's calibration and
    the skeleton map the T-pose needs (None: not asked for)."""

    calibration: object = None
    mapping: dict | None = None


def _prepare_handoff(options: JobOptions, source: SourceFile) -> _Handoff:
    """Read and check the source's calibration, or propose one when only ``tpose`` is asked."""
    if options.calibration is None and not options.tpose:
        return _Handoff()
    from ..handoff.calibration import propose_calibration
    from ..humanoid.skeleton_map import propose_skeleton_map
    from ..io.calibration import read_calibration

    if options.calibration is not None:
        calibration = read_calibration(options.calibration, source.rig)
        return _Handoff(calibration, calibration.skeleton_map)
    mapping, missing = propose_skeleton_map(source.rig.skeleton)
    if missing:
        raise InputError(source.path, "--tpose needs a humanoid skeleton map, but the role(s) " + ", ".join(missing)
                         + " cannot be found from the joint names; give one with --calibration CAL.json")
    try:  # the proposed calibration carries the units of OUT.tpose.bvh and the T-pose checks
        return _Handoff(propose_calibration(source.rig, os.path.basename(source.path), mapping), mapping)
    except ValueError as e:
        raise InputError(source.path, f"--tpose: {e}") from None


def _write_handoff(outputs: OutputPaths, handoff: _Handoff, options: JobOptions, source: SourceFile, result,
                   inputs) -> None:
    """``OUT.tpose.bvh`` and ``OUT.tpose.glb`` (the target in a canonical T-pose) and
    ``OUT.calibration.json`` (the source's calibration carried to the target)."""
    from ..handoff.calibration import transfer_calibration
    from ..handoff.motion import animation_to_bvh
    from ..humanoid.tpose import tpose, tpose_rig
    from ..io import save_rig
    from ..io.bvh import write_bvh
    from ..io.calibration import write_calibration
    from ..model.animation import Animation

    if outputs.calibration is None:
        return
    tpose_files = None
    if outputs.tpose_bvh:
        posed = tpose_rig(result.rig, tpose(result.rig.skeleton, handoff.mapping)[0])
        write_bvh(outputs.tpose_bvh, animation_to_bvh(posed.skeleton, Animation.rest(posed.skeleton)), inputs)
        save_rig(outputs.tpose_rig, posed, max_influences=options.config.weights.max_influences, inputs=inputs)
        tpose_files = {"bvh": os.path.basename(outputs.tpose_bvh), "glb": os.path.basename(outputs.tpose_rig)}
    try:
        calibration = transfer_calibration(handoff.calibration, source.rig, result.rig, result.correspondence,
                                           file=outputs.rig, source_file=source.path)
    except ValueError as e:
        raise InputError(options.calibration, str(e)) from None
    if tpose_files:
        calibration.tpose.update(tpose_files)
    write_calibration(outputs.calibration, calibration, inputs)
