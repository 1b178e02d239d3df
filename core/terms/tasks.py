"""Tracking tasks (paper IV.B): frames and the centre of mass, as least squares.

* frame position    ``sqrt(w_pos) * (R_i x_i + c_i - x_hat)``            (3 rows) [m]
* frame orientation ``sqrt(w_a) * (R_i a_i - a_hat)`` for a in x, y, z   (9 rows)
  — since ``1/2 |R a - a_hat|^2 = 1 - (R a) . a_hat``, this is the paper's
  ``sum_a w_a (1 - (R a) . a_hat)`` exactly
* centre of mass    ``sqrt(w_com) * (sum_i M_i c_i / M - c_hat)``        (3 rows) [m]
"""

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..maths.rotations import (
    BodyVectors,
    bilinear_entries,
    cross,
    quat_to_matrix,
    tangent_block_entries,
    vee_antisymmetric,
)
from ..model.mechanism import Mechanism
from ..model.parts import JointKind
from .base import LeastSquaresTerm, Point, on_all_columns, weights3

_EYE3 = np.eye(3)


@dataclass(frozen=True)
class FrameObjective:
    """Track a named frame (or a body's CoM frame) of the mechanism.

    position_weight: (3,) per world axis, [1/m^2]-scaled; orientation_weight: (3,)
    per frame axis x, y, z. Zero weights mask axes.
    """

    frame: str
    position_weight: Sequence[float] = (1.0, 1.0, 1.0)
    orientation_weight: Sequence[float] = (0.0, 0.0, 0.0)


@dataclass(frozen=True)
class ComObjective:
    """Track the mechanism's centre of mass with per-world-axis weights (3,)."""

    weight: Sequence[float] = (1.0, 1.0, 1.0)


class FrameTask(LeastSquaresTerm):
    """All frame objectives of a problem, stacked: 3 position rows per frame, then
    9 orientation rows per frame (axis-major). Targets: ``point.targets.positions``
    (B, K, 3) and ``rotations`` (B, K, 3, 3), in objective order."""

    name = "frames"
    unit = "m"

    def __init__(self, mechanism: Mechanism, objectives: Sequence[FrameObjective]):
        s0 = mechanism.initial_state()
        R0 = quat_to_matrix(s0[:, 3:])
        self.names = [o.frame for o in objectives]
        frames = [mechanism.frame(o.frame) for o in objectives]
        self.body = np.array([mechanism.body_index(f.body) for f in frames], dtype=int)
        k = len(frames)
        self.local_point = np.array(
            [R0[b].T @ (f.position - s0[b, :3]) for b, f in zip(self.body, frames, strict=True)]
        ).reshape(k, 3)
        self.local_axes = np.array(
            [R0[b].T @ quat_to_matrix(f.orientation) for b, f in zip(self.body, frames, strict=True)]
        ).reshape(k, 3, 3)  # columns: frame axes in body coordinates
        self.position_weight = np.array(
            [weights3(o.position_weight, f"frame {o.frame!r} position_weight") for o in objectives]
        ).reshape(k, 3)
        self.orientation_weight = np.array(
            [weights3(o.orientation_weight, f"frame {o.frame!r} orientation_weight") for o in objectives]
        ).reshape(k, 3)
        self.single_axis = (self.orientation_weight > 0).sum(-1) < 2  # (K,) orientation not determined
        self._oriented = bool(self.orientation_weight.any())
        self.sqrt_position_weight = np.sqrt(self.position_weight)
        self.sqrt_orientation_weight = np.sqrt(self.orientation_weight)
        # per frame, turned per evaluation: its point (from its body's CoM) and its x, y, z
        # axes; for the Jacobian then e_x, e_y, e_z (set per evaluation)
        n = len(mechanism.bodies)
        bodies = np.repeat(self.body, 4)
        vectors = np.concatenate([self.local_point[:, None], np.swapaxes(self.local_axes, -1, -2)], 1)
        self._vectors = BodyVectors(bodies, vectors.reshape(-1, 3), n)
        self._bank = BodyVectors(bodies, vectors.reshape(-1, 3), n, extra=3)
        # Jacobian rows of frame k (12, 6): position rows [e_a, w × e_a] (w: the point from the
        # body's CoM), then per axis j rows [0, axis_j × e_a], each times its row's weight
        unit = 4 * k + np.arange(3)  # e_a in the bank
        frame = 4 * np.arange(k)[:, None]
        x = np.concatenate([np.repeat(frame, 3, 1), np.repeat(frame + 1 + np.arange(3), 3, 1)], 1)
        t = np.concatenate([np.broadcast_to(unit, (k, 3)), np.full((k, 9), -1)], 1)
        self._block_entries = tangent_block_entries(
            x,
            np.broadcast_to(np.tile(unit, 4), (k, 12)),
            t,
            np.ones((k, 12)),
            one=3 * unit[0],
            zero=3 * unit[0] + 1,
        )
        self._row_weight = np.concatenate(
            [self.sqrt_position_weight, np.repeat(self.sqrt_orientation_weight, 3, 1)], 1
        )[:, :, None]  # (K, 12, 1)
        self._scatter = None

    def __len__(self) -> int:
        return len(self.body)

    def poses(self, state: np.ndarray, R: np.ndarray | None = None):
        """World positions (..., K, 3) and axes (..., K, 3, 3) of the frames.

        R: rotation matrices (..., n, 3, 3) of all bodies, if already known.
        """
        points, axes_first, _ = self._turned(state, R, self._vectors)
        return points, np.swapaxes(axes_first, -1, -2)

    def _turned(self, state, R, vectors: BodyVectors):
        """The frames' points (..., K, 3) [m] and axes (..., K, axis, 3), world, and all the
        turned ``vectors`` (..., 4 K [+ 3], 3) (see ``__init__``)."""
        R = quat_to_matrix(state[..., 3:]) if R is None else R
        W = vectors.turn(R)
        per_frame = W[..., : 4 * len(self), :].reshape(W.shape[:-2] + (len(self), 4, 3))
        return per_frame[..., 0, :] + state[..., self.body, :3], per_frame[..., 1:, :], W

    def _columns(self, column_of_body: np.ndarray):
        """(the columns (6 U,) of N of the U free bodies that carry tracked frames, and
        where the Jacobian blocks go: (frames on free bodies (an index, or every frame:
        a slice), row index (Kf, 12, 1), column index (Kf, 1, 6) among those columns)).
        Cached."""
        if self._scatter is None or self._scatter[0] is not column_of_body:
            cols = column_of_body[self.body]
            keep = np.flatnonzero(cols >= 0)
            k = len(self.body)
            bodies, slot = np.unique(self.body[keep], return_inverse=True)
            columns = (column_of_body[bodies, None] + np.arange(6)).reshape(-1)
            rows = np.concatenate(
                [3 * keep[:, None] + np.arange(3), 3 * k + 9 * keep[:, None] + np.arange(9)], 1
            )
            frames = slice(None) if len(keep) == k else keep
            index = (frames, rows[:, :, None], (6 * slot[:, None] + np.arange(6))[:, None, :])
            self._scatter = (column_of_body, columns, index)
        return self._scatter[1:]

    def residual(self, point: Point, jacobian: bool = True):
        r, J, columns = self.compact_residual(point, jacobian)
        return r, None if J is None else on_all_columns(J, columns, point.n_vars)

    def compact_residual(self, point: Point, jacobian: bool = True):
        """The residual, and its Jacobian on the columns of the tracked free bodies."""
        k, batch = len(self), point.batch
        points, axes_first, W = self._turned(point.state, point.R, self._bank if jacobian else self._vectors)
        sw_p, sw_o = self.sqrt_position_weight, self.sqrt_orientation_weight  # (K, 3) each
        targets = point.targets
        r = np.empty((batch, 12 * k))
        r[:, : 3 * k] = (sw_p * (points - targets.positions)).reshape(batch, -1)
        r[:, 3 * k :] = (sw_o[:, :, None] * (axes_first - np.swapaxes(targets.rotations, -1, -2))).reshape(
            batch, -1
        )
        if not jacobian:
            return r, None, None
        columns, (frames, rows, cols) = self._columns(point.column_of_body)
        J = np.zeros((batch, 12 * k, len(columns)))
        if len(columns):
            W[..., -3:, :] = _EYE3
            blocks = bilinear_entries(W.reshape(batch, -1), *self._block_entries)  # (B, K, 12, 6)
            blocks *= self._row_weight
            J[:, rows, cols] = blocks[:, frames]
        return r, J, columns

    def errors(self, point: Point) -> dict[str, np.ndarray]:
        """Per frame: position error [m] over the weighted axes and orientation error
        [rad] (the rotation angle when two or more axes are tracked, else the angle
        between the one tracked axis and its target)."""
        position, orientation = self.tracking_errors(point.state, point.R, point.targets)
        out = {}
        for i, name in enumerate(self.names):
            out[f"{name} position [m]"] = position[:, i]
            if self.orientation_weight[i].any():
                out[f"{name} orientation [rad]"] = orientation[:, i]
        return out

    def tracking_errors(self, state, R, targets):
        """Position errors (B, K) [m] and orientation errors (B, K) [rad] over the
        weighted axes; see :meth:`errors`."""
        points, axes_first, _ = self._turned(state, R, self._vectors)
        error = (points - targets.positions) * (self.position_weight > 0)
        position = np.sqrt(np.einsum("...ka,...ka->...k", error, error))
        if not self._oriented:  # no orientation weights: no orientation error
            return position, np.zeros(position.shape)
        axes = np.swapaxes(axes_first, -1, -2)
        R_err = axes_first @ targets.rotations
        sin2 = vee_antisymmetric(R_err)  # 2 sin(angle) u
        cos2 = R_err[..., 0, 0] + R_err[..., 1, 1] + R_err[..., 2, 2] - 1.0  # 2 cos(angle)
        orientation = np.arctan2(np.sqrt(np.einsum("...ka,...ka->...k", sin2, sin2)), cos2)
        if self.single_axis.any():  # one axis (or none): the angle between that axis and its target
            cos = np.clip(np.sum(axes * targets.rotations, axis=-2), -1.0, 1.0)  # (..., K, 3)
            sin = np.linalg.norm(
                cross(np.swapaxes(axes, -1, -2), np.swapaxes(targets.rotations, -1, -2)), axis=-1
            )
            per_axis = np.where(self.orientation_weight > 0, np.arctan2(sin, cos), 0.0).max(-1)
            orientation = np.where(self.single_axis, per_axis, orientation)
        return position, orientation


def robot_mask(mechanism: Mechanism) -> np.ndarray:
    """(n,) bool: the bodies that make up the robot for its centre of mass.

    A grounded body whose every joint is ``free`` is the world a floating base
    hangs from, not part of the robot; every other body counts.
    """
    anchors = {b.name for b in mechanism.bodies if b.grounded}
    for joint in mechanism.joints:
        if joint.kind != JointKind.FREE:
            anchors -= {joint.parent, joint.child}
    connected = {n for j in mechanism.joints for n in (j.parent, j.child)}
    return np.array([not (b.name in anchors and b.name in connected) for b in mechanism.bodies])


class ComTask(LeastSquaresTerm):
    """The robot's centre of mass (mass fractions ``M_i / M`` over :func:`robot_mask`)
    against ``point.targets.com`` (B, 3) [m]."""

    name = "com"
    unit = "m"

    def __init__(self, mechanism: Mechanism, objective: ComObjective):
        masses = mechanism.masses * robot_mask(mechanism)
        self.fraction = masses / masses.sum()
        self.weight = weights3(objective.weight, "CoM weight")
        self._sqrt_weight = np.sqrt(self.weight)

    def com(self, state: np.ndarray) -> np.ndarray:
        """Centre of mass (..., 3) [m] of states (..., n, 7)."""
        return np.einsum("i,...ia->...a", self.fraction, state[..., :, :3])

    def residual(self, point: Point, jacobian: bool = True):
        r = self._sqrt_weight * (self.com(point.state) - point.targets.com)
        if not jacobian:
            return r, None
        J = np.zeros((point.batch, 3, point.n_vars))
        cols = point.column_of_body
        free = np.flatnonzero(cols >= 0)
        J[:, np.arange(3), cols[free, None] + np.arange(3)] = self._sqrt_weight * self.fraction[free, None]
        return r, J

    def errors(self, point: Point) -> dict[str, np.ndarray]:
        diff = (self.com(point.state) - point.targets.com) * (self.weight > 0)
        return {"com [m]": np.linalg.norm(diff, axis=-1)}
