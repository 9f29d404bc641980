"""USD output: UsdSkel files that usd-core validates, reads back as the rig
written, deforms like our skinning, and writes deterministically."""
from __future__ import annotations

import json

import numpy as np
import pytest

pxr = pytest.importorskip("pxr", reason="usd-core (asetransfer[usd]) is not installed")

import asetransfer as at  # noqa: E402
from asetransfer.io import file_frame, load_character, load_rig, save_rig  # noqa: E402
from asetransfer.errors import InputError  # noqa: E402
from asetransfer.io.usd import joint_paths, read_usd_rig, usd_identifier  # noqa: E402
from asetransfer_cli.main import main  # noqa: E402
from conftest import FIXTURES, assert_rigs_equal  # noqa: E402
from shaped_source import shapes_of_fixture  # noqa: E402


@pytest.fixture(scope="module")
def source():
    return load_rig(FIXTURES / "source.glb")


def validation_errors(path) -> list:
    """Every error usd-core's validators (the successor of UsdUtils.ComplianceChecker) report."""
    from pxr import Usd, UsdValidation

    registry = UsdValidation.ValidationRegistry()
    context = UsdValidation.ValidationContext(registry.GetOrLoadAllValidators())
    return [f"{e.GetValidator().GetMetadata().name}: {e.GetMessage()}" for e in context.Validate(Usd.Stage.Open(str(path)))]


@pytest.mark.parametrize("ext", [".usda", ".usdc", ".usdz"])
def test_usd_passes_validation_and_reads_back_as_the_rig(source, tmp_path, ext):
    path = tmp_path / f"rig{ext}"
    save_rig(path, source, metres_per_unit=0.01, up_axis="+Z")
    assert validation_errors(path) == []
    back = load_rig(path)
    assert back.mesh.parts == source.mesh.parts  # eye.L kept as the prim's display name
    # float32 points and weights in the file, float64 matrices
    assert_rigs_equal(back, source, tol=1e-6)
    assert file_frame(path) == {"metres_per_unit": 0.01, "up_axis": "+Z"}


def test_the_validators_do_report_a_broken_file(source, tmp_path):
    from pxr import Usd

    path = tmp_path / "rig.usda"
    save_rig(path, source)
    stage = Usd.Stage.Open(str(path))
    stage.GetRootLayer().ClearDefaultPrim()
    stage.GetRootLayer().pseudoRoot.ClearInfo("metersPerUnit")
    stage.GetRootLayer().Save()
    errors = validation_errors(path)  # a check that cannot fail would prove nothing
    assert any("defaultPrim" in e for e in errors) and any("metersPerUnit" in e for e in errors)


def test_usd_layout(source, tmp_path):
    from pxr import Usd, UsdGeom, UsdSkel

    path = tmp_path / "rig.usda"
    save_rig(path, source, max_influences=4)
    stage = Usd.Stage.Open(str(path))
    root = stage.GetDefaultPrim()
    assert root.IsA(UsdSkel.Root) and UsdGeom.GetStageMetersPerUnit(stage) == 1.0
    assert UsdGeom.GetStageUpAxis(stage) == "Y"
    skel = UsdSkel.Skeleton(stage.GetPrimAtPath("/Character/Skeleton"))
    assert list(skel.GetJointNamesAttr().Get()) == list(source.skeleton.names)
    assert list(skel.GetJointsAttr().Get())[:2] == ["hips", "hips/spine_001"]
    body = UsdSkel.BindingAPI(stage.GetPrimAtPath("/Character/body"))
    assert body.GetJointIndicesPrimvar().GetElementSize() == 4
    assert body.GetJointWeightsPrimvar().GetInterpolation() == "vertex"
    assert np.allclose(np.array(body.GetGeomBindTransformAttr().Get()), np.eye(4))
    assert body.GetSkeletonRel().GetTargets() == ["/Character/Skeleton"]


def test_usd_skinning_of_a_posed_joint_equals_ours(source, tmp_path):
    """UsdSkel's own linear blend skinning, with the left forearm bent, moves the vertices
    where ours does (and the posed bone's vertices do move)."""
    from pxr import Gf, Usd, UsdSkel, Vt

    path = tmp_path / "rig.usda"
    save_rig(path, source)
    sk = source.skeleton
    j = sk.index("forearm.L")
    bend = np.eye(3)
    bend[1:, 1:] = [[np.cos(0.6), -np.sin(0.6)], [np.sin(0.6), np.cos(0.6)]]
    world = sk.posed_world({j: bend})
    stage = Usd.Stage.Open(str(path))
    cache = UsdSkel.Cache()
    root = UsdSkel.Root(stage.GetDefaultPrim())
    cache.Populate(root, Usd.PrimDefaultPredicate)
    skel_query = cache.GetSkelQuery(UsdSkel.Skeleton(stage.GetPrimAtPath("/Character/Skeleton")))
    body = stage.GetPrimAtPath("/Character/body")
    skinning = cache.GetSkinningQuery(body)
    xforms = Vt.Matrix4dArray([Gf.Matrix4d(m.T.tolist()) for m in world @ np.linalg.inv(sk.bind_world)])
    points = Vt.Vec3fArray.FromNumpy(source.mesh.vertices[source.mesh.vertex_part == 0].astype(np.float32))
    assert skel_query and skinning.ComputeSkinnedPoints(xforms, points)
    usd_posed = np.array(points, dtype=np.float64)
    ours = source.posed_vertices(world)[source.mesh.vertex_part == 0]
    np.testing.assert_allclose(usd_posed, ours, atol=1e-5)
    rest = source.mesh.vertices[source.mesh.vertex_part == 0]
    assert np.linalg.norm(usd_posed - rest, axis=1).max() > 0.05


@pytest.mark.parametrize("ext", [".usda", ".usdc", ".usdz"])
def test_usd_bytes_are_deterministic(source, tmp_path, ext):
    import zipfile

    save_rig(tmp_path / f"a{ext}", source)
    save_rig(tmp_path / f"b{ext}", source)
    assert (tmp_path / f"a{ext}").read_bytes() == (tmp_path / f"b{ext}").read_bytes()
    if ext == ".usdz":  # usd-core stamps the files' times: two seconds apart, the bytes would differ
        with zipfile.ZipFile(tmp_path / "a.usdz") as package:
            assert [e.date_time for e in package.infolist()] == [(1980, 1, 1, 0, 0, 0)]
            assert package.testzip() is None
        assert validation_errors(tmp_path / "a.usdz") == []


def test_a_joint_index_of_weight_0_may_name_any_joint(tmp_path):
    """-1 with weight 0 pads a jointIndices row (it binds nothing): read, not refused (it
    was: 'negative axis 1 index'); a weight on a joint outside the skeleton is refused."""
    from conftest import tube_rig
    rig = tube_rig()
    save_rig(tmp_path / "tube.usda", rig)
    text = (tmp_path / "tube.usda").read_text()
    key = "primvars:skel:jointIndices = ["
    assert text[text.index(key) + len(key):].startswith("0, 0")  # vertex 0: joint 0 weight 1, a 0-weight slot
    (tmp_path / "padded.usda").write_text(text.replace(key + "0, 0", key + "0, -1", 1))
    np.testing.assert_array_equal(read_usd_rig(tmp_path / "padded.usda").skin.to_dense(),
                                  read_usd_rig(tmp_path / "tube.usda").skin.to_dense())
    key_w = "primvars:skel:jointWeights = ["
    weighted = text.replace(key + "0, 0", key + "0, -1", 1).replace(key_w + "1, 0", key_w + "0.5, 0.5", 1)
    (tmp_path / "weighted.usda").write_text(weighted)
    with pytest.raises(InputError, match="vertex 0 has a skin weight on joint index -1, outside the skeleton's 3"):
        read_usd_rig(tmp_path / "weighted.usda")


def test_names_that_usd_paths_cannot_hold():
    assert usd_identifier("mixamorig:Hips") == "mixamorig_Hips"
    assert usd_identifier("spine.001") == "spine_001" and usd_identifier("01") == "_01"
    sk = at.Skeleton.from_world(["a.b", "a:b", "c"], [-1, 0, 0], np.tile(np.eye(4), (3, 1, 1)))
    assert joint_paths(sk) == ["a_b", "a_b/a_b", "a_b/c"]
    sk = at.Skeleton.from_world(["x", "a.b", "a:b"], [-1, 0, 0], np.tile(np.eye(4), (3, 1, 1)))
    assert joint_paths(sk) == ["x", "x/a_b", "x/a_b_1"]  # siblings stay distinct


def test_transfer_writes_usd_with_the_target_files_frame(tmp_path, capsys):
    out = tmp_path / "tall.usda"
    code = main(["transfer", str(FIXTURES / "source.glb"), str(FIXTURES / "target_tall.obj"), "--markers",
                 str(FIXTURES / "markers_tall.json"), "-o", str(out), "-q"])
    assert code == 0, capsys.readouterr().err
    # an OBJ declares nothing: up axis from the skeleton, unit from the body height (192 units: cm)
    assert file_frame(out) == {"metres_per_unit": 0.01, "up_axis": "+Y"}
    assert validation_errors(out) == []
    rig = load_character(out)
    assert isinstance(rig, at.Rig) and rig.mesh.n_vertices == 6001
    code = main(["info", str(out), "--json"])
    d = json.loads(capsys.readouterr().out)
    assert code == 0 and d["joint_count"] == 65 and d["declared_frame"]["metres_per_unit"] == 0.01


def test_missing_usd_core_is_one_line(tmp_path, capsys, monkeypatch):
    import builtins

    real = builtins.__import__

    def no_pxr(name, *args, **kw):
        if name == "pxr" or name.startswith("pxr."):
            raise ImportError(name)
        return real(name, *args, **kw)

    monkeypatch.setattr(builtins, "__import__", no_pxr)
    out = tmp_path / "x.usda"
    code = main(["transfer", str(FIXTURES / "source.glb"), str(FIXTURES / "target_heavy.ply"), "--markers",
                 str(FIXTURES / "markers_heavy.json"), "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and 'pip install "asetransfer[usd]"' in err
    assert not out.exists()


def test_a_usd_target_names_its_own_blend_shapes_as_not_carried(fixture_source, tmp_path, caplog):
    """A USD target's look holds no blend shapes: its own are named, not dropped silently."""
    import logging

    from asetransfer.job import transfer_files

    offsets = shapes_of_fixture(fixture_source)
    shapes = [at.MorphTarget(name, np.flatnonzero(np.abs(d).max(axis=1) > 0), d[np.abs(d).max(axis=1) > 0])
              for name, d in offsets.items()]
    at.save_rig(tmp_path / "shaped.usda", at.Rig(fixture_source.mesh, fixture_source.skeleton, fixture_source.skin,
                                                 shapes))
    with caplog.at_level(logging.WARNING, logger="asetransfer"):
        transfer_files(FIXTURES / "source.glb", tmp_path / "shaped.usda", tmp_path / "rigged.glb")
    said = [r.getMessage() for r in caplog.records if "own blend shape" in r.getMessage()]
    assert len(said) == 1 and all(repr(name) in said[0] for name in offsets)
