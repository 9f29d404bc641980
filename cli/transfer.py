"""``asetransfer transfer SOURCE TARGET --markers M.json -o OUT.glb``: the main job."""
from __future__ import annotations

import argparse
import contextlib
import json
import logging
import math
import os
import sys
import time

from asetransfer.config import Config, CorrespondenceConfig, MarkersConfig, SkeletonConfig, WeightsConfig
from asetransfer.errors import InputError

from . import handoff
from .correspond import mesh_of
from .outputs import Output, check_outputs


def _plane(text):
    """``x``, ``y``, ``z`` or ``a,b,c,d`` as a plane with a unit normal (NaN, inf, a zero or
    denormal normal refused here, at parse time, before any work)."""
    axes = {"x": (1, 0, 0, 0), "y": (0, 1, 0, 0), "z": (0, 0, 1, 0)}
    if text.lower() in axes:
        return axes[text.lower()]
    try:
        vals = tuple(float(v) for v in text.split(","))
    except ValueError:
        vals = ()
    if len(vals) != 4 or not all(math.isfinite(v) for v in vals):
        raise ValueError(f"symmetry plane must be x, y, z or a,b,c,d with finite numbers (got {text!r})")
    norm = math.hypot(*vals[:3])
    if not sys.float_info.min <= norm < math.inf:  # zero, denormal (its square is 0) or overflowing
        raise ValueError(f"symmetry plane normal (a, b, c) must be a normal-sized non-zero vector (got {text!r})")
    unit = tuple(v / norm for v in vals)
    if not all(math.isfinite(v) for v in unit):
        raise ValueError(f"symmetry plane offset d is too large for its normal (got {text!r})")
    return vals if norm == 1.0 else unit


def add_parser(sub):
    p = sub.add_parser(
        "transfer", help="rig TARGET with SOURCE's skeleton and skin weights",
        description="Correspondence -> skeleton (positions, spine, mirroring, orientation, pose "
                    "normalisation) -> skin weights -> OUT.glb: the target mesh as given, skinned.")
    p.add_argument("source", help="rigged source (.glb .gltf .fbx)")
    p.add_argument("target", help="target mesh (.obj .ply .off .stl .glb .gltf .fbx)")
    p.add_argument("--markers", help="marker file (JSON) linking source and target points; without it (or with "
                                     "few markers) markers are found automatically (humanoids)")
    p.add_argument("-o", "--output", required=True,
                   help="output rig: .glb or .gltf, or UsdSkel .usda .usdc .usdz (needs asetransfer[usd])")
    p.add_argument("--report", help="write a JSON report (timings, residuals, fallbacks, warnings)")
    p.add_argument("--preview", metavar="PNG", help="also draw both characters with the markers and the "
                                                    "transferred skeleton (front and side views)")
    add_options(p)
    handoff.add_arguments(p)  # --calibration, --tpose (retargeting hand-off)
    p.set_defaults(run=run)


def add_options(p):
    """The transfer's options (``asetransfer transfer`` and ``batch``); :func:`config_of` reads them."""
    sk, wc, mc = SkeletonConfig(), WeightsConfig(), MarkersConfig()  # every default is the library's (Config)
    p.add_argument("--auto-markers", choices=("auto", "on", "off"), default=mc.automatic,
                   help=f"auto: find markers when none are given and complete fewer than {mc.complete_below} "
                        "hand markers; on: always add automatic markers; off: hand markers only "
                        "(default %(default)s)")
    p.add_argument("--joints", choices=("em", "pa"), default=sk.joints,
                   help="joint placement: energy minimisation (Eq. 3.1) or Procrustes (default %(default)s)")
    p.add_argument("--em-rays", type=_count_arg(sk.em_rays_max), default=sk.em_rays, metavar="N",
                   help="em: also fit each joint to the surface hit by N rays cast from it; joints with no "
                        "weighted vertex are placed from these alone (default %(default)s, at most "
                        f"{sk.em_rays_max}; 0 = skin weights only)")
    p.add_argument("--em-ray-share", type=_fraction_arg, default=sk.em_ray_share, metavar="S",
                   help="em: share (0-1) of the ray hits in the fit of joints that have weights "
                        "(default %(default)s)")
    p.add_argument("--spine", choices=("em", "pa", "off"), default=sk.spine,
                   help="spine alignment (default %(default)s)")
    p.add_argument("--mirror", choices=("auto", "on", "off"), default=sk.mirror,
                   help="mirror L/R joints (auto: when the target is symmetric; default %(default)s)")
    p.add_argument("--symmetry-plane", type=_plane_arg, default=sk.symmetry_plane,
                   help="x, y, z or a,b,c,d (a x + b y + c z = d)")
    p.add_argument("--pose-normalize", dest="pose_normalize", action="store_true", default=sk.pose_normalize,
                   help="rest pose (glTF node transforms) = the source's limb directions (spec §3.3)"
                        + (" (default)" if sk.pose_normalize else ""))
    p.add_argument("--no-pose-normalize", dest="pose_normalize", action="store_false",
                   help="rest pose = bind pose, the target as modelled" + ("" if sk.pose_normalize else " (default)"))
    p.add_argument("--max-influences", type=int, choices=(4, 8), default=wc.max_influences,
                   help="joints per vertex (default %(default)s)")
    p.add_argument("--weights", choices=("auto", "interp", "robust"), default=wc.method,
                   help="interp: source weights interpolated at each vertex's source point; "
                        "robust: keep them only where the match is close and the normals agree, "
                        "inpaint the rest (targets with props, clothing, extra parts); auto: robust for a "
                        "target in several pieces, interp for one; default %(default)s")


def config_of(args) -> Config:
    """The :class:`Config` of the options added by :func:`add_options`."""
    return Config(CorrespondenceConfig(),
                  SkeletonConfig(joints=args.joints, em_rays=args.em_rays, em_ray_share=args.em_ray_share,
                                 spine=args.spine, mirror=args.mirror,
                                 symmetry_plane=args.symmetry_plane, pose_normalize=args.pose_normalize),
                  WeightsConfig(method=args.weights, max_influences=args.max_influences),
                  MarkersConfig(automatic=args.auto_markers))


def _count_arg(maximum: int):
    """argparse type: a whole number from 0 to ``maximum``."""
    def count(text):
        if not (text.isascii() and text.isdigit()) or int(text) > maximum:
            raise argparse.ArgumentTypeError(f"expected a whole number from 0 to {maximum}, got {text!r}")
        return int(text)
    return count


def _fraction_arg(text):
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number from 0 to 1, got {text!r}")
    return value


def _plane_arg(text):
    try:
        return _plane(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


class _Progress:
    """Stage names on stderr once a run has taken more than a second -- at a terminal only:
    a script reading stderr gets the one-line messages and nothing else."""

    def __init__(self, quiet):
        self.quiet, self.t0 = quiet or not sys.stderr.isatty(), time.perf_counter()

    def __call__(self, stage):
        if not self.quiet and time.perf_counter() - self.t0 > 1.0:
            print(f"asetransfer: {stage} ...", file=sys.stderr, flush=True)


def _usd_frame(target_path, rig) -> dict:
    """USD stage metadata of the rigged target: the units and up axis its file declares (FBX,
    USD), else guesses: the up axis from the skeleton, the unit from the body height."""
    from asetransfer.io import file_frame

    frame = file_frame(target_path)
    if frame is not None:
        return frame
    from asetransfer.handoff.calibration import guess_units
    from asetransfer.humanoid.body import guess_up_axis

    up, _ = guess_up_axis(rig.mesh, rig)
    lo, hi = rig.mesh.bounds()
    height = float(hi["XYZ".index(up[1])] - lo["XYZ".index(up[1])])
    return {"metres_per_unit": guess_units(height)["metres_per_unit"] or 1.0, "up_axis": up}


@contextlib.contextmanager
def _collected_warnings():
    """The ``asetransfer`` log's warnings during the block, as one-line strings (shown on stderr as usual)."""
    messages = []

    class Collect(logging.Handler):
        def emit(self, record):
            messages.append(" ".join(record.getMessage().split()))

    handler, log = Collect(logging.WARNING), logging.getLogger("asetransfer")
    log.addHandler(handler)
    try:
        yield messages
    finally:
        log.removeHandler(handler)


def _check_plane(args, target) -> None:
    """Refuse a --symmetry-plane that does not cut the target's body (before any work)."""
    from asetransfer.config import QualityConfig
    from asetransfer.stages.quality import plane_offset

    if args.symmetry_plane is None or args.mirror == "off":
        return
    offset, limit = plane_offset(args.symmetry_plane, target), QualityConfig().plane_offset_refuse
    if offset > limit:
        raise InputError(args.target, f"--symmetry-plane lies {offset:.3g} heights from the target's centre "
                                      f"(more than {limit:.3g}): it does not cut the body, and mirroring about it "
                                      "would put joints off the body; give the plane in the target's frame and units")


def outputs_of(args) -> list:
    """Every file ``transfer`` will write (the rig, the report, the hand-off files)."""
    from asetransfer.io import RIG_OUTPUT_EXTENSIONS  # imported on use: --help loads no numpy

    outs = [Output(args.output, "-o", RIG_OUTPUT_EXTENSIONS)]
    if args.report:
        outs.append(Output(args.report, "--report", (".json",)))
    if args.preview:
        outs.append(Output(args.preview, "--preview", (".png",)))
    return outs + handoff.outputs_to_check(args)


def run(args) -> int:
    inputs = tuple(p for p in (args.source, args.target, args.markers) if p)
    check_outputs(outputs_of(args), inputs + (args.calibration,))
    with _collected_warnings() as warnings:  # every warning of the run also goes into the report
        return _run(args, inputs, warnings)


def _run(args, inputs, warnings: list) -> int:
    from asetransfer.geometry.linsolve import NumericalError
    from asetransfer.io import USD_EXTENSIONS, load_markers, load_rig, save_rig
    from asetransfer.io.atomic import atomic_write
    from asetransfer.stages.markers import MarkerError
    from asetransfer.stages.transfer import transfer

    usd = os.path.splitext(args.output)[1].lower() in USD_EXTENSIONS
    if usd:  # before the work: a missing usd-core is one line, not a lost run
        from asetransfer.io.usd import require_usd

        require_usd(args.output)
    source = load_rig(args.source)
    target = mesh_of(args.target)
    few = 1 if args.auto_markers != "off" else 3  # automatic markers complete a few hand ones
    markers = load_markers(args.markers, source.mesh, target, minimum=few) if args.markers else None
    _check_plane(args, target)
    plan = handoff.prepare(args, source)
    config = config_of(args)
    quiet = getattr(args, "quiet", False)
    try:
        result = transfer(source, target, markers, config, progress=_Progress(quiet))
    except NumericalError as e:
        raise InputError(args.markers or args.target, f"transfer failed: {e}") from None
    except MarkerError as e:
        raise InputError({"source": args.source, "markers": args.markers}.get(e.side, args.target), str(e)) from None
    result.report["warnings"] = list(warnings)
    save_rig(args.output, result.rig, max_influences=config.weights.max_influences, inputs=inputs,
             **(_usd_frame(args.target, result.rig) if usd else {}))
    handoff.write(args, plan, source, result, inputs)
    if args.report:
        atomic_write(args.report, (json.dumps(result.report, indent=1) + "\n").encode(), inputs + (args.output,))
    if args.preview:
        from asetransfer.io.preview import write_preview

        from .preview import characters

        shown = characters(source, target, result.markers, result.report["marker_origin"], config, result.rig)
        write_preview(args.preview, shown, title=f"{args.source}  ->  {args.target}",
                      inputs=inputs + (args.output,))
    if not quiet:
        r = result.report
        print(f"{args.output}: {r['joints']} joints, {r['target_vertices']} vertices, "
              f"{r['weights']['max_influences']} max influences, {r['timings']['total']:.2f} s")
    return 0
