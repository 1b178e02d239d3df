"""The ``mayapy`` batch command, run on the Maya emulation (``tests/maya_emulation``; not Maya).

A scene file here is the emulation's JSON scene description under a ``.ma``
name (the emulated ``cmds.file(open=True)`` reads that; real Maya reads Maya
files). The subprocess test runs the command as a farm would, with the
emulation standing in for Maya's own modules on ``PYTHONPATH``.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from looprig.core.tracks import read_tracks

EMULATION = Path(__file__).parent / "maya_emulation"

SCENE = {
    "emulated_maya_scene": 1,
    "units": {"linear": "cm", "angle": "deg", "time": "film"},
    "up_axis": "y",
    "playback": [1, 12],
    "current_time": 1,
    "nodes": [
        {"name": "hip", "keys": {"translateY": [[1, 90.0], [12, 101.0]]}},
        {
            "name": "hand_ctrl",
            "parent": "hip",
            "values": {"translateX": 40.0},
            "keys": {"rotateZ": [[1, 0.0], [12, 90.0]]},
        },
    ],
    "sets": {"looprig_tracks": ["hip"]},
}


@pytest.fixture
def maya(monkeypatch):
    """A fresh emulated Maya session (``maya._scene``); ``tests/maya_emulation`` on sys.path."""
    monkeypatch.syspath_prepend(str(EMULATION))
    from maya import _scene

    _scene.reset()
    return _scene


@pytest.fixture
def shot(tmp_path):
    path = tmp_path / "shot010.ma"
    path.write_text(json.dumps(SCENE))
    return path


@pytest.fixture
def run(maya):
    from looprig.maya_scripts import batch, maya_facade

    def call(*argv):
        return batch.main([str(a) for a in argv], host=maya_facade)

    return call


def test_batch_exports_named_tracks_at_1200_hz(run, maya, shot, tmp_path, capsys):
    out = tmp_path / "shot010.tracks.json"
    status = run(
        shot, "--nodes", "hip", "hand_ctrl=hand", "--start", 1, "--end", 12, "--rate", 1200, "-o", out
    )
    assert status == 0
    clip = read_tracks(out)
    assert list(clip.tracks) == ["hip", "hand"] and clip.n_frames == 551 and clip.fps == 1200
    np.testing.assert_allclose(clip.tracks["hip"].positions[[0, -1], 2], [0.90, 1.01])  # Y up -> Z up, m
    assert clip.source["scene"] == str(shot)
    printed = capsys.readouterr().out
    assert "100% (551/551 samples)" in printed and "wrote 2 track(s) x 551 samples at 1200 Hz" in printed
    calls = maya.session().calls
    assert calls["standalone.initialize"] == 1 and calls["standalone.uninitialize"] == 1


def test_batch_defaults_to_the_tracks_set_playback_range_and_scene_rate(run, shot, tmp_path):
    out = tmp_path / "a.npz"
    assert run(shot, "-o", out, "--quiet") == 0
    clip = read_tracks(out)
    assert list(clip.tracks) == ["hip"] and (clip.frame_start, clip.frame_end, clip.fps) == (1, 12, 24)


def test_missing_node_fails_with_a_clear_message_and_no_file(run, shot, tmp_path, capsys):
    out = tmp_path / "x.json"
    assert run(shot, "--nodes", "hip", "hand_ctl", "-o", out) == 1
    err = capsys.readouterr().err
    assert err.startswith(
        "error: cannot export: no transform 'hand_ctl' in the scene (did you mean hand_ctrl?)"
    )
    assert not out.exists() and os.listdir(tmp_path) == ["shot010.ma"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--start", "20", "--end", "10"], "error: --end 10 is before --start 20"),
        (["--rate", "5000"], "error: --rate must lie in (0, 1200] Hz, got 5000"),
        (["--rate", "nan"], "error: --rate must be a finite number"),
    ],
)
def test_bad_ranges_fail_before_the_scene_is_opened(run, maya, shot, tmp_path, capsys, args, message):
    assert run(shot, "--nodes", "hip", "-o", tmp_path / "x.json", *args) == 1
    assert capsys.readouterr().err.startswith(message)
    assert maya.session().calls["file"] == 0 and not (tmp_path / "x.json").exists()


def test_range_outside_the_grid_and_missing_set_and_scene_fail(run, shot, tmp_path, capsys):
    assert run(shot, "--nodes", "hip", "--start", 1.2, "--end", 1.4, "-o", tmp_path / "x.json") == 1
    assert "no sample of the 24 Hz grid" in capsys.readouterr().err
    assert run(shot, "--set", "props", "-o", tmp_path / "x.json") == 1
    assert "error: no object set 'props' in the scene" in capsys.readouterr().err
    assert run(tmp_path / "nope.ma", "-o", tmp_path / "x.json") == 1
    assert "scene file" in capsys.readouterr().err
    bad = tmp_path / "broken.ma"
    bad.write_text("not a scene")
    assert run(bad, "-o", tmp_path / "x.json") == 1
    assert "error: cannot open scene" in capsys.readouterr().err
    assert run(shot, "--nodes", "hip", "-o", tmp_path / "no" / "x.json") == 1
    assert "output folder" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()


def test_command_line_errors_exit_2(run, shot, capsys):
    assert run(shot, "--nodes", "hip") == 2  # no -o
    assert "required: -o/--output" in capsys.readouterr().err
    assert run(shot, "--nodes", "hip", "--set", "s", "-o", "x.json") == 2
    assert run("--help") == 0


def test_mayapy_style_subprocess(shot, tmp_path):
    """``python -m looprig.maya_scripts.batch`` with the emulation standing in for Maya's modules."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(EMULATION), os.environ.get("PYTHONPATH", "")])}
    command = [
        sys.executable,
        "-m",
        "looprig.maya_scripts.batch",
        str(shot),
        "--nodes",
        "hand_ctrl",
        "--rate",
        "48",
        "-o",
        str(tmp_path / "out.json"),
    ]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert read_tracks(tmp_path / "out.json").n_frames == 23
    done = subprocess.run(
        command[:5] + ["ghost", "-o", str(tmp_path / "ghost.json")],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stderr.strip() == "error: cannot export: no transform 'ghost' in the scene"
    assert not (tmp_path / "ghost.json").exists()
