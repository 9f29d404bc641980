"""Atomic output: never a partial file, never an overwritten input.

Outputs are written to a temporary file next to them, named
``.NAME.asetransfer-PID-RANDOM.part``, and renamed over ``NAME`` when complete.
Only a process killed outright (SIGKILL, power loss) can leave such a file; the
next run that checks or writes ``NAME`` removes it once its writer is gone: the
process ``PID`` no longer runs, or the process that has that number now started
after the file was last written (a number used again: in a container every run
may be process 1).  So the name is what makes the clean-up safe: it never touches
a file another tool made, nor one a running asetransfer is still writing.

All the outputs of one command are one :func:`transaction`: inside it each write
stays in its temporary file until the block ends, then all are renamed together;
a failure anywhere (a full disk on the third file) removes every one of them.
"""
from __future__ import annotations

import contextlib
import contextvars
import os
import tempfile

from ..errors import InputError

PART_SUFFIX = ".part"
#: between an output's name and the writer's process number in its temporary file's name
PART_MARK = ".asetransfer-"
#: inside a :func:`transaction`: the ``(temporary file, final path)`` pairs written so far
_STAGED: contextvars.ContextVar = contextvars.ContextVar("asetransfer_staged_writes", default=None)


def _part_prefix(path: str, pid: int | None = None) -> str:
    """``.NAME.asetransfer-PID-``: the start of every temporary file for ``path``."""
    return f".{os.path.basename(path)}{PART_MARK}{os.getpid() if pid is None else pid}-"


def _is_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True  # another user's process (or an absurd number): leave its file alone
    return True


def _started_at(pid: int) -> float | None:
    """When process ``pid`` started (seconds since the epoch, rounded down), or None where
    the system does not say (no Linux ``/proc``).  ``/proc/PID/stat`` field 22 is its start
    in clock ticks after boot, ``btime`` of ``/proc/stat`` the boot in whole seconds."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()  # after the name, which may hold spaces
        with open("/proc/stat", "rb") as f:
            boot = next(int(line.split()[1]) for line in f if line.startswith(b"btime "))
        return boot + int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def _writer_gone(pid: int, part: str) -> bool:
    """Whether the process that wrote ``part`` (named after ``pid``) has ended: ``pid`` does
    not run, or the process ``pid`` now is started after ``part`` was last written (a
    second's margin for the boot time's rounding), so it cannot be the writer."""
    if not _is_running(pid):
        return True
    started = _started_at(pid)
    try:
        return started is not None and os.stat(part).st_mtime < started - 1.0
    except OSError:
        return False


def remove_stale_parts(*paths) -> list:
    """Remove the temporary files of ``paths`` left by asetransfer runs whose writer is gone
    (:func:`_writer_gone`); returns them.  Each directory is listed once, however many of
    its files are named (a batch's outputs)."""
    heads = {}
    for path in paths:
        path = os.fspath(path)
        heads.setdefault(os.path.dirname(os.path.abspath(path)), set()).add(
            f".{os.path.basename(path)}{PART_MARK}")
    removed = []
    for parent, wanted in heads.items():
        try:
            names = os.listdir(parent)
        except OSError:
            continue
        for name in names:
            cut = name.rfind(PART_MARK) + len(PART_MARK)
            if not (PART_MARK in name and name.endswith(PART_SUFFIX) and name[:cut] in wanted):
                continue
            pid_text = name[cut:].split("-", 1)[0]
            part = os.path.join(parent, name)
            if not (pid_text.isascii() and pid_text.isdigit()) or not _writer_gone(int(pid_text), part):
                continue
            try:
                os.unlink(part)
                removed.append(part)
            except OSError:
                pass
    return removed


def _make_part(path: str) -> tuple:
    """A new temporary file next to ``path``: ``(fd, its path)``; InputError if the directory is not writable."""
    parent = os.path.dirname(os.path.abspath(path))
    try:
        return tempfile.mkstemp(prefix=_part_prefix(path), suffix=PART_SUFFIX, dir=parent)
    except OSError as e:
        raise InputError(path, f"cannot write to directory {parent} ({e.strerror or e})") from None


def probe_directory(path) -> None:
    """Raise InputError now if ``path``'s directory cannot take a new file (read-only, no permission).

    The probe is the write itself (a temporary file, removed at once): permission bits
    do not tell a read-only file system, and they do not bind root.
    """
    fd, tmp = _make_part(os.fspath(path))
    os.close(fd)
    os.unlink(tmp)


def check_output_path(path, inputs=()) -> None:
    """Raise InputError if ``path`` cannot be written or would overwrite an input."""
    path = os.fspath(path)
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise InputError(path, f"output directory {parent} does not exist")
    if os.path.isdir(path):
        raise InputError(path, "output path is a directory")
    real = os.path.realpath(path)
    for inp in inputs:
        if inp is None:
            continue
        inp = os.fspath(inp)
        same = os.path.realpath(inp) == real
        if not same and os.path.exists(path) and os.path.exists(inp):
            same = os.path.samefile(inp, path)
        if same:
            raise InputError(path, "output path is one of the input files; refusing to overwrite it")


def atomic_write(path, data: bytes, inputs=()) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same directory.

    The temporary file is renamed over ``path`` only when complete, so an
    interruption (exception, Ctrl-C, SIGTERM) leaves either the old file or nothing.
    A failing write (no permission, disk full) is an :class:`InputError` on ``path``.
    """
    check_output_path(path, inputs)
    path = os.fspath(path)
    remove_stale_parts(path)
    fd, tmp = _make_part(path)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        staged = _STAGED.get()
        if staged is None:
            os.replace(tmp, path)
        else:
            staged.append((tmp, path))
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise InputError(path, f"cannot write file ({e.strerror or e})") from None
        raise


@contextlib.contextmanager
def transaction():
    """Make every :func:`atomic_write` inside the block one transaction.

    The writes go to their temporary files as usual; when the block ends normally they
    are renamed over their paths together, and when it raises (an error, Ctrl-C, a full
    disk on the last file) every temporary file is removed: a failed command leaves no
    output, not even the ones it had finished.  Nested blocks join the outermost one.
    """
    if _STAGED.get() is not None:
        yield
        return
    staged = []
    token = _STAGED.set(staged)
    try:
        yield
    except BaseException:
        _discard(staged)
        raise
    finally:
        _STAGED.reset(token)
    for k, (tmp, path) in enumerate(staged):
        try:
            os.replace(tmp, path)
        except OSError as e:
            _discard(staged[k:])
            raise InputError(path, f"cannot write file ({e.strerror or e})") from None


def _discard(staged) -> None:
    """Remove the temporary files of ``staged`` writes."""
    for tmp, _ in staged:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def written_path(path) -> str:
    """Where the bytes last written to ``path`` are now: its temporary file while a
    :func:`transaction` is open, else ``path`` itself (to hash an output before it lands)."""
    path = os.fspath(path)
    for tmp, final in reversed(_STAGED.get() or ()):
        if final == path:
            return tmp
    return path
