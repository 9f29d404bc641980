"""A Blender scene for the add-on's checks (tests/blender_checks.py, tests/blender_marker_checks.py):
the characters, the operators' outcomes and reports, the rigs they build and the markers.
Imported by an interpreter that has ``bpy``."""
from __future__ import annotations

import ctypes
import os
import pathlib
import sys
import tempfile
from contextlib import contextmanager

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "blender"))
sys.path.insert(0, str(ROOT / "tests"))  # robot.py

import bpy  # noqa: E402
import numpy as np  # noqa: E402
from mathutils import Matrix  # noqa: E402

import asetransfer as at  # noqa: E402
from asetransfer_blender import convert, empties, scene  # noqa: E402


def fresh_scene(scale_length: float = 1.0):
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.context.scene.unit_settings.scale_length = scale_length


def import_source(path: str):
    """The source rig through Blender's own glTF importer (as a TD would); the importer
    converts metres to the scene's unit (an armature 100 x larger in a centimetre scene)."""
    bpy.ops.import_scene.gltf(filepath=path)
    return next(o for o in bpy.data.objects if o.type == "ARMATURE")


def add_target(mesh, name: str, size: float = 1.0, matrix=None):
    """A mesh object whose world-space vertices are ``size`` x the file's, in Blender's Z-up axes;
    with ``matrix`` the object carries that transform and its data the inverse."""
    world = convert.from_asetransfer(mesh.vertices, 1.0) * size
    m = np.eye(4) if matrix is None else np.asarray(matrix, dtype=np.float64)
    local = convert.transform_points(np.linalg.inv(m), world)
    data = bpy.data.meshes.new(name)
    data.from_pydata(local.tolist(), [], mesh.faces.tolist())
    obj = bpy.data.objects.new(name, data)
    obj.matrix_world = Matrix(m.tolist())
    bpy.context.scene.collection.objects.link(obj)
    return obj


def beside(obj, offset=(1.2, 0.0, 0.0)) -> None:
    """Move an object beside the source, as a TD stands the characters side by side."""
    obj.matrix_world = Matrix.Translation(offset) @ obj.matrix_world


def select(source, target):
    s = bpy.context.scene.asetransfer
    s.source, s.target = source, target
    return s


def built_rig(armature, copy) -> dict:
    """Bones (asetransfer frame) and dense weights of a built rig, by bone name."""
    scale = scene.unit_scale(bpy.context.scene)
    names = [b.name for b in armature.data.bones]
    frames = convert.joint_frames(np.array([np.array(b.matrix_local) for b in armature.data.bones]),
                                  np.array(armature.matrix_world), scale)
    weights = np.zeros((len(copy.data.vertices), len(names)))
    column = {g.index: names.index(g.name) for g in copy.vertex_groups}
    for v in copy.data.vertices:
        for g in v.groups:
            weights[v.index, column[g.group]] = g.weight
    return {"names": names, "frames": frames, "weights": weights}


def run(op) -> str:
    """An operator's outcome; one that reports an error raises RuntimeError when called from Python."""
    try:
        return sorted(op())[0]
    except RuntimeError as e:
        print(e)
        return "CANCELLED"


def rigged(name: str):
    return bpy.data.objects[f"{name} rig"], bpy.data.objects[f"{name} rigged"]


def marker_state() -> dict:
    """Every marker empty's marker name, exact location and confidence by object name, and
    the markers that count as automatic."""
    state = {"automatic": sorted(empties.scene_markers(bpy.context).automatic)}
    for side in ("source", "target"):
        for name, obj in empties.marker_empties(side).items():
            state[obj.name] = (name, empties.location(obj), obj.get(empties.CONFIDENCE_KEY))
    return state


@contextmanager
def captured_reports(lines: list):
    """The lines operators report in the block (headless Blender prints them on stdout,
    ``Warning: ...``, ``Info: ...``), appended to ``lines``."""
    libc = ctypes.CDLL(None)
    sys.stdout.flush()
    libc.fflush(None)
    saved, already = os.dup(1), len(lines)
    with tempfile.TemporaryFile() as f:
        os.dup2(f.fileno(), 1)
        try:
            yield lines
        finally:
            sys.stdout.flush()
            libc.fflush(None)
            os.dup2(saved, 1)
            os.close(saved)
            f.seek(0)
            lines.extend(f.read().decode("utf-8", "replace").splitlines())
    print("\n".join(lines[already:]))


def heads(name: str = "target") -> dict:
    """Bone name -> head (asetransfer frame) of the rig built for ``name``."""
    rig = built_rig(*rigged(name))
    return dict(zip(rig["names"], rig["frames"][:, :3, 3].tolist()))


def apart(a: dict, b: dict) -> dict:
    """Bone name -> distance between two rigs' heads."""
    return {n: float(np.linalg.norm(np.subtract(a[n], b[n]))) for n in a}


def remove_result(name: str = "target") -> None:
    """Delete a built rig (armature and bound copies) and its data."""
    arm = bpy.data.objects[f"{name} rig"]
    for obj in [o for o in bpy.data.objects if o.parent == arm] + [arm]:
        data = obj.data
        bpy.data.objects.remove(obj)
        (bpy.data.armatures if isinstance(data, bpy.types.Armature) else bpy.data.meshes).remove(data)


def surface_distance(points: np.ndarray, obj) -> float:
    """Largest distance from world points to an object's surface as the viewport shows it."""
    from asetransfer.geometry.surface import closest_points

    mesh = obj.evaluated_get(bpy.context.evaluated_depsgraph_get()).to_mesh()
    vertices, faces = scene.mesh_arrays(mesh)
    world = convert.transform_points(np.array(obj.matrix_world), vertices)
    return float(closest_points(np.asarray(points), world, faces)[2].max()) if len(points) else 0.0


def target_character(kind: str, source_path: str):
    """The target mesh of a check: a fixture file, or ``robot``: the fixture source cut into
    rigid plates with joint covers (tests/robot.py), one object in ~150 pieces."""
    if kind == "robot":
        from robot import robot

        return robot(at.load_rig(source_path), gap=0.03, overlap=0.0)[0].mesh
    return at.load_mesh(kind if os.path.isabs(kind) else str(ROOT / "fixtures" / kind))


def move_along_surface(empty, obj, distance: float) -> float:
    """Move a marker empty to the vertex of ``obj`` (as shown) nearest to ``distance`` away
    from it; returns how far it moved."""
    shown = scene.displayed_vertices(bpy.context, obj)
    here = np.array(empty.matrix_world.translation)
    far = np.linalg.norm(shown - here, axis=1)
    chosen = shown[int(np.argmin(np.abs(far - distance)))]
    empty.matrix_world = Matrix.Translation(chosen.tolist())
    return float(np.linalg.norm(chosen - here))


def pose_source(armature, angles: dict) -> None:
    for name, euler in angles.items():
        bone = armature.pose.bones[name]
        bone.rotation_mode = "XYZ"
        bone.rotation_euler = euler


def marker_distances(side: str, objects: list) -> dict:
    """Marker name -> distance from its ``side`` empty to the nearest of ``objects`` as shown."""
    located = {n: np.array(empties.location(o)) for n, o in empties.marker_empties(side).items()}
    return {n: min(surface_distance(p[None], obj) for obj in objects) for n, p in located.items()}
