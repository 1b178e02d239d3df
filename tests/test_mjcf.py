"""MJCF import through MuJoCo: joint kinds, units, defaults, equalities, actuators, meshes."""

import warnings
from pathlib import Path

import numpy as np
import pytest
from looprig.cad_import import FileFormatError, FileFormatWarning, load_mechanism, load_model
from looprig.cad_import.mjcf import load_mjcf
from looprig.core import ConstraintSet, JointKind, solve_fk
from looprig.core.maths.rotations import quat_to_matrix
from looprig.core.model.mobility import analyse_mobility
from looprig.core.model.readoff import JointReadout

mujoco = pytest.importorskip("mujoco")

DATA = Path(__file__).parent / "data"


def write(tmp_path, text, name="model.xml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def quiet_load(path, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FileFormatWarning)
        return load_model(path, **options)


KINDS = """
<mujoco model="kinds">
  <compiler angle="radian"/>
  <worldbody>
    <body name="hinge_body" pos="0.1 0 0">
      <joint name="hinge" type="hinge" axis="0 1 0" pos="0 0 0.05" range="-1 1"/>
      <geom size="0.01"/>
      <body name="slide_body" pos="0.2 0 0">
        <joint name="slide" type="slide" axis="1 0 0" range="-0.1 0.2"/>
        <geom size="0.01"/>
        <body name="ball_body" pos="0 0.2 0">
          <joint name="ball" type="ball" pos="0.01 0 0"/>
          <geom size="0.01"/>
        </body>
      </body>
    </body>
    <body name="free_body" pos="0 0 1">
      <freejoint name="free"/>
      <geom size="0.01"/>
    </body>
    <body name="welded" pos="0 1 0"><geom size="0.01"/></body>
  </worldbody>
  <actuator>
    <motor name="m_hinge" joint="hinge" ctrlrange="-5 5"/>
    <position name="p_slide" joint="slide" kp="100" ctrlrange="-0.05 0.5"/>
  </actuator>
</mujoco>
"""


def test_every_mjcf_joint_kind_maps_to_its_looprig_kind(tmp_path):
    m = quiet_load(write(tmp_path, KINDS)).mechanism
    kinds = {j.name: j.kind for j in m.joints}
    assert kinds == {
        "hinge": JointKind.REVOLUTE,
        "slide": JointKind.PRISMATIC,
        "ball": JointKind.SPHERICAL,
        "free": JointKind.FREE,
        "welded_fixed": JointKind.FIXED,
    }
    assert m.bodies[0].name == "world" and m.bodies[0].grounded
    np.testing.assert_allclose(m.joint("hinge").anchor, [0.1, 0, 0.05])
    np.testing.assert_allclose(m.joint("hinge").axis, [0, 1, 0])
    np.testing.assert_allclose(m.joint("ball").anchor, [0.31, 0.2, 0])
    # motor: limits from the joint range; position servo: ctrlrange narrowed by the joint range
    hinge, slide = m.joint("hinge").actuator, m.joint("slide").actuator
    assert (hinge.lower, hinge.upper, hinge.hardware_id, hinge.name) == (-1.0, 1.0, "m_hinge", "m_hinge")
    assert (slide.lower, slide.upper, slide.hardware_id, slide.name) == (-0.05, 0.2, "p_slide", "p_slide")
    assert slide.motion == "displacement"


def test_angle_units_defaults_and_orientation_forms(tmp_path):
    """compiler angle= (degrees vs radians) and default classes give the same model."""
    template = """
    <mujoco>
      <compiler angle="{unit}"/>
      <default><joint axis="0 0 1" range="{r0} {r1}"/>
        <default class="tilted"><joint axis="1 0 0"/></default></default>
      <worldbody>
        <body name="a" euler="{e} 0 0"><joint name="j1"/><geom size="0.01"/>
          <body name="b" pos="0 0.3 0" axisangle="0 0 1 {e}"><joint name="j2" class="tilted"/>
            <geom size="0.01"/><site name="tip" pos="0 0.2 0" zaxis="0 1 0"/></body>
        </body>
      </worldbody>
      <actuator><motor joint="j1"/><motor joint="j2"/></actuator>
    </mujoco>"""
    deg = quiet_load(write(tmp_path, template.format(unit="degree", e=30, r0=-45, r1=90), "d.xml")).mechanism
    rad = quiet_load(
        write(tmp_path, template.format(unit="radian", e=np.pi / 6, r0=-np.pi / 4, r1=np.pi / 2), "r.xml")
    ).mechanism
    for jd, jr in zip(deg.joints, rad.joints, strict=True):
        np.testing.assert_allclose(jd.anchor, jr.anchor, atol=1e-12)
        np.testing.assert_allclose(jd.axis, jr.axis, atol=1e-12)
    assert deg.joint("j2").actuator.lower == pytest.approx(-np.pi / 4)
    # j2 inherits the class axis (x of body b), rotated by a's 30 deg roll about x then b's yaw
    Ra = quat_to_matrix(deg.bodies[deg.body_index("a")].orientation)
    Rb = quat_to_matrix(deg.bodies[deg.body_index("b")].orientation)
    np.testing.assert_allclose(
        Rb, Ra @ quat_to_matrix([np.cos(np.pi / 12), 0, 0, np.sin(np.pi / 12)]), atol=1e-12
    )
    np.testing.assert_allclose(deg.joint("j2").axis, Rb[:, 0], atol=1e-12)
    np.testing.assert_allclose(
        deg.frame("tip").position, deg.joint("j2").anchor + Rb @ [0, 0.2, 0], atol=1e-12
    )
    np.testing.assert_allclose(quat_to_matrix(deg.frame("tip").orientation)[:, 2], Rb[:, 1], atol=1e-12)


def test_several_joints_in_one_body_become_a_chain(tmp_path):
    text = """
    <mujoco><worldbody><body name="b" pos="1 0 0">
      <joint name="x" type="slide" axis="1 0 0"/><joint name="y" type="slide" axis="0 1 0"/>
      <joint name="rz" type="hinge" axis="0 0 1" pos="0 0 0.1"/>
      <geom size="0.1"/></body></worldbody></mujoco>"""
    m = quiet_load(write(tmp_path, text)).mechanism
    assert [b.name for b in m.bodies] == ["world", "b", "b__x", "b__y"]
    chain = [(j.name, j.parent, j.child, j.kind.value) for j in m.joints]
    assert chain == [
        ("x", "world", "b__x", "prismatic"),
        ("y", "b__x", "b__y", "prismatic"),
        ("rz", "b__y", "b", "revolute"),
    ]
    assert m.bodies[2].mass < 1e-5  # massless intermediate
    np.testing.assert_allclose(m.joint("rz").anchor, [1, 0, 0.1])


def test_connect_and_weld_equalities(tmp_path):
    text = """
    <mujoco><compiler angle="radian"/><worldbody>
      <body name="a" pos="0 0 1"><joint name="ja" type="hinge" axis="0 1 0"/><geom size="0.01"/>
        <site name="sa" pos="0.5 0 0" euler="0 0 1.0"/></body>
      <body name="b" pos="0.5 0 1.2" euler="0 0 0.1"><freejoint/><geom size="0.01"/>
        <site name="sb" pos="0 0 -0.2"/></body>
      <body name="c" pos="0 1 0"><joint type="ball"/><geom size="0.01"/></body>
      <body name="d" pos="0.2 1.1 0" euler="0 0 0.4"><joint type="ball"/><geom size="0.01"/></body>
    </worldbody>
    <equality>
      <connect name="site_connect" site1="sa" site2="sb"/>
      <weld name="body_weld" body1="c" body2="d" anchor="0.01 0.02 0.03"/>
    </equality></mujoco>"""
    imported = quiet_load(write(tmp_path, text))
    m = imported.mechanism
    connect, weld = m.joint("site_connect"), m.joint("body_weld")
    assert connect.kind == JointKind.SPHERICAL and (connect.parent, connect.child) == ("a", "b")
    assert weld.kind == JointKind.FIXED and (weld.parent, weld.child) == ("c", "d")
    # the weld holds at qpos0 by definition; the site connect (sites coincide already) too
    assert imported.closure_residual < 1e-12
    np.testing.assert_allclose(connect.anchor, [0.5, 0, 1])
    assert np.abs(ConstraintSet(m, actuated=False).residual(m.initial_state())).max() < 1e-12
    assert {f.name for f in m.frames} >= {"sa", "sb", "a", "b", "world"}


def test_site_weld_far_apart_is_assembled(tmp_path):
    text = """
    <mujoco><compiler angle="radian"/><worldbody><site name="w" pos="0 0 1" euler="0 0 0.5"/>
      <body name="f" pos="1 0 0"><freejoint/><geom size="0.1"/><site name="s" pos="0.1 0 0"/></body>
    </worldbody><equality><weld site1="w" site2="s"/></equality></mujoco>"""
    imported = quiet_load(write(tmp_path, text))
    assert imported.closure_residual == pytest.approx(np.hypot(1.1, 1.0))
    m = imported.mechanism
    np.testing.assert_allclose(m.frame("s").position, [0, 0, 1], atol=1e-10)
    np.testing.assert_allclose(m.frame("s").orientation, m.frame("w").orientation, atol=1e-10)


TENDON = """
<mujoco><worldbody>
  <body name="a"><joint name="j1" type="hinge"/><geom size="0.1"/></body>
  <body name="b"><joint name="j2" type="hinge"/><geom size="0.1"/></body>
</worldbody>
<tendon><fixed name="t"><joint joint="j1" coef="{c1}"/><joint joint="j2" coef="0.5"/></fixed></tendon>
{equality}
<actuator><motor name="drive" tendon="t"/></actuator></mujoco>"""


def test_tendon_actuator_with_coupled_joints_is_one_actuator(tmp_path):
    """Equality j1 = j2 and tendon 0.5 j1 + 0.5 j2: one actuator on j2 (the joint the
    equality follows) whose value is the tendon length; with coefficients 1.5 and 0.5
    the length is twice the joint's value, which a note says."""
    equality = '<equality><joint joint1="j1" joint2="j2"/></equality>'
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = load_mechanism(write(tmp_path, TENDON.format(c1=0.5, equality=equality)))
    assert not [w for w in caught if issubclass(w.category, FileFormatWarning)]
    assert m.actuator_names == ["drive"] and m.joint("j2").actuator.hardware_id == "drive"
    assert [(c.joint, c.sources) for c in m.couplings] == [("j1", ("j2",))]
    with pytest.warns(FileFormatWarning, match="the tendon length is 2 times the joint value"):
        load_mechanism(write(tmp_path, TENDON.format(c1=1.5, equality=equality)))


def test_unsupported_features_warn(tmp_path):
    """A tendon whose joints no equality couples: each joint is actuated, with a warning."""
    with pytest.warns(FileFormatWarning) as caught:
        m = load_mechanism(write(tmp_path, TENDON.format(c1=0.5, equality="")))
    messages = " ".join(str(w.message) for w in caught)
    assert "drives tendon 't', whose joints j1, j2 no joint equality couples to one joint" in messages
    assert m.actuator_names == ["j1", "j2"]


def test_mesh_transform_undoes_mujoco_recentring(tmp_path):
    """T_body_mesh applied to the file's vertices gives MuJoCo's compiled geom vertices."""
    trimesh = pytest.importorskip("trimesh")
    box = trimesh.creation.box([0.2, 0.1, 0.05])
    box.apply_transform(trimesh.transformations.rotation_matrix(0.4, [1, 2, 3]))
    box.apply_translation([0.3, -0.2, 0.1])  # off-centre: MuJoCo moves it to its CoM
    box.export(tmp_path / "part.obj")
    text = """
    <mujoco><compiler angle="radian" usethread="false"/>
      <asset><mesh name="part" file="part.obj" scale="2 2 2"/></asset>
      <worldbody><body name="b" pos="0 0 1" euler="0.1 0.2 0.3"><joint type="hinge"/>
        <geom type="mesh" mesh="part" pos="0.01 0.02 0.03" euler="0.5 0 0"/></body></worldbody></mujoco>"""
    path = write(tmp_path, text)
    imported = quiet_load(path)
    body = imported.mechanism.bodies[1]
    assert Path(body.mesh) == (tmp_path / "part.obj").resolve()
    model = mujoco.MjModel.from_xml_path(str(path))
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    compiled = model.mesh_vert[: model.mesh_vertnum[0]]
    world = data.geom_xpos[0] + compiled @ data.geom_xmat[0].reshape(3, 3).T
    file_vertices = trimesh.load(tmp_path / "part.obj", force="mesh", process=False).vertices
    R = quat_to_matrix(body.orientation)
    mine = (file_vertices @ body.T_body_mesh[:3, :3].T + body.T_body_mesh[:3, 3]) @ R.T + body.position
    # same point sets (MuJoCo may merge duplicate vertices): compare nearest neighbours
    distance = np.linalg.norm(world[:, None, :] - mine[None, :, :], axis=-1).min(axis=1)
    assert distance.max() < 1e-6


@pytest.mark.parametrize(
    ("text", "fragment", "line"),
    [
        ("<mujoco><worldbody><body><jointx/></body></worldbody></mujoco>", "unrecognized element", 1),
        (
            '<mujoco>\n<worldbody>\n<body><joint type="hinge" axis="0 0 0"/></body></worldbody></mujoco>',
            "axis too small",
            3,
        ),
        ("<mujoco><worldbody><body", "", None),
        (
            '<mujoco><worldbody><body><geom type="mesh" mesh="m"/></body></worldbody>'
            '<asset><mesh name="m" file="missing.stl"/></asset></mujoco>',
            "missing.stl",
            None,
        ),
        (
            '<mujoco><worldbody><body name="a"><geom size="1"/></body></worldbody>'
            '<equality><connect body1="a" body2="nobody" anchor="0 0 0"/></equality></mujoco>',
            "nobody",
            None,
        ),
        (
            '<mujoco><worldbody><body pos="nan 0 0"><joint/><geom size="1"/></body></worldbody></mujoco>',
            "contains a NaN",
            None,
        ),
    ],
)
def test_malformed_mjcf_errors(tmp_path, monkeypatch, text, fragment, line):
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path, text)
    with pytest.raises(FileFormatError) as info:
        load_mechanism(path, format="mjcf")
    assert str(path) in str(info.value) and fragment in str(info.value)
    if line is not None:
        assert info.value.line == line
    assert not (tmp_path / "MUJOCO_LOG.TXT").exists()  # MuJoCo's messages are collected, not logged


def test_fourbar_connect_file():
    m = load_mechanism(DATA / "fourbar_connect.xml")
    assert m.joint("pin_B").kind == JointKind.SPHERICAL
    assert m.actuator_names == ["crank_motor"]  # the <actuator>'s name
    actuator = m.joint("crank_joint").actuator
    assert (actuator.lower, actuator.upper) == pytest.approx((-3.0, 3.0))  # ctrlrange within +-10 rad


def test_a_name_xml_cannot_hold_still_reads():
    """MuJoCo accepts a control character in the model's name, which its merged XML then
    cannot carry (found by tests/test_fuzz_loaders.py): the file reads, its default
    classes left unnamed, instead of a parser's traceback."""
    text = (DATA / "fourbar_connect.xml").read_text().replace('<mujoco model="', '<mujoco model="\x1f', 1)
    model = load_mjcf(DATA / "named.xml", text=text)
    assert model.mechanism.actuator_names == ["crank_motor"]


def straight_fourbar(ground: float) -> str:
    """A planar four-bar written straight (every joint angle zero): crank 2 cm, coupler
    5 cm and rocker 4 cm in a line along x; the rocker's tip must meet the ground pivot
    at (ground, 0, 0)."""
    return f"""
    <mujoco><compiler angle="radian"/><worldbody>
      <body name="crank"><joint name="crank_joint" axis="0 0 1"/><geom size="0.002"/>
        <body name="coupler" pos="0.02 0 0"><joint name="knee" axis="0 0 1"/><geom size="0.002"/>
          <body name="rocker" pos="0.05 0 0"><joint name="elbow" axis="0 0 1"/><geom size="0.002"/>
            <site name="tip" pos="0.04 0 0"/></body></body></body>
      <site name="pivot" pos="{ground} 0 0"/>
    </worldbody>
    <equality><connect name="close" site1="tip" site2="pivot"/></equality>
    <actuator><motor joint="crank_joint"/></actuator></mujoco>"""


def test_fourbar_written_straight_assembles(tmp_path):
    """From the straight (singular) pose the loop closes to the solver's tolerance,
    relative to the mechanism's size; the link lengths are kept."""
    imported = quiet_load(write(tmp_path, straight_fourbar(0.05)))
    assert imported.closure_residual == pytest.approx(0.06)
    m = imported.mechanism
    np.testing.assert_allclose(m.frame("tip").position, [0.05, 0, 0], atol=1e-12)
    assert np.abs(ConstraintSet(m, actuated=False).residual(m.initial_state())).max() < 1e-12
    knee, elbow = m.joint("knee").anchor, m.joint("elbow").anchor
    assert np.linalg.norm(knee) == pytest.approx(0.02, abs=1e-12)
    assert np.linalg.norm(elbow - knee) == pytest.approx(0.05, abs=1e-12)
    assert np.linalg.norm(m.frame("tip").position - elbow) == pytest.approx(0.04, abs=1e-12)
    # the offsets are the assembled joint angles (file value = actuator value + offset)
    crank = imported.joint_offsets["crank_joint"]
    assert knee == pytest.approx([0.02 * np.cos(crank), 0.02 * np.sin(crank), 0], abs=1e-12)


def test_fourbar_that_cannot_close_is_a_clear_error(tmp_path):
    """Ground pivot 12 cm away: beyond the 11 cm the three links reach."""
    with pytest.raises(FileFormatError, match=r"closures cannot all be met .*closure 'close'"):
        quiet_load(write(tmp_path, straight_fourbar(0.12)))


@pytest.mark.parametrize(
    ("fragment", "message"),
    [
        ('<connect body1="b" body2="world" anchor="0.35 0 -inf"/>', "non-finite values in eq_data"),
        ('<connect body1="b" body2="world" anchor="0.35 0 nan"/>', "NaN"),
    ],
)
def test_non_finite_equality_is_a_clear_error(tmp_path, fragment, message):
    text = f"""<mujoco><worldbody><body name="b"><joint type="hinge"/><geom size="0.1"/></body>
    </worldbody><equality>{fragment}</equality></mujoco>"""
    with pytest.raises(FileFormatError, match=message):
        quiet_load(write(tmp_path, text))


@pytest.mark.parametrize(
    ("inner", "message"),
    [
        ('<inertial pos="0 0 0" mass="-inf" diaginertia="1 1 1"/>', r"body 'w' <inertial>: mass -inf kg"),
        ('<inertial pos="0 0 0" mass="-1" diaginertia="1 1 1"/>', r"body 'w' <inertial>: mass -1 kg"),
        ('<inertial pos="0 0 0" mass="1" diaginertia="1 -1 1"/>', r"body 'w' <inertial>"),
        ('<geom name="g" size="0.1" mass="-1"/>', r"geom 'g' of body 'w': geom mass -1"),
        ('<geom size="0.1" density="-inf"/>', r"a geom of body 'w': geom density -inf"),
    ],
)
def test_negative_or_infinite_masses_are_refused_not_replaced(tmp_path, inner, message):
    """On a body welded to its parent MuJoCo zeroes such masses without a word; looprig
    refuses them, naming the body or geom."""
    text = f"""<mujoco><worldbody><body name="a"><joint type="hinge"/><geom size="0.1"/>
      <body name="w" pos="1 0 0">{inner}</body></body></worldbody></mujoco>"""
    with pytest.raises(FileFormatError, match=message):
        quiet_load(write(tmp_path, text))


COUPLED = """
<mujoco><compiler angle="radian"/><worldbody>
  <body name="a"><joint name="ja" axis="0 0 1"/><geom size="0.01" pos="0.1 0 0"/></body>
  <body name="b" pos="0 0.3 0"><joint name="jb" axis="0 0 1" ref="0.3"/><geom size="0.01"/></body>
</worldbody>
<equality><joint name="eq" joint1="jb" joint2="ja" polycoef="{poly}"/></equality>
<actuator><motor joint="ja"/></actuator></mujoco>"""


def test_joint_equality_is_a_coupling(tmp_path):
    """polycoef "0 -2 0 0 0": (qb - qb0) = -2 (qa - qa0) with MuJoCo's qpos0 reference,
    so driving ja by 0.1 rad turns body b by -0.2 rad."""
    m = quiet_load(write(tmp_path, COUPLED.format(poly="0 -2 0 0 0"))).mechanism
    (coupling,) = m.couplings
    fields = (coupling.joint, coupling.sources, coupling.ratios, coupling.offset, coupling.polynomial)
    assert fields == ("jb", ("ja",), (-2.0,), 0.0, ())
    state = solve_fk(m, [0.1]).state
    R_b = quat_to_matrix(state[m.body_index("b"), 3:])
    assert np.arctan2(R_b[1, 0], R_b[0, 0]) == pytest.approx(-0.2, abs=1e-10)


def file_values(model, state: np.ndarray, names: list[str]) -> np.ndarray:
    """The joints' MuJoCo ``qpos`` [rad] at ``state``: the file's value at the initial
    configuration plus the joint's read-off."""
    m = model.mechanism
    read = JointReadout(m, [m.joint(n) for n in names]).read(state)
    return np.array([model.joint_offsets[n] for n in names]) + read


def test_polynomial_joint_equality_is_a_coupling_and_mujoco_agrees():
    """tests/data/polycoef.xml: ``qb - 0.3 = 0.05 + 0.8 x - 0.3 x^2 + 0.2 x^3 + 0.1 x^4``,
    ``x = qa - 0.2`` (qpos0 = ref). qpos0 does not meet it, so the assembly moves both
    joints and the coupling is re-expressed about the assembled pose (a Taylor shift).
    Driving ja anywhere in [-0.6, 0.8]: qb is the formula's, and MuJoCo, given those
    qpos, finds its equality met."""
    model = quiet_load(DATA / "polycoef.xml")
    m = model.mechanism
    (coupling,) = m.couplings
    assert (coupling.joint, coupling.sources, len(coupling.polynomial[0])) == ("jb", ("ja",), 3)
    assert analyse_mobility(m).coupling_kinds == {"polynomial": 1}
    assert model.joint_offsets["ja"] != pytest.approx(0.2, abs=1e-3)  # assembled off qpos0
    mj = mujoco.MjModel.from_xml_path(str(DATA / "polycoef.xml"))
    data = mujoco.MjData(mj)
    for p in (-0.6, 0.0, 0.45, 0.8):
        qa, qb = file_values(model, solve_fk(m, [p]).state, ["ja", "jb"])
        x = qa - 0.2
        assert qb - 0.3 == pytest.approx(0.05 + 0.8 * x - 0.3 * x**2 + 0.2 * x**3 + 0.1 * x**4, abs=1e-9)
        data.qpos[:] = qa, qb
        mujoco.mj_forward(mj, data)
        equality = data.efc_type == int(mujoco.mjtConstraint.mjCNSTR_EQUALITY)
        assert equality.sum() == 1 and abs(data.efc_pos[equality][0]) < 1e-9


def test_joint_equality_on_a_ball_joint_is_one_line_naming_it(tmp_path):
    """MuJoCo's compiler refuses it; the message keeps the file, line and element."""
    text = COUPLED.replace('<joint name="ja" axis="0 0 1"/>', '<joint name="ja" type="ball"/>')
    text = text.replace('<actuator><motor joint="ja"/></actuator>', "")
    with pytest.raises(FileFormatError, match=r"model\.xml:6: .*only HINGE and SLIDE .* 'eq'") as error:
        quiet_load(write(tmp_path, text.format(poly="0 1 0.5 0 0")))
    assert "\n" not in str(error.value)


def test_narrow_fixed_tendon_on_three_joints_is_a_differential_and_mujoco_agrees():
    """tests/data/differential.xml: the tendon ``0.25 q1 - 0.25 q2 + q_out`` held at 0.1 is
    the coupling ``out = -0.25 act_1 + 0.25 act_2 + 0.05`` about qpos0 (the passive joint
    follows the two motors), said in a note. Forward kinematics of the three motors: the
    file values meet the tendon's equation, MuJoCo's tendon length is the range's middle,
    and the differential leaves one degree of freedom per motor (mobility 3, 0 with the
    motors locked)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", FileFormatWarning)
        model = load_model(DATA / "differential.xml")
    (note,) = [str(w.message) for w in caught if "tendon" in str(w.message)]
    assert "tendon 'diff': its narrow range [0.09, 0.11] is read as an equality, a differential: " in note
    assert "out = -0.25 act_1 + 0.25 act_2 + 0.05 (values about qpos0)" in note
    m = model.mechanism
    (coupling,) = m.couplings
    assert (coupling.joint, coupling.sources, coupling.ratios) == ("out", ("act_1", "act_2"), (-0.25, 0.25))
    mobility = analyse_mobility(m)
    assert (mobility.dof, mobility.dof_with_actuators, mobility.coupling_rows) == (3, 0, 1)
    mj = mujoco.MjModel.from_xml_path(str(DATA / "differential.xml"))
    data = mujoco.MjData(mj)
    for values in ([0.0, 0.0, 0.0], [0.4, 0.7, -0.5], [-1.0, -1.2, 0.9]):
        q = file_values(model, solve_fk(m, values).state, ["spin", "act_1", "act_2", "out"])
        assert 0.25 * q[1] - 0.25 * q[2] + q[3] == pytest.approx(0.1, abs=1e-9)
        data.qpos[:] = q
        mujoco.mj_forward(mj, data)
        assert data.ten_length[0] == pytest.approx(0.1, abs=1e-9)


def test_body_colours_from_rgba_and_materials(tmp_path):
    """Body.color: the body's first visual geom's material or rgba, else its first geom's."""
    text = """
    <mujoco><asset><material name="blue" rgba="0 0 1 1"/></asset><worldbody>
      <body name="a"><joint type="hinge"/><geom size="0.1" rgba="0.25 0.5 0.75 1"/>
        <geom size="0.1" material="blue" contype="0" conaffinity="0"/></body>
      <body name="b" pos="1 0 0"><joint type="hinge"/><geom size="0.1" rgba="1 0 0 0.5"/></body>
    </worldbody></mujoco>"""
    m = quiet_load(write(tmp_path, text)).mechanism
    assert m.bodies[m.body_index("a")].color == (0.0, 0.0, 1.0, 1.0)
    assert m.bodies[m.body_index("b")].color == (1.0, 0.0, 0.0, 0.5)
    assert m.bodies[m.body_index("world")].color is None
