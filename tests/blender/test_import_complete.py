"""Imports keep what the file says: motors (picked at import, edited after), colours, massless
links as Empties."""

import json
import warnings

import bpy
import numpy as np
import pytest
from conftest import MODELS
from helpers import fails
from looprig.cad_import import load_model

from blender_addon.model_cache import robot_model
from blender_addon.scene_graph import motor_candidates

FIVEBAR = MODELS / "gepetto_5bar_linkage" / "robot.urdf"
ROBOTIQ = MODELS / "robotiq_2f85" / "2f85.xml"
needs_models = pytest.mark.skipif(not MODELS.is_dir(), reason=f"robot models not found at {MODELS}")


def _import(path, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert bpy.ops.looprig.import_robot(filepath=str(path), **kwargs) == {"FINISHED"}
    return bpy.context.scene.looprig.robot


def _motors(collection):
    return sorted(name for name, owner in motor_candidates(collection) if owner.looprig_joint.actuated)


@needs_models
def test_motors_from_the_file_then_picked_again(empty_scene):
    declared = sorted(j.name for j in load_model(FIVEBAR).mechanism.actuated_joints)  # YAML name_mot
    assert declared == ["mot1", "mot2"]
    collection = _import(FIVEBAR)
    assert _motors(collection) == declared
    assert bpy.ops.looprig.pick_motors(names="mot1") == {"FINISHED"}
    assert _motors(collection) == ["mot1"]
    assert robot_model(bpy.context, collection).mechanism.actuator_names == ["mot1"]
    message = fails(bpy.ops.looprig.pick_motors, names="mot1, nope")
    assert "no joint 'nope' can carry a motor" in message and "mot2" in message
    assert _motors(collection) == ["mot1"]


@needs_models
def test_only_the_listed_motors_at_import(empty_scene):
    collection = _import(FIVEBAR, motors="LISTED", actuated="free1")
    assert _motors(collection) == ["free1"]


@needs_models
def test_colours_of_an_mjcf_become_materials_and_object_colours(empty_scene):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its coupling is left out (issue of the core, not here)
        imported = load_model(ROBOTIQ)
    collection = _import(ROBOTIQ)
    checked = 0
    for body, refs in imported.meshes.items():
        colours = [tuple(r.rgba) for r in refs if r.role == "visual" and r.rgba is not None]
        if not colours:
            continue
        ob = next(o for o in collection.objects if o.type == "MESH" and o.name == body)
        np.testing.assert_allclose(ob.color, colours[0], atol=1e-6)
        slots = sorted({tuple(np.round(m.diffuse_color, 5)) for m in ob.data.materials})
        assert slots == sorted({tuple(np.round(c, 5)) for c in colours})
        checked += 1
    assert checked >= 5


def test_a_massless_link_without_geometry_is_an_empty_and_still_a_body(tmp_path):
    path = tmp_path / "arm.urdf"
    inertia = 'ixx=".01" iyy=".01" izz=".01" ixy="0" ixz="0" iyz="0"'
    inertial = f'<inertial><mass value="1"/><inertia {inertia}/></inertial>'
    limit = '<limit lower="-1" upper="1" effort="1" velocity="1"/>'
    path.write_text(
        f'<robot name="arm"><link name="base">{inertial}</link><link name="gimbal"/>'
        f'<link name="link">{inertial}</link>'
        '<joint name="yaw" type="revolute"><parent link="base"/><child link="gimbal"/>'
        f'<origin xyz="0 0 .2"/><axis xyz="0 0 1"/>{limit}</joint>'
        '<joint name="pitch" type="revolute"><parent link="gimbal"/><child link="link"/>'
        f'<axis xyz="0 1 0"/>{limit}</joint></robot>'
    )
    collection = _import(path)
    gimbal = next(o for o in collection.objects if o.name == "gimbal")
    assert gimbal.type == "EMPTY"
    assert not [o for o in collection.objects if o.type == "MESH" and o.name == "gimbal"]
    model = robot_model(bpy.context, collection)
    assert model.ok and "gimbal" in model.mechanism.body_names
    assert model.mobility.dof == 2


def test_a_colour_set_in_blender_reaches_the_exported_robot(demo, tmp_path):
    """The demo's bars are coloured by hand; the tint of a bake does not leak into the file."""
    assert bpy.ops.looprig.retarget() == {"FINISHED"}  # bakes and tints the crank
    bpy.context.scene.frame_set(25)
    path = tmp_path / "fourbar.looprig.json"
    assert bpy.ops.looprig.export_robot(filepath=str(path), write_meshes=False) == {"FINISHED"}
    colours = {b["name"]: b.get("color") for b in json.loads(path.read_text())["bodies"]}
    assert colours["crank"] == pytest.approx([0.9, 0.6, 0.2, 1.0], abs=1e-6)  # not the red tint
    demo.objects["rocker"].color = (0.1, 0.2, 0.3, 1.0)
    assert bpy.ops.looprig.export_robot(filepath=str(path), write_meshes=False) == {"FINISHED"}
    colours = {b["name"]: b.get("color") for b in json.loads(path.read_text())["bodies"]}
    assert colours["rocker"] == pytest.approx([0.1, 0.2, 0.3, 1.0], abs=1e-6)
