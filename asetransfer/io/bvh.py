"""BVH motion files: parse, read, format and write :class:`~asetransfer.model.bvh.Bvh`.

A BVH file is text: a ``HIERARCHY`` section listing the joints depth first::

    HIERARCHY
    ROOT Hips
    {
      OFFSET 0 0 0
      CHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation
      JOINT Spine
      {
        OFFSET 0 10 0
        CHANNELS 3 Zrotation Xrotation Yrotation
        End Site
        {
          OFFSET 0 5 0
        }
      }
    }

then a ``MOTION`` section: ``Frames: F``, ``Frame Time: seconds`` and F rows of
channel values, the joints' channels in file order (angles in degrees).  Keywords
and channel names are read in any case; several ``ROOT`` blocks are accepted.  What
the numbers mean (``OFFSET``, channel order, forward kinematics) is documented with
the type, :mod:`asetransfer.model.bvh`.

Reading reports anything malformed as an :class:`~asetransfer.errors.InputError`
naming the line.  Writing is deterministic: numbers rounded to 6 decimals (the
frame time to 9) in their shortest form, atomic (:func:`~.atomic.atomic_write`).
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError
from .atomic import atomic_write
from .files import read_bytes
from ..model.bvh import CHANNEL_NAMES, Bvh
from ..model.hierarchy import Hierarchy
from ..model.mesh import COORDINATE_LIMIT

log = logging.getLogger("asetransfer")
_DIGITS = 6  # decimals written (angles in degrees, lengths in file units)


# ---------------------------------------------------------------------- reading
class _Tokens:
    def __init__(self, path, text: str):
        self.path = path
        self.items = [(tok, n) for n, line in enumerate(text.splitlines(), 1) for tok in line.split()]
        self.i = 0

    def fail(self, msg, line=None):
        if line is None:
            line = self.items[min(self.i, len(self.items) - 1)][1] if self.items else 1
        raise InputError(self.path, f"line {line}: {msg}")

    def peek(self):
        return self.items[self.i][0] if self.i < len(self.items) else None

    def next(self, what):
        if self.i >= len(self.items):
            raise InputError(self.path, f"unexpected end of file (expected {what})")
        tok = self.items[self.i]
        self.i += 1
        return tok[0]

    def expect(self, word):
        tok = self.next(repr(word))
        if tok.upper() != word.upper():
            self.fail(f"expected {word!r}, found {tok!r}", self.items[self.i - 1][1])

    def number(self, what):
        tok = self.next(what)
        try:
            x = float(tok)
        except ValueError:
            x = math.nan
        if not math.isfinite(x):
            self.fail(f"expected a number ({what}), found {tok!r}", self.items[self.i - 1][1])
        if abs(x) > COORDINATE_LIMIT:
            self.fail(f"{what} {tok} is beyond {COORDINATE_LIMIT:.3g} (the 32-bit float range)",
                      self.items[self.i - 1][1])
        return x


def parse_bvh(path, text: str) -> Bvh:
    """Parse BVH text; errors are :class:`InputError` naming the line."""
    t = _Tokens(path, text)
    t.expect("HIERARCHY")
    h = _Hierarchy()
    while t.peek() is not None and t.peek().upper() == "ROOT":
        t.next("ROOT")
        _parse_joint(t, h, -1)
    if not h.names:
        t.fail("no ROOT joint")
    frame_time, motion = _parse_motion(t, sum(len(c) for c in h.channels))
    try:
        return Bvh(h.names, h.parents, h.offsets, h.channels, h.end_sites, frame_time, motion)
    except ValueError as e:
        raise InputError(path, str(e)) from None


@dataclass
class _Hierarchy:
    """The joints parsed so far, in file order (the fields of :class:`Bvh`)."""

    names: list = field(default_factory=list)
    parents: list = field(default_factory=list)
    offsets: list = field(default_factory=list)
    channels: list = field(default_factory=list)
    end_sites: dict = field(default_factory=dict)


def _open_joint(t: _Tokens, h: _Hierarchy, parent: int) -> tuple:
    """A joint's name and ``{`` (its ``ROOT``/``JOINT`` keyword already read): ``(index, name, line)``."""
    name_line = t.items[t.i][1] if t.i < len(t.items) else None
    name = t.next("joint name")
    if name == "{":
        t.fail("joint has no name", name_line)
    if name in h.names:
        t.fail(f"joint name {name!r} is used twice", name_line)
    j = len(h.names)
    h.names.append(name)
    h.parents.append(parent)
    h.offsets.append(None)
    h.channels.append(())
    t.expect("{")
    return j, name, name_line


def _parse_joint(t: _Tokens, h: _Hierarchy, parent: int) -> None:
    """One ``ROOT`` block (its keyword already read) and all its descendants.

    Iterative, with the open joints on a stack: files nest joints thousands deep
    (a rope, a tail, a damaged file), which recursion cannot follow.
    """
    stack = [_open_joint(t, h, parent)]
    while stack:
        j, name, name_line = stack[-1]
        tok = t.next("'}'")
        key = tok.upper()
        if key == "OFFSET":
            h.offsets[j] = [t.number("OFFSET x"), t.number("OFFSET y"), t.number("OFFSET z")]
        elif key == "CHANNELS":
            h.channels[j] = _parse_channels(t, name)
        elif key == "JOINT":
            stack.append(_open_joint(t, h, j))
        elif key == "END":
            t.expect("Site")
            t.expect("{")
            t.expect("OFFSET")
            h.end_sites[j] = [t.number("End Site x"), t.number("End Site y"), t.number("End Site z")]
            t.expect("}")
        elif tok == "}":
            if h.offsets[j] is None:
                t.fail(f"joint {name!r} has no OFFSET", name_line)
            stack.pop()
        else:
            t.fail(f"unexpected {tok!r} in joint {name!r}")


def _parse_channels(t: _Tokens, joint: str) -> tuple:
    """The count and names after ``CHANNELS`` (already read), names in their canonical case."""
    line = t.items[t.i - 1][1]
    n = t.number("channel count")
    if n != int(n) or not 0 <= n <= 6:
        t.fail(f"channel count must be 0..6, got {n:g}", line)
    ch = tuple(t.next("channel name") for _ in range(int(n)))
    bad = [c for c in ch if c.lower() not in CHANNEL_NAMES]
    if bad:
        t.fail(f"unknown channel {bad[0]!r} in joint {joint!r}", line)
    ch = tuple(CHANNEL_NAMES[c.lower()] for c in ch)
    if len(set(ch)) != len(ch):
        t.fail(f"joint {joint!r} lists a channel twice", line)
    return ch


def _parse_motion(t: _Tokens, n_channels: int) -> tuple:
    """The ``MOTION`` section: frame time (seconds) and (F, n_channels) channel values."""
    t.expect("MOTION")
    t.expect("Frames:")
    nf = t.number("frame count")
    if nf != int(nf) or nf < 1:
        t.fail("frame count must be a positive integer")
    t.expect("Frame")
    t.expect("Time:")
    ft = t.number("frame time")
    if not ft > 0:
        t.fail("frame time must be positive")
    values = t.items[t.i:]
    if len(values) != int(nf) * n_channels:
        raise InputError(t.path, f"MOTION has {len(values)} values, "
                                 f"expected {int(nf)} frames x {n_channels} channels")
    try:
        motion = np.array([float(v) for v, _ in values], dtype=np.float64).reshape(int(nf), n_channels)
    except ValueError:
        bad = next((v, n) for v, n in values if not _is_float(v))
        raise InputError(t.path, f"line {bad[1]}: expected a number in MOTION, found {bad[0]!r}") from None
    if not np.isfinite(motion).all():
        raise InputError(t.path, "MOTION has NaN or infinite values")
    if np.abs(motion).max() > COORDINATE_LIMIT:
        raise InputError(t.path, f"MOTION has values beyond {COORDINATE_LIMIT:.3g} (the 32-bit float range)")
    return ft, motion


def _is_float(s):
    try:
        float(s)
        return True
    except ValueError:
        return False


def read_bvh(path) -> Bvh:
    """Read a BVH file (:class:`InputError` for anything malformed)."""
    data = read_bytes(path)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(path, "not a BVH file (not UTF-8 text)") from None
    return parse_bvh(path, text)


# ---------------------------------------------------------------------- writing
def _fmt(x: float, digits: int = _DIGITS) -> str:
    s = np.format_float_positional(round(float(x), digits) + 0.0, trim="-")
    return "0" if s in ("-0", "0") else s


def format_bvh(bvh: Bvh) -> str:
    """BVH text (deterministic: numbers rounded to 6 decimals, shortest form)."""
    bvh.validate()
    lines = ["HIERARCHY"]
    children = [[] for _ in bvh.names]
    for j, p in enumerate(bvh.parents):
        if p >= 0:
            children[p].append(j)

    def emit(j, depth):
        pad = "  " * depth
        lines.append(f"{pad}{'ROOT' if bvh.parents[j] < 0 else 'JOINT'} {bvh.names[j]}")
        lines.append(pad + "{")
        lines.append(f"{pad}  OFFSET {' '.join(_fmt(v) for v in bvh.offsets[j])}")
        lines.append(f"{pad}  CHANNELS {len(bvh.channels[j])}" + "".join(" " + c for c in bvh.channels[j]))
        for c in children[j]:
            emit(c, depth + 1)
        if j in bvh.end_sites:
            lines.extend([f"{pad}  End Site", f"{pad}  {{",
                          f"{pad}    OFFSET {' '.join(_fmt(v) for v in bvh.end_sites[j])}", f"{pad}  }}"])
        lines.append(pad + "}")

    if Hierarchy(bvh.parents).depth_first().tolist() != list(range(bvh.n_joints)):  # the file lists joints depth first
        raise ValueError("BVH joints must be in depth-first order (use animation_to_bvh)")
    for j in range(bvh.n_joints):
        if bvh.parents[j] < 0:
            emit(j, 0)
    lines += ["MOTION", f"Frames: {bvh.n_frames}", f"Frame Time: {_fmt(bvh.frame_time, 9)}"]
    lines += [" ".join(_fmt(v) for v in row) for row in bvh.motion]
    return "\n".join(lines) + "\n"


def write_bvh(path, bvh: Bvh, inputs=()) -> None:
    """Write ``bvh`` to ``path`` atomically."""
    atomic_write(path, format_bvh(bvh).encode("utf-8"), inputs=inputs)
