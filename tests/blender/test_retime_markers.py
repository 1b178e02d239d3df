"""Timing Stretch in the scene: the Retarget operator slows the robot where its crank's
speed limit binds, the animator's timeline markers pinned at their frames; the
animator's keys and markers untouched; one undo step."""

import bpy
import numpy as np
from helpers import snapshot

from blender_addon import animation, demo_scene

BEATS = {"beat 1": 7, "beat 2": 19}  # 0.25 s and 0.75 s into the 2 s demo clip at 24 fps


def _crank(collection):
    """Frames (K,) and crank angles (K,) [rad] of the robot's keys (world angle about z)."""
    crank = collection.objects["crank"]
    bag = animation.channelbag(crank.animation_data.action, crank.animation_data.action_slot)
    frames, qw = animation.read_fcurve(bag.fcurves.find("rotation_quaternion", index=0))
    _, qz = animation.read_fcurve(bag.fcurves.find("rotation_quaternion", index=3))
    return frames, 2 * np.arctan2(qz, qw)


def _stretch(demo):
    scene = bpy.context.scene
    scene.looprig.limit_mode = "hold"
    scene.looprig.timing = "stretch"
    for name, frame in BEATS.items():
        scene.timeline_markers.new(name, frame=frame)


def test_stretch_keeps_the_markers_and_every_limit(demo):
    """The demo's crank asks 4.93 rad/s of 4: with the markers at frames 7 and 19 pinned,
    the robot passes the animated pose on each marker's frame, the motion after the last
    marker is slowed (the action ends after frame 49) and the bake breaks no limit."""
    scene = bpy.context.scene
    _stretch(demo)
    hand = scene.objects["hand"]
    keys = animation.read_fcurve(
        animation.channelbag(hand.animation_data.action, hand.animation_data.action_slot).fcurves.find(
            "location", index=0
        )
    )
    assert bpy.ops.looprig.retarget() == {"FINISHED"}
    frames, angle = _crank(demo)
    assert frames[-1] > 49.5  # the last stretch grew
    fps = 24.0
    for frame in BEATS.values():
        k = int(np.flatnonzero(frames == frame)[0])
        asked, speed = demo_scene.crank_motion((frame - 1) / fps, 2.0)
        miss = np.angle(np.exp(1j * (angle[k] - asked)))
        assert abs(miss) <= abs(speed) / fps  # the pose asked at the marker, to one frame
    assert {m.name: m.frame for m in scene.timeline_markers if m.name in BEATS} == BEATS
    assert len(scene.looprig.violations) == 0
    assert "retimed to frame" in scene.looprig.status
    after = animation.read_fcurve(
        animation.channelbag(hand.animation_data.action, hand.animation_data.action_slot).fcurves.find(
            "location", index=0
        )
    )
    np.testing.assert_array_equal(keys[1], after[1])  # the animator's keys as they were


def test_looprig_markers_are_never_pins(demo):
    """A retimed bake marks nothing; markers looprig wrote (a status, a violation) would be
    at their own frames: only the animator's markers pin."""
    from blender_addon.operators_retarget import read_inputs

    _stretch(demo)
    bpy.context.scene.timeline_markers.new("looprig fourbar | limited: crank velocity", frame=25)
    inputs, _ = read_inputs(bpy.context, sample=False)
    np.testing.assert_allclose(inputs.pins, [6 / 24, 18 / 24])


def test_stretch_is_one_undo_step_and_keeps_the_animators_work(demo):
    context = bpy.context
    _stretch(demo)
    bpy.ops.ed.undo_push(message="markers")
    before = snapshot(context)
    assert bpy.ops.looprig.retarget("EXEC_DEFAULT", True) == {"FINISHED"}
    assert "looprig fourbar" in bpy.data.actions
    assert bpy.ops.ed.undo() == {"FINISHED"}
    context.scene.frame_set(1)
    assert "looprig fourbar" not in bpy.data.actions
    assert snapshot(context) == before
