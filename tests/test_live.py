"""The live link (looprig/live/) through the real ``dynamixel-sdk`` against the emulated bus
(tests/dxl_emulator.py): every packet within the limits, a timeline jump as a limited move of
the closed-form duration, the stop within one period, the port pulled mid-stream, and the
servos checked before the first packet."""

import math
import re
import time

import numpy as np
import pytest
from dxl_emulator import SYNC_WRITE, TORQUE_ENABLE, EmulatedBus, Servo
from looprig.core.curves.actuator_curves import ActuatorCurves
from looprig.core.export import write_json

from looprig import live
from looprig.cli import main
from looprig.servo_bus import PlayError

pytest.importorskip("dynamixel_sdk")
pytest.importorskip("ruckig")

RATE = 100.0  # packets per second
VELOCITY, ACCELERATION = 2.0, 20.0  # rad/s, rad/s^2
JUMP = np.array([1.2, -0.8])  # rad: where frame 90 and later are


def clip(seconds=1.0, amplitude=0.3) -> ActuatorCurves:
    """Two servos (ids 1, 2) on a 0.5 Hz sine and cosine at RATE, within the limits
    (peak 0.94 rad/s and 3.0 rad/s^2)."""
    t = np.arange(round(seconds * RATE) + 1) / RATE
    values = amplitude * np.column_stack([np.sin(np.pi * t), np.cos(np.pi * t) - 1.0])
    return ActuatorCurves(
        t,
        values,
        ("hip", "knee"),
        velocity_limit=VELOCITY,
        acceleration_limit=ACCELERATION,
        hardware_ids=(1, 2),
    )


def jump_source(frame, payload=None):
    """Rest at zero before frame 90, at JUMP from it on."""
    return JUMP * (frame >= 90)


def goals(snapshot) -> tuple[np.ndarray, np.ndarray]:
    """(W,) times [s, monotonic] and (W, 2) ticks of every Goal Position sync write."""
    writes = [p for p in snapshot["packets"] if "goals" in p]
    return np.array([p["t"] for p in writes]), np.array([[p["goals"][1], p["goals"][2]] for p in writes])


def servos_at(ticks):
    return [Servo(k + 1, position=int(t)) for k, t in enumerate(ticks)]


def test_a_played_clip_streams_at_the_rate_with_every_packet_within_the_limits():
    curves = clip(seconds=1.5)
    motors = live.LiveMotors.of(curves)
    source = live.curve_source(curves)
    start = motors.ticks(curves.values[0])
    with EmulatedBus(servos_at(start)) as bus:
        link = live.LiveLink(motors, source, bus.port, frame_rate=RATE, last_frame=len(curves.times) - 1)
        link.open(0)
        link.play(0)
        time.sleep(1.5 + 0.3)
        report = link.stop()
        snapshot = bus.snapshot()
    assert all(p["crc_ok"] for p in snapshot["packets"])
    times, sent = goals(snapshot)
    np.testing.assert_array_equal(sent, report.sent)  # what the link says it sent reached the servos
    assert live.sent_violations(motors, np.vstack([start, sent]), RATE) == []
    assert abs(np.median(np.diff(times)) - 1 / RATE) < 0.2 / RATE
    np.testing.assert_allclose(sent[-1], motors.ticks(curves.values[-1]), atol=1)
    # once they caught up with the clip (which starts at 0.94 rad/s, the servos at rest),
    # the servos follow it a period behind, give or take the frame clock's jitter: within
    # three periods at the clip's peak speed
    n, peak = round(1.5 * RATE), 0.3 * np.pi
    values = motors.values(sent[:n])
    error = min(np.abs(values[40 + s :] - curves.values[40 : n - s]).max() for s in range(4))
    assert error < 3 * peak / RATE


def test_a_timeline_jump_becomes_a_limited_move_of_the_time_optimal_duration():
    """Rest to rest over d = 1.2 rad with v = 2 rad/s and a = 20 rad/s^2 (d > v^2/a): the
    fastest move takes d/v + v/a = 0.7 s, both motors synchronised to the longer one."""
    motors = live.LiveMotors.of(clip())
    with EmulatedBus(servos_at(motors.ticks([0.0, 0.0]))) as bus:
        link = live.LiveLink(motors, jump_source, bus.port, frame_rate=RATE)
        link.open(0)
        time.sleep(0.1)
        link.seek(90)
        time.sleep(0.2)
        deadline = time.monotonic() + 5.0  # 0.7 s of packets, however loaded the machine
        while link.status.lag_s > 0.0 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.1)
        assert link.status.lag_s == 0.0 and link.status.frame == 90
        report = link.stop()
    before = int(np.flatnonzero(np.all(report.sent == report.sent[0], axis=1))[-1])
    arrived = int(np.flatnonzero(np.any(report.sent != motors.ticks(JUMP), axis=1))[-1]) + 1
    duration = (arrived - before) / RATE
    assert abs(duration - (1.2 / VELOCITY + VELOCITY / ACCELERATION)) <= 1.5 / RATE
    assert live.sent_violations(motors, report.sent, RATE) == []
    speed = np.abs(np.diff(motors.values(report.sent)[:, 0])).max() * RATE
    assert 0.95 * VELOCITY < speed <= VELOCITY + RATE * 2 * math.pi / 4096  # at the limit, not past it


@pytest.mark.parametrize(("on_stop", "torque"), [("hold", 1), ("torque-off", 0)])
def test_the_stop_takes_effect_within_one_period_mid_move(on_stop, torque):
    motors = live.LiveMotors.of(clip())
    settings = live.LiveSettings(rate=RATE, on_stop=on_stop)
    with EmulatedBus(servos_at(motors.ticks([0.0, 0.0]))) as bus:
        link = live.LiveLink(motors, jump_source, bus.port, settings=settings, frame_rate=RATE)
        link.open(90)
        time.sleep(0.3)  # mid-move (it takes 0.7 s)
        assert link.status.lag_s > 0.2
        report = link.stop()
        time.sleep(0.05)
        snapshot = bus.snapshot()
    period = 1 / RATE
    assert report.stopped - report.stop_requested <= period
    times, _ = goals(snapshot)
    assert times.max() <= report.stop_requested + period
    offs = [p for p in snapshot["packets"] if p.get("sync_write") == (TORQUE_ENABLE, {1: [0], 2: [0]})]
    assert len(offs) == (1 if on_stop == "torque-off" else 0)
    assert all(p["t"] <= report.stop_requested + period for p in offs)
    assert [s["torque"] for s in snapshot["servos"].values()] == [torque, torque]


def test_a_port_pulled_mid_stream_ends_the_stream_with_one_clear_line():
    curves = clip(seconds=3.0)
    motors = live.LiveMotors.of(curves)
    with EmulatedBus(servos_at(motors.ticks(curves.values[0]))) as bus:
        link = live.LiveLink(motors, live.curve_source(curves), bus.port, frame_rate=RATE)
        link.open(0)
        link.play(0)
        time.sleep(0.3)
        before = len(bus.unplug())
        deadline = time.monotonic() + 2.0
        while link.running and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not link.running and link.status.error
        with pytest.raises(live.PortLostError) as lost:
            link.stop()
    message = str(lost.value)
    assert message.startswith(f"{bus.port}: the servo port disappeared after ") and "\n" not in message
    assert before > 0 and all(p["crc_ok"] for p in bus.snapshot()["packets"])


@pytest.mark.parametrize(
    ("servo", "message"),
    [
        (Servo(2, model=12), "model number 12 is not an X-series servo"),
        (Servo(2, mode=4), "Operating Mode(11) is 4"),
    ],
)
def test_servos_are_pinged_and_checked_before_the_first_packet(servo, message):
    motors = live.LiveMotors.of(clip())
    with EmulatedBus([Servo(1), servo]) as bus:
        link = live.LiveLink(motors, jump_source, bus.port, frame_rate=RATE)
        with pytest.raises(PlayError, match=message.replace("(", r"\(").replace(")", r"\)")):
            link.open(0)
        snapshot = bus.snapshot()
    assert not any(p["instruction"] == SYNC_WRITE for p in snapshot["packets"])
    assert all(s["torque"] == 0 for s in snapshot["servos"].values())


def test_motors_without_limits_get_the_documented_defaults_and_say_so():
    curves = ActuatorCurves(np.arange(3) / RATE, np.zeros((3, 1)), ("yaw",), hardware_ids=(7,))
    motors = live.LiveMotors.of(
        curves, settings=live.LiveSettings(default_velocity=0.5, default_acceleration=5.0)
    )
    assert motors.defaulted == ("yaw",) and motors.ids == (7,)
    np.testing.assert_allclose([motors.velocity[0], motors.acceleration[0]], [0.5, 5.0])
    # position mode: the range is what one turn of ticks covers around the zero tick 2048
    np.testing.assert_allclose(
        [motors.lower[0], motors.upper[0]], np.array([-2048, 2047]) * 2 * math.pi / 4096
    )


def test_play_live_streams_a_file_too_fast_for_its_limits_within_them(tmp_path, capsys):
    """A 1 s clip asking 2.4 rad/s of servos limited to 2 rad/s: `play` refuses it, `play --live`
    plays it within the limits (behind the clip where it asks too much) and says both."""
    t = np.arange(round(RATE) + 1) / RATE
    values = np.column_stack([0.75 * np.sin(np.pi * t), 0.2 * np.sin(np.pi * t)])
    curves = ActuatorCurves(
        t,
        values,
        ("hip", "knee"),
        velocity_limit=VELOCITY,
        acceleration_limit=ACCELERATION,
        hardware_ids=(1, 2),
    )
    path = tmp_path / "fast.json"
    write_json(curves, path, allow_violations=True)
    motors = live.LiveMotors.of(curves)
    with EmulatedBus(servos_at(motors.ticks(values[0]))) as bus:
        assert main(["play", str(path), "--port", bus.port]) == 3
        assert main(["play", str(path), "--port", bus.port, "--live", "--rate", str(RATE)]) == 0
        snapshot = bus.snapshot()
    out, err = capsys.readouterr()
    assert "packets at 100 Hz, every one within the limits" in out
    startup = re.search(r"start-up (\d+\.\d+) s;", out)  # before the first packet
    assert startup and float(startup.group(1)) > 0.0, out
    assert "the clip breaks" in err and "fell behind the clip" in err
    _, sent = goals(snapshot)
    assert live.sent_violations(motors, np.vstack([motors.ticks(values[0]), sent]), RATE) == []
    np.testing.assert_allclose(sent[-1], motors.ticks(values[-1]), atol=1)


def test_without_ruckig_the_link_says_how_to_install_it_before_opening_the_port(monkeypatch, tmp_path):
    monkeypatch.setitem(__import__("sys").modules, "ruckig", None)  # import ruckig raises ImportError
    link = live.LiveLink(live.LiveMotors.of(clip()), jump_source, str(tmp_path / "no-such-port"))
    with pytest.raises(PlayError, match=r"needs the ruckig package \(pip install 'looprig\[live\]'"):
        link.open(0)


def test_a_host_showing_fewer_frames_than_packets_is_followed_without_stopping_between_frames():
    """A host showing 10 frames a second (as Blender plays at its frame rate, below the link's
    100 packets a second): between two frames the servos go on at the clip's speed (1 rad/s
    here) instead of stopping on each frame, and stop on the last one once no next frame comes."""
    fps = 10.0
    motors = live.LiveMotors.of(clip())
    with EmulatedBus(servos_at(motors.ticks([0.0, 0.0]))) as bus:
        link = live.LiveLink(motors, lambda f, p=None: np.array([f / fps, 0.0]), bus.port, frame_rate=fps)
        link.open(0)
        start = time.monotonic()
        for frame in range(1, 31):  # three seconds shown frame by frame, as the handler does
            time.sleep(max(0.0, start + frame / fps - time.monotonic()))
            link.seek(frame)
        time.sleep(0.5)
        report = link.stop()
    hip = motors.values(report.sent)[:, 0]
    speed = np.diff(hip) * RATE
    shown = (report.sent_at[1:] > start + 0.5) & (report.sent_at[1:] < start + 3.0)
    # never slowing between frames (stopping on each would dip to about 0.3 rad/s), at the
    # clip's speed on the whole; a frame the host shows late (this test's own sleep, on a busy
    # machine) is caught up within a few ticks per period (once 3.5 ticks, 1.53 rad/s)
    assert speed[shown].min() > 0.75 and abs(speed[shown].mean() - 1.0) < 0.05
    assert speed[shown].max() < 2.0
    assert abs(hip[-1] - 30 / fps) < 2 * math.pi / 4096 and abs(speed[-5:]).max() < 0.01


def test_play_live_solves_each_frame_of_a_clip_as_it_plays(capsys):
    """The demo's dancer and groove (8 servos, ids 1-8, 3.1 rad/s and 30 rad/s^2), the servos
    at the start pose: every frame the link plays is solved by the per-frame solver; the
    servos end on the last frame's solution (solved here by a solver of its own), every
    packet within the limits."""
    from looprig.demo import CLIP_FILE, MAP_FILE, demo_inputs

    mechanism, samples, mapping, _ = demo_inputs()
    solver = live.FrameSolver(mechanism, mapping, samples)
    motors = live.LiveMotors.of(solver.curves, solver.dynamixel)
    start = motors.ticks(solver.actuators)
    last = solver(solver.frames - 1)
    assert motors.ids == tuple(range(1, 9))
    with EmulatedBus([Servo(i, position=int(t)) for i, t in zip(motors.ids, start, strict=True)]) as bus:
        command = ["play", "dancer", "--live", "--tracks", str(CLIP_FILE), "--map", str(MAP_FILE)]
        assert main([*command, "--port", bus.port]) == 0
        snapshot = bus.snapshot()
    assert "every one within the limits" in capsys.readouterr().out
    final = [p["goals"] for p in snapshot["packets"] if "goals" in p][-1]
    np.testing.assert_allclose([final[i] for i in motors.ids], motors.ticks(last), atol=1)


def test_a_frame_solves_to_the_same_pose_whichever_frame_came_before():
    """The demo's dancer: after the warm-up (every frame solved once, in order, each one's state
    its seed) a frame reached by a 90-frame jump, backwards or forwards, is the one the warm-up
    solved (to the solver's tolerance: the solve starts at its seed); targets moved 5 mm are
    solved from the frame's seed, which then holds the new answer."""
    from looprig.core import IKTargets

    from looprig.demo import demo_inputs

    mechanism, samples, mapping, _ = demo_inputs()
    solver = live.FrameSolver(mechanism, mapping, samples, frame_start=10)
    assert solver.seeds is None
    solver.warm_up()
    assert solver.seeds.shape[0] == solver.frames > 100
    warmed = solver.seed_actuators.copy()
    for frame in (100, 10, 100, 10 + solver.frames - 1, 100):
        np.testing.assert_allclose(solver(frame), warmed[frame - 10], atol=1e-9)
    np.testing.assert_allclose(solver(-5), warmed[0], atol=1e-9)  # clamped to the clip
    positions, rotations, com = solver.targets
    moved = IKTargets(positions[90] + 0.005, rotations[90], None if com is None else com[90])
    values = solver(100, moved)
    assert np.abs(values - warmed[90]).max() > 1e-3
    np.testing.assert_allclose(solver.seed_actuators[90], values)
