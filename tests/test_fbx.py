"""FBX input: the FBX twins of the fixtures, written by Blender's FBX exporter
(``fixtures/make_fbx.py``), read back as the rigs and meshes they were made from.

Tolerances: Blender stores bones as float32 head/tail/roll, so the bind rotations it writes
for the legs differ from the glTF file's by up to 2.5e-5 (measured; the positions by 4e-7):
rotations are compared within 1e-4, positions and weights within 1e-5 (after units).  Our
reader was cross-checked against ufbx on these files: TransformLink identical, rest
matrices within 1e-12.
"""
from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest

import asetransfer as at
from asetransfer.io import file_frame, load_character, load_mesh, load_rig
from asetransfer.io.fbx import polygon_triangles
from asetransfer.io.fbx_scene import euler_matrix, node_local_matrix
from asetransfer_cli.main import main
from conftest import FIXTURES

#: glTF frame (m, Y up, facing +Z) -> the frame Blender writes with axis_up="Z",
#: axis_forward="-Y" in centimetres: (x, y, z) -> 100 (-x, z, y); the files declare
#: right -X, up +Z, front +Y
CM_ZUP = np.diag([1.0, 1.0, 1.0, 1.0])
CM_ZUP[:3, :3] = 100.0 * np.array([[-1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0]])


@pytest.fixture(scope="module")
def gltf_source():
    return load_rig(FIXTURES / "source.glb")


def assert_same_rig(fbx: at.Rig, gltf: at.Rig, to_gltf: np.ndarray = np.eye(4)):
    """``fbx`` (mapped by ``to_gltf``) is ``gltf``: names, hierarchy, parts, faces, vertices, bind
    and rest matrices, weights."""
    sk, ref = fbx.skeleton, gltf.skeleton
    assert sk.names == ref.names  # depth-first order equals the glTF skin's here
    assert np.array_equal(sk.parents, ref.parents)
    assert fbx.mesh.parts == gltf.mesh.parts
    np.testing.assert_array_equal(fbx.mesh.faces, gltf.mesh.faces)
    np.testing.assert_allclose(fbx.mesh.vertices @ to_gltf[:3, :3].T + to_gltf[:3, 3], gltf.mesh.vertices,
                               atol=1e-5)
    for name, mats in (("bind", (sk.bind_world, ref.bind_world)), ("rest", (sk.rest_world(), ref.rest_world()))):
        mine = to_gltf @ mats[0]
        np.testing.assert_allclose(mine[:, :3, 3], mats[1][:, :3, 3], atol=1e-5, err_msg=name)
        np.testing.assert_allclose(mine[:, :3, :3], mats[1][:, :3, :3], atol=1e-4, err_msg=name)
    assert abs(fbx.skin.to_sparse() - gltf.skin.to_sparse()).max() <= 1e-6


def test_fbx_source_is_its_gltf_twin(gltf_source):
    rig = load_rig(FIXTURES / "source.fbx")
    assert file_frame(FIXTURES / "source.fbx") == {"metres_per_unit": 1.0, "up_axis": "+Y"}
    assert_same_rig(rig, gltf_source)


def test_fbx_source_in_centimetres_z_up_is_the_twin_in_its_own_frame(gltf_source):
    path = FIXTURES / "source_cm_zup.fbx"
    assert file_frame(path) == {"metres_per_unit": 0.01, "up_axis": "+Z"}
    rig = load_rig(path)
    # returned in the file's frame: 1.74 m tall along +Z in centimetres
    assert 170 < np.ptp(rig.mesh.vertices[:, 2]) < 180
    assert_same_rig(rig, gltf_source, np.linalg.inv(CM_ZUP))


def test_three_meshes_bound_to_one_skeleton_are_merged_as_parts():
    rig = load_rig(FIXTURES / "source.fbx")
    assert rig.mesh.parts == ("body", "eye.L", "eye.R")
    head = rig.skeleton.index("head")
    eyes = rig.mesh.vertex_part > 0
    assert (rig.skin.indices[eyes, 0] == head).all() and np.allclose(rig.skin.weights[eyes, 0], 1.0)


def test_fbx_target_is_its_ply_twin_in_the_files_frame():
    fbx = load_mesh(FIXTURES / "target_heavy_cm_zup.fbx")
    ply = load_mesh(FIXTURES / "target_heavy.ply")
    np.testing.assert_array_equal(fbx.faces, ply.faces)
    np.testing.assert_allclose(fbx.vertices, ply.vertices @ CM_ZUP[:3, :3].T, atol=1e-4)  # cm; float32 in Blender


def test_a_rigged_fbx_read_as_a_target_is_its_mesh_as_placed(gltf_source):
    mesh = load_mesh(FIXTURES / "source.fbx")
    np.testing.assert_allclose(mesh.vertices, gltf_source.mesh.vertices, atol=1e-5)
    assert isinstance(load_character(FIXTURES / "source.fbx"), at.Rig)
    assert isinstance(load_character(FIXTURES / "target_heavy_cm_zup.fbx"), at.Mesh)


def test_polygons_are_fan_triangulated():
    # a triangle, a quad and a pentagon; the last corner of each is stored as ~v
    pvi = np.array([0, 1, ~2, 3, 4, 5, ~6, 7, 8, 9, 10, ~11])
    np.testing.assert_array_equal(polygon_triangles(pvi), [[0, 1, 2], [3, 4, 5], [3, 5, 6], [7, 8, 9],
                                                           [7, 9, 10], [7, 10, 11]])
    assert polygon_triangles(np.array([0, ~1])).shape == (0, 3)  # a line gives none


def test_euler_orders_and_the_transform_stack():
    rx, rz = euler_matrix([90.0, 0.0, 0.0]), euler_matrix([0.0, 0.0, 90.0])
    np.testing.assert_allclose(rx[:3, :3] @ [0, 1, 0], [0, 0, 1], atol=1e-12)
    # eXYZ applies X first: R = Rz Rx; eZYX (5) applies Z first: R = Rx Rz
    np.testing.assert_allclose(euler_matrix([90.0, 0.0, 90.0], 0), rz @ rx, atol=1e-12)
    np.testing.assert_allclose(euler_matrix([90.0, 0.0, 90.0], 5), rx @ rz, atol=1e-12)
    # L = T Rpre R S about a rotation pivot: the pivot stays where it is
    props = {"Lcl Translation": np.array([1.0, 2.0, 3.0]), "PreRotation": np.array([0.0, 0.0, 90.0]),
             "Lcl Rotation": np.array([90.0, 0.0, 0.0]), "Lcl Scaling": np.array([2.0, 2.0, 2.0]),
             "RotationPivot": np.array([0.5, 0.0, 0.0]), "ScalingPivot": np.array([0.5, 0.0, 0.0])}
    m = node_local_matrix(props)
    np.testing.assert_allclose(m[:3, :3], 2.0 * (rz @ rx)[:3, :3], atol=1e-12)
    np.testing.assert_allclose(m @ [0.5, 0.0, 0.0, 1.0], [1.5, 2.0, 3.0, 1.0], atol=1e-12)


# ---------------------------------------------------------------------- command line
def run(capsys, argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def transfer(capsys, tmp_path, src, tgt, markers, out):
    code, _, err = run(capsys, ["transfer", src, tgt, "--markers", markers, "-o", tmp_path / out, "-q"])
    assert code == 0, err
    return load_rig(tmp_path / out)


def test_fbx_source_gives_the_transfer_of_its_gltf_twin(tmp_path, capsys):
    args = (FIXTURES / "target_heavy.ply", FIXTURES / "markers_heavy.json")
    from_gltf = transfer(capsys, tmp_path, FIXTURES / "source.glb", *args, "gltf.glb")
    from_fbx = transfer(capsys, tmp_path, FIXTURES / "source.fbx", *args, "fbx.glb")
    assert from_fbx.skeleton.names == from_gltf.skeleton.names
    joints = lambda r: r.skeleton.bind_world[:, :3, 3]  # noqa: E731
    assert np.abs(joints(from_fbx) - joints(from_gltf)).max() < 1e-4  # metres; measured 3.4e-6
    # float32 rounding of the source (3.7e-7 m) moves the fit by micrometres, and a weight
    # changes where a vertex's closest point crosses an edge: measured 4.2e-4 with the
    # full fairing, 2.3e-5 and 5.0e-3 (one vertex) with 5k and 4k-vertex fairing proxies
    assert abs(from_fbx.skin.to_sparse() - from_gltf.skin.to_sparse()).max() < 2e-2


def test_fbx_target_in_cm_z_up_gives_the_rig_of_its_ply_twin(tmp_path, capsys):
    ply = load_mesh(FIXTURES / "target_heavy.ply")
    twin = tmp_path / "twin.ply"  # the PLY target expressed in the FBX file's frame
    with open(twin, "w") as f:
        f.write(f"ply\nformat ascii 1.0\nelement vertex {ply.n_vertices}\nproperty double x\nproperty double y\n"
                f"property double z\nelement face {ply.n_faces}\nproperty list uchar int vertex_indices\nend_header\n")
        f.writelines(f"{x!r} {y!r} {z!r}\n" for x, y, z in (ply.vertices @ CM_ZUP[:3, :3].T).tolist())
        f.writelines(f"3 {a} {b} {c}\n" for a, b, c in ply.faces.tolist())
    markers = json.loads((FIXTURES / "markers_heavy.json").read_text())
    for m in markers["markers"]:
        if "point" in m["target"]:
            m["target"]["point"] = (CM_ZUP[:3, :3] @ np.array(m["target"]["point"])).tolist()
    (tmp_path / "markers.json").write_text(json.dumps(markers))
    src, mk = FIXTURES / "source.glb", tmp_path / "markers.json"
    # rigged into FBX, which holds each mesh vertex once (into glTF, the FBX target's per-corner
    # normals split its vertices)
    from_ply = transfer(capsys, tmp_path, src, twin, mk, "ply.fbx")
    from_fbx = transfer(capsys, tmp_path, src, FIXTURES / "target_heavy_cm_zup.fbx", mk, "fbx.fbx")
    joints = lambda r: r.skeleton.bind_world[:, :3, 3]  # noqa: E731
    assert np.abs(joints(from_fbx) - joints(from_ply)).max() < 0.01  # centimetres; measured 1.4e-4
    assert abs(from_fbx.skin.to_sparse() - from_ply.skin.to_sparse()).max() < 5e-3  # measured 3.6e-4


def test_info_on_fbx_reports_the_declared_frame(capsys):
    code, out, err = run(capsys, ["info", FIXTURES / "source_cm_zup.fbx", "--json"])
    assert code == 0, err
    d = json.loads(out)
    assert d["kind"] == "rig" and d["joint_count"] == 65 and d["parts"] == ["body", "eye.L", "eye.R"]
    assert d["declared_frame"] == {"metres_per_unit": 0.01, "up_axis": "+Z"}
    assert d["clips"] == [] and d["clips_left_out"] == []
    # the same rig with two takes baked by Blender (24 fps): each named with its length
    code, out, err = run(capsys, ["info", FIXTURES / "source_animated_cm_zup.fbx", "--json"])
    assert code == 0, err
    assert [(c["name"], c["frames"]) for c in json.loads(out)["clips"]] == [("skin|step", 12), ("skin|wave", 24)]
    code, out, _ = run(capsys, ["info", FIXTURES / "source_animated_cm_zup.fbx"])
    assert "clips           skin|step (12 frames), skin|wave (24 frames)" in out


# ---------------------------------------------------------------------- bad FBX files
def _truncated(tmp_path):
    data = (FIXTURES / "source.fbx").read_bytes()
    return data[: len(data) // 3]


def _broken_zlib(tmp_path):
    data = bytearray((FIXTURES / "source.fbx").read_bytes())
    i = data.index(b"\x78\x9c", 4000)  # a zlib stream of an array
    data[i + 2:i + 60] = b"\xff" * 58
    return bytes(data)


def _edited_sdk_file(tmp_path, old: bytes, new: bytes):
    """The SDK-style file with one byte string replaced by another of the same length."""
    path = tmp_path / "sdk.fbx"
    _sdk_style_file(path)
    data = path.read_bytes()
    assert data.count(old) == 1 and len(old) == len(new)
    return data.replace(old, new)


def _cluster_vertex_out_of_range(tmp_path):
    import struct

    # the Hips cluster's Indexes [0, 1, 2, 4] -> [0, 1, 2, 9]: the body has 5 vertices
    return _edited_sdk_file(tmp_path, struct.pack("<4i", 0, 1, 2, 4), struct.pack("<4i", 0, 1, 2, 9))


def _hierarchy_cycle(tmp_path):
    import struct

    # the group node (10) under the scene root becomes a child of the head (13): a cycle
    old = b"S\x02\x00\x00\x00OOL" + struct.pack("<q", 10) + b"L" + struct.pack("<q", 0)
    return _edited_sdk_file(tmp_path, old, old[:-8] + struct.pack("<q", 13))


def _compressed_array_file(count: int, payload: bytes) -> bytes:
    """An FBX whose mesh's ``Vertices`` is a zlib array declaring ``count`` doubles over ``payload``."""
    from fbx_builder import fbx_bytes

    array = ("array", b"d", count, 1, payload)
    return fbx_bytes([("Objects", [], [("Geometry", [1, "g\x00\x01Geometry", "Mesh"], [("Vertices", [array], [])])])])


def _zeros_compressed(n_bytes: int) -> bytes:
    """``n_bytes`` zero bytes as one zlib stream (made a megabyte at a time: a thousandth of its size)."""
    import zlib

    stream, chunk = zlib.compressobj(9), bytes(1 << 20)
    parts = [stream.compress(chunk) for _ in range(n_bytes >> 20)]
    return b"".join(parts) + stream.flush()


def _inflates_past_its_count(tmp_path):
    # 64 MiB of zeros in 64 kB, declared as 8 values (inflated in full, gigabytes of them took 30 s, then a
    # MemoryError)
    return _compressed_array_file(8, _zeros_compressed(1 << 26))


def _count_beyond_its_bytes(tmp_path):
    # 2^31 doubles (16 GiB) declared over 1 kB of compressed bytes: no zlib stream inflates that far
    return _compressed_array_file(2**31, _zeros_compressed(1 << 20)[:1000])


def _count_beyond_the_files_budget(tmp_path):
    # 128 MiB declared over 130 kB: zlib could, the file's size does not allow it (64 MiB + 64 x 130 kB)
    return _compressed_array_file(1 << 24, _zeros_compressed(1 << 27))


BAD = {
    "truncated": (_truncated, "source", r"corrupt or truncated FBX file"),
    "not_fbx": (lambda _: b"PK\x03\x04 a zip file, not FBX" * 10, "source", r"not a binary FBX file"),
    "ascii_without_a_mesh": (lambda _: b"; FBX 7.4.0 project file\nFBXHeaderExtension:  {\n}\n", "source",
                             r"contains no triangle mesh"),
    "ascii_fbx_5": (lambda _: b"; FBX 5.8.0 project file\nFBXHeaderExtension:  {\n\tFBXVersion: 5800\n}\n",
                    "target", r"ASCII FBX version 5800 is not supported"),
    "empty": (lambda _: b"", "source", r"file is empty"),
    "broken_zlib": (_broken_zlib, "source", r"corrupt or truncated FBX file"),
    "no_skin": (lambda _: (FIXTURES / "target_heavy_cm_zup.fbx").read_bytes(), "source", r"has no skin"),
    "target_truncated": (_truncated, "target", r"corrupt or truncated FBX file"),
    "cluster_vertex_out_of_range": (_cluster_vertex_out_of_range, "source",
                                    r"skin cluster of joint 'mixamorig:Hips' names vertex 9, the mesh has 5"),
    "hierarchy_cycle": (_hierarchy_cycle, "source", r"the node hierarchy has a cycle"),
    "inflates_past_its_count": (_inflates_past_its_count, "source",
                                r"compressed array of node 'Vertices' inflates past its 8 declared values"),
    "count_beyond_its_bytes": (_count_beyond_its_bytes, "target",
                               r"declares 2147483648 values \(17179869184 bytes\) in 1000 compressed bytes"),
    "count_beyond_the_files_budget": (_count_beyond_the_files_budget, "source",
                                      r"compressed arrays inflate to more than 64 MiB \+ 64 times the file's size"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_bad_fbx_exits_2_with_one_line_naming_the_file(name, tmp_path, capsys):
    make, role, pattern = BAD[name]
    bad = tmp_path / "bad.fbx"
    bad.write_bytes(make(tmp_path))
    src = bad if role == "source" else FIXTURES / "source.glb"
    tgt = bad if role == "target" else FIXTURES / "target_heavy.ply"
    out = tmp_path / "out" / "rigged.glb"
    out.parent.mkdir()
    # a hostile array is refused before it is inflated (the messages say which cap held it)
    code, _, err = run(capsys, ["transfer", src, tgt, "--markers", FIXTURES / "markers_heavy.json", "-o", out])
    lines = err.splitlines()
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"asetransfer: error: {bad}: "), err
    assert re.search(pattern, lines[0]), err
    assert os.listdir(out.parent) == []


# ---------------------------------------------------------------------- an FBX SDK-style file
def _sdk_style_file(path):
    """A Maya/FBX-SDK-style rig the Blender fixtures do not cover: a rotated group node above
    the joints, namespaced joint names, pre-rotation and a ZXY rotation order, cluster
    ``Transform`` = ``inv(TransformLink)`` times the mesh's world matrix at bind time (as the
    SDK writes it, and Blender's importer reads every file; the node has moved since), a
    geometric translation, an
    end joint bound by no cluster but present in the BindPose (in another pose than its
    rest), a static mesh below a joint, and weights that do not sum to 1.  Returns the
    expected values computed here, independently of the reader."""
    from scipy.spatial.transform import Rotation

    from fbx_builder import fbx_bytes, matrix, model, p70

    def trs(t=(0, 0, 0), r=np.eye(3)):
        m = np.eye(4)
        m[:3, :3], m[:3, 3] = r, t
        return m

    rot = lambda axes, deg: Rotation.from_euler(axes, deg, degrees=True).as_matrix()  # noqa: E731
    group = trs(r=rot("x", [-90.0]))                                # Z-up group node
    hips = group @ trs((0, 0, 1.0))
    spine = hips @ trs((0, 0.5, 0), rot("z", [30.0]) @ rot("zxy", [10.0, 20.0, 0.0]))  # Rpre, then ZXY
    head = spine @ trs((0, 0.4, 0))
    head_bind = head @ trs((0, 0.05, 0))                            # BindPose differs from rest
    mesh_world = trs((0.3, 0, 0))  # the mesh node at bind time; it was moved to 0.2 since
    geom = trs((0.1, 0, 0))                                         # GeometricTranslation
    verts = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [0, 0, 1]], float)
    objects = [
        model(10, "Group", "Null", Lcl_Rotation=[-90, 0, 0]),
        model(11, "mixamorig:Hips", "LimbNode", Lcl_Translation=[0, 0, 1]),
        ("Model", [12, "mixamorig:Spine\x00\x01Model", "LimbNode"],
         [p70(Lcl_Translation=[0, 0.5, 0], PreRotation=[0, 0, 30], Lcl_Rotation=[10, 20, 0], RotationOrder=4)]),
        model(13, "mixamorig:Head", "LimbNode", Lcl_Translation=[0, 0.4, 0]),
        model(20, "Body", "Mesh", Lcl_Translation=[0.2, 0, 0], GeometricTranslation=[0.1, 0, 0]),
        ("Geometry", [21, "Body\x00\x01Geometry", "Mesh"],
         [("Vertices", [verts.ravel()], []), ("PolygonVertexIndex", [np.array([0, 1, 2, ~3, 0, 1, ~4])], [])]),
        model(30, "Hat", "Mesh"),
        ("Geometry", [31, "Hat\x00\x01Geometry", "Mesh"],
         [("Vertices", [verts.ravel() * 0.1], []), ("PolygonVertexIndex", [np.array([0, 1, ~2])], [])]),
        ("Deformer", [40, "Skin\x00\x01Deformer", "Skin"], []),
        ("Deformer", [41, "Hips\x00\x01SubDeformer", "Cluster"],
         [("Indexes", [np.array([0, 1, 2, 4])], []), ("Weights", [np.array([1.0, 0.5, 0.3, 0.2])], []),
          ("Transform", [matrix(np.linalg.inv(hips) @ mesh_world)], []), ("TransformLink", [matrix(hips)], [])]),
        ("Deformer", [42, "Spine\x00\x01SubDeformer", "Cluster"],
         [("Indexes", [np.array([1, 2, 3, 4])], []), ("Weights", [np.array([0.5, 0.3, 0.6, 0.2])], []),
          ("Transform", [matrix(np.linalg.inv(spine) @ mesh_world)], []), ("TransformLink", [matrix(spine)], [])]),
        ("Pose", [50, "BindPose\x00\x01Pose", "BindPose"],
         [("PoseNode", [], [("Node", [13], []), ("Matrix", [matrix(head_bind)], [])])]),
    ]
    links = [(11, 10), (12, 11), (13, 12), (10, 0), (20, 0), (21, 20), (30, 13), (31, 30), (40, 21),
             (41, 40), (42, 40), (11, 41), (12, 42)]
    doc = [("Creator", ["FBX SDK/FBX Plugins version 2020.3"], []),
           ("GlobalSettings", [], [p70(UpAxis=2, UpAxisSign=1, UnitScaleFactor=2.54)]),
           ("Objects", [], objects),
           ("Connections", [], [("C", ["OO", child, parent], []) for child, parent in links])]
    path.write_bytes(fbx_bytes(doc))
    body = (mesh_world @ geom @ np.c_[verts, np.ones(5)].T).T[:, :3]  # bound where it was bound
    hat = (head_bind @ np.c_[verts * 0.1, np.ones(5)].T).T[:, :3]  # rest = its joint's rest: B inv(G) G M
    return {"rest": np.array([hips, spine, head]), "bind": np.array([hips, spine, head_bind]),
            "vertices": np.concatenate([body, hat])}


def test_an_fbx_sdk_style_rig(tmp_path):
    path = tmp_path / "maya.fbx"
    want = _sdk_style_file(path)
    rig = load_rig(path)
    sk = rig.skeleton
    assert sk.names == ("mixamorig:Hips", "mixamorig:Spine", "mixamorig:Head")
    assert sk.parents.tolist() == [-1, 0, 1]
    np.testing.assert_allclose(sk.rest_world(), want["rest"], atol=1e-12)
    np.testing.assert_allclose(sk.bind_world, want["bind"], atol=1e-12)
    assert rig.mesh.parts == ("Body", "Hat")
    np.testing.assert_allclose(rig.mesh.vertices, want["vertices"], atol=1e-12)  # unused hat corners kept
    np.testing.assert_array_equal(rig.mesh.faces, [[0, 1, 2], [0, 2, 3], [0, 1, 4], [5, 6, 7]])
    w = rig.skin.to_dense()
    np.testing.assert_allclose(w[:5], [[1, 0, 0], [0.5, 0.5, 0], [0.5, 0.5, 0], [0, 1, 0], [0.5, 0.5, 0]])
    np.testing.assert_allclose(w[5:], [[0, 0, 1]] * 5)  # the hat follows the head rigidly
    assert file_frame(path) == {"metres_per_unit": 0.0254, "up_axis": "+Z"}


def test_a_cluster_entry_of_weight_0_may_name_any_vertex(tmp_path):
    """-1 with weight 0 pads a cluster (it binds nothing): read, not refused; -1 with a weight is refused."""
    import struct

    path = tmp_path / "padded.fbx"
    _sdk_style_file(path)
    data = path.read_bytes()
    indexes, weights = struct.pack("<4i", 0, 1, 2, 4), struct.pack("<4d", 1.0, 0.5, 0.3, 0.2)
    padded = data.replace(indexes, struct.pack("<4i", 0, 1, 2, -1))
    path.write_bytes(padded.replace(weights, struct.pack("<4d", 1.0, 0.5, 0.3, 0.0)))
    w = load_rig(path).skin.to_dense()
    np.testing.assert_allclose(w[:5], [[1, 0, 0], [0.5, 0.5, 0], [0.5, 0.5, 0], [0, 1, 0], [0, 1, 0]])
    path.write_bytes(padded)
    with pytest.raises(at.InputError, match="skin cluster of joint 'mixamorig:Hips' names vertex -1"):
        load_rig(path)


def test_a_joint_name_used_twice_is_renamed_as_for_gltf(tmp_path, caplog):
    path = tmp_path / "twice.fbx"
    path.write_bytes(_edited_sdk_file(tmp_path, b"mixamorig:Head\x00\x01Model", b"mixamorig:Hips\x00\x01Model"))
    assert load_rig(path).skeleton.names == ("mixamorig:Hips", "mixamorig:Spine", "mixamorig:Hips.001")
    assert "used twice" in caplog.text


def test_damaged_fbx_files_fail_only_with_input_errors(tmp_path):
    """300 seeded mutations of a small FBX (bytes overwritten, the file cut short): every
    one reads or fails with a one-line InputError, never another exception (an internal
    error).  Measured once at 6000 mutations, and 800 of the Blender fixture: none."""
    import logging
    import warnings

    from asetransfer.errors import InputError
    from asetransfer.io.fbx import mesh_from_scene, rig_from_scene
    from asetransfer.io.fbx_scene import FbxScene

    path = tmp_path / "sdk.fbx"
    _sdk_style_file(path)
    data = path.read_bytes()
    rng = np.random.default_rng(21)
    logging.disable(logging.WARNING)
    try:
        for trial in range(300):
            d = bytearray(data)
            if trial % 2:
                d = d[:rng.integers(27, len(d))]
            else:
                for i in rng.integers(27, len(d), size=rng.integers(1, 6)).tolist():
                    d[i] = int(rng.integers(0, 256))
            for read in (rig_from_scene, mesh_from_scene):
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")  # overflow on absurd numbers: still an answer
                        read(FbxScene(path, bytes(d)))
                except InputError:
                    pass
    finally:
        logging.disable(logging.NOTSET)
