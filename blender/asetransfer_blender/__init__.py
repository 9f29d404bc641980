"""asetransfer for Blender: carry a rig (skeleton, orientations, skin weights) onto a new body.

The 3D view's sidebar (N) gets an "asetransfer" tab: pick the source armature and the
target mesh, **Find markers** (empties the TD can move), **Add / Remove pair** (hand
markers), **Transfer rig** (a new armature with the source's bone names and the target
copied and bound to it, the source's shape keys carried; its verdict and warnings in the
status bar and Info editor; the preview picture and QA page where the panel names them),
and **Save / Load markers** (the command line's marker files).  ``docs/blender.md``.
"""
from __future__ import annotations

import bpy
from bpy.props import BoolProperty, EnumProperty, PointerProperty, StringProperty
from bpy_extras.io_utils import ExportHelper, ImportHelper


def _is_armature(_, obj):
    return obj.type == "ARMATURE"


def _is_mesh(_, obj):
    return obj.type == "MESH"


class AsetransferSettings(bpy.types.PropertyGroup):
    source: PointerProperty(type=bpy.types.Object, poll=_is_armature, name="Source",
                            description="Rigged source: an armature; its meshes are those it deforms")
    target: PointerProperty(type=bpy.types.Object, poll=_is_mesh, name="Target",
                            description="Target mesh to rig (left untouched: a bound copy is made)")
    target_children: BoolProperty(name="With child meshes", default=True,
                                  description="Also rig the mesh objects below the target (eyes, teeth, ...)")
    apply_modifiers: BoolProperty(name="Apply modifiers", default=False,
                                  description="Use the meshes with their modifiers applied (the rigged copy gets the "
                                              "evaluated mesh); off: the mesh data as modelled")
    joints: EnumProperty(name="Joints", default="em", items=[
        ("em", "Energy minimisation", "Fit joints to the skin weights and surface (spec Eq. 3.1)"),
        ("pa", "Procrustes", "Carry each joint with its weighted vertices (spec 3.1.2)")])
    mirror: EnumProperty(name="Mirror", default="auto", items=[
        ("auto", "Auto", "Mirror left/right joints when the target is symmetric"),
        ("on", "On", "Always mirror"), ("off", "Off", "Never mirror")])
    weights: EnumProperty(name="Weights", default="auto", items=[
        ("auto", "Auto", "Robust for a target in several pieces (props, clothing, covers), interpolated for one"),
        ("interp", "Interpolated", "Source weights at each vertex's corresponding source point"),
        ("robust", "Robust", "Keep close, well-matched weights and inpaint the rest (props, clothing)")])
    max_influences: EnumProperty(name="Max influences", default="source", items=[
        ("source", "As the source", "As many bones per vertex as the source uses, 4 when it uses at most 4"),
        ("4", "4", "At most 4 bones per vertex"), ("8", "8", "At most 8 bones per vertex")])
    blendshapes: BoolProperty(name="Blend shapes", default=True,
                              description="Carry the source's shape keys onto the rigged copy (the target's own "
                                          "are kept; a source key of the same name is not carried)")
    preview_path: StringProperty(name="Preview", subtype="FILE_PATH", default="",
                                 description="Also write the preview picture here (.png; empty: none)")
    qa_path: StringProperty(name="QA page", subtype="FILE_PATH", default="",
                            description="Also write the QA page here (.html, opens offline; empty: none)")


def _settings(context):
    return context.scene.asetransfer


def _report_failure(op, error) -> set:
    """The command line's one-line message in Blender's status bar; CANCELLED (nothing was built)."""
    from asetransfer.errors import InputError

    if isinstance(error, InputError):
        op.report({"ERROR"}, f"asetransfer: error: {error}")
    else:
        message = " ".join(str(error).split())
        op.report({"ERROR"}, f"asetransfer: internal error: {type(error).__name__}: {message}")
    return {"CANCELLED"}


class _Action:
    """An operator that runs one function of :mod:`.actions`: its lines in the status bar and
    the Info editor (``act`` returns ``(level, text)`` pairs, the summary last), or its
    failure as the command line's one-line message (nothing left built)."""

    def execute(self, context):
        from . import actions

        try:
            lines = self.act(context, actions)
        except Exception as e:  # noqa: BLE001  (every failure is reported; the actions clean up)
            return _report_failure(self, e)
        for level, message in lines:
            self.report({level}, message)
        return {"FINISHED"}


def _warned(lines: list, summary: str) -> list:
    """``lines`` then the summary, at WARNING level when any line is (the status bar shows the last)."""
    level = "WARNING" if any(lv == "WARNING" for lv, _ in lines) else "INFO"
    return lines + [(level, summary)]


class ASETRANSFER_OT_find_markers(_Action, bpy.types.Operator):
    """Find markers on both characters automatically (markers placed or moved by hand are kept and win)"""
    bl_idname = "asetransfer.find_markers"
    bl_label = "Find markers"
    bl_options = {"REGISTER", "UNDO"}

    def act(self, context, actions):
        from asetransfer.job import collected_warnings

        with collected_warnings() as warnings:
            origin = actions.find_markers(context, _settings(context))
        low = origin.low_confidence
        lines = [("WARNING", w) for w in warnings if not w.startswith("automatic markers with low confidence")]
        if low:
            lines.append(("WARNING", f"low confidence, check them (selected): {', '.join(low)}"))
        return _warned(lines, f"{len(origin.automatic)} automatic markers, {len(origin.hand)} kept")


class ASETRANSFER_OT_transfer(_Action, bpy.types.Operator):
    """Rig a copy of the target with the source's skeleton and weights, using the markers in the scene"""
    bl_idname = "asetransfer.transfer"
    bl_label = "Transfer rig"
    bl_options = {"REGISTER", "UNDO"}

    def act(self, context, actions):
        wm = context.window_manager
        wm.progress_begin(0, len(actions.STAGES))

        def progress(stage):
            if stage in actions.STAGES:
                wm.progress_update(actions.STAGES.index(stage))

        try:
            objects, result, findings = actions.transfer_rig(context, _settings(context), progress)
        finally:
            wm.progress_end()
        report, origin = result.report, result.report.marker_origin
        selected = f"; selected: {', '.join(findings.bones[:8])}" if findings.bones else ""
        return _warned(findings.lines, f"{objects[0].name}: {report.joints} bones, {report.target_vertices} "
                                       f"vertices, {len(origin.automatic)} automatic and {len(origin.hand)} hand "
                                       f"markers, {report.timings.total:.1f} s; quality "
                                       f"'{report.quality.verdict}'{selected}")


class ASETRANSFER_OT_add_marker(_Action, bpy.types.Operator):
    """Add a hand marker pair: at the selected vertex of each character (Edit mode), else at the 3D cursor
    on the nearer character, its partner guessed on the other (move it where it belongs)"""
    bl_idname = "asetransfer.add_marker"
    bl_label = "Add marker pair"
    bl_options = {"REGISTER", "UNDO"}
    name: StringProperty(name="Name", default="marker", description="The marker's name (made unique)")

    def act(self, context, actions):
        return [("INFO", f"marker {actions.add_marker(context, _settings(context), self.name)!r} added")]


class ASETRANSFER_OT_remove_markers(_Action, bpy.types.Operator):
    """Remove the marker pairs of the selected marker empties (either side)"""
    bl_idname = "asetransfer.remove_markers"
    bl_label = "Remove marker pair"
    bl_options = {"REGISTER", "UNDO"}

    def act(self, context, actions):
        return [("INFO", f"removed: {', '.join(actions.remove_markers(context))}")]


class ASETRANSFER_OT_save_markers(_Action, bpy.types.Operator, ExportHelper):
    """Save the scene's markers as a marker file (asetransfer transfer --markers)"""
    bl_idname = "asetransfer.save_markers"
    bl_label = "Save markers"
    filename_ext = ".json"
    filter_glob: StringProperty(default="*.json", options={"HIDDEN"})

    def act(self, context, actions):
        return [("INFO", f"{self.filepath}: {actions.save_markers(context, _settings(context), self.filepath)} "
                         "markers")]


class ASETRANSFER_OT_load_markers(_Action, bpy.types.Operator, ImportHelper):
    """Load a marker file as marker empties on both characters"""
    bl_idname = "asetransfer.load_markers"
    bl_label = "Load markers"
    bl_options = {"REGISTER", "UNDO"}
    filename_ext = ".json"
    filter_glob: StringProperty(default="*.json", options={"HIDDEN"})

    def act(self, context, actions):
        return [("INFO", f"{actions.load_markers(context, _settings(context), self.filepath)} markers loaded")]


class ASETRANSFER_PT_panel(bpy.types.Panel):
    bl_label = "asetransfer"
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "asetransfer"

    def draw(self, context):
        s, layout = _settings(context), self.layout
        layout.prop(s, "source")
        layout.prop(s, "target")
        layout.prop(s, "target_children")
        layout.prop(s, "apply_modifiers")
        col = layout.column(heading="Markers")
        col.operator(ASETRANSFER_OT_find_markers.bl_idname, icon="EMPTY_DATA")
        row = col.row(align=True)
        row.operator(ASETRANSFER_OT_add_marker.bl_idname, text="Add pair", icon="ADD")
        row.operator(ASETRANSFER_OT_remove_markers.bl_idname, text="Remove pair", icon="REMOVE")
        row = col.row(align=True)
        row.operator(ASETRANSFER_OT_load_markers.bl_idname, icon="IMPORT")
        row.operator(ASETRANSFER_OT_save_markers.bl_idname, icon="EXPORT")
        box = layout.box()
        for name in ("joints", "mirror", "weights", "max_influences", "blendshapes"):
            box.prop(s, name)
        box = layout.box()
        box.prop(s, "preview_path")
        box.prop(s, "qa_path")
        layout.operator(ASETRANSFER_OT_transfer.bl_idname, icon="ARMATURE_DATA")


CLASSES = (AsetransferSettings, ASETRANSFER_OT_find_markers, ASETRANSFER_OT_transfer, ASETRANSFER_OT_add_marker,
           ASETRANSFER_OT_remove_markers, ASETRANSFER_OT_save_markers, ASETRANSFER_OT_load_markers,
           ASETRANSFER_PT_panel)


def register():
    for cls in CLASSES:
        bpy.utils.register_class(cls)
    bpy.types.Scene.asetransfer = PointerProperty(type=AsetransferSettings)


def unregister():
    del bpy.types.Scene.asetransfer
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)
