"""The mechanism: a constraint graph of rigid bodies (nodes) and joints (edges).

Geometry is given in the **initial (assembly) configuration**, in world
coordinates [m]: body CoM positions and orientations, joint anchors and axes,
named frames. Local (body) coordinates are derived from it, so bodies need not
be world-aligned. A :class:`Mechanism` is validated when it is built.
"""

import math
from collections.abc import Iterable, Sequence

import numpy as np

from ..errors import MechanismError, did_you_mean
from .graph import connected_groups, cycle_rank
from .parts import ACTUATABLE, JOINT_DOF, ActuatedMotion, Body, Coupling, Frame, Joint, JointKind


def actuator_name_choices(mechanism: "Mechanism", name: str) -> str:
    """``no actuator 'x'; actuators are: a (joint j), b`` for an unknown motor name."""
    known = [
        j.name if j.actuator_name == j.name else f"{j.actuator_name} (joint {j.name})"
        for j in mechanism.actuated_joints
    ]
    return f"no actuator {name!r}; actuators are: {', '.join(known) or '(none)'}"


def _vector(value, what: str, shape=(3,)) -> np.ndarray:
    array = np.asarray(value, dtype=float)
    if array.shape != shape:
        raise MechanismError(f"{what}: expected shape {shape}, got {array.shape}")
    if not np.isfinite(array).all():
        raise MechanismError(f"{what}: values must be finite, got {array.tolist()}")
    return array


def _color(value, what: str) -> tuple[float, float, float, float] | None:
    if value is None:
        return None
    rgba = _vector(value, what, (4,))
    if ((rgba < 0) | (rgba > 1)).any():
        raise MechanismError(f"{what}: components must lie in [0, 1], got {rgba.tolist()}")
    return tuple(float(c) for c in rgba)


def _unit_quaternion(value, what: str) -> np.ndarray:
    q = _vector(value, what, (4,))
    norm = math.sqrt(q @ q)
    if norm < 1e-9:
        raise MechanismError(f"{what}: quaternion is zero")
    if abs(norm - 1.0) > 1e-14:  # leave unit input bit-exact (files round-trip losslessly)
        q = q / norm
    return -q if q[0] < 0.0 else q


def _nonzero_axis(value, what: str) -> np.ndarray:
    a = _vector(value, what)
    norm = math.sqrt(a @ a)
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
            if np.abs(inertia - inertia.T).max() > 1e-12 * max(1.0, np.abs(inertia).max()):
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
