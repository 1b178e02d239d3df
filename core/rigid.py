"""Rigid groups: bodies welded by fixed joints solved as one body.

Robot files weld many links together: URDF dummy links, onshape-to-robot's
closing frames, sensor and tool links, sub-assemblies. In maximal coordinates
every such body costs 6 unknowns and 6 constraint rows for nothing. A rigid
group is one solver body with the group's merged mass, centre of mass and
inertia; the joints that held it together disappear, every other joint and frame
is re-attached to it (frames keep their world placement, and every merged body
stays addressable by a frame of its name), and the states of the original bodies
are recovered exactly from the group's state (:meth:`RigidGroups.expand`).
"""

import dataclasses

import numpy as np

from .errors import MechanismError
from .mechanism import Body, Frame, JointKind, Mechanism, connected_groups
from .rotations import quat_multiply, quat_to_matrix


class RigidGroups:
    """The bodies of ``mechanism`` grouped by fixed joints.

    ``mechanism`` is the original; :attr:`solver` the mechanism with one body per
    group (the same object when nothing is welded); :attr:`group_of` (n,) the
    solver body of each original body.
    """

    def __init__(self, mechanism: Mechanism):
        self.original = mechanism
        names = [b.name for b in mechanism.bodies]
        welds = [(j.parent, j.child) for j in mechanism.joints if j.kind == JointKind.FIXED]
        groups = connected_groups(names, welds)
        self.trivial = len(groups) == len(names)
        if self.trivial:
            self.solver = mechanism
            self.group_of = np.arange(len(names))
            return
        index = {name: i for i, name in enumerate(names)}
        self.group_of = np.empty(len(names), dtype=int)
        bodies, leader_of = [], {}
        for g, members in enumerate(groups):
            leader = _leader(mechanism, members)
            for name in members:
                self.group_of[index[name]] = g
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
        self.solver = Mechanism(bodies, joints, frames, name=mechanism.name, couplings=mechanism.couplings)
        # each original body's pose in its group body's frame, from the initial configuration
        s0, g0 = mechanism.initial_state(), self.solver.initial_state()[self.group_of]
        R_group = quat_to_matrix(g0[:, 3:])
        self._offset = np.einsum("nba,nb->na", R_group, s0[:, :3] - g0[:, :3])  # (n, 3) group axes
        conjugate = g0[:, 3:] * np.array([1.0, -1.0, -1.0, -1.0])
        self._relative = quat_multiply(conjugate, s0[:, 3:])  # (n, 4) q_group^-1 q_body

    def expand(self, states: np.ndarray) -> np.ndarray:
        """States (..., n, 7) of the original bodies from solver states (..., g, 7)."""
        if self.trivial:
            return states
        group = states[..., self.group_of, :]
        R = quat_to_matrix(group[..., 3:])
        out = np.empty(states.shape[:-2] + (len(self.group_of), 7))
        out[..., :3] = group[..., :3] + np.einsum("...nab,nb->...na", R, self._offset)
        out[..., 3:] = quat_multiply(group[..., 3:], self._relative)
        return out

    def collapse(self, states: np.ndarray) -> np.ndarray:
        """Solver states (..., g, 7) from states of the original bodies (..., n, 7): each
        group's state as its first member carries it."""
        if self.trivial:
            return states
        first = np.array([np.flatnonzero(self.group_of == g)[0] for g in range(len(self.solver.bodies))])
        member = states[..., first, :]
        conjugate = self._relative[first] * np.array([1.0, -1.0, -1.0, -1.0])
        q = quat_multiply(member[..., 3:], conjugate)
        R = quat_to_matrix(q)
        out = np.empty(states.shape[:-2] + (len(first), 7))
        out[..., :3] = member[..., :3] - np.einsum("...gab,gb->...ga", R, self._offset[first])
        out[..., 3:] = q
        return out


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
