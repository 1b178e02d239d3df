"""A clip retargeted as a loop (``cyclic``) is written, checked and recorded as one:
its files pass ``looprig check --strict --cyclic``, the seam read as any other frame."""

import json

import numpy as np
from looprig.core.curves.actuator_curves import ActuatorCurves
from looprig.core.library import build
from shots import fourbar_shot

from looprig.cli import main
from looprig.curve_files import write_curves


def test_a_looped_retarget_writes_files_that_pass_the_cyclic_check(tmp_path, capsys):
    """The four-bar's crank winds up over a second and, looped, snaps back to its start:
    held with ``--cyclic`` the seam keeps every limit, and each written file says so."""
    tracks, mapping, _, _ = fourbar_shot(tmp_path, speed=1.0)
    out = tmp_path / "out"
    command = ["retarget", "fourbar", str(tracks), "--map", str(mapping), "-o", str(out), "--quiet"]
    assert main([*command, "--cyclic", "--formats", "csv", "json"]) == 0
    assert json.loads((out / "report.json").read_text())["limited_frames"] > 0
    for name in ("curves.csv", "curves.json"):
        capsys.readouterr()
        assert main(["check", str(out / name), "--strict", "--cyclic"]) == 0, capsys.readouterr()


def test_a_loop_is_recorded_with_its_seam_read_as_a_loop(tmp_path, capsys):
    """One period of a sine whose speed peaks at the seam: read as a loop (central
    differences round the seam) it keeps a speed limit that the one-sided difference at
    a clip's first sample (second order, 3 % high at 20 samples a period) breaks. Written
    as a loop, nothing is recorded as broken and the cyclic check passes; the same
    samples read as a clip do not."""
    mechanism = build("fourbar")
    limit = mechanism.actuated_joints[0].actuator.velocity_limit
    F, rate = 20, 100.0
    omega = 2 * np.pi * rate / F
    amplitude = limit / omega  # central differences read 0.984 of the limit, one-sided 1.032
    values = amplitude * np.sin(omega * np.arange(F) / rate)[:, None]
    curves = ActuatorCurves.from_mechanism(mechanism, values, rate)
    for cyclic, folder in ((True, "loop"), (False, "clip")):
        write_curves(curves, tmp_path / folder, ["csv"], allow_violations=True, cyclic=cyclic)
    capsys.readouterr()
    assert main(["check", str(tmp_path / "loop" / "curves.csv"), "--strict", "--cyclic"]) == 0
    assert main(["check", str(tmp_path / "clip" / "curves.csv"), "--strict"]) != 0
    assert main(["check", str(tmp_path / "clip" / "curves.csv"), "--strict", "--cyclic"]) != 0


def test_the_demo_dance_written_as_a_loop_passes_the_cyclic_check_and_three_loops_the_strict_one(
    tmp_path, capsys
):
    """Issue 26: the bundled dance on the Dancer, retargeted with ``--cyclic`` at the demo's
    own settings (its seam asks up to 46 rad/s of 3.14 rad/s servos): its files pass
    ``looprig check --strict --cyclic``, and the curves played three times in a row,
    written as one clip, pass ``looprig check --strict``."""
    import dataclasses

    from looprig.curve_files import load_curves
    from looprig.demo import CLIP_FILE, MAP_FILE

    out = tmp_path / "out"
    command = ["retarget", "dancer", str(CLIP_FILE), "--map", str(MAP_FILE), "-o", str(out), "--quiet"]
    assert main([*command, "--cyclic", "--formats", "csv", "json"]) == 0
    assert json.loads((out / "report.json").read_text())["limit_solve"]["converged"]
    for name in ("curves.csv", "curves.json"):
        capsys.readouterr()
        assert main(["check", str(out / name), "--strict", "--cyclic"]) == 0, capsys.readouterr()
    once = load_curves(out / "curves.csv")
    F = len(once.times)
    rate = (F - 1) / (once.times[-1] - once.times[0])
    three = dataclasses.replace(
        once, times=once.times[0] + np.arange(3 * F) / rate, values=np.tile(once.values, (3, 1))
    )
    write_curves(three, tmp_path / "three", ["csv"], allow_violations=False)
    capsys.readouterr()
    assert main(["check", str(tmp_path / "three" / "curves.csv"), "--strict"]) == 0, capsys.readouterr()
