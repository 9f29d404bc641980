"""A picture to check a transfer at a glance (PNG, headless): both characters from the
front and the side at one scale, the target in test poses, close-ups of its hands and
feet, the verdict and its warnings on top.

Each character is drawn in its own body frame (front view: the character faces the
viewer, its left on the viewer's right; side view: its right side, facing right), so a
centimetre Z-up target facing +X reads the same as a metre Y-up source; the source is
drawn at the scale the transfer fitted it to the target (``scale``), so every body
panel has one scale.  The body is a shaded surface (Lambert: the brightness of each
triangle is ``ambient + diffuse |n . l|`` for its normal ``n`` and a light ``l`` over the
viewer's shoulder), drawn with a depth buffer (geometry/raster.py) on a copy merged by vertex clustering when large;
the skeleton is drawn over it.  Markers are dots coloured by confidence; labels are
placed only where they collide with nothing, else the marker gets its number (listed in
the legend) or no text.  Joints the checks doubt are red (orange: placed by a fallback or from
pieces no marker fitted).
Uses matplotlib (the ``preview`` extra) with its Agg backend: no display needed.
"""
from __future__ import annotations

import gc
import io
import textwrap

import numpy as np

from ..errors import InputError
from ..geometry.decimate import cluster_vertices
from ..geometry.raster import rasterize
from ..model.mesh import Mesh
from .atomic import atomic_write

#: vertex-clustering cells of the copy a body panel draws: facets a few pixels across on a
#: 600-pixel body (measured: two 13k-vertex characters drawn in 0.68 s, 1.44 s with every triangle)
DRAWN_CELLS = 5000
#: markers in a panel up to which a marker whose name does not fit is numbered (and listed by
#: number); a denser set (hundreds of markers) shows such markers as dots: its list would fill the picture
NUMBERED_MARKERS = 80
#: the figure: width (inches), resolution (dots per inch), label font size (points)
FIGURE_WIDTH, DPI, LABEL_POINTS = 16.0, 110, 5.5
SURFACE_RGB = np.array([0.74, 0.77, 0.82])
AMBIENT, DIFFUSE = 0.38, 0.62
MARKER_COLOURS = {"sure": "limegreen", "unsure": "orange", "low": "red"}
JOINT_COLOURS = {None: "tab:blue", "check": "darkorange", "poor": "red"}
VERDICT_COLOURS = {"ok": "forestgreen", "check": "darkorange", "poor": "red"}


def _basis(frame, view: str) -> np.ndarray:
    """(3, 3) rows: screen right, screen up and toward the viewer, for a ``"front"`` view
    (right = the character's left) or a ``"side"`` one (right = forward: its right side)."""
    up, forward, left = (np.asarray(frame[k], dtype=np.float64) for k in ("up", "forward", "left"))
    return np.stack([left, up, forward] if view == "front" else [forward, up, -left])


def _palm_basis(vertices: np.ndarray, root: np.ndarray, frame, mirror: bool) -> np.ndarray:
    """(3, 3) view rows looking along a hand's thinnest direction (its palm's normal): right
    along wrist -> the hand's centre (left for a ``mirror``, a right hand), up the body's
    forward (or up) in the palm's plane."""
    centred = vertices - vertices.mean(axis=0)
    normal = np.linalg.svd(centred, full_matrices=False)[2][2]
    along = vertices.mean(axis=0) - root
    along -= (along @ normal) * normal
    along = along / max(np.linalg.norm(along), 1e-300) * (-1.0 if mirror else 1.0)
    up = np.cross(normal, along)
    forward = np.asarray(frame["forward"], dtype=np.float64)
    if abs(up @ forward) < 0.3:
        forward = np.asarray(frame["up"], dtype=np.float64)
    if up @ forward < 0:
        up, normal = -up, -normal
    return np.stack([along, up, normal])


def _shaded_triangles(points: np.ndarray, faces: np.ndarray, rgb=SURFACE_RGB) -> tuple:
    """Screen triangles (G, 3, 3) and their RGB colours (G, 3).

    ``points`` (n, 3) are in screen coordinates (right, up, toward the viewer); the light
    comes from over the viewer's right shoulder; two-sided, for meshes wound either way.
    """
    tri = points[faces]
    normal = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    normal /= np.maximum(np.linalg.norm(normal, axis=1, keepdims=True), 1e-300)
    light = np.array([0.35, 0.45, 1.0]) / np.linalg.norm([0.35, 0.45, 1.0])
    shade = AMBIENT + DIFFUSE * np.abs(normal @ light)
    return tri, np.clip(shade[:, None] * rgb[None], 0.0, 1.0)


def _drawn_copy(mesh: Mesh) -> tuple:
    """``(cluster, faces)``: each vertex's cell and the triangles between cells of the copy a
    body panel draws (:data:`DRAWN_CELLS`); every vertex its own cell on small meshes."""
    if mesh.n_vertices <= 2 * DRAWN_CELLS:
        return np.arange(mesh.n_vertices), mesh.faces
    _, faces, cluster = cluster_vertices(mesh.vertices, mesh.faces, DRAWN_CELLS)
    return cluster, faces


def _cell_means(vertices: np.ndarray, cluster: np.ndarray) -> np.ndarray:
    """(m, 3) the mean of each cell's vertices (the drawn copy of posed vertices)."""
    count = np.maximum(np.bincount(cluster), 1)
    return np.stack([np.bincount(cluster, weights=vertices[:, k]) for k in range(3)], axis=1) / count[:, None]


class _Labels:
    """Text placed beside points where it overlaps no other label or dot (boxes in inches)."""

    OFFSETS = np.array([(1, 0), (-1, 0), (1, 1), (1, -1), (-1, 1), (-1, -1), (0, 1.6), (0, -1.6), (2.5, 0),
                        (-2.5, 0)])

    def __init__(self, canvas: "_Canvas", dots: np.ndarray):
        self.canvas, self.size = canvas, canvas.size
        pad = LABEL_POINTS / 72 * 0.35
        centres = canvas.to_inches(dots)
        self.boxes = np.concatenate([centres - pad, centres + pad], axis=1)  # (k, 4): x0, y0, x1, y1
        self.count = len(self.boxes)

    def _add(self, box: np.ndarray) -> None:
        if self.count == len(self.boxes):  # room doubled: labels are added one at a time
            self.boxes = np.concatenate([self.boxes, np.zeros((max(self.count, 16), 4))])
        self.boxes[self.count] = box
        self.count += 1

    def place(self, point, texts, colour="black") -> bool:
        """Write the first of ``texts`` that fits beside ``point`` (data units), trying the
        places of :data:`OFFSETS` in turn (right, left, the diagonals, above, below, farther
        out; in units of a gap of a third of a line); False when none fits.  A place fits
        inside the panel, overlapping no label or dot."""
        (px, py), = self.canvas.to_inches(point)
        h = 1.15 * LABEL_POINTS / 72
        gap = 0.35 * h
        dx, dy = self.OFFSETS[:, 0], self.OFFSETS[:, 1]
        taken = self.boxes[:self.count]
        for text in texts:
            w = 0.56 * LABEL_POINTS / 72 * len(text)
            x = px + np.where(dx > 0, gap, np.where(dx < 0, -gap - w, -w / 2)) + (dx - np.sign(dx)) * gap
            y = py + dy * 0.6 * h - h / 2
            inside = (x >= 0) & (y >= 0) & (x + w <= self.size[0]) & (y + h <= self.size[1])
            overlap = ((x[:, None] < taken[None, :, 2]) & (taken[None, :, 0] < x[:, None] + w)
                       & (y[:, None] < taken[None, :, 3]) & (taken[None, :, 1] < y[:, None] + h)).any(axis=1)
            free = np.flatnonzero(inside & ~overlap)
            if len(free):
                k = free[0]
                self._add(np.array([x[k], y[k], x[k] + w, y[k] + h]))
                self.canvas.text(x[k], y[k] + 0.22 * h, text, color=colour, fontsize=LABEL_POINTS)
                return True
        return False


def marker_levels(names, confidence, low_confidence=()) -> list:
    """Each marker's level: ``"low"`` (named in ``low_confidence`` or confidence under 0.5),
    ``"unsure"`` (an automatic marker, confidence under 1 or NaN: read off the fitted skin) or
    ``"sure"``."""
    low = set(low_confidence)
    return ["low" if n in low or c < 0.5 else "unsure" if not c >= 1.0 else "sure"
            for n, c in zip(names, np.asarray(confidence, dtype=np.float64))]


def verdict_notes(reasons, warnings) -> list:
    """The lines shown under a verdict: its reasons, then the run's warnings that do not repeat one."""
    return list(reasons) + [w for w in warnings if not any(r in w for r in reasons)]


def _panel(title: str, points: np.ndarray, faces: np.ndarray, basis: np.ndarray, **overlay) -> dict:
    """A panel to draw: ``points`` (n, 3) and the overlays (``joints`` (J, 3), ``parents``,
    ``joint_names``, ``flags``, ``markers`` (K, 3), ``marker_ids``, ``marker_names``,
    ``marker_colours``, ``label_joints``) in common units, projected by ``basis``."""
    screen = points @ basis.T
    lo, hi = screen[:, :2].min(axis=0), screen[:, :2].max(axis=0)
    pad = 0.03 * float((hi - lo).max())
    return {"title": title, "screen": screen, "faces": faces, "basis": basis, "lo": lo - pad, "hi": hi + pad,
            **overlay}


def _draw_skeleton(canvas: "_Canvas", panel: dict, labels: _Labels) -> None:
    """Bones (fainter behind the body), joints coloured by their flags, and the labels of
    the doubted joints (of every joint in a close-up)."""
    joints = panel["joints"] @ panel["basis"].T
    flags, names = panel.get("flags", {}), panel.get("joint_names", ())
    depth = joints[:, 2]
    far = depth < np.median(depth) - 0.02 * np.ptp(panel["screen"][:, 1])  # behind the body: fainter
    bones = np.array([(p, j) for j, p in enumerate(panel["parents"]) if p >= 0], dtype=np.int64).reshape(-1, 2)
    faint = far[bones[:, 0]] & far[bones[:, 1]]
    for keep, alpha, width in ((faint, 0.35, 0.5), (~faint, 0.95, 0.9)):
        canvas.lines(joints[bones[keep]][:, :, :2], colors="tab:blue", alpha=alpha, linewidths=width, zorder=3,
                     capstyle="round")
    level = [flags.get(n, (None,))[0] for n in names] if names else [None] * len(joints)
    colours = [JOINT_COLOURS[lv] for lv in level]
    sizes = [2.5 if lv is None else 14 for lv in level]
    canvas.dots(joints[:, :2], sizes, colours, zorder=4, linewidths=0)
    for j in np.argsort([lv is None for lv in level], kind="stable") if names else ():
        if level[j] == "poor" or panel.get("label_joints"):  # fallbacks are common (face joints): dots only
            labels.place(joints[j, :2], [names[j]], JOINT_COLOURS[level[j]] if level[j] else "navy")


def _draw_markers(canvas: "_Canvas", panel: dict, labels: _Labels) -> list:
    """Dots and labels; returns the numbers of the markers left without their name."""
    if panel.get("markers") is None or not len(panel["markers"]):
        return []
    xy = (panel["markers"] @ panel["basis"].T)[:, :2]
    canvas.dots(xy, [9.0] * len(xy), panel["marker_colours"], zorder=5, edgecolors="black", linewidths=0.3)
    unnamed = []
    numbered = len(xy) <= NUMBERED_MARKERS
    order = sorted(range(len(xy)), key=lambda k: (panel["marker_colours"][k] == MARKER_COLOURS["sure"], k))
    for k in order:
        if not labels.place(xy[k], [panel["marker_names"][k]]) and numbered:
            unnamed.append(panel["marker_ids"][k])
            labels.place(xy[k], [str(panel["marker_ids"][k])], "dimgray")
    return unnamed


def _bare_axes(fig, rect):
    """Axes at ``rect`` (figure fractions) without frame or ticks (none made: they cost)."""
    ax = fig.add_axes(rect, frameon=False, xticks=[], yticks=[])
    ax.axis("off")
    return ax


class _Canvas:
    """A panel's place on the figure, drawn on without matplotlib axes (each costs more than
    its panel's drawing): artists with the panel's transforms from its data (screen units,
    ``lo`` to ``hi``) or from inches (its lower-left corner)."""

    def __init__(self, fig, rect, lo, hi):
        from matplotlib.transforms import Affine2D

        fw, fh = fig.get_size_inches()
        self.fig, self.lo, self.hi = fig, np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
        self.origin, self.size = (rect[0] * fw, rect[1] * fh), (rect[2] * fw, rect[3] * fh)
        self.inches = Affine2D().translate(*self.origin) + fig.dpi_scale_trans
        self.scale = np.array(self.size) / (self.hi - self.lo)
        self.data = Affine2D().translate(*-self.lo).scale(*self.scale) + self.inches

    def to_inches(self, xy) -> np.ndarray:
        """(k, 2) inches from the panel's corner of data points ``xy``."""
        return (np.asarray(xy, dtype=np.float64).reshape(-1, 2) - self.lo) * self.scale

    def lines(self, segments, **style) -> None:
        from matplotlib.collections import LineCollection

        self.fig.add_artist(LineCollection(segments, transform=self.data, **style))

    def dots(self, xy, sizes, colours, **style) -> None:
        """Round dots of ``sizes`` (points squared, as a scatter plot's) at data points ``xy``."""
        from matplotlib.collections import PathCollection
        from matplotlib.markers import MarkerStyle
        from matplotlib.transforms import IdentityTransform

        marker = MarkerStyle("o")
        dots = PathCollection([marker.get_path().transformed(marker.get_transform())], sizes=sizes,
                              offsets=np.asarray(xy, dtype=np.float64).reshape(-1, 2), offset_transform=self.data,
                              facecolors=colours, **style)
        dots.set_transform(IdentityTransform())
        self.fig.add_artist(dots)

    def text(self, x: float, y: float, text: str, **style) -> None:
        """``text`` at ``(x, y)`` inches from the panel's corner."""
        self.fig.text(x, y, text, transform=self.inches, **style)


def _draw(fig, rect, panel: dict) -> list:
    """Draw ``panel`` at ``rect`` (figure fractions, limits from the panel); returns the
    numbers of the markers drawn without their name."""
    canvas = _Canvas(fig, rect, panel["lo"], panel["hi"])
    canvas.text(canvas.size[0] / 2, canvas.size[1], panel["title"], fontsize=8, ha="center", va="bottom")
    # the body as pixels placed on the figure's own (no resampling; within a pixel of the panel)
    fw, fh = fig.get_size_inches()
    corner = (int(round(rect[0] * fw * DPI)), int(round(rect[1] * fh * DPI)))
    pixels = (max(int(round(rect[2] * fw * DPI)), 1), max(int(round(rect[3] * fh * DPI)), 1))
    triangles, colours = _shaded_triangles(panel["screen"], panel["faces"])
    fig.figimage(rasterize(triangles, colours, panel["lo"], panel["hi"], pixels), *corner, origin="upper", zorder=-1)
    dots = [] if panel.get("markers") is None else (panel["markers"] @ panel["basis"].T)[:, :2]
    labels = _Labels(canvas, dots)
    if panel.get("joints") is not None:
        _draw_skeleton(canvas, panel, labels)
    return _draw_markers(canvas, panel, labels)


def _character_panels(c: dict) -> tuple:
    """The body panels (front, side, then each test pose) and the close-ups of a character."""
    s = float(c.get("scale", 1.0))
    mesh = c["mesh"]
    cluster, faces = _drawn_copy(mesh)
    points = _cell_means(mesh.vertices * s, cluster)
    markers = np.asarray(c["markers"], dtype=np.float64).reshape(-1, 3) * s
    marks = {"markers": markers, "marker_ids": list(range(1, len(markers) + 1)), "marker_names": list(c["names"]),
             "marker_colours": [MARKER_COLOURS[level] for level in
                                marker_levels(c["names"], c["confidence"], c.get("low_confidence", ()))]}
    bones = {}
    if c.get("joints") is not None:
        bones = {"joints": np.asarray(c["joints"]) * s, "parents": np.asarray(c["parents"]),
                 "joint_names": list(c.get("joint_names", ())), "flags": c.get("joint_flags", {})}
    body = [_panel(f"{c['label']} ({view})", points, faces, _basis(c["frame"], view), **bones, **marks)
            for view in ("front", "side")]
    for pose in c.get("poses", ()):
        posed = {**bones, "joints": np.asarray(pose["joints"]) * s}
        body.append(_panel(f"{c['label']}: {pose['label']}", _cell_means(np.asarray(pose["vertices"]) * s, cluster),
                           faces, _basis(c["frame"], pose["view"]), **posed))
    close = [_close_up(c, region, s, bones, marks) for region in c.get("regions", ())]
    return body, close


def _close_up(c: dict, region: dict, s: float, bones: dict, marks: dict) -> dict:
    """The panel of a hand or a foot: its triangles, joints and the markers near it."""
    mesh, keep = c["mesh"], np.asarray(region["vertices"])
    inside = np.zeros(mesh.n_vertices, dtype=bool)
    inside[keep] = True
    renumber = np.cumsum(inside) - 1
    faces = renumber[mesh.faces[inside[mesh.faces].all(axis=1)]]
    points = mesh.vertices[keep] * s
    joints = np.asarray(region["joints"])
    right = region["label"].startswith("right")
    if region["view"] == "palm":
        basis = _palm_basis(points, bones["joints"][joints[0]], c["frame"], mirror=right)
    else:  # a foot from its outer side
        basis = _basis(c["frame"], "side") if right else _basis(c["frame"], "side") * [[-1], [1], [-1]]
    lo, hi = points.min(axis=0), points.max(axis=0)
    near = np.all((marks["markers"] > lo - 0.05 * (hi - lo).max()) & (marks["markers"] < hi + 0.05 * (hi - lo).max()),
                  axis=1)
    parents = np.asarray([int(np.flatnonzero(joints == p)[0]) if p in joints else -1
                          for p in bones["parents"][joints]])
    overlay = {"joints": bones["joints"][joints], "parents": parents, "flags": bones["flags"], "label_joints": True,
               "joint_names": [bones["joint_names"][j] for j in joints] if bones["joint_names"] else ()}
    overlay.update({k: [v[i] for i in np.flatnonzero(near)] if isinstance(v, list) else v[near]
                    for k, v in marks.items()})
    return _panel(f"{c['label']}: {region['label']}", points, faces, basis, view=region["view"], **overlay)


def _row(panels: list, width: float, max_height: float, gap: float = 0.12) -> list:
    """Each panel's size (inches) at one scale for the row, as large as ``width`` and
    ``max_height`` allow; the panels' limits are widened to the row's height, their ground
    at the bottom."""
    tall = max(float(p["hi"][1] - p["lo"][1]) for p in panels)
    wide = sum(float(p["hi"][0] - p["lo"][0]) for p in panels)
    scale = min((width - gap * (len(panels) - 1)) / wide, max_height / tall)
    for p in panels:
        p["hi"] = np.array([p["hi"][0], p["lo"][1] + tall])
    return [(float(p["hi"][0] - p["lo"][0]) * scale, tall * scale) for p in panels]


def _header(verdict, reasons, warnings) -> list:
    """``(text, size, colour, weight)`` lines under the title: the verdict and what it says."""
    lines = []
    if verdict:
        lines.append((f"verdict: {verdict.upper()}", 11, VERDICT_COLOURS.get(verdict, "black"), "bold"))
    notes = verdict_notes(reasons, warnings)
    for note in notes[:4]:
        for k, part in enumerate(textwrap.wrap(note, 190)[:2]):
            lines.append((("• " if k == 0 else "  ") + part, 7, "black", "normal"))
    if len(notes) > 4:
        lines.append((f"  (+{len(notes) - 4} more in the report)", 7, "dimgray", "normal"))
    return lines


def _legend(fig, rect, names: list, unnamed: set) -> None:
    """Marker and joint colours, and the numbered markers drawn without their name."""
    from matplotlib.lines import Line2D

    ax = _bare_axes(fig, rect)
    dot = dict(marker="o", linestyle="", markersize=5, markeredgecolor="black", markeredgewidth=0.3)
    handles = [Line2D([], [], color=MARKER_COLOURS["sure"], label="hand-placed (or sure) marker", **dot),
               Line2D([], [], color=MARKER_COLOURS["unsure"], label="automatic marker (confidence < 1, or fitted)", **dot),
               Line2D([], [], color=MARKER_COLOURS["low"], label="low-confidence marker: check it", **dot),
               Line2D([], [], color=JOINT_COLOURS[None], marker="o", markersize=3, label="joint, bone"),
               Line2D([], [], color=JOINT_COLOURS["check"], marker="o", linestyle="", markersize=5,
                      label="joint to check (a fallback, an unfitted piece, a hanging arm)"),
               Line2D([], [], color=JOINT_COLOURS["poor"], marker="o", linestyle="", markersize=5,
                      label="joint the checks doubt")]
    ax.legend(handles=handles, loc="upper left", fontsize=7, frameon=False, borderaxespad=0)
    listed = [f"{k} {names[k - 1]}" for k in sorted(unnamed)]
    if listed:
        height = rect[3] * fig.get_size_inches()[1]
        rows = int(np.ceil(len(listed) / 3))
        ax.text(0, 1 - 1.05 / height, "markers by number:", fontsize=6.5, va="top", transform=ax.transAxes)
        for i in range(3):
            ax.text(i / 3, 1 - 1.2 / height, "\n".join(listed[i * rows:(i + 1) * rows]), fontsize=5, va="top",
                    transform=ax.transAxes, family="monospace", linespacing=1.25)


def render_preview(characters: list, title: str = "", verdict: str | None = None, reasons=(), warnings=()) -> bytes:
    """PNG bytes of the preview (see the module's docstring).

    Parameters
    ----------
    characters : list of dicts, each with ``label`` (str), ``mesh`` (:class:`Mesh`), ``frame``
        (dict of unit 3-vectors ``up``, ``forward``, ``left``), ``markers`` ((K, 3) positions),
        ``names`` (K str) and ``confidence`` (K floats, 1 for hand markers); optionally
        ``low_confidence`` (marker names), ``scale`` (to the common units, default 1),
        ``joints`` ((J, 3) world positions) with ``parents`` ((J,) ints, -1 for roots),
        ``joint_names`` and ``joint_flags`` (name -> (``"check"`` | ``"poor"``, reason)),
        ``poses`` (dicts of ``label``, posed ``vertices`` (n, 3) and ``joints`` (J, 3), ``view``
        ``"front"`` | ``"side"``) and ``regions`` (close-ups: dicts of ``label``, ``joints``
        (k,) indices, the root first, ``vertices`` (m,) indices, ``view`` ``"palm"`` | ``"side"``).
    title : the first line; verdict, reasons, warnings : the quality verdict and the lines
        shown under it.
    """
    figure = _figure_class(None)
    # the figure's thousands of small objects would start the cyclic collector over and over, and each
    # pass walks everything the transfer holds (measured: 0.05-0.1 s of a 13k preview)
    import matplotlib

    enabled = gc.isenabled()
    gc.disable()
    try:  # unhinted glyphs: as legible at these sizes, 7 % of the picture's time less
        with matplotlib.rc_context({"text.hinting": "no_hinting"}):
            return _render(figure, characters, title, verdict, reasons, warnings)
    finally:
        if enabled:
            gc.enable()


def _render(figure, characters: list, title: str, verdict, reasons, warnings) -> bytes:
    """:func:`render_preview` with ``figure``, matplotlib's Figure class."""
    body, close = [], []
    for c in characters:
        panels, zooms = _character_panels(c)
        body += panels
        close += zooms
    names = list(characters[-1]["names"])
    header = [(title, 9, "black", "normal")] * bool(title) + _header(verdict, reasons, warnings)
    top = 0.4 + sum(size for _, size, _, _ in header) * 1.45 / 72  # and the panels' titles
    rows = [_row(body, FIGURE_WIDTH - 0.3, 6.2)]
    legend = (4.4, 1.3 + 1.25 * 5 / 72 * np.ceil(min(len(names), NUMBERED_MARKERS) / 3))  # room for the numbers
    budget = (FIGURE_WIDTH - legend[0] - 0.3) / 2
    groups = [[p for p in close if p["view"] == view] for view in ("palm", "side")]
    rows.append([size for group in groups if group for size in _row(group, budget, 3.0)])
    row_heights = [max(h for _, h in rows[0]), max([h for _, h in rows[1]] + [legend[1]])]
    height = top + row_heights[0] + 0.3 + row_heights[1] + 0.1
    fig = figure(figsize=(FIGURE_WIDTH, height), dpi=DPI)
    y = height - 0.1
    for text, size, colour, weight in header:
        y -= size * 1.45 / 72
        fig.text(0.01, y / height, text, fontsize=size, color=colour, weight=weight)
    unnamed = set()
    y = height - top - row_heights[0]
    for panels, sizes, x in ((body, rows[0], (FIGURE_WIDTH - sum(w + 0.12 for w, _ in rows[0])) / 2),
                             ([p for group in groups for p in group], rows[1], 0.15)):
        for panel, (w, h) in zip(panels, sizes):
            unnamed.update(_draw(fig, (x / FIGURE_WIDTH, y / height, w / FIGURE_WIDTH, h / height), panel))
            x += w + 0.12
        y -= 0.3 + row_heights[1]
    y += 0.3 + row_heights[1]
    _legend(fig, ((FIGURE_WIDTH - legend[0]) / FIGURE_WIDTH, y / height, (legend[0] - 0.1) / FIGURE_WIDTH,
                  row_heights[1] / height), names, unnamed)
    buf = io.BytesIO()
    # no version or date: the same bytes each run; zlib level 3: 3 % larger than the default 6, 40 % faster
    fig.savefig(buf, format="png", metadata={"Software": None}, pil_kwargs={"compress_level": 3})
    return buf.getvalue()


def _figure_class(path):
    """matplotlib's Figure (drawn by its Agg backend when saved: no display, no pyplot and its
    global figure registry); a one-line InputError on ``path`` without matplotlib."""
    try:
        import matplotlib  # noqa: F401 -- first: the package itself, whatever of it is loaded already
        from matplotlib.figure import Figure
    except ImportError:
        raise InputError(path, "--preview needs matplotlib: pip install \"asetransfer[preview]\"") from None
    return Figure


def require_preview(path) -> None:
    """Raise a one-line InputError on ``path`` unless matplotlib is installed (checked
    before any work: a missing extra must not cost a finished run)."""
    _figure_class(path)


def write_preview(path, characters: list, title: str = "", inputs=(), **verdict) -> None:
    """Write :func:`render_preview` atomically to ``path`` (a ``.png``), never over an input;
    ``verdict``: its ``verdict``, ``reasons`` and ``warnings``."""
    atomic_write(path, render_preview(characters, title, **verdict), inputs=inputs)


def mesh_frame_fallback(mesh: Mesh, up_axis: str) -> dict:
    """A frame for a character without landmarks: ``up_axis`` like ``"+Y"``, forward the
    bounding box's shorter horizontal side."""
    k = "XYZ".index(up_axis[1])
    up = np.eye(3)[k] * (1.0 if up_axis[0] == "+" else -1.0)
    ext = np.ptp(mesh.vertices, axis=0)
    others = [i for i in range(3) if i != k]
    forward = np.eye(3)[min(others, key=lambda i: ext[i])]
    return {"up": up, "forward": forward, "left": np.cross(up, forward)}
