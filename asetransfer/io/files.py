"""Generic helpers for reading a user's file: its bytes, or its content as JSON.

Every failure -- missing file, a directory, unreadable, empty, not text, invalid
JSON -- becomes a one-line :class:`~asetransfer.errors.InputError` naming the file
(and, for JSON, the line and column), never a traceback.  The format readers
(:mod:`.markers`, :mod:`.calibration`, :mod:`.bvh`, :mod:`.mapfile`, :mod:`.glb`,
:mod:`.meshfile`) start here.

A small JSON file (markers, a calibration) may also come from a pipe (``--markers
<(jq ... m.json)``, a FIFO): it is read once, to its end, up to :data:`MAX_PIPED_BYTES`.
Its text may be UTF-8 (with or without a byte-order mark), UTF-16 or UTF-32 (what
Windows editors save as "Unicode"), told apart as RFC 4627 says.
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


#: [bytes] the most read from a pipe: a marker or calibration file is kilobytes (300 markers: 60 kB),
#: and a pipe that never ends (``<(cat /dev/zero)``) must not fill the memory
MAX_PIPED_BYTES = 64 << 20


def read_bytes(path) -> bytes:
    """The file's bytes, with missing/unreadable/empty/non-regular files reported as InputError."""
    data = read_regular_file(path)
    if not data:
        raise InputError(path, "file is empty")
    return data


def read_file_or_pipe(path) -> bytes:
    """The bytes of a regular file or of a pipe (a FIFO: read once, to its end, at most
    :data:`MAX_PIPED_BYTES`); devices and sockets are refused as by :func:`read_regular_file`."""
    try:
        piped = stat.S_ISFIFO(os.stat(path).st_mode)
    except OSError:
        piped = False  # the regular read names the fault
    if not piped:
        return read_bytes(path)
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_PIPED_BYTES + 1)
    except OSError as e:
        raise InputError(path, f"cannot read pipe ({e.strerror or e})") from None
    if len(data) > MAX_PIPED_BYTES:
        raise InputError(path, f"the pipe gives more than {MAX_PIPED_BYTES >> 20} MiB; a marker or calibration "
                               "file is far smaller (is the right command feeding it?)")
    if not data:
        raise InputError(path, "the pipe gave no data (did the command feeding it fail?)")
    return data


def decode_text(path, what: str, data: bytes) -> str:
    """The text of a JSON file's bytes: UTF-8 (a byte-order mark allowed), UTF-16 or UTF-32
    (with a byte-order mark, or told by where the zero bytes of the first characters are,
    RFC 4627 §3: ``json.detect_encoding``); InputError naming the encoding that failed."""
    encoding = json.detect_encoding(data)
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as e:
        name = {"utf-8-sig": "UTF-8"}.get(encoding, encoding.upper().replace("-SIG", ""))
        raise InputError(path, f"{what} is not UTF-8 or UTF-16 text (read as {name}: {e.reason} at byte {e.start}); "
                               "save it as UTF-8") from None


def decode_mesh_text(data: bytes) -> str:
    """The text of a text mesh file's bytes (OBJ, OFF): UTF-8 (a byte-order mark allowed), UTF-16
    or UTF-32 (a byte-order mark, or zero bytes among the first characters: Windows tools write
    UTF-16), else Latin-1, in which every byte is a character (names in an old code page)."""
    encoding = json.detect_encoding(data)
    try:
        return data.decode(encoding)
    except UnicodeDecodeError:
        return data.decode("latin-1")


def parse_json_file(path, what: str, data: bytes | None = None):
    """A user's JSON file (marker, calibration file...) parsed, errors as one-line InputError.

    ``what`` names the kind of file in messages ("marker file"); ``data``: the bytes if
    already read.  The file may be a pipe (:func:`read_file_or_pipe`) and its text UTF-8,
    UTF-16 or UTF-32 (:func:`decode_text`).
    """
    data = read_file_or_pipe(path) if data is None else data
    return load_json(path, decode_text(path, what, data))


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
