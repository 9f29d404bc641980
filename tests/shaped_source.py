"""The fixture source with three blend shapes (a jaw opening, a blink, the eyes turned), for the
blend-shape tests (tests/test_blendshapes.py) and Blender's import check (tests/test_blender.py)."""
from __future__ import annotations

import numpy as np

from gltf_builder import add_morph_targets, rig_document, save_glb

JAW, BLINK, EYES = "jaw open", "blink", "eyes left"


def shapes_of_fixture(rig) -> dict:
    """name -> (n, 3) offsets on the fixture source's vertices: the jaw opened 12 degrees about a
    pivot below the head joint (the face's lower front), the left eyelid region moved down
    1 cm, both eyeballs (separate pieces) turned to the left."""
    v, parts = rig.mesh.vertices, rig.mesh.vertex_part
    head = rig.skeleton.bind_world[rig.skeleton.names.index("head"), :3, 3]
    body = parts == rig.mesh.parts.index("body")
    jaw = body & (v[:, 1] > head[1] - 0.08) & (v[:, 1] < head[1] + 0.02) & (v[:, 2] > head[2] + 0.03)
    angle = np.radians(12.0)
    turn = np.array([[1, 0, 0], [0, np.cos(angle), -np.sin(angle)], [0, np.sin(angle), np.cos(angle)]])
    pivot = head + [0.0, 0.0, -0.02]
    falloff = np.clip((head[1] + 0.02 - v[:, 1]) / 0.04, 0, 1)  # the upper face stays
    offsets = {JAW: np.where(jaw[:, None], falloff[:, None] * ((v - pivot) @ turn.T + pivot - v), 0.0)}
    eye = v[parts == rig.mesh.parts.index("eye.L")].mean(axis=0)
    lid = body & (np.linalg.norm(v - eye, axis=1) < 0.035) & (v[:, 2] > eye[2])
    offsets[BLINK] = np.where(lid[:, None], [0.0, -0.01, 0.0], 0.0)
    eyes = np.isin(parts, [rig.mesh.parts.index("eye.L"), rig.mesh.parts.index("eye.R")])
    offsets[EYES] = np.where(eyes[:, None], [0.004, 0.0, 0.0], 0.0)
    return offsets


def write_shaped_source(rig, path):
    """``rig`` (the fixture source) written to ``path`` with :func:`shapes_of_fixture`'s shapes as
    morph targets on each of its meshes (body, eye.L, eye.R), as Blender writes them
    (``mesh.extras.targetNames``, weights 0); returns ``path``."""
    doc, blob = rig_document(rig)
    offsets = shapes_of_fixture(rig)
    for node in doc["nodes"]:
        if "mesh" in node:
            part = np.flatnonzero(rig.mesh.vertex_part == rig.mesh.parts.index(node["name"]))
            add_morph_targets(doc, blob, node["mesh"], {name: d[part] for name, d in offsets.items()})
    return save_glb(path, doc, bytes(blob))
