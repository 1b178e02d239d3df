"""Curves are named as the robot file names its motors, and motors answer to that name
and to their joint's.

The four-bar of ``tests/data`` is read by the real parsers: as MJCF (MuJoCo's compiler)
its crank servo is ``<position name="crank_motor" joint="crank_joint">``, as URDF a
``<transmission>`` whose ``<actuator name="crank_motor">`` drives ``crank_joint``.
"""

import dataclasses
import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from looprig.cad_import import FileFormatWarning, load_mechanism, save_mechanism
from looprig.core import Actuator, FrameObjective, IKProblem, Mechanism, MechanismError, solve_fk
from looprig.core.errors import TargetError
from looprig.core.export import (
    DynamixelSettings,
    read_c_header,
    read_csv,
    read_dynamixel_csv,
    read_json,
    write_c_header,
    write_csv,
    write_dynamixel_csv,
    write_json,
    write_plain_csv,
)
from looprig.core.maths.rotations import quat_from_matrix
from looprig.core.retarget import RetargetMapping, TargetSpec, TrackSamples, retarget
from looprig.core.tracks.format import Clip, Track, write_tracks

from looprig.cli import main

DATA = Path(__file__).parent / "data"
MJCF, URDF = DATA / "fourbar_connect.xml", DATA / "fourbar_closing.urdf"
RATE = 100.0


def crank_clip(mechanism: Mechanism, frame: str):
    """A crank swing theta(t) = 0.4 sin(pi t) [rad] over 1 s and the path of ``frame``
    under it (FK), as track ``point``: returns (samples, theta (F,))."""
    times = np.arange(round(RATE) + 1) / RATE
    theta = 0.4 * np.sin(np.pi * times)
    state, states = mechanism.initial_state(), []
    for angle in theta:
        state = solve_fk(mechanism, [angle], initial_state=state).state
        states.append(state)
    points, axes = IKProblem(mechanism, [FrameObjective(frame)]).frame_terms.poses(np.array(states))
    return TrackSamples(times, {"point": points[:, 0]}, {"point": axes[:, 0]}), theta


def test_mjcf_and_urdf_motors_take_the_files_actuator_names():
    for path in (MJCF, URDF):
        m = load_mechanism(path)
        assert m.actuator_names == ["crank_motor"], path
        assert m.actuated_joint("crank_motor") is m.actuated_joint("crank_joint") is m.joint("crank_joint")
        with pytest.raises(MechanismError, match=r"^--hold: no actuator 'crank'; actuators are: "):
            m.actuated_joint("crank", "--hold")


def test_curves_carry_the_actuator_name_through_every_writer(tmp_path):
    """A retarget of the MJCF four-bar (site B followed, default settings) gives the curve
    ``crank_motor`` equal to the crank swing; CSV, plain CSV, JSON, C header and Dynamixel
    ticks all carry that name and read back to the same values."""
    m = load_mechanism(MJCF)
    samples, theta = crank_clip(m, "B")
    result = retarget(m, samples, RetargetMapping((TargetSpec("point", "B"),), rate=RATE))
    curves = result.curves
    assert curves.names == ("crank_motor",)
    assert np.abs(curves.values[:, 0] - theta).max() < 1e-6

    write_csv(curves, tmp_path / "c.csv")
    write_json(curves, tmp_path / "c.json")
    for back in (read_csv(tmp_path / "c.csv"), read_json(tmp_path / "c.json")):
        assert back.names == ("crank_motor",)
        assert np.array_equal(back.values, curves.values)

    plain = tmp_path / "plain.csv"
    write_plain_csv(curves, plain)
    table = np.loadtxt(plain, delimiter=",", skiprows=1)  # one header row, nothing else
    assert table.shape == (len(curves.times), 2)
    assert np.array_equal(table[:, 1], curves.values[:, 0]) and np.array_equal(table[:, 0], curves.times)
    assert plain.read_text().splitlines()[0] == "time [s],crank_motor [rad]"
    assert read_csv(plain).names == ("crank_motor",)

    servos = DynamixelSettings.from_mechanism(m)
    assert set(servos.motors) == {"crank_motor"}
    write_dynamixel_csv(curves, tmp_path / "ticks.csv", servos)
    assert "crank_motor [tick]" in (tmp_path / "ticks.csv").read_text()
    assert (
        np.abs(read_dynamixel_csv(tmp_path / "ticks.csv").to_values() - curves.values).max() <= np.pi / 4096
    )
    write_c_header(curves, tmp_path / "c.h")
    header = read_c_header(tmp_path / "c.h")
    assert header.names == ("crank_motor",)
    radians = (header.values - 2048) * 2 * np.pi / 4096  # Goal Position ticks, zero at 2048
    assert np.abs(radians - curves.values).max() <= np.pi / 4096


def test_mapping_names_motors_by_actuator_or_joint_name():
    m = load_mechanism(URDF)
    by_joint = RetargetMapping(
        (TargetSpec("t", "coupler"),),
        start={"crank_joint": 0.1},
        motors=("crank_joint",),
        hold=("crank_joint",),
    )
    by_motor = RetargetMapping(
        (TargetSpec("t", "coupler"),),
        start={"crank_motor": 0.1},
        motors=("crank_motor",),
        hold=("crank_motor",),
    )
    for mapping in (by_joint, by_motor):
        named = mapping.named_for(m)
        assert named.start == {"crank_motor": 0.1} and named.hold == ("crank_motor",)
        assert named.motors == ("crank_joint",)
        assert named.named_for(m) == named
    with pytest.raises(TargetError) as info:
        dataclasses.replace(by_motor, hold=("crank",)).named_for(m)
    message = str(info.value)
    assert "\n" not in message and "crank_motor (joint crank_joint)" in message and "'crank'" in message


def write_crank_shot(folder: Path) -> tuple[Path, Path, np.ndarray]:
    """Tracks (site B's path under the crank swing) and a mapping for the MJCF four-bar."""
    m = load_mechanism(MJCF)
    samples, theta = crank_clip(m, "B")
    clip = Clip(
        RATE, 0, {"point": Track(samples.positions["point"], quat_from_matrix(samples.rotations["point"]))}
    )
    tracks = write_tracks(clip, folder / "shot.tracks.json")
    mapping = folder / "shot.map.json"
    RetargetMapping((TargetSpec("point", "B"),), rate=RATE).save(mapping)
    return tracks, mapping, theta


def test_command_line_takes_actuator_and_joint_names(capsys, tmp_path):
    """``--start``/``--hold``/``--motors`` take ``crank_motor`` or ``crank_joint`` alike;
    curves.csv's column is ``crank_motor``; an unknown name is one line, exit 2."""
    tracks, mapping, theta = write_crank_shot(tmp_path)

    def run(folder: str, *options: str) -> int:
        argv = ["retarget", str(MJCF), str(tracks), "--map", str(mapping), "-o", str(tmp_path / folder)]
        return main([*argv, "--quiet", *options])

    options = ("--formats", "csv", "plain-csv")
    assert run("motor", "--motors", "crank_motor", "--start", "crank_motor=0.01", *options) == 0
    assert run("joint", "--motors", "crank_joint", "--start", "crank_joint=0.01") == 0
    motor, joint = (read_csv(tmp_path / f / "curves.csv") for f in ("motor", "joint"))
    assert motor.names == joint.names == ("crank_motor",)
    assert np.abs(motor.values[:, 0] - theta).max() < 1e-6
    assert np.array_equal(motor.values, joint.values)
    plain = tmp_path / "motor" / "curves.plain.csv"
    assert plain.read_text().splitlines()[0] == "time [s],crank_motor [rad]"
    assert np.array_equal(np.loadtxt(plain, delimiter=",", skiprows=1)[:, 1], motor.values[:, 0])
    assert (tmp_path / "motor" / "curves.plain.meta.json").is_file()
    for name in ("crank_motor", "crank_joint"):
        run(f"held_{name}", "--hold", name, "--allow-unreachable")
        held = read_csv(tmp_path / f"held_{name}" / "curves.csv").values
        assert np.abs(held).max() < 1e-9  # the crank stays at its start, 0
    # the rocker as the motor: the file's crank servo is passive, and left out of the ticks
    assert run("rocker", "--motors", "rocker_joint", "--formats", "dynamixel-csv") == 0
    assert "time [s],rocker_joint [tick]" in (tmp_path / "rocker" / "curves.dynamixel.csv").read_text()
    capsys.readouterr()
    assert run("bad", "--hold", "crank") == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "crank_motor (joint crank_joint)" in err
    assert main(["info", str(MJCF)]) == 0
    assert "actuator crank_motor on joint crank_joint:" in capsys.readouterr().out
    assert json.loads((tmp_path / "motor" / "report.json").read_text())


def test_actuator_names_are_unique_and_name_no_other_joint():
    m = load_mechanism(URDF)
    crank, rocker = m.joint("crank_joint"), m.joint("rocker_joint")

    def with_actuators(crank_actuator, rocker_actuator) -> Mechanism:
        actuated = {crank.name: crank_actuator, rocker.name: rocker_actuator}
        joints = [dataclasses.replace(j, actuator=actuated.get(j.name, j.actuator)) for j in m.joints]
        return Mechanism(m.bodies, joints, m.frames)

    with pytest.raises(MechanismError, match="both carry an actuator named 'drive'"):
        with_actuators(Actuator(name="drive"), Actuator(name="drive"))
    with pytest.raises(
        MechanismError, match="its actuator's name 'coupler_joint' is the name of another joint"
    ):
        with_actuators(Actuator(name="coupler_joint"), None)
    # an unnamed actuator takes its joint's name, wherever it is moved
    assert with_actuators(None, Actuator()).actuator_names == ["rocker_joint"]
    assert with_actuators(None, crank.actuator).actuator_names == ["crank_motor"]


def test_the_native_file_keeps_actuator_names(tmp_path):
    m = load_mechanism(MJCF)
    back = load_mechanism(save_mechanism(m, tmp_path / "fourbar.looprig.json"))
    assert back.actuator_names == ["crank_motor"] and back.joint("crank_joint").actuator.name == "crank_motor"


def test_a_transmission_driving_two_joints_leaves_their_names(tmp_path):
    """One ``<actuator name="drive">`` for two joints cannot name two curves: the joints'
    names stay, with a warning."""
    text = URDF.read_text().replace(
        '<joint name="crank_joint">',
        '<joint name="crank_joint"><hardwareInterface>x</hardwareInterface></joint>'
        '<joint name="rocker_joint">',
    )
    assert text != URDF.read_text()
    path = tmp_path / "two.urdf"
    path.write_text(text)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = load_mechanism(path, sidecar=None)
    assert m.actuator_names == ["crank_joint", "rocker_joint"]
    messages = " ".join(str(w.message) for w in caught if issubclass(w.category, FileFormatWarning))
    assert "actuator 'crank_motor' drives several joints" in messages
