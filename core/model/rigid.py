"""Rigid groups: bodies welded by fixed joints solved as one body, and ball joints
written as three hinges solved as one spherical joint.

Robot files weld many links together: URDF dummy links, onshape-to-robot's
closing frames, sensor and tool links, sub-assemblies. In maximal coordinates
every such body costs 6 unknowns and 6 constraint rows for nothing. A rigid
group is one solver body with the group's merged mass, centre of mass and
inertia; the joints that held it together disappear, every other joint and frame
is re-attached to it (frames keep their world placement, and every merged body
stays addressable by a frame of its name), and the states of the original bodies
are recovered exactly from the group's state (:meth:`RigidGroups.expand`).

URDF has no ball joint, so files write one as three passive hinges through one
point with two massless links between them. Such a chain becomes one spherical
joint; the two links' states are recovered from the chain's ends by decomposing
their relative rotation about the three hinge axes (Davenport angles).
"""

import dataclasses
from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

from ..errors import MechanismError
from ..maths.rotations import (
    axis_angle_matrix,
    quat_conjugate,
    quat_from_matrix,
    quat_multiply,
    quat_to_matrix,
)
from .graph import connected_groups
from .mechanism import Mechanism
from .parts import Body, Frame, Joint, JointKind
from .primitives import mean_joint_distance

#: A link lighter than this fraction of the robot's mass is a placeholder (URDF dummy link).
MASSLESS = 1e-6


class RigidGroups:
    """The bodies of ``mechanism`` as the solver sees them.

    ``mechanism`` is the original; :attr:`solver` the mechanism with one body per
    welded group and one spherical joint per three-hinge ball (the same object
    when there is neither); :meth:`expand` and :meth:`collapse` convert states.
    """

    def __init__(self, mechanism: Mechanism):
        self.original = mechanism
        self.balls = _ball_chains(mechanism)
        reduced = _with_balls(mechanism, self.balls) if self.balls else mechanism
        names = [b.name for b in reduced.bodies]
        self._reduced_body = np.array(
            [reduced.body_index(b.name) if b.name in names else -1 for b in mechanism.bodies]
        )
        welds = [(j.parent, j.child) for j in reduced.joints if j.kind == JointKind.FIXED]
        groups = connected_groups(names, welds)
        self.trivial = len(groups) == len(names) and not self.balls
        if len(groups) == len(names):
            self.solver = reduced
            self.group_of = np.arange(len(names))
        else:
            self.solver, self.group_of = _welded(reduced, groups)
        # each reduced body's pose in its group body's frame, from the initial configuration
        s0, g0 = reduced.initial_state(), self.solver.initial_state()[self.group_of]
        self._offset = np.einsum("nba,nb->na", quat_to_matrix(g0[:, 3:]), s0[:, :3] - g0[:, :3])
        self._relative = quat_multiply(quat_conjugate(g0[:, 3:]), s0[:, 3:])  # q_group^-1 q_body

    def expand(self, states: np.ndarray) -> np.ndarray:
        """States (..., n, 7) of the original bodies from solver states (..., g, 7)."""
        if self.trivial:
            return states
        group = states[..., self.group_of, :]
        R = quat_to_matrix(group[..., 3:])
        reduced = np.empty(states.shape[:-2] + (len(self.group_of), 7))
        reduced[..., :3] = group[..., :3] + np.einsum("...nab,nb->...na", R, self._offset)
        reduced[..., 3:] = quat_multiply(group[..., 3:], self._relative)
        if not self.balls:
            return reduced
        out = np.empty(states.shape[:-2] + (len(self._reduced_body), 7))
        kept = np.flatnonzero(self._reduced_body >= 0)
        out[..., kept, :] = reduced[..., self._reduced_body[kept], :]
        for ball in self.balls:
            out[..., [ball.first, ball.second], :] = ball.link_states(
                out[..., ball.parent, :], out[..., ball.child, :]
            )
        return out

    def collapse(self, states: np.ndarray) -> np.ndarray:
        """Solver states (..., g, 7) from states of the original bodies (..., n, 7): each
        group's state as its first member carries it."""
        if self.trivial:
            return states
        kept = np.flatnonzero(self._reduced_body >= 0)
        reduced = np.empty(states.shape[:-2] + (len(self.group_of), 7))
        reduced[..., self._reduced_body[kept], :] = states[..., kept, :]
        first = np.array([np.flatnonzero(self.group_of == g)[0] for g in range(len(self.solver.bodies))])
        member = reduced[..., first, :]
        q = quat_multiply(member[..., 3:], quat_conjugate(self._relative[first]))
        out = np.empty(states.shape[:-2] + (len(first), 7))
        out[..., :3] = member[..., :3] - np.einsum("...gab,gb->...ga", quat_to_matrix(q), self._offset[first])
        out[..., 3:] = q
        return out


@dataclass(frozen=True)
class BallChain:
    """Three passive hinges through one point, parent -> first -> second -> child.

    Body indices into the original mechanism; axes (3, 3) rows: the hinge axes in
    the world at the initial configuration, in chain order; anchor (3,) the common
    point there [m]; joints: the three hinges' names; s0 (n, 7): initial states.
    """

    parent: int
    first: int
    second: int
    child: int
    axes: np.ndarray
    anchor: np.ndarray
    joints: tuple[str, str, str]
    s0: np.ndarray

    def link_states(self, parent: np.ndarray, child: np.ndarray) -> np.ndarray:
        """States (..., 2, 7) of the two links from the ends' states (..., 7) each."""
        s0 = self.s0
        dR_parent = quat_to_matrix(quat_multiply(parent[..., 3:], quat_conjugate(s0[self.parent, 3:])))
        dR_child = quat_to_matrix(quat_multiply(child[..., 3:], quat_conjugate(s0[self.child, 3:])))
        relative = np.swapaxes(dR_parent, -1, -2) @ dR_child  # in the initial world frame
        flat = relative.reshape(-1, 3, 3)
        angles = Rotation.from_matrix(flat).as_davenport(self.axes, "intrinsic")  # (k, 3)
        R1 = axis_angle_matrix(self.axes[0], angles[:, 0])
        R2 = axis_angle_matrix(self.axes[1], angles[:, 1])
        dR_parent = dR_parent.reshape(-1, 3, 3)
        point = parent[..., :3].reshape(-1, 3) + dR_parent @ (self.anchor - s0[self.parent, :3])
        out = np.empty((len(flat), 2, 7))
        for k, (link, dR) in enumerate(((self.first, dR_parent @ R1), (self.second, dR_parent @ R1 @ R2))):
            out[:, k, :3] = point + dR @ (s0[link, :3] - self.anchor)
            out[:, k, 3:] = quat_multiply(quat_from_matrix(dR), s0[link, 3:])
        return out.reshape(parent.shape[:-1] + (2, 7))


def _ball_chains(mechanism: Mechanism) -> list[BallChain]:
    """The three-hinge balls of ``mechanism`` (see the module docstring): two massless,
    ungrounded links, each in exactly two joints, all three passive hinges through one
    point with mutually orthogonal consecutive axes, spanning space, and no coupling."""
    joints_of: dict[str, list[Joint]] = {b.name: [] for b in mechanism.bodies}
    for joint in mechanism.joints:
        joints_of[joint.parent].append(joint)
        joints_of[joint.child].append(joint)
    coupled = {name for c in mechanism.couplings for name in (c.joint, *c.sources)}
    massless = MASSLESS * float(mechanism.masses.sum())
    tolerance = 1e-9 * mean_joint_distance(mechanism) + 1e-12

    def placeholder(name: str) -> bool:
        body = mechanism.bodies[mechanism.body_index(name)]
        hinges = joints_of[name]
        return (
            not body.grounded
            and body.mass <= massless
            and len(hinges) == 2
            and all(
                j.kind == JointKind.REVOLUTE and j.actuator is None and j.name not in coupled for j in hinges
            )
        )

    def other(joint: Joint, name: str) -> str:
        return joint.child if joint.parent == name else joint.parent

    chains, used = [], set()
    s0 = mechanism.initial_state()
    for x in mechanism.bodies:
        if x.name in used or not placeholder(x.name):
            continue
        for j1, j2 in (joints_of[x.name], joints_of[x.name][::-1]):
            y = other(j2, x.name)
            if y in used or not placeholder(y):
                continue
            j3 = next(j for j in joints_of[y] if j is not j2)
            a, b = other(j1, x.name), other(j3, y)
            if a in (x.name, y) or b in (x.name, y) or a == b:
                continue
            anchors = np.array([j1.anchor, j2.anchor, j3.anchor])
            axes = np.array([j.axis / np.linalg.norm(j.axis) for j in (j1, j2, j3)])
            if np.abs(anchors - anchors[0]).max() > tolerance:
                continue
            if (
                abs(axes[0] @ axes[1]) > 1e-6
                or abs(axes[1] @ axes[2]) > 1e-6
                or abs(np.linalg.det(axes)) < 0.1
            ):
                continue
            index = mechanism.body_index
            chains.append(
                BallChain(
                    index(a),
                    index(x.name),
                    index(y),
                    index(b),
                    axes,
                    anchors[0],
                    (j1.name, j2.name, j3.name),
                    s0,
                )
            )
            used |= {x.name, y}
            break
    return chains


def _with_balls(mechanism: Mechanism, balls: list[BallChain]) -> Mechanism:
    """``mechanism`` with each ball chain replaced by one spherical joint (named after
    its first hinge) and its two links removed, with the frames named after them."""
    gone = {mechanism.bodies[i].name for ball in balls for i in (ball.first, ball.second)}
    hinges = {name for ball in balls for name in ball.joints}
    joints = [j for j in mechanism.joints if j.name not in hinges]
    for ball in balls:
        joints.append(
            Joint(
                ball.joints[0],
                JointKind.SPHERICAL,
                mechanism.bodies[ball.parent].name,
                mechanism.bodies[ball.child].name,
                anchor=ball.anchor,
            )
        )
    for frame in mechanism.frames:
        if frame.body in gone and frame.name not in gone:
            raise MechanismError(
                f"frame {frame.name!r} is on {frame.body!r}, a link of a three-hinge ball joint"
            )
    return Mechanism(
        [b for b in mechanism.bodies if b.name not in gone],
        joints,
        [f for f in mechanism.frames if f.body not in gone],
        name=mechanism.name,
        couplings=mechanism.couplings,
    )


def _welded(mechanism: Mechanism, groups: list[list[str]]) -> tuple[Mechanism, np.ndarray]:
    """One body per group of welded bodies; returns it and each body's group index (n,)."""
    index = {b.name: i for i, b in enumerate(mechanism.bodies)}
    group_of = np.empty(len(mechanism.bodies), dtype=int)
    bodies, leader_of = [], {}
    for g, members in enumerate(groups):
        leader = _leader(mechanism, members)
        for name in members:
            group_of[index[name]] = g
            leader_of[name] = leader
        bodies.append(_merged_body(mechanism, members, leader))
    joints = []
    for joint in mechanism.joints:
        parent, child = leader_of[joint.parent], leader_of[joint.child]
        if joint.kind == JointKind.FIXED:
            continue
        if parent == child:
            if joint.actuator is not None:
                raise MechanismError(
                    f"joint {joint.name!r} is a motor between bodies welded by fixed joints "
                    f"({joint.parent!r}, {joint.child!r}): it cannot move"
                )
            continue  # locked by the welds: nothing left to hold
        joints.append(dataclasses.replace(joint, parent=parent, child=child))
    frames = [dataclasses.replace(f, body=leader_of[f.body]) for f in mechanism.frames]
    named = {f.name for f in frames}
    for body in mechanism.bodies:  # every merged body stays addressable by name
        if body.name not in named and leader_of[body.name] != body.name:
            frames.append(Frame(body.name, leader_of[body.name], body.position, body.orientation))
    solver = Mechanism(bodies, joints, frames, name=mechanism.name, couplings=mechanism.couplings)
    return solver, group_of


def _leader(mechanism: Mechanism, members: list[str]) -> str:
    """The body that names a group: a grounded one, else the heaviest (ties: the first)."""
    bodies = [mechanism.bodies[mechanism.body_index(name)] for name in members]
    grounded = [b.name for b in bodies if b.grounded]
    if grounded:
        return grounded[0]
    return max(bodies, key=lambda b: b.mass).name


def _merged_body(mechanism: Mechanism, members: list[str], leader: str) -> Body:
    """One body for a group: total mass, mass-weighted CoM, inertia by parallel axes in
    the leader's axes; grounded if any member is; the leader's display data."""
    bodies = [mechanism.bodies[mechanism.body_index(name)] for name in members]
    head = mechanism.bodies[mechanism.body_index(leader)]
    if len(bodies) == 1:
        return head
    masses = np.array([b.mass for b in bodies])
    centre = masses @ np.array([b.position for b in bodies]) / masses.sum()
    inertia = None
    if all(b.inertia is not None for b in bodies):
        R_head = quat_to_matrix(head.orientation)
        inertia = np.zeros((3, 3))
        for b, m in zip(bodies, masses, strict=True):
            R = R_head.T @ quat_to_matrix(b.orientation)  # member axes in the leader's axes
            d = R_head.T @ (b.position - centre)
            inertia += R @ np.asarray(b.inertia) @ R.T + m * (d @ d * np.eye(3) - np.outer(d, d))
    return dataclasses.replace(
        head,
        position=centre,
        mass=float(masses.sum()),
        inertia=inertia,
        grounded=any(b.grounded for b in bodies),
    )


def welded(mechanism: Mechanism, motors) -> Mechanism:
    """``mechanism`` with the joints of ``motors`` (actuator names) fixed in the initial
    configuration: what holding them there means, with their bodies left to be merged
    into those they are welded to (:class:`~looprig.core.model.rigid.RigidGroups`) instead of
    locked by a row each. A coupling loses its welded sources (their values stay 0, where
    every ``P_k`` vanishes); one left with none fixes its joint too (its offset is 0 in an
    assembled mechanism), and so on down the couplings. A welded motor that follows a
    coupling is refused (``MechanismError``)."""
    fixed = {mechanism.actuated_joint(m).name for m in motors}
    followers = {c.joint: c.name for c in mechanism.couplings}
    clash = sorted(fixed & set(followers))
    if clash:
        raise MechanismError(
            f"motor on joint {clash[0]!r} follows coupling {followers[clash[0]]!r}: it cannot be welded"
        )
    couplings = list(mechanism.couplings)
    while True:
        kept = []
        for c in couplings:
            live = [k for k, source in enumerate(c.sources) if source not in fixed]
            if not live:
                fixed.add(c.joint)
                continue
            polynomial = tuple(c.polynomial[k] for k in live) if c.polynomial else ()
            sources, ratios = tuple(c.sources[k] for k in live), tuple(c.ratios[k] for k in live)
            kept.append(dataclasses.replace(c, sources=sources, ratios=ratios, polynomial=polynomial))
        if len(kept) == len(couplings):
            break
        couplings = kept
    joints = [
        dataclasses.replace(j, kind=JointKind.FIXED, actuator=None) if j.name in fixed else j
        for j in mechanism.joints
    ]
    return Mechanism(mechanism.bodies, joints, mechanism.frames, mechanism.name, kept)
