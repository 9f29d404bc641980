"""COLLADA rigs: the skin controllers of a .dae file and the skeleton they bind
(:mod:`.collada` reads the scene and the meshes; its docstring says what is read).

At the bind pose COLLADA's skinning ``v' = sum_i w_i J_i IBM_i BSM v`` gives the mesh
``BSM v`` and joint ``i`` at ``IBM_i^-1``.  The joints are every node a skin names
(``Name_array`` of node sids, looked up under the instance's ``<skeleton>`` roots first,
or ``IDREF_array`` of node ids) and every node typed ``JOINT``, each one's parent its
nearest joint ancestor; their rest pose is the scene's node transforms.  A joint no skin
names keeps its rest offset from its parent in the bind pose.  Static meshes below a joint
are bound to it rigidly; other static meshes are left out of a rig with a warning.
"""
from __future__ import annotations

import logging

import numpy as np

from ..model.rig import Rig
from ..model.skeleton import Skeleton
from ..model.transforms import apply
from .assembly import (MeshPiece, merge_pieces, normalise_weights, pieces_shapes, stack_influences,
                       unique_joint_names)
from .collada import (ColladaScene, bind_shape, deformed_geometry, geometry_arrays, mesh_of_scene, node_name,
                      source_rows)
from .collada_morph import geometry_morphs

log = logging.getLogger("asetransfer")


def read_collada_rig(path) -> Rig:
    """A skinned character from a .dae file, in the file's own units and axes (module
    docstring): the skinned meshes (and static meshes below a joint) merged as parts in
    the bind pose, the skeleton of every joint, weights normalised.

    Raises
    ------
    InputError with a one-line message for anything we cannot read, or a file with no skin.
    """
    return rig_of_scene(ColladaScene(path))


def skinned_joints(scene: ColladaScene) -> tuple:
    """The skins of a parsed file and its joints.

    Returns
    -------
    skins : [(node index, instance_controller, skin)] of every skinned mesh instance.
    named : per skin, (the node indices of its joints, (n, 4, 4) inverse bind matrices).
    bound : node index -> bind world matrix of every node a skin names.
    joints : the rig's joint node indices, depth first (every node a skin names or typed JOINT).
    """
    skins = [(i, instance, scene.ref(instance.get("url"), "an instance_controller").find("skin"))
             for i, (node, _, _) in enumerate(scene.nodes) for instance in node.findall("instance_controller")]
    skins = [(i, instance, skin) for i, instance, skin in skins if skin is not None]
    if not skins:
        scene.fail("has no skin (no skeleton bound to a mesh)")
    named = [_skin_joints(scene, instance, skin) for _, instance, skin in skins]
    bound = _bind_matrices(scene, named)
    joints = [i for i, (node, _, _) in enumerate(scene.nodes) if i in bound or node.get("type") == "JOINT"]
    return skins, named, bound, joints


def rig_of_scene(scene: ColladaScene, look: bool = False) -> Rig:
    """:func:`read_collada_rig` of a parsed file (also read by :mod:`.collada_animation`); with
    ``look`` its mesh gets the meshes' look (:mod:`.collada_look`: a rigged file read as a target)."""
    path = scene.path
    skins, named, bound, joints = skinned_joints(scene)
    jindex = {n: j for j, n in enumerate(joints)}
    parents = np.array([_nearest(scene, scene.nodes[n][1], jindex) for n in joints], dtype=np.int64)
    rest = np.array([scene.nodes[n][2] for n in joints])
    bind = rest.copy()
    for j, n in enumerate(joints):  # parents come first (depth-first order)
        if n in bound:
            bind[j] = bound[n]
        elif parents[j] >= 0:  # no skin names it: its rest offset from its parent
            bind[j] = bind[parents[j]] @ np.linalg.inv(rest[parents[j]]) @ rest[j]
    pieces, rows, instances = [], [], []
    for (i, _, skin), (nodes, _) in zip(skins, named):
        geometry = deformed_geometry(scene, scene.ref(skin.get("source"), "a skin"), "a skin")
        placed = bind_shape(scene, skin)
        points, tris = geometry_arrays(scene, geometry)
        pieces.append(MeshPiece(node_name(scene.nodes[i][0]), apply(placed, points), tris))
        rows.append(_weights(scene, skin, [jindex[n] for n in nodes], len(points)))
        instances.append((scene.nodes[i][0], geometry, placed))
    _rigid_pieces(scene, jindex, rest, bind, pieces, rows, instances)
    mesh, shapes = merge_pieces(path, pieces), _shapes(scene, instances, pieces)
    if look:
        from .collada_look import collada_look  # here: it reads the scene through collada
        mesh.look = collada_look(scene, instances, mesh, shapes)
        # named with the rest of what an output does not take over
        mesh.look.lost = tuple(mesh.look.lost) + ("the target's own skin (the transferred one replaces it)",)
    idx, w = stack_influences(rows)
    skin = normalise_weights(path, mesh, idx, w, len(joints))
    names = unique_joint_names(path, [node_name(scene.nodes[n][0]) for n in joints])
    try:
        return Rig(mesh, Skeleton.from_world(names, parents, rest, bind), skin, shapes)
    except ValueError as e:
        scene.fail(str(e))


def _shapes(scene: ColladaScene, instances: list, pieces: list) -> tuple:
    """The merged mesh's blend shapes: the morph targets over each instance's geometry
    (:func:`~.collada_morph.geometry_morphs`), turned as its points were placed."""
    return pieces_shapes([geometry_morphs(scene, geometry, placed[:3, :3], len(piece.positions))
                          for (_, geometry, placed), piece in zip(instances, pieces)], pieces)


def _rigid_pieces(scene: ColladaScene, jindex: dict, rest, bind, pieces: list, rows: list, instances: list) -> None:
    """Static meshes below a joint, bound to it with weight 1 and moved with it from rest to
    bind (appended to ``pieces``, ``rows`` and ``instances``); static meshes below no joint
    left out."""
    for i, (node, _, world) in enumerate(scene.nodes):
        for geometry in (scene.ref(g.get("url"), "an instance_geometry") for g in node.findall("instance_geometry")):
            joint = _nearest(scene, i, jindex)
            if joint < 0:
                log.warning("%s: mesh %r is neither skinned nor below a joint; left out", scene.path, node_name(node))
                continue
            points, tris = geometry_arrays(scene, geometry)
            placed = bind[joint] @ np.linalg.inv(rest[joint]) @ world
            pieces.append(MeshPiece(node_name(node), apply(placed, points), tris))
            rows.append((np.full((len(points), 1), joint), np.ones((len(points), 1))))
            instances.append((node, geometry, placed))


def read_collada(path):
    """A .dae file as a :class:`Rig` if a skin binds a mesh, else as a static :class:`Mesh`."""
    scene = ColladaScene(path)
    if any(n.find("instance_controller") is not None for n, _, _ in scene.nodes) \
            and scene.root.find("library_controllers/controller/skin") is not None:
        return rig_of_scene(scene, look=True)
    return mesh_of_scene(scene)


def _nearest(scene: ColladaScene, node: int, jindex: dict) -> int:
    """The joint index of ``node`` or of its nearest joint ancestor (-1 if none)."""
    while node >= 0 and node not in jindex:
        node = scene.nodes[node][1]
    return jindex.get(node, -1)


def _skin_joints(scene: ColladaScene, instance, skin) -> tuple:
    """The scene nodes a skin's joints name (by sid under the instance's ``<skeleton>``
    roots, then by sid, name or id anywhere), and their (n, 4, 4) inverse bind matrices."""
    sources = {s.get("id"): s for s in skin.findall("source")}
    joint_input = skin.find("joints/input[@semantic='JOINT']")
    ibm_input = skin.find("joints/input[@semantic='INV_BIND_MATRIX']")
    if joint_input is None or ibm_input is None:
        scene.fail(f"skin of {skin.get('source')!r} has no JOINT or INV_BIND_MATRIX input")
    source = sources.get(joint_input.get("source", "")[1:])
    array = None if source is None else (source.find("Name_array") if source.find("Name_array") is not None
                                         else source.find("IDREF_array"))
    if array is None:
        scene.fail(f"skin of {skin.get('source')!r} names its joints in no Name_array or IDREF_array")
    keys = (array.text or "").split()
    roots = [scene.ref(s.text.strip(), "a <skeleton>") for s in instance.findall("skeleton") if s.text]
    under = {id(el) for r in roots for el in r.iter("node")}
    nodes = []
    for key in keys:
        found = [i for i, (node, _, _) in enumerate(scene.nodes) if id(node) in under and node.get("sid") == key] \
            or [i for attr in ("sid", "name", "id") for i, (node, _, _) in enumerate(scene.nodes) if node.get(attr) == key]
        if not found:
            scene.fail(f"skin of {skin.get('source')!r} names joint {key!r}, which no node of the scene is")
        nodes.append(found[0])
    ibm_source = sources.get(ibm_input.get("source", "")[1:])
    if ibm_source is None:
        scene.fail(f"skin of {skin.get('source')!r}: its INV_BIND_MATRIX source is missing")
    ibm = scene.numbers(ibm_source.find("float_array"), "INV_BIND_MATRIX", 16 * len(keys)).reshape(-1, 4, 4)
    return nodes, ibm


def _bind_matrices(scene: ColladaScene, skins: list) -> dict:
    """node index -> bind world matrix (the inverse of its inverse bind matrix); skins that
    bind one joint must agree."""
    bound = {}
    for nodes, ibm in skins:
        for n, m in zip(nodes, ibm):
            try:
                world = np.linalg.inv(m)
            except np.linalg.LinAlgError:
                scene.fail(f"joint {node_name(scene.nodes[n][0])!r} has a singular inverse bind matrix")
            if n in bound and not np.allclose(bound[n], world, atol=1e-4 * (1 + np.abs(world[:3, 3]).max())):
                scene.fail(f"two skins bind joint {node_name(scene.nodes[n][0])!r} at different places")
            bound.setdefault(n, world)
    return bound


def _weights(scene: ColladaScene, skin, joint_of: list, n_points: int) -> tuple:
    """A skin's (n_points, k) joint indices (into the rig's joints) and weights."""
    vw = skin.find("vertex_weights")
    what = f"skin of {skin.get('source')!r} vertex_weights"
    if vw is None:
        scene.fail(f"skin of {skin.get('source')!r} has no vertex_weights")
    inputs = vw.findall("input")
    joint_in = next((i for i in inputs if i.get("semantic") == "JOINT"), None)
    weight_in = next((i for i in inputs if i.get("semantic") == "WEIGHT"), None)
    if joint_in is None or weight_in is None:
        scene.fail(f"{what} has no JOINT or WEIGHT input")
    stride = max(scene.integer(i, "offset") for i in inputs) + 1
    weights = source_rows(scene, scene.ref(weight_in.get("source"), what), 1)[:, 0]
    vcount = scene.numbers(vw.find("vcount"), what).astype(np.int64) if vw.find("vcount") is not None else None
    if vcount is None or len(vcount) != n_points or (vcount < 0).any():
        scene.fail(f"{what} weighs {0 if vcount is None else len(vcount)} vertices, the mesh has {n_points}")
    pairs = scene.numbers(vw.find("v"), what, int(vcount.sum()) * stride).astype(np.int64).reshape(-1, stride)
    ji, wi = pairs[:, scene.integer(joint_in, "offset")], pairs[:, scene.integer(weight_in, "offset")]
    if (ji >= len(joint_of)).any() or (ji < -1).any() or (wi < 0).any() or (wi >= len(weights)).any():
        scene.fail(f"{what} names a joint or weight it does not have")
    width = max(1, int(vcount.max(initial=1)))
    rows = np.repeat(np.arange(n_points), vcount)
    slot = np.arange(len(pairs)) - np.repeat(np.cumsum(vcount) - vcount, vcount)
    idx, w = np.zeros((n_points, width), np.int64), np.zeros((n_points, width))
    keep = ji >= 0  # -1 is the bind shape itself: no joint moves that share
    idx[rows[keep], slot[keep]] = np.asarray(joint_of, np.int64)[ji[keep]]
    w[rows[keep], slot[keep]] = weights[wi[keep]]
    if (w < 0).any():
        scene.fail(f"{what} holds negative weights")
    return idx, w
