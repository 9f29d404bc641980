"""The fixture source (fixtures/source.glb) written as a MikuMikuDance model (.pmx 2.0), as
MMD holds a model: left-handed (Z negated), the main bones under MMD's Japanese names, each
vertex's skin as BDEF1, BDEF2, SDEF or BDEF4 by its influences, an IK bone, materials with a
PNG texture beside the file, a vertex morph and a group morph, display frames and a rigid body
(checked with MMD Tools' own PMX reader, which reads every part of it)."""
from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

from asetransfer.io import load_rig

SOURCE = Path(__file__).resolve().parents[1] / "fixtures" / "source.glb"
#: the fixture's main joints under MMD's standard names
JAPANESE = {"hips": "下半身", "spine.001": "上半身", "spine.002": "上半身2", "spine.003": "上半身3", "neck": "首",
            "head": "頭"}
for _side, _kanji in (("L", "左"), ("R", "右")):
    JAPANESE.update({f"clavicle.{_side}": f"{_kanji}肩", f"upperarm.{_side}": f"{_kanji}腕",
                     f"forearm.{_side}": f"{_kanji}ひじ", f"hand.{_side}": f"{_kanji}手首",
                     f"thigh.{_side}": f"{_kanji}足", f"shin.{_side}": f"{_kanji}ひざ",
                     f"foot.{_side}": f"{_kanji}足首", f"toe.{_side}": f"{_kanji}つま先"})
#: a 2x2 PNG (red, green / blue, white)
PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000002000000020802000000fdd49a73000000164944415478"
                    "9c63f8cfc0f01f0418fe83c00c0c0c00003ff305fb5fa8a2e40000000049454e44ae426082")


def _text(s: str) -> bytes:
    data = s.encode("utf-16-le")
    return struct.pack("<i", len(data)) + data


def pmx_bytes(rig, winding_as_mmd: bool = True) -> bytes:
    """``rig`` (glTF frame) as PMX 2.0 bytes (utf-16, 4-byte indices), its texture ``tex.png``."""
    flip = np.array([1.0, 1.0, -1.0])
    mesh, sk = rig.mesh, rig.skeleton
    out = [b"PMX ", struct.pack("<f", 2.0), bytes([8, 0, 0, 4, 4, 4, 4, 4, 4])]
    out += [_text("fixture"), _text("fixture"), _text(""), _text("")]
    out.append(struct.pack("<i", mesh.n_vertices))
    normals = mesh.normals if mesh.normals is not None else np.tile([0.0, 1.0, 0.0], (mesh.n_vertices, 1))
    uv = mesh.uv if mesh.uv is not None else np.zeros((mesh.n_vertices, 2))
    dense = rig.skin.to_dense()
    for i in range(mesh.n_vertices):
        out.append(struct.pack("<8f", *(mesh.vertices[i] * flip), *(normals[i] * flip), *uv[i]))
        joints = np.flatnonzero(dense[i] > 0)[np.argsort(-dense[i][dense[i] > 0], kind="stable")][:4]
        w = dense[i][joints] / dense[i][joints].sum()
        if len(joints) == 1:
            out.append(struct.pack("<Bi", 0, joints[0]))
        elif len(joints) == 2 and i % 2:
            out.append(struct.pack("<Biif", 1, joints[0], joints[1], w[0]))
        elif len(joints) == 2:  # SDEF: its centre and radii as MMD stores them
            out.append(struct.pack("<Biif9f", 3, joints[0], joints[1], w[0], *([0.0] * 9)))
        else:
            j4, w4 = np.full(4, -1), np.zeros(4)
            j4[:len(joints)], w4[:len(joints)] = joints, w
            out.append(struct.pack("<B4i4f", 2, *j4, *w4))
        out.append(struct.pack("<f", 1.0))
    faces = mesh.faces[:, [0, 2, 1]] if winding_as_mmd else mesh.faces  # Z negated: the same turn is reversed
    parts = [np.flatnonzero(mesh.vertex_part[mesh.faces[:, 0]] == k) for k in range(len(mesh.parts))]
    faces = faces[np.concatenate(parts)]  # in material order
    out.append(struct.pack("<i", faces.size) + faces.astype("<i4").tobytes())
    out.append(struct.pack("<i", 1) + _text("tex\\tex.png"))
    out.append(struct.pack("<i", len(parts)))
    for k, part in enumerate(parts):
        out += [_text(mesh.parts[k]), _text(mesh.parts[k]), struct.pack("<4f3ff3fB4ff", 0.8, 0.7, 0.6, 1.0, 0, 0, 0, 5.0,
                                                                         0.2, 0.2, 0.2, 1, 0, 0, 0, 1, 1.0)]
        out += [struct.pack("<iiBBi", 0 if k == 0 else -1, -1, 0, 0, -1), _text(""), struct.pack("<i", 3 * len(part))]
    world = sk.bind_world[:, :3, 3]
    out.append(struct.pack("<i", sk.n_joints + 1))
    for j, name in enumerate(sk.names):
        local = JAPANESE.get(name, name)
        out += [_text(local), _text(name), struct.pack("<3fiiH3f", *(world[j] * flip), int(sk.parents[j]), 0, 0x001A,
                                                        0.0, 0.1, 0.0)]
    ankle = sk.index("foot.L")  # an IK bone, as MMD's leg IK: no weight, a target and two links
    out += [_text("左足ＩＫ"), _text("leg IK_L"), struct.pack("<3fiiH3f", *(world[ankle] * flip), -1, 1, 0x003E,
                                                              0.0, 0.0, 1.0)]
    out.append(struct.pack("<iifi", ankle, 40, 2.0, 2) + struct.pack("<iB6f", sk.index("shin.L"), 1, -3.1, 0, 0, 0, 0, 0)
               + struct.pack("<iB", sk.index("thigh.L"), 0))
    moved = np.flatnonzero(mesh.vertices[:, 1] > np.percentile(mesh.vertices[:, 1], 95))
    out.append(struct.pack("<i", 2))
    out += [_text("あ"), _text("a"), struct.pack("<BBi", 3, 1, len(moved))]
    out += [struct.pack("<i3f", v, 0.0, 0.01, 0.02) for v in moved]
    out += [_text("group"), _text("group"), struct.pack("<BBi", 4, 0, 1), struct.pack("<if", 0, 1.0)]
    out += [struct.pack("<i", 1), _text("Root"), _text("Root"), struct.pack("<Bi", 1, 1), struct.pack("<Bi", 0, 0)]
    out += [struct.pack("<i", 1), _text("頭"), _text("head"),  # one rigid body on the head, and no joint
            struct.pack("<iBHB3f3f3f5fB", sk.index("head"), 0, 0xFFFF, 0, 0.1, 0.1, 0.1, *(world[sk.index("head")] * flip),
                        0, 0, 0, 1.0, 0.5, 0.5, 0.0, 0.5, 0), struct.pack("<i", 0)]
    return b"".join(out)


def save_pmx(folder, winding_as_mmd: bool = True) -> Path:
    """``folder/fixture.pmx`` with its texture ``folder/tex/tex.png``."""
    folder = Path(folder)
    (folder / "tex").mkdir(parents=True, exist_ok=True)
    (folder / "tex" / "tex.png").write_bytes(PNG)
    path = folder / "fixture.pmx"
    path.write_bytes(pmx_bytes(load_rig(SOURCE), winding_as_mmd))
    return path
