"""``asetransfer transfer SOURCE TARGET --markers M.json -o OUT.glb``: the main job."""
from __future__ import annotations

import argparse
import math
import sys
import time

from asetransfer.config import (MAX_INFLUENCES, Config, CorrespondenceConfig, MarkersConfig, ShapesConfig,
                                SkeletonConfig, WeightsConfig)


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
    p.add_argument("source", help="rigged source (.glb .gltf .vrm .fbx .dae .pmx .usd*)")
    p.add_argument("target", help="target mesh (.obj .ply .off .stl .glb .gltf .vrm .fbx .dae .pmx .usd*)")
    p.add_argument("--markers", help="marker file (JSON) linking source and target points; without it (or with "
                                     "few markers) markers are found automatically (landmarks on two-legged "
                                     "bodies, the source's skin fitted onto the target on others)")
    p.add_argument("-o", "--output", required=True,
                   help="output rig: .glb or .gltf, .fbx (binary FBX 7.4), or UsdSkel .usda .usdc .usdz (needs "
                        "asetransfer[usd])")
    p.add_argument("--report", help="write a JSON report (timings, residuals, fallbacks, warnings)")
    p.add_argument("--preview", metavar="PNG",
                   help="also draw a picture to check the rig: both characters front and side at one scale, the "
                        "target in test poses, close-ups of its hands and feet, the verdict (needs matplotlib: "
                        "pip install 'asetransfer[preview]')")
    p.add_argument("--qa", metavar="PAGE.html",
                   help="also write a web page to check the rig in a browser (one file, opens offline): orbit, "
                        "skeleton, weights of a clicked joint, fit map, markers, test poses, the verdict")
    add_options(p)
    p.set_defaults(run=run)


def add_options(p):
    """The transfer's options (``asetransfer transfer`` and ``batch``); :func:`options_of` reads them."""
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
    p.add_argument("--max-influences", type=_count_arg(MAX_INFLUENCES, minimum=1), default=wc.max_influences, metavar="N",
                   help=f"joints per vertex, 1 to {MAX_INFLUENCES} (default: the source's own maximum, 4 when it uses "
                        "at most 4; up to 4 is one glTF JOINTS_0/WEIGHTS_0 set, more a second)")
    p.add_argument("--weights", choices=("auto", "interp", "robust"), default=wc.method,
                   help="interp: source weights interpolated at each vertex's source point; "
                        "robust: keep them only where the match is close and the normals agree, "
                        "inpaint the rest (targets with props, clothing, extra parts); auto: robust for a "
                        "target in several pieces, interp for one; default %(default)s")
    p.add_argument("--calibration", metavar="CAL.json",
                   help="the source's calibration (asetransfer calibrate-source); also write "
                        "OUT.calibration.json, the same calibration carried to the target")
    p.add_argument("--blendshapes", choices=("auto", "off"), default=ShapesConfig().mode,
                   help="auto: carry the source's morph targets (blend shapes) onto the target under the same "
                        "names, after the target's own (a name the target has keeps the target's); off: do not "
                        "(default %(default)s)")
    p.add_argument("--clips", choices=("auto", "off"), default="auto",
                   help="auto: the source's animation clips (glTF animations, FBX takes) retargeted onto the target and written into a "
                        "glTF output under their names; off: none (default %(default)s)")
    p.add_argument("--tpose", action="store_true",
                   help="also write the target in a canonical T-pose: OUT.tpose.bvh (its skeleton, one frame) "
                        "and OUT.tpose.glb, and OUT.calibration.json (units, T-pose checks; without --calibration "
                        "from the calibration asetransfer proposes for the source)")


def options_of(args):
    """The :class:`~asetransfer.job.JobOptions` of the options added by :func:`add_options`."""
    from asetransfer.job import JobOptions

    return JobOptions(config_of(args), calibration=args.calibration, tpose=args.tpose, clips=args.clips)


def config_of(args) -> Config:
    """The :class:`Config` of the options added by :func:`add_options`."""
    return Config(CorrespondenceConfig(),
                  SkeletonConfig(joints=args.joints, em_rays=args.em_rays, em_ray_share=args.em_ray_share,
                                 spine=args.spine, mirror=args.mirror,
                                 symmetry_plane=args.symmetry_plane, pose_normalize=args.pose_normalize),
                  WeightsConfig(method=args.weights, max_influences=args.max_influences),
                  MarkersConfig(automatic=args.auto_markers), shapes=ShapesConfig(mode=args.blendshapes))


def _count_arg(maximum: int, minimum: int = 0):
    """argparse type: a whole number from ``minimum`` to ``maximum``."""
    def count(text):
        if not (text.isascii() and text.isdigit()) or not minimum <= int(text) <= maximum:
            raise argparse.ArgumentTypeError(f"expected a whole number from {minimum} to {maximum}, got {text!r}")
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


def run(args) -> int:
    from asetransfer.job import transfer_files

    done = transfer_files(args.source, args.target, args.output, args.markers, options=options_of(args),
                          report=args.report, preview=args.preview, qa=args.qa,
                          progress=_Progress(getattr(args, "quiet", False)))
    if not getattr(args, "quiet", False):
        r = done.report
        print(f"{args.output}: {r.joints} joints, {r.target_vertices} vertices, "
              f"{r.weights.max_influences} max influences, {r.timings.total:.2f} s")
    return 0
