import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from asetransfer.model.transforms import closest_rotation, compose_trs, decompose_trs, global_from_local, hierarchy_depth, local_from_global, matrix_to_quat, quat_to_matrix, topological_order


def random_local(n, rng, scale=True):
    r = Rotation.random(n, random_state=rng).as_matrix()
    s = rng.uniform(0.5, 2.0, (n, 3)) if scale else np.ones((n, 3))
    return compose_trs(rng.normal(size=(n, 3)), r, s)


def test_topological_order_puts_parents_first():
    parents = np.array([3, -1, 0, 1, 3, 2])
    order = topological_order(parents)
    pos = np.empty(len(order), int)
    pos[order] = np.arange(len(order))
    for j, p in enumerate(parents):
        if p >= 0:
            assert pos[p] < pos[j]
    np.testing.assert_array_equal(hierarchy_depth(parents), [2, 0, 3, 1, 2, 4])


def test_topological_order_rejects_cycles_and_bad_indices():
    with pytest.raises(ValueError, match="cycle"):
        topological_order(np.array([-1, 2, 1]))
    with pytest.raises(ValueError, match="range"):
        topological_order(np.array([-1, 5]))


def test_global_local_round_trip_matches_chain_product():
    rng = np.random.default_rng(0)
    parents = np.array([-1, 0, 1, 1, 3, -1, 5])
    local = random_local(len(parents), rng)
    world = global_from_local(local, parents)
    # explicit product along the chain for joint 4: 0 -> 1 -> 3 -> 4
    np.testing.assert_allclose(world[4], local[0] @ local[1] @ local[3] @ local[4], atol=1e-12)
    np.testing.assert_allclose(world[6], local[5] @ local[6], atol=1e-12)
    np.testing.assert_allclose(local_from_global(world, parents), local, atol=1e-10)


def test_decompose_trs_inverts_compose_including_reflection():
    rng = np.random.default_rng(1)
    r = Rotation.random(5, random_state=rng).as_matrix()
    s = rng.uniform(0.2, 3.0, (5, 3))
    s[2, 0] *= -1  # a mirrored joint
    t = rng.normal(size=(5, 3))
    m = compose_trs(t, r, s)
    t2, r2, s2, res = decompose_trs(m)
    np.testing.assert_allclose(compose_trs(t2, r2, s2), m, atol=1e-12)
    assert res.max() < 1e-12
    np.testing.assert_allclose(np.linalg.det(r2), 1.0, atol=1e-12)


def test_decompose_reports_shear():
    m = np.eye(4)
    m[0, 1] = 0.5
    *_, res = decompose_trs(m[None])
    assert res[0] > 0.1


def test_quaternion_round_trip_and_canonical_sign():
    rng = np.random.default_rng(2)
    r = Rotation.random(20, random_state=rng).as_matrix()
    q = matrix_to_quat(r)
    assert (q[:, 3] >= 0).all()
    np.testing.assert_allclose(quat_to_matrix(q), r, atol=1e-12)
    # 90 degrees about z, glTF (x, y, z, w) order
    np.testing.assert_allclose(quat_to_matrix(np.array([0, 0, np.sqrt(0.5), np.sqrt(0.5)])),
                               [[0, -1, 0], [1, 0, 0], [0, 0, 1]], atol=1e-12)


def test_closest_rotation_of_a_rotation_is_itself():
    r = Rotation.from_euler("xyz", [10, 20, 30], degrees=True).as_matrix()
    np.testing.assert_allclose(closest_rotation(r), r, atol=1e-12)
    noisy = r + 1e-3 * np.random.default_rng(3).normal(size=(3, 3))
    q = closest_rotation(noisy)
    np.testing.assert_allclose(q @ q.T, np.eye(3), atol=1e-12)


def test_matrix_to_quat_is_scipys_conversion():
    """The numpy conversion gives SciPy's quaternions (canonical sign), orthogonal or not."""
    rng = np.random.default_rng(5)
    r = Rotation.random(200, random_state=rng).as_matrix()
    special = np.array([np.eye(3), np.diag([1.0, -1, -1]), np.diag([-1.0, 1, -1]), np.diag([-1.0, -1, 1])])
    for m in (r, r * (1 + 1e-9), special):
        q = Rotation.from_matrix(m).as_quat()
        np.testing.assert_allclose(matrix_to_quat(m), np.where(q[:, 3:4] < 0, -q, q), rtol=0, atol=1e-14)
    with pytest.raises(ValueError):
        matrix_to_quat(np.diag([1.0, 1, -1]))
