"""FBX output (io/fbx_write.py): the rig, its skin, blend shapes, units and axes, read back
by our FBX reader; Blender's own importer is checked in tests/test_blender.py."""
from __future__ import annotations

import numpy as np
import pytest

import asetransfer as at
from asetransfer.io.fbx_binary import parse_fbx
from asetransfer.io.fbx_scene import FbxScene, fbx_axis_system
from asetransfer.job import transfer_files
from conftest import FIXTURES
from shaped_source import shapes_of_fixture


def _same_rig(a, b, tol, face_order=True):
    """Joints by name (bind and rest), mesh and weights equal within ``tol`` of the body's size
    (the triangles in another order when not ``face_order``: grouped by material)."""
    order = [b.skeleton.names.index(n) for n in a.skeleton.names]
    size = np.ptp(a.mesh.vertices, axis=0).max()
    np.testing.assert_allclose(b.skeleton.bind_world[order], a.skeleton.bind_world, atol=tol * size)
    np.testing.assert_allclose(b.skeleton.rest_world()[order], a.skeleton.rest_world(), atol=tol * size)
    parent = lambda rig, j: rig.skeleton.names[rig.skeleton.parents[j]] if rig.skeleton.parents[j] >= 0 else None
    assert [parent(a, j) for j in range(a.skeleton.n_joints)] == [parent(b, j) for j in order]
    np.testing.assert_allclose(b.mesh.vertices, a.mesh.vertices, atol=tol * size)
    if face_order:
        np.testing.assert_array_equal(b.mesh.faces, a.mesh.faces)
    else:
        def rows(faces):
            return np.unique(np.sort(faces, axis=1), axis=0)
        np.testing.assert_array_equal(rows(b.mesh.faces), rows(a.mesh.faces))
    np.testing.assert_allclose(b.skin.to_dense()[:, order], a.skin.to_dense(), atol=1e-7)


@pytest.fixture(scope="module")
def heavy(tmp_path_factory):
    """The heavy fixture rigged into .fbx and .glb (one transfer: the rig is the same)."""
    folder = tmp_path_factory.mktemp("fbx_out")
    done = transfer_files(FIXTURES / "source.glb", FIXTURES / "target_heavy.ply", folder / "heavy.fbx",
                          FIXTURES / "markers_heavy.json")
    return done.result.rig, folder / "heavy.fbx"


def test_the_fbx_reads_back_as_the_rig_written(heavy, tmp_path):
    rig, path = heavy
    _same_rig(rig, at.load_rig(path), 1e-9)
    assert FbxScene(path).creator.startswith("asetransfer")
    at.save_rig(tmp_path / "again.fbx", rig)
    assert (tmp_path / "again.fbx").read_bytes() == path.read_bytes()  # same rig, same bytes


def test_clusters_bind_pose_and_influences_as_dcc_tools_expect(heavy):
    rig, path = heavy
    version, nodes = parse_fbx(path, path.read_bytes())
    assert version == 7400
    objects = next(n for n in nodes if n.name == "Objects")
    clusters = [n for n in objects.children if n.name == "Deformer" and n.props[2] == "Cluster"]
    weighted = np.flatnonzero(np.asarray(rig.skin.to_sparse().sum(axis=0)).ravel() > 0)
    assert len(clusters) == len(weighted)
    for cluster in clusters:  # Transform relative to the link: the mesh (at the origin) is link @ Transform
        link = cluster.child("TransformLink").props[0].reshape(4, 4).T
        transform = cluster.child("Transform").props[0].reshape(4, 4).T
        np.testing.assert_allclose(link @ transform, np.eye(4), atol=1e-9)
    pose, = [n for n in objects.children if n.name == "Pose"]
    assert pose.child("NbPoseNodes").props[0] == rig.skeleton.n_joints + 1  # every joint and the mesh
    assert max(len(c.child("Indexes").props[0]) for c in clusters) <= rig.mesh.n_vertices


def test_blend_shapes_ride_along_as_blendshape_channels(fixture_source, tmp_path):
    offsets = shapes_of_fixture(fixture_source)
    shapes = [at.MorphTarget(name, np.flatnonzero(np.abs(d).max(axis=1) > 0), d[np.abs(d).max(axis=1) > 0],
                             weight=0.25 * k) for k, (name, d) in enumerate(offsets.items())]
    rig = at.Rig(fixture_source.mesh, fixture_source.skeleton, fixture_source.skin, shapes)
    at.save_rig(tmp_path / "shaped.fbx", rig)
    back = at.load_rig(tmp_path / "shaped.fbx")
    assert [s.name for s in back.shapes] == list(offsets)  # the eyes' shape on both eye meshes: one shape
    for shape in back.shapes:
        np.testing.assert_allclose(shape.dense(rig.mesh.n_vertices), offsets[shape.name], atol=1e-12)
    assert [s.weight for s in back.shapes] == [0.0, 0.25, 0.5]


def test_an_fbx_target_keeps_its_own_blend_shapes_as_morph_targets(fixture_source, tmp_path):
    """A target's own blend shapes (an FBX rigged or not) ride in its look: the rigged glTF has
    them as morph targets, with their names, offsets and default weights."""
    from asetransfer.io.glb import Accessors, read_document

    offsets = shapes_of_fixture(fixture_source)
    shapes = [at.MorphTarget(name, np.flatnonzero(np.abs(d).max(axis=1) > 0), d[np.abs(d).max(axis=1) > 0],
                             weight=0.25 * k) for k, (name, d) in enumerate(offsets.items())]
    at.save_rig(tmp_path / "shaped.fbx", at.Rig(fixture_source.mesh, fixture_source.skeleton, fixture_source.skin,
                                                shapes))
    transfer_files(FIXTURES / "source.glb", tmp_path / "shaped.fbx", tmp_path / "rigged.glb")
    doc, buffers = read_document(tmp_path / "rigged.glb")
    rig = at.load_rig(tmp_path / "rigged.glb")
    found = {}
    for node in (n for n in doc["nodes"] if "mesh" in n):
        mesh = doc["meshes"][node["mesh"]]
        names, prim = mesh.get("extras", {}).get("targetNames", []), mesh["primitives"][0]
        for name, target, weight in zip(names, prim.get("targets", []), mesh.get("weights", [])):
            found.setdefault(name, []).append(weight)
            moved = Accessors(tmp_path / "rigged.glb", doc, buffers).read(target["POSITION"])
            assert np.abs(moved).max() > 0
    assert set(offsets) <= set(found)  # every own shape, on the parts it moves
    assert {name: max(w) for name, w in found.items() if name in offsets} == {n: 0.25 * k for k, n in enumerate(offsets)}
    assert [s.name for s in rig.shapes][:len(offsets)] == list(offsets)  # read back as the rig's shapes
    for shape in rig.shapes[:len(offsets)]:
        np.testing.assert_allclose(shape.dense(rig.mesh.n_vertices), offsets[shape.name], atol=1e-6)


def test_units_and_axis_system_follow_an_fbx_target(tmp_path):
    target = FIXTURES / "target_heavy_cm_zup.fbx"
    done = transfer_files(FIXTURES / "source.fbx", target, tmp_path / "rigged.fbx")
    assert fbx_axis_system(tmp_path / "rigged.fbx") == fbx_axis_system(target)
    assert at.io.file_frame(tmp_path / "rigged.fbx") == at.io.file_frame(target)  # centimetres, Z up
    _same_rig(done.result.rig, at.load_rig(tmp_path / "rigged.fbx"), 1e-9)
    # a glTF or PLY target (no axis system of its own): declared as Blender declares Y up, metres
    done = transfer_files(FIXTURES / "source.glb", FIXTURES / "target_tall.obj", tmp_path / "tall.fbx",
                          FIXTURES / "markers_tall.json")
    assert fbx_axis_system(tmp_path / "tall.fbx") == (1, 1, 2, 1, 0, 1)


def _look_rows(mesh) -> np.ndarray:
    """Every glTF vertex of a mesh's look as (mesh vertex, uv, normal) rows, sorted."""
    from asetransfer.io.glb import Accessors

    look = mesh.look
    acc = Accessors(look.path, look.document, look.buffers)
    rows = []
    for piece in look.pieces:
        attrs = look.document["meshes"][piece.mesh]["primitives"][piece.primitives[0]]["attributes"]
        rows.append(np.concatenate([piece.vertices[:, None], acc.read(attrs["TEXCOORD_0"]),
                                    acc.read(attrs["NORMAL"])], axis=1))
    rows = np.concatenate(rows)
    return rows[np.lexsort(rows.T[::-1])]


def test_an_fbx_target_keeps_its_uvs_normals_materials_and_texture_in_fbx(tmp_path):
    target = FIXTURES / "target_heavy_textured.fbx"
    done = transfer_files(FIXTURES / "source.glb", target, tmp_path / "rigged.fbx", FIXTURES / "markers_heavy.json")
    assert not [w for w in done.report.warnings if "not carried" in w]
    given, made = at.load_mesh(target), at.load_mesh(tmp_path / "rigged.fbx")
    np.testing.assert_allclose(_look_rows(made), _look_rows(given), atol=1e-6)  # every corner's UV and normal
    assert [m["name"] for m in made.look.document["materials"]] == ["skin", "hair"]
    images = made.look.document["images"]
    assert len(images) == 1 and made.look.pieces[0].primitives == given.look.pieces[0].primitives
    _same_rig(done.result.rig, at.load_rig(tmp_path / "rigged.fbx"), 1e-9, face_order=False)


def test_a_gltf_targets_colours_uvs_and_materials_reach_the_fbx(tmp_path):
    from look_builder import Look, write_gltf

    body = at.load_mesh(FIXTURES / "target_heavy.ply")
    target = write_gltf(tmp_path / "character.glb", Look(body.vertices, body.faces))  # two UV sets, colours, ...
    done = transfer_files(FIXTURES / "source.glb", target, tmp_path / "rigged.fbx", FIXTURES / "markers_heavy.json")
    line, = [w for w in done.report.warnings if "not carried" in w]
    assert "COLOR" not in line and "TEXCOORD" not in line  # both colour sets and both UV sets go
    _, nodes = parse_fbx(tmp_path / "rigged.fbx", (tmp_path / "rigged.fbx").read_bytes())
    geometry = next(n for n in next(n for n in nodes if n.name == "Objects").children if n.name == "Geometry")
    layers = sorted(e.props[0] for e in geometry.all("LayerElementUV"))
    assert layers == [0, 1] and [n.props[0] for n in geometry.all("Layer")] == [0, 1]
    assert sorted(e.props[0] for e in geometry.all("LayerElementColor")) == [0, 1]
    given, made = at.load_mesh(target).look, at.load_mesh(tmp_path / "rigged.fbx").look
    from asetransfer.io.glb import Accessors

    def rows(look, attribute):
        """(vertex, values) rows of ``attribute`` over every piece, distinct, sorted."""
        acc = Accessors(look.path, look.document, look.buffers)
        out = []
        for piece in look.pieces:
            attrs = look.document["meshes"][piece.mesh]["primitives"][piece.primitives[0]]["attributes"]
            values = acc.read(attrs[attribute])
            if attribute.startswith("COLOR") and values.shape[1] == 3:
                values = np.concatenate([values, np.ones((len(values), 1))], axis=1)
            out.append(np.concatenate([piece.vertices[:, None], values], axis=1))
        return np.unique(np.round(np.concatenate(out), 5), axis=0)

    # read back as a target: both colour sets and both UV sets, every corner's value
    for attribute in ("COLOR_0", "COLOR_1", "TEXCOORD_0", "TEXCOORD_1"):
        np.testing.assert_allclose(rows(made, attribute), rows(given, attribute), atol=1e-5, err_msg=attribute)
    assert sorted(m["name"] for m in made.document["materials"]) == sorted(
        m["name"] for m in given.document["materials"])
    # roughness, metallic and emissive colour ride along as Phong (Blender's convention) and read back
    def shading(look):
        return {m["name"]: (m["pbrMetallicRoughness"].get("roughnessFactor", 1.0),
                            m["pbrMetallicRoughness"].get("metallicFactor", 1.0), m.get("emissiveFactor", [0.0] * 3))
                for m in look.document["materials"]}
    for name, (roughness, metallic, emissive) in shading(given).items():
        back = shading(made)[name]
        assert back[0] == pytest.approx(roughness, abs=1e-6) and back[1] == pytest.approx(metallic, abs=1e-6), name
        np.testing.assert_allclose(back[2], emissive, atol=1e-6)


@pytest.mark.parametrize("roughness", (0.0, 0.25, 0.5, 0.9, 1.0))
def test_roughness_and_phong_shininess_are_each_others_inverse(roughness):
    from asetransfer.io.look_parts import phong_of, roughness_of

    phong = phong_of(roughness, 0.3)
    assert roughness_of(phong["Shininess"]) == pytest.approx(roughness, abs=1e-12)
    assert phong["ReflectionFactor"] == 0.3 and phong["Shininess"] == phong["ShininessExponent"]
