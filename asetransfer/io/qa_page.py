"""The QA page of a transfer (``--qa PAGE.html``) and the gallery of a batch's pages.

One self-contained HTML file: it opens from disk, offline, with no server.  It holds
the rigged target as a base64 glTF binary (with the test poses as animation clips
and each vertex's fit distance as the custom attribute ``_FIT``), a JSON block with
the joints, markers, verdict and warnings (``#qa-data``), the page's script
(``web/qa.js``) and three.js r170 (``web/three/``, MIT, unmodified) as ``data:`` URLs
in an import map: browsers refuse ES module imports of local files from a page opened
as ``file://``, not modules given as ``data:`` URLs.  The loader's one relative import
is rewritten to a bare name the import map resolves.

Sizes: three.js adds 1.2 MB; the rig about 95 bytes a vertex in base64 (measured: a
53.5k-vertex character's page is 6.1 MB).  Same inputs, same bytes.
"""
from __future__ import annotations

import base64
import html
import json
from importlib import resources

import numpy as np

from .._version import __version__
from ..model.markers import Markers
from ..model.mesh import Mesh
from ..model.report import MarkerOrigin, TransferReport
from ..model.rig import Rig
from .atomic import atomic_write
from .glb import FLOAT, BufferBuilder, pack_glb
from .gltf_animation import animation_to_gltf
from .gltf_write import ARRAY_BUFFER, rig_to_document
from .preview import marker_levels, verdict_notes

#: import-map name -> vendored file (web/three/)
THREE_MODULES = {"three": "three.module.min.js",
                 "three/addons/controls/OrbitControls.js": "OrbitControls.js",
                 "three/addons/loaders/GLTFLoader.js": "GLTFLoader.js",
                 "three/addons/utils/BufferGeometryUtils.js": "BufferGeometryUtils.js"}
#: relative imports of the vendored files, rewritten to names the import map resolves
RELATIVE_IMPORTS = {"'../utils/BufferGeometryUtils.js'": "'three/addons/utils/BufferGeometryUtils.js'"}
#: verdicts from worst to best: the gallery's order
VERDICT_ORDER = ("failed", "not run", "poor", "check", "ok")


def web_asset(name: str) -> str:
    """The text of a file of the package's ``web/`` folder (``"qa.js"``, ``"three/LICENSE"``)."""
    return resources.files(__package__).joinpath("web", *name.split("/")).read_text(encoding="utf-8")


def import_map() -> str:
    """The page's import map: three.js's modules as base64 ``data:`` URLs."""
    imports = {}
    for name, file in THREE_MODULES.items():
        text = web_asset("three/" + file)
        for relative, bare in RELATIVE_IMPORTS.items():
            text = text.replace(relative, bare)
        imports[name] = "data:text/javascript;base64," + base64.b64encode(text.encode("utf-8")).decode("ascii")
    return json.dumps({"imports": imports}, indent=0)


def gltf_meshes(mesh: Mesh) -> tuple:
    """Where each vertex lands in a written glTF (:func:`~.gltf_write.rig_to_document`: one glTF
    mesh per non-empty part, its vertices in order): ``(glTF mesh index (n,), index there (n,),
    the vertices of each glTF mesh)``."""
    parts = [np.flatnonzero(mesh.vertex_part == p) for p in range(len(mesh.parts))]
    parts = [v for v in parts if len(v)]
    which, local = np.zeros(mesh.n_vertices, np.int64), np.zeros(mesh.n_vertices, np.int64)
    for m, vertices in enumerate(parts):
        which[vertices], local[vertices] = m, np.arange(len(vertices))
    return which, local, parts


def page_rig(rig: Rig, poses: dict, fit: np.ndarray, max_influences: int = 8) -> bytes:
    """The glTF binary the page shows: ``rig`` without texture coordinates, the test ``poses``
    (name -> :class:`~asetransfer.model.animation.Animation`) as animations and ``fit`` (n,) per
    vertex as the attribute ``_FIT`` (three.js: ``geometry.attributes._fit``)."""
    mesh = rig.mesh
    bare = Rig(Mesh(mesh.vertices, mesh.faces, mesh.parts, mesh.vertex_part, mesh.normals, None),
               rig.skeleton, rig.skin)
    doc, blob = rig_to_document(bare, max_influences)
    bb = BufferBuilder()
    bb.blob, bb.views, bb.accessors = bytearray(blob), list(doc["bufferViews"]), list(doc["accessors"])
    for gltf_mesh, vertices in zip(doc["meshes"], gltf_meshes(mesh)[2]):
        values = np.asarray(fit, dtype=np.float32)[vertices].reshape(-1, 1)
        gltf_mesh["primitives"][0]["attributes"]["_FIT"] = bb.add(values, FLOAT, "SCALAR", ARRAY_BUFFER)
    if poses:
        doc["animations"] = [animation_to_gltf(bb, rig.skeleton, motion, name) for name, motion in poses.items()]
    doc.update(accessors=bb.accessors, bufferViews=bb.views, buffers=[{"byteLength": len(bb.blob)}])
    return pack_glb(doc, bytes(bb.blob))


def page_markers(mesh: Mesh, markers: Markers, origin: MarkerOrigin) -> list:
    """The target's markers as the page draws them: name, confidence level and three corners
    ``[glTF mesh, vertex]`` with barycentric weights (followed on the skinned surface)."""
    which, local, _ = gltf_meshes(mesh)
    levels = marker_levels(markers.names, origin.confidences(markers.names), origin.low_confidence)
    out = []
    for k, name in enumerate(markers.names):
        corners = mesh.faces[markers.target.face[k]]
        out.append({"name": name, "level": levels[k], "bary": [round(float(b), 6) for b in markers.target.bary[k]],
                    "corners": [[int(which[v]), int(local[v])] for v in corners]})
    return out


def _verdict_html(verdict: str, reasons, warnings, flags: dict) -> str:
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in verdict_notes(reasons, warnings))
    flagged = ", ".join(f'<a data-joint="{html.escape(name)}">{html.escape(name)}</a> ({html.escape(reason)})'
                        for name, (level, reason) in flags.items() if level == "poor")
    return (f'<div class="verdict {html.escape(verdict)}">verdict: {html.escape(verdict.upper())}</div>'
            + (f'<ul class="notes">{notes}</ul>' if notes else "")
            + (f'<div class="flagged">joints the checks doubt: {flagged}</div>' if flagged else ""))


_KEY = ('<span class="swatch sure"></span> hand-placed (or sure) marker &nbsp; <span class="swatch unsure"></span> '
        'automatic (confidence &lt; 1, or fitted) &nbsp; <span class="swatch low"></span> low confidence<br>'
        '<span class="swatch joint"></span> joint &nbsp; <span class="swatch check"></span> to check (placed by a '
        'fallback, from an unfitted piece, or on an arm hanging on the body) '
        '&nbsp; <span class="swatch poor"></span> doubted by the checks<br>Drag to orbit, wheel to zoom, '
        'right-drag to pan; hover a joint or marker for its name; click a joint, a bone or the body to see '
        'the weights that move it.  The poses play with each vertex\'s four largest weights (as three.js and '
        'most engines do); the heat map shows them all.')


def render_qa_page(rig: Rig, review, frame: dict, markers: Markers, origin: MarkerOrigin, *, title: str = "",
                   verdict: str = "ok", reasons=(), warnings=(), fit_limit: float = 0.05,
                   max_influences: int = 8) -> bytes:
    """The page's HTML bytes (see the module's docstring).

    Parameters
    ----------
    rig : the rigged target.  review : what to show of it (:class:`~asetransfer.handoff.review.Review`:
        ``poses``, ``fit_distance``, ``fitted``, ``height``, ``joint_flags``).
    frame : the target's body frame (unit ``up``, ``forward``, ``left``): the view turns it upright,
        facing the camera, whatever the file's up axis.
    markers, origin : the markers the transfer used and where they came from.
    fit_limit : the fit distance (fraction of the height) shown red; verdict, reasons, warnings : the report's.
    """
    fit = np.where(review.fitted, review.fit_distance / max(review.height, 1e-300), -1.0)
    names = list(rig.skeleton.names)
    data = {"frame": {k: [round(float(x), 9) for x in frame[k]] for k in ("left", "up", "forward")},
            "joints": {"names": names, "parents": [int(p) for p in rig.skeleton.parents],
                       "flags": {names.index(n): list(flag) for n, flag in review.joint_flags.items() if n in names}},
            "markers": page_markers(rig.mesh, markers, origin) if markers is not None else [],
            "poses": list(review.poses), "fit": {"poor": fit_limit}, "verdict": verdict}
    glb = page_rig(rig, review.poses, fit, max_influences)
    note = ("Poses made on the source's rig by its skeleton map and played on this rig by retargeting: "
            "a misplaced joint shows as a kink." if review.poses else
            "No test poses: the skeleton has no humanoid map (hips, spine, arms and legs by their names).")
    fields = {"GENERATOR": f"asetransfer {__version__}", "TITLE": html.escape(title or "asetransfer QA"),
              "CSS": web_asset("qa.css"), "IMPORTMAP": import_map(),
              "VERDICT": _verdict_html(verdict, reasons, warnings, review.joint_flags),
              "FIT_POOR": f"{100 * fit_limit:g} % of the height", "POSE_NOTE": f'<p class="key">{note}</p>',
              "KEY": _KEY, "DATA": json.dumps(data, separators=(",", ":")).replace("</", "<\\/"),
              "RIG": base64.b64encode(glb).decode("ascii"), "SCRIPT": web_asset("qa.js")}
    return _fill(web_asset("qa.html"), fields).encode("utf-8")


def _fill(template: str, fields: dict) -> str:
    """``template`` with every ``@@NAME@@`` replaced by ``fields[NAME]``, in one pass: the values
    are inserted as they are (a script may contain ``@@``)."""
    pieces = template.split("@@")
    return "".join(fields[p] if k % 2 else p for k, p in enumerate(pieces))


def write_qa_page(path, rig: Rig, review, frame: dict, markers: Markers, origin: MarkerOrigin, inputs=(),
                  **options) -> None:
    """Write :func:`render_qa_page` atomically to ``path`` (an ``.html``), never over an input."""
    atomic_write(path, render_qa_page(rig, review, frame, markers, origin, **options), inputs=inputs)


def gallery_entry(stem: str, report=None, error: str | None = None, page: str | None = None,
                  thumbnail: str | None = None) -> dict:
    """A target's card in the gallery (:func:`render_index`): its verdict and notes read from its
    ``report`` file, else ``"failed"`` with its ``error``, else ``"not run"``."""
    if report is None:
        return {"stem": stem, "verdict": "failed" if error else "not run",
                "notes": [error] if error else ["interrupted before it ran"]}
    with open(report, encoding="utf-8") as f:
        data = TransferReport.from_json(json.load(f))
    quality = data.quality
    return {"stem": stem, "verdict": quality.verdict, "notes": verdict_notes(quality.reasons, data.warnings),
            "residual": quality.marker_residual_pct_height, "page": page, "thumbnail": thumbnail}


def render_index(entries: list, title: str = "asetransfer batch") -> bytes:
    """A batch's gallery (``index.html``): a card per target, worst verdict first.

    ``entries`` : dicts with ``stem``, ``verdict`` (one of :data:`VERDICT_ORDER`), ``notes`` (lines
    to show, the worst first), optional ``page`` and ``thumbnail`` (paths relative to the index)
    and ``residual`` (% of the height: the worse first within a verdict).
    """
    def rank(e):
        verdict = e["verdict"] if e["verdict"] in VERDICT_ORDER else "failed"
        return VERDICT_ORDER.index(verdict), -(e.get("residual") or 0.0), e["stem"]
    cards = []
    for e in sorted(entries, key=rank):
        link = (lambda inner: f'<a href="{html.escape(e["page"])}">{inner}</a>') if e.get("page") else (lambda i: i)
        image = (link(f'<img loading="lazy" src="{html.escape(e["thumbnail"])}" alt="{html.escape(e["stem"])}">')
                 if e.get("thumbnail") else '<div class="noimage">no picture</div>')
        notes = "".join(f"<li>{html.escape(n)}</li>" for n in e.get("notes", ())[:3])
        cards.append(f'<div class="card {html.escape(e["verdict"])}">{image}<h2>{link(html.escape(e["stem"]))}</h2>'
                     f'<div class="verdict {html.escape(e["verdict"])}">{html.escape(e["verdict"].upper())}</div>'
                     f'<ul class="notes">{notes}</ul></div>')
    counts = ", ".join(f"{sum(e['verdict'] == v for e in entries)} {v}" for v in VERDICT_ORDER
                       if any(e["verdict"] == v for e in entries))
    return _fill(web_asset("index.html"), {"TITLE": html.escape(title), "COUNTS": html.escape(counts),
                                           "CARDS": "\n".join(cards)}).encode("utf-8")


def write_index(path, entries: list, title: str = "asetransfer batch", inputs=()) -> None:
    """Write :func:`render_index` atomically to ``path``."""
    atomic_write(path, render_index(entries, title), inputs=inputs)
