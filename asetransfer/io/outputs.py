"""Every output of a command checked against every input and every other output, before any work.

A command lists what it will write (:class:`Output`: the path, the option that named
it, the extensions that fit what is written) and what it reads; :func:`check_outputs`
refuses, as one-line :class:`~asetransfer.errors.InputError`, an output that

* has an extension that does not match the bytes written (``-o rigged.obj`` for a GLB),
* lies in a missing directory, or is a directory,
* is an input under any spelling (the same path, a symbolic link, a hard link: the same
  inode), or is another output of the same command (two writes, one file),
* lies in a directory that does not take a new file (read-only, no permission: probed by
  creating and removing a temporary file, which also removes stale ``.part`` files of
  interrupted runs).

So a typo costs no computation, and an input is never destroyed.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from ..errors import InputError


@dataclass(frozen=True)
class Output:
    """One file a command will write."""

    path: str
    option: str             # the option that names it ("-o", "--report", "--debug-dir")
    extensions: tuple       # lower-case extensions that fit what is written (".glb", ".gltf")


def _identity(path: str):
    """What makes two paths the same file: the inode of an existing file, else the resolved path."""
    try:
        st = os.stat(path)
        return ("inode", st.st_dev, st.st_ino)
    except OSError:
        return ("path", os.path.normcase(os.path.realpath(path)))


def _check_extension(out: Output) -> None:
    ext = os.path.splitext(out.path)[1].lower()
    if ext not in out.extensions:
        raise InputError(out.path, f"{out.option} must end in {' or '.join(out.extensions)} "
                                   f"(that is what is written), not {ext or 'no extension'!r}")


def check_outputs(outputs, inputs) -> None:
    """Raise InputError unless every output can be written without touching an input or another output.

    Parameters
    ----------
    outputs : iterable of Output
    inputs : iterable of str or None
        Every file the command reads (None entries are skipped).
    """
    from .atomic import check_output_path, probe_directory, remove_stale_parts

    outputs = list(outputs)
    inputs = [os.fspath(p) for p in inputs if p is not None]
    input_ids = {_identity(p): p for p in inputs}
    seen = {}
    for out in outputs:
        ident = _identity(out.path)
        if ident in input_ids:
            raise InputError(out.path, f"{out.option} is one of the input files ({input_ids[ident]}, or a "
                                       "link to it); refusing to overwrite it")
        if ident in seen:
            raise InputError(out.path, f"{seen[ident].option} and {out.option} name the same file; "
                                       "give them different names")
        seen[ident] = out
        check_output_path(out.path, inputs)  # the directory exists, the path is not a directory
    for out in outputs:
        _check_extension(out)
    for out in outputs:
        remove_stale_parts(out.path)
        probe_directory(out.path)
