"""Blend shapes of an FBX mesh: its ``BlendShape`` deformers, their ``BlendShapeChannel``
subdeformers and the ``Shape`` geometry each channel holds (offsets of the control points
it moves: ``Indexes``, ``Vertices``, optionally ``Normals``), the channel's
``DeformPercent`` as the default weight (percent).  A channel of several in-between shapes
(``FullWeights``) is read at its last, full shape."""
from __future__ import annotations

import numpy as np

from .fbx_scene import FbxScene


def geometry_shapes(scene: FbxScene, geometry, linear: np.ndarray, n_points: int) -> tuple:
    """``(shapes, weights)``: name -> (vertices (k,), offsets (k, 3), normal offsets or None) of
    ``geometry``'s blend shapes, offsets moved by ``linear`` (the (3, 3) part of the matrix that
    places its points), and name -> default weight (DeformPercent / 100)."""
    shapes, weights = {}, {}
    for deformer in scene.linked(geometry, "Deformer", "BlendShape"):
        for channel in scene.linked(deformer, "Deformer", "BlendShapeChannel"):
            targets = scene.linked(channel, "Geometry", "Shape")
            if not targets:
                continue
            name = scene.names[channel] or scene.names[targets[-1]]
            vertices, offsets, normals = _shape_arrays(scene, targets[-1], n_points)
            shapes[name] = (vertices, offsets @ linear.T, None if normals is None else normals @ linear.T)
            percent = _number(scene.objects[channel].child("DeformPercent"))
            weights[name] = percent / 100.0 if np.isfinite(percent) else 0.0
    return shapes, weights


def _number(node) -> float:
    value = node.props[0] if node is not None and node.props else 0.0
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def _shape_arrays(scene: FbxScene, shape, n_points: int) -> tuple:
    """A Shape geometry's (k,) vertices (sorted, distinct), (k, 3) offsets and normal offsets."""
    node, name = scene.objects[shape], scene.names[shape]
    arrays = {key: (node.child(key).props[0] if node.child(key) is not None and node.child(key).props else None)
              for key in ("Indexes", "Vertices", "Normals")}
    index, offsets, normals = arrays["Indexes"], arrays["Vertices"], arrays["Normals"]
    if not isinstance(index, np.ndarray) or not isinstance(offsets, np.ndarray) or index.dtype.kind not in "iu":
        scene.fail(f"blend shape {name!r} has no Indexes or Vertices")
    index = index.astype(np.int64)
    if offsets.size != 3 * index.size or (isinstance(normals, np.ndarray) and normals.size != 3 * index.size):
        scene.fail(f"blend shape {name!r} has {index.size} indices and {offsets.size // 3} offsets")
    if index.size and (index.min() < 0 or index.max() >= n_points):
        scene.fail(f"blend shape {name!r} moves vertex {int(index.max())}, the mesh has {n_points}")
    offsets = offsets.astype(np.float64).reshape(-1, 3)
    normals = normals.astype(np.float64).reshape(-1, 3) if isinstance(normals, np.ndarray) else None
    if not np.isfinite(offsets).all() or (normals is not None and not np.isfinite(normals).all()):
        scene.fail(f"blend shape {name!r} has NaN or infinite offsets")
    order, keep = np.unique(index, return_index=True)
    return order, offsets[keep], None if normals is None else normals[keep]
