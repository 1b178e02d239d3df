"""Review import of baked actuator curves into Maya, on the emulation in ``tests/maya_emulation`` (not Maya).

Round trip: curves written by ``looprig.core.export`` (CSV and JSON) are keyed
in the emulated scene; the keys read back with ``cmds.keyframe`` must be the
samples at Maya frame ``t · fps``, in the scene's UI units (degrees for
``rad``, the linear unit for ``m``), and evaluating between keys must give the
straight line between samples.
"""

from pathlib import Path

import numpy as np
import pytest
from looprig.core.curves.actuator_curves import ActuatorCurves
from looprig.core.export import write_csv, write_json

EMULATION = Path(__file__).parent / "maya_emulation"
TIMES = (24 + np.arange(121)) / 1200  # frames 0.48 .. 2.88 at 24 fps, 1200 Hz
KNEE = 0.6 * np.sin(2 * np.pi * 3 * TIMES)  # rad, peak 11.3 rad/s
SLIDER = 0.02 + 0.01 * TIMES  # m


@pytest.fixture
def maya(monkeypatch):
    """A fresh emulated Maya session (``maya._scene``); ``tests/maya_emulation`` on sys.path."""
    monkeypatch.syspath_prepend(str(EMULATION))
    from maya import _scene

    _scene.reset()
    _scene.load_scene(
        {
            "emulated_maya_scene": 1,
            "nodes": [{"name": "rig"}, {"name": "robot", "parent": "rig"}],
            "selection": ["rig"],
        }
    )
    return _scene


@pytest.fixture
def review(maya):
    from looprig.maya_scripts import maya_facade
    from looprig.maya_scripts.review import import_curves

    def run(path, *args, **kwargs):
        return import_curves(str(path), *args, host=maya_facade, **kwargs)

    return run


def curves():
    return ActuatorCurves(
        times=TIMES,
        values=np.column_stack([KNEE, SLIDER]),
        names=("knee", "slider.left"),
        units=("rad", "m"),
        velocity_limit=[8.0, np.inf],
        hardware_ids=(1, 2),
    )


@pytest.fixture(params=["json", "csv"])
def curves_file(request, tmp_path):
    path = tmp_path / f"motors.{request.param}"
    writer = write_json if request.param == "json" else write_csv
    violations = writer(curves(), path, allow_violations=True)
    assert violations and {v.actuator for v in violations} == {"knee"}
    return path, violations


def test_round_trip_keys_on_a_new_locator(review, maya, curves_file):
    from maya import cmds

    path, _violations = curves_file
    result = review(path)
    assert result.node == "looprig_curves"
    assert result.attributes == {"knee": "looprig_knee", "slider.left": "looprig_slider_left"}
    assert result.keys_per_curve == 121
    frames = cmds.keyframe("looprig_curves.looprig_knee", query=True, timeChange=True)
    np.testing.assert_allclose(frames, TIMES * 24, rtol=0, atol=1e-9)
    knee_deg = cmds.keyframe("looprig_curves.looprig_knee", query=True, valueChange=True)
    np.testing.assert_allclose(knee_deg, np.degrees(KNEE), atol=1e-9)
    slider_cm = cmds.keyframe("looprig_curves.looprig_slider_left", query=True, valueChange=True)
    np.testing.assert_allclose(slider_cm, SLIDER * 100, atol=1e-9)
    # between samples: the straight line
    middle = (TIMES[10] + TIMES[11]) / 2 * 24
    assert cmds.getAttr("looprig_curves.looprig_knee", time=middle) == pytest.approx(
        np.degrees((KNEE[10] + KNEE[11]) / 2)
    )
    # creating the locator selected it; the user's selection is back
    assert cmds.ls(selection=True) == ["rig"]
    assert maya.session().find("looprig_curves")[0].attribute("looprig_knee").nice_name == "knee [rad]"


def test_violations_become_a_stepped_over_limit_flag(review, curves_file):
    from maya import cmds

    path, violations = curves_file
    result = review(path)
    assert result.over_limit_attributes == {"knee": "looprig_knee_over_limit"}
    plug = "looprig_curves.looprig_knee_over_limit"
    for t in TIMES:
        inside = any(v.start_time - 1e-12 <= t <= v.end_time + 1e-12 for v in violations)
        assert cmds.getAttr(plug, time=t * 24) is inside
    assert "limit violations flagged on looprig_knee_over_limit" in result.summary()


def test_ui_units_are_respected(review, maya, curves_file):
    from maya import cmds

    cmds.currentUnit(angle="rad", linear="mm", time="ntsc")
    path, _ = curves_file
    review(path)
    knee = cmds.keyframe("looprig_curves.looprig_knee", query=True, valueChange=True)
    np.testing.assert_allclose(knee, KNEE)
    np.testing.assert_allclose(
        cmds.keyframe("looprig_curves.looprig_slider_left", query=True, valueChange=True), SLIDER * 1000
    )
    np.testing.assert_allclose(
        cmds.keyframe("looprig_curves.looprig_knee", query=True, timeChange=True), TIMES * 30, atol=1e-9
    )


def test_reimport_on_an_existing_node_replaces_only_its_own_keys(review, maya, curves_file):
    from maya import cmds

    path, _ = curves_file
    cmds.setKeyframe("robot.translateX", time=1, value=5.0)
    review(path, "robot")
    review(path, "robot")
    assert cmds.keyframe("robot.looprig_knee", query=True, keyframeCount=True) == 121
    assert cmds.keyframe("robot.translateX", query=True, valueChange=True) == [5.0]
    review(path, "robot", prefix="take2_")
    assert cmds.attributeQuery("take2_knee", node="robot", exists=True)
    assert cmds.keyframe("robot.looprig_knee", query=True, keyframeCount=True) == 121


def test_bad_input_is_named(review, tmp_path):
    from looprig.maya_scripts.errors import CurvesFileError, MayaScriptError, NodeError

    good = tmp_path / "good.json"
    write_json(curves(), good, allow_violations=True)
    with pytest.raises(NodeError, match="no node 'ghost' in the scene"):
        review(good, "ghost")
    with pytest.raises(MayaScriptError, match="attribute prefix"):
        review(good, prefix="")
    cases = {
        "a.json": ('{"format": "looprig-tracks"}', 'expected "format": "looprig-curves"'),
        "b.json": ("{not json", "not valid JSON"),
        "c.csv": ('# format: "looprig-curves-csv"\ntime [s],knee\n0,1\n', r"should read '<name> \[<unit>\]'"),
        "d.csv": ("time [s],knee [rad]\n0,1\n0,2\n", "strictly increasing"),
        "e.csv": ("time [s],knee [rad]\n0,1,2\n", "data row 1 has 3 cells"),
        "f.csv": ("time [s],knee [rad]\n0,nan\n", "non-finite"),
        "g.json": ('{"format": "looprig-curves", "version": 2}', "version 2 is not supported"),
    }
    for name, (text, message) in cases.items():
        (tmp_path / name).write_text(text)
        with pytest.raises(CurvesFileError, match=message):
            review(tmp_path / name)
    with pytest.raises(CurvesFileError, match="cannot read"):
        review(tmp_path / "missing.csv")


def test_over_limit_keys_and_attribute_names():
    from looprig.maya_scripts.review import attribute_name, over_limit_keys

    times = [0.0, 0.1, 0.2, 0.3, 0.4]
    violations = [
        {"actuator": "a", "start_time": 0.1, "end_time": 0.2},
        {"actuator": "b", "start_time": 0.0, "end_time": 0.4},
        {"actuator": "a", "start_time": 0.4, "end_time": 0.4},
    ]
    assert over_limit_keys(times, violations, "a") == ([0.0, 0.1, 0.3, 0.4], [0.0, 1.0, 0.0, 1.0])
    assert over_limit_keys(times, violations, "b") == ([0.0], [1.0])
    assert over_limit_keys(times, violations, "c") == ([], [])
    assert attribute_name("left knee/2", "lr_") == "lr_left_knee_2"
    assert attribute_name("2nd", "x") == "x2nd"
    assert attribute_name("genou-é", "p_") == "p_genou__"
