"""Recorded motion back in Blender: a ``looprig play --record`` file as a second action with
error curves (recorded minus asked); the animator's keys and looprig's action untouched."""

import bpy
import numpy as np
from helpers import fails, snapshot
from looprig.core.curves.actuator_curves import ActuatorCurves
from looprig.core.export import write_csv

from blender_addon import animation, bake, recording
from blender_addon.operators_robot import checked_model


def _keys(ob):
    """{data_path: (frames, values)} of the F-curves of an object's assigned action slot."""
    ad = ob.animation_data
    bag = animation.channelbag(ad.action, ad.action_slot)
    return {fc.data_path: animation.read_fcurve(fc) for fc in bag.fcurves}


def _lagging_recording(asked: ActuatorCurves, path, names=None) -> np.ndarray:
    """A recording one sample behind the asked curves; returns its (F, A) values [rad].
    Recorded minus asked at frame f is asked[f-1] - asked[f] (0 at the first)."""
    values = np.vstack([asked.values[:1], asked.values[:-1]])
    curves = ActuatorCurves(asked.times, values, names or asked.names, asked.units, hardware_ids=(1,))
    write_csv(curves, path, allow_violations=True)
    return values


def test_a_recording_becomes_a_second_action_with_error_curves(demo, tmp_path):
    assert bpy.ops.looprig.retarget() == {"FINISHED"}  # bakes after retargeting
    context = bpy.context
    root, target = demo.objects["ground"], bpy.data.objects["hand"]
    asked_action, animator_action = root.animation_data.action, target.animation_data.action
    before = {ob.name: _keys(ob) for ob in (root, target)}
    asked = bake.read_baked_curves(context, checked_model(context))
    path = tmp_path / "played.csv"
    values = _lagging_recording(asked, path)

    assert bpy.ops.looprig.import_recording(filepath=str(path)) == {"FINISHED"}
    assert bpy.ops.looprig.import_recording(filepath=str(path)) == {"FINISHED"}  # replaces its own

    # the robot still plays looprig's action, the animator's target its keys, key for key
    assert root.animation_data.action == asked_action and target.animation_data.action == animator_action
    for ob in (root, target):
        after = _keys(ob)
        assert after.keys() == before[ob.name].keys()
        for path_, (frames, keys) in before[ob.name].items():
            np.testing.assert_array_equal(after[path_][0], frames)
            np.testing.assert_array_equal(after[path_][1], keys)
    carrier = bpy.data.objects[recording.carrier_name(demo.name)]
    assert carrier.users_collection == (context.scene.collection,)
    action = carrier.animation_data.action
    assert action.name == f"looprig recording {demo.name}: played.csv"
    assert action[recording.RECORDING_KEY] == demo.name
    assert [a.name for a in bpy.data.actions if a.name.startswith(action.name)] == [action.name]
    keys = _keys(carrier)
    frames, recorded = keys['["crank_joint recorded"]']
    np.testing.assert_array_equal(frames, np.arange(1, 50))  # the bake's frames
    np.testing.assert_allclose(recorded, values[:, 0], atol=1e-6)
    _, error = keys['["crank_joint error"]']
    expected = np.concatenate([[0.0], -np.diff(asked.values[:, 0])])
    np.testing.assert_allclose(error, expected, atol=1e-6)
    assert np.abs(expected).max() > 0.1  # the demo crank moves: the check can fail


def test_a_recording_of_another_robot_is_refused_and_changes_nothing(demo, tmp_path):
    assert bpy.ops.looprig.retarget() == {"FINISHED"}
    context = bpy.context
    asked = bake.read_baked_curves(context, checked_model(context))
    path = tmp_path / "other.csv"
    _lagging_recording(asked, path, names=("elbow",))
    before = snapshot(context)
    message = fails(bpy.ops.looprig.import_recording, filepath=str(path))
    assert "elbow" in message and "crank_joint" in message and "other.csv" in message
    assert snapshot(context) == before


def test_nothing_baked_is_a_one_line_error(demo, tmp_path):
    path = tmp_path / "played.csv"
    curves = ActuatorCurves(np.arange(3) / 24, np.zeros((3, 1)), ("crank_joint",))
    write_csv(curves, path)
    assert "nothing baked" in fails(bpy.ops.looprig.import_recording, filepath=str(path))


def test_import_recording_is_one_undo_step_and_keeps_the_animators_keys(demo, tmp_path):
    """Undo takes the recording's empty and action back, and the animator's keys are those
    of before the import, key for key."""
    assert bpy.ops.looprig.retarget() == {"FINISHED"}
    context = bpy.context
    path = tmp_path / "played.csv"
    _lagging_recording(bake.read_baked_curves(context, checked_model(context)), path)
    bpy.ops.ed.undo_push(message="retargeted")
    before, keys = snapshot(context), _keys(bpy.data.objects["hand"])
    assert bpy.ops.looprig.import_recording("EXEC_DEFAULT", True, filepath=str(path)) == {"FINISHED"}
    assert recording.carrier_name(demo.name) in bpy.data.objects
    assert bpy.ops.ed.undo() == {"FINISHED"}
    assert snapshot(context) == before
    after = _keys(bpy.data.objects["hand"])
    assert after.keys() == keys.keys()
    for data_path, (frames, values) in keys.items():
        np.testing.assert_array_equal(after[data_path][0], frames)
        np.testing.assert_array_equal(after[data_path][1], values)
