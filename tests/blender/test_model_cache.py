"""The robot model cached per collection: reused while the robot is unchanged, rebuilt on any edit;
mesh mass properties computed once per mesh and moved into the world in closed form."""

import bpy
import numpy as np
import pytest
from helpers import box
from mathutils import Euler, Matrix

from blender_addon import mesh_mass
from blender_addon.model_cache import robot_model
from blender_addon.scene_graph import read_model


def test_model_is_reused_while_nothing_changes_also_across_retarget_and_frames(demo):
    context = bpy.context
    first = robot_model(context, demo)
    assert robot_model(context, demo) is first
    assert bpy.ops.looprig.retarget() == {"FINISHED"}  # keys the robot, bakes, tints
    context.scene.frame_set(20)  # the robot stands elsewhere now
    assert robot_model(context, demo) is first


@pytest.mark.parametrize(
    "edit",
    [
        lambda demo: setattr(demo.objects["crank_joint"].looprig_joint, "velocity_limit", 7.0),
        lambda demo: setattr(demo.objects["crank"].looprig_body, "density", 2000.0),
        lambda demo: setattr(demo.objects["rocker_joint"].rigid_body_constraint, "type", "POINT"),
        lambda demo: demo.objects["crank"].data.vertices[0].co.__setitem__(0, 0.5),
        lambda demo: setattr(demo.objects["coupler_point"], "location", (0.1, 0.2, 0.0)),
        lambda demo: demo.objects.unlink(demo.objects["coupler_point"]),
    ],
    ids=["joint setting", "body setting", "constraint type", "mesh vertex", "frame moved", "object removed"],
)
def test_any_edit_of_the_robot_builds_the_model_again(demo, edit):
    context = bpy.context
    before = robot_model(context, demo)
    edit(demo)
    context.view_layer.update()
    after = robot_model(context, demo)
    assert after is not before
    fresh = read_model(context, demo)
    assert [p.describe() for p in after.problems] == [p.describe() for p in fresh.problems]
    if fresh.mechanism is not None:
        for a, b in zip(after.mechanism.bodies, fresh.mechanism.bodies, strict=True):
            assert a.mass == pytest.approx(b.mass, rel=1e-12)
            np.testing.assert_allclose(a.position, b.position, atol=1e-12)


def test_mesh_mass_moves_with_the_object_in_closed_form(empty_scene):
    """A box a x b x c under a rotation and a non-uniform scale: the volume scales by the
    determinant, the inertia is the box's closed form in the rotated axes (scaled edges)."""
    a, b, c = 0.3, 0.2, 0.1
    ob = box("solid", (0, 0, 0), size=(a, b, c))
    scale = np.array([2.0, 0.5, 3.0])
    R = np.array(Euler((0.3, -0.7, 1.1)).to_matrix())
    T = np.eye(4)
    T[:3, :3] = R * scale
    T[:3, 3] = [1.0, -2.0, 0.5]
    ob.matrix_world = Matrix(T.tolist())
    depsgraph = bpy.context.evaluated_depsgraph_get()
    volume, com, inertia = mesh_mass.object_mass(ob, depsgraph, T)
    A, B, C = a * scale[0], b * scale[1], c * scale[2]
    assert volume == pytest.approx(A * B * C, rel=1e-6)
    centre = np.mean([v.co for v in ob.data.vertices], axis=0)
    np.testing.assert_allclose(com, T[:3, :3] @ centre + T[:3, 3], atol=1e-7)
    box_axes = np.diag([B * B + C * C, A * A + C * C, A * A + B * B]) * A * B * C / 12
    np.testing.assert_allclose(inertia, R @ box_axes @ R.T, rtol=1e-5, atol=1e-9)


def test_mesh_mass_is_measured_once_per_mesh_content(empty_scene, monkeypatch):
    measured = []
    original = mesh_mass._measure
    monkeypatch.setattr(mesh_mass, "_measure", lambda mesh: measured.append(mesh.name) or original(mesh))
    ob = box("counted", (0, 0, 0), size=(0.123, 0.05, 0.07))
    depsgraph = bpy.context.evaluated_depsgraph_get()
    for x in (0.0, 1.0, 2.0):  # moved: no new measurement
        mesh_mass.object_mass(ob, depsgraph, np.array(Matrix.Translation((x, 0, 0))))
    assert measured == ["counted"]
    ob.data.vertices[0].co.x -= 0.01
    mesh_mass.object_mass(ob, depsgraph, np.eye(4))
    assert measured == ["counted", "counted"]


def test_the_first_check_after_opening_an_imported_robot_measures_no_mesh(empty_scene, tmp_path, monkeypatch):
    """Issue 25, item 3: an imported robot keeps its file's mass properties, so the first
    Check after opening the .blend (no cache in a new session) builds the model from them
    without measuring a mesh (on d29a55b, 1.4 s of Reachy Mini's 1.7 s first Check measured
    meshes whose results went unused); a body moved off the import's pose is measured."""
    from looprig.cad_import import save_mechanism
    from looprig.core.library import build

    from blender_addon import model_cache

    source = tmp_path / "walker.looprig.json"
    reference = build("walker")
    save_mechanism(reference, source)
    assert bpy.ops.looprig.import_robot(filepath=str(source)) == {"FINISHED"}
    blend = tmp_path / "walker.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    bpy.ops.wm.read_homefile(use_empty=True)
    monkeypatch.setattr(mesh_mass, "_cache", {})  # a new session: nothing measured, nothing cached
    monkeypatch.setattr(model_cache, "_models", {})
    measured = []
    original = mesh_mass._measure
    monkeypatch.setattr(mesh_mass, "_measure", lambda mesh: measured.append(mesh.name) or original(mesh))
    bpy.ops.wm.open_mainfile(filepath=str(blend))
    assert bpy.ops.looprig.check_robot() == {"FINISHED"}
    assert measured == []
    robot = bpy.context.scene.looprig.robot
    model = robot_model(bpy.context, robot)
    for body in reference.bodies:
        read = model.mechanism.bodies[model.mechanism.body_index(body.name)]
        assert read.mass == body.mass
        np.testing.assert_array_equal(read.position, body.position)
    pelvis = next(o for o in robot.objects if o.type == "MESH" and o.name.startswith("pelvis"))
    pelvis.location.x += 0.01
    bpy.context.view_layer.update()
    bpy.ops.looprig.check_robot()
    assert measured == [pelvis.data.name]
