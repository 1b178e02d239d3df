"""A robot file with closure gaps and couplings (Menagerie's ToddlerBot 2XC) through the scene:
its gaps, gears, differentials and servos survive import, check and export, and the robot the
scene builds solves as the one the file gives."""

import json
import sys
import warnings
from pathlib import Path

import bpy
import numpy as np
import pytest
from conftest import ROOT
from looprig.cad_import import load_model, save_mechanism
from looprig.core import analyse_mobility, solve_fk
from looprig.core.retarget import retarget

from blender_addon.model_cache import robot_model
from blender_addon.robot_records import ERROR
from blender_addon.scene_data import EXACT_KEY

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from test_toddlerbot import head_nod

TODDLERBOT = ROOT / "tests" / "data" / "toddlerbot_2xc" / "toddlerbot_2xc.xml"
pytest.importorskip("mujoco")


def _toddlerbot():
    """(scene collection, the core model read from the file)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert bpy.ops.looprig.import_robot(filepath=str(TODDLERBOT)) == {"FINISHED"}
        core = load_model(TODDLERBOT, meshes=False)
    return bpy.context.scene.looprig.robot, core


def test_toddlerbots_gaps_couplings_and_servos_round_trip_through_the_scene(tmp_path: Path):
    """Import, check, export: the native file is the one the core writes for the MJCF (every
    closure's gap, the 9 gears and 2 differentials, each motor's servo and limit sources)."""
    collection, core = _toddlerbot()
    assert bpy.ops.looprig.check_robot() == {"FINISHED"}
    exported = tmp_path / "exported.looprig.json"
    assert bpy.ops.looprig.export_robot(filepath=str(exported)) == {"FINISHED"}
    original = save_mechanism(core.mechanism, tmp_path / "original.looprig.json")
    document = json.loads(exported.read_text())
    assert document == json.loads(original.read_text())
    assert sum("gap" in j for j in document["joints"]) == 4 and len(document["couplings"]) == 11
    model = robot_model(bpy.context, collection)
    assert model.mechanism.closure_gap == core.mechanism.closure_gap == pytest.approx(3.61e-8, rel=0.01)
    assert analyse_mobility(model.mechanism).dof == 36


def test_the_scenes_toddlerbot_solves_as_the_files():
    """Forward kinematics with the neck's motor and a waist motor turned: the same joint
    values to 1e-12 from the scene's robot as from the file's (the loops close to the
    file's precision; the waist differential and the gears hold); a short head nod
    retargets to the same curves."""
    collection, core = _toddlerbot()
    scene = robot_model(bpy.context, collection).mechanism
    assert scene.actuator_names == core.mechanism.actuator_names
    values = np.zeros(len(scene.actuator_names))
    values[scene.actuator_names.index("neck_pitch_act")] = 0.3
    values[scene.actuator_names.index("waist_act_1")] = -0.2
    ours, theirs = solve_fk(scene, values), solve_fk(core.mechanism, values)
    assert ours.converged and ours.residual < scene.closure_gap / 10
    np.testing.assert_allclose(ours.state, theirs.state, atol=1e-12)
    # a 0.05 s head nod at 1200 Hz, head and torso targeted: the same curves
    clip, mapping = head_nod(scene, frames=61, amplitude=0.05)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours, theirs = retarget(scene, clip, mapping), retarget(core.mechanism, clip, mapping)
    assert ours.converged.all() and ours.position_error.max() < 1e-8
    assert ours.curves.names == theirs.curves.names
    np.testing.assert_allclose(ours.curves.values, theirs.curves.values, atol=1e-12)


def test_an_edited_limit_comes_from_blender_and_a_moved_closure_loses_its_gap():
    """A motor's velocity limit set in the scene is the mapping's (a Blender property); the
    others keep the catalogue. A closure joint moved in the scene is built where it now
    stands, to the scene's precision: no gap of the file's is carried (the others keep
    theirs)."""
    collection, _ = _toddlerbot()
    bpy.data.objects["left_knee"].looprig_joint.velocity_limit = 3.0
    actuator = robot_model(bpy.context, collection).mechanism.joint("left_knee").actuator
    assert actuator.limit_source("velocity") == "mapping" and actuator.velocity_limit == pytest.approx(3.0)
    assert actuator.limit_source("lower") == "file" and actuator.servo == "XM430-W210-T"
    closures = [ob for ob in collection.all_objects if (ob.get(EXACT_KEY) or {}).get("gap")]
    assert len(closures) == 4
    closures[0].location.x += 1e-4
    mechanism = robot_model(bpy.context, collection).mechanism
    gaps = [mechanism.joint(ob.name).gap for ob in closures]
    assert gaps[0] == 0.0 and min(gaps[1:]) > 0
    # 0.1 mm off, the neck's parallel linkage is no longer one: rigid beyond the file's gap
    assert analyse_mobility(mechanism).dof == 35


def test_an_unreadable_coupling_is_one_error_naming_the_joint():
    collection, _ = _toddlerbot()
    ob = next(ob for ob in collection.all_objects if "coupling" in (ob.get(EXACT_KEY) or {}))
    exact = ob[EXACT_KEY].to_dict()
    exact["coupling"]["ratios"] = "fast"
    ob[EXACT_KEY] = exact
    model = robot_model(bpy.context, collection)
    (error,) = [p for p in model.problems if p.severity == ERROR]
    assert error.object_name == ob.name and model.mechanism is None
    assert f"joint {ob.name!r}: coupling.ratios: expected a list of numbers" in error.message
