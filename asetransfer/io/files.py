"""Generic helpers for reading a user's file: its bytes, or its content as JSON.

Every failure -- missing file, a directory, unreadable, empty, not UTF-8, invalid
JSON -- becomes a one-line :class:`~asetransfer.errors.InputError` naming the file
(and, for JSON, the line and column), never a traceback.  The format readers
(:mod:`.markers`, :mod:`.calibration`, :mod:`.bvh`, :mod:`.mapfile`, :mod:`.glb`,
:mod:`.meshfile`) start here.
"""
from __future__ import annotations

import json

from ..errors import InputError


def read_bytes(path) -> bytes:
    """The file's bytes, with missing/unreadable/empty files reported as InputError."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise InputError(path, "file not found") from None
    except IsADirectoryError:
        raise InputError(path, "is a directory, not a file") from None
    except OSError as e:
        raise InputError(path, f"cannot read file ({e.strerror or e})") from None
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
        return json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise InputError(path, f"{what} is not UTF-8 text") from None
    except json.JSONDecodeError as e:
        raise InputError(path, f"invalid JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
    except RecursionError:
        raise InputError(path, "invalid JSON: nested too deeply") from None
