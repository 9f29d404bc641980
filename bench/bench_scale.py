"""Cost against target size: the whole ``asetransfer transfer`` command on 5k-1M targets.

    python bench/bench_scale.py [--case d01_female] [--markers dense] [--sizes 5000 13000 ...]
                                [--flags "..."] [--out DIR] [--json FILE]

The targets are built from the case's target mesh, so they are the same body at
every size: ``13k`` is the case's own file; smaller ones are quadric decimations
(pymeshlab); larger ones are the target subdivided once by midpoints (the same
surface), quadric-decimated to ``n / 4^k`` vertices and midpoint-subdivided ``k``
times (each midpoint step multiplies the vertex count by ~4 and keeps the surface).
The case's markers are snapped onto each target (``{"point": ...}`` on its surface);
``--markers auto`` gives none, so the command finds them (the ``mark`` column).
Built targets are cached in ``DIR/targets``.

Every size runs the real command line in a child process (bench_transfer.py's
runner: wall time, peak RSS from VmHWM, stage times from ``--report``) and the output
is scored by ``mheval.score`` against the case's ground truth (the scorer pairs each
ground-truth vertex with the nearest output vertex, so any triangulation of the
same surface can be scored); ``joints vs 13k`` is the mean / max distance, in mm,
between the joints placed on that size and on the case's own target.  When ``bpy``
is importable, Blender's Data Transfer (nearest face interpolated) copies the
source's weights onto the 50k target in a child process, for comparison.  On the 13k
target it also prints the medians of 5 runs of ``--help``, ``info`` and the transfer
with and without ``--preview`` (what the preview adds).  The
interpreter that runs it: ``--blender-python``, else ``$ASETRANSFER_BLENDER_PYTHON``
(the one tests/test_blender.py uses, e.g. a venv with ``pip install bpy==4.5.*``),
else this one.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from asetransfer.geometry.decimate import midpoint_subdivide
from bench_transfer import CHILD_ENV, run_cli, summarise
from devdata import DEV, EVAL, ROOT, target_path

DEFAULT_SIZES = [5000, 13000, 50000, 200000, 1000000]
BASE_SIZE = 13000  # the case's own target: the reference for the joint comparison
REPEAT = 5  # runs of each start-up / preview figure (their median)


def decimate(vertices: np.ndarray, faces: np.ndarray, n_vertices: int):
    """Quadric edge-collapse decimation (pymeshlab) to about ``n_vertices`` vertices."""
    import pymeshlab
    ms = pymeshlab.MeshSet()
    ms.add_mesh(pymeshlab.Mesh(vertices, faces))
    ms.meshing_decimation_quadric_edge_collapse(targetfacenum=2 * n_vertices, preservenormal=True,
                                                preserveboundary=True, planarquadric=True)
    m = ms.current_mesh()
    return m.vertex_matrix().astype(np.float64), m.face_matrix().astype(np.int64)


def build_target(vertices: np.ndarray, faces: np.ndarray, n_vertices: int):
    """The same surface with about ``n_vertices`` vertices (see the module docstring)."""
    if n_vertices <= len(vertices):
        return decimate(vertices, faces, n_vertices)
    fine = midpoint_subdivide(vertices, faces)
    steps = 0
    while n_vertices / 4 ** steps > len(fine[0]):
        steps += 1
    v, f = decimate(*fine, round(n_vertices / 4 ** steps))
    for _ in range(steps):
        v, f = midpoint_subdivide(v, f)
    return v, f


def write_ply(path: Path, vertices: np.ndarray, faces: np.ndarray) -> None:
    """Binary little-endian PLY (float32 vertices, like the dev targets)."""
    head = (f"ply\nformat binary_little_endian 1.0\nelement vertex {len(vertices)}\n"
            "property float x\nproperty float y\nproperty float z\n"
            f"element face {len(faces)}\nproperty list uchar int vertex_indices\nend_header\n")
    rows = np.zeros(len(faces), dtype=[("n", "u1"), ("f", "<i4", 3)])
    rows["n"], rows["f"] = 3, faces
    path.write_bytes(head.encode() + vertices.astype("<f4").tobytes() + rows.tobytes())


def snapped_markers(markers_file: Path, vertices: np.ndarray, faces: np.ndarray) -> dict:
    """The marker file with each target point moved to its closest point on ``(vertices, faces)``."""
    from asetransfer.geometry.surface import SurfaceIndex
    doc = json.loads(markers_file.read_text())
    points = np.array([m["target"]["point"] for m in doc["markers"]], dtype=np.float64)
    _, _, _, snapped = SurfaceIndex(vertices, faces).closest(points)
    for m, p in zip(doc["markers"], snapped):
        m["target"] = {"point": [float(x) for x in p]}
    return doc


def prepare(case: str, markers: str, sizes, out: Path):
    """Build (or reuse) the targets and their marker files; returns {size: (target, markers, n)}."""
    import asetransfer as at
    base = at.load_mesh(target_path(case))
    built = {}
    for n in sizes:
        if n == BASE_SIZE:
            built[n] = (target_path(case), None if markers == "auto" else DEV / case / f"markers_{markers}.json",
                        len(base.vertices))
            continue
        tgt, mk = out / f"{case}_{n}.ply", out / f"{case}_{n}_{markers}.json"
        if not tgt.exists():
            t = time.perf_counter()
            v, f = build_target(base.vertices, base.faces, n)
            write_ply(tgt, v, f)
            print(f"built {tgt.name}: {len(v)} vertices in {time.perf_counter() - t:.1f} s", flush=True)
        if markers == "auto":
            mk = None
        elif not mk.exists():
            mesh = at.load_mesh(tgt)
            mk.write_text(json.dumps(snapped_markers(DEV / case / f"markers_{markers}.json",
                                                     mesh.vertices, mesh.faces)))
        built[n] = (tgt, mk, len(at.load_mesh(tgt).vertices))
    return built


def joint_positions(glb: Path, metres_per_unit: float) -> dict:
    """Joint name -> bind-pose world position (metres) of an output rig in the target's units."""
    import asetransfer as at
    rig = at.load_rig(glb)
    return dict(zip(rig.skeleton.names, rig.skeleton.bind_world[:, :3, 3] * metres_per_unit))


def joints_difference_mm(a: dict, b: dict):
    d = np.array([np.linalg.norm(a[k] - b[k]) for k in a if k in b]) * 1000.0
    return float(d.mean()), float(d.max())


_BLENDER_TRANSFER = """
import sys, time, bpy
src, tgt = sys.argv[-2:]
bpy.ops.wm.read_factory_settings(use_empty=True)
t0 = time.perf_counter()
bpy.ops.import_scene.gltf(filepath=src)
source = next(o for o in bpy.context.scene.objects if o.type == "MESH")
bpy.ops.wm.ply_import(filepath=tgt)
target = bpy.context.selected_objects[0]
for g in source.vertex_groups:
    target.vertex_groups.new(name=g.name)
t1 = time.perf_counter()
bpy.context.view_layer.objects.active = target
mod = target.modifiers.new("dt", "DATA_TRANSFER")
mod.object, mod.use_vert_data = source, True
mod.data_types_verts, mod.vert_mapping = {"VGROUP_WEIGHTS"}, "POLYINTERP_NEAREST"
bpy.ops.object.modifier_apply(modifier=mod.name)
print("blender", time.perf_counter() - t0, time.perf_counter() - t1)
"""


def blender_data_transfer(source: Path, target: Path, python: str | None = None):
    """(whole s, transfer-only s, child wall s) of Blender's Data Transfer in a child process
    run by ``python`` (default: this interpreter), or None where that interpreter has no bpy.

    *whole*: importing both files and the modifier, timed inside Blender; *child wall*: the
    child process from start to exit (Python start-up and ``import bpy`` included, as our
    wall time includes ours)."""
    python = python or sys.executable
    probe = subprocess.run([python, "-c", "import importlib.util, sys; sys.exit(importlib.util.find_spec('bpy') is None)"],
                           capture_output=True, check=False)
    if probe.returncode != 0:
        return None
    t0 = time.perf_counter()
    proc = subprocess.run([python, "-c", _BLENDER_TRANSFER, str(source), str(target)],
                          capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    line = [s for s in proc.stdout.splitlines() if s.startswith("blender ")]
    return (*(float(x) for x in line[-1].split()[1:]), wall) if line else None


def _median_seconds(args: list, repeat: int = REPEAT) -> float:
    """Median wall time of ``asetransfer ARGS`` in a child process (start-up included)."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "asetransfer_cli.main", *map(str, args)], cwd=ROOT, env=CHILD_ENV,
                       check=True, capture_output=True)
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def overheads(source: Path, target: Path, markers: Path | None, out: Path, rows: list) -> None:
    """What the 13k path costs around the transfer: ``--help``, ``info``, and ``--preview``
    (medians of :data:`REPEAT` runs, the same transfer with and without it)."""
    given = [] if markers is None else ["--markers", markers]
    plain = ["transfer", source, target, *given, "-o", out / "overhead.glb", "-q"]
    figures = {"help_s": _median_seconds(["--help"]), "info_s": _median_seconds(["info", source]),
               "transfer_s": _median_seconds(plain),
               "with_preview_s": _median_seconds(plain + ["--preview", out / "overhead.png"])}
    figures["preview_adds_s"] = figures["with_preview_s"] - figures["transfer_s"]
    print(f"13k command, medians of {REPEAT}: --help {figures['help_s']:.2f} s, info {figures['info_s']:.2f} s, "
          f"transfer {figures['transfer_s']:.2f} s, with --preview {figures['with_preview_s']:.2f} s "
          f"(+{figures['preview_adds_s']:.2f} s)", flush=True)
    rows.append({"overheads_13k": figures})


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--case", default="d01_female")
    ap.add_argument("--markers", default="dense", help="dense, sparse or auto (none given: found by the command)")
    ap.add_argument("--sizes", nargs="*", type=int, default=DEFAULT_SIZES)
    ap.add_argument("--flags", default="", help="extra flags of the transfer command")
    ap.add_argument("--out", default="/tmp/asetransfer-scale")
    ap.add_argument("--json", help="write all rows here")
    ap.add_argument("--blender-python", default=os.environ.get("ASETRANSFER_BLENDER_PYTHON"),
                    help="interpreter with bpy for Blender's Data Transfer (default $ASETRANSFER_BLENDER_PYTHON, "
                         "else this one)")
    args = ap.parse_args()
    sys.path.insert(0, str(EVAL))
    sys.path.insert(0, str(ROOT))
    from mheval.score import score

    out = Path(args.out)
    (out / "targets").mkdir(parents=True, exist_ok=True)
    sizes = sorted(set(args.sizes) | {BASE_SIZE})
    built = prepare(args.case, args.markers, sizes, out / "targets")
    print(f"{'vertices':>9} {'wall s':>7} {'peak MB':>8} {'mark':>5} {'corr':>5} {'skel':>5} {'wts':>5} "
          f"{'pipe':>5} {'other':>5}  correspondence (align/fair/factor/reg1/reg2/maps)  joint mm  weight  local %H  "
          f"joints vs 13k mm (mean/max)")
    rows, joints = [], {}
    metres_per_unit = json.loads((DEV / args.case / "gt.json").read_text()).get("meters_per_unit", 1.0)
    for n in sizes:
        tgt, mk, n_vertices = built[n]
        glb = out / f"{args.case}_{n}.glb"
        wall, peak, report = run_cli(DEV / args.case / "source.glb", tgt, mk, args.flags.split(), glb)
        s = summarise(score(str(DEV / args.case), str(glb)))
        joints[n] = joint_positions(glb, metres_per_unit)
        rows.append({"size": n, "vertices": n_vertices, "wall_s": wall, "peak_mb": peak,
                     "timings": report.timings.to_json(), "correspondence": report.correspondence.timings.to_json(),
                     "solver": report.correspondence.solver, **s})
    for row in rows:
        t, c = row["timings"], row["correspondence"]
        vs = joints_difference_mm(joints[row["size"]], joints[BASE_SIZE])
        row["joints_vs_base_mm"] = vs
        stages = "/".join(f"{c.get(k, 0.0):.2f}" for k in ("align", "fair", "factor", "register_faired",
                                                             "register_original", "maps"))
        print(f"{row['vertices']:9d} {row['wall_s']:7.2f} {row['peak_mb']:8.0f} "
              f"{t.get('markers', 0.0):5.2f} {t['correspondence']:5.2f} {t['skeleton']:5.2f} {t['weights']:5.2f} {t['total']:5.2f} "
              f"{row['wall_s'] - t['total']:5.2f}  "
              f"{stages:48}  {row['joint_mean_mm']:8.1f}  {row['weight_err']:6.3f}  {row['local_mean']:8.2f}  "
              f"{vs[0]:.2f} / {vs[1]:.2f}", flush=True)
    base_target, base_markers, _ = built[BASE_SIZE]
    overheads(DEV / args.case / "source.glb", base_target, base_markers, out, rows)
    fifty = min(sizes, key=lambda n: abs(n - 50000))
    blender = blender_data_transfer(DEV / args.case / "source.glb", built[fifty][0], args.blender_python)
    if blender is None:
        print(f"Blender Data Transfer: bpy not importable by {args.blender_python or sys.executable}, skipped")
    else:
        ours = next(r["wall_s"] for r in rows if r["size"] == fifty)
        print(f"Blender Data Transfer on {built[fifty][2]} vertices: {blender[0]:.2f} s import + transfer "
              f"({blender[1]:.2f} s the modifier, {blender[2]:.2f} s the child process); ours {ours:.2f} s, "
              f"ratio ours / Blender {ours / blender[0]:.2f} (against the child process: {ours / blender[2]:.2f})")
        rows.append({"blender_data_transfer": {"vertices": built[fifty][2], "import_and_transfer_s": blender[0],
                                               "modifier_s": blender[1], "process_s": blender[2],
                                               "ours_s": ours}})
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
