"""The live link in Blender: the real add-on in bpy streaming the four-bar demo's crank to an
emulated servo (tests/dxl_emulator.py through the real dynamixel-sdk) while the timeline is
scrubbed: each frame solved from the targets (or read from the bake) reaches the servo within
its limits; Esc (the monitor's event handler: a headless Blender has no event loop to send a
key through), the Stop button and opening another file stop it within a period; a pulled port
is reported in one line; the animator's keys are untouched."""

import sys
import time
from pathlib import Path

import bpy
import numpy as np
import pytest
from helpers import fails, snapshot

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the emulator, beside tests/test_play.py
from dxl_emulator import EmulatedBus, Servo

from blender_addon import bake, live_link
from blender_addon.operators_robot import checked_model
from looprig import live

pytest.importorskip("dynamixel_sdk")
pytest.importorskip("ruckig")


def goals(snapshot_) -> np.ndarray:
    """(W,) Goal Position ticks the crank's servo (id 1) received, in order."""
    return np.array([p["goals"][1] for p in snapshot_["packets"] if "goals" in p])


def settle(link, seconds=5.0):
    """Wait until the link's move has ended (lag 0) and one more period went out."""
    deadline = time.monotonic() + seconds
    time.sleep(0.05)
    while link.status.lag_s > 0.0 and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.05)


def baked_ticks(context, frame: float) -> int:
    """The crank's baked value at scene ``frame`` as a Goal Position tick (extended position)."""
    model = checked_model(context)
    curves = bake.read_baked_curves(context, model)
    record = bake.bake_record(bake.baked_root(model.record.name))
    value = live.curve_source(curves, record["frame_start"], record["fps"])(frame)
    return int(live.LiveMotors.of(curves, bake.dynamixel_settings(model)).ticks(value)[0])


@pytest.mark.parametrize("source", ["SOLVE", "BAKED"])
def test_scrubbing_streams_each_frame_to_the_servo_within_its_limits(demo, source):
    """Three frames played, then a jump to frame 30: the servo ends on that frame's value (the
    per-frame solve equals the retarget's exact answer to a tick: it starts from the frame's
    own state, solved when the link started, so the four-bar's crank keeps the clip's
    assembly, 4.15 rad, not the loop's other one nearest frame 4's pose, 0.81 rad), having got
    there by packets within the velocity and acceleration limits; the animator's keys and the
    scene are as they were."""
    last = 30
    context, scene = bpy.context, bpy.context.scene
    assert bpy.ops.looprig.retarget() == {"FINISHED"}  # bakes: the reference values
    scene.frame_set(1)
    before = snapshot(context)
    start = baked_ticks(context, 1)
    with EmulatedBus([Servo(1, mode=4, position=start)]) as bus:
        settings = scene.looprig_live
        settings.port, settings.source = bus.port, source
        assert bpy.ops.looprig.live_start() == {"FINISHED"}
        link = live_link._Session.link
        assert link.running and "live on" in settings.status and "(start-up " in settings.status
        for frame in (2, 3, 4, last):  # played a few frames, then a jump
            scene.frame_set(frame)
            time.sleep(0.03)
        settle(link)
        assert link.status.frame == last and "lag 0.000 s" in live_link.status_line()
        motors = link.motors
        assert bpy.ops.looprig.live_stop() == {"FINISHED"}
        sent = goals(bus.snapshot())
    assert not live_link.running() and "stopped after" in settings.status
    assert abs(sent[-1] - baked_ticks(context, last)) <= 1
    assert live.sent_violations(motors, np.r_[start, sent][:, None], settings.rate) == []
    scene.frame_set(1)
    assert snapshot(context) == before


@pytest.mark.parametrize(("on_stop", "torque"), [("hold", 1), ("torque-off", 0)])
def test_esc_stops_the_link_within_one_period(demo, on_stop, torque):
    context, scene = bpy.context, bpy.context.scene
    with EmulatedBus([Servo(1, mode=4, position=2048)]) as bus:
        settings = scene.looprig_live
        settings.port, settings.on_stop = bus.port, on_stop
        assert bpy.ops.looprig.live_start() == {"FINISHED"}
        link = live_link._Session.link
        scene.frame_set(40)  # a long move under the default acceleration
        time.sleep(0.2)
        assert link.status.lag_s > 0.0
        assert "PASS_THROUGH" in live_link.monitor_event(context, "ESC", "PRESS")  # playback stops too
        report = link.report()
        time.sleep(0.05)
        state = bus.snapshot()
    assert not live_link.running()
    assert report.stopped - report.stop_requested <= 1 / settings.rate
    times = [p["t"] for p in state["packets"] if "goals" in p]
    assert max(times) <= report.stop_requested + 1 / settings.rate
    assert state["servos"][1]["torque"] == torque


def test_opening_another_file_stops_the_link(demo):
    scene = bpy.context.scene
    with EmulatedBus([Servo(1, mode=4, position=2048)]) as bus:
        scene.looprig_live.port, scene.looprig_live.on_stop = bus.port, "torque-off"
        assert bpy.ops.looprig.live_start() == {"FINISHED"}
        link = live_link._Session.link
        bpy.ops.wm.read_homefile(use_empty=True)
        assert not live_link.running() and not link.running
        assert bus.snapshot()["servos"][1]["torque"] == 0
    assert live_link.on_frame not in bpy.app.handlers.frame_change_post


def test_a_pulled_port_is_reported_in_one_line(demo):
    context, scene = bpy.context, bpy.context.scene
    with EmulatedBus([Servo(1, mode=4, position=2048)]) as bus:
        scene.looprig_live.port = bus.port
        assert bpy.ops.looprig.live_start() == {"FINISHED"}
        link = live_link._Session.link
        time.sleep(0.1)
        bus.unplug()
        deadline = time.monotonic() + 2.0
        while link.running and time.monotonic() < deadline:
            time.sleep(0.02)
        assert live_link.monitor_event(context, "TIMER", "NOTHING") == {"FINISHED"}
    status = scene.looprig_live.status
    assert not live_link.running()
    assert status.startswith(f"live link stopped: {bus.port}: the servo port disappeared after ")
    assert "\n" not in status


def test_a_link_that_cannot_start_says_why_and_leaves_nothing_running(demo, tmp_path):
    scene = bpy.context.scene
    scene.looprig_live.port = ""
    assert "give the servos' serial port" in fails(bpy.ops.looprig.live_start)
    scene.looprig_live.port = str(tmp_path / "no-such-port")
    assert "cannot open" in fails(bpy.ops.looprig.live_start) and not live_link.running()
    with EmulatedBus([Servo(1, mode=3)]) as bus:  # the bake's extended position mode is 4
        scene.looprig_live.port = bus.port
        message = fails(bpy.ops.looprig.live_start)
    assert "Operating Mode(11) is 3" in message and not live_link.running()
    assert scene.looprig_live.status == f"live link not started: {message.removeprefix('Error: ').strip()}"
    assert live_link.on_frame not in bpy.app.handlers.frame_change_post


def test_the_scene_sound_travels_with_the_json_export(demo, tmp_path):
    """A sound strip starting at frame 13 of a 24 fps scene whose bake starts at frame 1 plays
    its first sample 0.5 s into the exported clip; a muted strip is no sound."""
    import soundfile
    from looprig.core.export.curves_json import read_audio

    assert bpy.ops.looprig.retarget() == {"FINISHED"}
    scene = bpy.context.scene
    assert scene.render.fps == 24 and scene.render.fps_base == 1
    wav = tmp_path / "beat.wav"
    soundfile.write(str(wav), np.zeros(4800, np.float32), 48000)
    exported = tmp_path / "clip.json"

    def export(path):  # the demo's clip breaks its crank's velocity limit (limit_mode report)
        return bpy.ops.looprig.export_curves(filepath=str(path), format="JSON", allow_violations=True)

    assert export(exported) == {"FINISHED"}
    assert read_audio(exported) is None
    strip = scene.sequence_editor_create().strips.new_sound("beat", str(wav), 1, 13)
    assert export(exported) == {"FINISHED"}
    assert read_audio(exported) == {"path": str(wav), "offset_s": 0.5}
    strip.mute = True
    assert export(exported) == {"FINISHED"}
    assert read_audio(exported) is None


def test_closing_blender_stops_the_link(demo):
    """What the add-on registers with atexit for when Blender closes (a headless test cannot
    close its own Blender)."""
    scene = bpy.context.scene
    with EmulatedBus([Servo(1, mode=4, position=2048)]) as bus:
        scene.looprig_live.port, scene.looprig_live.on_stop = bus.port, "torque-off"
        assert bpy.ops.looprig.live_start() == {"FINISHED"}
        link = live_link._Session.link
        live_link._stop_on_exit()
        assert not live_link.running() and not link.running
        assert bus.snapshot()["servos"][1]["torque"] == 0


def test_the_panel_draws_the_settings_then_the_stop_button_and_the_lag(demo):
    """Drawn against test_panels' recording layout (panels need a window to draw)."""
    from test_panels import _draw

    log = _draw(live_link.LOOPRIG_PT_live, bpy.context)
    assert ("operator", "looprig.live_start") in log
    assert {("prop", p) for p in ("port", "baud", "rate", "source", "on_stop")} <= set(log)
    with EmulatedBus([Servo(1, mode=4, position=2048)]) as bus:
        bpy.context.scene.looprig_live.port = bus.port
        assert bpy.ops.looprig.live_start() == {"FINISHED"}
        deadline = time.monotonic() + 10.0  # the first packet, however loaded the machine
        while live_link._Session.link.status.packets == 0 and time.monotonic() < deadline:
            time.sleep(0.005)
        log = _draw(live_link.LOOPRIG_PT_live, bpy.context)
        assert bpy.ops.looprig.live_stop() == {"FINISHED"}
    assert ("operator", "looprig.live_stop") in log
    assert any(entry[0] == "label" and entry[1].startswith("frame 1.0, lag ") for entry in log)
