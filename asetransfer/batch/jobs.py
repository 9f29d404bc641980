"""One target of a batch: its paths (:class:`Job`), the whole job for it (:func:`run_job`,
never raising for a bad target), what it depends on (:func:`inputs_record`, for resuming),
its result (:class:`TargetResult`), and the batch's output folder and QA gallery."""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import sys
from dataclasses import dataclass, field

from .._version import __version__
from ..errors import InputError
from ..job import JobOptions, SourceFile, file_digest, load_source
from ..model.report import InputsRecord, Stopwatch, TransferReport

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
    package the outputs need, a markers folder that is not there, and two targets with the
    same stem (their outputs would collide)."""
    from ..io import RIG_OUTPUT_EXTENSIONS, USD_EXTENSIONS

    if rig_format.lower() not in RIG_OUTPUT_EXTENSIONS:
        raise InputError(None, f"--format must be one of {', '.join(e[1:] for e in RIG_OUTPUT_EXTENSIONS)}, "
                               f"not {rig_format[1:]!r}")
    if rig_format.lower() in USD_EXTENSIONS:
        from ..io.usd import require_usd

        require_usd(outdir)
    preview = preview or qa
    if preview:
        from ..io.preview import require_preview

        require_preview(outdir)
    if markers_dir is not None and not os.path.isdir(markers_dir):
        # a typo would rig every target with automatic markers instead of the TD's
        raise InputError(markers_dir, "the markers folder does not exist" if not os.path.exists(markers_dir)
                         else "the markers folder is not a folder")
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
    """SHA-256 of every option of a run: the Config's parameters (blend shapes among them),
    the hand-off and clips asked for and the content of the calibration file."""
    text = json.dumps({"config": dataclasses.asdict(options.config), "tpose": options.tpose, "clips": options.clips,
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
    from ..job import transfer_files

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


def write_qa_index(outdir, jobs: list, results: dict, source, inputs=()) -> str:
    """Write ``OUTDIR/index.html``, the gallery of the targets' QA pages, worst verdict first
    (:func:`~asetransfer.io.qa_page.render_index`): each job's verdict and notes from its
    report, a failed job's error, a job not run (interrupted) as such; returns its path.
    ``results``: stem -> :class:`TargetResult`."""
    from ..io.qa_page import gallery_entry, write_index

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


def remove_stale_parts(jobs: list, options: JobOptions, outdir) -> list:
    """Remove the temporary files killed runs left of every output of ``jobs`` and of the
    batch's own files in ``outdir``; returns them.  A target already done is skipped, so its
    own writes would never clean them up."""
    from ..io.atomic import remove_stale_parts as remove_parts
    from ..job import OutputPaths

    paths = [out.path for job in jobs for out in OutputPaths.plan(job.output, options, job.report, job.preview,
                                                                  job.qa).checked()]
    return remove_parts(*paths, *(os.path.join(outdir, name) for name in ("summary.json", "summary.csv",
                                                                            "index.html")))


@contextlib.contextmanager
def outdir_for_the_run(outdir):
    """:func:`make_outdir` for the block that runs the jobs: refused before writing anything
    (no Dask scheduler at the address given), the folder it made is removed again."""
    made = not os.path.isdir(outdir)
    make_outdir(outdir)
    try:
        yield
    except InputError:
        if made and not os.listdir(outdir):
            os.rmdir(outdir)
        raise


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
