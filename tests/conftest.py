"""Shared test helpers: a small synthetic rig, and the dev data location."""
from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from asetransfer import Mesh, Rig, Skeleton, SkinWeights
from asetransfer.humanoid.skeleton_map import propose_skeleton_map

ROOT = pathlib.Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
DEV = (ROOT / ".." / "shared" / "data" / "makehuman-dev").resolve()
PRODUCTION = (ROOT / ".." / "shared" / "data" / "production-dev").resolve()
DEV_CASES = sorted(p.name for p in DEV.iterdir() if p.is_dir()) if DEV.is_dir() else []


def dev_target(case: str) -> pathlib.Path:
    """A dev case's target mesh, as its ``index.json`` names it (``target.ply``, ``target.obj``, ...)."""
    entry = {c["case"]: c for c in json.loads((DEV / "index.json").read_text())["cases"]}[case]
    return DEV / case / entry["target_file"]


def production_file(case: str, role: str) -> pathlib.Path:
    """A production-set case's file by its role in ``index.json`` (``source``, ``target``,
    ``markers``, ``gt``, ``gt_json``)."""
    entry = {c["case"]: c for c in json.loads((PRODUCTION / "index.json").read_text())["cases"]}[case]
    return PRODUCTION / case / entry["files"][role]

@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory):
    """Batches cache their prepared source in a folder of the test session, not the user's."""
    import os

    before = os.environ.get("ASETRANSFER_CACHE")
    os.environ["ASETRANSFER_CACHE"] = str(tmp_path_factory.mktemp("asetransfer-cache"))
    yield
    if before is None:
        del os.environ["ASETRANSFER_CACHE"]
    else:
        os.environ["ASETRANSFER_CACHE"] = before


needs_dev = pytest.mark.skipif(not DEV.is_dir(), reason="../shared/data/makehuman-dev is not present")
needs_production = pytest.mark.skipif(not PRODUCTION.is_dir(), reason="../shared/data/production-dev is absent")


def arms_down(rig: Rig, degrees: float, axis=(0.0, 0.0, 1.0)) -> np.ndarray:
    """(J, 4, 4) world matrices of ``rig``'s joints with both upper arms turned ``degrees``
    down about ``axis`` (the body's forward axis, its left on +x; about the up axis,
    ``(0, -1, 0)``, they swing forward)."""
    mapping, _ = propose_skeleton_map(rig.skeleton)
    sk = rig.skeleton
    world = sk.rest_world()
    turns = {}
    for side, sign in (("l", -1.0), ("r", 1.0)):
        j = sk.index(mapping[f"shoulder_{side}"])
        r_world = Rotation.from_rotvec(np.radians(sign * degrees) * np.asarray(axis, float)).as_matrix()
        frame = world[j, :3, :3]
        turns[j] = frame.T @ r_world @ frame
    return sk.posed_world(turns)


def subdivided_rig(rig: Rig) -> Rig:
    """``rig`` with every triangle cut in four, each new vertex weighted as the mean of its edge's ends."""
    import scipy.sparse as sp

    from asetransfer.geometry.decimate import midpoint_subdivide

    v, f = rig.mesh.vertices, rig.mesh.faces
    edges = np.unique(np.sort(np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]]), axis=1), axis=0)
    vertices, faces = midpoint_subdivide(v, f)  # new vertices in the order of ``edges``
    halves = sp.csr_matrix((np.full(2 * len(edges), 0.5), (np.repeat(np.arange(len(edges)), 2), edges.ravel())),
                           shape=(len(edges), len(v)))
    weights = rig.skin.to_sparse()
    return Rig(Mesh(vertices, faces), rig.skeleton, SkinWeights.from_sparse(sp.vstack([weights, halves @ weights])))


def tube_rig(n_ring: int = 12, n_seg: int = 12, length: float = 3.0, radius: float = 0.3) -> Rig:
    """A capped tube along +Y with a 3-joint chain (root, mid, tip) and smooth weights.

    Joints have non-identity orientations (local +Y along the bone, tilted X), and
    the tip joint is an end site with no weights, like a finger tip.
    """
    ys = np.linspace(0.0, length, n_seg + 1)
    ang = np.linspace(0, 2 * np.pi, n_ring, endpoint=False)
    ring = np.stack([radius * np.cos(ang), np.zeros_like(ang), radius * np.sin(ang)], axis=1)
    verts = np.concatenate([ring + [0, y, 0] for y in ys] + [[[0, 0, 0]], [[0, length, 0]]])
    faces = []
    for s in range(n_seg):
        for k in range(n_ring):
            a, b = s * n_ring + k, s * n_ring + (k + 1) % n_ring
            c, d = a + n_ring, b + n_ring
            faces += [(a, c, b), (b, c, d)]
    bottom, top = len(verts) - 2, len(verts) - 1
    last = n_seg * n_ring
    for k in range(n_ring):
        faces += [(bottom, (k + 1) % n_ring, k), (top, last + k, last + (k + 1) % n_ring)]
    mesh = Mesh(verts, np.array(faces))
    names = ("root", "mid", "tip")
    parents = np.array([-1, 0, 1])
    world = np.tile(np.eye(4), (3, 1, 1))
    tilt = Rotation.from_euler("y", [[20], [-35], [50]], degrees=True).as_matrix()
    world[:, :3, :3] = tilt
    world[:, :3, 3] = [[0, 0, 0], [0, length / 2, 0], [0, length, 0]]
    skel = Skeleton.from_world(names, parents, world)
    t = verts[:, 1] / length
    w_mid = np.clip((t - 0.35) / 0.3, 0, 1)
    dense = np.stack([1 - w_mid, w_mid, np.zeros_like(t)], axis=1)
    return Rig(mesh, skel, SkinWeights.from_dense(dense))


def assert_rigs_equal(a: Rig, b: Rig, tol: float = 1e-6) -> None:
    """Joint names, hierarchy, world transforms (rest and bind), weights and vertices agree to tol."""
    assert a.skeleton.names == b.skeleton.names
    assert np.array_equal(a.skeleton.parents, b.skeleton.parents)
    np.testing.assert_allclose(a.skeleton.rest_world(), b.skeleton.rest_world(), atol=tol)
    np.testing.assert_allclose(a.skeleton.bind_world, b.skeleton.bind_world, atol=tol)
    np.testing.assert_allclose(a.mesh.vertices, b.mesh.vertices, atol=tol)
    np.testing.assert_array_equal(a.mesh.faces, b.mesh.faces)
    assert abs(a.skin.to_sparse() - b.skin.to_sparse()).max() <= tol


@pytest.fixture(scope="session")
def fixture_source() -> Rig:
    """The bundled fixture character (fixtures/source.glb): 7676 vertices, 65 joints, L/R symmetric."""
    from asetransfer.io import load_rig
    return load_rig(FIXTURES / "source.glb")
