"""Motors keep the robot file's names through the scene: import, bake, motor feedback, exports,
a save and reload of the .blend, and the checks that keep the names unique.

The four-bar of ``tests/data/fourbar_connect.xml`` (MuJoCo's compiler reads it) names its
crank servo ``<position name="crank_motor" joint="crank_joint">``. Its site ``B`` is
followed by an Empty keyed along the path B takes under the crank swing
``theta(t) = 0.4 sin(pi t)`` [rad] (core's FK), so the baked ``crank_motor`` curve is
theta at every frame.
"""

import warnings

import bpy
import numpy as np
import pytest
from conftest import ROOT
from helpers import fails
from looprig.cad_import import load_mechanism
from looprig.core import FrameObjective, IKProblem, solve_fk
from looprig.core.export import read_json

from blender_addon import animation, bake, motor_feedback
from blender_addon.operators_robot import checked_model

MJCF = ROOT / "tests" / "data" / "fourbar_connect.xml"
FPS, FRAMES = 24, 25  # one second, frames 1..25


def crank_swing():
    """theta (F,) [rad] at frames 1..FRAMES and the world path (F, 3) [m] of site B under it."""
    mechanism = load_mechanism(MJCF)
    theta = 0.4 * np.sin(np.pi * np.arange(FRAMES) / FPS)
    state, states = mechanism.initial_state(), []
    for angle in theta:
        state = solve_fk(mechanism, [angle], initial_state=state).state
        states.append(state)
    points, _ = IKProblem(mechanism, [FrameObjective("B")]).frame_terms.poses(np.array(states))
    return theta, points[:, 0]


def import_and_follow_b():
    """The MJCF four-bar imported as the scene's robot, site B following a keyed Empty."""
    scene = bpy.context.scene
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the massless world body is reported
        assert bpy.ops.looprig.import_robot(filepath=str(MJCF)) == {"FINISHED"}
    scene.render.fps, scene.frame_start, scene.frame_end = FPS, 1, FRAMES
    theta, path = crank_swing()
    hand = bpy.data.objects.new("hand", None)
    scene.collection.objects.link(hand)
    for frame, point in enumerate(path, start=1):
        hand.location = point.tolist()
        hand.keyframe_insert("location", frame=frame)
    item = scene.looprig.targets.add()
    item.frame, item.target = "B", hand
    return scene.looprig.robot, theta


def baked(root, name):
    ad = root.animation_data
    fc = animation.channelbag(ad.action, ad.action_slot).fcurves.find(bake.value_path(name))
    assert fc is not None, name
    return animation.read_fcurve(fc)[1]


def test_the_files_motor_name_is_set_on_import_and_names_the_bake_and_the_motor(empty_scene, tmp_path):
    robot, theta = import_and_follow_b()
    joint = robot.objects["crank_joint"]
    assert joint.looprig_joint.actuator_name == "crank_motor"
    joint.looprig_joint.velocity_limit = 1.0  # the swing peaks at 0.4 pi = 1.26 rad/s
    bpy.context.scene.looprig.limit_mode = "report"  # the exact answer, over the limit
    assert bpy.ops.looprig.retarget() == {"FINISHED"}  # bakes after retargeting
    root = robot.objects["world"]  # the grounded body carries the bake
    assert bake.bake_record(root)["actuators"] == ["crank_motor"]
    assert "crank_motor" in root.keys() and "crank_joint" not in root.keys()
    # single-precision keys of body poses, read off again: about 1e-7 rad
    np.testing.assert_allclose(baked(root, "crank_motor"), theta, atol=1e-6)
    settings = bpy.context.scene.looprig
    assert [a.name for a in settings.actuators] == ["crank_motor"]
    assert settings.actuators["crank_motor"].motor_object == "crank"
    assert {v.name for v in settings.violations} == {"crank_motor"}
    assert any("crank_motor velocity" in m.name for m in bpy.context.scene.timeline_markers)
    bpy.context.scene.frame_set(2)  # |theta'| = 0.4 pi cos(pi t) > 1 rad/s for t < 0.2 s
    np.testing.assert_allclose(robot.objects["crank"].color[:3], motor_feedback.TINTS["velocity"], atol=1e-3)
    model = checked_model(bpy.context)
    crank = robot.objects["crank"]
    assert motor_feedback.motor_object(bpy.context, model, "crank_motor") == crank
    assert motor_feedback.motor_object(bpy.context, model, "crank_joint") == crank

    curves = tmp_path / "curves.json"
    assert bpy.ops.looprig.export_curves(filepath=str(curves), allow_violations=True) == {"FINISHED"}
    assert read_json(curves).names == ("crank_motor",)
    robot_file = tmp_path / "fourbar.looprig.json"
    assert bpy.ops.looprig.export_robot(filepath=str(robot_file)) == {"FINISHED"}
    again = load_mechanism(robot_file)
    assert again.actuator_names == ["crank_motor"]
    assert again.joint("crank_joint").actuator.name == "crank_motor"


def test_a_urdf_transmissions_actuator_names_the_motor(empty_scene):
    """``fourbar_closing.urdf``: a ``<transmission>`` whose ``<actuator name="crank_motor">``
    drives ``crank_joint``."""
    urdf = ROOT / "tests" / "data" / "fourbar_closing.urdf"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert bpy.ops.looprig.import_robot(filepath=str(urdf)) == {"FINISHED"}
    robot = bpy.context.scene.looprig.robot
    assert robot.objects["crank_joint"].looprig_joint.actuator_name == "crank_motor"
    assert checked_model(bpy.context).mechanism.actuator_names == ["crank_motor"]


def test_motors_are_picked_by_motor_or_joint_name(empty_scene):
    robot, _ = import_and_follow_b()
    crank = robot.objects["crank_joint"].looprig_joint
    assert bpy.ops.looprig.pick_motors(names="rocker_joint") == {"FINISHED"}
    assert not crank.actuated and crank.actuator_name == "crank_motor"  # the name stays
    assert bpy.ops.looprig.pick_motors(names="crank_motor") == {"FINISHED"}
    assert crank.actuated and not robot.objects["rocker_joint"].looprig_joint.actuated
    message = fails(bpy.ops.looprig.pick_motors, names="crank")
    expected = "they are: coupler_joint, crank_joint (motor crank_motor), rocker_joint"  # pin_B: a POINT
    assert f"no joint 'crank' can carry a motor; {expected}" in message


def test_the_motor_name_and_its_bake_survive_saving_and_reopening_the_blend(empty_scene, tmp_path):
    import_and_follow_b()
    assert bpy.ops.looprig.retarget() == {"FINISHED"}
    blend = tmp_path / "names.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.ops.wm.open_mainfile(filepath=str(blend))
    robot = bpy.context.scene.looprig.robot
    assert robot.objects["crank_joint"].looprig_joint.actuator_name == "crank_motor"
    assert bake.bake_record(robot.objects["world"])["actuators"] == ["crank_motor"]
    curves = tmp_path / "curves.json"
    assert bpy.ops.looprig.export_curves(filepath=str(curves)) == {"FINISHED"}
    read = read_json(curves)
    assert read.names == ("crank_motor",)
    np.testing.assert_allclose(read.values[:, 0], crank_swing()[0], atol=1e-6)


def test_renaming_the_motor_renames_its_curves_and_an_empty_name_is_the_joints(empty_scene):
    """Each name, quotes and backslashes too, keys the curves, and the tint drivers follow it
    (the crank breaks 1 rad/s at frame 2); an empty name is the joint's."""
    robot, theta = import_and_follow_b()
    assert bpy.ops.looprig.retarget() == {"FINISHED"}
    root = robot.objects["world"]
    js = robot.objects["crank_joint"].looprig_joint
    js.velocity_limit = 1.0
    for name, shown in (
        ("shoulder", "shoulder"),
        ('grip "left" \\ 2', 'grip "left" \\ 2'),
        ("", "crank_joint"),
    ):
        js.actuator_name = name
        message = fails(bpy.ops.looprig.export_curves, filepath="/nonexistent/curves.json")
        assert f"the robot's actuators ({shown}) differ from the baked ones" in message
        assert bpy.ops.looprig.bake() == {"FINISHED"}
        assert bake.bake_record(root)["actuators"] == [shown]
        motors = {k for k in root.keys() if not k.startswith("looprig")}
        assert motors == {
            f"{shown}{suffix}"
            for suffix in ("", " velocity", " over range", " over velocity", " over acceleration")
        }
        np.testing.assert_allclose(baked(root, shown), theta, atol=1e-6)
        bpy.context.scene.frame_set(2)
        np.testing.assert_allclose(
            robot.objects["crank"].color[:3], motor_feedback.TINTS["velocity"], atol=1e-3
        )


@pytest.mark.parametrize(
    "names, where, expected",
    [
        (
            {"rocker_joint": "crank_joint"},
            "rocker_joint",
            "joint 'rocker_joint': its actuator's name 'crank_joint' is the name of another joint",
        ),
        (
            {"crank_joint": "motor", "rocker_joint": "motor"},
            "crank_joint",
            "joints 'crank_joint' and 'rocker_joint' both carry an actuator named 'motor'",
        ),
    ],
)
def test_a_motor_name_taken_twice_is_one_line_naming_the_object(empty_scene, names, where, expected):
    """Core's rule (Mechanism): motor names are unique and none is another joint's name."""
    robot, _ = import_and_follow_b()
    for joint, name in names.items():
        js = robot.objects[joint].looprig_joint
        js.actuated, js.actuator_name = True, name
    message = fails(bpy.ops.looprig.check_robot)
    assert f"robot 'fourbar_mjcf': {where}: {expected}" in message
    assert "\n" not in message.strip() and "Traceback" not in message
    (problem,) = [p for p in bpy.context.scene.looprig.problems if p.severity == "ERROR"]
    assert problem.object_name == where
