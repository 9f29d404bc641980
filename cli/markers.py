"""``asetransfer markers SOURCE TARGET -o MARKERS.json``: find linked markers automatically."""
from __future__ import annotations

from asetransfer.errors import InputError


def add_parser(sub):
    p = sub.add_parser(
        "markers", help="find linked markers between a rigged source and a target automatically",
        description="Landmarks (head top, nose, ears, back of the head, hand tips and fingertips, toe tips, heels, "
                    "crotch) found by the same geometric rules on both characters, in any units, up axis, "
                    "facing and position; on bodies that are not two-legged (quadrupeds, birds, fish), points "
                    "read off the source's skin fitted onto the target.  Written as a marker file (the schema "
                    "'transfer --markers' reads) with each landmark's confidence. Edit it and feed it back, or "
                    "let 'transfer' find them itself.")
    p.add_argument("source", help="rigged source (.glb .gltf .vrm .fbx .dae .pmx .usd*)")
    p.add_argument("target", help="target mesh (.obj .ply .off .stl .glb .gltf)")
    p.add_argument("-o", "--output", required=True, help="marker file to write (.json)")
    p.add_argument("--markers", metavar="HAND.json", help="hand markers to keep; automatic ones complete them")
    p.add_argument("--preview", metavar="PNG", help="also draw both characters with the markers and the "
                                                    "transferred skeleton (front and side views)")
    p.set_defaults(run=run)


def run(args) -> int:
    from asetransfer.config import Config, MarkersConfig
    from asetransfer.io.atomic import transaction
    from asetransfer.io.markers import write_markers
    from asetransfer.io.outputs import Output, check_outputs
    from asetransfer.job import load_source, load_target, named_errors, read_hand_markers
    from asetransfer.stages.transfer import find_markers

    inputs = tuple(p for p in (args.source, args.target, args.markers) if p)
    outputs = [Output(args.output, "-o", (".json",))]
    if args.preview:
        from asetransfer.io.preview import require_preview

        outputs.append(Output(args.preview, "--preview", (".png",)))
        require_preview(args.preview)
    check_outputs(outputs, inputs)
    config = Config(markers=MarkersConfig(automatic="on"))
    source, target = load_source(args.source).rig, load_target(args.target)
    hand = read_hand_markers(args.markers, source, target, config)
    with named_errors(args.source, args.target, args.markers):
        markers, origin = find_markers(source, target, config, hand=hand)
    extras = {n: {"automatic": n in origin.automatic, **({"fitted": True} if n in markers.fitted else {}),
                  **({"confidence": origin.confidence[n]} if n in origin.confidence else {})}
              for n in markers.names}
    with transaction():
        write_markers(args.output, markers, source.mesh, target, extras, inputs=inputs)
        if args.preview:
            _preview(args, source, target, markers, origin, config, inputs)
    if not getattr(args, "quiet", False):
        low = origin.low_confidence
        print(f"{args.output}: {len(markers)} markers ({len(origin.automatic)} automatic, "
              f"{len(origin.hand)} hand)" + (f"; low confidence: {', '.join(low)}" if low else ""))
    return 0


def _preview(args, source, target, markers, origin, config, inputs):
    """Transfer the skeleton with these markers and draw it (what the TD checks in two seconds)."""
    from asetransfer.config import MarkersConfig
    from asetransfer.io.preview import write_preview
    from asetransfer.job import named_errors, preview_characters
    from asetransfer.stages.transfer import transfer

    with named_errors(args.source, args.target, args.markers):
        result = transfer(source, target, markers, config.replace(markers=MarkersConfig(automatic="off")))
    write_preview(args.preview, preview_characters(source, target, markers, origin, config, result.rig),
                  title=f"{args.source}  ->  {args.target}", inputs=inputs + (args.output,))
