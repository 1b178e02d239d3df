"""The Dynamixel Operating Mode of tick exports (issue 25, item 2).

On d29a55b an unlimited crank turning twice was written in position mode (3)
with ticks up to 10240 (beyond 4095), exit 0, and the terminal said
"violations none". Now "auto" (the CLI's default) writes a motor with no range
that leaves one turn in extended position mode (4) and says so; a forced mode
whose ticks do not fit is a limit violation listed on the terminal, in
report.json and in the file, and refused with --strict.
"""

import json

import numpy as np
import pytest
from looprig.core.curves.actuator_curves import ActuatorCurves
from looprig.core.curves.violations import LimitViolationError
from looprig.core.errors import CurvesError
from looprig.core.export import (
    DynamixelSettings,
    read_dynamixel_json,
    write_csv,
    write_dynamixel_json,
)
from shots import fourbar_shot

from looprig.cli import main

AUTO = DynamixelSettings(mode="auto")


def crank_turning_twice(**limits) -> ActuatorCurves:
    """Two full turns in 2 s: ticks 2048 + 2 * 4096 = 10240 at the end."""
    t = np.arange(41) / 20
    return ActuatorCurves(t, 2 * np.pi * t[:, None], ("crank",), **limits)


def test_auto_writes_an_unlimited_multi_turn_motor_in_extended_position_mode(tmp_path):
    path = tmp_path / "crank.dynamixel.json"
    assert write_dynamixel_json(crank_turning_twice(), path, AUTO) == []
    doc = json.loads(path.read_text())
    assert (doc["mode"], doc["operating_mode"], doc["tick_range"]) == (
        "extended_position",
        4,
        [-1048575, 1048575],
    )
    assert (min(doc["ticks"][0]), max(doc["ticks"][0])) == (2048, 10240)
    assert read_dynamixel_json(path).settings.mode == "extended_position"


def test_auto_keeps_position_mode_within_a_turn_and_for_motors_with_a_range(tmp_path):
    """A motor with a range keeps position mode (the servo enforces its Min/Max Position
    Limit there): its ticks beyond the turn are a violation, not a reason to change mode."""
    t = np.arange(21) / 20
    within = ActuatorCurves(t, np.sin(t)[:, None], ("wrist",))
    assert write_dynamixel_json(within, tmp_path / "w.json", AUTO) == []
    assert json.loads((tmp_path / "w.json").read_text())["operating_mode"] == 3
    ranged = crank_turning_twice(lower=-20.0, upper=20.0)
    with pytest.raises(LimitViolationError, match="tick_range 10240 tick beyond limit 4095"):
        write_dynamixel_json(ranged, tmp_path / "r.json", AUTO)


def test_a_forced_mode_whose_ticks_do_not_fit_is_refused_or_recorded(tmp_path):
    position = DynamixelSettings(mode="position")
    with pytest.raises(LimitViolationError, match="tick_range 10240 tick beyond limit 4095"):
        write_dynamixel_json(crank_turning_twice(), tmp_path / "c.json", position)
    (v,) = write_dynamixel_json(crank_turning_twice(), tmp_path / "c.json", position, allow_violations=True)
    assert (v.quantity, v.peak, v.limit) == ("tick_range", 10240, 4095)


def test_a_file_must_state_a_mode_it_was_written_in(tmp_path):
    path = tmp_path / "c.dynamixel.json"
    write_dynamixel_json(crank_turning_twice(), path, AUTO)
    doc = json.loads(path.read_text())
    path.write_text(json.dumps({**doc, "mode": "auto"}))
    with pytest.raises(CurvesError, match=r"c\.dynamixel\.json.*no Dynamixel mode 'auto'"):
        read_dynamixel_json(path)
    with pytest.raises(CurvesError, match="needs a Dynamixel mode"):
        DynamixelSettings(mode="auto", tick_range=(0, 100))


@pytest.fixture(scope="module")
def twice(tmp_path_factory):
    """The four-bar's crank (no range, 6 rad/s) turning twice in 5 s: peak 5.03 rad/s."""
    folder = tmp_path_factory.mktemp("twice")
    tracks, mapping, _, _ = fourbar_shot(folder, "twice", speed=4 * np.pi / 25, seconds=5.0, rate=60.0)
    return folder, tracks, mapping


def retarget(capsys, twice, out, *extra):
    folder, tracks, mapping = twice
    argv = [
        "retarget",
        "fourbar",
        tracks,
        "--map",
        mapping,
        "-o",
        folder / out,
        "--formats",
        "dynamixel-json",
    ]
    code = main([str(a) for a in (*argv, *extra)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err, folder / out


def test_retarget_writes_a_crank_turning_twice_in_extended_position_mode_and_says_so(capsys, twice):
    code, out, err, folder = retarget(capsys, twice, "auto")
    assert code == 0 and err == ""
    doc = json.loads((folder / "curves.dynamixel.json").read_text())
    assert doc["operating_mode"] == 4 and doc["violations"] == []
    assert max(doc["ticks"][0]) == 2048 + round(4 * np.pi * 4096 / (2 * np.pi))  # 10240
    line = next(x for x in out.splitlines() if x.startswith("Dynamixel ticks in "))
    assert "extended position mode (Operating Mode 4" in line and "'crank_joint' has no range" in line
    report = json.loads((folder / "report.json").read_text())
    assert report["dynamixel"]["operating_mode"] == 4


def test_a_forced_position_mode_shows_its_violation_on_the_terminal(capsys, twice):
    code, out, err, folder = retarget(capsys, twice, "forced", "--dynamixel-mode", "position")
    assert code == 0
    row = next(x for x in out.splitlines() if x.startswith("crank_joint"))
    assert "tick_range 2.500-5.000 s" in row  # d29a55b: "none", the violation in the file only
    assert "tick_range" in err and err.startswith("looprig: warning: ")
    doc = json.loads((folder / "curves.dynamixel.json").read_text())
    assert doc["operating_mode"] == 3 and [v["quantity"] for v in doc["violations"]] == ["tick_range"]
    report = json.loads((folder / "report.json").read_text())
    (crank,) = report["actuators"]
    assert [v["quantity"] for v in crank["violations"]] == ["tick_range"]
    code, out, err, folder = retarget(capsys, twice, "strict", "--dynamixel-mode", "position", "--strict")
    assert code == 3 and "tick_range" in err and not (folder / "curves.dynamixel.json").exists()


def test_export_says_the_mode_and_warns_of_what_it_records(capsys, tmp_path):
    source = tmp_path / "c.csv"
    write_csv(crank_turning_twice(), source)
    assert main(["export", str(source), "--format", "dynamixel-json", "-o", str(tmp_path / "a.json")]) == 0
    assert "Dynamixel ticks in extended position mode" in capsys.readouterr().out
    argv = [
        "export",
        str(source),
        "--format",
        "header",
        "-o",
        str(tmp_path / "p.h"),
        "--dynamixel-mode",
        "position",
    ]
    assert main(argv) == 3
    assert "tick_range" in capsys.readouterr().err
    assert main([*argv, "--allow-violations"]) == 0
    err = capsys.readouterr().err
    assert "looprig: warning:" in err and "tick_range 10240 tick beyond limit 4095" in err
