"""A picture to check a transfer at a glance: markers on both characters and the
transferred skeleton inside the target, front and side views (PNG, headless).

Each character is drawn in its own body frame (front view: the character faces
the viewer, its left on the viewer's right; side view: facing right), so a
centimetre Z-up target facing +X reads the same as a metre Y-up source.  The
surface is a cloud of its vertices shaded by depth; markers are numbered dots
with their names; low-confidence automatic markers are drawn in red.  Uses
matplotlib (the ``preview`` extra) with its Agg backend: no display needed.
"""
from __future__ import annotations

import io

import numpy as np

from ..errors import InputError
from ..model.mesh import Mesh
from .atomic import atomic_write

#: vertices drawn per character at most (every k-th vertex: deterministic)
MAX_POINTS = 12000


def _axes_in(frame) -> np.ndarray:
    """(3, 3) rows: screen x of the front view (the character's left), up, and toward the viewer."""
    up, forward, left = (np.asarray(frame[k], dtype=np.float64) for k in ("up", "forward", "left"))
    return np.stack([left, up, forward])


def _panel(ax, title, points, depth, markers, names, colours, bones=None):
    ax.set_title(title, fontsize=9)
    ax.scatter(points[:, 0], points[:, 1], s=0.4, c=depth, cmap="Greys", alpha=0.5, linewidths=0)
    if bones is not None:
        joints, pairs = bones
        for a, b in pairs:
            ax.plot(joints[[a, b], 0], joints[[a, b], 1], color="tab:blue", linewidth=0.8)
        ax.scatter(joints[:, 0], joints[:, 1], s=3, color="tab:blue", zorder=3)
    if len(markers):
        ax.scatter(markers[:, 0], markers[:, 1], s=10, c=colours, zorder=4, edgecolors="black", linewidths=0.3)
        for p, name in zip(markers, names):
            ax.annotate(name, p[:2], fontsize=4.5, xytext=(2, 2), textcoords="offset points")
    ax.set_aspect("equal")
    ax.axis("off")


def render_preview(characters: list, title: str = "") -> bytes:
    """PNG bytes of front and side views of each character.

    Parameters
    ----------
    characters : list of dicts with ``label`` (str), ``mesh`` (:class:`Mesh`), ``frame``
        (dict of unit 3-vectors ``up``, ``forward``, ``left``), ``markers`` ((K, 3) positions),
        ``names`` (K str), ``confidence`` (K floats, 1 for hand markers) and, optionally,
        ``joints`` ((J, 3) world positions) with ``parents`` ((J,) ints, -1 for roots).
    """
    plt = _pyplot(None)
    fig, axes = plt.subplots(1, 2 * len(characters), figsize=(5.0 * len(characters), 5.2), dpi=200)
    for k, c in enumerate(characters):
        rows = _axes_in(c["frame"])
        v = c["mesh"].vertices[:: max(1, len(c["mesh"].vertices) // MAX_POINTS)]
        conf = np.asarray(c["confidence"], dtype=np.float64)
        colours = np.where(conf < 0.5, "red", np.where(conf < 1.0, "orange", "limegreen"))
        bones = None
        if c.get("joints") is not None:
            parents = np.asarray(c["parents"])
            bones = (c["joints"] @ rows.T, [(j, int(p)) for j, p in enumerate(parents) if p >= 0])
        for view, (sx, depth_row) in enumerate(((0, 2), (2, 0))):  # front: x = left; side: x = forward
            proj = np.asarray(v @ rows.T)
            pts = np.stack([proj[:, sx], proj[:, 1]], axis=1)
            m = np.asarray(c["markers"], dtype=np.float64).reshape(-1, 3) @ rows.T
            b = None if bones is None else (np.stack([bones[0][:, sx], bones[0][:, 1]], axis=1), bones[1])
            _panel(axes[2 * k + view], f"{c['label']} ({'front' if view == 0 else 'side'})", pts,
                   proj[:, depth_row], np.stack([m[:, sx], m[:, 1]], axis=1), c["names"], colours, b)
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})  # no version or date: same bytes each run
    plt.close(fig)
    return buf.getvalue()


def _pyplot(path):
    """matplotlib's pyplot on the Agg backend; a one-line InputError on ``path`` without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise InputError(path, "--preview needs matplotlib: pip install \"asetransfer[preview]\"") from None
    return plt


def require_preview(path) -> None:
    """Raise a one-line InputError on ``path`` unless matplotlib is installed (checked
    before any work: a missing extra must not cost a finished run)."""
    _pyplot(path)


def write_preview(path, characters: list, title: str = "", inputs=()) -> None:
    """Write :func:`render_preview` atomically to ``path`` (a ``.png``), never over an input."""
    atomic_write(path, render_preview(characters, title), inputs=inputs)


def mesh_frame_fallback(mesh: Mesh, up_axis: str) -> dict:
    """A frame for a character without landmarks: ``up_axis`` like ``"+Y"``, forward the
    bounding box's shorter horizontal side."""
    k = "XYZ".index(up_axis[1])
    up = np.eye(3)[k] * (1.0 if up_axis[0] == "+" else -1.0)
    ext = np.ptp(mesh.vertices, axis=0)
    others = [i for i in range(3) if i != k]
    forward = np.eye(3)[min(others, key=lambda i: ext[i])]
    return {"up": up, "forward": forward, "left": np.cross(up, forward)}
