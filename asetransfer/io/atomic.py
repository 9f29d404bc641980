"""Atomic output: never a partial file, never an overwritten input."""
from __future__ import annotations

import os
import tempfile

from ..errors import InputError


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
    interruption (exception, Ctrl-C) leaves either the old file or nothing.  A
    failing write (no permission, disk full) is an :class:`InputError` on ``path``.
    """
    check_output_path(path, inputs)
    path = os.fspath(path)
    parent = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".part", dir=parent)
    except OSError as e:
        raise InputError(path, f"cannot write to directory {parent} ({e.strerror or e})") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise InputError(path, f"cannot write file ({e.strerror or e})") from None
        raise
