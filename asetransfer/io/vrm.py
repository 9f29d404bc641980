"""VRM avatars (``.vrm``: a glTF binary with the ``VRMC_vrm`` 1.0 or ``VRM`` 0.x extension).

A VRM declares its humanoid: which node is the hips, the left upper arm, each finger's
segments.  Read, it becomes the skeleton's ``humanoid_bones`` (VRM 1.0 bone names -> joint
names), which the skeleton map reads before the joint names: a VRM rigged with any names
(``Bone.001``, Japanese, an exporter's numbering) is mapped as its author declared it.

Written over a VRM target (:func:`rehome_humanoid`), the declaration moves to the new
skeleton's joints: the target's own joints stay in the file as plain nodes, and a VRM
runtime posing the old ones would move nothing.  Each bone is found in the new skeleton
by the source's own declaration, else by the skeleton map's role; what no longer holds
(spring bones, node constraints: they name the old joints) is left out and said.

VRM 0.x counts the thumb's segments Proximal, Intermediate, Distal where VRM 1.0 counts
Metacarpal, Proximal, Distal (the same three joints): 0.x names are read and written in
their own form.
"""
from __future__ import annotations

from .glb import is_index

#: the root extensions of a VRM document, 1.0 and 0.x
VRM1, VRM0 = "VRMC_vrm", "VRM"
#: extensions naming a VRM's nodes that a rig written over it cannot keep (its joints are new):
#: spring bones (hair, skirts) and node constraints of 1.0, secondary animation of 0.x
_OLD_JOINT_EXTENSIONS = ("VRMC_springBone", "VRMC_node_constraint")
#: VRM 0.x thumb segment -> VRM 1.0's name for the same joint
_THUMB_0_TO_1 = {"ThumbProximal": "ThumbMetacarpal", "ThumbIntermediate": "ThumbProximal", "ThumbDistal": "ThumbDistal"}
_THUMB_1_TO_0 = {one: zero for zero, one in _THUMB_0_TO_1.items()}


def is_vrm(doc: dict) -> bool:
    """Whether a glTF document is a VRM (has the 1.0 or 0.x root extension)."""
    extensions = doc.get("extensions")
    return isinstance(extensions, dict) and (isinstance(extensions.get(VRM1), dict)
                                             or isinstance(extensions.get(VRM0), dict))


def declared_bones(doc: dict) -> dict:
    """VRM 1.0 bone name -> node index, as the document's humanoid declares them (1.0 first,
    then 0.x with its thumbs renamed); empty for a document that is no VRM.  Entries that are
    not a bone name with a node index are skipped (a reader of avatars meets many exporters)."""
    extensions = doc.get("extensions")
    if not isinstance(extensions, dict):
        return {}
    vrm1 = extensions.get(VRM1)
    if isinstance(vrm1, dict):
        bones = _get(vrm1, "humanoid", "humanBones")
        if isinstance(bones, dict):
            return {b: e["node"] for b, e in bones.items()
                    if isinstance(b, str) and isinstance(e, dict) and is_index(e.get("node"))}
    bones = _get(extensions.get(VRM0), "humanoid", "humanBones")
    if isinstance(bones, list):
        return {_from_vrm0(e["bone"]): e["node"] for e in bones
                if isinstance(e, dict) and isinstance(e.get("bone"), str) and is_index(e.get("node"))}
    return {}


def humanoid_joints(doc: dict, joint_nodes: list, names) -> dict:
    """VRM 1.0 bone name -> joint name for the declared bones that are joints of the skin
    (``joint_nodes`` the skeleton's nodes, ``names`` its joint names); a joint declared for
    two bones plays the first."""
    at = {node: j for j, node in enumerate(joint_nodes)}
    bones, taken = {}, set()
    for bone, node in declared_bones(doc).items():
        if node in at and node not in taken:
            bones[bone] = names[at[node]]
            taken.add(node)
    return bones


def _get(value, *keys):
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _from_vrm0(bone: str) -> str:
    return _thumb_renamed(bone, _THUMB_0_TO_1)


def _to_vrm0(bone: str) -> str:
    return _thumb_renamed(bone, _THUMB_1_TO_0)


def _thumb_renamed(bone: str, table: dict) -> str:
    """``bone`` with its thumb segment renamed by ``table`` (others as they are)."""
    for side in ("left", "right"):
        if bone.startswith(side) and bone[len(side):] in table:
            return side + table[bone[len(side):]]
    return bone


def rehome_humanoid(doc: dict, bones: dict, first_node: int) -> list:
    """Declare the new skeleton's humanoid in the VRM document ``doc`` (in place).

    Parameters
    ----------
    doc : the glTF document written over a VRM target.
    bones : humanoid bone (VRM 1.0 name) -> joint index in the new skeleton.
    first_node : the node index of joint 0 (the joints' nodes follow in order).

    Returns
    -------
    What could not be carried, one short phrase each: bones of the target's humanoid the new
    skeleton has no joint for, and the extensions naming the old joints (removed).
    """
    extensions = doc.get("extensions", {})
    vrm1, vrm0 = extensions.get(VRM1), extensions.get(VRM0)
    if isinstance(vrm1, dict) and isinstance(_get(vrm1, "humanoid", "humanBones"), dict):
        old = vrm1["humanoid"]["humanBones"]
        missing = [b for b in old if b not in bones]
        vrm1["humanoid"]["humanBones"] = {b: dict(old.get(b) if isinstance(old.get(b), dict) else {},
                                                  node=first_node + j) for b, j in bones.items()}
        lost = []
    elif isinstance(vrm0, dict) and isinstance(_get(vrm0, "humanoid", "humanBones"), list):
        old = {_from_vrm0(e["bone"]): e for e in vrm0["humanoid"]["humanBones"]
               if isinstance(e, dict) and isinstance(e.get("bone"), str)}
        missing = [old[b]["bone"] for b in old if b not in bones]
        vrm0["humanoid"]["humanBones"] = [dict(old.get(b, {"bone": _to_vrm0(b), "useDefaultValues": True}),
                                               node=first_node + j) for b, j in bones.items()]
        if isinstance(vrm0.get("firstPerson"), dict) and "head" in bones:
            vrm0["firstPerson"]["firstPersonBone"] = first_node + bones["head"]
        lost = []
        if vrm0.pop("secondaryAnimation", None) is not None:
            lost.append("the VRM's spring bones (secondaryAnimation: they move the target's old joints)")
    else:
        return []
    if missing:
        lost.append(f"VRM humanoid bone(s) {', '.join(missing)} (no joint of the new skeleton plays them)")
    return lost + _drop_old_joint_extensions(doc)


def follow_mesh_copies(doc: dict, copies: dict) -> None:
    """Make a VRM 0.x document's mesh references (in place) name the copies of a mesh too.

    VRM 0.x names meshes by index (a blend shape group's binds, the first-person view's mesh
    annotations); a mesh two skinned nodes shared is written as the mesh and a copy, one per
    node, and a bind naming only the mesh would drive one of them.  Each reference to a
    copied mesh is repeated for each copy.  VRM 1.0 names nodes, which keep their meshes.

    Parameters
    ----------
    doc : the glTF document written over a VRM target.
    copies : {mesh index: [indices of the meshes copied from it]}.
    """
    vrm0 = _get(doc, "extensions", VRM0)
    if not copies or not isinstance(vrm0, dict):
        return
    groups = _get(vrm0, "blendShapeMaster", "blendShapeGroups")
    for group in groups if isinstance(groups, list) else []:
        if isinstance(group, dict) and isinstance(group.get("binds"), list):
            group["binds"] = _with_copies(group["binds"], copies)
    first_person = vrm0.get("firstPerson")
    if isinstance(first_person, dict) and isinstance(first_person.get("meshAnnotations"), list):
        first_person["meshAnnotations"] = _with_copies(first_person["meshAnnotations"], copies)


def _with_copies(entries: list, copies: dict) -> list:
    """``entries`` (dicts with a ``mesh`` index), each followed by one per copy of its mesh."""
    out = []
    for entry in entries:
        out.append(entry)
        mesh = entry.get("mesh") if isinstance(entry, dict) else None
        out += [dict(entry, mesh=m) for m in copies.get(mesh, [])] if is_index(mesh) else []
    return out


def _drop_old_joint_extensions(doc: dict) -> list:
    """Remove the extensions naming the target's old joints (spring bones, node constraints);
    returns what was removed."""
    extensions, lost = doc.get("extensions", {}), []
    for name in _OLD_JOINT_EXTENSIONS:
        if extensions.pop(name, None) is not None:
            lost.append(f"{name} (it names the target's old joints)")
    constrained = 0
    for node in doc.get("nodes", []):
        node_extensions = node.get("extensions") if isinstance(node, dict) else None
        if isinstance(node_extensions, dict) and node_extensions.pop("VRMC_node_constraint", None) is not None:
            constrained += 1
            if not node_extensions:
                del node["extensions"]
    if constrained:
        lost.append(f"VRMC_node_constraint on {constrained} node(s) (they name the target's old joints)")
    used = doc.get("extensionsUsed")
    if isinstance(used, list):
        doc["extensionsUsed"] = [e for e in used if e not in _OLD_JOINT_EXTENSIONS or e in extensions]
    return lost
