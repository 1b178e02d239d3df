"""Armature rigs: bones as bodies, locks as joint kinds, IK constraints as loop closures."""

import bpy
import numpy as np
import pytest
from helpers import fails, fourbar_rig, robot_collection

from blender_addon import animation, demo_scene
from blender_addon.scene_graph import read_model


@pytest.fixture
def rig_scene():
    scene = bpy.context.scene
    scene.render.fps = 24
    collection = robot_collection("rig_robot")
    rig = fourbar_rig(collection)
    target = demo_scene.animate_target(bpy.context)
    settings = scene.looprig
    item = settings.targets.add()
    item.frame, item.target = "coupler_point", target
    settings.state_weight = 1e-6
    settings.limit_mode = "report"  # the exact answer: the clip is over the crank's 4 rad/s
    return collection, rig


def test_bones_locks_and_ik_give_a_one_dof_fourbar(rig_scene):
    collection, _rig = rig_scene
    assert bpy.ops.looprig.check_robot() == {"FINISHED"}
    settings = bpy.context.scene.looprig
    assert (settings.check_dof, settings.check_loops, settings.check_actuators) == (1, 1, 1)
    m = read_model(bpy.context, collection).mechanism
    assert sorted(m.body_names) == ["rig", "rig:anchor", "rig:coupler", "rig:crank", "rig:rocker"]
    kinds = {j.name: j.kind.value for j in m.joints}
    assert kinds == {
        "rig:anchor.joint": "fixed",
        "rig:crank.joint": "revolute",
        "rig:coupler.joint": "revolute",
        "rig:rocker.joint": "revolute",
        "rig:rocker.ik": "spherical",
    }
    np.testing.assert_allclose(np.abs(m.joint("rig:crank.joint").axis), [0, 0, 1], atol=1e-6)
    np.testing.assert_allclose(m.joint("rig:rocker.ik").anchor, [0.3, 0, 0], atol=1e-6)
    assert m.joint("rig:crank.joint").actuator.velocity_limit == pytest.approx(4.0)
    assert m.frame("coupler_point").body == "rig:coupler"


def test_retargeted_rig_turns_the_crank_bone_by_the_closed_form_angle(rig_scene):
    _collection, rig = rig_scene
    assert bpy.ops.looprig.retarget() == {"FINISHED"}
    scene = bpy.context.scene
    assert rig.animation_data.action.name == "looprig rig_robot"
    for frame in (1, 10, 25, 40, 49):
        scene.frame_set(frame)
        pb = rig.pose.bones["crank"]
        tip = rig.matrix_world @ pb.tail
        angle, _ = demo_scene.crank_motion((frame - 1) / 24.0, 2.0)
        assert np.angle(np.exp(1j * (np.arctan2(tip.y, tip.x) - angle))) == pytest.approx(0.0, abs=1e-3)
        point = scene.objects["coupler_point"].matrix_world.translation
        np.testing.assert_allclose(point, scene.objects["hand"].matrix_world.translation, atol=2e-4)
    # the IK constraint is muted by looprig's action only
    bag = animation.channelbag(rig.animation_data.action, rig.animation_data.action_slot)
    assert bag.fcurves.find('pose.bones["rocker"].constraints["IK"].influence') is not None
    assert bpy.ops.looprig.clear() == {"FINISHED"}
    assert rig.pose.bones["rocker"].constraints["IK"].influence == 1.0
    assert rig.animation_data is None or rig.animation_data.action is None


def test_bake_on_a_rig(rig_scene):
    _collection, _rig = rig_scene
    assert bpy.ops.looprig.retarget() == {"FINISHED"}
    assert [m.frame for m in bpy.context.scene.timeline_markers] == [16]
    item = bpy.context.scene.looprig.actuators["rig:crank.joint"]
    assert item.peak_velocity == pytest.approx(np.pi**2 / 2.0, rel=0.01)


def test_limit_rotation_gives_the_actuator_range(rig_scene):
    collection, rig = rig_scene
    pb = rig.pose.bones["crank"]
    limit = pb.constraints.new("LIMIT_ROTATION")
    limit.use_limit_z, limit.min_z, limit.max_z = True, -1.0, 2.0
    m = read_model(bpy.context, collection).mechanism
    a = m.joint("rig:crank.joint").actuator
    assert (a.lower, a.upper) == (pytest.approx(-1.0), pytest.approx(2.0))
    limit.min_z = limit.max_z = 0.0  # min = max locks the axis: a fixed joint
    assert read_model(bpy.context, collection).mechanism is None  # a fixed joint cannot carry a motor


def test_unlocked_bone_is_reported_with_the_bone(rig_scene):
    _collection, rig = rig_scene
    crank = rig.pose.bones["crank"]  # a root bone, not connected: it may slide
    crank.lock_location = (True, False, True)
    crank.lock_rotation = (False, True, True)
    message = fails(bpy.ops.looprig.check_robot)
    assert "rig:crank: bone locks: bone with free axes (linear y, angular x)" in message
    problem = next(p for p in bpy.context.scene.looprig.problems if p.severity == "ERROR")
    assert (problem.object_name, problem.bone_name) == ("rig", "crank")
