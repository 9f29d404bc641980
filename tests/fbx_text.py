"""ASCII FBX text of a parsed FBX node tree, as Maya and the FBX SDK write it (for tests:
a binary fixture written out as ASCII is read back as its binary self).

The layout follows the SDK's: ``Name: value, value {`` children ``}``, arrays as
``*N {`` ``a: v,v,...`` ``}``, object names as ``"Class::Name"``, booleans as ``T``/``F``,
embedded files (``Content``) as base64 text after a comma.  Checked against real twins
(ufbx's Maya and 3ds Max files: the tree of their binary form, written by this module,
parses as their ASCII form does)."""
import base64

import numpy as np


def _value(v) -> str:
    if isinstance(v, (bool, np.bool_)):
        return "T" if v else "F"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return repr(float(v))
    if isinstance(v, bytes):
        return '"' + base64.b64encode(v).decode("ascii") + '"'
    if isinstance(v, np.ndarray):
        body = ",".join(str(int(x)) for x in v) if v.dtype.kind in "iub" else ",".join(repr(float(x)) for x in v)
        return f"*{len(v)} {{\n\ta: {body}\n}}"
    s = str(v)
    if "\x00\x01" in s:
        name, cls = s.split("\x00\x01", 1)
        s = f"{cls}::{name}"
    return '"' + s.replace('"', "&quot;") + '"'


def _node(node, indent: str, out: list) -> None:
    values = ", ".join(_value(v) for v in node.props)
    if node.name == "Content":  # the SDK starts an embedded file's text after a comma
        values = ", " + values
    head = f"{indent}{node.name}: {values}"
    if node.children:
        out.append(head + " {")
        for child in node.children:
            _node(child, indent + "\t", out)
        out.append(indent + "}")
    else:
        out.append(head)


def fbx_text(version: int, nodes) -> bytes:
    """The ASCII FBX file of ``nodes`` (top-level :class:`~asetransfer.io.fbx_binary.FbxNode`)."""
    major, minor = divmod(version // 100, 10)
    out = [f"; FBX {major}.{minor}.0 project file", "; written by tests/fbx_text.py", ""]
    for node in nodes:
        _node(node, "", out)
    return ("\n".join(out) + "\n").encode("utf-8")
