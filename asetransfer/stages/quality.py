"""How far to trust a transfer: measures computed from the result, and a plain verdict.

A silently wrong rig is worse than an error.  What cannot be told before the work
(markers in plausible units can still be misplaced) is measured afterwards:

* ``marker_residual_pct_height``: the largest distance between a marker's source and
  target points after the fit, in % of the target's height;
* ``mapped_area_fraction``: the share of the target's area that the registered source
  passes close to (within :attr:`~asetransfer.config.QualityConfig.mapped_distance_pct`);
* ``joints_outside_body``: joints clearly inside the source's body (generalised winding
  number >= 0.5, which tolerates the holes of real meshes, and deeper than a tolerance)
  that end clearly outside the target's -- and not in a gap between two of its pieces
  (a knee between the thigh and shin plates of a body cut at its joints).

The verdict is ``"ok"``, ``"check"`` or ``"poor"`` with the reasons (thresholds and
their reasoning in :class:`~asetransfer.config.QualityConfig`).
"""
from __future__ import annotations

import logging

import numpy as np

from ..config import QualityConfig
from .plausibility import (bones_out_of_proportion, feet_pointing_back, hanging_arms_unpinned, joints_on_carried_pieces,
                           limbs_crossed)
from ..model.mesh import Mesh
from ..model.report import QualityVerdict
from ..model.rig import Rig
from ..geometry.laplacian import boundary_vertices
from ..geometry.surface import winding_numbers
from ..geometry.topology import vertex_areas, vertex_components, weld

log = logging.getLogger("asetransfer")
LEVELS = ("ok", "check", "poor")


def height(mesh: Mesh) -> float:
    """The mesh's largest bounding-box extent (a standing character's height)."""
    lo, hi = mesh.bounds()
    return float(np.max(hi - lo))


#: up to this many point-triangle pairs, the winding number is summed exactly over every
#: triangle (geometry.surface.winding_numbers, ~3 ms a point on 26k triangles): libigl's fast
#: one first builds a tree (~30 ms on 26k triangles; its exact one took ~85 ms for any number
#: of points), and its far-field approximation misjudged 7 of the 163 joints of the MakeHuman
#: dev source (the root between the feet and three face joints inside, three mouth joints out)
EXACT_WINDING_PAIRS = 500_000


def inside(points: np.ndarray, mesh: Mesh, config: QualityConfig | None = None) -> np.ndarray:
    """(K,) True where the (K, 3) points are inside ``mesh`` (generalised winding number >= 0.5).

    The winding number is the solid angle the surface subtends at a point over 4 pi: 1
    inside a closed surface, 0 outside, and still about right through small holes.  A
    mesh of more than ``config.inside_exact_faces`` triangles is measured on its vertex
    clustering (``config.inside_cells`` cells; :class:`~asetransfer.config.QualityConfig`).
    Up to ``EXACT_WINDING_PAIRS`` points x triangles it is summed over every triangle, else
    by libigl's fast (far-field approximated) winding number.
    """
    cfg = config or QualityConfig()
    if len(points) == 0:
        return np.zeros(0, bool)
    v, f = mesh.vertices, mesh.faces
    if len(f) > cfg.inside_exact_faces:
        v, f = _clustered(v, f, cfg.inside_cells)
    if len(points) * len(f) <= EXACT_WINDING_PAIRS:
        w = winding_numbers(points, v, f)
    else:
        import igl  # imported on use (libigl loads in ~0.3 s)

        w = igl.fast_winding_number(np.ascontiguousarray(v, np.float64), np.ascontiguousarray(f, np.int64),
                                    np.ascontiguousarray(points, np.float64))
    return np.abs(np.asarray(w)) >= 0.5  # either orientation of the faces


#: the clustered copy of the last large mesh :func:`inside` tested: (weak references to its vertices
#: and faces, the cells, the copy)
_CLUSTERED: list = []


def _clustered(vertices: np.ndarray, faces: np.ndarray, cells: int) -> tuple:
    """``(vertices, faces)`` of the vertex clustering of a large mesh (0.9 s on 1M vertices), kept
    for the next call on the very same arrays (``is``: the skeleton stage and the verdict test
    the same target's joints)."""
    import weakref

    from ..geometry.decimate import cluster_vertices

    if _CLUSTERED and _CLUSTERED[0][0]() is vertices and _CLUSTERED[0][1]() is faces and _CLUSTERED[0][2] == cells:
        return _CLUSTERED[0][3]
    v, f, _ = cluster_vertices(vertices, faces, cells)
    try:  # weak references: the cache does not keep a finished run's target alive
        _CLUSTERED[:] = [(weakref.ref(vertices), weakref.ref(faces), cells, (v, f))]
    except TypeError:  # not an ndarray: nothing to recognise it by
        pass
    return v, f


def mapped_area_fraction(target: Mesh, target_points: np.ndarray, tolerance: float,
                         fitted: np.ndarray | None = None) -> float:
    """Share of ``target``'s area whose vertices lie within ``tolerance`` of their mapped points.

    Parameters
    ----------
    target : the target mesh.
    target_points : (N, 3) where each target vertex's correspondence lands on the registered source.
    tolerance : distance in target units.
    fitted : (N,) bool, the target's fitted part (``Correspondence.target_solved``): the share
        is of its area (props and capes without a marker are carried along, not reached); None: all.
    """
    area = vertex_areas(target.vertices, target.faces)
    if fitted is not None and fitted.any():
        area = np.where(fitted, area, 0.0)
    close = np.linalg.norm(target.vertices - target_points, axis=1) <= tolerance
    total = float(area.sum())
    return float(area[close].sum() / total) if total > 0 else 0.0


def _distances(points: np.ndarray, mesh: Mesh) -> np.ndarray:
    from ..geometry.surface import closest_points

    return closest_points(points, mesh.vertices, mesh.faces)[2]


#: a point is in a gap when open rims of two pieces lie on opposite sides of it within this
#: many times its distance to the surface (a joint in the gap between two plates is about
#: as far from their rims as from their walls)
GAP_REACH = 1.5


def between_pieces(points: np.ndarray, distance: np.ndarray, mesh: Mesh) -> np.ndarray:
    """(K,) True where a point lies in a gap between pieces of ``mesh``.

    Armour plates, or a body cut at its joints, leave each joint in the gap between the
    open rims of two pieces: outside every piece (winding number 0.43 at the A-pose dev
    body's knees, cut 1.2 % of the height apart) although the character is whole there.
    Such a point has open rims of two different pieces within ``GAP_REACH`` times its
    ``distance`` to the surface, on opposite sides of it (their mean directions from it
    point apart), and around it (their centroid within half that distance: a point beside
    a gap, outside the limb, sees only the near arcs of the rims).

    Parameters
    ----------
    points : (K, 3); distance : (K,) their distances to the surface of ``mesh``.
    """
    from scipy.spatial import cKDTree

    out = np.zeros(len(points), dtype=bool)
    if len(points) == 0:
        return out
    v, f, _ = weld(mesh.vertices, mesh.faces)
    piece = vertex_components(len(v), f)
    if piece[f].max(initial=0) == piece[f].min(initial=0):
        return out  # one piece: no gaps between pieces
    rim = np.flatnonzero(boundary_vertices(len(v), f))
    if len(rim) == 0:
        return out
    tree = cKDTree(v[rim])
    for k, (p, d) in enumerate(zip(np.asarray(points, np.float64), distance)):
        near = rim[tree.query_ball_point(p, GAP_REACH * d)]
        if len(near) == 0 or np.linalg.norm(v[near].mean(axis=0) - p) > 0.5 * d:
            continue  # not surrounded by rims (beside a gap, outside the limb)
        sides = [v[near[piece[near] == q]].mean(axis=0) - p for q in np.unique(piece[near])]
        out[k] = any(a @ b < 0 for i, a in enumerate(sides) for b in sides[i + 1:])
    return out


def joints_outside_body(source: Rig, rig: Rig, tolerance: float, config: QualityConfig | None = None) -> tuple:
    """Joints clearly inside the source's body that end clearly outside the target's.

    ``tolerance``: a fraction of each mesh's height; joints closer than it to the surface
    (eyelids, finger joints, a root between the feet) count neither way, as their side of
    the skin is a matter of millimetres.  Returns ``(names, how many were clearly inside
    the source)``; the second is 0 when no joint is outside (the source's side is then
    computed for the joints clearly outside the target only).
    """
    if rig.skeleton.n_joints != source.skeleton.n_joints:
        return [], 0
    now = rig.skeleton.bind_world[:, :3, 3]
    candidates = np.flatnonzero(~inside(now, rig.mesh, config))
    if len(candidates):  # joints near the skin (fingers, eyes) are outside by a hair: not far out
        d = _distances(now[candidates], rig.mesh)
        far = d > tolerance * height(rig.mesh)
        candidates, d = candidates[far], d[far]
        candidates = candidates[~between_pieces(now[candidates], d, rig.mesh)]
    if len(candidates) == 0:  # the source's side is then not needed (its winding numbers: ~40 ms)
        return [], 0
    was = source.skeleton.bind_world[:, :3, 3]

    def clearly_inside(joints):
        p = was[joints]
        deep = _distances(p, source.mesh) > tolerance * height(source.mesh)
        deep[deep] = inside(p[deep], source.mesh, config)  # the winding numbers of the deep ones only
        return deep
    outside = candidates[clearly_inside(candidates)]
    if len(outside) == 0:
        return [], 0
    return [source.skeleton.names[j] for j in outside], int(clearly_inside(np.arange(len(was))).sum())


def assess(source: Rig, rig: Rig, target_points: np.ndarray, *, marker_residual_max: float, n_markers: int,
           config: QualityConfig | None = None, fit_distance: float = 0.0,
           head_shares: list | None = None, doubted_markers: list | None = None, facing_margin: float | None = None,
           target_unread: str | None = None, fitted_alone: bool = False, fitted: np.ndarray | None = None,
           carried: tuple = (None, None), marker_points: np.ndarray | None = None) -> QualityVerdict:
    """The ``quality`` section of a transfer report (and a one-line warning unless the verdict is ok).

    Parameters
    ----------
    source : the source rig; ``rig`` : the result (the target mesh, skinned).
    target_points : (N, 3) each target vertex's correspondence on the registered source.
    marker_residual_max : the fit's largest marker residual (target units).
    n_markers : how many markers linked the meshes.
    fit_distance : the mean distance between the registered source and the target, the larger
        of both ways (target units).
    head_shares : [source, target] head shares of the height when automatic markers linked them
        (``MarkerOrigin.head_shares``; None: hand markers, or not found).
    doubted_markers : names of the automatic markers of low confidence
        (``MarkerOrigin.low_confidence``): the rig is at least "check" with them.
    facing_margin : markers read off the source's fitted skin: the next turn's fit score over
        the chosen one's (``MarkerOrigin.facing_margin``); under ``facing_doubt_margin`` the
        way the target faces is in doubt: "check".
    target_unread : why the landmark rules read no two-legged layout in the target of a
        two-legged source (``MarkerOrigin.target_unread``), whose markers the fitted skin gave
        instead: "check" (KayKit's chibis so rigged are 0.1-4 %H off on average, their hands
        up to 5.5).
    fitted_alone : every marker was read off the source's skin fitted onto the target (no hand
        marker): "check" -- the fit follows the body's shape, not where its artist put the
        joints: the production and held-out creatures so rigged are 1.6-4.4 % of their size off
        on average, single joints up to 10 (tails, head tips, hips), twice what 60 hand markers
        leave.  A doubt about the method, not a symptom measured on the rig: it does not count
        toward ``doubts_poor``.
    fitted : (N,) bool, the target vertices the fit solved for (``Correspondence.target_solved``),
        or None (all).
    carried : (source, target) (n,) bool each, the vertices of pieces no marker fitted, not layers
        (``Correspondence.source_carried``, ``target_carried``), or None (none).
    marker_points : (K, 3) the markers' points on the target (None: none).
    """
    cfg = config or QualityConfig()
    # the body's height: a floor under the feet or a crate beside them, which no marker fits, is not the body
    body = rig.mesh.vertices if fitted is None or not np.any(fitted) else rig.mesh.vertices[np.asarray(fitted, bool)]
    h = max(float(np.ptp(body, axis=0).max()), 1e-300)
    residual, apart = 100.0 * marker_residual_max / h, 100.0 * fit_distance / h
    mapped = mapped_area_fraction(rig.mesh, target_points, cfg.mapped_distance_pct / 100.0 * h, fitted)
    outside, n_inside = joints_outside_body(source, rig, cfg.outside_tolerance_pct / 100.0, cfg)
    proportions = bones_out_of_proportion(source.skeleton, height(source.mesh), rig.skeleton, h,
                                          factor=cfg.proportion_factor, min_length=cfg.proportion_min_length)
    turned = feet_pointing_back(rig.skeleton, rig.mesh, reach=cfg.foot_reach)
    crossed = limbs_crossed(rig.skeleton, h, tolerance=cfg.crossing_tolerance)
    hanging = hanging_arms_unpinned(source.skeleton, rig.skeleton, np.zeros((0, 3)) if marker_points is None
                                    else marker_points, h, reach=cfg.hanging_pin_reach)
    unfitted = sorted(set(joints_on_carried_pieces(source, carried[0], share=cfg.carried_joint_share))
                      | set(joints_on_carried_pieces(rig, carried[1], share=cfg.carried_joint_share)))
    graded = {
        "residual": (_grade(residual, cfg.residual_check_pct, cfg.residual_poor_pct),
                     f"largest marker residual {residual:.2f} % of the height"),
        "fit": (_grade(apart, cfg.fit_check_pct, cfg.fit_poor_pct),
                f"the fitted source lies {apart:.2f} % of the height from the target on average: it did not take "
                "the target's shape (proportions the markers do not hold?)"),
        "reach": (_grade(-mapped, -cfg.mapped_check, -cfg.mapped_poor),
                  f"{100 * (1 - mapped):.1f} % of the target's area is not reached by the fit"),
        "outside": (0 if not outside else 2 if len(outside) >= cfg.outside_poor_fraction * max(n_inside, 1) else 1,
                    f"{len(outside)} joint(s) inside the source's body end outside the target's "
                    f"({', '.join(outside[:5])}{', ...' if len(outside) > 5 else ''})"),
        "few": (1 if n_markers < cfg.few_markers else 0,
                f"only {n_markers} markers: the alignment is barely constrained (at least {cfg.few_markers} advised)"),
        "heads": _proportion_doubt(head_shares, cfg.proportion_doubt_ratio),
        # the warning says "check them": a rig fitted to them is no better (a held-out girl's
        # sleeve-ended right hand: its fingertips one finger off, the rig otherwise 'ok')
        "doubted": (1 if doubted_markers else 0,
                    f"automatic markers of low confidence ({', '.join((doubted_markers or [])[:6])}"
                    f"{', ...' if len(doubted_markers or []) > 6 else ''}): check them, or place them by hand"),
        "facing": (1 if facing_margin is not None and facing_margin < cfg.facing_doubt_margin else 0,
                   f"the target's facing is in doubt: the source's skin fits it in another turn nearly as well "
                   f"({facing_margin or 0:.3f} times the distance): check that the rig faces the body's front"),
        "unread": (1 if target_unread else 0,
                   f"the target reads as no standing two-legged body ({target_unread}): the markers were read off "
                   "the source's skin fitted onto it; check the rig, or give markers"),
        "fitted": (1 if fitted_alone and not target_unread else 0,
                   "the markers were read off the source's skin fitted onto the target (no landmark rules for this "
                   "body plan): the fit follows the body's shape, not where its artist would put the joints; check "
                   "the rig (tails, head tips, hips), or give markers"),
        **_shape_checks(source, rig, cfg, proportions, turned),
        "carried": (1 if unfitted else 0,
                    f"{', '.join(unfitted[:6])}{', ...' if len(unfitted) > 6 else ''} skinned mostly on pieces no "
                    "marker fitted (carried along, not fitted): place markers on them or join them to the body"),
        "hanging": (1 if hanging else 0,
                    f"the arms hang beside the body and no marker holds their elbows ({', '.join(hanging)}): the fit "
                    "slides along an arm lying on the body; check the elbows and wrists, or place markers on the elbows"),
        "crossed": (2 if crossed else 0, f"{', '.join(crossed)} {'lies' if len(crossed) == 1 else 'lie'} on the other "
                                         "side of the body than the name says: markers swapped left and right on a limb?"),
    }
    level = max(g for g, _ in graded.values())
    reasons = [text for g, text in graded.values() if g > 0]
    doubts = _doubts(graded)
    if doubts >= cfg.doubts_poor:
        # each measure alone tells little; so many at once, the rig is most likely wrong
        level = 2
        reasons.append(f"{doubts} measures doubt the rig at once")
    quality = QualityVerdict(verdict=LEVELS[level], reasons=reasons, marker_residual_pct_height=residual,
                             mapped_area_fraction=mapped, fit_distance_pct_height=apart,
                             joints_outside_body=outside,
                             bones_out_of_proportion=proportions, feet_pointing_back=turned,
                             limbs_crossed=crossed, joints_on_carried_pieces=unfitted, hanging_arms=hanging)
    if level:
        log.warning("result quality '%s': %s; check the rig before use", LEVELS[level], "; ".join(reasons))
    return quality


def _shape_checks(source: Rig, rig: Rig, cfg: QualityConfig, proportions: list, turned: list) -> dict:
    """``name -> (grade, reason)`` of the checks against the source's proportions and the
    target's shape (:mod:`~asetransfer.stages.plausibility`): toes pointing back are "poor"
    (the rig is turned or mirrored in the body), bones out of proportion "check", "poor" from
    ``proportion_poor_fraction`` of the judged bones."""
    judged = max(int((source.skeleton.parents >= 0).sum()), 1)
    return {
        "turned": (0 if not turned else 2,
                   f"the toe joints point to the heels ({', '.join(turned)}): the rig is turned or mirrored in the body"),
        "proportions": (0 if not proportions else 2 if len(proportions) >= cfg.proportion_poor_fraction * judged else 1,
                        f"{len(proportions)} bone(s) more than {cfg.proportion_factor:g}x longer or shorter than the "
                        f"source's for the body's height ({', '.join(proportions[:5])}"
                        f"{', ...' if len(proportions) > 5 else ''})"),
    }


def _doubts(graded: dict) -> int:
    """How many independent measures of ``graded`` (name -> (grade, reason)) are at "check":
    the fit's distance and the area it does not reach say one thing, that the fitted source
    did not take the target's shape, and count once (props the source has no surface for
    raise both: a KayKit Mage holding its weapons, rigged 0.3 %H off with ray markers); the
    fitted markers' doubt is the method's, on every such rig, and does not count."""
    checks = {name for name, (g, _) in graded.items() if g == 1} - {"fitted"}  # the method's doubt, not a symptom
    return len(checks) - ({"fit", "reach"} <= checks)


def _proportion_doubt(head_shares: list | None, ratio: float) -> tuple:
    """``(grade, reason)``: "check" when automatic markers linked heads ``ratio`` times apart in
    their share of the height (``head_shares``, source and target)."""
    if not head_shares or None in head_shares or min(head_shares) <= 0:
        return 0, ""
    apart = max(head_shares) / min(head_shares)
    return (1 if apart >= ratio else 0,
            f"automatic markers between bodies of other proportions (the head {100 * head_shares[0]:.0f} % of the "
            f"source's height, {100 * head_shares[1]:.0f} % of the target's): joints are placed in proportion; "
            "hand markers where the target's joints belong are advised")


def _grade(value: float, check: float, poor: float) -> int:
    """0 (ok), 1 (check) or 2 (poor): ``value`` above ``check``, above ``poor``."""
    return 2 if value > poor else 1 if value > check else 0


def plane_offset(plane, mesh: Mesh) -> float:
    """Distance from ``mesh``'s bounding-box centre to ``plane`` (a, b, c, d: a x + b y + c z = d),
    as a fraction of the mesh's height."""
    n = np.asarray(plane[:3], np.float64)
    norm = float(np.linalg.norm(n))
    lo, hi = mesh.bounds()
    return abs(float(n @ (0.5 * (lo + hi))) - float(plane[3])) / norm / max(height(mesh), 1e-300)
