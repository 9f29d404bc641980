"""What goes in comes out: a target's look (materials, textures, images, UV sets, colours,
tangents, morph targets, nodes, camera, light) survives the transfer into a glTF output,
from glTF, OBJ + MTL + PNG and PLY targets; what an output cannot carry is named in one
warning line; the outputs pass the Khronos glTF validator when it is installed."""
from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from asetransfer.io import load_mesh, load_rig
from asetransfer.io.glb import Accessors, read_document
from asetransfer.job import transfer_files

from conftest import FIXTURES
from look_builder import TARGET_NAMES, TARGET_WEIGHTS, Look, write_gltf, write_obj, write_ply

SOURCE, MARKERS = FIXTURES / "source.glb", FIXTURES / "markers_heavy.json"


def unit(v):
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def look():
    body = load_mesh(FIXTURES / "target_heavy.ply")
    return Look(body.vertices, body.faces)


@pytest.fixture(scope="module")
def placed(look, tmp_path_factory):
    """The character in centimetres, Z up, under a parent node that turns and scales it into
    the scene (its world positions are the fixture's), with a LINES primitive; rigged to .glb."""
    folder = tmp_path_factory.mktemp("placed")
    world = np.eye(4)
    world[:3, :3] = Rotation.from_euler("x", -90, degrees=True).as_matrix() * 0.01
    world[:3, 3] = [0.5, 0.0, 0.0]
    target = write_gltf(folder / "character.glb", look, world, lines=True)
    done = transfer_files(SOURCE, target, folder / "rigged.glb", MARKERS)
    return target, folder / "rigged.glb", done


@pytest.fixture(scope="module")
def in_place(look, tmp_path_factory):
    """The character as a .gltf with its buffer and images in files beside it, already in the
    scene's space (identity parent); rigged to .gltf."""
    folder = tmp_path_factory.mktemp("in_place")
    target = write_gltf(folder / "character.gltf", look)
    done = transfer_files(SOURCE, target, folder / "rigged.gltf", MARKERS)
    return target, folder / "rigged.gltf", done


def document(path):
    doc, buffers = read_document(path)
    return doc, Accessors(path, doc, buffers), buffers


def image_bytes(path) -> list:
    """Each image's bytes, wherever the file keeps it (buffer view, data URI, file beside it)."""
    doc, acc, buffers = document(path)
    out = []
    for image in doc.get("images", []):
        if "bufferView" in image:
            view = doc["bufferViews"][image["bufferView"]]
            out.append(bytes(buffers[view["buffer"]][view.get("byteOffset", 0):][:view["byteLength"]]))
        elif image["uri"].startswith("data:"):
            out.append(base64.b64decode(image["uri"].split(",", 1)[1]))
        else:
            out.append((path.parent / image["uri"]).read_bytes())
    return out


# ---------------------------------------------------------------------------- glTF targets
@pytest.mark.parametrize("case", ["placed", "in_place"])
def test_materials_textures_images_nodes_camera_and_light_survive(case, request):
    target, output, _ = request.getfixturevalue(case)
    given, _, _ = document(target)
    made, _, _ = document(output)
    for key in ("materials", "textures", "samplers", "cameras", "extensions", "extensionsUsed"):
        assert made[key] == given[key], key
    assert [{k: v for k, v in im.items() if k == "name"} for im in made["images"]] == \
        [{"name": im["name"]} for im in given["images"]]
    assert image_bytes(output) == image_bytes(target)  # same bytes, embedded
    assert all("bufferView" in im for im in made["images"]) if output.suffix == ".glb" else \
        all(im["uri"].startswith("data:image/png;base64,") for im in made["images"])
    assert made["asset"]["copyright"] == "CC0"
    for i, node in enumerate(given["nodes"]):  # names, hierarchy, transforms, extras; the body now skinned
        assert {k: v for k, v in made["nodes"][i].items() if k != "skin"} == node
    assert made["nodes"][1]["skin"] == 0 and len(made["skins"]) == 1
    joints = made["skins"][0]["joints"]
    assert joints == list(range(len(given["nodes"]), len(made["nodes"])))
    assert made["scenes"][0]["nodes"] == given["scenes"][0]["nodes"] + [made["skins"][0]["skeleton"]]
    mesh, before = made["meshes"][0], given["meshes"][0]
    assert mesh["extras"]["targetNames"] == TARGET_NAMES and mesh["weights"] == TARGET_WEIGHTS
    assert [p["material"] for p in mesh["primitives"]] == [0, 1]


@pytest.mark.parametrize("case", ["placed", "in_place"])
def test_every_attribute_and_morph_target_survives(case, request, look):
    """UVs and colours are the target's own arrays; positions, normals, tangents and morph
    offsets are the scene's (the parent's turn and scale applied once, as it was shown)."""
    target, output, _ = request.getfixturevalue(case)
    given, given_acc, _ = document(target)
    made, acc, _ = document(output)
    for k, piece in enumerate(look.pieces):
        ids = piece["ids"]
        old, new = given["meshes"][0]["primitives"][k], made["meshes"][0]["primitives"][k]
        assert set(new["attributes"]) == set(old["attributes"]) | {"JOINTS_0", "WEIGHTS_0"}
        for name in ("TEXCOORD_0", "TEXCOORD_1", "COLOR_0", "COLOR_1"):
            assert new["attributes"][name] == old["attributes"][name]  # the same accessor, untouched
        if case == "in_place":  # nothing to move: every array is the target's own
            for name in ("POSITION", "NORMAL", "TANGENT"):
                assert new["attributes"][name] == old["attributes"][name]
            assert new["targets"] == old["targets"] and new["indices"] == old["indices"]
        np.testing.assert_allclose(acc.read(new["attributes"]["POSITION"]), look.vertices[ids], atol=2e-6)
        np.testing.assert_allclose(acc.read(new["attributes"]["NORMAL"]), look.normals[ids], atol=2e-6)
        np.testing.assert_allclose(acc.read(new["attributes"]["TANGENT"]), look.tangent[ids], atol=2e-6)
        smile, blink = new["targets"]
        assert set(smile) == {"POSITION", "NORMAL"} and set(blink) == {"POSITION"}
        np.testing.assert_allclose(acc.read(smile["POSITION"]), look.smile[ids], atol=1e-7)
        np.testing.assert_allclose(acc.read(blink["POSITION"]), look.blink[ids], atol=1e-7)
        smile_normals = unit(look.normals[ids] + look.smile_normal[ids]) - look.normals[ids]
        np.testing.assert_allclose(acc.read(smile["NORMAL"]), smile_normals, atol=2e-6)
        np.testing.assert_array_equal(acc.read(new["indices"]), given_acc.read(old["indices"]))


def test_the_rig_reads_back_as_transferred_with_one_set_of_four_influences(placed):
    _, output, done = placed
    back, rig = load_rig(output), done.result.rig
    np.testing.assert_allclose(back.mesh.vertices, rig.mesh.vertices, atol=2e-6)
    assert back.skeleton.names == rig.skeleton.names
    np.testing.assert_allclose(back.skeleton.bind_world, rig.skeleton.bind_world, atol=1e-5)
    np.testing.assert_allclose(back.skin.to_dense(), rig.skin.to_dense(), atol=1e-6)
    made, _, _ = document(output)
    assert not any("JOINTS_1" in p["attributes"] for p in made["meshes"][0]["primitives"])
    assert done.report.weights.influence_limit == 4  # the source uses at most 4


def test_what_cannot_be_carried_is_named_in_one_warning(placed):
    _, output, done = placed
    lines = [w for w in done.report.warnings if "not carried" in w]
    assert len(lines) == 1 and "mesh 0 primitive 2 (mode 1" in lines[0]
    made, _, _ = document(output)
    assert len(made["meshes"][0]["primitives"]) == 2  # a skinned mesh's primitives must all have joints


def test_a_skinned_target_has_its_skin_replaced_and_said_so(placed, tmp_path):
    _, rigged, _ = placed
    done = transfer_files(SOURCE, rigged, tmp_path / "again.glb", MARKERS)
    assert any("skin (65 joints) is replaced" in w for w in done.report.warnings)
    given, _, _ = document(rigged)
    made, _, _ = document(tmp_path / "again.glb")
    assert len(made["skins"]) == 1 and made["nodes"][1]["skin"] == 0
    assert made["nodes"][:len(given["nodes"])] == given["nodes"]  # the old joints stay, as plain nodes
    assert made["materials"] == given["materials"] and image_bytes(tmp_path / "again.glb") == image_bytes(rigged)
    np.testing.assert_allclose(load_rig(tmp_path / "again.glb").mesh.vertices, load_rig(rigged).mesh.vertices,
                               atol=1e-6)


@pytest.mark.parametrize("ext", [".usda", ".usdz"])
def test_usd_holds_the_look_it_can_and_names_the_rest(placed, tmp_path, ext):
    pytest.importorskip("pxr")
    from pxr import Usd, UsdGeom, UsdShade

    from asetransfer.io.glb import Accessors
    from test_usd import validation_errors

    target, _, _ = placed
    out = tmp_path / f"rigged{ext}"
    done = transfer_files(SOURCE, target, out, MARKERS)
    line, = [w for w in done.report.warnings if "not carried" in w]
    for what in ("TANGENT", "2 morph targets", "3 other nodes", "normalTexture",
                 "metallicRoughnessTexture", "KHR_materials_sheen"):
        assert what in line, what
    for carried in ("TEXCOORD", "NORMAL ", "COLOR", "materials;"):
        assert carried not in line, carried
    assert validation_errors(out) == []
    stage = Usd.Stage.Open(str(out))
    materials = {p.GetName(): UsdShade.Material(p) for p in stage.Traverse() if p.IsA(UsdShade.Material)}
    assert sorted(materials) == ["cloth", "skin"]
    texture = stage.GetPrimAtPath(materials["skin"].GetPath().AppendChild("diffuseTexture"))
    asset = UsdShade.Shader(texture).GetInput("file").Get()
    assert asset.path == "./rigged.textures/image0.png" and asset.resolvedPath
    if ext == ".usdz":  # in the package
        import zipfile

        with zipfile.ZipFile(out) as package:
            assert package.read("rigged.textures/image0.png")[:4] == b"\x89PNG"
    else:  # beside the layer
        assert (tmp_path / "rigged.textures" / "image0.png").read_bytes()[:4] == b"\x89PNG"
    # every corner's uv (USD's t up) as the target's first UV set
    given = load_mesh(target).look
    acc = Accessors(given.path, given.document, given.buffers)
    mesh = [UsdGeom.Mesh(p) for p in stage.Traverse() if p.IsA(UsdGeom.Mesh)][0]  # the first piece's
    st = UsdGeom.PrimvarsAPI(mesh.GetPrim()).GetPrimvar("st")
    assert st.GetInterpolation() == "faceVarying"
    corner_uv = {}
    piece = given.pieces[0]
    for k in piece.primitives:
        prim = given.document["meshes"][piece.mesh]["primitives"][k]
        if prim.get("mode", 4) == 4:
            for v in acc.read(prim["indices"]).ravel():
                corner_uv.setdefault(int(piece.vertices[v]), []).append(acc.read(prim["attributes"]["TEXCOORD_0"])[v])
    points = np.array(mesh.GetFaceVertexIndicesAttr().Get())
    ids = np.unique(np.concatenate([[piece.vertices[v] for v in acc.read(p["indices"]).ravel()]
                                    for p in given.document["meshes"][piece.mesh]["primitives"]
                                    if p.get("mode", 4) == 4]))
    assert UsdGeom.PrimvarsAPI(mesh.GetPrim()).GetPrimvar("st1").GetInterpolation() == "faceVarying"  # TEXCOORD_1
    colours = UsdGeom.PrimvarsAPI(mesh.GetPrim()).GetPrimvar("displayColor")
    assert colours.GetInterpolation() == "faceVarying" and len(colours.Get()) == len(st.Get())
    # COLOR_1 as displayColor1 with its alpha as displayOpacity1 (translucent below the middle)
    second = UsdGeom.PrimvarsAPI(mesh.GetPrim()).GetPrimvar("displayColor1")
    assert second.GetInterpolation() == "faceVarying" and len(second.Get()) == len(st.Get())
    opacity = np.concatenate([np.array(v.Get()) for v in (UsdGeom.PrimvarsAPI(p).GetPrimvar("displayOpacity1")
                                                          for p in stage.Traverse() if p.IsA(UsdGeom.Mesh)) if v])
    assert set(np.round(opacity, 3)) <= {0.5, 1.0} and (opacity == 0.5).any()
    uv = np.array(st.Get()) * [1, -1] + [0, 1]
    assert all(np.abs(np.array(corner_uv[int(ids[c])]) - u).max(axis=1).min() < 1e-6 for c, u in zip(points, uv))
    bound = set()  # each mesh bound to its material, or each of its GeomSubsets to one
    for prim in (p for p in stage.Traverse() if p.IsA(UsdGeom.Mesh)):
        holders = [s.GetPrim() for s in UsdGeom.Subset.GetGeomSubsets(UsdGeom.Mesh(prim))] or [prim]
        bound |= {UsdShade.MaterialBindingAPI(h).GetDirectBinding().GetMaterialPath().name for h in holders}
    assert bound == {"cloth", "skin"}


# ---------------------------------------------------------------------------- OBJ and PLY targets
@pytest.fixture(scope="module")
def obj_rigged(look, tmp_path_factory):
    folder = tmp_path_factory.mktemp("obj")
    target = write_obj(folder / "character.obj", look)
    return target, transfer_files(SOURCE, target, folder / "rigged.glb", MARKERS), folder / "rigged.glb"


def test_obj_uvs_normals_and_mtl_materials_with_their_images_become_gltf(obj_rigged, look):
    target, done, output = obj_rigged
    made, acc, _ = document(output)
    skin, cloth = made["materials"]
    assert skin["name"] == "skin" and cloth["name"] == "cloth"
    assert skin["pbrMetallicRoughness"]["baseColorTexture"] == {"index": 0}
    assert skin["normalTexture"] == {"index": 1, "scale": 0.8}
    assert cloth["pbrMetallicRoughness"]["baseColorFactor"] == [0.2, 0.3, 0.8, 0.5] and cloth["alphaMode"] == "BLEND"
    assert image_bytes(output) == look.images[:2]
    assert [made["textures"][t]["source"] for t in (0, 1)] == [0, 1]
    positions, uv, normals = [], [], []
    for k, prim in enumerate(made["meshes"][0]["primitives"]):
        assert prim["material"] == k and {"POSITION", "NORMAL", "TEXCOORD_0", "JOINTS_0"} <= set(prim["attributes"])
    prim = made["meshes"][0]["primitives"][0]
    positions, uv = acc.read(prim["attributes"]["POSITION"]), acc.read(prim["attributes"]["TEXCOORD_0"])
    normals = acc.read(prim["attributes"]["NORMAL"])
    # each glTF vertex is an OBJ corner: find it in the body by its position
    nearest = np.argmin(((positions[:50, None] - look.vertices[None]) ** 2).sum(axis=2), axis=1)
    np.testing.assert_allclose(uv[:50], look.uv0[nearest] * [1, -1] + [0, 1], atol=2e-6)  # glTF's v is down
    np.testing.assert_allclose(normals[:50], look.normals[nearest], atol=2e-6)
    line, = [w for w in done.report.warnings if "not carried" in w]
    assert "MTL Ks Ns illum" in line


def test_obj_without_a_look_is_read_as_before():
    assert load_mesh(FIXTURES / "target_tall.obj").look is None


def test_ply_normals_uvs_and_colours_survive(look, tmp_path):
    target = write_ply(tmp_path / "character.ply", look)
    done = transfer_files(SOURCE, target, tmp_path / "rigged.gltf", MARKERS)
    made, acc, _ = document(tmp_path / "rigged.gltf")
    prim, = made["meshes"][0]["primitives"]
    np.testing.assert_allclose(acc.read(prim["attributes"]["POSITION"]), look.vertices, atol=1e-6)
    np.testing.assert_allclose(acc.read(prim["attributes"]["NORMAL"]), look.normals, atol=1e-6)
    np.testing.assert_allclose(acc.read(prim["attributes"]["TEXCOORD_0"]), look.uv0 * [1, -1] + [0, 1], atol=1e-6)
    np.testing.assert_array_equal(np.round(acc.read(prim["attributes"]["COLOR_0"]) * 255),
                                  np.round(look.colour * 255))
    line, = [w for w in done.report.warnings if "not carried" in w]
    assert "PLY vertex properties quality" in line


# ---------------------------------------------------------------------------- the Khronos validator
VALIDATE = """
const fs = require('fs'), path = require('path'), validator = require('gltf-validator');
const file = process.argv[1];
validator.validateBytes(new Uint8Array(fs.readFileSync(file)), {uri: path.basename(file),
  externalResourceFunction: (uri) => new Promise((ok, fail) => {
    try { ok(new Uint8Array(fs.readFileSync(path.join(path.dirname(file), decodeURIComponent(uri))))); }
    catch (e) { fail(e.toString()); } })})
  .then(r => console.log(JSON.stringify(r.issues))).catch(e => { console.error(e); process.exit(1); });
"""


def khronos_validator(path):
    """The Khronos glTF validator's issues for ``path`` (npm package ``gltf-validator``, found by
    node through NODE_PATH or a global install); skips the test when node or it is absent."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    env = dict(os.environ)
    npm = shutil.which("npm")
    if npm and "NODE_PATH" not in env:
        root = subprocess.run([npm, "root", "-g"], capture_output=True, text=True).stdout.strip()
        env["NODE_PATH"] = root
    probe = subprocess.run([node, "-e", "require('gltf-validator')"], env=env, capture_output=True)
    if probe.returncode:
        pytest.skip("the npm package gltf-validator is not installed (npm install -g gltf-validator)")
    r = subprocess.run([node, "-e", VALIDATE, str(path)], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.parametrize("case", ["placed", "in_place", "obj_rigged"])
def test_outputs_pass_the_khronos_validator(case, request):
    value = request.getfixturevalue(case)
    issues = khronos_validator(value[2] if case == "obj_rigged" else value[1])
    errors = [m for m in issues["messages"] if m["severity"] == 0]
    assert issues["numErrors"] == 0, errors


# ---------------------------------------------------------------------------- the writer alone
def outward_share(vertices, faces) -> float:
    """Share of the triangles whose normal points away from the axis of a tube along +Y."""
    p = vertices[faces]
    normal = np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])
    away = (p.mean(axis=1) - vertices.mean(axis=0)) * [1.0, 0.0, 1.0]
    return float(((normal * away).sum(axis=1) > 0).mean())


def test_instances_get_their_own_mesh_and_a_mirroring_node_keeps_faces_outward(tmp_path):
    """One mesh placed by two nodes, one of them mirroring (scale -1 in x): each skinned
    instance needs its own positions, and skinning ignores the mirror that reversed the winding."""
    from asetransfer import Rig, SkinWeights
    from asetransfer.io.gltf_over import write_rig_over
    from conftest import tube_rig
    from gltf_builder import Doc

    tube = tube_rig().mesh
    d = Doc()
    m = d.mesh(d.primitive(tube.vertices, tube.faces), name="tube")
    d.scene += [d.node(name="right", mesh=m, translation=[2.0, 0.0, 0.0]),
                d.node(name="left", mesh=m, translation=[-2.0, 0.0, 0.0], scale=[-1.0, 1.0, 1.0])]
    target = load_mesh(d.save(tmp_path / "two.glb"))
    skeleton = tube_rig().skeleton
    skin = SkinWeights(np.zeros((target.n_vertices, 1)), np.ones((target.n_vertices, 1)), skeleton.n_joints)
    write_rig_over(target.look, Rig(target, skeleton, skin), tmp_path / "out.glb")
    made, acc, _ = document(tmp_path / "out.glb")
    assert [made["nodes"][i]["mesh"] for i in (0, 1)] == [0, 1] and len(made["meshes"]) == 2
    np.testing.assert_allclose(load_rig(tmp_path / "out.glb").mesh.vertices, target.vertices, atol=1e-6)
    local = outward_share(tube.vertices, tube.faces)
    for i in (0, 1):
        prim = made["meshes"][i]["primitives"][0]
        positions = acc.read(prim["attributes"]["POSITION"]) - [[2.0, 0.0, 0.0], [-2.0, 0.0, 0.0]][i]
        faces = acc.read(prim["indices"]).reshape(-1, 3).astype(np.int64)
        assert outward_share(positions, faces) == local


def test_obj_corners_naming_missing_uvs_or_normals_are_read_and_named(tmp_path):
    """The mesh reads as before (a vt/vn index is not needed for it); the look says what it lacks."""
    path = tmp_path / "odd.obj"
    path.write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nvt 0 0\nf 1/1 2/x 3/7\nf 2/1/1 4//9 3\n")
    mesh = load_mesh(path)
    assert mesh.n_faces == 2 and "OBJ texture coordinates of faces naming ones the file does not have" in mesh.look.lost
    assert set(mesh.look.document["meshes"][0]["primitives"][0]["attributes"]) == {"POSITION", "TEXCOORD_0"}


# ---------------------------------------------------------------------------- FBX targets
def test_fbx_uvs_normals_and_materials_with_their_texture_become_gltf(tmp_path):
    """fixtures/target_heavy_textured.fbx, written by Blender (fixtures/make_fbx.py): a
    cylindrical UV layer, flat normals, an embedded PNG on one material, a plain colour on
    the faces above the neck."""
    target = FIXTURES / "target_heavy_textured.fbx"
    done = transfer_files(SOURCE, target, tmp_path / "rigged.glb", MARKERS)
    assert not [w for w in done.report.warnings if "not carried" in w]
    made, acc, buffers = document(tmp_path / "rigged.glb")
    assert [m["name"] for m in made["materials"]] == ["skin", "hair"]
    assert made["materials"][0]["pbrMetallicRoughness"]["baseColorTexture"] == {"index": 0}
    np.testing.assert_allclose(made["materials"][1]["pbrMetallicRoughness"]["baseColorFactor"], [0.3, 0.2, 0.1, 1.0],
                               atol=1e-6)
    assert image_bytes(tmp_path / "rigged.glb")[0].startswith(b"\x89PNG")
    prims = made["meshes"][0]["primitives"]
    assert sorted(p["material"] for p in prims) == [0, 1]
    rig = load_rig(tmp_path / "rigged.glb")
    position, uv = acc.read(prims[0]["attributes"]["POSITION"]), acc.read(prims[0]["attributes"]["TEXCOORD_0"])
    # the projection Blender's UVs were made by (Blender's (x, -z, y) is glTF's (x, y, z))
    height = rig.mesh.vertices[:, 1]
    u = np.arctan2(position[:, 0], position[:, 2]) / (2 * np.pi) + 0.5
    v = (position[:, 1] - height.min()) / np.ptp(height)
    np.testing.assert_allclose(uv[:, 0], u, atol=1e-5)
    np.testing.assert_allclose(uv[:, 1], 1.0 - v, atol=1e-5)  # glTF's v runs down
    # flat shading (Blender wrote each corner its face's normal): every corner its own vertex
    normals = acc.read(prims[0]["attributes"]["NORMAL"])
    faces = acc.read(prims[0]["indices"]).reshape(-1, 3)
    tri = position[faces]
    face_normal = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    face_normal /= np.linalg.norm(face_normal, axis=1, keepdims=True)
    assert (np.einsum("ij,ij->i", normals[faces[:, 0]], face_normal) > 0.999).mean() > 0.99


def test_a_mesh_of_two_materials_binds_one_face_subset_to_each_in_usd(tmp_path):
    pytest.importorskip("pxr")
    from pxr import Usd, UsdGeom, UsdShade

    from test_usd import validation_errors

    out = tmp_path / "rigged.usdc"
    transfer_files(SOURCE, FIXTURES / "target_heavy_textured.fbx", out, MARKERS)
    assert validation_errors(out) == []
    stage = Usd.Stage.Open(str(out))
    mesh = next(UsdGeom.Mesh(p) for p in stage.Traverse() if p.IsA(UsdGeom.Mesh))
    subsets = UsdGeom.Subset.GetGeomSubsets(mesh)
    sizes = {UsdShade.MaterialBindingAPI(s.GetPrim()).GetDirectBinding().GetMaterialPath().name:
             len(s.GetIndicesAttr().Get()) for s in subsets}
    assert sizes == {"skin": 15207, "hair": 791}  # the faces above the neck are the hair's
    assert (tmp_path / "rigged.textures" / "image0.png").is_file()


def test_a_rigged_fbx_target_keeps_its_look_and_says_its_skin_is_replaced(tmp_path):
    """fixtures/source.fbx as a target: three meshes with Blender's per-face normals."""
    done = transfer_files(SOURCE, FIXTURES / "source.fbx", tmp_path / "rigged.glb", MARKERS)
    line, = [w for w in done.report.warnings if "not carried" in w]
    assert "own skin" in line
    made, acc, _ = document(tmp_path / "rigged.glb")
    assert [m["name"] for m in made["meshes"]] == ["body", "eye.L", "eye.R"]
    assert all("NORMAL" in p["attributes"] for m in made["meshes"] for p in m["primitives"])
    assert len(made["skins"]) == 1  # the transferred skin alone


def test_a_target_requiring_a_texture_extension_is_rigged_and_keeps_it(look, tmp_path, caplog):
    """KTX2 textures (KHR_texture_basisu, as gltfpack -tc writes them) were refused as an
    extension we cannot decode; only the look uses them: a glTF output carries them as the
    file holds them, an FBX output names the image it cannot take."""
    target = write_gltf(tmp_path / "ktx.gltf", look)
    doc = json.loads(target.read_text())
    ktx2 = b"\xabKTX 20\xbb\r\n\x1a\n" + bytes(range(256)) * 4  # a KTX2 signature and a body
    (tmp_path / "basis.ktx2").write_bytes(ktx2)
    doc["images"].append({"uri": "basis.ktx2", "mimeType": "image/ktx2"})
    doc["textures"][0] = {"extensions": {"KHR_texture_basisu": {"source": len(doc["images"]) - 1}}}
    doc["extensionsUsed"] = doc.get("extensionsUsed", []) + ["KHR_texture_basisu"]
    doc["extensionsRequired"] = ["KHR_texture_basisu"]
    target.write_text(json.dumps(doc))
    transfer_files(SOURCE, target, tmp_path / "rigged.glb", MARKERS)
    out, _, _ = document(tmp_path / "rigged.glb")
    assert out["extensionsRequired"] == ["KHR_texture_basisu"]
    assert out["textures"][0]["extensions"]["KHR_texture_basisu"]["source"] == len(out["images"]) - 1
    assert image_bytes(tmp_path / "rigged.glb")[-1] == ktx2
    caplog.clear()
    transfer_files(SOURCE, target, tmp_path / "rigged.fbx", MARKERS)
    assert any("texture 0 (no image)" in r.getMessage() for r in caplog.records)
