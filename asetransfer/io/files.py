"""glTF 2.0 container: the JSON document, its binary buffers and typed accessors.

We read the JSON ourselves rather than through a glTF object model so that every
malformed file gets a precise one-line :class:`~asetransfer.errors.InputError`
(which accessor, which field), and so that written files are byte-reproducible.
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
