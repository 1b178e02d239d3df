"""Actuator read-off: joint coordinates from pairs of body states (paper IV.C).

Angles are measured about the joint axis, from the parent's reference axis to
the child's, zero in the initial configuration; displacements are the child
anchor's offset from the parent anchor along the parent's axis. Angles are
unwrapped against previous values so curves stay continuous over full turns.
"""

import numpy as np

from .mechanism import ActuatedMotion, Mechanism
from .rotations import frame_with_axes, quat_to_matrix


class ActuatorReadout:
    """Precomputed local axes of a mechanism's actuated joints.

    ``read(states)`` works on (..., n, 7) states and returns (..., n_actuators)
    values in radians or metres, in the order of ``mechanism.actuator_names``.
    """

    def __init__(self, mechanism: Mechanism):
        s0 = mechanism.initial_state()
        R0 = quat_to_matrix(s0[:, 3:])
        joints = mechanism.actuated_joints
        self.names = [j.name for j in joints]
        self.is_angle = np.array([j.actuator.motion == ActuatedMotion.ANGLE for j in joints], bool)
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
        axes = np.einsum("...kab,kbc->...kac", Rp, self.F_parent)  # world joint frame on parent
        y_child = np.einsum("...kab,kb->...ka", Rc, self.y_child)
        angle = np.arctan2(np.sum(y_child * axes[..., :, 2], -1), np.sum(y_child * axes[..., :, 1], -1))
        p_parent = np.einsum("...kab,kb->...ka", Rp, self.x_parent) + c[..., self.parent, :]
        p_child = np.einsum("...kab,kb->...ka", Rc, self.x_child) + c[..., self.child, :]
        displacement = np.sum((p_child - p_parent) * axes[..., :, 0], -1)
        values = np.where(self.is_angle, angle, displacement)
        if previous is not None:
            values = unwrap_to(values, previous, self.is_angle)
        return values


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
