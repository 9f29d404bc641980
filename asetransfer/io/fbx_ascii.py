"""The node tree of an ASCII FBX file (FBX 6.x and 7.x), as :mod:`.fbx_binary` gives a binary one.

Maya, 3ds Max and MotionBuilder write FBX as text on request (``; FBX 7.5.0 project
file``).  A node is ``Name: value, value, ... { children }``, the braces only when it has
children, a line ending in a comma continuing on the next; values are numbers, quoted
strings (``&quot;`` for a quote), bare letters (``Shading: T``) and arrays ``*N { a:
v,v,... }``; ``;`` starts a comment.  The tree is made the same as the binary reader's,
so that :mod:`.fbx` reads both alike:

* an object's name ``"Class::Name"`` becomes the binary ``"Name\\x00\\x01Class"``;
* integers are ints, other numbers floats (``1.#INF``, ``-1.#IND``: inf, nan);
* an array is an int64 array when its values are all integers, float64 otherwise;
* an embedded file's ``Content`` (base64 text) becomes its bytes.

Errors raise :class:`~asetransfer.errors.InputError` naming the file and the line.
"""
from __future__ import annotations

import base64
import binascii
import re

import numpy as np

from ..errors import InputError
from .fbx_binary import MAX_DEPTH, FbxNode

_NAME = re.compile(r"([A-Za-z_][\w|\-]*)\s*:")
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?:#[A-Za-z]+)?")
_STRING = re.compile(r'"([^"]*)"')
_BARE = re.compile(r"[A-Za-z_]\w*")
_SPACE = re.compile(r"(?:[ \t\r]+|;[^\n]*)*")
#: bare letters the binary form stores as booleans (``Shading: T``, ``Y``)
_BOOLEANS = {"T": True, "Y": True, "F": False, "N": False}
_COMMENT = re.compile(r";[^\n]*")
_ARRAY = re.compile(r"\*(\d+)\s*\{")
_VERSION_COMMENT = re.compile(rb"^\s*;\s*FBX\s+(\d+)\.(\d+)\.(\d+)")
#: ``Class::Name`` object names (the class a word, the name anything after ``::``)
_CLASS_NAME = re.compile(r"([A-Za-z]\w*)::(.*)", re.DOTALL)


def parse_ascii_fbx(path, data: bytes) -> tuple:
    """The file's version and top-level nodes (:func:`~.fbx_binary.parse_fbx`'s result).

    Returns
    -------
    version : int, e.g. 7500 (the header's ``FBXVersion``, else the first comment's).
    nodes : list of :class:`~.fbx_binary.FbxNode`.
    """
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    nodes = _Parser(path, text).nodes()
    header = next((n for n in nodes if n.name == "FBXHeaderExtension"), None)
    declared = header.child("FBXVersion") if header is not None else None
    if declared is not None and declared.props and isinstance(declared.props[0], int):
        version = declared.props[0]
    else:
        m = _VERSION_COMMENT.match(data)
        version = int(m.group(1)) * 1000 + int(m.group(2)) * 100 + int(m.group(3)) if m else 0
    if not 6000 <= version < 8000:
        raise InputError(path, f"ASCII FBX version {version} is not supported (FBX 6.x and 7.x are)")
    return version, nodes


class _Parser:
    """Reads nodes from ``text``, keeping a position and the depth."""

    def __init__(self, path, text: str):
        self.path, self.text, self.pos = path, text, 0

    def fail(self, msg):
        line = self.text.count("\n", 0, self.pos) + 1
        raise InputError(self.path, f"corrupt ASCII FBX file: {msg} (line {line})")

    def skip(self, newlines: bool) -> None:
        """Past spaces and comments, and newlines too when ``newlines``."""
        while True:
            self.pos = _SPACE.match(self.text, self.pos).end()
            if newlines and self.pos < len(self.text) and self.text[self.pos] == "\n":
                self.pos += 1
                continue
            return

    def nodes(self, depth: int = 0) -> list:
        """Nodes up to the closing brace (consumed) or, at depth 0, the end of the text."""
        if depth > MAX_DEPTH:
            self.fail(f"nodes nested more than {MAX_DEPTH} deep")
        out = []
        while True:
            self.skip(newlines=True)
            if self.pos >= len(self.text):
                if depth:
                    self.fail("a '{' is never closed")
                return out
            if self.text[self.pos] == "}":
                if not depth:
                    self.fail("a '}' closes nothing")
                self.pos += 1
                return out
            m = _NAME.match(self.text, self.pos)
            if m is None:
                self.fail(f"expected a node name, found {self.text[self.pos:self.pos + 20]!r}")
            self.pos = m.end()
            out.append(self.node(m.group(1), depth))

    def node(self, name: str, depth: int) -> FbxNode:
        """The values and children of node ``name`` (its name read)."""
        props, children, after_comma = [], [], False  # a value continues on the next line only after a comma
        while True:
            self.skip(newlines=after_comma)
            c = self.text[self.pos] if self.pos < len(self.text) else "\n"
            if c == "\n" and self._continued(first=not props):
                continue
            if c == "\n" or c == "}":
                break
            if c == "{":
                self.pos += 1
                children = self.nodes(depth + 1)
                break
            if c == ",":
                self.pos += 1
                after_comma = True
                continue
            props.append(self.value(name))
            after_comma = False
        if name == "Content" and props:  # an embedded file: base64 text in the ASCII form, bytes in the binary
            props = [self.decoded(props)]
        return FbxNode(name, props, children)

    def _continued(self, first: bool) -> bool:
        """Whether the next line goes on with the node's values: FBX 6 wraps long lists with
        the comma leading the next line, and Blender's FBX 6 starts a key list on the line
        after its name (``first``: the node has no value yet, and the next line is no node).
        If so, the position moves to the next line's first character."""
        after = _SPACE.match(self.text, self.pos + 1).end()
        if after >= len(self.text):
            return False
        c = self.text[after]
        if c == "," or (first and c not in "{}\n" and _NAME.match(self.text, after) is None):
            self.pos = after
            return True
        return False

    def value(self, node: str):
        """One value at the position: an array, a string, a number or a bare word."""
        text, pos = self.text, self.pos
        if text[pos] == "*":
            return self.array(node)
        m = _STRING.match(text, pos)
        if m is not None:
            self.pos = m.end()
            s = m.group(1).replace("&quot;", '"')
            named = _CLASS_NAME.fullmatch(s)
            return f"{named.group(2)}\x00\x01{named.group(1)}" if named else s
        m = _NUMBER.match(text, pos)
        if m is not None:
            self.pos = m.end()
            return _number(m.group(0))
        m = _BARE.match(text, pos)
        if m is None:
            self.fail(f"unexpected {text[pos:pos + 20]!r} in node {node!r}")
        self.pos = m.end()
        return _BOOLEANS.get(m.group(0), m.group(0))

    def array(self, node: str) -> np.ndarray:
        """``*N { a: v,v,... }`` at the position, as an int64 or float64 array of N values."""
        m = _ARRAY.match(self.text, self.pos)
        end = self.text.find("}", m.end()) if m else -1
        if m is None or end < 0:
            self.fail(f"a malformed array in node {node!r}")
        body = _COMMENT.sub("", self.text[m.end():end]).strip()
        count = int(m.group(1))
        if body.startswith("a"):
            body = body[1:].lstrip(" \t:")
        values = [v for v in re.split(r"[\s,]+", body) if v]
        if len(values) != count:  # errors name the line the array starts on
            self.fail(f"an array of node {node!r} declares {count} values and holds {len(values)}")
        try:
            if "#" in body:  # 1.#INF and the like, one by one
                array = np.array([float(_number(v)) for v in values], dtype=np.float64)
            else:  # inf, nan: the words float() reads
                integers = not any(c.isalpha() or c == "." for c in body)
                array = np.array(values, dtype=np.int64 if integers else np.float64)
        except (ValueError, OverflowError):
            self.fail(f"an array of node {node!r} holds a value that is not a number")
        self.pos = end + 1
        return array

    @staticmethod
    def decoded(props: list) -> bytes:
        """The bytes of an embedded file's base64 text (its strings joined); none when the text
        is broken (the texture is then reported as unreadable, the rig still read)."""
        try:
            return base64.b64decode("".join(p for p in props if isinstance(p, str)), validate=False)
        except (binascii.Error, ValueError):
            return b""


def _number(token: str):
    """A number token's value: int for integers, float otherwise (``1.#INF`` and ``inf`` inf,
    ``1.#IND`` nan)."""
    if not _NUMBER.fullmatch(token):
        return float(token)  # inf, Infinity, nan...: ValueError for anything else
    if "#" in token:
        special = token.split("#", 1)[1].upper()
        sign = -1.0 if token.startswith("-") else 1.0
        return sign * float("inf") if special.startswith("INF") else float("nan")
    if token.lstrip("+-").isdigit():
        return int(token)
    return float(token)
