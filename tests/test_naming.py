"""One side rule set: split_side, the left/right pairs built on it, and the head predicate."""
import pytest

from asetransfer.humanoid.naming import is_head_name, lr_pairs, split_side, without_running_index

CONVENTIONS = {  # convention: (left, right, side-free base)
    "MakeHuman": ("upperarm01.L", "upperarm01.R", "upperarm01"),
    "MakeHuman breast": ("breast.L", "breast.R", "breast"),
    "Mixamo": ("mixamorig:LeftArm", "mixamorig:RightArm", "arm"),
    "HumanIK": ("Character1_LeftHandIndex1", "Character1_RightHandIndex1", "handindex1"),
    "Unreal": ("upperarm_l", "upperarm_r", "upperarm"),
    "Rigify": ("DEF-upper_arm.L", "DEF-upper_arm.R", "upperarm"),
    "Rigify numbered": ("hand.L.001", "hand.R.001", "hand001"),
    "prefix": ("L_arm", "R_arm", "arm"),
    "lower-case prefix": ("l_foot", "r_foot", "foot"),
    "suffix word": ("thigh_left", "thigh_right", "thigh"),
    "dash": ("arm-L", "arm-R", "arm"),
    "Biped": ("Bip01 L Thigh", "Bip01 R Thigh", "thigh"),
    "Valve": ("ValveBiped.Bip01_L_Thigh", "ValveBiped.Bip01_R_Thigh", "thigh"),
    "VRoid": ("J_Bip_L_UpperArm", "J_Bip_R_UpperArm", "upperarm"),
    "VRoid secondary": ("J_Sec_L_Bust1", "J_Sec_R_Bust1", "bust1"),
    "Character Creator": ("CC_Base_L_Forearm", "CC_Base_R_Forearm", "forearm"),
    "Daz": ("lShldrBend", "rShldrBend", "shldrbend"),
    "VRM 1.0": ("leftUpperLeg", "rightUpperLeg", "upperleg"),
    "side word inside": ("front_left_leg", "front_right_leg", "frontleg"),
    "Second Life": ("mShoulderLeft", "mShoulderRight", "shoulder"),
    "MikuMikuDance": ("左ひざ", "右ひざ", "knee"),
    "MikuMikuDance in Blender": ("手首.L", "手首.R", "wrist"),
}


@pytest.mark.parametrize("convention", sorted(CONVENTIONS))
def test_pairs_and_sides_per_convention(convention):
    left, right, base = CONVENTIONS[convention]
    assert split_side(left) == ("l", base)
    assert split_side(right) == ("r", base)
    names = ["hips", right, "spine", left]
    assert lr_pairs(names) == [(3, 1)]  # (left, right), whatever the file order


def test_pairs_need_the_same_spelling_of_the_side():
    assert lr_pairs(["arm.L", "arm.r"]) == []        # case differs
    assert lr_pairs(["arm.L", "arm_R"]) == []        # separator differs
    assert lr_pairs(["LeftArm", "RightLeg"]) == []   # body part differs
    assert lr_pairs(["lonely.L", "head"]) == []


def test_pairs_are_in_the_order_of_the_left_joints():
    names = ["b.R", "a.L", "b.L", "a.R", "c_l", "c_r"]
    assert lr_pairs(names) == [(1, 3), (2, 0), (4, 5)]


def test_no_side_in_centre_names():
    for n in ("hips", "spine01", "neck", "lowerarm", "root", "levator02", "lowerleg01", "J_Bip_C_Hips",
              "CC_Base_Waist", "abdomenLower", "rootMotion", "ValveBiped.Bip01_Spine"):
        assert split_side(n)[0] is None, n
    assert split_side("J_Bip_C_UpperChest") == (None, "upperchest")  # VRoid's centre token


def test_head_predicate():
    for n in ("head", "Head", "mixamorig:Head", "head_jnt", "DEF-head", "mHead", "CC_Base_Head", "頭"):
        assert is_head_name(n), n
    for n in ("head_end", "HeadTop_End", "head_nub", "forehead", "headphones", "neck"):
        assert not is_head_name(n), n


def test_a_converters_running_index_is_left_out():
    """Sketchfab numbers every node it writes: ``LeftArm_09`` and ``RightArm_33`` are a pair."""
    names = ["Hips_01", "Spine_02", "Head_03", "LeftArm_09", "LeftHand_10", "RightArm_33", "RightHand_34"]
    assert without_running_index(names) == ["Hips", "Spine", "Head", "LeftArm", "LeftHand", "RightArm", "RightHand"]
    assert lr_pairs(names) == [(3, 5), (4, 6)]
    unreal = ["pelvis", "spine_01", "spine_02", "neck_01", "thigh_l", "thigh_r"]  # numbers repeat: the rig's own
    assert without_running_index(unreal) == unreal
    tail = ["root", "hips", "Tail_1", "Tail_2", "Tail_3", "leg.L", "leg.R"]  # a few numbered joints only
    assert without_running_index(tail) == tail
