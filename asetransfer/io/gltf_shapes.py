"""Blend shapes as glTF morph targets (glTF 2.0 §3.7.2.2): read from a document's meshes,
written onto a mesh's primitives.

Reading: every primitive a mesh was merged from contributes its targets' ``POSITION``
(and ``NORMAL``) offsets, moved by the piece's placement as its positions were; a name
(``mesh.extras.targetNames``, :func:`~asetransfer.model.look.target_names`) on several
meshes (a face, its brows, its teeth) is one shape on all of their vertices; the default
weight is the first mesh's ``weights`` entry.

Writing: one target per shape on every primitive of the mesh (glTF requires the same
count on each), named in ``mesh.extras.targetNames`` after the mesh's own, default weight
0 (the mesh as given).  A target that moves few of a primitive's vertices is a sparse
accessor (its indices and values only: 16 bytes a moved vertex instead of 12 for every
vertex); one that moves none has no buffer view (zeros).
"""
from __future__ import annotations

import logging

import numpy as np

from ..errors import InputError
from ..model.look import Look, target_names
from ..model.shapes import MorphTarget
from .glb import ARRAY_BUFFER, FLOAT, UINT, USHORT, Accessors, BufferBuilder

log = logging.getLogger("asetransfer")

#: a target moving fewer than this share of a primitive's vertices is written sparse
#: (16 bytes a moved vertex against 12 for each vertex dense: sparse is smaller under 3/4)
SPARSE_BELOW = 0.5


def read_morph_targets(look: Look, n_vertices: int) -> tuple:
    """The blend shapes of the mesh of ``n_vertices`` that ``look``'s pieces were merged into.

    Returns a tuple of :class:`~asetransfer.model.shapes.MorphTarget`, in the order their
    names first appear; raises InputError (on the look's file) for a malformed target.
    """
    acc = Accessors(look.path, look.document, look.buffers)
    meshes = look.document.get("meshes", [])
    parts, weights = {}, {}  # name -> [(vertices, positions, normals or None)], name -> default weight
    for piece in look.pieces:
        mesh = meshes[piece.mesh]
        prim = next((mesh["primitives"][k] for k in piece.primitives if mesh["primitives"][k].get("targets")), None)
        if prim is None:
            continue
        if not isinstance(prim["targets"], list) or not all(isinstance(t, dict) for t in prim["targets"]):
            raise InputError(look.path, f"mesh {piece.mesh} has morph 'targets' that are not a list of objects")
        defaults = [float(w) if isinstance(w, (int, float)) and not isinstance(w, bool) and np.isfinite(w) else 0.0
                    for w in (mesh.get("weights") if isinstance(mesh.get("weights"), list) else [])]  # cosmetic
        seen = set()
        for k, (name, target) in enumerate(zip(target_names(mesh), prim["targets"])):
            if name in seen:
                log.warning("%s: mesh %d has two morph targets named %r; the first is read", look.path, piece.mesh,
                            name)
                continue
            seen.add(name)
            parts.setdefault(name, []).append(_piece_offsets(acc, prim, target, piece, f"mesh {piece.mesh} target {k}"))
            weights.setdefault(name, float(defaults[k]) if k < len(defaults) else 0.0)
    return tuple(_joined(name, parts[name], weights[name]) for name in parts)


def _piece_offsets(acc: Accessors, prim: dict, target: dict, piece, what: str) -> tuple:
    """A target's offsets on one piece: (its mesh vertices, (n, 3) position offsets, (n, 3)
    normal offsets or None), in the mesh's frame (the piece's placement applied)."""
    from .gltf_over import turned_offsets  # the placement turns offsets as the writer turns them back

    n = len(piece.vertices)
    out = []
    for attribute in ("POSITION", "NORMAL"):
        if attribute not in target:
            out.append(np.zeros((n, 3)) if attribute == "POSITION" else None)
            continue
        offsets = acc.read(target[attribute], f"{what} {attribute}").astype(np.float64)
        if offsets.shape != (n, 3) or not np.isfinite(offsets).all():
            raise InputError(acc.path, f"{what} {attribute} is not one finite VEC3 per vertex")
        if not np.array_equal(piece.placement, np.eye(4)):
            base = acc.read(prim["attributes"]["NORMAL"]) if attribute == "NORMAL" and "NORMAL" in prim["attributes"] \
                else None
            offsets = turned_offsets(piece.placement, attribute, offsets, base, None)
        out.append(offsets)
    return piece.vertices, out[0], out[1]


def _joined(name: str, parts: list, weight: float) -> MorphTarget:
    """One MorphTarget of a name's offsets on several pieces: the vertices any offset moves."""
    vertices = np.concatenate([v for v, _, _ in parts])
    positions = np.concatenate([p for _, p, _ in parts])
    has_normals = any(n is not None for _, _, n in parts)
    normals = np.concatenate([n if n is not None else np.zeros_like(p) for _, p, n in parts]) if has_normals else None
    moved = np.any(positions != 0, axis=1) | (np.any(normals != 0, axis=1) if has_normals else False)
    order = np.argsort(vertices[moved], kind="stable")
    return MorphTarget(name, vertices[moved][order], positions[moved][order],
                       normals[moved][order] if has_normals else None, weight)


def add_morph_targets(bb: BufferBuilder, mesh: dict, groups: list, shapes, with_normals: bool,
                      bases: list | None = None) -> None:
    """Append ``shapes`` to every primitive of the glTF ``mesh`` (in place), after its own.

    Parameters
    ----------
    bb : the document's buffer (the accessors are added to it).
    mesh : the glTF mesh object; its ``extras.targetNames`` and ``weights`` are extended.
    groups : ``[(vertices, primitives)]``: the (n,) rig-mesh vertex of each vertex of the
        primitives sharing one vertex array, and those primitive objects.
    shapes : :class:`~asetransfer.model.shapes.MorphTarget` list, offsets in the
        primitives' frame; a name the mesh has already is skipped.
    with_normals : write ``NORMAL`` offsets (of the shapes that have them) on primitives
        that have a ``NORMAL`` attribute.
    bases : per group, None or its primitives' ((n, 3) unit normals, (n, 3) unit tangents) as
        written: a shape with normal offsets then gets ``TANGENT`` offsets too, each tangent
        turned by the smallest rotation that takes its normal to the shaped normal (the
        turn its normal offset encodes), ``d = R t - t``.
    """
    own = target_names(mesh)
    shapes = [s for s in shapes if s.name not in own]
    if not shapes:
        return
    for k, (vertices, prims) in enumerate(groups):
        base = bases[k] if bases is not None and "TANGENT" in prims[0]["attributes"] else None
        targets = [_target(bb, s, vertices, with_normals and "NORMAL" in prims[0]["attributes"], base)
                   for s in shapes]
        for prim in prims:
            prim["targets"] = list(prim.get("targets", [])) + [dict(t) for t in targets]
    defaults = mesh.get("weights") if isinstance(mesh.get("weights"), list) else [0.0] * len(own)
    mesh["weights"] = list(defaults) + [0.0] * len(shapes)
    extras = mesh.get("extras") if isinstance(mesh.get("extras"), dict) else {}
    mesh["extras"] = dict(extras, targetNames=own + [s.name for s in shapes])


def _target(bb: BufferBuilder, shape: MorphTarget, vertices: np.ndarray, normals: bool, base=None) -> dict:
    """A primitive's morph target of ``shape``: accessors of its offsets at ``vertices``
    (``base``: the primitives' normals and tangents, for TANGENT offsets; see
    :func:`add_morph_targets`)."""
    found = np.searchsorted(shape.vertices, vertices)
    inside = found < len(shape.vertices)
    hit = np.zeros(len(vertices), bool)
    hit[inside] = shape.vertices[found[inside]] == vertices[inside]
    rows = np.flatnonzero(hit)
    out = {"POSITION": _offsets_accessor(bb, rows, shape.positions[found[hit]], len(vertices))}
    if normals and shape.normals is not None:
        out["NORMAL"] = _offsets_accessor(bb, rows, shape.normals[found[hit]], len(vertices))
        if base is not None:
            out["TANGENT"] = _offsets_accessor(bb, rows, tangent_offsets(base[0][rows], shape.normals[found[hit]],
                                                                         base[1][rows]), len(vertices))
    return out


def tangent_offsets(normals: np.ndarray, normal_offsets: np.ndarray, tangents: np.ndarray) -> np.ndarray:
    """(k, 3) ``R t - t``: each unit tangent turned by the smallest rotation ``R`` taking its
    unit normal ``n`` to ``n + d`` (zero where ``d`` is zero or turns ``n`` half round)."""
    from ..geometry.rotations import swing

    shaped = normals + normal_offsets
    turns = (np.abs(normal_offsets).max(axis=1) > 0) & (np.einsum("ij,ij->i", normals, shaped) > 1e-6) \
        & (np.linalg.norm(shaped, axis=1) > 1e-12)
    out = np.zeros_like(tangents)
    if turns.any():
        rotation = swing(normals[turns], shaped[turns])
        out[turns] = np.einsum("kij,kj->ki", rotation, tangents[turns]) - tangents[turns]
    return out


def _offsets_accessor(bb: BufferBuilder, rows: np.ndarray, values: np.ndarray, count: int) -> int:
    """A VEC3 float accessor of ``count`` offsets, ``values`` (k, 3) at ``rows`` (k,) and zero
    elsewhere: dense, sparse or without a buffer view (module docstring); with min and max."""
    moved = np.any(values != 0, axis=1)
    rows, values = rows[moved], values[moved].astype(np.float32)
    if len(rows) >= SPARSE_BELOW * count:
        dense = np.zeros((count, 3), np.float32)
        dense[rows] = values
        return bb.add(dense, FLOAT, "VEC3", ARRAY_BUFFER, minmax=True)
    # the vertices not moved are zeros (sparse is written only when some are)
    accessor = {"componentType": FLOAT, "count": int(count), "type": "VEC3",
                "min": [float(x) for x in values.min(axis=0, initial=0.0)],
                "max": [float(x) for x in values.max(axis=0, initial=0.0)]}
    if len(rows):
        index_type, index_dtype = (USHORT, "<u2") if count <= 65536 else (UINT, "<u4")
        accessor["sparse"] = {"count": int(len(rows)),
                              "indices": {"bufferView": bb.add_bytes(rows.astype(index_dtype).tobytes()),
                                          "componentType": index_type},
                              "values": {"bufferView": bb.add_bytes(values.astype("<f4").tobytes())}}
    bb.accessors.append(accessor)
    return len(bb.accessors) - 1
