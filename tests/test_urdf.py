"""URDF import: joint kinds, frames, inertials, meshes, closures, actuators, errors."""

from pathlib import Path

import numpy as np
import pytest
from looprig.cad_import import FileFormatError, FileFormatWarning, load_mechanism, load_model
from looprig.cad_import.urdf_elements import rpy_matrix
from looprig.core import ConstraintSet, JointKind, solve_fk
from looprig.core.maths.rotations import quat_to_matrix
from looprig.core.model.readoff import JointReadout

DATA = Path(__file__).parent / "data"


def write(tmp_path, text, name="robot.urdf"):
    path = tmp_path / name
    path.write_text(text)
    return path


def robot(body: str, name="test") -> str:
    return f'<?xml version="1.0"?>\n<robot name="{name}">\n{body}\n</robot>\n'


LINKS = "".join(f'<link name="{n}"><inertial><mass value="1"/></inertial></link>' for n in "abcdefg")
AB = '<link name="a"/><link name="b"/>'


def joint(name, kind, parent, child, xyz="0 0 0", rpy="0 0 0", axis="1 0 0", extra=""):
    return (
        f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
        f'<origin xyz="{xyz}" rpy="{rpy}"/><axis xyz="{axis}"/>{extra}</joint>'
    )


def test_every_urdf_joint_type_maps_to_its_looprig_kind(tmp_path):
    body = LINKS + "".join(
        [
            joint(
                "j_rev",
                "revolute",
                "a",
                "b",
                axis="0 1 0",
                extra='<limit lower="-1" upper="2" velocity="3"/>',
            ),
            joint(
                "j_cont", "continuous", "b", "c", xyz="0.1 0 0", axis="0 0 1", extra='<limit velocity="4"/>'
            ),
            joint("j_pri", "prismatic", "c", "d", axis="1 0 0", extra='<limit lower="-0.1" upper="0.2"/>'),
            joint("j_fix", "fixed", "d", "e", axis="0 0 0"),
            joint("j_float", "floating", "e", "f"),
            joint("j_plan", "planar", "f", "g", axis="0 0 1"),
        ]
    )
    m = load_mechanism(write(tmp_path, robot(body)), actuated=["j_rev", "j_cont", "j_pri"])
    kinds = {j.name: j.kind for j in m.joints}
    assert kinds == {
        "j_rev": JointKind.REVOLUTE,
        "j_cont": JointKind.REVOLUTE,
        "j_pri": JointKind.PRISMATIC,
        "j_fix": JointKind.FIXED,
        "j_float": JointKind.FREE,
        "j_plan": JointKind.PLANAR,
    }
    rev, cont, pri = m.joint("j_rev"), m.joint("j_cont"), m.joint("j_pri")
    assert (rev.actuator.lower, rev.actuator.upper, rev.actuator.velocity_limit) == (-1.0, 2.0, 3.0)
    assert cont.actuator.lower == -np.inf and cont.actuator.upper == np.inf
    assert cont.actuator.velocity_limit == 4.0
    assert pri.actuator.motion == "displacement" and pri.actuator.unit == "m"
    np.testing.assert_allclose(m.joint("j_plan").axis, [0, 0, 1])
    assert [b.grounded for b in m.bodies] == [True] + [False] * 6


def test_origins_and_axes_compose_along_the_chain(tmp_path):
    """World anchor/axis of joint k = T_world_parent (origin) applied to the joint axis."""
    rpy1, rpy2 = np.array([0.3, -0.2, 0.5]), np.array([-0.4, 0.1, 1.2])
    xyz1, xyz2 = np.array([0.1, 0.2, 0.3]), np.array([0.0, -0.5, 0.25])
    body = (
        '<link name="a"/><link name="b"><inertial><origin xyz="0.01 0.02 0.03" rpy="0 0 0.5"/>'
        '<mass value="2"/><inertia ixx="1" ixy="0" ixz="0" iyy="2" iyz="0" izz="3"/></inertial></link>'
        '<link name="c"><inertial><mass value="1"/></inertial></link>'
        + joint("j1", "revolute", "a", "b", " ".join(map(str, xyz1)), " ".join(map(str, rpy1)), "0 0 1")
        + joint("j2", "prismatic", "b", "c", " ".join(map(str, xyz2)), " ".join(map(str, rpy2)), "0 1 1")
    )
    m = load_mechanism(write(tmp_path, robot(body)))
    R1, R2 = rpy_matrix(rpy1), rpy_matrix(rpy1) @ rpy_matrix(rpy2)
    np.testing.assert_allclose(m.joint("j1").anchor, xyz1, atol=1e-15)
    np.testing.assert_allclose(m.joint("j1").axis, R1[:, 2], atol=1e-15)
    np.testing.assert_allclose(m.joint("j2").anchor, xyz1 + R1 @ xyz2, atol=1e-15)
    np.testing.assert_allclose(m.joint("j2").axis, R2 @ np.array([0, 1, 1]) / np.sqrt(2), atol=1e-15)
    b = m.bodies[m.body_index("b")]
    np.testing.assert_allclose(quat_to_matrix(b.orientation), R1, atol=1e-15)
    np.testing.assert_allclose(b.position, xyz1 + R1 @ [0.01, 0.02, 0.03], atol=1e-15)
    # inertia given in the inertial frame (yaw 0.5) is rotated into link axes
    Ri = rpy_matrix([0, 0, 0.5])
    np.testing.assert_allclose(b.inertia, Ri @ np.diag([1, 2, 3]) @ Ri.T, atol=1e-15)
    assert b.mass == 2.0
    # a frame per link at its origin
    np.testing.assert_allclose(m.frame("b").position, xyz1, atol=1e-15)


def test_rpy_is_fixed_axis_roll_pitch_yaw():
    r, p, y = 0.1, 0.2, 0.3
    c, s = np.cos, np.sin
    Rz = np.array([[c(y), -s(y), 0], [s(y), c(y), 0], [0, 0, 1]])
    Ry = np.array([[c(p), 0, s(p)], [0, 1, 0], [-s(p), 0, c(p)]])
    Rx = np.array([[1, 0, 0], [0, c(r), -s(r)], [0, s(r), c(r)]])
    np.testing.assert_allclose(rpy_matrix([r, p, y]), Rz @ Ry @ Rx, atol=1e-15)


def test_package_meshes_resolve_with_scale(tmp_path):
    trimesh = pytest.importorskip("trimesh")
    (tmp_path / "pkg" / "meshes").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    trimesh.creation.box([1, 1, 1]).export(tmp_path / "pkg" / "meshes" / "cube.stl")
    body = (
        '<link name="a"><inertial><origin xyz="0 0.5 0"/><mass value="1"/></inertial>'
        '<visual><origin xyz="0 0 1"/><geometry><mesh filename="package://pkg/meshes/cube.stl" '
        'scale="0.001 0.002 0.003"/></geometry></visual></link>'
    )
    path = write(tmp_path / "elsewhere", robot(body))
    imported = load_model(path, package_paths=[tmp_path])
    body_a = imported.mechanism.bodies[0]
    assert Path(body_a.mesh) == (tmp_path / "pkg" / "meshes" / "cube.stl").resolve()
    # mesh file -> body coordinates (origin at the CoM, 0.5 m along y): scale, then offset
    expected = np.diag([0.001, 0.002, 0.003, 1.0])
    expected[:3, 3] = [0.0, -0.5, 1.0]
    np.testing.assert_allclose(body_a.T_body_mesh, expected, atol=1e-15)
    assert imported.meshes["a"][0].role == "visual"


def test_missing_mesh_is_an_error_naming_file_link_and_line(tmp_path):
    body = '<link name="a">\n<visual><geometry>\n<mesh filename="package://nowhere/x.stl"/></geometry></visual></link>'
    path = write(tmp_path, robot(body))
    with pytest.raises(FileFormatError) as info:
        load_mechanism(path)
    message = str(info.value)
    assert str(path) in message and "link 'a'" in message and "not found" in message
    assert info.value.line == 5
    with pytest.warns(FileFormatWarning, match="not found"):
        m = load_mechanism(path, missing_meshes="warn")
    assert m.bodies[0].mesh == "package://nowhere/x.stl"


def test_mass_properties_from_mesh_when_no_inertial(tmp_path):
    trimesh = pytest.importorskip("trimesh")
    trimesh.creation.box([0.1, 0.2, 0.3]).export(tmp_path / "box.stl")
    body = (
        '<link name="a"/><link name="b"><collision><origin xyz="0.5 0 0"/>'
        '<geometry><mesh filename="box.stl"/></geometry></collision></link>'
        + joint("j", "revolute", "a", "b", axis="0 0 1")
    )
    with pytest.warns(FileFormatWarning, match="computed from its collision mesh"):
        m = load_mechanism(write(tmp_path, robot(body)), density=500.0)
    b = m.bodies[1]
    mass = 500.0 * 0.1 * 0.2 * 0.3
    # STL stores single-precision vertices: agreement to ~1e-7
    assert b.mass == pytest.approx(mass, rel=1e-6)
    np.testing.assert_allclose(b.position, [0.5, 0, 0], atol=1e-7)
    expected = mass / 12 * np.diag([0.2**2 + 0.3**2, 0.1**2 + 0.3**2, 0.1**2 + 0.2**2])
    np.testing.assert_allclose(b.inertia, expected, rtol=1e-6, atol=1e-12)


def test_onshape_closing_frames_and_fk(tmp_path):
    imported = load_model(DATA / "fourbar_closing.urdf")
    m = imported.mechanism
    closure = m.joint("closing_B")
    assert closure.kind == JointKind.SPHERICAL
    assert (closure.parent, closure.child) == ("closing_B_1", "closing_B_2")
    assert m.actuator_names == ["crank_motor"]  # the transmission's <actuator name>
    assert m.actuated_joint("crank_motor") is m.actuated_joint("crank_joint") is m.joint("crank_joint")
    assert np.abs(ConstraintSet(m, actuated=False).residual(m.initial_state())).max() < 1e-15
    revolute = load_mechanism(DATA / "fourbar_closing.urdf", closure_kind="revolute")
    assert revolute.joint("closing_B").kind == JointKind.REVOLUTE
    with pytest.raises(FileFormatError, match="closure kind 'prismatic'"):
        load_mechanism(DATA / "fourbar_closing.urdf", closure_kind="prismatic")


def test_looprig_closure_and_actuator_elements():
    m = load_mechanism(DATA / "fourbar_looprig.urdf")
    pin = m.joint("pin_B")
    assert pin.kind == JointKind.REVOLUTE and (pin.parent, pin.child) == ("B_coupler", "B_rocker")
    np.testing.assert_allclose(pin.axis, [0, 0, 1], atol=1e-12)
    actuator = m.joint("crank_joint").actuator
    assert actuator.hardware_id == 7 and actuator.acceleration_limit == 30.0
    np.testing.assert_allclose(m.joint("rocker_joint").axis, [0, 0, 1], atol=1e-12)


UNASSEMBLED = robot(
    '<link name="ground"/>'
    + "".join(f'<link name="{n}"><inertial><mass value="0.1"/></inertial></link>' for n in ("l1", "l2", "l3"))
    + '<link name="end_a"/><link name="end_b"/>'
    # a parallelogram drawn with its rocker pointing the wrong way: ends 0.2 m apart at zero
    + joint(
        "crank", "revolute", "ground", "l1", axis="0 0 1", extra='<limit lower="-1" upper="1" velocity="2"/>'
    )
    + joint("mid", "revolute", "l1", "l2", xyz="0 0.1 0", axis="0 0 1")
    + joint("rocker", "revolute", "ground", "l3", xyz="0.3 0 0", rpy="0 0 3.141592653589793", axis="0 0 1")
    + joint("end_a_fix", "fixed", "l2", "end_a", xyz="0.3 0 0")
    + joint("end_b_fix", "fixed", "l3", "end_b", xyz="0 0.1 0")
    + '<looprig_closure name="pin" kind="revolute" frame1="end_a" frame2="end_b"/>'
)


def test_unassembled_zero_pose_is_assembled_and_limits_shift(tmp_path):
    imported = load_model(write(tmp_path, UNASSEMBLED), actuated=["crank"])
    m = imported.mechanism
    assert imported.closure_residual == pytest.approx(0.2, rel=1e-12)
    assert np.abs(ConstraintSet(m, actuated=False).residual(m.initial_state())).max() < 1e-12
    q0 = imported.joint_offsets["crank"]
    actuator = m.joint("crank").actuator
    assert actuator.lower == pytest.approx(-1 - q0) and actuator.upper == pytest.approx(1 - q0)
    # the end frames coincide in the initial configuration
    np.testing.assert_allclose(m.frame("end_a").position, m.frame("end_b").position, atol=1e-12)
    # FK stays assembled when the crank turns
    result = solve_fk(m, [0.3])
    assert result.converged


def test_yaml_side_file(tmp_path):
    path = write(
        tmp_path,
        UNASSEMBLED.replace(
            '<looprig_closure name="pin" kind="revolute" frame1="end_a" frame2="end_b"/>', ""
        ),
    )
    (tmp_path / "robot.yaml").write_text(
        "closed_loop: [['end_a_fix', 'end_b']]\ntype: ['3d']\nname_mot: ['crank']\n"
    )
    m = load_mechanism(path)
    closure = m.joint("end_a_fix__end_b")
    assert closure.kind == JointKind.SPHERICAL and closure.parent == "end_a"  # joint name -> its child
    assert m.actuator_names == ["crank"]
    assert load_mechanism(path, sidecar=None).actuator_names == []
    (tmp_path / "robot.yaml").write_text("closed_loop: [['mid', 'nothing']]\ntype: ['6d']\n")
    with pytest.raises(FileFormatError, match="'nothing' is neither a link nor a joint"):
        load_mechanism(path)
    (tmp_path / "robot.yaml").write_text("closed_loop: [['end_a', 'end_b']]\ntype: ['5d']\n")
    with pytest.raises(FileFormatError, match="closure type '5d'"):
        load_mechanism(path)


@pytest.mark.parametrize(
    ("body", "fragment", "line"),
    [
        (AB + joint("j", "revolute", "zz", "b"), "parent link 'zz' does not exist", None),
        (AB + joint("j", "revolute", "a", "qq"), "child link 'qq' does not exist", None),
        (AB + joint("j", "revolute", "a", "b", axis="0 0 0"), "zero-length", 3),
        (AB + joint("j", "revolute", "a", "b", axis="0 nan 0"), "not finite", 3),
        (AB + joint("j", "revolute", "a", "b", axis="0 x 0"), "not a list of numbers", 3),
        (AB + joint("j", "hinge", "a", "b"), "unknown joint type 'hinge'", 3),
        (
            '<link name="a"/>\n<link name="b">\n<inertial><mass value="-2"/></inertial></link>'
            + joint("j", "fixed", "a", "b"),
            "negative mass",
            5,
        ),
        (
            AB + '<link name="c"/>' + joint("j1", "fixed", "a", "b") + joint("j2", "fixed", "c", "b"),
            "two parent joints",
            None,
        ),
        (
            '<link name="a"/><link name="b"/><link name="c"/>'
            + joint("j1", "fixed", "a", "b")
            + joint("j2", "fixed", "b", "c")
            + joint("j3", "fixed", "c", "a"),
            "cycle",
            None,
        ),
        ('<link name="a"/><link name="b"/>', "one root link; found 2", None),
        (AB + joint("j", "revolute", "a", "b", extra='<limit lower="2" upper="1"/>'), "exceeds upper", 3),
        ("", "no <link>", None),
        ('<link name="a"/><link name="a"/>', "duplicate link name", None),
        (
            '<link name="a"/><link name="b"/>'
            + joint("j", "fixed", "a", "b")
            + '<looprig_closure name="c" kind="screw" frame1="a" frame2="b"/>',
            "closure kind 'screw'",
            None,
        ),
        (
            '<link name="a"/><link name="b"/>'
            + joint("j", "fixed", "a", "b")
            + '<looprig_closure name="c" frame1="a" frame2="x"/>',
            "frame 'x' is not a link",
            None,
        ),
        (
            '<link name="a"/><link name="b"/>'
            + joint("j", "fixed", "a", "b")
            + '<looprig_actuator joint="nope"/>',
            "actuated joint 'nope' does not exist",
            None,
        ),
        (
            '<link name="a"/><link name="b"/>'
            + joint("j", "fixed", "a", "b")
            + '<looprig_actuator joint="j"/>',
            "fixed joint cannot carry an actuator",
            None,
        ),
    ],
)
def test_malformed_urdf_errors(tmp_path, body, fragment, line):
    path = write(tmp_path, robot(body))
    with pytest.raises(FileFormatError) as info:
        load_mechanism(path)
    assert fragment in str(info.value)
    assert str(path) in str(info.value)
    if line is not None:
        assert info.value.line == line


def test_cycle_is_named(tmp_path):
    body = (
        '<link name="root"/><link name="a"/><link name="b"/><link name="c"/>'
        + joint("j1", "fixed", "a", "b")
        + joint("j2", "fixed", "b", "c")
        + joint("j3", "fixed", "c", "a")
    )
    with pytest.raises(FileFormatError, match="cycle"):
        load_mechanism(write(tmp_path, robot(body)))


def test_not_xml_and_hostile_xml(tmp_path):
    path = write(tmp_path, '<robot name="x">\n<link name="a">\n</robot>\n')
    with pytest.raises(FileFormatError, match="not well-formed") as info:
        load_mechanism(path)
    assert info.value.line == 3
    bomb = (
        '<?xml version="1.0"?>\n<!DOCTYPE r [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;">]>\n'
        '<robot name="&b;"><link name="a"/></robot>'
    )
    with pytest.raises(FileFormatError, match="entity declarations are not allowed"):
        load_mechanism(write(tmp_path, bomb))
    with pytest.raises(FileFormatError, match=r"root element is <mujoco>, expected <robot>"):
        load_mechanism(write(tmp_path, "<mujoco/>"), format="urdf")


def test_floating_base(tmp_path):
    path = write(
        tmp_path,
        robot(
            '<link name="a"><inertial><mass value="1"/></inertial></link>'
            '<link name="b"><inertial><mass value="1"/></inertial></link>' + joint("j", "revolute", "a", "b")
        ),
    )
    m = load_mechanism(path, floating_base=True)
    assert m.bodies[0].name == "world" and m.bodies[0].grounded
    assert m.joint("world_to_a").kind == JointKind.FREE


def test_mimic_is_a_coupling(tmp_path):
    """<mimic joint="j1" multiplier="-0.5" offset="0.2"/> on j2: q_j2 = -0.5 q_j1 + 0.2 (file
    values). The zero pose violates it (offset), so the loader assembles j2 to 0.2 rad;
    driving j1 by FK then moves j2 as the mimic says."""
    body = (
        LINKS.split('<link name="d">')[0]
        + joint("j1", "revolute", "a", "b", axis="0 0 1")
        + joint(
            "j2",
            "revolute",
            "a",
            "c",
            xyz="0.1 0 0",
            axis="0 0 1",
            extra='<mimic joint="j1" multiplier="-0.5" offset="0.2"/>',
        )
        + '<transmission name="t"><joint name="j1"/></transmission>'
    )
    imported = load_model(write(tmp_path, robot(body)))
    m = imported.mechanism
    (coupling,) = m.couplings
    assert (coupling.joint, coupling.sources, coupling.ratios) == ("j2", ("j1",), (-0.5,))
    q1, q2 = imported.joint_offsets["j1"], imported.joint_offsets["j2"]  # file values, assembled
    assert q2 == pytest.approx(-0.5 * q1 + 0.2, abs=1e-9) and q2 != 0  # assembly tolerance
    assert coupling.offset == pytest.approx(0.0, abs=1e-9)  # about the assembled pose
    state = solve_fk(m, [0.4]).state  # j1 turned 0.4 rad from its assembled value
    R_c = quat_to_matrix(state[m.body_index("c"), 3:])
    assert np.arctan2(R_c[1, 0], R_c[0, 0]) == pytest.approx(-0.5 * (q1 + 0.4) + 0.2, abs=1e-9)
    with pytest.raises(FileFormatError, match=r"<mimic>: mimics 'x', which is no revolute"):
        load_mechanism(
            write(tmp_path, robot(AB + joint("j", "revolute", "a", "b", extra='<mimic joint="x"/>')))
        )


def test_closures_argument_and_xml_extension(tmp_path):
    text = UNASSEMBLED.replace(
        '<looprig_closure name="pin" kind="revolute" frame1="end_a" frame2="end_b"/>', ""
    )
    path = write(tmp_path, text, "robot.xml")  # a URDF with an .xml name: told apart by its root element
    m = load_mechanism(path, closures=[("end_a", "end_b", "revolute")])
    assert m.joint("end_a__end_b").kind == JointKind.REVOLUTE
    np.testing.assert_allclose(m.frame("end_a").position, m.frame("end_b").position, atol=1e-12)
    with pytest.raises(FileFormatError, match="closure frame 'nope' is not a link"):
        load_mechanism(path, closures=[("end_a", "nope", "fixed")])


def test_yaml_side_file_that_is_not_utf8_is_a_clear_error(tmp_path):
    path = write(tmp_path, robot(AB + joint("j", "revolute", "a", "b")))
    (tmp_path / "robot.yaml").write_bytes(b"closed_loop: [['a', 'b\xff\xfe']]\n")
    with pytest.raises(FileFormatError, match=r"robot\.yaml: not UTF-8 text"):
        load_mechanism(path)


def test_oversized_files_are_refused_before_reading(tmp_path):
    """A sparse file over the documented limit is refused by its size, in no time; the
    message names the URDF, the link and the mesh."""
    from looprig.cad_import.errors import MAX_MESH_BYTES, MAX_MODEL_BYTES

    with open(tmp_path / "huge.stl", "wb") as stream:
        stream.truncate(MAX_MESH_BYTES + 1)
    body = (
        '<link name="a"/><link name="b"><collision>'
        '<geometry><mesh filename="huge.stl"/></geometry></collision></link>'
        + joint("j", "revolute", "a", "b", axis="0 0 1")
    )
    path = write(tmp_path, robot(body))
    with pytest.raises(
        FileFormatError, match=r"robot\.urdf:\d+: link 'b': mesh .*huge\.stl: mesh file is 256\.0 MiB"
    ):
        load_mechanism(path)
    with open(tmp_path / "huge.urdf", "wb") as stream:
        stream.truncate(MAX_MODEL_BYTES + 1)
    with pytest.raises(FileFormatError, match="above looprig's limit of 64 MiB"):
        load_mechanism(tmp_path / "huge.urdf")


def test_zero_velocity_limit_is_a_limit_not_none(tmp_path):
    """URDF velocity="0" on a passive joint is kept (nothing checks it); on a motor it is
    refused, naming the joint, instead of meaning "no limit"."""
    limit = '<limit lower="-1" upper="1" velocity="0"/>'
    passive = robot(AB + joint("j", "revolute", "a", "b", axis="0 0 1", extra=limit))
    assert load_mechanism(write(tmp_path, passive)).joint("j").actuator is None
    actuated = passive.replace("</robot>", '<transmission name="t"><joint name="j"/></transmission></robot>')
    with pytest.raises(FileFormatError, match=r"joint 'j': actuated joint with velocity limit 0"):
        load_mechanism(write(tmp_path, actuated))


def test_colours_from_named_and_inline_materials_and_motor_names(tmp_path):
    """A visual's <material> colour (inline, or the robot-level material it names) becomes
    Body.color and the mesh's rgba; a <transmission>'s <actuator name> is the hardware id."""
    body = (
        '<material name="steel"><color rgba="0.5 0.55 0.6 1"/></material>'
        '<link name="a"><visual><geometry><box size="1 1 1"/></geometry>'
        '<material name="steel"/></visual></link>'
        '<link name="b"><inertial><mass value="1"/></inertial>'
        '<visual><geometry><box size="1 1 1"/></geometry>'
        '<material name="red"><color rgba="1 0 0 0.5"/></material></visual></link>'
        '<link name="c"><inertial><mass value="1"/></inertial></link>'
        + joint("j", "revolute", "a", "b", axis="0 0 1")
        + joint("k", "revolute", "b", "c", axis="0 0 1")
        + '<transmission name="t"><joint name="j"/><actuator name="servo_7"/></transmission>'
    )
    m = load_mechanism(write(tmp_path, robot(body)))
    assert [b.color for b in m.bodies] == [(0.5, 0.55, 0.6, 1.0), (1.0, 0.0, 0.0, 0.5), None]
    assert m.joint("j").actuator.hardware_id == "servo_7"
    bad = body.replace('rgba="1 0 0 0.5"', 'rgba="2 0 0 1"')
    with pytest.raises(FileFormatError, match=r"components must lie in \[0, 1\]"):
        load_mechanism(write(tmp_path, robot(bad)))


# --------------------------------------------------------------------- URDF+ (arXiv 2411.19753)
URDF_PLUS = DATA / "fourbar_urdf_plus.urdf"


def test_urdf_plus_loop_closes_a_fourbar_and_its_coupling_drives_a_pulley():
    """The four-bar drawn straight closes through its <loop> (a revolute closure at the
    coupler's and rocker's tips: 0.1 / 0.35 / 0.3 m on 0.3 m ground); the <coupling>
    turns the pulley twice the crank's angle: FK at crank +0.2 rad gives pulley +0.4."""
    model = load_model(URDF_PLUS)
    mechanism = model.mechanism
    assert model.closure_residual > 0.1  # drawn open
    residual, _ = ConstraintSet(mechanism, actuated=False).evaluate(mechanism.initial_state(), None)
    assert np.max(np.abs(residual)) < 1e-10
    (belt,) = mechanism.couplings
    assert (belt.joint, belt.sources, belt.ratios) == ("pulley_joint", ("crank_joint",), (2.0,))
    tip = mechanism.joint("pin_B")
    assert tip.kind == JointKind.REVOLUTE and np.allclose(np.abs(tip.axis), [0, 0, 1])
    coupler_length = np.linalg.norm(tip.anchor - mechanism.joint("coupler_joint").anchor)
    assert coupler_length == pytest.approx(0.35, abs=1e-9)
    result = solve_fk(mechanism, [0.2])
    joints = [mechanism.joint("crank_joint"), mechanism.joint("pulley_joint")]
    crank, pulley = JointReadout(mechanism, joints).read(result.state)
    assert (crank, pulley) == (pytest.approx(0.2, abs=1e-9), pytest.approx(0.4, abs=1e-9))


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            '<loop name="pin_B" type="revolute">',
            '<loop name="pin_B" type="prismatic">',
            "loop type 'prismatic'",
        ),
        ('<successor link="rocker">', '<successor link="rockr">', "link 'rockr' does not exist"),
        ('<predecessor link="crank"/>', '<predecessor link="ground"/>', "link 'ground' is the root"),
        ('<ratio value="2.0"/>', '<ratio value="two"/>', "ratio"),
    ],
)
def test_wrong_urdf_plus_entries_are_one_line_errors(tmp_path, old, new, message):
    text = URDF_PLUS.read_text()
    assert old in text
    with pytest.raises(FileFormatError, match=message) as error:
        load_model(write(tmp_path, text.replace(old, new)))
    assert "robot.urdf" in str(error.value) and "\n" not in str(error.value)
