"""``asetransfer`` command line entry point.

Each command module builds its parser from light imports only and loads the
library inside ``run``, so ``--help`` and ``info`` start fast.

Exit codes: 0 success, 2 bad input (one-line message naming the file and the
problem), 1 internal error, 130 interrupted (Ctrl-C), 143 terminated (SIGTERM),
141 stdout closed early (``asetransfer info --json F | head``: quiet, as Unix tools).
"""
from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
import warnings

from asetransfer._version import __version__
from asetransfer.errors import InputError

from . import batch, calibrate, correspond, info, markers, retarget, transfer

COMMANDS = (info, markers, correspond, transfer, batch, calibrate, retarget)


class _Parser(argparse.ArgumentParser):
    """argparse with usage errors as one line and exit code 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="asetransfer",
                description="Transfer a rigged character's skeleton and skin weights to a new mesh.")
    p.add_argument("--version", action="version", version=f"asetransfer {__version__}")
    p.add_argument("-q", "--quiet", action="store_true", help="print errors only")
    p.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    # -q / --debug are accepted after the command too (SUPPRESS: no default to clobber)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS, help="print errors only")
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="show tracebacks of internal errors")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    add = sub.add_parser
    sub.add_parser = lambda *a, **k: add(*a, parents=[common], **k)
    for cmd in COMMANDS:
        cmd.add_parser(sub)
    return p


class _Formatter(logging.Formatter):
    """``asetransfer: warning: message``, one line."""

    def format(self, record):
        return f"asetransfer: {record.levelname.lower()}: {' '.join(record.getMessage().split())}"


def _setup_logging(quiet: bool):
    """Send the library's log to stderr as ``asetransfer: warning: ...``; returns an undo function."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_Formatter())
    log = logging.getLogger("asetransfer")
    saved = (log.handlers[:], log.level, log.propagate)
    log.handlers[:] = [handler]
    log.setLevel(logging.ERROR if quiet else logging.INFO)
    log.propagate = False

    def undo():
        log.handlers[:], log.level, log.propagate = saved[0], saved[1], saved[2]

    return undo


class Terminated(BaseException):
    """SIGTERM, raised where the program is, so that it unwinds like Ctrl-C (temporary files removed)."""


@contextlib.contextmanager
def _sigterm_unwinds():
    """Within the block, SIGTERM raises :class:`Terminated` (only the main thread can set handlers)."""
    def terminate(signum, frame):
        raise Terminated()
    try:
        old = signal.signal(signal.SIGTERM, terminate)
    except ValueError:  # not the main thread: leave the default
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def _stdout_closed() -> int:
    """The reader of our stdout went away: say nothing more, as ``head``-fed Unix tools do."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so that the interpreter's final flush does not fail again
    except (OSError, ValueError, AttributeError):
        pass
    return 141  # 128 + SIGPIPE, what the shell reports for a tool killed by the broken pipe


def main(argv=None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help, --version, usage errors
        return int(e.code or 0)
    if args.command is None:
        parser.print_help()
        return 2
    undo_logging = _setup_logging(args.quiet)
    try:
        with _sigterm_unwinds(), warnings.catch_warnings():
            # numerical warnings are checked where they matter (results are validated before
            # writing); on stderr they would only break the one-line contract
            warnings.simplefilter("ignore", RuntimeWarning)
            code = args.run(args) or 0
            sys.stdout.flush()
            return code
    except InputError as e:
        print(f"asetransfer: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return _stdout_closed()
    except KeyboardInterrupt:
        print("asetransfer: interrupted", file=sys.stderr)
        return 130
    except Terminated:
        print("asetransfer: terminated", file=sys.stderr)
        return 143
    except Exception as e:  # anything else is our bug: say so in one line
        if args.debug:
            raise
        msg = " ".join(str(e).split())
        print(f"asetransfer: internal error: {type(e).__name__}: {msg} (rerun with --debug for a traceback)",
              file=sys.stderr)
        return 1
    finally:
        undo_logging()


def entry_point() -> None:
    """Console script: exit with :func:`main`'s code."""
    sys.exit(main())


if __name__ == "__main__":
    entry_point()
