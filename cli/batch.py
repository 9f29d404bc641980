"""``asetransfer batch SOURCE TARGET... -o OUTDIR``: one source onto a whole cast (docs/batch.md).

The library (:mod:`asetransfer.batch`) plans, runs and resumes the jobs; this module
parses the options, shows progress, writes ``summary.json`` / ``summary.csv`` and
chooses the exit code: 0 all targets done, 3 some failed, 2 nothing could start.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import os
import signal
import sys
import time

from asetransfer._version import __version__

from . import transfer

EXIT_SOME_FAILED = 3


def add_parser(sub):
    p = sub.add_parser(
        "batch", help="rig many TARGETs with one SOURCE, in parallel, resumable",
        description="Every TARGET rigged with SOURCE: OUTDIR/<target name>.glb and .report.json, then "
                    "OUTDIR/summary.json and summary.csv (and with --qa OUTDIR/index.html).  Markers: "
                    "<target name>.markers.json in --markers-dir or beside the target.  A rerun skips the targets already done with "
                    "the same inputs and options.  Exit 0: all done; 3: some failed (the others are "
                    "written); 2: nothing could start.")
    p.add_argument("source", help="rigged source (.glb .gltf .vrm .fbx .dae .pmx .usd*)")
    p.add_argument("targets", nargs="+", metavar="TARGET", help="target meshes (.obj .ply .off .stl .glb .gltf)")
    p.add_argument("-o", "--outdir", required=True, help="output directory (created if missing)")
    p.add_argument("--format", dest="rig_format", default="glb", metavar="EXT",
                   help="format of each rig, as transfer's -o extension: OUTDIR/<target name>.EXT, one of glb, "
                        "gltf, fbx, usda, usdc, usdz (default %(default)s; USD needs asetransfer[usd])")
    p.add_argument("--preview", action="store_true",
                   help="also draw a picture to check each rig: OUTDIR/<target name>.preview.png (needs "
                        "matplotlib: pip install 'asetransfer[preview]')")
    p.add_argument("--qa", action="store_true",
                   help="also write each target's QA web page and preview, OUTDIR/<target name>.qa.html and "
                        ".preview.png, and OUTDIR/index.html: a gallery of every target, worst verdict first "
                        "(needs matplotlib)")
    p.add_argument("--markers-dir", metavar="DIR", help="where <target name>.markers.json files are "
                                                        "(looked up first; then beside each target)")
    p.add_argument("--jobs", type=_jobs_arg, default=1, metavar="N",
                   help="targets rigged at once, each in its own process (default %(default)s; "
                        "with --dask the cluster's workers decide)")
    p.add_argument("--dask", type=_dask_arg, metavar="ADDRESS|local:N",
                   help="run the targets on a Dask cluster: a scheduler address (tcp://host:8786) or local:N "
                        "for N local worker processes (needs pip install 'asetransfer[dask]')")
    transfer.add_options(p)
    p.set_defaults(run=run)


def _jobs_arg(text):
    if not (text.isascii() and text.isdigit()) or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return int(text)


def _dask_arg(text):
    from asetransfer.batch import local_cluster_size

    try:
        local_cluster_size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def run(args) -> int:
    from asetransfer import batch

    quiet = getattr(args, "quiet", False)
    options = transfer.options_of(args)
    jobs = batch.plan_jobs(args.targets, args.outdir, args.markers_dir, rig_format="." + args.rig_format.lstrip("."),
                           preview=args.preview, qa=args.qa)
    # a bad source: exit 2 before any work
    prepared = batch.prepare_source(args.source, options, automatic=any(job.markers is None for job in jobs))
    results, t0 = {}, time.perf_counter()
    progress = Progress(len(jobs), quiet)
    restore = _sigterm_interrupts()
    running = batch.run_jobs(prepared, jobs, options, workers=args.jobs, dask=args.dask)
    try:
        with batch.outdir_for_the_run(args.outdir):
            batch.remove_stale_parts(jobs, options, args.outdir)
            for result in running:
                results[result.stem] = result
                progress.update(result)
    except KeyboardInterrupt:
        running.close()  # stops the workers before the summary is written
        progress.close()
        for job in jobs:  # finished in a worker before its result came back
            found = None if job.stem in results else batch.result_on_disk(prepared.source, job, options)
            if found is not None:
                results[job.stem] = found
        write_summary(args, jobs, results, seconds=time.perf_counter() - t0, interrupted=True)
        _write_index(args, jobs, results)
        raise
    finally:
        restore()
    progress.close()
    write_summary(args, jobs, results, seconds=time.perf_counter() - t0, interrupted=False)
    _write_index(args, jobs, results)
    failed = [r for r in results.values() if r.status == "failed"]
    for r in failed:
        print(f"asetransfer: error: {r.stem}: {r.error}", file=sys.stderr)
    if not quiet:
        counts = _counts(results.values())
        print(f"{args.outdir}: {len(jobs)} targets: {counts['ok']} rigged, {counts['skipped']} already done, "
              f"{counts['failed']} failed, {time.perf_counter() - t0:.1f} s (summary.json)")
    return EXIT_SOME_FAILED if failed else 0


def _write_index(args, jobs, results: dict) -> None:
    """``OUTDIR/index.html``, the gallery of the QA pages, with ``--qa``."""
    if args.qa:
        from asetransfer.batch import write_qa_index

        write_qa_index(args.outdir, jobs, results, args.source, inputs=[args.source, *args.targets])


def _sigterm_interrupts():
    """SIGTERM stops the batch like Ctrl-C (finished outputs kept, no partial file); returns an undo."""
    try:
        previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    except ValueError:  # not the main thread: leave signals alone
        return lambda: None
    return lambda: signal.signal(signal.SIGTERM, previous)


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def _counts(results) -> dict:
    counts = {"ok": 0, "skipped": 0, "failed": 0}
    for r in results:
        counts[r.status] += 1
    return counts


def write_summary(args, jobs, results: dict, *, seconds: float, interrupted: bool) -> None:
    """``OUTDIR/summary.json`` and ``summary.csv``: every target in the order given, with its
    status (``ok``, ``skipped``, ``failed``, or ``not run`` after an interruption)."""
    from asetransfer.io.atomic import atomic_write

    rows = []
    for job in jobs:
        r = results.get(job.stem)
        rows.append(r.summary_row() if r is not None else
                    {"target": job.target, "stem": job.stem, "status": "not run", "error": "interrupted"})
    summary = {"asetransfer": __version__, "source": os.fspath(args.source), "interrupted": interrupted,
               "seconds": round(seconds, 3), "counts": _counts(results.values()), "targets": rows}
    inputs = [args.source, *args.targets]
    atomic_write(os.path.join(args.outdir, "summary.json"), (json.dumps(summary, indent=1) + "\n").encode(), inputs)
    columns = list(max(rows, key=len))
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    atomic_write(os.path.join(args.outdir, "summary.csv"), text.getvalue().encode(), inputs)


class Progress:
    """Progress on stderr: a bar with an ETA (rich) on a terminal, else one line per
    finished target; nothing with ``-q``."""

    def __init__(self, total: int, quiet: bool):
        self.total, self.done, self.t0 = total, 0, time.perf_counter()
        self.bar = None
        if not quiet and sys.stderr.isatty():
            self.bar = _rich_bar(total)
        self.plain = not quiet and self.bar is None

    def update(self, result) -> None:
        self.done += 1
        if self.bar is not None:
            self.bar.update(self.task, advance=1, description=f"{result.stem} {result.status}")
        elif self.plain:
            print(f"asetransfer: [{self.done}/{self.total}] {result.stem} {result.status} "
                  f"{result.seconds:.1f} s{self._eta()}", file=sys.stderr, flush=True)

    def _eta(self) -> str:
        left = self.total - self.done
        if not left:
            return ""
        return f", about {(time.perf_counter() - self.t0) / self.done * left:.0f} s left"

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None

    @property
    def task(self):
        return self.bar.task_ids[0]


def _rich_bar(total: int):
    """A started rich progress bar on stderr with one task of ``total`` steps."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress as RichProgress, TextColumn, \
        TimeElapsedColumn, TimeRemainingColumn

    bar = RichProgress(TextColumn("[bold]asetransfer batch"), BarColumn(), MofNCompleteColumn(),
                       TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                       TextColumn("{task.description}"), console=Console(stderr=True), transient=False)
    bar.add_task("", total=total)
    bar.start()
    return bar
