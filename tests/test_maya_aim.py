"""Maya aim constraints (issue 28), on the emulated ``maya.cmds`` (tests/maya_emulation, not Maya).

A node driven by an aim constraint brings its target into the export as a track and the
file's ``aims`` list the mapping entry; copied into a mapping whose target drives a
pan-tilt-roll neck's eye with the node's track, core's retarget looks at the target along
the closed form.
"""

import json
import math
from pathlib import Path

import numpy as np
import pytest
from looprig.core.retarget import RetargetMapping, retarget
from looprig.core.tracks import read_tracks
from test_aim import CENTRE, neck

EMULATION = Path(__file__).parent / "maya_emulation"


@pytest.fixture
def maya(monkeypatch):
    monkeypatch.syspath_prepend(str(EMULATION))
    from maya import _scene

    _scene.reset()
    return _scene


@pytest.fixture
def export(maya):
    from looprig.maya_scripts import maya_facade
    from looprig.maya_scripts.export_tracks import export_tracks

    def run(path, *args, **kwargs):
        return export_tracks(str(path), *args, host=maya_facade, **kwargs)

    return run


def look_keys(count=24):
    """Keys of the locator ``look`` [cm, Y up] going round ahead of the neck (+x in both)."""
    keys = {"translateX": [], "translateY": [], "translateZ": []}
    for f in range(1, count + 1):
        w = 2 * math.pi * (f - 1) / (count - 1)
        x, y, z = 60 + 10 * math.cos(w), 30 * math.sin(w), 15 + 20 * math.sin(2 * w)  # looprig axes [cm]
        keys["translateX"].append([f, x])
        keys["translateY"].append([f, z])  # Maya Y up: (x, y, z) looprig = (x, -Z, Y) Maya
        keys["translateZ"].append([f, -y])
    return keys


def gaze_scene(aim=None, nodes=(), count=24):
    head = [100 * c for c in CENTRE]
    return {
        "emulated_maya_scene": 1,
        "units": {"linear": "cm", "angle": "deg", "time": "film"},
        "up_axis": "y",
        "playback": [1, count],
        "current_time": 1,
        "nodes": [
            {"name": "look", "keys": look_keys(count)},
            {
                "name": "head",
                "values": {"translateX": head[0], "translateY": head[2], "translateZ": -head[1]},
            },
            {
                "name": "head_aimConstraint1",
                "type": "aimConstraint",
                "parent": "head",
                "aim": aim or {"targets": ["look"]},
            },
            *nodes,
        ],
    }


def test_an_aim_constraint_exports_its_target_and_the_aim_entry(maya, export, tmp_path):
    """Maya's defaults (aim X, up Y, scene up): the export holds the tracks head and look and
    the entry aiming head's x at look with its y kept towards the scene's up (looprig's z)."""
    maya.load_scene(gaze_scene())
    result = export(tmp_path / "gaze.tracks.json", ["head"])
    assert set(result.tracks) == {"head", "look"} and result.warnings == []
    entry = {
        "frame": "head",
        "axis": [1.0, 0.0, 0.0],
        "track": "look",
        "up": [0.0, 1.0, 0.0],
        "up_direction": [0.0, 0.0, 1.0],
    }
    assert result.aims == [entry]
    document = json.loads((tmp_path / "gaze.tracks.json").read_text())
    assert document["aims"] == [entry]
    assert "1 aim(s)" in result.summary()
    assert set(read_tracks(tmp_path / "gaze.tracks.json").tracks) == {"head", "look"}


def test_the_exported_aim_drives_a_neck_along_the_closed_form(maya, export, tmp_path):
    """The file's aims copied into a mapping whose target (weights zero) drives the eye with
    the head's track, turned from Maya's Y-up node axes (offset -90 degrees about x): pan,
    tilt and roll are the Z-Y-X angles of [x = line of sight, z = up] to 1e-9 rad."""
    maya.load_scene(gaze_scene())
    export(tmp_path / "gaze.tracks.json", ["head"])
    document = json.loads((tmp_path / "gaze.tracks.json").read_text())
    half = math.sqrt(0.5)
    mapping = RetargetMapping.from_dict(
        {
            "targets": [
                {
                    "track": "head",
                    "frame": "eye",
                    "position_weight": [0, 0, 0],
                    "offset_rotation": [half, -half, 0, 0],
                }
            ],
            "aims": document["aims"],
            "rate": 24.0,
        }
    )
    clip = read_tracks(tmp_path / "gaze.tracks.json")
    times, samples = clip.times, clip.samples()
    result = retarget(neck(roll=True), samples, mapping)
    points = samples.positions["look"]
    x = (points - CENTRE) / np.linalg.norm(points - CENTRE, axis=-1, keepdims=True)
    z = np.array([0.0, 0.0, 1.0]) - x[:, 2:] * x
    z /= np.linalg.norm(z, axis=-1, keepdims=True)
    R = np.stack([x, np.cross(z, x), z], -1)
    curves = dict(zip(result.curves.names, result.curves.values.T, strict=True))
    assert len(times) == 24
    assert np.abs(curves["pan"] - np.arctan2(R[:, 1, 0], R[:, 0, 0])).max() < 1e-9
    assert np.abs(curves["tilt"] + np.arcsin(R[:, 2, 0])).max() < 1e-9
    assert np.abs(curves["roll"] - np.arctan2(R[:, 2, 1], R[:, 2, 2])).max() < 1e-9


def test_world_up_vector_object_rotation_none_and_several_targets(maya, export, tmp_path):
    """A world up vector is turned into looprig's Z-up axes; objectrotation brings the up
    object as a track (up in its axes); none leaves the roll free; several targets aim at
    the first, with a warning; an up vector along the aim is made perpendicular."""
    cases = [
        (
            {"targets": ["look"], "worldUpType": "vector", "worldUpVector": [0, 0, 1]},
            {"up_direction": [0.0, -1.0, 0.0]},
        ),
        (
            {
                "targets": ["look"],
                "worldUpType": "objectrotation",
                "worldUpObject": "sky",
                "worldUpVector": [0, 1, 0],
            },
            {"up_direction": [0.0, 1.0, 0.0], "up_track": "sky"},
        ),
        ({"targets": ["look"], "worldUpType": "none"}, {}),
        (
            {"targets": ["look", "sky"], "upVector": [1, 1, 0]},
            {"up": [0.0, 1.0, 0.0], "up_direction": [0.0, 0.0, 1.0]},
        ),
    ]
    for aim, expected in cases:
        maya.load_scene(gaze_scene(aim, nodes=[{"name": "sky"}]))
        result = export(tmp_path / "g.json", ["head"])
        (entry,) = result.aims
        for key, value in expected.items():
            assert entry[key] == value, (aim, entry)
        if aim["worldUpType" if "worldUpType" in aim else "targets"] == "none":
            assert "up" not in entry
        if len(aim["targets"]) > 1:
            assert any("2 targets" in w and "'|look'" in w for w in result.warnings)
        if aim.get("worldUpType") == "objectrotation":
            assert "sky" in result.tracks
        RetargetMapping.from_dict({"aims": result.aims})  # a valid mapping entry


def test_an_aim_constraint_without_a_target_is_left_out_with_a_warning(maya, export, tmp_path):
    maya.load_scene(gaze_scene({"targets": []}))
    result = export(tmp_path / "g.json", ["head"])
    assert result.aims == [] and set(result.tracks) == {"head"}
    assert any("no target; left out" in w for w in result.warnings)
    assert "aims" not in json.loads((tmp_path / "g.json").read_text())


def test_the_emulation_answers_aim_queries_as_maya_does_and_refuses_the_rest(maya):
    from maya import cmds

    maya.load_scene(gaze_scene())
    assert cmds.listRelatives("head", children=True, type="aimConstraint", fullPath=True) == [
        "|head|head_aimConstraint1"
    ]
    assert cmds.listRelatives("look", children=True, type="aimConstraint") is None
    assert cmds.aimConstraint("head_aimConstraint1", q=True, targetList=True) == ["look"]
    assert cmds.aimConstraint("head_aimConstraint1", q=True, worldUpType=True) == "scene"
    with pytest.raises(RuntimeError):
        cmds.aimConstraint("head_aimConstraint1", aimVector=(1, 0, 0))
    with pytest.raises(TypeError):
        cmds.aimConstraint("head_aimConstraint1", q=True, offset=True)
