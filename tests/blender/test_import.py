"""File > Import / Export: URDF, MJCF and native files to scene robots and back, losslessly."""

import json
import warnings

import bpy
import numpy as np
import pytest
from conftest import MODELS, ROOT
from helpers import fails
from looprig.cad_import import load_mechanism, load_model, save_mechanism
from looprig.core.library import build

from blender_addon.scene_graph import robot_objects


def _native(path):
    return json.loads(path.read_text())


def _import(path, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert bpy.ops.looprig.import_robot(filepath=str(path), **kwargs) == {"FINISHED"}
    return bpy.context.scene.looprig.robot


def _strip_paths(doc):
    """Native documents with mesh paths reduced to file names (the files stay where they are)."""
    for body in doc["bodies"]:
        if body.get("mesh"):
            body["mesh"] = body["mesh"].split("/")[-1]
        for m in body.get("meshes", []):
            m["path"] = m["path"].split("/")[-1]
    return doc


@pytest.mark.parametrize("name", ["all_joints", "fourbar", "walker"])
def test_native_round_trip_through_the_scene_is_lossless(name, tmp_path):
    """Every joint kind, actuators, frames, float64 geometry: import then export gives the same file."""
    original = tmp_path / f"{name}.looprig.json"
    save_mechanism(build(name), original)
    _import(original)
    assert bpy.ops.looprig.check_robot() == {"FINISHED"}
    exported = tmp_path / "exported.looprig.json"
    assert bpy.ops.looprig.export_robot(filepath=str(exported)) == {"FINISHED"}
    assert _native(exported) == _native(original)
    assert not (tmp_path / "exported_meshes").exists()  # placeholder boxes are not robot geometry


def test_a_named_motor_round_trips_through_the_scene_losslessly(tmp_path):
    """The MJCF four-bar's ``crank_motor`` (on ``crank_joint``) as a native file: import then
    export gives the same file, the motor's name included."""
    original = tmp_path / "fourbar.looprig.json"
    save_mechanism(load_mechanism(ROOT / "tests" / "data" / "fourbar_connect.xml"), original)
    assert _native(original)["joints"][0]["actuator"]["name"] == "crank_motor"
    _import(original)
    exported = tmp_path / "exported.looprig.json"
    assert bpy.ops.looprig.export_robot(filepath=str(exported)) == {"FINISHED"}
    assert _native(exported) == _native(original)


def test_native_file_from_the_tests_data(tmp_path):
    source = ROOT / "tests" / "data" / "fourbar.looprig.json"
    collection = _import(source)
    assert collection.name == "fourbar_native"
    exported = tmp_path / "out.looprig.json"
    assert bpy.ops.looprig.export_robot(filepath=str(exported)) == {"FINISHED"}
    reference = tmp_path / "reference.looprig.json"
    save_mechanism(load_mechanism(source), reference)
    assert _native(exported) == _native(reference)


def test_edits_in_the_scene_reach_the_export(tmp_path):
    original = tmp_path / "fourbar.looprig.json"
    save_mechanism(build("fourbar"), original)
    collection = _import(original)
    collection.objects["rocker_joint"].location.x += 0.01  # move a pivot by 1 cm
    collection.objects["crank_joint"].looprig_joint.velocity_limit = 2.5
    exported = tmp_path / "edited.looprig.json"
    assert bpy.ops.looprig.export_robot(filepath=str(exported)) == {"FINISHED"}
    m = load_mechanism(exported)
    np.testing.assert_allclose(m.joint("rocker_joint").anchor, [0.31, 0, 0], atol=1e-6)
    assert m.joint("crank_joint").actuator.velocity_limit == pytest.approx(2.5)
    assert m.joint("coupler_joint").anchor.tolist() == build("fourbar").joint("coupler_joint").anchor.tolist()


needs_models = pytest.mark.skipif(not MODELS.is_dir(), reason=f"robot models not found at {MODELS}")


@needs_models
def test_urdf_with_meshes_imports_and_exports_its_mesh_references(tmp_path):
    urdf = MODELS / "gepetto_5bar_linkage" / "robot.urdf"
    reference = load_model(urdf)
    collection = _import(urdf)
    settings = bpy.context.scene.looprig
    assert bpy.ops.looprig.check_robot() == {"FINISHED"}
    assert settings.check_actuators == 2 and settings.check_loops == 1
    bodies = robot_objects(collection)["bodies"]  # massless links without geometry are Empties
    assert len(bodies) == len(reference.mechanism.bodies)
    assert all(o.type == "MESH" or o.looprig_body.mass < 1e-5 for o in bodies)
    meshed = [o for o in bodies if "looprig_placeholder" not in o.keys()]
    assert meshed and all(len(o.data.polygons) > 12 for o in meshed)  # real meshes, not boxes
    exported = tmp_path / "five_bar.looprig.json"
    assert bpy.ops.looprig.export_robot(filepath=str(exported)) == {"FINISHED"}
    expected = tmp_path / "expected.looprig.json"
    save_mechanism(reference, expected)
    assert _strip_paths(_native(exported)) == _strip_paths(_native(expected))


@needs_models
def test_mjcf_model_imports_with_its_loops_and_actuators(tmp_path):
    xml = MODELS / "robotiq_2f85" / "2f85.xml"
    with warnings.catch_warnings():  # the tendon coupling is left out, with a warning
        warnings.simplefilter("ignore")
        reference = load_mechanism(xml)
    _import(xml)
    settings = bpy.context.scene.looprig
    assert bpy.ops.looprig.check_robot() == {"FINISHED"}
    assert settings.check_loops == reference.independent_loops() == 2
    assert settings.check_actuators == len(reference.actuated_joints)
    assert reference.actuator_names == ["fingers_actuator"]  # on left_driver_joint
    exported = tmp_path / "gripper.looprig.json"
    assert bpy.ops.looprig.export_robot(filepath=str(exported)) == {"FINISHED"}
    again = load_mechanism(exported)
    assert again.body_names == reference.body_names
    assert [j.kind for j in again.joints] == [j.kind for j in reference.joints]
    assert again.actuator_names == reference.actuator_names


def test_scene_built_robot_exports_with_stl_meshes_and_reimports(demo, tmp_path):
    exported = tmp_path / "demo.looprig.json"
    assert bpy.ops.looprig.export_robot(filepath=str(exported)) == {"FINISHED"}
    stls = sorted(p.name for p in (tmp_path / "demo_meshes").iterdir())
    assert stls == ["coupler.stl", "crank.stl", "ground.stl", "rocker.stl"]
    m = load_mechanism(exported)
    assert {j.name for j in m.joints} == {
        "crank_joint",
        "coupler_joint",
        "rocker_coupler_joint",
        "rocker_joint",
    }
    bpy.ops.wm.read_homefile(use_empty=True)
    _import(exported)
    assert bpy.ops.looprig.check_robot() == {"FINISHED"}
    assert bpy.context.scene.looprig.check_dof == 1
    crank = bpy.context.scene.objects["crank"]
    assert len(crank.data.polygons) == 12  # the exported box, triangulated


def test_import_errors_are_reported_and_change_nothing(tmp_path):
    bad = tmp_path / "broken.urdf"
    bad.write_text(
        "<robot name='x'><link name='a'/><joint name='j' type='revolute'><parent link='a'/></joint></robot>"
    )
    before = sorted(o.name for o in bpy.data.objects)
    message = fails(bpy.ops.looprig.import_robot, filepath=str(bad))
    assert "broken.urdf" in message
    assert sorted(o.name for o in bpy.data.objects) == before
    assert "file not found" in fails(bpy.ops.looprig.import_robot, filepath=str(tmp_path / "missing.urdf"))
