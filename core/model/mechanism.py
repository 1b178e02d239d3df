"""The mechanism: a constraint graph of rigid bodies (nodes) and joints (edges).

One module although long: the records of the constraint graph and the validation that makes them a mechanism.

Geometry is given in the **initial (assembly) configuration**, in world
coordinates [m]: body CoM positions and orientations, joint anchors and axes,
named frames. Local (body) coordinates are derived from it, so bodies need not
be world-aligned. A :class:`Mechanism` is validated when it is built.
"""

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from ..errors import MechanismError, did_you_mean


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


def actuator_name_choices(mechanism: "Mechanism", name: str) -> str:
    """``no actuator 'x'; actuators are: a (joint j), b`` for an unknown motor name."""
    known = [
        j.name if j.actuator_name == j.name else f"{j.actuator_name} (joint {j.name})"
        for j in mechanism.actuated_joints
    ]
    return f"no actuator {name!r}; actuators are: {', '.join(known) or '(none)'}"


def _component_labels(nodes: Sequence, edges: Iterable[tuple]) -> tuple[list, np.ndarray, int]:
    nodes = list(nodes)
    index = {node: k for k, node in enumerate(nodes)}
    pairs = np.array([(index[a], index[b]) for a, b in edges], dtype=int).reshape(-1, 2)
    graph = sp.coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(len(nodes),) * 2)
    count, labels = connected_components(graph, directed=False)
    return nodes, labels, count


def connected_groups(nodes: Sequence, edges: Iterable[tuple]) -> list[list]:
    """Connected components of an undirected graph (scipy's ``csgraph``).

    nodes: hashable names; edges: ``(a, b)`` pairs of node names (repeats and
    self-loops allowed). Returns one list per component, nodes in the given
    order, components ordered by their first node.
    """
    nodes, labels, _ = _component_labels(nodes, edges)
    groups: dict[int, list] = {}
    for node, label in zip(nodes, labels, strict=True):
        groups.setdefault(int(label), []).append(node)
    return list(groups.values())


def cycle_rank(nodes: Sequence, edges: Sequence[tuple]) -> int:
    """Independent cycles of an undirected multigraph: ``edges - nodes + components``.

    A repeated edge closes a cycle; a self-loop counts as one too.
    """
    edges = list(edges)
    nodes, _, count = _component_labels(nodes, edges)
    return len(edges) - len(nodes) + count


def _vector(value, what: str, shape=(3,)) -> np.ndarray:
    array = np.asarray(value, dtype=float)
    if array.shape != shape:
        raise MechanismError(f"{what}: expected shape {shape}, got {array.shape}")
    if not np.all(np.isfinite(array)):
        raise MechanismError(f"{what}: values must be finite, got {array.tolist()}")
    return array


def _color(value, what: str) -> tuple[float, float, float, float] | None:
    if value is None:
        return None
    rgba = _vector(value, what, (4,))
    if np.any((rgba < 0) | (rgba > 1)):
        raise MechanismError(f"{what}: components must lie in [0, 1], got {rgba.tolist()}")
    return tuple(float(c) for c in rgba)


def _unit_quaternion(value, what: str) -> np.ndarray:
    q = _vector(value, what, (4,))
    norm = np.linalg.norm(q)
    if norm < 1e-9:
        raise MechanismError(f"{what}: quaternion is zero")
    if abs(norm - 1.0) > 1e-14:  # leave unit input bit-exact (files round-trip losslessly)
        q = q / norm
    return -q if q[0] < 0.0 else q


def _nonzero_axis(value, what: str) -> np.ndarray:
    a = _vector(value, what)
    norm = np.linalg.norm(a)
    if norm < 1e-9:
        raise MechanismError(f"{what} is zero-length: {a.tolist()}")
    return a / norm if abs(norm - 1.0) > 1e-14 else a  # unit input stays bit-exact


class Mechanism:
    """A validated constraint graph.

    Raises :class:`MechanismError` on duplicate names, unknown bodies, a joint
    from a body to itself, zero-length axes, non-positive masses, no grounded
    body, bodies not connected to the ground, or an actuator on a joint kind
    that cannot carry it.
    """

    def __init__(
        self,
        bodies: Iterable[Body],
        joints: Iterable[Joint],
        frames: Iterable[Frame] = (),
        name: str = "mechanism",
        couplings: Iterable[Coupling] = (),
    ):
        self.name = name
        self.bodies: tuple[Body, ...] = tuple(self._checked_body(b) for b in bodies)
        self._body_index = self._index(self.bodies, "body")
        self.joints: tuple[Joint, ...] = tuple(self._checked_joint(j) for j in joints)
        self._joint_index = self._index(self.joints, "joint")
        self.frames: tuple[Frame, ...] = tuple(self._checked_frame(f) for f in frames)
        self._frame_index = self._index(self.frames, "frame")
        self.couplings: tuple[Coupling, ...] = self._checked_couplings(couplings)
        self._actuated_joint = self._actuator_index()
        self._check_graph()

    # ----------------------------------------------------------------- validation
    @staticmethod
    def _index(items: Sequence, kind: str) -> dict[str, int]:
        index: dict[str, int] = {}
        for i, item in enumerate(items):
            if not isinstance(item.name, str) or not item.name:
                raise MechanismError(f"{kind} #{i} has no name")
            if item.name in index:
                raise MechanismError(f"duplicate {kind} name {item.name!r}")
            index[item.name] = i
        return index

    @staticmethod
    def _checked_body(body: Body) -> Body:
        what = f"body {body.name!r}"
        mass = float(body.mass)
        if not np.isfinite(mass) or mass <= 0.0:
            raise MechanismError(f"{what}: mass must be positive, got {body.mass}")
        inertia = None
        if body.inertia is not None:
            inertia = _vector(body.inertia, f"{what} inertia", (3, 3))
            if not np.allclose(inertia, inertia.T, atol=1e-12 * max(1.0, np.abs(inertia).max())):
                raise MechanismError(f"{what}: inertia matrix is not symmetric")
        return Body(
            name=body.name,
            position=_vector(body.position, f"{what} position"),
            orientation=_unit_quaternion(body.orientation, f"{what} orientation"),
            mass=mass,
            inertia=inertia,
            grounded=bool(body.grounded),
            mesh=body.mesh,
            T_body_mesh=_vector(body.T_body_mesh, f"{what} T_body_mesh", (4, 4)),
            color=_color(body.color, f"{what} color"),
        )

    def _checked_joint(self, joint: Joint) -> Joint:
        what = f"joint {joint.name!r}"
        try:
            kind = JointKind(joint.kind)
        except ValueError:
            raise MechanismError(
                f"{what}: " + did_you_mean("joint kind", str(joint.kind), [k.value for k in JointKind])
            ) from None
        for role in ("parent", "child"):
            body = getattr(joint, role)
            if body not in self._body_index:
                raise MechanismError(f"{what} {role}: " + did_you_mean("body", body, self._body_index))
        if joint.parent == joint.child:
            raise MechanismError(f"{what} joins body {joint.parent!r} to itself")
        axis = _nonzero_axis(joint.axis, f"{what} axis")
        secondary = None
        if joint.secondary_axis is not None:
            secondary = _nonzero_axis(joint.secondary_axis, f"{what} secondary_axis")
            if abs(np.dot(axis, secondary)) > 1.0 - 1e-6:
                raise MechanismError(f"{what}: secondary_axis is parallel to axis")
        if not (isinstance(joint.gap, (int, float)) and 0.0 <= joint.gap < np.inf):
            raise MechanismError(f"{what}: gap must be a finite number of metres >= 0, got {joint.gap!r}")
        if kind == JointKind.UNIVERSAL:
            if secondary is None:
                raise MechanismError(f"{what}: a universal joint needs secondary_axis")
            if abs(np.dot(axis, secondary)) > 1e-6:
                raise MechanismError(f"{what}: universal axes must be orthogonal")
        actuator = joint.actuator
        if actuator is not None:
            allowed = ACTUATABLE.get(kind, ())
            if ActuatedMotion(actuator.motion) not in allowed:
                kinds = ", ".join(
                    f"{k.value} ({'/'.join(m.value for m in ms)})" for k, ms in ACTUATABLE.items()
                )
                raise MechanismError(
                    f"{what}: a {kind.value} joint cannot be actuated in {actuator.motion}; "
                    f"actuatable kinds are: {kinds}"
                )
            if not actuator.lower <= actuator.upper:
                raise MechanismError(f"{what}: actuator lower limit exceeds upper limit")
            if actuator.velocity_limit <= 0 or actuator.acceleration_limit <= 0:
                raise MechanismError(f"{what}: actuator velocity/acceleration limits must be positive")
            if (
                actuator.direction not in (1, -1)
                or int(actuator.zero_offset_ticks) != actuator.zero_offset_ticks
            ):
                raise MechanismError(
                    f"{what}: servo direction must be +1 or -1 and the zero offset whole ticks"
                )
            mpr = actuator.metres_per_revolution
            if mpr is not None and not (np.isfinite(mpr) and mpr > 0):
                raise MechanismError(f"{what}: metres_per_revolution must be positive, got {mpr}")
            if actuator.name is not None and (not isinstance(actuator.name, str) or not actuator.name):
                raise MechanismError(f"{what}: the actuator's name must be a non-empty string")
        return Joint(
            name=joint.name,
            kind=kind,
            parent=joint.parent,
            child=joint.child,
            anchor=_vector(joint.anchor, f"{what} anchor"),
            axis=axis,
            secondary_axis=secondary,
            actuator=actuator,
            gap=float(joint.gap),
        )

    def _checked_frame(self, frame: Frame) -> Frame:
        what = f"frame {frame.name!r}"
        if frame.body not in self._body_index:
            raise MechanismError(f"{what}: " + did_you_mean("body", frame.body, self._body_index))
        return Frame(
            name=frame.name,
            body=frame.body,
            position=_vector(frame.position, f"{what} position"),
            orientation=_unit_quaternion(frame.orientation, f"{what} orientation"),
        )

    def _checked_couplings(self, couplings: Iterable[Coupling]) -> tuple[Coupling, ...]:
        out, names, dependent = [], set(), {}
        for coupling in couplings:
            what = f"coupling {coupling.name!r}"
            if not isinstance(coupling.name, str) or not coupling.name or coupling.name in names:
                raise MechanismError(f"{what}: couplings need unique, non-empty names")
            names.add(coupling.name)
            sources = tuple(coupling.sources)
            if not sources:
                raise MechanismError(f"{what}: a coupling needs at least one source joint")
            for role, name in [("joint", coupling.joint)] + [("source", s) for s in sources]:
                if name not in self._joint_index:
                    raise MechanismError(f"{what} {role}: " + did_you_mean("joint", name, self._joint_index))
                kind = self.joints[self._joint_index[name]].kind
                if kind not in (JointKind.REVOLUTE, JointKind.PRISMATIC):
                    raise MechanismError(
                        f"{what}: joint {name!r} is {kind.value}; "
                        "couplings join revolute and prismatic joints"
                    )
            if coupling.joint in sources:
                raise MechanismError(f"{what} couples joint {coupling.joint!r} to itself")
            if len(set(sources)) != len(sources):
                raise MechanismError(f"{what}: a source joint is named twice in {list(sources)}")
            if coupling.joint in dependent:
                raise MechanismError(
                    f"{what}: joint {coupling.joint!r} is already set by "
                    f"coupling {dependent[coupling.joint]!r}"
                )
            dependent[coupling.joint] = coupling.name
            try:
                ratios = np.asarray(coupling.ratios, dtype=float)
                polynomial = [np.asarray(p, dtype=float).ravel() for p in coupling.polynomial]
            except (TypeError, ValueError):
                raise MechanismError(
                    f"{what}: ratios and polynomial coefficients must be numbers, "
                    f"got {coupling.ratios!r} and {coupling.polynomial!r}"
                ) from None
            if ratios.shape != (len(sources),):
                raise MechanismError(
                    f"{what}: expected one ratio per source ({len(sources)}), got {list(coupling.ratios)}"
                )
            if polynomial and len(polynomial) != len(sources):
                raise MechanismError(
                    f"{what}: expected one tuple of polynomial coefficients per source ({len(sources)}), "
                    f"got {len(polynomial)}"
                )
            offset = float(coupling.offset)
            numbers = np.concatenate([ratios, [offset], *polynomial])
            if not np.all(np.isfinite(numbers)):
                raise MechanismError(
                    f"{what}: ratios, offset and polynomial coefficients must be finite, "
                    f"got {numbers.tolist()}"
                )
            out.append(
                Coupling(
                    coupling.name,
                    coupling.joint,
                    sources,
                    tuple(float(r) for r in ratios),
                    offset,
                    tuple(tuple(float(c) for c in p) for p in polynomial),
                )
            )
        return tuple(out)

    def _actuator_index(self) -> dict[str, Joint]:
        """Actuator name -> its joint; names unique, none the name of another joint."""
        index: dict[str, Joint] = {}
        for joint in self.actuated_joints:
            name = joint.actuator_name
            if name in index:
                raise MechanismError(
                    f"joints {index[name].name!r} and {joint.name!r} both carry an actuator named {name!r}"
                )
            if name != joint.name and name in self._joint_index:
                raise MechanismError(
                    f"joint {joint.name!r}: its actuator's name {name!r} is the name of another joint"
                )
            index[name] = joint
        return index

    def _check_graph(self) -> None:
        if not self.bodies:
            raise MechanismError(f"mechanism {self.name!r} has no bodies")
        if not any(b.grounded for b in self.bodies):
            raise MechanismError(
                f"mechanism {self.name!r} has no grounded body; mark one body grounded "
                "(or join a floating base to a grounded world body with a 'free' joint)"
            )
        components = self.connected_components(include_free=True)
        floating = [
            sorted(self.bodies[i].name for i in comp)
            for comp in components
            if not any(self.bodies[i].grounded for i in comp)
        ]
        if floating:
            raise MechanismError(
                f"mechanism {self.name!r}: bodies not connected to any grounded body: "
                + "; ".join(", ".join(names) for names in floating)
            )

    # ----------------------------------------------------------------- lookups
    def body_index(self, name: str) -> int:
        try:
            return self._body_index[name]
        except KeyError:
            raise MechanismError(did_you_mean("body", name, self._body_index)) from None

    def joint(self, name: str) -> Joint:
        try:
            return self.joints[self._joint_index[name]]
        except KeyError:
            raise MechanismError(did_you_mean("joint", name, self._joint_index)) from None

    def frame(self, name: str) -> Frame:
        """A named frame; a body's name gives a frame at its CoM with its axes."""
        if name in self._frame_index:
            return self.frames[self._frame_index[name]]
        if name in self._body_index:
            body = self.bodies[self._body_index[name]]
            return Frame(name=name, body=name, position=body.position, orientation=body.orientation)
        raise MechanismError(
            did_you_mean("frame or body", name, [*self._frame_index, *self._body_index], "frames and bodies")
        )

    @property
    def body_names(self) -> list[str]:
        return [b.name for b in self.bodies]

    @property
    def actuated_joints(self) -> list[Joint]:
        return [j for j in self.joints if j.actuator is not None]

    @property
    def actuator_names(self) -> list[str]:
        """The actuators' names (as the robot file names its motors), in joint order."""
        return [j.actuator_name for j in self.actuated_joints]

    def actuated_joint(self, name: str, what: str = "actuator") -> Joint:
        """The actuated joint named ``name`` by its actuator's name or its own.

        Raises a one-line :class:`MechanismError` listing both kinds of name, prefixed
        with ``what`` (e.g. ``"--hold"``)."""
        joint = self._actuated_joint.get(name)
        if joint is None and name in self._joint_index:
            joint = self.joints[self._joint_index[name]]
        if joint is None or joint.actuator is None:
            raise MechanismError(f"{what}: {actuator_name_choices(self, name)}")
        return joint

    @property
    def grounded_mask(self) -> np.ndarray:
        return np.array([b.grounded for b in self.bodies])

    @property
    def masses(self) -> np.ndarray:
        return np.array([b.mass for b in self.bodies])

    def initial_state(self) -> np.ndarray:
        """(n, 7) state ``[c, q]`` of the initial configuration."""
        return np.array([np.concatenate([b.position, b.orientation]) for b in self.bodies])

    # ----------------------------------------------------------------- graph
    def connected_components(self, include_free: bool = True) -> list[set[int]]:
        """Body-index sets joined by joints (``free`` joints optional)."""
        edges = [
            (self._body_index[j.parent], self._body_index[j.child])
            for j in self.joints
            if include_free or j.kind != JointKind.FREE
        ]
        return [set(group) for group in connected_groups(range(len(self.bodies)), edges)]

    def independent_loops(self) -> int:
        """Cycle rank of the joint graph, all grounded bodies merged into one node.

        ``free`` joints impose nothing and close no loop, so they are left out.
        """
        node = [-1 if b.grounded else i for i, b in enumerate(self.bodies)]
        edges = [
            (node[self._body_index[j.parent]], node[self._body_index[j.child]])
            for j in self.joints
            if j.kind != JointKind.FREE
        ]
        return cycle_rank(sorted(set(node)), [(a, b) for a, b in edges if a != b])

    @property
    def closure_gap(self) -> float:
        """[m] the largest :attr:`Joint.gap`: the precision of the mechanism's loops as its
        file wrote them (0: they close exactly). Solvers meet the constraints to
        ``max(tolerance * L, closure_gap)`` (:meth:`ConstraintSet.tolerance`), and a
        motion that opens the loops by less than it per radian is a motion
        (:func:`~looprig.core.model.mobility.analyse_mobility`)."""
        return max((j.gap for j in self.joints), default=0.0)

    def grubler_dof(self) -> int:
        """Spatial Grübler-Kutzbach count: 6 (moving bodies) - sum of joint constraints
        - one per coupling."""
        moving = sum(not b.grounded for b in self.bodies)
        return 6 * moving - sum(6 - JOINT_DOF[j.kind] for j in self.joints) - len(self.couplings)

    def __repr__(self) -> str:
        couplings = f", {len(self.couplings)} couplings" if self.couplings else ""
        return (
            f"Mechanism({self.name!r}: {len(self.bodies)} bodies, {len(self.joints)} joints, "
            f"{len(self.actuated_joints)} actuators{couplings})"
        )
