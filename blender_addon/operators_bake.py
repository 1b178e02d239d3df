"""Bake and export workflow: actuator curves from the robot's motion; hardware files."""

from __future__ import annotations

import math

import bpy
from bpy.props import BoolProperty, EnumProperty, FloatProperty
from bpy_extras.io_utils import ExportHelper
from looprig.core.curves.violations import LimitViolationError
from looprig.core.errors import LooprigError
from looprig.core.export import (
    CHeaderSettings,
    write_c_header,
    write_csv,
    write_dynamixel_csv,
    write_dynamixel_json,
    write_json,
)

from . import bake, motion, sound
from .operators_retarget import frame_range
from .operators_robot import (
    RobotCollectionOperator,
    RobotError,
    checked_model,
    file_filter,
    reports_errors,
    robot_collection,
)
from .sampling import make_clip


class LOOPRIG_OT_bake(bpy.types.Operator):
    """Bake one curve per actuator (and its velocity) from the robot's motion, checked against limits"""

    bl_idname = "looprig.bake"
    bl_label = "Bake Actuator Curves"
    bl_options = {"REGISTER", "UNDO"}

    @reports_errors(RobotError, LooprigError, ValueError)
    def execute(self, context):
        scene = context.scene
        collection = robot_collection(context)
        model = checked_model(context)
        if not model.mechanism.actuated_joints:
            raise RobotError("no actuated joint: tick 'Actuated' on the constraints that carry motors")
        start, end = frame_range(scene)
        clip = make_clip(scene, start, end, scene.looprig.rate or None)
        states = motion.sample_states(context, model, clip)
        result = bake.compute_bake(model, states, clip.frames, clip.rate, clip.fps)
        bake.write_bake(context, collection, model, result, tint=scene.looprig.tint_motors)
        count = len(result.violations)
        scene.looprig.status = (
            f"baked {result.curves.n_actuators} actuator(s) over {result.curves.n_frames} samples: "
            f"{count} limit violation(s)"
        )
        self.report({"WARNING" if count else "INFO"}, scene.looprig.status)
        return {"FINISHED"}


class LOOPRIG_OT_clear_bake(RobotCollectionOperator, bpy.types.Operator):
    """Remove the baked actuator curves, violation markers and motor tint"""

    bl_idname = "looprig.clear_bake"
    bl_label = "Clear Bake"

    def run(self, context, collection):
        bake.clear_bake(context, collection)


FORMATS = [
    ("JSON", "looprig JSON (SI)", "Curves in rad or m with limits and violations", ".json"),
    ("CSV", "looprig CSV (SI)", "Curves in rad or m, one column per actuator", ".csv"),
    ("DXL_JSON", "Dynamixel ticks JSON", "Goal Position ticks for Dynamixel X servos", ".json"),
    ("DXL_CSV", "Dynamixel ticks CSV", "Goal Position ticks for Dynamixel X servos", ".csv"),
    ("C_HEADER", "C header", "Fixed-rate arrays of ticks for microcontroller playback", ".h"),
]
_SUFFIX = {f[0]: f[3] for f in FORMATS}


def export_curves(
    curves, path: str, fmt: str, dynamixel, allow_violations: bool, source: str = "", audio=None
):
    """Write baked curves in one of ``FORMATS``; refuses on limit violations unless allowed.
    ``audio``: the scene's sound (:func:`.sound.scene_sound`), recorded by the JSON format."""
    if fmt == "JSON":
        return write_json(curves, path, allow_violations=allow_violations, audio=audio)
    if fmt == "CSV":
        return write_csv(curves, path, allow_violations=allow_violations)
    if fmt == "DXL_JSON":
        return write_dynamixel_json(curves, path, dynamixel, allow_violations=allow_violations)
    if fmt == "DXL_CSV":
        return write_dynamixel_csv(curves, path, dynamixel, allow_violations=allow_violations)
    settings = CHeaderSettings(kind="ticks", dynamixel=dynamixel, source=source)
    return write_c_header(curves, path, settings, allow_violations=allow_violations)


class LOOPRIG_OT_export_curves(bpy.types.Operator, ExportHelper):
    """Export the baked actuator curves for hardware; refuses when a limit is broken"""

    bl_idname = "looprig.export_curves"
    bl_label = "Export Actuator Curves"
    bl_options = {"REGISTER"}

    filename_ext = _SUFFIX["JSON"]
    filter_glob: file_filter(*_SUFFIX.values())
    format: EnumProperty(name="Format", items=[f[:3] for f in FORMATS], default="JSON")
    dynamixel_mode: EnumProperty(
        name="Servo Mode",
        items=[
            ("extended_position", "Extended Position", "Multi-turn (Operating Mode 4)"),
            ("position", "Position", "One turn, ticks 0..4095 (Operating Mode 3)"),
        ],
        default="extended_position",
    )
    allow_violations: BoolProperty(
        name="Write Despite Violations",
        description="Write even when a limit is broken; the violations are recorded in the file",
    )

    def check(self, context):
        suffix = _SUFFIX[self.format]
        if self.filename_ext != suffix:
            self.filename_ext = suffix
            self.filepath = bpy.path.ensure_ext(bpy.path.display_name_sans_ext(self.filepath), suffix)
            return True
        return super().check(context)

    def execute(self, context):
        try:
            model = checked_model(context)
            curves = bake.read_baked_curves(context, model)
            dynamixel = bake.dynamixel_settings(model, self.dynamixel_mode)
            record = bake.bake_record(bake.baked_root(model.record.name))
            violations = export_curves(
                curves,
                self.filepath,
                self.format,
                dynamixel,
                self.allow_violations,
                source=f"Blender scene {context.scene.name!r}, robot {model.mechanism.name!r}",
                audio=sound.scene_sound(context.scene, record["frame_start"], record["fps"]),
            )
        except LimitViolationError as error:
            count = len(error.violations)
            first = ""
            if error.violations:
                v = error.violations[0]
                record = bake.bake_record(bake.baked_root(model.record.name))
                first = (
                    f"{v.describe()} ({bake.time_label(bake.frame_at(record, v.start_time), v.start_time)})"
                )
            self.report(
                {"ERROR"},
                f"not written: the curves break {count} actuator limit(s), first {first}. Slow the "
                "animation down or raise the limits, or tick 'Write Despite Violations'",
            )
            return {"CANCELLED"}
        except (RobotError, LooprigError, ValueError, OSError) as error:
            self.report({"ERROR"}, str(error))
            return {"CANCELLED"}
        if violations:
            self.report(
                {"WARNING"}, f"wrote {self.filepath} WITH {len(violations)} limit violation(s) recorded"
            )
        else:
            self.report({"INFO"}, f"wrote {self.filepath}")
        return {"FINISHED"}


class LOOPRIG_OT_jump_to_frame(bpy.types.Operator):
    """Go to this frame (where the violation starts)"""

    bl_idname = "looprig.jump_to_frame"
    bl_label = "Jump to Frame"
    bl_options = {"REGISTER"}

    frame: FloatProperty(name="Frame")

    def execute(self, context):
        whole = math.floor(self.frame)
        context.scene.frame_set(int(whole), subframe=float(self.frame - whole))
        return {"FINISHED"}


classes = (LOOPRIG_OT_bake, LOOPRIG_OT_clear_bake, LOOPRIG_OT_export_curves, LOOPRIG_OT_jump_to_frame)


register, unregister = bpy.utils.register_classes_factory(classes)
