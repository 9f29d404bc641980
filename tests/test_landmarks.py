"""Automatic markers: landmarks from geometry alone, on the bundled fixtures.

Properties that would break if the rules were wrong: every landmark is found on
the side it is named for (the fixtures' left is +X); the result does not depend on
the frame (a rotated, scaled, moved copy gives the same landmarks moved the same
way; a mirrored copy swaps left and right); a body cut into pieces with gaps
gives the landmarks of the whole body; lowering the arms 40 degrees with the
rig's own skinning keeps them on the same vertices; a cube, a four-legged
creature and a lone arm are refused.
"""
from __future__ import annotations

import functools
import json

import numpy as np
import pytest
import trimesh
from scipy.spatial.transform import Rotation

import asetransfer as at
from asetransfer.config import Config, MarkersConfig
from asetransfer.geometry.pieces import LayerRule
from asetransfer.geometry.solid import solid_surface
from asetransfer.humanoid.landmarks import NotHumanoidError, find_landmarks
from asetransfer.humanoid.landmarks.limbs import ELBOW, KNEE
from asetransfer.humanoid.skeleton_map import propose_skeleton_map
from asetransfer.model.markers import Markers
from asetransfer.model.mesh import Mesh
from asetransfer.model.surface import SurfacePoints
from asetransfer.stages.markers import automatic_markers
from asetransfer_cli.main import main
from conftest import DEV, FIXTURES, arms_down, dev_target, needs_dev

KW = dict(bridge_gap=0.02, extremity_radius=0.15, symmetry_iterations=30,
          layers=LayerRule(gap=0.01, distance=0.03, angle=45.0, fraction=0.5))
LIMBS = ELBOW + KNEE
TARGETS = ("target_heavy.ply", "target_tall.obj", "target_cartoon.off")
EXPECTED = {"head_top", "nose_tip", "head_back", "crotch", "throat", "nape"} | {
    f"{n}.{s}" for n in ("hand_tip", "thumb_tip", "index_tip", "middle_tip", "ring_tip", "pinky_tip", "toe_tip",
                         "heel", "ear") for s in "LR"}


@pytest.fixture(scope="module")
def source():
    return at.load_rig(FIXTURES / "source.glb")


@pytest.fixture(scope="module")
def heavy():
    return at.load_mesh(FIXTURES / "target_heavy.ply")


def _landmarks(mesh):
    return find_landmarks(mesh, **KW)


def _height(mesh):
    return float(np.ptp(mesh.vertices, axis=0).max())


@pytest.mark.parametrize("name", ("source.glb",) + TARGETS)
def test_every_landmark_is_found_on_its_named_side(name):
    mesh = at.load_rig(FIXTURES / name).mesh if name.endswith(".glb") else at.load_mesh(FIXTURES / name)
    lm = _landmarks(mesh)
    # the elbows and knees where a limb narrows again (the fixture source's arms: test_limbs.py)
    assert EXPECTED <= set(lm.vertex) and {n.partition(".")[0] for n in set(lm.vertex) - EXPECTED} <= set(LIMBS)
    coords = lm.frame.coordinates(mesh.vertices[list(lm.vertex.values())])
    by_name = dict(zip(lm.vertex, coords))
    for n, c in by_name.items():  # frame coordinates: (left, up, forward) in units of height
        if n.endswith(".L"):
            assert c[0] > 0.03, n
        if n.endswith(".R"):
            assert c[0] < -0.03, n
    assert by_name["head_top"][1] == max(c[1] for c in coords)
    assert by_name["nose_tip"][2] > by_name["head_back"][2] + 0.05
    # where the head ends: below the nose, the throat in front of the nape
    assert by_name["throat"][1] < by_name["nose_tip"][1] and by_name["nape"][1] < by_name["nose_tip"][1]
    assert by_name["throat"][2] > by_name["nape"][2] + 0.03
    assert by_name["toe_tip.L"][2] > by_name["heel.L"][2] + 0.1
    # the fixtures are made in their file's frame: +X is left; Z-up for the cartoon
    assert lm.frame.left[0] > 0.99
    assert min(lm.confidence.values()) > 0.5


def test_landmarks_follow_a_similarity_of_the_mesh(heavy):
    s, t = 37.0, np.array([12.5, -40.0, 3.25])
    rot = Rotation.from_rotvec([0.9, -1.4, 0.6]).as_matrix()
    moved = Mesh(s * heavy.vertices @ rot.T + t, heavy.faces)
    a, b = _landmarks(heavy), _landmarks(moved)
    assert set(a.vertex) == set(b.vertex)
    pa = heavy.vertices[[a.vertex[n] for n in sorted(a.vertex)]]
    pb = (heavy.vertices[[b.vertex[n] for n in sorted(a.vertex)]])
    assert np.linalg.norm(pa - pb, axis=1).max() < 0.01 * _height(heavy)
    np.testing.assert_allclose(b.frame.up, rot @ a.frame.up, atol=1e-3)
    assert b.frame.height == pytest.approx(s * a.frame.height, rel=1e-3)


@needs_dev
def test_the_throat_and_nape_of_a_symmetric_body_follow_a_similarity():
    """A MakeHuman body's midline vertices lie on its mid-plane; turned and scaled x37 they
    lie on it only within rounding, and the lines cast along the plane missed the triangles
    on its far side: most measured nothing, the head's share of the height read 0.09
    instead of 0.13, and the throat and nape were linked on one copy only (neck 3 %H apart)."""
    body = at.load_mesh(dev_target("d01_female"))
    s, t = 37.0, np.array([3.0, -2.0, 5.0])
    rot = np.linalg.qr([[0.3, 0.8, 0.1], [-0.5, 0.2, 0.7], [0.6, -0.1, 0.4]])[0]
    moved = Mesh(s * body.vertices @ rot.T + t, body.faces)
    rules = Config().markers
    kw = dict(bridge_gap=rules.bridge_gap, extremity_radius=rules.extremity_radius, symmetry_iterations=12)
    a, b = find_landmarks(body, **kw), find_landmarks(moved, **kw)
    pa, pb = a.positions(body.vertices, body.faces), b.positions(moved.vertices, moved.faces)
    for name in ("throat", "nape"):
        back = ((pb[name] - t) @ rot) / s
        assert np.linalg.norm(back - pa[name]) < 1e-3 * _height(body), name


def test_the_solid_of_a_body_faces_outwards_and_has_its_neck(heavy):
    """A character in pieces is searched as the solid its pieces make (geometry.solid); its
    surface came inside out from marching cubes, every line through the neck entered by a
    back-facing wall, and no throat or nape was found (a held-out chibi girl in 2 pieces:
    head and neck joints 7-12 %H off)."""
    v, f = solid_surface(heavy.vertices, heavy.faces)
    corner = v[f]
    assert np.einsum("ij,ij->i", corner[:, 0], np.cross(corner[:, 1], corner[:, 2])).sum() > 0
    whole, solid = _landmarks(heavy), _landmarks(Mesh(v, f))
    at_whole, at_solid = whole.positions(heavy.vertices, heavy.faces), solid.positions(v, f)
    for name in ("throat", "nape"):
        assert np.linalg.norm(at_whole[name] - at_solid[name]) < 0.02 * _height(heavy), name


def test_a_mirrored_mesh_swaps_left_and_right(heavy):
    flip = np.diag([-1.0, 1.0, 1.0])
    mirrored = Mesh(heavy.vertices @ flip, heavy.faces[:, ::-1])
    a, b = _landmarks(heavy), _landmarks(mirrored)
    for n in ("hand_tip", "toe_tip", "heel", "thumb_tip"):
        pa = heavy.vertices[a.vertex[f"{n}.L"]] @ flip
        pb = mirrored.vertices[b.vertex[f"{n}.R"]]
        assert np.linalg.norm(pa - pb) < 0.01 * _height(heavy), n


def _cut_into_pieces(mesh: Mesh, gap: float) -> Mesh:
    """The mesh with every face near four cut planes removed: neck, waist, both shoulders and
    knees fall apart into separate pieces ``~2 gap`` apart, like joint-covered armour."""
    v, f = mesh.vertices, mesh.faces
    lo, hi = v.min(axis=0), v.max(axis=0)
    h = hi[1] - lo[1]
    y, x = v[f][:, :, 1], np.abs(v[f][:, :, 0])
    cuts = [(y.min(axis=1) < lo[1] + k * h + gap) & (y.max(axis=1) > lo[1] + k * h - gap) for k in (0.28, 0.55, 0.84)]
    cuts.append((x.min(axis=1) < 0.22 * h + gap) & (x.max(axis=1) > 0.22 * h - gap))
    keep = ~np.any(cuts, axis=0)
    return Mesh(v, f[keep])


def test_a_body_in_pieces_has_the_landmarks_of_the_whole(heavy):
    from asetransfer.geometry.topology import vertex_components
    pieces = _cut_into_pieces(heavy, 0.006)
    assert vertex_components(pieces.n_vertices, pieces.faces).max() >= 5  # really apart
    a, b = _landmarks(heavy), _landmarks(pieces)
    for n in a.vertex:
        d = np.linalg.norm(heavy.vertices[a.vertex[n]] - heavy.vertices[b.vertex[n]])
        assert d < 0.01 * _height(heavy), n


def test_a_body_in_pieces_rigs_with_automatic_markers_like_the_whole_body(source, heavy):
    # cut at neck, waist, shoulders and knees (1.2 %H gaps): only the feet and the crotch
    # carry landmarks below the waist, so the fairing must treat the pieces as one
    # surface (one-sided Laplacian rows at the cuts shrank the legs: shins 11 %H off)
    truth = json.loads((FIXTURES / "target_heavy.truth.json").read_text())["joints"]
    names = [n for n in source.skeleton.names if n in truth
             and not any(k in n for k in ("thumb", "index", "middle", "ring", "pinky"))]
    height = _height(heavy)

    def error(mesh):
        pos = at.transfer(source, mesh, None).rig.skeleton.bind_world[:, :3, 3]
        got = np.array([pos[source.skeleton.index(n)] for n in names])
        return np.linalg.norm(got - np.array([truth[n] for n in names]), axis=1) / height * 100

    whole, pieces = error(heavy), error(_cut_into_pieces(heavy, 0.01 * height / 1.7))
    # measured, %H mean / max: whole 0.68 / 1.69, pieces 0.58 / 1.49 (thighs; 0.71 / 2.14
    # when only pieces holding under 3 markers were faired across their gaps and the
    # pieces were registered in one level of stiffness, not glued_stiffness's).  The
    # trunk is what the extremity markers leave free (hips 1.6 %H off in the whole body).
    # The failure this guards against, pieces shrinking from their cuts, put the shins 11 %H off
    assert pieces.mean() < 1.1 * whole.mean() and pieces.max() < 1.3 * whole.max()


@needs_dev
def test_a_dev_body_cut_at_its_knees_keeps_its_crotch():
    # the heavy dev body cut at its joints (tests/dressing.cut_faces: the legs at the knees).
    # The crotch was the top of the shortest path between the toes: through the knee gaps it
    # climbed the backs of the legs and crossed the flat saddle 7.9 %H behind the whole body's
    from dressing import MAKEHUMAN_JOINTS, cut_faces
    whole = at.load_mesh(dev_target("d02_heavy_male"))
    sk = at.load_rig(DEV / "d02_heavy_male" / "gt.glb").skeleton
    joints = {r: sk.bind_world[sk.index(n), :3, 3] for r, n in MAKEHUMAN_JOINTS.items()}
    a = _landmarks(whole)
    pieces = Mesh(whole.vertices, whole.faces[cut_faces(whole, joints, a.frame.up, a.frame.forward)])
    b = _landmarks(pieces)
    moved = {n: np.linalg.norm(whole.vertices[a.vertex[n]] - whole.vertices[b.vertex[n]]) / a.frame.height
             for n in a.vertex}
    # measured: crotch 0.00 %H; the most moved, head_back 0.9 (the cut frame tilts 0.5 deg)
    assert moved["crotch"] < 0.005 and max(moved.values()) < 0.015, moved


def _coarse(mesh: Mesh) -> Mesh:
    """``mesh`` decimated to 2k vertices (geometry.decimate): a coarse game mesh."""
    from asetransfer.geometry.decimate import proxy_mesh
    return Mesh(*proxy_mesh(mesh.vertices, mesh.faces, 2000))


BETWEEN = ("crotch", "heel.L", "heel.R", "toe_tip.L", "toe_tip.R", "head_back", "head_top", "ear.L", "ear.R")


def _moved_on_coarse(mesh: Mesh):
    """%H from ``mesh``'s landmarks ``BETWEEN`` to the coarse copy's, between vertices and on
    vertices."""
    from asetransfer.humanoid.landmarks import between_vertices
    coarse = _coarse(mesh)
    a, b = _landmarks(mesh), _landmarks(coarse)
    assert not between_vertices(a) and between_vertices(b) and between_vertices(a, b)
    pa, pb = a.positions(mesh.vertices, mesh.faces), b.positions(coarse.vertices, coarse.faces)
    on_vertex = b.positions(coarse.vertices)
    return ({n: np.linalg.norm(pb[n] - pa[n]) / a.frame.height * 100 for n in BETWEEN},
            {n: np.linalg.norm(on_vertex[n] - pa[n]) / a.frame.height * 100 for n in BETWEEN})


def test_a_coarse_body_has_its_landmarks_between_vertices(heavy):
    # the heavy fixture decimated to 2k vertices (2.0 %H apart): measured 0.03 / 0.14 / 0.14
    # / 0.05 / 0.05 / 0.52 / 0.04 / 0.28 / 0.32 %H from the fixture's crotch / heels / toe tips
    # / back of the head / head top / ears; on the vertices 2.25 / 1.10 / 1.15 / 1.43 / 2.12 /
    # 0.72 / 0.64 / 0.40 / 0.97 (what the rules on the vertices give)
    between, on_vertex = _moved_on_coarse(heavy)
    assert max(between.values()) < 0.6, between
    assert sum(on_vertex.values()) > 3 * sum(between.values()), on_vertex


@needs_dev
@pytest.mark.parametrize("case", ("d05_apose_male", "d06_turned_cm"))
def test_a_coarse_dev_body_has_its_landmarks_between_vertices(case):
    # measured (%H, crotch / heels / toe tips / back of the head / head top / ears): d05 0.11
    # / 0.12 / 0.19 / 0.03 / 0.06 / 0.44 / 0.17 / 0.27 / 0.29, on the vertices 0.69 / 1.11 /
    # 1.60 / 1.10 / 1.24 / 0.57 / 1.81 / 0.61 / 0.69; d06 0.09 / 0.04 / 0.10 / 0.05 / 0.06 /
    # 0.19 / 0.11 / 0.14 / 0.09, on the vertices 4.24 / 1.09 / 0.93 / 1.27 / 0.96 / 0.30 /
    # 0.55 / 1.03 / 0.75
    between, on_vertex = _moved_on_coarse(at.load_mesh(dev_target(case)))
    assert max(between.values()) < 0.6, between
    assert sum(on_vertex.values()) > 3 * sum(between.values()), on_vertex


@needs_dev
def test_the_back_of_the_head_is_on_its_outside():
    # the heavy dev body decimated to 2k vertices by vertex clustering (geometry.decimate):
    # the vertex nearest the line behind the nose was on a fold inside the head, 5.7 %H in
    # front of the back of the head (measured now: 1.45 %H from the dense body's point on
    # the vertices, 0.23 between them)
    whole = at.load_mesh(dev_target("d02_heavy_male"))
    coarse = _coarse(whole)
    a, b = _landmarks(whole), _landmarks(coarse)
    target = a.positions(whole.vertices, whole.faces)["head_back"]
    on_vertex = coarse.vertices[b.vertex["head_back"]]
    between = b.positions(coarse.vertices, coarse.faces)["head_back"]
    assert np.linalg.norm(on_vertex - target) < 0.02 * a.frame.height
    assert np.linalg.norm(between - target) < 0.005 * a.frame.height


def test_a_large_body_is_searched_on_a_copy_and_keeps_its_landmarks(heavy):
    # the heavy fixture subdivided (32k vertices) and searched on a 10k copy
    # (MarkersConfig.search_vertices; 50k by default): the same landmarks, on the large
    # body's own vertices and triangles.  Measured against the search of the whole body:
    # between vertices mean 0.07, max 0.21 %H; on the vertices (0.5 %H apart on the
    # copy) mean 0.38, max 1.08
    from asetransfer.geometry.decimate import midpoint_subdivide
    from asetransfer.stages.markers import landmarks_of
    large = Mesh(*midpoint_subdivide(heavy.vertices, heavy.faces))
    whole = landmarks_of(large, "target", Config(markers=MarkersConfig(search_vertices=20_000)))
    copy = landmarks_of(large, "target", Config(markers=MarkersConfig(search_vertices=10_000)))
    assert set(copy.vertex) == set(whole.vertex) == EXPECTED
    assert copy.spacing > 1.5 * whole.spacing  # the copy's rules ran: it is coarser
    height = whole.frame.height
    for faces, mean, most in ((large.faces, 0.2, 0.5), (None, 0.8, 2.0)):
        a, b = whole.positions(large.vertices, faces), copy.positions(large.vertices, faces)
        moved = np.array([np.linalg.norm(a[n] - b[n]) for n in a]) / height * 100
        assert moved.mean() < mean and moved.max() < most, moved
    # every landmark is on the large body's surface
    on_surface = copy.positions(large.vertices, large.faces)
    from asetransfer.geometry.surface import SurfaceIndex
    _, _, distance, _ = SurfaceIndex(large.vertices, large.faces).closest(np.array(list(on_surface.values())))
    assert distance.max() < 1e-9 * height


def test_automatic_markers_between_vertices_only_with_a_coarse_character(source, heavy):
    # a dense pair keeps every marker on a vertex (one barycentric 1); a coarse target puts
    # the crotch, heels, toe tips, head top and back, ears and fingertips of both characters
    # between vertices, the others stay (the elbows' and knees' sections, which link between
    # vertices whatever the spacing, where the coarse copy narrows enough to have them)
    def on_vertices(markers):
        return {n: bool(np.isclose(markers.target.bary[i].max(), 1.0) and np.isclose(markers.source.bary[i].max(), 1.0))
                for i, n in enumerate(markers.names)}
    dense, report = automatic_markers(source, heavy, Config())
    assert all(on_vertices(dense).values()) and report.between_vertices is False
    coarse, report = automatic_markers(source, _coarse(heavy), Config())
    assert report.between_vertices is True
    fingertips = {n for n in coarse.names if n.split("_tip")[0] in ("thumb", "index", "middle", "ring", "pinky")}
    limbs = {n for n in coarse.names if n.partition(".")[0] in LIMBS}
    assert fingertips and {n for n, v in on_vertices(coarse).items() if not v} == set(BETWEEN) | fingertips | limbs


# the largest landmark move, in %H, allowed on the heavy fixture dressed with each kind
# (tests/dressing.py) against the one-piece body.  Measured 0.00 for every kind: shirt,
# hair and eyes are layers left out, the sword a prop left out (the layout failed with it
# before), joint covers stay but the middle of the body is the largest piece's (before:
# head top 4.1, heels 1.0, a 1.3 degree tilt of the ground plane).  Hair cards 0.00 (before
# the cards hanging off the head or resting on other cards were layers: head_back 5.45,
# ear.L 4.76, ear.R 2.87, head top 1.84, heels 1.1-1.3)
DRESSED_BOUND = {kind: 0.1 for kind in ("covers", "shirt", "hair", "eyes", "sword", "all", "cards")}


@pytest.mark.parametrize("kind", sorted(DRESSED_BOUND))
def test_a_dressed_body_has_the_landmarks_of_the_body(kind, heavy):
    from dressing import FIXTURE_JOINTS, dress
    truth = json.loads((FIXTURES / "target_heavy.truth.json").read_text())["joints"]
    joints = {r: np.array(truth[n]) for r, n in FIXTURE_JOINTS.items()}
    dressed = dress(heavy, kind, joints, [0, 1, 0], [0, 0, 1])  # the body's vertices come first
    a, b = _landmarks(heavy), _landmarks(dressed)
    limbs = {n for n in b.vertex if n.partition(".")[0] in LIMBS}
    assert set(b.vertex) - limbs == set(a.vertex)
    moved = {n: np.linalg.norm(heavy.vertices[a.vertex[n]] - dressed.vertices[b.vertex[n]]) / _height(heavy) * 100
             for n in a.vertex}
    assert max(moved.values()) < DRESSED_BOUND[kind], moved
    # every landmark on the body itself, none on an accessory (a blade's tip, a hair cap)
    assert max(b.vertex[n] for n in a.vertex) < heavy.n_vertices
    # but for the elbows a joint cover marks (the smooth body has none), at its elbow joint
    for name in limbs:
        side = name.partition(".")[2]
        shoulder, elbow, wrist = (np.array(truth[f"{j}.{side}"]) for j in ("upperarm", "forearm", "hand"))
        axis = (wrist - shoulder) / np.linalg.norm(wrist - shoulder)
        assert name.startswith("elbow") and abs((dressed.vertices[b.vertex[name]] - elbow) @ axis) < 0.015 * _height(heavy)


def test_a_prop_held_by_a_body_in_pieces_is_left_out(heavy):
    # a sword in the hand of a body cut at the joints: the prop is a piece like the body's
    # own, told apart by its tip having no mirror image on the body
    from dressing import FIXTURE_JOINTS, sword
    truth = json.loads((FIXTURES / "target_heavy.truth.json").read_text())["joints"]
    joints = {r: np.array(truth[n]) for r, n in FIXTURE_JOINTS.items()}
    pieces = _cut_into_pieces(heavy, 0.006)
    (v, f), = sword(heavy, joints, np.array([0.0, 1.0, 0.0]), np.array([0.0, 0.0, 1.0]))
    armed = Mesh(np.concatenate([pieces.vertices, v]), np.concatenate([pieces.faces, f + pieces.n_vertices]))
    a, b = _landmarks(pieces), _landmarks(armed)
    assert a.vertex == b.vertex


def _posed(source, degrees):
    """The source skinned with both upper arms turned ``degrees`` down about the body's forward axis."""
    return Mesh(source.posed_vertices(arms_down(source, degrees)), source.mesh.faces)


def test_lowering_the_arms_keeps_the_landmarks(source):
    a, b = _landmarks(source.mesh), _landmarks(_posed(source, 40.0))
    for n in ("hand_tip.L", "hand_tip.R", "head_top", "toe_tip.L", "heel.R", "thumb_tip.L", "crotch"):
        d = np.linalg.norm(source.mesh.vertices[a.vertex[n]] - source.mesh.vertices[b.vertex[n]])
        assert d < 0.015 * _height(source.mesh), n


def test_hands_crossed_over_the_body_keep_their_sides(source):
    # arms swung forward 115 degrees: each hand lies past the mid-plane, in front of the
    # other side's shoulder.  A hand belongs to the side of the foot it reaches down its
    # own flank; read by its place, each hand tip was named for the other hand
    world = arms_down(source, 115.0, axis=(0.0, -1.0, 0.0))
    mesh = Mesh(source.posed_vertices(world), source.mesh.faces)
    ends = {s: world[source.skeleton.index(f"middle_end.{s}"), :3, 3] for s in "LR"}
    assert ends["L"][0] < 0 < ends["R"][0]  # really crossed (the fixture's left is +x)
    lm = _landmarks(mesh)
    for s, other in (("L", "R"), ("R", "L")):
        p = mesh.vertices[lm.vertex[f"middle_tip.{s}"]]
        assert np.linalg.norm(p - ends[s]) < np.linalg.norm(p - ends[other]), s


@pytest.mark.parametrize("degrees", (0.0, 40.0))
def test_each_fingertip_is_named_for_its_finger(source, degrees):
    # the fixture rig has a chain per finger ending in thumb_end.L, index_end.L...: each
    # named fingertip is nearer its own finger's end joint than any other finger's
    # (a wrong order would name the pinky "middle"), also with the arms lowered
    world = arms_down(source, degrees)
    mesh = Mesh(source.posed_vertices(world), source.mesh.faces)
    lm = _landmarks(mesh)
    fingers = ("thumb", "index", "middle", "ring", "pinky")
    for side in "LR":
        ends = np.array([world[source.skeleton.index(f"{f}_end.{side}"), :3, 3] for f in fingers])
        for k, f in enumerate(fingers):
            p = mesh.vertices[lm.vertex[f"{f}_tip.{side}"]]
            assert int(np.argmin(np.linalg.norm(ends - p, axis=1))) == k, (f, side)
        assert lm.vertex[f"middle_tip.{side}"] != lm.vertex[f"thumb_tip.{side}"]


def test_the_corners_of_one_blunt_fingertip_are_one_tip():
    # six tips: four fingertips 0.085 H or more apart and a thumb with two corners 0.031
    # apart (graph paths on a coarse mesh); tips farthest from the middle first
    from asetransfer.humanoid.landmarks.hands import _merged_corners
    tips = np.array([[0.0, 0, 0], [0.09, 0, 0], [0.18, 0, 0], [0.27, 0, 0], [0.1, -0.1, 0], [0.12, -0.125, 0]])
    d = np.linalg.norm(tips[:, None] - tips[None], axis=2)
    assert _merged_corners(list(range(6)), d) == [0, 1, 2, 3, 4]
    order = [5, 0, 1, 2, 3, 4]  # the other corner is the farther: it is the one kept
    assert _merged_corners(order, d[np.ix_(order, order)]) == [5, 0, 1, 2, 3]
    spread = np.array([[0.0, 0, 0], [0.09, 0, 0], [0.18, 0, 0], [0.27, 0, 0], [0.1, -0.1, 0], [0.2, -0.15, 0]])
    d = np.linalg.norm(spread[:, None] - spread[None], axis=2)  # no pair stands out: six stay
    assert _merged_corners(list(range(6)), d) == list(range(6))


#: flesh added to the heavy fixture down to its knees (a body sculpted or remeshed as one
#: volume): between the thighs, or a skirt round them; (start, end) offsets from the middle
#: of the hips and of the knees, and the radii
FUSED = {"thighs": ([0, -0.05, 0], [0, 0.08, 0], 0.08, 0.055), "skirt": ([0, 0.08, 0], [0, 0.16, 0], 0.16, 0.2)}


def _heavy_with(extra):
    """The heavy fixture with the primitives ``extra(generator, params, joints)`` joined to
    its body in one volume, and its true joints (name -> (3,))."""
    from test_fixtures import _generator
    g = _generator()
    p = g.character_params("heavy")
    joints = g.build_skeleton(p)
    truth = {j.name: j.pos for j in joints}
    V, F, _ = g.make_body(p, joints, extra(g, p, truth))
    return Mesh(V, F), truth


def _fused_to_the_knees(kind: str):
    """The heavy fixture with ``FUSED[kind]`` added, and its true joints."""
    a, b, ra, rb = FUSED[kind]

    def fused(g, p, at_):
        top, knees = 0.5 * (at_["thigh.L"] + at_["thigh.R"]), 0.5 * (at_["shin.L"] + at_["shin.R"])
        return [g.cone("hips", top + a, knees + b, ra, rb, k=0.03)]
    return _heavy_with(fused)


@pytest.mark.parametrize("kind, message", (("thighs", "thighs are joined"), ("skirt", "skirt or robe")))
def test_legs_fused_to_the_knees_give_no_crotch_marker_and_the_hips_stay_up(source, kind, message, caplog):
    # the legs part at the knees: a crotch marker there put the hips 12.7 / 16.0 %H and the
    # thighs 14.7 / 18.3 %H below the truth (thighs joined / a skirt); without it the hips
    # are 0.7 / 0.9 off and the thighs 1.1 / 2.1 (the fixture as built: 0.5 and 1.3)
    mesh, truth = _fused_to_the_knees(kind)
    landmarks = _landmarks(mesh)
    assert {"head_top", "toe_tip.L", "heel.R"} <= set(landmarks.vertex)
    assert ("crotch" in landmarks.vertex) == (kind == "skirt")  # a skirt's hem is a fork of the legs
    result = at.transfer(source, mesh, None)
    assert message in caplog.text and "crotch" not in result.markers.names
    assert result.report.marker_origin.thighs_joined == (["target"] if kind == "thighs" else [])
    placed = dict(zip(result.rig.skeleton.names, result.rig.skeleton.bind_world[:, :3, 3]))
    height = _height(mesh)
    for name, bound in (("hips", 0.02), ("spine.001", 0.02), ("thigh.L", 0.03), ("thigh.R", 0.03)):
        assert np.linalg.norm(placed[name] - truth[name]) < bound * height, name


def test_horns_leave_the_head_top_on_the_crown(heavy):
    # two horns rising above the head, one volume with it: the head top was found on a
    # horn tip 14 cm (8 %H) aside (the mirror plane through it, every marker low in
    # confidence, the head joint 7 %H off); now on the crown between them, 1.2 %H from where
    # the hornless body has it (the crown is flat: the middle of its top strip moves)
    def horns(g, p, at_):
        centre = g.head_centre(p, at_)
        return [g.cone("head", centre + [sx * 0.07, 0.06, 0.02], centre + [sx * 0.15, 0.2, 0.03], 0.025, 0.006,
                       k=0.01) for sx in (1.0, -1.0)]
    horned, _ = _heavy_with(horns)
    top = _landmarks(horned).positions(horned.vertices)["head_top"]
    plain = _landmarks(heavy).positions(heavy.vertices)["head_top"]
    assert np.linalg.norm(top - plain) < 0.025 * _height(heavy)  # on a horn tip: 8 %H
    assert horned.vertices[:, 1].max() > top[1] + 0.05  # the horns stand above it


def test_a_crotch_far_lower_than_the_sources_is_no_marker_only_beyond_the_ratio(source):
    # the cartoon fixture's legs part at 0.72 of the source's leg height: its crotch stays
    # a marker; asked for 0.8, it is dropped
    cartoon = at.load_mesh(FIXTURES / "target_cartoon.off")
    markers, report = automatic_markers(source, cartoon, Config())
    heights = report.crotch_heights
    assert "crotch" in markers.names and 0.65 < heights[1] / heights[0] < 0.8
    markers, _ = automatic_markers(source, cartoon, Config(markers=MarkersConfig(crotch_height_ratio=0.8)))
    assert "crotch" not in markers.names


class _TreeSurface:
    """What the landmark rules read of a surface (graph, distances from the middle, vertex 0;
    ``vertices`` if given), on a weighted tree graph: edges ``(a, b, length)``."""

    def __init__(self, edges, size, vertices=None):
        import scipy.sparse as sp
        from scipy.sparse.csgraph import dijkstra
        a, b, w = np.array(edges).T
        n = int(max(a.max(), b.max())) + 1
        self.graph = sp.csr_matrix((np.r_[w, w], (np.r_[a, b].astype(int), np.r_[b, a].astype(int))), shape=(n, n))
        self.size, self.from_middle, self.vertices = size, dijkstra(self.graph, indices=0), vertices
        self.distance_from = lambda v: dijkstra(self.graph, indices=v)


def _tree_line(points: list, edges: list, start: int, end) -> int:
    """Points 1 cm apart from ``points[start]`` to ``end`` appended to ``points``, each joined
    to the one before by an edge ``(a, b, length)`` in ``edges``; returns the last one's index."""
    end = np.asarray(end, dtype=np.float64)
    steps = max(1, int(np.ceil(np.linalg.norm(end - points[start]) / 0.01)))
    prev, a = start, points[start]
    for k in range(1, steps + 1):
        points.append(a + (end - a) * k / steps)
        edges.append((prev, len(points) - 1, float(np.linalg.norm(points[-1] - points[prev]))))
        prev = len(points) - 1
    return prev


def _hand_tree():
    """A left hand on a tree of points 1 cm apart, hanging from the middle of a body 1 m up:
    palm to knuckles 10 cm below the wrist, fingers 3-9 cm (the pinky short), a short thumb
    lying along the hand on the index side."""
    points, edges = [np.array([0.0, 1.0, 0.0])], []
    line = functools.partial(_tree_line, points, edges)
    wrist = line(0, np.array([0.0, 0.0, 0.0]))
    knuckle = line(wrist, np.array([0.01, -0.1, 0.0]))  # the middle finger's; the others beside it
    knuckles = {0.01: knuckle, 0.03: line(knuckle, np.array([0.03, -0.1, 0.0]))}
    knuckles[-0.01] = line(knuckle, np.array([-0.01, -0.1, 0.0]))
    knuckles[-0.03] = line(knuckles[-0.01], np.array([-0.03, -0.1, 0.0]))
    tips = {}
    for name, x, length in (("index", 0.03, 0.085), ("middle", 0.01, 0.09), ("ring", -0.01, 0.08),
                            ("pinky", -0.03, 0.03)):
        tips[name] = line(knuckles[x], np.array([x, -0.1 - length, 0.0]))
    tips["thumb"] = line(line(wrist, np.array([0.035, -0.02, 0.0])), np.array([0.035, -0.06, 0.0]))
    return _TreeSurface(edges, 2.5, np.array(points)), tips


def test_fingers_are_named_from_the_thumbs_side_of_the_hand():
    # the thumb's tip is nearer the short pinky's than the index's: the shortest chain of
    # fingertips from the thumb named them in reverse
    from asetransfer.humanoid.landmarks.hands import fingertips
    surface, tips = _hand_tree()
    v = surface.vertices
    assert np.linalg.norm(v[tips["thumb"]] - v[tips["pinky"]]) < np.linalg.norm(v[tips["thumb"]] - v[tips["index"]])
    named = fingertips(surface, tips["middle"], 2.5)
    assert named == {"thumb_tip": tips["thumb"], "index_tip": tips["index"], "middle_tip": tips["middle"],
                     "ring_tip": tips["ring"], "pinky_tip": tips["pinky"]}


def _long_hand_tree(thumb_tip, pinky_tip, thumb_from_wrist=True):
    """A left hand on a tree of points 1 cm apart hanging from the middle of a body 1 m up:
    knuckles 10 cm below the wrist 2 cm apart, the index the longest finger (its tip the
    hand's), the pinky's tip and the thumb's where given: from a joint 2 cm below the wrist
    and 5 cm to the index's side, or (not ``thumb_from_wrist``) from the index's knuckle."""
    points, edges = [np.array([0.0, 1.0, 0.0])], []
    line = functools.partial(_tree_line, points, edges)
    wrist = line(0, [0.0, 0.0, 0.0])
    knuckles = {0.01: line(wrist, [0.01, -0.1, 0.0])}
    knuckles[0.03] = line(knuckles[0.01], [0.03, -0.1, 0.0])
    knuckles[-0.01] = line(knuckles[0.01], [-0.01, -0.1, 0.0])
    knuckles[-0.03] = line(knuckles[-0.01], [-0.03, -0.1, 0.0])
    tips = {name: line(knuckles[x], end) for name, x, end in (
        ("index", 0.03, [0.03, -0.19, 0.0]), ("middle", 0.01, [0.01, -0.185, 0.0]),
        ("ring", -0.01, [-0.01, -0.18, 0.0]), ("pinky", -0.03, pinky_tip))}
    root = line(wrist, [0.05, -0.02, 0.0]) if thumb_from_wrist else knuckles[0.03]
    tips["thumb"] = line(root, thumb_tip)
    return _TreeSurface(edges, 2.5, np.array(points)), tips


def test_a_long_thumb_and_pinky_cut_by_the_hands_rim_are_reached():
    """Sintel's left thumb and pinky tips lie 14.4 and 14.9 %H from her hand tip along the
    surface, past HAND_REACH: the hand's rim across them was read as their tips.  The hand
    grows while a tip is only its rim cutting a finger."""
    from asetransfer.humanoid.landmarks.hands import FINGER_REACH_MAX, HAND_REACH, fingertips
    surface, tips = _long_hand_tree(thumb_tip=[0.09, -0.05, 0.0], pinky_tip=[-0.03, -0.165, 0.0])
    along = surface.distance_from(tips["index"])
    height = 2.0
    assert HAND_REACH * height < along[tips["thumb"]] < FINGER_REACH_MAX * height  # cut by the first rim
    named = fingertips(surface, tips["index"], height)
    assert named == {"thumb_tip": tips["thumb"], "index_tip": tips["index"], "middle_tip": tips["middle"],
                     "ring_tip": tips["ring"], "pinky_tip": tips["pinky"]}


def test_the_thumb_is_the_tip_standing_apart_when_the_pinky_is_farther_from_the_hand_tip():
    """The index's tip is the hand's and a spread pinky's tip lies farther from it than the
    thumb's (Sintel's left hand: thumb and pinky were named the other way round, index and
    ring too): the thumb is the tip farthest from its nearest other fingertip."""
    from asetransfer.humanoid.landmarks.hands import fingertips
    surface, tips = _long_hand_tree(thumb_tip=[0.075, -0.14, 0.0], pinky_tip=[-0.045, -0.17, 0.0],
                                    thumb_from_wrist=False)
    v = surface.vertices
    assert np.linalg.norm(v[tips["pinky"]] - v[tips["index"]]) > np.linalg.norm(v[tips["thumb"]] - v[tips["index"]])
    named = fingertips(surface, tips["index"], 2.2)
    assert named == {"thumb_tip": tips["thumb"], "index_tip": tips["index"], "middle_tip": tips["middle"],
                     "ring_tip": tips["ring"], "pinky_tip": tips["pinky"]}


def test_a_bump_is_left_out_but_not_a_sixth_finger():
    from asetransfer.humanoid.landmarks.hands import _isolation, _without_bumps
    # distances along a line of five vertices from vertices 1 and 3; vertex 4 is the farthest
    far = np.array([0.0, 0.3, 0.1, 0.2, 0.5])
    paths = np.abs(np.array([[1.0], [3.0]]) - np.arange(5)[None, :])
    assert _isolation(paths, far, far[[1, 3]]).tolist() == [3.0, 1.0]
    assert np.isinf(_isolation(paths[:1], far, np.array([0.6]))).all()
    # a Blender-built hand's six tips (H): the knuckle bump goes, then five fingers stay
    assert _without_bumps([0, 1, 2, 3, 4, 5], [np.inf, 0.081, 0.08, 0.049, 0.026, 0.065]) == [0, 1, 2, 3, 5]
    assert _without_bumps(list(range(7)), [np.inf, 0.089, 0.085, 0.056, 0.034, 0.019, 0.045]) == [0, 1, 2, 3, 6]
    six = [np.inf, 0.08, 0.079, 0.05, 0.06, 0.065]
    assert _without_bumps(list(range(6)), six) == list(range(6))




def test_a_limb_with_many_tips_is_one_limb_and_the_others_are_still_found():
    # four limbs 1.0 long and a fifth 1.2 long ending in nine prongs 0.1 long (long
    # fingers, claws): the prongs' tips are nine extremities, all farther from the middle
    # than the other limbs' -- more than the candidates examined -- yet one limb's
    edges, node = [], 0

    def chain(start, steps, step):
        nonlocal node
        prev = start
        for _ in range(steps):
            node += 1
            edges.append((prev, node, step))
            prev = node
        return prev

    ends = [chain(0, 10, 0.1) for _ in range(4)]
    hand = chain(0, 12, 0.1)
    prongs = [chain(hand, 2, 0.05) for _ in range(9)]
    from asetransfer.humanoid.landmarks.layout import CANDIDATE_TIPS, _tips
    assert len(prongs) > CANDIDATE_TIPS
    tips = _tips(_TreeSurface(edges, size=2.0), radius=0.025)  # extremities 0.05 apart, limbs 0.6
    assert len(tips) == 5
    assert set(tips[1:]) == set(ends) and tips[0] in prongs


@needs_dev
def test_a_coarse_dev_body_names_all_its_fingertips():
    # the A-pose dev body decimated to 3k vertices (pymeshlab's quadric collapse, as
    # bench_markers --decimate 6000): each thumb's blunt end had two extremities 0.031 H
    # apart along the edges, six tips on a hand, and only the thumbs were named
    import pymeshlab
    whole = at.load_mesh(dev_target("d05_apose_male"))
    ms = pymeshlab.MeshSet()
    ms.add_mesh(pymeshlab.Mesh(whole.vertices, whole.faces))
    ms.meshing_decimation_quadric_edge_collapse(targetfacenum=6000, preservenormal=True, preservetopology=True)
    coarse = Mesh(ms.current_mesh().vertex_matrix(), ms.current_mesh().face_matrix())
    a, b = _landmarks(whole), _landmarks(coarse)
    names = [f"{f}_tip.{s}" for f in ("thumb", "index", "middle", "ring", "pinky") for s in "LR"]
    assert set(names) <= set(b.vertex)
    moved = {n: np.linalg.norm(whole.vertices[a.vertex[n]] - coarse.vertices[b.vertex[n]]) / a.frame.height
             for n in names}
    # measured: the thumbs 1.09 %H (the corner kept), the fingers 0.25-0.47 (a margin for
    # other pymeshlab versions' decimations)
    assert max(moved.values()) < 0.02, moved
    # between vertices (the middle of each finger's end): 0.10-0.24 %H from the dense body's
    pa, pb = a.positions(whole.vertices, whole.faces), b.positions(coarse.vertices, coarse.faces)
    between = {n: np.linalg.norm(pa[n] - pb[n]) / a.frame.height for n in names}
    assert max(between.values()) < 0.005, between


@needs_dev
def test_curled_fingers_are_named():
    # a relaxed hand: the female dev body posed by its own rig with the four fingers bent 32,
    # 38 and 24 degrees at their three joints and the thumb 10-18 (0.4 of the scorer's fists).
    # The curled fingertips lie 1.3-2.8 %H from the hand tip, under THUMB_MIN: no thumb was
    # named, the hand tip (on a knuckle) was linked to the straight source's fingertip and
    # pulled the wrists 2.9 %H off.  Along the surface the thumb is as far as ever
    truth = at.load_rig(DEV / "d01_female" / "gt.glb")
    sk = truth.skeleton
    bends = {"1": (10.0, 14.0, 18.0), **{finger: (32.0, 38.0, 24.0) for finger in "2345"}}  # degrees, joints 1-3
    turns = {sk.index(f"finger{f}-{k + 1}.{s}"): Rotation.from_rotvec([np.radians(deg), 0.0, 0.0]).as_matrix()
             for f, degrees in bends.items() for k, deg in enumerate(degrees) for s in "LR"}
    relaxed = Mesh(truth.posed_vertices(sk.posed_world(turns)), truth.mesh.faces)
    straight, curled = _landmarks(truth.mesh), _landmarks(relaxed)
    for f in ("thumb", "index", "middle", "ring", "pinky"):
        for s in "LR":
            name = f"{f}_tip.{s}"
            assert name in curled.vertex, name
            # the straight hand's fingertip, carried by the pose: measured 0.05-0.36 %H away
            carried = relaxed.vertices[straight.vertex[name]]
            assert np.linalg.norm(relaxed.vertices[curled.vertex[name]] - carried) < 0.01 * curled.frame.height, name


def _box(centre, size):
    import trimesh
    return trimesh.creation.box(extents=size).apply_translation(centre)


def _mesh_of(parts) -> Mesh:
    import trimesh
    m = trimesh.util.concatenate(parts)
    return Mesh(np.asarray(m.vertices), np.asarray(m.faces))


def _quadruped() -> Mesh:
    import trimesh
    body = trimesh.creation.capsule(radius=0.25, height=1.2, count=[16, 16])
    body.apply_transform(trimesh.transformations.rotation_matrix(np.pi / 2, [0, 0, 1]))
    body.apply_translation([0, 0.9, 0])
    legs = [trimesh.creation.capsule(radius=0.08, height=0.8, count=[12, 12]).apply_transform(
        trimesh.transformations.rotation_matrix(np.pi / 2, [1, 0, 0])).apply_translation([x, 0.45, z])
        for x in (-0.6, 0.6) for z in (-0.18, 0.18)]
    head = trimesh.creation.icosphere(subdivisions=3, radius=0.2).apply_translation([1.05, 1.25, 0])
    tail = trimesh.creation.capsule(radius=0.04, height=0.6, count=[8, 8]).apply_transform(
        trimesh.transformations.rotation_matrix(np.pi / 2, [0, 0, 1])).apply_translation([-1.05, 1.0, 0])
    return _mesh_of([body, head, tail] + legs)


def _arm(source) -> Mesh:
    v, f = source.mesh.vertices, source.mesh.faces
    keep = (v[f][:, :, 0] > 0.3).all(axis=1)
    return Mesh(v, f[keep])


@pytest.mark.parametrize("shape", ["cube", "quadruped", "arm"])
def test_shapes_without_a_body_layout_are_refused(shape, source):
    mesh = {"cube": lambda: _mesh_of([_box([0, 0, 0], [1, 1, 1])]), "quadruped": _quadruped,
            "arm": lambda: _arm(source)}[shape]()
    with pytest.raises(NotHumanoidError):
        _landmarks(mesh)


def test_a_source_neither_named_nor_shaped_two_legged_is_refused_saying_both(heavy):
    """A rig whose joints are named by a creature's parts (no head-hips-hands-feet map) and
    whose shape has no body layout: the landmark rules say both; its skin (a two-joint crate)
    fitted onto a human body lies far from it: the one line says all three, and what to give
    instead."""
    from asetransfer.stages.markers import MarkerError
    from asetransfer.stages.transfer import find_markers

    mesh = _mesh_of([_box([0, 0, 0], [1, 1, 1])])
    world = np.tile(np.eye(4), (2, 1, 1))
    world[:, :3, 3] = [[0.5, 0.5, 0.5], [0.5, 0.9, 0.5]]
    dense = np.zeros((mesh.n_vertices, 2))
    dense[:, 0] = 1.0
    dense[mesh.vertices[:, 1] > 0.9] = [0.0, 1.0]
    crate = at.Rig(mesh, at.Skeleton.from_world(("Spine_1", "Lid"), np.array([-1, 0]), world),
                   at.SkinWeights.from_dense(dense))
    with pytest.raises(MarkerError) as refused:
        automatic_markers(crate, heavy, Config())
    said = str(refused.value)
    assert refused.value.side == "source" and said.startswith("no humanoid layout found")
    assert "joint names do not say where its head, hips, left wrist" in said
    with pytest.raises(MarkerError) as refused:
        find_markers(crate, heavy, Config())
    said = str(refused.value)
    assert said.startswith("the source's skin fits it no closer than") and "give linked markers" in said
    assert "the landmark rules read the source as no two-legged body (no humanoid layout found" in said
    assert "joint names do not say where its head" in said and "\n" not in said


def test_hand_markers_win_and_the_rest_is_completed(source, heavy):
    auto, _ = automatic_markers(source, heavy, Config())
    lm = _landmarks(heavy)
    # one hand marker named like an automatic one, one placed on the crotch under another name
    # (the hand tips give way to the fingertips: the middle fingertip is the same point)
    assert "hand_tip.L" in lm.vertex and "hand_tip.L" not in auto.names
    assert lm.vertex["hand_tip.L"] == lm.vertex["middle_tip.L"]
    pick = [auto.names.index("middle_tip.L"), auto.names.index("crotch")]
    hand = at.Markers(("middle_tip.L", "my_crotch"),
                      SurfacePoints(auto.source.face[pick], auto.source.bary[pick]),
                      SurfacePoints(auto.target.face[pick], auto.target.bary[pick]))
    both, report = automatic_markers(source, heavy, Config(), hand=hand)
    assert both.names[:2] == ("middle_tip.L", "my_crotch")
    assert "crotch" not in both.names and both.names.count("middle_tip.L") == 1
    # (like heads: the throat and the nape are no markers)
    assert set(both.names) == set(lm.vertex) - {"crotch", "hand_tip.L", "hand_tip.R", "throat", "nape"} | {"my_crotch"}
    assert report.hand == ["middle_tip.L", "my_crotch"] and "middle_tip.L" not in report.automatic


def test_a_fingertip_named_on_one_hand_only_is_no_marker(source, heavy, monkeypatch):
    """Two hands read differently (a fist with no thumb, a sleeve's cuff taken for the other
    hand's thumb: a Ready Player Me avatar's right hand was rigged turned by it): a fingertip
    the target names on one hand only links nothing; the hand tips still do, and fingertips
    named on both hands still link."""
    import dataclasses

    import asetransfer.stages.markers as stage

    found = _landmarks(heavy)
    thumbless = {k: v for k, v in found.vertex.items() if k != "thumb_tip.L"}
    one_thumb = dataclasses.replace(found, vertex=thumbless,
                                    surface={k: v for k, v in found.surface.items() if k in thumbless})
    real = stage.landmarks_of
    monkeypatch.setattr(stage, "landmarks_of",
                        lambda mesh, side, config, solid=True: one_thumb if mesh is heavy else real(mesh, side, config, solid))
    names = automatic_markers(source, heavy, Config())[0].names
    assert "thumb_tip.R" not in names and "thumb_tip.L" not in names
    assert {f"{f}_tip.{s}" for f in ("index", "middle", "ring", "pinky") for s in "LR"} <= set(names)


def test_transfer_without_markers_rigs_the_fixture_like_hand_markers(source, heavy):
    truth = json.loads((FIXTURES / "target_heavy.truth.json").read_text())["joints"]
    names = [n for n in source.skeleton.names if n in truth]
    want = np.array([truth[n] for n in names])
    height = _height(heavy)

    def error(result):
        pos = result.rig.skeleton.bind_world[:, :3, 3]
        got = np.array([pos[source.skeleton.index(n)] for n in names])
        return float(np.linalg.norm(got - want, axis=1).mean()) / height * 100

    hand = at.load_markers(FIXTURES / "markers_heavy.json", source.mesh, heavy)
    auto = at.transfer(source, heavy, None)
    assert auto.report.marker_origin.automatic and not auto.report.marker_origin.hand
    # measured: hand 0.8 %H, automatic 1.0 %H mean joint error on this fixture
    assert error(auto) < 1.5 * error(at.transfer(source, heavy, hand)) + 0.3


def test_a_big_head_ends_where_the_throat_and_nape_say(source):
    """The cartoon fixture's head is 0.23 of its height (the source's 0.12): linked by its
    extremities alone, the source's head stretched over it and its neck and head joints
    landed 2.2 and 2.4 %H off; the throat and the nape (linked when the heads' shares differ
    by MarkersConfig.neck_head_ratio) hold the head's base: measured 1.3 and 1.9 %H, the
    joint mean unchanged (0.41 against 0.40 %H)."""
    cartoon = at.load_mesh(FIXTURES / "target_cartoon.off")
    truth = json.loads((FIXTURES / "target_cartoon.truth.json").read_text())["joints"]
    height = _height(cartoon)

    def errors(config):
        result = at.transfer(source, cartoon, None, config)
        pos = result.rig.skeleton.bind_world[:, :3, 3]
        err = {n: float(np.linalg.norm(pos[source.skeleton.index(n)] - truth[n])) / height * 100 for n in truth}
        return err, result.report.marker_origin.automatic

    linked, names = errors(Config())
    apart, apart_names = errors(Config(markers=MarkersConfig(neck_head_ratio=100.0, big_head=1.0)))
    assert {"throat", "nape"} <= set(names) and not {"throat", "nape"} & set(apart_names)
    assert linked["neck"] < 0.75 * apart["neck"] and linked["head"] < 0.85 * apart["head"]
    assert np.mean(list(linked.values())) < np.mean(list(apart.values())) + 0.05


def test_the_throat_and_nape_of_a_rig_and_of_its_shape_agree(source):
    """The rig's rule (its frame, its mid-plane through the head joint) and the geometric one
    (the fitted frame) find the same throat and nape on the fixture source, between its neck
    and head joints' heights (measured 0.0 and 0.9 %H apart)."""
    from asetransfer.humanoid.landmarks.rig import rig_landmarks
    geometric, from_rig = _landmarks(source.mesh), rig_landmarks(source)
    at_shape, at_rig = geometric.positions(source.mesh.vertices), from_rig.positions(source.mesh.vertices)
    up, height = geometric.frame.up, geometric.frame.height
    joints = source.skeleton.bind_world[:, :3, 3]
    neck, head = joints[source.skeleton.index("neck")] @ up, joints[source.skeleton.index("head")] @ up
    for name in ("throat", "nape"):
        assert np.linalg.norm(at_shape[name] - at_rig[name]) < 0.015 * height, name
        assert neck - 0.02 * height < at_shape[name] @ up < head + 0.02 * height, name


def test_markers_command_writes_a_marker_file_transfer_reads(tmp_path, source, heavy):
    out, png = tmp_path / "m.json", tmp_path / "m.png"
    code = main(["-q", "markers", str(FIXTURES / "source.glb"), str(FIXTURES / "target_heavy.ply"),
                 "-o", str(out), "--preview", str(png)])
    assert code == 0
    doc = json.loads(out.read_text())["markers"]
    # the hand tips give way to the middle fingertips (the same points)
    assert {m["name"] for m in doc} == EXPECTED - {"hand_tip.L", "hand_tip.R", "throat", "nape"} and all(m["automatic"] and 0 <= m["confidence"] <= 1 for m in doc)
    back = at.load_markers(out, source.mesh, heavy)
    auto, _ = automatic_markers(source, heavy, Config())
    np.testing.assert_allclose(back.target.positions(heavy.vertices, heavy.faces),
                               auto.target.positions(heavy.vertices, heavy.faces), atol=1e-5)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20000
    # fed back, the file rigs the target as the automatic transfer does (measured: joints
    # within 0.0001 %H): its markers stay automatic (registered in stiffness levels).  Read
    # as hand markers they moved the joints by up to 0.76 %H here, 0.11 on average (d01:
    # body joints 0.63 -> 0.74 %H, weights 0.080 -> 0.088)
    assert back.automatic == set(back.names)
    fed_back, found = at.transfer(source, heavy, back), at.transfer(source, heavy)
    assert fed_back.report.marker_origin.automatic == list(back.names)
    moved = np.linalg.norm(fed_back.rig.skeleton.bind_world[:, :3, 3] - found.rig.skeleton.bind_world[:, :3, 3], axis=1)
    assert moved.max() < 1e-3 * _height(heavy)
    as_hand = at.transfer(source, heavy, Markers(back.names, back.source, back.target))
    assert np.linalg.norm(as_hand.rig.skeleton.bind_world[:, :3, 3] - found.rig.skeleton.bind_world[:, :3, 3],
                          axis=1).max() > 3e-3 * _height(heavy)


def test_a_target_without_a_body_layout_exits_2_naming_it(tmp_path, capsys):
    cube = tmp_path / "cube.obj"
    m = _mesh_of([_box([0, 0, 0], [1, 1, 1])])
    cube.write_text("".join(f"v {a} {b} {c}\n" for a, b, c in m.vertices)
                    + "".join(f"f {a + 1} {b + 1} {c + 1}\n" for a, b, c in m.faces))
    out = tmp_path / "out.glb"
    code = main(["transfer", str(FIXTURES / "source.glb"), str(cube), "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and str(cube) in err and "humanoid" in err
    assert not out.exists()


def test_automatic_markers_off_without_markers_is_an_error(source, heavy):
    from asetransfer.stages.markers import MarkerError
    with pytest.raises(MarkerError):
        at.transfer(source, heavy, None, Config(markers=MarkersConfig(automatic="off")))


def test_a_characters_landmarks_are_found_once_for_its_mesh_and_rules(source):
    # a batch rigs a cast from one source: its landmarks are found once per process
    from asetransfer.stages.markers import landmarks_of
    a = landmarks_of(source.mesh, "source", Config())
    assert landmarks_of(source.mesh, "source", Config()) is a
    # another mesh (the same shape twice as large) and other rules are searched again
    larger = landmarks_of(Mesh(source.mesh.vertices * 2.0, source.mesh.faces), "source", Config())
    assert larger is not a and np.isclose(larger.frame.height, 2.0 * a.frame.height)
    assert larger.vertex == a.vertex
    assert landmarks_of(source.mesh, "source", Config(markers=MarkersConfig(extremity_radius=0.16))) is not a


def test_a_body_without_a_neck_has_no_throat_or_nape():
    """Blender's metaball bodies grow deeper all the way from the chest to the head (or the other
    way): taking their shallowest line for the neck put the throat at the nose or on the chest
    and linked a 'head' of 0.34-0.39 of the height, joints 3-4 %H off.  A neck is a dip: deeper
    lines both above and below it (the depth profiles measured on the bodies named)."""
    from asetransfer.humanoid.landmarks.neck import _has_neck

    metaballs = np.array([1.0, 1.01, 1.03, 1.07, 1.14, 1.2, 1.23, 1.19])      # Blender's heavy body
    assert not _has_neck(metaballs) and not _has_neck(metaballs[::-1])
    for dip in ([2.2, 2.12, 2.02, 1.89, 1.65, 1.29, 1.02, 1.0, 1.22, 1.38],  # MakeHuman heavy male
                [1.45, 1.39, 1.15, 1.0, 1.29, 2.62, 3.16, 3.3]):             # the Kenney zombie
        assert _has_neck(np.array(dip))
    assert _has_neck(np.array([2.0, np.nan, 1.0, np.nan, 1.5]))  # lines that do not measure are skipped


def test_a_head_on_a_body_without_a_neck_ends_where_the_body_begins():
    """A chibi's head sits on its body without a neck, far deeper than the body under it
    (KayKit's knight, its depth profile from the waist to the nose measured): where the head
    ends is its throat and nape, as on a neck; a body that only grows deeper toward the head
    (Blender's metaballs, 1.23 at most) has none."""
    from asetransfer.humanoid.landmarks.neck import HEAD_ON_BODY, _has_neck

    knight = np.array([1.0, 1.0, 1.01, 1.03, 1.08, 1.35, 1.72, 1.88, 1.91, 1.9])
    assert _has_neck(knight) and knight.max() < (1.0 + HEAD_ON_BODY) * 1.2  # no neck dip: the head alone
    assert not _has_neck(np.array([1.0, 1.01, 1.03, 1.07, 1.14, 1.2, 1.23, 1.33]))


def test_big_heads_alike_link_their_throat_and_nape(source):
    """Between heads of one share of the height the extremities hold the neck, but not a big
    head's: KayKit's chibis (heads half their height) rigged one onto another with their head
    joints 15-33 %H high.  The cartoon fixture (head 0.23 of its height), rigged and then onto
    itself widened, links its throat and nape unless ``big_head`` says no head is big."""
    cartoon = at.load_mesh(FIXTURES / "target_cartoon.off")
    rigged = at.transfer(source, cartoon, None).rig
    widened = Mesh(cartoon.vertices * np.array([1.1, 1.0, 1.0]), cartoon.faces)
    _, origin = automatic_markers(rigged, widened, Config())
    shares = origin.head_shares
    assert min(shares) >= MarkersConfig().big_head and max(shares) < MarkersConfig().neck_head_ratio * min(shares)
    assert {"throat", "nape"} <= set(origin.automatic)
    _, small = automatic_markers(rigged, widened, Config(markers=MarkersConfig(big_head=1.0)))
    assert not {"throat", "nape"} & set(small.automatic)


def test_fingers_are_named_from_a_hand_tip_behind_them(heavy):
    """A hand in a piece of its own, left out by the layer rule, leaves its tip at the end of
    the sleeve; every fingertip is then about as far from it, and the thumb, the one farthest,
    was named on another finger (a held-out girl's right hand: each finger one off).  From a
    tip 6-9 %H behind the fixture's hand, each finger is named on its own finger (within
    FINGER_SEPARATION of the tip named from the hand's own tip; the thumb was 8 %H off)."""
    from asetransfer.geometry.topology import welded_surface
    from asetransfer.humanoid.landmarks.hands import FINGER_SEPARATION, fingertips
    from asetransfer.humanoid.landmarks.surface import BodySurface

    lm = _landmarks(heavy)
    v, f, original = welded_surface(heavy.vertices, heavy.faces)
    surface = BodySurface(v, f, original, np.arange(len(f)), 0.02)
    h = lm.frame.height
    welded = {int(o): i for i, o in enumerate(surface.original)}
    for side in "LR":
        tip = welded[lm.vertex[f"hand_tip.{side}"]]
        own = fingertips(surface, tip, h)
        along = surface.distance_from(tip)
        for back in (0.06, 0.09):
            ring = np.flatnonzero(np.abs(along - back * h) < 0.005 * h)
            behind = int(ring[np.argmin(surface.from_middle[ring])])
            named = fingertips(surface, behind, h)
            assert set(named) == set(own) and len(own) == 5
            for finger, x in named.items():
                assert np.linalg.norm(v[x] - v[own[finger]]) < FINGER_SEPARATION * h, (side, back, finger)


def _with_spheres(mesh: Mesh, centres, radius: float) -> Mesh:
    """``mesh`` with a sphere of ``radius`` at each of ``centres`` (separate pieces)."""
    ball = trimesh.creation.icosphere(subdivisions=3, radius=radius)
    parts = [(mesh.vertices, mesh.faces)] + [(np.asarray(ball.vertices) + c, np.asarray(ball.faces)) for c in centres]
    offsets = np.cumsum([0] + [len(v) for v, _ in parts])
    return Mesh(np.concatenate([v for v, _ in parts]), np.concatenate([f + o for (_, f), o in zip(parts, offsets)]))


def test_hair_buns_are_neither_ears_nor_the_head_top(heavy):
    """Hair buns behind the ears reach farther out than the ears at the nose's height (a
    held-out chibi girl's ears were found on her buns, 10 %H behind her own); the ears are
    looked for around the middle of the head's depth.  Buns on top of the head rise above the
    crown; the head top between vertices was the middle of their tops, on one of them, and is
    now on the mid-plane like the head top's vertex."""
    plain = find_landmarks(heavy, bridge_gap=0.02, extremity_radius=0.15, symmetry_iterations=30)
    at_plain, frame = plain.positions(heavy.vertices, heavy.faces), plain.frame
    h = frame.height
    behind = [at_plain[f"ear.{s}"] + sign * 0.02 * h * frame.left - 0.08 * h * frame.forward
              for s, sign in (("L", 1), ("R", -1))]
    above = [at_plain["head_top"] + sign * 0.06 * h * frame.left for sign in (1, -1)]
    at_buns = {}
    for place, centres, radius in (("behind", behind, 0.045 * h), ("above", above, 0.035 * h)):
        buns = _with_spheres(heavy, centres, radius)
        found = find_landmarks(buns, bridge_gap=0.02, extremity_radius=0.15, symmetry_iterations=30)
        at_buns[place] = found.positions(buns.vertices, buns.faces)
    for name in ("ear.L", "ear.R"):
        assert np.linalg.norm(at_buns["behind"][name] - at_plain[name]) < 0.01 * h, name
    assert abs((at_buns["above"]["head_top"] - at_plain["head_top"]) @ frame.left) < 0.015 * h


def test_the_solid_of_a_turned_character_is_the_turned_solid(heavy):
    """The solid's grid is laid along the character's own axes, centred on it: turned to
    face +X, stood Z up in centimetres or moved, the same character gives the same solid,
    turned (laid along the file's axes, a held-out girl's solid moved by up to 1.7 %H and
    her automatic rig by 3.9 %H when she was stood Z up)."""
    from asetransfer.geometry.surface import closest_points

    v, f = solid_surface(heavy.vertices, heavy.faces)
    h = _height(heavy)
    for rot, scale in ((Rotation.from_euler("y", 90, degrees=True), 1.0),
                       (Rotation.from_euler("x", 90, degrees=True), 100.0)):
        r, t = rot.as_matrix(), np.array([0.3, -2.0, 1.5])
        tv, tf = solid_surface(scale * heavy.vertices @ r.T + t, heavy.faces)
        gap = closest_points(((tv - t) @ r) / scale, v, f)[2]
        # the same grid gives the same solid to rounding (1e-16 h measured); a voxel flipped
        # by rounding on another machine moves a few vertices a cell at most.  Laid along
        # the file's axes: mean 1.4e-3 h, 99th percentile 5e-3 h
        assert gap.mean() < 1e-4 * h and np.quantile(gap, 0.99) < 1e-3 * h


def test_a_body_leaning_far_over_its_feet_is_refused(heavy):
    """A four-legged body read as two-legged stands its head over its back paws, leaning
    34-72 degrees from the upright of the ground under them; the soles' band, cut across
    that line, leaned with it and such readings stood.  The fixture leaning 50 and 56
    degrees over flat feet is refused; leaning 17 degrees it is a body."""
    v, low = heavy.vertices, heavy.vertices[:, 1].min()
    for lean, read in ((0.3, True), (1.2, False), (1.5, False)):
        leaning = v.copy()
        leaning[:, 2] += lean * (v[:, 1] - low)
        if read:
            assert _landmarks(Mesh(leaning, heavy.faces)).frame.up[1] > 0.95
        else:
            with pytest.raises(NotHumanoidError, match="four-legged"):
                _landmarks(Mesh(leaning, heavy.faces))


def test_hand_tips_found_on_a_solid_that_lost_the_fingers_reach_the_fingertips(heavy):
    """The solid of a character's pieces is cut on cells of 1 % of its size: fingers thinner
    than that, or chains of pieces with gaps (Mesh2Motion's mannequin), are lost and the hand
    tips were left on the palm, 5.5 %H short.  Found on the fixture without its fingers
    within 6 %H of its hand tips (its 'solid' here: the tips then 3.4-6 %H short) and
    carried out onto the whole fixture, each hand tip is a long finger's tip (the fixture's
    index and middle fingers end 2.7 %H apart, as far out); a tip already at the end of its
    hand stays."""
    from asetransfer.humanoid.landmarks import hand_tips_carried_out

    whole = _landmarks(heavy)
    h, v = whole.frame.height, heavy.vertices
    tips = v[[whole.vertex["hand_tip.L"], whole.vertex["hand_tip.R"]]]
    fingers = np.linalg.norm(v[:, None] - tips[None], axis=2).min(axis=1) < 0.06 * h
    kept = heavy.faces[~fingers[heavy.faces].any(axis=1)]
    used = np.unique(kept)
    palms = Mesh(v[used], np.searchsorted(used, kept))
    found = _landmarks(palms).moved(palms, heavy)
    carried = hand_tips_carried_out(found, palms, heavy)
    stays = hand_tips_carried_out(whole, heavy, heavy)
    for side in "LR":
        name = f"hand_tip.{side}"
        assert np.linalg.norm(v[found.vertex[name]] - v[whole.vertex[name]]) > 0.03 * h, side
        ends = v[[whole.vertex[f"{finger}_tip.{side}"] for finger in ("index", "middle", "ring")]]
        assert np.linalg.norm(ends - v[carried.vertex[name]], axis=1).min() < 0.015 * h, side
        assert stays.vertex[name] == whole.vertex[name]
    assert min(carried.confidence["hand_tip.L"], carried.confidence["hand_tip.R"]) > 0.8


def test_a_toe_tip_on_a_shoes_corner_links_by_the_middle_of_the_sole_front(source, heavy, monkeypatch):
    """A square shoe's extremity is a corner, a round one's its side (held-out Sintel's boots:
    the toe tip vertex 4.5 %H from the middle of the sole's front end, her feet turned out
    and the balls of her feet 4 %H off).  A toe tip vertex that far from its point between
    vertices links by that point; the other foot, whose vertex is its toe's, by its vertex
    (a dense body keeps the vertex rule)."""
    import dataclasses

    import asetransfer.stages.markers as stage

    found = _landmarks(heavy)
    h, v = found.frame.height, heavy.vertices
    middle = found.positions(v, heavy.faces)["toe_tip.L"]
    foot = np.flatnonzero((np.linalg.norm(v - middle, axis=1) < 0.05 * h) & (v @ found.frame.up < middle @ found.frame.up))
    corner = int(foot[np.argmax(np.abs(v[foot] - middle) @ np.abs(found.frame.left))])
    assert np.linalg.norm(v[corner] - middle) > MarkersConfig().toe_corner * h
    on_corner = dataclasses.replace(found, vertex={**found.vertex, "toe_tip.L": corner})
    real = stage.landmarks_of
    monkeypatch.setattr(stage, "landmarks_of",
                        lambda mesh, side, config, solid=True: on_corner if mesh is heavy else real(mesh, side, config, solid))
    markers = automatic_markers(source, heavy, Config())[0]
    at_ = dict(zip(markers.names, markers.target.positions(v, heavy.faces)))
    assert np.linalg.norm(at_["toe_tip.L"] - middle) < 1e-6 * h
    assert np.linalg.norm(at_["toe_tip.R"] - v[found.vertex["toe_tip.R"]]) < 1e-6 * h
    # a hand marker under another name at that middle takes its place (not the corner's distance)
    k = markers.names.index("toe_tip.L")
    mine = at.Markers(("my_toe",), SurfacePoints(markers.source.face[[k]], markers.source.bary[[k]]),
                      SurfacePoints(markers.target.face[[k]], markers.target.bary[[k]]))
    assert "toe_tip.L" not in automatic_markers(source, heavy, Config(), hand=mine)[0].names


def test_a_source_whose_legs_part_at_its_hip_joints_links_no_crotch(source, heavy, caplog):
    """Mixamo's X Bot has a pelvis piece over separate thighs: its legs part 0.7 %H below its
    upper legs' joints, where no body's crotch is, and linked to a one-piece body's crotch its
    hips went 8 cm low (body joints 3.2 %H, 1.7 without the crotch).  The fixture source with
    its upper-leg joints moved down to its crotch links no crotch, and says so; as it is, it
    links one."""
    import dataclasses

    from asetransfer.model.rig import Rig
    from asetransfer.stages.markers import source_landmarks

    assert "crotch" in automatic_markers(source, heavy, Config())[0].names
    sk = source.skeleton
    mapping, _ = propose_skeleton_map(sk)
    crotch = source_landmarks(source, Config()).positions(source.mesh.vertices)["crotch"]
    bind = sk.bind_world.copy()
    for role in ("upper_leg_l", "upper_leg_r"):
        j = sk.names.index(mapping[role])
        bind[j, 1, 3] = crotch[1] + 0.005 * _height(source.mesh)  # the fixtures stand Y up
    low_hips = Rig(source.mesh, dataclasses.replace(sk, bind_world=bind), source.skin)
    with caplog.at_level("WARNING", logger="asetransfer"):
        names = automatic_markers(low_hips, heavy, Config())[0].names
    assert "crotch" not in names and "legs part at its hip joints" in caplog.text


def test_feet_read_from_their_backs_face_the_way_their_legs_say(heavy):
    """A foot's extremity is its toe tip but on a chibi's boot whose back reaches farther
    (KayKit's adventurers read facing backwards, left and right swapped).  The leg stands
    over the back of its foot (0.05-0.46 of the way from heel to toe on every body read
    right): the fixture's frame taken from its heels as if they were its extremities still
    faces +Z; its leg stands 0.27-0.28 of the way from heel to toe."""
    from asetransfer.geometry.topology import welded_surface
    from asetransfer.humanoid.landmarks.feet import LEG_AHEAD, leg_over_foot
    from asetransfer.humanoid.landmarks.frame import frame_from_feet
    from asetransfer.humanoid.landmarks.surface import BodySurface

    found = _landmarks(heavy)
    v, f, original = welded_surface(heavy.vertices, heavy.faces)
    surface = BodySurface(v, f, original, np.arange(len(f)), 0.02)
    welded = {int(o): i for i, o in enumerate(surface.original)}
    w = {k: welded[x] for k, x in found.vertex.items() if x in welded}
    frame, _, _, _ = frame_from_feet(surface, w["head_top"], [w["heel.L"], w["heel.R"]], 0)
    assert frame.forward @ found.frame.forward > 0.9
    ground = float(found.frame.ground @ found.frame.up)
    for side in "LR":
        at = leg_over_foot(heavy.vertices, heavy.vertices[found.vertex[f"toe_tip.{side}"]],
                           heavy.vertices[found.vertex[f"heel.{side}"]], found.frame.up, ground, found.frame.height)
        assert at is not None and at < LEG_AHEAD - 0.2


def test_a_chibi_with_short_legs_is_read_with_its_hands_and_feet(heavy):
    """A chibi's short legs bring its feet nearer everything than its long arms bring its
    hands, so the sums of geodesic distances named the hands feet (KayKit's adventurers were
    all refused).  The fixture with its head twice as big and its legs half as long is read
    facing +Z, its left hand and foot on +X (the fixtures' left)."""
    found = _landmarks(heavy)
    at_ = found.positions(heavy.vertices)
    v = heavy.vertices.copy()
    neck, crotch = at_["throat"][1], at_["crotch"][1]
    head = v[:, 1] > neck
    v[head] = [0.0, neck, 0.0] + (v[head] - [0.0, neck, 0.0]) * 2.0
    legs = v[:, 1] < crotch
    v[legs, 1] = crotch + (v[legs, 1] - crotch) * 0.5
    chibi = Mesh(v, heavy.faces)
    lm = _landmarks(chibi)
    p = lm.positions(chibi.vertices)
    assert lm.frame.forward @ found.frame.forward > 0.9
    assert p["hand_tip.L"][0] > 0.3 and p["hand_tip.R"][0] < -0.3
    ground = chibi.vertices[:, 1].min()
    assert p["toe_tip.L"][0] > 0 > p["toe_tip.R"][0]
    assert max(p["toe_tip.L"][1], p["toe_tip.R"][1]) - ground < 0.05 * lm.frame.height


def _long_necked_quadruped() -> Mesh:
    """A four-legged body with its head raised high over its front legs: read as two-legged,
    its head stands over its back paws within STANDING_LEAN of the ground's upright."""
    import trimesh

    body = trimesh.creation.capsule(radius=0.25, height=1.2, count=[16, 16])
    body.apply_transform(trimesh.transformations.rotation_matrix(np.pi / 2, [0, 0, 1]))
    body.apply_translation([0, 0.9, 0])
    upright = trimesh.transformations.rotation_matrix(np.pi / 2, [1, 0, 0])
    legs = [trimesh.creation.cylinder(radius=0.08, height=0.8, sections=16).subdivide_to_size(0.04)
            .apply_transform(upright).apply_translation([x, 0.4, z]) for x in (-0.6, 0.6) for z in (-0.18, 0.18)]
    neck = trimesh.creation.capsule(radius=0.1, height=1.1, count=[12, 12]).apply_transform(
        trimesh.transformations.rotation_matrix(-np.pi / 6, [0, 0, 1])).apply_translation([0.95, 1.55, 0])
    head = trimesh.creation.icosphere(subdivisions=3, radius=0.18).apply_translation([1.25, 2.1, 0])
    return _mesh_of([body, neck, head] + legs)


def test_a_four_legged_body_with_its_front_paws_for_hands_is_refused():
    """Mesh2Motion's dog read as two-legged stood its head 27-30 degrees from the upright of the
    ground under its back paws, its front paws passing for hands: read as a body.  Hands on
    the ground the feet stand on are front paws: a raised-necked quadruped is refused with its
    front paws as hands, the same frame without hands stands; the ground is its floor (the
    flat backs of its straight legs touch a plane over more area, but it cannot rest there)."""
    from asetransfer.geometry.topology import welded_surface
    from asetransfer.humanoid.landmarks.frame import frame_from_feet
    from asetransfer.humanoid.landmarks.surface import BodySurface

    mesh = _long_necked_quadruped()
    v, f, original = welded_surface(mesh.vertices, mesh.faces)
    surface = BodySurface(v, f, original, np.arange(len(f)), 0.02)
    w = surface.vertices

    def paw(front: bool, side: int) -> int:  # the middle of the front of a paw's sole
        on = np.flatnonzero(((w[:, 0] > 0) == front) & (np.sign(w[:, 2]) == side) & (w[:, 1] < 1e-6))
        ahead = on[w[on, 0] > w[on, 0].max() - 1e-6]
        return int(ahead[np.argmin(np.abs(w[ahead, 2] - 0.18 * side))])

    head, back, front = int(np.argmax(w[:, 1])), [paw(False, 1), paw(False, -1)], [paw(True, 1), paw(True, -1)]
    frame, _, _, _ = frame_from_feet(surface, head, back, 0)
    assert frame.up[1] > 0.6  # leaning with the neck, as the dog did
    with pytest.raises(NotHumanoidError, match="hand stands on the ground"):
        frame_from_feet(surface, head, back, 0, front)
    with pytest.raises(NotHumanoidError):
        _landmarks(mesh)


def test_a_sole_holds_at_least_the_foots_lowest_point():
    """A body far from the file's origin and small beside it: the sole's band above the
    lowest point rounds away (1e17 + 0.02 is 1e17), and the sole kept no vertex (the
    transfer ended in exit 1 on a 3ds Max FBX)."""
    from types import SimpleNamespace

    from asetransfer.humanoid.landmarks.feet import sole

    far = np.array([[0.0, 1e17, 0.0], [0.1, 1e17, 0.0], [0.0, 1e17 + 64, 0.0]])
    surface = SimpleNamespace(vertices=far, distance_from=lambda v: np.array([0.0, 0.05, 0.1]))
    assert sole(surface, 0, np.array([0.0, 1.0, 0.0]), 1.0).tolist() == [0, 1]


def _with_pieces(mesh: Mesh, *pieces) -> Mesh:
    """``mesh`` with ``pieces`` (trimesh meshes) appended after its own vertices."""
    v, f = [mesh.vertices], [mesh.faces]
    n = mesh.n_vertices
    for piece in pieces:
        v.append(np.asarray(piece.vertices, dtype=mesh.vertices.dtype))
        f.append(np.asarray(piece.faces) + n)
        n += len(piece.vertices)
    return Mesh(np.concatenate(v), np.concatenate(f))


def test_pieces_floating_apart_from_the_body_are_no_part_of_it(heavy):
    # a halo and a marker floating over the head, a lamp's bulb beside it: the marker was
    # read as the head's top (the fixture rigged through it 7 %H off, "poor")
    a = _landmarks(heavy)
    h, top = _height(heavy), heavy.vertices[a.vertex["head_top"]]
    up = a.frame.up
    halo = trimesh.creation.torus(0.06 * h, 0.006 * h)
    halo.apply_transform(trimesh.geometry.align_vectors([0, 0, 1], up))
    halo.apply_translation(top + 0.08 * h * up)
    marker = trimesh.creation.icosphere(radius=0.02 * h)
    marker.apply_translation(top + 0.25 * h * up)
    bulb = trimesh.creation.icosphere(radius=0.03 * h)
    bulb.apply_translation(top + 0.4 * h * a.frame.left)
    b = _landmarks(_with_pieces(heavy, halo, marker, bulb))
    assert set(b.vertex) == set(a.vertex)
    for name in a.vertex:  # the landmarks of the body alone (the pieces come after its vertices)
        assert b.vertex[name] < heavy.n_vertices, name
        assert np.linalg.norm(heavy.vertices[b.vertex[name]] - heavy.vertices[a.vertex[name]]) < 0.005 * h, name


def test_a_body_whose_hands_float_apart_reads_them(heavy):
    # a cartoon's hands drawn apart from its arms: without them the rest reads no body, so
    # the pieces standing apart are kept
    a = _landmarks(heavy)
    h, v, f = _height(heavy), heavy.vertices.copy(), heavy.faces
    moved = np.zeros(len(v), dtype=bool)
    for side in "LR":
        tip = v[a.vertex[f"hand_tip.{side}"]]
        hand = np.linalg.norm(v - tip, axis=1) < 0.09 * h
        outward = (tip - v[a.vertex["crotch"]]) * (1, 0, 1)  # along the arm, across the body
        v[hand] += 0.08 * h * outward / np.linalg.norm(outward)
        moved |= hand
    cut = moved[f].any(axis=1) & ~moved[f].all(axis=1)  # the wrist's faces: the hands part
    floating = Mesh(v, f[~cut])
    from asetransfer.humanoid.landmarks.layout import faces_apart
    assert faces_apart(*_welded(floating)).any()
    b = _landmarks(floating)
    for side in "LR":
        assert np.linalg.norm(v[b.vertex[f"hand_tip.{side}"]] - v[a.vertex[f"hand_tip.{side}"]]) < 0.03 * h


def _welded(mesh: Mesh):
    from asetransfer.geometry.topology import welded_surface
    vertices, faces, _ = welded_surface(mesh.vertices, mesh.faces)
    return vertices, faces


def test_head_landmarks_read_at_other_heights_within_the_heads_are_not_linked():
    """Where the throats link, a nose or ears read at another height within the head than the
    other character's are no face's (KayKit's knight: its helmet's visor read as the nose at
    0.79 of its head, a rogue's face at 0.36, pulled the rogue's face up the helmet and its
    head joint 14 %H high): they are left out, the others kept."""
    from asetransfer.humanoid.landmarks.find import Landmarks
    from asetransfer.humanoid.landmarks.frame import BodyFrame
    from asetransfer.stages.markers import _heads_read_alike

    names = ["throat", "nape", "head_top", "nose_tip", "head_back", "ear.L", "ear.R", "crotch"]
    frame = BodyFrame(np.array([0.0, 1, 0]), np.array([0.0, 0, 1]), np.array([1.0, 0, 0]), 2.0, np.zeros(3))

    def character(heights: dict):
        vertices = np.array([[0.0, heights.get(n, 0.5), 0.0] for n in names])
        landmarks = Landmarks(frame, {n: i for i, n in enumerate(names)}, {n: 1.0 for n in names})
        return landmarks, Mesh(vertices, np.array([[0, 1, 2]]))

    face = {"throat": 1.0, "head_top": 2.0, "nose_tip": 1.35, "head_back": 1.3, "ear.L": 1.33, "ear.R": 1.33}
    helmet = dict(face, nose_tip=1.8, head_back=1.75, **{"ear.L": 1.45, "ear.R": 1.45})
    src, tgt = character(face), character(helmet)
    kept = _heads_read_alike(names, *src, *tgt, MarkersConfig().head_reading_tolerance)
    assert kept == ["throat", "nape", "head_top", "ear.L", "ear.R", "crotch"]
    assert _heads_read_alike(names, *src, *character(face), 0.25) == names


def test_a_head_floating_over_its_neck_is_the_head(heavy):
    # a piece standing apart read as the head is left out only when it is low (a halo, a
    # marker): a head of its own floating over the neck stays the head (without it, the neck's
    # stump was read as the head's top, 0.19 H off)
    a = _landmarks(heavy)
    h, v, f = _height(heavy), heavy.vertices.copy(), heavy.faces
    head = v @ a.frame.up > v[a.vertex["throat"]] @ a.frame.up
    v[head] += 0.07 * h * a.frame.up
    cut = head[f].any(axis=1) & ~head[f].all(axis=1)
    b = _landmarks(Mesh(v, f[~cut]))
    assert np.linalg.norm(v[b.vertex["head_top"]] - v[a.vertex["head_top"]]) < 0.03 * h
