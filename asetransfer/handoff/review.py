"""What a TD looks at to accept a transferred rig: the target bent in test poses, how
closely the correspondence reached each vertex, the joints the checks doubt, and the
hands and feet to look at closely.

:func:`review_transfer` gathers them from a transfer's result as plain arrays, for
the preview picture (:mod:`asetransfer.io.preview`) and the QA page
(:mod:`asetransfer.io.qa_page`) to draw.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..humanoid.body import axis_vector, body_axes, guess_up_axis
from ..humanoid.naming import is_head_name
from ..humanoid.skeleton_map import propose_skeleton_map
from ..model.animation import Animation
from ..model.correspondence import Correspondence
from ..model.mesh import Mesh
from ..model.report import TransferReport
from ..model.rig import Rig
from ..model.roles import SIDES
from ..stages.quality import height as mesh_height
from .poses import stress_poses
from .retarget import retarget

#: a close-up shows the vertices weighted at least this much to the hand's (foot's) joints
REGION_WEIGHT = 0.5
#: joint flags: "poor" joints are drawn red, "check" ones orange
FLAG_LEVELS = ("check", "poor")
#: the name of the source file's own animation among the poses
SOURCE_MOTION = "source motion"


@dataclass(eq=False)
class Review:
    """A transfer gathered for review (see the module's docstring).

    poses : test pose name -> :class:`~asetransfer.model.animation.Animation` on the target's
        skeleton, rest pose first, the pose last (:func:`~asetransfer.handoff.poses.stress_poses`;
        none for a skeleton without a humanoid map), and the source's motion retargeted
        (:data:`SOURCE_MOTION`) when its file has one.
    fit_distance : (n,) each target vertex's distance to its point on the registered source
        (file units): how closely the correspondence reached it.
    fitted : (n,) bool, the vertices the correspondence fitted (False: carried along).
    height : the target's height (file units), the scale of the distances.
    joint_flags : joint name -> (level in :data:`FLAG_LEVELS`, reason).
    regions : the hands and feet to look at closely (:func:`limb_regions`; empty without a humanoid map).
    """

    poses: dict
    fit_distance: np.ndarray
    fitted: np.ndarray
    height: float
    joint_flags: dict = field(default_factory=dict)
    regions: list = field(default_factory=list)

    def posed(self, rig: Rig, *shown: tuple) -> list:
        """The test poses ``(name, view)`` the review has, as the preview draws them: dicts of
        ``label``, ``vertices`` (n, 3) and ``joints`` (J, 3) in the pose (its last frame), ``view``."""
        out = []
        for name, view in shown:
            if name in self.poses:
                world = self.poses[name].world(rig.skeleton)[-1]
                out.append({"label": name, "vertices": rig.posed_vertices(world), "joints": world[:, :3, 3],
                            "view": view})
        return out


def fit_distance(target_vertices: np.ndarray, correspondence: Correspondence, source_faces: np.ndarray) -> np.ndarray:
    """(n,) ``|v_i - p_i|``: each target vertex ``v_i`` (n, 3) to its correspondence ``p_i`` on
    the registered source (its triangle of ``source_faces`` (F, 3) at its barycentric
    coordinates, in the target's frame)."""
    points = correspondence.target_to_source.positions(correspondence.registered_source, source_faces)
    return np.linalg.norm(np.asarray(target_vertices, dtype=np.float64) - points, axis=1)


def joint_flags(report: TransferReport) -> dict:
    """Joint name -> ``(level, reason)`` for the joints a transfer's checks doubt: "poor" for
    the quality verdict's joints (outside the body, bones out of proportion, toes pointing
    back), "check" for joints placed by a fallback (their Procrustes fit or their parent), from
    pieces no marker fitted, or along an arm hanging on the body with no marker at its elbow."""
    flags = {name: ("check", "placed by a fallback") for name in report.skeleton.fallback_joints}
    quality = report.quality
    flags.update({name: ("check", "skinned on pieces no marker fitted") for name in quality.joints_on_carried_pieces})
    flags.update({name: ("check", "on an arm hanging on the body, no marker at its elbow") for name in quality.hanging_arms})
    for names, reason in ((quality.bones_out_of_proportion, "bone out of proportion"),
                          (quality.feet_pointing_back, "toe points to the heel"),
                          (quality.joints_outside_body, "outside the body")):
        flags.update({name: ("poor", reason) for name in names})
    return flags


def limb_regions(rig: Rig, mapping: dict) -> list:
    """The hands and feet of a humanoid rig, to look at closely: dicts of ``label`` (``"left
    hand"``, ...), ``joints`` (k,) (the wrist or ankle, then its descendants), ``vertices`` (m,)
    (those whose weights on these joints sum to :data:`REGION_WEIGHT` or more) and ``view``
    (``"palm"``: along the palm's normal, ``"side"``: the body's side).

    ``mapping`` : role -> joint name; parts whose role is not mapped are left out."""
    sk = rig.skeleton
    regions = []
    for role, part, view in (("wrist", "hand", "palm"), ("ankle", "foot", "side")):
        for s in SIDES:
            name = mapping.get(f"{role}_{s}")
            if name not in sk.names:
                continue
            root = sk.index(name)
            joints = np.concatenate([[root], sk.hierarchy.descendants(root)]).astype(np.int64)
            inside = np.zeros(sk.n_joints, dtype=bool)
            inside[joints] = True
            share = (rig.skin.weights * inside[rig.skin.indices]).sum(axis=1)
            vertices = np.flatnonzero(share >= REGION_WEIGHT)
            if len(vertices):
                regions.append({"label": f"{'left' if s == 'l' else 'right'} {part}", "joints": joints,
                                "vertices": vertices, "view": view})
    return regions


def guessed_frame(mesh: Mesh, up_axis: str | None = None, rig: Rig | None = None) -> dict:
    """A body frame (unit ``up``, ``forward``, ``left``) guessed without landmarks: up the
    signed axis ``up_axis`` (``"+Y"``; default :func:`~asetransfer.humanoid.body.guess_up_axis`),
    forward the rig's root -> head direction along the ground when it leans that way by
    more than a third (a creature on all fours, a bird), else the bounding box's shorter
    horizontal side (a standing body is thinner front to back than across)."""
    up = axis_vector(up_axis or guess_up_axis(mesh, rig)[0])
    k = int(np.argmax(np.abs(up)))
    others = [i for i in range(3) if i != k]
    forward = np.eye(3)[min(others, key=lambda i: np.ptp(mesh.vertices[:, i]))]
    if rig is not None:
        ahead = _root_to_head(rig)
        along = ahead - (ahead @ up) * up
        if np.linalg.norm(along) > np.linalg.norm(ahead) / 3:
            i = others[int(np.argmax(np.abs(along[others])))]
            forward = np.sign(along[i]) * np.eye(3)[i]
    return {"up": up, "forward": forward, "left": np.cross(up, forward)}


def _root_to_head(rig: Rig) -> np.ndarray:
    """(3,) from the root joint to the first joint named like a head (zero without one)."""
    sk = rig.skeleton
    heads = [j for j, n in enumerate(sk.names) if is_head_name(n)]
    position = sk.bind_world[:, :3, 3]
    return position[heads[0]] - position[int(sk.roots()[0])] if heads else np.zeros(3)


def review_frames(source: Rig, rotation: np.ndarray, landmark_frames: dict, source_up: str | None = None) -> tuple:
    """The body frames ``(source, target)`` (dicts of unit ``up``, ``forward``, ``left``) a
    transfer is shown in.

    The source's: its landmarks' (``landmark_frames["source"]``, a
    :class:`~asetransfer.model.report.LandmarkFrame`), else its skeleton map's
    (:func:`~asetransfer.humanoid.body.body_axes` on the bind pose), else
    :func:`guessed_frame` with ``source_up`` (the up axis its file declares).  The target's:
    its landmarks', else the source's turned by the correspondence's ``rotation`` (3, 3).
    """
    frame = landmark_frames.get("source")
    if frame is not None:
        src = {"up": frame.up, "forward": frame.forward, "left": frame.left}
    else:
        src = _mapped_frame(source) or guessed_frame(source.mesh, source_up, source)
    frame = landmark_frames.get("target")
    if frame is not None:
        return src, {"up": frame.up, "forward": frame.forward, "left": frame.left}
    return src, {k: np.asarray(rotation) @ v for k, v in src.items()}


def _mapped_frame(rig: Rig) -> dict | None:
    mapping, missing = propose_skeleton_map(rig.skeleton)
    if missing:
        return None
    position = rig.skeleton.bind_world[:, :3, 3]
    try:
        up, forward, left = body_axes({role: position[rig.skeleton.index(n)] for role, n in mapping.items()})
    except ValueError:  # left and right joints coincide
        return None
    return {"up": up, "forward": forward, "left": left}


def review_transfer(source: Rig, rig: Rig, correspondence: Correspondence, report: TransferReport,
                    source_motion: Animation | None = None) -> Review:
    """The :class:`Review` of a transfer of ``source`` onto ``rig`` (the rigged target) through
    ``correspondence``, whose report is ``report``; a ``source_motion`` (on the source's
    skeleton, as its file holds it) is retargeted and added to the poses as ``"source motion"``."""
    mapping, missing = propose_skeleton_map(rig.skeleton)
    vertices = rig.mesh.vertices
    fitted = correspondence.target_solved
    poses = stress_poses(source, rig)
    if source_motion is not None:
        poses[SOURCE_MOTION] = retarget(source_motion, source, rig)[0]
    return Review(poses=poses,
                  fit_distance=fit_distance(vertices, correspondence, source.mesh.faces),
                  fitted=np.ones(len(vertices), dtype=bool) if fitted is None else np.asarray(fitted, dtype=bool),
                  height=mesh_height(rig.mesh),
                  joint_flags=joint_flags(report),
                  regions=[] if missing else limb_regions(rig, mapping))
