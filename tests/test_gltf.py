import logging

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import asetransfer as at
from asetransfer import InputError, Mesh, Rig
from asetransfer.io import read_gltf
from asetransfer.io.assembly import unique_names
from asetransfer.io.glb import UBYTE
from conftest import assert_rigs_equal, tube_rig
from gltf_builder import Doc, quat_z


def two_part_rig():
    """The tube rig plus a second part (a small triangle 'eye') with uv and normals."""
    rig = tube_rig()
    m = rig.mesh
    extra = np.array([[0.5, 2.0, 0.0], [0.6, 2.0, 0.0], [0.5, 2.1, 0.0]])
    verts = np.concatenate([m.vertices, extra])
    faces = np.concatenate([m.faces, [[len(m.vertices), len(m.vertices) + 1, len(m.vertices) + 2]]])
    part = np.r_[np.zeros(len(m.vertices)), np.ones(3)]
    uv = np.random.default_rng(0).uniform(size=(len(verts), 2))
    mesh = Mesh(verts, faces, ("body", "eye"), part, None, uv)
    w = np.zeros((len(verts), 3))
    w[: len(m.vertices)] = rig.skin.to_dense()
    w[len(m.vertices):, 1] = 1.0
    return Rig(mesh, rig.skeleton, at.SkinWeights.from_dense(w))


@pytest.mark.parametrize("ext", [".glb", ".gltf"])
def test_round_trip_preserves_everything(tmp_path, ext):
    rig = two_part_rig()
    # a Δ-rotated joint (orient != rest rotation) and a scaled one
    sk = rig.skeleton.copy()
    sk.rotation[1] = Rotation.from_euler("x", 25, degrees=True).as_matrix()
    sk.scale[2] = [1.5, 1.5, 1.5]
    rig = Rig(rig.mesh, sk, rig.skin)
    path = tmp_path / f"out{ext}"
    at.save_rig(path, rig)
    back = at.load_rig(path)
    assert_rigs_equal(rig, back, tol=1e-6)
    np.testing.assert_allclose(back.skeleton.orient, rig.skeleton.orient, atol=1e-9)
    np.testing.assert_allclose(back.skeleton.rotation, rig.skeleton.rotation, atol=1e-9)
    assert back.mesh.parts == ("body", "eye")
    np.testing.assert_array_equal(back.mesh.vertex_part, rig.mesh.vertex_part)
    np.testing.assert_allclose(back.mesh.uv, rig.mesh.uv, atol=1e-6)


def test_writer_is_deterministic_and_weights_sum_to_one_in_float32(tmp_path):
    rig = two_part_rig()
    a, b = tmp_path / "a.glb", tmp_path / "b.glb"
    at.save_rig(a, rig)
    at.save_rig(b, two_part_rig())
    assert a.read_bytes() == b.read_bytes()
    from asetransfer.io.glb import Accessors, read_document
    doc, bufs = read_document(a)
    acc = Accessors(a, doc, bufs)
    w = acc.read(doc["meshes"][0]["primitives"][0]["attributes"]["WEIGHTS_0"]).astype(np.float32)
    assert np.abs(w.sum(axis=1, dtype=np.float32) - 1).max() <= 2e-7


def test_eight_influences_and_cap_to_four(tmp_path):
    rig = tube_rig()
    n = rig.mesh.n_vertices
    rng = np.random.default_rng(0)
    # 9 joints in a chain so some vertices get 8 influences
    names = tuple(f"j{k}" for k in range(9))
    world = np.tile(np.eye(4), (9, 1, 1))
    world[:, 1, 3] = np.linspace(0, 3, 9)
    sk = at.Skeleton.from_world(names, np.arange(-1, 8), world)
    dense = rng.uniform(size=(n, 9)) ** 4
    skin = at.SkinWeights.from_dense(dense, max_influences=8)
    rig8 = Rig(rig.mesh, sk, skin)
    at.save_rig(tmp_path / "w8.glb", rig8)
    back = at.load_rig(tmp_path / "w8.glb")
    assert back.skin.influence_counts().max() == 8
    assert abs(back.skin.to_sparse() - skin.to_sparse()).max() < 1e-6
    at.save_rig(tmp_path / "w4.glb", rig8, max_influences=4)
    back4 = at.load_rig(tmp_path / "w4.glb")
    assert back4.skin.influence_counts().max() == 4
    np.testing.assert_allclose(back4.skin.weights.sum(axis=1), 1.0, atol=1e-6)
    # the four kept are the four largest
    top4 = np.sort(np.argsort(-skin.to_dense(), axis=1, kind="stable")[:, :4], axis=1)
    np.testing.assert_array_equal(np.sort(back4.skin.indices, axis=1), top4)


def quirky_file(tmp_path, unnormalised=False):
    """An exporter-style file: Armature node (rotated, scaled 0.01) above the joints, a helper
    (non-joint) node between joints, two mesh nodes (body with 2 primitives, eyes bound rigidly
    under the head), 8 influences, skin.skeleton pointing at a non-root joint."""
    d = Doc()
    arm = d.node(name="Armature", rotation=[-np.sqrt(0.5), 0, 0, np.sqrt(0.5)], scale=[0.01, 0.01, 0.01],
                 translation=[0.0, 0.0, 1.0])
    hips = d.node(name="hips", translation=[0, 0, 100.0])
    helper = d.node(name="helper_grp", translation=[0, 0, 10.0], rotation=quat_z(30))
    chest = d.node(name="chest", translation=[0, 20.0, 0], rotation=quat_z(-10))
    head = d.node(name="head", translation=[0, 30.0, 0])
    d.nodes[arm]["children"] = [hips]
    d.nodes[hips]["children"] = [helper]
    d.nodes[helper]["children"] = [chest]
    d.nodes[chest]["children"] = [head]
    joints = [hips, chest, head]
    # rest world matrices of joints (computed by hand through the hierarchy) give the IBMs
    from asetransfer.io.gltf_document import GltfDocument
    tmp = d.save(tmp_path / "tmp.glb", dict(d.document(), nodes=d.nodes))
    world = GltfDocument(tmp).world
    ibm = np.linalg.inv(world[joints])
    rng = np.random.default_rng(5)
    verts = rng.normal(size=(10, 3)) * 0.1 + world[chest][:3, 3]
    faces = np.array([[0, 1, 2], [2, 3, 4], [4, 5, 6]])
    faces2 = np.array([[6, 7, 8], [7, 8, 9]])
    w0 = np.full((10, 4), 0.125 * (1.3 if unnormalised else 1.0))
    j0 = np.tile([0, 1, 2, 0], (10, 1))
    j1 = np.tile([1, 2, 0, 1], (10, 1))
    p1 = d.primitive(verts, faces, [j0, j1], [w0, w0])
    p2 = d.primitive(verts, faces2, [j0, j1], [w0, w0])
    p2["attributes"] = p1["attributes"]  # two primitives sharing one vertex array
    body = d.node(name="body", mesh=d.mesh(p1, p2, name="body_mesh"), skin=d.skin(joints, ibm, skeleton=chest))
    eye_v = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0.0]])
    eyes = d.node(name="eyes", mesh=d.mesh(d.primitive(eye_v, [[0, 1, 2]])), translation=[0, 5.0, 0])
    d.nodes[head]["children"] = [eyes]
    d.scene = [arm, body]
    return d.save(tmp_path / "quirky.glb"), world, joints


def test_reader_accepts_exporter_quirks(tmp_path):
    path, world, joints = quirky_file(tmp_path)
    rig = at.load_rig(path)
    assert rig.skeleton.names == ("hips", "chest", "head")
    np.testing.assert_array_equal(rig.skeleton.parents, [-1, 0, 1])
    # world transforms of joints include the Armature and the helper group
    np.testing.assert_allclose(rig.skeleton.rest_world(), world[joints], atol=1e-9)
    np.testing.assert_allclose(rig.skeleton.bind_world, world[joints], atol=1e-5)
    assert rig.mesh.parts == ("body", "eyes")
    assert rig.mesh.n_vertices == 13 and rig.mesh.n_faces == 6
    np.testing.assert_allclose(rig.skin.to_dense()[:10], np.tile([0.375, 0.375, 0.25], (10, 1)), atol=1e-6)
    # the rigid eyes follow 'head' with weight 1, placed at their world position
    np.testing.assert_allclose(rig.skin.to_dense()[10:], [[0, 0, 1]] * 3)
    eye_world = world[joints[2]] @ np.array([[1, 0, 0, 0], [0, 1, 0, 5.0], [0, 0, 1, 0], [0, 0, 0, 1]])
    eye_local = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0.0]])
    np.testing.assert_allclose(rig.mesh.vertices[10:], eye_local @ eye_world[:3, :3].T + eye_world[:3, 3], atol=1e-5)
    # round trip of such a file is exact at the world level
    at.save_rig(tmp_path / "rt.glb", rig)
    assert_rigs_equal(rig, at.load_rig(tmp_path / "rt.glb"))


def test_pieces_of_one_name_become_parts_named_as_blender_names_duplicates(tmp_path):
    # the first keeps its name, the next are .001, .002 (the FBX and USD readers share the rule)
    d = Doc()
    v = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0.0]])
    d.scene = [d.node(name="body", mesh=d.mesh(d.primitive(v + [k, 0, 0], [[0, 1, 2]]))) for k in range(3)]
    assert read_gltf(d.save(tmp_path / "three.glb")).parts == ("body", "body.001", "body.002")
    # a suffixed name already taken is skipped, as Blender does
    assert unique_names(["body", "body.001", "body", "body"]) == ["body", "body.001", "body.002", "body.003"]
    assert unique_names(["body", "body", "body.001"]) == ["body", "body.001", "body.001.001"]


def test_unnormalised_weights_are_normalised_with_a_warning(tmp_path, caplog):
    path, _, _ = quirky_file(tmp_path, unnormalised=True)
    with caplog.at_level(logging.WARNING, logger="asetransfer"):
        rig = at.load_rig(path)
    assert "do not sum to 1" in caplog.text
    np.testing.assert_allclose(rig.skin.weights.sum(axis=1), 1.0, atol=1e-9)


def test_static_glb_and_normalised_ubyte_weights_and_strips(tmp_path):
    d = Doc()
    # a quad as a triangle strip, weights as normalised unsigned bytes
    v = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0.0]])
    j = d.node(name="j", translation=[0, 0, 0.0])
    prim = d.primitive(v, None, mode=5)
    prim["attributes"]["JOINTS_0"] = d.add(np.zeros((4, 4), np.uint8), UBYTE, "VEC4")
    prim["attributes"]["WEIGHTS_0"] = d.add(np.tile([255, 0, 0, 0], (4, 1)).astype(np.uint8), UBYTE, "VEC4",
                                            normalized=True)
    node = d.node(name="quad", mesh=d.mesh(prim), skin=d.skin([j]))
    d.scene = [j, node]
    path = d.save(tmp_path / "strip.glb")
    rig = read_gltf(path)
    assert isinstance(rig, Rig)
    assert rig.mesh.n_faces == 2
    np.testing.assert_allclose(rig.skin.weights[:, 0], 1.0)
    # static file: node transforms applied, returns a Mesh
    d2 = Doc()
    n = d2.node(name="m", mesh=d2.mesh(d2.primitive(v, [0, 1, 2, 2, 1, 3])), translation=[5.0, 0, 0],
                scale=[2.0, 2.0, 2.0])
    d2.scene = [n]
    m = read_gltf(d2.save(tmp_path / "static.glb"))
    assert isinstance(m, Mesh)
    np.testing.assert_allclose(m.vertices, v * 2 + [5, 0, 0])


@pytest.mark.parametrize("mutate, message", [
    (lambda doc: doc["skins"][0].update(joints=[0, 99]), "joint node 99"),
    (lambda doc: doc["nodes"][0].update(children=[1]) or doc["nodes"][1].update(children=[0]), "two parents|cycle"),
    (lambda doc: doc["nodes"][0].update(translation=[float("nan"), 0, 0]), "NaN"),
    (lambda doc: doc.pop("skins") and doc["nodes"][-1].pop("skin"), "no skin"),
    (lambda doc: doc["meshes"][0]["primitives"][0].update(indices=999), "accessor 999"),
    (lambda doc: doc.update(extensionsRequired=["EXT_mesh_gpu_instancing"]), "EXT_mesh_gpu_instancing"),
])
def test_broken_documents_give_input_errors(tmp_path, mutate, message):
    rig = tube_rig()
    from asetransfer.io.gltf_write import rig_to_document
    from asetransfer.io.glb import pack_glb
    doc, blob = rig_to_document(rig)
    mutate(doc)
    path = tmp_path / "bad.glb"
    path.write_bytes(pack_glb(doc, blob) if "nan" not in message.lower() else
                     pack_glb_allow_nan(doc, blob))
    with pytest.raises(InputError, match=f"(?i){message}") as e:
        at.load_rig(path)
    assert str(path) in str(e.value) and "\n" not in str(e.value)


def pack_glb_allow_nan(doc, blob):
    import json
    import struct
    js = json.dumps(doc).encode()
    js += b" " * (-len(js) % 4)
    blob = blob + b"\0" * (-len(blob) % 4)
    body = struct.pack("<II", len(js), 0x4E4F534A) + js + struct.pack("<II", len(blob), 0x004E4942) + blob
    return struct.pack("<4sII", b"glTF", 2, 12 + len(body)) + body


def test_singular_inverse_bind_matrix_and_negative_weights(tmp_path):
    d = Doc()
    j = d.node(name="j")
    v = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0.0]])
    node = d.node(name="m", mesh=d.mesh(d.primitive(v, [0, 1, 2], [np.zeros((3, 4))], [np.tile([1, 0, 0, 0], (3, 1))])),
                  skin=d.skin([j], ibm=np.zeros((1, 4, 4))))
    d.scene = [j, node]
    with pytest.raises(InputError, match="singular"):
        at.load_rig(d.save(tmp_path / "sing.glb"))
    d = Doc()
    j = d.node(name="j")
    node = d.node(name="m", mesh=d.mesh(d.primitive(v, [0, 1, 2], [np.zeros((3, 4))], [np.tile([1.5, -0.5, 0, 0], (3, 1))])),
                  skin=d.skin([j]))
    d.scene = [j, node]
    with pytest.raises(InputError, match="negative"):
        at.load_rig(d.save(tmp_path / "neg.glb"))
