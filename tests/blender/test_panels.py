"""Panels draw without errors and name only properties and operators that exist.

Panels cannot be drawn without a window, so each panel's ``draw`` runs against a
recording layout that checks every ``prop`` (the property exists on its data)
and every ``operator`` (the operator is registered).
"""

import bpy
import pytest
from helpers import fourbar_rig, robot_collection

from blender_addon import panels

#: The keyword arguments Blender's ``UILayout.prop`` takes.
PROP_ARGUMENTS = {p.identifier for p in bpy.types.UILayout.bl_rna.functions["prop"].parameters}


class RecordingLayout:
    def __init__(self, log):
        self.log = log
        self.alert = self.active = self.enabled = False
        self.scale_y = 1.0

    def _child(self, *args, **kwargs):
        return RecordingLayout(self.log)

    row = column = box = split = _child

    def prop(self, data, name, **kwargs):
        assert data is not None, name
        assert name in data.bl_rna.properties, f"{data.bl_rna.identifier} has no property {name!r}"
        assert set(kwargs) <= PROP_ARGUMENTS, sorted(set(kwargs) - PROP_ARGUMENTS)
        self.log.append(("prop", name))
        for key in ("text", "placeholder"):
            if key in kwargs:
                self.log.append((key, name, kwargs[key]))

    def label(self, text="", icon="NONE", **kwargs):
        self.log.append(("label", text))

    def operator(self, idname, **kwargs):
        module, name = idname.split(".")
        assert hasattr(getattr(bpy.types, f"{module.upper()}_OT_{name}", None), "bl_idname"), idname
        self.log.append(("operator", idname))
        return type("OperatorProperties", (), {})()

    def template_list(self, list_type, list_id, data, prop, active_data, active_prop, **kwargs):
        assert hasattr(bpy.types, list_type), list_type
        assert prop in data.bl_rna.properties and active_prop in active_data.bl_rna.properties
        self.log.append(("list", prop))


def _draw(panel_class, context):
    log = []
    panel = type("PanelInstance", (), {"layout": RecordingLayout(log)})()
    panel_class.draw(panel, context)
    return log


def _all_panels():
    return [c for c in panels.classes if issubclass(c, bpy.types.Panel)]


@pytest.mark.parametrize("panel_class", _all_panels(), ids=lambda c: c.__name__)
def test_panels_draw_on_the_demo_after_a_bake(demo, panel_class):
    context = bpy.context
    assert bpy.ops.looprig.retarget() == {"FINISHED"}
    bpy.ops.looprig.check_robot()
    for active in ("crank_joint", "crank", "hand"):
        context.view_layer.objects.active = context.scene.objects[active]
        if panel_class.poll(context) if hasattr(panel_class, "poll") else True:
            _draw(panel_class, context)


def test_panels_draw_on_an_empty_scene():
    for panel_class in _all_panels():
        if not hasattr(panel_class, "poll") or panel_class.poll(bpy.context):
            _draw(panel_class, bpy.context)


def test_joint_panel_of_a_bone(empty_scene):
    rig = fourbar_rig(robot_collection())
    context = bpy.context
    context.view_layer.objects.active = rig
    bpy.ops.object.mode_set(mode="POSE")
    rig.data.bones.active = rig.data.bones["crank"]
    assert panels.LOOPRIG_PT_joint.poll(context)
    log = _draw(panels.LOOPRIG_PT_joint, context)
    assert ("prop", "velocity_limit") in log and ("prop", "grounded") in log
    assert ("placeholder", "actuator_name", "rig:crank.joint") in log  # empty: the joint's name
    bpy.ops.object.mode_set(mode="OBJECT")


def test_joint_panel_shows_the_motor_name_the_joints_when_empty(demo):
    context = bpy.context
    context.view_layer.objects.active = demo.objects["crank_joint"]
    log = _draw(panels.LOOPRIG_PT_joint, context)
    assert ("placeholder", "actuator_name", "crank_joint") in log


def test_problem_and_actuator_lists_draw_their_rows(demo):
    bpy.ops.looprig.retarget()
    bpy.ops.looprig.check_robot()
    context = bpy.context
    settings = context.scene.looprig
    for ui_list, items in (
        (panels.LOOPRIG_UL_problems, settings.problems),
        (panels.LOOPRIG_UL_targets, settings.targets),
        (panels.LOOPRIG_UL_actuators, settings.actuators),
        (panels.LOOPRIG_UL_violations, settings.violations),
    ):
        for item in items:
            log = []
            ui_list.draw_item(None, context, RecordingLayout(log), settings, item, 0, settings, "", 0)
            assert log


def test_bake_lists_show_the_lines_of_the_scenes_robot_only(demo):
    bpy.ops.looprig.retarget()
    settings = bpy.context.scene.looprig
    ui_list = type("UIList", (), {"bitflag_filter_item": 1 << 30})()
    flags, order = panels.LOOPRIG_UL_violations.filter_items(ui_list, bpy.context, settings, "violations")
    assert flags == [1 << 30] and order == []
    other = robot_collection("other")  # the scene's robot now: nothing of the four-bar's bake shows
    assert settings.robot == other
    flags, _ = panels.LOOPRIG_UL_actuators.filter_items(ui_list, bpy.context, settings, "actuators")
    assert flags == [0]


def test_pick_motors_dialog_lists_every_joint_that_can_carry_a_motor(demo):
    from blender_addon.operators_robot import LOOPRIG_OT_pick_motors

    log = []
    dialog = type("Dialog", (), {"layout": RecordingLayout(log)})()
    LOOPRIG_OT_pick_motors.draw(dialog, bpy.context)
    assert log.count(("prop", "actuated")) == 4  # the four hinges


def test_pick_motors_dialog_shows_a_motors_own_name(demo):
    from blender_addon.operators_robot import LOOPRIG_OT_pick_motors

    demo.objects["crank_joint"].looprig_joint.actuator_name = "crank_motor"
    log = []
    LOOPRIG_OT_pick_motors.draw(type("Dialog", (), {"layout": RecordingLayout(log)})(), bpy.context)
    texts = [entry[2] for entry in log if entry[:2] == ("text", "actuated")]
    assert "crank_joint (motor crank_motor)" in texts and "rocker_joint" in texts


def test_solver_settings_are_reflected_from_the_core_schema():
    """Every retarget setting but the rate is a scene property with the schema's default,
    range and help; the values the panel holds build a valid mapping (0 = unset for an
    optional setting)."""
    from looprig.core.retarget import RetargetMapping, TargetSpec
    from looprig.core.retarget.settings import RETARGET_SETTINGS

    from blender_addon.properties import SOLVER_SETTINGS, solver_settings

    settings = bpy.context.scene.looprig
    assert {s.name for s in SOLVER_SETTINGS} == {s.name for s in RETARGET_SETTINGS} - {"rate"}
    for setting in SOLVER_SETTINGS:
        rna = settings.bl_rna.properties[setting.name]
        assert setting.help in rna.description
        default = 0.0 if setting.default is None else setting.default
        if setting.kind is float:
            assert rna.default == pytest.approx(default)
            if setting.maximum is not None:
                assert rna.hard_max == pytest.approx(setting.maximum)
        else:
            assert rna.default == default
    values = solver_settings(settings)
    assert values["max_angular_velocity"] is None
    RetargetMapping((TargetSpec("a", "b"),), **values)
    settings.max_angular_velocity = 3.0
    assert solver_settings(settings)["max_angular_velocity"] == 3.0
