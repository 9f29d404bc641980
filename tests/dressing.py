"""Production-character accessories hung on a one-piece body, for tests and benchmarks.

A production character is rarely one closed mesh: joint covers and armour plates are
separate meshes overlapping the body, clothes and hair are open shells a little
outside it, eyes and teeth sit inside the head, a weapon is held in a hand.  Each
function below returns the pieces of one kind (lists of ``(vertices, faces)``) built
from a body mesh and a few of its joint positions, so the same accessory can be put
on the synthetic fixtures and on the MakeHuman dev bodies; :func:`dress` appends them
to the body.  The body's vertices come first and keep their indices, so markers and
ground truth on the body stay valid on the dressed mesh.

``joints`` maps roles to (3,) positions: ``head``, ``neck``, ``hips``, and ``shoulder``,
``elbow``, ``hand``, ``thigh``, ``knee``, ``foot`` with ``.L`` / ``.R``.  ``up`` and ``forward`` are the
body's unit axes; lengths are fractions of the body height ``H`` (head top to sole).
"""
from __future__ import annotations

import numpy as np
import trimesh

from asetransfer.geometry.surface import surface_index
from asetransfer.geometry.topology import face_normals, vertex_normals
from asetransfer.model.mesh import Mesh

#: the kinds ``"all"`` puts on, in that order (and ``"cards"``, hair cards, and ``"scene"``, things
#: beside the character, on their own: see :data:`BUILDERS`)
KINDS = ("covers", "shirt", "hair", "eyes", "sword")


def body_height(vertices: np.ndarray, up: np.ndarray) -> float:
    h = vertices @ up
    return float(h.max() - h.min())


def sphere(centre: np.ndarray, radius: float, subdivisions: int = 2):
    s = trimesh.creation.icosphere(subdivisions=subdivisions, radius=radius)
    return np.asarray(s.vertices) + centre, np.asarray(s.faces, dtype=np.int64)


def bar(start: np.ndarray, direction: np.ndarray, length: float, width: float, depth: float, side: np.ndarray):
    """A closed box from ``start`` along unit ``direction``, ``width`` along ``side``."""
    third = np.cross(direction, side)
    axes = np.column_stack([side, direction, third])
    b = trimesh.creation.box(extents=[width, length, depth])
    return np.asarray(b.vertices) @ axes.T + start + direction * length / 2, np.asarray(b.faces, dtype=np.int64)


def shell(mesh: Mesh, selected: np.ndarray, offset: float):
    """The faces whose vertices are all ``selected``, moved ``offset`` out along the vertex
    normals: an open layer over that part of the body (a shirt, a hair cap)."""
    normals = vertex_normals(mesh.vertices, mesh.faces)
    faces = mesh.faces[selected[mesh.faces].all(axis=1)]
    used = np.unique(faces)
    remap = np.full(len(mesh.vertices), -1)
    remap[used] = np.arange(len(used))
    return mesh.vertices[used] + offset * normals[used], remap[faces]


def covers(mesh: Mesh, joints: dict, up: np.ndarray, forward: np.ndarray) -> list:
    """Spheres over knees, elbows and shoulders, half sunk into the limb (robot joint covers)."""
    H = body_height(mesh.vertices, up)
    out = []
    for side in "LR":
        out.append(sphere(joints[f"knee.{side}"] + 0.02 * H * forward, 0.035 * H))
        out.append(sphere(joints[f"elbow.{side}"], 0.028 * H))
        out.append(sphere(joints[f"shoulder.{side}"] + 0.01 * H * up, 0.032 * H))
    return out


def shirt(mesh: Mesh, joints: dict, up: np.ndarray, forward: np.ndarray) -> list:
    """An open shell 1.2 %H outside the trunk from the hips to the neck, without arms."""
    H = body_height(mesh.vertices, up)
    h = mesh.vertices @ up
    left = np.cross(up, forward)
    half_width = abs((joints["shoulder.L"] - joints["shoulder.R"]) @ left) / 2
    across = np.abs((mesh.vertices - joints["hips"]) @ left)
    trunk = (h > joints["hips"] @ up) & (h < joints["neck"] @ up) & (across < half_width)
    return [shell(mesh, trunk, 0.012 * H)]


def hair(mesh: Mesh, joints: dict, up: np.ndarray, forward: np.ndarray) -> list:
    """An open cap 1 %H outside the top and back of the head, down over the ears."""
    H = body_height(mesh.vertices, up)
    rel = mesh.vertices - joints["head"]
    top = (rel @ up > 0.02 * H) & (rel @ forward < 0.03 * H) & (np.linalg.norm(rel, axis=1) < 0.2 * H)
    return [shell(mesh, top, 0.01 * H)]


def eyes(mesh: Mesh, joints: dict, up: np.ndarray, forward: np.ndarray) -> list:
    """Two eyeballs just inside the face, where the head's surface is most forward at eye height."""
    H = body_height(mesh.vertices, up)
    left = np.cross(up, forward)
    out = []
    for s in (1.0, -1.0):
        # the face's surface in front of the eye: nearest vertices around the eye's line of sight
        centre = joints["head"] + 0.04 * H * up + s * 0.018 * H * left
        rel = mesh.vertices - centre
        line = np.linalg.norm(rel - np.outer(rel @ forward, forward), axis=1)
        near = (line < 0.01 * H) & (rel @ forward > 0)
        front = centre + forward * float((rel[near] @ forward).max())
        out.append(sphere(front - forward * 0.009 * H, 0.007 * H, 1))
    return out


def sword(mesh: Mesh, joints: dict, up: np.ndarray, forward: np.ndarray) -> list:
    """A blade held in the right hand, pointing down and forward past the knee (half the height long)."""
    H = body_height(mesh.vertices, up)
    left = np.cross(up, forward)
    direction = -up * np.cos(np.radians(30)) + forward * np.sin(np.radians(30))
    grip = joints["hand.R"] - direction * 0.05 * H
    return [bar(grip, direction, 0.5 * H, 0.012 * H, 0.03 * H, left)]


def sword_parts(mesh: Mesh, joints: dict, up: np.ndarray, forward: np.ndarray) -> list:
    """The sword of :func:`sword` as a modeller builds one: grip, guard and blade, three closed
    pieces that intersect each other (the guard crosses the grip's top, the blade starts inside
    the guard), the grip in the right hand."""
    H = body_height(mesh.vertices, up)
    left = np.cross(up, forward)
    direction = -up * np.cos(np.radians(30)) + forward * np.sin(np.radians(30))
    grip_start = joints["hand.R"] - direction * 0.05 * H
    grip_length = 0.1 * H
    guard_at = grip_start + direction * (grip_length - 0.005 * H)
    across = np.cross(direction, left)
    return [bar(grip_start, direction, grip_length, 0.016 * H, 0.016 * H, left),
            bar(guard_at - 0.04 * H * left, left, 0.08 * H, 0.01 * H, 0.012 * H, direction),
            bar(guard_at - direction * 0.004 * H, direction, 0.4 * H, 0.012 * H, 0.03 * H, left)] if across.any() \
        else []


def scene(mesh: Mesh, joints: dict, up: np.ndarray, forward: np.ndarray) -> list:
    """What a scene file holds beside its character: a halo and a quest marker floating over
    the head, the floor under the feet (touching the soles), a crate beside the body."""
    H = body_height(mesh.vertices, up)
    left = np.cross(up, forward)
    h = mesh.vertices @ up
    top = joints["head"] + (h.max() - joints["head"] @ up) * up
    sole = joints["hips"] + (h.min() - joints["hips"] @ up) * up
    halo = trimesh.creation.torus(0.06 * H, 0.006 * H)
    halo.apply_transform(trimesh.geometry.align_vectors([0, 0, 1], up))
    halo.apply_translation(top + 0.08 * H * up)
    return [(np.asarray(halo.vertices), np.asarray(halo.faces, dtype=np.int64)),
            sphere(top + 0.25 * H * up, 0.02 * H),
            bar(sole - 0.01 * H * up, up, 0.01 * H, 1.5 * H, 1.5 * H, left),
            bar(sole + 0.6 * H * left, up, 0.2 * H, 0.2 * H, 0.2 * H, left)]


def strip(rows: np.ndarray, across: np.ndarray, width: np.ndarray):
    """A single-sided quad strip (two triangles a segment) through the points ``rows``
    (K, 3), ``width[k]`` wide along the unit vectors ``across[k]``: a hair card."""
    k = len(rows)
    v = np.concatenate([rows - 0.5 * width[:, None] * across, rows + 0.5 * width[:, None] * across])
    i = np.arange(k - 1)
    f = np.concatenate([np.stack([i, i + k, i + 1], axis=1), np.stack([i + 1, i + k, i + k + 1], axis=1)])
    return v, f.astype(np.int64)


def drape(mesh: Mesh, start: np.ndarray, down: np.ndarray, segment: float, segments: int, offset: np.ndarray):
    """Polylines hanging from ``start`` (C, 3): each step goes ``segment`` down and is pushed
    out to ``offset`` (C,) above the body where it would pass closer, so a strand follows the
    scalp and falls free where the head curves away (below it, over the back and shoulders).

    Returns
    -------
    (C, segments + 1, 3) the points of each strand, (C, segments + 1, 3) unit normals of the
    body at their closest points."""
    index = surface_index(mesh.vertices, mesh.faces)
    normals = face_normals(mesh.vertices, mesh.faces)
    points, out = [start], []
    for _ in range(segments + 1):
        face, _, dist, near = index.closest(points[-1])
        n = normals[face]
        out.append(n)
        if len(out) > segments:
            break
        step = points[-1] - segment * down
        face, _, dist, near = index.closest(step)
        n = normals[face]
        height = np.einsum("ij,ij->i", step - near, n)
        step = np.where((height < offset)[:, None], near + offset[:, None] * n, step)
        move = step - points[-1]
        points.append(points[-1] + segment * move / np.linalg.norm(move, axis=1, keepdims=True))
    return np.stack(points, axis=1), np.stack(out, axis=1)


def cards(mesh: Mesh, joints: dict, up: np.ndarray, forward: np.ndarray, count: int = 300,
          lashes: bool = True, seed: int = 0) -> list:
    """Hair cards: ``count`` single-sided strips (1.5 %H wide, narrowing to a third at the
    tip, six segments of 2.5 %H) rooted on the top and back of the scalp 0.3-3 %H above it,
    following it and hanging down the back and sides; with ``lashes``, a row of small cards
    along each upper eyelid sticking forward (eyelash cards).  Production and game hair is
    made this way; each card touches the head at its root only."""
    H = body_height(mesh.vertices, up)
    rng = np.random.default_rng(seed)
    rel = mesh.vertices - joints["head"]
    scalp = np.flatnonzero((rel @ up > 0.03 * H) & (rel @ forward < 0.02 * H) & (np.linalg.norm(rel, axis=1) < 0.2 * H))
    roots = rng.choice(scalp, size=min(count, len(scalp)), replace=False)
    normals = vertex_normals(mesh.vertices, mesh.faces)
    offset = rng.uniform(0.003, 0.03, len(roots)) * H  # inner and outer layers: the hair's volume
    segments = 6
    # down, and a little back and out from the face, so strands fall behind the ears
    down = up + 0.3 * forward
    rows, n = drape(mesh, mesh.vertices[roots] + offset[:, None] * normals[roots], down / np.linalg.norm(down),
                    0.025 * H, segments, offset)
    width = 0.015 * H * np.linspace(1.0, 1.0 / 3.0, segments + 1)
    out = []
    for r, nr in zip(rows, n):
        along = np.gradient(r, axis=0)
        across = np.cross(nr, along)
        across /= np.linalg.norm(across, axis=1, keepdims=True)
        out.append(strip(r, across, width))
    if lashes:
        left = np.cross(up, forward)
        for s in (1.0, -1.0):
            centre = joints["head"] + 0.04 * H * up + s * 0.018 * H * left
            for t in np.linspace(-0.006, 0.006, 5) * H:
                # the eyelid's surface above the eye, a lash card from it forward and up
                rel = mesh.vertices - (centre + 0.005 * H * up + t * left)
                line = np.linalg.norm(rel - np.outer(rel @ forward, forward), axis=1)
                front = mesh.vertices[np.argmin(np.where(line < 0.004 * H, -(rel @ forward), np.inf))]
                r = front + np.outer([0.0, 0.003, 0.006], (forward + 0.5 * up) * H) / np.linalg.norm(forward + 0.5 * up)
                out.append(strip(r, np.tile(left, (3, 1)), np.full(3, 0.003 * H)))
    return out


def _segment_distance(points: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(N,) distance of each point from the segment a-b."""
    ab = b - a
    t = np.clip((points - a) @ ab / (ab @ ab), 0.0, 1.0)
    return np.linalg.norm(points - (a + t[:, None] * ab), axis=1)


def cut_faces(mesh: Mesh, joints: dict, up: np.ndarray, forward: np.ndarray, gap: float = 0.006) -> np.ndarray:
    """(F,) True on the faces kept when the body is cut into pieces at its joints, like armour
    plates: head, upper trunk, two arms, lower trunk with the thighs, two shins with the feet.

    Each vertex belongs to the piece of the bone nearest to it (bones between the ``joints``);
    the faces within ``gap`` (fraction of the height) of where two pieces meet are removed, so
    each limb is cut all round (a plane across the whole body left the legs of a wide body
    hanging on a sliver at the outer knee, and missed the arms of an A-pose)."""
    from scipy.spatial import cKDTree

    v, f = mesh.vertices, mesh.faces
    H = body_height(v, np.asarray(up, float))
    j = dict(joints)
    j["waist"] = 0.5 * (j["neck"] + j["hips"])
    bones = {("neck", "head"): "head", ("waist", "neck"): "chest", ("hips", "waist"): "pelvis"}
    for s in "LR":
        bones.update({("neck", f"shoulder.{s}"): "chest", (f"shoulder.{s}", f"elbow.{s}"): f"arm.{s}",
                      (f"elbow.{s}", f"hand.{s}"): f"arm.{s}", ("hips", f"thigh.{s}"): "pelvis",
                      (f"thigh.{s}", f"knee.{s}"): "pelvis", (f"knee.{s}", f"foot.{s}"): f"shin.{s}"})
    names = sorted(set(bones.values()))
    piece_of_bone = np.array([names.index(p) for p in bones.values()])
    nearest = np.argmin([_segment_distance(v, j[a], j[b]) for a, b in bones], axis=0)
    piece = piece_of_bone[nearest]
    edges = np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]])
    seam = edges[piece[edges[:, 0]] != piece[edges[:, 1]]]
    if len(seam) == 0:
        return np.ones(len(f), dtype=bool)
    # faces within gap / 2 of where the pieces meet (the middles of the edges between them)
    near, _ = cKDTree(v[seam].mean(axis=1)).query(v[f].mean(axis=1), distance_upper_bound=0.5 * gap * H)
    return ~np.isfinite(near) & (piece[f] == piece[f][:, :1]).all(axis=1)


BUILDERS = {"covers": covers, "shirt": shirt, "hair": hair, "eyes": eyes, "sword": sword, "cards": cards,
            "sword_parts": sword_parts, "scene": scene}


def dress(mesh: Mesh, kinds, joints: dict, up, forward) -> Mesh:
    """``mesh`` with the accessories of ``kinds`` (names of :data:`KINDS`, or ``"all"``) appended."""
    kinds = (kinds,) if isinstance(kinds, str) else tuple(kinds)
    kinds = tuple(k for kind in kinds for k in (KINDS if kind == "all" else (kind,)))
    up, forward = np.asarray(up, float), np.asarray(forward, float)
    parts = [(mesh.vertices, mesh.faces)]
    for k in kinds:
        parts += BUILDERS[k](mesh, joints, up, forward)
    offsets = np.cumsum([0] + [len(v) for v, _ in parts[:-1]])
    return Mesh(np.concatenate([v for v, _ in parts]), np.concatenate([f + o for (_, f), o in zip(parts, offsets)]))


#: roles of :func:`dress` -> joint names of the fixtures' generator and of MakeHuman
FIXTURE_JOINTS = {"head": "head", "neck": "neck", "hips": "hips",
                  **{f"{r}.{s}": f"{n}.{s}" for s in "LR"
                     for r, n in (("shoulder", "upperarm"), ("elbow", "forearm"), ("hand", "hand"),
                                  ("thigh", "thigh"), ("knee", "shin"), ("foot", "foot"))}}
MAKEHUMAN_JOINTS = {"head": "head", "neck": "neck01", "hips": "root",
                    **{f"{r}.{s}": f"{n}.{s}" for s in "LR"
                       for r, n in (("shoulder", "upperarm01"), ("elbow", "lowerarm01"), ("hand", "wrist"),
                                    ("thigh", "upperleg01"), ("knee", "lowerleg01"), ("foot", "foot"))}}
