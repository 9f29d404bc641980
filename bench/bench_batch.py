"""``asetransfer batch`` on a cast of 20 targets: one process vs two vs a local Dask cluster.

    python bench/bench_batch.py [--set fixtures|dev] [--out DIR] [--no-loop]

The cast: the three fixture targets (``--set fixtures``) or the dev targets that
share ``d01_female``'s source (``--set dev``), copied under other names until there
are 20 (``--count``), each with its marker file beside it.  Runs, each the real command line in a
child process: a shell-style loop of ``asetransfer transfer`` (what a script does
without batch; ``--no-loop`` leaves it out), ``batch --jobs 1``, ``batch --jobs 2``,
``batch --dask local:2`` and a rerun of the ``--jobs 2`` batch (everything already
done).  Printed: wall time, the batch process's peak memory (VmHWM, Linux), the
largest worker peak (the summary's ``peak_rss_mb``, getrusage in the process that
ran the target), the CPU time of the run and its workers, the load average when it
started (the machine is shared) and whether the rigs are byte-identical to
``--jobs 1``'s.
"""
from __future__ import annotations

import argparse
import atexit
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from devdata import DEV, ROOT, target_path  # noqa: E402

N_TARGETS = 20
FIXTURE_CAST = [("target_heavy.ply", "markers_heavy.json"), ("target_tall.obj", "markers_tall.json"),
                ("target_cartoon.off", "markers_cartoon.json")]
DEV_CASES = ["d01_female", "d02_heavy_male", "d03_female_remesh20k"]  # one source.glb, byte-identical

# the command line, then the child's own peak resident memory (VmHWM, kB) on stderr
_RUN_AND_REPORT_PEAK = """
import sys
from asetransfer_cli.main import main
code = main(sys.argv[1:])
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM")]
print("peak", hwm[0].split()[1] if hwm else "nan", file=sys.stderr)
sys.exit(code)
"""


def make_cast(which: str, folder: Path, count: int = N_TARGETS):
    """(source path, [count target paths]) with ``<stem>.markers.json`` beside each target."""
    if which == "fixtures":
        source = ROOT / "fixtures" / "source.glb"
        originals = [(ROOT / "fixtures" / mesh, ROOT / "fixtures" / markers) for mesh, markers in FIXTURE_CAST]
    else:
        source = DEV / DEV_CASES[0] / "source.glb"
        originals = [(target_path(case), DEV / case / "markers_sparse.json") for case in DEV_CASES]
    folder.mkdir(parents=True)
    targets = []
    for i in range(count):
        mesh, markers = originals[i % len(originals)]
        stem = f"{Path(mesh).stem if which == 'fixtures' else DEV_CASES[i % len(originals)]}_{i}"
        shutil.copyfile(mesh, folder / (stem + mesh.suffix))
        shutil.copyfile(markers, folder / f"{stem}.markers.json")
        targets.append(folder / (stem + mesh.suffix))
    return source, targets


def run_cli(args: list) -> dict:
    """One command line in a child process: wall seconds, CPU seconds (it and every
    process it waited for: pool workers, Dask workers), its peak RSS in MB, the load
    average (1 min) when it started."""
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _RUN_AND_REPORT_PEAK, *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, args[:2]))} failed ({proc.returncode}): {proc.stderr.strip()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    peak = float(proc.stderr.strip().splitlines()[-1].split()[-1]) / 1024.0
    return {"wall": wall, "cpu": cpu, "main_peak": peak, "worker_peak": peak, "load": load}


def run_loop(source, targets, out: Path) -> dict:
    """``asetransfer transfer`` once per target, one after the other (a shell loop)."""
    out.mkdir()
    runs = [run_cli(["transfer", source, target, "--markers", target.with_name(target.stem + ".markers.json"),
                     "-o", out / (target.stem + ".glb"), "-q"]) for target in targets]
    return {"wall": sum(r["wall"] for r in runs), "cpu": sum(r["cpu"] for r in runs),
            "main_peak": max(r["main_peak"] for r in runs), "worker_peak": max(r["main_peak"] for r in runs),
            "load": runs[0]["load"]}


def run_batch(source, targets, out: Path, flags: list) -> dict:
    out.mkdir(exist_ok=True)
    run = run_cli(["batch", source, *targets, "-o", out, "-q", *flags])
    rows = json.loads((out / "summary.json").read_text())["targets"]
    assert all(r["status"] in ("ok", "skipped") for r in rows), [r["error"] for r in rows]
    return {**run, "worker_peak": max(r["peak_rss_mb"] for r in rows),
            "per_target": sum(r["seconds"] for r in rows) / len(rows)}


def rigs(out: Path) -> dict:
    return {p.name: p.read_bytes() for p in out.glob("*.glb")}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", choices=("fixtures", "dev"), default="fixtures")
    ap.add_argument("--out", type=Path, help="keep the outputs here (default: a temporary folder)")
    ap.add_argument("--count", type=int, default=N_TARGETS, help="targets in the cast (default %(default)s)")
    ap.add_argument("--no-loop", action="store_true", help="skip the transfer-per-target loop")
    args = ap.parse_args(argv)
    work = args.out or Path(tempfile.mkdtemp(prefix="bench_batch_"))
    if not args.out:  # a scratch folder, removed at exit (--out keeps the cast and the rigs)
        atexit.register(shutil.rmtree, work, True)
    source, targets = make_cast(args.set, work / "cast", args.count)
    print(f"{args.count} targets ({args.set}), {os.cpu_count()} cores" + (f"; outputs in {work}" if args.out else ""))
    rows = []
    if not args.no_loop:
        rows.append(("transfer loop", run_loop(source, targets, work / "loop"), work / "loop"))
    for name, flags, folder in (("batch --jobs 1", ["--jobs", "1"], "jobs1"),
                                ("batch --jobs 2", ["--jobs", "2"], "jobs2"),
                                ("batch --dask local:2", ["--dask", "local:2"], "dask2"),
                                ("rerun of --jobs 2 (all done)", ["--jobs", "2"], "jobs2")):
        rows.append((name, run_batch(source, targets, work / folder, flags), work / folder))
    reference = rigs(work / "jobs1")
    print("| run | wall (s) | CPU (s) | per target (s) | batch process peak (MB) | worker peak (MB) "
          "| load at start | rigs = --jobs 1 |")
    print("|---|---|---|---|---|---|---|---|")
    for name, r, out in rows:
        same = "yes" if rigs(out) == reference and len(reference) == args.count else "NO"
        per = f"{r['per_target']:.2f}" if "per_target" in r else f"{r['wall'] / args.count:.2f}"
        print(f"| {name} | {r['wall']:.1f} | {r['cpu']:.1f} | {per} | {r['main_peak']:.0f} | "
              f"{r['worker_peak']:.0f} | {r['load']:.1f} | {same} |")
    wall = {name: r["wall"] for name, r, _ in rows}
    if "transfer loop" in wall:
        print(f"throughput of batch --jobs 2 over the transfer loop: {wall['transfer loop'] / wall['batch --jobs 2']:.2f}x")
    print(f"batch --dask local:2 / batch --jobs 2 wall time: {wall['batch --dask local:2'] / wall['batch --jobs 2']:.2f}")


if __name__ == "__main__":
    main()
