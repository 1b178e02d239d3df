"""The command line, end to end: files in, curves and reports out, exit codes."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from looprig.core.curves.actuator_curves import ActuatorCurves
from looprig.core.export import read_csv, write_csv
from looprig.core.library import NAMES, build
from shots import fourbar_shot

from looprig.cli import main

EXPECTED_DOF = {
    "fourbar": 1,
    "slider_crank": 1,
    "two_link_arm": 2,
    "boxer": 4,
    "dancer": 6,
    "walker": 18,
    "stewart": 6,
    "delta": 3,
    "all_joints": 1,
    "chain_6r6p": 12,
}
MODELS = Path(__file__).resolve().parents[2] / "shared" / "models"


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("name", NAMES)
def test_info_json_of_every_reference_mechanism(capsys, name):
    code, out, _ = run(capsys, "info", name, "--json")
    info = json.loads(out)
    assert code == 0
    assert {"name", "bodies", "joints", "actuators", "loops", "dof", "redundant_constraints"} <= set(info)
    m = build(name)
    assert (info["bodies"], info["joints"], info["actuators"]) == (
        len(m.bodies),
        len(m.joints),
        len(m.actuated_joints),
    )
    assert info["dof"] == EXPECTED_DOF[name]
    assert info["loops"] == m.independent_loops()


def test_console_script_is_installed():
    exe = Path(sys.executable).with_name("looprig")
    result = subprocess.run([exe, "info", "fourbar", "--json"], capture_output=True, text=True, check=True)
    assert json.loads(result.stdout)["dof"] == 1


@pytest.mark.skipif(not MODELS.exists(), reason="../shared/models is not present")
def test_convert_a_urdf_and_read_the_native_file_back(capsys, tmp_path):
    urdf = MODELS / "gepetto_5bar_linkage" / "robot.urdf"
    native = tmp_path / "five_bar.looprig.json"
    assert run(capsys, "convert", str(urdf), str(native))[0] == 0
    _, from_urdf, _ = run(capsys, "info", str(urdf), "--json")
    _, from_native, _ = run(capsys, "info", str(native), "--json")
    a, b = json.loads(from_urdf), json.loads(from_native)
    assert a == b and a["loops"] == 1


def test_bad_input_is_one_line_and_exit_2(capsys):
    code, _, err = run(capsys, "info", "no_such_robot.urdf")
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "neither a file nor a reference mechanism" in err


def fourbar_clip(tmp_path, rate=240.0, seconds=1.0):
    """Tracks of the four-bar's coupler point while the crank turns by theta(t) = 2 t^2 (s)."""
    return fourbar_shot(tmp_path, "coupler", 2.0, seconds, rate)


def test_retarget_fourbar_end_to_end_matches_the_closed_form(capsys, tmp_path):
    """The crank curve written by the CLI equals theta(t) = 2 t^2, the crank angle whose
    forward kinematics drew the coupler path (a Y-up, centimetre tracks file)."""
    tracks, mapping, times, theta = fourbar_clip(tmp_path)
    out = tmp_path / "out"
    code, _, _ = run(
        capsys,
        "retarget",
        "fourbar",
        str(tracks),
        "--map",
        str(mapping),
        "-o",
        str(out),
        "--formats",
        "csv",
        "json",
        "--quiet",
    )
    assert code == 0
    curves = read_csv(out / "curves.csv")
    assert np.allclose(curves.times, times)
    assert np.abs(curves.column("crank_joint") - theta).max() < 1e-6
    report = json.loads((out / "report.json").read_text())
    assert report["frames"] == len(times) and report["max_residual"] < 1e-9
    assert report["max_position_error_m"] < 1e-6
    crank = report["actuators"][0]
    assert crank["name"] == "crank_joint" and crank["peak_velocity"] == pytest.approx(4.0, rel=1e-3)


def test_strict_retarget_refuses_curves_over_the_limit(capsys, tmp_path):
    """theta = 2 t^2 reaches 4 rad/s; the crank's limit is 6 rad/s, so lower it to 3."""
    tracks, mapping, _, _ = fourbar_clip(tmp_path)
    m = build("fourbar")
    import dataclasses

    from looprig.cad_import import save_mechanism

    slow = dataclasses.replace(m.joint("crank_joint").actuator, velocity_limit=3.0)
    joints = [dataclasses.replace(j, actuator=slow) if j.actuator else j for j in m.joints]
    native = save_mechanism(type(m)(m.bodies, joints, m.frames, name="slow"), tmp_path / "slow.looprig.json")
    out = tmp_path / "strict"
    code, _, err = run(
        capsys,
        "retarget",
        str(native),
        str(tracks),
        "--map",
        str(mapping),
        "-o",
        str(out),
        "--strict",
        "--quiet",
    )
    assert code == 3 and "crank_joint" in err
    assert not (out / "curves.csv").exists()
    code, _, _ = run(
        capsys, "retarget", str(native), str(tracks), "--map", str(mapping), "-o", str(out), "--quiet"
    )
    assert code == 0 and "violation" in (out / "curves.csv").read_text()


def test_check_export_and_plot_a_curves_file(capsys, tmp_path):
    t = np.linspace(0.0, 1.0, 101)
    curves = ActuatorCurves(t, np.sin(2 * np.pi * t)[:, None], ("motor",), velocity_limit=5.0)
    path = tmp_path / "c.csv"
    write_csv(curves, path, allow_violations=True)  # peak 2 pi > 5 rad/s
    code, out, _ = run(capsys, "check", str(path))
    assert code == 0 and "motor" in out and "velocity" in out
    assert run(capsys, "check", str(path), "--strict")[0] == 3
    code, _, _ = run(capsys, "export", str(path), "--format", "header", "-o", str(tmp_path / "c.h"))
    assert code == 3 and not (tmp_path / "c.h").exists()
    code, out, _ = run(
        capsys,
        "export",
        str(path),
        "--format",
        "dynamixel-json",
        "-o",
        str(tmp_path / "c.json"),
        "--allow-violations",
    )
    assert code == 0 and "recorded violations" in out
    assert run(capsys, "plot", str(path), "-o", str(tmp_path / "c.png"))[0] == 0
    assert (tmp_path / "c.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_demo_writes_every_format_and_a_summary(capsys, tmp_path):
    code, _, _ = run(capsys, "demo", "-o", str(tmp_path), "--quiet")
    assert code == 0
    names = {p.name for p in tmp_path.iterdir()}
    assert {
        "curves.csv",
        "curves.json",
        "curves.dynamixel.csv",
        "curves.dynamixel.json",
        "curves.h",
        "report.json",
        "curves.png",
    } <= names
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["max_residual"] < 1e-9
    assert all(a["peak_velocity"] <= a["velocity_limit"] for a in report["actuators"])


def test_bundled_demo_clip_is_the_generated_one():
    """The committed clip equals what its generator makes (regenerate on purpose only)."""
    from looprig.core.tracks import read_tracks

    from looprig.demo import CLIP_FILE, bundled_clip

    stored, made = read_tracks(CLIP_FILE), bundled_clip()
    assert np.allclose(stored.tracks["pelvis"].positions, made.tracks["pelvis"].positions, atol=1e-9)


def test_retarget_writes_ticks_with_each_servos_zero_and_direction(capsys, tmp_path):
    """Goal Position = zero - round(theta 4096 / 2 pi) for a servo mounted reversed at 1000."""
    import dataclasses

    from looprig.cad_import import save_mechanism
    from looprig.core.export import read_dynamixel_json

    tracks, mapping, times, theta = fourbar_clip(tmp_path)
    m = build("fourbar")
    servo = dataclasses.replace(m.joint("crank_joint").actuator, zero_offset_ticks=1000, direction=-1)
    joints = [dataclasses.replace(j, actuator=servo) if j.actuator else j for j in m.joints]
    native = save_mechanism(type(m)(m.bodies, joints, m.frames, name="reversed"), tmp_path / "r.looprig.json")
    out = tmp_path / "ticks"
    args = ["retarget", str(native), str(tracks), "--map", str(mapping), "-o", str(out)]
    assert run(capsys, *args, "--formats", "dynamixel-json", "--quiet")[0] == 0
    ticks = read_dynamixel_json(out / "curves.dynamixel.json")
    assert np.allclose(ticks.times, times)
    assert np.abs(ticks.ticks[:, 0] - (1000 - np.round(theta * 4096 / (2 * np.pi)))).max() <= 1


@pytest.mark.skipif(importlib.util.find_spec("bpy") is None, reason="--blend needs the bpy module")
def test_demo_blend_runs_the_add_ons_demo_program(tmp_path, monkeypatch):
    """``looprig demo --blend`` starts ``python -m looprig.blender_addon.demo`` (the app layer does not
    import the add-on): a .blend file comes out beside the curves."""
    monkeypatch.setenv("BLENDER_USER_RESOURCES", str(tmp_path / "blender"))
    blend = tmp_path / "scene" / "fourbar.blend"
    assert main(["demo", "-o", str(tmp_path / "out"), "--quiet", "--blend", str(blend)]) == 0
    head = blend.read_bytes()[:7]
    assert head == b"BLENDER" or head[:4] == b"\x28\xb5\x2f\xfd"  # plain or zstd-compressed .blend
    assert (tmp_path / "out" / "report.json").exists()


def test_retarget_takes_the_start_motors_and_held_motors_from_the_command_line(tmp_path):
    """--start, --motors and --hold override the mapping: a start the mapping does not
    name is used, a name that is no motor is one line (exit 2), a held motor stays put."""
    from shots import fourbar_shot

    tracks, mapping, _, theta = fourbar_shot(tmp_path)

    def run(folder: str, *options: str) -> int:
        command = ["retarget", "fourbar", str(tracks), "--map", str(mapping), "-o", str(tmp_path / folder)]
        return main([*command, "--quiet", *options])

    assert run("out", "--start", "crank_joint=0.01", "--motors", "crank_joint") == 0
    crank = read_csv(tmp_path / "out" / "curves.csv").values[:, 0]
    assert np.abs(crank - theta).max() < 1e-6
    assert run("bad", "--start", "wrist=0.1") == 2
    run("held", "--hold", "crank_joint", "--allow-unreachable")
    assert json.loads((tmp_path / "held" / "report.json").read_text())["unreachable_frames"] > 0
