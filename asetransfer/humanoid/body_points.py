"""Named points on a humanoid's body surface found by geometric rules.

Two sets, each rule written once and mirrored for ``.L`` / ``.R``:

* :data:`SURFACE_POINTS` -- Tonoli's Table 3.1 (after Molla et al. 2017): the torso
  and head points that span the two crude calibration meshes (*mesh*) and one point
  per upper arm, forearm, thigh and shin (*limb*: limb thickness);
* :data:`KEY_VERTICES` -- 41 key vertices in the spirit of ReConForM §3.1: a sparse
  cover of the body with the contact-prone hands and feet sampled more densely.

A rule is a ray: an origin inside the body built from mapped joints
(:mod:`asetransfer.humanoid.skeleton_map`) and a direction in the body frame (up, forward,
left) or relative to a bone.  The point is where the ray's line crosses the
surface of the mesh's main part (the part with the most triangles) outwards,
nearest to the origin -- or, for torso and face points, farthest along the ray
(:meth:`Context.cast`); a line that never leaves the body falls back to the
surface point closest to the origin.  Lengths are relative: torso
height ``T`` (hips -> upper spine along up), half shoulder and hip widths, and for
the face the nose (the most forward point of the head's midline profile), the
nose-to-top distance and the head's half width, so the same rules fit a child, a
giant or a cartoon whatever the rig's head joint convention.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from ..model.mesh import Mesh
from .body import body_axes
from ..geometry.rays import cast_rays
from ..geometry.surface import SurfaceIndex
from ..model.surface import SurfacePoints
from ..geometry.topology import face_normals, used_vertices

log = logging.getLogger("asetransfer")


@dataclass(frozen=True)
class Rule:
    """One named point: ``origin(c)`` and ``direction(c)`` from a :class:`Context`.

    ``joint``: the role of the joint the point is attached to (Tonoli Eq. 3.25);
    ``kind``: ``"mesh"`` or ``"limb"`` (Table 3.1) or ``"key"``; ``group``: ``"body"``,
    ``"head"``, ``"limb"``, ``"hand"``, ``"foot"``; ``outer``: take the outermost exit
    along the ray's line instead of the one nearest the origin (torso and face points:
    skips the mouth cavity, navel and similar folds).
    """

    name: str
    joint: str
    kind: str
    group: str
    origin: Callable
    direction: Callable
    outer: bool = False


class Context:
    """What rules are written in: mapped joint positions, body axes, body measures."""

    def __init__(self, joints: dict, vertices: np.ndarray, faces: np.ndarray, chains: dict | None = None):
        self.j = {k: np.asarray(v, float) for k, v in joints.items()}
        self.up, self.fwd, self.left = body_axes(self.j)
        self.V = np.ascontiguousarray(vertices, dtype=np.float64)
        self.F = np.ascontiguousarray(faces, dtype=np.int64)
        self.normals = face_normals(self.V, self.F)
        self.reach = 2.0 * float(np.linalg.norm(np.ptp(self.V[used_vertices(self.F)], axis=0)))
        self.chains = chains or {}
        self.T = float((self.j["upper_spine"] - self.j["hips"]) @ self.up)
        self.w_sh = 0.5 * float((self.j["shoulder_l"] - self.j["shoulder_r"]) @ self.left)
        self.w_hip = 0.5 * float((self.j["upper_leg_l"] - self.j["upper_leg_r"]) @ self.left)
        self._face = None

    def _face_frame(self):
        """Head measures, found once: nose height (the most forward point of the head's
        midline profile), top of the head, head half-width at ear level."""
        if self._face is None:
            head = self.j["head"]
            top = self.cast(head, self.up, outer=True)
            size = float((top[2] - head) @ self.up) if top is not None else 0.5 * self.T
            heights = size * np.linspace(-0.3, 0.9, 49)
            depth = [self._reach_along(head + h * self.up, self.fwd) for h in heights]
            nose = float(heights[int(np.argmax(depth))])
            span = max(size - nose, 0.2 * size)  # nose -> top of the head
            ear = head + (nose + 0.2 * span) * self.up
            half = 0.5 * (self._reach_along(ear, self.left) + self._reach_along(ear, -self.left))
            self._face = (nose, span, half if half > 0 else 0.4 * span)
        return self._face

    def _reach_along(self, origin, d) -> float:
        hit = self.cast(origin, d, outer=True)
        return float((hit[2] - origin) @ d) if hit is not None else -np.inf

    def p(self, role):
        return self.j[role]

    def has(self, role) -> bool:
        return role in self.j

    def torso(self, t: float, lateral: float = 0.0) -> np.ndarray:
        """Point at fraction ``t`` from hips to upper spine, moved ``lateral`` along left."""
        return self.j["hips"] + t * (self.j["upper_spine"] - self.j["hips"]) + lateral * self.left

    def face(self, level: float, lateral: float = 0.0) -> np.ndarray:
        """Point on the head's vertical axis (through the head joint) at ``level`` times the
        nose-to-top distance above the nose, moved ``lateral`` head half-widths to the left."""
        nose, span, half = self._face_frame()
        return self.j["head"] + (nose + level * span) * self.up + lateral * half * self.left

    def side(self, s: str) -> float:
        return 1.0 if s == "l" else -1.0

    @staticmethod
    def perp(v, bone) -> np.ndarray:
        """``v`` made perpendicular to ``bone``."""
        b = bone / np.linalg.norm(bone)
        out = v - (v @ b) * b
        n = np.linalg.norm(out)
        return out / n if n > 1e-12 else v

    def tilt(self, a, b, degrees: float) -> np.ndarray:
        """Unit direction ``a`` turned by ``degrees`` towards ``b``."""
        r = np.radians(degrees)
        return np.cos(r) * a + np.sin(r) * b

    def palm(self, s: str) -> np.ndarray:
        """Unit palm normal of side ``s`` (out of the palm)."""
        w = self.j[f"wrist_{s}"]
        tip = self.j.get(f"mid_hand_{s}")
        h = (tip - w) if tip is not None else (w - self.j[f"elbow_{s}"])
        if f"index_{s}" in self.j and f"pinky_{s}" in self.j:
            a = self.j[f"index_{s}"] - self.j[f"pinky_{s}"]
            n = self.side(s) * np.cross(h, a)
            if np.linalg.norm(n) > 1e-12:
                return n / np.linalg.norm(n)
        return self.perp(-self.up, h)

    def chain_end(self, role: str):
        """(last joint, direction of the last bone) of the finger chain starting at ``role``."""
        pts = self.chains.get(role)
        if not pts or len(pts) < 2:
            return None
        d = pts[-1] - pts[-2]
        return pts[-1], d / np.linalg.norm(d)

    def cast(self, origin, direction, outer: bool = False):
        """Where the body's surface, crossed outwards along ``direction``, is nearest to ``origin``.

        The whole line through ``origin`` is intersected with the surface (a ray started
        ``reach`` behind it); of the crossings whose surface faces along ``direction`` (exits)
        the one nearest to ``origin`` wins, ahead of or behind it -- so an origin that a thin
        or bent body leaves just outside its surface still finds the intended point.  With
        ``outer`` the exit farthest along ``direction`` wins.
        Returns (face, bary, point) or None.
        """
        d = np.asarray(direction, float)
        d = d / np.linalg.norm(d)
        o = np.asarray(origin, float)
        hits = cast_rays(self.V, self.F, o[None], d[None], first=False, behind=self.reach)
        best = None
        for k in range(len(hits.face)):
            if self.normals[hits.face[k]] @ d <= 0:
                continue
            if best is None or (hits.t[k] > hits.t[best] if outer else abs(hits.t[k]) < abs(hits.t[best])):
                best = k
        if best is None:
            return None
        return int(hits.face[best]), hits.bary[best], hits.point[best]


def _surface_rules() -> list:
    """Tonoli Table 3.1: 10 torso, 13 head (mesh) and 8 limb points."""
    rules = []
    for s, sfx in (("l", ".L"), ("r", ".R")):
        def sd(c, s=s):
            return c.side(s)
        rules += [
            Rule("chest" + sfx, "upper_spine", "mesh", "body",
                 lambda c, sd=sd: c.torso(0.95, sd(c) * 0.53 * c.w_sh), lambda c: c.fwd),
            Rule("abdomen" + sfx, "spine", "mesh", "body",
                 lambda c, sd=sd: c.torso(0.4, sd(c) * 0.5 * c.w_hip), lambda c: c.fwd),
            Rule("hip" + sfx, "hips", "mesh", "body",
                 lambda c, sd=sd: c.torso(0.1, sd(c) * 0.8 * c.w_hip), lambda c: c.fwd),
            Rule("loin" + sfx, "spine", "mesh", "body",
                 lambda c, sd=sd: c.torso(0.35, sd(c) * 0.5 * c.w_hip), lambda c: -c.fwd),
            Rule("forehead" + sfx, "head", "mesh", "head", lambda c, sd=sd: c.face(0.6, sd(c) * 0.35),
                 lambda c: c.fwd),
            Rule("ear" + sfx, "head", "mesh", "head", lambda c: c.face(0.2), lambda c, sd=sd: sd(c) * c.left),
            Rule("cheek" + sfx, "head", "mesh", "head", lambda c, sd=sd: c.face(-0.05, sd(c) * 0.45),
                 lambda c: c.fwd),
            Rule("chin" + sfx, "head", "mesh", "head", lambda c, sd=sd: c.face(-0.5, sd(c) * 0.25),
                 lambda c: c.fwd),
            Rule("nape" + sfx, "neck", "mesh", "head", lambda c, sd=sd: c.face(-0.45, sd(c) * 0.3),
                 lambda c: -c.fwd),
        ]
    rules += [
        Rule("abdomen_up", "spine", "mesh", "body", lambda c: c.torso(0.72), lambda c: c.fwd),
        Rule("loin_up", "upper_spine", "mesh", "body", lambda c: c.torso(0.72), lambda c: -c.fwd),
        Rule("forehead_middle", "head", "mesh", "head", lambda c: c.face(0.6), lambda c: c.fwd),
        Rule("mouth", "head", "mesh", "head", lambda c: c.face(-0.3), lambda c: c.fwd),
        Rule("nape_middle", "neck", "mesh", "head", lambda c: c.face(-0.45), lambda c: -c.fwd),
    ]
    for s, sfx in (("l", ".L"), ("r", ".R")):
        for name, a, b in (("arm", "shoulder", "elbow"), ("forearm", "elbow", "wrist"),
                           ("thigh", "upper_leg", "knee"), ("shin", "knee", "ankle")):
            rules.append(Rule(name + sfx, f"{a}_{s}", "limb", "limb",
                              lambda c, a=f"{a}_{s}", b=f"{b}_{s}": 0.5 * (c.p(a) + c.p(b)),
                              lambda c, a=f"{a}_{s}", b=f"{b}_{s}": c.perp(c.fwd, c.p(b) - c.p(a))))
    rules = [replace(r, outer=True) if r.kind == "mesh" else r for r in rules]
    return _ordered(rules, _SURFACE_ORDER)


_SURFACE_ORDER = ("chest.L", "chest.R", "abdomen.L", "abdomen.R", "hip.L", "hip.R", "thigh.L", "thigh.R",
                  "shin.L", "shin.R", "abdomen_up", "arm.R", "forearm.R", "arm.L", "forearm.L",
                  "forehead.L", "forehead.R", "ear.L", "ear.R", "chin.L", "chin.R", "cheek.L", "cheek.R",
                  "mouth", "forehead_middle", "nape.L", "nape.R", "nape_middle", "loin.L", "loin.R", "loin_up")

#: Tonoli's crude calibration meshes: triangles over the mesh points (outward normals
#: are fixed per character when the calibration is proposed)
CALIBRATION_MESHES = {
    "body": [("chest.R", "chest.L", "abdomen_up"), ("chest.L", "abdomen.L", "abdomen_up"),
             ("chest.R", "abdomen_up", "abdomen.R"), ("abdomen_up", "abdomen.L", "abdomen.R"),
             ("abdomen.L", "hip.L", "hip.R"), ("abdomen.L", "hip.R", "abdomen.R"),
             ("loin_up", "loin.L", "loin.R"), ("chest.L", "loin_up", "loin.L"), ("chest.R", "loin.R", "loin_up"),
             ("chest.L", "loin.L", "abdomen.L"), ("chest.R", "abdomen.R", "loin.R"),
             ("abdomen.L", "loin.L", "hip.L"), ("abdomen.R", "hip.R", "loin.R")],
    "head": [("forehead.L", "forehead_middle", "forehead.R"), ("forehead.L", "forehead.R", "cheek.R"),
             ("forehead.L", "cheek.R", "cheek.L"), ("cheek.L", "cheek.R", "mouth"),
             ("cheek.L", "mouth", "chin.L"), ("cheek.R", "chin.R", "mouth"), ("mouth", "chin.R", "chin.L"),
             ("forehead.L", "cheek.L", "ear.L"), ("forehead.R", "ear.R", "cheek.R"),
             ("cheek.L", "chin.L", "ear.L"), ("cheek.R", "ear.R", "chin.R"),
             ("ear.L", "nape.L", "forehead.L"), ("ear.R", "forehead.R", "nape.R"),
             ("nape.L", "nape_middle", "nape.R"), ("forehead.L", "nape.L", "nape.R"),
             ("forehead.L", "nape.R", "forehead.R"), ("ear.L", "chin.L", "nape.L"), ("ear.R", "nape.R", "chin.R"),
             ("chin.L", "chin.R", "nape_middle"), ("chin.L", "nape_middle", "nape.L"),
             ("chin.R", "nape.R", "nape_middle")],
}


def _key_rules() -> list:
    """41 key vertices: head 6, torso 13, arms 6, hands 8, knees 2, feet 6."""
    rules = [
        Rule("head_top", "head", "key", "head", lambda c: c.p("head"), lambda c: c.up),
        Rule("forehead", "head", "key", "head", lambda c: c.face(0.6), lambda c: c.fwd),
        Rule("chin", "head", "key", "head", lambda c: c.face(-0.5), lambda c: c.fwd),
        Rule("back_of_head", "head", "key", "head", lambda c: c.face(0.45), lambda c: -c.fwd),
        Rule("sternum", "upper_spine", "key", "body", lambda c: c.torso(1.0), lambda c: c.fwd),
        Rule("navel", "spine", "key", "body", lambda c: c.torso(0.4), lambda c: c.fwd),
        Rule("upper_back", "upper_spine", "key", "body", lambda c: c.torso(0.95), lambda c: -c.fwd),
        Rule("lower_back", "spine", "key", "body", lambda c: c.torso(0.35), lambda c: -c.fwd),
        Rule("crotch", "hips", "key", "body", lambda c: 0.5 * (c.p("upper_leg_l") + c.p("upper_leg_r")),
             lambda c: -c.up),
    ]
    for s, sfx in (("l", ".L"), ("r", ".R")):
        def sd(c, s=s):
            return c.side(s)

        def j(role, s=s):
            return f"{role}_{s}"
        rules += [
            Rule("ear" + sfx, "head", "key", "head", lambda c: c.face(0.2), lambda c, sd=sd: sd(c) * c.left),
            Rule("chest" + sfx, "upper_spine", "key", "body",
                 lambda c, sd=sd: c.torso(0.95, sd(c) * 0.53 * c.w_sh), lambda c: c.fwd),
            Rule("shoulder" + sfx, j("shoulder"), "key", "body", lambda c, j=j: c.p(j("shoulder")), lambda c: c.up),
            Rule("hip_side" + sfx, j("upper_leg"), "key", "body", lambda c, j=j: c.p(j("upper_leg")),
                 lambda c, sd=sd: sd(c) * c.left),
            Rule("buttock" + sfx, "hips", "key", "body",
                 lambda c, sd=sd: c.torso(-0.05, sd(c) * 0.55 * c.w_hip), lambda c: -c.fwd),
            Rule("upper_arm" + sfx, j("shoulder"), "key", "limb",
                 lambda c, j=j: 0.5 * (c.p(j("shoulder")) + c.p(j("elbow"))),
                 lambda c, j=j, sd=sd: c.perp(sd(c) * c.left, c.p(j("elbow")) - c.p(j("shoulder")))),
            Rule("elbow" + sfx, j("elbow"), "key", "limb", lambda c, j=j: c.p(j("elbow")),
                 lambda c, j=j: _elbow_back(c, j("shoulder"), j("elbow"), j("wrist"))),
            Rule("forearm" + sfx, j("elbow"), "key", "limb",
                 lambda c, j=j: 0.5 * (c.p(j("elbow")) + c.p(j("wrist"))),
                 lambda c, j=j, sd=sd: c.perp(sd(c) * c.left, c.p(j("wrist")) - c.p(j("elbow")))),
            Rule("palm" + sfx, j("wrist"), "key", "hand", lambda c, j=j: _mid_palm(c, j), lambda c, s=s: c.palm(s)),
            Rule("back_of_hand" + sfx, j("wrist"), "key", "hand", lambda c, j=j: _mid_palm(c, j),
                 lambda c, s=s: -c.palm(s)),
            Rule("middle_tip" + sfx, j("mid_hand"), "key", "hand", lambda c, j=j: _tip(c, j("mid_hand"), j)[0],
                 lambda c, j=j: _tip(c, j("mid_hand"), j)[1]),
            Rule("thumb_tip" + sfx, j("thumb"), "key", "hand", lambda c, j=j: _tip(c, j("thumb"), j)[0],
                 lambda c, j=j: _tip(c, j("thumb"), j)[1]),
            Rule("knee" + sfx, j("knee"), "key", "limb", lambda c, j=j: c.p(j("knee")),
                 lambda c, j=j: c.perp(c.fwd, c.p(j("ankle")) - c.p(j("knee")))),
            Rule("heel" + sfx, j("ankle"), "key", "foot", lambda c, j=j: c.p(j("ankle")),
                 lambda c: c.tilt(-c.fwd, -c.up, 35.0)),
            Rule("toe_tip" + sfx, j("ankle"), "key", "foot", lambda c, j=j: _toe(c, j)[0],
                 lambda c, j=j: _toe(c, j)[1]),
            Rule("sole" + sfx, j("ankle"), "key", "foot", lambda c, j=j: _toe(c, j)[2], lambda c: -c.up),
        ]
    return [replace(r, outer=True) if r.name in _OUTER_KEYS else r for r in rules]


_OUTER_KEYS = {"head_top", "forehead", "chin", "back_of_head", "sternum", "navel", "upper_back", "lower_back",
               "ear.L", "ear.R", "chest.L", "chest.R", "buttock.L", "buttock.R"}


def _elbow_back(c, shoulder, elbow, wrist):
    a, b = c.p(shoulder) - c.p(elbow), c.p(wrist) - c.p(elbow)
    a, b = a / np.linalg.norm(a), b / np.linalg.norm(b)
    back = -(a + b)
    if np.linalg.norm(back) < 0.1:  # a straight arm: the back of the elbow faces backwards
        return c.perp(-c.fwd, b)
    return back / np.linalg.norm(back)


def _mid_palm(c, j):
    w = c.p(j("wrist"))
    if c.has(j("mid_hand")):
        return w + 0.5 * (c.p(j("mid_hand")) - w)
    return w + 0.3 * (w - c.p(j("elbow")))


def _tip(c, role, j):
    end = c.chain_end(role)
    if end is not None:
        return end
    w = c.p(j("wrist"))
    d = w - c.p(j("elbow"))
    return w, d / np.linalg.norm(d)


def _toe(c, j):
    """(origin, forward direction along the foot, sole origin)."""
    a = c.p(j("ankle"))
    toe = c.p(j("toe")) if c.has(j("toe")) else a + 0.12 * c.T * c.fwd
    d = toe - a
    d -= (d @ c.up) * c.up
    d = d / np.linalg.norm(d) if np.linalg.norm(d) > 1e-12 else c.fwd
    return toe, d, a + 0.7 * (toe - a)


def _ordered(rules, order):
    by = {r.name: r for r in rules}
    return [by[n] for n in order]


SURFACE_POINTS = _surface_rules()
KEY_VERTICES = _key_rules()


def main_part_faces(mesh: Mesh) -> np.ndarray:
    """Indices of the triangles of the mesh part with the most triangles (the body)."""
    part_of_face = mesh.vertex_part[mesh.faces[:, 0]]
    counts = np.bincount(part_of_face, minlength=len(mesh.parts))
    return np.flatnonzero(part_of_face == int(np.argmax(counts)))


def finger_chains(skeleton, mapping: dict, positions: np.ndarray) -> dict:
    """Per finger role (``mid_hand_l``, ``thumb_r``...), the positions down its chain to the tip
    (following the first child at each joint)."""
    names = {n: i for i, n in enumerate(skeleton.names)}
    out = {}
    for role, joint in mapping.items():
        if not role.startswith(("mid_hand_", "thumb_")):
            continue
        j, pts = names[joint], []
        while True:
            pts.append(positions[j])
            kids = np.flatnonzero(skeleton.parents == j)
            if not len(kids):
                break
            j = int(kids[0])
        out[role] = pts
    return out


def locate(rules, mesh: Mesh, joints: dict, chains: dict | None = None, snap_to_vertex: bool = False):
    """Evaluate ``rules`` on ``mesh`` with mapped joint positions ``joints`` (role -> point).

    Returns
    -------
    names : list of rule names evaluated (rules whose joints are not all mapped are skipped).
    points : :class:`SurfacePoints` on ``mesh`` (input triangle indices).
    positions : (K, 3).
    missed : names whose ray missed the surface (closest point used instead).
    """
    sel = main_part_faces(mesh)
    c = Context(joints, mesh.vertices, mesh.faces[sel], chains)
    index = SurfaceIndex(c.V, c.F)
    names, faces, barys, missed = [], [], [], []
    for r in rules:
        try:
            o, d = r.origin(c), r.direction(c)
        except KeyError:  # a joint this rule needs is not mapped
            log.info("surface point %r skipped: a joint it needs is not mapped", r.name)
            continue
        hit = c.cast(o, d, r.outer)
        if hit is None:
            f, b, _, _ = index.closest(o[None])
            hit = (int(f[0]), b[0], None)
            missed.append(r.name)
        names.append(r.name)
        faces.append(int(sel[hit[0]]))
        barys.append(hit[1])
    faces = np.array(faces, dtype=np.int64)
    barys = np.clip(np.array(barys, dtype=np.float64).reshape(-1, 3), 0.0, None)
    barys /= barys.sum(axis=1, keepdims=True)
    if snap_to_vertex:
        barys = np.eye(3)[np.argmax(barys, axis=1)]
    pts = SurfacePoints(faces, barys)
    return names, pts, pts.positions(mesh.vertices, mesh.faces), missed
