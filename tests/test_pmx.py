"""MikuMikuDance models (.pmx): read as the rig they hold, in glTF's frame, as source or target."""
from __future__ import annotations

import logging

import numpy as np
import pytest

from asetransfer.errors import InputError
from asetransfer.humanoid.skeleton_map import propose_skeleton_map
from asetransfer.io import load_character, load_mesh, load_rig
from asetransfer.io.glb import read_document
from asetransfer.job import transfer_files
from pmx_builder import JAPANESE, SOURCE, pmx_bytes, save_pmx

TALL = SOURCE.parent / "target_tall.obj"


@pytest.fixture(scope="module")
def named():
    return load_rig(SOURCE)


@pytest.fixture(scope="module")
def pmx(tmp_path_factory):
    return save_pmx(tmp_path_factory.mktemp("pmx"))


def oriented(faces) -> list:
    """Triangles as sets of turns (each started at its smallest corner): the same for the same winding."""
    return sorted(tuple(np.roll(f, -int(np.argmin(f)))) for f in np.asarray(faces))


@pytest.mark.parametrize("mmd_winding", [True, False])
def test_a_pmx_model_reads_as_the_rig_it_was_written_from(tmp_path, named, mmd_winding):
    """Z negated back (MMD is left-handed), the same vertices, triangles turned the same way
    (read off the normals the file gives: either winding), weights, joints and bind pose."""
    rig = load_rig(save_pmx(tmp_path, mmd_winding))
    np.testing.assert_allclose(rig.mesh.vertices, named.mesh.vertices, atol=1e-6)
    assert oriented(rig.mesh.faces) == oriented(named.mesh.faces)
    np.testing.assert_allclose(rig.skin.to_dense()[:, :named.skeleton.n_joints], named.skin.to_dense(), atol=1e-6)
    assert rig.skeleton.names[:named.skeleton.n_joints] == tuple(JAPANESE.get(n, n) for n in named.skeleton.names)
    np.testing.assert_allclose(rig.skeleton.bind_world[:named.skeleton.n_joints, :3, 3],
                               named.skeleton.bind_world[:, :3, 3], atol=1e-6)
    assert rig.skeleton.names[-1] == "左足ＩＫ" and rig.skeleton.parents[-1] == -1  # the IK bone, unweighted
    shape, = rig.shapes
    assert shape.name == "あ"
    np.testing.assert_allclose(shape.positions, np.tile([0.0, 0.01, -0.02], (len(shape.vertices), 1)), atol=1e-7)


def test_a_pmx_source_maps_by_its_japanese_names_and_rigs_as_its_twin(tmp_path, named, pmx, caplog):
    mapping, missing = propose_skeleton_map(load_rig(pmx).skeleton)
    assert missing == [] and mapping["hips"] == "下半身" and mapping["elbow_l"] == "左ひじ" and mapping["knee_r"] == "右ひざ"
    twin = transfer_files(SOURCE, TALL, tmp_path / "twin.glb").result.rig
    with caplog.at_level(logging.WARNING, logger="asetransfer"):
        done = transfer_files(pmx, TALL, tmp_path / "pmx.glb")
    height = np.ptp(twin.mesh.vertices, axis=0).max()
    np.testing.assert_allclose(done.result.rig.skeleton.bind_world[:named.skeleton.n_joints, :3, 3],
                               twin.skeleton.bind_world[:, :3, 3], atol=1e-4 * height)
    assert "morphs not read (only vertex morphs become blend shapes): 1 group" in caplog.text


def test_a_pmx_target_keeps_its_materials_and_texture(tmp_path, pmx, caplog):
    with caplog.at_level(logging.WARNING, logger="asetransfer"):
        transfer_files(SOURCE, pmx, tmp_path / "rigged.glb")
    doc, buffers = read_document(tmp_path / "rigged.glb")
    assert [m["name"] for m in doc["materials"]] == list(load_rig(SOURCE).mesh.parts)
    assert doc["materials"][0]["pbrMetallicRoughness"]["baseColorTexture"] == {"index": 0}
    assert doc["images"][0]["mimeType"] == "image/png"
    assert "the model's physics (1 rigid bodies and their joints" in caplog.text
    mesh, = doc["meshes"][:1]  # the model's own morph kept as a morph target, the source's after it
    assert mesh["extras"]["targetNames"][0] == "あ" and len(mesh["primitives"][0]["targets"]) >= 1


def test_a_pmx_mesh_is_its_vertices(pmx, named):
    np.testing.assert_allclose(load_mesh(pmx).vertices, named.mesh.vertices, atol=1e-6)
    assert load_character(pmx).mesh.look is not None


def test_a_pmd_or_a_broken_pmx_is_one_line(tmp_path, named):
    pmd = tmp_path / "old.pmx"
    pmd.write_bytes(b"Pmd" + bytes(100))
    with pytest.raises(InputError, match="a PMD file, MMD's older format, is not read"):
        load_rig(pmd)
    data = pmx_bytes(named)
    rng = np.random.default_rng(0)
    broken = tmp_path / "broken.pmx"
    for cut in np.linspace(10, len(data) - 200, 40).astype(int):  # truncated anywhere
        broken.write_bytes(data[:cut])
        with pytest.raises(InputError):
            load_rig(broken)
    for _ in range(60):  # bytes overwritten in the header, the bones and the morphs
        mutated = bytearray(data)
        for at in rng.integers(0, len(data), 4):
            mutated[at] = rng.integers(0, 256)
        broken.write_bytes(bytes(mutated))
        try:
            load_rig(broken)
        except InputError:
            pass


def test_a_skeleton_of_several_roots_is_written_under_one_common_root(tmp_path, pmx):
    """An MMD model's IK bones are roots beside its centre: glTF wants a skin's joints under
    one common root (the Khronos validator's SKIN_NO_COMMON_ROOT error), so a node at rest
    parents the roots; read back, the skeleton is the model's."""
    import asetransfer as at

    rig = load_rig(pmx)
    assert len(rig.skeleton.roots()) == 2
    at.save_rig(tmp_path / "rig.glb", rig)
    doc, _ = read_document(tmp_path / "rig.glb")
    parent = {c: i for i, n in enumerate(doc["nodes"]) for c in n.get("children", [])}
    top = doc["skins"][0]["skeleton"]
    for joint in doc["skins"][0]["joints"]:
        while joint in parent and joint != top:
            joint = parent[joint]
        assert joint == top
    back = load_rig(tmp_path / "rig.glb")
    assert back.skeleton.names == rig.skeleton.names
    np.testing.assert_array_equal(back.skeleton.parents, rig.skeleton.parents)
