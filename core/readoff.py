"""Actuator read-off: joint coordinates from pairs of body states (paper IV.C).

Angles are measured about the joint axis, from the parent's reference axis to
the child's, zero in the initial configuration; displacements are the child
anchor's offset from the parent anchor along the parent's axis. Angles are
unwrapped against previous values so curves stay continuous over full turns.
"""

from collections.abc import Sequence

import numpy as np

from .errors import MechanismError
from .mechanism import ActuatedMotion, Joint, JointKind, Mechanism
from .rotations import cross, frame_with_axes, quat_to_matrix


def joint_motion(joint: Joint) -> ActuatedMotion:
    """The coordinate a joint's value is: its actuator's, else the angle of a revolute
    joint or the displacement of a prismatic one (others have no single value)."""
    if joint.actuator is not None:
        return ActuatedMotion(joint.actuator.motion)
    if joint.kind == JointKind.REVOLUTE:
        return ActuatedMotion.ANGLE
    if joint.kind == JointKind.PRISMATIC:
        return ActuatedMotion.DISPLACEMENT
    raise MechanismError(f"joint {joint.name!r}: a {joint.kind.value} joint has no single joint value")


class JointReadout:
    """Precomputed local axes of some one-coordinate joints of a mechanism.

    ``read(states)`` works on (..., n, 7) states and returns (..., K) joint values
    in radians or metres (zero in the initial configuration), in the order of
    ``joints``. :class:`ActuatorReadout` reads the actuated joints.
    """

    def __init__(self, mechanism: Mechanism, joints: Sequence[Joint]):
        s0 = mechanism.initial_state()
        R0 = quat_to_matrix(s0[:, 3:])
        self.names = [j.name for j in joints]
        self.is_angle = np.array([joint_motion(j) == ActuatedMotion.ANGLE for j in joints], bool)
        self.parent = np.array([mechanism.body_index(j.parent) for j in joints], int)
        self.child = np.array([mechanism.body_index(j.child) for j in joints], int)
        frames = np.array([frame_with_axes(j.axis, j.secondary_axis) for j in joints]).reshape(-1, 3, 3)
        # joint frame axes in parent coordinates, reference y axis in child coordinates
        self.F_parent = np.einsum("kba,kbc->kac", R0[self.parent], frames)  # (K, 3, 3)
        self.y_child = np.einsum("kba,kb->ka", R0[self.child], frames[:, :, 1])  # (K, 3)
        anchors = np.array([j.anchor for j in joints]).reshape(-1, 3)
        self.x_parent = np.einsum("kba,kb->ka", R0[self.parent], anchors - s0[self.parent, :3])
        self.x_child = np.einsum("kba,kb->ka", R0[self.child], anchors - s0[self.child, :3])

    def read(self, states: np.ndarray, previous: np.ndarray | None = None, R=None) -> np.ndarray:
        """Actuator values of ``states`` (..., n, 7); unwrapped against ``previous``.

        R: the bodies' rotation matrices (..., n, 3, 3), if already known.
        """
        states = np.asarray(states, dtype=float)
        R = quat_to_matrix(states[..., 3:]) if R is None else R
        c = states[..., :3]
        Rp, Rc = R[..., self.parent, :, :], R[..., self.child, :, :]
        axes = Rp @ self.F_parent  # (..., K, 3, 3) world joint frame on the parent
        y_child = (Rc @ self.y_child[:, :, None])[..., 0]
        angle = np.arctan2(
            np.einsum("...ka,...ka->...k", y_child, axes[..., :, 2]),
            np.einsum("...ka,...ka->...k", y_child, axes[..., :, 1]),
        )
        if self.is_angle.all():
            displacement = 0.0
        else:
            p_parent = (Rp @ self.x_parent[:, :, None])[..., 0] + c[..., self.parent, :]
            p_child = (Rc @ self.x_child[:, :, None])[..., 0] + c[..., self.child, :]
            displacement = np.einsum("...ka,...ka->...k", p_child - p_parent, axes[..., :, 0])
        values = np.where(self.is_angle, angle, displacement)
        if previous is not None:
            values = unwrap_to(values, previous, self.is_angle)
        return values

    def blocks(self, state: np.ndarray, R: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """d(joint values)/d(tangent of the parent, of the child): (..., K, 6) each.

        state: (..., n, 7); R: its rotation matrices (..., n, 3, 3).
        Angles: with u = y . y_p, v = y . z_p (child reference axis y against the
        parent's joint axes), d angle = (u dv - v du) / (u^2 + v^2), exact.
        Displacements: d((p_c - p_p) . n) as for the slide constraint.
        """
        c = state[..., :3]
        Rp, Rc = R[..., self.parent, :, :], R[..., self.child, :, :]
        axes = Rp @ self.F_parent  # (..., K, 3, 3) world joint frame on the parent
        y = np.einsum("...kab,kb->...ka", Rc, self.y_child)
        y_p, z_p, n = axes[..., :, 1], axes[..., :, 2], axes[..., :, 0]
        u, v = np.sum(y * y_p, -1)[..., None], np.sum(y * z_p, -1)[..., None]
        d_child_angle = (u * cross(y, z_p) - v * cross(y, y_p)) / (u * u + v * v)
        w_p = np.einsum("...kab,kb->...ka", Rp, self.x_parent)
        w_c = np.einsum("...kab,kb->...ka", Rc, self.x_child)
        d = (w_c + c[..., self.child, :]) - (w_p + c[..., self.parent, :])
        angle = self.is_angle[:, None]
        blocks_parent = np.concatenate(
            [np.where(angle, 0.0, -n), np.where(angle, -d_child_angle, cross(n, d) - cross(w_p, n))], -1
        )
        blocks_child = np.concatenate(
            [np.where(angle, 0.0, n), np.where(angle, d_child_angle, cross(w_c, n))], -1
        )
        return blocks_parent, blocks_child

    def jacobian(
        self, state: np.ndarray, R: np.ndarray, column_of_body: np.ndarray, n_vars: int
    ) -> np.ndarray:
        """d(joint values)/d(tangent) (..., K, n_vars) at states (..., n, 7) (see :meth:`blocks`)."""
        blocks_parent, blocks_child = self.blocks(state, R)
        J = np.zeros(blocks_parent.shape[:-1] + (n_vars,))
        rows = np.arange(len(self.names))
        for bodies, blocks in ((self.parent, blocks_parent), (self.child, blocks_child)):
            col = column_of_body[bodies]
            free = np.flatnonzero(col >= 0)
            J[..., rows[free, None], col[free, None] + np.arange(6)] += blocks[..., free, :]
        return J


class ActuatorReadout(JointReadout):
    """The read-off of a mechanism's actuated joints, in the order of
    ``mechanism.actuator_names`` ((..., n_actuators) values); ``names`` are the
    actuators' names."""

    def __init__(self, mechanism: Mechanism):
        super().__init__(mechanism, mechanism.actuated_joints)
        self.names = mechanism.actuator_names


def unwrap_to(values: np.ndarray, reference: np.ndarray, is_angle: np.ndarray) -> np.ndarray:
    """Add the multiple of 2 pi to each angle that brings it closest to ``reference``."""
    turns = np.round((reference - values) / (2 * np.pi))
    return np.where(is_angle, values + 2 * np.pi * turns, values)


def unwrap_sequence(values: np.ndarray, is_angle: np.ndarray) -> np.ndarray:
    """Unwrap a (frames, n_actuators) sequence of read-offs frame by frame."""
    out = np.array(values, dtype=float)
    for f in range(1, len(out)):
        out[f] = unwrap_to(out[f], out[f - 1], is_angle)
    return out
