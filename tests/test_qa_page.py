"""What a TD checks a rig with: the test poses, the preview picture, the QA page (opened in
headless Chromium when it is installed) and a batch's gallery."""
from __future__ import annotations

import base64
import hashlib
import json
import re
import struct
import sys

import numpy as np
import pytest

from asetransfer.config import Config
from asetransfer.errors import InputError
from asetransfer.handoff.poses import POSE_NAMES, pose_motion, source_pose, stress_poses
from asetransfer.handoff.review import Review, review_frames, review_transfer
from asetransfer.humanoid.skeleton_map import propose_skeleton_map
from asetransfer.io import load_rig, write_rig
from asetransfer.io.preview import render_preview
from asetransfer.io.qa_page import THREE_MODULES, render_qa_page, web_asset
from asetransfer.job import preview_characters, transfer_files
from asetransfer.model.markers import Markers
from asetransfer.model.mesh import Mesh
from asetransfer.model.report import MarkerOrigin
from asetransfer.model.rig import Rig
from asetransfer.model.skeleton import Skeleton
from asetransfer.model.skin import SkinWeights
from asetransfer.model.surface import SurfacePoints
from asetransfer_cli.main import main

from conftest import DEV, FIXTURES, ROOT, needs_dev, subdivided_rig, tube_rig
from headless_browser import Browser, chromium

SOURCE, TARGET, MARKERS = FIXTURES / "source.glb", FIXTURES / "target_heavy.ply", FIXTURES / "markers_heavy.json"
needs_chromium = pytest.mark.skipif(chromium() is None, reason="no Chromium (Debian: apt-get install chromium)")
QA = "window.asetransferQA"


@pytest.fixture(scope="module")
def heavy(tmp_path_factory):
    """The heavy fixture rigged with --preview and --qa: (folder, FilesResult)."""
    out = tmp_path_factory.mktemp("qa")
    done = transfer_files(SOURCE, TARGET, out / "heavy.glb", MARKERS, report=out / "heavy.json",
                          preview=out / "heavy.png", qa=out / "heavy.qa.html")
    return out, done


def _page_parts(page: bytes) -> tuple:
    """(the import map, the page's JSON data, the glTF binary) of a QA page."""
    text = page.decode("utf-8")
    imports = json.loads(re.search(r'<script type="importmap">(.*?)</script>', text, re.S).group(1))["imports"]
    data = json.loads(re.search(r'<script type="application/json" id="qa-data">(.*?)</script>', text, re.S).group(1))
    rig = base64.b64decode(re.search(r'id="qa-rig">(.*?)</script>', text, re.S).group(1))
    return imports, data, rig


def _glb_json(glb: bytes) -> dict:
    length = struct.unpack_from("<I", glb, 12)[0]
    return json.loads(glb[20:20 + length])


# ----------------------------------------------------------------------------- test poses
def test_test_poses_bend_the_target_as_named(heavy):
    _, done = heavy
    rig = done.result.rig
    poses = stress_poses(load_rig(SOURCE), rig)
    assert list(poses) == list(POSE_NAMES)
    names = rig.skeleton.names
    rest = rig.skeleton.rest_world()[:, :3, 3]
    up = np.array([0.0, 1.0, 0.0])  # the fixture is Y-up
    height = np.ptp(rig.mesh.vertices[:, 1])

    def end(name):
        return poses[name].world(rig.skeleton)[-1][:, :3, 3]
    raised = end("arms raised")
    for side in "LR":
        assert raised[names.index(f"hand.{side}")] @ up > rest[names.index("head")] @ up  # hands over the head
    squat = end("squat")
    hips, foot = names.index("hips"), names.index("foot.L")
    assert (rest[hips] - squat[hips]) @ up > 0.1 * height                    # the body sinks ...
    assert abs((squat[foot] - rest[foot]) @ up) < 0.01 * height              # ... the feet stay down
    bent = end("elbows bent")
    upper = bent[names.index("forearm.L")] - bent[names.index("upperarm.L")]
    fore = bent[names.index("hand.L")] - bent[names.index("forearm.L")]
    angle = np.degrees(np.arccos(upper @ fore / np.linalg.norm(upper) / np.linalg.norm(fore)))
    assert 80 < angle < 100
    assert poses["squat"].world(rig.skeleton)[0] == pytest.approx(rig.skeleton.rest_world())  # from the rest pose


def test_a_skeleton_without_a_humanoid_map_gets_no_test_pose():
    tube = tube_rig()
    assert stress_poses(tube, tube) == {}


# ----------------------------------------------------------------------------- the preview
def test_the_preview_is_one_deterministic_picture_with_poses_and_close_ups(heavy):
    out, done = heavy
    png = (out / "heavy.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", png[16:24])
    assert width == 1760 and 700 < height < 1400
    source = load_rig(SOURCE)
    result = done.result
    review = review_transfer(source, result.rig, result.correspondence, done.report)
    assert [r["label"] for r in review.regions] == ["left hand", "right hand", "left foot", "right foot"]
    frames = review_frames(source, result.correspondence.alignment.rotation, done.report.marker_origin.frames, "+Y")
    shown = preview_characters(source, result.rig.mesh, result.markers, done.report.marker_origin, Config(),
                               result.rig, frames)
    shown[1].update(regions=review.regions, joint_flags={"hand.L": ("poor", "outside the body")},
                    poses=review.posed(result.rig, ("arms raised", "front"), ("squat", "side")))
    first = render_preview(shown, "title", verdict="poor", reasons=["a reason"], warnings=["a warning"])
    assert first == render_preview(shown, "title", verdict="poor", reasons=["a reason"], warnings=["a warning"])
    assert first != png  # the flag, the verdict and the notes are drawn


def test_a_missing_matplotlib_is_refused_before_any_work(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    with pytest.raises(InputError, match="matplotlib"):
        transfer_files(SOURCE, TARGET, tmp_path / "out.glb", MARKERS, preview=tmp_path / "out.png")
    assert list(tmp_path.iterdir()) == []


# ----------------------------------------------------------------------------- the QA page
def test_the_vendored_three_js_is_the_pinned_release():
    table = (ROOT / "asetransfer" / "io" / "web" / "three" / "README.md").read_text()
    pins = dict(re.findall(r"\| `([\w.]+)` \| [^|]+ \| `([0-9a-f]{64})` \|", table))
    assert set(pins) == set(THREE_MODULES.values()) | {"LICENSE"}
    for name, digest in pins.items():
        assert hashlib.sha256(web_asset("three/" + name).encode("utf-8")).hexdigest() == digest, name
    assert "The MIT License" in web_asset("three/LICENSE")


def test_the_page_is_one_file_that_needs_nothing_else(heavy):
    out, done = heavy
    page = (out / "heavy.qa.html").read_bytes()
    text = page.decode("utf-8")
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=", text)  # nothing fetched
    imports, data, glb = _page_parts(page)
    assert set(imports) == set(THREE_MODULES)
    assert all(url.startswith("data:text/javascript;base64,") for url in imports.values())
    loader = base64.b64decode(imports["three/addons/loaders/GLTFLoader.js"].split(",", 1)[1]).decode()
    assert "from '../" not in loader and "from 'three/addons/utils/BufferGeometryUtils.js'" in loader
    doc = _glb_json(glb)
    assert [a["name"] for a in doc["animations"]] == list(POSE_NAMES) == data["poses"]
    assert all("_FIT" in m["primitives"][0]["attributes"] for m in doc["meshes"])
    assert data["joints"]["names"] == list(done.result.rig.skeleton.names)
    assert [m["name"] for m in data["markers"]] == list(done.result.markers.names)
    assert data["verdict"] == done.report.quality.verdict


def test_the_source_files_motion_is_a_clip_of_the_page(tmp_path):
    source = load_rig(SOURCE)
    mapping = propose_skeleton_map(source.skeleton)[0]
    motion = pose_motion(source.skeleton, source_pose(source.skeleton, mapping, "elbows bent"), frames=5)
    write_rig(tmp_path / "animated.glb", source, animation=motion)
    transfer_files(tmp_path / "animated.glb", TARGET, tmp_path / "out.glb", MARKERS, qa=tmp_path / "out.qa.html")
    _, data, glb = _page_parts((tmp_path / "out.qa.html").read_bytes())
    assert data["poses"] == [*POSE_NAMES, "source motion"]
    assert [a["name"] for a in _glb_json(glb)["animations"]] == data["poses"]


def test_an_fbx_sources_first_take_is_a_clip_of_the_page(tmp_path):
    """The FBX fixture with two takes (Blender's, centimetres, Z up): its first take plays on the page."""
    from conftest import FIXTURES

    transfer_files(FIXTURES / "source_animated_cm_zup.fbx", FIXTURES / "target_heavy_cm_zup.fbx", tmp_path / "out.glb",
                   qa=tmp_path / "out.qa.html")
    _, data, glb = _page_parts((tmp_path / "out.qa.html").read_bytes())
    assert data["poses"] == [*POSE_NAMES, "source motion"]
    assert [a["name"] for a in _glb_json(glb)["animations"]] == data["poses"]


def test_the_page_is_the_same_bytes_each_time(heavy):
    _, done = heavy
    source, result = load_rig(SOURCE), done.result
    review = review_transfer(source, result.rig, result.correspondence, done.report)
    frame = review_frames(source, result.correspondence.alignment.rotation, {}, "+Y")[1]

    def page():
        return render_qa_page(result.rig, review, frame, result.markers, done.report.marker_origin, title="t")
    assert page() == page()


def _check_in_browser(page, screenshot) -> dict:
    """Open a QA page in headless Chromium: it loads without a console error, selecting a joint
    recolours the body, a test pose moves it; returns what was measured."""
    with Browser() as browser:
        browser.open(page)
        browser.wait_for(f"{QA} && ({QA}.ready || {QA}.errors.length > 0)", timeout=60)
        assert browser.evaluate(f"{QA}.errors") == [] and browser.errors == []
        plain = browser.evaluate(f"{QA}.vertexColours()")
        joint = browser.evaluate(f"{QA}.joints[Math.floor({QA}.joints.length / 3)]")
        browser.evaluate(f"{QA}.selectBone({json.dumps(joint)})")
        weights = browser.evaluate(f"{QA}.vertexColours()")
        rest = np.array(browser.evaluate(f"{QA}.skinnedPositions()"))
        poses = browser.evaluate(f"{QA}.poses")
        moved = 0.0
        if poses:
            browser.evaluate(f"{QA}.playPose({json.dumps(poses[0])}, 1)")
            moved = float(np.abs(np.array(browser.evaluate(f"{QA}.skinnedPositions()")) - rest).max())
        browser.evaluate(f"{QA}.render()")
        screenshot.write_bytes(browser.screenshot())
        assert browser.errors == [] and browser.evaluate(f"{QA}.errors") == []
        return {"recoloured": int(np.sum(np.abs(np.subtract(plain, weights)) > 1e-3)), "moved": moved,
                "size": float(np.ptp(rest.reshape(-1, 3), axis=0).max()), "poses": poses}


@needs_chromium
def test_the_page_works_in_a_browser(heavy, tmp_path):
    out, _ = heavy
    seen = _check_in_browser(out / "heavy.qa.html", tmp_path / "page.png")
    assert seen["recoloured"] > 100
    assert seen["poses"] == list(POSE_NAMES) and seen["moved"] > 0.2 * seen["size"]  # arms raised
    assert (tmp_path / "page.png").stat().st_size > 20000


@needs_chromium
def test_the_page_of_any_skeleton_works(tmp_path):
    # a creature without a humanoid map, Z-up, in two pieces (two glTF meshes), a marker on
    # the second: no test poses, the rest as for a humanoid
    tube = tube_rig()
    turn = np.eye(4)
    turn[:3, :3] = [[1.0, 0, 0], [0, 0, -1], [0, 1, 0]]  # +Y -> +Z
    sk, n = tube.skeleton, tube.mesh.n_vertices
    vertices = np.vstack([tube.mesh.vertices, tube.mesh.vertices + [1.0, 0, 0]]) @ turn[:3, :3].T
    mesh = Mesh(vertices, np.vstack([tube.mesh.faces, tube.mesh.faces + n]), ("body", "twin"),
                np.repeat([0, 1], n))
    skin = SkinWeights(np.vstack([tube.skin.indices] * 2), np.vstack([tube.skin.weights] * 2), sk.n_joints)
    rig = Rig(mesh, Skeleton.from_world(sk.names, sk.parents, turn @ sk.bind_world), skin)
    review = Review({}, np.linspace(0, 0.2, 2 * n), np.arange(2 * n) % 7 > 0, 3.0,
                    {"tip": ("poor", "outside the body")})
    face = len(tube.mesh.faces) + 5  # on the twin
    markers = Markers(("on_twin",), SurfacePoints([face], [[0.2, 0.3, 0.5]]), SurfacePoints([face], [[0.2, 0.3, 0.5]]))
    frame = {"up": np.array([0, 0, 1.0]), "forward": np.array([0, -1.0, 0]), "left": np.array([1.0, 0, 0])}
    page = tmp_path / "tube.qa.html"
    page.write_bytes(render_qa_page(rig, review, frame, markers, MarkerOrigin(), title="tube", verdict="poor"))
    seen = _check_in_browser(page, tmp_path / "tube.png")
    assert seen["poses"] == [] and seen["recoloured"] > 10
    assert "No test poses" in page.read_text()
    corners = _page_parts(page.read_bytes())[1]["markers"][0]["corners"]
    assert [c[0] for c in corners] == [1, 1, 1]  # the second glTF mesh, its own vertex numbers
    assert [c[1] for c in corners] == (tube.mesh.faces[5]).tolist()


@needs_dev
def test_the_page_of_a_50k_vertex_character_is_small_and_works(tmp_path):
    # how soon it is ready: bench/bench_qa_page.py
    source = load_rig(DEV / "d01_female" / "source.glb")
    big = subdivided_rig(source)  # 53.5k vertices
    assert 50_000 < big.mesh.n_vertices < 60_000
    n = big.mesh.n_vertices
    review = Review(stress_poses(source, big), np.zeros(n), np.ones(n, dtype=bool), 1.7)
    frame = {"up": np.array([0, 1.0, 0]), "forward": np.array([0, 0, 1.0]), "left": np.array([1.0, 0, 0])}
    page = tmp_path / "big.qa.html"
    page.write_bytes(render_qa_page(big, review, frame, None, None, title="50k"))
    assert page.stat().st_size < 20e6  # measured: 6.1 MB
    if chromium() is not None:
        seen = _check_in_browser(page, tmp_path / "big.png")
        assert seen["moved"] > 0.2 * seen["size"]


# ----------------------------------------------------------------------------- a batch's gallery
def test_batch_qa_writes_a_page_per_target_and_a_gallery_worst_first(tmp_path):
    broken = tmp_path / "broken.obj"
    broken.write_text("not a mesh\n")
    out = tmp_path / "out"
    code = main(["-q", "batch", str(SOURCE), str(FIXTURES / "target_cartoon.off"), str(broken), "-o", str(out),
                 "--qa"])
    assert code == 3  # one target failed
    assert (out / "target_cartoon.qa.html").is_file() and (out / "target_cartoon.preview.png").is_file()
    index = (out / "index.html").read_text()
    assert index.index("broken") < index.index("target_cartoon")  # the failure first
    assert 'href="target_cartoon.qa.html"' in index and 'src="target_cartoon.preview.png"' in index
    assert "FAILED" in index and "OK" in index or "CHECK" in index
    report = json.loads((out / "target_cartoon.report.json").read_text())
    assert report["inputs"]["outputs"] == ["target_cartoon.glb", "target_cartoon.preview.png",
                                           "target_cartoon.qa.html"]


def test_a_dense_marker_set_leaves_unnamed_markers_as_dots_not_numbers():
    from matplotlib.figure import Figure

    from asetransfer.io import preview

    points = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]], dtype=float)
    faces = np.array([[0, 1, 2], [1, 3, 2]])

    def unnamed(count):  # every marker on one spot: at most a few names fit
        marks = {"markers": np.full((count, 3), 0.5), "marker_ids": list(range(1, count + 1)),
                 "marker_names": [f"marker_{k}" for k in range(count)],
                 "marker_colours": [preview.MARKER_COLOURS["sure"]] * count}
        panel = preview._panel("test", points, faces, np.eye(3), **marks)
        return preview._draw(Figure(figsize=(4, 4), dpi=preview.DPI), (0.1, 0.1, 0.8, 0.8), panel)

    assert len(unnamed(20)) > 10  # a sparse set: numbered, listed in the legend
    assert unnamed(preview.NUMBERED_MARKERS + 1) == []
