"""Blend shapes: a source's morph targets read, carried onto the target through the map
(stages/shapes.py), written after the target's own, and reported."""
from __future__ import annotations

import json

import numpy as np
import pytest

import asetransfer as at
from asetransfer.config import ShapesConfig
from asetransfer.io.glb import read_document
from asetransfer.job import transfer_files
from asetransfer.model.report import TransferReport
from asetransfer_cli.main import main
from conftest import FIXTURES
from gltf_builder import add_morph_targets, rig_document, save_glb
from shaped_source import BLINK, EYES, JAW, shapes_of_fixture, write_shaped_source

@pytest.fixture(scope="module")
def shaped_source(fixture_source, tmp_path_factory):
    """The fixture source with three morph targets on its meshes (shaped_source.py) and the offsets given."""
    path = tmp_path_factory.mktemp("shapes") / "source_shapes.glb"
    return write_shaped_source(fixture_source, path), shapes_of_fixture(fixture_source)


@pytest.fixture(scope="module")
def heavy(shaped_source):
    """The shaped source transferred onto the heavy fixture with its hand markers."""
    source = at.load_rig(shaped_source[0])
    target = at.load_mesh(FIXTURES / "target_heavy.ply")
    markers = at.load_markers(FIXTURES / "markers_heavy.json", source.mesh, target)
    return source, target, at.transfer(source, target, markers)


def test_the_source_morph_targets_are_read_on_every_piece(shaped_source):
    path, offsets = shaped_source
    rig = at.load_rig(path)
    assert [s.name for s in rig.shapes] == [JAW, BLINK, EYES]
    for shape in rig.shapes:
        np.testing.assert_allclose(shape.dense(rig.mesh.n_vertices), offsets[shape.name], atol=1e-7)
        assert shape.normals is None and shape.weight == 0.0
    eyes = rig.shapes[2]
    assert set(rig.mesh.vertex_part[eyes.vertices]) == {1, 2}  # both eye pieces: one shape


def test_shapes_arrive_by_name_and_move_the_right_region(heavy):
    source, target, result = heavy
    shapes = {s.name: s for s in result.rig.shapes}
    assert list(shapes) == [JAW, BLINK, EYES]
    assert len(shapes[EYES].vertices) == 0  # the target has no eyes: its skin does not follow the eyeballs
    del shapes[EYES]
    head = result.rig.skeleton.bind_world[result.rig.skeleton.names.index("head"), :3, 3]
    neck = result.rig.skeleton.bind_world[result.rig.skeleton.names.index("neck"), :3, 3]
    for name, shape in shapes.items():
        moved = target.vertices[shape.vertices]
        assert (moved[:, 1] > neck[1] - 0.05).all(), name  # the head (the chin hangs to the neck joint)
        assert (moved[:, 2] > head[2]).all(), name  # the face, at the front
    # the blink: a small patch on the character's left (+X), about where the source's lid maps
    corr = result.correspondence
    lid = source.shapes[1].vertices
    lid_on_target = corr.source_to_target.positions(target.vertices, target.faces)[lid].mean(axis=0)
    patch = target.vertices[shapes[BLINK].vertices]
    assert len(patch) < 0.03 * target.n_vertices and (patch[:, 0] > 0).all()
    assert np.linalg.norm(patch.mean(axis=0) - lid_on_target) < 0.01
    down = shapes[BLINK].positions
    assert np.abs(down[:, 1]).max() == pytest.approx(0.01 * corr.alignment.scale, rel=0.15)


def test_the_report_lists_each_shape_and_reads_back(heavy):
    report = heavy[2].report
    section = report.to_json()["blendshapes"]
    assert list(section) == ["mode", "source_shapes", "carried", "dropped", "refined_vertices", "time"]
    assert section["mode"] == "auto" and section["source_shapes"] == 3 and section["dropped"] == []
    carried = {r["name"]: r for r in section["carried"]}
    assert list(carried[JAW]) == ["name", "target_vertices", "max_displacement_pct_height", "confidence",
                                  "map_distance_pct_height"]
    assert 0.5 < carried[JAW]["max_displacement_pct_height"] < 3 and carried[JAW]["confidence"] > 0.8
    assert carried[EYES]["target_vertices"] == 0 and carried[EYES]["confidence"] is None
    assert TransferReport.from_json(json.loads(json.dumps(report.to_json()))).to_json() == report.to_json()


@pytest.mark.parametrize("turned", [False, True])
def test_a_larger_target_gets_larger_shapes_in_its_own_frame(shaped_source, turned):
    """The source itself scaled 1.3 times (and turned Z-up): every carried offset is 1.3 times
    the source's (turned alike)."""
    source = at.load_rig(shaped_source[0])
    turn = np.array([[1.0, 0, 0], [0, 0, -1], [0, 1, 0]]) if turned else np.eye(3)  # +Y up -> +Z up
    target = at.Mesh(1.3 * source.mesh.vertices @ turn.T, source.mesh.faces, source.mesh.parts,
                     source.mesh.vertex_part)
    result = at.transfer(source, target)
    for given, carried in zip(source.shapes[:2], result.rig.shapes):
        a, b = given.dense(target.n_vertices) @ turn.T, carried.dense(target.n_vertices)
        moving = np.linalg.norm(a, axis=1) > 0.5 * np.linalg.norm(a, axis=1).max()
        ratio = np.linalg.norm(b[moving], axis=1) / np.linalg.norm(a[moving], axis=1)
        assert np.median(ratio) == pytest.approx(1.3, rel=0.05), given.name
        assert np.abs(b - 1.3 * a).max() < 0.2 * np.abs(1.3 * a).max(), given.name


def _morph_targets(path) -> dict:
    """name -> the morph targets of each mesh of a written file: [(mesh index, target dict)]."""
    doc, _ = read_document(path)
    out = {}
    for mi, mesh in enumerate(doc.get("meshes", [])):
        for k, name in enumerate(mesh.get("extras", {}).get("targetNames", [])):
            out.setdefault(name, []).append((mi, [p["targets"][k] for p in mesh["primitives"]]))
            assert mesh["weights"][k] == 0.0
    return out


def test_the_rig_file_holds_the_shapes_as_read_back(shaped_source, tmp_path):
    path = tmp_path / "heavy.glb"
    done = transfer_files(shaped_source[0], FIXTURES / "target_heavy.ply", path, FIXTURES / "markers_heavy.json",
                          report=tmp_path / "heavy.report.json")
    written = _morph_targets(path)
    assert list(written) == [JAW, BLINK, EYES]  # every shape, one moving nothing here too
    back = at.load_rig(path)
    for carried, read in zip(done.result.rig.shapes, back.shapes):
        assert carried.name == read.name
        np.testing.assert_allclose(read.dense(back.mesh.n_vertices), carried.dense(back.mesh.n_vertices), atol=1e-6)
    doc, _ = read_document(path)
    accessors = {name: doc["accessors"][targets[0][1][0]["POSITION"]] for name, targets in written.items()}
    assert all("sparse" in accessors[name] and accessors[name]["count"] == 8001 for name in (JAW, BLINK))
    assert "sparse" not in accessors[EYES] and "bufferView" not in accessors[EYES]  # zeros


def test_the_target_keeps_its_own_morph_targets_and_their_names_win(shaped_source, tmp_path):
    """A glTF target with its own ``blink`` and ``smile``: both kept as they were; the source's
    ``blink`` is not carried (a warning and the report say so), its ``jaw open`` is."""
    heavy = at.load_mesh(FIXTURES / "target_heavy.ply")
    rig = at.Rig(heavy, at.Skeleton.from_world(["root"], np.array([-1]), np.eye(4)[None]),
                 at.SkinWeights.from_dense(np.ones((heavy.n_vertices, 1))))
    doc, blob = rig_document(rig)
    own = {BLINK: np.tile([0.0, 0.0, 0.002], (heavy.n_vertices, 1)), "smile": np.zeros((heavy.n_vertices, 3))}
    own["smile"][:10] = [0.0, 0.001, 0.0]
    add_morph_targets(doc, blob, 0, own)
    del doc["skins"], doc["nodes"][1]["skin"]  # a static mesh with morph targets
    target = save_glb(tmp_path / "heavy_with_shapes.glb", doc, bytes(blob))
    out = tmp_path / "out.glb"
    done = transfer_files(shaped_source[0], target, out, FIXTURES / "markers_heavy.json")
    assert list(_morph_targets(out)) == [BLINK, "smile", JAW, EYES]
    back = {s.name: s for s in at.load_rig(out).shapes}
    np.testing.assert_allclose(back[BLINK].dense(heavy.n_vertices), own[BLINK], atol=1e-7)
    np.testing.assert_allclose(back["smile"].dense(heavy.n_vertices), own["smile"], atol=1e-7)
    assert done.report.blendshapes.dropped == [BLINK]
    assert any("own morph target" in w and "'blink'" in w for w in done.report.warnings)


def test_blendshapes_off_carries_none(shaped_source, tmp_path):
    out = tmp_path / "off.glb"
    assert main(["-q", "transfer", str(shaped_source[0]), str(FIXTURES / "target_heavy.ply"), "--markers",
                 str(FIXTURES / "markers_heavy.json"), "-o", str(out), "--report", str(tmp_path / "off.json"),
                 "--blendshapes", "off"]) == 0
    assert _morph_targets(out) == {}
    section = json.loads((tmp_path / "off.json").read_text())["blendshapes"]
    assert section["mode"] == "off" and section["source_shapes"] == 3 and section["carried"] == []
    with pytest.raises(ValueError, match="blend shapes must be auto or off"):
        ShapesConfig(mode="on")


def test_a_shape_names_the_vertices_it_moves_once_and_in_order():
    with pytest.raises(ValueError, match="out of order or twice"):
        at.MorphTarget("x", [3, 1], np.zeros((2, 3))).validate(5)
    with pytest.raises(ValueError, match="does not have"):
        at.MorphTarget("x", [6], np.zeros((1, 3))).validate(5)
    rig = at.Rig(at.Mesh(np.eye(3), [[0, 1, 2]]), at.Skeleton.from_world(["r"], np.array([-1]), np.eye(4)[None]),
                 at.SkinWeights.from_dense(np.ones((3, 1))))
    with pytest.raises(ValueError, match="two blend shapes are named"):
        at.Rig(rig.mesh, rig.skeleton, rig.skin, [at.MorphTarget("a", [0], [[1, 0, 0]])] * 2)


def test_usd_holds_the_shapes_as_blend_shapes(heavy, tmp_path):
    pytest.importorskip("pxr")
    from test_usd import validation_errors

    rig = heavy[2].rig
    path = tmp_path / "heavy.usda"
    at.save_rig(path, rig)
    assert validation_errors(path) == []
    text = path.read_text()
    assert 'uniform token[] skel:blendShapes = ["jaw open", "blink", "eyes left"]' in text
    back = at.load_rig(path)
    assert [s.name for s in back.shapes] == [JAW, BLINK, EYES]
    for carried, read in zip(rig.shapes, back.shapes):
        np.testing.assert_allclose(read.dense(rig.mesh.n_vertices), carried.dense(rig.mesh.n_vertices), atol=1e-6)


def test_malformed_morph_targets_are_one_line_errors_and_odd_weights_zero(tmp_path):
    from conftest import tube_rig

    rig = tube_rig()
    for edit, expected in (("targets", "not a list of objects"), ("accessor", "which does not exist"),
                           ("weights", None)):
        doc, blob = rig_document(rig)
        add_morph_targets(doc, blob, 0, {"a": np.full((rig.mesh.n_vertices, 3), 0.01)})
        mesh = doc["meshes"][0]
        if edit == "targets":
            mesh["primitives"][0]["targets"] = [1, 2]
        elif edit == "accessor":
            mesh["primitives"][0]["targets"][0]["POSITION"] = 999
        else:
            mesh["weights"] = [float("nan")]
        path = save_glb(tmp_path / f"{edit}.glb", doc, bytes(blob))
        if expected:
            with pytest.raises(at.InputError, match=expected):
                at.load_rig(path)
        else:
            assert at.load_rig(path).shapes[0].weight == 0.0


def test_a_target_with_tangents_gets_tangent_offsets_that_turn_with_its_normals(fixture_source, tmp_path):
    from look_builder import Look, write_gltf

    doc, blob = rig_document(fixture_source)  # the jaw with normal offsets: the target's are computed then
    jaw = shapes_of_fixture(fixture_source)[JAW]
    for node in doc["nodes"]:
        if "mesh" in node:
            part = np.flatnonzero(fixture_source.mesh.vertex_part == fixture_source.mesh.parts.index(node["name"]))
            add_morph_targets(doc, blob, node["mesh"], {JAW: jaw[part]}, normals={JAW: jaw[part] * 0.5})
    source = save_glb(tmp_path / "source.glb", doc, bytes(blob))
    body = at.load_mesh(FIXTURES / "target_heavy.ply")
    target = write_gltf(tmp_path / "character.glb", Look(body.vertices, body.faces))  # NORMAL and TANGENT
    transfer_files(source, target, tmp_path / "rigged.glb", FIXTURES / "markers_heavy.json")
    from asetransfer.io.glb import Accessors

    doc, buffers = read_document(tmp_path / "rigged.glb")
    acc = Accessors("rigged", doc, buffers)
    mesh = next(m for m in doc["meshes"] if JAW in m.get("extras", {}).get("targetNames", []))
    prim = mesh["primitives"][0]
    jaw = prim["targets"][mesh["extras"]["targetNames"].index(JAW)]
    n, t = acc.read(prim["attributes"]["NORMAL"]), acc.read(prim["attributes"]["TANGENT"])[:, :3]
    dn, dt = acc.read(jaw["NORMAL"]), acc.read(jaw["TANGENT"])
    moved = np.abs(dn).max(axis=1) > 1e-4
    assert moved.sum() > 20 and (np.abs(dt[moved]).max(axis=1) > 0).all()
    shaped_n = (n + dn)[moved] / np.linalg.norm((n + dn)[moved], axis=1)[:, None]
    shaped_t = (t + dt)[moved]
    np.testing.assert_allclose(np.linalg.norm(shaped_t, axis=1), 1.0, atol=1e-5)  # still unit
    assert np.abs(np.einsum("ij,ij->i", shaped_n, shaped_t)).max() < 1e-4  # still tangent to the surface
    assert not np.abs(dt[~np.abs(dn).any(axis=1)]).any()  # nothing turns where the normal does not
    for node in doc["nodes"]:  # a node's own morph weights (the target's) cover the shapes carried too
        if "weights" in node:
            assert len(node["weights"]) == len(doc["meshes"][node["mesh"]]["primitives"][0]["targets"])
