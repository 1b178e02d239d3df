"""Actuator read-off: joint coordinates from pairs of body states (paper IV.C).

Angles are measured about the joint axis, from the parent's reference axis to
the child's, zero in the initial configuration; displacements are the child
anchor's offset from the parent anchor along the parent's axis. Angles are
unwrapped against previous values so curves stay continuous over full turns.
"""

import weakref
from collections.abc import Sequence

import numpy as np

from ..errors import MechanismError
from ..maths.rotations import (
    BodyVectors,
    bilinear_entries,
    frame_with_axes,
    quat_to_matrix,
    tangent_block_entries,
)
from .mechanism import Mechanism
from .parts import ActuatedMotion, Joint, JointKind

_EYE3 = np.eye(3)


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
        self._displacements = not self.is_angle.all()
        self.parent = np.array([mechanism.body_index(j.parent) for j in joints], int)
        self.child = np.array([mechanism.body_index(j.child) for j in joints], int)
        frames = np.array([frame_with_axes(j.axis, j.secondary_axis) for j in joints]).reshape(-1, 3, 3)
        # joint frame axes in parent coordinates, reference y axis in child coordinates
        self.F_parent = np.einsum("kba,kbc->kac", R0[self.parent], frames)  # (K, 3, 3)
        self.y_child = np.einsum("kba,kb->ka", R0[self.child], frames[:, :, 1])  # (K, 3)
        anchors = np.array([j.anchor for j in joints]).reshape(-1, 3)
        self.x_parent = np.einsum("kba,kb->ka", R0[self.parent], anchors - s0[self.parent, :3])
        self.x_child = np.einsum("kba,kb->ka", R0[self.child], anchors - s0[self.child, :3])
        # turned per evaluation: the joint axes n (x), y_p, z_p and the anchor w_p on the
        # parent, the reference axis y and the anchor w_c on the child; for the Jacobian
        # then q = (u z_p - v y_p) / (u^2 + v^2), e = w_c + c_c - c_p and e_x, e_y, e_z
        K, n = len(joints), len(mechanism.bodies)
        bodies = np.concatenate([np.tile(self.parent, 4), np.tile(self.child, 2)])
        vectors = np.concatenate(
            [*np.moveaxis(self.F_parent, -1, 0), self.x_parent, self.y_child, self.x_child]
        )
        self._vectors = BodyVectors(bodies, vectors, n)
        self._bank = BodyVectors(bodies, vectors, n, extra=2 * K + 3)  # q, e, e_x, e_y, e_z
        self._scatter = None  # (column_of_body, and where the blocks go) of the last jacobian
        axis, y, w_c, q, e = (k * K + np.arange(K) for k in (0, 4, 5, 6, 7))  # bank rows
        angle = self.is_angle
        self._block_entries = tangent_block_entries(  # (K, 2, 6) on the parent, on the child
            x=np.stack([np.where(angle, q, axis), np.where(angle, y, w_c)], -1),
            y=np.stack([np.where(angle, y, e), np.where(angle, q, axis)], -1),
            t=np.where(angle[:, None], -1, axis[:, None]),
            sign=np.broadcast_to([-1.0, 1.0], (K, 2)),
            one=3 * 8 * K,
            zero=3 * 8 * K + 1,
        )

    def _turned(self, states: np.ndarray, R, bank: bool):
        """The vectors of ``__init__`` in world axes: all (..., 8K or 6K, 3), and per kind
        (..., K, 3) each (views). R: the bodies' rotations, or None (from ``states``)."""
        R = quat_to_matrix(states[..., 3:]) if R is None else R
        W = (self._bank if bank else self._vectors).turn(R)
        K = len(self.names)
        return W, [W[..., k * K : (k + 1) * K, :] for k in range(8 if bank else 6)]

    def read(self, states: np.ndarray, previous: np.ndarray | None = None, R=None) -> np.ndarray:
        """Actuator values of ``states`` (..., n, 7); unwrapped against ``previous``.

        R: the bodies' rotation matrices (..., n, 3, 3), if already known.
        """
        states = np.asarray(states, dtype=float)
        _, (n, y_p, z_p, w_p, y, w_c) = self._turned(states, R, bank=False)
        values = np.arctan2(np.einsum("...ka,...ka->...k", y, z_p), np.einsum("...ka,...ka->...k", y, y_p))
        if self._displacements:
            c = states[..., :3]
            d = (w_c + c[..., self.child, :]) - (w_p + c[..., self.parent, :])
            values = np.where(self.is_angle, values, np.einsum("...ka,...ka->...k", d, n))
        if previous is not None:
            values = unwrap_to(values, previous, self.is_angle)
        return values

    def blocks(self, state: np.ndarray, R: np.ndarray) -> np.ndarray:
        """d(joint values)/d(tangent of the parent, of the child): (..., K, 2, 6).

        state: (..., n, 7); R: its rotation matrices (..., n, 3, 3).
        Angles: with u = y . y_p, v = y . z_p (child reference axis y against the
        parent's joint axes), d angle = (u dv - v du) / (u^2 + v^2), exact: ``y × q``
        by the child's rotation, ``q × y`` by the parent's, q = (u z_p - v y_p) / (u^2 + v^2).
        Displacements: d((p_c - p_p) . n) as for the slide constraint.
        """
        W, (_, y_p, z_p, _, y, w_c, q, e) = self._turned(state, R, bank=True)
        u, v = (
            np.einsum("...ka,...ka->...k", y, y_p)[..., None],
            np.einsum("...ka,...ka->...k", y, z_p)[..., None],
        )
        np.divide(u * z_p - v * y_p, u * u + v * v, out=q)
        c = state[..., :3]
        np.subtract(w_c + c[..., self.child, :], c[..., self.parent, :], out=e)
        W[..., -3:, :] = _EYE3
        return bilinear_entries(W.reshape(W.shape[:-2] + (-1,)), *self._block_entries)

    def jacobian(
        self, state: np.ndarray, R: np.ndarray, column_of_body: np.ndarray, n_vars: int
    ) -> np.ndarray:
        """d(joint values)/d(tangent) (..., K, n_vars) at states (..., n, 7) (see :meth:`blocks`)."""
        blocks = self.blocks(state, R)
        if self._scatter is None or self._scatter[0] is not column_of_body:
            col = column_of_body[np.stack([self.parent, self.child], -1)].ravel()  # (2K,)
            source = np.flatnonzero(col >= 0)
            self._scatter = (
                column_of_body,
                source,
                (source // 2)[:, None],
                col[source][:, None] + np.arange(6),
            )
        _, source, rows, cols = self._scatter
        J = np.zeros(blocks.shape[:-3] + (len(self.names), n_vars))
        J[..., rows, cols] = blocks.reshape(blocks.shape[:-3] + (-1, 6))[..., source, :]
        return J


class ActuatorReadout(JointReadout):
    """The read-off of a mechanism's actuated joints, in the order of
    ``mechanism.actuator_names`` ((..., n_actuators) values); ``names`` are the
    actuators' names."""

    def __init__(self, mechanism: Mechanism):
        super().__init__(mechanism, mechanism.actuated_joints)
        self.names = mechanism.actuator_names

    @classmethod
    def of(cls, mechanism: Mechanism) -> "ActuatorReadout":
        """The read-off of ``mechanism``, built on first use and shared after (a mechanism
        does not change once built)."""
        readout = _READOUTS.get(mechanism)
        if readout is None:
            readout = _READOUTS[mechanism] = cls(mechanism)
        return readout


#: Each mechanism's :meth:`ActuatorReadout.of`, while the mechanism lives.
_READOUTS: "weakref.WeakKeyDictionary[Mechanism, ActuatorReadout]" = weakref.WeakKeyDictionary()


def unwrap_to(values: np.ndarray, reference: np.ndarray, is_angle: np.ndarray) -> np.ndarray:
    """Add the multiple of 2 pi to each angle that brings it closest to ``reference``."""
    turns = np.round((reference - values) / (2 * np.pi))
    return np.where(is_angle, values + 2 * np.pi * turns, values)


def unwrap_sequence(values: np.ndarray, is_angle: np.ndarray) -> np.ndarray:
    """Unwrap a (frames, n_actuators) sequence of read-offs frame by frame: each angle
    brought within pi of the one before (:func:`unwrap_to` in turn; the turns it adds are
    summed at once, as the frame before's own turns carry over)."""
    out = np.array(values, dtype=float)
    if len(out) > 1:
        turns = np.cumsum(np.round((out[:-1] - out[1:]) / (2 * np.pi)), axis=0)
        out[1:] += np.where(is_angle, 2 * np.pi * turns, 0.0)
    return out
