"""BVH reading/writing, exact forward kinematics, and BVH <-> rig-rotation conversion."""
import numpy as np
import pytest
from conftest import DEV, FIXTURES, needs_dev, tube_rig
from scipy.spatial.transform import Rotation

import asetransfer as at
from asetransfer.model.animation import Animation
from asetransfer.model.bvh import Bvh
from asetransfer.handoff.motion import animation_to_bvh, bvh_to_animation
from asetransfer.io.bvh import parse_bvh, read_bvh, write_bvh
from asetransfer.errors import InputError

TWO_JOINTS = """HIERARCHY
ROOT hips
{
  OFFSET 0 1 0
  CHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation
  JOINT arm
  {
    OFFSET 1 0 0
    CHANNELS 3 Zrotation Xrotation Yrotation
    End Site
    {
      OFFSET 1 0 0
    }
  }
}
MOTION
Frames: 2
Frame Time: 0.04
0 1 0 0 0 0 0 0 0
5 1 0 90 0 0 0 30 0
"""


def random_animation(skeleton, frames=6, seed=0, degrees=40.0):
    rng = np.random.default_rng(seed)
    rot = Rotation.from_rotvec(rng.normal(size=(frames * skeleton.n_joints, 3)) * np.radians(degrees) / 2)
    trans = np.tile(skeleton.translation, (frames, 1, 1))
    root = int(skeleton.roots()[0])
    trans[:, root] += rng.normal(size=(frames, 3)) * 0.1
    return Animation(rot.as_matrix().reshape(frames, skeleton.n_joints, 3, 3), trans, 1 / 24)


def test_channels_compose_in_the_order_listed():
    b = parse_bvh("t.bvh", TWO_JOINTS)
    pos = b.positions()
    np.testing.assert_allclose(pos[0], [[0, 1, 0], [1, 1, 0]], atol=1e-12)
    # frame 1: root moved to x=5 and turned 90 deg about Z: the arm's offset (1,0,0) now points along +Y
    np.testing.assert_allclose(pos[1], [[5, 1, 0], [5, 2, 0]], atol=1e-12)
    # the arm's own channels: R = Rz(0) Rx(30) Ry(0) on top of the root's Rz(90)
    expected = Rotation.from_euler("ZX", [90, 30], degrees=True).as_matrix()  # intrinsic: Rz(90) @ Rx(30)
    np.testing.assert_allclose(b.world()[1, 1, :3, :3], expected, atol=1e-12)
    # a general Z X Y triple matches the intrinsic 'ZXY' Euler convention
    angles = [[20.0, -35.0, 70.0]]
    b2 = Bvh(["j"], [-1], [[0, 0, 0]], [("Zrotation", "Xrotation", "Yrotation")], motion=angles)
    zxy = Rotation.from_euler("ZXY", angles[0], degrees=True).as_matrix()
    np.testing.assert_allclose(b2.local_rotations()[0, 0], zxy, atol=1e-12)


def test_write_read_round_trip_is_exact_and_bytes_are_stable(tmp_path):
    b = parse_bvh("t.bvh", TWO_JOINTS)
    write_bvh(tmp_path / "a.bvh", b)
    back = read_bvh(tmp_path / "a.bvh")
    assert back.names == b.names and back.channels == b.channels
    np.testing.assert_array_equal(back.parents, b.parents)
    np.testing.assert_array_equal(back.offsets, b.offsets)
    np.testing.assert_array_equal(back.motion, b.motion)
    np.testing.assert_array_equal(back.end_sites[1], b.end_sites[1])
    assert back.frame_time == b.frame_time
    write_bvh(tmp_path / "b.bvh", back)
    assert (tmp_path / "a.bvh").read_bytes() == (tmp_path / "b.bvh").read_bytes()


def test_rig_animation_to_bvh_and_back_keeps_forward_kinematics(tmp_path):
    rig = at.load_rig(FIXTURES / "source.glb")  # non-identity joint orientations, 65 joints
    anim = random_animation(rig.skeleton)
    b = animation_to_bvh(rig.skeleton, anim)
    order = [b.names.index(n) for n in rig.skeleton.names]
    world = anim.world(rig.skeleton)
    np.testing.assert_allclose(b.positions()[:, order], world[..., :3, 3], atol=1e-12)
    # through the text file (6 decimals) and back to rotations in the rig's rest frames
    write_bvh(tmp_path / "m.bvh", b)
    back, report = bvh_to_animation(read_bvh(tmp_path / "m.bvh"), rig.skeleton)
    assert report["matched"] == 65 and report["scale"] == 1.0 and report["rest_mismatch_deg"] < 0.01
    np.testing.assert_allclose(back.world(rig.skeleton)[..., :3, 3], world[..., :3, 3], atol=1e-5)
    np.testing.assert_allclose(back.rotations, anim.rotations, atol=1e-6)
    # leaf joints get an End Site continuing their bone
    assert len(b.end_sites) == sum(1 for j in range(65) if not (rig.skeleton.parents == j).any())


def test_bvh_in_other_units_is_scaled_to_the_rig():
    rig = tube_rig()
    anim = random_animation(rig.skeleton, frames=3)
    b = animation_to_bvh(rig.skeleton, anim)
    cm = Bvh(b.names, b.parents, b.offsets * 100, b.channels, {k: v * 100 for k, v in b.end_sites.items()},
             b.frame_time, np.where([[c.endswith("position") for ch in b.channels for c in ch]], b.motion * 100,
                                    b.motion))
    back, report = bvh_to_animation(cm, rig.skeleton)
    assert report["scale"] == pytest.approx(0.01)
    np.testing.assert_allclose(back.world(rig.skeleton)[..., :3, 3], anim.world(rig.skeleton)[..., :3, 3], atol=1e-9)


@pytest.mark.parametrize("text, message", [
    ("HIERARCHY\nROOT a\n{\n CHANNELS 3 Zrotation Xrotation Yrotation\n}\nMOTION\nFrames: 1\nFrame Time: 0.1\n0 0 0\n",
     "line 2: joint 'a' has no OFFSET"),
    (TWO_JOINTS.replace("Frames: 2", "Frames: 3"), "MOTION has 18 values, expected 3 frames x 9 channels"),
    (TWO_JOINTS.replace("Xrotation Yrotation\n    End", "Wrotation Yrotation\n    End"),
     "line 9: unknown channel 'Wrotation'"),
    (TWO_JOINTS.replace("5 1 0 90", "5 1 x 90"), "line 20: expected a number in MOTION, found 'x'"),
    (TWO_JOINTS.replace("Frame Time: 0.04", "Frame Time: 0"), "frame time must be positive"),
    ("HIERARCHY\nROOT a\n{\n OFFSET 0 0\n", "unexpected end of file"),
])
def test_malformed_files_are_input_errors_naming_the_line(tmp_path, text, message):
    (tmp_path / "bad.bvh").write_text(text)
    with pytest.raises(InputError) as e:
        read_bvh(tmp_path / "bad.bvh")
    assert message in str(e.value) and "bad.bvh" in str(e.value)


@needs_dev
@pytest.mark.parametrize("case, motion", [("d01_female", "motion_default.bvh"),
                                          ("d04_reduced_female", "motion_reduced.bvh")])
def test_dev_motion_fk_reproduces_the_posed_rig(case, motion):
    """The dev motions' BVH FK equals the source rig posed with the converted rotations (1e-5 m)."""
    b = read_bvh(DEV / motion)
    rig = at.load_rig(DEV / case / "source.glb")
    anim, report = bvh_to_animation(b, rig.skeleton)
    assert b.n_frames == 131 and report["matched"] == rig.skeleton.n_joints == b.n_joints
    rig_pos = anim.world(rig.skeleton)[..., :3, 3]
    bvh_pos = b.positions()[:, [b.names.index(n) for n in rig.skeleton.names]]
    assert np.abs(rig_pos - bvh_pos).max() < 1e-5
    # frame 0 is the rest pose, and the motion really moves (up to tens of centimetres)
    np.testing.assert_allclose(rig_pos[0], rig.skeleton.rest_world()[:, :3, 3], atol=1e-5)
    assert np.abs(rig_pos - rig_pos[:1]).max() > 0.2
    # converting back writes the same channels (the BVH zero pose is the rig's rest pose)
    again = animation_to_bvh(rig.skeleton, anim)
    assert again.names == b.names
    np.testing.assert_allclose(again.motion, b.motion, atol=1e-6)
