import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from asetransfer import SkinWeights, linear_blend_skinning
from asetransfer.model.transforms import compose_trs
from conftest import tube_rig


def test_from_influences_merges_sorts_normalises():
    idx = np.array([[2, 1, 2, 0], [0, 0, 0, 0]])
    w = np.array([[1.0, 1.0, 1.0, 0.0], [2.0, 0.0, 0.0, 0.0]])
    s = SkinWeights.from_influences(idx, w, 3)
    np.testing.assert_allclose(s.to_dense(), [[0, 1 / 3, 2 / 3], [1, 0, 0]])
    assert s.indices[0, 0] == 2  # largest first
    s.validate()


def test_cap_and_prune_renormalise_deterministically():
    dense = np.array([[0.4, 0.3, 0.2, 0.05, 0.05]])
    s = SkinWeights.from_dense(dense, max_influences=2)
    np.testing.assert_allclose(s.to_dense(), [[4 / 7, 3 / 7, 0, 0, 0]])
    s = SkinWeights.from_dense(dense, prune=0.1)
    np.testing.assert_allclose(s.to_dense(), [[4 / 9, 3 / 9, 2 / 9, 0, 0]])
    tie = SkinWeights.from_dense(np.array([[0.25, 0.25, 0.25, 0.25, 0.0]]), max_influences=2)
    np.testing.assert_array_equal(tie.indices[0], [0, 1])  # ties: lower joint index first


def test_validate_catches_bad_weights():
    with pytest.raises(ValueError, match="negative"):
        SkinWeights(np.array([[0, 1]]), np.array([[1.5, -0.5]]), 2).validate()
    with pytest.raises(ValueError, match="sum"):
        SkinWeights(np.array([[0, 1]]), np.array([[0.5, 0.4]]), 2).validate()
    with pytest.raises(ValueError, match="joint index"):
        SkinWeights(np.array([[3]]), np.array([[1.0]]), 2).validate()


def test_lbs_identity_rigid_and_blend():
    rig = tube_rig()
    v = rig.mesh.vertices
    eye = np.tile(np.eye(4), (3, 1, 1))
    np.testing.assert_allclose(linear_blend_skinning(v, rig.skin, eye), v, atol=1e-12)
    # the same rigid motion on every joint moves the mesh rigidly, whatever the weights
    m = compose_trs([1.0, 2.0, 3.0], Rotation.from_euler("z", 40, degrees=True).as_matrix())
    out = linear_blend_skinning(v, rig.skin, np.tile(m, (3, 1, 1)))
    np.testing.assert_allclose(out, v @ m[:3, :3].T + m[:3, 3], atol=1e-12)


def test_posing_a_joint_moves_only_the_vertices_it_weights():
    rig = tube_rig()
    world = rig.skeleton.posed_world({1: Rotation.from_euler("x", 45, degrees=True).as_matrix()})
    moved = np.linalg.norm(rig.posed_vertices(world) - rig.mesh.vertices, axis=1) > 1e-9
    weighted = rig.skin.to_dense()[:, 1] > 0
    np.testing.assert_array_equal(moved, weighted)
