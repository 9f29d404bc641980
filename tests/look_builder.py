"""Test characters with a look: a body mesh (a fixture's) given two materials with textures,
two UV sets, vertex colours, tangents and two named morph targets, written as glTF (a parent
node with extras, a camera, a light), as OBJ + MTL + PNG and as PLY."""
from __future__ import annotations

import json
import pathlib
import struct
import zlib

import numpy as np

from asetransfer.io.glb import FLOAT, UBYTE, UINT, BufferBuilder, pack_glb
from asetransfer.model.transforms import quat_to_matrix

#: the morph targets' names and default weights
TARGET_NAMES, TARGET_WEIGHTS = ["smile", "blink"], [0.25, 0.0]


def png_bytes(width: int, height: int, seed: int) -> bytes:
    """A small RGB PNG of noise (distinct bytes per seed)."""
    pixels = np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)
    raw = b"".join(b"\x00" + row.tobytes() for row in pixels)

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def vertex_normals(vertices: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """(V, 3) area-weighted unit vertex normals."""
    fn = np.cross(vertices[faces[:, 1]] - vertices[faces[:, 0]], vertices[faces[:, 2]] - vertices[faces[:, 0]])
    n = np.zeros_like(vertices)
    for k in range(3):
        np.add.at(n, faces[:, k], fn)
    n[np.linalg.norm(n, axis=1) < 1e-20] = (0.0, 1.0, 0.0)
    return n / np.linalg.norm(n, axis=1, keepdims=True)


class Look:
    """The look of a body: per piece (material) the vertex ids it uses and its attributes,
    all derived from the body's world positions (so any format describes the same character)."""

    def __init__(self, vertices: np.ndarray, faces: np.ndarray):
        self.vertices, self.faces = vertices, faces
        centre_y = np.median(vertices[:, 1])
        upper = vertices[faces].mean(axis=1)[:, 1] > centre_y
        self.pieces = []
        for material, mask in enumerate((upper, ~upper)):
            ids, local = np.unique(faces[mask], return_inverse=True)
            self.pieces.append({"material": material, "ids": ids, "faces": local.reshape(-1, 3)})
        normals = vertex_normals(vertices, faces)
        lo, hi = vertices.min(axis=0), vertices.max(axis=0)
        rel = (vertices - lo) / (hi - lo)
        self.normals = normals
        self.uv0 = np.stack([np.arctan2(vertices[:, 0], vertices[:, 2]) / (2 * np.pi) + 0.5, rel[:, 1]], axis=1)
        self.uv1 = rel[:, [0, 1]]
        self.colour = np.concatenate([rel, np.ones((len(rel), 1))], axis=1)  # RGBA in 0..1
        # a second colour set (a mask a shader reads), translucent below the middle
        self.colour1 = np.concatenate([1.0 - rel, np.where(rel[:, 1:2] < 0.5, 0.5, 1.0)], axis=1)
        t = np.cross(normals, [0.0, 1.0, 0.0])
        t[np.linalg.norm(t, axis=1) < 1e-6] = (1.0, 0.0, 0.0)
        t /= np.linalg.norm(t, axis=1, keepdims=True)
        self.tangent = np.concatenate([t, np.where(vertices[:, :1] >= 0, 1.0, -1.0)], axis=1)
        head = vertices[:, 1] > lo[1] + 0.9 * (hi[1] - lo[1])
        self.smile = np.where(head[:, None], [0.0, 0.01, 0.005], 0.0)          # metres
        self.smile_normal = np.where(head[:, None], [0.0, 0.1, 0.0], 0.0)
        self.blink = np.where(head[:, None] & (vertices[:, 2:3] > 0.05), [0.0, -0.004, 0.0], 0.0)
        self.images = [png_bytes(8, 8, 1), png_bytes(8, 4, 2), png_bytes(4, 4, 3)]


def gltf_materials(image_refs: list) -> dict:
    """materials, textures, samplers and images of the test character (``image_refs``: each
    image's object without its name: ``{"uri": ...}`` or ``{"bufferView": ..., "mimeType": ...}``)."""
    return {
        "materials": [
            {"name": "skin", "pbrMetallicRoughness": {
                "baseColorTexture": {"index": 0, "texCoord": 0, "extensions": {"KHR_texture_transform": {
                    "offset": [0.1, 0.2], "scale": [2.0, 2.0], "rotation": 0.3}}},
                "metallicRoughnessTexture": {"index": 2, "texCoord": 1}, "metallicFactor": 0.0},
             "normalTexture": {"index": 1, "scale": 0.8},
             "extensions": {"KHR_materials_emissive_strength": {"emissiveStrength": 2.0}},
             "emissiveFactor": [0.1, 0.0, 0.0]},
            {"name": "cloth", "pbrMetallicRoughness": {"baseColorFactor": [0.2, 0.3, 0.8, 1.0],
                                                       "roughnessFactor": 0.9},
             "extensions": {"KHR_materials_sheen": {"sheenColorFactor": [1.0, 1.0, 1.0]}}, "doubleSided": True},
        ],
        "textures": [{"sampler": 0, "source": 0}, {"sampler": 0, "source": 1}, {"source": 2}],
        "samplers": [{"magFilter": 9729, "minFilter": 9987, "wrapS": 33648, "wrapT": 10497}],
        "images": [dict(ref, name=f"image{i}") for i, ref in enumerate(image_refs)],
        "extensionsUsed": ["KHR_texture_transform", "KHR_materials_emissive_strength", "KHR_materials_sheen",
                           "KHR_lights_punctual"],
    }


def write_gltf(path, look: Look, parent_world: np.ndarray | None = None, lines: bool = False) -> pathlib.Path:
    """The test character as .glb (images in the buffer) or .gltf (buffer and images as files
    beside it).  ``parent_world``: the (4, 4) world matrix of the body's parent node (the
    positions are stored in its space); ``lines``: add a LINES primitive to the body mesh."""
    path = pathlib.Path(path)
    world = np.eye(4) if parent_world is None else parent_world
    bb = BufferBuilder()
    prims = [_primitive(bb, look, piece, np.linalg.inv(world)) for piece in look.pieces]
    if lines:
        prims.append({"attributes": {"POSITION": prims[0]["attributes"]["POSITION"]},
                      "indices": bb.add(np.arange(4, dtype=np.uint32).reshape(-1, 1), UINT, "SCALAR"), "mode": 1})
    binary = path.suffix == ".glb"
    image_refs = []
    for i, data in enumerate(look.images):
        if binary:
            image_refs.append({"bufferView": bb.add_bytes(data), "mimeType": "image/png"})
        else:
            (path.parent / f"{path.stem}_tex{i}.png").write_bytes(data)
            image_refs.append({"uri": f"{path.stem}_tex{i}.png"})
    t, q, s = _trs(world)
    doc = {"asset": {"version": "2.0", "generator": "look_builder", "copyright": "CC0"}, "scene": 0,
           "scenes": [{"name": "Scene", "nodes": [0, 2, 3]}],
           "nodes": [{"name": "Character", "children": [1], "translation": t, "rotation": q, "scale": s,
                      "extras": {"rig_id": 7, "department": "characters"}},
                     {"name": "Body", "mesh": 0, "weights": TARGET_WEIGHTS, "extras": {"lod": 0}},
                     {"name": "Camera", "camera": 0, "translation": [0.0, 1.0, 3.0]},
                     {"name": "Lamp", "translation": [1.0, 2.0, 1.0],
                      "extensions": {"KHR_lights_punctual": {"light": 0}}}],
           "cameras": [{"type": "perspective", "perspective": {"yfov": 0.8, "znear": 0.05, "zfar": 100.0}}],
           "extensions": {"KHR_lights_punctual": {"lights": [{"type": "point", "intensity": 10.0}]}},
           "meshes": [{"name": "body", "primitives": prims, "weights": TARGET_WEIGHTS,
                       "extras": {"targetNames": TARGET_NAMES}}],
           **gltf_materials(image_refs),
           "accessors": bb.accessors, "bufferViews": bb.views}
    if binary:
        doc["buffers"] = [{"byteLength": len(bb.blob)}]
        path.write_bytes(pack_glb(doc, bytes(bb.blob)))
    else:
        (path.parent / f"{path.stem}.bin").write_bytes(bytes(bb.blob))
        doc["buffers"] = [{"byteLength": len(bb.blob), "uri": f"{path.stem}.bin"}]
        path.write_text(json.dumps(doc, indent=1))
    return path


def _primitive(bb: BufferBuilder, look: Look, piece: dict, inv: np.ndarray) -> dict:
    """A piece's glTF primitive, its arrays (in the space whose world matrix is ``inv^-1``) added to ``bb``."""
    ids, a_inv = piece["ids"], inv[:3, :3]
    n_turn = np.linalg.inv(a_inv).T  # normals turn by the inverse transpose

    def unit(v):
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    local_n = unit(look.normals[ids] @ n_turn.T)
    tangent = np.concatenate([unit(look.tangent[ids, :3] @ a_inv.T), look.tangent[ids, 3:]], axis=1)
    attrs = {"POSITION": bb.add((look.vertices[ids] @ a_inv.T + inv[:3, 3]).astype(np.float32), FLOAT, "VEC3",
                                minmax=True),
             "NORMAL": bb.add(local_n.astype(np.float32), FLOAT, "VEC3"),
             "TANGENT": bb.add(tangent.astype(np.float32), FLOAT, "VEC4"),
             "TEXCOORD_0": bb.add(look.uv0[ids].astype(np.float32), FLOAT, "VEC2"),
             "TEXCOORD_1": bb.add(look.uv1[ids].astype(np.float32), FLOAT, "VEC2"),
             "COLOR_0": bb.add(np.round(look.colour[ids] * 255).astype(np.uint8), UBYTE, "VEC4", normalized=True),
             "COLOR_1": bb.add(look.colour1[ids].astype(np.float32), FLOAT, "VEC4")}
    smile_n = unit(look.normals[ids] + look.smile_normal[ids]) - look.normals[ids]
    targets = [{"POSITION": bb.add((look.smile[ids] @ a_inv.T).astype(np.float32), FLOAT, "VEC3", minmax=True),
                "NORMAL": bb.add((unit((look.normals[ids] + smile_n) @ n_turn.T) - local_n).astype(np.float32),
                                 FLOAT, "VEC3")},
               {"POSITION": bb.add((look.blink[ids] @ a_inv.T).astype(np.float32), FLOAT, "VEC3", minmax=True)}]
    return {"attributes": attrs, "indices": bb.add(piece["faces"].astype(np.uint32).reshape(-1, 1), UINT, "SCALAR"),
            "material": piece["material"], "targets": targets}


def _trs(m: np.ndarray) -> tuple:
    """Translation, quaternion (x, y, z, w) and scale of a (4, 4) rotation-and-uniform-scale matrix."""
    from scipy.spatial.transform import Rotation

    s = float(np.cbrt(np.linalg.det(m[:3, :3])))
    q = Rotation.from_matrix(m[:3, :3] / s).as_quat()
    assert np.allclose(quat_to_matrix(q) * s, m[:3, :3], atol=1e-9)
    return [float(x) for x in m[:3, 3]], [float(x) for x in q], [s, s, s]


def write_obj(path, look: Look) -> pathlib.Path:
    """The test character as OBJ (``vt``, ``vn``, one ``usemtl`` group per material) with its
    .mtl (Kd, map_Kd with options, bump, d) and PNG textures beside it."""
    path = pathlib.Path(path)
    for i, data in enumerate(look.images):
        (path.parent / f"{path.stem}_tex{i}.png").write_bytes(data)
    path.with_suffix(".mtl").write_text(
        "# test materials\n"
        f"newmtl skin\nKd 0.9 0.8 0.7\nKs 0.5 0.5 0.5\nNs 20\nmap_Kd -s 1 1 1 {path.stem}_tex0.png\n"
        f"map_Bump -bm 0.8 {path.stem}_tex1.png\nd 1.0\n\n"
        "newmtl cloth\nKd 0.2 0.3 0.8\nd 0.5\nillum 2\n")
    lines = [f"mtllib {path.stem}.mtl", "o body"]
    lines += [f"v {x:.6f} {y:.6f} {z:.6f}" for x, y, z in look.vertices]
    lines += [f"vt {u:.6f} {v:.6f}" for u, v in look.uv0]
    lines += [f"vn {x:.6f} {y:.6f} {z:.6f}" for x, y, z in look.normals]
    for piece, name in zip(look.pieces, ("skin", "cloth")):
        lines.append(f"usemtl {name}")
        lines += ["f " + " ".join(f"{v + 1}/{v + 1}/{v + 1}" for v in tri) for tri in piece["ids"][piece["faces"]]]
    path.write_text("\n".join(lines) + "\n")
    return path


def write_ply(path, look: Look) -> pathlib.Path:
    """The test character as binary PLY with normals, UVs (s, t) and RGBA colours."""
    path = pathlib.Path(path)
    v = look.vertices
    rgba = np.round(look.colour * 255).astype(np.uint8)
    header = ("ply\nformat binary_little_endian 1.0\n"
              f"element vertex {len(v)}\nproperty float x\nproperty float y\nproperty float z\n"
              "property float nx\nproperty float ny\nproperty float nz\nproperty float s\nproperty float t\n"
              "property uchar red\nproperty uchar green\nproperty uchar blue\nproperty uchar alpha\n"
              "property float quality\n"
              f"element face {len(look.faces)}\nproperty list uchar int vertex_indices\nend_header\n")
    row = np.dtype([("p", "<f4", 3), ("n", "<f4", 3), ("st", "<f4", 2), ("c", "u1", 4), ("q", "<f4")])
    verts = np.zeros(len(v), row)
    verts["p"], verts["n"], verts["st"], verts["c"], verts["q"] = v, look.normals, look.uv0, rgba, 1.0
    face = np.dtype([("n", "u1"), ("i", "<i4", 3)])
    faces = np.zeros(len(look.faces), face)
    faces["n"], faces["i"] = 3, look.faces
    path.write_bytes(header.encode() + verts.tobytes() + faces.tobytes())
    return path
