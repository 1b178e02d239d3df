"""The CLI's output policy and exit codes: one regression test per finding of the safety review.

Findings (numbers of the review): 1 outputs onto inputs and non-regular files,
2 stale files that pass ``check`` and partial sets, 4 a robot that came apart,
5 rates and settings from the command line, 7 write failures, 10 warnings for
people; plus the exit codes of ``--strict`` (unreachable frames, every frame
unreachable).
"""

import json
import os
import warnings
from pathlib import Path

import numpy as np
import pytest
from looprig.core.curves.actuator_curves import ActuatorCurves
from looprig.core.errors import LooprigWarning
from looprig.core.export import read_csv, write_csv
from shots import fourbar_shot

from looprig import app, cli, commands, outputs
from looprig.cli import main

MODELS = Path(__file__).resolve().parents[2] / "shared" / "models"


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def one_line_error(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("looprig: error: ") and "Traceback" not in err, err
    return lines[0]


@pytest.fixture
def shot(tmp_path):
    return fourbar_shot(tmp_path, "coupler", 2.0, seconds=0.25, rate=120.0)


def retarget(capsys, shot, out, *extra):
    tracks, mapping, _, _ = shot
    return run(capsys, "retarget", "fourbar", tracks, "--map", mapping, "-o", out, "--quiet", *extra)


def curves_csv(path: Path) -> Path:
    t = np.linspace(0.0, 1.0, 51)
    write_csv(ActuatorCurves(t, 0.1 * np.sin(t)[:, None], ("motor",), velocity_limit=5.0), path)
    return path


# ---------------------------------------------------------------- 1: inputs and non-regular files


def test_export_plot_and_convert_refuse_their_input_as_output(capsys, tmp_path):
    csv = curves_csv(tmp_path / "c.csv")
    before = csv.read_bytes()
    for argv in (("export", csv, "--format", "csv", "-o", csv), ("plot", csv, "-o", csv)):
        code, _, err = run(capsys, *argv)
        assert code == 2 and "input" in one_line_error(err)
    assert csv.read_bytes() == before
    native = tmp_path / "m.looprig.json"
    assert run(capsys, "convert", "fourbar", native)[0] == 2  # "fourbar" is not a file: bad input
    if MODELS.exists():
        urdf = tmp_path / "robot.urdf"
        urdf.write_bytes((MODELS / "gepetto_5bar_linkage" / "robot.urdf").read_bytes())
        code, _, err = run(capsys, "convert", urdf, urdf)
        assert code == 2 and "input" in one_line_error(err)


def test_devices_folders_and_missing_folders_as_output_are_one_line_exit_2(capsys, tmp_path):
    csv = curves_csv(tmp_path / "c.csv")
    for target in ("/dev/full", "/dev/null", tmp_path, tmp_path / "missing" / "c.h"):
        code, _, err = run(capsys, "export", csv, "--format", "header", "-o", target)
        assert code == 2, target
        one_line_error(err)
    assert Path("/dev/full").is_char_device()
    code, _, err = run(capsys, "retarget", "fourbar", csv, "--map", csv, "-o", csv)
    assert code == 2
    one_line_error(err)


def test_retarget_refuses_an_output_folder_that_is_a_file(capsys, tmp_path, shot):
    blocker = tmp_path / "out"
    blocker.write_text("mine")
    code, _, err = retarget(capsys, shot, blocker)
    assert code == 2 and "not a folder" in one_line_error(err) and blocker.read_text() == "mine"


# ---------------------------------------------------------------- 2: stale files, partial sets


def slow_fourbar(tmp_path) -> Path:
    """The reference four-bar with its crank limited to 1 rad/s (the shot turns it at up to 1 rad/s
    at 0.25 s: speed 2 t -> 0.5; use 3 s of the clip's own slope instead) as a native file."""
    import dataclasses

    from looprig.cad_import import save_mechanism
    from looprig.core.library import build

    m = build("fourbar")
    slow = dataclasses.replace(m.joint("crank_joint").actuator, velocity_limit=0.2)
    joints = [dataclasses.replace(j, actuator=slow) if j.actuator else j for j in m.joints]
    return save_mechanism(type(m)(m.bodies, joints, m.frames, name="slow"), tmp_path / "slow.looprig.json")


def test_a_refused_run_leaves_nothing_that_passes_check(capsys, tmp_path, shot):
    tracks, mapping, _, _ = shot
    out = tmp_path / "out"
    formats = ("--formats", "csv", "json", "dynamixel-json")
    assert retarget(capsys, shot, out, *formats)[0] == 0  # an earlier good run
    assert run(capsys, "check", out / "curves.csv", "--strict")[0] == 0
    slow = slow_fourbar(tmp_path)
    code, _, err = run(
        capsys,
        "retarget",
        slow,
        tracks,
        "--map",
        mapping,
        "-o",
        out,
        "--strict",
        "--quiet",
        "--limit-mode",
        "report",
        *formats,
    )
    assert code == 3 and "crank_joint" in one_line_error(err) and "--strict" in err
    names = sorted(p.name for p in out.iterdir())
    assert names == [
        "curves.csv.stale",
        "curves.dynamixel.json.stale",
        "curves.json.stale",
        "report.json.stale",
        "report.refused.json",
    ]
    assert run(capsys, "check", out / "curves.csv", "--strict")[0] == 2  # nothing to pass
    refused = json.loads((out / "report.refused.json").read_text())
    assert refused["actuators"][0]["violations"]
    # a good run afterwards replaces the set and marks the refusal report stale
    assert retarget(capsys, shot, out)[0] == 0
    assert {"curves.csv", "report.json", "report.refused.json.stale"} <= {p.name for p in out.iterdir()}


def test_a_run_that_writes_fewer_formats_marks_the_rest_stale(capsys, tmp_path, shot):
    out = tmp_path / "out"
    assert retarget(capsys, shot, out, "--formats", "csv", "json")[0] == 0
    assert retarget(capsys, shot, out, "--formats", "csv")[0] == 0
    assert sorted(p.name for p in out.iterdir()) == ["curves.csv", "curves.json.stale", "report.json"]


def test_a_failure_while_moving_into_place_leaves_no_report(capsys, tmp_path, shot, monkeypatch):
    """A crash between the moves (injected at os.replace) leaves no report.json: no complete set."""
    out = tmp_path / "out"
    assert retarget(capsys, shot, out, "--formats", "csv", "json")[0] == 0
    moves = []
    real_replace = os.replace

    def second_move_fails(src, dst):
        moves.append(dst)
        if len(moves) == 2:
            raise OSError(28, "No space left on device")
        return real_replace(src, dst)

    monkeypatch.setattr(outputs.os, "replace", second_move_fails)
    code, _, err = retarget(capsys, shot, out, "--formats", "csv", "json")
    assert code == 2 and "No space left on device" in one_line_error(err)
    names = {p.name for p in out.iterdir()}
    assert "report.json" not in names and not any(n.startswith(".looprig-staging") for n in names)


def test_a_full_disk_while_writing_is_one_line_and_keeps_no_partial_set(capsys, tmp_path, shot, monkeypatch):
    out = tmp_path / "out"
    assert retarget(capsys, shot, out)[0] == 0
    from looprig.core.export import files

    def full(fd, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "write", full)
    code, _, err = retarget(capsys, shot, out)
    assert code == 2 and "No space left on device" in one_line_error(err)
    names = sorted(p.name for p in out.iterdir())
    assert names == ["curves.csv.stale", "report.json.stale"]


# ---------------------------------------------------------------- 4 and 10.6: findings and exit codes


def test_targets_a_kilometre_away_are_refused_not_written(capsys, tmp_path):
    """Every frame unreachable: exit 3 without --strict, nothing written but the refusal report.
    (One run only: the first frame's restarts make an unreachable clip slow to solve.)"""
    tracks, mapping, _, _ = fourbar_shot(tmp_path, "tiny", 2.0, seconds=3 / 120, rate=120.0)  # 4 frames
    far = json.loads(Path(mapping).read_text())
    far["targets"][0]["offset_position"] = [1400.0, 0.0, 0.0]
    far_map = tmp_path / "far.map.json"
    far_map.write_text(json.dumps(far))
    out = tmp_path / "far"
    code, _, err = run(capsys, "retarget", "fourbar", tracks, "--map", far_map, "-o", out, "--quiet")
    line = one_line_error(err)
    assert code == 3 and "4 of 4 frames unreachable" in line and "--allow-unreachable" in line
    assert sorted(p.name for p in out.iterdir()) == ["report.refused.json"]
    report = json.loads((out / "report.refused.json").read_text())
    assert report["unreachable_frames"] == report["frames"] == 4


def test_the_findings_rules():
    """Residual above tolerance blocks unless allowed; strict blocks any unreachable frame and limits."""
    summary = {
        "frames": 10,
        "unreachable_frames": 2,
        "max_position_error_m": 0.5,
        "max_residual": 1087.0,
        "actuators": [
            {"name": "m", "violations": [{"quantity": "velocity", "start_time": 0.1, "end_time": 0.2}]}
        ],
    }
    kinds = {f.kind: f.blocking for f in app.findings_of(summary, strict=False)}
    assert kinds == {"limits": False, "unreachable": False, "residual": True}
    assert all(f.blocking for f in app.findings_of(summary, strict=True))
    assert not any(f.blocking for f in app.findings_of(summary, strict=False, allow_unassembled=True))
    tight = {**summary, "max_residual": 0.5 * app.RESIDUAL_TOLERANCE_M, "unreachable_frames": 10}
    (finding,) = [f for f in app.findings_of(tight, strict=False) if f.kind == "unreachable"]
    assert finding.blocking and finding.override == "--allow-unreachable"


def test_strict_refuses_some_unreachable_frames_exit_3(capsys, tmp_path, shot):
    tracks, mapping, _, _ = shot
    tight = json.loads(Path(mapping).read_text())
    tight["targets"][0]["offset_position"] = [0.0, 0.0, 0.02]  # off the coupler plane: unreachable
    path = tmp_path / "tight.map.json"
    path.write_text(json.dumps(tight))
    out = tmp_path / "s"
    code, _, err = run(capsys, "retarget", "fourbar", tracks, "--map", path, "-o", out, "--quiet", "--strict")
    assert code == 3 and "unreachable" in one_line_error(err)


# ---------------------------------------------------------------- 5: settings from the command line


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (("--rate", "0"), "setting 'rate' must be > 0"),
        (("--rate", "nan"), "setting 'rate' must be > 0"),
        (("--rate=-inf",), "setting 'rate'"),
        (("--state-weight", "-1"), "setting 'state_weight' must be >= 0"),
        (("--limit-fraction", "2"), "setting 'limit_fraction'"),
        (("--rate", "0.001"), "rate"),
    ],
)
def test_bad_settings_on_the_command_line_are_one_line_exit_2(capsys, tmp_path, shot, option, message):
    code, _, err = retarget(capsys, shot, tmp_path / "o", *option)
    assert code == 2 and message in one_line_error(err)
    assert not (tmp_path / "o" / "curves.csv").exists()


def test_every_setting_has_an_option_that_overrides_the_mapping(capsys, tmp_path, shot):
    from looprig.core.retarget.settings import RETARGET_SETTINGS

    parser = cli.build_parser()
    flags = {
        a.dest: a.option_strings for a in parser._subparsers._group_actions[0].choices["retarget"]._actions
    }
    for setting in RETARGET_SETTINGS:
        flag = "--" + setting.name.replace("_", "-")
        negated = ["--no-" + flag[2:]] if setting.kind is bool else []
        assert flags[f"setting_{setting.name}"] == [flag, *negated]
    for setting in RETARGET_SETTINGS:  # every kind of option parses to a value its Setting accepts
        value = setting.default if setting.default is not None else setting.minimum + 1.0
        flag = "--" + ("no-" if value is False else "") + setting.name.replace("_", "-")
        text = [] if setting.kind is bool else [str(value)]
        args = parser.parse_args(["retarget", "fourbar", "t.json", "--map", "m.json", "-o", "o", flag, *text])
        assert commands.setting_overrides(args) == {setting.name: value}
    out = tmp_path / "r"
    assert retarget(capsys, shot, out, "--rate", "60")[0] == 0
    report = json.loads((out / "report.json").read_text())
    assert report["rate_hz"] == 60.0 and report["frames"] == 16  # 0.25 s at 60 Hz
    assert np.allclose(np.diff(read_csv(out / "curves.csv").times), 1 / 60)


# ---------------------------------------------------------------- 10: warnings for people


def test_warnings_print_as_one_line_for_people(capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        cli.show_warning(
            LooprigWarning("peak lost\n in resampling", "c.csv", "actuator 'knee'"), LooprigWarning, "x.py", 1
        )
        cli.show_warning(UserWarning("plain"), UserWarning, "x.py", 1)
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "looprig: warning: c.csv: actuator 'knee': peak lost in resampling",
        "looprig: warning: UserWarning: plain",
    ]
    shown = warnings.showwarning
    assert main(["info", "fourbar"]) == 0 and warnings.showwarning is shown  # restored after a command


# ---------------------------------------------------------------- found by the CLI fuzz


def test_check_strict_says_why_it_exits_3(capsys, tmp_path):
    t = np.linspace(0.0, 1.0, 101)
    path = tmp_path / "fast.csv"
    write_csv(
        ActuatorCurves(t, np.sin(8 * t)[:, None], ("m",), velocity_limit=1.0), path, allow_violations=True
    )
    code, out, err = run(capsys, "check", path, "--strict")
    assert code == 3 and "velocity" in out
    assert "limit violation(s)" in one_line_error(err)


def test_a_rate_that_would_make_too_many_frames_is_refused_before_solving(capsys, tmp_path, shot):
    code, _, err = retarget(capsys, shot, tmp_path / "o", "--rate", "1e12")
    assert code == 2 and "more than looprig's limit" in one_line_error(err)


def test_a_target_offset_that_overflows_is_one_line_not_a_traceback(capsys, tmp_path, shot):
    tracks, mapping, _, _ = shot
    doc = json.loads(Path(mapping).read_text())
    doc["targets"][0]["offset_position"] = [0.0, 0.0, 1e308]
    path = tmp_path / "huge.map.json"
    path.write_text(json.dumps(doc))
    code, _, err = run(capsys, "retarget", "fourbar", tracks, "--map", path, "-o", tmp_path / "o", "--quiet")
    assert code in (2, 3)
    one_line_error(err)
    assert not (tmp_path / "o" / "curves.csv").exists()


def test_an_export_refusal_is_one_line_naming_the_cli_flag(capsys, tmp_path):
    t = np.linspace(0.0, 1.0, 101)
    path = tmp_path / "fast.csv"
    curves = ActuatorCurves(t, np.sin(2 * np.pi * t)[:, None], ("motor",), velocity_limit=5.0)
    write_csv(curves, path, allow_violations=True)
    code, _, err = run(capsys, "export", path, "--format", "header", "-o", tmp_path / "c.h")
    line = one_line_error(err)
    assert (
        code == 3 and "--allow-violations writes the file anyway" in line and "allow_violations=" not in line
    )
    assert not (tmp_path / "c.h").exists()
