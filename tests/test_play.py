"""``looprig play`` through the real ``dynamixel-sdk`` against the emulated bus (tests/dxl_emulator.py).

The emulator checks every packet's CRC with its own CRC-16; these tests check
what reached the servos: the homing ramp's speed, the goals streamed, the state
after the end, an error or Ctrl-C, and that a refused curve sends nothing; and
that ``--record`` writes exactly the present positions the servos answered.
"""

import math
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from dxl_emulator import SYNC_READ, SYNC_WRITE, EmulatedBus, Servo, crc16, packet
from looprig.core.curves.actuator_curves import ActuatorCurves
from looprig.core.export import (
    DXL_TICKS_PER_REV,
    DynamixelMotor,
    DynamixelSettings,
    read_written,
    write_dynamixel_json,
    write_json,
)

from looprig import play, servo_bus
from looprig.cli import main

pytest.importorskip("dynamixel_sdk")

RATE = 50.0
VELOCITY_LIMIT = 3.0  # rad/s


def curves_file(tmp_path, seconds=1.0, amplitude=0.5, name="clip.dynamixel.json", settings=None):
    """Two servos (ids 1 and 2) on a sine and a cosine at RATE; peak speed amplitude * pi rad/s."""
    t = np.arange(round(seconds * RATE) + 1) / RATE
    values = np.column_stack([amplitude * np.sin(np.pi * t), 0.6 * amplitude * np.cos(np.pi * t)])
    curves = ActuatorCurves(t, values, ("hip", "knee"), velocity_limit=VELOCITY_LIMIT, hardware_ids=(1, 2))
    path = tmp_path / name
    write_dynamixel_json(curves, path, settings, allow_violations=True)
    return path


def goals_sent(snapshot) -> np.ndarray:
    """(W, 2) Goal Position ticks of every sync write, in order."""
    writes = [p["goals"] for p in snapshot["packets"] if p["instruction"] == SYNC_WRITE]
    return np.array([[w[1], w[2]] for w in writes])


def test_the_crc_is_the_protocols():
    """The e-manual's ping of id 1 is FF FF FD 00 01 03 00 01 19 4E."""
    assert packet(1, 0x01, b"") == bytes.fromhex("FFFFFD0001030001194E")
    assert crc16(bytes.fromhex("FFFFFD00010300 01".replace(" ", ""))) == 0x4E19


def test_a_clip_plays_with_every_packet_valid_homing_within_limits_and_servos_holding(tmp_path, capsys):
    path = curves_file(tmp_path)
    plan = play.load_plan(path)
    with EmulatedBus([Servo(1, position=1500), Servo(2, position=2600)]) as bus:
        assert main(["play", str(path), "--port", bus.port, "--settle", "0.1"]) == 0
        snapshot = bus.snapshot()
    out = capsys.readouterr().out
    packets = snapshot["packets"]
    assert packets and all(p["crc_ok"] for p in packets)
    goals = goals_sent(snapshot)
    homing, clip = goals[: -len(plan.ticks)], goals[-len(plan.ticks) :]
    np.testing.assert_array_equal(clip, plan.ticks)  # the file's ticks, every frame, in order
    # homing: from the present position, each step within homing_fraction x the velocity limit
    limit_ticks = 0.25 * VELOCITY_LIMIT * 4096 / (2 * math.pi) / RATE
    steps = np.abs(np.diff(np.vstack([[1500, 2600], homing]), axis=0))
    assert steps.max() <= limit_ticks + 1 and steps.max() > 0.5 * limit_ticks
    np.testing.assert_array_equal(homing[-1], plan.ticks[0])
    # torque on before the first goal, and held at the end on the last sample
    first_write = next(i for i, p in enumerate(packets) if p["instruction"] == SYNC_WRITE)
    torque_on = [p for p in packets[:first_write] if p.get("write", (None,))[0] == 64]
    assert sorted(p["id"] for p in torque_on) == [1, 2]
    for k, dxl_id in enumerate((1, 2)):
        servo = snapshot["servos"][dxl_id]
        assert servo["torque"] == 1 and servo["goal"] == plan.ticks[-1, k]
    assert "frames sent" in out and "servos hold the last goal" in out


def test_tracking_report_measures_the_emulated_lag(tmp_path):
    """A first-order lag of tau = 20 ms, read back right after each goal: tau plus up to two frames."""
    path = curves_file(tmp_path, seconds=1.0)
    plan = play.load_plan(path)
    with EmulatedBus(
        [Servo(1, position=int(plan.ticks[0, 0])), Servo(2, position=int(plan.ticks[0, 1]))]
    ) as bus:
        report = play.play(plan, bus.port, settle=0.05)
    assert report.frames_sent == len(plan.ticks) and report.samples > 0.8 * len(plan.ticks)
    assert np.all(report.lag_s >= bus.tau - 1 / RATE) and np.all(report.lag_s <= bus.tau + 2 / RATE)
    peak_step = np.abs(np.diff(plan.ticks, axis=0)).max(axis=0) / plan.ticks_per_unit  # rad per frame
    assert np.all(report.rms_error < peak_step)


def test_a_limit_breaking_curve_is_refused_before_any_packet(tmp_path, capsys):
    path = curves_file(tmp_path, amplitude=1.5)  # peak 1.5 pi = 4.7 rad/s > 3 rad/s
    with EmulatedBus([Servo(1), Servo(2)]) as bus:
        assert main(["play", str(path), "--port", bus.port]) == 3
        assert bus.snapshot()["packets"] == []
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "refusing to play" in err and "velocity" in err


def test_ticks_beyond_the_servo_range_are_refused(tmp_path, capsys):
    """3.5 rad from the centre tick 2048 is 4330 ticks: past position mode's 4095."""
    t = np.arange(51) / RATE
    curves = ActuatorCurves(t, 3.5 + 0.1 * t[:, None], ("crank",), hardware_ids=(1,))
    path = tmp_path / "c.json"
    write_json(curves, path)
    assert main(["play", str(path), "--dry-run"]) == 3
    err = capsys.readouterr().err
    assert "refusing to play" in err and "tick_range" in err and "limit 4095 tick" in err


@pytest.mark.parametrize(
    ("servo", "message"),
    [
        (Servo(2, model=12), "model number 12 is not an X-series servo"),
        (Servo(2, mode=4), "Operating Mode(11) is 4, the curves need 3"),
    ],
)
def test_wrong_model_or_mode_stops_before_the_torque_is_on(tmp_path, capsys, servo, message):
    path = curves_file(tmp_path)
    with EmulatedBus([Servo(1), servo]) as bus:
        assert main(["play", str(path), "--port", bus.port]) == 2
        snapshot = bus.snapshot()
    assert message in capsys.readouterr().err
    assert all(s["torque"] == 0 for s in snapshot["servos"].values())
    assert not any(p["instruction"] == SYNC_WRITE for p in snapshot["packets"])


def test_a_missing_servo_and_a_missing_port_are_one_line_errors(tmp_path, capsys):
    path = curves_file(tmp_path)
    with EmulatedBus([Servo(1)]) as bus:
        assert main(["play", str(path), "--port", bus.port]) == 2
    err = capsys.readouterr().err
    assert err.startswith("looprig: error: servo 2: ping:") and len(err.strip().splitlines()) == 1
    assert main(["play", str(path), "--port", str(tmp_path / "no-such-port")]) == 2
    assert "cannot open" in capsys.readouterr().err


def test_dry_run_prints_the_plan_and_opens_nothing(tmp_path, capsys):
    path = curves_file(tmp_path)
    assert main(["play", str(path), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "51 sync writes of Goal Position(116) at 50 Hz" in out and "stop: hold the last goal" in out


@pytest.mark.parametrize(("on_stop", "torque"), [("hold", 1), ("torque-off", 0)])
def test_ctrl_c_leaves_the_servos_in_the_documented_state(tmp_path, on_stop, torque):
    path = curves_file(tmp_path, seconds=10.0, amplitude=0.2)
    plan = play.load_plan(path)
    start = [Servo(i + 1, position=int(plan.ticks[0, i])) for i in range(2)]
    with EmulatedBus(start) as bus:
        command = [
            sys.executable,
            "-m",
            "looprig.cli",
            "play",
            str(path),
            "--port",
            bus.port,
            "--on-stop",
            on_stop,
            "--settle",
            "0.05",
            "--quiet",
        ]
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 30
        while len(goals_sent(bus.snapshot())) < 40 and time.monotonic() < deadline:
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
        time.sleep(0.1)
        snapshot = bus.snapshot()
    assert process.returncode == 130, err
    assert err.strip().splitlines()[-1].startswith("looprig: interrupted; the servos")
    goals = goals_sent(snapshot)
    assert 40 <= len(goals) < len(plan.ticks)  # stopped mid-clip
    for k, dxl_id in enumerate((1, 2)):
        servo = snapshot["servos"][dxl_id]
        assert servo["torque"] == torque and servo["goal"] == goals[-1, k]
    assert all(p["crc_ok"] for p in snapshot["packets"])


def test_the_emulator_rejects_a_packet_with_a_bad_crc():
    """A ping whose CRC is off by one gets a CRC-error status (0x03) and is logged as invalid,
    so the all-valid check of the playback tests can fail."""
    import serial

    good = packet(1, 0x01, b"")
    bad = good[:-2] + bytes([good[-2] ^ 0x01, good[-1]])
    with EmulatedBus([Servo(1)]) as bus:
        port = serial.Serial(bus.port, 57600, timeout=1.0)
        port.write(bad)
        status = port.read(11)
        port.close()
        snapshot = bus.snapshot()
    assert status[:4] == b"\xff\xff\xfd\x00" and status[7] == 0x55 and status[8] == 0x03
    assert [p["crc_ok"] for p in snapshot["packets"]] == [False]


@pytest.mark.parametrize("suffix", [".json", ".csv"])
def test_record_writes_the_present_positions_the_servos_answered(tmp_path, capsys, suffix):
    """The knee servo is mounted reversed with its zero at tick 1800, so only the player's own
    conversion, value = direction * (tick - zero) * 2 pi / 4096, gives the emulator's answers."""
    knee = DynamixelMotor(zero_offset_ticks=1800, direction=-1)
    path = curves_file(tmp_path, settings=DynamixelSettings(mode="position", motors={"knee": knee}))
    plan = play.load_plan(path)
    record = tmp_path / f"record{suffix}"
    start = [Servo(i + 1, position=int(plan.ticks[0, i])) for i in range(2)]
    with EmulatedBus(start) as bus:
        code = main(["play", str(path), "--port", bus.port, "--settle", "0.05", "--record", str(record)])
        snapshot = bus.snapshot()
    assert code == 0, capsys.readouterr().err
    assert f"recorded {len(plan.ticks)} frames" in capsys.readouterr().out
    # the clip's packets: each of its F goal writes followed by its Present Position read,
    # tried again (at most twice) where the busy bus lost the answer; the last one counts
    frames = []
    for p in snapshot["packets"]:
        if p["instruction"] == SYNC_WRITE:
            frames.append([])
        elif p["instruction"] == SYNC_READ and frames:
            frames[-1].append(p)
    frames = frames[-len(plan.ticks) :]
    assert len(frames) == len(plan.ticks) and all(1 <= len(reads) <= 3 for reads in frames)
    answered = [[r["present"] for r in reads if "present" in r][-1] for reads in frames]
    ticks = np.array([[a[1], a[2]] for a in answered], dtype=float)  # (F, 2)
    per_rad = DXL_TICKS_PER_REV / (2 * math.pi)
    expected = np.column_stack([(ticks[:, 0] - 2048) / per_rad, -(ticks[:, 1] - 1800) / per_rad])
    recorded = read_written(record).curves
    np.testing.assert_allclose(recorded.values, expected, rtol=0, atol=1e-9)
    asked = plan.asked
    np.testing.assert_array_equal(recorded.times, asked.times)
    assert recorded.names == asked.names and recorded.units == asked.units
    np.testing.assert_array_equal(recorded.velocity_limit, asked.velocity_limit)
    assert not np.allclose(recorded.values, asked.values, atol=1e-3)  # the emulated lag shows
    assert main(["check", str(record)]) == 0
    assert "within limits" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ("record.txt", "--record writes a looprig curves .csv or .json, not '.txt'"),
        ("no-such-folder/record.csv", "does not exist"),
        ("clip.json", "input"),
    ],
)
def test_a_bad_record_path_is_refused_before_any_packet(tmp_path, capsys, record, message):
    path = curves_file(tmp_path, name="clip.json")
    with EmulatedBus([Servo(1), Servo(2)]) as bus:
        assert main(["play", str(path), "--port", bus.port, "--record", str(tmp_path / record)]) == 2
        assert bus.snapshot()["packets"] == []
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and message in err and record in err


def test_a_recording_with_a_lost_read_back_is_not_written(tmp_path):
    """Frame 7's status packet never came: the file would have a hole, so it is refused."""
    path = curves_file(tmp_path)
    plan = play.load_plan(path)
    read = [(f, plan.ticks[f]) for f in range(len(plan.ticks)) if f != 7]
    report = play.tracking_report(plan, read, late=0, missed=1)
    record = tmp_path / "record.json"
    with pytest.raises(play.PlayError, match=r"record.json: not written: 1 of 51 frames .* frame 7"):
        play.write_record(plan, report, record)
    assert not record.exists()


def test_record_reads_every_frame_even_when_the_frames_leave_no_spare_time(tmp_path, monkeypatch):
    """Each goal write made to take 0.6 of a period: a plain playback reads back (almost) never,
    a recording after every frame."""
    path = curves_file(tmp_path, seconds=0.5)
    plan = play.load_plan(path)
    send = servo_bus.DynamixelBus.send_goals

    def slow_send(bus, ticks):
        send(bus, ticks)
        time.sleep(0.6 / RATE)

    monkeypatch.setattr(servo_bus.DynamixelBus, "send_goals", slow_send)
    start = [Servo(i + 1, position=int(plan.ticks[0, i])) for i in range(2)]
    with EmulatedBus(start) as bus:
        plain = play.play(plan, bus.port, settle=0.02)
        recorded = play.play(plan, bus.port, settle=0.02, record=True)
    assert plain.samples < len(plan.ticks) // 2
    np.testing.assert_array_equal(recorded.read_frames, np.arange(len(plan.ticks)))
