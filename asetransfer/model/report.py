"""A transfer's report: one typed section per stage, assembled into :class:`TransferReport`.

Each stage builds its own section (markers -> :class:`MarkerOrigin`, correspondence ->
:class:`CorrespondenceStats`, pose matching -> :class:`PoseMatch`, skeleton ->
:class:`SkeletonReport`, weights -> :class:`WeightsReport`, quality ->
:class:`QualityVerdict`, blend shapes -> :class:`BlendshapesReport`) and
:func:`~asetransfer.stages.transfer.transfer` assembles them.
Every section's ``to_json()`` is plain JSON data (the keys of docs/report.md) and its
``from_json()`` reads that back; the report file (``--report``, a batch's
``NAME.report.json``) is ``TransferReport.to_json()``, marked with :data:`REPORT_SCHEMA`.
The stages time their steps with one :class:`Stopwatch`.
"""
from __future__ import annotations

import contextlib
import time
from dataclasses import MISSING, dataclass, field, fields
from typing import ClassVar

import numpy as np

#: the schema of a report file (docs/report.md): a key removed, renamed or no longer always
#: present, or a value whose type, unit or meaning changes, makes it ``/2``; a key added
#: keeps it (readers ignore keys they do not know)
REPORT_SCHEMA = "asetransfer.report/1"


class ReportSchemaError(ValueError):
    """JSON data that is not a report of :data:`REPORT_SCHEMA` (another schema, none, or malformed)."""


class Stopwatch:
    """Wall-clock seconds (``time.perf_counter``) since it was made, and of the steps timed
    with :meth:`timed`: ``laps`` maps a step's name to its seconds (the keys of a timings section)."""

    def __init__(self):
        self.started = time.perf_counter()
        self.laps: dict = {}

    @contextlib.contextmanager
    def timed(self, step: str):
        """Time the block as ``laps[step]``; a step run again (after a fallback) keeps its last
        time, and a block that raises records none."""
        start = time.perf_counter()
        yield
        self.laps[step] = time.perf_counter() - start

    def elapsed(self) -> float:
        """Seconds since the stopwatch was made."""
        return time.perf_counter() - self.started


def _plain(value):
    """``value`` as plain JSON data: sections by their ``to_json()``, tuples and arrays as lists,
    NumPy scalars as Python numbers."""
    if hasattr(value, "to_json"):
        return value.to_json()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


class Section:
    """A report section (a dataclass).  ``to_json()``: its fields in order as plain JSON data.
    ``from_json(data)``: the reverse, the fields named in ``_sections`` read as those types
    (null only where the field's default is None).  A key missing from ``data`` takes the
    field's default, or without one raises :class:`ReportSchemaError`; keys the section
    does not know are ignored."""

    _sections: ClassVar[dict] = {}

    def to_json(self) -> dict:
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)}

    @classmethod
    def from_json(cls, data):
        if not isinstance(data, dict):
            raise ReportSchemaError(f"{cls.__name__}: expected an object, not {type(data).__name__}")
        values = {}
        for f in fields(cls):
            if f.name not in data:
                if f.default is MISSING and f.default_factory is MISSING:
                    raise ReportSchemaError(f"{cls.__name__}: no {f.name!r}")
                continue
            kind, value = cls._sections.get(f.name), data[f.name]
            if kind is not None and value is None and f.default is not None:
                raise ReportSchemaError(f"{cls.__name__}: {f.name!r} is null")
            values[f.name] = value if kind is None or value is None else kind.from_json(value)
        return cls(**values)


@dataclass
class CorrespondenceTimings(Section):
    """Seconds of the correspondence's steps (``correspondence.timings``): align, make the
    proxies (simplified copies of large meshes), fair, factorise, register (stage 1, stage
    2), map; and the whole."""

    align: float
    proxy: float
    fair: float
    factor: float
    register_faired: float
    register_original: float
    maps: float
    total: float


@dataclass
class SkeletonTimings(Section):
    """Seconds of the skeleton transfer's steps (``skeleton.timings``)."""

    positions: float        # the weights the fits see, and the joint positions
    spine_mirror: float     # symmetry plane, spine alignment, mirroring
    orientation: float      # orientations, bind and rest pose
    total: float


@dataclass
class TransferTimings(Section):
    """Seconds of a transfer's stages (``timings``); ``correspondence`` and ``skeleton`` are
    the last pass's (pose matching runs them again: ``pose_match.time``)."""

    markers: float          # the automatic marker search (0: none)
    correspondence: float
    skeleton: float
    weights: float
    total: float            # the whole transfer but the quality measures


@dataclass(eq=False)
class LandmarkFrame:
    """The body frame a character's automatic markers were found in (its landmarks').

    up, forward : (3,) unit vectors in the mesh's frame; height : the body's height (file
    units).  JSON rounds them to 6 decimals.
    """

    up: np.ndarray
    forward: np.ndarray
    height: float

    @property
    def left(self) -> np.ndarray:
        """(3,) the body's left, ``up x forward`` (right-handed, as the landmarks' frame)."""
        return np.cross(self.up, self.forward)

    def __eq__(self, other):
        return isinstance(other, LandmarkFrame) and self.to_json() == other.to_json()

    def to_json(self) -> dict:
        return {"up": [round(float(x), 6) for x in self.up], "forward": [round(float(x), 6) for x in self.forward],
                "height": round(float(self.height), 6)}

    @classmethod
    def from_json(cls, data) -> "LandmarkFrame":
        try:
            return cls(np.asarray(data["up"], dtype=np.float64), np.asarray(data["forward"], dtype=np.float64),
                       float(data["height"]))
        except (KeyError, TypeError, ValueError) as e:
            raise ReportSchemaError(f"LandmarkFrame: {e}") from None


@dataclass
class MarkerOrigin(Section):
    """Which markers a transfer used and where the automatic ones came from (``marker_origin``).

    The fields after ``hand`` describe the automatic marker search: empty (or None) when
    none ran.  ``not_completed``: why automatic markers could not complete a few hand
    markers (the transfer went on with the hand markers alone), else None.
    """

    automatic: list = field(default_factory=list)           # names of the automatic markers
    hand: list = field(default_factory=list)                # names of the hand markers
    confidence: dict = field(default_factory=dict)          # automatic name -> [0, 1]
    low_confidence: list = field(default_factory=list)      # names under MarkersConfig.warn_confidence
    source_frame_agreement: float | None = None             # cosine of the source's geometric and named left
    thighs_joined: list = field(default_factory=list)       # "source"/"target": no crotch landmark
    crotch_heights: list | None = None                      # [source, target] crotch height / body height
    head_shares: list | None = None                         # [source, target] throat to head top / body height
    between_vertices: bool | None = None                    # landmarks placed between vertices
    frames: dict = field(default_factory=dict)              # "source"/"target" -> LandmarkFrame
    not_completed: str | None = None
    time: float | None = None                               # seconds of the automatic marker search
    method: str | None = None                               # "landmarks" (two-legged), "fitted" (any body)
    fit_distance: float | None = None                       # fitted: mean gap source <-> target, of the diagonal
    fit_stretch: float | None = None                        # fitted: spread of the bones' log stretches
    target_turn: list | None = None                         # fitted: (3, 3) axis turn the target was read in
    facing_margin: float | None = None                      # fitted: the next turn's fit score over the chosen's
    target_unread: str | None = None                        # fitted for a two-legged source: why its target was not read

    def confidences(self, names) -> list:
        """Each named marker's confidence: a landmark's own, 1 for a hand marker, NaN for an
        automatic marker read off the fitted skin (no confidence of its own)."""
        return [self.confidence.get(n, float("nan") if n in self.automatic else 1.0) for n in names]

    @classmethod
    def from_json(cls, data) -> "MarkerOrigin":
        origin = super().from_json(data)
        if not isinstance(origin.frames, dict):
            raise ReportSchemaError("MarkerOrigin: frames must be an object")
        origin.frames = {side: LandmarkFrame.from_json(frame) for side, frame in origin.frames.items()}
        return origin


@dataclass
class CorrespondenceStats(Section):
    """How the correspondence fitted (``correspondence``); distances in target file units."""

    alignment_scale: float                  # scale of the marker similarity (source -> target units)
    marker_residual_mean: float             # |registered source marker - target marker|
    marker_residual_max: float
    marker_residual_worst: str              # the marker of the max
    fit_distance_mean: float                # registered source vertex -> target surface
    fit_distance_p95: float
    reverse_fit_distance_mean: float        # target vertex -> registered source surface
    iterations: list                        # [stage 1, stage 2 on proxies, stage 2] closest-point iterations
    stiffness_levels: list                  # stage 2's stiffness levels, stiff to loose
    solver: str                             # the factorisation's backend
    unmarked_source_vertices: int           # vertices of pieces with no marker (carried along, not fitted)
    unmarked_target_vertices: int
    proxy_vertices: int                     # the target's registration proxy (0: none)
    fairing_proxy_vertices: list            # [source, target] fairing proxies (0: none)
    timings: CorrespondenceTimings

    _sections: ClassVar[dict] = {"timings": CorrespondenceTimings}


@dataclass
class PoseMatch(Section):
    """Pose matching (``pose_match``): each limb bone's angle to the source's, in degrees."""

    limb_angles_deg: list                   # after every pass: [{limb bone: degrees}], the first pass first
    passes: int = 0                         # posed passes run after the first
    landmark_pose_deg: dict | None = None   # the landmarks' guess the first pass started from (None: none)
    time: float = 0.0                       # seconds of the posed passes


@dataclass
class DeltaRotation(Section):
    """Statistics of the Delta rotations (spec Alg. 2), in degrees."""

    mean: float
    max: float
    max_joint: str


@dataclass
class SkeletonReport(Section):
    """The skeleton transfer (``skeleton``); filled step by step by
    :func:`~asetransfer.stages.skeleton.transfer_skeleton`.  Lengths in target file units."""

    joints: str                                                 # joint placement: "em" or "pa"
    fallback_joints: list = field(default_factory=list)         # placed from their PA fit or parent
    coincident_groups: int = 0                                  # groups of joints placed as one
    grounded_joints: list = field(default_factory=list)         # unweighted roots placed on the ground
    moved_inside: list = field(default_factory=list)            # joints a hair outside the target moved in
    symmetry_plane: list | None = None                          # [a, b, c, d]: a x + b y + c z = d
    target_symmetric: bool = False
    mirrored: bool = False
    lr_pairs: int = 0
    pairs_not_mirrored: list = field(default_factory=list)      # left joints of pairs kept asymmetric
    spine: list = field(default_factory=list)                   # spine joints, root to head
    spine_alignment: str = "off"
    asymmetry_before_mirroring: float | None = None             # largest |left - mirror(right)|
    asymmetry: float | None = None
    bones_rolled: list = field(default_factory=list)            # bones rolled to a world axis or plane
    delta_rotation_deg: DeltaRotation | None = None
    pose_normalized: bool = False
    timings: SkeletonTimings | None = None

    _sections: ClassVar[dict] = {"delta_rotation_deg": DeltaRotation, "timings": SkeletonTimings}


@dataclass
class RobustStats(Section):
    """The robust weight transfer's matches (``weights.robust``), over the target's vertices."""

    accepted_fraction: float       # share of vertices whose match was kept
    inpainted_vertices: int
    copied_vertices: int           # in pieces with no accepted match, attached rigidly
    rejected_by_distance: int
    rejected_by_angle: int


@dataclass
class WeightsReport(Section):
    """The weight transfer (``weights``)."""

    method: str                         # "interp" or "robust": the one that ran
    chosen: str | None = None           # "auto" when ``--weights auto`` chose it, else None
    target_pieces: int | None = None    # the target's pieces (welded) when auto chose, else None
    robust: RobustStats | None = None   # with method "robust", else None
    max_influences: int = 0             # the most joints of one vertex
    influence_limit: int = 8            # joints per vertex kept: --max-influences, or the source's own
    mean_influences: float = 0.0
    time: float = 0.0                   # seconds

    _sections: ClassVar[dict] = {"robust": RobustStats}


@dataclass
class QualityVerdict(Section):
    """How far to trust the result (``quality``; :mod:`~asetransfer.stages.quality`)."""

    verdict: str                        # "ok", "check" or "poor"
    reasons: list                       # one sentence per measure that is not ok
    marker_residual_pct_height: float   # largest marker residual, % of the target's height
    mapped_area_fraction: float         # share of the target's area the fit reaches
    fit_distance_pct_height: float      # mean distance between the fitted source and the target, % height
    joints_outside_body: list           # joint names
    bones_out_of_proportion: list = field(default_factory=list)  # joints ending such bones
    feet_pointing_back: list = field(default_factory=list)       # toe joints pointing to the heel
    limbs_crossed: list = field(default_factory=list)            # left elbows/knees/ankles on the right
    joints_on_carried_pieces: list = field(default_factory=list)  # body joints skinned mostly on pieces no marker fitted
    hanging_arms: list = field(default_factory=list)             # elbows/wrists of hanging arms no marker holds


@dataclass
class ShapeRecord(Section):
    """One blend shape carried to the target (``blendshapes.carried``)."""

    name: str
    target_vertices: int                        # target vertices it moves
    max_displacement_pct_height: float          # its largest vertex offset, % of the target's height
    confidence: float | None                    # share of where it moves that the map holds closely (None: still)
    map_distance_pct_height: float | None       # mean distance target -> registered source there, % height


@dataclass
class BlendshapesReport(Section):
    """The source's blend shapes carried onto the target (``blendshapes``; present only when
    the source has morph targets)."""

    mode: str                                   # "auto": carried, "off": not (--blendshapes)
    source_shapes: int                          # morph targets of the source
    carried: list = field(default_factory=list)     # ShapeRecord per shape written on the target
    dropped: list = field(default_factory=list)     # names the target has its own morph target of (kept)
    refined_vertices: int = 0                   # source vertices whose map was made finer
    time: float = 0.0                           # seconds

    @classmethod
    def from_json(cls, data) -> "BlendshapesReport":
        report = super().from_json(data)
        if not isinstance(report.carried, list):
            raise ReportSchemaError("BlendshapesReport: carried must be a list")
        report.carried = [ShapeRecord.from_json(r) for r in report.carried]
        return report


@dataclass
class InputsRecord(Section):
    """What a batch job's output depends on (``inputs``): SHA-256 digests (hex) of its files
    and options, the outputs asked for and the version; a job whose record matches is skipped."""

    asetransfer: str            # the version
    source: str
    target: str
    markers: str | None         # None: no marker file
    options: str
    outputs: list               # file names of the rig and the preview


@dataclass
class TransferReport(Section):
    """A transfer's report: counts, one section per stage, and what the job adds when it
    writes files (``warnings``, ``inputs``, ``output_sha256``).  ``to_json()`` is the report
    file (docs/report.md)."""

    source_vertices: int
    target_vertices: int
    joints: int
    markers: int                            # markers used (hand and automatic)
    marker_origin: MarkerOrigin
    correspondence: CorrespondenceStats
    pose_match: PoseMatch
    skeleton: SkeletonReport
    weights: WeightsReport
    timings: TransferTimings
    quality: QualityVerdict
    blendshapes: BlendshapesReport | None = None    # the source's morph targets carried (None: it has none)
    warnings: list = field(default_factory=list)    # the run's warning lines (the job's)
    inputs: InputsRecord | None = None              # a batch job's record, else None
    output_sha256: str | None = None                # of the rig file written, else None

    _sections: ClassVar[dict] = {"marker_origin": MarkerOrigin, "correspondence": CorrespondenceStats,
                                 "pose_match": PoseMatch, "skeleton": SkeletonReport, "weights": WeightsReport,
                                 "timings": TransferTimings, "quality": QualityVerdict, "inputs": InputsRecord,
                                 "blendshapes": BlendshapesReport}

    def to_json(self) -> dict:
        data = super().to_json()
        if self.blendshapes is None:  # a source without morph targets: the report as it always was
            del data["blendshapes"]
        return {"schema": REPORT_SCHEMA, **data}

    @classmethod
    def from_json(cls, data) -> "TransferReport":
        """The report of JSON ``data``; :class:`ReportSchemaError` unless it is a report of
        :data:`REPORT_SCHEMA` with every section."""
        schema = data.get("schema") if isinstance(data, dict) else None
        if schema != REPORT_SCHEMA:
            raise ReportSchemaError(f"not an {REPORT_SCHEMA} report (schema {schema!r})")
        return super().from_json(data)

