"""VRM avatars made from the fixture source (fixtures/source.glb): its document with the VRM
1.0 (``VRMC_vrm``) or 0.x (``VRM``) humanoid declared over its joints, which may be renamed
so that no naming convention reads them."""
from __future__ import annotations

import copy
from pathlib import Path

from asetransfer.io.glb import pack_glb, read_document

SOURCE = Path(__file__).resolve().parents[1] / "fixtures" / "source.glb"

#: the fixture's joint -> its VRM 1.0 humanoid bone
BONES = {"hips": "hips", "spine.001": "spine", "spine.002": "chest", "spine.003": "upperChest", "neck": "neck",
         "head": "head"}
for _side, _word in (("L", "left"), ("R", "right")):
    BONES.update({f"clavicle.{_side}": f"{_word}Shoulder", f"upperarm.{_side}": f"{_word}UpperArm",
                  f"forearm.{_side}": f"{_word}LowerArm", f"hand.{_side}": f"{_word}Hand",
                  f"thigh.{_side}": f"{_word}UpperLeg", f"shin.{_side}": f"{_word}LowerLeg",
                  f"foot.{_side}": f"{_word}Foot", f"toe.{_side}": f"{_word}Toes"})
    for _k, _segment in enumerate(("Metacarpal", "Proximal", "Distal"), 1):
        BONES[f"thumb.0{_k}.{_side}"] = f"{_word}Thumb{_segment}"
    for _finger, _vrm in (("index", "Index"), ("middle", "Middle"), ("ring", "Ring"), ("pinky", "Little")):
        for _k, _segment in enumerate(("Proximal", "Intermediate", "Distal"), 1):
            BONES[f"{_finger}.0{_k}.{_side}"] = f"{_word}{_vrm}{_segment}"
#: VRM 1.0 thumb segment -> 0.x's name for the same joint
THUMB_1_TO_0 = {"ThumbMetacarpal": "ThumbProximal", "ThumbProximal": "ThumbIntermediate", "ThumbDistal": "ThumbDistal"}


def vrm0_bone(bone: str) -> str:
    for side in ("left", "right"):
        if bone.startswith(side) and bone[len(side):] in THUMB_1_TO_0:
            return side + THUMB_1_TO_0[bone[len(side):]]
    return bone


def vrm_document(version: str = "1.0", rename=None, springs: bool = True) -> tuple:
    """(doc, blob) of the fixture source as a VRM ``version`` ("1.0" or "0.x"); ``rename``:
    joint name -> new node name (None: kept); ``springs``: with a spring bone on the head
    (1.0: VRMC_springBone; 0.x: secondaryAnimation)."""
    doc, buffers = read_document(SOURCE)
    doc = copy.deepcopy(doc)
    joints = doc["skins"][0]["joints"]
    node_of = {doc["nodes"][n]["name"]: n for n in joints}
    if rename is not None:
        for n in joints:
            doc["nodes"][n]["name"] = rename(doc["nodes"][n]["name"])
    extensions = doc.setdefault("extensions", {})
    used = doc.setdefault("extensionsUsed", [])
    if version == "1.0":
        extensions["VRMC_vrm"] = {"specVersion": "1.0", "meta": {"name": "fixture", "authors": ["asetransfer"],
                                                                  "licenseUrl": "https://vrm.dev/licenses/1.0/"},
                                  "humanoid": {"humanBones": {bone: {"node": node_of[j]} for j, bone in BONES.items()}}}
        used.append("VRMC_vrm")
        if springs:
            extensions["VRMC_springBone"] = {"specVersion": "1.0", "springs": [
                {"joints": [{"node": node_of["head"]}, {"node": node_of["head_end"]}]}]}
            used.append("VRMC_springBone")
    else:
        extensions["VRM"] = {"exporterVersion": "test", "meta": {"title": "fixture"},
                             "humanoid": {"humanBones": [{"bone": vrm0_bone(bone), "node": node_of[j],
                                                          "useDefaultValues": True} for j, bone in BONES.items()]},
                             "firstPerson": {"firstPersonBone": node_of["head"]}}
        if springs:
            extensions["VRM"]["secondaryAnimation"] = {"boneGroups": [{"bones": [node_of["head_end"]]}]}
        used.append("VRM")
    return doc, buffers[0]


def save_vrm(path, version: str = "1.0", rename=None, springs: bool = True) -> str:
    doc, blob = vrm_document(version, rename, springs)
    Path(path).write_bytes(pack_glb(doc, blob))
    return str(path)
