"""Scene -> constraint graph: rigid body constraints, masses, the Check operator, broken scenes."""

import bpy
import numpy as np
import pytest
from helpers import box, constraint, fails, problems, robot_collection, snapshot
from mathutils import Matrix

from blender_addon import robot_model as rm
from blender_addon import robot_records as rr
from blender_addon.scene_graph import read_model


def test_fourbar_from_rigid_body_constraints_has_one_dof(demo):
    assert bpy.ops.looprig.check_robot() == {"FINISHED"}
    settings = bpy.context.scene.looprig
    assert settings.check_ok
    assert (settings.check_dof, settings.check_redundant, settings.check_loops, settings.check_actuators) == (
        1,
        3,
        1,
        1,
    )
    model = read_model(bpy.context, demo)
    m = model.mechanism
    assert sorted(m.body_names) == ["coupler", "crank", "ground", "rocker"]
    assert {j.name: j.kind.value for j in m.joints} == {
        "crank_joint": "revolute",
        "coupler_joint": "revolute",
        "rocker_coupler_joint": "revolute",
        "rocker_joint": "revolute",
    }
    crank = m.joint("crank_joint")
    np.testing.assert_allclose(np.abs(crank.axis), [0, 0, 1], atol=1e-7)
    assert (crank.parent, crank.child) == ("ground", "crank")
    assert crank.actuator.velocity_limit == pytest.approx(4.0)
    assert crank.actuator.hardware_id == 1
    np.testing.assert_allclose(m.joint("rocker_joint").anchor, [0.3, 0, 0], atol=1e-7)
    assert [f.name for f in m.frames] == ["coupler_point"] and m.frames[0].body == "coupler"
    assert m.bodies[m.body_index("ground")].grounded


def test_masses_from_density_volume_and_rigid_body(demo):
    context = bpy.context
    crank = demo.objects["crank"]
    m = read_model(context, demo).mechanism
    # box mesh: (0.1 + 0.02) x 0.02 x 0.01 m at 1000 kg/m^3
    assert m.bodies[m.body_index("crank")].mass == pytest.approx(0.12 * 0.02 * 0.01 * 1000, rel=1e-5)
    crank.looprig_body.density = 2700
    m = read_model(context, demo).mechanism
    assert m.bodies[m.body_index("crank")].mass == pytest.approx(0.12 * 0.02 * 0.01 * 2700, rel=1e-5)
    context.view_layer.objects.active = crank
    bpy.ops.rigidbody.object_add()
    crank.rigid_body.mass = 0.5
    m = read_model(context, demo).mechanism
    assert m.bodies[m.body_index("crank")].mass == pytest.approx(0.5)
    crank.looprig_body.mass_source = "CUSTOM"
    crank.looprig_body.mass = 0.25
    m = read_model(context, demo).mechanism
    assert m.bodies[m.body_index("crank")].mass == pytest.approx(0.25)


def test_mesh_mass_properties_of_a_box_match_the_closed_form():
    """Box a x b x c, density rho: m = rho a b c, I_xx = m (b^2 + c^2) / 12, CoM at the centre."""
    a, b, c, rho = 0.3, 0.2, 0.1, 800.0
    v = np.array([(x, y, z) for x in (0, a) for y in (0, b) for z in (0, c)]) + [1.0, -2.0, 0.5]
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    tris = np.array([t for q in quads for t in ((q[0], q[1], q[2]), (q[0], q[2], q[3]))])
    volume, com, inertia = rm.mesh_mass_properties(v, tris, rho)
    m = rho * a * b * c
    assert volume == pytest.approx(a * b * c)
    np.testing.assert_allclose(com, [1 + a / 2, -2 + b / 2, 0.5 + c / 2])
    np.testing.assert_allclose(
        inertia, np.diag([b * b + c * c, a * a + c * c, a * a + b * b]) * m / 12, atol=1e-12
    )
    # inward winding gives the same solid
    volume2, _, inertia2 = rm.mesh_mass_properties(v, tris[:, ::-1], rho)
    assert volume2 == pytest.approx(volume)
    np.testing.assert_allclose(inertia2, inertia, atol=1e-12)


@pytest.mark.parametrize(
    ("kind", "expected", "local_axis"),
    [
        ("HINGE", "revolute", 2),
        ("SLIDER", "prismatic", 0),
        ("PISTON", "cylindrical", 0),
        ("POINT", "spherical", None),
        ("FIXED", "fixed", None),
    ],
)
def test_constraint_types_give_joint_kinds_and_axes(kind, expected, local_axis):
    collection = robot_collection()
    base = box("base", (0, 0, 0), collection=collection)
    base.looprig_body.grounded = True
    arm = box("arm", (0.2, 0, 0), collection=collection)
    rotation = Matrix.Rotation(0.4, 4, "Y") @ Matrix.Rotation(0.3, 4, "X")
    empty = constraint("joint", kind, base, arm, (0.1, 0, 0), collection, rotation)
    model = read_model(bpy.context, collection)
    assert model.ok, model.problems
    joint = model.mechanism.joint("joint")
    assert joint.kind.value == expected
    if local_axis is not None:
        expected_axis = np.array(empty.matrix_world)[:3, local_axis]
        np.testing.assert_allclose(joint.axis, expected_axis, atol=1e-6)


def _lock(c, free_lin="", free_ang=""):
    for prefix, free in (("lin", free_lin), ("ang", free_ang)):
        for a in "xyz":
            setattr(c, f"use_limit_{prefix}_{a}", a not in free)
            setattr(c, f"limit_{prefix}_{a}_lower", 0.0)
            setattr(c, f"limit_{prefix}_{a}_upper", 0.0)


@pytest.mark.parametrize(
    ("free_lin", "free_ang", "expected"),
    [
        ("", "", "fixed"),
        ("", "z", "revolute"),
        ("", "xy", "universal"),
        ("", "xyz", "spherical"),
        ("x", "", "prismatic"),
        ("x", "x", "cylindrical"),
        ("xy", "z", "planar"),
        ("xyz", "", "parallel"),
    ],
)
def test_generic_constraint_locks_give_joint_kinds(free_lin, free_ang, expected):
    collection = robot_collection()
    base = box("base", (0, 0, 0), collection=collection)
    base.looprig_body.grounded = True
    arm = box("arm", (0.2, 0, 0), collection=collection)
    empty = constraint("joint", "GENERIC", base, arm, (0.1, 0, 0), collection)
    _lock(empty.rigid_body_constraint, free_lin, free_ang)
    model = read_model(bpy.context, collection)
    assert model.ok, model.problems
    joint = model.mechanism.joint("joint")
    assert joint.kind.value == expected
    if expected == "universal":
        np.testing.assert_allclose(joint.axis, [1, 0, 0], atol=1e-7)
        np.testing.assert_allclose(joint.secondary_axis, [0, 1, 0], atol=1e-7)


def test_unsupported_generic_pattern_is_reported_on_the_constraint():
    collection = robot_collection()
    base = box("base", (0, 0, 0), collection=collection)
    base.looprig_body.grounded = True
    arm = box("arm", (0.2, 0, 0), collection=collection)
    empty = constraint("odd_joint", "GENERIC", base, arm, (0.1, 0, 0), collection)
    _lock(empty.rigid_body_constraint, "x", "y")
    message = fails(bpy.ops.looprig.check_robot)
    assert "odd_joint: GENERIC constraint with free axes (linear x, angular y)" in message
    errors = [p for p in problems(bpy.context) if p[0] == "ERROR"]
    assert errors[0][1] == "odd_joint" and "linear x, angular y" in errors[0][2]


def test_constraint_with_a_missing_object_gives_a_clear_report_and_changes_nothing(demo):
    context = bpy.context
    demo.objects["rocker_joint"].rigid_body_constraint.object2 = None
    before = snapshot(context)
    assert "rocker_joint: HINGE constraint has no Object 2" in fails(bpy.ops.looprig.check_robot)
    errors = [p for p in problems(context) if p[0] == "ERROR"]
    assert errors[0][1] == "rocker_joint"
    assert "rocker_joint" in fails(bpy.ops.looprig.retarget)
    assert "rocker_joint" in fails(bpy.ops.looprig.bake)
    assert "rocker_joint" in context.scene.looprig.status
    assert snapshot(context) == before


def test_cycle_of_fixed_joints_gives_a_clear_report_and_changes_nothing():
    context = bpy.context
    collection = robot_collection()
    base = box("base", (0, 0, 0), collection=collection)
    base.looprig_body.grounded = True
    a = box("a", (0.2, 0, 0), collection=collection)
    b = box("b", (0.2, 0.2, 0), collection=collection)
    constraint("hinge", "HINGE", base, a, (0.1, 0, 0), collection)
    constraint("weld_ab", "FIXED", a, b, (0.2, 0.1, 0), collection)
    constraint("weld_ba", "FIXED", b, a, (0.25, 0.1, 0), collection)
    before = snapshot(context)
    assert "closed loop of welds" in fails(bpy.ops.looprig.check_robot)
    errors = [p for p in problems(context) if p[0] == "ERROR"]
    assert len(errors) == 1
    assert errors[0][1] in ("weld_ab", "weld_ba")
    assert "weld_ab" in errors[0][2] and "weld_ba" in errors[0][2] and "closed loop" in errors[0][2]
    assert "closed loop of welds" in fails(bpy.ops.looprig.retarget)
    assert snapshot(context) == before


def test_unconnected_and_ungrounded_bodies_are_named():
    context = bpy.context
    collection = robot_collection()
    base = box("base", (0, 0, 0), collection=collection)
    arm = box("arm", (0.2, 0, 0), collection=collection)
    box("loose", (0.5, 0, 0), collection=collection)
    constraint("hinge", "HINGE", base, arm, (0.1, 0, 0), collection)
    assert "no grounded body" in fails(bpy.ops.looprig.check_robot)
    assert any(p[0] == "ERROR" and "no grounded body" in p[2] for p in problems(context))
    base.looprig_body.grounded = True
    assert "loose" in fails(bpy.ops.looprig.check_robot)
    errors = [p for p in problems(context) if p[0] == "ERROR"]
    assert errors == [("ERROR", "loose", errors[0][2])]
    assert "not connected to any grounded body: loose" in errors[0][2]


def test_constraint_to_an_object_outside_the_robot_is_named():
    context = bpy.context
    collection = robot_collection()
    base = box("base", (0, 0, 0), collection=collection)
    base.looprig_body.grounded = True
    stranger = box("stranger", (0.2, 0, 0))  # not in the robot collection
    constraint("hinge", "HINGE", base, stranger, (0.1, 0, 0), collection)
    fails(bpy.ops.looprig.check_robot)
    errors = [p for p in problems(context) if p[0] == "ERROR"]
    assert errors[0][1] == "hinge" and "'stranger' is not a body of this robot" in errors[0][2]


def test_no_robot_collection_is_reported():
    assert "pick the robot's collection" in fails(bpy.ops.looprig.check_robot)


def test_select_object_from_a_problem():
    collection = robot_collection()
    box("base", (0, 0, 0), collection=collection)
    fails(bpy.ops.looprig.check_robot)
    item = next(p for p in bpy.context.scene.looprig.problems if p.object_name)
    assert bpy.ops.looprig.select_object(object_name=item.object_name) == {"FINISHED"}
    assert bpy.context.view_layer.objects.active.name == "base"


def test_actuator_settings_reach_the_mechanism(demo):
    js = demo.objects["crank_joint"].looprig_joint
    js.use_range = True
    js.lower_angle, js.upper_angle = -1.0, 2.0
    js.acceleration_limit = 30.0
    js.hardware_id = "servo_a"
    js.zero_offset_ticks, js.direction = 1000, "-1"
    model = read_model(bpy.context, demo)
    a = model.mechanism.joint("crank_joint").actuator
    assert (a.lower, a.upper) == (pytest.approx(-1.0), pytest.approx(2.0))
    assert a.acceleration_limit == pytest.approx(30.0)
    assert a.hardware_id == "servo_a"
    assert (a.zero_offset_ticks, a.direction, a.metres_per_revolution) == (1000, -1, None)
    assert model.mechanism.joint("coupler_joint").actuator is None


def test_add_demo_operator_builds_a_ready_scene():
    assert bpy.ops.looprig.add_demo() == {"FINISHED"}
    settings = bpy.context.scene.looprig
    assert settings.robot.name == "fourbar" and settings.targets[0].frame == "coupler_point"
    assert bpy.ops.looprig.retarget() == {"FINISHED"}


def _joint(name, kind, parent, child):
    return rr.JointRecord(name, name, kind, parent, child, np.eye(4))


def test_fixed_joint_cycles_name_the_closing_weld_and_the_path_between_its_bodies():
    """Welds a-b, b-c, c-d, then d-a closes a cycle through all four; a revolute joint in a
    loop does not count; a second weld a-c closes another (through a-b-c)."""
    joints = [
        _joint("ab", "fixed", "a", "b"),
        _joint("bc", "fixed", "b", "c"),
        _joint("hinge", "revolute", "a", "c"),
        _joint("cd", "fixed", "c", "d"),
        _joint("da", "fixed", "d", "a"),
        _joint("ca", "fixed", "c", "a"),
    ]
    cycles = rm.fixed_joint_cycles(joints)
    assert [[j.name for j in c] for c in cycles] == [["da", "cd", "bc", "ab"], ["ca", "bc", "ab"]]


def test_unconnected_components_are_the_groups_joined_to_no_grounded_body():
    bodies = [rr.BodyRecord(n, n, np.eye(4), 1.0, grounded=n == "base") for n in "base a b c d e".split()]
    joints = [
        _joint("j1", "revolute", "base", "a"),
        _joint("j2", "revolute", "b", "c"),
        _joint("j3", None, "a", "d"),  # not a joint (its problem is reported elsewhere)
    ]
    record = rr.RobotRecord("r", bodies=bodies, joints=joints)
    assert sorted(rm.unconnected_components(record)) == [["b", "c"], ["d"], ["e"]]
