"""The "looprig" tab of the 3D Viewport sidebar (and a copy of the bake summary in the
Graph Editor's sidebar)."""

from __future__ import annotations

import functools

import bpy

from . import retime
from .armature import bone_joint_name
from .bake import time_label
from .frame_status import LIMIT_LABELS
from .motor_feedback import KIND_LABELS, LEGEND_ICONS, PRIORITY
from .operators_robot import draw_rows
from .properties import SOLVER_SETTINGS
from .scene_data import robot_name
from .status_display import status_item

ICONS = {"ERROR": "ERROR", "WARNING": "QUESTION", "INFO": "INFO"}


class LOOPRIG_UL_problems(bpy.types.UIList):
    def draw_item(self, context, layout, data, item, icon, active_data, active_propname, index=0):
        row = layout.row(align=True)
        row.label(text=item.message, icon=ICONS.get(item.severity, "DOT"))
        if item.object_name:
            label = item.object_name + (f":{item.bone_name}" if item.bone_name else "")
            op = row.operator("looprig.select_object", text=label, icon="RESTRICT_SELECT_OFF", emboss=False)
            op.object_name, op.bone_name = item.object_name, item.bone_name


class LOOPRIG_UL_targets(bpy.types.UIList):
    def draw_item(self, context, layout, data, item, icon, active_data, active_propname, index=0):
        row = layout.row(align=True)
        row.prop(item, "enabled", text="")
        target = item.target.name if item.target else "(no target)"
        if item.bone:
            target += f":{item.bone}"
        row.label(text=f"{item.frame or '(no frame)'}  ←  {target}", icon="CON_TRACKTO")


class _RobotItems:
    """Lists of bake results show the lines of the scene's robot only."""

    def filter_items(self, context, data, propname):
        robot = context.scene.looprig.robot
        name = robot.name if robot is not None else None
        items = getattr(data, propname)
        return [self.bitflag_filter_item if item.robot == name else 0 for item in items], []


class LOOPRIG_UL_actuators(_RobotItems, bpy.types.UIList):
    def draw_item(self, context, layout, data, item, icon, active_data, active_propname, index=0):
        row = layout.row(align=True)
        bad = item.violation_count > 0
        row.alert = bad
        limit = f"{item.velocity_limit:.3g}" if item.velocity_limit > 0 else "none"
        row.label(
            text=f"{item.name}: peak {item.peak_velocity:.3g} / {limit} {item.unit}/s",
            icon="ERROR" if bad else "CHECKMARK",
        )
        if bad:
            when = time_label(item.first_violation_frame, item.first_violation_time)
            row.label(text=f"{item.violation_count}× from {when}")
        if item.motor_object:
            op = row.operator("looprig.select_object", text="", icon="RESTRICT_SELECT_OFF", emboss=False)
            op.object_name = item.motor_object


class LOOPRIG_UL_violations(_RobotItems, bpy.types.UIList):
    def draw_item(self, context, layout, data, item, icon, active_data, active_propname, index=0):
        row = layout.row(align=True)
        row.label(
            text=f"{item.name}: {KIND_LABELS.get(item.quantity, item.quantity)} {item.peak:.3g} "
            f"beyond {item.limit:.3g} {item.unit}",
            icon=LEGEND_ICONS.get(item.quantity, "ERROR"),
        )
        op = row.operator("looprig.jump_to_frame", text=time_label(item.frame, item.time), icon="TIME")
        op.frame = item.frame


class LOOPRIG_UL_stretches(bpy.types.UIList):
    def draw_item(self, context, layout, data, item, icon, active_data, active_propname, index=0):
        row = layout.row(align=True)
        row.label(text=f"{item.status}: {item.name}", icon=STATUS_ICONS.get(item.status, "ERROR"))
        op = row.operator("looprig.jump_to_frame", text=time_label(item.frame, item.time), icon="TIME")
        op.frame = item.frame


#: Legend icon per frame status (the colours of the timeline band: orange, magenta).
STATUS_ICONS = {"limited": "COLORSET_02_VEC", "unreachable": "COLORSET_06_VEC"}


class SidebarPanel:
    """Where a looprig panel stands: the looprig tab of the 3D Viewport's sidebar."""

    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "looprig"


def draws_scene_settings(draw):
    """Decorate a panel's ``draw(self, context, layout, settings)`` into Blender's
    ``draw(self, context)``: ``layout`` is the panel's, ``settings`` the scene's looprig
    settings (``scene.looprig``)."""

    @functools.wraps(draw)
    def panel_draw(self, context):
        draw(self, context, self.layout, context.scene.looprig)

    return panel_draw


class ActiveObjectPanel(SidebarPanel):
    """A sub-panel of Robot on the active object's looprig settings, shown while the class's
    ``shows(context, ob)`` accepts the active object ``ob``."""

    bl_parent_id = "LOOPRIG_PT_robot"

    @classmethod
    def poll(cls, context):
        ob = context.active_object
        return ob is not None and cls.shows(context, ob)


class LOOPRIG_PT_robot(SidebarPanel, bpy.types.Panel):
    bl_label = "Robot"

    @draws_scene_settings
    def draw(self, context, layout, settings):
        row = layout.row(align=True)
        row.prop(settings, "robot")
        row.operator("looprig.add_demo", text="", icon="ADD")
        row = layout.row(align=True)
        row.operator("looprig.check_robot", icon="CHECKMARK")
        row.operator("looprig.pick_motors", text="Motors", icon="DRIVER")
        row.operator("looprig.import_robot", text="Import", icon="IMPORT")
        row.operator("looprig.export_robot", text="Export", icon="EXPORT")
        if settings.check_done:
            box = layout.box()
            if settings.check_ok:
                box.label(
                    text=f"{settings.check_dof} DOF · {settings.check_actuators} actuators · "
                    f"{settings.check_loops} loops · {settings.check_redundant} redundant",
                    icon="CHECKMARK",
                )
            else:
                box.alert = True
                box.label(text="The robot has problems: click one to select its object", icon="ERROR")
            if len(settings.problems):
                layout.template_list(
                    "LOOPRIG_UL_problems", "", settings, "problems", settings, "active_problem", rows=3
                )


class LOOPRIG_PT_joint(ActiveObjectPanel, bpy.types.Panel):
    bl_label = "Joint"

    @classmethod
    def shows(cls, context, ob):
        return ob.rigid_body_constraint is not None or (ob.type == "ARMATURE" and context.active_pose_bone)

    def draw(self, context):
        layout = self.layout
        ob = context.active_object
        if ob.rigid_body_constraint is not None:
            c = ob.rigid_body_constraint
            owner = ob
            layout.label(text=f"{ob.name}: {c.type.title()} constraint", icon="CONSTRAINT")
            row = layout.row(align=True)
            row.prop(c, "object1", text="")
            row.prop(c, "object2", text="")
        else:
            owner = context.active_pose_bone
            layout.label(text=f"bone {owner.name}", icon="BONE_DATA")
            bs = owner.looprig_body
            row = layout.row(align=True)
            row.prop(bs, "grounded")
            row.prop(bs, "mass_source", text="")
            if bs.mass_source == "CUSTOM":
                layout.prop(bs, "mass")
        joint = robot_name(ob)[0] if owner is ob else bone_joint_name(ob, owner.name)
        draw_joint_settings(layout, owner.looprig_joint, joint)


def draw_joint_settings(layout, js, joint: str):
    """The actuator settings of the joint named ``joint`` (its motor name defaults to it)."""
    layout.prop(js, "actuated")
    if not js.actuated:
        return
    col = layout.column()
    col.prop(js, "actuator_name", placeholder=joint)
    col.prop(js, "motion")
    col.prop(js, "use_range")
    if js.use_range:
        row = col.row(align=True)
        if js.motion == "angle":
            row.prop(js, "lower_angle")
            row.prop(js, "upper_angle")
        else:
            row.prop(js, "lower_length")
            row.prop(js, "upper_length")
    unit = "rad" if js.motion == "angle" else "m"
    col.prop(js, "velocity_limit", text=f"Velocity Limit ({unit}/s)")
    col.prop(js, "acceleration_limit", text=f"Acceleration Limit ({unit}/s²)")
    col.prop(js, "hardware_id")
    row = col.row(align=True)
    row.prop(js, "zero_offset_ticks")
    row.prop(js, "direction", text="")
    if js.motion == "displacement":
        col.prop(js, "metres_per_revolution")
    col.prop(js, "motor_object")


class LOOPRIG_PT_body(ActiveObjectPanel, bpy.types.Panel):
    bl_label = "Body"

    @classmethod
    def shows(cls, context, ob):
        return ob.type == "MESH" and ob.rigid_body_constraint is None

    def draw(self, context):
        layout = self.layout
        ob = context.active_object
        bs = ob.looprig_body
        layout.label(text=ob.name, icon="MESH_DATA")
        layout.prop(bs, "ignore")
        if bs.ignore:
            return
        layout.prop(bs, "grounded")
        layout.prop(bs, "mass_source")
        if bs.mass_source == "CUSTOM":
            layout.prop(bs, "mass")
        elif bs.mass_source == "DENSITY" or ob.rigid_body is None:
            layout.prop(bs, "density")
        else:
            layout.prop(ob.rigid_body, "mass", text="Rigid Body Mass")


class LOOPRIG_PT_targets(SidebarPanel, bpy.types.Panel):
    bl_label = "Targets"

    @draws_scene_settings
    def draw(self, context, layout, settings):
        t = draw_rows(layout, settings, "targets", "active_target", "target", 3)
        if t is not None:
            col = layout.column()
            col.prop(t, "frame")
            col.prop(t, "target")
            if t.target is not None and t.target.type == "ARMATURE":
                col.prop(t, "bone")
            col.prop(t, "offset_location")
            col.prop(t, "offset_rotation")
            col.prop(t, "position_weight")
            col.prop(t, "orientation_weight")
        layout.prop(settings, "use_com")
        if settings.use_com:
            layout.prop(settings, "com_target")
            layout.prop(settings, "com_weight")


class LOOPRIG_PT_solve(SidebarPanel, bpy.types.Panel):
    bl_label = "Retarget"

    @draws_scene_settings
    def draw(self, context, layout, settings):
        col = layout.column()
        for setting in SOLVER_SETTINGS:
            col.prop(settings, setting.name)
            if setting.name == "timing":
                retime.draw_pins(col, context)
        col.prop(settings, "use_scene_range")
        if not settings.use_scene_range:
            row = col.row(align=True)
            row.prop(settings, "frame_start")
            row.prop(settings, "frame_end")
        col.prop(settings, "rate")
        col.prop(settings, "bake_after_retarget")
        row = layout.row(align=True)
        row.scale_y = 1.4
        row.operator("looprig.retarget", icon="PLAY")
        row.operator("looprig.clear", text="", icon="X")
        layout.operator("looprig.retarget_strips", icon="NLA")
        if settings.status:
            box = layout.box()
            box.alert = settings.status.startswith("retarget failed")
            for line in settings.status.split("; "):
                box.label(text=line)
        draw_frame_status(layout, settings)


def samples_word(item) -> str:
    """The word for a retarget's samples: frames when it solved one per scene frame."""
    return "frames" if abs(item.sample_frames - 1.0) < 1e-9 else "samples"


def draw_frame_status(layout, settings):
    """The per-frame status of the scene's robot's last retarget: how many frames are exact,
    limited and unreachable, the worst miss, the motor limits that bind, and the stretches
    (click one to go to its first frame)."""
    if settings.robot is None:
        return
    item = status_item(settings, settings.robot.name)
    if item is None:
        return
    box = layout.box()
    row = box.row(align=True)
    row.label(text=f"Frame status ({item.samples} {samples_word(item)})", icon="TIME")
    row.prop(settings, "show_status", text="", icon="HIDE_OFF" if settings.show_status else "HIDE_ON")
    row = box.row(align=True)
    row.label(text=f"exact {item.exact}", icon="CHECKMARK")
    row.label(text=f"limited {item.limited}", icon=STATUS_ICONS["limited"])
    row.label(text=f"unreachable {item.unreachable}", icon=STATUS_ICONS["unreachable"])
    if item.limited or item.unreachable:
        when = time_label(item.worst_frame, item.worst_time)
        box.label(text=f"worst miss {item.worst_miss * 1000:.3g} mm at {when}")
    for binding in item.limits:
        box.label(
            text=f"{binding.name}: {LIMIT_LABELS.get(binding.limit, binding.limit)} limit binds on "
            f"{binding.samples} {samples_word(item)}",
            icon="LOCKED",
        )
    if len(item.stretches):
        box.template_list("LOOPRIG_UL_stretches", "", item, "stretches", item, "active_stretch", rows=2)


def draw_bake_summary(layout, settings):
    robot = settings.robot.name if settings.robot is not None else None
    if not any(a.robot == robot for a in settings.actuators):
        return
    layout.template_list(
        "LOOPRIG_UL_actuators", "", settings, "actuators", settings, "active_actuator", rows=3
    )
    bad = [v for v in settings.violations if v.robot == robot]
    if not bad:
        return
    layout.label(text=f"{len(bad)} limit violation(s), by motor (click to go to the frame):", icon="ERROR")
    layout.template_list(
        "LOOPRIG_UL_violations", "", settings, "violations", settings, "active_violation", rows=3
    )
    row = layout.row(align=True)
    row.label(text="Motor tint:")
    for kind in PRIORITY:
        row.label(text=KIND_LABELS[kind], icon=LEGEND_ICONS[kind])


class LOOPRIG_PT_bake(SidebarPanel, bpy.types.Panel):
    bl_label = "Bake & Export"

    @draws_scene_settings
    def draw(self, context, layout, settings):
        row = layout.row(align=True)
        row.operator("looprig.bake", icon="GRAPH")
        row.operator("looprig.clear_bake", text="", icon="X")
        layout.prop(settings, "root")
        row = layout.row(align=True)
        row.prop(settings, "tint_motors")
        row.prop(settings, "show_overlays")
        draw_bake_summary(layout, settings)
        layout.operator("looprig.export_curves", icon="EXPORT")


class LOOPRIG_PT_graph_summary(bpy.types.Panel):
    bl_space_type = "GRAPH_EDITOR"
    bl_region_type = "UI"
    bl_category = "looprig"
    bl_label = "Frame Status & Limits"

    def draw(self, context):
        settings = context.scene.looprig
        self.layout.prop(settings, "show_overlays")
        draw_frame_status(self.layout, settings)
        draw_bake_summary(self.layout, settings)
        robot = settings.robot.name if settings.robot is not None else None
        if not any(a.robot == robot for a in settings.actuators):
            self.layout.label(text="Nothing baked yet: Bake in the 3D Viewport's looprig tab")


classes = (
    LOOPRIG_UL_problems,
    LOOPRIG_UL_targets,
    LOOPRIG_UL_actuators,
    LOOPRIG_UL_violations,
    LOOPRIG_UL_stretches,
    LOOPRIG_PT_robot,
    LOOPRIG_PT_joint,
    LOOPRIG_PT_body,
    LOOPRIG_PT_targets,
    LOOPRIG_PT_solve,
    LOOPRIG_PT_bake,
    LOOPRIG_PT_graph_summary,
)


register, unregister = bpy.utils.register_classes_factory(classes)
