"""One source onto a whole cast: many targets, in parallel, resumable (``asetransfer batch``).

This module sits at the top of the library, beside ``describe``: it orchestrates
files, so unlike the layers below it may import ``io`` (docs/architecture.md).
Each target is one :class:`Job` (its paths); :func:`run_job` does the whole job for
one target and never raises for a bad target: it returns a :class:`TargetResult`
with ``status`` ``"ok"``, ``"skipped"`` (already done with the same inputs) or
``"failed"`` and a one-line error.  :func:`transfer_many` runs the jobs in this
process, in a pool of processes or on a Dask cluster and yields the results as
they finish.

Each job is :func:`~asetransfer.job.transfer_files`, the command line's transfer, so
every option means the same in a batch (``JobOptions``) and every output format is
available.  Shared source work.  The source is read once per process
(:func:`~asetransfer.job.load_source`, kept per worker), and with automatic markers its landmarks are found once per process
(:func:`~asetransfer.stages.markers.landmarks_of` keeps them; they depend on the source
alone).  Nothing else of the source can be shared without changing the output: the correspondence welds, normalises, Laplacian-factorises and selects the
marked pieces of the source *after* moving it into each target's frame (the marker
similarity and the target's bounding-box diagonal), and the marked pieces depend on
each target's marker file, so every system is per target (docs/batch.md).

Resuming.  Each report records the inputs that made it (:func:`inputs_record`:
content hashes of source, target, markers, the options and the version) and the
hash of the output it goes with; a job whose report matches is skipped.  The
output is written before its report and a stale report is removed first, so an
interrupted job is redone, never mistaken for a finished one.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sys
from dataclasses import dataclass, field

from ._version import __version__
from .errors import InputError
from .job import JobOptions, SourceFile, file_digest, load_source
from .model.report import InputsRecord, Stopwatch, TransferReport

#: the report's quality figures copied into a batch summary (of its ``correspondence``)
QUALITY_FIGURES = ("marker_residual_mean", "marker_residual_max", "fit_distance_mean", "fit_distance_p95",
                   "reverse_fit_distance_mean")
MARKERS_SUFFIX = ".markers.json"


@dataclass(frozen=True)
class Job:
    """One target of a batch: where its inputs are and where its outputs go."""

    target: str
    markers: str | None   # None: no marker file was found (automatic markers)
    output: str           # OUTDIR/<stem>.glb (or the batch's other rig format)
    report: str           # OUTDIR/<stem>.report.json
    preview: str | None = None   # OUTDIR/<stem>.preview.png when previews are asked for
    qa: str | None = None        # OUTDIR/<stem>.qa.html when QA pages are asked for

    @property
    def stem(self) -> str:
        return target_stem(self.target)


@dataclass
class TargetResult:
    """What became of one target (JSON-ready through :meth:`summary_row`)."""

    target: str
    stem: str
    status: str                     # "ok", "skipped" or "failed"
    error: str = ""                 # one line, for "failed"
    seconds: float = 0.0            # wall time of the job in its worker
    output: str = ""
    report: str = ""
    quality: dict = field(default_factory=dict)   # QUALITY_FIGURES and the transfer time
    peak_rss_mb: float = 0.0        # the worker's peak resident memory so far

    def summary_row(self) -> dict:
        return {"target": self.target, "stem": self.stem, "status": self.status, "error": self.error,
                "seconds": round(self.seconds, 3), "output": self.output, "report": self.report,
                **{k: self.quality.get(k) for k in (*QUALITY_FIGURES, "transfer_seconds", "fallback_joints")},
                "peak_rss_mb": round(self.peak_rss_mb, 1)}


def target_stem(path) -> str:
    """``dir/name.ext`` -> ``name``: the name of a target's outputs."""
    return os.path.splitext(os.path.basename(os.fspath(path)))[0]


def markers_for(target, markers_dir=None) -> str | None:
    """The marker file of ``target``: ``<stem>.markers.json`` in ``markers_dir`` (first)
    or beside the target; None when there is none (automatic markers will go here)."""
    name = target_stem(target) + MARKERS_SUFFIX
    places = ([markers_dir] if markers_dir else []) + [os.path.dirname(os.path.abspath(os.fspath(target)))]
    for place in places:
        path = os.path.join(place, name)
        if os.path.isfile(path):
            return path
    return None


def plan_jobs(targets, outdir, markers_dir=None, *, rig_format: str = ".glb", preview: bool = False,
              qa: bool = False) -> list:
    """One :class:`Job` per target, writing ``<stem><rig_format>`` (and ``<stem>.preview.png``
    with ``preview``; ``<stem>.qa.html`` and the preview, the gallery's picture, with ``qa``).
    Raises InputError, before any work, for a format no writer has, a missing optional
    package the outputs need, and two targets with the same stem (their outputs would collide)."""
    from .io import RIG_OUTPUT_EXTENSIONS, USD_EXTENSIONS

    if rig_format.lower() not in RIG_OUTPUT_EXTENSIONS:
        raise InputError(None, f"--format must be one of {', '.join(e[1:] for e in RIG_OUTPUT_EXTENSIONS)}, "
                               f"not {rig_format[1:]!r}")
    if rig_format.lower() in USD_EXTENSIONS:
        from .io.usd import require_usd

        require_usd(outdir)
    preview = preview or qa
    if preview:
        from .io.preview import require_preview

        require_preview(outdir)
    seen = {}
    jobs = []
    for target in map(os.fspath, targets):
        stem = target_stem(target)
        if stem.casefold() in seen:  # casefolded: one file on case-insensitive file systems
            raise InputError(target, f"same name as {seen[stem.casefold()]}: both would write {stem}{rig_format}; "
                                     "rename one")
        seen[stem.casefold()] = target
        out = os.path.join(outdir, stem)
        jobs.append(Job(target, markers_for(target, markers_dir), out + rig_format, out + ".report.json",
                        out + ".preview.png" if preview else None, out + ".qa.html" if qa else None))
    return jobs


def options_digest(options: JobOptions) -> str:
    """SHA-256 of every option of a run: the Config's parameters, the hand-off asked for
    and the content of the calibration file."""
    text = json.dumps({"config": dataclasses.asdict(options.config), "tpose": options.tpose,
                       "calibration": file_digest(options.calibration) if options.calibration else None},
                      sort_keys=True, default=list)
    return hashlib.sha256(text.encode()).hexdigest()


def inputs_record(source_digest: str, job: Job, options: JobOptions) -> InputsRecord:
    """What a job's output depends on: content hashes of its inputs, the options, the
    outputs asked for, the version."""
    return InputsRecord(asetransfer=__version__, source=source_digest, target=file_digest(job.target),
                        markers=file_digest(job.markers) if job.markers else None, options=options_digest(options),
                        outputs=[os.path.basename(p) for p in (job.output, job.preview, job.qa) if p])


def run_job(source_path: str, source_digest: str, job: Job, options: JobOptions, resume: bool = True) -> TargetResult:
    """Rig one target (or skip it when its outputs already match its inputs).

    Never raises for a bad target: the problem becomes ``status="failed"`` and a
    one-line ``error``.  Only an interruption (KeyboardInterrupt) propagates; the
    outputs are written as one transaction, so it leaves no partial file.
    """
    watch = Stopwatch()
    result = TargetResult(job.target, job.stem, "failed", output=job.output, report=job.report)
    try:
        source = load_source(source_path, source_digest)
        record = inputs_record(source.digest, job, options)
        report = finished_report(job, record) if resume else None
        result.status = "skipped" if report is not None else "ok"
        if report is None:
            report = _transfer_and_write(source, job, options, record)
        result.quality = quality_figures(report)
    except InputError as e:
        result.status, result.error = "failed", str(e)
    except Exception as e:  # one target's bug must not sink the batch: report it in one line
        result.status = "failed"
        result.error = " ".join(f"internal error: {type(e).__name__}: {e}".split())
    if result.status == "failed":
        result.output = result.report = ""  # nothing was written for it
    result.seconds = watch.elapsed()
    result.peak_rss_mb = peak_rss_mb()
    return result


def finished_report(job: Job, record: InputsRecord) -> TransferReport | None:
    """The report of a finished job whose inputs were ``record`` and whose output is
    intact (its recorded hash), else None.  A report that cannot be read back, or of
    another schema (an older version's), is not finished: the job is redone."""
    if not (os.path.isfile(job.output) and os.path.isfile(job.report)):
        return None
    try:
        with open(job.report, encoding="utf-8") as f:
            report = TransferReport.from_json(json.load(f))
    except (OSError, ValueError):  # ReportSchemaError is a ValueError
        return None
    if report.inputs != record:
        return None
    return report if report.output_sha256 == file_digest(job.output) else None


def result_on_disk(source: SourceFile, job: Job, options: JobOptions) -> TargetResult | None:
    """A job's result read back from its outputs when they are finished and match its
    inputs, else None (after an interruption: what finished before the results came in)."""
    try:
        report = finished_report(job, inputs_record(source.digest, job, options))
    except InputError:  # an input that cannot be read now
        return None
    if report is None:
        return None
    return TargetResult(job.target, job.stem, "ok", output=job.output, report=job.report,
                        quality=quality_figures(report))


def _transfer_and_write(source: SourceFile, job: Job, options: JobOptions, record: InputsRecord) -> TransferReport:
    """The transfer of one target, written as ``job.output``, its report and the rest."""
    from .job import transfer_files

    if os.path.exists(job.report):
        os.unlink(job.report)  # stale: it must not vouch for the output about to be replaced
    return transfer_files(source, job.target, job.output, job.markers, options=options, report=job.report,
                          preview=job.preview, qa=job.qa, record=record).report


def quality_figures(report: TransferReport) -> dict:
    """The figures of a transfer report that a batch summary lists."""
    out = {k: getattr(report.correspondence, k) for k in QUALITY_FIGURES}
    out["transfer_seconds"] = report.timings.total
    out["fallback_joints"] = len(report.skeleton.fallback_joints)
    return out


def peak_rss_mb() -> float:
    """This process's peak resident memory in MB (getrusage: KiB on Linux, bytes on macOS;
    0 where there is no getrusage)."""
    try:
        import resource
    except ImportError:  # Windows
        return 0.0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1 << 20) if sys.platform == "darwin" else peak / 1024


def run_jobs(source: SourceFile, jobs: list, options: JobOptions | None = None, *, workers: int = 1,
             dask: str | None = None, resume: bool = True):
    """Run ``jobs`` and yield a :class:`TargetResult` for each as it finishes.

    ``workers`` > 1: a pool of that many processes (spawned; each reads the source
    once).  ``dask``: the address of a Dask scheduler (``tcp://host:8786``), or
    ``local:N`` for a local cluster of N worker processes.  Otherwise the jobs run
    one after the other in this process.  Closing the generator (or an interruption)
    cancels the jobs not yet started and stops the local workers.
    """
    options = options or JobOptions()
    if dask:
        yield from _run_on_dask(source, jobs, options, address=dask, resume=resume)
    elif workers > 1 and len(jobs) > 1:
        yield from _run_in_processes(source, jobs, options, workers=workers, resume=resume)
    else:
        for job in jobs:
            yield run_job(source.path, source.digest, job, options, resume)


def transfer_many(source, targets, outdir, *, markers_dir=None, options: JobOptions | None = None,
                  rig_format: str = ".glb", preview: bool = False, qa: bool = False, workers: int = 1,
                  dask: str | None = None, resume: bool = True):
    """Rig every target with ``source``; yield a :class:`TargetResult` per target as it finishes.

    Parameters
    ----------
    source : path of the rigged source, read once per process.
    targets : paths of the target meshes; ``<stem>.markers.json`` beside each (or in
        ``markers_dir``) links it to the source, else markers are found automatically.
        Stems must differ.
    outdir : the output directory (created if missing); each target gets ``<stem><rig_format>``,
        ``<stem>.report.json``, ``<stem>.preview.png`` with ``preview``, ``<stem>.qa.html`` with
        ``qa`` (then :func:`write_qa_index` makes the gallery), and the hand-off files ``options``
        asks for.
    options : :class:`~asetransfer.job.JobOptions`, as for one transfer.
    workers, dask, resume : see :func:`run_jobs`.

    Raises InputError on the first iteration, before any work, for a bad source,
    duplicate stems or an output directory that cannot be made; a bad target only makes
    its own result ``"failed"``.
    """
    jobs = plan_jobs(targets, outdir, markers_dir, rig_format=rig_format, preview=preview, qa=qa)
    loaded = load_source(source)  # a bad source: nothing made, not even the directory
    make_outdir(outdir)
    yield from run_jobs(loaded, jobs, options, workers=workers, dask=dask, resume=resume)


def write_qa_index(outdir, jobs: list, results: dict, source, inputs=()) -> str:
    """Write ``OUTDIR/index.html``, the gallery of the targets' QA pages, worst verdict first
    (:func:`~asetransfer.io.qa_page.render_index`): each job's verdict and notes from its
    report, a failed job's error, a job not run (interrupted) as such; returns its path.
    ``results``: stem -> :class:`TargetResult`."""
    from .io.qa_page import gallery_entry, write_index

    entries = []
    for job in jobs:
        result = results.get(job.stem)
        if result is None or result.status == "failed":
            entries.append(gallery_entry(job.stem, error=result.error if result else None))
        else:
            entries.append(gallery_entry(job.stem, job.report, page=job.qa and os.path.basename(job.qa),
                                         thumbnail=job.preview and os.path.basename(job.preview)))
    path = os.path.join(os.fspath(outdir), "index.html")
    write_index(path, entries, f"asetransfer batch: {os.path.basename(os.fspath(source))}", inputs)
    return path


def make_outdir(outdir) -> None:
    """Create ``outdir`` (and its parents) when missing; raise InputError unless it is then a
    writable directory."""
    outdir = os.fspath(outdir)
    try:
        os.makedirs(outdir, exist_ok=True)
    except OSError as e:
        raise InputError(outdir, f"cannot create the output directory ({e.strerror or e})") from None
    if not os.access(outdir, os.W_OK | os.X_OK):
        raise InputError(outdir, "output directory is not writable")


#: a job that was running when a pool worker died this many times fails (out of memory, a
#: crash in native code); the other unfinished jobs are retried
WORKER_DEATHS_ALLOWED = 2


def _run_in_processes(source: SourceFile, jobs: list, options: JobOptions, *, workers: int, resume: bool):
    """:func:`run_jobs` on a pool of spawned processes.  A worker that dies breaks the
    pool: the unfinished jobs go to a new one, so one bad target never sinks the rest.
    A job that was running when a worker died is retried alone first, so that a second
    death names the target that causes it."""
    pending, strikes = list(jobs), {}
    while pending:
        suspects = [job for job in pending if strikes.get(job.stem)]
        now = suspects[:1] or pending
        running, unfinished = yield from _pool_round(source, now, options, workers=workers, resume=resume)
        pending = [job for job in pending if job not in now]
        for job in unfinished:
            found = result_on_disk(source, job, options) if job.stem in running else None
            strikes[job.stem] = strikes.get(job.stem, 0) + (job.stem in running)
            if found is not None:  # it finished; its result was lost with the pool
                yield found
            elif strikes[job.stem] < WORKER_DEATHS_ALLOWED:
                pending.append(job)
            else:
                yield TargetResult(job.target, job.stem, "failed",
                                   error=f"the worker process died while rigging it, {strikes[job.stem]} times "
                                         "(out of memory? killed?)")


def _pool_round(source: SourceFile, jobs: list, options: JobOptions, *, workers: int, resume: bool):
    """One pool over ``jobs``, yielding results.  Returns ``(stems that were running,
    unfinished jobs)`` when a worker died, else two empty collections."""
    import concurrent.futures as cf
    import multiprocessing as mp
    from concurrent.futures.process import BrokenProcessPool

    context = mp.get_context("spawn")
    started = context.SimpleQueue()  # the workers say which job they start
    before = set(mp.active_children())
    pool = cf.ProcessPoolExecutor(max_workers=min(workers, len(jobs)), mp_context=context,
                                  initializer=_start_worker, initargs=(source.path, source.digest, started))
    futures = {pool.submit(_pool_job, source.path, source.digest, job, options, resume): job for job in jobs}
    ours = set(mp.active_children()) - before  # the pool's processes (all started by the submits)
    done = set()
    try:
        for future in cf.as_completed(futures):
            if isinstance(future.exception(), BrokenProcessPool):
                break
            done.add(futures[future].stem)
            yield _result_of(future, futures[future])
    except BaseException:  # interrupted, or the consumer stopped early: stop the workers cleanly
        for future in futures:
            future.cancel()
        for process in ours:
            process.terminate()  # SIGTERM: the worker unwinds its job (atomic writes clean up) and exits
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    for future, job in futures.items():  # finished before the pool broke, not collected yet
        if job.stem not in done and future.done() and not future.cancelled() and future.exception() is None:
            done.add(job.stem)
            yield future.result()
    running = set()
    while not started.empty():
        running.add(started.get())
    return running - done, [job for job in jobs if job.stem not in done]


def _result_of(future, job: Job) -> TargetResult:
    """A finished future's result; a worker that died (killed, out of memory) fails its job."""
    try:
        return future.result()
    except Exception as e:
        return TargetResult(job.target, job.stem, "failed", output=job.output, report=job.report,
                            error=" ".join(f"worker failed: {type(e).__name__}: {e}".split()))


_STARTED = None   # in a pool worker: the queue on which it says which job it starts
_IN_JOB = False   # in a pool worker: whether a job is running (see _stop_worker)


def _pool_job(source_path: str, source_digest: str, job: Job, options: JobOptions, resume: bool) -> TargetResult:
    """:func:`run_job` in a pool worker, announced on the pool's queue first.  Stopped by
    a signal, the worker exits once the job has unwound (the pool would otherwise catch
    the interruption and go on with its next job)."""
    global _IN_JOB
    if _STARTED is not None:
        _STARTED.put(job.stem)
    _IN_JOB = True
    try:
        return run_job(source_path, source_digest, job, options, resume)
    except KeyboardInterrupt:
        os._exit(130)  # the atomic writes have removed their temporary files
    finally:
        _IN_JOB = False


def _stop_worker(signum, frame):
    """SIGTERM / SIGINT in a pool worker: inside a job, unwind it (atomic writes clean
    up, then :func:`_pool_job` exits); between jobs, exit at once."""
    if _IN_JOB:
        raise KeyboardInterrupt(f"signal {signum}")
    os._exit(128 + signum)


def _start_worker(source_path: str, source_digest: str, started) -> None:
    """Pool initializer: the queue for :func:`_pool_job`, the source parsed once before
    the first job, then the signal handlers of :func:`_stop_worker`.

    While it starts, a worker has nothing to clean up: Ctrl-C is left to the batch
    process (which stops the pool) and SIGTERM just ends it, without a traceback.
    """
    import signal

    global _STARTED
    _STARTED = started
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        load_source(source_path, source_digest)
    except Exception:  # noqa: BLE001 -- each job reports the problem as its own failure
        pass
    signal.signal(signal.SIGINT, _stop_worker)
    signal.signal(signal.SIGTERM, _stop_worker)


def local_cluster_size(address: str) -> int | None:
    """N of ``local:N`` (None for a scheduler address); raises ValueError for a bad N."""
    if not address.startswith("local:"):
        return None
    n = address[len("local:"):]
    if not n.isdigit() or int(n) < 1:
        raise ValueError(f"expected local:N with N >= 1 worker processes, got {address!r}")
    return int(n)


def _dask_client(address: str):
    """A Dask client on the scheduler at ``address`` or on a new local cluster (``local:N``);
    returns ``(client, cluster or None)``."""
    import logging

    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise InputError(None, "--dask needs Dask's distributed scheduler: pip install 'asetransfer[dask]'") from None
    n = local_cluster_size(address)
    if n is not None:
        # one thread per worker process: a transfer is single-job work, processes give the parallelism
        cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None,
                               silence_logs=logging.ERROR)
        return Client(cluster), cluster
    try:
        return Client(address, timeout="20s"), None
    except (OSError, TimeoutError, ValueError) as e:
        raise InputError(None, f"cannot reach the Dask scheduler at {address}: {e}") from None


def _run_on_dask(source: SourceFile, jobs: list, options: JobOptions, *, address: str, resume: bool):
    """:func:`run_jobs` on a Dask cluster: one task per target; the workers read and write
    the same paths (made absolute: a worker's current directory is its own), so inputs and
    outputs must be on storage they all see at the same place (docs/batch.md)."""
    client, cluster = _dask_client(address)  # first: it says what to install if Dask is missing
    from distributed import as_completed

    source_path = os.path.abspath(source.path)
    futures = {}
    try:
        futures = {client.submit(run_job, source_path, source.digest, _absolute(job), options, resume,
                                 pure=False): job for job in jobs}
        for future in as_completed(futures):
            yield _result_of(future, futures[future])
    except BaseException:
        client.cancel(list(futures))  # the ones still queued; running ones finish their atomic writes
        raise
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _absolute(job: Job) -> Job:
    """``job`` with absolute paths."""
    return Job(*(None if path is None else os.path.abspath(path)
                 for path in (job.target, job.markers, job.output, job.report)))
