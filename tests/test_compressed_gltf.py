"""Compressed glTF read as the uncompressed files it was made from, rigged and rigged over,
and written uncompressed: Draco (KHR_draco_mesh_compression, as Blender's exporter writes
it: fixtures/make_twins.py) and meshopt (EXT_meshopt_compression, as gltfpack writes it)."""
import json
import struct
import sys

import numpy as np
import pytest
from scipy.spatial import cKDTree

import asetransfer as at
from asetransfer import InputError
from asetransfer.io.glb import read_document
from asetransfer.job import transfer_files
from asetransfer_cli.main import main
from conftest import FIXTURES

#: Blender's default quantisation: 14 bits over the source's 1.74 m (0.1 mm), weights to 1e-3
POSITION_STEP = 2e-4


def _matched(decoded: np.ndarray, original: np.ndarray):
    """For each decoded vertex the nearest original one (Draco reorders vertices) and its distance."""
    distance, index = cKDTree(original).query(decoded)
    return index, distance


def test_a_compressed_rig_reads_as_the_rig_it_was_made_from():
    draco, plain = at.load_rig(FIXTURES / "source_draco.glb"), at.load_rig(FIXTURES / "source.glb")
    assert draco.skeleton.names == plain.skeleton.names
    # Blender re-derives the bone matrices it imports (float32 rolls): 1e-4, not bit-equal
    np.testing.assert_allclose(draco.skeleton.bind_world, plain.skeleton.bind_world, atol=1e-4)
    assert draco.mesh.n_faces == plain.mesh.n_faces
    index, distance = _matched(draco.mesh.vertices, plain.mesh.vertices)
    assert distance.max() < POSITION_STEP
    assert np.abs(draco.skin.to_dense() - plain.skin.to_dense()[index]).max() < 1e-3
    # both eyes share one index accessor in the file; each got its own triangles
    eyes = draco.mesh.vertices[np.unique(draco.mesh.faces)]
    assert eyes[:, 0].min() < -0.02 and eyes[:, 0].max() > 0.02


def test_a_compressed_target_reads_as_the_mesh_it_was_made_from():
    draco, plain = at.load_mesh(FIXTURES / "target_heavy_draco.glb"), at.load_mesh(FIXTURES / "target_heavy.ply")
    assert (draco.n_vertices, draco.n_faces) == (plain.n_vertices, plain.n_faces)
    index, distance = _matched(draco.vertices, plain.vertices)
    assert distance.max() < POSITION_STEP and len(np.unique(index)) == plain.n_vertices
    # the same triangles, named by the matched vertices
    as_plain = np.sort(index[draco.faces], axis=1)
    assert {tuple(f) for f in as_plain} == {tuple(f) for f in np.sort(plain.faces, axis=1)}


def test_compressed_files_rig_as_their_uncompressed_twins(tmp_path):
    """Source and target compressed: the rig is the uncompressed files' to the quantisation,
    and the output (written over the compressed target) is plain glTF."""
    transfer_files(FIXTURES / "source_draco.glb", FIXTURES / "target_heavy_draco.glb", tmp_path / "draco.glb",
                   FIXTURES / "markers_heavy.json")
    transfer_files(FIXTURES / "source.glb", FIXTURES / "target_heavy.ply", tmp_path / "plain.glb",
                   FIXTURES / "markers_heavy.json")
    draco, plain = at.load_rig(tmp_path / "draco.glb"), at.load_rig(tmp_path / "plain.glb")
    assert draco.skeleton.names == plain.skeleton.names
    height = np.ptp(plain.mesh.vertices[:, 1])
    assert np.abs(draco.skeleton.bind_world[:, :3, 3] - plain.skeleton.bind_world[:, :3, 3]).max() < 0.005 * height
    index, _ = _matched(draco.mesh.vertices, plain.mesh.vertices)
    assert np.abs(draco.skin.to_dense() - plain.skin.to_dense()[index]).mean() < 0.01
    doc, _ = read_document(tmp_path / "draco.glb")
    assert "KHR_draco_mesh_compression" not in json.dumps(doc)
    for prim in (p for m in doc["meshes"] for p in m["primitives"]):
        assert doc["accessors"][prim["attributes"]["POSITION"]].get("bufferView") is not None


def _with_draco_bytes_flipped(path, out):
    """``path`` (a .glb) with the middle of its first Draco bufferView scrambled."""
    data = bytearray(path.read_bytes())
    length = struct.unpack("<I", data[12:16])[0]
    doc = json.loads(data[20:20 + length])
    view = doc["bufferViews"][doc["meshes"][0]["primitives"][0]["extensions"]["KHR_draco_mesh_compression"]
                              ["bufferView"]]
    start = 20 + length + 8 + view.get("byteOffset", 0)
    data[start + 16:start + view["byteLength"]] = bytes(view["byteLength"] - 16)
    out.write_bytes(bytes(data))
    return out


def test_corrupt_draco_data_is_one_line_and_exit_2(tmp_path, capsys):
    broken = _with_draco_bytes_flipped(FIXTURES / "target_heavy_draco.glb", tmp_path / "broken.glb")
    with pytest.raises(InputError, match="Draco"):
        at.load_mesh(broken)
    out = tmp_path / "out.glb"
    assert main(["transfer", str(FIXTURES / "source.glb"), str(broken), "-o", str(out),
                 "--markers", str(FIXTURES / "markers_heavy.json"), "-q"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "broken.glb" in err[0] and "Draco" in err[0]
    assert not out.exists()


def test_without_the_decoder_a_compressed_file_names_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "DracoPy", None)  # import DracoPy -> ImportError
    with pytest.raises(InputError, match="install DracoPy"):
        at.load_mesh(FIXTURES / "target_heavy_draco.glb")
    assert at.load_mesh(FIXTURES / "target_heavy.ply").n_vertices == 8001  # the rest reads as before


# ---------------------------------------------------------------- meshopt (gltfpack -cc)
def test_gltfpack_compressed_files_read_and_rig_as_their_twins(tmp_path):
    """gltfpack's EXT_meshopt_compression (with KHR_mesh_quantization): the source reads as
    source.glb to its quantisation (positions 14 bits, weights 8), the target as
    target_tall.obj; the rig over the compressed target is plain glTF, its skinned node
    without the dequantising transform a skinned mesh ignores."""
    pytest.importorskip("meshopt")
    packed, plain = at.load_rig(FIXTURES / "source_meshopt.glb"), at.load_rig(FIXTURES / "source.glb")
    assert packed.skeleton.names == plain.skeleton.names and packed.mesh.n_faces == plain.mesh.n_faces
    np.testing.assert_allclose(packed.skeleton.bind_world, plain.skeleton.bind_world, atol=1e-6)
    index, distance = _matched(packed.mesh.vertices, plain.mesh.vertices)
    assert distance.max() < POSITION_STEP
    assert np.abs(packed.skin.to_dense() - plain.skin.to_dense()[index]).max() < 1 / 127
    target, obj = at.load_mesh(FIXTURES / "target_tall_meshopt.glb"), at.load_mesh(FIXTURES / "target_tall.obj")
    assert (target.n_vertices, target.n_faces) == (obj.n_vertices, obj.n_faces)
    assert _matched(target.vertices, obj.vertices)[1].max() < 0.02  # cm: 14 bits over 192
    transfer_files(FIXTURES / "source_meshopt.glb", FIXTURES / "target_tall_meshopt.glb", tmp_path / "rig.glb")
    doc, _ = read_document(tmp_path / "rig.glb")
    assert "EXT_meshopt_compression" not in json.dumps(doc)
    skinned = [n for n in doc["nodes"] if "skin" in n]
    assert skinned and not any(k in n for n in skinned for k in ("translation", "rotation", "scale", "matrix"))
    rig = at.load_rig(tmp_path / "rig.glb")
    assert _matched(rig.mesh.vertices, obj.vertices)[1].max() < 0.02


def test_without_the_meshopt_decoder_a_compressed_file_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "meshopt", None)
    with pytest.raises(InputError, match=r'asetransfer\[meshopt\]'):
        at.load_mesh(FIXTURES / "target_tall_meshopt.glb")
