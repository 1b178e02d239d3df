"""Retarget in the scene: the four-bar's crank follows the closed form; looprig's own action only."""

import bpy
import numpy as np
import pytest
from helpers import fails, snapshot
from looprig.core.retarget import RetargetCancelled

from blender_addon import animation, demo_scene
from blender_addon.operators_retarget import RetargetJob, _Worker, apply_result, read_inputs


def _crank_angles(frames, frame_start=1, fps=24.0, seconds=2.0):
    angle, _ = demo_scene.crank_motion((np.asarray(frames) - frame_start) / fps, seconds)
    return angle


def _keys(ob, path, index):
    ad = ob.animation_data
    bag = animation.channelbag(ad.action, ad.action_slot)
    return animation.read_fcurve(bag.fcurves.find(path, index=index))


def test_coupler_target_gives_the_closed_form_crank_angle(demo):
    """A point on the coupler follows its curve for crank angle theta(t); the retargeted crank
    object turns by theta(t) about z (its rest angle is theta0 = pi/2, so its world angle is theta)."""
    assert bpy.ops.looprig.retarget() == {"FINISHED"}
    crank = demo.objects["crank"]
    frames, qw = _keys(crank, "rotation_quaternion", 0)
    _, qz = _keys(crank, "rotation_quaternion", 3)
    np.testing.assert_array_equal(frames, np.arange(1, 50))
    angle = 2 * np.arctan2(qz, qw)
    expected = _crank_angles(frames)
    error = np.angle(np.exp(1j * (angle - expected)))
    assert np.max(np.abs(error)) < 2e-4
    # every body is keyed, the ground is not
    for name in ("crank", "coupler", "rocker"):
        assert demo.objects[name].animation_data.action.name == "looprig fourbar"
    ground = demo.objects["ground"].animation_data  # carries the baked curves, no motion
    assert animation.channelbag(ground.action, ground.action_slot).fcurves.find("location") is None


def test_scene_follows_the_keys_coupler_point_on_the_target(demo):
    assert bpy.ops.looprig.retarget() == {"FINISHED"}
    scene = bpy.context.scene
    point, hand = demo.objects["coupler_point"], scene.objects["hand"]
    for frame in (1, 13, 30, 49):
        scene.frame_set(frame)
        np.testing.assert_allclose(point.matrix_world.translation, hand.matrix_world.translation, atol=1e-5)


def test_retarget_never_touches_the_animators_action_and_replaces_only_its_own(demo):
    scene = bpy.context.scene
    hand = scene.objects["hand"]
    animator_action = hand.animation_data.action
    before = animation.read_fcurve(
        animation.channelbag(animator_action, hand.animation_data.action_slot).fcurves.find(
            "location", index=0
        )
    )
    # the animator also keyed the rocker by hand: looprig must keep that action
    rocker = demo.objects["rocker"]
    rocker.keyframe_insert("location", frame=1)
    rocker_action = rocker.animation_data.action
    actions = {a.name for a in bpy.data.actions}
    assert bpy.ops.looprig.retarget() == {"FINISHED"}
    assert bpy.ops.looprig.retarget() == {"FINISHED"}  # re-run: replaces looprig's action only
    looprig_actions = [a for a in bpy.data.actions if animation.find_action(demo) == a]
    assert [a.name for a in looprig_actions] == ["looprig fourbar"]
    assert {a.name for a in bpy.data.actions} == actions | {"looprig fourbar"}
    assert hand.animation_data.action == animator_action
    after = animation.read_fcurve(
        animation.channelbag(animator_action, hand.animation_data.action_slot).fcurves.find(
            "location", index=0
        )
    )
    np.testing.assert_array_equal(before[1], after[1])
    assert rocker.animation_data.action.name == "looprig fourbar"
    assert rocker_action.use_fake_user and rocker_action.name in bpy.data.actions
    # one action, one slot per animated object
    slots = sorted(s.identifier for s in looprig_actions[0].slots)
    assert slots == ["OBcoupler", "OBcrank", "OBground", "OBrocker"]  # ground carries the bake
    assert bpy.ops.looprig.clear() == {"FINISHED"}
    assert rocker.animation_data.action == rocker_action
    assert "looprig fourbar" not in bpy.data.actions


def test_clear_puts_the_robot_back_at_rest(demo):
    context = bpy.context
    before = snapshot(context)
    assert bpy.ops.looprig.retarget() == {"FINISHED"}
    context.scene.frame_set(25)
    assert bpy.ops.looprig.clear() == {"FINISHED"}
    context.scene.frame_set(1)
    after = snapshot(context)
    assert after["matrices"] == before["matrices"]
    assert after["markers"] == [] and after["custom"] == before["custom"]


def test_robot_reads_at_rest_after_a_retarget(demo):
    """The robot's initial configuration stays its rest pose while looprig animates it."""
    from blender_addon.scene_graph import read_model

    rest = read_model(bpy.context, demo).mechanism.initial_state()
    assert bpy.ops.looprig.retarget() == {"FINISHED"}
    bpy.context.scene.frame_set(25)
    moved = np.array(demo.objects["crank"].matrix_world)
    again = read_model(bpy.context, demo).mechanism.initial_state()
    np.testing.assert_allclose(again, rest, atol=1e-6)
    np.testing.assert_allclose(np.array(demo.objects["crank"].matrix_world), moved)  # frame restored


def test_retarget_is_one_undo_step(demo):
    context = bpy.context
    bpy.ops.ed.undo_push(message="demo scene")
    before = snapshot(context)
    assert bpy.ops.looprig.retarget("EXEC_DEFAULT", True) == {"FINISHED"}
    assert "looprig fourbar" in bpy.data.actions
    assert bpy.ops.ed.undo() == {"FINISHED"}
    context.scene.frame_set(1)
    assert "looprig fourbar" not in bpy.data.actions
    assert snapshot(context) == before
    assert bpy.ops.ed.redo() == {"FINISHED"}
    assert "looprig fourbar" in bpy.data.actions


def test_sub_frame_sampling_at_twice_the_scene_rate(demo):
    settings = bpy.context.scene.looprig
    settings.rate = 48.0
    assert bpy.ops.looprig.retarget() == {"FINISHED"}
    frames, qw = _keys(demo.objects["crank"], "rotation_quaternion", 0)
    np.testing.assert_allclose(frames, 1 + np.arange(97) / 2)
    _, qz = _keys(demo.objects["crank"], "rotation_quaternion", 3)
    error = np.angle(np.exp(1j * (2 * np.arctan2(qz, qw) - _crank_angles(frames))))
    # on frames the crank is exact; between them the target moves on a straight line (LINEAR
    # keys), off the coupler curve, and the crank follows that path instead
    assert np.max(np.abs(error[::2])) < 2e-4
    assert np.max(np.abs(error)) < 1e-2


def test_errors_name_the_target_and_change_nothing(demo):
    context = bpy.context
    settings = context.scene.looprig
    before = snapshot(context)
    settings.targets[0].target = None
    assert "target 1 (coupler_point): pick the animated object" in fails(bpy.ops.looprig.retarget)
    settings.targets[0].target = context.scene.objects["hand"]
    settings.targets[0].frame = "coupler_pt"
    message = fails(bpy.ops.looprig.retarget)
    assert "no robot body or frame 'coupler_pt'" in message and "coupler_point" in message
    settings.targets[0].frame = "coupler_point"
    settings.targets[0].target = demo.objects["rocker"]
    assert "'rocker' is part of the robot" in fails(bpy.ops.looprig.retarget)
    settings.targets.clear()
    assert "no targets" in fails(bpy.ops.looprig.retarget)
    assert "retarget failed" in settings.status
    assert snapshot(context) == before


def test_worker_thread_reports_progress_and_cancels(demo):
    """The modal operator's solve runs in a worker thread; Esc sets its cancel flag."""
    inputs, _ = read_inputs(bpy.context)
    worker = _Worker(inputs)
    worker.start()
    worker.join()
    assert worker.error is None and worker.done == worker.total == 49
    cancelled = _Worker(inputs)
    cancelled.cancel_requested = True
    cancelled.start()
    cancelled.join()
    assert isinstance(cancelled.error, RetargetCancelled)


def test_unreachable_target_is_reported_and_the_loop_stays_closed(demo):
    hand = bpy.context.scene.objects["hand"]
    bag = animation.channelbag(hand.animation_data.action, hand.animation_data.action_slot)
    fc = bag.fcurves.find("location", index=1)
    fc.keyframe_points[20].co.y += 1.0  # one key (frame 21) 1 m away from the coupler curve
    fc.update()
    assert bpy.ops.looprig.retarget() == {"FINISHED"}
    assert "1 sample(s) unreachable" in bpy.context.scene.looprig.status
    scene = bpy.context.scene
    scene.frame_set(21)
    # the rocker (0.3 m between its pivots) still joins the coupler: the robot did not come apart
    B = np.array(demo.objects["rocker_coupler_joint"].matrix_world.translation)
    O4 = np.array(demo.objects["rocker_joint"].matrix_world.translation)
    assert np.linalg.norm(B - O4) == pytest.approx(0.3, abs=1e-5)
    A = np.array(demo.objects["coupler_joint"].matrix_world.translation)
    assert np.linalg.norm(B - A) == pytest.approx(0.35, abs=1e-5)


def test_target_offset_is_applied_in_the_targets_axes(demo):
    """hand2 rides on hand 2 cm along hand's y, turned 90 deg about z; an offset of
    (-0.02, 0, 0) in hand2's axes brings the target back onto hand."""
    from mathutils import Euler

    scene = bpy.context.scene
    hand = scene.objects["hand"]
    hand2 = bpy.data.objects.new("hand2", None)
    scene.collection.objects.link(hand2)
    hand2.parent = hand
    hand2.location = (0.0, 0.02, 0.0)
    hand2.rotation_euler = Euler((0.0, 0.0, np.pi / 2))
    target = scene.looprig.targets[0]
    target.target = hand2
    target.offset_location = (-0.02, 0.0, 0.0)
    assert bpy.ops.looprig.retarget() == {"FINISHED"}
    for frame in (5, 25, 45):
        scene.frame_set(frame)
        np.testing.assert_allclose(
            demo.objects["coupler_point"].matrix_world.translation, hand.matrix_world.translation, atol=1e-5
        )


def test_unit_scale_is_honoured(demo):
    """With 1 Blender unit = 2 m the robot is twice as large, the crank still follows theta(t)."""
    from blender_addon.scene_graph import read_model

    bpy.context.scene.unit_settings.scale_length = 2.0
    m = read_model(bpy.context, demo).mechanism
    np.testing.assert_allclose(m.joint("rocker_joint").anchor, [0.6, 0, 0], atol=1e-6)
    assert bpy.ops.looprig.retarget() == {"FINISHED"}
    frames, qw = _keys(demo.objects["crank"], "rotation_quaternion", 0)
    _, qz = _keys(demo.objects["crank"], "rotation_quaternion", 3)
    error = np.angle(np.exp(1j * (2 * np.arctan2(qz, qw) - _crank_angles(frames))))
    assert np.max(np.abs(error)) < 2e-4
    bpy.context.scene.frame_set(30)
    point, hand = demo.objects["coupler_point"], bpy.context.scene.objects["hand"]
    np.testing.assert_allclose(point.matrix_world.translation, hand.matrix_world.translation, atol=1e-5)


def test_robot_without_motors_is_refused_before_solving(demo):
    demo.objects["crank_joint"].looprig_joint.actuated = False
    before = snapshot(bpy.context)
    assert "has no motor: tick 'Actuated'" in fails(bpy.ops.looprig.retarget)
    assert snapshot(bpy.context) == before


def test_keys_are_written_in_bulk():
    """100 000 keys through keyframe_points.add + foreach_set in well under a second."""
    import time

    ob = bpy.data.objects.new("probe", None)
    bpy.context.scene.collection.objects.link(ob)
    action = bpy.data.actions.new("probe")
    slot = action.slots.new(id_type="OBJECT", name="probe")
    strip = action.layers.new("layer").strips.new(type="KEYFRAME")
    bag = strip.channelbag(slot, ensure=True)
    frames = np.arange(100_000, dtype=float)
    start = time.perf_counter()
    fc = animation.write_fcurve(bag, '["value"]', 0, frames, np.sin(frames / 100), "group")
    assert time.perf_counter() - start < 1.0
    assert len(fc.keyframe_points) == 100_000 and fc.group.name == "group"
    assert fc.keyframe_points[500].interpolation == "LINEAR"


def test_chunked_sampling_matches_and_restores_the_frame(demo):
    """The modal retarget samples in chunks between UI events; same matrices, frame kept."""
    from blender_addon.sampling import iter_world_matrices, sample_world_matrices

    scene = bpy.context.scene
    scene.frame_set(7)
    inputs, sources = read_inputs(bpy.context, sample=False)
    out = {}
    steps = list(iter_world_matrices(bpy.context, sources, inputs.clip.frames, out, chunk=10))
    assert steps == [10, 20, 30, 40, 49]
    assert scene.frame_current == 7
    reference = sample_world_matrices(bpy.context, sources, inputs.clip.frames)
    np.testing.assert_array_equal(out["hand"], reference["hand"])
    partial = iter_world_matrices(bpy.context, sources, inputs.clip.frames, {}, chunk=10)
    next(partial)
    assert scene.frame_current == 10
    partial.close()  # Esc while sampling
    assert scene.frame_current == 7


def _run(job, context, cancel_at=None):
    import time

    steps = 0
    while True:
        if cancel_at is not None and steps == cancel_at:
            job.cancel()
        result = job.step(context)
        steps += 1
        if result is not None:
            return result, steps
        time.sleep(0.002)


def test_modal_job_samples_in_steps_then_solves_like_execute(demo):
    context = bpy.context
    context.scene.frame_set(5)
    job = RetargetJob(context, chunk=10)
    result, steps = _run(job, context)
    assert steps >= 6 and job.done == job.total == 98
    assert context.scene.frame_current == 5
    apply_result(context, job.inputs, result)
    frames, qw = _keys(demo.objects["crank"], "rotation_quaternion", 0)
    _, qz = _keys(demo.objects["crank"], "rotation_quaternion", 3)
    error = np.angle(np.exp(1j * (2 * np.arctan2(qz, qw) - _crank_angles(frames))))
    assert np.max(np.abs(error)) < 2e-4


@pytest.mark.parametrize("cancel_at", [1, 6])
def test_modal_job_cancels_while_sampling_or_solving_and_changes_nothing(demo, cancel_at):
    context = bpy.context
    context.scene.frame_set(5)
    before = snapshot(context)
    job = RetargetJob(context, chunk=10)
    with pytest.raises(RetargetCancelled):
        _run(job, context, cancel_at=cancel_at)
    job.close()
    assert context.scene.frame_current == 5
    assert snapshot(context) == before


def test_bone_target_and_com_target(demo):
    """A target can be a bone of an animated armature; a CoM target can be added."""
    scene = bpy.context.scene
    hand = scene.objects["hand"]
    performer = bpy.data.objects.new("performer", bpy.data.armatures.new("performer"))
    scene.collection.objects.link(performer)
    bpy.context.view_layer.objects.active = performer
    bpy.ops.object.mode_set(mode="EDIT")
    bone = performer.data.edit_bones.new("wrist")
    bone.head, bone.tail = (0, 0, 0), (0, 0, 0.05)
    bpy.ops.object.mode_set(mode="OBJECT")
    constraint = performer.constraints.new("COPY_LOCATION")  # the performer carries the hand's motion
    constraint.target = hand
    target = scene.looprig.targets[0]
    target.target, target.bone = performer, "wrist"
    assert bpy.ops.looprig.retarget() == {"FINISHED"}
    for frame in (10, 30):
        scene.frame_set(frame)
        np.testing.assert_allclose(
            demo.objects["coupler_point"].matrix_world.translation, hand.matrix_world.translation, atol=1e-5
        )
    settings = scene.looprig
    settings.use_com, settings.com_target, settings.com_weight = True, hand, (1e-3, 1e-3, 0.0)
    assert bpy.ops.looprig.retarget() == {"FINISHED"}
    target.bone = "no_such_bone"
    assert "'performer' has no bone 'no_such_bone'" in fails(bpy.ops.looprig.retarget)


def test_bodies_parented_to_other_bodies(demo):
    """A hierarchy of link objects (coupler under crank, rocker under coupler) keys local motion."""
    for child, parent in (("coupler", "crank"), ("rocker", "coupler")):
        ob, par = demo.objects[child], demo.objects[parent]
        world = ob.matrix_world.copy()
        ob.parent = par
        ob.matrix_parent_inverse = par.matrix_world.inverted()
        ob.matrix_world = world
    bpy.context.view_layer.update()
    assert bpy.ops.looprig.retarget() == {"FINISHED"}
    scene = bpy.context.scene
    for frame in (1, 20, 40):
        scene.frame_set(frame)
        np.testing.assert_allclose(
            demo.objects["coupler_point"].matrix_world.translation,
            scene.objects["hand"].matrix_world.translation,
            atol=1e-5,
        )
        np.testing.assert_allclose(
            demo.objects["rocker_joint"].matrix_world.translation, (0.3, 0, 0), atol=1e-5
        )


def test_continuous_quaternions_flip_signs_only_to_keep_neighbours_on_one_side():
    from blender_addon.motion import continuous_quaternions

    rng = np.random.default_rng(7)
    q = np.cumsum(rng.normal(scale=0.2, size=(200, 4)), axis=0)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    flipped = q * rng.choice([-1.0, 1.0], size=(200, 1))
    out = continuous_quaternions(flipped)
    assert np.all(np.sum(out[1:] * out[:-1], axis=1) >= 0)
    np.testing.assert_allclose(np.abs(np.sum(out * flipped, axis=1)), 1.0, atol=1e-12)  # same rotations
    np.testing.assert_array_equal(out[0], flipped[0])
