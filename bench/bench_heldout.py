"""Characters the production dev set leaves out, rigged with automatic and ray-placed markers.

    python bench/bench_heldout.py --characters DIR [--out DIR] [--json FILE]

``DIR`` holds Mesh2Motion's rigged characters (``static/models-variation`` of
https://github.com/Mesh2Motion/mesh2motion-app, the repository the production dev set was
taken from; not in this project: they are other artists' files).  Each pair below is a
source and a target of one skeleton family that the dev set does not hold; the target's
own rig is the truth.  A case is built as the dev set's are (``target.obj`` the target's
mesh at its bind pose, ``gt.json`` its joints, weights and height) and scored by
``../shared/eval/creatures/score.py``.  Markers: every pair rigs with automatic markers
(humanoid: they refuse the creatures with one line) and with ~60 markers placed by one
rule on both characters (rays from each scored joint, across its bone, to the surface:
``Joint.left``, ``Joint.up``..., and along a leaf's bone: ``Joint.tip``).  Those markers are noisier than a TD's
(fox -> dog 2.62 %H with them, 2.95 with the dev set's own 60).

``--family DIR`` (repeatable) adds every ordered pair of the rigged characters (``.glb``) in
``DIR`` that share one skeleton, built and rigged as above: a family of one's own, e.g.
characters rigged by Mixamo's auto-rigger (X Bot, a mannequin and a soldier share its
joint names); with ``--skinned-only`` each target leaves out the pieces its file does not
skin (weapons, hats and capes parented to bones).

``--static DIR`` (the repository's ``static`` folder) adds characters as Mesh2Motion's users
bring them, rigged by the male and the female with automatic markers: its unrigged mannequin
(``models/model-human.glb``, 90 pieces, fingers in segments) scored against the template
skeleton Mesh2Motion places in it (``rigs/rig-human.glb``, the same joint names; a template,
not an artist's fit: its pelvis sits 5 %H from where either source's artist would put it),
and a Ready Player Me avatar (``test-files/human-interleaved-buffer-mesh.glb``: interleaved
vertex buffers, a hooded top whose sleeves are the arms) scored against its own Mixamo-named
rig by skeleton-map role, so the two rigs' conventions (where each puts the hips, the
spine, the shoulders) are part of that figure.
"""
from __future__ import annotations

import argparse
import atexit
import json
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

from devdata import EVAL

#: (source, target, family) of the pairs the dev set leaves out
PAIRS = (("human-male", "human-sintel", "human"), ("human-female", "human-sintel", "human"),
         ("human-male", "human-sophia", "human"), ("human-female", "human-sophia", "human"),
         ("fox-fox", "fox-horse", "fox"), ("fox-fox", "fox-panda", "fox"),
         ("fish-shark", "fish-whale", "fish"), ("kaiju-base", "kaiju-t-rex", "kaiju"))
FINGERS = ("thumb", "index", "middle", "ring", "pinky")
#: the world directions a marker's ray may take across its joint's bone (the files are Y up, facing +Z)
DIRECTIONS = {"left": (1, 0, 0), "right": (-1, 0, 0), "up": (0, 1, 0), "down": (0, -1, 0),
              "front": (0, 0, 1), "back": (0, 0, -1)}
MARKERS = 60


def _is_finger(name: str) -> bool:
    """A finger joint by its name: Mesh2Motion's ``thumb_01_l``, Mixamo's ``LeftHandThumb1``."""
    return any(f in name.lower() for f in FINGERS)


def _skinned_only(rig):
    """``rig``'s vertices and triangles without the pieces its file does not skin (weapons,
    hats, capes parented to bones: KayKit's adventurers), as (vertices, faces, kept rows)."""
    look = rig.mesh.look
    keep = np.zeros(rig.mesh.n_vertices, bool)
    for piece in look.pieces:
        keep[piece.vertices] |= "skin" in look.document["nodes"][piece.node]
    faces = rig.mesh.faces[keep[rig.mesh.faces].all(axis=1)]
    kept = np.flatnonzero(keep)
    return rig.mesh.vertices[kept], np.searchsorted(kept, faces), kept


def build_case(source: Path, target: Path, out: Path, family: str, skinned_only: bool = False) -> None:
    """A creatures-scorer case from two rigged characters of one skeleton family (the target
    without the pieces its file does not skin when ``skinned_only``)."""
    from asetransfer.io import load_rig

    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(source, out / "source.glb")
    shutil.copy(target, out / "gt.glb")
    rig, names_in_source = load_rig(target), set(load_rig(source).skeleton.names)
    v, f, kept = _skinned_only(rig) if skinned_only else (rig.mesh.vertices, rig.mesh.faces, slice(None))
    with open(out / "target.obj", "w") as fh:
        fh.writelines("v %.9g %.9g %.9g\n" % tuple(p) for p in v)
        fh.writelines("f %d %d %d\n" % tuple(t + 1) for t in f)
    sk, idx, w = rig.skeleton, rig.skin.indices[kept], rig.skin.weights[kept]
    weighted = np.zeros(sk.n_joints, bool)
    weighted[np.unique(idx[w > 0])] = True
    joints = [dict(name=n, parent=sk.names[p] if p >= 0 else None, position=sk.bind_world[j, :3, 3].tolist(),
                   weighted=bool(weighted[j]), scored=bool(weighted[j] and n in names_in_source))
              for j, (n, p) in enumerate(zip(sk.names, sk.parents))]
    order = np.argsort(-w, axis=1)[:, :4]
    rows = np.arange(len(v))[:, None]
    lo, hi = v.min(axis=0), v.max(axis=0)
    meta = dict(case=out.name, family=family, target_file="target.obj", body_height=float(hi[1] - lo[1]),
                size=float((hi - lo).max()), joints=joints,
                finger_joints=[n for n in sk.names if _is_finger(n)],
                skin=dict(joints=idx[rows, order].tolist(), weights=w[rows, order].tolist()))
    (out / "gt.json").write_text(json.dumps(meta))


def _bone(positions: np.ndarray, parents: np.ndarray, j: int):
    """Joint ``j``'s bone direction (to its children's mean, or from its parent for a leaf) and whether it is a leaf."""
    kids = np.flatnonzero(parents == j)
    b = positions[kids].mean(axis=0) - positions[j] if len(kids) else positions[j] - positions[parents[j]]
    return b / max(np.linalg.norm(b), 1e-12), not len(kids)


def _first_hit(vertices, faces, origin, direction):
    from asetransfer.geometry.rays import cast_rays

    hits = cast_rays(vertices, faces, origin[None], direction[None], first=True)
    return hits.point[0] if len(hits.face) else None


def place_markers(case: Path) -> int:
    """~``MARKERS`` markers, each a ray from a scored joint cast the same way on both
    characters (the source's joints and the target's own), written to ``markers.json``."""
    from asetransfer.io import load_mesh, load_rig

    meta = json.loads((case / "gt.json").read_text())
    source, target = load_rig(case / "source.glb"), load_mesh(case / "target.obj")
    s_names, s_pos = list(source.skeleton.names), source.skeleton.bind_world[:, :3, 3]
    t_names = [j["name"] for j in meta["joints"]]
    t_pos = np.array([j["position"] for j in meta["joints"]])
    t_par = np.array([t_names.index(j["parent"]) if j["parent"] else -1 for j in meta["joints"]])
    sizes = [np.ptp(source.mesh.vertices, axis=0).max(), np.ptp(target.vertices, axis=0).max()]
    meshes = [(source.mesh.vertices, source.mesh.faces), (target.vertices, target.faces)]
    per_joint = []
    for joint in meta["joints"]:
        name = joint["name"]
        if not joint["scored"] or name in meta["finger_joints"] or name not in s_names:
            continue
        at = [s_pos[s_names.index(name)], t_pos[t_names.index(name)]]
        bones = [_bone(s_pos, source.skeleton.parents, s_names.index(name)), _bone(t_pos, t_par, t_names.index(name))]
        rays = [("tip", [b for b, _ in bones])] if bones[0][1] else []
        for label, d in DIRECTIONS.items():
            across = [np.array(d, float) - (np.array(d, float) @ b) * b for b, _ in bones]
            if min(np.linalg.norm(a) for a in across) >= 0.6:
                rays.append((label, [a / np.linalg.norm(a) for a in across]))
        found = []
        for label, directions in rays:
            hits = [_first_hit(*m, p, d) for m, p, d in zip(meshes, at, directions)]
            if any(h is None for h in hits):
                continue
            reach = [np.linalg.norm(h - p) / s for h, p, s in zip(hits, at, sizes)]
            # one body part on both: comparable reach, not across the body
            if max(reach) < 0.3 and 0.5 < reach[0] / max(reach[1], 1e-9) < 2.0:
                found.append((f"{name}.{label}", hits))
        per_joint.append(found)
    chosen, k = [], 0
    while len(chosen) < MARKERS and any(len(found) > k for found in per_joint):
        chosen += [found[k] for found in per_joint if len(found) > k][:MARKERS - len(chosen)]
        k += 1
    doc = [{"name": n, "source": {"point": [round(float(x), 6) for x in s]},
            "target": {"point": [round(float(x), 6) for x in t]}} for n, (s, t) in chosen]
    (case / "markers.json").write_text(json.dumps({"markers": doc}, indent=1))
    return len(doc)


def run(case: Path, markers: bool, out: Path, score) -> dict:
    """One transfer, scored (automatic markers unless ``markers``)."""
    from asetransfer.errors import InputError
    from asetransfer.job import transfer_files

    rig = out / f"{case.name}_{'rays' if markers else 'auto'}.glb"
    row = {"case": case.name, "markers": "rays" if markers else "auto"}
    try:
        done = transfer_files(case / "source.glb", case / "target.obj", rig, case / "markers.json" if markers else None)
    except InputError as e:
        return {**row, "error": str(e)}
    s = score(str(case), str(rig))
    return {**row, "verdict": done.report.quality.verdict,
            **{k: s.get(k) for k in ("body_pct", "body_max_pct", "body_pct_of_size", "fingers_pct", "weight_err")}}


def template_joints(path: Path) -> dict:
    """name -> (3,) bind position of each joint of a skin without a mesh (its inverse bind matrices)."""
    from asetransfer.io.glb import Accessors, read_document

    doc, buffers = read_document(path)
    skin = doc["skins"][0]
    inverse = Accessors(path, doc, buffers).read(skin["inverseBindMatrices"]).reshape(-1, 4, 4)
    world = np.linalg.inv(inverse.transpose(0, 2, 1).astype(np.float64))
    return {doc["nodes"][j]["name"]: world[k, :3, 3] for k, j in enumerate(skin["joints"])}


def _role_positions(rig) -> dict:
    from asetransfer.humanoid.skeleton_map import propose_skeleton_map

    names, positions = rig.skeleton.names, rig.skeleton.bind_world[:, :3, 3]
    return {role: positions[names.index(joint)] for role, joint in propose_skeleton_map(rig.skeleton)[0].items()}


def brought_rows(static: Path, characters: Path, out: Path) -> list:
    """The ``--static`` rows: each of Mesh2Motion's two humans onto the unrigged mannequin (scored
    by joint name against the template skeleton) and the avatar (by role against its own rig)."""
    from asetransfer.errors import InputError
    from asetransfer.job import load_source, transfer_files

    mannequin, avatar = static / "models" / "model-human.glb", static / "test-files" / "human-interleaved-buffer-mesh.glb"
    template = template_joints(static / "rigs" / "rig-human.glb")
    avatar_roles = _role_positions(load_source(avatar).rig)
    rows = []
    for source in ("human-male", "human-female"):
        for target in (mannequin, avatar):
            rig, row = out / f"{source}_to_{target.stem}.glb", {"case": f"{source}_to_{target.stem}", "markers": "auto"}
            try:
                done = transfer_files(characters / f"{source}.glb", target, rig)
            except InputError as e:
                rows.append({**row, "error": str(e)})
                continue
            result = load_source(rig).rig
            height = float(np.ptp(result.mesh.vertices, axis=0).max() if target is avatar else
                           np.ptp(result.mesh.vertices[:, 1]))
            if target is mannequin:
                names, positions = result.skeleton.names, result.skeleton.bind_world[:, :3, 3]
                truth = {n: p for n, p in template.items() if n in names and n != "root"}
                got = {n: positions[names.index(n)] for n in truth}
            else:
                truth, got = avatar_roles, _role_positions(result)
                truth = {r: p for r, p in truth.items() if r in got}
            error = {n: float(np.linalg.norm(got[n] - p)) / height * 100 for n, p in truth.items()}
            body = [e for n, e in error.items() if not any(f in n for f in FINGERS)]
            fingers = [e for n, e in error.items() if any(f in n for f in FINGERS)]
            rows.append({**row, "verdict": done.report.quality.verdict, "body_pct": float(np.mean(body)),
                         "body_max_pct": float(np.max(body)), "body_pct_of_size": float(np.mean(body)),
                         "fingers_pct": float(np.mean(fingers)) if fingers else None, "weight_err": None})
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--characters", required=True, help="folder of Mesh2Motion's rigged characters (.glb)")
    p.add_argument("--out", help="folder for the cases and rigs (default: a temporary one)")
    p.add_argument("--json", help="also write the rows as JSON")
    p.add_argument("--static", help="Mesh2Motion's static folder: also its unrigged mannequin and an avatar")
    p.add_argument("--family", action="append", default=[],
                   help="a folder of rigged characters (.glb) sharing one skeleton: also every pair of them")
    p.add_argument("--skinned-only", action="store_true",
                   help="--family targets without the pieces their files do not skin (props, hats on bones)")
    args = p.parse_args(argv)
    sys.path.insert(0, str(EVAL / "creatures"))
    from score import score

    out = Path(args.out or tempfile.mkdtemp(prefix="asetransfer-heldout-"))
    if not args.out:  # a scratch folder, removed at exit (--out keeps the rigs)
        atexit.register(shutil.rmtree, out, True)
    rows = []
    for source, target, family in PAIRS:
        case = out / f"{source}_to_{target}"
        build_case(Path(args.characters) / f"{source}.glb", Path(args.characters) / f"{target}.glb", case, family)
        place_markers(case)
        for markers in (False, True):
            rows.append(run(case, markers, out, score))
    if args.static:
        rows += brought_rows(Path(args.static), Path(args.characters), out)
    for folder in map(Path, args.family):
        members = sorted(folder.glob("*.glb"))
        for source, target in ((s, t) for s in members for t in members if s != t):
            case = out / f"{source.stem}_to_{target.stem}"
            build_case(source, target, case, folder.name, skinned_only=args.skinned_only)
            place_markers(case)
            rows += [run(case, markers, out, score) for markers in (False, True)]
    print("| case | markers | body %H | max %H | % of size | fingers %H | weights | verdict |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "error" in r:
            print(f"| {r['case']} | {r['markers']} | refused: {r['error'][-60:]} ||||||")
            continue
        fingers = "-" if r["fingers_pct"] is None else f"{r['fingers_pct']:.2f}"
        weights = "-" if r["weight_err"] is None else f"{r['weight_err']:.3f}"
        print(f"| {r['case']} | {r['markers']} | {r['body_pct']:.2f} | {r['body_max_pct']:.2f} | "
              f"{r['body_pct_of_size']:.2f} | {fingers} | {weights} | {r['verdict']} |")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
