"""The look of a rigged mesh in USD (:mod:`.look_parts`): each mesh's normals, UV sets and
colours by polygon corner (``normals``, ``primvars:st``, ``st1``..., ``primvars:displayColor``
and ``displayOpacity``, ``displayColor1`` and ``displayOpacity1``..., ``faceVarying``), and its materials as
``UsdPreviewSurface`` shaders (``diffuseColor``, ``opacity``; the base colour texture through
a ``UsdUVTexture`` reading ``st``), bound to the mesh, or to one ``GeomSubset`` of its faces
per material (family ``materialBind``).  Texture images are asset files the writer puts
beside the layer (or in the .usdz package): ``TEXTURES/<file>``.
"""
from __future__ import annotations

import numpy as np

from .look_parts import WrittenMaterial, WrittenPart

MATERIALS = "/Character/Materials"


def define_corner_primvars(mesh_prim, part: WrittenPart) -> None:
    """The part's per-corner normals, UVs and colours (``faceVarying``) on ``mesh_prim``."""
    from pxr import Sdf, UsdGeom, Vt

    mesh = UsdGeom.Mesh(mesh_prim)
    if part.normals is not None:
        unit = part.normals / np.maximum(np.linalg.norm(part.normals, axis=1, keepdims=True), 1e-30)
        mesh.CreateNormalsAttr(Vt.Vec3fArray.FromNumpy(np.ascontiguousarray(unit, dtype=np.float32)))
        mesh.SetNormalsInterpolation(UsdGeom.Tokens.faceVarying)
    if part.uv is not None:
        st = UsdGeom.PrimvarsAPI(mesh_prim).CreatePrimvar("st", Sdf.ValueTypeNames.TexCoord2fArray,
                                                          UsdGeom.Tokens.faceVarying)
        st.Set(Vt.Vec2fArray.FromNumpy(np.ascontiguousarray(part.uv, dtype=np.float32)))
    for k, uv in enumerate(part.more_uv, start=1):
        UsdGeom.PrimvarsAPI(mesh_prim).CreatePrimvar(f"st{k}", Sdf.ValueTypeNames.TexCoord2fArray,
                                                     UsdGeom.Tokens.faceVarying).Set(
            Vt.Vec2fArray.FromNumpy(np.ascontiguousarray(uv, dtype=np.float32)))
    colour_sets = ([part.colours] if part.colours is not None else []) + list(part.more_colours)
    for k, colours in enumerate(colour_sets):  # displayColor, then displayColor1... (as st, st1...)
        suffix = str(k) if k else ""
        primvars = UsdGeom.PrimvarsAPI(mesh_prim)
        primvars.CreatePrimvar(f"displayColor{suffix}", Sdf.ValueTypeNames.Color3fArray,
                               UsdGeom.Tokens.faceVarying).Set(
            Vt.Vec3fArray.FromNumpy(np.ascontiguousarray(colours[:, :3], dtype=np.float32)))
        if (colours[:, 3] < 1.0).any():
            primvars.CreatePrimvar(f"displayOpacity{suffix}", Sdf.ValueTypeNames.FloatArray,
                                   UsdGeom.Tokens.faceVarying).Set(
                Vt.FloatArray.FromNumpy(np.ascontiguousarray(colours[:, 3], dtype=np.float32)))


def define_materials(stage, materials: list, names: list, texture_folder: str) -> list:
    """A ``UsdShade.Material`` per :class:`WrittenMaterial` (prim names ``names``), its texture
    read from ``texture_folder/<file>`` (relative to the layer); returns the materials."""
    from pxr import UsdGeom

    if materials:
        UsdGeom.Scope.Define(stage, MATERIALS)
    return [_material(stage, f"{MATERIALS}/{name}", m, texture_folder) for m, name in zip(materials, names)]


def _material(stage, path: str, material: WrittenMaterial, texture_folder: str):
    from pxr import Gf, Sdf, UsdShade

    out = UsdShade.Material.Define(stage, path)
    surface = UsdShade.Shader.Define(stage, f"{path}/PreviewSurface")
    surface.CreateIdAttr("UsdPreviewSurface")
    colour = surface.CreateInput("diffuseColor", Sdf.ValueTypeNames.Color3f)
    colour.Set(Gf.Vec3f(*map(float, material.colour)))
    surface.CreateInput("opacity", Sdf.ValueTypeNames.Float).Set(float(material.alpha))
    surface.CreateInput("roughness", Sdf.ValueTypeNames.Float).Set(float(material.roughness))
    surface.CreateInput("metallic", Sdf.ValueTypeNames.Float).Set(float(material.metallic))
    if any(material.emissive):
        surface.CreateInput("emissiveColor", Sdf.ValueTypeNames.Color3f).Set(Gf.Vec3f(*map(float, material.emissive)))
    out.CreateSurfaceOutput().ConnectToSource(surface.ConnectableAPI(), "surface")
    if material.texture is not None:
        reader = UsdShade.Shader.Define(stage, f"{path}/stReader")
        reader.CreateIdAttr("UsdPrimvarReader_float2")
        reader.CreateInput("varname", Sdf.ValueTypeNames.String).Set("st")
        reader.CreateOutput("result", Sdf.ValueTypeNames.Float2)
        texture = UsdShade.Shader.Define(stage, f"{path}/diffuseTexture")
        texture.CreateIdAttr("UsdUVTexture")
        texture.CreateInput("file", Sdf.ValueTypeNames.Asset).Set(f"./{texture_folder}/{material.texture[1]}")
        texture.CreateInput("st", Sdf.ValueTypeNames.Float2).ConnectToSource(reader.ConnectableAPI(), "result")
        texture.CreateOutput("rgb", Sdf.ValueTypeNames.Float3)
        colour.ConnectToSource(texture.ConnectableAPI(), "rgb")
    return out


def bind_materials(mesh_prim, part: WrittenPart, materials: list) -> None:
    """Bind the part's materials: its one material to the mesh, several to one GeomSubset of
    faces each."""
    from pxr import UsdGeom, UsdShade, Vt

    if not part.materials:
        return
    if len(part.materials) == 1:
        UsdShade.MaterialBindingAPI.Apply(mesh_prim).Bind(materials[part.materials[0]])
        return
    mesh = UsdGeom.Mesh(mesh_prim)
    UsdShade.MaterialBindingAPI.Apply(mesh_prim)
    for slot, index in enumerate(part.materials):
        faces = Vt.IntArray.FromNumpy(np.flatnonzero(part.slots == slot).astype(np.int32))
        subset = UsdGeom.Subset.CreateGeomSubset(mesh, f"material_{slot}", UsdGeom.Tokens.face, faces,
                                                 "materialBind", UsdGeom.Tokens.partition)
        UsdShade.MaterialBindingAPI.Apply(subset.GetPrim()).Bind(materials[index])


def texture_files(materials: list) -> dict:
    """file name -> image bytes of the materials' textures."""
    return {m.texture[1]: m.texture[0] for m in materials if m.texture is not None}
