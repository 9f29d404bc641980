"""Read rigged characters and meshes from binary FBX files (FBX 7.x).

What is read (``docs/formats.md``):

* **Units and axes** stay the file's own: vertices and joints are returned in the
  file's world coordinates (the node transforms applied, ``UnitScaleFactor`` and the
  ``GlobalSettings`` axis system *not* converted), as for every other input format, so
  that marker files written against the file line up.  :func:`fbx_frame` reports the
  units and up axis the file declares.
* **Skeleton**: every ``LimbNode``/``Limb``/``Root`` model and every model a skin
  cluster binds, with its name as written (namespaces such as ``mixamorig:`` kept); the
  parent of a joint is its nearest joint ancestor (other nodes between them -- an
  armature or group node -- are folded into the world transforms).  Joints are ordered
  depth-first, children in file order.
* **Rest pose**: the node transforms, with FBX's full transform stack (translation,
  rotation offset and pivot, pre-rotation, Euler rotation in the node's rotation order,
  post-rotation, scaling offset and pivot, scaling; property templates as defaults).
* **Bind pose**: each cluster's ``TransformLink`` (the joint's world matrix at bind
  time); joints no cluster binds take the ``BindPose`` matrix, else keep their
  rest-pose offset from their parent.  The mesh's bind matrix is ``TransformLink @
  Transform`` (every writer stores a cluster's ``Transform`` relative to its link).
* **Meshes**: every skinned mesh bound to the skeleton is one part of the merged mesh
  (vertices = control points, in file order; polygons fan-triangulated); a static mesh
  below a joint is bound rigidly to it; other meshes are left out of a rig.

* **Blend shapes**: each mesh's ``BlendShape`` channels (:mod:`.fbx_shapes`), one shape
  per name over all meshes, in the bind pose like the points.

* **The look of a target** (:mod:`.fbx_look`): UVs, normals, colours, materials and their
  diffuse textures, kept for the writers.

Animation takes are read by :mod:`.fbx_animation` (clips on this rig).  Ignored:
dual-quaternion blending,
inherit types other than the default ``RSrs`` (read as ``RSrs``).  ASCII FBX is parsed into
the same node tree as binary (:mod:`.fbx_ascii`).

The document (objects, connections, transforms): :mod:`.fbx_scene`; skeleton, bind pose and
clusters: :mod:`.fbx_skin`.
"""
from __future__ import annotations

import numpy as np

from ..model.mesh import Mesh
from ..model.rig import Rig
from ..model.skeleton import Skeleton
from ..model.transforms import apply
from .assembly import (MeshPiece, merge_pieces, normalise_weights, pieces_shapes, stack_influences,
                       unique_joint_names)
from .fbx_look import fbx_look
from .fbx_scene import FbxScene
from .fbx_shapes import geometry_shapes
from .fbx_skin import (cluster_influences, cluster_links, joint_bind_matrices, mesh_bind_matrix, rigid_piece,
                       skeleton_models, skin_clusters)


# ---------------------------------------------------------------------- geometry
def polygon_triangles(polygon_vertex_index: np.ndarray) -> np.ndarray:
    """(T, 3) fan triangulation of FBX polygons.

    Parameters
    ----------
    polygon_vertex_index : (I,) ``PolygonVertexIndex``: the corners of every polygon in
        turn, the last corner of each stored as ``-(v + 1)`` (bitwise not).

    Returns
    -------
    (T, 3) int64 vertex indices; polygon ``(v0 .. vn-1)`` gives ``(v0, vk, vk+1)`` for
    ``k = 1 .. n-2`` (points and lines give none).
    """
    pvi = np.asarray(polygon_vertex_index, dtype=np.int64)
    ends = np.flatnonzero(pvi < 0)
    corners = np.where(pvi < 0, ~pvi, pvi)
    starts = np.concatenate([[0], ends[:-1] + 1]) if len(ends) else np.zeros(0, np.int64)
    n_tris = np.maximum(ends - starts - 1, 0)
    poly = np.repeat(np.arange(len(starts)), n_tris)
    k = np.arange(len(poly)) - np.repeat(np.cumsum(n_tris) - n_tris, n_tris) + 1
    first = starts[poly]
    return np.stack([corners[first], corners[first + k], corners[first + k + 1]], axis=1)


def geometry_arrays(scene: FbxScene, geometry) -> tuple:
    """A ``Geometry`` object's (V, 3) control points and (T, 3) triangles, checked."""
    node, name = scene.objects[geometry], scene.names[geometry]
    v, pvi = node.child("Vertices"), node.child("PolygonVertexIndex")
    if v is None or pvi is None or not v.props or not pvi.props or not isinstance(v.props[0], np.ndarray) \
            or not isinstance(pvi.props[0], np.ndarray) or pvi.props[0].dtype.kind not in "iu":
        scene.fail(f"mesh {name!r} has no vertices or polygons")
    verts = np.asarray(v.props[0], dtype=np.float64)
    if verts.size % 3:
        scene.fail(f"mesh {name!r} has {verts.size} vertex coordinates, not a multiple of 3")
    verts = verts.reshape(-1, 3)
    tris = polygon_triangles(np.asarray(pvi.props[0]))
    if len(tris) and (tris.min() < 0 or tris.max() >= len(verts)):
        scene.fail(f"mesh {name!r} has a polygon corner outside its {len(verts)} vertices")
    return verts, tris


def mesh_models(scene: FbxScene) -> list:
    """(model, geometry) of every mesh instance, in file order."""
    out = []
    for m in scene.of_class("Model"):
        for g in scene.linked(m, "Geometry", "Mesh"):
            out.append((m, g))
    return out



def read_fbx_mesh(path) -> Mesh:
    """Every mesh of an FBX file as one static mesh in the file's world coordinates.

    Each mesh instance is placed with its node's world matrix (and geometric
    transform); skins are ignored (the mesh as modelled).  Vertex order: the control
    points of each mesh in turn, in file order.
    """
    return mesh_from_scene(FbxScene(path))


def mesh_from_scene(scene: FbxScene) -> Mesh:
    """:func:`read_fbx_mesh` of a parsed file, with the meshes' look (:mod:`.fbx_look`)."""
    pieces, models, shapes = [], mesh_models(scene), []
    for m, g in models:
        verts, tris = geometry_arrays(scene, g)
        world = scene.geometry_world(m)
        pieces.append(MeshPiece(scene.names[m], apply(world, verts), tris))
        shapes.append(geometry_shapes(scene, g, world[:3, :3], len(verts)))
    if not pieces:
        scene.fail("contains no triangle mesh")
    mesh = merge_pieces(scene.path, pieces)
    mesh.look = fbx_look(scene, models, mesh, shapes=pieces_shapes(shapes, pieces))
    return mesh


def read_fbx_rig(path) -> Rig:
    """Read a skinned character from a binary FBX file, in the file's own units and axes.

    Returns
    -------
    Rig: the skinned meshes (and meshes below a joint) merged as parts in the bind pose,
    the skeleton of every joint (rest pose from the node transforms, bind pose from the
    clusters), weights normalised.

    Raises
    ------
    InputError with a one-line message for anything we cannot read, or a file with no skin.
    """
    return rig_from_scene(FbxScene(path))


def rig_from_scene(scene: FbxScene, look: bool = False) -> Rig:
    """:func:`read_fbx_rig` of a parsed file; with ``look`` its mesh gets the meshes' look
    (:mod:`.fbx_look`: a rigged file read as a target)."""
    meshes = mesh_models(scene)
    skinned = {g: skin_clusters(scene, g) for _, g in meshes}
    all_clusters = [cm for cl in skinned.values() for cm in cl]  # (cluster, joint model)
    if not all_clusters:
        scene.fail("has no skin (no skeleton bound to a mesh)" if meshes else "contains no triangle mesh")
    joints, parents = joint_models(scene)
    jindex = {m: j for j, m in enumerate(joints)}
    rest = np.array([scene.world(m) for m in joints])
    bind = joint_bind_matrices(scene, joints, parents, cluster_links(scene, all_clusters))
    pieces, rows, shapes, kept = [], [], [], []
    for model, g in meshes:
        verts, tris = geometry_arrays(scene, g)
        if skinned[g]:
            placed = mesh_bind_matrix(scene, model, skinned[g])
            ji, w = cluster_influences(scene, skinned[g], jindex, len(verts))
        else:
            piece = rigid_piece(scene, model, jindex=jindex, bind=bind, rest=rest, verts=verts)
            if piece is None:
                continue
            placed, ji, w = piece
        pieces.append(MeshPiece(scene.names[model], apply(placed, verts), tris))
        rows.append((ji, w))
        kept.append((model, g, placed))
        shapes.append(geometry_shapes(scene, g, placed[:3, :3], len(verts)))
    rig = _assemble(scene, joints=joints, parents=parents, rest=rest, bind=bind, pieces=pieces, rows=rows,
                    shapes=shapes)
    if look:
        rig.mesh.look = fbx_look(scene, [(m, g) for m, g, _ in kept], rig.mesh, [p for _, _, p in kept], rig.shapes)
        if rig.mesh.look is not None:  # named with the rest of what an output does not take over
            rig.mesh.look.lost = tuple(rig.mesh.look.lost) + ("the target's own skin (the transferred one replaces it)",)
    return rig


def joint_models(scene: FbxScene) -> tuple:
    """The joint models of the rig :func:`rig_from_scene` reads, in its skeleton's order, and
    their (J,) parent joint indices."""
    bound = {m for _, g in mesh_models(scene) for _, m in skin_clusters(scene, g)}
    return skeleton_models(scene, bound)


def _assemble(scene, *, joints, parents, rest, bind, pieces, rows, shapes) -> Rig:
    """The Rig of the joints (with rest and bind world matrices) and the weighted pieces
    (``pieces``: :class:`~.assembly.MeshPiece` in the bind pose; ``rows``: each piece's
    (n, k) joint indices and weights; ``shapes``: each piece's blend shapes and their default
    weights by name, :func:`~.fbx_shapes.geometry_shapes`)."""
    mesh = merge_pieces(scene.path, pieces)
    idx, w = stack_influences(rows)
    skin = normalise_weights(scene.path, mesh, idx, w, len(joints))
    names = unique_joint_names(scene.path, [scene.names[m] for m in joints])  # Maya allows repeats
    try:
        return Rig(mesh, Skeleton.from_world(names, parents, rest, bind), skin,
                   pieces_shapes(shapes, pieces))
    except ValueError as e:
        scene.fail(str(e))


def read_fbx(path):
    """An FBX file as a :class:`Rig` if a skin binds a mesh, else as a static :class:`Mesh`."""
    scene = FbxScene(path)
    meshes = mesh_models(scene)
    if any(skin_clusters(scene, g) for _, g in meshes):
        return rig_from_scene(scene, look=True)
    return mesh_from_scene(scene)
