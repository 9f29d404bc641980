"""One source onto a whole cast: many targets, in parallel, resumable (``asetransfer batch``).

This module sits at the top of the library, beside ``describe``: it orchestrates
files, so unlike the layers below it may import ``io`` (docs/architecture.md).
Each target is one :class:`Job` (its paths); :func:`run_job` does the whole job for
one target and never raises for a bad target: it returns a :class:`TargetResult`
with ``status`` ``"ok"``, ``"skipped"`` (already done with the same inputs) or
``"failed"`` and a one-line error.  :func:`transfer_many` runs the jobs in this
process, in a pool of processes or on a Dask cluster and yields the results as
they finish.

Shared source work.  The source is parsed once per process (:func:`prepare_source`,
cached per worker), and with automatic markers its landmarks are found once per process
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
import time
from dataclasses import dataclass, field

from ._version import __version__
from .config import Config
from .errors import InputError

#: the report's quality figures copied into a batch summary (from ``report["correspondence"]``)
QUALITY_FIGURES = ("marker_residual_mean", "marker_residual_max", "fit_distance_mean", "fit_distance_p95",
                   "reverse_fit_distance_mean")
MARKERS_SUFFIX = ".markers.json"


@dataclass(frozen=True)
class Job:
    """One target of a batch: where its inputs are and where its outputs go."""

    target: str
    markers: str | None   # None: no marker file was found (the job fails, see markers_for)
    output: str           # OUTDIR/<stem>.glb
    report: str           # OUTDIR/<stem>.report.json

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


def plan_jobs(targets, outdir, markers_dir=None) -> list:
    """One :class:`Job` per target; raises InputError on two targets with the same stem
    (their outputs would collide)."""
    seen = {}
    jobs = []
    for target in map(os.fspath, targets):
        stem = target_stem(target)
        if stem.casefold() in seen:  # casefolded: one file on case-insensitive file systems
            raise InputError(target, f"same name as {seen[stem.casefold()]}: both would write {stem}.glb; "
                                     "rename one")
        seen[stem.casefold()] = target
        jobs.append(Job(target, markers_for(target, markers_dir), os.path.join(outdir, stem + ".glb"),
                        os.path.join(outdir, stem + ".report.json")))
    return jobs


def file_digest(path) -> str:
    """SHA-256 of a file's bytes (hex); InputError when it cannot be read or is empty."""
    from .io.files import read_bytes

    return hashlib.sha256(read_bytes(path)).hexdigest()


def config_digest(config: Config) -> str:
    """SHA-256 of every parameter of ``config`` (the options of a run)."""
    text = json.dumps(dataclasses.asdict(config), sort_keys=True, default=list)
    return hashlib.sha256(text.encode()).hexdigest()


def inputs_record(source_digest: str, job: Job, config: Config) -> dict:
    """What a job's output depends on: content hashes of its inputs, the options, the version."""
    return {"asetransfer": __version__, "source": source_digest, "target": file_digest(job.target),
            "markers": file_digest(job.markers) if job.markers else None, "options": config_digest(config)}


@dataclass(eq=False)
class PreparedSource:
    """The source of a batch, parsed once: its path, content hash and :class:`Rig`."""

    path: str
    digest: str
    rig: object


_SOURCES: dict = {}   # per process: (path, digest) -> PreparedSource, so a worker parses the source once


def prepare_source(path, digest: str | None = None) -> PreparedSource:
    """Parse the source rig once per process (cached by path and content hash).

    Raises InputError for an unreadable source, or when its content no longer has
    ``digest`` (the file changed while the batch ran).
    """
    from .io import load_rig

    path = os.fspath(path)
    actual = file_digest(path)
    if digest is not None and actual != digest:
        raise InputError(path, "the source changed while the batch was running")
    key = (os.path.abspath(path), actual)
    if key not in _SOURCES:
        _SOURCES.clear()  # one source at a time per worker
        _SOURCES[key] = PreparedSource(path, actual, load_rig(path))
    return _SOURCES[key]


def run_job(source_path: str, source_digest: str, job: Job, config: Config, resume: bool = True) -> TargetResult:
    """Rig one target (or skip it when its outputs already match its inputs).

    Never raises for a bad target: the problem becomes ``status="failed"`` and a
    one-line ``error``.  Only an interruption (KeyboardInterrupt) propagates; the
    outputs are written atomically, so it leaves no partial file.
    """
    from .geometry.linsolve import NumericalError
    from .stages.markers import MarkerError

    t0 = time.perf_counter()
    result = TargetResult(job.target, job.stem, "failed", output=job.output, report=job.report)
    try:
        source = prepare_source(source_path, source_digest)
        record = inputs_record(source.digest, job, config)
        report = finished_report(job, record) if resume else None
        result.status = "skipped" if report is not None else "ok"
        if report is None:
            report = _transfer_and_write(source, job, config, record)
        result.quality = quality_figures(report)
    except InputError as e:
        result.status, result.error = "failed", str(e)
    except MarkerError as e:  # automatic markers found no body layout
        culprit = {"source": source_path, "markers": job.markers}.get(e.side, job.target)
        result.status, result.error = "failed", " ".join(f"{culprit}: {e}".split())
    except NumericalError as e:
        result.status, result.error = "failed", " ".join(f"{job.markers or job.target}: transfer failed: {e}".split())
    except Exception as e:  # one target's bug must not sink the batch: report it in one line
        result.status = "failed"
        result.error = " ".join(f"internal error: {type(e).__name__}: {e}".split())
    if result.status == "failed":
        result.output = result.report = ""  # nothing was written for it
    result.seconds = time.perf_counter() - t0
    result.peak_rss_mb = peak_rss_mb()
    return result


def finished_report(job: Job, record: dict) -> dict | None:
    """The report of a finished job whose inputs were ``record`` and whose output is
    intact (its recorded hash), else None."""
    if not (os.path.isfile(job.output) and os.path.isfile(job.report)):
        return None
    try:
        with open(job.report, encoding="utf-8") as f:
            report = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(report, dict) or report.get("inputs") != record:
        return None
    return report if report.get("output_sha256") == file_digest(job.output) else None


def result_on_disk(source: PreparedSource, job: Job, config: Config) -> TargetResult | None:
    """A job's result read back from its outputs when they are finished and match its
    inputs, else None (after an interruption: what finished before the results came in)."""
    try:
        report = finished_report(job, inputs_record(source.digest, job, config))
    except InputError:  # an input that cannot be read now
        return None
    if report is None:
        return None
    return TargetResult(job.target, job.stem, "ok", output=job.output, report=job.report,
                        quality=quality_figures(report))


def _transfer_and_write(source: PreparedSource, job: Job, config: Config, record: dict) -> dict:
    """The transfer of one target, written as ``job.output`` then ``job.report``."""
    from .io import load_character, load_markers
    from .io.atomic import atomic_write
    from .io.gltf_write import write_rig
    from .model.rig import Rig
    from .stages.transfer import transfer

    target = load_character(job.target)
    target = target.mesh if isinstance(target, Rig) else target
    # no marker file: automatic markers (humanoids); a few hand markers are completed
    markers = load_markers(job.markers, source.rig.mesh, target, minimum=1) if job.markers else None
    inputs = tuple(p for p in (source.path, job.target, job.markers) if p)
    if os.path.exists(job.report):
        os.unlink(job.report)  # stale: it must not vouch for the output about to be replaced
    result = transfer(source.rig, target, markers, config)
    write_rig(job.output, result.rig, max_influences=config.weights.max_influences, inputs=inputs)
    report = {**result.report, "inputs": record, "output_sha256": file_digest(job.output)}
    atomic_write(job.report, (json.dumps(report, indent=1) + "\n").encode(), inputs + (job.output,))
    return report


def quality_figures(report: dict) -> dict:
    """The figures of a transfer report that a batch summary lists."""
    corr = report.get("correspondence", {})
    out = {k: corr.get(k) for k in QUALITY_FIGURES}
    out["transfer_seconds"] = report.get("timings", {}).get("total")
    out["fallback_joints"] = len(report.get("skeleton", {}).get("fallback_joints", []))
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


def run_jobs(source: PreparedSource, jobs: list, config: Config | None = None, *, workers: int = 1,
             dask: str | None = None, resume: bool = True):
    """Run ``jobs`` and yield a :class:`TargetResult` for each as it finishes.

    ``workers`` > 1: a pool of that many processes (spawned; each parses the source
    once).  ``dask``: the address of a Dask scheduler (``tcp://host:8786``), or
    ``local:N`` for a local cluster of N worker processes.  Otherwise the jobs run
    one after the other in this process.  Closing the generator (or an interruption)
    cancels the jobs not yet started and stops the local workers.
    """
    config = config or Config()
    if dask:
        yield from _run_on_dask(source, jobs, config, address=dask, resume=resume)
    elif workers > 1 and len(jobs) > 1:
        yield from _run_in_processes(source, jobs, config, workers=workers, resume=resume)
    else:
        for job in jobs:
            yield run_job(source.path, source.digest, job, config, resume)


def transfer_many(source, targets, outdir, *, markers_dir=None, config: Config | None = None, workers: int = 1,
                  dask: str | None = None, resume: bool = True):
    """Rig every target with ``source``; yield a :class:`TargetResult` per target as it finishes.

    Parameters
    ----------
    source : path of the rigged source (.glb/.gltf), parsed once per process.
    targets : paths of the target meshes; ``<stem>.markers.json`` beside each (or in
        ``markers_dir``) links it to the source.  Stems must differ.
    outdir : an existing directory; each target gets ``<stem>.glb`` and ``<stem>.report.json``.
    workers, dask, resume : see :func:`run_jobs`.

    Raises InputError on the first iteration, before any work, for a bad source,
    duplicate stems or a missing ``outdir``; a bad target only makes its own result
    ``"failed"``.
    """
    jobs = plan_jobs(targets, outdir, markers_dir)
    check_outdir(outdir)
    prepared = prepare_source(source)
    yield from run_jobs(prepared, jobs, config, workers=workers, dask=dask, resume=resume)


def check_outdir(outdir) -> None:
    """Raise InputError unless ``outdir`` is a writable directory."""
    outdir = os.fspath(outdir)
    if not os.path.isdir(outdir):
        raise InputError(outdir, "output directory does not exist")
    if not os.access(outdir, os.W_OK | os.X_OK):
        raise InputError(outdir, "output directory is not writable")


#: a job that was running when a pool worker died this many times fails (out of memory, a
#: crash in native code); the other unfinished jobs are retried
WORKER_DEATHS_ALLOWED = 2


def _run_in_processes(source: PreparedSource, jobs: list, config: Config, *, workers: int, resume: bool):
    """:func:`run_jobs` on a pool of spawned processes.  A worker that dies breaks the
    pool: the unfinished jobs go to a new one, so one bad target never sinks the rest.
    A job that was running when a worker died is retried alone first, so that a second
    death names the target that causes it."""
    pending, strikes = list(jobs), {}
    while pending:
        suspects = [job for job in pending if strikes.get(job.stem)]
        now = suspects[:1] or pending
        running, unfinished = yield from _pool_round(source, now, config, workers=workers, resume=resume)
        pending = [job for job in pending if job not in now]
        for job in unfinished:
            found = result_on_disk(source, job, config) if job.stem in running else None
            strikes[job.stem] = strikes.get(job.stem, 0) + (job.stem in running)
            if found is not None:  # it finished; its result was lost with the pool
                yield found
            elif strikes[job.stem] < WORKER_DEATHS_ALLOWED:
                pending.append(job)
            else:
                yield TargetResult(job.target, job.stem, "failed",
                                   error=f"the worker process died while rigging it, {strikes[job.stem]} times "
                                         "(out of memory? killed?)")


def _pool_round(source: PreparedSource, jobs: list, config: Config, *, workers: int, resume: bool):
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
    futures = {pool.submit(_pool_job, source.path, source.digest, job, config, resume): job for job in jobs}
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


def _pool_job(source_path: str, source_digest: str, job: Job, config: Config, resume: bool) -> TargetResult:
    """:func:`run_job` in a pool worker, announced on the pool's queue first.  Stopped by
    a signal, the worker exits once the job has unwound (the pool would otherwise catch
    the interruption and go on with its next job)."""
    global _IN_JOB
    if _STARTED is not None:
        _STARTED.put(job.stem)
    _IN_JOB = True
    try:
        return run_job(source_path, source_digest, job, config, resume)
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
        prepare_source(source_path, source_digest)
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


def _run_on_dask(source: PreparedSource, jobs: list, config: Config, *, address: str, resume: bool):
    """:func:`run_jobs` on a Dask cluster: one task per target; the workers read and write
    the same paths (made absolute: a worker's current directory is its own), so inputs and
    outputs must be on storage they all see at the same place (docs/batch.md)."""
    client, cluster = _dask_client(address)  # first: it says what to install if Dask is missing
    from distributed import as_completed

    source_path = os.path.abspath(source.path)
    futures = {}
    try:
        futures = {client.submit(run_job, source_path, source.digest, _absolute(job), config, resume,
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
