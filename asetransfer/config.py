"""All tunable parameters in one place, with where each default comes from.

Lengths are fractions of the target's bounding-box diagonal (the box along the source's
axes): the correspondence works in a normalised frame, so the same parameters serve
characters modelled in centimetres or metres, turned any way.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

#: joints per vertex a rig may carry: glTF's two JOINTS/WEIGHTS sets of four (the one rule,
#: checked by :func:`check_max_influences` wherever a count is given)
MAX_INFLUENCES = 8


def check_max_influences(count: int) -> int:
    """``count`` if it is a whole number of influences from 1 to :data:`MAX_INFLUENCES`, else ValueError."""
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_INFLUENCES:
        raise ValueError(f"max_influences must be a whole number from 1 to {MAX_INFLUENCES} (got {count!r})")
    return count


@dataclass(frozen=True)
class CorrespondenceConfig:
    """Dense correspondence (spec Appendix I, Eq. A I-1 and A I-2)."""

    # Fairing, Eq. A I-1: a (smoothness), b (markers pulled together), c (marker
    # midpoints kept).  Markers must dominate so both meshes are faired onto the
    # same marker positions; see docs/correspondence.md for the sweep.
    fair_smoothness: float = 1.0        # lambda_1
    fair_marker_link: float = 1e4       # lambda_2
    fair_marker_anchor: float = 1e4     # lambda_3
    # Registration, Eq. A I-2: a (Laplacian detail), b (closest-point fit), c (markers).
    register_detail: float = 1e-6       # mu_1
    register_fit: float = 1.0           # mu_2
    register_markers: float = 1.0       # mu_3
    # glued pieces move together: the bridges (rows e_i - e_j on the displacement) share
    # this total weight, as the markers share mu_3 (our addition; before, a marker's
    # weight each).  Robot fixture source (tests/robot.py: 11.5k bridges) onto the heavy
    # fixture, body joints vs the one-piece source's rig, mean / max %H with its 46 hand
    # markers | the one-piece source's 20 automatic markers: a marker's weight each
    # 0.28 / 0.52 | 0.64 / 1.55; total 250: 0.27 / 0.49 | 0.56 / 1.47; 100: 0.21 / 0.41 |
    # 0.57 / 1.55; 50: 0.18 / 0.38 | 0.61 / 1.71; 25: 0.17 / 0.36 | 0.71 / 1.91; 1:
    # 0.17 / 0.39 | 1.05 / 2.86.  Few markers need the glue, many are held back by it
    register_glue: float = 100.0
    # closest-point iterations per registration stage, and the convergence test:
    # mean vertex move between iterations below this fraction of the diagonal
    # stage 1: faired source onto faired target (3 before stage 2 began on the proxies;
    # since, 2 keep the 12 dev runs' scorer numbers within 2 % of 3 and the automatic-
    # marker ratios within 0.01, one closest-point search fewer on the slow faired shapes)
    faired_iterations: int = 2
    max_iterations: int = 15     # stage 2: onto the original target
    # of which, with a source proxy (fair_proxy_vertices below), the first coarse_iterations
    # register the proxy as modelled onto the target's proxy (our addition, for speed: a
    # proxy iteration queries 4k points instead of 13k).  10 of 15 keep the 12 dev runs'
    # scorer numbers within 2 %; 5 and 8 of 13-14 moved the heavy male's dense joints by
    # 5 % and 2 % (with 5k proxies; docs/benchmarks.md, "Scale")
    coarse_iterations: int = 10
    tolerance: float = 2e-5
    # stage 2 in levels of decreasing stiffness: factors on mu1, max_iterations shared
    # equally (our addition, after Amberg et al. 2007; () = one level at mu1, the spec).
    # Transfers with automatic markers use automatic_stiffness (below); the default keeps
    # every other registration as the spec has it
    register_stiffness: tuple = ()
    # the levels when register_stiffness is () and either side holds markers on several
    # pieces (a body cut at the joints, armour plates): where no marker holds a piece it
    # slides along itself; a stiff start lets the source's whole surface place it.  Dev
    # bodies cut at neck, waist, knees and shoulders (bench_markers --dress cut), body / weights
    # error: automatic markers d01 0.89 / 0.108 -> 0.69 / 0.080, d02 0.65 / 0.080 -> 0.55 / 0.066;
    # hand markers d01 0.62 / 0.076 -> 0.58 / 0.071, d02 0.52 / 0.055 -> 0.51 / 0.052.  () = off
    glued_stiffness: tuple = (100.0, 10.0, 1.0)
    # closest-point pairs farther than this (fraction of the diagonal) or with
    # normals more than this many degrees apart do not pull (Eq. A I-2b)
    reject_distance: float = 0.05
    reject_angle: float = 60.0
    # Large targets (our addition, for speed): a target whose marked part has more than
    # proxy_above vertices is registered (stage 2) on a decimated proxy of proxy_vertices
    # vertices (geometry/decimate.py); the fairing and the first iterations run on smaller
    # proxies anyway (fair_proxy_vertices below) and the maps use the full target.  10k,
    # 15k and 20k proxies all keep the scores of the 13k target (docs/benchmarks.md,
    # "Scale"); 10k is the smallest that does (8k: weight error +1.8 % on the 50k d01
    # target).  Below 100k vertices the proxy costs more than it saves: a 50k target's
    # correspondence took 1.09 s with it and 1.03 s searching the target itself (decimating
    # 50k -> 10k takes 0.13 s, a search tree of the 50k target 0.05 s).  proxy_vertices = 0:
    # never (every target registered as it is).
    proxy_vertices: int = 10000
    proxy_above: int = 100000
    # The fairing (Eq. A I-1) and stage 1 of the registration run on proxies of
    # fair_proxy_vertices vertices of each side whose marked part has more than
    # fair_proxy_above (our addition, for speed): their smooth shapes only start stage 2,
    # which registers the source as modelled onto the target.  On the 12 dev runs
    # (13k-20k sides), with coarse_iterations above, 4k proxies keep every scorer number
    # within 2 % of the full fairing (5k: d05 sparse weight error +2.9 %; 3k proxies for
    # the fairing alone moved the A-pose male's dense joints by 14 %; docs/benchmarks.md,
    # "Scale").  fair_proxy_vertices = 0: never.
    fair_proxy_vertices: int = 4000
    fair_proxy_above: int = 8000
    # Appendix I, last part: average each map with the mirror of the mirrored map
    symmetric: bool = False
    # coincident vertices (seams) are merged within this fraction of the diagonal
    weld_tolerance: float = 1e-7
    # pieces closer than this fraction of the diagonal (armour plates, a body cut at the
    # joints; layers over the body are not: see layer_distance) are solved together, held at their
    # offsets by glue edges where they come close; pieces farther away (props) and
    # pieces glued to no marked piece ride along as before (our addition; 0: off)
    piece_gap: float = 0.01
    # fairing (Eq. A I-1a) sees across the gaps between glued pieces: the Laplacian rows
    # of their cut boundaries take the vertices across the gap as the missing half of the
    # umbrella, so a body cut at the joints is smoothed like the whole body instead of
    # each piece shrinking from its open cuts (our addition; False: one-sided rows).
    # At every glued gap: one-sided rows on pieces that hold markers only at one end
    # (an arm with its five fingertips) put the cut dev bodies' trunks 9-15 cm off
    fair_across_gaps: bool = True
    # a piece within piece_gap of a larger one is a layer over it, not glued (joint covers,
    # clothes, hair, eyes: they ride along with the body), when at least layer_fraction of
    # its area lies within layer_distance (fraction of the diagonal) of the larger pieces
    # straight above or below them (offset within layer_angle degrees of their normal); a
    # body cut at the joints meets its neighbours rim to rim, offset along the surface
    # (layer_distance 0: off).
    # Measured on the heavy fixture: the covers, shirt, hair and eyes of tests/dressing.py
    # have 0.95-1.0 of their area over the body, every piece of the body cut at neck, waist,
    # shoulders and knees (test_landmarks._cut_into_pieces, 158 and 262 pieces) 0, so the
    # split does not hinge on the values: 3 % of the diagonal is a thick garment (the shirt
    # is 1.2 %H out), 45 deg and a half leave room either side (geometry/pieces.py; the
    # landmark search leaves the same layers out)
    layer_distance: float = 0.03
    layer_angle: float = 45.0
    layer_fraction: float = 0.5
    # a piece within piece_gap of a larger one also rides along when at least layer_hanging
    # of its area is farther than layer_distance from it: it hangs off the body rather than
    # continue it (hair cards rooted on the scalp, a prop held in a hand; above 1: off).
    # Measured: 300 cards (1 x 12 %H) on d01, the 45 not already layers have 0.5-0.74 of
    # their area that far; the robot's plates (tests/robot.py) and the cut bodies' pieces
    # continue each other rim to rim (one surface, none larger) and the covers, shirt, hair
    # cap and eyes have 0-0.04, so a quarter leaves room either side
    layer_hanging: float = 0.25
    # warn when more than this fraction of a surface's area lies in pieces without a
    # marker: those pieces are not fitted, only carried along (our addition)
    unmarked_area_warning: float = 0.1
    # a marker given as a point is snapped to the closest surface point; farther than
    # this fraction of the mesh's bounding-box diagonal it is rejected as placed in
    # another frame or unit (our addition; the marker loader, io/markers.py, uses this
    # default: markers are loaded before a Config is at hand)
    marker_snap_distance: float = 0.05
    # register_stiffness of every pass when any marker is automatic (and register_stiffness
    # is ()): the automatic markers hold only the extremities, the crotch and the head, and
    # the faired shapes slide the trunk and limbs along themselves (0.3 % of the height on
    # d05_apose_male); a stiff level lets the source's whole surface place them, then the
    # spec's stiffness fits the details (our addition; docs/benchmarks.md, "Automatic
    # markers" and session 19).  In the pose-matched passes (session 15, then (100, 10, 1)):
    # d05 auto/hand body 1.38 -> 1.15, weights 1.39 -> 1.12.  In first passes too, and
    # (100, 10, 1) -> (100, 1) in both (session 19), auto/hand body / weights: d01 1.14 / 1.22
    # -> 0.97 / 1.10, d03 1.09 / 1.19 -> 0.94 / 1.08, d04 1.16 / 1.23 -> 0.92 / 1.11, d06
    # 1.21 / 1.25 -> 1.03 / 1.11, d02 1.10 / 1.22 -> 1.11 / 1.24, d05 1.12 / 1.09 -> 1.12 /
    # 1.10; d02 as a T-pose target 1.21 / 1.29 -> 1.19 / 1.24, d05 cut into pieces 1.37 / 1.48
    # -> 1.27 / 1.30.  The heavy male's trunk fits worse with any stiffer or longer first
    # pass: (100, 10, 1) and (1000, 100, 10, 1) 1.27, 30 one-level iterations 1.37.  () = off.
    automatic_stiffness: tuple = (100.0, 1.0)

    def __post_init__(self):
        for name in ("fair_smoothness", "fair_marker_link", "fair_marker_anchor", "register_detail",
                     "register_fit", "register_markers", "register_glue", "tolerance", "reject_distance"):
            if not getattr(self, name) > 0:
                raise ValueError(f"correspondence parameter {name} must be positive")
        if (self.max_iterations < 1 or self.faired_iterations < 0
                or not 0 <= self.coarse_iterations < self.max_iterations):
            raise ValueError("correspondence iteration counts must be at least 1 (stage 2) and 0 (stage 1), "
                             "and coarse_iterations below max_iterations")
        for size, above in (("proxy_vertices", "proxy_above"), ("fair_proxy_vertices", "fair_proxy_above")):
            if getattr(self, size) < 0 or getattr(self, above) < getattr(self, size):
                raise ValueError(f"{size} must be >= 0 and {above} at least {size}")
        if not (self.layer_distance >= 0 and 0 <= self.layer_angle <= 90 and 0 < self.layer_fraction <= 1
                and self.layer_hanging > 0):
            raise ValueError("layer_distance must be >= 0, layer_angle in [0, 90] and layer_fraction in (0, 1] "
                             "(layer_distance 0: no layers, every piece within piece_gap glued)")
        if not 0 < self.reject_angle <= 180:
            raise ValueError("correspondence parameter reject_angle must be in (0, 180]")
        for name in ("register_stiffness", "glued_stiffness", "automatic_stiffness"):
            levels = getattr(self, name)
            if not all(isinstance(v, (int, float)) and math.isfinite(v) and v > 0 for v in levels) \
                    or len(levels) > self.max_iterations:
                raise ValueError(f"correspondence parameter {name} must be positive factors on register_detail, "
                                 f"at most max_iterations of them")
        if not self.marker_snap_distance > 0 or not 0 <= self.unmarked_area_warning <= 1:
            raise ValueError("marker_snap_distance must be positive and unmarked_area_warning in [0, 1]")


@dataclass(frozen=True)
class PoseConfig:
    """Pose matching (beyond spec §5.1, which assumes both characters stand in the same pose):
    the source posed by its own rig like the target and registered again (stages/pose.py,
    stages/transfer.py)."""

    # a limb bone of the first transfer more than this many degrees from the source's starts
    # pose matching: same-pose bodies differ by at most ~7 deg (the dev set's elbows), the
    # A-pose dev male by 30
    match_angle: float = 12.0
    # at most this many posed registrations, fewer once the pose read from the placed
    # skeleton moves less than match_tolerance degrees between passes: on the fixture with
    # arms lowered 40 deg the joints come within 2.8 / 0.6 / 0.3 mm after 1 / 2 / 3
    match_passes: int = 3
    match_tolerance: float = 1.0

    def __post_init__(self):
        if not 0 < self.match_angle <= 180 or self.match_passes < 1 or not self.match_tolerance > 0:
            raise ValueError("pose matching needs an angle in (0, 180] degrees (180: never), passes >= 1 "
                             "and a positive tolerance")


@dataclass(frozen=True)
class SkeletonConfig:
    """Skeleton transfer (spec Ch. 3)."""

    joints: str = "em"                  # "em" (§3.1.1, Eq. 3.1-3.2) or "pa" (§3.1.2)
    omega: tuple = (1000.0, 1.0, 10.0)  # Eq. 3.1a-c weights, as in Avril et al. 2016
    # Eq. 3.1a compares lengths in this fraction of the target's height: the omegas
    # were tuned on human-size characters in centimetres (1/170 of a 1.7 m body)
    em_unit: float = 1.0 / 170.0
    # EM also sees the surface around each joint: the first hits of em_rays rays cast
    # from it (our addition; 0 = the spec's skin-weighted vertices only).  Joints with
    # no weighted vertex (a hips root) are then placed from their hits, not by PA.
    em_rays: int = 64
    # upper bound of em_rays: 4096 directions already sample the sphere every ~3.2 degrees,
    # far finer than any limb; the ray buffers grow with joints x rays x faces hit, so an
    # unbounded count (1e8) exhausts memory instead of improving anything
    em_rays_max: int = 4096
    em_ray_share: float = 0.0           # prior mass of the hits for joints with weights
    # a joint is enclosed by the surface (and its hits used) when at least this fraction
    # of its rays hit; otherwise it lies outside the mesh or at an open end (our addition)
    em_min_hit_fraction: float = 0.9
    pa_threshold: float = 0.01          # §3.1.2: weight above which a vertex joins the cloud
    # a source in rigidly weighted pieces (hard-surface plates, every vertex of a piece
    # within rigid_tolerance of 100 % to one bone) has its joints fitted with those pieces'
    # weights averaged over the surface around them, across the gaps, with a Gaussian
    # rigid_blend of the body's height wide (cut at rigid_blend_reach widths; 0 = off): a
    # plate says where its bone is, not where along the cut to the next plate its joint
    # lies, and smooth weights fade across the joint (stages/joints.blend_weights).  Robot
    # source of tests/robot.py (3 plates a segment, covers) onto the heavy fixture, body
    # joints vs the one-piece source, mean / max %H: off 0.193 / 0.426 (clavicles, neck),
    # 0.01: 0.157 / 0.296, 0.0125: 0.154 / 0.284, 0.015: 0.151 / 0.291, 0.0175: 0.149 / 0.299,
    # 0.02: 0.148 / 0.302 (the forearms left, where the carried elbow marker moved 0.6 %H);
    # reach 3 instead of 2: 0.150 / 0.290 at 0.01, worse from 0.015 up (0.308, 0.317 at
    # 0.02: the clouds reach farther along the limbs).  With 2 / 4 plates a segment, 3 %
    # gaps, 3 % overlaps, no covers, whole segments without covers: 0.136 / 0.248,
    # 0.164 / 0.393, 0.153 / 0.323, 0.141 / 0.266, 0.159 / 0.328, 0.138 / 0.271 (the code
    # before: 0.197 / 0.427, 0.212 / 0.506, 0.209 / 0.434, 0.202 / 0.410, 0.194 / 0.424,
    # 0.175 / 0.397).  One-piece sources have no rigid piece on their fitted surface
    rigid_blend: float = 0.015
    rigid_blend_reach: float = 2.0
    rigid_tolerance: float = 1e-4
    # joints that share a position in the source (within this fraction of the skeleton's
    # size) are placed together and stay together (our addition; hips -> spine + pelvis)
    keep_coincident: bool = True
    coincident_tolerance: float = 1e-5
    spine: str = "em"                   # §3.1.3: "em" (Table 3.1), "pa" or "off"
    spine_joints: tuple | None = None   # names root..head; default: detected root -> head path
    mirror: str = "auto"                # §3.1.4: "auto" (when the target is symmetric), "on", "off"
    symmetry_plane: tuple | None = None  # (a, b, c, d) with a x + b y + c z = d; default: estimated
    # Gauss-Newton steps of the estimated plane's point-to-plane ICP on the target's own
    # reflection (§3.1.4 needs the plane; geometry/symmetry.py; it stops earlier when
    # a step no longer moves the plane, by 1e-9)
    symmetry_iterations: int = 30
    # "auto" mirrors when the target matches its own reflection to this fraction of its height
    symmetric_tolerance: float = 0.005
    # §3.3: rest pose = the source's limb directions.  Off by default: the rest pose is
    # then the bind pose as modelled, which is what DCC tools and validators expect
    # (with it on, Blender shows the normalised pose as a pose on the bones), and the
    # posed-surface error against a ground truth rigged as modelled is 3-5x lower
    # (docs/benchmarks.md).  Turn it on to play source motions by copying local rotations.
    pose_normalize: bool = False
    # Orientation (stages/orientation.py, beyond Alg. 2): a bone with several children
    # aims at the one lying within aim_tolerance degrees of a local axis in the source
    aim_tolerance: float = 1.0
    # a bone's roll follows the plane of three joints of its chain when, in the source,
    # the plane's normal lies on a local axis within roll_plane_tolerance degrees (plane
    # rules are exact in the rigs that use them: float32 files keep them to ~1e-5 deg;
    # looser, chance planes match), the plane bends by at least roll_plane_min_bend
    # degrees, and following it turns the bone at most roll_plane_max_turn degrees
    # from Alg. 2's estimate; roll_planes=False keeps Alg. 2's roll everywhere
    roll_planes: bool = True
    roll_plane_tolerance: float = 0.01
    # the plane's joints are up to this many bones up or down the chain: a human arm is
    # 4-7 bones from clavicle to wrist, and MakeHuman rolls all of them to the elbow's
    # plane (reach 3: d01 posed local 0.532 %H, 5: 0.485; 6 finds chance planes)
    roll_plane_reach: int = 5
    roll_plane_min_bend: float = 5.0
    # and its middle joint lies at least this fraction of the skeleton's size off the line
    # through the other two (a plane tilts by placement error / that distance: fingers'
    # curl planes, a few mm high, made our fixture's fingers 3-9 degrees worse)
    roll_plane_min_height: float = 0.01
    roll_plane_max_turn: float = 45.0
    # a bone whose roll keeps a world axis across it in the source (to roll_plane_tolerance;
    # Maya's Orient Joint with a world up, Blender's roll 0) keeps the target's matching
    # axis instead (before any plane): the alignment's rotation, snapped to the file's
    # axes when within roll_axis_snap degrees of them
    roll_world_axes: bool = True
    roll_axis_snap: float = 5.0

    def __post_init__(self):
        if self.joints not in ("em", "pa"):
            raise ValueError("joints must be 'em' or 'pa'")
        if not 0 <= self.em_rays <= self.em_rays_max or not 0.0 <= self.em_ray_share <= 1.0:
            raise ValueError(f"em_rays must be in 0..{self.em_rays_max} and em_ray_share in [0, 1]")
        if self.symmetry_plane is not None and not (len(self.symmetry_plane) == 4
                                                    and all(math.isfinite(v) for v in self.symmetry_plane)
                                                    and any(self.symmetry_plane[:3])):
            raise ValueError("symmetry_plane must be 4 finite numbers a, b, c, d with (a, b, c) not zero")
        if not 0.0 <= self.em_min_hit_fraction <= 1.0:
            raise ValueError("em_min_hit_fraction must be in [0, 1]")
        if self.symmetry_iterations < 0:
            raise ValueError("symmetry_iterations must be >= 0")
        if self.spine not in ("em", "pa", "off"):
            raise ValueError("spine must be 'em', 'pa' or 'off'")
        if self.roll_plane_reach < 1:
            raise ValueError("roll_plane_reach must be >= 1")
        if self.mirror not in ("auto", "on", "off"):
            raise ValueError("mirror must be 'auto', 'on' or 'off'")
        if self.rigid_blend < 0 or self.rigid_blend_reach <= 0 or not 0 <= self.rigid_tolerance < 0.5:
            raise ValueError("rigid_blend must be >= 0, rigid_blend_reach > 0 and rigid_tolerance in [0, 0.5)")


@dataclass(frozen=True)
class WeightsConfig:
    """Skin-weight transfer (spec Ch. 2, last step)."""

    # "interp" (spec), "robust" (Abdrashitov et al. 2023), or "auto": robust for a target
    # in several pieces (props, clothing, covers: a sword in the hand took the thigh's
    # weights with interp, 97.5 % forearm with robust), interp for one piece (the same
    # errors on the dev bodies, 0.3 s less at 13k vertices)
    method: str = "auto"
    # glTF JOINTS_0/1; 4 for engines that need it.  The library's one rule: 1 to 8
    max_influences: int = 8
    prune: float = 1e-3         # weights below this are dropped (then renormalised)
    # robust mode: a target vertex keeps its interpolated weights only if its source
    # point is nearer than this fraction of the body's bounding-box diagonal (its fitted
    # pieces, not props and layers riding along) and the
    # normals are less than this many degrees apart (the paper's defaults: 0.05, 30);
    # the rest are inpainted, then relaxed by this many neighbour-averaging steps
    robust_distance: float = 0.05
    robust_angle: float = 30.0
    smooth_iterations: int = 10
    # robust mode: a piece of the target with no accepted vertex (a prop) takes the mean
    # weights of this many accepted vertices where it comes closest (our addition)
    contact_neighbours: int = 8

    def __post_init__(self):
        if self.method not in ("auto", "interp", "robust"):
            raise ValueError("weights method must be 'auto', 'interp' or 'robust'")
        check_max_influences(self.max_influences)
        if not (self.robust_distance > 0 and 0 < self.robust_angle <= 180 and self.smooth_iterations >= 0):
            raise ValueError("robust weights need distance > 0, 0 < angle <= 180 and smoothing steps >= 0")
        if self.contact_neighbours < 1:
            raise ValueError("robust weights need contact_neighbours >= 1")


@dataclass(frozen=True)
class MarkersConfig:
    """Automatic markers: landmarks found by the same geometric rules on both characters
    (our addition, beyond the spec's hand-placed markers; asetransfer/humanoid/landmarks.py)."""

    # "auto": find markers when none are given and complete a hand marker file of fewer
    # than `complete_below` markers; "on": always add automatic markers to hand ones;
    # "off": hand markers only (an error when there are none)
    automatic: str = "auto"
    complete_below: int = 12
    # pieces (eyes, clothing, armour plates) closer than this fraction of the largest
    # bounding-box side are joined for geodesics: a gap of 2 % bridges joint covers and
    # layered clothing, not the space between the legs
    bridge_gap: float = 0.02
    # a tip (head, hand, foot) is the farthest point from the middle of the body within
    # this geodesic radius (fraction of the largest side): larger than a hand's spread of
    # fingers (~0.06), smaller than the head-to-hand distance over the shoulder (~0.45)
    extremity_radius: float = 0.15
    # an automatic marker whose target point is this close (fraction of the body height)
    # to a hand marker's gives way to it: hand markers win
    hand_radius: float = 0.03
    # automatic markers below this confidence are named in a warning
    warn_confidence: float = 0.5
    # a character with more than twice as many vertices is searched on a copy simplified to
    # this many, and its landmarks moved to its own surface: d01 at 200k vertices 3.0 -> 2.2
    # s, at 1M 15.9 -> 3.7 s, landmarks within 0.03 / 0.10 %H of the full search's on
    # average (docs/benchmarks.md)
    search_vertices: int = 50_000
    # the crotch is no marker when one character's legs part below this fraction of the
    # other's leg height (crotch height / body height): there the legs part at a skirt's or
    # robe's hem joined to the body, not at a crotch.  Ratios measured: 0.97-1.07 on the dev
    # cases and fixtures, 0.72-0.78 for the cartoon fixture and a stocky Blender body, 0.51
    # for the heavy fixture in a skirt to the knees (its crotch at the hem put the hips 16
    # %H low; without it 0.9 %H)
    crotch_height_ratio: float = 0.6

    def __post_init__(self):
        if self.automatic not in ("auto", "on", "off"):
            raise ValueError(f"automatic markers must be auto, on or off (got {self.automatic!r})")
        if self.complete_below < 0:
            raise ValueError("complete_below must be >= 0")
        if self.search_vertices < 1000:
            raise ValueError("search_vertices must be >= 1000")
        for name in ("bridge_gap", "extremity_radius", "hand_radius"):
            if not 0 < getattr(self, name) < 1:
                raise ValueError(f"marker parameter {name} must be in (0, 1)")
        if not 0 <= self.warn_confidence <= 1:
            raise ValueError("warn_confidence must be in [0, 1]")
        if not 0 <= self.crotch_height_ratio <= 1:
            raise ValueError("crotch_height_ratio must be in [0, 1]")


@dataclass(frozen=True)
class QualityConfig:
    """Plausibility of the inputs and the verdict on a result (our addition, issue 16).

    A wrong answer written with exit 0 is worse than an error: what the tool can tell is
    wrong is refused, what it cannot tell is reported as ``quality`` ("ok", "check",
    "poor") with its reasons, for a batch script to act on.  Lengths are percentages of
    the target's height (the largest extent of its bounding box).
    """

    # marker spreads: the RMS distance of the markers from their centroid, as a fraction
    # of each mesh's size, must agree between source and target (the same markers sit on
    # the same body parts).  Beyond a factor 5 the points were given in other units or
    # frames (metres on a centimetre target: factor 100; points collapsed near the origin):
    # refused.  Beyond a factor 2, warned (a very different body, or a marker misplaced).
    marker_spread_refuse: float = 5.0
    marker_spread_warn: float = 2.0
    # with fewer markers the alignment is barely constrained (3 markers on the midline
    # leave the turn about them free): warned, the result must be checked
    few_markers: int = 6
    # the largest marker residual after the fit: 0.6-0.85 % of the height on the dev cases
    # (d01, d05, d06 with their sparse markers); three times that is "check", seven "poor"
    residual_check_pct: float = 2.5
    residual_poor_pct: float = 6.0
    # a target vertex is "mapped" when the registered source passes within this % of the
    # height of it: the registration stops pulling pairs farther apart than its reject
    # distance (5 % of the diagonal), so farther area was not fitted at all.  The dev cases
    # and fixtures map all their area at 5 % (the cartoon fixture, a good result with
    # 0.5 cm mean joint error, has 13 % of its area between 2 and 5 %: closer is too strict).
    # The area fractions below which the verdict drops (props and clothing are
    # legitimately unmapped: "check")
    mapped_distance_pct: float = 5.0
    mapped_check: float = 0.9
    mapped_poor: float = 0.7
    # joints inside the source's body (winding number >= 0.5) that end outside the
    # target's: any is "check"; this fraction of the joints inside the source is "poor".
    # Joints within outside_tolerance_pct of the surface count neither way: on the dev
    # cases eyelid, cheek, finger and root joints sit within 0.5 % of the height of the skin
    # and change side with millimetres of fit; a misplaced joint is off by several %
    outside_poor_fraction: float = 0.1
    outside_tolerance_pct: float = 1.0
    # (our addition, for speed) a mesh of more than inside_exact_faces triangles is tested
    # for the joints' sides on a vertex clustering of inside_cells cells: the winding
    # numbers' set-up over every triangle took 3.6 s of a 1M-vertex target's run, the
    # clustering 1.0 s plus 0.5 s; its cells (~4 mm on a body, the copy within ~7 mm) are
    # below outside_tolerance_pct (~17 mm), so only joints that count neither way can
    # change side (1M d01: 0-3 of 163 joints, all within 0.3 mm of the surface)
    inside_exact_faces: int = 400_000
    inside_cells: int = 100_000
    # a --symmetry-plane farther from the target's centre than this fraction of its
    # height does not cut the body: refused (it would mirror joints off the body)
    plane_offset_refuse: float = 0.25

    def __post_init__(self):
        if not (1.0 <= self.marker_spread_warn <= self.marker_spread_refuse
                and 0 < self.residual_check_pct <= self.residual_poor_pct
                and 0 <= self.mapped_poor <= self.mapped_check <= 1 and self.mapped_distance_pct > 0
                and 0 < self.outside_poor_fraction <= 1 and self.outside_tolerance_pct >= 0 and self.plane_offset_refuse > 0 and self.few_markers >= 3):
            raise ValueError("quality thresholds must be ordered (warn <= refuse, check <= poor) and positive")
        if self.inside_exact_faces < 0 or self.inside_cells < 1:
            raise ValueError("inside_exact_faces must be >= 0 and inside_cells >= 1")


@dataclass(frozen=True)
class Config:
    """Parameters of the whole transfer."""

    correspondence: CorrespondenceConfig = field(default_factory=CorrespondenceConfig)
    skeleton: SkeletonConfig = field(default_factory=SkeletonConfig)
    weights: WeightsConfig = field(default_factory=WeightsConfig)
    markers: MarkersConfig = field(default_factory=MarkersConfig)
    quality: QualityConfig = field(default_factory=QualityConfig)
    pose: PoseConfig = field(default_factory=PoseConfig)

    def replace(self, **changes) -> "Config":
        return replace(self, **changes)
