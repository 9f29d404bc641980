"""Fuzzing the readers: a mutated file gives a valid result or an InputError.

Random byte edits (flips, insertions, deletions, truncation) and random JSON edits
(any value replaced by any JSON value, keys and items deleted) of a valid marker file
and of a valid small GLB are fed to :func:`asetransfer.io.load_markers` and
:func:`asetransfer.io.load_rig`; so are a small FBX whose compressed arrays get any
header and any zlib stream (the declared counts cap what is inflated), and
the heavy fixture's markers exchanged, moved, rounded and saved in any encoding.  Any other exception, or a read taking more than
a few seconds, fails.  Examples are derandomised (reproducible in CI) and bounded:
the whole file runs in ~10 s.
"""
from __future__ import annotations

import contextlib
import copy
import json
import math
import os
import signal
import struct
import tempfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asetransfer.model.transforms import quat_to_matrix
from asetransfer import InputError, Mesh, Rig
from asetransfer.io import load_markers, load_rig, read_gltf
from asetransfer.io.glb import FLOAT, USHORT
from conftest import tube_rig
from gltf_builder import accessor_array, glb_bytes, rig_document

#: ASETRANSFER_FUZZ_EXAMPLES=5000 (and ASETRANSFER_FUZZ_RANDOM=1 for fresh examples) for a longer hunt
FUZZ = settings(max_examples=int(os.environ.get("ASETRANSFER_FUZZ_EXAMPLES", 250)), deadline=2000,
                derandomize=not os.environ.get("ASETRANSFER_FUZZ_RANDOM"), database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
TIME_LIMIT = 10.0  # seconds for one read: more is a hang


@contextlib.contextmanager
def time_limit(seconds):
    """Raise TimeoutError in the block after ``seconds`` (a hang fails instead of stalling CI)."""
    def expire(signum, frame):
        raise TimeoutError(f"still reading after {seconds} s")
    old = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


WORKDIR = tempfile.TemporaryDirectory(prefix="asetransfer-fuzz-")


def write(name, data: bytes) -> str:
    path = f"{WORKDIR.name}/{name}"
    with open(path, "wb") as f:
        f.write(data)
    return path


# ---------------------------------------------------------------------------- valid inputs
def small_rig() -> Rig:
    """The tube rig with normals and texture coordinates."""
    rig = tube_rig()
    m = rig.mesh
    normals = m.vertices * [1.0, 0.0, 1.0]
    normals[-2:] = [[0, -1, 0], [0, 1, 0]]
    uv = np.stack([np.arctan2(m.vertices[:, 2], m.vertices[:, 0]), m.vertices[:, 1]], axis=1)
    return Rig(Mesh(m.vertices, m.faces, normals=normals, uv=uv), rig.skeleton, rig.skin)


def valid_glb() -> tuple:
    """A small GLB using most of what the reader supports: TRS and matrix nodes, a helper
    node between joints, joint orientation extras, normals, uv, a sparse accessor, a rigid
    prop (triangle strip) under a joint.  Returns ``(doc, blob)``."""
    doc, blob = rig_document(small_rig())
    nodes = doc["nodes"]
    # 'tip' as a matrix; 'mid' with an orient in its extras
    t, r = nodes[2].pop("translation"), nodes[2].pop("rotation")
    m = np.eye(4)
    m[:3, :3] = quat_to_matrix(np.array(r))
    m[:3, 3] = t
    nodes[2]["matrix"] = m.T.ravel().tolist()
    nodes[1]["extras"] = {"asetransfer": {"orient": [0.0, 0.0, 0.0, 1.0]}}
    # a helper (non-joint) node between root and mid
    nodes.append({"name": "helper", "children": [1]})
    nodes[0]["children"] = [len(nodes) - 1]

    def add(arr, ctype, atype):
        arr = np.ascontiguousarray(arr)
        blob.extend(b"\x00" * (-len(blob) % 4))
        doc["bufferViews"].append({"buffer": 0, "byteOffset": len(blob), "byteLength": arr.nbytes})
        blob.extend(arr.tobytes())
        doc["accessors"].append({"bufferView": len(doc["bufferViews"]) - 1, "componentType": ctype,
                                 "count": len(arr), "type": atype})
        return len(doc["accessors"]) - 1

    # sparse: two cap vertices moved a little
    pos = doc["meshes"][0]["primitives"][0]["attributes"]["POSITION"]
    idx = np.array([156, 157], "<u2")
    val = (accessor_array(doc, blob, pos)[[156, 157]] + [0, 0.01, 0]).astype("<f4")
    i_acc, v_acc = add(idx, USHORT, "SCALAR"), add(val, FLOAT, "VEC3")
    doc["accessors"][pos]["sparse"] = {
        "count": 2,
        "indices": {"bufferView": doc["accessors"][i_acc]["bufferView"], "componentType": USHORT},
        "values": {"bufferView": doc["accessors"][v_acc]["bufferView"]}}
    # a rigid prop under 'mid': a triangle strip without indices
    prop = add(np.array([[0.4, 1.5, 0], [0.5, 1.5, 0], [0.4, 1.6, 0], [0.5, 1.6, 0.01]], "<f4"), FLOAT, "VEC3")
    doc["meshes"].append({"name": "prop", "primitives": [{"attributes": {"POSITION": prop}, "mode": 5}]})
    nodes.append({"name": "prop", "mesh": 1})
    nodes[1]["children"] = [2, len(nodes) - 1]
    doc["buffers"][0]["byteLength"] = len(blob)
    return doc, bytes(blob)


def valid_markers() -> bytes:
    """A marker file with every location kind, for the tube rig and a target 1.5x larger."""
    src = tube_rig().mesh
    ms = [
        {"name": "bottom", "source": {"vertex": 156}, "target": {"vertex": 156}},
        {"name": "top", "source": {"vertex": 157}, "target": {"face": 300, "bary": [0.2, 0.3, 0.5]}},
        {"name": "side.L", "source": {"face": 150, "bary": [1, 0, 0]}, "target": {"vertex": 75}},
        {"name": "side.R", "source": {"point": src.vertices[81].tolist()},
         "target": {"point": (1.5 * src.vertices[81]).tolist()}},
    ]
    return json.dumps({"markers": ms}, indent=1).encode()


GLB_DOC, GLB_BLOB = valid_glb()
GLB = glb_bytes(GLB_DOC, GLB_BLOB)
MARKERS = valid_markers()
SOURCE = tube_rig().mesh
TARGET = Mesh(SOURCE.vertices * 1.5, SOURCE.faces)


def test_the_valid_inputs_are_valid():
    rig = load_rig(write("valid.glb", GLB))
    assert rig.mesh.parts == ("mesh", "prop") and rig.mesh.n_vertices == 162
    assert rig.skeleton.names == ("root", "mid", "tip")
    np.testing.assert_allclose(rig.mesh.vertices[157], [0, 3.01, 0], atol=1e-6)  # the sparse edit
    assert {"NORMAL", "TEXCOORD_0"} <= set(GLB_DOC["meshes"][0]["primitives"][0]["attributes"])
    markers = load_markers(write("valid.json", MARKERS), SOURCE, TARGET)
    assert markers.names == ("bottom", "top", "side.L", "side.R")


# ---------------------------------------------------------------------------- mutations
#: bytes that change the meaning of JSON text without always breaking it
JSON_BYTES = st.sampled_from(b'0123456789-+.eE,:"[]{} \\tnul')
ANY_BYTE = st.one_of(JSON_BYTES, st.integers(0x20, 0x7E), st.integers(0, 255))


@st.composite
def byte_mutations(draw, data: bytes, keep_length: bool = False):
    """``data`` with a few bytes overwritten, inserted or deleted, or cut short."""
    out = bytearray(data)
    ops = ["set"] if keep_length else ["set", "set", "set", "insert", "delete", "truncate"]
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(ops))
        at_ = draw(st.integers(0, max(len(out) - 1, 0)))
        if op == "set" and out:
            out[at_] = draw(ANY_BYTE)
        elif op == "insert":
            out[at_:at_] = bytes(draw(st.lists(ANY_BYTE, min_size=1, max_size=8)))
        elif op == "delete":
            del out[at_: at_ + draw(st.integers(1, 16))]
        elif op == "truncate":
            del out[at_:]
    return bytes(out)


def _paths(node, prefix=()):
    """Every location in a JSON tree, as a tuple of keys / indices."""
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, prefix + (i,))


SCALARS = st.one_of(
    st.none(), st.booleans(),
    st.integers(-3, 400), st.sampled_from([-1, 2**31, 2**32 + 3, 2**63, 10**30]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["", "x", "VEC3", "MAT4", "SCALAR", "data:,", "../missing.bin", "2.0", "1.0"]))
JSON_VALUES = st.recursive(SCALARS, lambda kids: st.one_of(st.lists(kids, max_size=5),
                                                            st.dictionaries(st.text(max_size=8), kids, max_size=4)),
                           max_leaves=10)


@st.composite
def json_mutations(draw, doc):
    """A deep copy of ``doc`` with 1-4 values replaced by random JSON, or deleted."""
    doc = copy.deepcopy(doc)
    for _ in range(draw(st.integers(1, 4))):
        # hypothesis favours the first choices: put the dull top-level 'asset' last
        paths = sorted(list(_paths(doc))[1:], key=lambda p: p[:1] == ("asset",))
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        if draw(st.booleans()) and draw(st.booleans()):
            del parent[path[-1]]
        elif draw(st.booleans()):  # a nearby number: off-by-one indices, counts, offsets
            old = parent[path[-1]]
            if isinstance(old, (int, float)) and not isinstance(old, bool) and math.isfinite(old):
                parent[path[-1]] = type(old)(old + draw(st.sampled_from([-1, 1, 4, -4, 1000])))
            else:
                parent[path[-1]] = draw(JSON_VALUES)
        else:
            parent[path[-1]] = draw(JSON_VALUES)
    return doc


def valid_or_input_error(read, name, data: bytes):
    path = write(name, data)
    with time_limit(TIME_LIMIT):
        try:
            read(path)
        except InputError as e:
            assert e.path == path and "\n" not in str(e)


def read_markers(path):
    return load_markers(path, SOURCE, TARGET)


def read_rig(path):
    rig = load_rig(path)
    rig.validate()
    return rig


# ---------------------------------------------------------------------------- the properties
@FUZZ
@given(byte_mutations(MARKERS))
def test_marker_file_byte_mutations(data):
    valid_or_input_error(read_markers, "markers.json", data)


@FUZZ
@given(json_mutations(json.loads(MARKERS)))
def test_marker_file_json_mutations(doc):
    valid_or_input_error(read_markers, "markers.json", json.dumps(doc).encode())


@FUZZ
@given(byte_mutations(GLB))
def test_glb_byte_mutations(data):
    valid_or_input_error(read_rig, "rig.glb", data)
    valid_or_input_error(read_gltf, "rig.glb", data)


@FUZZ
@given(byte_mutations(GLB, keep_length=True))
def test_glb_byte_overwrites(data):
    # same length: the container stays readable, so the edits reach the JSON and the arrays
    valid_or_input_error(read_rig, "rig.glb", data)
    valid_or_input_error(read_gltf, "rig.glb", data)


@FUZZ
@given(byte_mutations(json.dumps(GLB_DOC).encode()))
def test_glb_json_text_mutations(text):
    # the JSON chunk edited as text, then packed with correct chunk lengths
    blob = GLB_BLOB + b"\x00" * (-len(GLB_BLOB) % 4)
    js = text + b" " * (-len(text) % 4)
    data = (struct.pack("<4sII", b"glTF", 2, 12 + 8 + len(js) + 8 + len(blob)) + struct.pack("<II", len(js), 0x4E4F534A)
            + js + struct.pack("<II", len(blob), 0x004E4942) + blob)
    valid_or_input_error(read_rig, "rig.glb", data)
    valid_or_input_error(read_gltf, "rig.glb", data)


@FUZZ
@given(json_mutations(GLB_DOC))
def test_glb_json_mutations(doc):
    data = glb_bytes(doc, GLB_BLOB)
    valid_or_input_error(read_rig, "rig.glb", data)
    valid_or_input_error(read_gltf, "rig.glb", data)


@FUZZ
@given(st.integers(0, len(GLB_BLOB) // 4 - 1), st.sampled_from([np.nan, np.inf, -1.0, 0.0, 1e30, 3e38, -7.5]))
def test_glb_binary_float_mutations(word, value):
    # any 4-byte word of the binary chunk (positions, weights, matrices, indices) set to an odd value
    blob = bytearray(GLB_BLOB)
    blob[4 * word: 4 * word + 4] = struct.pack("<f", value)
    data = glb_bytes(GLB_DOC, bytes(blob))
    valid_or_input_error(read_rig, "rig.glb", data)
    valid_or_input_error(read_gltf, "rig.glb", data)


@pytest.fixture(scope="module", autouse=True)
def _cleanup():
    yield
    WORKDIR.cleanup()


# ---------------------------------------------------------------------------- the other readers
#: fewer examples for these: each reader is small, the classes of faults few
FUZZ_SMALL = settings(FUZZ, max_examples=max(int(os.environ.get("ASETRANSFER_FUZZ_EXAMPLES", 250)) // 3, 1))


def _small_mesh_files() -> dict:
    """The tube mesh as OBJ (with objects, normals, negative indices), ASCII PLY and binary PLY."""
    from asetransfer.io.ply import ply_bytes

    m = tube_rig().mesh
    obj = ["o body"] + [f"v {x:.6g} {y:.6g} {z:.6g}" for x, y, z in m.vertices.tolist()] + ["vn 0 1 0"]
    obj += [f"f {a + 1}//1 {b + 1}//1 {c + 1}//1" for a, b, c in m.faces[:-20].tolist()]
    n = len(m.vertices)
    obj += ["o cap"] + [f"f {a - n} {b - n} {c - n}" for a, b, c in m.faces[-20:].tolist()]
    ascii_ply = ["ply", "format ascii 1.0", f"element vertex {n}", "property float x", "property float y",
                 "property float z", f"element face {len(m.faces)}", "property list uchar int vertex_indices",
                 "end_header"]
    ascii_ply += [f"{x:.6g} {y:.6g} {z:.6g}" for x, y, z in m.vertices.tolist()]
    ascii_ply += [f"3 {a} {b} {c}" for a, b, c in m.faces.tolist()]
    return {"obj": "\n".join(obj).encode() + b"\n", "ply": "\n".join(ascii_ply).encode() + b"\n",
            "bin.ply": ply_bytes(m.vertices, m.faces)}


def _valid_bvh() -> bytes:
    """A BVH for the tube rig: three joints, an end site, two frames."""
    return (b"HIERARCHY\nROOT root\n{\n OFFSET 0 0 0\n CHANNELS 6 Xposition Yposition Zposition Zrotation "
            b"Xrotation Yrotation\n JOINT mid\n {\n  OFFSET 0 1.5 0\n  CHANNELS 3 Zrotation Xrotation Yrotation\n"
            b"  JOINT tip\n  {\n   OFFSET 0 1.5 0\n   CHANNELS 3 Zrotation Xrotation Yrotation\n   End Site\n"
            b"   {\n    OFFSET 0 0.5 0\n   }\n  }\n }\n}\nMOTION\nFrames: 2\nFrame Time: 0.0333333\n"
            b"0 0 0 0 0 0 10 0 0 0 0 20\n0.1 0 0 5 0 0 10 0 0 0 0 25\n")


MESH_FILES = _small_mesh_files()
BVH = _valid_bvh()


def _valid_calibration() -> bytes:
    from asetransfer.handoff.calibration import propose_calibration
    from asetransfer.io.calibration import calibration_to_json
    from conftest import FIXTURES

    rig = load_rig(FIXTURES / "source.glb")
    return calibration_to_json(propose_calibration(rig, "source.glb")).encode()


CALIBRATION = _valid_calibration()


def read_mesh(path):
    from asetransfer.io import load_mesh

    return load_mesh(path)


def read_bvh_file(path):
    from asetransfer.io.bvh import read_bvh

    return read_bvh(path)


def read_calibration_file(path):
    from asetransfer.io.calibration import read_calibration

    return read_calibration(path)


def test_the_other_valid_inputs_are_valid():
    for ext, data in MESH_FILES.items():
        mesh = read_mesh(write("valid." + ext, data))
        assert mesh.n_vertices == 158 and mesh.n_faces == 312, ext
    bvh = read_bvh_file(write("valid.bvh", BVH))
    assert bvh.names == ("root", "mid", "tip")
    assert read_calibration_file(write("valid.calibration.json", CALIBRATION)).skeleton_map


@FUZZ_SMALL
@given(st.sampled_from(sorted(MESH_FILES)), st.data())
def test_obj_and_ply_byte_mutations(ext, data):
    mutated = data.draw(byte_mutations(MESH_FILES[ext], keep_length=ext == "bin.ply"))
    valid_or_input_error(read_mesh, "target." + ext, mutated)


@FUZZ_SMALL
@given(byte_mutations(BVH))
def test_bvh_byte_mutations(data):
    valid_or_input_error(read_bvh_file, "motion.bvh", data)


@FUZZ_SMALL
@given(json_mutations(json.loads(CALIBRATION)))
def test_calibration_json_mutations(doc):
    valid_or_input_error(read_calibration_file, "cal.json", json.dumps(doc).encode())


# ---------------------------------------------------------------------------- FBX compressed arrays
def _valid_fbx() -> bytes:
    """A small skinned FBX whose arrays are all zlib-compressed (as exporters write large ones):
    a two-joint chain binding a quad strip."""
    from fbx_builder import fbx_bytes, matrix, model, p70

    def at_height(y):
        m = np.eye(4)
        m[1, 3] = y
        return matrix(m)

    verts = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0], [0, 2, 0], [1, 2, 0]], float)
    objects = [
        model(11, "Hips", "LimbNode"),
        model(12, "Spine", "LimbNode", Lcl_Translation=[0, 1, 0]),
        model(20, "Body", "Mesh"),
        ("Geometry", [21, "Body\x00\x01Geometry", "Mesh"],
         [("Vertices", [("zlib", verts.ravel())], []),
          ("PolygonVertexIndex", [("zlib", np.array([0, 1, 3, ~2, 2, 3, 5, ~4]))], [])]),
        ("Deformer", [40, "Skin\x00\x01Deformer", "Skin"], []),
        ("Deformer", [41, "Hips\x00\x01SubDeformer", "Cluster"],
         [("Indexes", [("zlib", np.array([0, 1, 2, 3]))], []), ("Weights", [("zlib", np.array([1, 1, 0.5, 0.5]))], []),
          ("Transform", [("zlib", at_height(0))], []), ("TransformLink", [("zlib", at_height(0))], [])]),
        ("Deformer", [42, "Spine\x00\x01SubDeformer", "Cluster"],
         [("Indexes", [("zlib", np.array([2, 3, 4, 5]))], []), ("Weights", [("zlib", np.array([0.5, 0.5, 1, 1]))], []),
          ("Transform", [("zlib", at_height(0))], []), ("TransformLink", [("zlib", at_height(1))], [])]),
    ]
    links = [(11, 0), (12, 11), (20, 0), (21, 20), (40, 21), (41, 40), (42, 40), (11, 41), (12, 42)]
    return fbx_bytes([("GlobalSettings", [], [p70(UpAxis=1)]), ("Objects", [], objects),
                      ("Connections", [], [("C", ["OO", child, parent], []) for child, parent in links])])


FBX = _valid_fbx()


def _fbx_arrays(data: bytes) -> list:
    """Where the compressed arrays of ``data`` are: (offset of the 12-byte header, payload length)."""
    out, at_ = [], 0
    while True:
        at_ = data.find(b"\x78\x9c", at_ + 1)  # a zlib stream, 12 bytes after its array header
        if at_ < 0:
            return out
        count, encoding, size = struct.unpack_from("<III", data, at_ - 12)
        if encoding == 1 and data[at_ - 13:at_ - 12] in (b"d", b"i"):
            out.append((at_ - 12, size))


FBX_ARRAYS = _fbx_arrays(FBX)


def read_fbx_rig(path):
    return read_rig(path)


def test_the_valid_fbx_is_valid():
    rig = read_fbx_rig(write("valid.fbx", FBX))
    assert rig.skeleton.names == ("Hips", "Spine") and rig.mesh.n_vertices == 6
    np.testing.assert_allclose(rig.skin.to_dense()[2], [0.5, 0.5])
    assert len(FBX_ARRAYS) == 10  # vertices, polygons, and per cluster indexes, weights and two matrices


@FUZZ_SMALL
@given(st.sampled_from(range(len(FBX_ARRAYS))), st.data())
def test_fbx_compressed_array_mutations(k, data):
    """An array's header (count, encoding, byte length) set to any number, or its compressed
    bytes edited: read, or one InputError, and fast (the count caps what is inflated)."""
    offset, size = FBX_ARRAYS[k]
    out = bytearray(FBX)
    if data.draw(st.booleans()):
        field = data.draw(st.sampled_from([0, 4, 8]))
        value = data.draw(st.one_of(st.integers(0, 2**32 - 1), st.sampled_from([0, 1, 2, 2**31, 2**32 - 1])))
        out[offset + field:offset + field + 4] = struct.pack("<I", value)
    else:
        payload = data.draw(byte_mutations(bytes(out[offset + 12:offset + 12 + size]), keep_length=True))
        out[offset + 12:offset + 12 + size] = payload
    valid_or_input_error(read_fbx_rig, "rig.fbx", bytes(out))


@FUZZ_SMALL
@given(st.sampled_from(range(len(FBX_ARRAYS))), st.integers(0, 1 << 22), st.integers(0, 2**32 - 1),
       st.sampled_from([b"\x00", b"\xff", b"abc"]))
def test_fbx_arrays_replaced_by_any_zlib_stream(k, inflated, count, filler):
    """An array replaced by a valid zlib stream of any length (up to 4 MiB inflated, a
    thousandth of it compressed) declaring any count: read, or one InputError."""
    import zlib

    offset, size = FBX_ARRAYS[k]
    stream = zlib.compress((filler * (inflated // len(filler) + 1))[:inflated])
    header = struct.pack("<III", count, 1, len(stream))
    data = FBX[:offset] + header + stream + FBX[offset + 12 + size:]
    data = _fixed_record_ends(data, offset, len(stream) - size)
    valid_or_input_error(read_fbx_rig, "rig.fbx", data)


def _fixed_record_ends(data: bytes, at_: int, grown: int) -> bytes:
    """``data`` with the end offsets of the records enclosing byte ``at_`` moved by ``grown``
    bytes (and their property lengths, for the record the array belongs to), as a writer
    would have written them: a replaced array keeps the file well formed."""
    from asetransfer.io.fbx_binary import HEADER_SIZE

    out = bytearray(data)

    def walk(pos: int, end: int):
        while pos + 13 <= end:
            node_end, n_props, props_len = struct.unpack_from("<III", out, pos)
            if node_end == 0:
                return
            name_len = out[pos + 12]
            props_start = pos + 13 + name_len
            if pos < at_ < node_end:
                if props_start <= at_ < props_start + props_len:
                    struct.pack_into("<I", out, pos + 8, props_len + grown)
                struct.pack_into("<I", out, pos, node_end + grown)
                walk(props_start + props_len + (grown if props_start <= at_ < props_start + props_len else 0),
                     node_end + grown)
                pos = node_end + grown
            elif node_end > at_ and pos > at_:
                struct.pack_into("<I", out, pos, node_end + grown)
                walk(props_start + props_len, node_end + grown)
                pos = node_end + grown
            else:
                pos = node_end
    walk(HEADER_SIZE, len(out))
    return bytes(out)


# ---------------------------------------------------------------------------- marker files on real meshes
def _heavy_case():
    from conftest import FIXTURES
    from asetransfer.io import load_mesh

    source = load_rig(FIXTURES / "source.glb").mesh
    target = load_mesh(FIXTURES / "target_heavy.ply")
    return source, target, json.loads((FIXTURES / "markers_heavy.json").read_text())["markers"]


HEAVY_SOURCE, HEAVY_TARGET, HEAVY_MARKERS = _heavy_case()


@FUZZ_SMALL
@given(st.lists(st.integers(0, len(HEAVY_MARKERS) - 1), max_size=len(HEAVY_MARKERS), unique=True),
       st.floats(0.0, 0.2), st.integers(0, 2**32 - 1),
       st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "utf-16-be", "utf-32", "latin-1"]))
def test_marker_files_exchanged_moved_and_encoded(exchanged, noise, seed, encoding):
    """The heavy fixture's markers, some with source and target exchanged, their points moved
    by up to ``noise`` (metres) and the file in any encoding: read (with warnings), or one
    InputError -- never another exception."""
    rng = np.random.default_rng(seed)
    markers = copy.deepcopy(HEAVY_MARKERS)
    for i in exchanged:
        markers[i]["source"], markers[i]["target"] = markers[i]["target"], markers[i]["source"]
    for m in markers:
        for side in ("source", "target"):
            m[side]["point"] = (np.array(m[side]["point"]) + noise * rng.standard_normal(3)).tolist()
    text = json.dumps({"markers": markers}, ensure_ascii=False)
    path = write("heavy.markers.json", text.encode(encoding))
    with time_limit(TIME_LIMIT):
        try:
            load_markers(path, HEAVY_SOURCE, HEAVY_TARGET)
        except InputError as e:
            assert e.path == path and "\n" not in str(e)


@FUZZ_SMALL
@given(st.lists(st.floats(-0.02, 1.02, allow_nan=False), min_size=3, max_size=3), st.integers(0, 3))
def test_marker_barycentric_coordinates(bary, decimals):
    """Any barycentric row, rounded to ``decimals`` (0: as drawn): accepted rows are divided
    by their sum (non-negative, summing to 1), the others are one InputError."""
    bary = [round(b, decimals) for b in bary] if decimals else bary
    ms = json.loads(MARKERS)
    ms["markers"][1]["target"] = {"face": 300, "bary": bary}
    path = write("markers.json", json.dumps(ms).encode())
    try:
        markers = read_markers(path)
    except InputError as e:
        assert e.path == path and "\n" not in str(e)
        return
    row = markers.target.bary[1]
    assert (row >= 0).all() and abs(row.sum() - 1.0) < 1e-12
