"""Bad-input corpus: every way a user's file can be wrong.

Each case is generated here (from the tube rig of ``conftest.py``, the writer's own
glTF document edited with ``gltf_builder.py``, or the fixtures) and run through the
command line in-process.  A bad input must give exit code 2 and exactly one line on
stderr, ``asetransfer: error: <file>: <problem>``, naming the file at fault and
describing the problem, with no traceback; nothing may be written (no output, no
temporary file) and no input may change.

Some awkward inputs are valid and must work: a target in tens of pieces, unreferenced
vertices, degenerate triangles among good ones, source and target 1000x apart in
scale.  Those are at the end.
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
import pathlib
import re
import shutil

import numpy as np
import pytest

import asetransfer as at
from asetransfer_cli.main import main
from conftest import FIXTURES, tube_rig
from gltf_builder import Doc, accessor_array, rig_document, save_glb

# tube_rig(): 13 rings of 12 vertices (ring s, corner k is vertex 12 s + k), then the
# bottom (156) and top (157) cap centres; joints root, mid, tip (tip has no weight).
MARKER_VERTICES = (0, 6, 75, 81, 144, 150, 156, 157)


# ---------------------------------------------------------------------------- writers
def write_obj(path, verts, faces):
    with open(path, "w") as f:
        f.writelines(f"v {x!r} {y!r} {z!r}\n" for x, y, z in np.asarray(verts, dtype=float).tolist())
        f.writelines(f"f {a} {b} {c}\n" for a, b, c in (np.asarray(faces) + 1).tolist())
    return path


def write_off(path, verts, faces):
    with open(path, "w") as f:
        f.write(f"OFF\n{len(verts)} {len(faces)} 0\n")
        f.writelines(f"{x!r} {y!r} {z!r}\n" for x, y, z in np.asarray(verts, dtype=float).tolist())
        f.writelines(f"3 {a} {b} {c}\n" for a, b, c in np.asarray(faces).tolist())
    return path


def write_ply(path, verts, faces):
    with open(path, "w") as f:
        f.write(f"ply\nformat ascii 1.0\nelement vertex {len(verts)}\nproperty float x\nproperty float y\n"
                f"property float z\nelement face {len(faces)}\nproperty list uchar int vertex_indices\n"
                "end_header\n")
        f.writelines(f"{x!r} {y!r} {z!r}\n" for x, y, z in np.asarray(verts, dtype=float).tolist())
        f.writelines(f"3 {a} {b} {c}\n" for a, b, c in np.asarray(faces).tolist())
    return path


def marker(name, src, tgt):
    """A marker; an int location is a vertex index."""
    def loc(x):
        return {"vertex": x} if isinstance(x, int) else x
    return {"name": name, "source": loc(src), "target": loc(tgt)}


def good_markers(vertices=MARKER_VERTICES):
    return [marker(f"m{v}", v, v) for v in vertices]


def write_json(path, doc):
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def target_vertices(rig):
    """The base target: the source tube made wider, longer and moved (another body)."""
    return rig.mesh.vertices * [1.4, 1.2, 1.3] + [0.5, -0.2, 0.0]


# ---------------------------------------------------------------------------- base inputs
class Base:
    """Valid inputs shared by every case (never written to)."""

    def __init__(self, d):
        self.dir = d
        self.rig = tube_rig()
        self.src = str(d / "source.glb")
        at.save_rig(self.src, self.rig)
        self.tgt = str(write_obj(d / "target.obj", target_vertices(self.rig), self.rig.mesh.faces))
        self.markers = str(write_json(d / "markers.json", {"markers": good_markers()}))


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return Base(tmp_path_factory.mktemp("base"))


class Case:
    """One case's folders: ``inp`` for the bad files it makes, ``out`` for outputs."""

    def __init__(self, base, tmp_path, monkeypatch=None):
        self.base, self.monkeypatch = base, monkeypatch
        self.inp = tmp_path / "in"
        self.out_dir = tmp_path / "out"
        self.inp.mkdir()
        self.out_dir.mkdir()
        self.out = str(self.out_dir / "rigged.glb")

    def path(self, name):
        return str(self.inp / name)

    def transfer(self, src=None, tgt=None, markers=None, out=None):
        """``transfer`` argv on the base inputs, with any of them replaced."""
        b = self.base
        return ["transfer", src or b.src, tgt or b.tgt, "--markers", markers or b.markers, "-o", out or self.out]

    def bytes_file(self, name, data: bytes):
        p = self.path(name)
        with open(p, "wb") as f:
            f.write(data)
        return p

    def markers_file(self, markers, name="markers.json"):
        return str(write_json(self.path(name), {"markers": markers}))

    def gltf(self, edit, name="source.glb"):
        """The base rig's document, changed by ``edit(doc, blob)``, written as GLB."""
        doc, blob = rig_document(self.base.rig)
        edit(doc, blob)
        return save_glb(self.path(name), doc, blob)


def attribute(doc, blob, name):
    prim = doc["meshes"][0]["primitives"][0]
    key = prim["indices"] if name == "indices" else prim["attributes"][name]
    return accessor_array(doc, blob, key)


def ibm(doc, blob):
    return accessor_array(doc, blob, doc["skins"][0]["inverseBindMatrices"]).reshape(-1, 4, 4)


# ---------------------------------------------------------------------------- the corpus
CASES = {}


def bad(pattern):
    """Register a case: ``fn(case) -> (argv, file at fault)``; ``pattern`` must match the message."""
    def register(fn):
        CASES[fn.__name__] = (fn, pattern)
        return fn
    return register


# --- any file: missing, unreadable, empty, truncated
@bad("not found")
def source_missing(c):
    p = c.path("nope.glb")
    return c.transfer(src=p), p


@bad("not found")
def target_missing(c):
    p = c.path("nope.obj")
    return c.transfer(tgt=p), p


@bad("not found")
def markers_missing(c):
    p = c.path("nope.json")
    return c.transfer(markers=p), p


def _unreadable(c, original, name):
    p = c.path(name)
    shutil.copy(original, p)
    os.chmod(p, 0)
    if os.access(p, os.R_OK):
        pytest.skip("this user can read a file with mode 000 (root)")
    return p


@bad("cannot read")
def source_unreadable(c):
    p = _unreadable(c, c.base.src, "source.glb")
    return c.transfer(src=p), p


@bad("cannot read")
def markers_unreadable(c):
    p = _unreadable(c, c.base.markers, "markers.json")
    return c.transfer(markers=p), p


def _permission_denied(*a, **k):
    raise PermissionError(13, "Permission denied")


@bad("cannot read file \\(Permission denied\\)")
def target_permission_denied(c):
    # what a mode-000 file gives a user who is not root, simulated so that root runs it too
    import asetransfer.io.files

    def guarded_open(p, *a, **k):
        return _permission_denied() if os.path.abspath(p) == os.path.abspath(c.base.tgt) else open(p, *a, **k)
    c.monkeypatch.setattr(asetransfer.io.files, "open", guarded_open, raising=False)
    return c.transfer(), c.base.tgt


@bad("cannot write to directory .* \\(Permission denied\\)")
def output_directory_permission_denied(c):
    import asetransfer.io.atomic
    c.monkeypatch.setattr(asetransfer.io.atomic.tempfile, "mkstemp", _permission_denied)
    return c.transfer(), c.out


@bad("is a directory")
def source_is_a_directory(c):
    p = c.path("source.glb")
    os.mkdir(p)
    return c.transfer(src=p), p


@bad("empty")
def source_empty(c):
    p = c.bytes_file("source.glb", b"")
    return c.transfer(src=p), p


@bad("empty")
def target_empty(c):
    p = c.bytes_file("target.ply", b"")
    return c.transfer(tgt=p), p


@bad("empty")
def markers_empty(c):
    p = c.bytes_file("markers.json", b"")
    return c.transfer(markers=p), p


@bad("truncated")
def source_truncated(c):
    data = pathlib.Path(c.base.src).read_bytes()
    p = c.bytes_file("source.glb", data[: len(data) * 2 // 3])
    return c.transfer(src=p), p


@bad("truncated")
def source_truncated_in_header(c):
    p = c.bytes_file("source.glb", pathlib.Path(c.base.src).read_bytes()[:14])
    return c.transfer(src=p), p


@bad("cannot parse PLY")
def target_ply_truncated(c):
    data = (FIXTURES / "target_heavy.ply").read_bytes()
    p = c.bytes_file("target.ply", data[: len(data) // 2])
    return c.transfer(tgt=p), p


@bad("malformed OBJ line")
def target_obj_truncated_mid_line(c):
    text = pathlib.Path(c.base.tgt).read_text()
    cut = text.index("\nf ") + 4  # keeps "f 1" of the first face line
    p = c.bytes_file("target.obj", text[:cut].encode())
    return c.transfer(tgt=p), p


@bad("invalid JSON")
def markers_truncated(c):
    data = pathlib.Path(c.base.markers).read_bytes()
    p = c.bytes_file("markers.json", data[: len(data) // 2])
    return c.transfer(markers=p), p


# --- glTF sources
@bad("no skin")
def gltf_without_skin(c):
    def edit(doc, blob):
        del doc["skins"]
        for n in doc["nodes"]:
            n.pop("skin", None)
    p = c.gltf(edit)
    return c.transfer(src=p), p


@bad("has a skin but no triangle mesh bound to it")
def gltf_without_mesh(c):
    def edit(doc, blob):
        del doc["meshes"]
        doc["nodes"] = [n for n in doc["nodes"] if "mesh" not in n]
        doc["scenes"][0]["nodes"] = [0]
    p = c.gltf(edit)
    return c.transfer(src=p), p


@bad("joint node 9, which does not exist")
def gltf_skin_joint_outside_node_list(c):
    p = c.gltf(lambda doc, blob: doc["skins"][0]["joints"].__setitem__(2, 9))
    return c.transfer(src=p), p


@bad("NaN or infinite vertex positions")
def gltf_nan_position(c):
    p = c.gltf(lambda doc, blob: attribute(doc, blob, "POSITION").__setitem__((5, 1), np.nan))
    return c.transfer(src=p), p


@bad("NaN or infinite vertex positions")
def gltf_infinite_position(c):
    p = c.gltf(lambda doc, blob: attribute(doc, blob, "POSITION").__setitem__((7, 0), np.inf))
    return c.transfer(src=p), p


@bad("NaN or infinite 'translation'")
def gltf_infinite_node_translation(c):
    p = c.gltf(lambda doc, blob: doc["nodes"][1].__setitem__("translation", [0.0, float("inf"), 0.0]))
    return c.transfer(src=p), p


@bad("NaN or infinite 'matrix'")
def gltf_nan_node_matrix(c):
    def edit(doc, blob):
        n = doc["nodes"][2]
        for key in ("translation", "rotation", "scale"):
            n.pop(key, None)
        n["matrix"] = [1.0, 0, 0, 0, 0, 1.0, 0, 0, 0, 0, 1.0, 0, float("nan"), 1.5, 0, 1.0]
    p = c.gltf(edit)
    return c.transfer(src=p), p


@bad("inverse bind matrix of joint 'mid' has NaN")
def gltf_nan_inverse_bind_matrix(c):
    p = c.gltf(lambda doc, blob: ibm(doc, blob).__setitem__((1, 0, 0), np.nan))
    return c.transfer(src=p), p


@bad("inverse bind matrix of joint 'root' is singular")
def gltf_singular_inverse_bind_matrix(c):
    def edit(doc, blob):
        m = ibm(doc, blob)
        m[0, 2, :3] = m[0, 0, :3]  # two equal rows: rank 2 (column-major storage, rows of M^T)
    p = c.gltf(edit)
    return c.transfer(src=p), p


@bad("inverse bind matrix of joint 'tip' is not affine")
def gltf_inverse_bind_matrix_not_affine(c):
    p = c.gltf(lambda doc, blob: ibm(doc, blob).__setitem__((2, 0, 3), 0.5))  # stored transposed: last row
    return c.transfer(src=p), p


@bad("'matrix' that is not affine")
def gltf_node_matrix_not_affine(c):
    def edit(doc, blob):
        n = doc["nodes"][1]
        del n["translation"], n["rotation"]
        n["matrix"] = [1.0, 0, 0, 0.2, 0, 1.0, 0, 0, 0, 0, 1.0, 0, 0, 1.5, 0, 1.0]
    p = c.gltf(edit)
    return c.transfer(src=p), p


@bad("joint 'tip' has a singular transform \\(a zero scale")
def gltf_joint_with_zero_scale(c):
    p = c.gltf(lambda doc, blob: doc["nodes"][2].__setitem__("scale", [1.0, 0.0, 1.0]))
    return c.transfer(src=p), p


@bad("weighted joints all bind at one point.*skin 0 has no inverseBindMatrices")
def gltf_skin_without_inverse_bind_matrices(c):
    # read as identities (the spec), every joint binds at the origin: no skeleton to place
    p = c.gltf(lambda doc, blob: doc["skins"][0].pop("inverseBindMatrices"))
    return c.transfer(src=p), p


@bad("skin 0 has 2 inverse bind matrices for 3 joints")
def gltf_fewer_inverse_bind_matrices_than_joints(c):
    def edit(doc, blob):
        doc["accessors"][doc["skins"][0]["inverseBindMatrices"]]["count"] = 2
    p = c.gltf(edit)
    return c.transfer(src=p), p


@bad("negative skin weights")
def gltf_negative_weights(c):
    p = c.gltf(lambda doc, blob: attribute(doc, blob, "WEIGHTS_0").__setitem__(40, [1.5, -0.5, 0, 0]))
    return c.transfer(src=p), p


@bad("every skin weight is zero")
def gltf_all_weights_zero(c):
    p = c.gltf(lambda doc, blob: attribute(doc, blob, "WEIGHTS_0").__setitem__(slice(None), 0.0))
    return c.transfer(src=p), p


@bad("NaN or infinite skin weights")
def gltf_nan_weights(c):
    p = c.gltf(lambda doc, blob: attribute(doc, blob, "WEIGHTS_0").__setitem__((3, 0), np.nan))
    return c.transfer(src=p), p


@bad("refers to joint 7, but skin 0 has 3 joints")
def gltf_weight_on_missing_joint(c):
    def edit(doc, blob):
        attribute(doc, blob, "JOINTS_0")[10] = [7, 0, 0, 0]
        attribute(doc, blob, "WEIGHTS_0")[10] = [1, 0, 0, 0]
    p = c.gltf(edit)
    return c.transfer(src=p), p


@bad("cycle")
def gltf_cyclic_hierarchy(c):
    def edit(doc, blob):
        doc["nodes"][2]["children"] = [0]  # root -> mid -> tip -> root
    p = c.gltf(edit)
    return c.transfer(src=p), p


@bad("two parents")
def gltf_node_with_two_parents(c):
    def edit(doc, blob):
        doc["nodes"][0]["children"] = [1, 2]  # tip is a child of root and of mid
    p = c.gltf(edit)
    return c.transfer(src=p), p


@bad("lists itself as a child")
def gltf_node_its_own_child(c):
    p = c.gltf(lambda doc, blob: doc["nodes"][1].__setitem__("children", [1, 2]))
    return c.transfer(src=p), p


@bad("same joint node twice")
def gltf_duplicate_joint_in_skin(c):
    p = c.gltf(lambda doc, blob: doc["skins"][0]["joints"].__setitem__(2, 1))
    return c.transfer(src=p), p


@bad("has jointNames, glTF 1.0's")
def gltf_skin_with_glTF_1_joint_names(c):
    def edit(doc, blob):  # as early COLLADA2GLTF wrote files marked 2.0
        skin = doc["skins"][0]
        skin["jointNames"] = [doc["nodes"][j].get("name", str(j)) for j in skin.pop("joints")]
    p = c.gltf(edit)
    return c.transfer(src=p), p


@bad("vertex index 400 out of range")
def gltf_face_index_out_of_range(c):
    p = c.gltf(lambda doc, blob: attribute(doc, blob, "indices").__setitem__((30, 0), 400))
    return c.transfer(src=p), p


@bad("accessor 99, which does not exist")
def gltf_missing_accessor(c):
    p = c.gltf(lambda doc, blob: doc["meshes"][0]["primitives"][0]["attributes"].__setitem__("POSITION", 99))
    return c.transfer(src=p), p


@bad("lies outside buffer")
def gltf_buffer_view_past_the_buffer(c):
    def edit(doc, blob):
        doc["bufferViews"][-1]["byteLength"] += 4096
    p = c.gltf(edit)
    return c.transfer(src=p), p


@bad("not a glTF document")
def gltf_json_that_is_not_gltf(c):
    p = c.bytes_file("source.gltf", b'{"scenes": []}')
    return c.transfer(src=p), p


@bad("nested too deeply")
def gltf_json_nested_too_deeply(c):
    p = c.bytes_file("source.gltf", b'{"asset": {"version": "2.0"}, "nodes": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
    return c.transfer(src=p), p


@bad("JSON chunk of the GLB file is not UTF-8")
def gltf_glb_json_chunk_not_utf8(c):
    data = bytearray(pathlib.Path(c.base.src).read_bytes())
    data[40] = 0xFF  # inside the JSON chunk's text
    p = c.bytes_file("source.glb", bytes(data))
    return c.transfer(src=p), p


@bad("version '1.0' is not supported")
def gltf_version_1(c):
    p = c.gltf(lambda doc, blob: doc["asset"].__setitem__("version", "1.0"))
    return c.transfer(src=p), p


@bad("extension.*EXT_mesh_gpu_instancing")
def gltf_needs_instancing(c):
    p = c.gltf(lambda doc, blob: doc.__setitem__("extensionsRequired", ["EXT_mesh_gpu_instancing"]))
    return c.transfer(src=p), p


@bad("Draco.*(malformed|does not exist)")
def gltf_draco_primitive_without_its_data(c):
    """A primitive declaring Draco compression with no bufferView for it."""
    def compress(doc, blob):
        doc["extensionsRequired"] = doc["extensionsUsed"] = ["KHR_draco_mesh_compression"]
        doc["meshes"][0]["primitives"][0]["extensions"] = {"KHR_draco_mesh_compression": {"attributes": {}}}
    p = c.gltf(compress)
    return c.transfer(src=p), p


def _gltf_with_buffer_uri(c, uri):
    """``transfer`` argv with the base rig as a .gltf whose buffer is the file ``uri``."""
    doc, _ = rig_document(c.base.rig)
    doc["buffers"][0]["uri"] = uri
    p = c.bytes_file("source.gltf", json.dumps(doc).encode())
    return c.transfer(src=p), p


@bad("buffer 0 file 'source.bin' cannot be read")
def gltf_external_buffer_missing(c):
    return _gltf_with_buffer_uri(c, "source.bin")


@bad("has a skin but no triangle mesh bound to it")
def gltf_lines_only(c):
    p = c.gltf(lambda doc, blob: doc["meshes"][0]["primitives"][0].__setitem__("mode", 1))
    return ["-q"] + c.transfer(src=p), p  # -q: the "skipped" warning is not the error


# --- target meshes
@bad("no faces")
def target_point_cloud(c):
    p = write_ply(c.path("target.ply"), target_vertices(c.base.rig), np.zeros((0, 3), int))
    return c.transfer(tgt=p), p


@bad("face uses vertex 200, but the file has 158 vertices")
def target_obj_face_index_out_of_range(c):
    faces = c.base.rig.mesh.faces.copy()
    faces[17, 1] = 199
    p = write_obj(c.path("target.obj"), target_vertices(c.base.rig), faces)
    return c.transfer(tgt=p), p


@bad("face index outside the range")
def target_off_face_index_out_of_range(c):
    faces = c.base.rig.mesh.faces.copy()
    faces[17, 1] = 1000
    p = write_off(c.path("target.off"), target_vertices(c.base.rig), faces)
    return c.transfer(tgt=p), p


@bad("out of range")
def target_ply_face_index_out_of_range(c):
    faces = c.base.rig.mesh.faces.copy()
    faces[3, 2] = 158
    p = write_ply(c.path("target.ply"), target_vertices(c.base.rig), faces)
    return c.transfer(tgt=p), p


@bad("every triangle is degenerate")
def target_only_degenerate_triangles(c):
    # points spread in 3D, but every triangle's corners lie on one line
    rng = np.random.default_rng(1)
    starts, dirs = rng.normal(size=(20, 3)), rng.normal(size=(20, 3))
    verts = (starts[:, None] + np.array([0.0, 0.5, 1.0])[None, :, None] * dirs[:, None]).reshape(-1, 3)
    faces = np.arange(60).reshape(20, 3)
    p = write_obj(c.path("target.obj"), verts, faces)
    return c.transfer(tgt=p, markers=c.markers_file([marker(f"m{k}", v, 3 * k) for k, v in
                                                     enumerate((0, 75, 157))])), p


def _static_gltf(c, verts, faces):
    d = Doc()
    d.node(name="mesh", mesh=d.mesh(d.primitive(verts, np.asarray(faces))))
    d.scene.append(0)
    return d.save(c.path("target.glb"))


@bad("mesh has no faces")
def gltf_target_only_repeated_corners(c):
    p = _static_gltf(c, np.eye(3), [[0, 0, 1], [1, 2, 2]])
    return c.transfer(tgt=p), p


@bad("every triangle is degenerate")
def gltf_target_only_collinear_triangles(c):
    p = _static_gltf(c, [[0, 0, 0], [1, 0, 0], [2, 0, 0], [0, 0, 1], [0, 0, 2]], [[0, 1, 2], [2, 0, 1], [0, 3, 4]])
    return c.transfer(tgt=p), p


@bad("vertex 3 has a NaN")
def target_nan_vertex(c):
    verts = target_vertices(c.base.rig)
    verts[3, 2] = np.nan
    p = write_obj(c.path("target.obj"), verts, c.base.rig.mesh.faces)
    return c.transfer(tgt=p), p


@bad("NaN or infinite vertex positions")
def target_gltf_infinite_vertex(c):
    def edit(doc, blob):
        attribute(doc, blob, "POSITION")[9, 0] = -np.inf
    p = c.gltf(edit, name="target.glb")
    return c.transfer(tgt=p), p


@bad("unknown mesh format '.blend'")
def target_unknown_format(c):
    p = c.bytes_file("target.blend", b"BLENDER-v405")
    return c.transfer(tgt=p), p


@bad("malformed OBJ line 3")
def target_obj_malformed_vertex(c):
    p = c.bytes_file("target.obj", b"v 0 0 0\nv 1 0 0\nv 0 one 0\nf 1 2 3\n")
    return c.transfer(tgt=p), p


@bad("truncated or not an STL file")
def target_stl_garbage(c):
    p = c.bytes_file("target.stl", b"\x00" * 80 + (1000).to_bytes(4, "little") + b"\x01" * 60)
    return c.transfer(tgt=p), p


# --- marker files
@bad("invalid JSON at line 1")
def markers_bad_json(c):
    p = c.bytes_file("markers.json", b'{"markers": [{"name": "a",, }]}')
    return c.transfer(markers=p), p


@bad("not UTF-8")
def markers_not_utf8(c):
    p = c.bytes_file("markers.json", '{"markers": [{"name": "\u00e9"}]}'.encode("latin-1"))
    return c.transfer(markers=p), p


@bad("nested too deeply")
def markers_nested_too_deeply(c):
    p = c.bytes_file("markers.json", b'{"markers": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
    return c.transfer(markers=p), p


@bad("JSON object with a 'markers' list")
def markers_top_level_list(c):
    p = str(write_json(c.path("markers.json"), good_markers()))
    return c.transfer(markers=p), p


@bad("marker 1: missing or empty 'name'")
def markers_missing_name(c):
    ms = good_markers()
    del ms[1]["name"]
    return c.transfer(markers=(p := c.markers_file(ms))), p


@bad("marker 2 \\('m75'\\): missing 'target'")
def markers_missing_target(c):
    ms = good_markers()
    del ms[2]["target"]
    return c.transfer(markers=(p := c.markers_file(ms))), p


@bad("exactly one of 'point', 'vertex' or 'face'")
def markers_location_with_two_kinds(c):
    ms = good_markers()
    ms[0]["source"]["point"] = [0.0, 0.0, 0.0]
    return c.transfer(markers=(p := c.markers_file(ms))), p


@bad("source.vertex 158 out of range \\(source mesh has 158 vertices\\)")
def markers_source_vertex_out_of_range(c):
    ms = good_markers()
    ms[3]["source"] = {"vertex": 158}
    return c.transfer(markers=(p := c.markers_file(ms))), p


@bad("target.vertex 5000 out of range")
def markers_target_vertex_out_of_range(c):
    ms = good_markers()
    ms[0]["target"] = {"vertex": 5000}
    return c.transfer(markers=(p := c.markers_file(ms))), p


@bad("target.face 312 out of range \\(target mesh has 312 faces\\)")
def markers_target_face_out_of_range(c):
    ms = good_markers()
    ms[4]["target"] = {"face": 312, "bary": [0.2, 0.3, 0.5]}
    return c.transfer(markers=(p := c.markers_file(ms))), p


@bad("bary .* sum to 1")
def markers_barycentrics_not_summing_to_one(c):
    ms = good_markers()
    ms[1]["source"] = {"face": 10, "bary": [0.5, 0.5, 0.5]}
    return c.transfer(markers=(p := c.markers_file(ms))), p


@bad("non-negative")
def markers_negative_barycentric(c):
    ms = good_markers()
    ms[1]["target"] = {"face": 10, "bary": [1.2, -0.2, 0.0]}
    return c.transfer(markers=(p := c.markers_file(ms))), p


@bad("2 marker\\(s\\); at least 3")
def markers_only_two(c):
    # hand markers only: automatic ones would complete the two (the tube's skin fitted onto it)
    return c.transfer(markers=(p := c.markers_file(good_markers((0, 157))))) + ["--auto-markers", "off"], p


@bad("on one line")
def markers_collinear(c):
    # corner 0 of rings 0, 4, 8, 12: one straight line along the tube
    return c.transfer(markers=(p := c.markers_file(good_markers((0, 48, 96, 144))))), p


@bad("all at one point")
def markers_all_at_one_point(c):
    ms = [marker(f"m{k}", 75, {"face": f, "bary": [1, 0, 0]}) for k, f in enumerate((0, 0, 0))]
    ms[0]["source"] = {"vertex": 0}  # the source side is fine, the target side collapses
    ms[1]["source"] = {"vertex": 157}
    return c.transfer(markers=(p := c.markers_file(ms))), p


@bad("name already used by marker 0")
def markers_duplicate_names(c):
    ms = good_markers()
    ms[3]["name"] = ms[0]["name"]
    return c.transfer(markers=(p := c.markers_file(ms))), p


@bad("from the target surface .*wrong frame or units")
def markers_far_from_surface(c):
    ms = good_markers()
    ms[2]["target"] = {"point": [0.0, 1.5, 40.0]}
    return c.transfer(markers=(p := c.markers_file(ms))), p


@bad("source.point is 1e\\+200 from the source surface .*wrong frame or units")
def markers_point_whose_square_overflows(c):
    ms = good_markers()
    ms[2]["source"] = {"point": [1e200, 0.0, 0.0]}  # its square overflows: the searches find no triangle
    return c.transfer(markers=(p := c.markers_file(ms))), p


@bad("point must be 3 finite numbers")
def markers_nan_point(c):
    ms = good_markers()
    ms[2]["source"] = {"point": [0.0, float("nan"), 0.0]}
    return c.transfer(markers=(p := c.markers_file(ms))), p


@bad("vertex must be a non-negative integer")
def markers_fractional_vertex(c):
    ms = good_markers()
    ms[0]["target"] = {"vertex": 1.5}
    return c.transfer(markers=(p := c.markers_file(ms))), p


@bad("target.vertex 158 is not used by any face")
def markers_on_unreferenced_vertex(c):
    verts = np.concatenate([target_vertices(c.base.rig), [[0.0, 1.0, 0.0]]])
    tgt = write_obj(c.path("target.obj"), verts, c.base.rig.mesh.faces)
    ms = good_markers()
    ms[5]["target"] = {"vertex": 158}
    return c.transfer(tgt=tgt, markers=(p := c.markers_file(ms))), p


# --- output paths
@bad("output directory .* does not exist")
def output_in_missing_directory(c):
    p = str(c.out_dir / "no" / "such" / "rigged.glb")
    return c.transfer(out=p), p


@bad("one of the input files")
def output_is_the_source(c):
    return c.transfer(out=c.base.src), c.base.src


@bad("one of the input files")
def output_is_the_markers_spelled_differently(c):
    p = os.path.join(os.path.dirname(c.base.markers), ".", "..", os.path.basename(c.base.dir),
                     "markers.json")
    return c.transfer(out=p), p


@bad("one of the input files")
def output_is_a_symlink_to_the_target(c):
    p = c.path("link.glb")
    os.symlink(c.base.tgt, p)
    return c.transfer(out=p), p


@bad("is a directory")
def output_is_a_directory(c):
    return c.transfer(out=str(c.out_dir)), str(c.out_dir)


@bad("cannot write to directory .*Permission denied")
def output_directory_not_writable(c):
    os.chmod(c.out_dir, 0o555)
    if os.access(c.out_dir, os.W_OK):
        pytest.skip("this user can write to a directory with mode 555 (root)")
    return c.transfer(), c.out


@bad("-o and --report name the same file")
def report_is_the_output(c):
    return c.transfer() + ["--report", c.out], c.out


# --- resource limits: nothing read that the file does not hold
@bad("is not a regular file")
def target_is_a_fifo(c):
    p = c.path("target.obj")
    os.mkfifo(p)  # opening it would block forever: refused before it is opened
    return c.transfer(tgt=p), p


@bad("is not a regular file")
def markers_are_a_device(c):
    return c.transfer(markers="/dev/null"), "/dev/null"


@bad("buffer 0 file '.*' lies outside the folder of the glTF file")
def gltf_buffer_uri_is_a_device(c):
    return _gltf_with_buffer_uri(c, "/dev/urandom")


@bad("buffer 0 file 'sub/../../base0/x.bin' lies outside the folder")
def gltf_buffer_uri_climbs_out_of_the_folder(c):
    doc, blob = rig_document(c.base.rig)
    with open(c.base.dir / "x.bin", "wb") as f:  # a real file, elsewhere: still refused
        f.write(bytes(blob))
    doc["buffers"][0]["uri"] = "sub/../../base0/x.bin"
    os.makedirs(c.path("sub"))
    p = c.bytes_file("source.gltf", json.dumps(doc).encode())
    return c.transfer(src=p), p


@bad("buffer 0 file 'source.bin' cannot be read: is not a regular file")
def gltf_buffer_is_a_fifo_in_the_folder(c):
    os.mkfifo(c.path("source.bin"))
    return _gltf_with_buffer_uri(c, "source.bin")


@bad("no bufferView and an implausible count")
def gltf_many_small_zero_accessors_claim_more_than_the_file_holds(c):
    # each accessor alone is modest; together they would be GBs of zeros from a file of a few kB
    def edit(doc, blob):
        n = len(doc["accessors"])
        doc["accessors"] += [{"componentType": 5126, "type": t, "count": 1 << 20} for _ in range(20)
                             for t in ("VEC3", "VEC4")]
        doc["meshes"][0]["primitives"] += [{"attributes": {"POSITION": n + 2 * k, "JOINTS_0": 0,
                                                           "WEIGHTS_0": n + 2 * k + 1}} for k in range(20)]
    return c.transfer(src=c.gltf(edit)), c.path("source.glb")


# --- numbers beyond any sense: one line, exit 2, never an internal error
@bad("invalid glTF JSON: integer .* has 40 digits")
def gltf_integer_longer_than_any_index(c):
    doc, blob = rig_document(c.base.rig)
    doc["buffers"][0]["uri"] = "data:application/octet-stream;base64," + base64.b64encode(bytes(blob)).decode()
    doc["accessors"][0]["count"] = "HUGE"
    p = c.bytes_file("source.gltf", json.dumps(doc).replace('"HUGE"', "1" + "0" * 39).encode())
    return c.transfer(src=p), p


@bad("invalid JSON: integer .* has 4400 digits")
def markers_integer_beyond_python_conversion_limit(c):
    ms = good_markers()
    p = c.path("markers.json")
    with open(p, "w") as f:
        f.write(json.dumps({"markers": ms}).replace('"vertex": 0}', '"vertex": 9' + "9" * 4399 + "}", 1))
    return c.transfer(markers=p), p


@bad("malformed OBJ line")
def obj_negative_index_beyond_int64(c):
    p = write_obj(c.path("target.obj"), target_vertices(c.base.rig), c.base.rig.mesh.faces)
    with open(p, "a") as f:
        f.write("f 1 2 -99999999999999999999999\n")
    return c.transfer(tgt=p), p


@bad("vertex 3 has a coordinate beyond 3.4e\\+38")
def obj_coordinate_beyond_float32(c):
    v = target_vertices(c.base.rig)
    v[3, 1] = -1e300  # finite, but its square overflows
    return c.transfer(tgt=write_obj(c.path("target.obj"), v, c.base.rig.mesh.faces)), c.path("target.obj")


def _ply_list_count_case(count):
    """A case: the first face's list count is ``count`` (a float no count can be)."""
    def case(c):
        p = write_ply(c.path("target.ply"), target_vertices(c.base.rig), c.base.rig.mesh.faces)
        lines = open(p).read().splitlines(True)
        k = lines.index("end_header\n") + len(c.base.rig.mesh.vertices) + 1
        lines[k] = f"{count} " + lines[k].split(" ", 1)[1]
        open(p, "w").writelines(lines)
        return c.transfer(tgt=p), p
    case.__name__ = "ply_list_count_" + count.replace("-", "minus_").replace(".", "_")
    return case


for _count in ("nan", "-inf", "1e400", "2.5"):
    bad("list length .* is not a count")(_ply_list_count_case(_count))


@bad("list value inf is not an index")
def ply_ascii_index_infinite(c):
    p = write_ply(c.path("target.ply"), target_vertices(c.base.rig), c.base.rig.mesh.faces)
    text = open(p).read().replace("\n3 0 ", "\n3 inf ", 1)
    open(p, "w").write(text)
    return c.transfer(tgt=p), p


def _bvh(joints, offset="0 1 0", frame=None, root="root"):
    """A BVH chain of ``joints`` nested joints (names j0, j1, ...) under ``root``, one frame."""
    s = f"HIERARCHY\nROOT {root}\n" + "{\nOFFSET 0 0 0\nCHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation\n"
    s += "".join(f"JOINT j{i}\n{{\nOFFSET {offset}\nCHANNELS 3 Zrotation Xrotation Yrotation\n" for i in range(joints))
    s += "End Site\n{\nOFFSET 0 1 0\n}\n" + "}\n" * (joints + 1)
    frame = frame or " ".join(["0"] * (6 + 3 * joints))
    return s + f"MOTION\nFrames: 1\nFrame Time: 0.033\n{frame}\n"


def _retarget(c, bvh_text):
    p = c.path("motion.bvh")
    with open(p, "w") as f:
        f.write(bvh_text)
    return ["retarget-motion", p, "--source", c.base.src, "--target", c.base.src, "-o",
            str(c.out_dir / "anim.bvh")], p


@bad("no joint of the BVH has the name of a rig joint")
def bvh_nested_two_thousand_deep(c):
    return _retarget(c, _bvh(2000, root="pelvis"))  # read without recursion; then refused for what it is


@bad("line 8: OFFSET y -2e\\+300 is beyond")
def bvh_offset_beyond_float32(c):
    return _retarget(c, _bvh(2, offset="0 -2e+300 0"))


@bad("MOTION has values beyond")
def bvh_motion_value_beyond_float32(c):
    return _retarget(c, _bvh(1, frame="0 5e300 0 0 0 0 0 0 0"))


def _calibration(c, edit):
    """The fixture source's proposed calibration, edited; ``transfer`` argv with it."""
    cal = c.path("cal.json")
    assert main(["-q", "calibrate-source", str(FIXTURES / "source.glb"), "-o", cal]) == 0
    doc = json.load(open(cal))
    edit(doc)
    write_json(cal, doc)
    return ["transfer", str(FIXTURES / "source.glb"), str(FIXTURES / "target_tall.obj"), "--markers",
            str(FIXTURES / "markers_tall.json"), "-o", c.out, "--calibration", cal], cal


@bad("'capsules' must be a list")
def calibration_capsules_is_a_number(c):
    return _calibration(c, lambda doc: doc.__setitem__("capsules", 7))


@bad("capsules\\[1\\] must be an object with a name")
def calibration_capsule_is_null(c):
    return _calibration(c, lambda doc: doc["capsules"].__setitem__(1, None))


@bad("capsules\\[0\\] .*point must be a surface point name or null")
def calibration_capsule_point_is_a_list(c):
    return _calibration(c, lambda doc: doc["capsules"][0].__setitem__("point", {"x": 1}))


# --- the frame a rig is shown in
def _ibm_rows(doc, blob):
    """The inverse bind matrices as a writable (J, 4, 4) row-major copy, and a function storing them back."""
    col = accessor_array(doc, blob, doc["skins"][0]["inverseBindMatrices"])

    def store(m):
        col[:] = np.asarray(m).transpose(0, 2, 1).reshape(-1, 16)
    return col.reshape(-1, 4, 4).transpose(0, 2, 1).copy(), store


def _armature_over_joints(doc, scale):
    """A parent node 'Armature' with ``scale`` over the root joint and the mesh node (FBX-to-glTF layout)."""
    doc["nodes"].append({"name": "Armature", "scale": [scale] * 3 if np.isscalar(scale) else list(scale),
                         "children": list(doc["scenes"][0]["nodes"])})
    doc["scenes"][0]["nodes"] = [len(doc["nodes"]) - 1]


def _mirrored_armature(doc, blob):
    """The rig under a node scaled (-1, 1, 1) and bound in that mirrored frame (a DCC's mirror)."""
    _armature_over_joints(doc, [-1.0, 1.0, 1.0])
    m, store = _ibm_rows(doc, blob)
    store(m @ np.diag([-1.0, 1.0, 1.0, 1.0]))


@bad("joint 'root' is mirrored in its rest pose only \\(a negative scale")
def gltf_armature_mirrored_at_rest_only(c):
    return c.transfer(src=c.gltf(lambda doc, blob: _armature_over_joints(doc, [-1.0, 1.0, 1.0]))), \
        c.path("source.glb")


# --- implausible markers and options: refused when the tool can tell
@bad("the markers span .* of the source's size but .* of the target's .*the target points are probably in "
     "other units")
def markers_target_points_in_other_units(c):
    # target points 40x too small (metres for a model in 2.5-cm units), on a target whose side
    # passes through the origin: they snap to the bit of surface there and bunch up
    v = target_vertices(c.base.rig)
    v -= v.mean(axis=0)
    v[:, 0] -= v[:, 0].max()
    tgt = write_obj(c.path("target.obj"), v, c.base.rig.mesh.faces)
    ms = [marker(f"m{k}", k, {"point": (v[k] / 40).tolist()}) for k in MARKER_VERTICES]
    return c.transfer(tgt=tgt, markers=c.markers_file(ms)), c.path("markers.json")


@bad("--symmetry-plane lies .* heights from the target's centre .*it does not cut the body")
def symmetry_plane_off_the_body(c):
    return c.transfer() + ["--symmetry-plane", "0,0,2,-25"], c.base.tgt


@bad("node 1 \\('mid'\\) has a 'translation' beyond 3.4e\\+38")
def retarget_onto_a_rig_with_a_joint_at_1e300(c):
    target = c.gltf(lambda doc, blob: doc["nodes"][1].__setitem__("translation", [0.0, -1e300, 0.0]), "other.glb")
    motion = c.path("motion.bvh")
    with open(motion, "w") as f:
        f.write(_bvh(1).replace("JOINT j0", "JOINT mid"))
    return ["retarget-motion", motion, "--source", c.base.src, "--target", target, "-o",
            str(c.out_dir / "anim.bvh")], target


def _retarget_onto_renamed(c, keep=()):
    """retarget-motion onto the base rig with its joints renamed but ``keep``."""
    def rename(doc, blob):
        for node in doc["nodes"][:3]:
            if node["name"] not in keep:
                node["name"] = "other_" + node["name"]
    other = c.gltf(rename, "other.glb")
    motion = c.path("motion.bvh")
    with open(motion, "w") as f:
        f.write(_bvh(1).replace("JOINT j0", "JOINT mid"))
    return ["retarget-motion", motion, "--source", c.base.src, "--target", other, "-o",
            str(c.out_dir / "anim.glb")], other


@bad("shares only the joint name 'root' with the source rig")
def retarget_onto_a_rig_sharing_only_its_root(c):
    # a dog's rig and a human's share "root": the clip would carry the whole body rigidly
    return _retarget_onto_renamed(c, keep=("root",))


@bad("shares no joint name with the source rig")
def retarget_onto_a_rig_sharing_no_joint(c):
    return _retarget_onto_renamed(c)


# --- outputs: every output against every input and every other output, before any work
@bad("--report is one of the input files \\(.*markers.json")
def report_is_a_hard_link_to_the_markers(c):
    p = str(c.out_dir.parent / "report.json")  # outside out/, which must stay empty
    os.link(c.base.markers, p)
    return c.transfer() + ["--report", p], p


@bad("-o is one of the input files \\(.*target.obj")
def output_is_a_symbolic_link_to_the_target(c):
    p = str(c.out_dir.parent / "link.glb")
    os.symlink(c.base.tgt, p)
    return c.transfer(out=p), p


@bad("-o must end in .glb or .gltf")
def output_extension_does_not_match_the_rig_written(c):
    p = str(c.out_dir / "rigged.ply")
    return c.transfer(out=p), p


@bad("--report must end in .json")
def report_extension_does_not_match(c):
    p = str(c.out_dir / "report.txt")
    return c.transfer() + ["--report", p], p


@bad("--report and the T-pose BVH written next to -o name the same file")
def report_collides_with_a_handoff_output(c):
    p = str(c.out_dir / "rigged.tpose.bvh")
    return c.transfer() + ["--tpose", "--report", p], p


@bad("the calibration written next to -o is one of the input files")
def handoff_calibration_output_is_the_calibration_input(c):
    cal = str(c.out_dir.parent / "rigged.calibration.json")
    with open(cal, "w") as f:
        f.write("{}")
    return c.transfer(out=str(c.out_dir.parent / "rigged.glb")) + ["--calibration", cal], cal


@bad("--debug-dir is one of the input files")
def correspond_debug_file_is_an_input(c):
    # a debug mesh that would replace the target: refused before map.npz or any .ply is written
    d = c.inp / "dbg"
    d.mkdir()
    tgt = str(d / "faired_target.ply")
    write_ply(tgt, target_vertices(c.base.rig), c.base.rig.mesh.faces)
    return ["correspond", c.base.src, tgt, "--markers", c.base.markers, "-o", str(c.out_dir / "map.npz"),
            "--debug-dir", str(d)], str(d / "faired_target.ply")


@bad("-o must end in .npz")
def correspond_output_extension(c):
    p = str(c.out_dir / "map.json")
    return ["correspond", c.base.src, c.base.tgt, "--markers", c.base.markers, "-o", p], p


@bad("-o is one of the input files")
def calibrate_source_output_is_a_hard_link_to_the_rig(c):
    p = str(c.out_dir.parent / "cal.json")
    os.link(c.base.src, p)
    return ["calibrate-source", c.base.src, "-o", p], p


@bad("-o and --report name the same file")
def retarget_report_is_the_output(c):
    p = str(c.out_dir / "anim.json")
    return ["retarget-motion", c.base.markers, "--source", c.base.src, "--target", c.base.src, "-o",
            str(c.out_dir / "anim.bvh"), "--report", str(c.out_dir / "anim.bvh")], str(c.out_dir / "anim.bvh")


@bad("cannot write to directory .* \\(Read-only file system\\)")
def output_directory_read_only_is_found_before_the_computation(c):
    import asetransfer.io.atomic
    import asetransfer.stages.correspondence

    def read_only(*a, **k):
        raise OSError(30, "Read-only file system")

    def never(*a, **k):
        raise AssertionError("the computation ran before the output directory was checked")

    c.monkeypatch.setattr(asetransfer.io.atomic.tempfile, "mkstemp", read_only)
    c.monkeypatch.setattr(asetransfer.stages.correspondence, "correspond", never)
    return c.transfer(), c.out


# --- the other commands
@bad("cycle")
def info_on_a_cyclic_hierarchy(c):
    p = c.gltf(lambda doc, blob: doc["nodes"][2].__setitem__("children", [0]))
    return ["info", p], p


@bad("file is empty")
def info_on_an_empty_file(c):
    p = c.bytes_file("thing.obj", b"")
    return ["info", "--json", p], p


@bad("on one line")
def correspond_with_collinear_markers(c):
    p = c.markers_file(good_markers((0, 48, 96, 144)))
    return ["correspond", c.base.src, c.base.tgt, "--markers", p, "-o", str(c.out_dir / "map.npz")], p


@bad("debug directory does not exist")
def correspond_debug_dir_missing(c):
    p = str(c.out_dir / "debug")
    return ["correspond", c.base.src, c.base.tgt, "--markers", c.base.markers, "-o",
            str(c.out_dir / "map.npz"), "--debug-dir", p], p


# ---------------------------------------------------------------------------- running a case
def snapshot(*dirs):
    """Every file under ``dirs``: path -> (size, sha256 or None if unreadable)."""
    out = {}
    for d in dirs:
        for root, subdirs, files in os.walk(d):
            for name in files + [s for s in subdirs if os.path.islink(os.path.join(root, s))]:
                p = os.path.join(root, name)
                if not os.path.isfile(p):  # a FIFO of a case: opening it would block
                    out[p] = (os.lstat(p).st_mode, None)
                    continue
                try:
                    with open(p, "rb") as f:
                        digest = hashlib.sha256(f.read()).hexdigest()
                except OSError:
                    digest = None
                out[p] = (os.lstat(p).st_size, digest)
    return out


def run(capsys, argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_corpus_is_large_enough():
    assert len(CASES) >= 40


@pytest.mark.parametrize("name", list(CASES))
def test_bad_input_exits_2_with_one_line_naming_the_file(name, base, tmp_path, capsys, monkeypatch):
    build, pattern = CASES[name]
    case = Case(base, tmp_path, monkeypatch)
    argv, culprit = build(case)
    before = snapshot(tmp_path, base.dir)
    code, out, err = run(capsys, argv)
    assert code == 2, err
    assert "Traceback" not in out + err
    lines = err.splitlines()
    assert len(lines) == 1 and err.endswith("\n"), err
    assert lines[0].startswith(f"asetransfer: error: {culprit}: "), err
    assert re.search(pattern, lines[0][len(f"asetransfer: error: {culprit}: "):]), err
    # nothing written (no output, no temporary file) and no input changed
    assert snapshot(tmp_path, base.dir) == before
    assert os.listdir(case.out_dir) == []


# ---------------------------------------------------------------------------- awkward but valid: must work
def transfer_ok(capsys, case, tgt=None, markers=None, src=None, extra=()):
    """Run ``transfer`` (``extra`` arguments added); assert exit 0, no error and a valid rig
    for every target vertex.

    Returns the rig read back and stderr."""
    code, out, err = run(capsys, case.transfer(src=src, tgt=tgt, markers=markers) + list(extra))
    assert code == 0, err
    assert "error" not in err and "Traceback" not in err
    rig = at.load_rig(case.out)
    target = at.load_mesh(tgt or case.base.tgt)
    np.testing.assert_allclose(rig.mesh.vertices, target.vertices, rtol=1e-6, atol=1e-6 * np.abs(target.vertices).max())
    np.testing.assert_allclose(rig.skin.weights.sum(axis=1), 1.0, atol=1e-6)
    assert np.isfinite(rig.skeleton.bind_world).all() and np.isfinite(rig.skeleton.rest_world()).all()
    assert os.listdir(case.out_dir) == ["rigged.glb"]  # and no temporary file
    return rig, err


def joints(rig):
    return rig.skeleton.bind_world[:, :3, 3]


@pytest.fixture
def case(base, tmp_path):
    return Case(base, tmp_path)


@pytest.fixture(scope="module")
def base_result(base, tmp_path_factory):
    """The base transfer, to compare the awkward variants with."""
    out = tmp_path_factory.mktemp("base_out") / "rigged.glb"
    assert main(["-q", "transfer", base.src, base.tgt, "--markers", base.markers, "-o", str(out)]) == 0
    return at.load_rig(out)


def test_unreferenced_vertices_are_kept_and_do_not_move_the_skeleton(case, capsys, base_result):
    # stray vertices used by no triangle, one of them far away (an exporter's leftover)
    verts = np.concatenate([target_vertices(case.base.rig), [[0.0, 0.0, 0.0], [1000.0, 1000.0, 1000.0]]])
    tgt = write_obj(case.path("target.obj"), verts, case.base.rig.mesh.faces)
    rig, err = transfer_ok(capsys, case, tgt=tgt)
    assert rig.mesh.n_vertices == 160  # input vertex order and count kept
    np.testing.assert_allclose(joints(rig), joints(base_result), atol=1e-4)


def test_target_in_forty_pieces_with_markers_on_the_body_only(case, capsys, base_result):
    # the body plus 39 loose triangles (buttons, scales, props): the unmarked pieces ride along
    body = target_vertices(case.base.rig)
    rng = np.random.default_rng(0)
    centres = rng.uniform([-0.5, 0.0, -0.5], [1.5, 3.4, 0.5], size=(39, 1, 3))
    loose = (centres + [[0, 0, 0], [0.05, 0, 0], [0, 0.05, 0]]).reshape(-1, 3)
    faces = np.concatenate([case.base.rig.mesh.faces, len(body) + np.arange(117).reshape(39, 3)])
    tgt = write_ply(case.path("target.ply"), np.concatenate([body, loose]), faces)
    rig, err = transfer_ok(capsys, case, tgt=tgt)
    assert rig.mesh.n_vertices == len(body) + 117
    assert "carry no marker" not in err  # small loose pieces are no reason to worry the user
    np.testing.assert_allclose(joints(rig), joints(base_result), atol=0.02)


@pytest.mark.parametrize("gap", [0.004, 0.1])
def test_target_as_forty_separate_bands_with_markers_on_some(case, capsys, gap):
    # a tube cut into 40 bands that do not touch, markers on 3 of them: it works.  Bands
    # a small gap apart are solved together (glued where they come close); bands far
    # apart ride along unfitted, and a warning says that most of the surface was not fitted
    v = tube_rig(n_ring=8, n_seg=40).mesh.vertices
    ring = 8
    verts, faces = [], []
    for s in range(40):  # band s: rings s and s + 1, shifted apart by the gap
        block = v[ring * s: ring * (s + 2)] * [1.3, 1.0, 1.3] + [0, gap * s, 0]
        base_index = sum(len(b) for b in verts)
        verts.append(block)
        for k in range(ring):
            a, b = k, (k + 1) % ring
            faces += [[base_index + a, base_index + ring + a, base_index + b],
                      [base_index + b, base_index + ring + a, base_index + ring + b]]
    verts = np.concatenate(verts)
    tgt = write_obj(case.path("target.obj"), verts, faces)
    # source vertex (ring s at y = s / 4, corner k at 30 k degrees) <-> the band vertex at the
    # same height and angle (band b: rings b, b + 1 at y = 3 b / 40, corners at 45 degrees)
    pick = [(0, 0), (6, 4), (75, 16 * 20 + 2), (81, 16 * 20 + 6), (144, 16 * 39 + 8), (150, 16 * 39 + 12)]
    ms = case.markers_file([marker(f"m{s}", s, t) for s, t in pick])
    # the hand markers alone: automatic ones (the tube's skin fitted onto the bands) would mark more bands
    rig, err = transfer_ok(capsys, case, tgt=tgt, markers=ms, extra=("--auto-markers", "off"))
    assert rig.mesh.n_vertices == len(verts) == 640
    if gap < 0.01:  # glued: every band is fitted
        assert "carry no marker" not in err, err
    else:  # most of the body is not fitted, only carried along: the user is told so
        assert re.search(r"warning: 37 of the target's 40 pieces \(9\d% of its surface\) carry no marker", err), err


def test_degenerate_triangles_among_good_ones(case, capsys, base_result):
    verts = target_vertices(case.base.rig)
    verts[36:48] = verts[36:48].mean(axis=0)  # ring 3 collapsed to a point: 24 zero-area triangles
    tgt = write_obj(case.path("target.obj"), verts, case.base.rig.mesh.faces)
    rig, err = transfer_ok(capsys, case, tgt=tgt)
    np.testing.assert_allclose(joints(rig), joints(base_result), atol=0.15)


def _with_loose_slivers(verts, faces, edges, along):
    """``verts``/``faces`` plus, per edge (a, b), a new vertex at ``a + along (b - a)`` (on the edge's
    line) and the zero-area triangle (a, b, new); two edges may share one new vertex."""
    verts, faces = np.asarray(verts, float), np.asarray(faces)
    extra_v, extra_f = [], []
    for a, b in edges:
        extra_v.append(verts[a] + along * (verts[b] - verts[a]))
        extra_f.append((a, b, len(verts) + len(extra_v) - 1))
    return np.vstack([verts, extra_v]), np.vstack([faces, extra_f])


@pytest.mark.parametrize("along", [0.5, 1.7, 1e-9])
def test_a_zero_area_triangle_with_a_loose_corner_does_not_sink_the_fit(case, capsys, base_result, along):
    # its third corner lies on the line of the other two (between them, beyond them, on one) and
    # no other face uses it: it has no smoothness term, it is carried along instead of solved for
    faces = case.base.rig.mesh.faces
    verts, faces = _with_loose_slivers(target_vertices(case.base.rig), faces, [faces[40][:2], faces[90][1:]], along)
    tgt = write_obj(case.path("target.obj"), verts, faces)
    rig, err = transfer_ok(capsys, case, tgt=tgt)
    assert err == ""
    np.testing.assert_allclose(joints(rig), joints(base_result), atol=1e-6)


def test_a_zero_area_triangle_on_the_source_does_not_sink_the_fit(case, capsys, base_result):
    m = case.base.rig.mesh
    verts, faces = _with_loose_slivers(m.vertices, m.faces, [m.faces[100][:2]], 0.25)
    w = case.base.rig.skin
    skin = type(w)(np.vstack([w.indices, w.indices[m.faces[100][0]]]), np.vstack([w.weights, w.weights[m.faces[100][0]]]),
                   w.n_joints)
    src = case.path("source.glb")
    at.save_rig(src, at.Rig(at.Mesh(verts, faces), case.base.rig.skeleton, skin))
    rig, err = transfer_ok(capsys, case, src=src)
    np.testing.assert_allclose(joints(rig), joints(base_result), atol=1e-3)


@pytest.mark.parametrize("factor", [1000.0, 0.001, 1e12])
def test_source_and_target_far_apart_in_scale(case, capsys, base_result, factor):
    # target in mm (or km) against a source in m: the result is the base result, scaled; at 1e12
    # the bind matrices' translations are 1e12 long, and their inverses still check
    tgt = write_obj(case.path("target.obj"), target_vertices(case.base.rig) * factor, case.base.rig.mesh.faces)
    rig, err = transfer_ok(capsys, case, tgt=tgt)
    np.testing.assert_allclose(joints(rig) / factor, joints(base_result), atol=1e-3)
    assert abs(rig.skin.to_sparse() - base_result.skin.to_sparse()).max() < 1e-2


def test_source_1000x_larger_than_target(case, capsys, base_result):
    src = case.path("source_mm.glb")
    at.save_rig(src, tube_rig(length=3000.0, radius=300.0))  # the same tube in mm
    rig, err = transfer_ok(capsys, case, src=src)
    np.testing.assert_allclose(joints(rig), joints(base_result), atol=1e-3)


def test_fixture_target_in_millimetres(case, capsys, tmp_path):
    # the real fixture character against the cartoon target converted to mm
    cartoon = at.load_mesh(FIXTURES / "target_cartoon.off")
    tgt = write_off(case.path("cartoon_mm.off"), cartoon.vertices * 1000, cartoon.faces)
    doc = json.loads((FIXTURES / "markers_cartoon.json").read_text())
    for m in doc["markers"]:
        m["target"]["point"] = [1000 * x for x in m["target"]["point"]]
    ms = str(write_json(case.path("markers_mm.json"), doc))
    rig, err = transfer_ok(capsys, case, src=str(FIXTURES / "source.glb"), tgt=tgt, markers=ms)
    truth = json.loads((FIXTURES / "target_cartoon.truth.json").read_text())["joints"]
    expected = 1000 * np.array([truth[n] for n in rig.skeleton.names])
    height = 1000 * np.ptp(cartoon.vertices, axis=0).max()
    assert np.linalg.norm(joints(rig) - expected, axis=1).mean() < 0.02 * height


# ---------------------------------------------------------------------------- numerical guards
def test_a_failing_solve_is_a_clear_error_and_no_nan_is_written(case, capsys, monkeypatch):
    # a (near-)singular system: every solve gives NaN, as a collapsed system would
    from asetransfer.geometry.linsolve import Factorization

    monkeypatch.setattr(Factorization, "_solve", lambda self, b: np.full_like(b, np.nan))
    before = snapshot(case.base.dir)
    code, out, err = run(capsys, case.transfer())
    assert code == 2, err
    assert err.startswith(f"asetransfer: error: {case.base.markers}: transfer failed: ") and err.count("\n") == 1
    assert "singular or near-singular" in err and "Traceback" not in err
    assert os.listdir(case.out_dir) == [] and snapshot(case.base.dir) == before


def _nan_weight(rig):
    rig.skin.weights[5, 0] = np.nan


def _unnormalised_weights(rig):
    rig.skin.weights[7] *= 0.5


def _negative_weight(rig):
    rig.skin.weights[9, :2] = [1.5, -0.5]


def _singular_bind(rig):
    rig.skeleton.bind_world[1, :3, :3] = 0.0


def _non_affine_bind(rig):
    rig.skeleton.bind_world[2, 3, 0] = 0.5


def _infinite_translation(rig):
    rig.skeleton.translation[2, 1] = np.inf


def _nan_vertex(rig):
    rig.mesh.vertices[3, 0] = np.nan


def _beyond_float32(rig):
    rig.mesh.vertices[3, 0] = 1e39


@pytest.mark.parametrize("corrupt", [_nan_weight, _unnormalised_weights, _negative_weight, _singular_bind,
                                     _non_affine_bind, _infinite_translation, _nan_vertex, _beyond_float32])
def test_an_invalid_result_is_never_written(case, capsys, monkeypatch, corrupt):
    # whatever goes wrong inside a transfer, the rig is checked before writing: an
    # internal error (exit 1), never a file with NaNs or broken weights
    import asetransfer.stages.transfer as stage

    real = stage.transfer

    def transfer_then_corrupt(*a, **k):
        result = real(*a, **k)
        corrupt(result.rig)
        return result

    monkeypatch.setattr(stage, "transfer", transfer_then_corrupt)
    code, out, err = run(capsys, case.transfer())
    assert code == 1, err
    assert err.startswith("asetransfer: internal error: ValueError: ") and err.count("\n") == 1
    assert os.listdir(case.out_dir) == []


# ---------------------------------------------------------------------------- interrupted runs
@pytest.mark.parametrize("stage", ["correspondence", "writing"])
def test_an_interrupted_run_leaves_no_partial_file_and_keeps_the_inputs(case, capsys, monkeypatch, stage):
    # a real SIGINT (Ctrl-C) in the middle of the computation or of the write
    import signal

    import asetransfer.stages.correspondence.pipeline

    def interrupt(*a, **k):
        os.kill(os.getpid(), signal.SIGINT)
        raise AssertionError("SIGINT did not interrupt")  # not reached: the handler raises first

    # Python's own Ctrl-C handler, whatever this test process inherited (a background
    # job started by a non-interactive shell has SIGINT ignored)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    if stage == "correspondence":
        monkeypatch.setattr(asetransfer.stages.correspondence.pipeline, "fair", interrupt)
    else:
        monkeypatch.setattr(os, "fsync", interrupt)  # the temporary file is written, not yet renamed
    with open(case.out, "wb") as f:
        f.write(b"the previous result")
    before = snapshot(case.base.dir, case.out_dir)
    try:
        code, out, err = run(capsys, case.transfer())
    finally:
        signal.signal(signal.SIGINT, previous)
    assert code == 130 and err == "asetransfer: interrupted\n"
    assert snapshot(case.base.dir, case.out_dir) == before  # old output kept, no temporary file


def test_an_exception_mid_way_leaves_no_partial_file_and_keeps_the_inputs(case, capsys, monkeypatch):
    import asetransfer.io.atomic

    def fail(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(asetransfer.io.atomic.os, "replace", fail)  # the write fails at the very end
    before = snapshot(case.base.dir, case.out_dir)
    code, out, err = run(capsys, case.transfer())
    assert code == 2 and err == f"asetransfer: error: {case.out}: cannot write file (No space left on device)\n"
    assert snapshot(case.base.dir, case.out_dir) == before


# ---------------------------------------------------------------------------- debris
def test_sigterm_is_handled_like_ctrl_c(case, capsys, monkeypatch):
    # a real SIGTERM while the temporary file is written: it is removed, the old output kept
    import signal

    def terminate(*a, **k):
        os.kill(os.getpid(), signal.SIGTERM)
        raise AssertionError("SIGTERM did not stop the run")

    monkeypatch.setattr(os, "fsync", terminate)
    with open(case.out, "wb") as f:
        f.write(b"the previous result")
    before = snapshot(case.base.dir, case.out_dir)
    code, out, err = run(capsys, case.transfer())
    assert code == 143 and err == "asetransfer: terminated\n"
    assert snapshot(case.base.dir, case.out_dir) == before
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL  # the handler is the command's only


def test_a_killed_run_leaves_only_a_part_file_that_the_next_run_removes(case, capsys):
    # what SIGKILL leaves: the temporary file of a process that no longer runs
    dead = os.path.join(case.out_dir, ".rigged.glb.asetransfer-999999999-k2j4.part")
    alive = os.path.join(case.out_dir, f".rigged.glb.asetransfer-{os.getpid()}-k2j4.part")  # a run in progress
    foreign = os.path.join(case.out_dir, ".rigged.glb.backup.part")  # not ours: never touched
    for p in (dead, alive, foreign):
        with open(p, "wb") as f:
            f.write(b"x")
    code, out, err = run(capsys, case.transfer())
    assert code == 0, err
    assert sorted(os.listdir(case.out_dir)) == sorted(os.path.basename(p) for p in (alive, foreign, case.out))


def test_a_file_name_with_a_newline_stays_on_one_line(case, capsys):
    p = case.path("bad\nname.json")
    with open(p, "w") as f:
        f.write("{")
    code, out, err = run(capsys, case.transfer(markers=p))
    assert code == 2 and err.count("\n") == 1 and "bad\\nname.json: invalid JSON" in err, err


def test_closed_stdout_ends_quietly(base):
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "asetransfer_cli.main", "info", "--json", base.src],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # `| true`: the reader is gone before the first line
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 141 and err == b"", err


def test_a_bvh_nested_thousands_deep_is_read(tmp_path):
    from asetransfer.io.bvh import read_bvh

    p = tmp_path / "deep.bvh"
    p.write_text(_bvh(3000))
    bvh = read_bvh(p)
    assert len(bvh.names) == 3001 and list(bvh.parents[:3]) == [-1, 0, 1] and bvh.parents[-1] == 2999


@pytest.mark.parametrize("option", [("--symmetry-plane", "nan,0,0,1"), ("--symmetry-plane", "0,0,inf,0"),
                                    ("--symmetry-plane", "0,1e-320,0,0"), ("--symmetry-plane", "1e-300,0,0,1e300"),
                                    ("--em-rays", "100000000"), ("--em-rays", "１２"), ("--em-ray-share", "nan")])
def test_numeric_options_are_refused_when_parsed_before_any_file_is_read(capsys, option):
    # the files do not exist: a message about them would mean the option was checked too late
    code, out, err = run(capsys, ["transfer", "missing.glb", "missing.obj", "--markers", "m.json", "-o", "o.glb",
                                  *option])
    assert code == 2 and err.count("\n") == 1 and f"argument {option[0]}" in err and "not found" not in err, err


def test_a_sixty_thousand_joint_chain_is_read(tmp_path):
    # the hierarchy code is linear (iterative walks, each chain of nodes walked once, the bind
    # matrices checked at once): no recursion limit, no quadratic order; bench/ prints timings
    n = 60000
    doc = Doc()
    for k in range(n):
        doc.node(name=f"j{k}", translation=[0.0, 0.01 if k else 0.0, 0.0], **({"children": [k + 1]} if k < n - 1 else {}))
    ibm = np.tile(np.eye(4), (n, 1, 1))
    ibm[:, 1, 3] = -0.01 * np.arange(n)
    prim = doc.primitive([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 1, 2]], joints=[np.zeros((3, 4))],
                         weights=[np.eye(4)[[0, 0, 0]]])
    doc.scene = [0, doc.node(name="body", mesh=doc.mesh(prim), skin=doc.skin(range(n), ibm))]
    rig = at.load_rig(doc.save(tmp_path / "chain.glb"))
    assert rig.skeleton.names[-1] == f"j{n - 1}" and rig.skeleton.parents[-1] == n - 2
    assert abs(rig.skeleton.bind_world[-1, 1, 3] - 0.01 * (n - 1)) < 1e-3


# ---------------------------------------------------------------------------- the frame a rig is shown in
def _centimetre_armature(c):
    """The base rig as exporters write an FBX character: positions and joints in cm under a 0.01 armature."""
    doc, blob = rig_document(c.base.rig)
    attribute(doc, blob, "POSITION")[:] *= 100.0
    for node in doc["nodes"][:3]:
        node["translation"] = [100.0 * t for t in node["translation"]]
    m, store = _ibm_rows(doc, blob)
    m[:, :3, 3] *= 100.0  # inverse of the joint's world matrix in centimetres
    store(m)
    _armature_over_joints(doc, 0.01)
    return save_glb(c.path("source_cm.glb"), doc, blob)


def _quantised(c):
    """The base rig as gltfpack writes it: int16 positions, the dequantisation folded into the bind matrices."""
    doc, blob = rig_document(c.base.rig)
    v = c.base.rig.mesh.vertices
    lo, step = v.min(axis=0), float(np.ptp(v, axis=0).max()) / 32767.0
    q = np.round((v - lo) / step).astype("<i2")
    doc["bufferViews"].append({"buffer": 0, "byteOffset": len(blob), "byteLength": q.nbytes})
    blob += q.tobytes() + b"\0" * (-q.nbytes % 4)
    doc["buffers"][0]["byteLength"] = len(blob)
    doc["accessors"].append({"bufferView": len(doc["bufferViews"]) - 1, "componentType": 5122, "count": len(q),
                             "type": "VEC3", "min": q.min(axis=0).tolist(), "max": q.max(axis=0).tolist()})
    doc["meshes"][0]["primitives"][0]["attributes"]["POSITION"] = len(doc["accessors"]) - 1
    doc["extensionsUsed"] = doc["extensionsRequired"] = ["KHR_mesh_quantization"]
    dequantise = np.diag([step, step, step, 1.0])
    dequantise[:3, 3] = lo
    m, store = _ibm_rows(doc, blob)
    store(m @ dequantise)
    return save_glb(c.path("source_q.glb"), doc, blob), step


@pytest.mark.parametrize("layout", ["centimetre_armature", "quantised"])
def test_a_rig_is_read_in_the_frame_it_is_shown_in(case, capsys, base_result, layout):
    # positions stored in another frame than the one shown (a 0.01 armature over centimetres,
    # gltfpack's int16 positions): size, joints and markers picked on screen are the shown ones
    src, tol = (_centimetre_armature(case), 1e-5) if layout == "centimetre_armature" else _quantised(case)
    rig = at.load_rig(src)
    np.testing.assert_allclose(rig.mesh.vertices, case.base.rig.mesh.vertices, atol=tol * 2)
    np.testing.assert_allclose(joints(rig), joints(case.base.rig), atol=1e-4)  # (the armature's scale stays in)
    code, out, err = run(capsys, ["info", "--json", src])
    assert code == 0 and abs(json.loads(out)["size"][1] - 3.0) < 1e-3
    # markers as points picked on the character as shown
    pts = [marker(f"m{v}", {"point": case.base.rig.mesh.vertices[v].tolist()}, v) for v in MARKER_VERTICES]
    rigged, err = transfer_ok(capsys, case, src=src, markers=case.markers_file(pts))
    assert np.abs(joints(rigged) - joints(base_result)).max() < 0.02



# ---------------------------------------------------------------------------- quality verdict
def test_the_report_carries_a_quality_verdict_and_the_warnings(case, capsys):
    report = case.path("report.json")
    code, out, err = run(capsys, case.transfer() + ["--report", report])
    assert code == 0 and err == "", err
    r = json.load(open(report))
    q = r["quality"]
    assert q["verdict"] == "ok" and q["reasons"] == [] and r["warnings"] == []
    assert 0 <= q["marker_residual_pct_height"] < 1 and q["mapped_area_fraction"] > 0.99
    assert q["joints_outside_body"] == []


def test_too_few_markers_give_a_warning_and_a_verdict_to_act_on(case, capsys):
    # four markers, two at each end: enough to run, too few to pin the fit down (hand markers
    # only: automatic ones, the tube's skin fitted onto the target, would complete them)
    report = case.path("report.json")
    markers = case.markers_file(good_markers((0, 6, 144, 150)))
    code, out, err = run(capsys, case.transfer(markers=markers) + ["--report", report, "--auto-markers", "off"])
    assert code == 0
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("asetransfer: warning: result quality ") and "4 markers" in err
    r = json.load(open(report))
    assert r["quality"]["verdict"] in ("check", "poor") and r["warnings"] == [lines[0][len("asetransfer: warning: "):]]


def test_joints_pushed_off_the_body_are_named(base):
    from asetransfer.stages.quality import joints_outside_body

    moved = base.rig.skeleton.bind_world.copy()
    moved[1, :3, 3] += [5.0, 0.0, 0.0]  # 'mid' far to the side of the tube
    import dataclasses

    rig = at.Rig(base.rig.mesh, dataclasses.replace(base.rig.skeleton, bind_world=moved), base.rig.skin)
    names, n_inside = joints_outside_body(base.rig, rig, 0.01)
    assert names == ["mid"] and n_inside >= 1
    assert joints_outside_body(base.rig, base.rig, 0.01)[0] == []


def test_a_joint_in_the_gap_between_two_pieces_is_not_outside_the_body():
    # a tube cut in two around its middle joint, like a knee between armour plates: the joint
    # is outside both pieces (winding number 0.46) but inside the character
    import dataclasses

    from asetransfer.stages.quality import joints_outside_body

    whole = tube_rig(n_ring=24, n_seg=60)
    v, f = whole.mesh.vertices, whole.mesh.faces
    y = v[f][:, :, 1]
    cut = at.Rig(at.Mesh(v, f[(y.max(axis=1) < 1.35) | (y.min(axis=1) > 1.65)]), whole.skeleton, whole.skin)
    assert joints_outside_body(whole, cut, 0.01)[0] == []
    # the same joint pushed out beside the gap is named
    moved = whole.skeleton.bind_world.copy()
    moved[1, :3, 3] += [0.45, 0.0, 0.0]
    off = at.Rig(cut.mesh, dataclasses.replace(whole.skeleton, bind_world=moved), whole.skin)
    assert joints_outside_body(whole, off, 0.01)[0] == ["mid"]


def test_numerical_warnings_of_the_libraries_do_not_reach_stderr(case):
    # numpy warns on inf/NaN arithmetic inside the stages, whose results are checked anyway:
    # a warning must not break the one-line contract.  A subprocess: pytest would capture it.
    import subprocess
    import sys

    script = ("import sys, numpy as np, asetransfer.stages.correspondence.pipeline as c\n"
              "fair = c.fair\n"
              "def noisy(*a, **k):\n"
              "    np.log(np.zeros(1))  # RuntimeWarning: divide by zero encountered in log\n"
              "    return fair(*a, **k)\n"
              "c.fair = noisy\n"
              "from asetransfer_cli.main import main\n"
              "sys.exit(main(sys.argv[1:]))\n")
    r = subprocess.run([sys.executable, "-c", script, "-q", *case.transfer()], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and r.stderr == "", r.stderr


def test_attributes_that_only_look_like_influence_sets_are_left_alone(case, capsys, base_result):
    # "JOINTS_²" passes str.isdigit() but not int(); "JOINTS_x" and "WEIGHTS_0_extra" are no set either
    def edit(doc, blob):
        attrs = doc["meshes"][0]["primitives"][0]["attributes"]
        for odd in ("JOINTS_\u00b2", "JOINTS_x", "WEIGHTS_0_extra"):
            attrs[odd] = attrs["JOINTS_0" if odd.startswith("JOINTS") else "WEIGHTS_0"]
    rig, err = transfer_ok(capsys, case, src=case.gltf(edit))
    np.testing.assert_allclose(joints(rig), joints(base_result), atol=1e-9)


def test_a_negative_joint_index_in_a_slot_of_weight_zero_is_never_read(case, capsys, base_result):
    def edit(doc, blob):  # a signed component type (BYTE), as some exporters write, with -1 in unused slots
        prim = doc["meshes"][0]["primitives"][0]
        doc["accessors"][prim["attributes"]["JOINTS_0"]]["componentType"] = 5120
        joints_0, weights_0 = attribute(doc, blob, "JOINTS_0"), attribute(doc, blob, "WEIGHTS_0")
        joints_0[weights_0 == 0] = -1
    rig, err = transfer_ok(capsys, case, src=case.gltf(edit))
    np.testing.assert_allclose(joints(rig), joints(base_result), atol=1e-9)


def test_a_mirrored_armature_is_read_with_proper_rotations_and_the_same_skinning(case, caplog):
    plain = at.load_rig(case.base.src)
    with caplog.at_level("WARNING", logger="asetransfer"):
        rig = at.load_rig(case.gltf(_mirrored_armature))
    assert "mirrored by a negative scale" in caplog.text and "'root'" in caplog.text
    rest, bind = rig.skeleton.rest_world(), rig.skeleton.bind_world
    np.testing.assert_allclose(np.linalg.det(rest[:, :3, :3]), 1.0, atol=1e-9)  # rotations, no reflection
    np.testing.assert_allclose(rest[:, :3, 3], plain.skeleton.rest_world()[:, :3, 3] * [-1, 1, 1], atol=1e-9)
    # the skinning matrices of the file, G inv(B) = mirror @ (plain G inv(B)) @ mirror: the mesh deforms as stored
    mirror = np.diag([-1.0, 1.0, 1.0, 1.0])
    np.testing.assert_allclose(rest @ np.linalg.inv(bind),
                               mirror @ plain.skeleton.rest_world() @ np.linalg.inv(plain.skeleton.bind_world) @ mirror,
                               atol=1e-9)
    np.testing.assert_allclose(rig.mesh.vertices, plain.mesh.vertices)
