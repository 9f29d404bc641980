"""Skeleton maps from naming conventions, calibration proposal, JSON format, transfer."""
import json

import numpy as np
import pytest
from conftest import DEV, FIXTURES, needs_dev, tube_rig

import asetransfer as at
from asetransfer.geometry.alignment import Similarity
from asetransfer.io.calibration import calibration_to_json, read_calibration, write_calibration
from asetransfer.handoff.calibration import propose_calibration, transfer_calibration
from asetransfer.model.correspondence import Correspondence
from asetransfer.errors import InputError
from asetransfer.model.skeleton import Skeleton
from asetransfer.humanoid.naming import split_side
from asetransfer.humanoid.skeleton_map import propose_skeleton_map
from asetransfer.model.roles import REQUIRED
from asetransfer.model.surface import SurfacePoints
from asetransfer.geometry.surface import closest_points, vertex_faces
from asetransfer_cli.main import main

# a small humanoid: key -> (parent key, position); "s" is replaced by the side sign
_TEMPLATE = [("hips", None, (0, 1.0, 0)), ("spine1", "hips", (0, 1.1, 0)), ("spine2", "spine1", (0, 1.2, 0)),
             ("chest", "spine2", (0, 1.35, 0)), ("neck", "chest", (0, 1.5, 0)), ("head", "neck", (0, 1.6, 0))]
for _s in "LR":
    _x = 1.0 if _s == "L" else -1.0
    _TEMPLATE += [
        (f"clav{_s}", "chest", (0.05 * _x, 1.45, 0)), (f"uparm{_s}", f"clav{_s}", (0.18 * _x, 1.45, 0)),
        (f"forearm{_s}", f"uparm{_s}", (0.45 * _x, 1.45, 0)), (f"hand{_s}", f"forearm{_s}", (0.7 * _x, 1.45, 0)),
        (f"thumb{_s}", f"hand{_s}", (0.75 * _x, 1.45, 0.05)), (f"index{_s}", f"hand{_s}", (0.8 * _x, 1.45, 0.03)),
        (f"middle{_s}", f"hand{_s}", (0.8 * _x, 1.45, 0)), (f"pinky{_s}", f"hand{_s}", (0.8 * _x, 1.45, -0.03)),
        (f"thigh{_s}", "hips", (0.1 * _x, 0.95, 0)), (f"calf{_s}", f"thigh{_s}", (0.1 * _x, 0.5, 0)),
        (f"foot{_s}", f"calf{_s}", (0.1 * _x, 0.08, 0)), (f"toe{_s}", f"foot{_s}", (0.1 * _x, 0.02, 0.12))]
_ROLE_OF = {"hips": "hips", "spine1": "spine", "chest": "upper_spine", "neck": "neck", "head": "head",
            "clav": "clavicle", "uparm": "shoulder", "forearm": "elbow", "hand": "wrist", "middle": "mid_hand",
            "thumb": "thumb", "index": "index", "pinky": "pinky", "thigh": "upper_leg", "calf": "knee",
            "foot": "ankle", "toe": "toe"}


def _side_names(fmt_left, fmt_right, parts):
    out = {}
    for key, name in parts.items():
        out[key + "L"], out[key + "R"] = fmt_left.format(name), fmt_right.format(name)
    return out


_SIDE_KEYS = ("clav", "uparm", "forearm", "hand", "thumb", "index", "middle", "pinky", "thigh", "calf", "foot", "toe")
CONVENTIONS = {
    "mixamo": {**{"hips": "mixamorig:Hips", "spine1": "mixamorig:Spine", "spine2": "mixamorig:Spine1",
                  "chest": "mixamorig:Spine2", "neck": "mixamorig:Neck", "head": "mixamorig:Head"},
               **_side_names("mixamorig:Left{}", "mixamorig:Right{}", dict(zip(_SIDE_KEYS, (
                   "Shoulder", "Arm", "ForeArm", "Hand", "HandThumb1", "HandIndex1", "HandMiddle1", "HandPinky1",
                   "UpLeg", "Leg", "Foot", "ToeBase"))))},
    "humanik": {**{"hips": "Character1_Hips", "spine1": "Character1_Spine", "spine2": "Character1_Spine1",
                   "chest": "Character1_Spine2", "neck": "Character1_Neck", "head": "Character1_Head"},
                **_side_names("Character1_Left{}", "Character1_Right{}", dict(zip(_SIDE_KEYS, (
                    "Shoulder", "Arm", "ForeArm", "Hand", "HandThumb1", "HandIndex1", "HandMiddle1", "HandPinky1",
                    "UpLeg", "Leg", "Foot", "ToeBase"))))},
    "makehuman": {**{"hips": "root", "spine1": "spine03", "spine2": "spine02", "chest": "spine01", "neck": "neck01",
                     "head": "head"},
                  **_side_names("{}.L", "{}.R", dict(zip(_SIDE_KEYS, (
                      "clavicle", "upperarm01", "lowerarm01", "wrist", "finger1-1", "finger2-1", "finger3-1",
                      "finger5-1", "upperleg01", "lowerleg01", "foot", "toe3-1"))))},
    "unreal": {**{"hips": "pelvis", "spine1": "spine_01", "spine2": "spine_02", "chest": "spine_03",
                  "neck": "neck_01", "head": "head"},
               **_side_names("{}_l", "{}_r", dict(zip(_SIDE_KEYS, (
                   "clavicle", "upperarm", "lowerarm", "hand", "thumb_01", "index_01", "middle_01", "pinky_01",
                   "thigh", "calf", "foot", "ball"))))},
    "rigify": {**{"hips": "DEF-spine", "spine1": "DEF-spine.001", "spine2": "DEF-spine.002",
                  "chest": "DEF-spine.003", "neck": "DEF-spine.004", "head": "DEF-spine.006"},
               **_side_names("DEF-{}.L", "DEF-{}.R", dict(zip(_SIDE_KEYS, (
                   "shoulder", "upper_arm", "forearm", "hand", "thumb.01", "f_index.01", "f_middle.01",
                   "f_pinky.01", "thigh", "shin", "foot", "toe"))))},
    # 3ds Max Biped counts the fingers from 0: Finger0 is the thumb, Finger1 the index
    "biped": {**{"hips": "Bip01 Pelvis", "spine1": "Bip01 Spine", "spine2": "Bip01 Spine1",
                 "chest": "Bip01 Spine2", "neck": "Bip01 Neck", "head": "Bip01 Head"},
              **_side_names("Bip01 L {}", "Bip01 R {}", dict(zip(_SIDE_KEYS, (
                  "Clavicle", "UpperArm", "Forearm", "Hand", "Finger0", "Finger1", "Finger2", "Finger4",
                  "Thigh", "Calf", "Foot", "Toe0"))))},
    "valve": {**{"hips": "ValveBiped.Bip01_Pelvis", "spine1": "ValveBiped.Bip01_Spine",
                 "spine2": "ValveBiped.Bip01_Spine1", "chest": "ValveBiped.Bip01_Spine2",
                 "neck": "ValveBiped.Bip01_Neck1", "head": "ValveBiped.Bip01_Head1"},
              **_side_names("ValveBiped.Bip01_L_{}", "ValveBiped.Bip01_R_{}", dict(zip(_SIDE_KEYS, (
                  "Clavicle", "UpperArm", "Forearm", "Hand", "Finger0", "Finger1", "Finger2", "Finger4",
                  "Thigh", "Calf", "Foot", "Toe0"))))},
    "vroid": {**{"hips": "J_Bip_C_Hips", "spine1": "J_Bip_C_Spine", "spine2": "J_Bip_C_Chest",
                 "chest": "J_Bip_C_UpperChest", "neck": "J_Bip_C_Neck", "head": "J_Bip_C_Head"},
              **_side_names("J_Bip_L_{}", "J_Bip_R_{}", dict(zip(_SIDE_KEYS, (
                  "Shoulder", "UpperArm", "LowerArm", "Hand", "Thumb1", "Index1", "Middle1", "Little1",
                  "UpperLeg", "LowerLeg", "Foot", "ToeBase"))))},
    "unity": {**{"hips": "Hips", "spine1": "Spine", "spine2": "Chest", "chest": "UpperChest", "neck": "Neck",
                 "head": "Head"},
              **_side_names("Left{}", "Right{}", dict(zip(_SIDE_KEYS, (
                  "Shoulder", "UpperArm", "LowerArm", "Hand", "ThumbProximal", "IndexProximal",
                  "MiddleProximal", "LittleProximal", "UpperLeg", "LowerLeg", "Foot", "Toes"))))},
    "auto_rig_pro": {**{"hips": "root.x", "spine1": "spine_01.x", "spine2": "spine_02.x", "chest": "spine_03.x",
                        "neck": "neck.x", "head": "head.x"},
                     **_side_names("{}.l", "{}.r", dict(zip(_SIDE_KEYS, (
                         "shoulder", "arm_stretch", "forearm_stretch", "hand", "thumb1", "index1", "middle1",
                         "pinky1", "thigh_stretch", "leg_stretch", "foot", "toes_01"))))},
    "second_life": {**{"hips": "mPelvis", "spine1": "mSpine1", "spine2": "mTorso", "chest": "mChest",
                       "neck": "mNeck", "head": "mHead"},
                    **_side_names("m{}Left", "m{}Right", dict(zip(_SIDE_KEYS, (
                        "Collar", "Shoulder", "Elbow", "Wrist", "HandThumb1", "HandIndex1", "HandMiddle1",
                        "HandPinky1", "Hip", "Knee", "Ankle", "Toe"))))},
    # MikuMikuDance: Japanese names, the legs under the lower body beside the upper body
    "mmd": {**{"hips": "センター", "pelvis": "下半身", "spine1": "上半身", "spine2": "上半身2", "chest": "上半身3",
               "neck": "首", "head": "頭"},
            **_side_names("左{}", "右{}", dict(zip(_SIDE_KEYS, (
                "肩", "腕", "ひじ", "手首", "親指１", "人指１", "中指１", "小指１", "足", "ひざ", "足首", "つま先"))))},
    # MikuMikuDance's English names: the upper leg is "leg", the knee "knee"
    "mmd_english": {**{"hips": "center", "pelvis": "lower body", "spine1": "upper body", "spine2": "upper body2",
                       "chest": "upper body3", "neck": "neck", "head": "head"},
                    **_side_names("{}_L", "{}_R", dict(zip(_SIDE_KEYS, (
                        "shoulder", "arm", "elbow", "wrist", "thumb1", "fore1", "middle1", "little1", "leg", "knee",
                        "ankle", "toe"))))},
    # Character Creator and Daz hang the thighs from a pelvis beside the spine (LEG_PELVIS)
    "character_creator": {**{"hips": "CC_Base_Hip", "spine1": "CC_Base_Waist", "spine2": "CC_Base_Spine01",
                             "chest": "CC_Base_Spine02", "neck": "CC_Base_NeckTwist01", "head": "CC_Base_Head",
                             "pelvis": "CC_Base_Pelvis"},
                          **_side_names("CC_Base_L_{}", "CC_Base_R_{}", dict(zip(_SIDE_KEYS, (
                              "Clavicle", "Upperarm", "Forearm", "Hand", "Thumb1", "Index1", "Mid1", "Pinky1",
                              "Thigh", "Calf", "Foot", "ToeBase"))))},
    "daz": {**{"hips": "hip", "spine1": "abdomenLower", "spine2": "abdomenUpper", "chest": "chestUpper",
               "neck": "neckLower", "head": "head", "pelvis": "pelvis"},
            **_side_names("l{}", "r{}", dict(zip(_SIDE_KEYS, (
                "Collar", "ShldrBend", "ForearmBend", "Hand", "Thumb1", "Index1", "Mid1", "Pinky1",
                "ThighBend", "Shin", "Foot", "Toe"))))},
}


# Sketchfab's glTF export appends a running index to every node name (mixamorig:Hips_01)
CONVENTIONS["sketchfab"] = {key: f"{name}_{k:02d}" for k, (key, name) in enumerate(CONVENTIONS["mixamo"].items(), 1)}


def template_skeleton(names: dict, floor_root: str | None = None) -> Skeleton:
    """The template humanoid named by ``names`` (key -> name); a ``"pelvis"`` key hangs the
    thighs from a pelvis joint below the hips, beside the spine."""
    template = _TEMPLATE
    if "pelvis" in names:
        template = [(k, "pelvis" if k.startswith("thigh") else p, at) for k, p, at in template]
        template.insert(1, ("pelvis", "hips", (0, 0.98, 0)))
    keys = [k for k, _, _ in template]
    parents = [keys.index(p) if p else -1 for _, p, _ in template]
    world = np.tile(np.eye(4), (len(keys), 1, 1))
    world[:, :3, 3] = [p for _, _, p in template]
    out_names = [names[k] for k in keys]
    if floor_root:  # an extra root joint on the floor above the hips (Unreal)
        parents = [-1] + [p + 1 if p >= 0 else 0 for p in parents]
        world = np.concatenate([np.eye(4)[None], world])
        out_names = [floor_root] + out_names
    return Skeleton.from_world(out_names, parents, world)


@pytest.mark.parametrize("convention", sorted(CONVENTIONS))
def test_skeleton_map_from_naming_conventions(convention):
    names = CONVENTIONS[convention]
    sk = template_skeleton(names, floor_root="root" if convention == "unreal" else None)
    mapping, missing = propose_skeleton_map(sk)
    assert missing == []
    expected = {}
    for key, name in names.items():
        base = key[:-1] if key[-1] in "LR" and key[:-1] in _ROLE_OF else key
        if base in _ROLE_OF:
            role = _ROLE_OF[base]
            expected[role if base == key else f"{role}_{key[-1].lower()}"] = name
    assert mapping == expected


def _renamed(rig, names: dict):
    """``rig`` with its joints renamed by ``names`` (old -> new; the others kept)."""
    from dataclasses import replace

    from asetransfer.model.rig import Rig
    skeleton = replace(rig.skeleton, names=tuple(names.get(n, n) for n in rig.skeleton.names))
    return Rig(rig.mesh, skeleton, rig.skin)


def _biped_names(names) -> dict:
    """3ds Max Biped names for the fixture source's joints (``thumb.02.L`` -> ``Bip01 L Finger01``)."""
    out = {"hips": "Bip01 Pelvis", "spine.001": "Bip01 Spine", "spine.002": "Bip01 Spine1",
           "spine.003": "Bip01 Spine2", "neck": "Bip01 Neck", "head": "Bip01 Head", "head_end": "Bip01 HeadNub"}
    for s in "LR":
        out.update({f"clavicle.{s}": f"Bip01 {s} Clavicle", f"upperarm.{s}": f"Bip01 {s} UpperArm",
                    f"forearm.{s}": f"Bip01 {s} Forearm", f"hand.{s}": f"Bip01 {s} Hand",
                    f"thigh.{s}": f"Bip01 {s} Thigh", f"shin.{s}": f"Bip01 {s} Calf", f"foot.{s}": f"Bip01 {s} Foot",
                    f"toe.{s}": f"Bip01 {s} Toe0", f"toe_end.{s}": f"Bip01 {s} Toe0Nub"})
        for k, finger in enumerate(("thumb", "index", "middle", "ring", "pinky")):
            out.update({f"{finger}.01.{s}": f"Bip01 {s} Finger{k}", f"{finger}.02.{s}": f"Bip01 {s} Finger{k}1",
                        f"{finger}.03.{s}": f"Bip01 {s} Finger{k}2", f"{finger}_end.{s}": f"Bip01 {s} Finger{k}Nub"})
    assert set(out) == set(names)
    return out


def test_calibrate_source_of_a_biped_rig_maps_finger0_as_the_thumb(tmp_path, fixture_source):
    """A 3ds Max Biped rig was mapped one finger off (Finger1, the index, read as the thumb)."""
    at.save_rig(tmp_path / "biped.glb", _renamed(fixture_source, _biped_names(fixture_source.skeleton.names)))
    out = tmp_path / "biped.calibration.json"
    assert main(["calibrate-source", str(tmp_path / "biped.glb"), "-o", str(out), "-q"]) == 0
    mapping = json.loads(out.read_text())["skeleton_map"]
    for s, side in (("L", "l"), ("R", "r")):
        assert mapping[f"thumb_{side}"] == f"Bip01 {s} Finger0"
        assert mapping[f"index_{side}"] == f"Bip01 {s} Finger1"
        assert mapping[f"mid_hand_{side}"] == f"Bip01 {s} Finger2"
        assert mapping[f"pinky_{side}"] == f"Bip01 {s} Finger4"


def _daz_names(names) -> dict:
    """Daz Genesis names for the fixture source's joints (``forearm.L`` -> ``lForearmBend``,
    ``middle.02.R`` -> ``rMid2``)."""
    out = {"hips": "hip", "spine.001": "abdomenLower", "spine.002": "abdomenUpper", "spine.003": "chestUpper",
           "neck": "neckLower", "head": "head", "head_end": "head_end"}
    parts = {"clavicle": "Collar", "upperarm": "ShldrBend", "forearm": "ForearmBend", "hand": "Hand",
             "thigh": "ThighBend", "shin": "Shin", "foot": "Foot", "toe": "Toe", "toe_end": "Toe_end"}
    fingers = {"thumb": "Thumb", "index": "Index", "middle": "Mid", "ring": "Ring", "pinky": "Pinky"}
    for s in "LR":
        side = s.lower()
        out.update({f"{part}.{s}": f"{side}{name}" for part, name in parts.items()})
        for finger, name in fingers.items():
            out.update({f"{finger}.0{i}.{s}": f"{side}{name}{i}" for i in (1, 2, 3)})
            out[f"{finger}_end.{s}"] = f"{side}{name}_end"
    assert set(out) == set(names)
    return out


def test_a_source_named_as_daz_rigs_as_the_same_source_named_as_blender(tmp_path, fixture_source):
    """Daz's names (a side letter fused to a camel-case part, ``lShldrBend``, ``rMid1``) were
    not read: no skeleton map, so no mirroring, and the source's landmarks from its shape
    alone.  Named either way the source rigs the target the same."""
    from asetransfer.job import transfer_files
    rename = _daz_names(fixture_source.skeleton.names)
    mapping, missing = propose_skeleton_map(_renamed(fixture_source, rename).skeleton)
    assert missing == [] and mapping["shoulder_l"] == "lShldrBend" and mapping["mid_hand_r"] == "rMid1"
    at.save_rig(tmp_path / "daz_source.glb", _renamed(fixture_source, rename))
    rigs = {}
    for name, source in (("blender", FIXTURES / "source.glb"), ("daz", tmp_path / "daz_source.glb")):
        done = transfer_files(source, FIXTURES / "target_tall.obj", tmp_path / f"{name}.glb")
        assert done.report.quality.verdict == "ok"
        rigs[name] = at.load_rig(tmp_path / f"{name}.glb").skeleton
    assert rigs["daz"].names == tuple(rename[n] for n in rigs["blender"].names)
    # the same to the rounding of sums taken in another order (the target is 189 units tall)
    np.testing.assert_allclose(rigs["daz"].bind_world, rigs["blender"].bind_world, atol=1e-4)


def test_numbered_fingers_beside_a_named_thumb_count_from_the_index(fixture_source):
    """Without a Finger0 the numbering is ambiguous: the hand's geometry finds the thumb (the chain
    apart from the others); numbered fingers beside a thumb named by word count from the index,
    numbered fingers whose chain 1 is the thumb count from 1 (MakeHuman)."""
    from asetransfer.humanoid.skeleton_map import numbered_from_zero, thumb_chain
    rename = {}
    for s in "LR":
        for k, finger in enumerate(("index", "middle", "ring", "pinky"), start=1):
            rename.update({f"{finger}.0{i}.{s}": f"finger{k}_{i}.{s}" for i in (1, 2, 3)})
    mapping, _ = propose_skeleton_map(_renamed(fixture_source, rename).skeleton)
    assert mapping["thumb_l"] == "thumb.01.L" and mapping["index_l"] == "finger1_1.L"
    assert mapping["mid_hand_r"] == "finger2_1.R" and mapping["pinky_r"] == "finger4_1.R"
    # the same hand with all five numbered from 1 (MakeHuman): chain 1 is the thumb
    sk = fixture_source.skeleton
    below = sk.hierarchy.descendants(sk.names.index("hand.L"))
    makehuman = {f"{finger}{part}.L": f"finger{k}-{i}.L" for k, finger in enumerate(
        ("thumb", "index", "middle", "ring", "pinky"), start=1)
        for i, part in enumerate((".01", ".02", ".03", "_end"), start=1)}
    numbered = [makehuman[sk.names[j]] for j in below]
    positions = sk.rest_world()[below, :3, 3]
    assert thumb_chain(numbered, positions) == "1" and not numbered_from_zero(numbered, positions)
    assert thumb_chain([sk.names[j] for j in below], positions) == "thumb"


def test_split_side_examples():
    assert split_side("mixamorig:LeftForeArm") == ("l", "forearm")
    assert split_side("DEF-upper_arm.R.001") == ("r", "upperarm001")
    assert split_side("calf_l") == ("l", "calf")
    assert split_side("L_knee") == ("l", "knee")
    assert split_side("spine_01") == (None, "spine01")
    assert split_side("Character1_RightHandIndex1") == ("r", "handindex1")


def test_non_humanoid_rig_reports_missing_roles():
    _, missing = propose_skeleton_map(tube_rig().skeleton)
    assert set(missing) == set(REQUIRED)
    with pytest.raises(ValueError, match="cannot map the humanoid joint role"):
        propose_calibration(tube_rig())


# ---------------------------------------------------------------------- proposal on the fixture
@pytest.fixture(scope="module")
def calibration(fixture_source):
    return propose_calibration(fixture_source, FIXTURES / "source.glb")


def _positions(cal):
    return {p.name: p.position for p in cal.surface_points + cal.key_vertices}


def test_proposal_places_tonoli_points_and_41_key_vertices(fixture_source, calibration):
    cal, rig = calibration, fixture_source
    assert len(cal.surface_points) == 31 and len(cal.key_vertices) == 41
    assert {p.kind for p in cal.surface_points} == {"mesh", "limb"}
    assert sum(p.kind == "limb" for p in cal.surface_points) == 8
    pos = _positions(cal)
    # on the surface, and key vertices are mesh vertices
    all_pts = np.array(list(pos.values()))
    assert closest_points(all_pts, rig.mesh.vertices, rig.mesh.faces)[2].max() < 1e-9
    for p in cal.key_vertices:
        np.testing.assert_allclose(p.position, rig.mesh.vertices[p.vertex], atol=1e-12)
    # left at +X, right mirrored (the fixture is symmetric up to its tessellation)
    for n in pos:
        if n.endswith(".L"):
            assert pos[n][0] > 0.01 and pos[n[:-2] + ".R"][0] < -0.01
            assert np.abs(pos[n] * [-1, 1, 1] - pos[n[:-2] + ".R"]).max() < 0.02, n
    # anatomy, in the fixture's frame (Y up, facing +Z, soles at 0, head top 1.736)
    top = rig.mesh.vertices[:, 1].max()
    assert pos["head_top"][1] > top - 0.005
    assert pos["forehead_middle"][2] > 0.05 and pos["nape_middle"][2] < -0.03
    assert pos["forehead_middle"][1] > pos["mouth"][1] > pos["chin.L"][1] > pos["chest.L"][1] > pos["abdomen.L"][1]
    assert pos["chest.L"][2] > 0.05 and pos["loin.L"][2] < -0.05
    assert pos["toe_tip.L"][2] > pos["sole.L"][2] > pos["heel.L"][2] and pos["heel.L"][1] < 0.1
    assert pos["middle_tip.L"][0] > 0.7  # the finger tip is the far end of the arm
    # attached joints: the local coordinates bring the point back in the bind pose
    for p in cal.surface_points:
        m = rig.skeleton.bind_world[rig.skeleton.index(p.joint)]
        np.testing.assert_allclose(m[:3, :3] @ p.local + m[:3, 3], p.position, atol=1e-6)
    # crude meshes reference existing points, triangles face outwards
    for tris in cal.meshes.values():
        for t in tris:
            a, b, c = (pos[n] for n in t)
            centre = np.mean([pos[n] for tri in tris for n in tri], axis=0)
            assert np.cross(b - a, c - a) @ ((a + b + c) / 3 - centre) >= 0


def test_a_minimal_skeleton_map_is_enough(fixture_source, calibration):
    """Only the required roles: points attach to stand-ins (spine -> hips, neck -> head,
    mid-hand -> wrist), hands and feet fall back on arm and body directions."""
    full, _ = propose_skeleton_map(fixture_source.skeleton)
    cal = propose_calibration(fixture_source, mapping={k: v for k, v in full.items() if k in REQUIRED})
    assert len(cal.surface_points) == 31 and len(cal.key_vertices) == 41
    assert cal.point("abdomen.L").joint == "hips" and cal.point("nape_middle").joint == "head"
    assert cal.point("middle_tip.L").joint == "hand.L"
    assert set(cal.tpose["checks"]) == {"arms_horizontal", "legs_straight"}
    # points that need no optional joint are where the full map puts them
    for name in ("chest.L", "forehead_middle", "thigh.R", "head_top", "crotch"):
        np.testing.assert_allclose(cal.point(name).position, calibration.point(name).position, atol=1e-9)


def test_measurements_of_the_fixture(calibration):
    cal = calibration
    assert cal.units["length"] == "m" and cal.axes["up"] == [0.0, 1.0, 0.0]
    assert cal.root_height == pytest.approx(0.98, abs=0.01)  # hips at y = 0.98, soles at 0
    seg = cal.segment_lengths
    assert seg["arm.L"]["length"] == pytest.approx(0.28, abs=1e-6)   # generator: upper arm 0.28
    assert seg["forearm.L"]["length"] == pytest.approx(0.25, abs=1e-6)
    assert seg["femur.L"]["length"] == pytest.approx(0.42, abs=1e-6)
    radii = {c.name: c.radius for c in cal.capsules}
    assert 0.02 < radii["forearm.L"] < radii["upper_arm.L"] < radii["thigh.L"] < 0.12
    assert radii["thigh.L"] == pytest.approx(radii["thigh.R"], rel=0.02)
    assert cal.tpose["checks"] == {"arms_horizontal": 0.0, "palms_down": 0.0, "legs_straight": 0.0,
                                   "feet_forward": 0.0}


def test_json_round_trip_and_hand_edits(tmp_path, fixture_source, calibration):
    path = tmp_path / "cal.json"
    write_calibration(path, calibration)
    text = path.read_text()
    doc = json.loads(text)
    for key in ("skeleton_map", "segment_lengths", "root_height", "surface_points", "capsules", "key_vertices",
                "units"):
        assert key in doc
    assert calibration_to_json(read_calibration(path, fixture_source)) == text  # resolved on the rig
    assert calibration_to_json(read_calibration(path)) == text                  # as stored
    # a TD moves a point by vertex or by position: positions and local coordinates follow
    doc["surface_points"][0].pop("face")
    doc["surface_points"][0].pop("bary")
    doc["surface_points"][0]["vertex"] = 100
    doc["surface_points"][1] = {k: v for k, v in doc["surface_points"][1].items() if k not in ("face", "bary")}
    doc["surface_points"][1]["point"] = list(fixture_source.mesh.vertices[200] + [0, 0, 1e-4])
    (tmp_path / "edited.json").write_text(json.dumps(doc))
    edited = read_calibration(tmp_path / "edited.json", fixture_source)
    np.testing.assert_allclose(edited.surface_points[0].position, fixture_source.mesh.vertices[100], atol=1e-12)
    np.testing.assert_allclose(edited.surface_points[1].position, fixture_source.mesh.vertices[200], atol=1e-3)


@pytest.mark.parametrize("edit, message", [
    (lambda d: d.update(format="other"), "not a calibration file"),
    (lambda d: d["skeleton_map"].update(elbow_x="forearm.L"), "unknown role 'elbow_x'"),
    (lambda d: d["skeleton_map"].update(elbow_l="nope"), "maps to joint 'nope'"),
    (lambda d: d["skeleton_map"].pop("head"), "required role 'head' is not mapped"),
    (lambda d: d["surface_points"][2].update(bary=[0.5, 0.6, 0.1]), "surface_points[2] ('abdomen.L')"),
    (lambda d: d["key_vertices"][0].update(face=10 ** 6), "key_vertices[0] ('head_top'): character.face 1000000"),
    (lambda d: d["surface_points"][3].update(joint="tail"), "joint 'tail' is not in the rig"),
    (lambda d: d["meshes"]["head"].append(["ear.L", "ear.R", "elbow.L"]), "'elbow.L', which is not a surface point"),
    (lambda d: d["capsules"][0].update(radius=-1), "capsules[0] ('upper_arm.L'): radius must be"),
    (lambda d: d["surface_points"].append(dict(d["surface_points"][0])), "name already used"),
])
def test_invalid_calibrations_are_input_errors(tmp_path, fixture_source, calibration, edit, message):
    doc = json.loads(calibration_to_json(calibration))
    edit(doc)
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    with pytest.raises(InputError) as e:
        read_calibration(tmp_path / "bad.json", fixture_source)
    assert message in str(e.value) and "bad.json" in str(e.value)


def _identity_correspondence(mesh, alignment=None):
    face, corner = vertex_faces(mesh.n_vertices, mesh.faces)
    m = SurfacePoints(face, np.eye(3)[corner])
    al = alignment or Similarity(1.0, np.eye(3), np.zeros(3))
    return Correspondence(m, m, al, mesh.vertices, mesh.vertices, mesh.vertices)


def test_transfer_through_an_identity_correspondence_keeps_everything(fixture_source, calibration):
    rig = fixture_source
    out = transfer_calibration(calibration, rig, rig, _identity_correspondence(rig.mesh))
    for a, b in zip(calibration.surface_points + calibration.key_vertices, out.surface_points + out.key_vertices):
        assert (a.name, a.joint, a.vertex) == (b.name, b.joint, b.vertex)
        np.testing.assert_allclose(b.position, a.position, atol=1e-9)
    assert out.segment_lengths == calibration.segment_lengths and out.root_height == calibration.root_height
    assert [c.radius for c in out.capsules] == [c.radius for c in calibration.capsules]


def test_transfer_to_a_scaled_moved_copy_moves_every_point(fixture_source, calibration):
    """A target that is the source scaled x100 (centimetres) and turned: points, lengths and
    radii follow exactly; units are recognised."""
    from scipy.spatial.transform import Rotation
    R = Rotation.from_euler("y", 30, degrees=True).as_matrix()
    sim = Similarity(100.0, R, np.array([10.0, 0.0, -5.0]))
    rig = fixture_source
    sk = rig.skeleton
    bind = sk.bind_world.copy()
    bind[:, :3, :3] = R @ bind[:, :3, :3]
    bind[:, :3, 3] = sim.apply(bind[:, :3, 3])
    target = at.Rig(rig.mesh.with_vertices(sim.apply(rig.mesh.vertices)),
                    Skeleton.from_world(sk.names, sk.parents, bind), rig.skin)
    out = transfer_calibration(calibration, rig, target, _identity_correspondence(target.mesh, sim))
    for a, b in zip(calibration.surface_points, out.surface_points):
        np.testing.assert_allclose(b.position, sim.apply(a.position[None])[0], atol=1e-6)
        np.testing.assert_allclose(b.local, 100 * a.local, atol=1e-5)
    assert out.units["length"] == "cm" and out.root_height == pytest.approx(100 * calibration.root_height, rel=1e-6)
    for a, b in zip(calibration.capsules, out.capsules):
        assert b.radius == pytest.approx(100 * a.radius, rel=1e-5)


def test_cli_calibrate_source(tmp_path, capsys):
    out = tmp_path / "cal.json"
    assert main(["calibrate-source", str(FIXTURES / "source.glb"), "-o", str(out)]) == 0
    first = out.read_bytes()
    assert "31 surface points, 41 key vertices, 8 capsules" in capsys.readouterr().out
    assert main(["calibrate-source", str(FIXTURES / "source.glb"), "-o", str(out), "-q"]) == 0
    assert out.read_bytes() == first  # deterministic
    # a role set by hand
    assert main(["calibrate-source", str(FIXTURES / "source.glb"), "-o", str(out), "-q",
                 "--map", "spine=spine.002"]) == 0
    assert json.loads(out.read_text())["skeleton_map"]["spine"] == "spine.002"
    # errors: unknown role, unknown joint, a rig that is no humanoid
    assert main(["calibrate-source", str(FIXTURES / "source.glb"), "-o", str(out), "--map", "tail=hips"]) == 2
    assert main(["calibrate-source", str(FIXTURES / "source.glb"), "-o", str(out), "--map", "neck=nope"]) == 2
    capsys.readouterr()
    assert main(["calibrate-source", str(FIXTURES / "source.glb"), "-o", str(out), "--map", "hips=hips",
                 "--map", "hips=neck"]) == 2  # one role, two joints: which was meant cannot be told
    assert "role 'hips' is already mapped to 'hips'" in capsys.readouterr().err
    at.save_rig(tmp_path / "tube.glb", tube_rig())
    assert main(["calibrate-source", str(tmp_path / "tube.glb"), "-o", str(out)]) == 2
    assert "cannot map the humanoid joint role" in capsys.readouterr().err


@needs_dev
@pytest.mark.parametrize("case", ["d01_female", "d04_reduced_female"])
def test_dev_sources_calibrate(case):
    rig = at.load_rig(DEV / case / "source.glb")
    cal = propose_calibration(rig)
    assert cal.skeleton_map["hips"] == "root" and cal.skeleton_map["elbow_l"] == "lowerarm01.L"
    assert cal.skeleton_map["mid_hand_r"] == "finger3-1.R" and cal.skeleton_map["toe_l"] == "toe3-1.L"
    pos = _positions(cal)
    # against the dev set's own semantic markers on the same mesh (1.73 m body)
    marks = {m["name"]: np.array(m["source"]["point"])
             for m in json.loads((DEV / case / "markers_sparse.json").read_text())["markers"]}
    for ours, theirs, tol in (("head_top", "head_top", 0.02), ("chin", "chin", 0.03), ("crotch", "crotch", 0.04),
                              ("heel.L", "heel.L", 0.04), ("chest.L", "nipple.L", 0.03), ("ear.L", "ear.L", 0.03),
                              ("middle_tip.L", "middle_tip.L", 0.02), ("thumb_tip.L", "thumb_tip.L", 0.03)):
        assert np.linalg.norm(pos[ours] - marks[theirs]) < tol, ours
