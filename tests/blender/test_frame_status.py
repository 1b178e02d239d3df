"""Per-frame status of a retarget in Blender: markers, panel summary, band and ghost.

The demo's clip asks up to pi^2/2 = 4.93 rad/s of a crank limited to 4 rad/s; with
``limit_mode`` hold the crank cannot keep up and the coupler point misses the hand on
the frames core calls limited. Each test compares what the scene shows with core's
:class:`~looprig.core.retarget.RetargetResult` of the same retarget.
"""

from types import SimpleNamespace

import bpy
import numpy as np
import pytest
from test_panels import _draw

from blender_addon import frame_status, overlay_geometry, panels, status_display
from blender_addon.frame_status import EXACT, LIMITED, UNREACHABLE
from blender_addon.operators_retarget import apply_result, read_inputs, solve


def _retarget_held(context):
    """Retarget the demo with limit_mode hold through the operator's own steps; core's result."""
    context.scene.looprig.limit_mode = "hold"
    inputs, _ = read_inputs(context)
    result = solve(inputs)
    apply_result(context, inputs, result)
    frames = inputs.clip.frame_start + (result.times - result.times[0]) * inputs.clip.fps
    return result, frames


def _looprig_markers(scene):
    return sorted((m.name, m.frame) for m in scene.timeline_markers if m.name.startswith("looprig fourbar |"))


def _covered(item, frames, status):
    """The sample frames the item's stretches of ``status`` cover."""
    return sorted(
        float(f) for s in item.stretches if s.status == status for f in frames if s.frame <= f <= s.end_frame
    )


def test_limited_frames_are_marked_exactly_where_core_says(demo):
    context = bpy.context
    result, frames = _retarget_held(context)
    limited = np.asarray(result.limited, bool)
    assert limited.any() and not limited.all()  # the clip is too fast, but not everywhere
    item = status_display.status_item(context.scene.looprig, "fourbar")
    assert _covered(item, frames, "limited") == frames[limited].tolist()
    assert _covered(item, frames, "unreachable") == frames[result.unreachable].tolist() == []
    # a marker at the first frame of each stretch, naming the motor, its limit and the worst miss
    starts = [s.frame for s in item.stretches]
    markers = _looprig_markers(context.scene)
    assert [frame for _, frame in markers] == [round(f) for f in starts]
    for (name, _), stretch in zip(markers, item.stretches, strict=True):
        first, last = np.searchsorted(frames, [stretch.frame, stretch.end_frame])
        worst = result.position_error[first : last + 1].max()
        assert name == f"looprig fourbar | limited {worst * 1000:.3g} mm: crank_joint velocity"
        assert stretch.name == f"crank_joint velocity, {worst * 1000:.3g} mm"
        assert stretch.miss == pytest.approx(worst)
    # the band shades exactly the stretches, half a frame either side
    spans, sample_frames = status_display.band_spans(context)
    band = overlay_geometry.status_band(spans, 0.5 * sample_frames)
    assert band == [(s.frame - 0.5, s.end_frame + 0.5, LIMITED) for s in item.stretches]
    context.scene.looprig.show_status = False
    assert status_display.band_spans(context) == ([], 1.0)


def test_panel_summary_matches_core_summary(demo):
    context = bpy.context
    result, _ = _retarget_held(context)
    summary = result.summary()
    item = status_display.status_item(context.scene.looprig, "fourbar")
    assert item.samples == summary["frames"] == 49
    assert item.limited == summary["limited_frames"] > 0
    assert item.unreachable == summary["unreachable_frames"] == 0
    assert item.exact == summary["frames"] - summary["limited_frames"] - summary["unreachable_frames"]
    assert item.worst_miss == pytest.approx(summary["max_position_error_m"])
    worst = int(np.argmax(result.position_error.max(axis=1)))
    assert item.worst_frame == 1 + worst
    binding = np.asarray(result.binding)
    assert [(b.name, b.limit, b.samples) for b in item.limits] == [
        ("crank_joint", "velocity", int(np.count_nonzero(binding[:, 0] == "velocity")))
    ]
    assert f"{summary['limited_frames']} sample(s) limited" in context.scene.looprig.status
    labels = [entry[1] for entry in _draw(panels.LOOPRIG_PT_solve, context) if entry[0] == "label"]
    assert f"exact {item.exact}" in labels and f"limited {item.limited}" in labels
    assert "unreachable 0" in labels
    assert f"crank_joint: velocity limit binds on {item.limits[0].samples} frames" in labels
    assert f"worst miss {summary['max_position_error_m'] * 1000:.3g} mm at frame {1 + worst}" in " ".join(
        labels
    )


def test_rerun_and_clear_replace_only_looprigs_markers(demo):
    context = bpy.context
    scene = context.scene
    scene.looprig.limit_mode = "hold"
    own = [("F_05", 5), ("looprig fourbar | limited: my note", 1), ("kick", 1)]  # the animator's
    for name, frame in own:
        scene.timeline_markers.new(name, frame=frame)
    assert bpy.ops.looprig.retarget() == {"FINISHED"}
    first = sorted(set(_looprig_markers(scene)) - {own[1]})
    assert len(first) == 1 and first[0][0].endswith(" mm: crank_joint velocity")
    # the same marker name at another frame is the animator's: it stays
    copy = scene.timeline_markers.new(first[0][0], frame=30)
    assert bpy.ops.looprig.retarget() == {"FINISHED"}
    assert _looprig_markers(scene) == sorted([*first, (first[0][0], 30), own[1]])
    assert bpy.ops.looprig.bake() == {"FINISHED"}  # a bake keeps the status and its markers
    assert _looprig_markers(scene) == sorted([*first, (first[0][0], 30), own[1]])
    # a faster crank: another stretch, the old marker goes
    demo.objects["crank_joint"].looprig_joint.velocity_limit = 4.6
    assert bpy.ops.looprig.retarget() == {"FINISHED"}
    item = status_display.status_item(scene.looprig, "fourbar")
    ours = {(s.marker, s.marker_frame) for s in item.stretches}
    assert ours and first[0] not in ours
    assert set(_looprig_markers(scene)) == ours | {(first[0][0], 30), own[1]}
    assert bpy.ops.looprig.clear() == {"FINISHED"}
    assert len(scene.looprig.frame_status) == 0
    remaining = sorted((m.name, m.frame) for m in scene.timeline_markers)
    assert remaining == sorted([*own, (copy.name, 30)])


def test_retarget_with_its_status_is_one_undo_step(demo):
    context = bpy.context
    context.scene.looprig.limit_mode = "hold"
    bpy.ops.ed.undo_push(message="demo scene")
    assert bpy.ops.looprig.retarget("EXEC_DEFAULT", True) == {"FINISHED"}
    assert _looprig_markers(context.scene) and len(context.scene.looprig.frame_status) == 1
    assert bpy.ops.ed.undo() == {"FINISHED"}
    assert _looprig_markers(context.scene) == [] and len(context.scene.looprig.frame_status) == 0


def test_ghost_joins_the_asked_pose_to_the_robot_frame_on_limited_frames(demo):
    context = bpy.context
    scene = context.scene
    result, frames = _retarget_held(context)
    hand, point = scene.objects["hand"], demo.objects["coupler_point"]
    limited = np.flatnonzero(result.limited)
    for sample in (limited[0], int(np.argmax(result.position_error[:, 0])), limited[-1]):
        scene.frame_set(int(frames[sample]))
        segments = status_display.ghost_geometry(context)
        colour, (asked, reached) = segments[0]
        assert colour == overlay_geometry.STATUS_COLOURS[LIMITED]
        np.testing.assert_allclose(asked, hand.matrix_world.translation, atol=1e-6)
        np.testing.assert_allclose(reached, point.matrix_world.translation, atol=1e-5)
        miss = np.linalg.norm(np.subtract(asked, reached))
        assert miss == pytest.approx(result.position_error[sample, 0], abs=1e-9)
        # the robot frame's triad lies along the coupler point's axes
        _, length = status_display.ghost_at_frame(demo, frames[sample])[2:]
        axes = np.array(point.matrix_world.to_3x3().normalized())
        for a, (_, (start, tip)) in enumerate(segments[4:7]):
            np.testing.assert_allclose(np.subtract(tip, start), length * axes[:, a], atol=1e-5)
    exact = np.flatnonzero(~np.asarray(result.limited, bool))
    scene.frame_set(int(frames[exact[-1]]))
    assert status_display.ghost_geometry(context) == []
    scene.frame_set(int(frames[limited[0]]))
    scene.looprig.show_status = False
    assert status_display.ghost_geometry(context) == []


def test_unreachable_key_is_its_own_stretch_with_a_magenta_ghost(demo):
    """limit_mode report: the exact answer, a key 1 m off the coupler curve (frame 21) is
    out of reach and nothing is limited."""
    context = bpy.context
    scene = context.scene
    hand = scene.objects["hand"]
    fc = animation_fcurve(hand, "location", 1)
    fc.keyframe_points[20].co.y += 1.0
    fc.update()
    inputs, _ = read_inputs(context)
    result = solve(inputs)
    apply_result(context, inputs, result)
    item = status_display.status_item(scene.looprig, "fourbar")
    assert (
        (item.exact, item.limited, item.unreachable)
        == (48, 0, 1)
        == (
            49 - result.summary()["unreachable_frames"],
            result.summary()["limited_frames"],
            result.summary()["unreachable_frames"],
        )
    )
    (stretch,) = item.stretches
    assert (stretch.status, stretch.frame, stretch.end_frame) == ("unreachable", 21.0, 21.0)
    miss = result.position_error[20, 0] * 1000
    assert stretch.name == f"coupler_point out of reach, {miss:.3g} mm"
    assert _looprig_markers(scene) == [(f"looprig fourbar | unreachable {miss:.3g} mm: coupler_point", 21)]
    scene.frame_set(21)
    colour, _ = status_display.ghost_geometry(context)[0]
    assert colour == overlay_geometry.STATUS_COLOURS[UNREACHABLE]


def animation_fcurve(ob, path, index):
    from blender_addon import animation

    ad = ob.animation_data
    return animation.channelbag(ad.action, ad.action_slot).fcurves.find(path, index=index)


def _result(codes, binding, errors, motors=("m1", "m2"), targets=("hand",)):
    """A stand-in for core's RetargetResult with the fields frame_status reads."""
    codes = np.asarray(codes)
    errors = np.asarray(errors, float).reshape(len(codes), -1)
    return SimpleNamespace(
        times=np.arange(len(codes)) / 10.0,
        limited=codes == LIMITED,
        unreachable=codes == UNREACHABLE,
        binding=None if binding is None else np.array(binding, dtype=object),
        position_error=errors,
        orientation_error=np.zeros_like(errors),
        curves=SimpleNamespace(names=list(motors)),
        target_names=list(targets),
        mapping=SimpleNamespace(
            reach_tolerance=1e-4, targets=[SimpleNamespace(orientation_weight=(0, 0, 0))] * len(targets)
        ),
    )


def test_stretches_split_where_the_status_changes_and_name_nearby_limits():
    """Samples: exact, limited (m2 acceleration), limited (no binding there: m1 velocity binds
    on the sample before), unreachable, exact, limited (no binding anywhere near but sample 1
    and 2's), exact."""
    codes = [EXACT, LIMITED, LIMITED, UNREACHABLE, EXACT, LIMITED, EXACT]
    binding = [["", ""], ["velocity", "acceleration"], ["", ""], ["", ""], ["", ""], ["", ""], ["", ""]]
    errors = [0.0, 0.002, 0.003, 0.5, 0.0, 0.001, 0.0]
    status = frame_status.compute_frame_status(_result(codes, binding, errors), 11 + np.arange(7))
    assert [(s.status, s.first, s.last) for s in status.stretches] == [
        (LIMITED, 1, 2),
        (UNREACHABLE, 3, 3),
        (LIMITED, 5, 5),
    ]
    assert [s.frame for s in status.stretches] == [12.0, 14.0, 16.0]
    assert status.stretches[0].label() == "m1 velocity, m2 acceleration, 3 mm"
    assert status.stretches[1].label() == "hand out of reach, 500 mm"
    assert status.stretches[2].limits == (("m1", "velocity"), ("m2", "acceleration"))
    assert status.limits == [("m1", "velocity", 1), ("m2", "acceleration", 1)]
    assert (status.count(EXACT), status.count(LIMITED), status.count(UNREACHABLE)) == (3, 3, 1)
    assert (status.worst_sample, status.worst_miss) == (3, 0.5)


def test_all_exact_has_no_stretch_and_no_ghost_rows():
    status = frame_status.compute_frame_status(_result([EXACT] * 3, None, [0.0] * 3), [1, 2, 3])
    assert status.stretches == [] and status.limits == [] and status.worst_sample == -1
    poses = (np.zeros((3, 1, 3)), np.broadcast_to(np.eye(3), (3, 1, 3, 3)))
    record = frame_status.ghost_record(status, poses, poses, 0.05)
    assert record["rows"] == [-1, -1, -1] and record["asked"] == [0.0]


def test_ghost_segments_line_and_triads():
    asked_R = np.eye(3)[None]
    reached_R = np.array([[[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]])  # 90 deg about z
    segments = overlay_geometry.ghost_segments([[1.0, 0, 0]], asked_R, [[0, 0, 0]], reached_R, 0.5, LIMITED)
    assert segments[0] == (overlay_geometry.STATUS_COLOURS[LIMITED], [(1.0, 0, 0), (0, 0, 0)])
    colour, ghost_x = segments[1]
    assert colour[3] == overlay_geometry.GHOST_ALPHA and ghost_x == [(1.0, 0, 0), (1.5, 0, 0)]
    colour, robot_x = segments[4]
    assert colour[3] == 1.0 and robot_x == [(0, 0, 0), (0, 0.5, 0)]


def test_sub_frame_samples_map_to_scene_frames(demo):
    """At 48 Hz in a 24 fps scene each sample is half a frame: the stretches, the band and
    the ghost are placed on the samples' scene frames, the panel counts samples."""
    context = bpy.context
    scene = context.scene
    scene.looprig.rate = 48.0
    result, frames = _retarget_held(context)
    np.testing.assert_allclose(frames, 1 + np.arange(97) / 2)
    item = status_display.status_item(scene.looprig, "fourbar")
    assert item.sample_frames == 0.5 and item.limited == result.summary()["limited_frames"]
    assert _covered(item, frames, "limited") == frames[result.limited].tolist()
    spans, sample_frames = status_display.band_spans(context)
    assert overlay_geometry.status_band(spans, 0.5 * sample_frames)[0][:2] == (
        item.stretches[0].frame - 0.25,
        item.stretches[0].end_frame + 0.25,
    )
    labels = [entry[1] for entry in _draw(panels.LOOPRIG_PT_solve, context) if entry[0] == "label"]
    assert f"Frame status ({item.samples} samples)" in labels
    sample = int(np.flatnonzero(result.limited & (np.arange(97) % 2 == 1))[-1])  # between frames
    scene.frame_set(int(np.floor(frames[sample])), subframe=0.5)
    (_, (asked, reached)) = status_display.ghost_geometry(context)[0]
    miss = np.linalg.norm(np.subtract(asked, reached))
    assert miss == pytest.approx(result.position_error[sample, 0], abs=1e-9)


class _Recorder:
    """A stand-in for the ``gpu`` module and ``batch_for_shader`` that records what is drawn:
    ``draws`` holds (primitive, vertices, colour) per batch drawn."""

    def __init__(self):
        self.draws, self.colour = [], None
        self.shader = SimpleNamespace(from_builtin=lambda name: self)
        self.state = SimpleNamespace(blend_set=lambda mode: None, line_width_set=lambda width: None)

    def uniform_float(self, name, value):
        assert name == "color"
        self.colour = tuple(value)

    def batch_for_shader(self, shader, primitive, content):
        recorder = self

        class Batch:
            def draw(self, shader):
                recorder.draws.append((primitive, list(content["pos"]), recorder.colour))

        return Batch()


class _View2D:
    """Frames to pixels: x = 10 (frame - 1)."""

    def view_to_region(self, x, y, clip=True):
        return round(10 * (x - 1)), 0


def test_draw_handlers_draw_the_band_and_the_ghost(demo, monkeypatch):
    """The draw callbacks (never run headless) draw the band's rectangles over the region's
    height and the ghost's segments, in their colours."""
    from blender_addon import overlays

    context = bpy.context
    result, frames = _retarget_held(context)
    recorder = _Recorder()
    region = SimpleNamespace(height=80, view2d=_View2D())
    fake = SimpleNamespace(scene=context.scene, region=region)
    monkeypatch.setattr(overlays, "gpu", recorder)
    monkeypatch.setattr(overlays, "batch_for_shader", recorder.batch_for_shader)
    monkeypatch.setattr(overlays, "bpy", SimpleNamespace(context=fake))
    overlays.draw_status_band()
    (stretch,) = status_display.status_item(context.scene.looprig, "fourbar").stretches
    x0, x1 = round(10 * (stretch.frame - 1.5)), round(10 * (stretch.end_frame - 0.5))
    colour = (*overlay_geometry.STATUS_COLOURS[LIMITED][:3], overlay_geometry.STATUS_BAND_ALPHA)
    assert recorder.draws == [("TRIS", overlay_geometry.rectangles_to_triangles([(x0, 0, x1, 80)]), colour)]
    recorder.draws.clear()
    context.scene.frame_set(int(frames[np.flatnonzero(result.limited)[0]]))
    overlays.draw_ghost()
    segments = status_display.ghost_geometry(context)
    assert len(segments) == 7
    assert recorder.draws == [("LINES", points, colour) for colour, points in segments]


def test_a_centre_of_mass_target_alone_is_exact_everywhere_and_has_no_ghost(demo):
    """Core counts frame targets' misses only: with no frame target every frame is exact."""
    context = bpy.context
    settings = context.scene.looprig
    settings.targets[0].enabled = False
    settings.use_com, settings.com_target = True, context.scene.objects["hand"]
    assert bpy.ops.looprig.retarget() == {"FINISHED"}
    item = status_display.status_item(settings, "fourbar")
    assert item.samples == 49 and item.exact == 49
    for frame in (1, 25):
        assert status_display.ghost_at_frame(demo, frame) is None
