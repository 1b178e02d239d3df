"""Retarget NLA Strips: the target's strips played in sequence, the gap between them a
transition held within the crank's limits; the animator's strips and keys untouched."""

import bpy
import numpy as np
from helpers import fails, snapshot

from blender_addon import animation, demo_scene


def _strips(gap_start=57):
    """The demo target's action pushed into two strips: the whole turn (frames 1-49,
    'walk') and its frames 13-37 ('wave') from ``gap_start`` on."""
    hand = bpy.context.scene.objects["hand"]
    action = hand.animation_data.action
    hand.animation_data.action = None
    track = hand.animation_data.nla_tracks.new()
    track.strips.new("walk", 1, action)
    wave = track.strips.new("wave", gap_start, action)
    wave.action_frame_start, wave.action_frame_end = 13, 37
    return hand


def _crank(collection):
    crank = collection.objects["crank"]
    bag = animation.channelbag(crank.animation_data.action, crank.animation_data.action_slot)
    frames, qw = animation.read_fcurve(bag.fcurves.find("rotation_quaternion", index=0))
    _, qz = animation.read_fcurve(bag.fcurves.find("rotation_quaternion", index=3))
    return frames, np.unwrap(2 * np.arctan2(qz, qw))


def test_strips_in_sequence_with_the_gap_held_within_limits(demo):
    """Walk (1-49) then wave (57-81): the robot is keyed on 1..81, the 8-frame gap is the
    transition, the bake breaks no limit, and the end of 'wave' is its own pose."""
    scene = bpy.context.scene
    scene.looprig.limit_mode = "hold"
    hand = _strips()
    strips = [(s.name, s.frame_start, s.frame_end) for s in hand.animation_data.nla_tracks[0].strips]
    assert bpy.ops.looprig.retarget_strips() == {"FINISHED"}
    frames, angle = _crank(demo)
    np.testing.assert_array_equal(frames, np.arange(1, 82))
    assert len(scene.looprig.violations) == 0
    speed = np.abs(np.diff(angle)) * 24.0
    # across the gap the crank rides its 4 rad/s limit (keys are single precision: 1e-6 rad)
    assert 3.9 < speed[48:56].max() <= 4.0 + 1e-5
    # the clips' own frames where the crank cannot keep up are limited; the gap's never are
    (status,) = scene.looprig.frame_status
    assert status.samples == 81 and status.limited > 0
    assert all(s.end_frame <= 49 or s.frame >= 57 for s in status.stretches)
    # before its crank reaches the limit, 'walk' is followed exactly (the demo's closed form)
    asked, _ = demo_scene.crank_motion((np.arange(1, 8) - 1) / 24.0, 2.0)
    np.testing.assert_allclose(np.angle(np.exp(1j * (angle[:7] - asked))), 0.0, atol=1e-3)
    assert "chained walk, wave: 7 transition sample(s)" in scene.looprig.status
    after = [(s.name, s.frame_start, s.frame_end) for s in hand.animation_data.nla_tracks[0].strips]
    assert after == strips and hand.animation_data.action is None


def test_strips_without_a_gap_are_refused_with_nothing_changed(demo):
    _strips(gap_start=49)
    before = snapshot(bpy.context)
    message = fails(bpy.ops.looprig.retarget_strips)
    assert "strips 'walk' and 'wave' leave 0 frames between them" in message
    assert snapshot(bpy.context) == before


def test_retarget_strips_is_one_undo_step(demo):
    context = bpy.context
    _strips()
    bpy.ops.ed.undo_push(message="strips")
    before = snapshot(context)
    assert bpy.ops.looprig.retarget_strips("EXEC_DEFAULT", True) == {"FINISHED"}
    assert "looprig fourbar" in bpy.data.actions
    assert bpy.ops.ed.undo() == {"FINISHED"}
    context.scene.frame_set(1)
    assert "looprig fourbar" not in bpy.data.actions
    assert snapshot(context) == before
