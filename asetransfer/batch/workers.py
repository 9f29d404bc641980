"""Running a batch's jobs in parallel: a pool of spawned processes that survives a worker's
death (:func:`run_in_processes`), or a Dask cluster (:func:`run_on_dask`)."""
from __future__ import annotations

import os

from ..errors import InputError
from ..job import JobOptions
from .jobs import Job, TargetResult, result_on_disk, run_job
from .prepared import PreparedSource

#: a job that was running when a pool worker died this many times fails (out of memory, a
#: crash in native code); the other unfinished jobs are retried
WORKER_DEATHS_ALLOWED = 2


def run_in_processes(prepared: PreparedSource, jobs: list, options: JobOptions, *, workers: int, resume: bool):
    """:func:`run_jobs` on a pool of spawned processes.  A worker that dies breaks the
    pool: the unfinished jobs go to a new one, so one bad target never sinks the rest.
    A job that was running when a worker died is retried alone first, so that a second
    death names the target that causes it."""
    pending, strikes = list(jobs), {}
    while pending:
        suspects = [job for job in pending if strikes.get(job.stem)]
        now = suspects[:1] or pending
        running, unfinished = yield from _pool_round(prepared, now, options, workers=workers, resume=resume)
        pending = [job for job in pending if job not in now]
        for job in unfinished:
            found = result_on_disk(prepared.source, job, options) if job.stem in running else None
            strikes[job.stem] = strikes.get(job.stem, 0) + (job.stem in running)
            if found is not None:  # it finished; its result was lost with the pool
                yield found
            elif strikes[job.stem] < WORKER_DEATHS_ALLOWED:
                pending.append(job)
            else:
                yield TargetResult(job.target, job.stem, "failed",
                                   error=f"the worker process died while rigging it, {strikes[job.stem]} times "
                                         "(out of memory? killed?)")


def _pool_round(prepared: PreparedSource, jobs: list, options: JobOptions, *, workers: int, resume: bool):
    """One pool over ``jobs``, yielding results.  Returns ``(stems that were running,
    unfinished jobs)`` when a worker died, else two empty collections."""
    import concurrent.futures as cf
    import multiprocessing as mp
    from concurrent.futures.process import BrokenProcessPool

    context = mp.get_context("spawn")
    started = context.SimpleQueue()  # the workers say which job they start
    before = set(mp.active_children())
    source = prepared.source
    pool, futures, done = None, {}, set()
    try:
        # made and fed inside the try: a Ctrl-C while a submit starts a worker must stop the
        # workers too, or they write rigs after the summary says "not run"
        pool = cf.ProcessPoolExecutor(max_workers=min(workers, len(jobs)), mp_context=context,
                                      initializer=_start_worker, initargs=(prepared, started, _log_setup()))
        for job in jobs:
            futures[pool.submit(_pool_job, source.path, source.digest, job, options, resume)] = job
        for future in cf.as_completed(futures):
            if isinstance(future.exception(), BrokenProcessPool):
                break
            done.add(futures[future].stem)
            yield _result_of(future, futures[future])
    except BaseException:  # interrupted, or the consumer stopped early: stop the workers cleanly
        for future in futures:
            future.cancel()
        for process in set(mp.active_children()) - before:  # the pool's processes (the submits start them)
            process.terminate()  # SIGTERM: the worker unwinds its job (atomic writes clean up) and exits
        raise
    finally:
        if pool is not None:
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


def _log_setup() -> tuple:
    """``(level, formatters)`` of the batch process's ``asetransfer`` log: its level and the
    formatters of its handlers that can travel to a worker (the command line's
    ``asetransfer: warning: ...``), for :func:`_start_worker` to log alike."""
    import logging
    import pickle

    log = logging.getLogger("asetransfer")
    formatters = []
    for handler in log.handlers:
        try:
            formatters.append(pickle.loads(pickle.dumps(handler.formatter)))
        except Exception:  # noqa: BLE001  (a formatter that cannot travel: the worker's default)
            continue
    return log.level, formatters


def _logging_like(setup: tuple) -> None:
    """In a worker: the ``asetransfer`` log to stderr as the batch process logs (:func:`_log_setup`)."""
    import logging
    import sys

    level, formatters = setup
    log = logging.getLogger("asetransfer")
    log.handlers[:] = []
    for formatter in formatters:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(formatter)
        log.addHandler(handler)
    log.setLevel(level)
    log.propagate = not formatters


def _start_worker(prepared: PreparedSource, started, log_setup: tuple = (0, [])) -> None:
    """Pool initializer: the queue for :func:`_pool_job`, the batch's prepared source
    (read and searched once, in the batch process), its log as the batch process's
    (:func:`_log_setup`: the command line's lines, not bare messages), then the signal
    handlers of :func:`_stop_worker`.

    While it starts, a worker has nothing to clean up: Ctrl-C is left to the batch
    process (which stops the pool) and SIGTERM just ends it, without a traceback.
    """
    import signal

    global _STARTED
    _STARTED = started
    _logging_like(log_setup)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    prepared.install()
    signal.signal(signal.SIGINT, _stop_worker)
    signal.signal(signal.SIGTERM, _stop_worker)


def local_cluster_size(address: str) -> int | None:
    """N of ``local:N`` (None for a scheduler address); raises ValueError for a bad N."""
    if not address.startswith("local:"):
        return None
    n = address[len("local:"):]
    if not (n.isascii() and n.isdigit()) or int(n) < 1:
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
        import dask

        # one thread per worker process: a transfer is single-job work, processes give the parallelism.
        # Dask sets MALLOC_TRIM_THRESHOLD_ in its workers, which turns off glibc's adaptive mmap
        # threshold: every freed large array goes back to the kernel and the next one page-faults
        # (measured: a 13k transfer 0.90 s in such a worker, 0.70 s without); None unsets it
        with dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}):
            cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None,
                                   silence_logs=logging.ERROR)
        return Client(cluster), cluster
    try:
        return Client(address, timeout="20s"), None
    except (OSError, TimeoutError, ValueError) as e:
        raise InputError(None, f"cannot reach the Dask scheduler at {address}: {e}") from None


def run_on_dask(prepared: PreparedSource, jobs: list, options: JobOptions, *, address: str, resume: bool):
    """:func:`run_jobs` on a Dask cluster: one task per target, the prepared source sent
    once to every worker; the workers read and write the same paths (made absolute: a
    worker's current directory is its own), so inputs and outputs must be on storage they
    all see at the same place (docs/batch.md)."""
    client, cluster = _dask_client(address)  # first: it says what to install if Dask is missing
    from distributed import as_completed

    source_path = os.path.abspath(prepared.source.path)
    futures = {}
    try:
        shared = client.scatter(prepared, broadcast=True)
        futures = {client.submit(_dask_job, shared, source_path, _absolute(job), options, resume,
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


def _dask_job(prepared: PreparedSource, source_path: str, job: Job, options: JobOptions, resume: bool):
    """:func:`run_job` on a Dask worker, with the batch's prepared source installed (once:
    the worker keeps the one object it was sent)."""
    global _INSTALLED
    if _INSTALLED is not prepared:
        prepared.install()
        _INSTALLED = prepared
    return run_job(source_path, prepared.source.digest, job, options, resume)


_INSTALLED = None  # on a Dask worker: the prepared source installed last


def _absolute(job: Job) -> Job:
    """``job`` with absolute paths."""
    return Job(*(None if path is None else os.path.abspath(path)
                 for path in (job.target, job.markers, job.output, job.report)))
