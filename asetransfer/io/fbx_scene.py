"""The document of a binary FBX file (FBX 7.x): objects, their connections, the
``GlobalSettings``, and the node transforms of Autodesk's transform stack.

:class:`FbxScene` indexes what :func:`~.fbx_binary.parse_fbx` parsed: objects by id, their
names (namespaces kept) and sub-types, the ``OO`` connections (children in file order), the
model tree (checked free of cycles) and each model's rest world matrix.
"""
from __future__ import annotations

import numpy as np

from ..errors import InputError
from .fbx_binary import parse_fbx
from .files import read_bytes

#: FBX RotationOrder enum -> axes in the order they apply (eXYZ: X first, R = Rz Ry Rx)
ROTATION_ORDERS = ("xyz", "xzy", "yzx", "yxz", "zxy", "zyx")


class FbxScene:
    """The objects, connections and settings of one binary FBX file.

    Attributes
    ----------
    path : the file.  creator : the writing application (``Creator`` string).
    objects : id -> :class:`~.fbx_binary.FbxNode` of every object.
    names, kinds : id -> object name (namespace kept) and sub-type (``Mesh``, ``LimbNode``...).
    children : id -> ids of the objects connected below it (``OO`` connections, file order).
    property_children : id -> (object id, property name) of the objects connected to one of
        its properties (``OP``: a material's textures).
    parent_model : model id -> the model above it (0 for the scene root).
    settings : ``GlobalSettings`` properties.
    """

    def __init__(self, path, data: bytes | None = None):
        self.path = path
        _, top = parse_fbx(path, read_bytes(path) if data is None else data)
        sections = {n.name: n for n in top}
        creator = sections.get("Creator")
        self.creator = str(creator.props[0]) if creator is not None and creator.props else ""
        self.settings = _properties(sections.get("GlobalSettings"))
        self.templates = _templates(sections.get("Definitions"))
        self.objects, self.names, self.kinds, self.order = {}, {}, {}, {}
        for node in sections["Objects"].children if "Objects" in sections else []:
            if len(node.props) >= 3 and isinstance(node.props[0], int):
                oid = node.props[0]
                self.objects[oid] = node
                self.names[oid] = str(node.props[1]).split("\x00\x01")[0]
                self.kinds[oid] = str(node.props[2])
                self.order[oid] = len(self.order)
        self.children, self.parents_of, self.property_children = {}, {}, {}
        for c in sections["Connections"].all("C") if "Connections" in sections else []:
            if len(c.props) >= 3 and c.props[0] == "OO" and c.props[1] in self.objects:
                self.children.setdefault(c.props[2], []).append(c.props[1])
                self.parents_of.setdefault(c.props[1], []).append(c.props[2])
            elif len(c.props) >= 4 and c.props[0] == "OP" and c.props[1] in self.objects:
                self.property_children.setdefault(c.props[2], []).append((c.props[1], str(c.props[3])))
        self.parent_model = {m: next((p for p in self.parents_of.get(m, []) if self.is_model(p)), 0)
                             for m in self.objects if self.is_model(m)}
        self._check_tree()
        self._world = {}

    def _check_tree(self) -> None:
        """Fail unless every model's chain of parents reaches the scene root (no cycle)."""
        reaches_root = {0}
        for m in self.parent_model:
            chain = []
            while m not in reaches_root:
                if m in chain:
                    self.fail(f"the node hierarchy has a cycle through {self.names[m]!r}")
                chain.append(m)
                m = self.parent_model.get(m, 0)
            reaches_root.update(chain)

    def fail(self, msg):
        raise InputError(self.path, msg)

    def is_model(self, oid) -> bool:
        return oid in self.objects and self.objects[oid].name == "Model"

    def of_class(self, cls: str, kind: str | None = None) -> list:
        """Ids of the objects of node class ``cls`` (``Model``, ``Geometry``, ``Deformer``),
        optionally of sub-type ``kind``, in file order."""
        return [o for o, n in self.objects.items() if n.name == cls and (kind is None or self.kinds[o] == kind)]

    def linked(self, oid, cls: str, kind: str | None = None, up: bool = False) -> list:
        """Objects of class ``cls`` connected below ``oid`` (above it with ``up``)."""
        ids = self.parents_of.get(oid, []) if up else self.children.get(oid, [])
        return [o for o in ids if o in self.objects and self.objects[o].name == cls
                and (kind is None or self.kinds[o] == kind)]

    def props(self, oid) -> dict:
        """An object's ``Properties70``, over its class template's defaults."""
        node = self.objects[oid]
        out = dict(self.templates.get(node.name, {}))
        out.update(_properties(node))
        return out

    def world(self, model) -> np.ndarray:
        """(4, 4) world matrix of a model at rest: its parents' and its own local transforms."""
        if model == 0:
            return np.eye(4)
        if model not in self._world:
            chain, m = [], model
            while m != 0 and m not in self._world:  # no cycle: checked in __init__
                chain.append(m)
                m = self.parent_model[m]
            for m in reversed(chain):
                self._world[m] = self.world(self.parent_model[m]) @ node_local_matrix(self.props(m))
        return self._world[model]

    def geometry_world(self, model) -> np.ndarray:
        """(4, 4) world matrix of the geometry of a mesh model (with its geometric transform)."""
        return self.world(model) @ geometric_matrix(self.props(model))


# ---------------------------------------------------------------------- properties
def _properties(node) -> dict:
    """``Properties70`` of a node as name -> value (a float, int, string or (3,) array)."""
    out = {}
    p70 = node.child("Properties70") if node is not None else None
    for p in p70.all("P") if p70 is not None else []:
        if len(p.props) >= 5 and isinstance(p.props[0], str):
            vals = p.props[4:]
            out[p.props[0]] = (np.array(vals, dtype=np.float64) if len(vals) == 3 and
                               all(isinstance(v, (int, float)) for v in vals) else vals[0])
    return out


def _templates(definitions) -> dict:
    """Object class -> default properties of its ``PropertyTemplate`` in ``Definitions``."""
    out = {}
    for ot in definitions.all("ObjectType") if definitions is not None else []:
        template = ot.child("PropertyTemplate")
        if ot.props and template is not None:
            out[str(ot.props[0])] = _properties(template)
    return out


def _vec(props: dict, name: str, default: float) -> np.ndarray:
    v = props.get(name)
    v = np.asarray(v, dtype=np.float64) if v is not None and np.ndim(v) == 1 and len(v) == 3 else None
    return np.full(3, default) if v is None or not np.isfinite(v).all() else v


def euler_matrix(degrees: np.ndarray, order: int = 0) -> np.ndarray:
    """(4, 4) rotation of FBX Euler angles (3,), or (F, 4, 4) of (F, 3): ``order`` 0 (eXYZ)
    gives ``Rz @ Ry @ Rx``.

    FBX orders name the axes in the order the rotations apply to a point (extrinsic).
    """
    from scipy.spatial.transform import Rotation  # imported on use: ~0.15 s

    axes = ROTATION_ORDERS[order] if 0 <= order < len(ROTATION_ORDERS) else "xyz"
    degrees = np.asarray(degrees, dtype=np.float64)
    out = np.tile(np.eye(4), (*degrees.shape[:-1], 1, 1))
    out[..., :3, :3] = Rotation.from_euler(axes, degrees.reshape(-1, 3), degrees=True).as_matrix().reshape(
        *degrees.shape[:-1], 3, 3)
    return out


def _translation(t) -> np.ndarray:
    t = np.asarray(t, dtype=np.float64)
    out = np.tile(np.eye(4), (*t.shape[:-1], 1, 1))
    out[..., :3, 3] = t
    return out


def _scaling(s) -> np.ndarray:
    s = np.asarray(s, dtype=np.float64)
    out = np.zeros((*s.shape[:-1], 4, 4))
    out[..., [0, 1, 2], [0, 1, 2]] = s
    out[..., 3, 3] = 1.0
    return out


def node_local_matrix(props: dict, animated: dict | None = None) -> np.ndarray:
    """(4, 4) local transform of an FBX node (Autodesk's transform stack); with ``animated``
    (``"Lcl Translation"`` / ``"Lcl Rotation"`` / ``"Lcl Scaling"`` -> (F, 3) values over
    frames) (F, 4, 4), those properties taken from it.

    ``L = T Roff Rp Rpre R Rpost^-1 Rp^-1 Soff Sp S Sp^-1``: translation, rotation
    offset and pivot, pre-rotation, the Euler rotation in the node's ``RotationOrder``,
    post-rotation, scaling offset and pivot, scaling.
    """
    animated = animated or {}
    lcl = {k: animated[k] if k in animated else _vec(props, k, d)
           for k, d in (("Lcl Translation", 0.0), ("Lcl Rotation", 0.0), ("Lcl Scaling", 1.0))}
    order = props.get("RotationOrder", 0)
    order = int(order) if isinstance(order, (int, float)) and np.isfinite(order) else 0
    rp, sp_ = _vec(props, "RotationPivot", 0.0), _vec(props, "ScalingPivot", 0.0)
    return (_translation(lcl["Lcl Translation"]) @ _translation(_vec(props, "RotationOffset", 0.0))
            @ _translation(rp) @ euler_matrix(_vec(props, "PreRotation", 0.0))
            @ euler_matrix(lcl["Lcl Rotation"], order)
            @ np.linalg.inv(euler_matrix(_vec(props, "PostRotation", 0.0))) @ _translation(-rp)
            @ _translation(_vec(props, "ScalingOffset", 0.0)) @ _translation(sp_)
            @ _scaling(lcl["Lcl Scaling"]) @ _translation(-sp_))


def geometric_matrix(props: dict) -> np.ndarray:
    """(4, 4) geometric transform of a node: applies to its geometry only, not to children."""
    return (_translation(_vec(props, "GeometricTranslation", 0.0))
            @ euler_matrix(_vec(props, "GeometricRotation", 0.0))
            @ _scaling(_vec(props, "GeometricScaling", 1.0)))


def fbx_matrix(values) -> np.ndarray:
    """(4, 4) matrix of 16 FBX doubles (stored column by column)."""
    return np.asarray(values, dtype=np.float64).reshape(4, 4).T


# ---------------------------------------------------------------------- frame
def fbx_frame(path, scene: FbxScene | None = None) -> dict:
    """The units and up axis the file declares (``GlobalSettings``).

    Returns
    -------
    dict with ``metres_per_unit`` (``UnitScaleFactor`` is centimetres per unit) and
    ``up_axis`` ("+Y", "-Z"...).
    """
    s = (scene or FbxScene(path)).settings
    unit = s.get("UnitScaleFactor", 1.0)
    unit = float(unit) if isinstance(unit, (int, float)) and unit > 0 else 1.0
    axis = s.get("UpAxis", 1)
    axis = int(axis) if isinstance(axis, int) and 0 <= axis <= 2 else 1
    sign = "-" if s.get("UpAxisSign", 1) == -1 else "+"
    return {"metres_per_unit": unit / 100.0, "up_axis": sign + "XYZ"[axis]}


def fbx_axis_system(path) -> tuple | None:
    """(UpAxis, UpAxisSign, FrontAxis, FrontAxisSign, CoordAxis, CoordAxisSign) the file
    declares, None unless it declares all six consistently (an FBX written in its frame
    declares the same, so it lies in every DCC where this file did)."""
    s = FbxScene(path).settings
    declared = [s.get(k) for k in ("UpAxis", "UpAxisSign", "FrontAxis", "FrontAxisSign", "CoordAxis", "CoordAxisSign")]
    if all(isinstance(v, int) and not isinstance(v, bool) for v in declared) \
            and sorted(declared[::2]) == [0, 1, 2] and all(v in (-1, 1) for v in declared[1::2]):
        return tuple(declared)
    return None
