"""asetransfer for Blender: carry a rig (skeleton, orientations, skin weights) onto a new body.

The 3D view's sidebar (N) gets an "asetransfer" tab: pick the source armature and the
target mesh, **Find markers** (empties the TD can move), **Transfer rig** (a new
armature with the source's bone names and the target copied and bound to it), and
**Save / Load markers** (the command line's marker files).  ``docs/blender.md``.
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
    max_influences: EnumProperty(name="Max influences", default="8", items=[
        ("4", "4", "At most 4 bones per vertex"), ("8", "8", "At most 8 bones per vertex")])


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
    """An operator that runs one function of :mod:`.actions`: its success line in the status
    bar, or its failure as the command line's one-line message (nothing left built)."""

    def execute(self, context):
        from . import actions

        try:
            level, message = self.act(context, actions)
        except Exception as e:  # noqa: BLE001  (every failure is reported; the actions clean up)
            return _report_failure(self, e)
        self.report({level}, message)
        return {"FINISHED"}


class ASETRANSFER_OT_find_markers(_Action, bpy.types.Operator):
    """Find markers on both characters automatically (markers already in the scene are kept and win)"""
    bl_idname = "asetransfer.find_markers"
    bl_label = "Find markers"
    bl_options = {"REGISTER", "UNDO"}

    def act(self, context, actions):
        origin = actions.find_markers(context, _settings(context))
        low = origin.low_confidence
        return ("WARNING" if low else "INFO",
                f"{len(origin.automatic)} automatic markers, {len(origin.hand)} kept"
                + (f"; low confidence (check them): {', '.join(low)}" if low else ""))


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
            objects, report = actions.transfer_rig(context, _settings(context), progress)
        finally:
            wm.progress_end()
        return "INFO", (f"{objects[0].name}: {report.joints} bones, {report.target_vertices} vertices, "
                        f"{report.timings.total:.1f} s")


class ASETRANSFER_OT_save_markers(_Action, bpy.types.Operator, ExportHelper):
    """Save the scene's markers as a marker file (asetransfer transfer --markers)"""
    bl_idname = "asetransfer.save_markers"
    bl_label = "Save markers"
    filename_ext = ".json"
    filter_glob: StringProperty(default="*.json", options={"HIDDEN"})

    def act(self, context, actions):
        return "INFO", f"{self.filepath}: {actions.save_markers(context, self.filepath)} markers"


class ASETRANSFER_OT_load_markers(_Action, bpy.types.Operator, ImportHelper):
    """Load a marker file as marker empties on both characters"""
    bl_idname = "asetransfer.load_markers"
    bl_label = "Load markers"
    bl_options = {"REGISTER", "UNDO"}
    filename_ext = ".json"
    filter_glob: StringProperty(default="*.json", options={"HIDDEN"})

    def act(self, context, actions):
        return "INFO", f"{actions.load_markers(context, _settings(context), self.filepath)} markers loaded"


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
        row.operator(ASETRANSFER_OT_load_markers.bl_idname, icon="IMPORT")
        row.operator(ASETRANSFER_OT_save_markers.bl_idname, icon="EXPORT")
        box = layout.box()
        for name in ("joints", "mirror", "weights", "max_influences"):
            box.prop(s, name)
        layout.operator(ASETRANSFER_OT_transfer.bl_idname, icon="ARMATURE_DATA")


CLASSES = (AsetransferSettings, ASETRANSFER_OT_find_markers, ASETRANSFER_OT_transfer, ASETRANSFER_OT_save_markers,
           ASETRANSFER_OT_load_markers, ASETRANSFER_PT_panel)


def register():
    for cls in CLASSES:
        bpy.utils.register_class(cls)
    bpy.types.Scene.asetransfer = PointerProperty(type=AsetransferSettings)


def unregister():
    del bpy.types.Scene.asetransfer
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)
