"""Motor limits from every source, with one precedence: mapping > file > catalogue > none.

The servo catalogue (looprig.core.model.servos): every figure names its source, names match
without case or punctuation, a family means its slowest member. The files' conventions:
MJCF ``<custom>`` numerics and servo texts, actuator ``user`` rpm with ``gear``, default
classes; the URDF looprig tag's ``servo``; the native file keeps servos and sources.
"""

import math
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from looprig.cad_import import FileFormatError, FileFormatWarning, load_model, save_mechanism
from looprig.core.errors import TargetError
from looprig.core.model.mechanism import Mechanism
from looprig.core.model.parts import Actuator, Body, Joint, JointKind
from looprig.core.model.servos import (
    CATALOGUE,
    RPM,
    ServoError,
    derived_acceleration_limits,
    match_servo,
    servo_model,
)
from looprig.core.retarget.mapping import RetargetMapping

from looprig.app import mechanism_summary

pytest.importorskip("mujoco")

MODELS = Path(__file__).resolve().parents[2] / "shared" / "models"
REACHY = MODELS / "reachy_mini" / "mjcf" / "reachy_mini.xml"
CASSIE = MODELS / "agility_cassie" / "cassie.xml"
needs_models = pytest.mark.skipif(not MODELS.is_dir(), reason=f"robot models not found at {MODELS}")


def load(path, text=None):
    if text is not None:
        path.write_text(text)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", FileFormatWarning)
        model = load_model(path, meshes=False)
    return model, [str(w.message) for w in caught]


def sources(mechanism) -> dict:
    return {
        a["name"]: (a["servo"], a["limit_sources"]) for a in mechanism_summary(mechanism)["actuator_list"]
    }


# --------------------------------------------------------------------- the catalogue
def test_every_published_figure_names_its_source():
    figures = ("voltage", "no_load_speed", "stall_torque", "gear_ratio", "ticks_per_revolution")
    for model in CATALOGUE:
        for figure in (*figures, "position_range", "registers"):
            if getattr(model, figure) is not None:
                assert model.sources.get(figure), (model.name, figure)
        assert model.registers[0].name == "Goal Position"


def test_catalogue_figures_against_the_makers_pages():
    """XM430-W350: 46 rev/min at 12 V (e-Manual); XL330-M288: 103 rev/min at 5 V;
    registers: Goal Position 116, Profile Velocity 112 (0.229 rev/min), Profile
    Acceleration 108 (214.577 rev/min^2); STS3215: Goal Position 42."""
    xm = servo_model("XM430-W350-T")
    assert xm.voltage == 12.0 and xm.no_load_speed == pytest.approx(46 * 2 * math.pi / 60)
    assert servo_model("XL330-M288-T").no_load_speed == pytest.approx(103 * RPM)
    goal, velocity, acceleration = xm.registers
    assert (goal.address, velocity.address, acceleration.address) == (116, 112, 108)
    assert velocity.unit == pytest.approx(0.229 * 2 * math.pi / 60)
    assert acceleration.unit == pytest.approx(214.577 * 2 * math.pi / 3600)
    assert xm.extended_range == (-1_048_575, 1_048_575)
    assert servo_model("STS3215-345-12V").registers[0].address == 42


@pytest.mark.parametrize(
    ("name", "model"),
    [
        ("xc330m288t", "XC330-M288-T"),  # Reachy Mini's class
        ("XM430-W350", "XM430-W350-T"),  # ToddlerBot's classes: no interface suffix
        ("2XC430", "2XC430-W250-T"),
        ("XC330", "XC330-T288-T"),  # a family: its slowest member (65 rev/min)
        ("XC430", "XC430-W240-T"),
        ("sts3215_345", "STS3215-345-12V"),  # 45 rev/min at 12 V is slower than 52 at 7.4 V
        ("dxl_xm430w210_knee", "XM430-W210-T"),  # contained in an actuator's name
    ],
)
def test_names_match_without_case_or_punctuation(name, model):
    assert match_servo(name).model.name == model


def test_generic_names_match_nothing_and_unknown_servos_list_the_catalogue():
    assert match_servo("chosen_actuator") is None and match_servo("main") is None
    with pytest.raises(ServoError, match=r"no servo 'XQ999'.*servos are: XL330-M077-T, "):
        servo_model("XQ999")


# --------------------------------------------------------------------- MJCF conventions
SERVO_ARM = """
<mujoco model="arm">
  <default>
    <default class="XM430-W350"><joint damping="0.1"/></default>
    <default class="generic"/>
  </default>
  <worldbody>
    <body name="a"><joint name="j1" axis="0 0 1" range="-1 1" class="XM430-W350"/><geom size="0.1"/>
      <body name="b" pos="0.2 0 0"><joint name="j2" axis="0 0 1" range="-1 1"/><geom size="0.1"/>
        <body name="c" pos="0.2 0 0"><joint name="j3" axis="0 0 1" range="-2 2" class="generic"/>
          <geom size="0.1"/></body></body></body>
  </worldbody>
  <actuator>
    <position name="m1" joint="j1" kp="1"/>
    <position name="m2" joint="j2" kp="1"/>
    <position name="m3" joint="j3" kp="1"/>
  </actuator>
  <custom>
    <numeric name="looprig:velocity:m1" data="2.5"/>
    <numeric name="looprig:acceleration:m2" data="40"/>
    <text name="looprig:servo:m2" data="XC330-M288-T"/>
  </custom>
</mujoco>
"""


def test_mjcf_limits_file_over_catalogue_and_classes(tmp_path):
    """m1: class XM430-W350 gives the servo, the file's numeric its velocity (file wins);
    m2: the file names XC330-M288-T (catalogue velocity 81 rev/min) and its acceleration;
    m3: a generic class, no servo: no velocity limit."""
    model, notes = load(tmp_path / "arm.xml", SERVO_ARM)
    found = sources(model.mechanism)
    assert found["m1"] == ("XM430-W350-T", {**found["m1"][1], "velocity": "file"})
    assert found["m2"][0] == "XC330-M288-T"
    assert found["m2"][1]["velocity"] == "catalogue" and found["m2"][1]["acceleration"] == "file"
    assert found["m3"] == (
        None,
        {"lower": "file", "upper": "file", "velocity": "none", "acceleration": "none"},
    )
    actuators = {j.actuator_name: j.actuator for j in model.mechanism.actuated_joints}
    assert actuators["m1"].velocity_limit == 2.5
    assert actuators["m2"].velocity_limit == pytest.approx(81 * RPM)
    assert actuators["m2"].acceleration_limit == 40
    assert any("catalogue servo XM430-W350-T (joint class 'XM430-W350')" in n for n in model.notes)
    (note,) = [n for n in notes if "names no servo" in n]  # m3 only; m2's servo is named
    assert (
        "arm.xml: motors m3 use class 'generic', which" in note and "defines servo classes XM430-W350" in note
    )


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            '<numeric name="looprig:speed:m1" data="2"/>',
            "expected looprig:<lower|upper|velocity|acceleration>",
        ),
        ('<numeric name="looprig:velocity:m9" data="2"/>', "no actuator 'm9'; actuators are: m1, m2, m3"),
        ('<numeric name="looprig:velocity:m3" data="-2"/>', "a velocity limit must be positive"),
        ('<numeric name="looprig:velocity:m3" size="2" data="1 2"/>', "data must be one finite number"),
        ('<text name="looprig:servo:m1" data="XQ999"/>', "no servo 'XQ999' in the catalogue"),
        ('<text name="looprig:actuator_user" data="kph"/>', "data must be 'rpm'"),
    ],
)
def test_wrong_mjcf_limit_entries_are_one_line_errors(tmp_path, entry, message):
    text = SERVO_ARM.replace("<custom>", f"<custom>{entry}")
    with pytest.raises(FileFormatError, match=re.escape(message)) as error:
        load(tmp_path / "arm.xml", text)
    assert "arm.xml" in str(error.value) and "\n" not in str(error.value)


@needs_models
def test_cassie_user_rpm_with_gear_needs_the_files_word(tmp_path):
    """Cassie's motors carry their top speed in ``user`` [rev/min] before a ``gear``:
    read only when the file says so; then left-hip-roll: 2900 rpm / 25 = 12.15 rad/s."""
    model, notes = load(CASSIE)
    assert any("actuators carry user data" in n for n in notes)
    assert all(not np.isfinite(j.actuator.velocity_limit) for j in model.mechanism.actuated_joints)
    text = CASSIE.read_text().replace(
        "</mujoco>", '<custom><text name="looprig:actuator_user" data="rpm"/></custom></mujoco>'
    )
    copy = CASSIE.with_name("cassie_rpm.xml")
    try:
        model, _ = load(copy, text)
    finally:
        copy.unlink()
    hip = model.mechanism.actuated_joint("left-hip-roll").actuator
    assert hip.velocity_limit == pytest.approx(2900 * 2 * math.pi / 60 / 25)
    assert hip.limit_source("velocity").value == "file"


@needs_models
def test_reachy_mini_generic_class_is_said_and_a_mapping_of_servos_gives_catalogue_limits():
    model, notes = load(REACHY)
    (note,) = [n for n in notes if "names no servo" in n]
    assert "class 'chosen_actuator'" in note
    assert "defines servo classes xc330m288t, sts3215_345, sts3215_147" in note
    assert all(s == (None, {**s[1], "velocity": "none"}) for s in sources(model.mechanism).values())
    servo = {f"stewart_{k}": "xc330m288t" for k in range(1, 7)}
    servo |= {"yaw_body": "sts3215_345", "right_antenna": "sts3215_147", "left_antenna": "sts3215_147"}
    limited = RetargetMapping(targets=(), servo=servo).limited(model.mechanism)
    for name, (model_name, where) in sources(limited).items():
        assert model_name == servo_model(servo[name]).name and where["velocity"] == "catalogue", name
    assert limited.actuated_joint("stewart_1").actuator.velocity_limit == pytest.approx(81 * RPM)


# --------------------------------------------------------------------- the mapping
def test_mapping_limits_override_the_file_and_the_catalogue(tmp_path):
    """Precedence on m1 (file velocity 2.5, class XM430-W350): the mapping's servo
    (catalogue, 77 rev/min) over the file, the mapping's own velocity over both."""
    model, _ = load(tmp_path / "arm.xml", SERVO_ARM)
    mapping = RetargetMapping.from_dict(
        {
            "targets": [],
            "servo": {"m1": "XM430-W210", "m3": "XL430-W250"},
            "motor_limits": {"m1": {"velocity": 1.5, "lower": -0.5}, "m2": {"acceleration": 10}},
        }
    )
    limited = mapping.limited(model.mechanism)
    m1, m3 = limited.actuated_joint("m1").actuator, limited.actuated_joint("m3").actuator
    assert (m1.servo, m1.velocity_limit, m1.lower) == ("XM430-W210-T", 1.5, -0.5)
    assert [m1.limit_source(k).value for k in ("lower", "upper", "velocity")] == [
        "mapping",
        "file",
        "mapping",
    ]
    assert (m3.servo, m3.limit_source("velocity").value) == ("XL430-W250-T", "catalogue")
    assert m3.velocity_limit == pytest.approx(57 * RPM)
    assert limited.actuated_joint("m2").actuator.acceleration_limit == 10


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"motor_limits": {"m1": {"speed": 1}}}, "no limit 'speed'; limits are: acceleration, lower"),
        ({"motor_limits": {"m1": {"velocity": 0}}}, "velocity must be positive"),
        ({"motor_limits": {"m1": {"lower": 1, "upper": 0}}}, "lower 1 exceeds upper 0"),
        ({"servo": {"m1": "XQ999"}}, "mapping servo 'm1': no servo 'XQ999'"),
        ({"servo": {"m1": 3}}, "expected a servo model name"),
    ],
)
def test_wrong_mapping_limits_are_one_line_errors(data, message):
    with pytest.raises(TargetError, match=message):
        RetargetMapping.from_dict({"targets": [], **data})


def test_mapping_limits_name_known_motors(tmp_path):
    model, _ = load(tmp_path / "arm.xml", SERVO_ARM)
    mapping = RetargetMapping(targets=(), motor_limits={"m9": {"velocity": 1.0}})
    with pytest.raises(TargetError, match=r"no actuator 'm9'; actuators are: m1 \(joint j1\)"):
        mapping.limited(model.mechanism)


# --------------------------------------------------------------------- URDF and native
URDF = """<robot name="r">
  <link name="base"/><link name="arm"><inertial><mass value="1"/>
    <inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="j" type="revolute"><parent link="base"/><child link="arm"/>
    <limit lower="-1" upper="1" effort="1" velocity="3"/></joint>
  <looprig_actuator joint="j" name="m" servo="{servo}"/>
</robot>"""


def test_urdf_velocity_wins_over_the_tagged_servo_and_the_native_file_keeps_both(tmp_path):
    model, _ = load(tmp_path / "r.urdf", URDF.format(servo="2XL430"))
    actuator = model.mechanism.actuated_joint("m").actuator
    assert (actuator.servo, actuator.velocity_limit, actuator.limit_source("velocity").value) == (
        "2XL430-W250-T",
        3.0,
        "file",
    )
    limited = RetargetMapping(targets=(), servo={"m": "XC430-W150"}).limited(model.mechanism)
    path = save_mechanism(limited, tmp_path / "r.looprig.json")
    again = load_model(path).mechanism.actuated_joint("m").actuator
    assert again.servo == "XC430-W150-T" and again.limit_source("velocity").value == "catalogue"
    assert again.velocity_limit == pytest.approx(106 * RPM)


def test_unknown_servo_in_the_urdf_tag_names_the_joint(tmp_path):
    with pytest.raises(FileFormatError, match=r"r\.urdf.*no servo 'XQ999'"):
        load(tmp_path / "r.urdf", URDF.format(servo="XQ999"))


# --------------------------------------------------------------------- derived acceleration
def pendulum(along, servo="XM430-W350-T", rotor=0.0):
    """A 2 kg arm on a hinge about y, its CoM 0.1 m from the hinge along ``along``, 1e-3 kg m^2
    about its CoM: motor-space inertia 1e-3 + 2 (0.1)^2 = 0.021 kg m^2 (+ ``rotor``)."""
    arm = Body("arm", position=0.1 * np.array(along, float), mass=2.0, inertia=1e-3 * np.eye(3))
    actuator = Actuator(servo=servo, rotor_inertia=rotor)
    joint = Joint("j", JointKind.REVOLUTE, "ground", "arm", axis=[0, 1, 0], actuator=actuator)
    return Mechanism([Body("ground", grounded=True), arm], [joint])


def test_derived_acceleration_of_a_pendulum_is_its_closed_form():
    """``(stall torque - m g r) / (I_c + m r^2 + rotor)``: XM430-W350 (4.1 N m), the arm
    horizontal (load 2 x 9.81 x 0.1 N m) or upright (no load); the worst of both states."""
    horizontal, upright = pendulum([1, 0, 0]), pendulum([0, 0, 1])
    assert derived_acceleration_limits(horizontal)["j"] == pytest.approx((4.1 - 1.962) / 0.021)
    assert derived_acceleration_limits(upright)["j"] == pytest.approx(4.1 / 0.021)
    assert derived_acceleration_limits(pendulum([0, 0, 1], rotor=0.009))["j"] == pytest.approx(4.1 / 0.03)
    turned = upright.initial_state()  # the upright arm turned a quarter turn about y: horizontal
    turned[1] = [0.1, 0, 0, np.sqrt(0.5), 0, np.sqrt(0.5), 0]
    both = np.stack([upright.initial_state(), turned])
    assert derived_acceleration_limits(upright, both)["j"] == pytest.approx((4.1 - 1.962) / 0.021)
    assert derived_acceleration_limits(pendulum([1, 0, 0], servo="XL330-M077-T")) == {}  # cannot hold it


def test_derived_acceleration_fills_only_what_no_other_source_gives(tmp_path):
    """Off unless asked; then m2 keeps the file's 40 rad/s^2, m1 (XM430-W350 by its class)
    gets the estimate, m3 (no servo) none. ToddlerBot's armature is its rotor inertia."""
    model, _ = load(tmp_path / "arm.xml", SERVO_ARM)
    assert RetargetMapping(targets=()).limited(model.mechanism) is model.mechanism
    limited = RetargetMapping.from_dict({"targets": [], "derive_acceleration": True}).limited(model.mechanism)
    where = {n: a[1]["acceleration"] for n, a in sources(limited).items()}
    assert where == {"m1": "derived", "m2": "file", "m3": "none"}
    assert limited.actuated_joint("m2").actuator.acceleration_limit == 40
    toddlerbot, _ = load(Path(__file__).parent / "data" / "toddlerbot_2xc" / "toddlerbot_2xc.xml")
    assert toddlerbot.mechanism.actuated_joint("neck_pitch_act").actuator.rotor_inertia == 0.0048
    with pytest.raises(TargetError, match="derive_acceleration must be true or false"):
        RetargetMapping.from_dict({"targets": [], "derive_acceleration": "yes"})
