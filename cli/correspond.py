"""``asetransfer correspond SOURCE TARGET --markers M.json -o MAP.npz``."""
from __future__ import annotations

import json
import os

from asetransfer.config import CorrespondenceConfig
from asetransfer.errors import InputError



def add_parser(sub):
    p = sub.add_parser(
        "correspond", help="dense source <-> target correspondence maps",
        description="Align, fair and register SOURCE onto TARGET guided by linked markers (spec Appendix I) "
                    "and write both vertex -> (triangle, barycentric) maps as .npz arrays: src_to_tgt_face, "
                    "src_to_tgt_bary, tgt_to_src_face, tgt_to_src_bary, src_faces, tgt_faces.")
    p.add_argument("source", help="source rig (.glb .gltf .vrm .fbx .dae .pmx .usd*) or mesh")
    p.add_argument("target", help="target mesh (.obj .ply .off .stl .glb .gltf)")
    p.add_argument("--markers", required=True, help="marker file (JSON) linking source and target points")
    p.add_argument("-o", "--output", required=True, help="output .npz")
    p.add_argument("--debug-dir", help="also write faired_source.ply, faired_target.ply and "
                                       "registered_source.ply here (target frame)")
    p.add_argument("--symmetric", action="store_true", default=CorrespondenceConfig().symmetric,
                   help="symmetric filter for L/R symmetric characters (needs .L/.R marker pairs)")
    p.add_argument("--json", action="store_true", help="print the fit statistics as JSON")
    p.set_defaults(run=run)


DEBUG_MESHES = ("faired_source", "faired_target", "registered_source")


def debug_paths(debug_dir) -> dict:
    """``{name: path}`` of the debug meshes written into ``debug_dir`` (empty without one)."""
    return {name: os.path.join(debug_dir, name + ".ply") for name in DEBUG_MESHES} if debug_dir else {}


def run(args) -> int:
    from asetransfer.io.outputs import Output, check_outputs
    from asetransfer.geometry.linsolve import NumericalError
    from asetransfer.io import load_markers
    from asetransfer.io.atomic import transaction
    from asetransfer.io.mapfile import write_map
    from asetransfer.io.ply import write_ply
    from asetransfer.job import load_target
    from asetransfer.stages.correspondence import correspond

    inputs = (args.source, args.target, args.markers)
    if args.debug_dir and not os.path.isdir(args.debug_dir):
        raise InputError(args.debug_dir, "debug directory does not exist")
    outputs = [Output(args.output, "-o", (".npz",))]
    outputs += [Output(path, "--debug-dir", (".ply",)) for path in debug_paths(args.debug_dir).values()]
    check_outputs(outputs, inputs)  # all of them before anything is written
    source, target = load_target(args.source), load_target(args.target)
    markers = load_markers(args.markers, source, target)
    try:
        corr = correspond(source, target, markers, CorrespondenceConfig(symmetric=args.symmetric))
    except ValueError as e:
        raise InputError(args.markers, str(e)) from None
    except NumericalError as e:
        raise InputError(args.markers, f"correspondence failed: {e}") from None
    with transaction():  # the map and the debug meshes: all written, or none
        write_map(args.output, corr.source_to_target, corr.target_to_source, source.faces, target.faces, inputs)
        if args.debug_dir:
            paths = debug_paths(args.debug_dir)
            for name, verts, faces in (("faired_source", corr.faired_source, source.faces),
                                       ("faired_target", corr.faired_target, target.faces),
                                       ("registered_source", corr.registered_source, source.faces)):
                write_ply(paths[name], verts, faces, inputs + (args.output,))
    s = corr.stats
    if args.json:
        print(json.dumps(s.to_json(), indent=1))
    elif not getattr(args, "quiet", False):
        print(f"{args.output}: {len(source.vertices)} source -> {len(target.vertices)} target vertices in "
              f"{s.timings.total:.2f} s; fit distance mean {s.fit_distance_mean:.4g}, "
              f"marker residual mean {s.marker_residual_mean:.4g} (worst {s.marker_residual_worst}, "
              f"{s.marker_residual_max:.4g}) target units")
    return 0
