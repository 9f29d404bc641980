"""swing (smallest rotation between directions) and rotation_svd (the Kabsch step)."""
import numpy as np

from asetransfer.geometry.alignment import umeyama
from asetransfer.geometry.rotations import swing
from asetransfer.model.transforms import closest_rotation, rotation_svd


def _is_rotation(r):
    return np.allclose(r @ np.swapaxes(r, -1, -2), np.eye(3), atol=1e-12) and np.allclose(np.linalg.det(r), 1.0)


def test_swing_takes_a_onto_b_without_twist():
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(200, 3)), rng.normal(size=(200, 3))
    r = swing(a, b)
    assert _is_rotation(r)
    ua, ub = a / np.linalg.norm(a, axis=1)[:, None], b / np.linalg.norm(b, axis=1)[:, None]
    np.testing.assert_allclose(np.einsum("kij,kj->ki", r, ua), ub, atol=1e-12)
    # no twist: the common perpendicular a x b is left where it is
    n = np.cross(a, b)
    np.testing.assert_allclose(np.einsum("kij,kj->ki", r, n), n, atol=1e-9)


def test_swing_known_values():
    r = swing(np.array([[1.0, 0, 0], [0, 2.0, 0]]), np.array([[0, 3.0, 0], [0, 1.0, 0]]))
    np.testing.assert_allclose(r[0], [[0, -1, 0], [1, 0, 0], [0, 0, 1]], atol=1e-15)  # 90 deg about z
    np.testing.assert_array_equal(r[1], np.eye(3))


def test_rotation_svd_recovers_the_rotation_of_a_cross_covariance():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(50, 3))
    q = closest_rotation(rng.normal(size=(3, 3)))
    y = x @ q.T
    r, sigma, d = rotation_svd(y.T @ x)  # sum y x^T
    np.testing.assert_allclose(r, q, atol=1e-12)
    assert (np.diff(sigma) <= 0).all() and (d == 1).all()


def test_rotation_svd_never_reflects():
    r, _, d = rotation_svd(np.diag([1.0, 2.0, -3.0])[None])
    assert _is_rotation(r[0]) and d[0, 2] == -1
    np.testing.assert_array_equal(rotation_svd(np.zeros((3, 3)))[0], closest_rotation(np.zeros((3, 3))))


def test_umeyama_is_exact_on_a_similarity():
    rng = np.random.default_rng(5)
    src = rng.normal(size=(30, 3))
    q = closest_rotation(rng.normal(size=(3, 3)))
    sim = umeyama(src, 2.5 * src @ q.T + [1.0, -2.0, 0.5])
    np.testing.assert_allclose(sim.rotation, q, atol=1e-12)
    assert abs(sim.scale - 2.5) < 1e-12
