"""Canonical T-pose by forward kinematics and skinning."""
import numpy as np
import pytest
from conftest import DEV, needs_dev

import asetransfer as at
from asetransfer.model.animation import Animation
from asetransfer.handoff.motion import animation_to_bvh
from asetransfer.humanoid.skeleton_map import propose_skeleton_map
from asetransfer.humanoid.tpose import tpose, tpose_rig


def _check_tpose(rig):
    mapping, missing = propose_skeleton_map(rig.skeleton)
    assert not missing
    anim, report = tpose(rig.skeleton, mapping)
    assert all(v < 1e-4 for v in report["checks"].values()) and len(report["checks"]) == 4
    posed = tpose_rig(rig, anim)
    sk, j = posed.skeleton, {r: posed.skeleton.index(n) for r, n in mapping.items()}
    up, left = np.array(report["axes"]["up"]), np.array(report["axes"]["left"])
    p = sk.rest_world()[:, :3, 3]
    # bind = rest = the T-pose, the mesh skinned into it
    np.testing.assert_allclose(sk.bind_world, sk.rest_world(), atol=1e-9)
    np.testing.assert_allclose(posed.mesh.vertices, rig.posed_vertices(anim.world(rig.skeleton)[0]), atol=1e-12)
    for s, side in (("l", 1.0), ("r", -1.0)):
        # arms horizontal and straight out, at shoulder height; legs straight down
        for a, b in (("shoulder", "elbow"), ("elbow", "wrist"), ("wrist", "mid_hand")):
            d = p[j[f"{b}_{s}"]] - p[j[f"{a}_{s}"]]
            np.testing.assert_allclose(d / np.linalg.norm(d), side * left, atol=1e-9)
        d = p[j[f"ankle_{s}"]] - p[j[f"upper_leg_{s}"]]
        np.testing.assert_allclose(d / np.linalg.norm(d), -up, atol=1e-9)
        # the hand's vertices hang around the wrist's height (palm down: flat, not hanging)
        hand = [k for k in range(sk.n_joints) if k == j[f"wrist_{s}"] or _below(sk.parents, k, j[f"wrist_{s}"])]
        w = posed.skin.to_dense()[:, hand].sum(axis=1) > 0.9
        heights = posed.mesh.vertices[w] @ up
        assert np.ptp(heights) < 0.5 * np.linalg.norm(p[j[f"mid_hand_{s}"]] - p[j[f"wrist_{s}"]]) + 0.06
    # spine, neck and head untouched, bone lengths kept
    for r in ("hips", "spine", "upper_spine", "neck", "head"):
        np.testing.assert_allclose(p[j[r]], rig.skeleton.rest_world()[j[r], :3, 3], atol=1e-12)
    nonroot = sk.parents >= 0
    np.testing.assert_allclose(np.linalg.norm(p[nonroot] - p[sk.parents[nonroot]], axis=1),
                               np.linalg.norm(sk.translation[nonroot], axis=1), atol=1e-9)
    # already in T-pose: nothing more to do
    again, _ = tpose(sk, mapping)
    np.testing.assert_allclose(again.rotations, np.tile(np.eye(3), again.rotations.shape[:2] + (1, 1)), atol=1e-7)
    # the one-frame BVH of the T-pose skeleton plays the T-pose (zero rotations)
    b = animation_to_bvh(sk, Animation.rest(sk))
    assert b.n_frames == 1 and np.abs(b.motion[0, 3:]).max() < 1e-9
    np.testing.assert_allclose(b.positions()[0, [b.names.index(n) for n in sk.names]], p, atol=1e-9)
    return report


def _below(parents, k, ancestor):
    while parents[k] >= 0:
        k = parents[k]
        if k == ancestor:
            return True
    return False


def test_fixture_tpose(fixture_source):
    _check_tpose(fixture_source)


@needs_dev
def test_dev_source_tpose_from_the_a_pose():
    rig = at.load_rig(DEV / "d01_female" / "source.glb")  # arms ~50 deg down, elbows bent, palms in
    report = _check_tpose(rig)
    assert report["axes"]["up"] == pytest.approx([0, 1, 0]) and report["axes"]["forward"] == pytest.approx([0, 0, 1])
