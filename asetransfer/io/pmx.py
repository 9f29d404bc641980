"""MikuMikuDance models (``.pmx``, PMX 2.0 and 2.1): rigs and meshes.

A PMX file holds one vertex array (position, normal, UV, and each vertex's skinning: one,
two or four bones, SDEF and QDEF read as their linear blend), the triangles in material
order, the texture paths, the materials, the bones (model-space positions, a parent each),
and the morphs; then display frames and the physics (rigid bodies and their joints), which
are not read.  MMD's frame is left-handed, Y up, the model facing -Z with its left at +X:
read with Z negated, it faces +Z, left at +X (glTF's frame), not mirrored.  Units are the
file's (an MMD unit is about 8 cm; the transfer does not depend on them).  Winding: a
triangle is turned so that its normal agrees with the normals the file gives its corners.

The joints are the bones, named by their local (often Japanese) names, which the skeleton map
reads (``docs/calibration.md``); bind and rest pose are the model as modelled (bones carry
no rotation).  Vertex morphs are the rig's blend shapes; group, bone, UV, material, flip and
impulse morphs are named as not read.  Read as a target, the model's look (its UVs, normals,
materials with their diffuse colour and PNG/JPEG/WebP textures) is kept; MMD's sphere and
toon maps and the physics are named as not carried; its vertex morphs are its morph targets.
"""
from __future__ import annotations

import logging
import os
import struct

import numpy as np

from ..errors import InputError
from ..model.mesh import Mesh
from ..model.rig import Rig
from ..model.shapes import MorphTarget
from ..model.skeleton import Skeleton
from .assembly import MeshPiece, merge_pieces, normalise_weights, unique_joint_names, unique_names
from .files import read_bytes
from .look_build import LookPart, build_look, image_beside

log = logging.getLogger("asetransfer")

MAGIC = b"PMX "
#: the fewest bytes a vertex (position, normal, UV, a one-bone skin, edge scale) and a bone take
_LEAST_VERTEX, _LEAST_BONE = 8 * 4 + 1 + 1 + 4, 4 + 4 + 12 + 1 + 4 + 2 + 1
#: PMX 2.1 morph offset sizes after the index, by morph type (1 vertex, 2 bone, 3-7 UV, 8 material, 9 flip,
#: 10 impulse); group (0) and flip (9) are a morph index and a weight
_MORPH_TAIL = {1: 12, 2: 28, 3: 16, 4: 16, 5: 16, 6: 16, 7: 16, 8: 1 + 4 * 28, 9: 4, 10: 1 + 24, 0: 4}
_MORPH_KINDS = {0: "group", 2: "bone", 3: "UV", 4: "UV", 5: "UV", 6: "UV", 7: "UV", 8: "material", 9: "flip",
                10: "impulse"}
_NEGATE_Z = np.array([1.0, 1.0, -1.0])


class _Cursor:
    """Little-endian reads through a PMX file's bytes; running past the end, or a count the
    rest of the file cannot hold, is an InputError naming the file."""

    def __init__(self, path, data: bytes):
        self.path, self.data, self.at = path, data, 0
        self.encoding = "utf-16-le"
        self.sizes = {}

    def fail(self, what: str):
        raise InputError(self.path, f"is not a PMX model we can read: {what}")

    def take(self, fmt: str):
        size = struct.calcsize("<" + fmt)
        if self.at + size > len(self.data):
            self.fail(f"truncated at byte {self.at} (wanted {size} more)")
        values = struct.unpack_from("<" + fmt, self.data, self.at)
        self.at += size
        return values

    def one(self, fmt: str):
        return self.take(fmt)[0]

    def floats(self, n: int) -> tuple:
        values = self.take(f"{n}f")
        if not all(np.isfinite(values)):
            self.fail(f"a NaN or infinite number at byte {self.at - 4 * n}")
        return values

    def text(self) -> str:
        length = self.one("i")
        if length < 0 or self.at + length > len(self.data):
            self.fail(f"a text of {length} bytes at byte {self.at - 4}")
        raw = self.data[self.at:self.at + length]
        self.at += length
        return raw.decode(self.encoding, errors="replace")

    def index(self, kind: str) -> int:
        """An index of ``kind`` (vertex indices unsigned, the others signed, -1 for none)."""
        size = self.sizes[kind]
        fmt = {1: "b", 2: "h", 4: "i"}[size] if kind != "vertex" else {1: "B", 2: "H", 4: "i"}[size]
        return self.one(fmt)

    def count(self, least_bytes: int, what: str) -> int:
        n = self.one("i")
        if n < 0 or n * least_bytes > len(self.data) - self.at:
            self.fail(f"{n} {what}, more than the file's {len(self.data) - self.at} remaining bytes hold")
        return n


def _header(c: _Cursor) -> tuple:
    """(version, additional UV count) after setting the cursor's encoding and index sizes."""
    if c.data[:4] != MAGIC:
        c.fail("it does not start with 'PMX ' (a PMD file, MMD's older format, is not read: save it as PMX)")
    c.at = 4
    version = c.one("f")
    if version not in (2.0, 2.1):
        c.fail(f"version {version:g} (2.0 and 2.1 are read)")
    globals_ = c.take(f"{c.one('B')}B")
    if len(globals_) < 8:
        c.fail(f"its header has {len(globals_)} values, not 8")
    encoding, uvs, *sizes = globals_[:8]
    if encoding not in (0, 1) or uvs > 4 or any(s not in (1, 2, 4) for s in sizes):
        c.fail(f"its header {list(globals_[:8])} (an encoding 0/1, up to 4 extra UVs, index sizes 1, 2 or 4)")
    c.encoding = ("utf-16-le", "utf-8")[encoding]
    c.sizes = dict(zip(("vertex", "texture", "material", "bone", "morph", "rigid"), sizes))
    return version, uvs


def _vertices(c: _Cursor, uvs: int) -> tuple:
    """(positions, normals, uv, bone indices (n, 4), weights (n, 4)) in the file's frame."""
    n = c.count(_LEAST_VERTEX, "vertices")
    base = np.empty((n, 8))
    bones, weights = np.full((n, 4), -1, np.int64), np.zeros((n, 4))
    for i in range(n):
        base[i] = c.floats(8)
        c.floats(4 * uvs)
        kind = c.one("B")
        if kind == 0:  # BDEF1
            bones[i, 0], weights[i, 0] = c.index("bone"), 1.0
        elif kind in (1, 3):  # BDEF2, SDEF (its centre and radii left out: the linear blend)
            bones[i, :2] = c.index("bone"), c.index("bone")
            w = c.floats(1)[0]
            weights[i, :2] = w, 1.0 - w
            if kind == 3:
                c.floats(9)
        elif kind in (2, 4):  # BDEF4, QDEF (dual quaternion: its weights blended linearly)
            bones[i] = [c.index("bone") for _ in range(4)]
            weights[i] = c.floats(4)
        else:
            c.fail(f"vertex {i} has skinning type {kind} (0-4 are PMX's)")
        c.floats(1)  # edge scale
    return base[:, :3], base[:, 3:6], base[:, 6:8], bones, weights


def _faces(c: _Cursor, n_vertices: int) -> np.ndarray:
    """(F, 3) triangles as the file lists them."""
    size = c.sizes["vertex"]
    n = c.count(size, "triangle corners")
    if n % 3:
        c.fail(f"{n} triangle corners (not a multiple of 3)")
    dtype = {1: "<u1", 2: "<u2", 4: "<i4"}[size]
    faces = np.frombuffer(c.data, dtype, n, c.at).astype(np.int64).reshape(-1, 3)
    c.at += n * size
    if len(faces) and (faces.min() < 0 or faces.max() >= n_vertices):
        c.fail(f"a triangle names vertex {int(faces.max() if faces.max() >= n_vertices else faces.min())} of "
               f"{n_vertices}")
    return faces


def _materials(c: _Cursor, n_textures: int) -> list:
    """[(name, diffuse RGBA, double sided, texture index or -1, triangle corners)]."""
    out = []
    for _ in range(c.count(4 * 4, "materials")):
        name, _ = c.text(), c.text()
        diffuse = c.floats(4)
        c.floats(3 + 1 + 3)  # specular, its strength, ambient
        flags = c.one("B")
        c.floats(4 + 1)  # edge colour and size
        texture, _ = c.index("texture"), c.index("texture")  # the colour texture, the sphere map
        c.one("B")  # sphere mode
        if c.one("B") == 0:  # toon: a texture of the file's, or one of MMD's own ten
            c.index("texture")
        else:
            c.one("B")
        c.text()  # memo
        corners = c.one("i")
        out.append((name, diffuse, bool(flags & 1), texture if 0 <= texture < n_textures else -1, corners))
    return out


def _bones(c: _Cursor) -> list:
    """[(name, English name, position, parent)] in file order."""
    out = []
    for _ in range(c.count(_LEAST_BONE, "bones")):
        name, english = c.text(), c.text()
        position = c.floats(3)
        parent = c.index("bone")
        c.one("i")  # deform layer
        flags = c.one("H")
        if flags & 0x0001:  # tail: a bone, or an offset
            c.index("bone")
        else:
            c.floats(3)
        if flags & 0x0300:  # inherits a rotation or a translation
            c.index("bone")
            c.floats(1)
        if flags & 0x0400:  # fixed axis
            c.floats(3)
        if flags & 0x0800:  # local axes
            c.floats(6)
        if flags & 0x2000:  # external parent
            c.one("i")
        if flags & 0x0020:  # IK: target, loops, angle, links with optional limits
            c.index("bone")
            c.take("if")
            for _ in range(c.count(1, "IK links")):
                c.index("bone")
                if c.one("B"):
                    c.floats(6)
        out.append((name, english, position, parent))
    return out


def _morphs(c: _Cursor, n_vertices: int) -> tuple:
    """([(name, vertex indices, offsets)] of the vertex morphs, {kind: count} of the others)."""
    shapes, others = [], {}
    for _ in range(c.count(4 * 3 + 2, "morphs")):
        name, _ = c.text(), c.text()
        c.one("B")  # panel
        kind = c.one("B")
        if kind not in _MORPH_TAIL:
            c.fail(f"morph {name!r} has type {kind} (0-10 are PMX's)")
        n = c.count(1, "morph offsets")
        index_kind = {0: "morph", 9: "morph", 2: "bone", 8: "material", 10: "rigid"}.get(kind, "vertex")
        if kind == 1:
            rows = [(c.index("vertex"), c.floats(3)) for _ in range(n)]
            vertices = np.array([r[0] for r in rows], np.int64)
            if len(vertices) and (vertices.min() < 0 or vertices.max() >= n_vertices):
                c.fail(f"morph {name!r} moves vertex {int(vertices.max())} of {n_vertices}")
            shapes.append((name, vertices, np.array([r[1] for r in rows], float).reshape(-1, 3)))
            continue
        for _ in range(n):
            c.index(index_kind)
            c.take(f"{_MORPH_TAIL[kind]}x")
        others[_MORPH_KINDS[kind]] = others.get(_MORPH_KINDS[kind], 0) + 1
    return shapes, others


def _physics(c: _Cursor) -> int:
    """The rigid bodies' count, after the display frames (0 when the file ends before them)."""
    if c.at == len(c.data):
        return 0
    for _ in range(c.count(4 * 2 + 1 + 4, "display frames")):
        c.text(), c.text()
        c.one("B")
        for _ in range(c.count(2, "display frame entries")):
            c.index("bone" if c.one("B") == 0 else "morph")
    return max(c.one("i"), 0) if c.at + 4 <= len(c.data) else 0  # the bodies themselves are not read


class PmxModel:
    """A PMX file read (:func:`parse_pmx`), in the file's frame.

    Attributes: ``name``; ``positions``, ``normals`` (n, 3), ``uv`` (n, 2); ``bones``,
    ``weights`` (n, 4) each vertex's skin (-1: none); ``faces`` (F, 3) as listed;
    ``textures`` (paths); ``materials`` [(name, RGBA, double sided, texture or -1, corners)];
    ``joints`` [(name, English name, position, parent)]; ``shapes`` [(name, vertices,
    offsets)] the vertex morphs; ``other_morphs`` {kind: count}; ``rigid_bodies``."""

    def __init__(self, path):
        self.path = path
        c = _Cursor(path, read_bytes(path))
        _, uvs = _header(c)
        self.name = c.text()
        c.text(), c.text(), c.text()  # English name, comments
        self.positions, self.normals, self.uv, self.bones, self.weights = _vertices(c, uvs)
        self.faces = _faces(c, len(self.positions))
        self.textures = [c.text() for _ in range(c.count(4, "textures"))]
        self.materials = _materials(c, len(self.textures))
        self.joints = _bones(c)
        self.shapes, self.other_morphs = _morphs(c, len(self.positions))
        self.rigid_bodies = _physics(c)
        if sum(m[4] for m in self.materials) != 3 * len(self.faces):
            c.fail(f"its materials hold {sum(m[4] for m in self.materials)} triangle corners of {3 * len(self.faces)}")
        bad = (self.bones >= len(self.joints)) | (self.bones < -1)
        if bad.any():
            c.fail(f"a vertex is weighted to bone {int(self.bones[bad][0])} of {len(self.joints)}")


def _mesh(model: PmxModel) -> Mesh:
    """The model's mesh in glTF's frame (Z negated), each triangle turned to agree with the
    normals the file gives its corners."""
    positions, normals = model.positions * _NEGATE_Z, model.normals * _NEGATE_Z
    faces = model.faces
    a, b, c = (positions[faces[:, k]] for k in range(3))
    facing = np.einsum("ij,ij->i", np.cross(b - a, c - a), normals[faces].sum(axis=1))
    if np.count_nonzero(facing < 0) > np.count_nonzero(facing > 0):
        faces = faces[:, [0, 2, 1]]
    return merge_pieces(model.path, [MeshPiece(model.name or os.path.basename(model.path), positions, faces,
                                               normals=normals, uv=model.uv)])  # UV origin top left, as glTF


def read_pmx_rig(path) -> Rig:
    """A .pmx model as a :class:`Rig` (its bones the joints, its vertex morphs the shapes)."""
    model = PmxModel(path)
    if not model.joints:
        raise InputError(path, "has no bones (a PMX model without a skeleton)")
    return _rig(model, _mesh(model))


def _rig(model: PmxModel, mesh: Mesh) -> Rig:
    """The model's rig over ``mesh`` (:func:`_mesh`)."""
    path = model.path
    skin = normalise_weights(path, mesh, np.maximum(model.bones, 0), np.where(model.bones >= 0, model.weights, 0.0),
                             len(model.joints))
    names = unique_joint_names(path, [name or english or f"bone{k}" for k, (name, english, _, _) in
                                      enumerate(model.joints)])
    parents = np.array([p if 0 <= p < len(model.joints) else -1 for _, _, _, p in model.joints], np.int64)
    world = np.tile(np.eye(4), (len(names), 1, 1))
    world[:, :3, 3] = np.array([position for _, _, position, _ in model.joints]) * _NEGATE_Z
    try:
        return Rig(mesh, Skeleton.from_world(names, parents, world), skin, _shapes(model))
    except ValueError as e:
        raise InputError(path, str(e)) from None


def _shapes(model: PmxModel) -> tuple:
    """The vertex morphs as MorphTargets in glTF's frame (names made unique, with a warning);
    the other kinds named in a warning."""
    kept = [(name, vertices, offsets) for name, vertices, offsets in model.shapes if len(vertices)]
    renamed = unique_names([name for name, _, _ in kept])
    for (name, _, _), new in zip(kept, renamed):
        if new != name:
            log.warning("%s: morph name %r is used twice; the second is renamed %r", model.path, name, new)
    if model.other_morphs:
        log.warning("%s: morphs not read (only vertex morphs become blend shapes): %s", model.path,
                    ", ".join(f"{n} {kind}" for kind, n in sorted(model.other_morphs.items())))
    return tuple(MorphTarget(new, *_merged(vertices, offsets * _NEGATE_Z))
                 for new, (_, vertices, offsets) in zip(renamed, kept))


def _merged(vertices: np.ndarray, offsets: np.ndarray) -> tuple:
    """A morph's vertices sorted and distinct (a vertex listed twice moves by its offsets' sum)."""
    order, inverse = np.unique(vertices, return_inverse=True)
    summed = np.zeros((len(order), 3))
    np.add.at(summed, inverse, offsets)
    return order, summed


def read_pmx(path):
    """A .pmx file as what it holds, with its look: a :class:`Rig`, or a :class:`Mesh` for a
    model without bones."""
    model = PmxModel(path)
    mesh = _mesh(model)
    if not model.joints:
        mesh.look = _look(model, mesh, _shapes(model), rigged=False)
        return mesh
    rig = _rig(model, mesh)
    mesh.look = _look(model, mesh, rig.shapes, rigged=True)
    return rig


def read_pmx_mesh(path) -> Mesh:
    """The mesh of a .pmx model (its bones and weights ignored)."""
    return _mesh(PmxModel(path))


def _look(model: PmxModel, mesh: Mesh, shapes: tuple, rigged: bool):
    """The model's look: one part, one primitive per material (diffuse colour, double sided,
    the colour texture when it is a PNG, JPEG or WebP beside the file), the vertex morphs
    ``shapes`` as morph targets."""
    lost, images, materials, primitives, first = [], [], [], [], 0
    textures = {}
    for name, rgba, double, texture, corners in model.materials:
        material = {"name": name, "pbrMetallicRoughness": {"baseColorFactor": [float(np.clip(v, 0, 1)) for v in rgba],
                                                            "metallicFactor": 0.0}, "doubleSided": double}
        if rgba[3] < 1:
            material["alphaMode"] = "BLEND"
        if texture >= 0:
            if texture not in textures:
                textures[texture] = _image(model, texture, lost)
                if textures[texture] is not None:
                    images.append(textures[texture])
                    textures[texture] = len(images) - 1
            if textures[texture] is not None:
                material["pbrMetallicRoughness"]["baseColorTexture"] = {"index": textures[texture]}
        materials.append(material)
        primitives.append((mesh.faces[first // 3:(first + corners) // 3], len(materials) - 1))
        first += corners
    lost.append("MMD's sphere and toon maps, edges and specular colours")
    if model.rigid_bodies:
        lost.append(f"the model's physics ({model.rigid_bodies} rigid bodies and their joints: "
                    "they name its old bones)")
    if rigged:
        lost.append("the target's own skin (the transferred one replaces it)")
    part = LookPart(mesh.parts[0] if mesh.parts else "model", np.arange(mesh.n_vertices), mesh.vertices,
                    {"NORMAL": mesh.normals, "TEXCOORD_0": model.uv}, primitives)
    return build_look(model.path, [part], materials, images, lost, shapes=shapes)


def _image(model: PmxModel, texture: int, lost: list):
    """(bytes, MIME type) of a texture beside the model, or None (named in ``lost``: BMP, TGA
    and DDS textures, common in MMD, are not carried)."""
    return image_beside(model.path, model.textures[texture], "the PMX texture", "PMX file", lost)
