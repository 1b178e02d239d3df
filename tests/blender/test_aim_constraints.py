"""Aims in Blender (issue 28): Damped Track, Track To and Locked Track constraints on a
tracked object become aims at their (keyed) targets, and an Empty picked by hand in the
Aims panel does too; each gives the aim entry a mapping would say and the same curves
as core given that mapping and the same samples (to 1e-9)."""

import sys
import warnings
from pathlib import Path

import bpy
import numpy as np
import pytest
from conftest import MODELS
from helpers import fails
from looprig.cad_import import save_mechanism
from looprig.core.retarget import AimSpec, RetargetMapping, TrackSamples, retarget
from mathutils import Vector

from blender_addon.operators_retarget import read_inputs, solve

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from test_aim import CENTRE, EYE, circle, neck

FPS = 100


def _import(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert bpy.ops.looprig.import_robot(filepath=str(path)) == {"FINISHED"}
    return bpy.context.scene.looprig.robot


def _empty(name, location=(0.0, 0.0, 0.0)):
    ob = bpy.data.objects.new(name, None)
    bpy.context.scene.collection.objects.link(ob)
    ob.location = location
    return ob


def _keyed(name, points):
    """An Empty keyed at ``points`` (F, 3) [m] on frames 1..F; returns it and the positions
    as Blender keeps them (float32)."""
    ob = _empty(name)
    for f, p in enumerate(points):
        ob.location = tuple(p)
        ob.keyframe_insert("location", frame=f + 1)
    return ob, np.asarray(points, np.float32).astype(float)


def _scene(count):
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = FPS, 1.0
    scene.frame_start, scene.frame_end = 1, count
    return scene


def _row(frame, target, position_weight=(0.0, 0.0, 0.0)):
    """A target row: robot ``frame`` <- ``target``, position weight as given, orientation 1."""
    settings = bpy.context.scene.looprig
    row = settings.targets.add()
    row.frame, row.target = frame, target
    row.position_weight, row.orientation_weight = position_weight, (1.0, 1.0, 1.0)
    return row


def _core(inputs, aims, tracks):
    """Core's retarget of the Blender robot with ``aims`` (AimSpec) on ``tracks`` (name ->
    (F, 3) positions, or (positions, rotations)), at the Blender clip's times and settings."""
    times = inputs.clip.times
    positions, rotations = {}, {}
    for name, value in tracks.items():
        p, R = value if isinstance(value, tuple) else (value, np.tile(np.eye(3), (len(times), 1, 1)))
        positions[name], rotations[name] = p, R
    mapping = RetargetMapping((), aims=tuple(aims), **{k: v for k, v in inputs.mapping.settings().items()})
    return retarget(inputs.model.mechanism, TrackSamples(times, positions, rotations), mapping)


@pytest.fixture
def neck_robot(tmp_path):
    path = save_mechanism(neck(roll=True), tmp_path / "neck.looprig.json")
    return _import(path)


def _same_curves(inputs, aims, tracks, tolerance=1e-9):
    """The Blender retarget's curves against core's with ``aims`` on the same samples."""
    result = solve(inputs)
    reference = _core(inputs, aims, tracks)
    assert result.curves.names == reference.curves.names
    assert np.abs(result.curves.values - reference.curves.values).max() <= tolerance
    return result


def _lean(count):
    """Rotations (F, 3, 3) turning about x by up to 0.5 rad, and the Euler angles keyed."""
    lean = 0.5 * np.sin(2 * np.pi * np.arange(count) / FPS)
    R = np.tile(np.eye(3), (count, 1, 1))
    R[:, 1, 1], R[:, 1, 2], R[:, 2, 1], R[:, 2, 2] = np.cos(lean), -np.sin(lean), np.sin(lean), np.cos(lean)
    return lean, R


def test_damped_track_on_a_tracked_object_is_an_aim_at_its_keyed_target(neck_robot):
    """The rig's head Empty (the row's target) carries a Damped Track at the keyed Empty
    ``look``: the mapping gets the aim (frame eye, axis x, track look), the row keeps its
    position weight and loses its orientation, and the curves are core's for that aim."""
    times, points = circle()
    _scene(len(times))
    look, kept = _keyed("look", points)
    rig = _empty("head_ctrl", tuple(CENTRE + [EYE, 0, 0]))
    c = rig.constraints.new("DAMPED_TRACK")
    c.target, c.track_axis = look, "TRACK_X"
    _row("eye", rig)
    inputs, sources = read_inputs(bpy.context)
    assert inputs.mapping.aims == (AimSpec("eye", (1.0, 0.0, 0.0), track="look"),)
    assert inputs.mapping.targets[0].orientation_weight == (0.0, 0.0, 0.0)
    assert "look" in {s.name for s in sources}
    assert np.array_equal(inputs.samples.positions["look"], kept)
    result = _same_curves(inputs, inputs.mapping.aims, {"look": kept})
    assert result.aim_error.max() < 1e-7
    assert bpy.ops.looprig.retarget() == {"FINISHED"}  # the operator runs it through


def test_track_to_with_the_targets_z_is_an_aim_with_a_tracked_up(neck_robot):
    """Track To (track -Y of the rig, up Z, Target Z) on a rig Empty whose axes are the
    eye's turned 90 degrees about z (the row's offset is -90 degrees): the aim's axis is the eye's x,
    its up the eye's z, towards the keyed target's z as it leans; the roll follows it."""
    times, points = circle()
    _scene(len(times))
    look, kept = _keyed("look", points)
    lean, R = _lean(len(times))
    for f, angle in enumerate(lean):
        look.rotation_euler = (angle, 0.0, 0.0)
        look.keyframe_insert("rotation_euler", frame=f + 1)
    rig = _empty("head_ctrl", tuple(CENTRE + [EYE, 0, 0]))
    c = rig.constraints.new("TRACK_TO")
    c.target, c.track_axis, c.up_axis, c.use_target_z = look, "TRACK_NEGATIVE_Y", "UP_Z", True
    row = _row("eye", rig)
    row.offset_rotation = (0.0, 0.0, -np.pi / 2)  # the rig's -y is the eye's x
    inputs, _ = read_inputs(bpy.context)
    (aim,) = inputs.mapping.aims
    assert np.allclose(aim.axis, (1, 0, 0), atol=1e-7) and np.allclose(aim.up, (0, 0, 1), atol=1e-7)
    assert (aim.track, aim.up_track) == ("look", "look")
    rotations = inputs.samples.rotations["look"]
    assert np.abs(rotations - R).max() < 1e-6
    result = _same_curves(inputs, [aim], {"look": (kept, rotations)})
    roll = result.curves.values[:, result.curves.names.index("roll")]
    assert np.ptp(roll) > 0.5 and result.aim_error.max() < 1e-7


def test_locked_track_is_an_aim_about_its_lock_axis(neck_robot):
    """Locked Track (track X, lock Z): the aim turns about the eye's z; the tilt is left
    where it starts and the pan follows the target's azimuth."""
    times, points = circle()
    _scene(len(times))
    look, kept = _keyed("look", points)
    rig = _empty("head_ctrl", tuple(CENTRE + [EYE, 0, 0]))
    c = rig.constraints.new("LOCKED_TRACK")
    c.target, c.track_axis, c.lock_axis = look, "TRACK_X", "LOCK_Z"
    _row("eye", rig)
    inputs, _ = read_inputs(bpy.context)
    (aim,) = inputs.mapping.aims
    assert aim.lock == (0.0, 0.0, 1.0) and aim.up is None
    result = _same_curves(inputs, [aim], {"look": kept})
    names = result.curves.names
    d = kept - CENTRE
    pan = result.curves.values[:, names.index("pan")]
    assert np.abs(pan - np.arctan2(d[:, 1], d[:, 0])).max() < 1e-7
    assert np.abs(result.curves.values[:, names.index("tilt")]).max() < 1e-5


def test_a_bone_with_damped_track_aims_its_robot_frame(neck_robot):
    """The constraint on a pose bone (tracking its Y, the bone's length) of the rig, the row
    turning the bone's y onto the eye's x: the aim's axis is the eye's x."""
    times, points = circle()
    _scene(len(times))
    look, kept = _keyed("look", points)
    data = bpy.data.armatures.new("rig")
    rig = bpy.data.objects.new("rig", data)
    bpy.context.scene.collection.objects.link(rig)
    bpy.context.view_layer.objects.active = rig
    bpy.ops.object.mode_set(mode="EDIT")
    bone = data.edit_bones.new("head")
    bone.head, bone.tail = tuple(CENTRE), tuple(CENTRE + [0.0, 0.1, 0.0])
    bpy.ops.object.mode_set(mode="OBJECT")
    c = rig.pose.bones["head"].constraints.new("DAMPED_TRACK")
    c.target, c.track_axis = look, "TRACK_Y"
    row = _row("eye", rig)
    row.bone = "head"
    row.offset_rotation = (0.0, 0.0, np.pi / 2)  # the bone's y is the eye's x
    inputs, _ = read_inputs(bpy.context)
    (aim,) = inputs.mapping.aims
    assert np.allclose(aim.axis, (1, 0, 0), atol=1e-7)
    result = _same_curves(inputs, [aim], {"look": kept})
    assert result.aim_error.max() < 1e-7


def test_an_empty_picked_by_hand_in_the_panel(neck_robot):
    """Add Aim with the robot's eye and an Empty selected fills the row; with up Z the aim
    is a Track To's; the curves are core's; no target row is needed."""
    times, points = circle()
    _scene(len(times))
    look, kept = _keyed("look", points)
    for ob in bpy.context.selected_objects:
        ob.select_set(False)
    eye = bpy.data.objects["eye"]
    eye.select_set(True)
    look.select_set(True)
    bpy.context.view_layer.objects.active = look
    assert bpy.ops.looprig.aim_add() == {"FINISHED"}
    item = bpy.context.scene.looprig.aims[0]
    assert (item.frame, item.target) == ("eye", look)
    item.up = "Z"
    inputs, _ = read_inputs(bpy.context)
    assert inputs.mapping.aims == (AimSpec("eye", (1.0, 0.0, 0.0), track="look", up=(0.0, 0.0, 1.0)),)
    assert inputs.mapping.targets == ()
    result = _same_curves(inputs, inputs.mapping.aims, {"look": kept})
    assert result.aim_error.max() < 1e-7
    assert bpy.ops.looprig.aim_remove() == {"FINISHED"} and not len(bpy.context.scene.looprig.aims)


def test_a_bad_aim_is_one_line_and_changes_nothing(neck_robot):
    """An aim without its object, or at a robot part: the retarget fails with one line
    naming the aim and writes nothing."""
    from helpers import snapshot

    _scene(11)
    item = bpy.context.scene.looprig.aims.add()
    item.frame = "eye"
    before = snapshot(bpy.context)
    message = fails(bpy.ops.looprig.retarget)
    assert "aim 1 (eye): pick the object it looks at" in message and "\n" not in message.strip()
    item.target = bpy.data.objects["tilt"]
    assert "aim 1 (eye): 'tilt' is part of the robot" in fails(bpy.ops.looprig.retarget)
    item.target, item.frame = _empty("look", (1.0, 0.0, 0.15)), "nose"
    assert "aim 1 (nose): no robot body or frame 'nose'" in fails(bpy.ops.looprig.retarget)
    assert snapshot(bpy.context)["actions"] == before["actions"]


# ----------------------------------------------------------------------------- Reachy Mini
REACHY = MODELS / "reachy_mini" / "mjcf" / "reachy_mini.xml"


@pytest.mark.skipif(not REACHY.exists(), reason="the shared Reachy Mini model is not here")
def test_reachy_mini_damped_track_rig_gives_the_core_curves():
    """Reachy Mini imported, a head Empty with a Damped Track (X) at an Empty keyed round a
    circle of radius 0.15 m, 0.5 m in front: the curves are core's for the aim alone to
    1e-9, the head's x within 1e-7 rad of the line of sight, yaw and antennas still."""
    _import(REACHY)
    mechanism_head = bpy.data.objects.get("head")
    assert mechanism_head is not None
    times = np.arange(101) / FPS
    w = 2 * np.pi * times
    origin = np.array(mechanism_head.matrix_world.translation)
    points = origin + np.stack([np.full_like(w, 0.5), 0.15 * np.cos(w), 0.15 * np.sin(w)], -1)
    _scene(len(times))
    look, kept = _keyed("look", points)
    rig = _empty("head_ctrl", tuple(origin))
    c = rig.constraints.new("DAMPED_TRACK")
    c.target, c.track_axis = look, "TRACK_X"
    _row("head", rig)
    inputs, _ = read_inputs(bpy.context)
    assert inputs.mapping.aims == (AimSpec("head", (1.0, 0.0, 0.0), track="look"),)
    result = _same_curves(inputs, inputs.mapping.aims, {"look": kept})
    assert result.aim_error.max() < 1e-7
    names = result.curves.names
    for name in ("yaw_body", "left_antenna", "right_antenna"):
        values = result.curves.values[:, names.index(name)]
        assert np.abs(values - values[0]).max() < 1e-9
    assert Vector(tuple(origin)).length > 0


def test_an_aim_out_of_reach_is_named_in_the_frame_status_and_the_warnings(neck_robot):
    """The eye's orientation held by a still Empty (a target row with orientation weights)
    and an aim by hand at a moving one: the two cannot both be met, so the samples are
    unreachable (but where the point passes straight ahead), the frame status stretches
    name ``eye aim`` and the retarget's warning names the aim."""
    from blender_addon import frame_status
    from blender_addon.operators_retarget import unreachable_warnings

    times, points = circle()
    _scene(len(times))
    look, _ = _keyed("look", points)
    still = _empty("still", tuple(CENTRE + [EYE, 0, 0]))
    _row("eye", still)
    item = bpy.context.scene.looprig.aims.add()
    item.frame, item.target = "eye", look
    bpy.context.scene.looprig.limit_mode = "report"
    inputs, _ = read_inputs(bpy.context)
    assert inputs.mapping.targets[0].orientation_weight == (1.0, 1.0, 1.0)  # no constraint: kept
    result = solve(inputs)
    missed = result.aim_miss[:, 0] > inputs.mapping.reach_tolerance
    assert np.array_equal(result.unreachable, missed) and missed.sum() > 90
    frames = inputs.clip.frame_start + result.times * inputs.clip.fps
    status = frame_status.compute_frame_status(result, frames)
    assert len(status.stretches) >= 2 and all("eye aim" in s.targets for s in status.stretches)
    assert status.worst_miss == pytest.approx(max(result.aim_miss.max(), result.position_error.max()))
    lines = unreachable_warnings(inputs, result)
    expected = f"aim 'eye' -> track 'look' out of reach at {missed.sum()} sample(s)"
    assert any(line.startswith(expected) for line in lines)


def test_the_aims_panel_lists_constraint_aims_and_draws_the_picked_ones(neck_robot):
    """The Aims subpanel names every row a constraint aims, lists the aims picked by hand
    (rows with their frame, axis and object) and shows the active one's settings."""
    from test_panels import RecordingLayout, _draw

    from blender_addon import aims

    look = _empty("look", (1.0, 0.0, 0.15))
    rig = _empty("head_ctrl", tuple(CENTRE + [EYE, 0, 0]))
    c = rig.constraints.new("TRACK_TO")
    c.target, c.track_axis, c.up_axis = look, "TRACK_X", "UP_Z"
    _row("eye", rig)
    item = bpy.context.scene.looprig.aims.add()
    item.frame, item.target, item.axis, item.up = "eye", look, "NEGATIVE_Y", "Z"
    log = _draw(aims.LOOPRIG_PT_aims, bpy.context)
    assert ("label", "target 1 eye: Track To X → look, up Z") in log
    assert ("list", "aims") in log and ("prop", "use_target_z") in log and ("prop", "weight") in log
    row = []
    aims.LOOPRIG_UL_aims.draw_item(None, bpy.context, RecordingLayout(row), None, item, 0, None, "", 0)
    assert ("label", "eye -Y  →  look") in row
    c.enabled = False  # a disabled constraint aims nothing
    assert not aims.constraint_lines(bpy.context.scene.looprig)
