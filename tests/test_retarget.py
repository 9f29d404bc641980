"""Motion retargeting by rest-frame rotations, glTF animations, and the hand-off commands end to end."""
import json

import numpy as np
import pytest
from conftest import FIXTURES, tube_rig
from scipy.spatial.transform import Rotation

import asetransfer as at
from asetransfer.geometry.alignment import Similarity
from asetransfer.model.animation import Animation
from asetransfer.handoff.motion import animation_to_bvh, bvh_to_animation
from asetransfer.io.bvh import read_bvh, write_bvh
from asetransfer.io.calibration import read_calibration
from asetransfer.io.glb import read_document
from asetransfer.io.gltf_animation import read_animation
from asetransfer.io.gltf_write import write_rig
from asetransfer.handoff.retarget import bone_angles, map_bones, retarget, retarget_bvh, skeleton_bones
from asetransfer.model.skeleton import Skeleton
from asetransfer_cli.main import main

# rotations in the fixture's joint frames (local +Y along the bone, X the flexion axis), blended in
POSE = [("upperarm.L", "x", 60), ("forearm.L", "x", 70), ("upperarm.R", "z", -40), ("hand.L", "z", 30),
        ("thigh.R", "x", -50), ("shin.R", "x", 80), ("spine.002", "y", 30), ("head", "x", 20)]


def fixture_motion(skeleton, frames=12):
    rot = np.tile(np.eye(3), (frames, skeleton.n_joints, 1, 1))
    for name, axis, deg in POSE:
        angles = np.linspace(0, deg, frames)[:, None]
        rot[:, skeleton.index(name)] = Rotation.from_euler(axis, angles, degrees=True).as_matrix()
    trans = np.tile(skeleton.translation, (frames, 1, 1))
    trans[:, 0] += np.linspace(0, 1, frames)[:, None] * [0.0, -0.1, 0.5]  # crouch and walk forward
    return Animation(rot, trans, 1 / 30)


def test_source_onto_itself_gives_identical_bone_directions(fixture_source):
    rig = fixture_source
    motion = animation_to_bvh(rig.skeleton, fixture_motion(rig.skeleton))
    anim, report = retarget_bvh(motion, rig, rig)
    src, _ = bvh_to_animation(motion, rig.skeleton)
    assert report["matched"] == 65 and report["root_ratio"] == pytest.approx(1.0)
    ang = bone_angles(src.world(rig.skeleton), anim.world(rig.skeleton), skeleton_bones(rig, rig))
    assert ang.shape == (12, 64) and ang.max() < 1e-5
    np.testing.assert_allclose(anim.world(rig.skeleton), src.world(rig.skeleton), atol=1e-9)


def test_scaled_turned_target_gets_the_same_directions_and_a_scaled_path(fixture_source):
    """Target = the source in centimetres, turned 90 deg about up: bone directions equal after
    the turn, the root path is turned and scaled x100 (the root-height ratio)."""
    rig = fixture_source
    R = Rotation.from_euler("y", 90, degrees=True).as_matrix()
    sim = Similarity(100.0, R, np.array([50.0, 0.0, 20.0]))
    sk = rig.skeleton
    world = sk.rest_world()
    world[:, :3, :3] = R @ world[:, :3, :3]
    world[:, :3, 3] = sim.apply(world[:, :3, 3])
    bind = sk.bind_world.copy()
    bind[:, :3, :3] = R @ bind[:, :3, :3]
    bind[:, :3, 3] = sim.apply(bind[:, :3, 3])
    tsk = Skeleton.from_world(sk.names, sk.parents, world, bind)
    tsk = tsk.copy(orient=tsk.orient @ np.swapaxes(sk.rotation, 1, 2), rotation=sk.rotation)  # same split
    target = at.Rig(rig.mesh.with_vertices(sim.apply(rig.mesh.vertices)), tsk, rig.skin)
    motion = fixture_motion(sk)
    anim, report = retarget(motion, rig, target)
    assert report["root_ratio"] == pytest.approx(100.0, rel=1e-6)
    np.testing.assert_allclose(report["frame_rotation"], R, atol=1e-9)
    ang = bone_angles(motion.world(sk), anim.world(tsk), skeleton_bones(rig, target), rotation=R)
    assert ang.max() < 1e-5
    disp_s = motion.translations[:, 0] - sk.translation[0]
    disp_t = anim.translations[:, 0] - tsk.translation[0]
    np.testing.assert_allclose(disp_t, 100.0 * disp_s @ R.T, atol=1e-9)


def test_target_joints_the_source_lacks_keep_their_rest_pose():
    src = tube_rig()
    sk = src.skeleton
    world = np.concatenate([sk.rest_world(), sk.rest_world()[2:3]])
    world[3, :3, 3] += [0, 0.5, 0]
    tsk = Skeleton.from_world(sk.names + ("extra",), np.append(sk.parents, 2), world)
    target = at.Rig(src.mesh, tsk, at.SkinWeights(src.skin.indices, src.skin.weights, 4))
    motion = Animation(Rotation.random(2 * 3, random_state=1).as_matrix().reshape(2, 3, 3, 3),
                       np.tile(sk.translation, (2, 1, 1)), 0.1)
    anim, report = retarget(motion, src, target)
    assert report["matched"] == 3 and report["target_joints"] == 4
    np.testing.assert_allclose(anim.rotations[:, 3], np.tile(np.eye(3), (2, 1, 1)))
    np.testing.assert_allclose(anim.rotations[:, :3], motion.rotations)


def test_gltf_animation_round_trip_and_determinism(tmp_path, fixture_source):
    rig = fixture_source
    motion = fixture_motion(rig.skeleton)
    write_rig(tmp_path / "a.glb", rig, animation=motion)
    write_rig(tmp_path / "b.glb", rig, animation=motion)
    assert (tmp_path / "a.glb").read_bytes() == (tmp_path / "b.glb").read_bytes()
    back_rig, back = read_animation(tmp_path / "a.glb")
    assert back.n_frames == 12 and back.frame_time == pytest.approx(1 / 30, rel=1e-6)
    np.testing.assert_allclose(back.world(back_rig.skeleton)[..., :3, 3], motion.world(rig.skeleton)[..., :3, 3],
                               atol=1e-5)
    doc, _ = read_document(tmp_path / "a.glb")
    channels = doc["animations"][0]["channels"]
    rotated = {c["target"]["node"] for c in channels if c["target"]["path"] == "rotation"}
    assert rotated == {rig.skeleton.index(n) for n, _, _ in POSE}  # joints that never move get no channel
    assert [c["target"]["node"] for c in channels if c["target"]["path"] == "translation"] == [0]
    # a still animation keeps one channel (valid glTF)
    write_rig(tmp_path / "still.glb", rig, animation=Animation.rest(rig.skeleton, 3))
    _, still = read_animation(tmp_path / "still.glb")
    np.testing.assert_allclose(still.rotations, np.tile(np.eye(3), (3, 65, 1, 1)), atol=1e-6)


# ---------------------------------------------------------------------- the commands end to end
@pytest.fixture(scope="module")
def handoff(tmp_path_factory):
    """calibrate-source -> transfer --pose-normalize --calibration --tpose -> retarget-motion, on the
    fixture source and its heavy target."""
    d = tmp_path_factory.mktemp("handoff")
    src = at.load_rig(FIXTURES / "source.glb")
    write_bvh(d / "motion.bvh", animation_to_bvh(src.skeleton, fixture_motion(src.skeleton)))
    run = lambda *a: main([str(x) for x in a] + ["-q"])  # noqa: E731
    assert run("calibrate-source", FIXTURES / "source.glb", "-o", d / "cal.json") == 0
    transfer = ["transfer", FIXTURES / "source.glb", FIXTURES / "target_heavy.ply", "--markers",
                FIXTURES / "markers_heavy.json", "--pose-normalize", "--calibration", d / "cal.json", "--tpose"]
    assert run(*transfer, "-o", d / "out.glb") == 0
    assert run("retarget-motion", d / "motion.bvh", "--source", FIXTURES / "source.glb", "--target", d / "out.glb",
               "-o", d / "anim.glb") == 0
    assert run("retarget-motion", d / "motion.bvh", "--source", FIXTURES / "source.glb", "--target", d / "out.glb",
               "-o", d / "anim.bvh", "--report", d / "report.json") == 0
    return d, src, transfer, run


def test_handoff_outputs_reimport(handoff):
    d, src, _, _ = handoff
    names = sorted(p.name for p in d.iterdir())
    assert names == ["anim.bvh", "anim.glb", "cal.json", "motion.bvh", "out.calibration.json", "out.glb",
                     "out.tpose.bvh", "out.tpose.glb", "report.json"]
    out = at.load_rig(d / "out.glb")
    cal = read_calibration(d / "out.calibration.json", out)  # resolves on the target
    doc = json.loads((d / "out.calibration.json").read_text())
    for key in ("skeleton_map", "segment_lengths", "root_height", "surface_points", "capsules", "key_vertices",
                "units"):
        assert key in doc
    assert doc["units"]["length"] == "m" and doc["tpose"]["bvh"] == "out.tpose.bvh"
    assert doc["tpose"]["glb"] == "out.tpose.glb" and max(doc["tpose"]["checks"].values()) < 1e-4
    # the points lie on the target, left stays left; the heavy target's limbs are 1.35x as thick
    from asetransfer.geometry.surface import closest_points
    pts = np.array([p.position for p in cal.surface_points + cal.key_vertices])
    assert closest_points(pts, out.mesh.vertices, out.mesh.faces)[2].max() < 1e-9
    assert all((p.position[0] > 0) == p.name.endswith(".L") for p in cal.surface_points if p.name[-2:] in (".L", ".R"))
    source_cal = json.loads((d / "cal.json").read_text())
    for a, b in zip(source_cal["capsules"], doc["capsules"]):
        assert 1.2 < b["radius"] / a["radius"] < 1.5, a["name"]
    # the T-pose files: the glb in T-pose (bind = rest), the BVH its one-frame skeleton
    tp = at.load_rig(d / "out.tpose.glb")
    b = read_bvh(d / "out.tpose.bvh")
    assert b.n_frames == 1 and b.names == tuple(sorted(b.names, key=b.names.index))
    np.testing.assert_allclose(b.positions()[0, [b.names.index(n) for n in tp.skeleton.names]],
                               tp.skeleton.rest_world()[:, :3, 3], atol=1e-5)
    np.testing.assert_allclose(tp.skeleton.rest_world(), tp.skeleton.bind_world, atol=1e-5)
    i = {n: k for k, n in enumerate(tp.skeleton.names)}
    p = tp.skeleton.rest_world()[:, :3, 3]
    assert abs(p[i["hand.L"], 1] - p[i["upperarm.L"], 1]) < 1e-5 and p[i["hand.L"], 0] > 0.6


def test_retargeted_motion_keeps_limb_directions(handoff):
    """Spec Fig. 3.10: the same animation gives the same limb directions (aim: mean < 2 deg, max < 10 deg)."""
    d, src, _, _ = handoff
    tgt, anim = read_animation(d / "anim.glb")
    motion, _ = bvh_to_animation(read_bvh(d / "motion.bvh"), src.skeleton)
    cal = read_calibration(d / "cal.json", src)
    _, bones = map_bones(src, tgt, cal.skeleton_map)
    ang = bone_angles(motion.world(src.skeleton), anim.world(tgt.skeleton), bones)
    assert len(bones) == 19 and ang.mean() < 2.0 and ang.max() < 10.0
    # the BVH output plays the same motion as the glTF output
    b = read_bvh(d / "anim.bvh")
    np.testing.assert_allclose(b.positions()[:, [b.names.index(n) for n in tgt.skeleton.names]],
                               anim.world(tgt.skeleton)[..., :3, 3], atol=1e-4)
    report = json.loads((d / "report.json").read_text())
    assert report["matched"] == 65 and 0.9 < report["root_ratio"] < 1.1


def test_motion_plays_the_same_on_a_target_kept_in_its_modelled_pose(handoff, tmp_path):
    """--rest source normalises the pose on the fly: a target written without --pose-normalize
    (rest = bind) plays the motion exactly as the pose-normalised one; --rest target does not."""
    d, src, transfer, run = handoff
    plain = [a for a in transfer[:5]]  # transfer SRC TGT --markers M
    assert run(*plain, "-o", tmp_path / "bind.glb") == 0
    bind = at.load_rig(tmp_path / "bind.glb")
    normalised = at.load_rig(d / "out.glb")
    assert np.abs(bind.skeleton.rest_world() - normalised.skeleton.rest_world()).max() > 0.01  # rests differ
    motion, _ = bvh_to_animation(read_bvh(d / "motion.bvh"), src.skeleton)
    a, _ = retarget(motion, src, bind)
    b, _ = retarget(motion, src, normalised)
    np.testing.assert_allclose(a.world(bind.skeleton), b.world(normalised.skeleton), atol=1e-5)
    c, report = retarget(motion, src, bind, rest="target")
    assert report["rest"] == "target"
    assert np.abs(c.world(bind.skeleton)[..., :3, 3] - b.world(normalised.skeleton)[..., :3, 3]).max() > 0.01


def test_tpose_alone_states_its_units_in_a_proposed_calibration(handoff, tmp_path):
    d, src, transfer, run = handoff
    assert run(*transfer[:5], "--tpose", "-o", tmp_path / "t.glb") == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.calibration.json", "t.glb", "t.tpose.bvh", "t.tpose.glb"]
    doc = json.loads((tmp_path / "t.calibration.json").read_text())
    assert doc["units"]["length"] == "m" and doc["tpose"]["bvh"] == "t.tpose.bvh"
    assert "Zrotation Xrotation Yrotation" in doc["tpose"]["bvh_channels"]
    # the same calibration as calibrate-source proposes, carried to the target
    assert doc["skeleton_map"] == json.loads((d / "cal.json").read_text())["skeleton_map"]


def test_handoff_is_deterministic(handoff, tmp_path):
    d, _, transfer, run = handoff
    assert run(*transfer, "-o", tmp_path / "out.glb") == 0
    for name in ("out.glb", "out.tpose.glb", "out.tpose.bvh", "out.calibration.json"):
        assert (tmp_path / name).read_bytes() == (d / name).read_bytes(), name


def test_handoff_errors(handoff, tmp_path, capsys):
    d, _, _, run = handoff
    at.save_rig(tmp_path / "tube.glb", tube_rig())
    v = tube_rig().mesh.vertices
    import trimesh
    trimesh.Trimesh(v * 1.2, tube_rig().mesh.faces, process=False).export(tmp_path / "tube.ply")
    ms = [{"name": f"m{i}", "source": {"vertex": i}, "target": {"vertex": i}} for i in (0, 5, 60, 66, 120, len(v) - 1)]
    (tmp_path / "m.json").write_text(json.dumps({"markers": ms}))
    base = ["transfer", tmp_path / "tube.glb", tmp_path / "tube.ply", "--markers", tmp_path / "m.json",
            "-o", tmp_path / "o.glb"]
    assert run(*base, "--tpose") == 2
    assert "--tpose needs a humanoid skeleton map" in capsys.readouterr().err
    assert not (tmp_path / "o.glb").exists()  # checked before any work
    assert run(*base, "--calibration", d / "cal.json") == 2
    assert "which the rig does not have" in capsys.readouterr().err
    assert run("retarget-motion", d / "motion.bvh", "--source", FIXTURES / "source.glb", "--target", d / "out.glb",
               "-o", tmp_path / "anim.fbx") == 2
    write_bvh(tmp_path / "other.bvh", animation_to_bvh(tube_rig().skeleton, Animation.rest(tube_rig().skeleton)))
    assert run("retarget-motion", tmp_path / "other.bvh", "--source", FIXTURES / "source.glb", "--target",
               d / "out.glb", "-o", tmp_path / "anim.glb") == 2
    assert "no joint of the BVH has the name of a rig joint" in capsys.readouterr().err
    # an output that would overwrite the calibration input is refused
    assert run("transfer", FIXTURES / "source.glb", FIXTURES / "target_heavy.ply", "--markers",
               FIXTURES / "markers_heavy.json", "--calibration", tmp_path / "x.calibration.json",
               "-o", tmp_path / "x.glb") == 2


def test_the_source_clips_ride_onto_the_rigged_target_under_their_names(tmp_path, fixture_source):
    from asetransfer.io.glb import read_document
    from asetransfer.io.gltf_animation import read_clips
    from asetransfer.job import JobOptions, transfer_files

    motion = fixture_motion(fixture_source.skeleton)
    source = tmp_path / "animated.glb"
    write_rig(source, fixture_source, clips=[("wave", motion), ("still", Animation.rest(fixture_source.skeleton, 2))])
    target, markers = FIXTURES / "target_heavy.ply", FIXTURES / "markers_heavy.json"
    done = transfer_files(source, target, tmp_path / "rigged.glb", markers)
    rig, clips, skipped = read_clips(tmp_path / "rigged.glb")
    assert [name for name, _ in clips] == ["wave", "still"] and not skipped
    expected, _ = retarget(motion, fixture_source, done.result.rig)
    np.testing.assert_allclose(clips[0][1].world(rig.skeleton)[..., :3, 3], expected.world(rig.skeleton)[..., :3, 3],
                               atol=1e-4)
    # a target with a look: the clips join its own document
    from look_builder import Look, write_gltf

    body = at.load_mesh(target)
    looked = write_gltf(tmp_path / "character.glb", Look(body.vertices, body.faces))
    transfer_files(source, looked, tmp_path / "looked.glb", markers)
    names = [a["name"] for a in read_document(tmp_path / "looked.glb")[0]["animations"]]
    assert names[-2:] == ["wave", "still"]
    # a target that already has clips of those names (a rig made before, rigged again; Mixamo
    # characters exported by Blender all name theirs alike) keeps its own under their names
    # and takes the source's under names of their own
    again = transfer_files(source, tmp_path / "rigged.glb", tmp_path / "again.glb", markers)
    names = [a["name"] for a in read_document(tmp_path / "again.glb")[0]["animations"]]
    assert names == ["wave", "still", "wave (source)", "still (source)"]
    assert any("written as 'wave (source)'" in w for w in again.report.warnings)
    # --clips off, and outputs that cannot hold them say so
    off = transfer_files(source, target, tmp_path / "off.glb", markers, options=JobOptions(clips="off"))
    assert "animations" not in read_document(tmp_path / "off.glb")[0] and off.report.warnings == done.report.warnings
    fbx = transfer_files(source, target, tmp_path / "rigged.fbx", markers)
    assert any("animation clips are not written to rigged.fbx" in w for w in fbx.report.warnings)


def _with_scale_channels(path, scales: dict):
    """The glTF rig at ``path`` with a scale channel added to its first clip on each joint node
    ``scales`` names (node -> (3,) scale keyed at the clip's first key times)."""
    from asetransfer.io.glb import FLOAT, pack_glb, read_document

    doc, buffers = read_document(path)
    blob = bytearray(buffers[0])
    clip = doc["animations"][0]
    times = clip["samplers"][0]["input"]
    for node, scale in scales.items():
        count = doc["accessors"][times]["count"]
        values = np.tile(np.asarray(scale, dtype="<f4"), (count, 1))
        blob.extend(b"\x00" * (-len(blob) % 4))
        doc["bufferViews"].append({"buffer": 0, "byteOffset": len(blob), "byteLength": values.nbytes})
        blob.extend(values.tobytes())
        doc["accessors"].append({"bufferView": len(doc["bufferViews"]) - 1, "componentType": FLOAT,
                                 "count": count, "type": "VEC3"})
        clip["samplers"].append({"input": times, "output": len(doc["accessors"]) - 1})
        clip["channels"].append({"sampler": len(clip["samplers"]) - 1, "target": {"node": node, "path": "scale"}})
    doc["buffers"][0]["byteLength"] = len(blob)
    path.write_bytes(pack_glb(doc, bytes(blob)))


def test_channels_a_clip_cannot_carry_are_named(tmp_path, fixture_source):
    """Exporters key a scale of 1 on every bone: no word of those; a scale that changes is
    not carried (a clip moves joints by rotations and translations), and the warning says so."""
    from asetransfer.job import transfer_files

    source = tmp_path / "animated.glb"
    write_rig(source, fixture_source, clips=[("wave", fixture_motion(fixture_source.skeleton))])
    target, markers = FIXTURES / "target_heavy.ply", FIXTURES / "markers_heavy.json"
    _with_scale_channels(source, {0: (1.0, 1.0, 1.0), 1: (1.0, 1.0, 1.0)})
    unit = transfer_files(source, target, tmp_path / "unit.glb", markers)
    assert not any("not carried" in w for w in unit.report.warnings)
    _with_scale_channels(source, {2: (1.0, 1.2, 1.0)})
    grown = transfer_files(source, target, tmp_path / "grown.glb", markers)
    said = [w for w in grown.report.warnings if "not carried" in w]
    assert len(said) == 1 and "animation 'wave': its 1 scale channel(s) are not carried" in said[0]


def test_source_clips_of_one_name_arrive_under_names_of_their_own(tmp_path, fixture_source):
    from asetransfer.io.glb import read_document
    from asetransfer.job import transfer_files

    source = tmp_path / "animated.glb"
    clips = [("Take 001", fixture_motion(fixture_source.skeleton)), ("Take 001", Animation.rest(fixture_source.skeleton, 2))]
    write_rig(source, fixture_source, clips=clips)
    done = transfer_files(source, FIXTURES / "target_heavy.ply", tmp_path / "rigged.glb", FIXTURES / "markers_heavy.json")
    assert [a["name"] for a in read_document(tmp_path / "rigged.glb")[0]["animations"]] == ["Take 001", "Take 001.001"]
    assert any("more than one animation named 'Take 001'" in w for w in done.report.warnings)


def test_retarget_motion_plays_a_gltf_clip_by_name(tmp_path, fixture_source, capsys):
    motion = fixture_motion(fixture_source.skeleton)
    animated = tmp_path / "animated.glb"
    write_rig(animated, fixture_source, clips=[("idle", Animation.rest(fixture_source.skeleton, 2)), ("wave", motion)])
    target = tmp_path / "heavy.glb"
    assert main(["-q", "transfer", str(FIXTURES / "source.glb"), str(FIXTURES / "target_heavy.ply"), "--markers",
                 str(FIXTURES / "markers_heavy.json"), "-o", str(target)]) == 0
    assert main(["-q", "retarget-motion", str(animated), "--clip", "wave", "--target", str(target),
                 "-o", str(tmp_path / "wave.glb")]) == 0
    rig, played = read_animation(tmp_path / "wave.glb")
    expected, _ = retarget(motion, fixture_source, at.load_rig(target))
    np.testing.assert_allclose(played.world(rig.skeleton)[..., :3, 3], expected.world(rig.skeleton)[..., :3, 3],
                               atol=1e-4)
    capsys.readouterr()
    assert main(["retarget-motion", str(animated), "--clip", "run", "--target", str(target),
                 "-o", str(tmp_path / "run.glb")]) == 2
    assert "has no animation 'run' (its animations: 'idle', 'wave')" in capsys.readouterr().err
    assert main(["retarget-motion", str(tmp_path / "walk.bvh"), "--target", str(target),
                 "-o", str(tmp_path / "x.glb")]) == 2
    assert "a BVH motion needs --source" in capsys.readouterr().err


ANIMATED_FBX = FIXTURES / "source_animated_cm_zup.fbx"


def test_fbx_takes_are_read_as_blender_plays_them():
    """The fixture source as Blender's FBX exporter writes it (centimetres, Z up, the armature
    object scaled x100 and turned), with two baked takes: every joint of every frame lies where
    Blender itself puts it (fixtures/source_animated.truth.json, Blender's world in metres; the
    file holds it x100 and turned half a turn about Z), within float32 (measured 0.001 cm)."""
    import json

    from asetransfer.io import load_clips

    rig, clips, skipped = load_clips(ANIMATED_FBX)
    assert [name for name, _ in clips] == ["skin|step", "skin|wave"] and not skipped
    truth = json.loads((FIXTURES / "source_animated.truth.json").read_text())
    for name, clip in clips:
        take = truth[name.split("|")[1]]
        assert clip.n_frames == take["frames"] and clip.frame_time == pytest.approx(1.0 / take["fps"])
        played = clip.world(rig.skeleton)[..., :3, 3]
        for joint, positions in take["positions"].items():
            expected = np.array(positions) * [-100.0, -100.0, 100.0]
            np.testing.assert_allclose(played[:, rig.skeleton.index(joint)], expected, atol=0.01, err_msg=joint)
    # the takes move: the left hand rises in the wave, the hips step forward
    hand, hips = rig.skeleton.index("hand.L"), rig.skeleton.index("hips")
    wave, step = (dict(clips)[n].world(rig.skeleton)[..., :3, 3] for n in ("skin|wave", "skin|step"))
    assert wave[11, hand, 2] - wave[0, hand, 2] > 20 and np.linalg.norm(step[-1, hips] - step[0, hips]) > 10


def test_fbx_takes_ride_onto_the_target_and_play_with_retarget_motion(tmp_path):
    from asetransfer.io.gltf_animation import read_clips

    from asetransfer.io import load_clips

    target = FIXTURES / "target_heavy_cm_zup.fbx"
    assert main(["-q", "transfer", str(ANIMATED_FBX), str(target), "-o", str(tmp_path / "rigged.glb")]) == 0
    rig, clips, skipped = read_clips(tmp_path / "rigged.glb")
    assert [name for name, _ in clips] == ["skin|step", "skin|wave"] and not skipped
    source, fbx_clips, _ = load_clips(ANIMATED_FBX)
    expected, _ = retarget(dict(fbx_clips)["skin|wave"], source, rig)
    np.testing.assert_allclose(dict(clips)["skin|wave"].world(rig.skeleton)[..., :3, 3],
                               expected.world(rig.skeleton)[..., :3, 3], atol=1e-3)
    assert main(["-q", "retarget-motion", str(ANIMATED_FBX), "--clip", "skin|wave", "--target",
                 str(tmp_path / "rigged.glb"), "-o", str(tmp_path / "wave.bvh")]) == 0
    assert (tmp_path / "wave.bvh").read_text().count("\n") > 24


def test_an_fbx_take_with_a_broken_curve_is_left_out_with_its_reason(tmp_path):
    """One curve of the wave whose key times run backwards: that take is left out, named with
    the curve, the other is read (the file is the fixture, re-serialised)."""
    from asetransfer.io import load_clips
    from asetransfer.io.fbx_binary import parse_fbx

    _, nodes = parse_fbx(ANIMATED_FBX, ANIMATED_FBX.read_bytes())
    objects = next(n for n in nodes if n.name == "Objects")
    names = {o.props[0]: o.props[1] for o in objects.children if o.props}
    connections = next(n for n in nodes if n.name == "Connections").children
    node_of = {c.props[1]: c.props[2] for c in connections if c.props[0] == "OP" and str(c.props[3]).startswith("d|")}
    above = {c.props[1]: c.props[2] for c in connections if c.props[0] == "OO"}
    stack_of = {}  # curve -> the take it belongs to (curve -> curve node -> layer -> stack)
    for o in objects.children:
        if o.name == "AnimationCurve":
            stack_of[o.props[0]] = names.get(above.get(above.get(node_of.get(o.props[0]))), "")
    curve = next(o for o in objects.children if o.name == "AnimationCurve" and "wave" in stack_of[o.props[0]])
    times = curve.child("KeyTime")
    times.props = [times.props[0][::-1].copy()]
    _, clips, skipped = load_clips(_write_fbx(nodes, tmp_path / "broken.fbx"))
    assert [name for name, _ in clips] == ["skin|step"]
    (name, reason), = skipped
    assert name == "skin|wave" and "unordered" in reason


def _write_fbx(nodes: list, path):
    """Parsed FBX ``nodes`` written back to ``path`` (ids beyond 32 bits kept 64-bit)."""
    from asetransfer.io.fbx_bytes import Int64, fbx_bytes

    def widened(node):
        node.props = [Int64(p) if isinstance(p, int) and not isinstance(p, bool) and abs(p) >= 2 ** 31 else p
                      for p in node.props]
        for child in node.children:
            widened(child)
    for node in nodes:
        widened(node)
    path.write_bytes(fbx_bytes(nodes))
    return path


def test_an_empty_fbx_take_is_no_clip(tmp_path, capsys):
    """Maya and Mixamo write a "Take 001" with no curves into files without animation: no clip,
    and no warning about one."""
    from asetransfer.io import has_clips, load_clips
    from asetransfer.io.fbx_binary import FbxNode, parse_fbx
    from asetransfer.io.fbx_bytes import Int64

    source = FIXTURES / "source.fbx"
    _, nodes = parse_fbx(source, source.read_bytes())
    objects = next(n for n in nodes if n.name == "Objects")
    objects.children += [FbxNode("AnimationStack", [Int64(9_000_000_001), "Take 001\x00\x01AnimStack", ""]),
                         FbxNode("AnimationLayer", [Int64(9_000_000_002), "BaseLayer\x00\x01AnimLayer", ""])]
    next(n for n in nodes if n.name == "Connections").children.append(
        FbxNode("C", ["OO", Int64(9_000_000_002), Int64(9_000_000_001)]))
    empty = _write_fbx(nodes, tmp_path / "empty_take.fbx")
    assert not has_clips(empty) and load_clips(empty)[1:] == ([], [])
    assert main(["transfer", str(empty), str(FIXTURES / "target_heavy_cm_zup.fbx"), "-o", str(tmp_path / "out.glb")]) == 0
    assert "animation" not in capsys.readouterr().err
    assert "animations" not in read_document(tmp_path / "out.glb")[0]


def _under_armature(src, dst, rotation, scale):
    """``src`` with its root joint moved under a new non-joint node ("Armature", as Blender
    exports an armature object) of the given quaternion and scale; the inverse binds kept."""
    from asetransfer.io.glb import pack_glb

    doc, buffers = read_document(src)
    root = doc["skins"][0]["joints"][0]
    doc["nodes"].append({"name": "Armature", "rotation": list(rotation), "scale": list(scale), "children": [root]})
    scene = doc["scenes"][doc.get("scene", 0)]["nodes"]
    scene[scene.index(root)] = len(doc["nodes"]) - 1
    dst.write_bytes(pack_glb(doc, buffers[0]))


def test_a_clip_on_a_root_under_an_armature_node_is_read_through_it(tmp_path, fixture_source):
    # Blender's glTF of a Mixamo character or a KayKit one: the root bone under the armature
    # object, rotated and scaled 0.01; its clips were left out
    from asetransfer.io.gltf_animation import read_clips

    rig = fixture_source
    motion = fixture_motion(rig.skeleton)
    write_rig(tmp_path / "a.glb", rig, animation=motion)
    half = np.sqrt(0.5)
    _under_armature(tmp_path / "a.glb", tmp_path / "armature.glb", (half, 0.0, 0.0, half), (0.01, 0.01, 0.01))
    back_rig, clips, skipped = read_clips(tmp_path / "armature.glb")
    assert len(clips) == 1 and not skipped
    armature = Rotation.from_quat([half, 0, 0, half]).as_matrix() * 0.01
    expected = motion.world(rig.skeleton)[..., :3, 3] @ armature.T
    np.testing.assert_allclose(clips[0][1].world(back_rig.skeleton)[..., :3, 3], expected,
                               atol=1e-6 * np.abs(expected).max())
    # an uneven scale cannot ride on a joint's rotation: the clip is left out, saying why
    _under_armature(tmp_path / "a.glb", tmp_path / "uneven.glb", (0.0, 0.0, 0.0, 1.0), (1.0, 2.0, 1.0))
    _, clips, skipped = read_clips(tmp_path / "uneven.glb")
    assert not clips and "whose scale is not uniform" in skipped[0][1]
