"""Bake: actuator F-curves with the closed-form values, colours, markers, tint; export refusal."""

import json

import bpy
import numpy as np
import pytest
from helpers import fails, snapshot

from blender_addon import animation, bake, demo_scene, motor_feedback

FPS, SECONDS = 24.0, 2.0


def _root_curve(root, path):
    ad = root.animation_data
    fc = animation.channelbag(ad.action, ad.action_slot).fcurves.find(path)
    assert fc is not None, path
    return fc


def test_bake_writes_actuator_and_velocity_curves_with_the_closed_form_values(demo):
    """theta(t) = theta0 + pi (1 - cos(pi t / T)); the actuator angle is theta - theta0 and
    its velocity (pi^2 / T) sin(pi t / T)."""
    assert bpy.ops.looprig.retarget() == {"FINISHED"}  # bakes after retargeting
    root = demo.objects["ground"]
    frames, values = animation.read_fcurve(_root_curve(root, '["crank_joint"]'))
    t = (frames - 1) / FPS
    angle, speed = demo_scene.crank_motion(t, SECONDS)
    np.testing.assert_array_equal(frames, np.arange(1, 50))
    np.testing.assert_allclose(values, angle - demo_scene.CRANK_START, atol=2e-4)
    _, velocity = animation.read_fcurve(_root_curve(root, '["crank_joint velocity"]'))
    # spline derivative of 24 Hz samples of a sine: a few 1e-3 rad/s off
    np.testing.assert_allclose(velocity, speed, atol=0.03)
    assert root["crank_joint"] == pytest.approx(0.0, abs=1e-4)  # custom property exists (rad)


def test_bake_by_itself_samples_the_scene(demo):
    settings = bpy.context.scene.looprig
    settings.bake_after_retarget = False
    assert bpy.ops.looprig.retarget() == {"FINISHED"}
    root = demo.objects["ground"]
    assert bake.BAKE_KEY not in root.keys()
    assert bpy.ops.looprig.bake() == {"FINISHED"}
    frames, values = animation.read_fcurve(_root_curve(root, '["crank_joint"]'))
    angle, _ = demo_scene.crank_motion((frames - 1) / FPS, SECONDS)
    np.testing.assert_allclose(values, angle - demo_scene.CRANK_START, atol=2e-4)


def test_violations_give_colours_markers_extreme_keys_and_a_summary(demo):
    expected = demo_scene.violation_frames(SECONDS, FPS)  # closed form: |omega| > 4 rad/s
    assert (expected[0], expected[-1]) == (16, 34)
    assert bpy.ops.looprig.retarget() == {"FINISHED"}
    scene = bpy.context.scene
    root = demo.objects["ground"]
    value_curve = _root_curve(root, '["crank_joint"]')
    velocity_curve = _root_curve(root, '["crank_joint velocity"]')
    assert value_curve.color_mode == "CUSTOM"
    np.testing.assert_allclose(value_curve.color, bake.RED, atol=1e-6)
    np.testing.assert_allclose(velocity_curve.color, bake.VELOCITY_RED, atol=1e-6)
    markers = [(m.name, m.frame) for m in scene.timeline_markers]
    assert markers == [("looprig fourbar: crank_joint velocity 0.62 s", 16)]  # frame 16 is 15/24 s in
    extreme = [int(k.co.x) for k in velocity_curve.keyframe_points if k.type == "EXTREME"]
    assert extreme == list(expected)
    _, over = animation.read_fcurve(_root_curve(root, '["crank_joint over velocity"]'))
    assert list(np.flatnonzero(over) + 1) == list(expected)
    for kind in ("range", "acceleration"):  # no range, no acceleration limit
        assert not animation.read_fcurve(_root_curve(root, f'["crank_joint over {kind}"]'))[1].any()
    item = scene.looprig.actuators["crank_joint"]
    assert item.violation_count == 1 and item.first_violation_frame == 16
    assert item.first_violation_time == pytest.approx(15 / FPS)
    assert item.velocity_limit == pytest.approx(4.0)
    assert item.peak_velocity == pytest.approx(np.pi**2 / SECONDS, rel=0.01)
    assert json.loads(item.intervals) == [[16.0, 34.0]]
    assert item.motor_object == "crank"


def test_within_limits_curves_keep_their_palette_colour_and_no_markers(demo):
    demo.objects["crank_joint"].looprig_joint.velocity_limit = 10.0
    assert bpy.ops.looprig.retarget() == {"FINISHED"}
    root = demo.objects["ground"]
    np.testing.assert_allclose(_root_curve(root, '["crank_joint"]').color, bake.PALETTE[0], atol=1e-6)
    assert [m.name for m in bpy.context.scene.timeline_markers] == []
    assert bpy.context.scene.looprig.actuators["crank_joint"].violation_count == 0


def test_motor_is_tinted_red_at_violating_frames_only(demo):
    assert bpy.ops.looprig.retarget() == {"FINISHED"}
    scene, crank = bpy.context.scene, demo.objects["crank"]
    scene.frame_set(25)
    np.testing.assert_allclose(crank.color[:3], motor_feedback.TINTS["velocity"], atol=1e-3)
    scene.frame_set(5)
    np.testing.assert_allclose(crank.color[:3], (0.9, 0.6, 0.2), atol=1e-3)
    assert bpy.ops.looprig.clear_bake() == {"FINISHED"}
    scene.frame_set(25)
    np.testing.assert_allclose(crank.color[:3], (0.9, 0.6, 0.2), atol=1e-3)
    assert not crank.animation_data.drivers


def test_rebake_replaces_markers_and_curves(demo):
    assert bpy.ops.looprig.retarget() == {"FINISHED"}
    assert bpy.ops.looprig.bake() == {"FINISHED"}
    assert bpy.ops.looprig.bake() == {"FINISHED"}
    assert len(bpy.context.scene.timeline_markers) == 1
    assert len(bpy.context.scene.looprig.actuators) == 1
    assert len(demo.objects["crank"].animation_data.drivers) == 3


def test_bake_is_one_undo_step(demo):
    bpy.context.scene.looprig.bake_after_retarget = False
    assert bpy.ops.looprig.retarget() == {"FINISHED"}
    bpy.ops.ed.undo_push(message="retargeted")
    before = snapshot(bpy.context)
    assert bpy.ops.looprig.bake("EXEC_DEFAULT", True) == {"FINISHED"}
    assert bpy.ops.ed.undo() == {"FINISHED"}
    assert snapshot(bpy.context) == before
    assert len(bpy.context.scene.looprig.actuators) == 0


def test_export_refuses_on_violations_and_writes_when_allowed(demo, tmp_path):
    from looprig.core.export import read_dynamixel_json, read_json

    assert bpy.ops.looprig.retarget() == {"FINISHED"}
    path = tmp_path / "crank.json"
    message = fails(bpy.ops.looprig.export_curves, filepath=str(path), format="JSON")
    assert "not written" in message and "crank_joint" in message and "velocity" in message
    assert not path.exists()
    assert bpy.ops.looprig.export_curves(filepath=str(path), format="JSON", allow_violations=True) == {
        "FINISHED"
    }
    curves = read_json(path)
    assert curves.names == ("crank_joint",) and curves.rate_hz == 24.0
    assert [v.quantity for v in curves.carried_violations] == ["velocity"]
    angle, _ = demo_scene.crank_motion(np.arange(49) / FPS, SECONDS)
    np.testing.assert_allclose(curves.values[:, 0], angle - demo_scene.CRANK_START, atol=2e-4)
    # within limits: every hardware format writes
    demo.objects["crank_joint"].looprig_joint.velocity_limit = 10.0
    js = demo.objects["crank_joint"].looprig_joint
    js.zero_offset_ticks, js.direction = 1000, "-1"
    for fmt, name in (("CSV", "c.csv"), ("DXL_JSON", "d.json"), ("DXL_CSV", "d.csv"), ("C_HEADER", "c.h")):
        assert bpy.ops.looprig.export_curves(filepath=str(tmp_path / name), format=fmt) == {"FINISHED"}
        assert (tmp_path / name).stat().st_size > 0
    ticks = read_dynamixel_json(tmp_path / "d.json")
    assert ticks.ticks[0, 0] == 1000 and ticks.ticks[-1, 0] == 1000 - 4096  # one turn, reversed


def test_export_without_a_bake_is_refused(demo, tmp_path):
    assert "nothing baked" in fails(bpy.ops.looprig.export_curves, filepath=str(tmp_path / "x.json"))
