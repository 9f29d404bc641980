"""VRM avatars: the humanoid a .vrm declares read as the skeleton map (whatever its joints are
named), and a rig written over a VRM target declaring its new joints."""
from __future__ import annotations

import logging

import numpy as np
import pytest

from asetransfer.humanoid.bones import humanoid_bones, side_pairs
from asetransfer.humanoid.naming import lr_pairs
from asetransfer.humanoid.skeleton_map import propose_skeleton_map
from asetransfer.io import load_mesh, load_rig
from asetransfer.io.glb import pack_glb, read_document
from asetransfer.job import transfer_files
from vrm_builder import BONES, SOURCE, save_vrm, vrm0_bone, vrm_document

TALL = SOURCE.parent / "target_tall.obj"


def numbered(names):
    """A renaming of the fixture's joints that no naming convention reads (``Bone.007``)."""
    order = {n: k for k, n in enumerate(names)}
    return lambda name: f"Bone.{order[name]:03d}"


@pytest.fixture(scope="module")
def named():
    return load_rig(SOURCE)


@pytest.mark.parametrize("version", ["1.0", "0.x"])
def test_a_vrm_with_meaningless_joint_names_maps_as_its_humanoid_declares(tmp_path, named, version):
    path = save_vrm(tmp_path / "avatar.vrm", version, rename=numbered(named.skeleton.names))
    rig = load_rig(path)
    assert not any(n in rig.skeleton.names for n in named.skeleton.names)  # no name left to read
    assert rig.skeleton.humanoid_bones == {bone: rig.skeleton.names[named.skeleton.index(joint)]
                                           for joint, bone in BONES.items()}
    by_names, missing = propose_skeleton_map(named.skeleton)
    declared, declared_missing = propose_skeleton_map(rig.skeleton)
    assert missing == declared_missing == []
    assert {role: named.skeleton.names[rig.skeleton.index(j)] for role, j in declared.items()} == by_names
    # the left/right pairs: the declared ones followed down to the finger ends, as the names pair them
    assert side_pairs(rig.skeleton) == lr_pairs(named.skeleton.names)


def test_without_a_declaration_the_pairs_are_the_names(named):
    assert side_pairs(named.skeleton) == lr_pairs(named.skeleton.names)


def test_a_vrm_source_named_anyhow_rigs_a_target_as_its_named_twin(tmp_path, named):
    path = save_vrm(tmp_path / "avatar.vrm", rename=numbered(named.skeleton.names))
    twin = transfer_files(SOURCE, TALL, tmp_path / "named.glb").result.rig
    rigged = transfer_files(path, TALL, tmp_path / "vrm.glb")
    height = np.ptp(twin.mesh.vertices, axis=0).max()
    np.testing.assert_allclose(rigged.result.rig.skeleton.bind_world[:, :3, 3], twin.skeleton.bind_world[:, :3, 3],
                               atol=1e-6 * height)
    assert rigged.report.skeleton.mirrored and rigged.report.skeleton.lr_pairs == 29


def test_the_humanoid_bones_a_rig_named_by_convention_plays(named):
    """The fixture's own joints named by a convention: each VRM bone found from the skeleton
    map (the chest down the spine, the ring finger between the middle and little ones, each
    finger's segments down its chain) is the one the table gives."""
    assert humanoid_bones(named.skeleton, propose_skeleton_map(named.skeleton)[0]) == \
        {bone: joint for joint, bone in BONES.items()}


def _humanoid(doc, version):
    ext = doc["extensions"]
    if version == "1.0":
        return {bone: entry["node"] for bone, entry in ext["VRMC_vrm"]["humanoid"]["humanBones"].items()}
    return {entry["bone"]: entry["node"] for entry in ext["VRM"]["humanoid"]["humanBones"]}


@pytest.mark.parametrize("version", ["1.0", "0.x"])
def test_a_rig_over_a_vrm_target_declares_its_new_joints(tmp_path, caplog, version):
    """The target's humanoid named its own joints, which the output keeps as plain nodes: a
    VRM runtime posing them would move nothing.  Written over, every bone names the new
    joint playing it (found by the source's skeleton map), and the spring bones, which move
    the old joints, are left out and said."""
    target = save_vrm(tmp_path / "target.vrm", version, rename=lambda n: "X_" + n)
    out = tmp_path / "rigged.glb"
    with caplog.at_level(logging.WARNING, logger="asetransfer"):
        transfer_files(SOURCE, target, out)
    doc, _ = read_document(out)
    skin = doc["skins"][-1]["joints"]
    humanoid = _humanoid(doc, version)
    expected = {(bone if version == "1.0" else vrm0_bone(bone)): joint for joint, bone in BONES.items()}
    assert {bone: doc["nodes"][node]["name"] for bone, node in humanoid.items()} == expected
    assert all(node in skin for node in humanoid.values())
    said = " ".join(r.getMessage() for r in caplog.records)
    if version == "1.0":
        assert "VRMC_springBone" not in doc["extensions"] and "VRMC_springBone" not in doc["extensionsUsed"]
        assert "VRMC_springBone (it names the target's old joints)" in said
    else:
        vrm0 = doc["extensions"]["VRM"]
        assert "secondaryAnimation" not in vrm0
        assert doc["nodes"][vrm0["firstPerson"]["firstPersonBone"]]["name"] == "head"
        assert all(entry["useDefaultValues"] is True for entry in vrm0["humanoid"]["humanBones"])
        assert "spring bones (secondaryAnimation" in said
    assert doc["extensions"]["VRMC_vrm" if version == "1.0" else "VRM"]["meta"]  # the avatar's metadata kept


def test_bones_the_new_skeleton_has_no_joint_for_are_named(tmp_path, caplog):
    """A target declaring a jaw, which the source's skeleton has no joint for: the output's
    humanoid leaves it out and says so."""
    doc, blob = vrm_document("1.0", springs=False)
    doc["extensions"]["VRMC_vrm"]["humanoid"]["humanBones"]["jaw"] = {"node": doc["skins"][0]["joints"][6]}
    target = tmp_path / "target.vrm"
    target.write_bytes(pack_glb(doc, blob))
    with caplog.at_level(logging.WARNING, logger="asetransfer"):
        transfer_files(SOURCE, target, tmp_path / "out.glb")
    humanoid = _humanoid(read_document(tmp_path / "out.glb")[0], "1.0")
    assert "jaw" not in humanoid and len(humanoid) == len(BONES)
    assert "VRM humanoid bone(s) jaw (no joint of the new skeleton plays them)" in caplog.text


def test_a_vrm_source_declares_the_bones_over_a_vrm_target_of_the_other_version(tmp_path, named):
    """A 1.0 source named anyhow over a 0.x target: each bone the source declares names its
    joint (the 0.x thumb names for the same joints)."""
    rename = numbered(named.skeleton.names)
    source = save_vrm(tmp_path / "source.vrm", "1.0", rename=rename)
    target = save_vrm(tmp_path / "target.vrm", "0.x", rename=lambda n: "X_" + n)
    transfer_files(source, target, tmp_path / "out.glb")
    doc, _ = read_document(tmp_path / "out.glb")
    assert {bone: doc["nodes"][node]["name"] for bone, node in _humanoid(doc, "0.x").items()} == \
        {vrm0_bone(bone): rename(joint) for joint, bone in BONES.items()}


@pytest.mark.parametrize("humanoid, declared", [
    ("not an object", {}), ({"humanBones": "x"}, {}), ({"humanBones": {"hips": {"node": "three"}, "spine": 4}}, {}),
    ({"humanBones": {"hips": {"node": 100000}}}, {}),
    ({"humanBones": {"hips": {"node": 0}, "spine": {"node": 0}}}, {"hips": "hips"})])  # a node plays one bone
def test_a_malformed_humanoid_declares_nothing_wrong_and_is_no_failure(tmp_path, humanoid, declared):
    doc, blob = vrm_document("1.0", springs=False)
    doc["extensions"]["VRMC_vrm"]["humanoid"] = humanoid
    path = tmp_path / "odd.vrm"
    path.write_bytes(pack_glb(doc, blob))
    rig = load_rig(path)
    assert rig.skeleton.humanoid_bones == declared
    assert propose_skeleton_map(rig.skeleton) == propose_skeleton_map(load_rig(SOURCE).skeleton)


def test_a_vrm_is_read_as_a_target_mesh(tmp_path):
    path = save_vrm(tmp_path / "avatar.vrm")
    mesh = load_mesh(path)
    np.testing.assert_array_equal(mesh.vertices, load_mesh(SOURCE).vertices)


def test_a_vrm_output_over_a_vrm_target_is_the_glb_output(tmp_path):
    target = save_vrm(tmp_path / "target.vrm", rename=lambda n: "X_" + n)
    transfer_files(SOURCE, target, tmp_path / "rigged.glb")
    transfer_files(SOURCE, target, tmp_path / "rigged.vrm")
    assert (tmp_path / "rigged.vrm").read_bytes() == (tmp_path / "rigged.glb").read_bytes()


def test_a_vrm_output_over_another_target_is_refused_before_any_work(tmp_path, capsys):
    from asetransfer_cli.main import main

    out = tmp_path / "tall.vrm"
    assert main(["transfer", str(SOURCE), str(TALL), "-o", str(out), "-q"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "tall.vrm" in err[0] and "target_tall.obj is no VRM: write .glb" in err[0]
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_info_says_what_humanoid_a_vrm_declares(tmp_path, capsys):
    from asetransfer_cli.main import main

    path = save_vrm(tmp_path / "avatar.vrm", rename=lambda n: "X_" + n)
    assert main(["info", path]) == 0
    assert "humanoid        52 bones declared by the file (hips X_hips, head X_head)" in capsys.readouterr().out


def test_a_vrm0_bind_on_a_mesh_two_skinned_nodes_share_drives_both(tmp_path):
    """VRM 0.x binds name a mesh by index; the rig writes a shared mesh once per skinned node
    (a copy for the second), and the bind and the first-person annotation follow the copy."""
    doc, blob = vrm_document("0.x")
    skinned = next(i for i, n in enumerate(doc["nodes"]) if "skin" in n and "mesh" in n)
    mesh = doc["nodes"][skinned]["mesh"]
    doc["nodes"].append({"name": "twin", "mesh": mesh, "skin": doc["nodes"][skinned]["skin"]})
    doc["scenes"][doc.get("scene", 0)]["nodes"].append(len(doc["nodes"]) - 1)
    vrm0 = doc["extensions"]["VRM"]
    vrm0["blendShapeMaster"] = {"blendShapeGroups": [
        {"name": "Blink", "presetName": "blink", "binds": [{"mesh": mesh, "index": 0, "weight": 100}]}]}
    vrm0["firstPerson"]["meshAnnotations"] = [{"mesh": mesh, "firstPersonFlag": "Auto"}]
    target = tmp_path / "twins.vrm"
    target.write_bytes(pack_glb(doc, blob))
    transfer_files(SOURCE, target, tmp_path / "rigged.vrm")
    out, _ = read_document(tmp_path / "rigged.vrm")
    used = sorted(out["nodes"][i]["mesh"] for i in (skinned, len(doc["nodes"]) - 1))
    assert used[0] != used[1]
    binds = out["extensions"]["VRM"]["blendShapeMaster"]["blendShapeGroups"][0]["binds"]
    assert sorted(b["mesh"] for b in binds) == used
    assert all(b["index"] == 0 and b["weight"] == 100 for b in binds)
    annotations = out["extensions"]["VRM"]["firstPerson"]["meshAnnotations"]
    assert sorted(a["mesh"] for a in annotations) == used
