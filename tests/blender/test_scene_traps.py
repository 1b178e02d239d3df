"""Scene traps: two robots in one scene, joint Empties that must follow, closures apart at rest,
Add Target from the selection, unique search lists."""

import warnings

import bpy
import numpy as np
import pytest
from helpers import fails, fourbar_rig, problems, robot_collection
from looprig.cad_import import save_mechanism
from looprig.core.library import build
from mathutils import Matrix

from blender_addon import animation, bake, demo_scene
from blender_addon.scene_graph import robot_frame_names


def _second_fourbar(context, name="fourbar2"):
    """A second demo four-bar (own collection) following the same hand; returns it."""
    collection = demo_scene.build_fourbar(context, name)
    settings = context.scene.looprig
    settings.robot = collection
    settings.targets[0].frame = next(o.name for o in collection.objects if o.name.startswith("coupler_point"))
    return collection


def _bake_state(collection_name):
    """What a robot's bake consists of: its root's curves, markers, panel lines, tinted objects."""
    root = bake.baked_root(collection_name)
    assert root is not None, collection_name
    record = bake.bake_record(root)
    bag = animation.channelbag(root.animation_data.action, root.animation_data.action_slot)
    curves = sorted(fc.data_path for fc in bag.fcurves if fc.data_path.startswith('["'))
    scene = bpy.context.scene
    return {
        "root": root.name,
        "curves": curves,
        "markers": sorted(m.name for m in scene.timeline_markers if collection_name + ":" in m.name),
        "lines": sorted(a.name for a in scene.looprig.actuators if a.robot == collection_name),
        "violations": sorted(v.name for v in scene.looprig.violations if v.robot == collection_name),
        "tinted": {name: len(bpy.data.objects[name].animation_data.drivers) for name in record["tinted"]},
    }


def test_baking_and_clearing_a_second_robot_leaves_the_first_robots_bake(demo):
    context = bpy.context
    assert bpy.ops.looprig.retarget() == {"FINISHED"}
    first = _bake_state("fourbar")
    assert first["curves"] and first["markers"] and first["tinted"] == {"crank": 3}
    second = _second_fourbar(context)
    assert bpy.ops.looprig.retarget() == {"FINISHED"}
    assert _bake_state("fourbar") == first
    assert _bake_state(second.name)["root"] != first["root"]
    assert bpy.ops.looprig.clear_bake() == {"FINISHED"}  # the scene's robot: the second
    assert bake.baked_root(second.name) is None
    assert _bake_state("fourbar") == first
    assert bpy.ops.looprig.clear() == {"FINISHED"}
    assert _bake_state("fourbar") == first


def test_a_root_carrying_another_robots_bake_is_refused_before_anything_is_written(demo):
    context = bpy.context
    assert bpy.ops.looprig.retarget() == {"FINISHED"}
    first = _bake_state("fourbar")
    _second_fourbar(context)
    context.scene.looprig.root = demo.objects["ground"]
    message = fails(bpy.ops.looprig.retarget)
    assert "'ground' carries the bake of robot 'fourbar'" in message
    assert _bake_state("fourbar") == first


def test_a_joint_empty_without_parent_follows_its_body(demo):
    context = bpy.context
    joint = demo.objects["coupler_joint"]  # Object 1: the crank
    rest = np.array(joint.matrix_world)
    joint.parent = None
    joint.matrix_world = Matrix(rest.tolist())
    crank = demo.objects["crank"]
    crank_rest = np.array(crank.matrix_world)
    assert bpy.ops.looprig.retarget() == {"FINISHED"}
    for frame in (10, 25, 40):
        context.scene.frame_set(frame)
        expected = np.array(crank.matrix_world) @ np.linalg.solve(crank_rest, rest)
        np.testing.assert_allclose(np.array(joint.matrix_world), expected, atol=1e-5)
    # the Empty is where the crank and the coupler meet: the coupler carries it too
    coupler = demo.objects["coupler"]
    assert bpy.ops.looprig.clear() == {"FINISHED"}
    np.testing.assert_allclose(np.array(joint.matrix_world), rest, atol=1e-6)
    assert coupler.animation_data is None or coupler.animation_data.action is None


def test_an_imported_closure_moved_apart_at_rest_is_reported_with_the_gap_and_objects(tmp_path):
    path = tmp_path / "fourbar.looprig.json"
    save_mechanism(build("fourbar"), path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert bpy.ops.looprig.import_robot(filepath=str(path)) == {"FINISHED"}
    collection = bpy.context.scene.looprig.robot
    assert bpy.ops.looprig.check_robot() == {"FINISHED"}
    assert not [p for p in problems(bpy.context) if "does not meet" in p[2]]
    rocker = next(o for o in collection.objects if o.name.startswith("rocker") and o.type == "MESH")
    rocker.location.x += 0.005  # 5 mm off every joint it does not carry
    bpy.context.view_layer.update()
    assert bpy.ops.looprig.check_robot() == {"FINISHED"}
    gaps = [p for p in problems(bpy.context) if "does not meet at rest" in p[2]]
    assert gaps, problems(bpy.context)
    for severity, _object_name, message in gaps:
        assert severity == "WARNING"
        assert "5 mm apart" in message and repr(rocker.name) in message


def test_an_armature_ik_closure_apart_at_rest_is_reported_with_the_gap_and_bone(empty_scene):
    collection = robot_collection("rig_robot")
    rig = fourbar_rig(collection)
    anchor = rig.pose.bones["anchor"]
    anchor.location = (0.0, 0.0, 2.0)  # 2 m off, beyond the loop's reach
    bpy.context.view_layer.update()
    message = fails(bpy.ops.looprig.check_robot)
    assert "does not reach bone 'anchor'" in message and "gap" in message and "mm" in message
    found = [p for p in bpy.context.scene.looprig.problems if "does not reach" in p.message]
    assert [(p.object_name, p.bone_name) for p in found] == [("rig", "rocker")]


def test_add_target_fills_the_robot_frame_from_the_selection(demo):
    context = bpy.context
    hand, coupler = context.scene.objects["hand"], demo.objects["coupler_point"]
    for ob in context.selected_objects:
        ob.select_set(False)
    coupler.select_set(True)
    hand.select_set(True)
    context.view_layer.objects.active = hand
    assert bpy.ops.looprig.target_add() == {"FINISHED"}
    item = context.scene.looprig.targets[-1]
    assert (item.frame, item.target) == ("coupler_point", hand)


def test_add_target_takes_the_active_bone_of_the_robots_armature(empty_scene):
    context = bpy.context
    collection = robot_collection("rig_robot")
    rig = fourbar_rig(collection)
    rig.data.bones.active = rig.data.bones["coupler"]
    context.view_layer.objects.active = rig
    assert bpy.ops.looprig.target_add() == {"FINISHED"}
    assert context.scene.looprig.targets[-1].frame == "rig:coupler"


def test_robot_frame_search_lists_each_name_once(tmp_path):
    """An imported file's frames may carry their body's name (MJCF bodies are frames too)."""
    path = tmp_path / "arm.xml"
    path.write_text(
        '<mujoco><worldbody><body name="base"><geom type="box" size=".1 .1 .1"/>'
        '<body name="link" pos="0 0 .2"><joint name="hinge" type="hinge" axis="0 0 1"/>'
        '<geom type="box" size=".05 .05 .1"/><site name="tip" pos="0 0 .1"/></body></body>'
        "</worldbody></mujoco>"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert bpy.ops.looprig.import_robot(filepath=str(path)) == {"FINISHED"}
    names = robot_frame_names(bpy.context.scene.looprig.robot)
    assert len(names) == len(set(names))
    assert {"base", "link", "tip"} <= set(names)


@pytest.mark.parametrize("start", [1, 11])
def test_violation_times_are_frames_and_seconds_from_the_first_baked_frame(demo, start):
    scene = bpy.context.scene
    if start != 1:  # shift the hand's keys and the range: the same motion, later
        for fc in animation.channelbag(
            scene.objects["hand"].animation_data.action, scene.objects["hand"].animation_data.action_slot
        ).fcurves:
            for key in fc.keyframe_points:
                key.co.x += start - 1
                key.handle_left.x += start - 1
                key.handle_right.x += start - 1
        scene.frame_start, scene.frame_end = start, scene.frame_end + start - 1
    assert bpy.ops.looprig.retarget() == {"FINISHED"}
    (v,) = scene.looprig.violations
    assert (v.frame, v.time) == (pytest.approx(start + 15), pytest.approx(15 / 24))
    assert [m.name for m in scene.timeline_markers] == ["looprig fourbar: crank_joint velocity 0.62 s"]
    assert bake.time_label(v.frame, v.time) == f"frame {start + 15} (0.62 s)"
