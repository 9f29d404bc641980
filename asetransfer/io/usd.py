"""Write (and read back) skinned characters as UsdSkel: .usda, .usdc, .usdz (``usd-core``).

Layout of a written file (``docs/formats.md``)::

    /Character           SkelRoot (the default prim), skel:skeleton -> Skeleton
        Skeleton         joints (paths such as "hips/spine_001"), jointNames (the rig's own
                         names, kept verbatim), bindTransforms (world), restTransforms (local)
        <part>           one Mesh per mesh part (per piece of the target's look): points
                         (bind pose), triangles, normals / st / st1 / displayColor by corner
                         (io/usd_look.py), primvars:skel:jointIndices / jointWeights (vertex,
                         elementSize K), primvars:skel:geomBindTransform = identity,
                         SkelBindingAPI, skel:blendShapes (the rig's blend shape names) ->
                         skel:blendShapeTargets, material:binding (or one GeomSubset per material)
            <shape>      one BlendShape per blend shape: offsets and pointIndices of the
                         part's vertices it moves, normalOffsets when it has them
        Materials        one UsdPreviewSurface Material per material of the look

Stage metadata ``metersPerUnit`` and ``upAxis`` say the units and up axis of the rig's
coordinates (which are the input's own: nothing is converted).  USD matrices are
row-vector (``p' = p M``): our column-vector matrices are written transposed.  The
joint orientation split (orient / rotation) is not kept: USD has the local rest matrix.
``usd-core`` is the optional ``usd`` extra, imported on use.
"""
from __future__ import annotations

import logging
import os
import re
import tempfile

import numpy as np

from ..config import influence_limit
from ..errors import InputError
from ..model.rig import Rig
from ..model.skeleton import Skeleton
from ..model.skin import SkinWeights
from ..model.transforms import apply, global_from_local
from .assembly import MeshPiece, joined_shapes, merge_pieces, stack_influences
from .atomic import atomic_write, check_output_path
from .files import read_bytes
from .look_parts import parts_of_look, parts_of_mesh
from .usd_look import bind_materials, define_corner_primvars, define_materials, texture_files

log = logging.getLogger("asetransfer")
MISSING = 'writing and reading USD needs usd-core: pip install "asetransfer[usd]"'
ROOT, SKELETON = "/Character", "/Character/Skeleton"


def _pxr(path):
    """The pxr modules (usd-core), or a one-line InputError naming the extra to install."""
    try:
        from pxr import Gf, Sdf, Usd, UsdGeom, UsdSkel, Vt
    except ImportError:
        raise InputError(path, MISSING) from None
    return Gf, Sdf, Usd, UsdGeom, UsdSkel, Vt


def require_usd(path) -> None:
    """Raise a one-line InputError on ``path`` unless usd-core is installed."""
    _pxr(path)


def usd_identifier(name: str) -> str:
    """A valid USD prim name from any string: characters other than ``[A-Za-z0-9_]`` become
    ``_`` and a leading digit gets a ``_`` in front (``spine.001`` -> ``spine_001``)."""
    out = re.sub(r"[^A-Za-z0-9_]", "_", name) or "_"
    return "_" + out if out[0].isdigit() else out


def _unique(names) -> list:
    """``names`` made unique by suffixes ``_1``, ``_2``... (first come keeps its name)."""
    seen, out = set(), []
    for n in names:
        m, k = n, 1
        while m in seen:
            m, k = f"{n}_{k}", k + 1
        seen.add(m)
        out.append(m)
    return out


def joint_paths(skeleton: Skeleton) -> list:
    """UsdSkel joint paths: each joint's identifier below its parent's path (siblings unique)."""
    paths = [None] * skeleton.n_joints
    taken = {}
    for j in skeleton.order():
        p = skeleton.parents[j]
        prefix = paths[p] + "/" if p >= 0 else ""
        base = usd_identifier(skeleton.names[j])
        name, k = base, 1
        while (prefix, name) in taken:
            name, k = f"{base}_{k}", k + 1
        taken[(prefix, name)] = j
        paths[j] = prefix + name
    return paths


def _matrices(gf, vt, m: np.ndarray):
    """(J, 4, 4) column-vector matrices as a Vt.Matrix4dArray (row-vector, transposed)."""
    return vt.Matrix4dArray([gf.Matrix4d(x.T.tolist()) for x in np.asarray(m, dtype=np.float64)])


def _weights(rig: Rig, max_influences: int | None) -> tuple:
    """(V, K) joint indices and float32 weights (rows sum to 1 in float32), at most ``max_influences``
    (None: :func:`~asetransfer.config.influence_limit` of the skin's own)."""
    skin = rig.skin
    max_influences = influence_limit(max_influences, skin.indices.shape[1])
    if skin.indices.shape[1] > max_influences:
        skin = SkinWeights.from_influences(skin.indices, skin.weights, skin.n_joints, max_influences)
    w32 = skin.weights.astype(np.float32)
    w32[:, 0] = np.float32(1.0) - w32[:, 1:].sum(axis=1, dtype=np.float32)  # largest absorbs rounding
    return skin.indices.astype(np.int32), w32


def rig_to_stage(rig: Rig, *, max_influences: int | None = 8, metres_per_unit: float = 1.0, up_axis: str = "Y",
                 path=None, look=None, texture_folder: str = "textures") -> tuple:
    """An in-memory Usd.Stage holding ``rig`` (layout in the module docstring).

    Parameters
    ----------
    rig : the character; its skin pruned to ``max_influences`` per vertex.
    metres_per_unit, up_axis : stage metadata (``up_axis`` "Y" or "Z", a sign is dropped).
    path : the output file, named in errors.
    look : the target's look (:mod:`.usd_look`: its meshes, corner normals and UVs,
        materials), None: the rig's mesh parts.
    texture_folder : where the materials' textures are, relative to the layer.

    Returns
    -------
    stage; textures: file name -> image bytes the stage refers to; lost: what of the look
    could not be written.
    """
    gf, sdf, usd, usd_geom, usd_skel, vt = _pxr(path)
    stage = usd.Stage.CreateInMemory()
    usd_geom.SetStageMetersPerUnit(stage, float(metres_per_unit))
    usd_geom.SetStageUpAxis(stage, usd_geom.Tokens.z if up_axis.strip("+-").upper() == "Z" else usd_geom.Tokens.y)
    root = usd_skel.Root.Define(stage, ROOT)
    stage.SetDefaultPrim(root.GetPrim())
    sk = rig.skeleton
    skel = usd_skel.Skeleton.Define(stage, SKELETON)
    skel.CreateJointsAttr(vt.TokenArray(joint_paths(sk)))
    skel.CreateJointNamesAttr(vt.TokenArray(list(sk.names)))
    skel.CreateBindTransformsAttr(_matrices(gf, vt, sk.bind_world))
    skel.CreateRestTransformsAttr(_matrices(gf, vt, sk.rest_local()))
    usd_skel.BindingAPI.Apply(root.GetPrim()).CreateSkeletonRel().SetTargets([sdf.Path(SKELETON)])
    idx, w = _weights(rig, max_influences)
    parts, materials, lost = parts_of_look(look, rig.mesh) if look is not None else (None, [], [])
    parts = parts if parts is not None else parts_of_mesh(rig.mesh)
    shaders = define_materials(stage, materials, _unique([usd_identifier(m.name) for m in materials]), texture_folder)
    for name, part in zip(_unique([usd_identifier(p.name) for p in parts]), parts):
        prim = _define_mesh(stage, f"{ROOT}/{name}", points=rig.mesh.vertices[part.ids], triangles=part.triangles,
                            indices=idx[part.ids], weights=w[part.ids])
        define_corner_primvars(prim, part)
        bind_materials(prim, part, shaders)
        if name != part.name:
            prim.SetDisplayName(part.name)  # the rig's own part name, which a prim name cannot hold
        _define_blend_shapes(stage, prim, part.ids, rig.shapes)
    return stage, texture_files(materials), lost


def _define_blend_shapes(stage, mesh_prim, ids: np.ndarray, shapes) -> None:
    """Every blend shape as a UsdSkelBlendShape below ``mesh_prim`` (whose vertices are the
    rig's ``ids``): the offsets of the vertices it moves there and their ``pointIndices``,
    ``normalOffsets`` when it has them; the mesh's ``skel:blendShapes`` are the shapes' own
    names (weights 0 unless a SkelAnimation drives them: the mesh as given)."""
    if not shapes:
        return
    _, sdf, _, _, usd_skel, vt = _pxr(None)
    paths = []
    for shape, name in zip(shapes, _unique([usd_identifier(s.name) for s in shapes])):
        found = np.searchsorted(ids, shape.vertices)
        inside = found < len(ids)
        here = np.flatnonzero(inside & (ids[np.minimum(found, len(ids) - 1)] == shape.vertices))
        blend = usd_skel.BlendShape.Define(stage, mesh_prim.GetPath().AppendChild(name))
        blend.CreateOffsetsAttr(vt.Vec3fArray.FromNumpy(shape.positions[here].astype(np.float32)))
        blend.CreatePointIndicesAttr(vt.IntArray.FromNumpy(found[here].astype(np.int32)))
        if shape.normals is not None:
            blend.CreateNormalOffsetsAttr(vt.Vec3fArray.FromNumpy(shape.normals[here].astype(np.float32)))
        paths.append(blend.GetPath())
    binding = usd_skel.BindingAPI(mesh_prim)
    binding.CreateBlendShapesAttr(vt.TokenArray([s.name for s in shapes]))
    binding.CreateBlendShapeTargetsRel().SetTargets(paths)


def _define_mesh(stage, prim_path: str, *, points, triangles, indices, weights):
    """One skinned triangle Mesh prim bound to the skeleton (vertex-interpolated skin primvars);
    returns the prim."""
    gf, sdf, usd, usd_geom, usd_skel, vt = _pxr(None)
    mesh = usd_geom.Mesh.Define(stage, prim_path)
    pts = np.asarray(points, dtype=np.float32)
    mesh.CreatePointsAttr(vt.Vec3fArray.FromNumpy(pts))
    mesh.CreateFaceVertexCountsAttr(vt.IntArray.FromNumpy(np.full(len(triangles), 3, np.int32)))
    mesh.CreateFaceVertexIndicesAttr(vt.IntArray.FromNumpy(np.ascontiguousarray(triangles, dtype=np.int32).ravel()))
    mesh.CreateSubdivisionSchemeAttr(usd_geom.Tokens.none)  # triangles as modelled, not a cage
    lo, hi = (pts.min(axis=0), pts.max(axis=0)) if len(pts) else (np.zeros(3), np.zeros(3))
    mesh.CreateExtentAttr(vt.Vec3fArray([gf.Vec3f(*map(float, lo)), gf.Vec3f(*map(float, hi))]))
    binding = usd_skel.BindingAPI.Apply(mesh.GetPrim())
    k = indices.shape[1]
    binding.CreateJointIndicesPrimvar(False, k).Set(vt.IntArray.FromNumpy(np.ascontiguousarray(indices).ravel()))
    binding.CreateJointWeightsPrimvar(False, k).Set(vt.FloatArray.FromNumpy(np.ascontiguousarray(weights).ravel()))
    binding.CreateGeomBindTransformAttr(gf.Matrix4d(1.0))
    binding.CreateSkeletonRel().SetTargets([sdf.Path(SKELETON)])
    return mesh.GetPrim()


def write_usd_over(look, rig: Rig, path, max_influences: int | None = 8, inputs=(), **options) -> None:
    """:func:`write_usd` with the target's look (:mod:`.usd_look`); what USD is not given (other
    attributes, the target's morph targets, other nodes) is named in one warning."""
    from .gltf_over import look_contents

    from .look_parts import CARRIED_ATTRIBUTES

    dropped = [p for p in look_contents(look, carried=CARRIED_ATTRIBUTES)
               if not p.rstrip("s").endswith(("material", "image"))]
    write_usd(path, rig, max_influences, inputs, look=look, dropped=dropped, **options)


def write_usd(path, rig: Rig, max_influences: int | None = 8, inputs=(), *, metres_per_unit: float = 1.0,
              up_axis: str = "Y", look=None, dropped=()) -> None:
    """Write ``rig`` as .usda (text; same rig -> same bytes), .usdc (binary) or .usdz
    (a package holding one .usdc and its textures), atomically; ``inputs`` are never
    overwritten.  With ``look`` (:func:`write_usd_over`) the materials' textures go beside a
    .usda/.usdc in ``<name>.textures/``."""
    from .gltf_write import check_writable

    check_output_path(path, inputs)
    check_writable(rig)
    folder = os.path.splitext(os.path.basename(os.fspath(path)))[0] + ".textures"
    stage, textures, lost = rig_to_stage(rig, max_influences=max_influences, metres_per_unit=metres_per_unit,
                                         up_axis=up_axis, path=path, look=look, texture_folder=folder)
    if list(dropped) + lost:
        log.warning("%s: not carried to %s: %s", look.path, os.path.basename(os.fspath(path)),
                    "; ".join(list(dropped) + lost))
    ext = os.path.splitext(os.fspath(path))[1].lower()
    if ext == ".usdz":
        atomic_write(path, _binary_usd(path, stage, ext, {f"{folder}/{k}": v for k, v in textures.items()}),
                     inputs=inputs)
        return
    for name, data in textures.items():  # beside the layer, which refers to them
        target = os.path.join(os.path.dirname(os.path.abspath(os.fspath(path))), folder, name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        atomic_write(target, data, inputs=inputs)
    data = stage.GetRootLayer().ExportToString().encode("utf-8") if ext == ".usda" else _binary_usd(path, stage, ext)
    atomic_write(path, data, inputs=inputs)


def _binary_usd(path, stage, ext: str, files: dict | None = None) -> bytes:
    """The bytes of ``stage`` as .usdc, or as a .usdz package of one .usdc and ``files``
    (relative path -> bytes: its textures), made in a temporary folder, since usd-core writes
    those formats to files only."""
    from pxr import UsdUtils

    with tempfile.TemporaryDirectory(prefix="asetransfer-usd-") as tmp:
        usdc = os.path.join(tmp, "character.usdc")
        stage.GetRootLayer().Export(usdc)
        for name, data in (files or {}).items():
            os.makedirs(os.path.dirname(os.path.join(tmp, name)), exist_ok=True)
            with open(os.path.join(tmp, name), "wb") as f:
                f.write(data)
        out = usdc
        if ext == ".usdz":
            out = os.path.join(tmp, "character.usdz")
            if not UsdUtils.CreateNewUsdzPackage(usdc, out):
                raise InputError(path, "usd-core could not make the .usdz package")
        with open(out, "rb") as f:
            data = f.read()
    return _undated(data) if ext == ".usdz" else data


#: a zip entry's DOS time and date fields, 1980-01-01 00:00 (the format's first day)
_DOS_EPOCH = b"\x00\x00\x21\x00"


def _undated(package: bytes) -> bytes:
    """The zip ``package`` with every entry's modification time set to :data:`_DOS_EPOCH` in
    place (local and central headers), so that the same rig makes the same bytes: usd-core
    stamps the files' times, and a .usdz keeps its entries' offsets (64-byte aligned), so the
    fields are overwritten, not the archive rewritten."""
    import io
    import struct
    import zipfile

    out = bytearray(package)
    with zipfile.ZipFile(io.BytesIO(package)) as archive:
        entries, directory = archive.infolist(), archive.start_dir
    for entry in entries:
        at = entry.header_offset
        if out[at:at + 4] != b"PK\x03\x04":
            return package  # not a layout we know: left as made
        out[at + 10:at + 14] = _DOS_EPOCH
    at = directory
    for _ in entries:
        if out[at:at + 4] != b"PK\x01\x02":
            return package
        out[at + 12:at + 16] = _DOS_EPOCH
        name, extra, comment = struct.unpack("<HHH", out[at + 28:at + 34])
        at += 46 + name + extra + comment
    return bytes(out)


# ---------------------------------------------------------------------- reading
def _open_stage(path):
    """The stage of a USD file, errors as one-line InputError."""
    _, _, usd, _, _, _ = _pxr(path)
    read_bytes(path)  # missing, unreadable, empty: the usual messages
    try:
        stage = usd.Stage.Open(os.fspath(path))
    except Exception as e:  # usd-core raises Tf.ErrorException with multi-line text
        raise InputError(path, f"cannot open USD file ({str(e).strip().splitlines()[-1][:200]})") from None
    if stage is None:
        raise InputError(path, "cannot open USD file")
    return stage


def _skel_and_meshes(stage):
    """The first Skeleton of the stage and the Mesh prims bound to it (stage order)."""
    _, _, usd, usd_geom, usd_skel, _ = _pxr(None)
    skel, meshes = None, []
    for prim in stage.Traverse():
        if skel is None and prim.IsA(usd_skel.Skeleton):
            skel = usd_skel.Skeleton(prim)
        elif prim.IsA(usd_geom.Mesh):
            meshes.append(prim)
    return skel, meshes


def _mesh_arrays(path, prim) -> tuple:
    """A Mesh prim's (V, 3) points as authored, fan-triangulated (T, 3) faces and (4, 4)
    local-to-world matrix (default time)."""
    _, _, usd, usd_geom, _, _ = _pxr(path)
    m = usd_geom.Mesh(prim)
    pts = np.asarray(m.GetPointsAttr().Get() or [], dtype=np.float64).reshape(-1, 3)
    counts = np.asarray(m.GetFaceVertexCountsAttr().Get() or [], dtype=np.int64)
    idx = np.asarray(m.GetFaceVertexIndicesAttr().Get() or [], dtype=np.int64)
    if counts.sum() != len(idx) or (counts < 0).any():
        raise InputError(path, f"mesh {prim.GetPath()} has {len(idx)} face vertex indices for {counts.sum()} corners")
    starts = np.cumsum(counts) - counts
    n_tris = np.maximum(counts - 2, 0)
    face = np.repeat(np.arange(len(counts)), n_tris)
    k = np.arange(len(face)) - np.repeat(np.cumsum(n_tris) - n_tris, n_tris) + 1
    tris = np.stack([idx[starts[face]], idx[starts[face] + k], idx[starts[face] + k + 1]], axis=1)
    world = np.array(usd_geom.Xformable(prim).ComputeLocalToWorldTransform(usd.TimeCode.Default())).T
    return pts, tris, world


def read_usd(path):
    """A USD file as a :class:`Rig` (a Skeleton and Mesh prims bound to it) or a static
    :class:`Mesh` (its Mesh prims in world space, parts named after the prims)."""
    stage = _open_stage(path)
    skel, meshes = _skel_and_meshes(stage)
    if not meshes:
        raise InputError(path, "contains no mesh")
    if skel is not None:
        return _usd_rig(path, skel, meshes)
    pieces = []
    for prim in meshes:
        pts, tris, world = _mesh_arrays(path, prim)
        pieces.append(MeshPiece(_part_name(prim), apply(world, pts), tris))
    return merge_pieces(path, pieces)


def _part_name(prim) -> str:
    """The part name of a Mesh prim: its display name (the rig's own part name), else its name."""
    return prim.GetDisplayName() or prim.GetName()


def read_usd_rig(path) -> Rig:
    """A skinned character from a USD file (as written by :func:`write_usd`)."""
    rig = read_usd(path)
    if not isinstance(rig, Rig):
        raise InputError(path, "has no skeleton (no UsdSkel Skeleton bound to a mesh)")
    return rig


def _usd_rig(path, skel, meshes) -> Rig:
    """The Rig of a UsdSkel Skeleton and the meshes bound to it (``jointNames`` as names when present)."""
    _, _, _, _, usd_skel, _ = _pxr(path)
    joints = [str(j) for j in skel.GetJointsAttr().Get() or []]
    names = [str(n) for n in (skel.GetJointNamesAttr().Get() or [])] or [j.split("/")[-1] for j in joints]
    parents = np.asarray(usd_skel.Topology(joints).GetParentIndices(), dtype=np.int64)
    bind = np.array([np.array(m).T for m in skel.GetBindTransformsAttr().Get() or []]).reshape(-1, 4, 4)
    rest = np.array([np.array(m).T for m in skel.GetRestTransformsAttr().Get() or []]).reshape(-1, 4, 4)
    if not (len(names) == len(joints) == len(bind) == len(rest)) or not joints:
        raise InputError(path, f"skeleton {skel.GetPath()} has {len(joints)} joints, {len(names)} names, "
                               f"{len(bind)} bind and {len(rest)} rest transforms")
    pieces, rows, shapes = [], [], []
    for prim in meshes:
        binding = usd_skel.BindingAPI(prim)
        ji, jw = binding.GetJointIndicesPrimvar(), binding.GetJointWeightsPrimvar()
        if not ji or not ji.HasValue():
            continue
        pts, tris, world = _mesh_arrays(path, prim)
        k = ji.GetElementSize()
        geom_bind = binding.GetGeomBindTransformAttr().Get()  # the mesh in skeleton space (UsdSkel)
        placement = world if geom_bind is None else np.array(geom_bind).T
        pieces.append(MeshPiece(_part_name(prim), apply(placement, pts), tris))
        rows.append((np.asarray(ji.Get(), dtype=np.int64).reshape(-1, k),
                     np.asarray(jw.Get(), dtype=np.float64).reshape(-1, k)))
        shapes.append(_blend_shapes_of(path, prim, placement, len(pts)))
    if not pieces:
        raise InputError(path, "has a skeleton but no mesh bound to it")
    mesh = merge_pieces(path, pieces)
    idx, w = _influences_on_joints(path, *stack_influences(rows), len(names))
    try:
        skeleton = Skeleton.from_world(names, parents, global_from_local(rest, parents), bind)
        return Rig(mesh, skeleton, SkinWeights.from_influences(idx, w, len(names)),
                   joined_shapes(shapes, [len(p.positions) for p in pieces]))
    except ValueError as e:
        raise InputError(path, str(e)) from None


def _influences_on_joints(path, indices: np.ndarray, weights: np.ndarray, n_joints: int) -> tuple:
    """(V, K) joint indices and weights with the slots of weight 0 set to joint 0 (they bind
    nothing, whatever joint they name: -1 pads rows in some exporters); InputError naming the
    first weighted slot whose joint lies outside ``0 .. n_joints - 1``."""
    empty = ~(weights != 0)  # NaN weights stay for the rig's own check
    indices = np.where(empty, 0, indices)
    outside = (indices < 0) | (indices >= n_joints)
    if outside.any():
        v, k = np.argwhere(outside)[0]
        raise InputError(path, f"vertex {v} has a skin weight on joint index {indices[v, k]}, outside the "
                               f"skeleton's {n_joints} joints")
    return indices, weights


def _blend_shapes_of(path, prim, placement: np.ndarray, n_points: int) -> dict:
    """A mesh prim's UsdSkelBlendShapes (``skel:blendShapes`` and their targets): name ->
    (point indices, (k, 3) offsets, (k, 3) normal offsets or None), turned by ``placement``'s
    linear part (the mesh's bind transform, as its points)."""
    _, _, _, _, usd_skel, _ = _pxr(path)
    binding = usd_skel.BindingAPI(prim)
    names = [str(n) for n in (binding.GetBlendShapesAttr().Get() or [])]
    targets = binding.GetBlendShapeTargetsRel().GetTargets() if names else []
    linear, out = placement[:3, :3], {}
    for name, target in zip(names, targets):
        blend = usd_skel.BlendShape(prim.GetStage().GetPrimAtPath(target))
        offsets = np.asarray(blend.GetOffsetsAttr().Get() or [], dtype=np.float64).reshape(-1, 3)
        given = blend.GetPointIndicesAttr().Get()
        points = np.arange(len(offsets)) if given is None or not len(given) else np.asarray(given, dtype=np.int64)
        normals = blend.GetNormalOffsetsAttr().Get()
        if len(points) != len(offsets) or (len(points) and (points.min() < 0 or points.max() >= n_points)):
            raise InputError(path, f"blend shape {target} does not have one offset per point of {prim.GetPath()}")
        normals = None if normals is None or not len(normals) else \
            np.asarray(normals, dtype=np.float64).reshape(-1, 3) @ np.linalg.inv(linear)
        out[name] = (points, offsets @ linear.T, normals)
    return out


def usd_frame(path) -> dict:
    """The units and up axis a USD file declares: ``metres_per_unit`` and ``up_axis`` ("+Y"/"+Z")."""
    _, _, _, usd_geom, _, _ = _pxr(path)
    stage = _open_stage(path)
    return {"metres_per_unit": float(usd_geom.GetStageMetersPerUnit(stage)),
            "up_axis": "+" + str(usd_geom.GetStageUpAxis(stage))}
