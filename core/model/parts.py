"""The records a mechanism is made of: joint kinds, actuators, bodies, joints, named
frames and couplings, with geometry in the initial (assembly) configuration, world
coordinates [m]. :class:`~looprig.core.model.mechanism.Mechanism` validates them."""

import math
from dataclasses import dataclass, field, replace
from enum import StrEnum

import numpy as np


class JointKind(StrEnum):
    """Joint kinds and the relative motion each one leaves free.

    ========== ==== ===========================================================
    kind       dof  constraint between parent and child
    ========== ==== ===========================================================
    fixed      0    anchor points coincide, orientations locked
    revolute   1    anchor points coincide, hinge axis shared
    prismatic  1    child slides along the axis, orientations locked
    cylindrical 2   child slides along and turns about the axis
    spherical  3    anchor points coincide
    universal  2    anchor points coincide, ``axis`` (on parent) stays
                    orthogonal to ``secondary_axis`` (on child)
    planar     3    the plane through the anchor with normal ``axis`` is shared
    parallel   3    orientations locked, translation free (the paper's
                    "parallel" joint: the child stays parallel to the parent)
    free       6    none (a floating base joined to the world)
    ========== ==== ===========================================================
    """

    FIXED = "fixed"
    REVOLUTE = "revolute"
    PRISMATIC = "prismatic"
    CYLINDRICAL = "cylindrical"
    SPHERICAL = "spherical"
    UNIVERSAL = "universal"
    PLANAR = "planar"
    PARALLEL = "parallel"
    FREE = "free"


JOINT_DOF = {
    JointKind.FIXED: 0,
    JointKind.REVOLUTE: 1,
    JointKind.PRISMATIC: 1,
    JointKind.CYLINDRICAL: 2,
    JointKind.SPHERICAL: 3,
    JointKind.UNIVERSAL: 2,
    JointKind.PLANAR: 3,
    JointKind.PARALLEL: 3,
    JointKind.FREE: 6,
}


class ActuatedMotion(StrEnum):
    """The joint coordinate an actuator drives."""

    ANGLE = "angle"  # rotation of the child about the joint axis [rad]
    DISPLACEMENT = "displacement"  # translation of the child along the axis [m]


#: Which coordinate each actuatable joint kind offers.
ACTUATABLE = {
    JointKind.REVOLUTE: (ActuatedMotion.ANGLE,),
    JointKind.PRISMATIC: (ActuatedMotion.DISPLACEMENT,),
    JointKind.CYLINDRICAL: (ActuatedMotion.ANGLE, ActuatedMotion.DISPLACEMENT),
}


class LimitSource(StrEnum):
    """Where a motor's limit came from, in order of precedence: the mapping (or a
    Blender property, a command-line flag), the robot file's own fields, the servo
    catalogue (:mod:`~looprig.core.model.servos`), an estimate looprig derived, or nowhere."""

    MAPPING = "mapping"
    FILE = "file"
    CATALOGUE = "catalogue"
    DERIVED = "derived"
    NONE = "none"


#: A motor's limits by the names the mapping and the files use -> :class:`Actuator` fields.
LIMIT_FIELDS = {
    "lower": "lower",
    "upper": "upper",
    "velocity": "velocity_limit",
    "acceleration": "acceleration_limit",
}


@dataclass(frozen=True)
class Actuator:
    """A motor on a joint.

    ``motion`` is the driven coordinate: an angle [rad] about the joint axis or a
    displacement [m] along it, zero in the initial configuration. Limits are in
    SI units of that coordinate (rad, rad/s, rad/s^2 or m, m/s, m/s^2).
    ``hardware_id`` names the physical motor (bus id, channel) it maps to. How
    the coordinate maps to a position servo's ticks (Dynamixel-style, 4096 a
    turn): ``zero_offset_ticks`` at value 0, ``direction`` +1 if positive values
    turn the servo's positive way, else -1, and for displacements the travel
    per servo turn ``metres_per_revolution`` [m] (pinion circumference, lead).
    ``name`` is the motor's name as the robot file gives it (MJCF ``<actuator
    name>``, a URDF transmission's ``<actuator name>``); curves carry it. None:
    the joint's name (:attr:`Joint.actuator_name`). ``servo``: the servo model
    (a :mod:`~looprig.core.model.servos` catalogue name) the motor is, or None.
    ``limit_sources``: ``(limit, source)`` pairs (:data:`LIMIT_FIELDS` names,
    :class:`LimitSource` values) for the limits whose source is not the default
    of :meth:`limit_source`. ``rotor_inertia``: the motor's rotor inertia reflected
    through its gear to the joint [kg m^2, or kg for a displacement] (MJCF ``armature``).
    """

    motion: ActuatedMotion = ActuatedMotion.ANGLE
    lower: float = -np.inf
    upper: float = np.inf
    velocity_limit: float = np.inf
    acceleration_limit: float = np.inf
    hardware_id: int | str | None = None
    zero_offset_ticks: int = 2048
    direction: int = 1
    metres_per_revolution: float | None = None
    name: str | None = None
    servo: str | None = None
    limit_sources: tuple[tuple[str, str], ...] = ()
    rotor_inertia: float = 0.0

    @property
    def unit(self) -> str:
        return "rad" if self.motion == ActuatedMotion.ANGLE else "m"

    def limit_source(self, limit: str) -> LimitSource:
        """Where ``limit`` (``lower``, ``upper``, ``velocity`` or ``acceleration``) came
        from: as recorded, else the robot file when it is finite, else none."""
        recorded = dict(self.limit_sources)
        if limit in recorded:
            return LimitSource(recorded[limit])
        finite = np.isfinite(getattr(self, LIMIT_FIELDS[limit]))
        return LimitSource.FILE if finite else LimitSource.NONE

    def with_limits(self, values: dict, source: LimitSource, servo: str | None = None) -> "Actuator":
        """This actuator with ``values`` (limit name -> value, in the actuator's units:
        rad or m, rad/s or m/s, rad/s^2 or m/s^2) taken from ``source``; ``servo``
        (when given) names its model."""
        sources = dict(self.limit_sources) | dict.fromkeys(values, LimitSource(source).value)
        return replace(
            self,
            **{LIMIT_FIELDS[k]: float(v) for k, v in values.items()},
            servo=servo or self.servo,
            limit_sources=tuple(sorted(sources.items())),
        )


@dataclass(frozen=True, eq=False)
class Body:
    """A rigid body.

    position: (3,) CoM in the initial configuration, world [m].
    orientation: (4,) unit quaternion (w, x, y, z), body to world, initial configuration.
    mass: [kg], positive. inertia: (3, 3) about the CoM in body axes [kg m^2], optional.
    grounded: fixed to the world. mesh: a path or URI for display, optional;
    T_body_mesh: (4, 4) pose of the mesh in body coordinates.
    color: display colour (r, g, b, a) in [0, 1] as the file gives it (URDF
    ``<material>``, MJCF ``rgba`` or material), optional.
    """

    name: str
    position: np.ndarray = field(default_factory=lambda: np.zeros(3))
    orientation: np.ndarray = field(default_factory=lambda: np.array([1.0, 0.0, 0.0, 0.0]))
    mass: float = 1.0
    inertia: np.ndarray | None = None
    grounded: bool = False
    mesh: str | None = None
    T_body_mesh: np.ndarray = field(default_factory=lambda: np.eye(4))
    color: tuple[float, float, float, float] | None = None


@dataclass(frozen=True, eq=False)
class Joint:
    """A joint between ``parent`` and ``child`` bodies (names).

    anchor: (3,) joint origin, world, initial configuration [m].
    axis: (3,) hinge / slide / plane-normal / first universal axis, world, initial.
    secondary_axis: (3,) for universal joints the child's axis (orthogonal to
    ``axis``); for other kinds the reference direction of zero angle (optional).
    In a loop, parent and child only fix the sign of the joint coordinate
    (child relative to parent).
    gap: [m] how far apart a loop-closing joint's two sides are left by the file it
    came from (a loop written to a few digits closes nowhere exactly: ToddlerBot's
    neck, 3.6e-8 m); the largest is :attr:`Mechanism.closure_gap`, the precision
    the solvers meet the constraints to. 0 (default): the joint closes exactly.
    """

    name: str
    kind: JointKind
    parent: str
    child: str
    anchor: np.ndarray = field(default_factory=lambda: np.zeros(3))
    axis: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, 1.0]))
    secondary_axis: np.ndarray | None = None
    actuator: Actuator | None = None
    gap: float = 0.0

    @property
    def actuator_name(self) -> str | None:
        """The name of the joint's motor: its actuator's own, else the joint's; None
        for a passive joint."""
        if self.actuator is None:
            return None
        return self.actuator.name or self.name


@dataclass(frozen=True, eq=False)
class Frame:
    """A named frame rigidly attached to a body, for IK targets.

    position: (3,) world, initial configuration [m];
    orientation: (4,) unit quaternion (w, x, y, z), frame to world, initial.
    """

    name: str
    body: str
    position: np.ndarray = field(default_factory=lambda: np.zeros(3))
    orientation: np.ndarray = field(default_factory=lambda: np.array([1.0, 0.0, 0.0, 0.0]))


@dataclass(frozen=True, eq=False)
class Coupling:
    """A joint that follows others: ``q_joint = offset + sum_k P_k(q_sources[k])``, with
    ``P_k(x) = ratios[k] x + sum_p polynomial[k][p - 2] x^p`` (p = 2, 3, ...).

    joint, sources: names of revolute or prismatic joints (their values as
    :mod:`~looprig.core.model.readoff` reads them: zero in the initial configuration,
    radians or metres). One linear source is a gear (URDF ``<mimic>``, an MJCF
    joint equality ``polycoef="c0 c1"``); several a differential (an MJCF fixed
    tendon held to a narrow range, ToddlerBot's waist); higher powers a
    non-linear equality (MJCF ``polycoef`` with ``c2``..``c4``). ratios:
    (S,) [rad/rad, m/m, rad/m or m/rad]; polynomial: () for a linear coupling,
    else one tuple per source, the coefficients of its value squared, cubed, ...
    [unit of joint / unit of source^p]; offset: [rad or m] of ``joint``. A single
    source name and a single ratio are accepted and stored as 1-tuples. Angles
    are read in (-pi, pi] about the initial configuration, so a coupled angle
    must stay within half a turn of it.
    """

    name: str
    joint: str
    sources: tuple[str, ...] | str
    ratios: tuple[float, ...] | float = 1.0
    offset: float = 0.0
    polynomial: tuple[tuple[float, ...], ...] = ()

    def __post_init__(self):
        if isinstance(self.sources, str):
            object.__setattr__(self, "sources", (self.sources,))
        if np.ndim(self.ratios) == 0:
            object.__setattr__(self, "ratios", (self.ratios,))

    @property
    def kind(self) -> str:
        """``polynomial`` (a higher power), ``differential`` (several sources) or ``gear``."""
        if any(any(p) for p in self.polynomial):
            return "polynomial"
        return "differential" if len(self.sources) > 1 else "gear"

    def coefficients(self) -> np.ndarray:
        """(S, P) the coefficients of ``x, x^2, ..., x^P`` of every source's ``P_k``."""
        degree = 1 + max((len(p) for p in self.polynomial), default=0)
        out = np.zeros((len(self.sources), degree))
        out[:, 0] = self.ratios
        for k, higher in enumerate(self.polynomial):
            out[k, 1 : 1 + len(higher)] = higher
        return out

    def value(self, source_values) -> float:
        """``q_joint`` [rad or m] for the sources' values (S,) [rad or m]."""
        x, C = np.asarray(source_values, dtype=float), self.coefficients()
        return float(self.offset + np.sum(C * x[:, None] ** np.arange(1, C.shape[1] + 1)))

    def shifted(self, values: dict[str, float]) -> "Coupling":
        """This coupling about the joint values ``values`` (name -> [rad or m], every
        source's and the joint's): with ``q = q' + v``, ``q'_joint = offset' + sum_k
        P'_k(q'_k)``, ``P'_k(x) = P_k(x + v_k) - P_k(v_k)`` (a Taylor shift of each
        polynomial) and ``offset' = offset + sum_k P_k(v_k) - v_joint``."""
        v = np.array([values[s] for s in self.sources], dtype=float)
        C = self.coefficients()  # (S, P), C[k, m - 1] multiplies x^m
        P = C.shape[1]
        m = np.arange(1, P + 1)
        # x^m = sum_p binom(m, p) x'^p v^(m - p): the coefficient of x'^p, p = 1..P
        binom = np.array([[math.comb(int(mm), p) for mm in m] for p in m], dtype=float)  # (p, m)
        shift = binom * v[:, None, None] ** np.clip(m[None, :] - m[:, None], 0, None)  # (S, p, m)
        shifted = np.einsum("kpm,km->kp", shift, C)  # binom(m, p) = 0 for p > m
        offset = self.value(v) - values[self.joint]
        polynomial = tuple(tuple(float(c) for c in row[1:]) for row in shifted) if P > 1 else ()
        return Coupling(
            self.name,
            self.joint,
            self.sources,
            tuple(float(r) for r in shifted[:, 0]),
            float(offset),
            polynomial,
        )
