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
available.  Shared source work: :func:`prepare_source` reads the source and, when a job
finds its markers automatically, searches its landmarks once per batch, in the batch
process; every worker is handed the result (:class:`PreparedSource`) instead of redoing
it, and a folder cache keyed by the source's bytes and this code's keeps it for reruns
and other batches (``$ASETRANSFER_CACHE``, docs/batch.md).  Nothing else of the source
can be shared without changing the output: the correspondence welds, normalises,
Laplacian-factorises and selects the marked pieces of the source *after* moving it into
each target's frame (the marker similarity and the target's bounding-box diagonal), and
the marked pieces depend on each target's marker file, so every system is per target.

Resuming.  Each report records the inputs that made it (:func:`inputs_record`:
content hashes of source, target, markers, the options and the version) and the
hash of the output it goes with; a job whose report matches is skipped.  The
output is written before its report and a stale report is removed first, so an
interrupted job is redone, never mistaken for a finished one.
"""
from __future__ import annotations

from ..job import JobOptions, SourceFile, file_digest, load_source
from .jobs import (Job, TargetResult, finished_report, inputs_record, make_outdir, markers_for, options_digest,
                   outdir_for_the_run, peak_rss_mb, plan_jobs, quality_figures, remove_stale_parts, result_on_disk,
                   run_job, target_stem, write_qa_index)
from .prepared import PreparedSource, prepare_source
from .workers import WORKER_DEATHS_ALLOWED, local_cluster_size, run_in_processes, run_on_dask

__all__ = ["Job", "JobOptions", "PreparedSource", "SourceFile", "TargetResult", "WORKER_DEATHS_ALLOWED",
           "file_digest", "finished_report", "inputs_record", "load_source", "local_cluster_size", "make_outdir",
           "markers_for", "options_digest", "outdir_for_the_run", "peak_rss_mb", "plan_jobs", "prepare_source",
           "quality_figures", "remove_stale_parts", "result_on_disk", "run_job", "run_jobs", "target_stem",
           "transfer_many", "write_qa_index"]


def run_jobs(source: PreparedSource | SourceFile, jobs: list, options: JobOptions | None = None, *,
             workers: int = 1, dask: str | None = None, resume: bool = True):
    """Run ``jobs`` and yield a :class:`TargetResult` for each as it finishes.

    ``source``: :func:`prepare_source`'s (a bare :class:`SourceFile` leaves each worker
    to search its landmarks itself).  ``workers`` > 1: a pool of that many processes (spawned; each reads the source
    once).  ``dask``: the address of a Dask scheduler (``tcp://host:8786``), or
    ``local:N`` for a local cluster of N worker processes.  Otherwise the jobs run
    one after the other in this process.  Closing the generator (or an interruption)
    cancels the jobs not yet started and stops the local workers.
    """
    options = options or JobOptions()
    prepared = source if isinstance(source, PreparedSource) else PreparedSource(source)
    if dask:
        yield from run_on_dask(prepared, jobs, options, address=dask, resume=resume)
    elif workers > 1 and len(jobs) > 1:
        yield from run_in_processes(prepared, jobs, options, workers=workers, resume=resume)
    else:
        prepared.install()
        for job in jobs:
            yield run_job(prepared.source.path, prepared.source.digest, job, options, resume)


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
    options = options or JobOptions()
    # a bad source: nothing made, not even the directory
    prepared = prepare_source(source, options, automatic=any(job.markers is None for job in jobs))
    with outdir_for_the_run(outdir):
        remove_stale_parts(jobs, options, outdir)
        yield from run_jobs(prepared, jobs, options, workers=workers, dask=dask, resume=resume)
