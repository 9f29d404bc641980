"""Every tunable parameter, once, in the section of the stage that reads it, with the
equation or measurement that set its default (docs/benchmarks.md has the figures).

Each field's comment opens with its unit in brackets.  Lengths are relative, so the same
parameters serve characters in centimetres or metres, turned any way, in one of:

* ``[diagonal]``: a fraction of the target's bounding-box diagonal (the box along the
  source's axes; the correspondence works in this normalised frame);
* ``[height]``: a fraction of the character's height, ``[% height]`` a percentage of it;
* ``[largest side]``: a fraction of the bounding box's largest side (the landmark search,
  before any frame is known);
* ``[skeleton size]``: a fraction of the source skeleton's extent.

Angles are in degrees (``[deg]``); counts say what they count.
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


def influence_limit(count: int | None, source_max: int) -> int:
    """The joints per vertex a rig keeps: ``count`` when one is given (checked by
    :func:`check_max_influences`), else the source's: its own maximum ``source_max``, and 4
    when it uses at most 4 (one glTF JOINTS_0/WEIGHTS_0 set holds 4, and engines such as
    three.js read only that set), never more than :data:`MAX_INFLUENCES`."""
    if count is not None:
        return check_max_influences(count)
    return min(max(int(source_max), 4), MAX_INFLUENCES)


@dataclass(frozen=True)
class CorrespondenceConfig:
    """Dense correspondence (spec Appendix I, Eq. A I-1 and A I-2)."""

    # Eq. A I-1a weight lambda_1 (smoothness); markers must dominate so both meshes fair onto the
    # same marker positions (docs/correspondence.md, the sweep)
    fair_smoothness: float = 1.0
    # Eq. A I-1b weight lambda_2 (linked markers pulled together)
    fair_marker_link: float = 1e4
    # Eq. A I-1c weight lambda_3 (marker midpoints kept)
    fair_marker_anchor: float = 1e4
    # Eq. A I-2a weight mu_1 (Laplacian detail)
    register_detail: float = 1e-6
    # Eq. A I-2b weight mu_2 (closest-point fit)
    register_fit: float = 1.0
    # Eq. A I-2c weight mu_3 (markers)
    register_markers: float = 1.0
    # total weight of the glue rows e_i - e_j between glued pieces, shared as the markers share mu_3
    # (our addition); 100 best balances few and many markers on the robot fixture (tests/robot.py)
    register_glue: float = 100.0
    # closest-point iterations of registration stage 1 (faired source onto faired target); 2 keep the
    # dev scorer numbers within 2 % of 3
    faired_iterations: int = 2
    # closest-point iterations of registration stage 2 (onto the original target)
    max_iterations: int = 15
    # of max_iterations, those run on the source's and target's proxies (our addition, for speed); 10
    # of 15 keep the dev scorer numbers within 2 %
    coarse_iterations: int = 10
    # [diagonal] stage 2 stops when the mean vertex move between iterations falls below this
    tolerance: float = 2e-5
    # stage 2 in levels of decreasing stiffness, factors on mu_1 sharing max_iterations (after Amberg
    # et al. 2007); () = one level at mu_1, as the spec has it
    register_stiffness: tuple = ()
    # the levels when register_stiffness is () and markers lie on several pieces (a body cut at the
    # joints): a stiff start lets the whole surface place unmarked pieces (cut dev bodies, automatic
    # markers: body error 0.69 %H, one level 0.89); () = off
    glued_stiffness: tuple = (100.0, 10.0, 1.0)
    # [diagonal] closest-point pairs farther apart do not pull (Eq. A I-2b)
    reject_distance: float = 0.05
    # [deg] closest-point pairs whose normals differ more do not pull (Eq. A I-2b)
    reject_angle: float = 60.0
    # [vertices] a target whose marked part has more than proxy_above vertices is registered on a
    # decimated proxy of this size (our addition, for speed; 10k is the smallest that keeps the 13k
    # scores on the 50k d01 target); 0 = never
    proxy_vertices: int = 10000
    # [vertices] see proxy_vertices (below 100k the proxy costs more than it saves)
    proxy_above: int = 100000
    # [vertices] the fairing and stage 1 run on proxies of this size for sides above fair_proxy_above
    # (our addition, for speed; 4k keeps every dev scorer number within 2 %); 0 = never
    fair_proxy_vertices: int = 4000
    # [vertices] see fair_proxy_vertices
    fair_proxy_above: int = 8000
    # Appendix I, last part: average each map with the mirror of the mirrored map
    symmetric: bool = False
    # [diagonal] coincident vertices (seams) closer than this are merged
    weld_tolerance: float = 1e-7
    # [diagonal] pieces closer than this (armour plates, a body cut at the joints) are solved
    # together, held by glue edges (our addition); farther pieces (props) ride along; 0 = off
    piece_gap: float = 0.01
    # the fairing's Laplacian rows at glued cuts see across the gap, so a body cut at the joints is
    # smoothed like the whole body (one-sided rows put the cut dev bodies' trunks 9-15 cm off)
    fair_across_gaps: bool = True
    # [diagonal] a piece within piece_gap of a larger one is a layer over it (covers, clothes, hair,
    # eyes: they ride along), not glued, when layer_fraction of its area lies within this distance
    # straight above the larger pieces (a 3 % garment; every piece of the cut bodies scores 0, every
    # layer 0.95-1.0); 0 = no layers
    layer_distance: float = 0.03
    # [deg] the offset of a layer lies within this angle of the normal of the piece below
    layer_angle: float = 45.0
    # [fraction of area] see layer_distance
    layer_fraction: float = 0.5
    # [fraction of area] a piece with at least this much of its area farther than layer_distance
    # hangs off the body and rides along (hair cards 0.5-0.74, plates and covers 0-0.04); above 1 =
    # off
    layer_hanging: float = 0.25
    # [fraction of area] warn when more of a surface lies in pieces without a marker (carried along,
    # not fitted)
    unmarked_area_warning: float = 0.1
    # [diagonal of each mesh] a marker given as a point farther from the surface is refused: placed
    # in another frame or unit
    marker_snap_distance: float = 0.05
    # register_stiffness of every pass when any marker is automatic: automatic markers hold only
    # extremities, crotch and head, and a stiff level lets the whole surface place the trunk and
    # limbs (auto/hand body error on the dev cases 0.92-1.11; docs/benchmarks.md); () = off
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

    # [deg] pose matching starts when a limb bone of the first transfer lies more than this from the
    # source's (same-pose dev bodies differ by at most ~7, the A-pose dev male by 30)
    match_angle: float = 12.0
    # at most this many posed registrations (fixture with arms 40 deg lower: joints within 2.8 / 0.6
    # / 0.3 mm after 1 / 2 / 3)
    match_passes: int = 3
    # [deg] stop once the pose read from the placed skeleton moves less than this between passes
    match_tolerance: float = 1.0

    def __post_init__(self):
        if not 0 < self.match_angle <= 180 or self.match_passes < 1 or not self.match_tolerance > 0:
            raise ValueError("pose matching needs an angle in (0, 180] degrees (180: never), passes >= 1 "
                             "and a positive tolerance")


@dataclass(frozen=True)
class SkeletonConfig:
    """Skeleton transfer (spec Ch. 3)."""

    # joint placement: "em" (spec §3.1.1, Eq. 3.1-3.2) or "pa" (Procrustes, §3.1.2)
    joints: str = "em"
    # Eq. 3.1a-c weights, as in Avril et al. 2016
    omega: tuple = (1000.0, 1.0, 10.0)
    # [height] Eq. 3.1a compares lengths in this unit: the omegas were tuned on human-size characters
    # in centimetres (1/170 of a 1.7 m body)
    em_unit: float = 1.0 / 170.0
    # [rays] EM also fits each joint to the first hits of this many rays cast from it (our addition);
    # joints without weighted vertices are placed from their hits; 0 = the spec's weighted vertices
    # only
    em_rays: int = 64
    # [rays] upper bound of em_rays: 4096 directions sample the sphere every ~3 deg, and the ray
    # buffers grow with joints x rays x faces hit
    em_rays_max: int = 4096
    # [fraction] prior mass of the ray hits for joints that have weights
    em_ray_share: float = 0.0
    # [spreads] a weighted joint farther than this from the centroid of the vertices it moves, in
    # RMS spreads of them, also fits the surface around it (its ray hits, prior mass em_far_share):
    # weights alone carry it where the registration takes those vertices (the fox's Spine_2 on its
    # back, 3.9 spreads above its 9 belly vertices: 10.4 -> 4.0 %H on the dog, the horse's worst
    # joint 19.7 -> 8.5 %H); every dev case, golden rig and production human unchanged (the dev
    # source's joints beyond 3, its breasts, share spine01's place and are placed with it); 2 let
    # the fixture robot's clavicle, 2.02, fit rays that pass between its plates
    em_far_spread: float = 3.0
    # [fraction] prior mass of the ray hits of a joint beyond em_far_spread (0 = off; measured alike
    # from 0.1 to 0.6 on the fox)
    em_far_share: float = 0.3
    # [fraction of rays] a joint is enclosed (its hits used) when at least this share of its rays hit
    em_min_hit_fraction: float = 0.9
    # [weight] §3.1.2: a vertex joins a joint's cloud above this weight
    pa_threshold: float = 0.01
    # [size] an EM joint outside the body and farther than this from its PA position (fractions
    # of the skeleton's longest side), that position inside the body or nearer its surface, is
    # placed by PA (stages/skeleton._joint_positions); dev humans and creatures differ by at
    # most 0.11, the joint EM flung off a kaiju's tail by 0.25
    em_pa_limit: float = 0.15
    # [height] a source in rigidly weighted pieces has its joints fitted with those weights averaged
    # over a Gaussian this wide (stages/joints.blend_weights; robot fixture body joints 0.151 %H
    # mean, 0.193 without); 0 = off
    rigid_blend: float = 0.015
    # [widths of rigid_blend] where the Gaussian is cut
    rigid_blend_reach: float = 2.0
    # [weight] a piece is rigid when every vertex is within this of 100 % to one bone
    rigid_tolerance: float = 1e-4
    # joints that share a position in the source are placed together and stay together (hips -> spine
    # + pelvis)
    keep_coincident: bool = True
    # [skeleton size] the distance within which joints count as sharing a position
    coincident_tolerance: float = 1e-5
    # [height] an unweighted root joint this close to the source's lowest point stands on the ground
    # (a game rig's root under the body, at the origin): it is placed on the target's ground, under the
    # target's contact points as it was under the source's, instead of by the whole-body similarity
    # (which put it 3.6-28 %H off, below the floor, on every production character); 0 = off
    ground_tolerance: float = 0.01
    # [height] a joint of one of the source's thin parts (inside_thin_part) that lands outside the
    # target's body by less than this is moved just inside, to its source depth (at most
    # inside_depth) or halfway across a thinner part (stages/skeleton._kept_inside): the fit misses a thin ear, beak or toe by a
    # fraction of its thickness.  Joints farther out are left for the verdict to name
    # (QualityConfig.outside_tolerance_pct, the same 1 %); 0 = off
    inside_reach: float = 0.01
    # [height] ... a thin part: the chord through the joint, the way its nearest skin point lies, is
    # at most this (fingers 0.3-1.5 %H, ear and chin tips 0.6-1.1, paws 2.2-2.6; a pelvis over the
    # crotch 6.8, a fox's chin over its jaw's underside 6.1)
    inside_thin_part: float = 0.04
    # [height] ... moved at most this deep past the wall: enough to be inside, not so far as to leave an
    # artist's placement farther behind (the T. rex's feet, under its soles in its artist's rig, went
    # 3.5 %H up moved to their source depth)
    inside_depth: float = 0.0025
    # spine alignment, §3.1.3: "em" (Table 3.1), "pa" or "off"
    spine: str = "em"
    # the spine's joint names root..head; None: the detected root -> head path
    spine_joints: tuple | None = None
    # §3.1.4 mirroring of left/right joints: "auto" (when the target is symmetric), "on" or "off"
    mirror: str = "auto"
    # (a, b, c, d) with a x + b y + c z = d in the target's frame and units; None: estimated
    symmetry_plane: tuple | None = None
    # Gauss-Newton steps of the estimated plane's point-to-plane ICP on the target's reflection
    # (geometry/symmetry.py; stops earlier once a step moves the plane by < 1e-9)
    symmetry_iterations: int = 30
    # [height] "auto" mirrors when the target matches its own reflection within this
    symmetric_tolerance: float = 0.005
    # §3.3: rest pose = the source's limb directions.  Off: the rest pose is the bind pose as
    # modelled, what DCC tools and validators expect, and the posed-surface error against a truth
    # rigged as modelled is 3-5x lower (docs/benchmarks.md)
    pose_normalize: bool = False
    # [deg] a bone with several children aims at the one within this angle of a local axis in the
    # source (stages/orientation.py)
    aim_tolerance: float = 1.0
    # a bone's roll follows the plane of three joints of its chain where the source's does (False:
    # Alg. 2's roll everywhere)
    roll_planes: bool = True
    # [deg] the source's plane normal lies on a local axis within this (plane rules are exact in the
    # rigs that use them: float32 keeps ~1e-5 deg)
    roll_plane_tolerance: float = 0.01
    # [bones] the plane's joints are up to this far up or down the chain (MakeHuman rolls
    # clavicle..wrist to the elbow's plane: reach 3 d01 posed local 0.532 %H, 5: 0.485; 6 finds
    # chance planes)
    roll_plane_reach: int = 5
    # [deg] the plane is used when its chain bends at least this much
    roll_plane_min_bend: float = 5.0
    # [skeleton size] and its middle joint lies at least this far off the line through the other two
    # (fingers' curl planes, a few mm high, made the fixture's fingers 3-9 deg worse)
    roll_plane_min_height: float = 0.01
    # [deg] and following it turns the bone at most this far from Alg. 2's estimate
    roll_plane_max_turn: float = 45.0
    # a bone whose roll keeps a world axis across it in the source (Maya's Orient Joint with a world
    # up, Blender's roll 0) keeps the target's matching axis
    roll_world_axes: bool = True
    # [deg] the alignment's rotation is snapped to the file's axes within this
    roll_axis_snap: float = 5.0

    def __post_init__(self):
        if self.joints not in ("em", "pa"):
            raise ValueError("joints must be 'em' or 'pa'")
        if not 0 <= self.em_rays <= self.em_rays_max or not 0.0 <= self.em_ray_share <= 1.0:
            raise ValueError(f"em_rays must be in 0..{self.em_rays_max} and em_ray_share in [0, 1]")
        if not (self.em_far_spread > 0 and 0.0 <= self.em_far_share <= 1.0):
            raise ValueError("em_far_spread must be positive and em_far_share in [0, 1]")
        if self.symmetry_plane is not None and not (len(self.symmetry_plane) == 4
                                                    and all(math.isfinite(v) for v in self.symmetry_plane)
                                                    and any(self.symmetry_plane[:3])):
            raise ValueError("symmetry_plane must be 4 finite numbers a, b, c, d with (a, b, c) not zero")
        if not 0.0 <= self.em_min_hit_fraction <= 1.0:
            raise ValueError("em_min_hit_fraction must be in [0, 1]")
        if not self.em_pa_limit > 0:
            raise ValueError("em_pa_limit must be > 0 (inf: never)")
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

    # "interp" (spec), "robust" (Abdrashitov et al. 2023) or "auto": robust for a target in several
    # pieces (a sword in the hand took the thigh's weights with interp, 97.5 % forearm with robust),
    # interp for one piece (the same dev errors, 0.3 s less at 13k vertices)
    method: str = "auto"
    # [joints per vertex] 1 to MAX_INFLUENCES; None: follow the source (influence_limit: its own
    # maximum, 4 when it uses at most 4, so one JOINTS_0/WEIGHTS_0 set for engines that read only it)
    max_influences: int | None = None
    # [weight] weights below this are dropped, then rows renormalised
    prune: float = 1e-3
    # [body diagonal] robust: a vertex keeps its interpolated weights when its source point is nearer
    # than this (the paper's 0.05) ...
    robust_distance: float = 0.05
    # [deg] ... and the normals are less than this apart (the paper's 30); the rest are inpainted
    robust_angle: float = 30.0
    # robust: neighbour-averaging steps after inpainting
    smooth_iterations: int = 10
    # robust: a piece with no accepted vertex (a prop) takes the mean weights of this many accepted
    # vertices where it comes closest (our addition)
    contact_neighbours: int = 8
    # [fraction of vertices] robust: pieces off the body that touch each other are one group; a group
    # with fewer accepted matches is a prop the source has no surface for, bound rigidly to one joint
    # (tests/dressing.py: a sword of three parts 0.08, hair cards 0; joint covers half sunk into a limb
    # 0.35-0.57 and clothing 1 keep the weights of the surface under them)
    prop_fraction: float = 0.25
    # [body diagonal] robust: pieces whose vertices come this close (or whose surfaces cross) are in
    # one group (4 mm on a 2 m body: parts modelled touching, not welded)
    prop_touch: float = 0.002
    # [body diagonal] robust: a prop group whose surface comes nowhere this close to the rest of the
    # mesh's stands apart (a crate beside the character) and is bound to the root, as is one wider
    # than the body two ways (the floor); a prop held in a hand touches it (10 cm on a 2 m body)
    prop_apart: float = 0.05

    def __post_init__(self):
        if not (0 <= self.prop_fraction <= 1 and self.prop_touch >= 0 and self.prop_apart > 0):
            raise ValueError("robust weights need prop_fraction in [0, 1], prop_touch >= 0 and prop_apart > 0")
        if self.method not in ("auto", "interp", "robust"):
            raise ValueError("weights method must be 'auto', 'interp' or 'robust'")
        if self.max_influences is not None:
            check_max_influences(self.max_influences)
        if not (self.robust_distance > 0 and 0 < self.robust_angle <= 180 and self.smooth_iterations >= 0):
            raise ValueError("robust weights need distance > 0, 0 < angle <= 180 and smoothing steps >= 0")
        if self.contact_neighbours < 1:
            raise ValueError("robust weights need contact_neighbours >= 1")


@dataclass(frozen=True)
class MarkersConfig:
    """Automatic markers: landmarks found by the same geometric rules on both characters
    (our addition, beyond the spec's hand-placed markers; stages/markers.py, humanoid/landmarks/)."""

    # "auto": find markers when none are given and complete a hand marker file of fewer than
    # complete_below; "on": always add automatic markers to hand ones; "off": hand markers only
    automatic: str = "auto"
    # [markers] see automatic
    complete_below: int = 12
    # [largest side] pieces closer than this are joined for geodesics: bridges joint covers and
    # layered clothing, not the space between the legs
    bridge_gap: float = 0.02
    # [largest side] a tip (head, hand, foot) is the farthest point from the body's middle within
    # this geodesic radius: wider than a hand's spread of fingers (~0.06), narrower than head to hand
    # over the shoulder (~0.45)
    extremity_radius: float = 0.15
    # [height] an automatic marker whose target point lies this close to a hand marker's gives way to
    # it
    hand_radius: float = 0.03
    # [0-1] automatic markers below this confidence are named in a warning
    warn_confidence: float = 0.5
    # [vertices] a character with more than twice as many is searched on a copy simplified to this
    # many (d01 at 1M vertices: 3.7 s, the full search 15.9 s; landmarks within 0.1 %H)
    search_vertices: int = 50_000
    # [ratio] the crotch is no marker when one character's crotch height (over body height) is below
    # this fraction of the other's: its legs part at a skirt's hem (0.97-1.07 on the dev cases,
    # 0.72-0.78 cartoon and stocky bodies, 0.51 a skirt to the knees)
    crotch_height_ratio: float = 0.6
    # [height] a source landmark farther than this from the one its rig gives (skeleton map and
    # weights: humanoid/landmarks/rig.py) is taken from the rig: the geometric rules misread it
    # (the dev sources and fixtures agree within 2.7); between heads alike, the shape's reading
    # links instead where it lies nearer the target's (rig.read_as_the_target)
    rig_tolerance: float = 0.05
    # [ratio] the throat and the nape link the characters only when one's head (throat to head top,
    # over body height) is this many times the other's: a big head's base is free between the
    # extremities (0.31 the Kenney zombie, 0.23 the cartoon fixture, 0.11-0.15 the MakeHuman,
    # Quaternius and other fixture bodies) and at least its square root as wide (ear to ear over
    # the height: a robot's neck cover reads its throat low under a head as wide as the body's);
    # between like heads the extremities hold it, but for big heads (big_head)
    neck_head_ratio: float = 1.3
    # [height] the throat and the nape link two characters whose heads' shares (throat to head top,
    # over body height) are known and one this or more, however alike: a big head's base is free
    # between the extremities (KayKit's chibis 0.47-0.53, heads on bodies without necks, rigged one
    # onto another with their head joints 15-33 %H high; the zombie 0.31, the cartoon fixture 0.23;
    # human bodies 0.11-0.15)
    big_head: float = 0.2
    # [head height] where the throats link, a head landmark (nose, back of the head, ears) read at
    # heights within the two heads (throat 0, head top 1) this far apart is not linked: one reading
    # is no face's (a helmet's visor and rim: KayKit's knight 0.74-0.79 against its other chibis'
    # 0.27-0.36)
    head_reading_tolerance: float = 0.25
    # [height] the toe tips link by the middle of the sole's front end (their rule between
    # vertices) on both characters when either's toe tip vertex lies farther than this from it:
    # the extremity of a square or round shoe is a corner or its side (held-out Sintel 4.5,
    # Sophia 5.1-6.5; bare feet and the production mannequins 0.7-1.2)
    toe_corner: float = 0.025
    # [height] no crotch marker when the source's crotch lies less than this below its upper
    # legs' joints: its legs part at the joints (a pelvis piece over separate thighs: Mixamo's
    # X Bot 0.7 %H), where no target's crotch is (its hips went 8 cm low on a one-piece body);
    # the other bodies measured 2.3 (a chibi) to 18 (a tunic's hem), most 3.7-11
    crotch_joint_depth: float = 0.015
    # Markers of a body that is no two-legged one (stages/fitted_markers.py): the source's skin
    # fitted onto the target by its joints' maps (geometry/skinned_fit.py), both bodies scaled
    # to a unit diagonal.  Figures: the fitted joints' mean error over seven creature pairs
    # (dev and held-out), % of size, 2.84 with these defaults (docs/benchmarks.md, Creatures).
    # [count] markers read off the fit, spread over the source by farthest points (a TD's 60:
    # 120 or 200 moved the rigs by 0.03 % of size on average)
    fit_markers: int = 60
    # [iterations] of the fit; its stiffness falls from the first to the second value: a
    # near-rigid skeleton first, then each bone takes its part (ending at 0.1: 3.16; 0.005: 2.84)
    fit_iterations: int = 40
    fit_stiffness: tuple = (3.0, 0.02)
    # [weight] each joint's map kept near a rotation times a scale (0: 3.20, the panda's body
    # sheared; 1.0: 2.85) and near its parent's (0.01: 2.79, 1.0: 3.00)
    fit_rigidity: float = 0.3
    fit_smoothness: float = 0.1
    # [fraction of area] pieces of either surface holding less are left out of the fit (crumbs,
    # eyes, bolts: 39 loose triangles around the fixture tube turned its fit over)
    fit_least_piece: float = 0.01
    # [vertices] a surface with more is fitted as a proxy of this many (geometry/decimate.py): the
    # fit's closest points cost grows with the vertices (the 7.7k-vertex fixture human onto the
    # 8k heavy body: 7.5 s in full, 3.5 s so, its fit as close within 0.01 % of the diagonal)
    fit_vertices: int = 2500
    # [turns] the target is fitted in full in this many axis turns (of the 24 a file may face and
    # stand in), those whose short, stiff fits (fit_facing_iterations on proxies of
    # fit_facing_vertices) lie closest; the best full fit wins.  The right turn ranked in the
    # first 3 short fits on 26 of 27 pairs (creatures turned three ways, KayKit's chibis holding
    # their weapons) and won the full fits on 26; a mirror plane found per axis first misread the
    # chibis' (Y for a rogue with a crossbow)
    fit_facing_candidates: int = 3
    fit_facing_iterations: int = 6
    fit_facing_stiffness: tuple = (3.0, 1.0)
    fit_facing_vertices: int = 500
    # [log ratio] the bodies' plans differ (refused) when the source's bones' lengths change by
    # the fit with a standard deviation of their logarithms above this: same-family pairs
    # 0.04-0.25 (a cartoon bunny from a mannequin 0.27), a fox onto a bird, a human or a shark
    # onto a bird or a dog 0.70-1.06; other plans that stretch less (a bird onto a dog 0.33, a
    # fox onto a woman 0.43) rig "poor"
    fit_stretch_limit: float = 0.45
    # [diagonal] ... or when the fitted source lies farther than this from the target on average
    # (both ways): same-family pairs 0.4-2.0 %, a two-joint crate onto a human 4.0
    fit_distance_limit: float = 0.03

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
        if not self.rig_tolerance > 0:
            raise ValueError("rig_tolerance must be positive")
        if not self.toe_corner > 0:
            raise ValueError("toe_corner must be positive")
        if not self.crotch_joint_depth >= 0:
            raise ValueError("crotch_joint_depth must be >= 0")
        if not self.neck_head_ratio >= 1:
            raise ValueError("neck_head_ratio must be >= 1")
        if not self.big_head > 0:
            raise ValueError("big_head must be positive")
        if not self.head_reading_tolerance > 0:
            raise ValueError("head_reading_tolerance must be positive")
        if (self.fit_markers < 3 or min(self.fit_iterations, self.fit_facing_iterations) < 1
                or min(self.fit_vertices, self.fit_facing_vertices) < 100 or not 1 <= self.fit_facing_candidates <= 24):
            raise ValueError("fit_markers must be >= 3, fit_vertices and fit_facing_vertices >= 100, the fit's "
                             "iterations >= 1 and fit_facing_candidates in 1-24")
        for name in ("fit_stiffness", "fit_facing_stiffness"):
            if len(getattr(self, name)) != 2 or not min(getattr(self, name)) > 0:
                raise ValueError(f"{name} must be two positive numbers (start, end)")
        if not 0 <= self.fit_least_piece < 1:
            raise ValueError("fit_least_piece must be in [0, 1)")
        if not (self.fit_rigidity >= 0 and self.fit_smoothness >= 0 and self.fit_stretch_limit > 0
                and self.fit_distance_limit > 0):
            raise ValueError("fit_rigidity and fit_smoothness must be >= 0, fit_stretch_limit and "
                             "fit_distance_limit positive")


@dataclass(frozen=True)
class QualityConfig:
    """Plausibility of the inputs and the verdict on a result (our addition, stages/quality.py).

    A wrong answer written with exit 0 is worse than an error: what the tool can tell is
    wrong is refused, what it cannot tell is reported as ``quality`` ("ok", "check",
    "poor") with its reasons, for a batch script to act on.  Lengths are percentages of
    the target's height (the largest extent of its bounding box).
    """

    # [factor] the markers' RMS spread over each mesh's size must agree between the sides: beyond
    # this the points were given in other units or frames (metres on centimetres: 100), refused
    marker_spread_refuse: float = 5.0
    # [factor] beyond this, warned (a very different body, or a misplaced marker)
    marker_spread_warn: float = 2.0
    # [factor] a marker's given points lie on the other mesh when their distance to it is below
    # 1/this of their distance to their own (exchanged files: 2.5 % of the size median against 0 on
    # the fixture, dev and production files; no straight marker of them does)
    marker_side_ratio: float = 4.0
    # [diagonal] distances below this tell neither side: both meshes pass there (the head of a body
    # and of its heavier twin coincide)
    marker_side_floor: float = 0.002
    # [fraction] of the markers whose points tell a side: when this share lies on the other mesh the
    # file's source and target are exchanged: refused (fewer such markers are warned, by name)
    marker_swapped_refuse: float = 0.9
    # [diagonal] median distance of one side's given points to its surface beyond which they were
    # placed on another mesh: warned (0 on every file of ours: tools write points on the surface)
    marker_off_surface_warn: float = 0.005
    # [fraction of spread] RMS residual of the best similarity (Umeyama) from the markers' source
    # points to their target points over the target points' RMS spread: beyond this the names link
    # unrelated points, refused (0.05-0.31 on the fixture, dev and production files; 0.96-1.0 with
    # the target points shuffled)
    marker_shape_refuse: float = 0.8
    # [fraction of spread] ... beyond this, warned (a pose far from the source's, or misplaced markers)
    marker_shape_warn: float = 0.5
    # [markers] with fewer the alignment is barely constrained: warned
    few_markers: int = 6
    # [% height] largest marker residual after the fit for "check" (0.6-0.85 on the dev cases' sparse
    # markers)
    residual_check_pct: float = 2.5
    # [% height] ... and for "poor"
    residual_poor_pct: float = 6.0
    # [% height] a target vertex is mapped when the registered source passes within this (the
    # registration's reject distance; the cartoon fixture has 13 % of its area between 2 and 5)
    mapped_distance_pct: float = 5.0
    # [fraction of area] mapped area below this is "check" (props and clothing are legitimately
    # unmapped)
    mapped_check: float = 0.9
    # [fraction of area] ... and below this "poor"
    mapped_poor: float = 0.7
    # [% height] the mean distance between the fitted source and the target (the larger of both
    # ways) for "check": at most 0.79 on the dev cases and fixtures, 0.95 on production humans rigged
    # within 2 %H; 1.15-2.6 where the body joints land 5-9 %H off (a cartoon's big head)
    fit_check_pct: float = 1.0
    # [% height] ... and for "poor"
    fit_poor_pct: float = 2.5
    # [fraction of joints] joints inside the source's body (winding number >= 0.5) that end outside
    # the target's: any is "check", this share "poor"
    outside_poor_fraction: float = 0.1
    # [% height] joints this close to the surface count neither way (eyelid, cheek, finger and root
    # joints sit within 0.5 of the skin)
    outside_tolerance_pct: float = 1.0
    # [triangles] a larger mesh is tested for the joints' sides on a vertex clustering (our addition,
    # for speed: 1.5 s, the exact test 3.6 s on a 1M-vertex target) ...
    inside_exact_faces: int = 400_000
    # [cells] ... of this many cells (~4 mm on a body, below outside_tolerance_pct)
    inside_cells: int = 100_000
    # [height] a given symmetry plane farther than this from the target's centre does not cut the
    # body: refused
    plane_offset_refuse: float = 0.25
    # [factor] a bone whose length over the body height differs from the source's by more than this
    # either way is out of proportion (a neck collapsed in a big head, a leg stretched to the ears;
    # stylised production targets rigged by hand markers stay within it): "check"
    proportion_factor: float = 2.5
    # [height] shorter source bones are not judged (finger segments, helper joints: relative noise)
    proportion_min_length: float = 0.02
    # [fraction of bones] this share of the judged bones out of proportion is "poor"
    proportion_poor_fraction: float = 0.1
    # [height] a foot is the target's surface below its ankle joint within this along the toe's
    # direction; toes pointing to its shorter side (the heel) turn the verdict "poor"
    foot_reach: float = 0.15
    # [height] a left elbow, knee or ankle more than this to the right of its partner (sides from the
    # upper legs) is "poor": an arm's markers swapped left and right put the heavy fixture's left
    # elbow 49 %H to the right; correct rigs keep every such pair 3 %H or more apart the right way
    crossing_tolerance: float = 0.02
    # [ratio] automatic markers between characters whose heads' shares of the height (throat to
    # crown) are this many times apart are "check": joints are placed in proportion, and artists
    # rig a cartoon's head and legs by other conventions (the Kenney zombie and the mannequins,
    # 2.1-2.3 apart: body joints up to 3.9 %H from the artist's with a mean of 1.9-2.8; the
    # cartoon fixture 1.9 apart, within 2.0 %H)
    proportion_doubt_ratio: float = 2.0
    # [ratio] markers read off the source's fitted skin whose next best turn of the target fits
    # within this factor of the chosen one's score are "check" (MarkerOrigin.facing_margin; the
    # one wrong turn of 27 measured won by 1.024, the right ones by 1.058-3.1)
    facing_doubt_margin: float = 1.05
    # [fraction] a body joint (skeleton-map role) with more of its skin (weight x area) on pieces no
    # marker fitted, the source's or the target's, is "check": placed from surface carried along
    # (Mixamo's X Bot, a chest plate between joint rings: its upper spine's and clavicles' 0.58-0.95
    # as the source and 0.49-0.57 as the target, where they landed 3.5-4.0 %H off; 0 on every
    # one-piece body).  Vertices bound wholly to one joint do not count (a held shield, a hat)
    carried_joint_share: float = 0.4
    # [height] an arm hanging beside the body that the source held out (plausibility.hanging_arms_unpinned)
    # is "check" unless a marker lies within this of its elbow joint (the elbow landmarks and hand
    # markers on an elbow lie one arm's radius from it, 1.5-3 %H on the bodies here)
    hanging_pin_reach: float = 0.05
    # [measures] this many independent measures at "check" at once make the verdict "poor" (the
    # fit's distance and the area it does not reach count once): on the production, held-out and
    # KayKit sets every rig with 3 or more has a body joint 7.6-33 %H off (the cartoon bunny as a
    # source, automatic markers onto the big-headed zombie, KayKit's chibis from the hatted Mage),
    # while Sintel, Sophia, X Bot, the mannequins and every dev case have at most 2
    doubts_poor: int = 3

    def __post_init__(self):
        if (not self.proportion_doubt_ratio >= 1 or not 0 < self.carried_joint_share <= 1 or self.doubts_poor < 2
                or not self.facing_doubt_margin >= 1):
            raise ValueError("proportion_doubt_ratio and facing_doubt_margin must be >= 1, carried_joint_share in "
                             "(0, 1] and doubts_poor >= 2")
        if not (1.0 <= self.marker_spread_warn <= self.marker_spread_refuse
                and 0 < self.residual_check_pct <= self.residual_poor_pct and 0 < self.fit_check_pct <= self.fit_poor_pct
                and 0 <= self.mapped_poor <= self.mapped_check <= 1 and self.mapped_distance_pct > 0
                and 0 < self.outside_poor_fraction <= 1 and self.outside_tolerance_pct >= 0 and self.plane_offset_refuse > 0 and self.few_markers >= 3):
            raise ValueError("quality thresholds must be ordered (warn <= refuse, check <= poor) and positive")
        if not (self.proportion_factor > 1 and self.proportion_min_length >= 0
                and 0 < self.proportion_poor_fraction <= 1 and self.foot_reach > 0 and self.crossing_tolerance >= 0
                and self.hanging_pin_reach >= 0):
            raise ValueError("proportion_factor must be > 1, proportion_poor_fraction in (0, 1] and foot_reach > 0")
        if not (self.marker_side_ratio > 1 and self.marker_side_floor >= 0 and 0 < self.marker_swapped_refuse <= 1
                and self.marker_off_surface_warn > 0 and 0 < self.marker_shape_warn <= self.marker_shape_refuse):
            raise ValueError("marker_side_ratio must be > 1, marker_swapped_refuse in (0, 1], marker_off_surface_warn "
                             "positive and 0 < marker_shape_warn <= marker_shape_refuse")
        if self.inside_exact_faces < 0 or self.inside_cells < 1:
            raise ValueError("inside_exact_faces must be >= 0 and inside_cells >= 1")


@dataclass(frozen=True)
class ShapesConfig:
    """Blend shapes (beyond the spec: the source's morph targets carried onto the target through
    the map made finer where they move; stages/shapes.py, stages/correspondence/refine.py).
    Measured on the 16 MakeHuman expressions x 5 dev cases (mean relative error, docs/benchmarks.md)."""

    # "auto": carry the source's morph targets; "off": not
    mode: str = "auto"
    # [vertex rings] around the shapes' vertices refined with them (3: 0.118, 6: 0.114, 10: 0.114)
    margin_rings: int = 6
    # [heights] smoothing lengths of the refined fit's levels (1, 0.5, 0.25 %H: 0.114; unrefined 0.163)
    smoothing_lengths: tuple = (0.01, 0.005, 0.0025)
    # closest-point iterations per level at most (4: 0.122, 8: 0.117, 10: 0.115; ~30 ms each on a face)
    iterations: int = 8
    # [height] a level stops when the mean vertex move falls under this
    tolerance: float = 1e-5
    # [height] a target vertex mapped onto a piece riding along (an eyeball) is mapped onto the
    # fitted skin when that is within twice as far plus this (an eyelid's fold, ~3 mm)
    rider_slack: float = 0.002
    # [height] a target vertex is confidently mapped within this of the registered source (an
    # eyelid's fold is ~0.2 %H) ...
    close_distance: float = 0.002
    # [deg] ... and with normals this close
    close_angle: float = 45.0
    # [0-1] shapes mapped with less confidence where they move are named in a warning
    warn_confidence: float = 0.5

    def __post_init__(self):
        if self.mode not in ("auto", "off"):
            raise ValueError(f"blend shapes must be auto or off (got {self.mode!r})")
        if not (self.margin_rings >= 0 and self.iterations >= 1 and self.tolerance > 0 and self.rider_slack >= 0
                and self.close_distance > 0 and 0 < self.close_angle <= 180 and 0 <= self.warn_confidence <= 1
                and all(length > 0 for length in self.smoothing_lengths)):
            raise ValueError("blend-shape parameters must be positive (angles in (0, 180], confidence in [0, 1])")


@dataclass(frozen=True)
class Config:
    """Parameters of the whole transfer, one section per stage that reads them."""

    correspondence: CorrespondenceConfig = field(default_factory=CorrespondenceConfig)
    skeleton: SkeletonConfig = field(default_factory=SkeletonConfig)
    weights: WeightsConfig = field(default_factory=WeightsConfig)
    markers: MarkersConfig = field(default_factory=MarkersConfig)
    quality: QualityConfig = field(default_factory=QualityConfig)
    pose: PoseConfig = field(default_factory=PoseConfig)
    shapes: ShapesConfig = field(default_factory=ShapesConfig)

    def replace(self, **changes) -> "Config":
        return replace(self, **changes)
