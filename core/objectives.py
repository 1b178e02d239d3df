"""IK objectives and regularizers (paper IV.B and IV.D).

Each least-squares term is a residual ``r(s)`` with an analytic Jacobian in the
same tangent coordinates as the constraints; its objective is ``1/2 |r|^2``,
with per-axis weights entering as ``sqrt(w)``:

* frame position   ``sqrt(w_pos) * (R_i x_i + c_i - x_hat)``                 (3 rows) [m]
* frame orientation ``sqrt(w_a) * (R_i a_i - a_hat)`` for a in x, y, z      (9 rows)
  — since ``1/2 |R a - a_hat|^2 = 1 - (R a) . a_hat``, this is the paper's
  ``sum_a w_a (1 - (R a) . a_hat)`` exactly
* centre of mass   ``sqrt(w_com) * (sum_i M_i c_i / M - c_hat)``             (3 rows) [m]
* state regularizer ``sqrt(w) * [c - c_bar, vee(M - M^T) / 4]`` per body
  (value and gradient directly, see :func:`state_regularizer`),
  ``M = R R_bar^T`` (the rotational part is ``sin(phi)/2 u``, like the paper's
  quaternion difference ``q - q_bar`` to first order)

The velocity regularizer (paper eq. 4-5) is not a least-squares term; it
returns its value, gradient and a 3x3 Hessian block per body.
"""

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .errors import TargetError
from .mechanism import JointKind, Mechanism
from .rotations import quat_to_matrix, relative_angle_matrix_jacobian, skew, vee_antisymmetric

_EYE3 = np.eye(3)


def _weights(value, what: str) -> np.ndarray:
    w = np.broadcast_to(np.asarray(value, dtype=float), (3,)).copy()
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise TargetError(f"{what}: weights must be finite and non-negative, got {w.tolist()}")
    return w


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


@dataclass(frozen=True)
class Regularization:
    """Regularizer weights (paper IV.C-D).

    state_weight: pull towards the previous state, ``1/2 w |s - s_bar|^2``.
    velocity_weight, velocity_threshold: the barrier ``w sum_i g(3 - tr(R_bar_i^T R_i))``
    with ``g(x) = ((x - t) / t)^3`` above ``t`` (zero, with zero gradient, below).
    ``3 - tr(...) ~ theta^2`` for a per-frame rotation theta [rad], so
    ``t = (omega_max / rate)^2`` (see :func:`velocity_threshold`) and
    ``(x - t) / t ~ (omega / omega_max)^2 - 1``: the barrier, and so its weight,
    does not depend on the sample rate. This is the paper's cubic term divided by
    ``t^3`` (its weight 1e-4 at t = 1.11e-5 would be about 1.4e-19 here).

    actuator_weight: beyond the paper, barriers of the same cubic form on each
    actuator's limits (see :func:`actuator_barrier`): velocity above
    ``limit_fraction`` of its limit (needs ``rate`` [Hz]), position within
    ``position_margin`` [rad or m] of the range's ends.
    acceleration_weight: a quadratic cost on actuator accelerations in units of
    their limits (needs ``rate`` and the previous frame's velocities), the
    acceleration term the paper names as its limitation.
    """

    state_weight: float = 1e-4
    velocity_weight: float = 0.0
    velocity_threshold: float = 1.11e-5
    actuator_weight: float = 0.0
    acceleration_weight: float = 0.0
    limit_fraction: float = 0.9
    position_margin: float = 0.05
    rate: float | None = None


def velocity_threshold(angular_velocity: float, rate: float) -> float:
    """Barrier threshold for a body angular velocity [rad/s] at a sample rate [Hz]:
    ``2 - 2 cos(omega / rate)``, the value of ``3 - tr(R_bar^T R)`` at that speed."""
    return float(2.0 - 2.0 * np.cos(angular_velocity / rate))


@dataclass(frozen=True)
class ActuatorLimits:
    """Limits of a mechanism's actuators, (A,) each, in SI units; inf = none."""

    lower: np.ndarray
    upper: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray

    @classmethod
    def of(cls, mechanism: Mechanism) -> "ActuatorLimits":
        acts = [j.actuator for j in mechanism.actuated_joints]
        return cls(
            np.array([a.lower for a in acts], float),
            np.array([a.upper for a in acts], float),
            np.array([a.velocity_limit for a in acts], float),
            np.array([a.acceleration_limit for a in acts], float),
        )


def _cubic_above(e: np.ndarray, de: np.ndarray, d2e: np.ndarray):
    """g = e^3 where e > 0: value, dg and d2g for e(p) with derivatives de, d2e (all (A,))."""
    on = e > 0.0
    e = np.where(on, e, 0.0)
    return float(np.sum(e**3)), 3.0 * e**2 * de * on, (6.0 * e * de**2 + 3.0 * e**2 * d2e) * on


def actuator_barrier(values, previous, previous_velocity, limits: ActuatorLimits, reg: Regularization):
    """Actuator terms: value and d/dp, d2/dp2 per actuator (A,).

    p: values [rad | m]; velocity v = (p - p_prev) rate. Barriers, each
    ``actuator_weight * e^3`` where e > 0: the position range,
    ``e = (p - (upper - m)) / m`` and ``((lower + m) - p) / m``; the velocity limit,
    ``e = (v / (k v_max))^2 - 1`` with k = limit_fraction. The acceleration term is
    quadratic, ``1/2 acceleration_weight (a / a_max)^2`` with
    ``a = (v - v_prev) rate``: a smoothness cost in units of each actuator's limit
    (a barrier there would be too stiff at 1200 Hz). The chain rule through the
    read-off Jacobian happens in the caller.
    """
    w, k, m = reg.actuator_weight, reg.limit_fraction, reg.position_margin
    zero = np.zeros_like(values)
    terms = [
        ((values - (limits.upper - m)) / m, np.full_like(values, 1.0 / m), zero),
        (((limits.lower + m) - values) / m, np.full_like(values, -1.0 / m), zero),
    ]
    velocity = None
    if reg.rate is not None:
        velocity = (values - previous) * reg.rate
        scale = 1.0 / (k * limits.velocity) ** 2  # 0 for unlimited actuators
        terms.append(
            (velocity**2 * scale - 1.0, 2.0 * velocity * reg.rate * scale, 2.0 * reg.rate**2 * scale)
        )
    total, dg, d2g = 0.0, zero.copy(), zero.copy()
    if w > 0:
        for e, de, d2e in terms:
            value, g1, g2 = _cubic_above(np.where(np.isfinite(e), e, -1.0), de, d2e)  # unlimited: inactive
            total, dg, d2g = total + w * value, dg + w * g1, d2g + w * g2
    if velocity is not None and previous_velocity is not None and reg.acceleration_weight > 0:
        finite = np.isfinite(limits.acceleration)
        per_limit = np.where(finite, 1.0 / np.where(finite, limits.acceleration, 1.0), 0.0)
        da = reg.rate**2 * per_limit  # d(a / a_max) / dp
        accel = (velocity - previous_velocity) * reg.rate * per_limit
        wa = reg.acceleration_weight
        total += 0.5 * wa * float(np.sum(accel**2))
        dg += wa * accel * da
        d2g += wa * da**2
    return total, dg, d2g


class FrameTerms:
    """Stacked frame objectives: bodies, local points and axes, sqrt-weights."""

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
            [_weights(o.position_weight, f"frame {o.frame!r} position_weight") for o in objectives]
        ).reshape(k, 3)
        self.orientation_weight = np.array(
            [_weights(o.orientation_weight, f"frame {o.frame!r} orientation_weight") for o in objectives]
        ).reshape(k, 3)

        self.single_axis = (self.orientation_weight > 0).sum(-1) < 2  # (K,) orientation not determined
        self.sqrt_position_weight = np.sqrt(self.position_weight)
        self.sqrt_orientation_weight = np.sqrt(self.orientation_weight)
        self._scatter = None

    def __len__(self) -> int:
        return len(self.body)

    def free_rows(self, column_of_body: np.ndarray):
        """(frames on free bodies, row index (Kf, 12, 1), column index (Kf, 1, 6)) of the
        Jacobian blocks, or None when every tracked body is grounded. Cached."""
        if self._scatter is None or self._scatter[0] is not column_of_body:
            cols = column_of_body[self.body]
            keep = np.flatnonzero(cols >= 0)
            k = len(self.body)
            rows = np.concatenate(
                [3 * keep[:, None] + np.arange(3), 3 * k + 9 * keep[:, None] + np.arange(9)], 1
            )
            index = (
                (keep, rows[:, :, None], (cols[keep, None] + np.arange(6))[:, None, :]) if len(keep) else None
            )
            self._scatter = (column_of_body, index)
        return self._scatter[1]

    def poses(self, state: np.ndarray, R: np.ndarray | None = None):
        """World positions (..., K, 3) and axes (..., K, 3, 3) of the frames.

        R: rotation matrices (..., n, 3, 3) of all bodies, if already known.
        """
        R = quat_to_matrix(state[..., self.body, 3:]) if R is None else R[..., self.body, :, :]
        points = np.einsum("...kab,kb->...ka", R, self.local_point) + state[..., self.body, :3]
        axes = R @ self.local_axes
        return points, axes


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


class ComTerm:
    """Mass fractions ``M_i / M`` (over :func:`robot_mask`) and weights of a CoM objective."""

    def __init__(self, mechanism: Mechanism, objective: ComObjective):
        masses = mechanism.masses * robot_mask(mechanism)
        self.fraction = masses / masses.sum()
        self.weight = _weights(objective.weight, "CoM weight")

    def com(self, state: np.ndarray) -> np.ndarray:
        return np.einsum("i,...ia->...a", self.fraction, state[..., :, :3])


@dataclass
class LeastSquares:
    """Stacked residual r (m,) and Jacobian (m, N) of the least-squares terms."""

    residual: np.ndarray
    jacobian: np.ndarray


def frame_residuals(terms: FrameTerms, state, R, positions, rotations, column_of_body, n_vars):
    """Position and orientation residuals (12 K rows) and their Jacobian (unbatched).

    Rows: 3 position rows per frame, then 9 orientation rows per frame (axis-major).
    """
    k = len(terms)
    points, axes = terms.poses(state, R)
    sw_p, sw_o = terms.sqrt_position_weight, terms.sqrt_orientation_weight  # (K, 3) each
    axes_first = np.swapaxes(axes, -1, -2)  # (K, axis, 3)
    residual = np.empty(12 * k)
    residual[: 3 * k] = (sw_p * (points - positions)).ravel()
    residual[3 * k :] = (sw_o[:, :, None] * (axes_first - np.swapaxes(rotations, -1, -2))).ravel()
    J = np.zeros((12 * k, n_vars))
    free = terms.free_rows(column_of_body)
    if free is not None:
        keep, rows, cols = free
        blocks = np.zeros((k, 4, 3, 6))  # per frame: position rows, then the three axes
        blocks[:, 0, :, :3] = sw_p[:, :, None] * _EYE3
        blocks[:, 0, :, 3:] = -sw_p[:, :, None] * skew(points - state[terms.body, :3])
        blocks[:, 1:, :, 3:] = -sw_o[:, :, None, None] * skew(axes_first)
        J[rows, cols] = blocks[keep].reshape(-1, 12, 6)
    return residual, J


def com_residual(term: ComTerm, state, target, column_of_body, n_vars):
    """CoM residual (3 rows) [m] and its Jacobian."""
    sw = np.sqrt(term.weight)
    residual = sw * (term.com(state) - target)
    J = np.zeros((3, n_vars))
    free = np.flatnonzero(column_of_body >= 0)
    J[np.arange(3), column_of_body[free, None] + np.arange(3)] = sw * term.fraction[free, None]
    return residual, J


def state_regularizer(state, R, previous, R_previous, free_bodies, weight: float):
    """Value and gradient (n_free, 6) of ``1/2 |r|^2`` for the state residual
    ``r = sqrt(w) [c - c_bar, vee(M - M^T) / 4]`` per free body, ``M = R R_bar^T``.

    d r_rot / d dtheta = sqrt(w) (tr(M) I - M) / 4. R, R_previous: rotation
    matrices (n, 3, 3) of ``state`` and ``previous``.
    """
    M = R[free_bodies] @ np.swapaxes(R_previous[free_bodies], -1, -2)
    dc = state[free_bodies, :3] - previous[free_bodies, :3]
    v = 0.25 * vee_antisymmetric(M)
    gradient = np.empty((len(free_bodies), 6))
    gradient[:, :3] = weight * dc
    gradient[:, 3:] = (0.25 * weight) * np.einsum("nba,nb->na", relative_angle_matrix_jacobian(M), v)
    return 0.5 * weight * float(np.sum(dc * dc) + np.sum(v * v)), gradient


def velocity_barrier(R, R_previous, free_bodies, weight: float, threshold: float):
    """Value, gradient (n_free, 3) and Hessian blocks (n_free, 3, 3) of the velocity term.

    R, R_previous: rotation matrices (n, 3, 3) of the bodies now and at the previous frame.

    x_i = 3 - tr(R_bar_i^T R_i); grad x = vee(M - M^T), Hess x = tr(M) I - sym(M),
    M = R_i R_bar_i^T; g(x) = ((x - t) / t)^3 above t. The Hessian keeps only the
    positive semi-definite part (eigenvalues clipped at zero).
    """
    M = R[free_bodies] @ np.swapaxes(R_previous[free_bodies], -1, -2)
    x = 3.0 - np.trace(M, axis1=-2, axis2=-1)
    excess = np.maximum(x - threshold, 0.0)
    grad = np.zeros((len(free_bodies), 3))
    hess = np.zeros((len(free_bodies), 3, 3))
    active = np.flatnonzero(excess > 0.0)
    if not len(active):
        return 0.0, grad, hess
    e, Ma = excess[active] / threshold, M[active]
    dx = vee_antisymmetric(Ma)
    g1, g2 = 3.0 * e**2 / threshold, 6.0 * e / threshold**2
    grad[active] = weight * g1[:, None] * dx
    hess_x = relative_angle_matrix_jacobian(0.5 * (Ma + np.swapaxes(Ma, -1, -2)))
    h = weight * (g2[:, None, None] * dx[:, :, None] * dx[:, None, :] + g1[:, None, None] * hess_x)
    w, V = np.linalg.eigh(h)
    hess[active] = np.einsum("nab,nb,ncb->nac", V, np.maximum(w, 0.0), V)
    return weight * float(np.sum(e**3)), grad, hess
