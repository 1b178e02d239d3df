"""The servo catalogue: what servo makers publish about the motors robots are built from.

A robot file often names its servos (an MJCF ``<default class="XM430-W350">``,
an actuator called ``xc330m288t``) without giving their limits. The catalogue
turns such a name into the maker's figures: the no-load speed at the nominal
voltage (looprig's catalogue velocity limit for the motor), the stall torque,
the gear ratio, ticks per revolution, the position and multi-turn ranges in
ticks, and the Goal Position / Profile Velocity / Profile Acceleration
registers with their units. Every figure of every row names the page or data
sheet it came from (:attr:`ServoModel.sources`); a figure no source gave is
None.

Names are matched without case or punctuation (``xc330m288t`` is
``XC330-M288-T``; the interface suffix ``-T``/``-R`` may be left out). A
family name (``XC330``, ``2XC430``) stands for its **slowest** member, the
conservative choice when the file does not say which one it means.

Units: speeds [rad/s], torques [N m], voltages [V], ranges in ticks.
"""

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from ..errors import LooprigError

RPM = 2.0 * math.pi / 60.0  # [rad/s] per rev/min
KGF_CM = 0.0980665  # [N m] per kgf cm
TICK = 2.0 * math.pi / 4096  # [rad] per tick of a 12-bit encoder (4096 per turn)

#: where the Dynamixel figures come from (ROBOTIS e-Manual; its page data are kept in
#: github.com/ROBOTIS-GIT/emanual, read at commit 0028038)
_EMANUAL = "ROBOTIS e-Manual, emanual.robotis.com/docs/en/dxl/x/{page}/"
_EMANUAL_SPECS = _EMANUAL + " Specifications ({figure}; emanual _data/dxl_x_info.yml @0028038)"
_EMANUAL_TABLE = _EMANUAL + (
    " Control Table of RAM Area (Goal Position(116), Profile Velocity(112), Profile Acceleration(108))"
)
_EMANUAL_GOAL = (
    "ROBOTIS e-Manual, Goal Position(116): Position Control Mode 0 ~ 4,095, Extended Position "
    "Control Mode -1,048,575 ~ 1,048,575 (emanual _includes/en/dxl/control_table_goal_position_2.md)"
)
_FEETECH_TABLE = (
    "Feetech STS/SMS memory table (doc.feetech.cn FT-SMS-STS-emanual) as transcribed in "
    "github.com/huggingface/lerobot src/lerobot/motors/feetech/tables.py: Acceleration (41, 1 byte), "
    "Goal_Position (42, 2), Goal_Velocity (46, 2); units from Feetech's FTServo_Arduino "
    "examples/SMS_STS/SyncWritePos (50 step/s = 0.732 rev/min, acceleration unit 8.7 deg/s^2 = 100 step/s^2)"
)


class ServoError(LooprigError, ValueError):
    """A servo name the catalogue does not know."""


@dataclass(frozen=True)
class Register:
    """A control-table register: ``address`` and ``size`` [bytes]; one count is ``unit``
    SI units (rad, rad/s or rad/s^2); ``unit_text`` as the maker writes it."""

    name: str
    address: int
    size: int
    unit: float
    unit_text: str


_DXL_REGISTERS = (
    Register("Goal Position", 116, 4, TICK, "1 pulse (0.088 deg)"),
    Register("Profile Velocity", 112, 4, 0.229 * RPM, "0.229 rev/min"),
    Register("Profile Acceleration", 108, 4, 214.577 * RPM / 60.0, "214.577 rev/min^2"),
)
_STS_REGISTERS = (
    Register("Goal Position", 42, 2, TICK, "1 step (0.088 deg)"),
    Register("Goal Speed", 46, 2, TICK, "1 step/s (50 step/s = 0.732 rev/min)"),
    Register("Acceleration", 41, 1, 100 * TICK, "100 step/s^2 (8.79 deg/s^2)"),
)


@dataclass(frozen=True)
class ServoModel:
    """One servo model as its maker publishes it.

    voltage: the nominal (recommended) supply [V] at which ``no_load_speed`` [rad/s]
    and ``stall_torque`` [N m] are given; gear_ratio: motor turns per output turn;
    ticks_per_revolution: encoder ticks per output turn; position_range and
    extended_range: the Goal Position ticks of position mode and of multi-turn mode
    (None: not published). registers: Goal Position, then the velocity and
    acceleration profile registers. sources: figure name -> the page it came from.
    """

    name: str
    maker: str
    family: str
    voltage: float
    no_load_speed: float | None
    stall_torque: float | None
    gear_ratio: float | None
    ticks_per_revolution: int
    position_range: tuple[int, int]
    extended_range: tuple[int, int] | None
    registers: tuple[Register, ...]
    sources: Mapping[str, str] = field(default_factory=dict)

    @property
    def velocity_limit(self) -> float | None:
        """The catalogue velocity limit [rad/s]: the no-load speed at the nominal voltage."""
        return self.no_load_speed


def _dynamixel(name, page, family, volts, rpm, torque, gear, figure_note):
    """A Dynamixel X row; every figure from the model's e-Manual page (``page``)."""
    specs = {f: _EMANUAL_SPECS.format(page=page, figure=text) for f, text in figure_note.items()}
    return ServoModel(
        name=name,
        maker="ROBOTIS",
        family=family,
        voltage=volts,
        no_load_speed=rpm * RPM,
        stall_torque=torque,
        gear_ratio=gear,
        ticks_per_revolution=4096,
        position_range=(0, 4095),
        extended_range=(-1_048_575, 1_048_575),
        registers=_DXL_REGISTERS,
        sources={
            **specs,
            "ticks_per_revolution": _EMANUAL_SPECS.format(page=page, figure="Resolution 4096 [pulse/rev]"),
            "position_range": _EMANUAL_GOAL,
            "extended_range": _EMANUAL_GOAL,
            "registers": _EMANUAL_TABLE.format(page=page),
        },
    )


def _dxl(name, page, family, volts, rpm, torque, gear):
    return _dynamixel(
        name,
        page,
        family,
        volts,
        rpm,
        torque,
        gear,
        {
            "voltage": f"Operating Voltage, recommended {volts:g} [V]",
            "no_load_speed": f"No Load Speed {rpm:g} [rev/min] (at {volts:g} [V])",
            "stall_torque": f"Stall Torque {torque:g} [N.m] (at {volts:g} [V])",
            "gear_ratio": f"Gear Ratio {gear:g} : 1",
        },
    )


#: The fields of a Feetech row its source gives besides the gearing.
_MOTOR_FIELDS = ("voltage", "no_load_speed", "stall_torque", "ticks_per_revolution")


def _sts(name, volts, speed, torque, gear, extended, sources):
    """A Feetech STS3215 row: 4096 ticks over 0-4095, the Feetech register table;
    speed [rad/s] and torque [N.m] at ``volts``; ``extended``: the multi-turn range
    [ticks] or None."""
    return ServoModel(
        name=name,
        maker="Feetech",
        family="STS3215",
        voltage=volts,
        no_load_speed=speed,
        stall_torque=torque,
        gear_ratio=float(gear),
        ticks_per_revolution=4096,
        position_range=(0, 4095),
        extended_range=extended,
        registers=_STS_REGISTERS,
        sources={**sources, "position_range": _FEETECH_TABLE, "registers": _FEETECH_TABLE},
    )


#: Every servo model the catalogue knows, by maker and family.
CATALOGUE: tuple[ServoModel, ...] = (
    _dxl("XL330-M077-T", "xl330-m077", "XL330", 5.0, 383, 0.215, 77.5),
    _dxl("XL330-M288-T", "xl330-m288", "XL330", 5.0, 103, 0.52, 288.4),
    _dxl("XC330-M181-T", "xc330-m181", "XC330", 5.0, 129, 0.60, 180.62),
    _dxl("XC330-M288-T", "xc330-m288", "XC330", 5.0, 81, 0.93, 288.35),
    _dxl("XC330-T181-T", "xc330-t181", "XC330", 11.1, 104, 0.76, 180.62),
    _dxl("XC330-T288-T", "xc330-t288", "XC330", 11.1, 65, 0.92, 288.35),
    _dxl("XL430-W250-T", "xl430-w250", "XL430", 11.1, 57, 1.4, 258.5),
    _dxl("2XL430-W250-T", "2xl430-w250", "2XL430", 11.1, 57, 1.4, 257.4),
    _dxl("XC430-W150-T", "xc430-w150", "XC430", 12.0, 106, 1.6, 159.59),
    _dxl("XC430-W240-T", "xc430-w240", "XC430", 12.0, 70, 1.9, 245.22),
    _dxl("2XC430-W250-T", "2xc430-w250", "2XC430", 12.0, 64, 1.8, 257.4),
    _dxl("XM430-W210-T", "xm430-w210", "XM430", 12.0, 77, 3.0, 212.6),
    _dxl("XM430-W350-T", "xm430-w350", "XM430", 12.0, 46, 4.1, 353.5),
    _dxl("XH430-W210-T", "xh430-w210", "XH430", 12.0, 50, 2.5, 212.6),
    _dxl("XH430-W350-T", "xh430-w350", "XH430", 12.0, 30, 3.4, 353.5),
    _dxl("XH430-V210-R", "xh430-v210", "XH430", 24.0, 52, 2.6, 212.6),
    _dxl("XH430-V350-R", "xh430-v350", "XH430", 24.0, 31, 3.3, 353.5),
    _sts(
        "STS3215-345-7.4V",
        7.4,
        52 * RPM,
        19.5 * KGF_CM,
        345,
        (-7 * 4096, 7 * 4096),
        {
            key: "DFRobot ST3215 (SER0069) specifications as listed by the distributor "
            "littlebirdelectronics.com.au/products/"
            "st3215-serial-bus-servo-19-5kg-7-4v-360-magnetic-encoder: "
            "0.192 s/60 deg (52 rpm) at 7.4 V, 19.5 kg.cm at 7.4 V, 1:345 gear train, 4096 steps, "
            "+-7 turns multi-turn (a distributor's page, not Feetech's own)"
            for key in (*_MOTOR_FIELDS, "gear_ratio", "extended_range")
        },
    ),
    _sts(
        "STS3215-345-12V",
        12.0,
        45 * RPM,
        30 * KGF_CM,
        345,
        None,
        {
            key: "Feetech STS3215 C018 data-sheet values (12 V, 1:345, 30 kg.cm stall, "
            "45 rpm = 0.22 s/60 deg, 4096 steps) as quoted in "
            "github.com/TheRobotStudio/SO-ARM100 issue 134 and "
            "robonine.com/testing-of-feetech-sts3215-servomotor-backlash-repeatability-and-torque"
            for key in (*_MOTOR_FIELDS, "gear_ratio")
        },
    ),
    *(
        _sts(
            f"STS3215-{gear}",
            7.4,
            52 * RPM * 345 / gear,
            19.5 * KGF_CM * gear / 345,
            gear,
            None,
            {
                "gear_ratio": "huggingface.co/docs/lerobot/so101 (SO-101 leader arm: STS3215 with "
                "1/345, 1/191 and 1/147 gearing)",
                **dict.fromkeys(
                    _MOTOR_FIELDS,
                    "derived, not published: the STS3215-345-7.4V row, speed times and torque over "
                    f"345/{gear} (the same motor and encoder assumed); no maker figure for this gearing",
                ),
            },
        )
        for gear in (191, 147)
    ),
)


def _key(name: str) -> str:
    """A name without case or punctuation: ``XC330-M288-T`` -> ``xc330m288t``."""
    return "".join(c for c in name.lower() if c.isalnum())


def _names(model: ServoModel) -> tuple[str, ...]:
    """The names a model answers to: its own, without its suffix (interface ``-T``/``-R``
    or voltage), and its family's."""
    base, _, suffix = model.name.rpartition("-")
    trimmed = (base,) if suffix in ("T", "R", "7.4V", "12V") else ()
    return (model.name, *trimmed, model.family)


#: key -> the models it may mean (a family or a name without suffix may mean several)
_GROUPS: dict[str, list[ServoModel]] = {}
for _model in CATALOGUE:
    for _name in _names(_model):
        _GROUPS.setdefault(_key(_name), []).append(_model)


@dataclass(frozen=True)
class ServoMatch:
    """A catalogue model found for a name; ``how`` says why, for people
    (``"class 'XC330' names 4 models: the slowest"``)."""

    model: ServoModel
    how: str


def _resolve(key: str, what: str) -> ServoMatch:
    """The model ``key`` (in :data:`_GROUPS`) means: its only one, else the one with the
    lowest published no-load speed (the conservative choice)."""
    members = _GROUPS[key]
    if len(members) == 1:
        return ServoMatch(members[0], what)
    known = [m for m in members if m.no_load_speed is not None]
    slowest = min(known, key=lambda m: m.no_load_speed) if known else members[0]
    return ServoMatch(slowest, f"{what} names {len(members)} models: the slowest")


def match_servo(name: str, what: str = "name") -> ServoMatch | None:
    """The catalogue model a class or actuator name means, or None.

    A model's name (or its name without ``-T``/``-R``) matches it; a family name
    (``XC330``) matches the family's slowest member; otherwise the longest model or
    family name the text contains (``dxl_xm430w350_knee``). ``what`` describes the
    name in :attr:`ServoMatch.how` (``"class 'XC330'"``).
    """
    key = _key(name)
    if key in _GROUPS:
        return _resolve(key, what)
    found = max((k for k in _GROUPS if k in key), key=len, default=None)
    return None if found is None else _resolve(found, f"{what} (contains {found!r})")


def servo_model(name: str) -> ServoModel:
    """The catalogue model named exactly (a model or family name, any case or
    punctuation; a family means its slowest member); raises :class:`ServoError`
    listing the known models otherwise."""
    key = _key(name)
    if key not in _GROUPS:
        known = ", ".join(m.name for m in CATALOGUE)
        raise ServoError(f"no servo {name!r} in the catalogue; servos are: {known}")
    return _resolve(key, name).model


#: [m/s^2] world gravity, z up
GRAVITY = (0.0, 0.0, -9.81)


def derived_acceleration_limits(mechanism, states=None, gravity=GRAVITY) -> dict[str, float]:
    """A conservative acceleration limit [rad/s^2] for each angle motor whose servo's stall
    torque the catalogue knows: ``(stall torque - largest gravity load) / largest
    motor-space inertia`` over ``states`` (n_states, n, 7), default the initial
    configuration. An estimate: the rotor's reflected inertia counts where the file
    gives it (:attr:`Actuator.rotor_inertia`, MJCF ``armature``); friction and the
    torque the servo loses with speed are left out, and other motors are taken as held.

    Motor-space inertia of motor i: the least kinetic energy ``ds' M ds`` of a body motion
    ``ds`` (6 per free body: CoM [m], rotation [rad], world) that keeps every joint
    (``C ds = 0``) and turns motor i by one radian and no other motor (``A ds = e_i``),
    passive joints free but a floating base held (the larger, conservative inertia);
    ``M`` holds each body's mass and world inertia. Its gravity load: ``-sum m g . dc``.
    A motor whose servo cannot hold the load gets no entry.
    """
    from ..maths.rotations import quat_to_matrix
    from .constraints import ConstraintSet
    from .parts import ActuatedMotion, JointKind
    from .readoff import ActuatorReadout

    constraints = ConstraintSet(mechanism, actuated=False)
    readout = ActuatorReadout.of(mechanism)
    motors = [
        (k, servo_model(j.actuator.servo).stall_torque, j.actuator.rotor_inertia)
        for k, j in enumerate(mechanism.actuated_joints)
        if j.actuator.servo and j.actuator.motion == ActuatedMotion.ANGLE
    ]
    motors = [(k, torque, rotor) for k, torque, rotor in motors if torque is not None]
    if not motors:
        return {}
    states = mechanism.initial_state()[None] if states is None else np.asarray(states, float)
    free = constraints.free_bodies
    mass = np.array([b.mass for b in mechanism.bodies])[free]
    inertia = np.array([np.zeros((3, 3)) if b.inertia is None else b.inertia for b in mechanism.bodies])[free]
    columns = np.array([k for k, _, _ in motors])
    floating = [
        mechanism.body_index(j.child)
        for j in mechanism.joints
        if j.kind == JointKind.FREE and mechanism.bodies[mechanism.body_index(j.parent)].grounded
    ]
    held = np.zeros((6 * len(floating), constraints.n_vars))  # rows that hold the floating bases
    for f, body in enumerate(floating):
        held[6 * f : 6 * f + 6, constraints.column_of_body[body] + np.arange(6)] = np.eye(6)
    most_inertia, most_load = np.zeros(len(motors)), np.zeros(len(motors))
    for state in states:
        R = quat_to_matrix(state[free, 3:])
        M = np.zeros((constraints.n_vars, constraints.n_vars))
        for f, (m, I_body, R_f) in enumerate(zip(mass, inertia, R, strict=True)):
            M[6 * f : 6 * f + 3, 6 * f : 6 * f + 3] = m * np.eye(3)
            M[6 * f + 3 : 6 * f + 6, 6 * f + 3 : 6 * f + 6] = R_f @ I_body @ R_f.T
        _, blocks = constraints.evaluate(state, None)
        R_all = quat_to_matrix(state[:, 3:])
        A = readout.jacobian(state, R_all, constraints.column_of_body, constraints.n_vars)
        G = np.vstack([constraints.dense(blocks), held, A])
        K = np.block([[M, G.T], [G, np.zeros((len(G), len(G)))]])
        rhs = np.zeros((len(K), len(motors)))
        rhs[constraints.n_vars + len(G) - len(A) + columns, np.arange(len(motors))] = 1.0
        ds = np.linalg.lstsq(K, rhs, rcond=None)[0][: constraints.n_vars]  # (N, motors)
        most_inertia = np.maximum(most_inertia, np.einsum("nk,nm,mk->k", ds, M, ds))
        dc = ds.reshape(len(free), 6, len(motors))[:, :3]  # (free, 3, motors) [m/rad]
        load = -np.einsum("f,a,fak->k", mass, np.asarray(gravity, float), dc)
        most_load = np.maximum(most_load, np.abs(load))
    names = mechanism.actuator_names
    return {
        names[k]: float((torque - most_load[i]) / (most_inertia[i] + rotor))
        for i, (k, torque, rotor) in enumerate(motors)
        if torque > most_load[i] and most_inertia[i] + rotor > 0
    }
