"""BVH motion files: read, write, exact forward kinematics, and conversion to rig rotations.

A BVH file is a joint hierarchy (``OFFSET``: the joint's position relative to its
parent when every angle is zero, in the parent's frame, which at zero angles is
parallel to the world) followed by one row of channel values per frame.  A joint's
local transform is ``T @ R`` with

* ``T`` the translation: its ``Xposition Yposition Zposition`` channels when it has
  them (the root: its absolute position, replacing the OFFSET, as Blender and most
  tools read it), else its OFFSET;
* ``R`` the product of its rotation channels in the order listed, angles in degrees:
  ``CHANNELS 3 Zrotation Xrotation Yrotation`` means ``R = Rz @ Rx @ Ry``.

The *zero pose* (all angles zero) of a BVH is therefore its rest pose, with every
joint frame parallel to the world.  A rig's joints have their own rest frames; a
BVH rotation is a *world-aligned local delta*.  :func:`bvh_to_animation` and
:func:`animation_to_bvh` convert between the two (the BVH zero pose must be the rig's
rest pose; both keep forward kinematics exact).
"""
from __future__ import annotations

import logging
import math
import re
import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy.spatial.transform import Rotation

from .animation import Animation
from .errors import InputError
from .io.atomic import atomic_write
from .io.glb import read_bytes
from .skeleton import Skeleton
from .transforms import closest_rotation, compose_trs, global_from_local

log = logging.getLogger("asetransfer")

#: channel order we write for every joint (the root gets the positions first)
ROTATION_ORDER = ("Zrotation", "Xrotation", "Yrotation")
POSITION_CHANNELS = ("Xposition", "Yposition", "Zposition")
_CHANNELS = {c.lower(): c for c in POSITION_CHANNELS + ("Xrotation", "Yrotation", "Zrotation")}
_DIGITS = 6  # decimals written (angles in degrees, lengths in file units)


@dataclass(eq=False)
class Bvh:
    """A BVH file's content.

    Attributes
    ----------
    names : joint names in file order (depth first).
    parents : (J,) parent index (earlier in the order), -1 for roots.
    offsets : (J, 3) OFFSET of each joint.
    channels : per joint, a tuple of channel names (``"Zrotation"``, ``"Xposition"``...).
    end_sites : joint index -> (3,) OFFSET of its ``End Site``.
    frame_time : seconds per frame.
    motion : (F, C) channel values, C = total number of channels, joints in file order.
    """

    names: tuple
    parents: np.ndarray
    offsets: np.ndarray
    channels: tuple
    end_sites: dict = field(default_factory=dict)
    frame_time: float = 1.0 / 30.0
    motion: np.ndarray | None = None

    def __post_init__(self):
        self.names = tuple(str(n) for n in self.names)
        j = len(self.names)
        self.parents = np.asarray(self.parents, dtype=np.int64).reshape(j)
        self.offsets = np.asarray(self.offsets, dtype=np.float64).reshape(j, 3)
        self.channels = tuple(tuple(str(c) for c in ch) for ch in self.channels)
        self.end_sites = {int(k): np.asarray(v, dtype=np.float64).reshape(3) for k, v in sorted(self.end_sites.items())}
        self.frame_time = float(self.frame_time)
        if self.motion is None:
            self.motion = np.zeros((1, sum(len(c) for c in self.channels)))
        self.motion = np.asarray(self.motion, dtype=np.float64)
        if self.motion.ndim == 1:
            self.motion = self.motion.reshape(1, -1)
        self.validate()

    def validate(self) -> None:
        """Raise ``ValueError`` naming the first inconsistency."""
        if not self.names:
            raise ValueError("the BVH has no joints")
        if len(set(self.names)) != len(self.names):
            raise ValueError("joint names must be unique")
        if any(not n or any(c.isspace() for c in n) for n in self.names):
            raise ValueError("joint names must be non-empty and contain no spaces")
        if len(self.channels) != len(self.names):
            raise ValueError("one channel list per joint is needed")
        for j, p in enumerate(self.parents):
            if not -1 <= p < j:
                raise ValueError(f"joint {self.names[j]!r}: parent must come before it in the file order")
        for j, ch in enumerate(self.channels):
            if len(set(ch)) != len(ch) or any(c not in _CHANNELS.values() for c in ch):
                raise ValueError(f"joint {self.names[j]!r} has invalid channels {list(ch)}")
        if self.motion.ndim != 2 or self.motion.shape[1] != self.n_channels or len(self.motion) == 0:
            raise ValueError(f"motion must be (frames >= 1, {self.n_channels}) values")
        if not (np.isfinite(self.motion).all() and np.isfinite(self.offsets).all()):
            raise ValueError("the BVH has NaN or infinite values")
        if not self.frame_time > 0:
            raise ValueError("frame time must be positive")

    # ------------------------------------------------------------------ queries
    @property
    def n_joints(self) -> int:
        return len(self.names)

    @property
    def n_frames(self) -> int:
        return len(self.motion)

    @property
    def n_channels(self) -> int:
        return sum(len(c) for c in self.channels)

    def _columns(self, j: int) -> dict:
        start = sum(len(c) for c in self.channels[:j])
        return {c: start + k for k, c in enumerate(self.channels[j])}

    def local_rotations(self) -> np.ndarray:
        """(F, J, 3, 3) rotation of each joint: product of its rotation channels in order."""
        f = self.n_frames
        out = np.tile(np.eye(3), (f, self.n_joints, 1, 1))
        for j in range(self.n_joints):
            for c, col in self._columns(j).items():
                if c.endswith("rotation"):
                    out[:, j] = out[:, j] @ _axis_rotation(c[0], self.motion[:, col])
        return out

    def local_translations(self) -> np.ndarray:
        """(F, J, 3) translation of each joint: position channels where present, else OFFSET."""
        out = np.tile(self.offsets, (self.n_frames, 1, 1))
        for j in range(self.n_joints):
            for c, col in self._columns(j).items():
                if c.endswith("position"):
                    out[:, j, "XYZ".index(c[0])] = self.motion[:, col]
        return out

    def world(self) -> np.ndarray:
        """(F, J, 4, 4) world transform of every joint in every frame (exact FK)."""
        local = compose_trs(self.local_translations(), self.local_rotations())
        return np.ascontiguousarray(np.swapaxes(global_from_local(np.swapaxes(local, 0, 1), self.parents), 0, 1))

    def positions(self) -> np.ndarray:
        """(F, J, 3) world joint positions."""
        return self.world()[..., :3, 3]

    def rest_positions(self) -> np.ndarray:
        """(J, 3) world joint positions of the zero pose (offsets summed down the hierarchy)."""
        pos = np.zeros((self.n_joints, 3))
        for j, p in enumerate(self.parents):
            pos[j] = self.offsets[j] + (pos[p] if p >= 0 else 0.0)
        return pos


def _axis_rotation(axis: str, degrees: np.ndarray) -> np.ndarray:
    """(F, 3, 3) rotations about a coordinate axis (right-handed, column vectors)."""
    a = np.radians(np.asarray(degrees, dtype=np.float64))
    c, s = np.cos(a), np.sin(a)
    m = np.zeros(a.shape + (3, 3))
    i = "XYZ".index(axis)
    j, k = (i + 1) % 3, (i + 2) % 3
    m[..., i, i] = 1.0
    m[..., j, j], m[..., j, k], m[..., k, j], m[..., k, k] = c, -s, s, c
    return m


def euler_from_matrix(r: np.ndarray, order: str = "ZXY") -> np.ndarray:
    """(..., 3) angles in degrees with ``r = R_order[0] @ R_order[1] @ R_order[2]``."""
    r = np.asarray(r, dtype=np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # gimbal lock: scipy still returns a valid solution
        e = Rotation.from_matrix(r.reshape(-1, 3, 3)).as_euler(order.upper(), degrees=True)
    return e.reshape(r.shape[:-2] + (3,))


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
        return x


def parse_bvh(path, text: str) -> Bvh:
    """Parse BVH text; errors are :class:`InputError` naming the line."""
    t = _Tokens(path, text)
    t.expect("HIERARCHY")
    names, parents, offsets, channels, ends = [], [], [], [], {}

    def joint(parent):
        name_line = t.items[t.i][1] if t.i < len(t.items) else None
        name = t.next("joint name")
        if name == "{":
            t.fail("joint has no name", name_line)
        if name in names:
            t.fail(f"joint name {name!r} is used twice", name_line)
        j = len(names)
        names.append(name)
        parents.append(parent)
        offsets.append(None)
        channels.append(())
        t.expect("{")
        while True:
            tok = t.next("'}'")
            key = tok.upper()
            if key == "OFFSET":
                offsets[j] = [t.number("OFFSET x"), t.number("OFFSET y"), t.number("OFFSET z")]
            elif key == "CHANNELS":
                line = t.items[t.i - 1][1]
                n = t.number("channel count")
                if n != int(n) or not 0 <= n <= 6:
                    t.fail(f"channel count must be 0..6, got {n:g}", line)
                ch = tuple(t.next("channel name") for _ in range(int(n)))
                bad = [c for c in ch if c.lower() not in _CHANNELS]
                if bad:
                    t.fail(f"unknown channel {bad[0]!r} in joint {name!r}", line)
                ch = tuple(_CHANNELS[c.lower()] for c in ch)
                if len(set(ch)) != len(ch):
                    t.fail(f"joint {name!r} lists a channel twice", line)
                channels[j] = ch
            elif key == "JOINT":
                joint(j)
            elif key == "END":
                t.expect("Site")
                t.expect("{")
                t.expect("OFFSET")
                ends[j] = [t.number("End Site x"), t.number("End Site y"), t.number("End Site z")]
                t.expect("}")
            elif tok == "}":
                break
            else:
                t.fail(f"unexpected {tok!r} in joint {name!r}")
        if offsets[j] is None:
            t.fail(f"joint {name!r} has no OFFSET", name_line)

    while t.peek() is not None and t.peek().upper() == "ROOT":
        t.next("ROOT")
        joint(-1)
    if not names:
        t.fail("no ROOT joint")
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
    nc = sum(len(c) for c in channels)
    values = t.items[t.i:]
    if len(values) != int(nf) * nc:
        raise InputError(path, f"MOTION has {len(values)} values, expected {int(nf)} frames x {nc} channels")
    try:
        motion = np.array([float(v) for v, _ in values], dtype=np.float64).reshape(int(nf), nc)
    except ValueError:
        bad = next((v, n) for v, n in values if not _is_float(v))
        raise InputError(path, f"line {bad[1]}: expected a number in MOTION, found {bad[0]!r}") from None
    if not np.isfinite(motion).all():
        raise InputError(path, "MOTION has NaN or infinite values")
    try:
        return Bvh(names, parents, offsets, channels, ends, ft, motion)
    except ValueError as e:
        raise InputError(path, str(e)) from None


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

    order = []
    _dfs(bvh.parents, children, order)
    if order != list(range(bvh.n_joints)):  # the file lists joints depth first
        raise ValueError("BVH joints must be in depth-first order (use animation_to_bvh)")
    for j in range(bvh.n_joints):
        if bvh.parents[j] < 0:
            emit(j, 0)
    lines += ["MOTION", f"Frames: {bvh.n_frames}", f"Frame Time: {_fmt(bvh.frame_time, 9)}"]
    lines += [" ".join(_fmt(v) for v in row) for row in bvh.motion]
    return "\n".join(lines) + "\n"


def _dfs(parents, children, order):
    def visit(j):
        order.append(j)
        for c in children[j]:
            visit(c)
    for j in range(len(parents)):
        if parents[j] < 0:
            visit(j)


def write_bvh(path, bvh: Bvh, inputs=()) -> None:
    """Write ``bvh`` to ``path`` atomically."""
    atomic_write(path, format_bvh(bvh).encode("utf-8"), inputs=inputs)


# ---------------------------------------------------------------------- rig <-> BVH
def _rest_rotations(skeleton: Skeleton) -> np.ndarray:
    return closest_rotation(skeleton.rest_world()[:, :3, :3])


def bvh_to_animation(bvh: Bvh, skeleton: Skeleton, scale: float | None = None, path=None):
    """A BVH motion as rotations in the rig's rest frames (BVH zero pose = rig rest pose).

    Each rig joint gets ``R = W0^T G_parent^T G W0`` where ``W0`` is its rest world
    rotation and ``G`` the world-space rotation change of the BVH joint with the same
    name (its parent's for rig joints the BVH lacks).  Root joints take the BVH's
    world position (times ``scale``); other joints keep their rest translation.

    Parameters
    ----------
    scale : rig units per BVH unit; default: the ratio of the rig's rest bone lengths
        to the BVH's offsets (1 when they agree to 0.1 %).

    Returns
    -------
    animation : :class:`Animation` on ``skeleton``.
    report : dict with ``matched`` joint count, ``scale``, ``missing`` (rig joints not in
        the BVH) and ``rest_mismatch_deg`` (largest angle between BVH zero-pose and rig
        rest bone directions).
    """
    index = {n: i for i, n in enumerate(bvh.names)}
    matched = np.array([index.get(bvh_name(n), -1) for n in skeleton.names])
    if (matched < 0).all():
        raise InputError(path, "no joint of the BVH has the name of a rig joint")
    parents = skeleton.parents
    rest_world = skeleton.rest_world()
    P0 = rest_world[:, :3, 3]
    B0 = bvh.rest_positions()
    # bone direction and length agreement over bones whose both ends are matched
    both = np.flatnonzero((parents >= 0) & (matched >= 0))
    both = both[matched[parents[both]] >= 0]
    rig_bones = P0[both] - P0[parents[both]]
    bvh_bones = B0[matched[both]] - B0[matched[parents[both]]]
    lr, lb = np.linalg.norm(rig_bones, axis=1), np.linalg.norm(bvh_bones, axis=1)
    if scale is None:
        scale = float(lr.sum() / lb.sum()) if lb.sum() > 0 else 1.0
        if abs(scale - 1.0) < 1e-3:
            scale = 1.0
    ok = (lr > 1e-9 * max(lr.max(initial=0), 1e-300)) & (lb > 0)
    cos = np.einsum("ij,ij->i", rig_bones[ok], bvh_bones[ok]) / (lr[ok] * lb[ok])
    mismatch = float(np.degrees(np.arccos(np.clip(cos, -1, 1))).max(initial=0.0))
    if mismatch > 5.0:
        log.warning("%s: the BVH zero pose differs from the rig's rest pose (bones up to %.1f deg apart); "
                    "rotations are applied in the rig's rest frames anyway", path or "BVH", mismatch)

    W = bvh.world()
    G_bvh = W[:, :, :3, :3]  # BVH zero-pose frames are the identity: world rotation = change
    nf, nj = bvh.n_frames, skeleton.n_joints
    G = np.empty((nf, nj, 3, 3))
    for j in skeleton.order():
        if matched[j] >= 0:
            G[:, j] = G_bvh[:, matched[j]]
        elif parents[j] >= 0:
            G[:, j] = G[:, parents[j]]
        else:
            G[:, j] = np.eye(3)
    R0 = _rest_rotations(skeleton)
    Gp = np.where((parents >= 0)[None, :, None, None], G[:, np.maximum(parents, 0)], np.eye(3))
    rot = np.swapaxes(R0, 1, 2)[None] @ np.swapaxes(Gp, 2, 3) @ G @ R0[None]
    rot = closest_rotation(rot)
    trans = np.tile(skeleton.translation, (nf, 1, 1))
    for r in skeleton.roots():
        if matched[r] >= 0:
            trans[:, r] = W[:, matched[r], :3, 3] * scale
    report = {"matched": int((matched >= 0).sum()), "joints": int(nj), "scale": scale,
              "missing": [skeleton.names[j] for j in np.flatnonzero(matched < 0)],
              "rest_mismatch_deg": mismatch}
    return Animation(rot, trans, bvh.frame_time), report


def bvh_name(name: str) -> str:
    """A joint name as written in BVH files (no whitespace)."""
    return re.sub(r"\s+", "_", name.strip()) or "joint"


def _depth_first(parents) -> list:
    children = [[] for _ in parents]
    for j, p in enumerate(parents):
        if p >= 0:
            children[p].append(j)
    order = []
    _dfs(parents, children, order)
    return order


def animation_to_bvh(skeleton: Skeleton, animation: Animation) -> Bvh:
    """A BVH whose zero pose is ``skeleton``'s rest pose, playing ``animation``.

    OFFSETs are the rest pose's world-space bone vectors (the root's: its rest world
    position), rotations the world-aligned local deltas ``G_parent^T G`` with
    ``G = W W0^T``, channels ``Zrotation Xrotation Yrotation`` (``R = Rz Rx Ry``, degrees)
    and, for roots, ``Xposition Yposition Zposition`` first (absolute).  Leaf joints get
    an End Site half their incoming bone further on.  Forward kinematics of the BVH
    gives the rig's posed joint positions (exactly, for unscaled skeletons).
    """
    order = _depth_first(skeleton.parents)
    new = {old: k for k, old in enumerate(order)}
    parents = skeleton.parents
    P0 = skeleton.rest_world()[:, :3, 3]
    R0 = _rest_rotations(skeleton)
    W = animation.world(skeleton)
    G = closest_rotation(W[:, :, :3, :3]) @ np.swapaxes(R0, 1, 2)[None]
    Gp = np.where((parents >= 0)[None, :, None, None], G[:, np.maximum(parents, 0)], np.eye(3))
    delta = np.swapaxes(Gp, 2, 3) @ G
    angles = euler_from_matrix(delta, "".join(c[0] for c in ROTATION_ORDER))  # (F, J, 3)
    offsets, channels, columns, ends = [], [], [], {}
    has_child = np.zeros(len(parents), bool)
    has_child[parents[parents >= 0]] = True
    for j in order:
        p = parents[j]
        if p < 0:
            offsets.append(P0[j])
            channels.append(POSITION_CHANNELS + ROTATION_ORDER)
            columns.append(W[:, j, :3, 3])
        else:
            offsets.append(P0[j] - P0[p])
            channels.append(ROTATION_ORDER)
        columns.append(angles[:, j])
        if not has_child[j]:
            ends[new[j]] = 0.5 * (P0[j] - P0[p]) if p >= 0 else np.zeros(3)
    motion = np.concatenate(columns, axis=1)
    return Bvh([bvh_name(skeleton.names[j]) for j in order],
               [new[parents[j]] if parents[j] >= 0 else -1 for j in order],
               offsets, channels, ends, animation.frame_time, motion)
