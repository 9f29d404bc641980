"""A batch's source work, done once: the parsed source and, when a job finds its markers
automatically, the source's landmarks.  Kept on disk by content (the source's bytes and
this code), so a rerun or another batch of the same source loads it instead of
recomputing, and handed to every worker (pool initializer, Dask scatter).

Only work that depends on the source alone is here; the correspondence's systems are
per target (see the package's docstring).
"""
from __future__ import annotations

import hashlib
import logging
import os
import pickle
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError
from ..job import JobOptions, SourceFile, file_digest, load_source, remember_source

log = logging.getLogger("asetransfer")

#: environment variable naming the cache folder (default: $XDG_CACHE_HOME/asetransfer or ~/.cache/asetransfer);
#: empty or "off": no disk cache
CACHE_VARIABLE = "ASETRANSFER_CACHE"
#: libraries whose results the prepared source holds: a new version is a new key
_LIBRARIES = ("numpy", "scipy", "trimesh", "igl", "fast_simplification")


@dataclass(eq=False)
class PreparedSource:
    """What every job of a batch needs from its source: the source read (:class:`SourceFile`)
    and the landmarks found on it (content key -> Landmarks, see
    :func:`~asetransfer.stages.markers.kept_landmarks`)."""

    source: SourceFile
    landmarks: dict = field(default_factory=dict)

    def install(self) -> None:
        """Make this process use it: :func:`~asetransfer.job.load_source` returns the source
        without reading it, the landmark search answers from the landmarks found."""
        from ..stages.markers import keep_landmarks

        remember_source(self.source)
        keep_landmarks(self.landmarks)


def cache_folder() -> Path | None:
    """The folder of prepared sources (:data:`CACHE_VARIABLE`), None when turned off."""
    chosen = os.environ.get(CACHE_VARIABLE)
    if chosen is not None:
        return None if chosen.strip().lower() in ("", "off") else Path(chosen)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "asetransfer"


def prepare_source(path, options: JobOptions, automatic: bool) -> PreparedSource:
    """The prepared source at ``path``: from the cache when this code prepared these bytes
    before, else read (InputError for a bad source) and, with ``automatic``, its landmarks
    found, then cached.  A source without a body layout prepares without landmarks (each job
    reports that as its own failure)."""
    digest = file_digest(path)
    cached = _cache_file(digest)
    prepared = _read_cache(cached, path)
    changed = prepared is None
    if changed:
        prepared = PreparedSource(load_source(path, digest))
    prepared.install()
    if automatic and not prepared.landmarks:
        prepared.landmarks = _source_landmarks(prepared.source, options)
        changed = changed or bool(prepared.landmarks)
    if changed:
        _write_cache(cached, prepared)
    return prepared


def _source_landmarks(source: SourceFile, options: JobOptions) -> dict:
    """The landmark searches the source's automatic markers make (none for a source without
    a body layout: its jobs fail with the reason)."""
    from ..stages.markers import MarkerError, kept_landmarks, source_landmarks

    try:
        source_landmarks(source.rig, options.config)
    except MarkerError:
        return {}
    return kept_landmarks(source.rig.mesh)


def _code_digest() -> str:
    """SHA-256 of this package's Python files and the versions of the libraries it computes with."""
    from importlib import metadata

    h = hashlib.sha256(sys.version.encode())
    root = Path(__file__).resolve().parents[1]
    for file in sorted(root.rglob("*.py")):
        h.update(file.relative_to(root).as_posix().encode())
        h.update(file.read_bytes())
    for name in _LIBRARIES:
        try:
            h.update(f"{name}={metadata.version('libigl' if name == 'igl' else name)}".encode())
        except metadata.PackageNotFoundError:
            h.update(f"{name}=none".encode())
    return h.hexdigest()


def _cache_file(digest: str) -> Path | None:
    folder = cache_folder()
    if folder is None:
        return None
    key = hashlib.sha256(f"{digest}:{_code_digest()}".encode()).hexdigest()[:32]
    return folder / f"source-{key}.pickle"


def _read_cache(cached: Path | None, path) -> PreparedSource | None:
    """The prepared source in ``cached`` (its path set to ``path``), else None; a file that
    cannot be read is ignored (and replaced later)."""
    if cached is None or not cached.is_file():
        return None
    try:
        with open(cached, "rb") as f:
            prepared = pickle.load(f)
    except Exception as e:  # noqa: BLE001 -- a cache is never worth a failure
        log.debug("ignoring the prepared source %s: %s", cached, e)
        return None
    if not isinstance(prepared, PreparedSource):
        return None
    prepared.source.path = os.fspath(path)
    return prepared


def _write_cache(cached: Path | None, prepared: PreparedSource) -> None:
    """Write ``prepared`` to ``cached`` atomically in a folder only the user can read (the
    file is a pickle: it is loaded only from there); a folder that cannot be written is
    skipped quietly."""
    if cached is None:
        return
    from ..io.atomic import atomic_write

    try:
        cached.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        atomic_write(cached, pickle.dumps(prepared, protocol=pickle.HIGHEST_PROTOCOL))
    except (OSError, InputError) as e:
        log.debug("the prepared source is not cached: %s", e)
