"""``looprig check`` reads every writer's output and checks tick ranges (issue 22, item 4).

On d29a55b ``check`` read curves CSV and JSON only: a Dynamixel ticks file or a
C header was not a curves file, and no check saw a tick range.
"""

import dataclasses
import json

import numpy as np
import pytest
from looprig.core.curves.actuator_curves import ActuatorCurves
from looprig.core.export import (
    CHeaderSettings,
    DynamixelSettings,
    quantised_allowance,
    read_written,
    write_c_header,
    write_csv,
    write_dynamixel_csv,
    write_dynamixel_json,
    write_json,
    write_plain_csv,
    written_violations,
)

from looprig.cli import main

RATE = 600.0
WRITERS = {
    "curves.csv": write_csv,
    "curves.plain.csv": write_plain_csv,
    "curves.json": write_json,
    "curves.dynamixel.csv": write_dynamixel_csv,
    "curves.dynamixel.json": write_dynamixel_json,
    "ticks.h": write_c_header,
    "floats.h": lambda curves, path, **kw: write_c_header(curves, path, CHeaderSettings(kind="float"), **kw),
}


def swing(speed: float, seconds: float = 1.0) -> ActuatorCurves:
    """x(t) = (speed / w) sin(w t), w = 4 rad/s, at 600 Hz: peak velocity ``speed``, peak
    acceleration 4 speed; limits 3 rad/s, 30 rad/s^2, range +-1.2 rad."""
    t = np.arange(round(seconds * RATE) + 1) / RATE
    x = speed / 4.0 * np.sin(4.0 * t)
    return ActuatorCurves(
        t, x[:, None], ("knee",), lower=-1.2, upper=1.2, velocity_limit=3.0, acceleration_limit=30.0
    )


def check(capsys, path, *extra):
    code = main(["check", str(path), *extra])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("name", WRITERS)
def test_every_writers_output_within_limits_passes_check_strict(capsys, tmp_path, name):
    """2.9 rad/s against a 3 rad/s limit: within it, and the ticks' rounding (one tick is
    1.5 mrad; at 600 Hz it moves a three-point acceleration by up to 3.7e3 rad/s^2) is no
    violation (d29a55b's `play` refused its own demo's tick file for it)."""
    path = tmp_path / name
    WRITERS[name](swing(2.9), path)
    code, out, err = check(capsys, path, "--strict")
    assert (code, err) == (0, "") and out.strip().endswith("1 actuators, 601 frames: within limits"), out


@pytest.mark.parametrize("name", WRITERS)
def test_every_writers_output_breaking_a_limit_fails_check_strict(capsys, tmp_path, name):
    """4 rad/s against 3 where |cos 4t| > 3/4: two stretches in the first second (recorded,
    and found again on the values)."""
    path = tmp_path / name
    WRITERS[name](swing(4.0), path, allow_violations=True)
    code, out, err = check(capsys, path, "--strict")
    assert code == 3 and "2 limit violation(s)" in err
    assert "actuator 'knee': velocity 4" in out and "beyond limit 3 rad/s" in out


@pytest.mark.parametrize("name", ["curves.dynamixel.json", "curves.dynamixel.csv", "ticks.h"])
def test_check_finds_ticks_out_of_range_even_when_the_file_records_none(capsys, tmp_path, name):
    """A tick file edited by hand: 5000 ticks in position mode (0..4095) at the last frame,
    its record of violations emptied."""
    path = tmp_path / name
    WRITERS[name](swing(2.9), path)
    text = path.read_text()
    last = str(read_written(path).ticks[-1, 0])
    head, _, tail = text.rpartition(last)
    path.write_text(head + "5000" + tail)
    assert read_written(path).ticks[-1, 0] == 5000
    code, out, _ = check(capsys, path, "--strict")
    assert code == 3 and "actuator 'knee': tick_range 5000 tick beyond limit 4095 tick" in out
    assert "position mode (Operating Mode 3, ticks 0..4095)" in out


def test_check_reads_the_mode_a_multi_turn_file_was_written_in(capsys, tmp_path):
    t = np.arange(41) / 20
    crank = ActuatorCurves(t, 2 * np.pi * t[:, None], ("crank",))
    auto, forced = tmp_path / "auto.dynamixel.json", tmp_path / "forced.dynamixel.json"
    write_dynamixel_json(crank, auto, DynamixelSettings(mode="auto"))
    write_dynamixel_json(crank, forced, DynamixelSettings(mode="position"), allow_violations=True)
    code, out, _ = check(capsys, auto, "--strict")
    assert code == 0 and "extended position mode (Operating Mode 4" in out
    doc = json.loads(forced.read_text())
    forced.write_text(json.dumps({**doc, "violations": []}))
    code, out, _ = check(capsys, forced, "--strict")
    assert code == 3 and "tick_range 10240 tick beyond limit 4095 tick" in out


def test_the_rounding_allowance_is_the_stencils_absolute_weight_sum():
    """Uniform rate r: velocity 1/(2 dt) * 2 = r inside, (3 + 4 + 1) / (2 dt) = 4 r at the
    ends (second-order one-sided); acceleration (1 + 2 + 1) / dt^2 = 4 r^2 inside, the end
    cubic's |2| + |-5| + |4| + |-1| = 12 r^2."""
    t = np.arange(10) / RATE
    np.testing.assert_allclose(quantised_allowance(t, 1), [4 * RATE] + [RATE] * 8 + [4 * RATE])
    np.testing.assert_allclose(quantised_allowance(t, 2), [12 * RATE**2] + [4 * RATE**2] * 8 + [12 * RATE**2])


def test_a_quantised_file_is_checked_no_finer_than_its_rounding(tmp_path):
    """A tick file at 50 Hz (allowance 0.5 tick * 50 = 0.038 rad/s in velocity) finds a
    velocity 0.1 rad/s over its limit that the rounding cannot explain."""
    t = np.arange(51) / 50
    fast = ActuatorCurves(t, 3.1 * t[:, None], ("knee",), velocity_limit=3.0)
    path = tmp_path / "fast.dynamixel.json"
    write_dynamixel_json(fast, path, allow_violations=True)
    doc = json.loads(path.read_text())
    path.write_text(json.dumps({**doc, "violations": []}))
    found = written_violations(read_written(path))
    assert [v.quantity for v in found] == ["velocity"] and abs(found[0].peak - 3.1) < 0.04


def test_a_header_without_its_metadata_line_or_an_unknown_suffix_is_one_line(capsys, tmp_path):
    path = tmp_path / "old.h"
    write_c_header(swing(2.9), path)
    path.write_text("\n".join(x for x in path.read_text().splitlines() if "looprig-c-header:" not in x))
    code, _, err = check(capsys, path)
    assert code == 2 and "has no looprig-c-header line" in err and len(err.strip().splitlines()) == 1
    (tmp_path / "x.png").write_bytes(b"\x89PNG")
    code, _, err = check(capsys, tmp_path / "x.png")
    assert code == 2 and "not a looprig curves file" in err


def test_play_accepts_a_tick_file_whose_only_excess_is_rounding(capsys, tmp_path):
    """d29a55b's `play` checked a 600 Hz tick file's accelerations on the rounded ticks and
    refused its own demo's export (1213 rad/s^2 'beyond' 30)."""
    path = tmp_path / "swing.dynamixel.json"
    write_dynamixel_json(dataclasses.replace(swing(2.9), hardware_ids=(3,)), path)
    assert main(["play", str(path), "--dry-run"]) == 0
    assert "goal ticks" in capsys.readouterr().out


def loop(speed: float, periods: int = 2, seconds: float = 1.0, repeat_first: bool = False) -> ActuatorCurves:
    """x(t) = (speed / w) sin(w t) over ``periods`` whole periods in ``seconds`` at 600 Hz,
    the sample one period after the last being the first (played in a loop); with
    ``repeat_first`` the last sample is the first again (a file that closes its loop by
    repeating it: played in a loop, that sample stands still for one period)."""
    count = round(seconds * RATE) + (1 if repeat_first else 0)
    t = np.arange(count) / RATE
    w = 2 * np.pi * periods / seconds
    x = speed / w * np.sin(w * t)
    return ActuatorCurves(
        t, x[:, None], ("knee",), lower=-1.2, upper=1.2, velocity_limit=3.0, acceleration_limit=40.0
    )


def test_played_three_times_in_a_row_the_cyclic_derivatives_are_the_middle_copys():
    """The wrap-around differences of a file are those of the file tiled three times, at
    the middle copy's samples (the check of a cyclic file played three times in a row)."""
    curves = loop(2.9, periods=1, seconds=0.5)
    x, F = curves.values, curves.n_frames
    rng = np.random.default_rng(3)
    x = x + 1e-3 * rng.normal(size=x.shape)  # any values: no closed loop needed
    curves = curves.with_values(curves.times, x)
    tiled = ActuatorCurves(np.arange(3 * F) / RATE, np.tile(x, (3, 1)), ("knee",))
    for order in (1, 2):
        np.testing.assert_allclose(
            curves.derivative(order, cyclic=True), tiled.derivative(order)[F : 2 * F], rtol=1e-12, atol=1e-9
        )


@pytest.mark.parametrize("name", WRITERS)
def test_a_seamless_loop_passes_check_cyclic_and_a_repeated_first_sample_does_not(capsys, tmp_path, name):
    """2.9 rad/s against 3 over two whole periods: seamless, within every limit played in a
    loop. The same loop closed by repeating its first sample stands still for one period at
    the seam: (x[F-2] - x[0]) / dt^2, about -v / dt = 1.2e3 rad/s^2 against 40, at both ends."""
    seamless, repeated = tmp_path / f"seamless.{name}", tmp_path / f"repeated.{name}"
    WRITERS[name](loop(2.9), seamless)
    WRITERS[name](loop(2.9, repeat_first=True), repeated)
    code, out, err = check(capsys, seamless, "--strict", "--cyclic")
    assert (code, err) == (0, ""), out
    assert out.strip().endswith("within limits (played in a loop, the seam included)")
    assert check(capsys, repeated, "--strict")[0] == 0  # as one pass, nothing is wrong
    code, out, err = check(capsys, repeated, "--strict", "--cyclic")
    assert code == 3 and "2 limit violation(s)" in err
    seams = [line for line in out.splitlines() if line.startswith("actuator 'knee': acceleration")]
    assert len(seams) == 2 and "t=0.000" in seams[0] and "t=1.000" in seams[1], out


def test_a_cyclic_check_needs_uniform_times(capsys, tmp_path):
    t = np.array([0.0, 0.1, 0.3, 0.4])
    path = tmp_path / "uneven.csv"
    write_csv(ActuatorCurves(t, t[:, None], ("knee",)), path)
    code, _, err = check(capsys, path, "--cyclic")
    assert code == 2 and err.count("\n") == 1 and "uniform times" in err
