"""Generic helpers for reading a user's file: its bytes, or its content as JSON.

Every failure -- missing file, a directory, unreadable, empty, not UTF-8, invalid
JSON -- becomes a one-line :class:`~asetransfer.errors.InputError` naming the file
(and, for JSON, the line and column), never a traceback.  The format readers
(:mod:`.markers`, :mod:`.calibration`, :mod:`.bvh`, :mod:`.mapfile`, :mod:`.glb`,
:mod:`.meshfile`) start here.
"""
from __future__ import annotations

import json
import os
import stat

from ..errors import InputError


def read_regular_file(path, what=None) -> bytes:
    """The bytes of a regular file; anything else (a FIFO, /dev/zero, a socket) is refused *before*
    it is opened: opening a FIFO blocks forever and a device never ends.

    Errors are InputError on ``path`` (or on ``what``: ``(file, prefix)`` for a file named inside
    another one, such as a glTF buffer).
    """
    blame, prefix = what if what is not None else (path, "")
    try:
        st = os.stat(path)
        if stat.S_ISDIR(st.st_mode):
            raise InputError(blame, prefix + "is a directory, not a file")
        if not stat.S_ISREG(st.st_mode):
            raise InputError(blame, prefix + "is not a regular file (a pipe, device or socket); "
                                             "give a file saved on disk")
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        raise InputError(blame, prefix + "file not found") from None
    except IsADirectoryError:
        raise InputError(blame, prefix + "is a directory, not a file") from None
    except OSError as e:
        raise InputError(blame, prefix + f"cannot read file ({e.strerror or e})") from None


def read_bytes(path) -> bytes:
    """The file's bytes, with missing/unreadable/empty/non-regular files reported as InputError."""
    data = read_regular_file(path)
    if not data:
        raise InputError(path, "file is empty")
    return data


def parse_json_file(path, what: str, data: bytes | None = None):
    """A user's JSON file (marker, calibration file...) parsed, errors as one-line InputError.

    ``what`` names the kind of file in messages ("marker file"); ``data``: the bytes if
    already read.  A UTF-8 byte-order mark is accepted.
    """
    data = read_bytes(path) if data is None else data
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(path, f"{what} is not UTF-8 text") from None
    return load_json(path, text)


#: longest integer literal accepted in JSON: int64 has 19 digits; longer ones are no count, index
#: or size, and Python refuses to convert beyond 4300 digits anyway
MAX_JSON_INT_DIGITS = 19


def _json_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_JSON_INT_DIGITS:
        raise _JsonLimit(f"integer {text[:12]}... has {len(text.lstrip('-'))} digits (at most "
                         f"{MAX_JSON_INT_DIGITS})")
    return int(text)


class _JsonLimit(ValueError):
    pass


def load_json(path, text: str, kind: str = "JSON"):
    """Every user's JSON (marker, calibration, glTF) parsed through one parser with limits.

    Errors are one-line InputErrors: ``invalid KIND at line L column C: ...``, nesting too
    deep, an integer too long for any count or index (``kind``: "JSON", "glTF JSON").
    """
    try:
        return json.loads(text, parse_int=_json_int)
    except json.JSONDecodeError as e:
        raise InputError(path, f"invalid {kind} at line {e.lineno} column {e.colno}: {e.msg}") from None
    except _JsonLimit as e:
        raise InputError(path, f"invalid {kind}: {e}") from None
    except RecursionError:
        raise InputError(path, f"invalid {kind}: nested too deeply") from None
