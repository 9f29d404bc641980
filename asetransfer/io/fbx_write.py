"""Write a rig as a binary FBX 7.4 file: what Maya, MotionBuilder, Unity and Unreal exchange.

The scene, as the FBX SDK and Blender's exporter lay it out:

* ``GlobalSettings``: the up axis (its axis system declared as Blender's exporter does) and
  the unit (``UnitScaleFactor``: centimetres per unit) the rig is in; nothing is converted.
* one ``Model`` (``LimbNode``, with a ``LimbNode`` ``NodeAttribute``) per joint, parented
  as the skeleton, its rest pose as ``Lcl Translation`` / ``Lcl Rotation`` (Euler XYZ,
  degrees: ``R = Rz Ry Rx``) / ``Lcl Scaling``;
* per part of the mesh a ``Mesh`` model at the origin and its ``Geometry``: control points,
  triangles (``PolygonVertexIndex``, the last corner as ``~i``), normals and every UV set
  by polygon corner (UV origin at the image's bottom left), and with the target's look
  (:mod:`.look_parts`) its pieces as they were split, one Phong ``Material`` per glTF
  material (diffuse and emissive colour, opacity, roughness and metallic by
  :func:`~.look_parts.phong_of`, the base colour texture as an embedded ``Video``);
* a ``Skin`` deformer per geometry and a ``Cluster`` per joint that weights it:
  ``Indexes``, ``Weights``, ``TransformLink`` = the joint's bind matrix and ``Transform`` =
  ``inv(TransformLink)`` times the mesh's (the identity), as FBX SDK and Blender write it;
* the rig's blend shapes as a ``BlendShape`` deformer per geometry with one
  ``BlendShapeChannel`` and ``Shape`` (offsets of the vertices it moves) each;
* a ``BindPose`` with every joint's and mesh's bind matrix.

Matrices are stored as FBX does, by columns of our column-vector matrices (``m.T``).
Object ids count up from a constant: the same rig gives the same bytes.
"""
from __future__ import annotations

import logging
import os

import numpy as np
import scipy.sparse as sp

from .._version import __version__
from ..config import influence_limit
from ..model.rig import Rig
from ..model.skin import SkinWeights
from ..model.transforms import closest_rotation
from .atomic import atomic_write, check_output_path
from .fbx_binary import FbxNode as N
from .fbx_bytes import VERSION, Int64, fbx_bytes
from .look_parts import CARRIED_ATTRIBUTES, WrittenMaterial, WrittenPart, parts_of_look, parts_of_mesh, phong_of

log = logging.getLogger("asetransfer")

#: (UpAxis, UpAxisSign, FrontAxis, FrontAxisSign, CoordAxis, CoordAxisSign) of a Y-up and a Z-up rig,
#: as Blender's exporter declares them (a Z-up file declared front -Y, coord +X came back mirrored)
AXES = {"Y": (1, 1, 2, 1, 0, 1), "Z": (2, 1, 1, 1, 0, -1)}
_FIRST_ID = 1_000_000


def write_fbx_over(look, rig: Rig, path, max_influences: int | None = 8, inputs=(), **options) -> None:
    """:func:`write_fbx` with the target's look (:mod:`.look_parts`): its meshes as they were
    split, their UVs, normals and materials with their diffuse textures; what FBX is not given
    (other attributes, the target's morph targets, other nodes) is named in one warning."""
    from .gltf_over import look_contents

    dropped = [p for p in look_contents(look, carried=CARRIED_ATTRIBUTES)
               if not p.rstrip("s").endswith(("material", "image"))]
    write_fbx(path, rig, max_influences, inputs, look=look, dropped=dropped, **options)


def write_fbx(path, rig: Rig, max_influences: int | None = 8, inputs=(), *, metres_per_unit: float = 1.0,
              up_axis: str = "Y", fbx_axes: tuple | None = None, look=None, dropped=()) -> None:
    """Write ``rig`` as binary FBX 7.4, atomically; ``inputs`` are never overwritten.

    Parameters
    ----------
    max_influences : joints per vertex kept (None: as the skin has, at most 8).
    metres_per_unit, up_axis : what the file declares (``"Y"``/``"Z"``, a sign is kept).
    fbx_axes : the six axis-system values to declare instead (an FBX target's own, so the
        rig lies in every DCC where its target did), else :data:`AXES` of ``up_axis``.
    look, dropped : the target's look and what of it FBX is not given (:func:`write_fbx_over`).
    """
    from .gltf_write import check_writable

    check_output_path(path, inputs)
    check_writable(rig)
    nodes, lost = fbx_nodes(rig, max_influences, metres_per_unit, up_axis, fbx_axes, look)
    if list(dropped) + lost:
        log.warning("%s: not carried to %s: %s", look.path, os.path.basename(os.fspath(path)),
                    "; ".join(list(dropped) + lost))
    atomic_write(path, fbx_bytes(nodes), inputs=inputs)


def fbx_nodes(rig: Rig, max_influences: int | None, metres_per_unit: float, up_axis: str,
              fbx_axes: tuple | None = None, look=None) -> tuple:
    """The top-level records of the file (module docstring) and what of ``look`` they lack."""
    scene = _Scene()
    joints = [scene.joint(rig, j) for j in range(rig.skeleton.n_joints)]
    skin = _pruned(rig.skin, max_influences)
    parts, materials, lost = parts_of_look(look, rig.mesh) if look is not None else (None, [], [])
    material_ids = [scene.material(m) for m in materials]
    meshes = []
    for part in parts if parts is not None else parts_of_mesh(rig.mesh):
        meshes.append(scene.mesh(part, rig))
        for slot in part.materials:
            scene.connect(material_ids[slot], meshes[-1][0])
        scene.skin(part.name, meshes[-1][1], joints, rig.skeleton.bind_world, skin[part.ids])
        scene.shapes(part.name, meshes[-1][1], rig.shapes, part.ids)
    scene.bind_pose([(m, np.eye(4)) for m, _ in meshes] + list(zip(joints, rig.skeleton.bind_world)))
    for j, p in enumerate(rig.skeleton.parents):
        scene.connect(joints[j], joints[p] if p >= 0 else 0)
    return [*_header(metres_per_unit, up_axis, fbx_axes), _definitions(scene.objects),
            N("Objects", [], scene.objects), N("Connections", [], scene.connections),
            N("Takes", [], [N("Current", [""])])], lost


def _pruned(skin: SkinWeights, max_influences: int | None) -> sp.csr_matrix:
    """(V, J) weights with at most ``max_influences`` per vertex (renormalised)."""
    limit = influence_limit(max_influences, skin.indices.shape[1])
    if skin.indices.shape[1] > limit:
        skin = SkinWeights.from_influences(skin.indices, skin.weights, skin.n_joints, limit)
    return skin.to_sparse().tocsr()


def _p(name: str, kind: str, label: str, flags: str, *values) -> N:
    return N("P", [name, kind, label, flags, *values])


def _matrix(m: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(m, dtype=np.float64).T).ravel()


class _Scene:
    """The objects and connections of one file, with ids handed out in order."""

    def __init__(self):
        self.objects, self.connections, self.next_id = [], [], _FIRST_ID

    def add(self, kind: str, name: str, cls: str, subclass: str, children) -> Int64:
        oid, self.next_id = Int64(self.next_id), self.next_id + 1
        self.objects.append(N(kind, [oid, f"{name}\x00\x01{cls}", subclass], children))
        return oid

    def connect(self, child, parent) -> None:
        self.connections.append(N("C", ["OO", Int64(child), Int64(parent)]))

    def joint(self, rig: Rig, j: int) -> Int64:
        """A joint's model (its rest pose local transform) and node attribute."""
        name, local = rig.skeleton.names[j], rig.skeleton.rest_local()[j]
        scale = np.linalg.norm(local[:3, :3], axis=0)
        rotation = closest_rotation(local[:3, :3] / np.where(scale > 0, scale, 1.0))
        euler = _euler_xyz(rotation)
        props = N("Properties70", [], [
            _p("Lcl Translation", "Lcl Translation", "", "A", *map(float, local[:3, 3])),
            _p("Lcl Rotation", "Lcl Rotation", "", "A", *map(float, euler)),
            _p("Lcl Scaling", "Lcl Scaling", "", "A", *map(float, scale)),
            _p("InheritType", "enum", "", "", 1), _p("DefaultAttributeIndex", "int", "Integer", "", 0)])
        model = self.add("Model", name, "Model", "LimbNode",
                         [N("Version", [232]), props, N("Shading", [True]), N("Culling", ["CullingOff"])])
        attribute = self.add("NodeAttribute", name, "NodeAttribute", "LimbNode", [N("TypeFlags", ["Skeleton"])])
        self.connect(attribute, model)
        return model

    def mesh(self, part: WrittenPart, rig: Rig) -> tuple:
        """A mesh model at the origin and its geometry; returns (model id, geometry id)."""
        corners = np.ascontiguousarray(part.triangles, dtype=np.int32).copy()
        corners[:, 2] = ~corners[:, 2]
        children = [N("GeometryVersion", [124]),
                    N("Vertices", [np.ascontiguousarray(rig.mesh.vertices[part.ids], dtype=np.float64).ravel()]),
                    N("PolygonVertexIndex", [corners.ravel()])]
        layers = []
        if part.normals is not None:
            normals = part.normals / np.maximum(np.linalg.norm(part.normals, axis=1)[:, None], 1e-30)
            children.append(_layer_element("LayerElementNormal", "Normals", normals))
            layers.append("LayerElementNormal")
        if part.uv is not None:
            children.append(_layer_element("LayerElementUV", "UV", part.uv))
            layers.append("LayerElementUV")
        if part.colours is not None:
            children.append(_layer_element("LayerElementColor", "Colors", part.colours))
            layers.append("LayerElementColor")
        if part.slots is not None and part.materials:
            children.append(N("LayerElementMaterial", [0], [
                N("Version", [101]), N("Name", [""]), N("MappingInformationType", ["ByPolygon"]),
                N("ReferenceInformationType", ["IndexToDirect"]), N("Materials", [part.slots.astype(np.int32)])]))
            layers.append("LayerElementMaterial")
        children.append(N("Layer", [0], [N("Version", [100])] + [
            N("LayerElement", [], [N("Type", [kind]), N("TypedIndex", [0])]) for kind in layers]))
        for k in range(1, 1 + max(len(part.more_uv), len(part.more_colours))):
            # the further UV and colour sets: element k in layer k, as DCCs write them
            kinds = []
            if k <= len(part.more_uv):
                children.append(_layer_element("LayerElementUV", "UV", part.more_uv[k - 1], index=k))
                kinds.append("LayerElementUV")
            if k <= len(part.more_colours):
                children.append(_layer_element("LayerElementColor", "Colors", part.more_colours[k - 1], index=k))
                kinds.append("LayerElementColor")
            children.append(N("Layer", [k], [N("Version", [100])] + [
                N("LayerElement", [], [N("Type", [kind]), N("TypedIndex", [k])]) for kind in kinds]))
        geometry = self.add("Geometry", part.name, "Geometry", "Mesh", children)
        model = self.add("Model", part.name, "Model", "Mesh", [N("Version", [232]), N("Shading", [True]),
                                                                N("Culling", ["CullingOff"])])
        self.connect(model, 0)
        self.connect(geometry, model)
        return model, geometry

    def material(self, material: WrittenMaterial) -> Int64:
        """A Phong material (diffuse and emissive colour, opacity, the glTF roughness and metallic
        by :func:`~.look_parts.phong_of`) and its diffuse texture with the image embedded."""
        phong = phong_of(material.roughness, material.metallic)
        props = N("Properties70", [], [_p("DiffuseColor", "Color", "", "A", *map(float, material.colour)),
                                       _p("DiffuseFactor", "Number", "", "A", 1.0),
                                       _p("EmissiveColor", "Color", "", "A", *map(float, material.emissive)),
                                       _p("EmissiveFactor", "Number", "", "A", 1.0),
                                       _p("SpecularColor", "Color", "", "A", 1.0, 1.0, 1.0),
                                       *[_p(k, "Number", "", "A", float(v)) for k, v in phong.items()],
                                       _p("Opacity", "Number", "", "A", float(material.alpha))])
        oid = self.add("Material", material.name, "Material", "", [N("Version", [102]), N("ShadingModel", ["Phong"]),
                                                                   N("MultiLayer", [0]), props])
        if material.texture is not None:
            data, filename = material.texture
            video = self.add("Video", filename, "Video", "Clip", [
                N("Type", ["Clip"]), N("Filename", [filename]), N("RelativeFilename", [filename]),
                N("Content", [data])])
            texture = self.add("Texture", filename, "Texture", "", [
                N("Type", ["TextureVideoClip"]), N("Version", [202]), N("TextureName", [f"{filename}\x00\x01Texture"]),
                N("Media", [f"{filename}\x00\x01Video"]), N("FileName", [filename]), N("RelativeFilename", [filename])])
            self.connect(video, texture)
            self.connections.append(N("C", ["OP", Int64(texture), Int64(oid), "DiffuseColor"]))
        return oid

    def skin(self, name: str, geometry, joints: list, bind_world: np.ndarray, weights: sp.csr_matrix) -> None:
        """The geometry's skin deformer and a cluster per joint that weights one of its vertices."""
        deformer = self.add("Deformer", name, "Deformer", "Skin", [N("Version", [101]),
                                                                   N("Link_DeformAcuracy", [50.0])])
        self.connect(deformer, geometry)
        by_joint = weights.tocsc()
        for j in np.flatnonzero(np.diff(by_joint.indptr)):
            rows = slice(by_joint.indptr[j], by_joint.indptr[j + 1])
            link = bind_world[j]
            cluster = self.add("Deformer", f"{name}_{j}", "SubDeformer", "Cluster", [
                N("Version", [100]), N("UserData", ["", ""]),
                N("Indexes", [by_joint.indices[rows].astype(np.int32)]),
                N("Weights", [by_joint.data[rows].astype(np.float64)]),
                N("Transform", [_matrix(np.linalg.inv(link))]), N("TransformLink", [_matrix(link)])])
            self.connect(cluster, deformer)
            self.connect(joints[j], cluster)

    def shapes(self, name: str, geometry, shapes, ids: np.ndarray) -> None:
        """The blend shapes that move vertices of this part: a BlendShape deformer, a channel
        and a shape geometry (offsets, numbered in the part) each."""
        local = np.full(int(ids.max(initial=-1)) + 1, -1, dtype=np.int64)
        local[ids] = np.arange(len(ids))
        mine = []
        for shape in shapes:
            inside = shape.vertices < len(local)
            inside[inside] = local[shape.vertices[inside]] >= 0
            if inside.any():
                mine.append((shape, inside))
        if not mine:
            return
        deformer = self.add("Deformer", name, "Deformer", "BlendShape", [N("Version", [100])])
        self.connect(deformer, geometry)
        for shape, inside in mine:
            channel = self.add("Deformer", shape.name, "SubDeformer", "BlendShapeChannel", [
                N("Version", [100]), N("DeformPercent", [100.0 * shape.weight]),
                N("FullWeights", [np.array([100.0])])])
            children = [N("Version", [100]), N("Indexes", [local[shape.vertices[inside]].astype(np.int32)]),
                        N("Vertices", [np.ascontiguousarray(shape.positions[inside], dtype=np.float64).ravel()])]
            if shape.normals is not None:
                children.append(N("Normals", [np.ascontiguousarray(shape.normals[inside], dtype=np.float64).ravel()]))
            target = self.add("Geometry", shape.name, "Geometry", "Shape", children)
            self.connect(channel, deformer)
            self.connect(target, channel)

    def bind_pose(self, models: list) -> None:
        """The BindPose: each (model id, (4, 4) world matrix at bind time)."""
        nodes = [N("PoseNode", [], [N("Node", [Int64(m)]), N("Matrix", [_matrix(world)])]) for m, world in models]
        self.add("Pose", "BindPose", "Pose", "BindPose", [N("Type", ["BindPose"]), N("Version", [100]),
                                                           N("NbPoseNodes", [len(nodes)]), *nodes])


def _layer_element(kind: str, array: str, values: np.ndarray, index: int = 0) -> N:
    """Layer element ``index`` of ``kind``: ``values`` one row per polygon corner, in polygon order."""
    name = ("UVMap" + (f".{index:03d}" if index else "")) if kind == "LayerElementUV" else ""
    return N(kind, [index], [N("Version", [101]), N("Name", [name]), N("MappingInformationType", ["ByPolygonVertex"]),
                         N("ReferenceInformationType", ["Direct"]),
                         N(array, [np.ascontiguousarray(values, dtype=np.float64).ravel()])])


def _euler_xyz(rotation: np.ndarray) -> np.ndarray:
    """Degrees (x, y, z) with ``rotation = Rz Ry Rx`` (FBX's eEulerXYZ)."""
    from scipy.spatial.transform import Rotation

    return Rotation.from_matrix(rotation).as_euler("xyz", degrees=True)


def _header(metres_per_unit: float, up_axis: str, fbx_axes: tuple | None) -> list:
    """FBXHeaderExtension, FileId, CreationTime, Creator, GlobalSettings, Documents, References
    (fixed dates and id: the same rig gives the same bytes)."""
    if fbx_axes is not None:
        up, up_sign, front, front_sign, coord, coord_sign = map(int, fbx_axes)
    else:
        up, up_sign, front, front_sign, coord, coord_sign = AXES.get(up_axis.strip("+-").upper(), AXES["Y"])
        up_sign = -up_sign if up_axis.startswith("-") else up_sign
    creator = f"asetransfer {__version__}"
    unit = 100.0 * float(metres_per_unit)
    stamp = N("CreationTimeStamp", [], [N(k, [v]) for k, v in (("Version", 1000), ("Year", 1970), ("Month", 1),
                                                                ("Day", 1), ("Hour", 0), ("Minute", 0),
                                                                ("Second", 0), ("Millisecond", 0))])
    settings = N("Properties70", [], [
        _p("UpAxis", "int", "Integer", "", up), _p("UpAxisSign", "int", "Integer", "", up_sign),
        _p("FrontAxis", "int", "Integer", "", front), _p("FrontAxisSign", "int", "Integer", "", front_sign),
        _p("CoordAxis", "int", "Integer", "", coord), _p("CoordAxisSign", "int", "Integer", "", coord_sign),
        _p("OriginalUpAxis", "int", "Integer", "", up), _p("OriginalUpAxisSign", "int", "Integer", "", up_sign),
        _p("UnitScaleFactor", "double", "Number", "", unit), _p("OriginalUnitScaleFactor", "double", "Number", "", unit)])
    return [N("FBXHeaderExtension", [], [N("FBXHeaderVersion", [1003]), N("FBXVersion", [VERSION]),
                                         N("EncryptionType", [0]), stamp, N("Creator", [creator])]),
            N("FileId", [b"asetransfer-rig\x00"]), N("CreationTime", ["1970-01-01 00:00:00:000"]),
            N("Creator", [creator]), N("GlobalSettings", [], [N("Version", [1000]), settings]),
            N("Documents", [], [N("Count", [1]), N("Document", [Int64(_FIRST_ID - 1), "Scene", "Scene"],
                                                   [N("RootNode", [Int64(0)])])]),
            N("References", [])]


def _definitions(objects: list) -> N:
    """How many objects of each type the file holds."""
    counts = {"GlobalSettings": 1}
    for node in objects:
        counts[node.name] = counts.get(node.name, 0) + 1
    return N("Definitions", [], [N("Version", [100]), N("Count", [sum(counts.values())])] + [
        N("ObjectType", [kind], [N("Count", [n])]) for kind, n in counts.items()])
