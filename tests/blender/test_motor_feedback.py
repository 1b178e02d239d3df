"""Feedback on the motor itself: bone motors tint their Motor Object, a colour per kind of limit,
in-front markers for motors inside other geometry, violations listed by motor with jump-to-frame."""

import bpy
import numpy as np
import pytest
from helpers import box, fourbar_rig, robot_collection

from blender_addon import bake, demo_scene, motor_feedback

CRANK_COLOUR = (0.9, 0.6, 0.2)


def _colour(ob, frame):
    bpy.context.scene.frame_set(frame)
    return np.array(ob.color[:3])


@pytest.mark.parametrize("motor_name, curve", [("", "rig:crank.joint"), ("crank_servo", "crank_servo")])
def test_a_bone_motor_tints_its_motor_object_not_the_armature(empty_scene, motor_name, curve):
    """The bone's motor is found by its curve's name: its Motor Name, else the bone joint's."""
    context = bpy.context
    context.scene.render.fps = 24
    collection = robot_collection("rig_robot")
    rig = fourbar_rig(collection)
    horn = box("horn", (0.0, 0.0, 0.05), size=(0.02, 0.02, 0.02))
    horn.looprig_body.ignore = True
    horn.color = (0.2, 0.8, 0.2, 1.0)
    rig.pose.bones["crank"].looprig_joint.motor_object = horn
    rig.pose.bones["crank"].looprig_joint.actuator_name = motor_name
    target = demo_scene.animate_target(context)
    item = context.scene.looprig.targets.add()
    item.frame, item.target = "coupler_point", target
    context.scene.looprig.state_weight = 1e-6
    context.scene.looprig.limit_mode = "report"  # the exact answer, over the crank's velocity limit
    assert bpy.ops.looprig.retarget() == {"FINISHED"}
    assert [a.name for a in context.scene.looprig.actuators] == [curve]
    assert context.scene.looprig.actuators[curve].motor_object == "horn"
    np.testing.assert_allclose(_colour(horn, 25), motor_feedback.TINTS["velocity"], atol=1e-3)
    np.testing.assert_allclose(_colour(horn, 5), (0.2, 0.8, 0.2), atol=1e-3)
    assert not any(fc.data_path == "color" for fc in rig.animation_data.drivers)


def test_range_and_velocity_violations_tint_in_their_own_colours(demo):
    """The crank turns by 2 pi: above an upper range of 1 rad from the frame where
    theta - theta0 = 1; velocity (over 4 rad/s on frames 16-34) wins where both are broken."""
    js = demo.objects["crank_joint"].looprig_joint
    js.use_range, js.lower_angle, js.upper_angle = True, -1.0, 1.0
    assert bpy.ops.looprig.retarget() == {"FINISHED"}
    crank = demo.objects["crank"]
    frames = np.arange(1, 50)
    angle, _ = demo_scene.crank_motion((frames - 1) / 24.0, 2.0)
    first_over_range = int(frames[np.argmax(angle - demo_scene.CRANK_START > 1.0)])
    assert 1 < first_over_range < 16
    np.testing.assert_allclose(_colour(crank, first_over_range - 1), CRANK_COLOUR, atol=1e-3)
    np.testing.assert_allclose(_colour(crank, first_over_range), motor_feedback.TINTS["position"], atol=1e-3)
    np.testing.assert_allclose(_colour(crank, 25), motor_feedback.TINTS["velocity"], atol=1e-3)
    np.testing.assert_allclose(_colour(crank, 45), motor_feedback.TINTS["position"], atol=1e-3)
    kinds = [(v.name, v.quantity) for v in bpy.context.scene.looprig.violations]
    assert kinds == [("crank_joint", "position"), ("crank_joint", "velocity")]


def test_acceleration_violations_tint_orange(demo):
    """Peak angular acceleration of the eased turn: pi^3 / T^2 = 7.75 rad/s^2 at both ends."""
    js = demo.objects["crank_joint"].looprig_joint
    js.velocity_limit, js.acceleration_limit = 0.0, 6.0
    assert bpy.ops.looprig.retarget() == {"FINISHED"}
    crank = demo.objects["crank"]
    np.testing.assert_allclose(_colour(crank, 3), motor_feedback.TINTS["acceleration"], atol=1e-3)
    np.testing.assert_allclose(_colour(crank, 25), CRANK_COLOUR, atol=1e-3)  # zero acceleration there
    assert {v.quantity for v in bpy.context.scene.looprig.violations} == {"acceleration"}


def test_violations_are_listed_by_motor_and_jump_to_their_frame(demo):
    assert bpy.ops.looprig.retarget() == {"FINISHED"}
    scene = bpy.context.scene
    (v,) = scene.looprig.violations
    assert (v.name, v.robot, v.quantity, v.frame, v.end_frame) == (
        "crank_joint",
        "fourbar",
        "velocity",
        16,
        34,
    )
    assert v.peak == pytest.approx(np.pi**2 / 2.0, rel=0.01) and v.limit == pytest.approx(4.0)
    scene.frame_set(1)
    assert bpy.ops.looprig.jump_to_frame(frame=v.frame) == {"FINISHED"}
    assert scene.frame_current == 16


def test_a_motor_inside_a_shell_gets_an_in_front_marker_that_is_tinted_and_cleared(demo):
    shell = box("shell", (-0.1, -0.1, -0.1), size=(0.6, 0.6, 0.3), collection=demo)
    shell.looprig_body.ignore = True  # a cover: not a body, but it hides the crank
    assert bpy.ops.looprig.retarget() == {"FINISHED"}
    marker = bpy.data.objects["looprig marker crank"]
    assert marker.parent == demo.objects["crank"] and marker.show_in_front and marker.hide_render
    assert marker.name not in demo.all_objects  # not part of the robot
    np.testing.assert_allclose(_colour(marker, 25), motor_feedback.TINTS["velocity"], atol=1e-3)
    assert bake.bake_record(demo.objects["ground"])["markers"] == ["looprig marker crank"]
    assert bpy.ops.looprig.clear_bake() == {"FINISHED"}
    assert "looprig marker crank" not in bpy.data.objects


def test_a_motor_in_the_open_gets_no_marker(demo):
    assert bpy.ops.looprig.retarget() == {"FINISHED"}
    assert not [o for o in bpy.data.objects if motor_feedback.MARKER_KEY in o.keys()]
