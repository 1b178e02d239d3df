"""The looprig menu and dialogs, on the Maya emulation (``tests/maya_emulation``; not Maya).

The emulation records windows, fields, buttons, menu items and the progress
window; tests type into fields and press buttons as a user would.
"""

import json
from pathlib import Path

import numpy as np
import pytest
from looprig.core.curves.actuator_curves import ActuatorCurves
from looprig.core.export import write_json
from looprig.core.tracks import read_tracks

EMULATION = Path(__file__).parent / "maya_emulation"


@pytest.fixture
def maya(monkeypatch, tmp_path):
    """A fresh emulated Maya GUI session with a small keyed scene saved as ``shot.ma``."""
    monkeypatch.syspath_prepend(str(EMULATION))
    from maya import _scene

    _scene.reset(batch=False)
    _scene.load_scene(
        {
            "emulated_maya_scene": 1,
            "playback": [1, 10],
            "nodes": [
                {"name": "hip", "keys": {"translateY": [[1, 90.0], [10, 95.0]]}},
                {"name": "hand", "parent": "hip", "values": {"translateX": 30.0}},
            ],
            "sets": {"looprig_tracks": ["hand"]},
            "selection": ["hip"],
        },
        str(tmp_path / "shot.ma"),
    )
    return _scene


@pytest.fixture
def ui(maya):
    from looprig.maya_scripts import ui

    return ui


def set_field(maya, label, **value):
    maya.session().widgets[maya.field_by_label(label)].update(value)


def test_one_line_install_adds_the_menu_when_maya_is_idle(maya):
    import looprig.maya_scripts

    assert looprig.maya_scripts.install() is True
    assert maya.widgets_of_type("menu") == []  # deferred until the main window exists
    maya.run_deferred()
    (menu,) = maya.widgets_of_type("menu")
    assert menu == "looprigMenu" and maya.session().widgets[menu]["parent"] == "MayaWindow"
    labels = [w["label"] for w in maya.session().widgets.values() if w["type"] == "menuItem"]
    assert labels == ["Export Tracks...", "Add Selection to Tracks Set", "", "Import Curves for Review..."]
    looprig.maya_scripts.install()
    maya.run_deferred()
    assert maya.widgets_of_type("menu") == ["looprigMenu"]  # rebuilt, not doubled


def test_install_does_nothing_in_batch_mode(maya):
    import looprig.maya_scripts

    maya.session().batch = True
    assert looprig.maya_scripts.install() is False
    assert maya.session().deferred == []


def test_export_dialog_defaults_progress_and_file(maya, ui, tmp_path):
    ui.build_menu()
    maya.press("Export Tracks...", "menuItem")
    widgets = maya.session().widgets
    assert widgets["looprigExportWindow"]["shown"]
    assert widgets[maya.field_by_label("Nodes")]["text"] == "hand"  # from the looprig_tracks set
    assert widgets[maya.field_by_label("Start frame")]["value1"] == 1.0
    assert widgets[maya.field_by_label("End frame")]["value1"] == 10.0
    assert widgets[maya.field_by_label("Rate [Hz]")]["value1"] == 24.0
    assert widgets[maya.field_by_label("Tracks file")]["text"] == str(tmp_path / "shot.tracks.json")
    set_field(maya, "Nodes", text="hand, hip=pelvis")
    set_field(maya, "Rate [Hz]", value1=240.0)
    result = maya.press("Export")
    assert result.samples == 91
    clip = read_tracks(tmp_path / "shot.tracks.json")
    assert list(clip.tracks) == ["hand", "pelvis"] and clip.fps == 240
    log = maya.session().progress_log
    assert log[0]["event"] == "begin" and log[0]["maxValue"] == 91 and log[0]["isInterruptable"]
    assert log[-2] == {"event": "edit", "progress": 91, "status": "91 / 91 samples"}
    assert log[-1] == {"event": "end"}
    title, text = maya.session().messages[-1]
    assert title == "looprig export" and "wrote 2 track(s) x 91 samples at 240 Hz" in text


def test_cancel_and_errors_write_nothing_and_say_why(maya, ui, tmp_path):
    ui.show_export_dialog()
    state = maya.session()
    state.cancel_after_queries = 3
    set_field(maya, "Rate [Hz]", value1=1200.0)
    assert maya.press("Export") is None
    assert state.messages[-1] == ("looprig export failed", "export cancelled; no file written")
    assert state.progress is None and state.progress_log[-1] == {"event": "end"}
    state.cancel_after_queries = None
    set_field(maya, "Nodes", text="hand ghost")
    assert maya.press("Export") is None
    assert state.messages[-1][1].startswith("cannot export: no transform 'ghost'")
    set_field(maya, "Nodes", text="hand")
    set_field(maya, "End frame", value1=0.0)
    assert maya.press("Export") is None
    assert "end frame 0 is before start frame 1" in state.messages[-1][1]
    assert not (tmp_path / "shot.tracks.json").exists()
    assert [n.name for n in state.selection] == ["hip"]


def test_dialog_defaults_name_clashing_nodes_by_path(maya, ui):
    nodes = [{"name": "armL"}, {"name": "hand", "parent": "armL"}, {"name": "hand", "id": "top"}]
    maya.load_scene(
        {
            "emulated_maya_scene": 1,
            "nodes": [*nodes, {"name": "foot"}],
            "sets": {"looprig_tracks": ["hand", "foot"]},
        }
    )
    assert ui.export_defaults(ui._facade(None))["nodes"] == "|armL|hand foot"


def test_browse_button_fills_the_file_field(maya, ui, tmp_path):
    ui.show_export_dialog()
    state = maya.session()
    state.file_dialog_answers.append(str(tmp_path / "picked.json"))
    field = maya.field_by_label("Tracks file")
    state.widgets[field]["buttonCommand"]()
    assert state.widgets[field]["text"] == str(tmp_path / "picked.json")
    assert state.dialog_log[-1]["fileMode"] == 0 and "*.json" in state.dialog_log[-1]["fileFilter"]
    maya.press("Export")
    assert json.loads((tmp_path / "picked.json").read_text())["format"] == "looprig-tracks"
    maya.press("Close")
    assert "looprigExportWindow" not in state.widgets


def test_add_selection_to_tracks_set(maya, ui):
    from maya import cmds

    cmds.select(["hip", "hand"])
    assert ui.add_selection_to_set() == "looprig_tracks"
    assert cmds.sets("looprig_tracks", query=True) == ["hand", "hip"]
    cmds.select(clear=True)
    assert ui.add_selection_to_set() is None
    assert maya.session().messages[-1] == ("looprig", "Select the transforms to track first.")


def test_review_dialog_keys_a_locator(maya, ui, tmp_path):
    from maya import cmds

    times = np.arange(1, 11) / 24
    motors = ActuatorCurves(times=times, values=np.linspace(0, 1, 10), names=("hip_motor",), units=("rad",))
    write_json(motors, tmp_path / "motors.json")
    ui.build_menu()
    maya.press("Import Curves for Review...", "menuItem")
    set_field(maya, "Curves file", text=str(tmp_path / "motors.json"))
    result = maya.press("Import")
    assert result.node == "looprig_curves"
    assert cmds.keyframe("looprig_curves.looprig_hip_motor", query=True, timeChange=True) == pytest.approx(
        list(range(1, 11))
    )
    assert maya.session().messages[-1][0] == "looprig review"
    set_field(maya, "Node", text="ghost")
    assert maya.press("Import") is None
    assert maya.session().messages[-1] == (
        "looprig review failed",
        "no node 'ghost' in the scene to key the curves on",
    )
