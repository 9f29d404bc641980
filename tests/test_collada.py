"""COLLADA (.dae) rigs and meshes: Blender's export of the fixture source read as source.glb,
and the parts of the format other writers use (hand-made files)."""
import numpy as np
import pytest

import asetransfer as at
from asetransfer import InputError
from asetransfer.io import file_frame
from asetransfer.job import transfer_files
from asetransfer_cli.main import main
from conftest import FIXTURES

#: glTF (Y up) -> the file's frame (Blender's Z up): (x, y, z) -> (x, -z, y)
GLTF_TO_BLENDER = np.array([[1.0, 0, 0], [0, 0, -1], [0, 1, 0]])


def test_blenders_collada_export_reads_as_the_gltf_source():
    dae, glb = at.load_rig(FIXTURES / "source.dae"), at.load_rig(FIXTURES / "source.glb")
    assert dae.skeleton.names == glb.skeleton.names and (dae.skeleton.parents == glb.skeleton.parents).all()
    assert dae.mesh.parts == ("body", "eye.L", "eye.R")
    np.testing.assert_array_equal(dae.mesh.faces, glb.mesh.faces)
    np.testing.assert_allclose(dae.mesh.vertices, glb.mesh.vertices @ GLTF_TO_BLENDER.T, atol=1e-5)
    turn = np.eye(4)
    turn[:3, :3] = GLTF_TO_BLENDER
    # Blender stores bones as float32 head, tail and roll: rotations to 1e-4 (as its FBX export)
    np.testing.assert_allclose(dae.skeleton.bind_world, turn @ glb.skeleton.bind_world, atol=1e-4)
    np.testing.assert_allclose(dae.skeleton.rest_world(), turn @ glb.skeleton.rest_world(), atol=1e-4)
    np.testing.assert_allclose(dae.skin.to_dense(), glb.skin.to_dense(), atol=1e-6)
    assert file_frame(FIXTURES / "source.dae") == {"metres_per_unit": 1.0, "up_axis": "+Z"}


def test_a_collada_source_rigs_as_its_gltf_twin(tmp_path):
    for name in ("source.dae", "source.glb"):
        transfer_files(FIXTURES / name, FIXTURES / "target_tall.obj", tmp_path / f"{name}.glb")
    dae, glb = (at.load_rig(tmp_path / f"{name}.glb").skeleton for name in ("source.dae", "source.glb"))
    height = 188.8  # the tall target, in its centimetres
    assert np.abs(dae.bind_world[:, :3, 3] - glb.bind_world[:, :3, 3]).max() < 1e-5 * height  # measured 0.00036


# a 2-joint skin as other writers make it: IDREF_array joints, translate/rotate nodes, a
# polygons element, a strip, a bind-shape matrix, a vertex partly bound to the bind shape (-1)
_SKINNED = """<?xml version="1.0" encoding="utf-8"?>
<COLLADA xmlns="http://www.collada.org/2008/03/COLLADASchema" version="1.5.0">
  <asset><unit meter="0,01"/><up_axis>Y_UP</up_axis></asset>
  <library_geometries>
    <geometry id="g" name="box"><mesh>
      <source id="p"><float_array id="pa" count="18">0 0 0  1 0 0  1 1 0  0 1 0  0 2 0  1 2 0</float_array>
        <technique_common><accessor source="#pa" count="6" stride="3"/></technique_common></source>
      <vertices id="v"><input semantic="POSITION" source="#p"/></vertices>
      <polygons count="1"><input semantic="VERTEX" source="#v" offset="0"/><p>0 1 2 3</p></polygons>
      <tristrips count="1"><input semantic="VERTEX" source="#v" offset="0"/><p>3 2 4 5</p></tristrips>
    </mesh></geometry>
  </library_geometries>
  <library_controllers>
    <controller id="c"><skin source="#g">
      <bind_shape_matrix>2 0 0 0 0 2 0 0 0 0 2 0 0 0 0 1</bind_shape_matrix>
      <source id="j"><IDREF_array id="ja" count="2">root_id tip_id</IDREF_array></source>
      <source id="ibm"><float_array id="ibma" count="32">1 0 0 0 0 1 0 0 0 0 1 0 0 0 0 1
                                                        1 0 0 0 0 1 0 -2 0 0 1 0 0 0 0 1</float_array></source>
      <source id="w"><float_array id="wa" count="3">1 0.5 0.5</float_array>
        <technique_common><accessor source="#wa" count="3" stride="1"/></technique_common></source>
      <joints><input semantic="JOINT" source="#j"/><input semantic="INV_BIND_MATRIX" source="#ibm"/></joints>
      <vertex_weights count="6">
        <input semantic="JOINT" source="#j" offset="0"/><input semantic="WEIGHT" source="#w" offset="1"/>
        <vcount>1 1 1 1 2 2</vcount><v>0 0 0 0 0 0 0 0 0 1 1 2 1 1 -1 2</v>
      </vertex_weights>
    </skin></controller>
  </library_controllers>
  <library_visual_scenes><visual_scene id="s">
    <node id="root_id" name="Root" type="JOINT"><translate>0 0 0</translate>
      <node id="tip_id" name="Tip" type="JOINT"><translate>0 2 0</translate><rotate>0 0 1 90</rotate></node>
    </node>
    <node id="m" name="skinned"><instance_controller url="#c"><skeleton>#root_id</skeleton></instance_controller></node>
  </visual_scene></library_visual_scenes>
  <scene><instance_visual_scene url="#s"/></scene>
</COLLADA>
"""


def test_the_parts_of_collada_other_writers_use(tmp_path):
    path = tmp_path / "skinned.dae"
    path.write_text(_SKINNED)
    rig = at.load_rig(path)
    assert rig.skeleton.names == ("Root", "Tip") and rig.skeleton.parents.tolist() == [-1, 0]
    np.testing.assert_allclose(rig.skeleton.bind_world[1, :3, 3], [0, 2, 0])         # IBM^-1
    np.testing.assert_allclose(rig.skeleton.rest_world()[1, :2, :2], [[0, -1], [1, 0]], atol=1e-12)  # rotate 90
    np.testing.assert_allclose(rig.mesh.vertices[5], [2, 4, 0])                       # BSM v
    assert rig.mesh.n_faces == 4                                                      # a quad and a 2-triangle strip
    dense = rig.skin.to_dense()
    np.testing.assert_allclose(dense[4], [0.5, 0.5])
    np.testing.assert_allclose(dense[5], [0.0, 1.0])  # its bind-shape share dropped, the rest normalised
    assert file_frame(path) == {"metres_per_unit": 0.01, "up_axis": "+Y"}             # the decimal comma read
    mesh = at.load_mesh(path)
    np.testing.assert_allclose(mesh.vertices, rig.mesh.vertices)


@pytest.mark.parametrize("change, message", [
    (("</COLLADA>", ""), "not a COLLADA file"),
    (("root_id tip_id", "root_id nowhere"), "names joint 'nowhere', which no node of the scene is"),
    (("<vcount>1 1 1 1 2 2</vcount>", "<vcount>1 1 1 1 2</vcount>"), "weighs 5 vertices, the mesh has 6"),
    (("<translate>0 2 0</translate>", "<lookat>0 0 0 0 0 1 0 1 0</lookat>"), "<lookat> is not read"),
    (("<p>0 1 2 3</p>", "<p>0 1 2 9</p>"), "names a vertex it does not have"),
    (('<controller id="c"><skin source="#g">', '<controller id="c"><skin source="#nothing">'), "'#nothing'"),
])
def test_a_broken_collada_file_is_one_line_and_exit_2(tmp_path, capsys, change, message):
    path = tmp_path / "broken.dae"
    path.write_text(_SKINNED.replace(*change))
    with pytest.raises(InputError, match=message):
        at.load_rig(path)
    out = tmp_path / "out.glb"
    assert main(["transfer", str(path), str(FIXTURES / "target_tall.obj"), "-o", str(out), "-q"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "broken.dae" in err[0] and not out.exists()


_ANIMATIONS = """  <library_animations>
    <animation id="spin">
      <source id="t1"><float_array id="t1a" count="3">0 0.5 1</float_array>
        <technique_common><accessor source="#t1a" count="3" stride="1"/></technique_common></source>
      <source id="v1"><float_array id="v1a" count="3">90 45 0</float_array>
        <technique_common><accessor source="#v1a" count="3" stride="1"/></technique_common></source>
      <sampler id="s1"><input semantic="INPUT" source="#t1"/><input semantic="OUTPUT" source="#v1"/></sampler>
      <channel source="#s1" target="tip_id/spin.ANGLE"/>
    </animation>
    <animation id="rise">
      <source id="t2"><float_array id="t2a" count="2">0 1</float_array>
        <technique_common><accessor source="#t2a" count="2" stride="1"/></technique_common></source>
      <source id="v2"><float_array id="v2a" count="32">1 0 0 0 0 1 0 0 0 0 1 0 0 0 0 1
                                                        1 0 0 0 0 1 0 1 0 0 1 0 0 0 0 1</float_array>
        <technique_common><accessor source="#v2a" count="2" stride="16"/></technique_common></source>
      <sampler id="s2"><input semantic="INPUT" source="#t2"/><input semantic="OUTPUT" source="#v2"/></sampler>
      <channel source="#s2" target="root_id/xf"/>
    </animation>
  </library_animations>
"""


def test_collada_animations_are_the_sources_clip(tmp_path, capsys):
    """A matrix channel (as Blender and Mixamo bake them) and a component channel (rotate.ANGLE,
    as 3ds Max writes them), sampled at the union of their keys, linearly between them.
    (Blender's Collada export of the animated FBX fixture gives its joints' positions as
    Blender evaluates them to 1.3e-5 m; not kept: a 1.5 MB file.)"""
    from asetransfer.io import has_clips, load_clips
    text = (_SKINNED.replace('<translate>0 0 0</translate>', '<matrix sid="xf">1 0 0 0 0 1 0 0 0 0 1 0 0 0 0 1</matrix>')
            .replace("<rotate>0 0 1 90</rotate>", '<rotate sid="spin">0 0 1 90</rotate>')
            .replace("  <library_visual_scenes>", _ANIMATIONS + "  <library_visual_scenes>"))
    path = tmp_path / "animated.dae"
    path.write_text(text)
    assert has_clips(path) and not has_clips(FIXTURES / "source.dae")
    rig, clips, skipped = load_clips(path)
    assert skipped == [] and [name for name, _ in clips] == ["s"]
    world = clips[0][1].world(rig.skeleton)
    assert world.shape[:2] == (3, 2) and clips[0][1].frame_time == pytest.approx(0.5)
    np.testing.assert_allclose(world[1, 0, :3, 3], [0, 0.5, 0], atol=1e-12)   # the matrices halfway
    np.testing.assert_allclose(world[1, 1, :3, 3], [0, 2.5, 0], atol=1e-12)
    turn = np.radians(45)
    np.testing.assert_allclose(world[1, 1, :2, :2], [[np.cos(turn), -np.sin(turn)], [np.sin(turn), np.cos(turn)]],
                               atol=1e-12)
    np.testing.assert_allclose(world[2, 1, :3, :3], np.eye(3), atol=1e-12)       # 0 degrees at the end
    np.testing.assert_allclose(world[0], rig.skeleton.rest_world(), atol=1e-12)  # the first key: the rest pose
    assert main(["info", str(path)]) == 0
    assert "s (3 frames)" in capsys.readouterr().out  # its clips listed


# a textured quad as Blender writes one: per-corner UVs and normals, a texture through
# sampler2D -> surface -> image, and a second, coloured material on a triangle of its own
_TEXTURED = """<?xml version="1.0" encoding="utf-8"?>
<COLLADA xmlns="http://www.collada.org/2005/11/COLLADASchema" version="1.4.1">
  <asset><unit meter="1"/><up_axis>Z_UP</up_axis></asset>
  <library_images><image id="skin_png"><init_from>skin%20tex.png</init_from></image></library_images>
  <library_effects>
    <effect id="skin-effect"><profile_COMMON>
      <newparam sid="skin-surface"><surface type="2D"><init_from>skin_png</init_from></surface></newparam>
      <newparam sid="skin-sampler"><sampler2D><source>skin-surface</source></sampler2D></newparam>
      <technique sid="common"><lambert><diffuse><texture texture="skin-sampler" texcoord="UVMap"/></diffuse>
      </lambert></technique></profile_COMMON></effect>
    <effect id="hair-effect"><profile_COMMON><technique sid="common"><phong>
      <diffuse><color>0.3 0.2 0.1 1</color></diffuse><specular><color>1 1 1 1</color></specular>
    </phong></technique></profile_COMMON></effect>
  </library_effects>
  <library_materials>
    <material id="skin-material" name="skin"><instance_effect url="#skin-effect"/></material>
    <material id="hair-material" name="hair"><instance_effect url="#hair-effect"/></material>
  </library_materials>
  <library_geometries>
    <geometry id="g" name="quad"><mesh>
      <source id="p"><float_array id="pa" count="15">0 0 0  1 0 0  1 1 0  0 1 0  0 2 0</float_array>
        <technique_common><accessor source="#pa" count="5" stride="3"/></technique_common></source>
      <source id="n"><float_array id="na" count="3">0 0 1</float_array>
        <technique_common><accessor source="#na" count="1" stride="3"/></technique_common></source>
      <source id="uv"><float_array id="uva" count="10">0 0  1 0  1 1  0 1  0.5 0.25</float_array>
        <technique_common><accessor source="#uva" count="5" stride="2"/></technique_common></source>
      <vertices id="v"><input semantic="POSITION" source="#p"/></vertices>
      <polylist material="skin-material" count="1">
        <input semantic="VERTEX" source="#v" offset="0"/><input semantic="NORMAL" source="#n" offset="1"/>
        <input semantic="TEXCOORD" source="#uv" offset="2" set="0"/>
        <vcount>4</vcount><p>0 0 0  1 0 1  2 0 2  3 0 3</p></polylist>
      <triangles material="hair-material" count="1">
        <input semantic="VERTEX" source="#v" offset="0"/><input semantic="NORMAL" source="#n" offset="1"/>
        <input semantic="TEXCOORD" source="#uv" offset="2" set="0"/>
        <p>3 0 4  2 0 4  4 0 4</p></triangles>
    </mesh></geometry>
  </library_geometries>
  <library_visual_scenes><visual_scene id="s">
    <node id="quad" name="quad"><rotate>1 0 0 90</rotate>
      <instance_geometry url="#g"><bind_material><technique_common>
        <instance_material symbol="skin-material" target="#skin-material"/>
        <instance_material symbol="hair-material" target="#hair-material"/>
      </technique_common></bind_material></instance_geometry>
    </node>
  </visual_scene></library_visual_scenes>
  <scene><instance_visual_scene url="#s"/></scene>
</COLLADA>
"""


def test_a_collada_targets_uvs_normals_and_materials_become_its_look(tmp_path, caplog):
    """Blender's Collada export of the textured FBX fixture gives the same materials, texture
    and UVs as the FBX (within 1.4e-7; not kept: a 2.5 MB file)."""
    from look_builder import png_bytes
    from asetransfer.io.glb import Accessors
    png = png_bytes(4, 4, 7)
    (tmp_path / "skin tex.png").write_bytes(png)
    path = tmp_path / "quad.dae"
    path.write_text(_TEXTURED)
    mesh = at.load_mesh(path)
    look = mesh.look
    doc, acc = look.document, Accessors(path, look.document, look.buffers)
    skin, hair = doc["materials"]
    assert skin["name"] == "skin" and skin["pbrMetallicRoughness"]["baseColorTexture"] == {"index": 0}
    np.testing.assert_allclose(hair["pbrMetallicRoughness"]["baseColorFactor"], [0.3, 0.2, 0.1, 1.0])
    view = doc["bufferViews"][doc["images"][0]["bufferView"]]
    assert bytes(look.buffers[0][view["byteOffset"]:][:view["byteLength"]]) == png
    prims = doc["meshes"][0]["primitives"]
    assert [p.get("material") for p in prims] == [0, 1]
    uv, normal = acc.read(prims[0]["attributes"]["TEXCOORD_0"]), acc.read(prims[0]["attributes"]["NORMAL"])
    piece = look.pieces[0]
    quad = np.unique(acc.read(prims[0]["indices"]).astype(np.int64))  # the textured primitive's vertices
    corners = {tuple(np.round(mesh.vertices[piece.vertices[k]], 6)): tuple(uv[k]) for k in quad}
    assert corners[(1.0, 0.0, 1.0)] == (1.0, 0.0)  # (1, 1, 0) turned up by the node: v flipped for glTF
    np.testing.assert_allclose(normal, np.tile([0.0, -1.0, 0.0], (len(normal), 1)), atol=1e-12)  # turned too
    assert len(piece.vertices) == 7  # the 4 quad corners and the triangle's 3, with another UV
    assert any("specular" in str(x) for x in look.lost)


def test_a_skinned_collada_targets_look_is_carried_and_its_skin_named_replaced(tmp_path):
    """A rigged .dae read as a target (load_character) keeps its UVs and materials; its own
    skin is named among what the output does not take over."""
    from asetransfer.io import load_character
    uv = ('<source id="uv"><float_array id="uva" count="4">0 0 1 1</float_array><technique_common>'
          '<accessor source="#uva" count="2" stride="2"/></technique_common></source>')
    text = (_SKINNED.replace('<vertices id="v">', uv + '<vertices id="v">')
            .replace('<polygons count="1"><input semantic="VERTEX" source="#v" offset="0"/><p>0 1 2 3</p>',
                     '<polygons count="1" material="m"><input semantic="VERTEX" source="#v" offset="0"/>'
                     '<input semantic="TEXCOORD" source="#uv" offset="1" set="0"/><p>0 0 1 1 2 1 3 0</p>')
            .replace('<tristrips count="1"><input semantic="VERTEX" source="#v" offset="0"/><p>3 2 4 5</p>',
                     '<tristrips count="1"><input semantic="VERTEX" source="#v" offset="0"/>'
                     '<input semantic="TEXCOORD" source="#uv" offset="1" set="0"/><p>3 0 2 0 4 1 5 1</p>')
            .replace('<skeleton>#root_id</skeleton>', '<skeleton>#root_id</skeleton><bind_material><technique_common>'
                     '<instance_material symbol="m" target="#red"/></technique_common></bind_material>')
            .replace("<library_geometries>", '<library_effects><effect id="red-fx"><profile_COMMON><technique sid="t">'
                     '<lambert><diffuse><color>1 0 0 1</color></diffuse></lambert></technique></profile_COMMON>'
                     '</effect></library_effects><library_materials><material id="red" name="red">'
                     '<instance_effect url="#red-fx"/></material></library_materials><library_geometries>'))
    path = tmp_path / "rigged.dae"
    path.write_text(text)
    rig = load_character(path)
    look = rig.mesh.look
    assert look.document["materials"][0]["pbrMetallicRoughness"]["baseColorFactor"] == [1.0, 0.0, 0.0, 1.0]
    assert all("TEXCOORD_0" in p["attributes"] for p in look.document["meshes"][0]["primitives"])
    assert any("own skin" in x for x in look.lost)
    assert at.load_rig(path).mesh.look is None  # read as a source: no look


def _with_morph(tmp_path, skin_over_morph: bool, points: int | None = None):
    """fixtures/source.dae with a morph controller over its body (Blender writes one beside the
    skin, over the same geometry; Maya and OpenCOLLADA a skin over the morph): one target,
    "Raise", the body's points with the upper tenth moved 1 cm up (Z: the file is Z up),
    weight 0.25; ``points``: the target's point count when another (a broken target)."""
    import re

    text = (FIXTURES / "source.dae").read_text()
    block = re.search(r'<geometry id="body-mesh" name="body">.*?</geometry>', text, re.S).group(0)
    array = re.search(r'(<float_array id="body-mesh-positions-array" count=")(\d+)(">)(.*?)(</float_array>)', block, re.S)
    values = np.array(array.group(4).split(), float).reshape(-1, 3)
    moved = values[:, 2] > np.percentile(values[:, 2], 90)
    values[moved, 2] += 0.01
    values = values[:points] if points else values
    target = block.replace(array.group(0), f"{array.group(1)}{values.size}{array.group(3)}"
                           f"{' '.join(repr(float(v)) for v in values.ravel())}{array.group(5)}")
    target = target.replace('count="7000"', f'count="{len(values)}"', 1) if points else target
    target = target.replace("body-mesh", "body-raise").replace('name="body"', 'name="Raise"')
    morph = ('<controller id="body-morph" name="body-morph"><morph source="#body-mesh" method="NORMALIZED">'
             '<source id="body-targets"><IDREF_array id="body-targets-array" count="1">body-raise</IDREF_array>'
             '</source><source id="body-weights"><float_array id="body-weights-array" count="1">0.25</float_array>'
             '<technique_common><accessor source="#body-weights-array" count="1" stride="1">'
             '<param name="MORPH_WEIGHT" type="float"/></accessor></technique_common></source><targets>'
             '<input semantic="MORPH_TARGET" source="#body-targets"/><input semantic="MORPH_WEIGHT" '
             'source="#body-weights"/></targets></morph></controller>')
    text = text.replace("</library_geometries>", target + "</library_geometries>")
    text = text.replace("</library_controllers>", morph + "</library_controllers>")
    if skin_over_morph:
        text = text.replace('<skin source="#body-mesh"', '<skin source="#body-morph"')
    path = tmp_path / "morphed.dae"
    path.write_text(text)
    return path, int(moved.sum())


@pytest.mark.parametrize("skin_over_morph", [False, True])
def test_a_collada_morph_is_a_blend_shape_either_way_it_is_tied(tmp_path, skin_over_morph):
    path, moved = _with_morph(tmp_path, skin_over_morph)
    rig, plain = at.load_rig(path), at.load_rig(FIXTURES / "source.dae")
    np.testing.assert_array_equal(rig.mesh.vertices, plain.mesh.vertices)  # the mesh as without the morph
    shape, = rig.shapes
    assert (shape.name, len(shape.vertices), shape.weight) == ("Raise", moved, 0.25)
    np.testing.assert_allclose(shape.positions, np.tile([0.0, 0.0, 0.01], (moved, 1)), atol=1e-6)


def test_a_collada_targets_morph_is_kept_and_a_broken_one_named(tmp_path, caplog):
    import logging

    from asetransfer.io.glb import read_document

    path, _ = _with_morph(tmp_path, skin_over_morph=True)
    transfer_files(FIXTURES / "source.glb", path, tmp_path / "rigged.glb")
    names = [m.get("extras", {}).get("targetNames", []) for m in read_document(tmp_path / "rigged.glb")[0]["meshes"]]
    assert ["Raise"] in [n[:1] for n in names]
    broken, _ = _with_morph(tmp_path, skin_over_morph=False, points=6000)
    with caplog.at_level(logging.WARNING, logger="asetransfer"):
        assert at.load_rig(broken).shapes == ()
    assert "morph target 'Raise' has 6000 points where its mesh has 7000; left out" in caplog.text
