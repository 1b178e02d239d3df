"""Exports: round trips through every format, tick conversion, strict refusal, C compile."""

import json
import math
import shutil
import subprocess

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from looprig.core.curves.actuator_curves import ActuatorCurves
from looprig.core.curves.limit_checks import check_limits
from looprig.core.curves.resample import PeakLossWarning, ResampleSettings, resample
from looprig.core.curves.violations import LimitViolationError
from looprig.core.errors import CurvesError, LooprigError, LooprigWarning
from looprig.core.export import (
    DXL_VELOCITY_UNIT_RAD_S,
    CHeaderSettings,
    DynamixelMotor,
    DynamixelSettings,
    dxl_velocity_to_rad_s,
    dynamixel_velocity_limit,
    plain_csv_metadata_path,
    rad_s_to_dxl_velocity,
    read_c_header,
    read_csv,
    read_dynamixel_csv,
    read_dynamixel_json,
    read_json,
    tick_violations,
    ticks_to_values,
    to_ticks,
    values_to_ticks,
    write_c_header,
    write_csv,
    write_dynamixel_csv,
    write_dynamixel_json,
    write_json,
    write_plain_csv,
)

HALF_TICK = math.pi / 4096  # [rad]
FILE_EXAMPLES = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@st.composite
def curves_strategy(draw, max_abs=3.0):
    """Uniform-rate curves within one servo turn (|x| <= 3 rad, |x| <= 0.3 m)."""
    n_frames = draw(st.integers(1, 25))
    n_act = draw(st.integers(1, 3))
    units = draw(st.lists(st.sampled_from(["rad", "m"]), min_size=n_act, max_size=n_act))
    scale = np.array([max_abs if u == "rad" else 0.1 * max_abs for u in units])
    raw = draw(
        st.lists(
            st.lists(st.floats(-1, 1), min_size=n_act, max_size=n_act), min_size=n_frames, max_size=n_frames
        )
    )
    rate = draw(st.sampled_from([24.0, 50.0, 60.0, 100.0, 1000.0]))
    start = draw(st.sampled_from([0.0, 1.5, 10.0 / 3.0]))
    prefix = draw(st.sampled_from(["j", "crank joint, left #", "motor/"]))
    ids = draw(st.lists(st.integers(0, 252) | st.none() | st.just("bus0:3"), min_size=n_act, max_size=n_act))
    limit = st.floats(0.1, 100) | st.just(np.inf)
    return ActuatorCurves(
        start + np.arange(n_frames) / rate,
        np.array(raw) * scale,
        tuple(f"{prefix}{a}" for a in range(n_act)),
        units=tuple(units),
        lower=draw(st.lists(st.floats(-5, -2) | st.just(-np.inf), min_size=n_act, max_size=n_act)),
        upper=draw(st.lists(st.floats(2, 5) | st.just(np.inf), min_size=n_act, max_size=n_act)),
        velocity_limit=draw(st.lists(limit, min_size=n_act, max_size=n_act)),
        acceleration_limit=draw(st.lists(limit, min_size=n_act, max_size=n_act)),
        hardware_ids=tuple(ids),
    )


def linear_motors(curves, metres_per_revolution=0.8) -> DynamixelSettings:
    """Settings giving every metre actuator a pinion, so all map to ticks."""
    motors = {
        n: DynamixelMotor(metres_per_revolution=metres_per_revolution)
        for n, u in zip(curves.names, curves.units, strict=True)
        if u == "m"
    }
    return DynamixelSettings(motors=motors)


def assert_same_metadata(a: ActuatorCurves, b: ActuatorCurves):
    assert a.names == b.names and a.units == b.units and a.hardware_ids == b.hardware_ids
    for field in ("lower", "upper", "velocity_limit", "acceleration_limit"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))


# --------------------------------------------------------------------------- round trips
@FILE_EXAMPLES
@given(curves_strategy())
def test_csv_and_json_round_trip_exactly(tmp_path, curves):
    """SI CSV and JSON write floats with repr: values, times and violations come back equal."""
    for write, read, name in ((write_csv, read_csv, "c.csv"), (write_json, read_json, "c.json")):
        path = tmp_path / name
        recorded = write(curves, path, allow_violations=True)
        back = read(path)
        np.testing.assert_array_equal(back.times, curves.times)
        np.testing.assert_array_equal(back.values, curves.values)
        assert_same_metadata(back, curves)
        assert list(back.carried_violations) == recorded
        assert back.rate_hz == curves.rate_hz


@FILE_EXAMPLES
@given(curves_strategy())
def test_dynamixel_ticks_round_trip_within_half_a_tick(tmp_path, curves):
    dxl = linear_motors(curves)
    ticks = to_ticks(curves, dxl)
    for write, read, name in (
        (write_dynamixel_csv, read_dynamixel_csv, "t.csv"),
        (write_dynamixel_json, read_dynamixel_json, "t.json"),
    ):
        path = tmp_path / name
        recorded = write(curves, path, dxl, allow_violations=True)
        back = read(path)
        np.testing.assert_array_equal(back.ticks, ticks)
        np.testing.assert_array_equal(back.times, curves.times)
        half = np.where(np.array(curves.units) == "rad", HALF_TICK, 0.5 * 0.8 / 4096)
        assert np.all(np.abs(back.to_values() - curves.values) <= half * (1 + 1e-9))
        assert list(back.violations) == recorded
        as_curves = back.to_curves()
        assert_same_metadata(as_curves, curves)


@FILE_EXAMPLES
@given(curves_strategy(), st.sampled_from(["ticks", "float"]))
def test_c_header_round_trips(tmp_path, curves, kind):
    path = tmp_path / "curves.h"
    dxl = linear_motors(curves)
    rate = curves.rate_hz
    if rate is None:  # a single frame has no rate
        with pytest.raises(CurvesError, match="fixed rate"):
            write_c_header(curves, path, CHeaderSettings(kind=kind, dynamixel=dxl))
        return
    write_c_header(curves, path, CHeaderSettings(kind=kind, dynamixel=dxl), allow_violations=True)
    back = read_c_header(path)
    assert back.names == curves.names and back.rate_hz == pytest.approx(rate)
    if kind == "ticks":
        assert back.ctype == "int16_t"
        np.testing.assert_array_equal(back.values, to_ticks(curves, dxl))
    else:
        assert back.ctype == "float"
        np.testing.assert_allclose(back.values, curves.values, rtol=2**-23, atol=1e-38)


# --------------------------------------------------------------------------- ticks
@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(-1000, 1000), min_size=1, max_size=20),
    st.integers(-100_000, 100_000),
    st.sampled_from([1, -1]),
    st.sampled_from(["rad", "m"]),
    st.floats(0.001, 2.0),
)
def test_tick_conversion_is_invertible_within_quantisation(values, zero, sign, unit, mpr):
    motor = DynamixelMotor(zero, sign, mpr if unit == "m" else None)
    x = np.array(values)[:, None]
    ticks = values_to_ticks(x, [unit], [motor])
    assert ticks.dtype == np.int64
    back = ticks_to_values(ticks, [unit], [motor])
    half = 0.5 / motor.ticks_per_unit(unit)
    assert np.all(np.abs(back - x) <= half * (1 + 1e-9) + 1e-12 * np.abs(x))
    np.testing.assert_array_equal(values_to_ticks(back, [unit], [motor]), ticks)


def test_tick_conversion_known_values():
    """0 rad -> centre 2048; a quarter turn is 1024 ticks; direction -1 mirrors about the zero."""
    x = np.array([[0.0, 0.0], [np.pi / 2, np.pi / 2], [-np.pi, 0.01]])
    motors = [DynamixelMotor(), DynamixelMotor(100, -1, metres_per_revolution=0.04)]
    ticks = values_to_ticks(x, ["rad", "m"], motors)
    assert ticks.tolist() == [[2048, 100], [3072, 100 - round(np.pi / 2 / 0.04 * 4096)], [0, 100 - 1024]]


def test_velocity_units():
    """1 unit = 0.229 rev/min; 46 rev/min (XM430-W350 at 12 V) is 200.87 units."""
    assert DXL_VELOCITY_UNIT_RAD_S == pytest.approx(0.229 * 2 * np.pi / 60)
    assert rad_s_to_dxl_velocity(46 * 2 * np.pi / 60) == pytest.approx(46 / 0.229)
    assert dxl_velocity_to_rad_s(200) == pytest.approx(200 * 0.229 * 2 * np.pi / 60)
    assert dynamixel_velocity_limit("XM430-W350", 12.0, 1.0) == pytest.approx(46 * 2 * np.pi / 60)
    assert dynamixel_velocity_limit("xh430-w350", 12.0) == pytest.approx(0.8 * np.pi)
    with pytest.raises(CurvesError, match="no Dynamixel model 'XM999'"):
        dynamixel_velocity_limit("XM999")
    with pytest.raises(CurvesError, match="supply voltage 24"):
        dynamixel_velocity_limit("XM430-W210", 24.0)


def test_ticks_file_states_the_model_and_velocity_limit(tmp_path):
    t = np.arange(11) / 10
    curves = ActuatorCurves(t, 0.5 * np.sin(t)[:, None], ("wrist",), velocity_limit=5.0, hardware_ids=(4,))
    write_dynamixel_json(curves, tmp_path / "w.json")
    doc = json.loads((tmp_path / "w.json").read_text())
    assert doc["format"] == "looprig-dynamixel-ticks" and doc["version"] == 1
    assert "4096 ticks/rev" in doc["model"] and "emanual.robotis.com" in doc["model"]
    assert doc["tick_range"] == [0, 4095] and doc["operating_mode"] == 3
    assert doc["velocity_limit_raw"] == [math.floor(5.0 / DXL_VELOCITY_UNIT_RAD_S)] == [208]
    assert doc["hardware_ids"] == [4] and doc["ticks"][0][0] == 2048
    write_dynamixel_csv(curves, tmp_path / "w.csv")
    text = (tmp_path / "w.csv").read_text()
    assert "# model:" in text and "4096 ticks/rev" in text and "time [s],wrist [tick]" in text


def test_out_of_range_ticks_are_violations(tmp_path):
    """3.2 rad is 2048 + 2086 = 4134 ticks: beyond 4095 in position mode, fine in extended."""
    t = np.arange(21) / 20
    curves = ActuatorCurves(t, 3.2 * np.sin(np.pi * t)[:, None], ("hip",))
    path = tmp_path / "hip.csv"
    with pytest.raises(LimitViolationError, match="actuator 'hip': tick_range 4134 tick") as info:
        write_dynamixel_csv(curves, path)
    assert not path.exists()
    (v,) = info.value.violations
    assert v.quantity == "tick_range" and v.limit == 4095 and v.peak == 4134 and v.peak_time == 0.5
    extended = DynamixelSettings(mode="extended_position")
    assert write_dynamixel_csv(curves, path, extended) == []
    assert read_dynamixel_csv(path).settings.ticks_range == (-1_048_575, 1_048_575)
    narrow = DynamixelSettings(tick_range=(1024, 3072))
    with pytest.raises(LimitViolationError, match="beyond limit 3072"):
        write_dynamixel_json(curves, tmp_path / "hip.json", narrow)


def test_metre_actuators_need_a_pinion():
    curves = ActuatorCurves([0.0, 0.1], [[0.0], [0.01]], ("lift",), units=("m",))
    with pytest.raises(CurvesError, match="actuator 'lift' moves in metres"):
        to_ticks(curves)
    with pytest.raises(CurvesError, match="no actuator 'lfit'; actuators are: lift"):
        to_ticks(curves, DynamixelSettings(motors={"lfit": DynamixelMotor()}))
    with pytest.raises(CurvesError, match="direction must be"):
        DynamixelMotor(direction=0)


# --------------------------------------------------------------------------- refusal
def fast_curves() -> ActuatorCurves:
    """Two actuators; 'elbow' (peak 2 pi rad/s) exceeds its 5 rad/s velocity limit around
    t = 0, 0.5 and 1 s: three intervals."""
    t = np.arange(101) / 100
    return ActuatorCurves(
        t,
        np.column_stack([np.sin(2 * np.pi * t), 0.2 * np.sin(2 * np.pi * t)]),
        ("elbow", "shoulder"),
        velocity_limit=[5.0, 5.0],
        hardware_ids=(1, 2),
    )


WRITERS = {
    "csv": (write_csv, "x.csv"),
    "json": (write_json, "x.json"),
    "dxl_csv": (write_dynamixel_csv, "x_ticks.csv"),
    "dxl_json": (write_dynamixel_json, "x_ticks.json"),
    "c_ticks": (lambda c, p, **k: write_c_header(c, p, **k), "x.h"),
    "c_float": (lambda c, p, **k: write_c_header(c, p, CHeaderSettings(kind="float"), **k), "f.h"),
}


@pytest.mark.parametrize("fmt", list(WRITERS))
def test_export_refuses_curves_that_break_a_limit(tmp_path, fmt):
    write, name = WRITERS[fmt]
    curves = fast_curves()
    expected = check_limits(curves)
    assert expected and {v.actuator for v in expected} == {"elbow"}
    path = tmp_path / name
    with pytest.raises(LimitViolationError, match="refusing to write") as info:
        write(curves, path)
    assert isinstance(info.value, LooprigError)
    assert "actuator 'elbow': velocity 6.2" in str(info.value)  # peak 2 pi rad/s, by differences
    assert list(info.value.violations) == expected
    assert list(tmp_path.iterdir()) == []  # no file, no temporary left behind
    path.write_text("keep me")
    with pytest.raises(LimitViolationError):
        write(curves, path)
    assert path.read_text() == "keep me"  # an existing file is not clobbered


@pytest.mark.parametrize("fmt", list(WRITERS))
def test_override_writes_the_file_and_records_the_violations(tmp_path, fmt):
    write, name = WRITERS[fmt]
    curves = fast_curves()
    path = tmp_path / name
    recorded = write(curves, path, allow_violations=True)
    assert recorded == check_limits(curves)
    text = path.read_text()
    if fmt in ("csv", "json"):
        back = (read_csv if fmt == "csv" else read_json)(path)
        assert list(back.carried_violations) == recorded
    elif fmt.startswith("dxl"):
        back = (read_dynamixel_csv if fmt == "dxl_csv" else read_dynamixel_json)(path)
        assert list(back.violations) == recorded
    else:
        assert f"LIMIT VIOLATIONS ({len(recorded)})" in text
        assert "actuator 'elbow': velocity" in text
        assert read_c_header(path).violation_count == len(recorded) == 3
    if fmt.endswith("csv"):
        assert text.count("# violation: ") == len(recorded)
    if fmt.endswith("json"):
        assert json.loads(text)["violations"] == [v.to_dict() for v in recorded]


def test_resampled_curves_keep_refusing_what_their_source_broke(tmp_path):
    t = np.arange(1001) / 1000.0
    x = 0.2 * np.exp(-0.5 * ((t - 0.511) / 0.004) ** 2)
    source = ActuatorCurves(t, x, ("kick",), velocity_limit=10.0)
    device = resample(source, 50.0, ResampleSettings(on_peak_loss="ignore"))
    assert check_limits(device) == []
    with pytest.raises(LimitViolationError, match="actuator 'kick': velocity"):
        write_c_header(device, tmp_path / "kick.h")
    assert not (tmp_path / "kick.h").exists()
    write_json(device, tmp_path / "kick.json", allow_violations=True)
    again = read_json(tmp_path / "kick.json")  # the record survives a round trip
    with pytest.raises(LimitViolationError):
        write_csv(again, tmp_path / "kick.csv")


# --------------------------------------------------------------------------- readers
def test_readers_reject_malformed_files(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("t,x\n0,1\n")
    with pytest.raises(CurvesError, match="header column 1 't' should read"):
        read_csv(bad)
    bad.write_text('# format: "looprig-curves-csv"\n# version: 9\ntime [s],a [rad]\n0,1\n')
    with pytest.raises(CurvesError, match="version 9 is not supported"):
        read_csv(bad)
    bad.write_text("time [s],a [rad]\n0,1\n0.1,oops\n")
    with pytest.raises(CurvesError, match="bad number"):
        read_csv(bad)
    bad.write_text("# rate_hz: {oops\ntime [s],a [rad]\n0,1\n")
    with pytest.raises(CurvesError, match="line 1: 'rate_hz' is not JSON"):
        read_csv(bad)
    (tmp_path / "bad.json").write_text('{"format": "looprig-dynamixel-ticks", "version": 1}')
    with pytest.raises(CurvesError, match="format is 'looprig-dynamixel-ticks', expected"):
        read_json(tmp_path / "bad.json")
    with pytest.raises(CurvesError, match="missing or malformed field"):
        read_dynamixel_json(tmp_path / "bad.json")
    with pytest.raises(CurvesError, match="cannot read"):
        read_json(tmp_path / "missing.json")


def test_plain_csv_without_metadata_reads_with_no_limits(tmp_path):
    path = tmp_path / "plain.csv"
    path.write_text("time [s],lift [m],turn [rad]\n0,0.0,1\n0.5,0.25,2\n")
    curves = read_csv(path)
    assert curves.names == ("lift", "turn") and curves.units == ("m", "rad")
    assert np.isinf(curves.velocity_limit).all() and curves.rate_hz == 2.0


def test_c_header_needs_a_fixed_rate_and_distinct_identifiers(tmp_path):
    uneven = ActuatorCurves([0.0, 0.1, 0.3], [[0.0], [0.1], [0.2]], ("a",))
    with pytest.raises(CurvesError, match="resample them first"):
        write_c_header(uneven, tmp_path / "u.h")
    clash = ActuatorCurves([0.0, 0.1], [[0, 0], [0, 0]], ("a-b", "a b"))
    with pytest.raises(CurvesError, match="'a-b' and 'a b' both become the C identifier"):
        write_c_header(clash, tmp_path / "c.h")
    with pytest.raises(CurvesError, match="not a C identifier"):
        CHeaderSettings(prefix="2fast")


# --------------------------------------------------------------------------- C compile
@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not available")
def test_c_header_compiles_and_holds_the_python_values(tmp_path):
    """Two headers (ticks, float) in one strict C99 program print what Python computed."""
    t = np.arange(51) / 50
    curves = ActuatorCurves(
        t,
        np.column_stack([np.sin(2 * np.pi * t), 0.3 * t, 0.02 * np.cos(t)]),
        ("crank joint", "wrist", "lift"),
        units=("rad", "rad", "m"),
        velocity_limit=[7.0, 1.0, 0.1],
        hardware_ids=(1, 2, 3),
    )
    dxl = DynamixelSettings(
        motors={"wrist": DynamixelMotor(1000, -1), "lift": DynamixelMotor(metres_per_revolution=0.05)}
    )
    write_c_header(curves, tmp_path / "ticks.h", CHeaderSettings(dynamixel=dxl, source="test"))
    write_c_header(curves, tmp_path / "floats.h", CHeaderSettings(kind="float", prefix="show"))
    (tmp_path / "main.c").write_text(
        '#include <stdio.h>\n#include "ticks.h"\n#include "floats.h"\n'
        "int main(void) {\n"
        "  int a, f;\n"
        '  printf("%d %d %d %d\\n", LOOPRIG_RATE_HZ, LOOPRIG_FRAME_COUNT, '
        "LOOPRIG_ACTUATOR_COUNT, SHOW_FRAME_PERIOD_US);\n"
        "  for (a = 0; a < LOOPRIG_ACTUATOR_COUNT; ++a) {\n"
        '    printf("%s %d", looprig_names[a], (int)looprig_hardware_ids[a]);\n'
        '    for (f = 0; f < LOOPRIG_FRAME_COUNT; ++f) printf(" %d", looprig_tracks[a][f]);\n'
        '    printf("\\n%s", show_names[a]);\n'
        '    for (f = 0; f < SHOW_FRAME_COUNT; ++f) printf(" %.9g", (double)show_tracks[a][f]);\n'
        '    printf("\\n");\n'
        "  }\n  return 0;\n}\n"
    )
    exe = tmp_path / "main"
    subprocess.run(
        [
            "gcc",
            "-std=c99",
            "-Wall",
            "-Wextra",
            "-pedantic",
            "-Werror",
            "-o",
            str(exe),
            str(tmp_path / "main.c"),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    run = subprocess.run([str(exe)], check=True, capture_output=True, text=True)
    lines = run.stdout.splitlines()
    assert lines[0].split() == ["50", "51", "3", "20000"]
    ticks = to_ticks(curves, dxl)
    for a, name in enumerate(curves.names):
        tick_line, float_line = lines[1 + 2 * a], lines[2 + 2 * a]
        assert tick_line.startswith(f"{name} {a + 1} ")
        assert [int(x) for x in tick_line[len(name) :].split()[1:]] == ticks[:, a].tolist()
        assert float_line.startswith(name)
        printed = np.array([float(x) for x in float_line[len(name) :].split()], np.float32)
        np.testing.assert_array_equal(printed, curves.values[:, a].astype(np.float32))  # %.9g


def test_c_header_uses_int32_for_multi_turn_ticks(tmp_path):
    """60 rad is 60 * 4096 / (2 pi) = 39114.4 ticks past the zero: beyond int16_t, within
    extended position mode."""
    curves = ActuatorCurves(np.arange(3) / 10, [[0.0], [30.0], [60.0]], ("winch",))
    dxl = DynamixelSettings(mode="extended_position")
    write_c_header(curves, tmp_path / "w.h", CHeaderSettings(dynamixel=dxl), allow_violations=True)
    back = read_c_header(tmp_path / "w.h")
    assert back.ctype == "int32_t"
    assert back.values[:, 0].tolist() == [2048, 2048 + 19557, 2048 + 39114]


# --------------------------------------------------------------------------- servo ranges, messages
def crank_turning_twice() -> ActuatorCurves:
    """A crank without limits turning two full turns: 2048 + 2 * 4096 = 10240 ticks at the end."""
    t = np.arange(41) / 20
    return ActuatorCurves(t, 2 * np.pi * t[:, None], ("crank",))


@pytest.mark.parametrize("fmt", ["dxl_csv", "dxl_json", "c_ticks"])
def test_ticks_beyond_one_turn_are_refused_or_recorded_in_every_tick_writer(tmp_path, fmt):
    write, name = WRITERS[fmt]
    curves = crank_turning_twice()
    assert check_limits(curves) == []
    path = tmp_path / name
    with pytest.raises(LimitViolationError, match="tick_range 10240 tick beyond limit 4095") as info:
        write(curves, path)
    assert info.value.overridable and not path.exists()
    recorded = write(curves, path, allow_violations=True)
    assert recorded == tick_violations(curves)
    (v,) = recorded
    assert (v.quantity, v.peak, v.limit, v.end_time) == ("tick_range", 10240, 4095, 2.0)
    if fmt == "c_ticks":
        assert read_c_header(path).violation_count == 1
    else:
        back = (read_dynamixel_csv if fmt == "dxl_csv" else read_dynamixel_json)(path)
        assert list(back.violations) == recorded and back.ticks[-1, 0] == 10240


def test_extended_position_mode_allows_256_turns_each_way(tmp_path):
    """-256..256 rev = -1048575..1048575 ticks (ROBOTIS e-manual, Goal Position(116), mode 4)."""
    extended = DynamixelSettings(mode="extended_position")
    curves = crank_turning_twice()
    assert write_dynamixel_json(curves, tmp_path / "ok.json", extended) == []
    t = np.array([0.0, 1.0])
    far = ActuatorCurves(t, [[0.0], [257 * 2 * np.pi]], ("crank",))  # 2048 + 257 * 4096 ticks
    with pytest.raises(LimitViolationError, match=r"beyond limit 1\.04858e\+06"):
        write_dynamixel_json(far, tmp_path / "far.json", extended)
    assert tick_violations(far, extended)[0].peak == 2048 + 257 * 4096


@pytest.mark.parametrize("fmt", ["dxl_csv", "dxl_json", "c_ticks"])
@pytest.mark.parametrize("big", [1e18, 1e300])
def test_ticks_beyond_the_register_are_never_written(tmp_path, fmt, big):
    """1e18 rad is 6.5e20 ticks: no int32 Goal Position holds it, so even the override refuses."""
    write, name = WRITERS[fmt]
    curves = ActuatorCurves([0.0, 0.1, 0.2], [0.0, big, 0.0], ("crank",))
    path = tmp_path / name
    path.write_text("previous")
    with pytest.raises(LimitViolationError, match="beyond what a Dynamixel Goal Position can hold") as info:
        write(curves, path, allow_violations=True)
    assert not info.value.overridable
    info.value.override_hint = "--allow-violations"
    assert "--allow-violations" not in str(info.value) and "\n" not in str(info.value)
    assert path.read_text() == "previous"
    assert [leftover.name for leftover in tmp_path.iterdir()] == [name]
    with pytest.raises(CurvesError, match="too many to count"):
        values_to_ticks(np.array([[1e300]]), ["rad"], [DynamixelMotor()])


def test_curves_too_steep_to_differentiate_are_a_clean_error(tmp_path):
    curves = ActuatorCurves([0.0, 0.1, 0.2, 0.3], [0.0, 1e308, -1e308, 0.0], ("a",))
    for action in (lambda: check_limits(curves), lambda: write_csv(curves, tmp_path / "a.csv")):
        with pytest.raises(CurvesError, match=r"actuator 'a'|spline"):
            action()
    with pytest.raises(CurvesError, match="acceleration at t="):
        ActuatorCurves([0.0, 1e-300, 2e-300], [0.0, 1e10, 0.0], ("a",)).accelerations("central")


@pytest.mark.parametrize(
    "bad",
    [
        lambda: DynamixelMotor(zero_offset_ticks=math.inf),
        lambda: DynamixelMotor(zero_offset_ticks=math.nan),
        lambda: DynamixelMotor(zero_offset_ticks="2048"),
        lambda: DynamixelMotor(zero_offset_ticks=2**40),
        lambda: DynamixelMotor(direction="+1"),
        lambda: DynamixelMotor(metres_per_revolution="0.04"),
        lambda: DynamixelSettings(tick_range=(0, math.inf)),
        lambda: DynamixelSettings(tick_range="0..4095"),
        lambda: DynamixelSettings(mode=["position"]),
    ],
)
def test_servo_settings_reject_non_numbers_with_a_curves_error(bad):
    with pytest.raises(CurvesError):
        bad()


def test_refusal_message_is_one_short_line_and_the_front_end_names_the_override(tmp_path):
    t = np.arange(401) / 100
    curves = ActuatorCurves(t, np.sin(2 * np.pi * t)[:, None], ("elbow",), velocity_limit=5.0)
    with pytest.raises(LimitViolationError) as info:
        write_csv(curves, tmp_path / "x.csv")
    error = info.value
    message = str(error)
    assert len(error.violations) == 9 and error.path == str(tmp_path / "x.csv")
    assert "\n" not in message and "allow_violations" not in message
    assert message.count("actuator 'elbow': velocity") == 3 and message.endswith("and 6 more")
    error.override_hint = "--allow-violations"
    assert str(error).startswith(message)
    hint = "--allow-violations writes the file anyway, with the violations recorded in it"
    assert str(error).endswith(hint)


def test_peak_loss_warning_prints_as_one_line_for_people():
    t = np.arange(1001) / 1000.0
    x = 0.2 * np.exp(-0.5 * ((t - 0.511) / 0.004) ** 2)
    with pytest.warns(PeakLossWarning) as caught:
        resample(ActuatorCurves(t, x, ("kick",)), 50.0)
    (warning,) = (w.message for w in caught)
    assert isinstance(warning, LooprigWarning) and warning.obj == "actuator 'kick'" and warning.path is None
    line = warning.one_line()
    assert line.startswith("looprig: warning: actuator 'kick': peak velocity") and "\n" not in line
    assert "to 50 Hz" in line
    assert LooprigWarning("not watertight", "robot.urdf", "mesh 'arm.stl'").one_line() == (
        "looprig: warning: robot.urdf: mesh 'arm.stl': not watertight"
    )


# --------------------------------------------------------------------------- plain CSV
def test_plain_csv_loads_with_numpy_and_keeps_limits_and_violations_beside_it(tmp_path):
    curves = fast_curves()
    path = tmp_path / "curves.csv"
    recorded = write_plain_csv(curves, path, allow_violations=True)
    assert recorded == check_limits(curves) and len(recorded) == 3
    table = np.loadtxt(path, delimiter=",", skiprows=1)
    np.testing.assert_array_equal(table, np.column_stack([curves.times, curves.values]))
    header = path.read_text().splitlines()[0]
    assert header == "time [s],elbow [rad],shoulder [rad]" and "#" not in path.read_text()
    side = json.loads(plain_csv_metadata_path(path).read_text())
    assert plain_csv_metadata_path(path) == tmp_path / "curves.meta.json"
    assert side["data_file"] == "curves.csv" and side["velocity_limit"] == [5.0, 5.0]
    assert side["violations"] == [v.to_dict() for v in recorded]
    back = read_csv(path)
    assert list(back.carried_violations) == recorded and list(back.velocity_limit) == [5.0, 5.0]
    assert back.hardware_ids == (1, 2)
    with pytest.raises(LimitViolationError):
        write_plain_csv(curves, tmp_path / "refused.csv")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["curves.csv", "curves.meta.json"]


def test_plain_csv_side_file_must_match_its_csv(tmp_path):
    path = tmp_path / "curves.csv"
    write_plain_csv(fast_curves(), path, allow_violations=True)
    side = plain_csv_metadata_path(path)
    doc = json.loads(side.read_text())
    side.write_text(json.dumps({**doc, "names": ["elbow", "wrist"]}))
    with pytest.raises(CurvesError, match=r"curves\.meta\.json.*'names' disagree"):
        read_csv(path)
    side.write_text(json.dumps({**doc, "data_file": "other.csv"}))  # another file's record: ignored
    assert read_csv(path).carried_violations == ()


# --------------------------------------------------------------------------- hostile files
@pytest.mark.parametrize(
    ("name", "content", "fragment"),
    [
        ("a.csv", b"time [s],a [rad]\n0,1\n0.1,\xff2\n", r"not UTF-8 text: byte 0xff at line 3, column 5"),
        ("b.csv", b"time [s],a [rad]\n0,1\n0.1,1e308\n0.2,-1e308\n0.3,1\n", r"b\.csv.*(too large|spline)"),
        ("c.csv", b"time [s],a [rad]\n0,1\n0.1,inf\n", r"line 3 column 2: 'inf' is not a finite number"),
        ("d.csv", b"time [s],a [rad]\n0,1\n0.1,nan\n", r"line 3 column 2: 'nan' is not a finite number"),
        ("e.csv", b"time [s],a [rad]\n0,1\n0.1\n", r"line 3: bad row length"),
        ("f.csv", b'# lower: ["x"]\ntime [s],a [rad]\n0,1\n', r"f\.csv.*'lower' entry 1 must be a number"),
        ("g.csv", b"# violation: 5\ntime [s],a [rad]\n0,1\n", r"g\.csv' line 1: a violation record must be"),
        ("h.csv", b"# hardware_ids: [[1]]\ntime [s],a [rad]\n0,1\n", r"'hardware_ids' entry 1 must be"),
        ("a.json", b'{"actuators": 5}', r"a\.json.*'actuators' must be a non-empty list"),
        ("b.json", b"[1, 2]", r"b\.json.*expected a JSON object"),
        (
            "c.json",
            b'{"times": [0, 1], "actuators": [{"name": "a", "unit": "rad", "values": [0, Infinity]}]}',
            r"c\.json.*'actuators\[0\]\.values' holds inf",
        ),
        (
            "d.json",
            b'{"times": [0], "actuators": [{"name": 7, "unit": "rad", "values": [0]}]}',
            r"d\.json.*'actuators\[\]\.name'",
        ),
        (
            "e.json",
            b'{"times": [0], "actuators": [{"name": "a", "unit": "rad", "values": [0]}], "violations": [3]}',
            r"e\.json.*violations\[0\]",
        ),
    ],
)
def test_hostile_curves_files_give_one_line_naming_the_file(tmp_path, name, content, fragment):
    path = tmp_path / name
    path.write_bytes(content)
    reader = read_json if name.endswith(".json") else read_csv
    with pytest.raises(CurvesError, match=fragment) as info:
        reader(path)
    assert "\n" not in str(info.value) and str(path) in str(info.value)


def test_hostile_dynamixel_and_header_files_give_one_line_naming_the_file(tmp_path):
    curves = crank_turning_twice()
    extended = DynamixelSettings(mode="extended_position")
    good_json, good_csv, good_h = tmp_path / "t.json", tmp_path / "t.csv", tmp_path / "t.h"
    write_dynamixel_json(curves, good_json, extended)
    write_dynamixel_csv(curves, good_csv, extended)
    write_c_header(curves, good_h, CHeaderSettings(dynamixel=extended))
    doc = json.loads(good_json.read_text())
    ticks = doc["ticks"][0]
    header = good_h.read_text()
    cases = [
        (
            read_dynamixel_json,
            "inf.json",
            json.dumps({**doc, "ticks": [[2048, math.inf, *ticks[2:]]]}),
            r"'ticks' holds inf",
        ),
        (
            read_dynamixel_json,
            "zero.json",
            json.dumps({**doc, "zero_offset_ticks": [math.inf]}),
            r"zero_offset_ticks must be a whole number",
        ),
        (
            read_dynamixel_json,
            "half.json",
            json.dumps({**doc, "ticks": [[0.5] * len(doc["times"])]}),
            r"ticks must be whole numbers",
        ),
        (
            read_dynamixel_json,
            "big.json",
            json.dumps({**doc, "ticks": [[2**70] * len(doc["times"])]}),
            r"ticks must be whole numbers in -2147483648\.\.2147483647",
        ),
        (
            read_dynamixel_json,
            "range.json",
            json.dumps({**doc, "tick_range": [0, "x"]}),
            r"tick_range must be",
        ),
        (read_dynamixel_json, "bytes.json", b"\xff\xfe{}", r"not UTF-8"),
        (
            read_dynamixel_csv,
            "units.csv",
            good_csv.read_text().replace('units: ["rad"]', 'units: ["deg"]'),
            r"unit 'deg' is not one of",
        ),
        (
            read_c_header,
            "values.h",
            header.replace("10240,", "10240x,", 1),
            r"array looprig_crank value \d+ '10240x'",
        ),
        (
            read_c_header,
            "count.h",
            header.replace("FRAME_COUNT 41", "FRAME_COUNT 99999999999999999999999"),
            r"holds 41 values, not 99999999999999999999999 frames",
        ),
        (read_c_header, "rate.h", header.replace("RATE_HZ 20", "RATE_HZ inf"), r"LOOPRIG_RATE_HZ is 'inf'"),
        (read_c_header, "names.h", header.replace('"crank"', "crank"), r"looprig_names is not a list"),
    ]
    for reader, name, content, fragment in cases:
        path = tmp_path / name
        if isinstance(content, str):
            content = content.encode()
        path.write_bytes(content)
        with pytest.raises(CurvesError, match=fragment) as info:
            reader(path)
        assert "\n" not in str(info.value) and str(path) in str(info.value), name
