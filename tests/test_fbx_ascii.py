"""ASCII FBX (saved as text by Maya, 3ds Max, MotionBuilder) read as its binary twin, and FBX 6
as FBX 7."""
import numpy as np
import pytest

import asetransfer as at
from asetransfer import InputError
from asetransfer.io.fbx_ascii import parse_ascii_fbx
from asetransfer.io.fbx_binary import parse_fbx
from asetransfer.job import transfer_files
from asetransfer_cli.main import main
from conftest import FIXTURES
from fbx_text import fbx_text

UFBX = FIXTURES / "ufbx"


def _assert_same_rig(a, b):
    assert a.skeleton.names == b.skeleton.names
    np.testing.assert_allclose(a.skeleton.bind_world, b.skeleton.bind_world, atol=1e-9)
    np.testing.assert_allclose(a.skeleton.rest_world(), b.skeleton.rest_world(), atol=1e-9)
    np.testing.assert_allclose(a.mesh.vertices, b.mesh.vertices, atol=1e-9)
    np.testing.assert_array_equal(a.mesh.faces, b.mesh.faces)
    np.testing.assert_allclose(a.skin.to_dense(), b.skin.to_dense(), atol=1e-9)


@pytest.mark.parametrize("scene", ["maya_game_sausage_7500", "max_transformed_skin_7500"])
def test_autodesk_ascii_files_read_as_their_binary_twins(scene):
    """Maya's and 3ds Max's own ASCII and binary saves of one scene (ufbx's test data)."""
    ascii_rig, binary_rig = at.load_rig(UFBX / f"{scene}_ascii.fbx"), at.load_rig(UFBX / f"{scene}_binary.fbx")
    assert ascii_rig.skeleton.n_joints >= 4
    _assert_same_rig(ascii_rig, binary_rig)


@pytest.mark.parametrize("form", ["ascii", "binary"])
def test_fbx_6_reads_as_the_same_scene_saved_as_fbx_7(form):
    """Maya's FBX 6.1 save (objects named, not numbered; the mesh's arrays in its model;
    Properties60; in ASCII, lists wrapped with the comma leading the line) of the scene its
    FBX 7.5 save holds."""
    old, new = at.load_rig(UFBX / f"maya_game_sausage_6100_{form}.fbx"), at.load_rig(UFBX / "maya_game_sausage_7500_binary.fbx")
    _assert_same_rig(old, new)


def test_fbx_6_blend_shapes_read_as_the_fbx_7_saves():
    """Maya's FBX 6.1 cube keeps its shapes as ``Shape`` children of its model, weighted by
    the model's property of each shape's name: read as FBX 7's blend shape deformer, the same
    offsets and weights as the FBX 7.7 save's (whose channels Maya names after their
    deformer), kept as the target's morph targets."""
    from asetransfer.io import load_character
    from asetransfer.io.glb import Accessors

    looks = [load_character(UFBX / f"maya_blend_shape_cube_{v}_binary.fbx").look for v in (6100, 7700)]
    assert [look.morph_target_names() for look in looks] == [["TopH", "TopV"], ["Squish.TopH", "Squish.TopV"]]
    offsets = []
    for look in looks:
        mesh = look.document["meshes"][0]
        assert mesh["weights"] == [1.0, 1.0]
        read = Accessors(look.path, look.document, look.buffers).read
        offsets.append([read(target["POSITION"]) for target in mesh["primitives"][0]["targets"]])
    for old, new in zip(*offsets):
        np.testing.assert_allclose(old, new, atol=1e-12)
        assert np.abs(old).max() > 0.2


def _as_ascii(tmp_path, name):
    version, nodes = parse_fbx(FIXTURES / name, (FIXTURES / name).read_bytes())
    path = tmp_path / f"ascii_{name}"
    path.write_bytes(fbx_text(version, nodes))
    return path


@pytest.mark.parametrize("source, target, out", [
    ("source_animated_cm_zup.fbx", "target_heavy_cm_zup.fbx", "rig.glb"),  # clips, centimetres, Z up
    ("source.fbx", "target_heavy_textured.fbx", "rig.fbx"),                # a look carried over
])
def test_ascii_source_and_target_rig_as_the_binary_files(tmp_path, source, target, out):
    """Blender's FBX fixtures saved as text: the rig, its clips and the output written over
    the target are the binary files' to the byte."""
    ascii_source, ascii_target = _as_ascii(tmp_path, source), _as_ascii(tmp_path, target)
    assert ascii_source.read_bytes().startswith(b"; FBX 7.4.0 project file")
    transfer_files(ascii_source, ascii_target, tmp_path / f"ascii_{out}", FIXTURES / "markers_heavy.json")
    transfer_files(FIXTURES / source, FIXTURES / target, tmp_path / f"binary_{out}", FIXTURES / "markers_heavy.json")
    assert (tmp_path / f"ascii_{out}").read_bytes() == (tmp_path / f"binary_{out}").read_bytes()
    assert at.load_rig(tmp_path / f"ascii_{out}").skeleton.n_joints == 65


_SCENE = """; FBX 7.5.0 project file
; a comment line
FBXHeaderExtension:  {
\tFBXVersion: 7500
}
Objects:  {
\tModel: 2518685506688, "Model::mixamorig:Hips", "LimbNode" {
\t\tVersion: 232
\t\tShading: T
\t\tName: "say &quot;hi&quot;"   ; a trailing comment
\t\tValues: *5 {
\t\t\ta: 1.5,-2,3e-2, ; a comment inside
\t\t\t1.#INF,-1.#IND
\t\t}
\t\tIndices: *3 {
\t\t\ta: 0,1,-3
\t\t}
\t\tPre-Extrapolation: 1,
\t\t\t2
\t\tContent: ,
\t\t "aGVsbG8="
\t}
}
"""


def test_the_text_syntax_as_autodesk_writes_it():
    version, nodes = parse_ascii_fbx("scene.fbx", _SCENE.encode())
    assert version == 7500 and [n.name for n in nodes] == ["FBXHeaderExtension", "Objects"]
    model = nodes[1].child("Model")
    assert model.props == [2518685506688, "mixamorig:Hips\x00\x01Model", "LimbNode"]
    assert model.child("Shading").props == [True]
    assert model.child("Name").props == ['say "hi"']
    values = model.child("Values").props[0]
    assert values.dtype == np.float64 and values[:3].tolist() == [1.5, -2.0, 0.03]
    assert values[3] == np.inf and np.isnan(values[4])
    indices = model.child("Indices").props[0]
    assert indices.dtype.kind == "i" and indices.tolist() == [0, 1, -3]
    assert model.child("Pre-Extrapolation").props == [1, 2]  # a line ending in a comma goes on
    assert model.child("Content").props == [b"hello"]


@pytest.mark.parametrize("text, message", [
    (_SCENE.replace("*5 {", "*6 {"), r"declares 6 values and holds 5 \(line 11\)"),
    (_SCENE.rsplit("}", 1)[0], "never closed"),
    (_SCENE.replace("FBXVersion: 7500", "FBXVersion: 5800").replace("7.5.0", "5.8.0"), "version 5800"),
    (_SCENE.replace("Version: 232", "Version: 232 @"), "unexpected '@"),
    (_SCENE.replace("a: 0,1,-3", "a: 0,x1,-3"), "not a number"),
])
def test_broken_text_is_one_line_naming_the_file(tmp_path, capsys, text, message):
    path = tmp_path / "broken.fbx"
    path.write_text(text)
    with pytest.raises(InputError, match=message) as e:
        parse_fbx(path, path.read_bytes())
    assert str(path) in str(e.value) and "\n" not in str(e.value)
    assert main(["info", str(path)]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def _with_wide_ints(node):
    """``node`` with every int beyond int32 as an Int64 (ids and times: ``L`` in the binary form)."""
    from asetransfer.io.fbx_binary import FbxNode
    from asetransfer.io.fbx_bytes import Int64
    props = [Int64(p) if isinstance(p, int) and not isinstance(p, bool) and not -2**31 <= p < 2**31 else p
             for p in node.props]
    return FbxNode(node.name, props, [_with_wide_ints(c) for c in node.children])


def test_an_embedded_texture_split_into_several_values_is_read_whole(tmp_path):
    """The FBX SDK stores a large embedded file as several raw values of one Content node
    (ufbx's ``synthetic_texture_split``); only the first was read: a truncated image."""
    from asetransfer.io.fbx_bytes import fbx_bytes
    name = "target_heavy_textured.fbx"
    _, nodes = parse_fbx(FIXTURES / name, (FIXTURES / name).read_bytes())
    videos = [v for v in next(n for n in nodes if n.name == "Objects").all("Video") if v.child("Content")]
    assert videos
    for video in videos:
        content = video.child("Content")
        data = content.props[0]
        content.props[:] = [data[:100], data[100:1000], data[1000:]]
    split = tmp_path / "split.fbx"
    split.write_bytes(fbx_bytes([_with_wide_ints(n) for n in nodes]))
    for target, out in ((FIXTURES / name, "whole.glb"), (split, "split.glb")):
        transfer_files(FIXTURES / "source.glb", target, tmp_path / out, FIXTURES / "markers_heavy.json")
    assert (tmp_path / "split.glb").read_bytes() == (tmp_path / "whole.glb").read_bytes()


def test_a_sources_warnings_are_said_once_though_it_is_read_again_for_its_clips(tmp_path, caplog):
    """The source is read a second time for its takes: its reader's warnings (here weights
    that do not sum to 1) were said twice, on stderr and in the report's warnings."""
    name = "source_animated_cm_zup.fbx"
    version, nodes = parse_fbx(FIXTURES / name, (FIXTURES / name).read_bytes())
    cluster = next(d for d in next(n for n in nodes if n.name == "Objects").all("Deformer") if d.child("Weights"))
    cluster.child("Weights").props[0] = cluster.child("Weights").props[0] * 0.5
    source = tmp_path / "halved.fbx"
    source.write_bytes(fbx_text(version, nodes))
    done = transfer_files(source, FIXTURES / "target_heavy_cm_zup.fbx", tmp_path / "rig.glb",
                          FIXTURES / "markers_heavy.json")
    said = [r.getMessage() for r in caplog.records if "do not sum to 1" in r.getMessage()]
    assert len(said) == 1
    assert not any("do not sum to 1" in w for w in done.report.warnings)  # a source's, said as it was read
    from asetransfer.io import load_clips
    assert len(load_clips(tmp_path / "rig.glb")[1]) == 2
