"""Errors the user can act on.

Every problem with an input file is raised as :class:`InputError`, whose text is
one line naming the file and the problem.  The command line turns it into exit
code 2; anything else that escapes is an internal error (exit code 1).
"""
from __future__ import annotations

import os


class InputError(Exception):
    """A problem with something the user gave us (a file, a marker, an option).

    Parameters
    ----------
    path : str or os.PathLike or None
        The file the problem is in (``None`` for problems not tied to a file).
    message : str
        What is wrong, as one line.
    """

    def __init__(self, path, message: str):
        self.path = None if path is None else os.fspath(path)
        self.message = " ".join(str(message).split())  # always one line
        super().__init__(self.message if self.path is None else f"{printable_path(self.path)}: {self.message}")


def printable_path(path) -> str:
    """``path`` for a one-line message: control characters (a newline in a file name) as escapes.

    >>> printable_path("a\\nb.glb")
    'a\\\\nb.glb'
    """
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(path))
