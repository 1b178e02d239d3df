"""Regularizers (paper IV.C-D): stay near the previous frame, limit body speeds.

* minimal motion (the default): a proximal term in joint space, so each frame
  moves the motors as little as the targets allow and meets reachable targets
  exactly (see :class:`MinimalMotion`).
* state: ``r = sqrt(w) [c - c_bar, vee(M - M^T) / 4]`` per free body,
  ``M = R R_bar^T`` (the rotational part is ``sin(phi)/2 u``, like the paper's
  quaternion difference ``q - q_bar`` to first order) — least squares.
* velocity (paper eq. 4-5): ``w sum_i g(3 - tr(R_bar_i^T R_i))`` with
  ``g(x) = ((x - t) / t)^3`` above t, zero (with zero gradient) below — a barrier.
"""

from dataclasses import dataclass

import numpy as np

from ..maths.rotations import relative_angle_matrix_jacobian, vee_antisymmetric
from .base import LeastSquaresTerm, Linearization, Point, Term, TermKind, motor_units


@dataclass(frozen=True)
class Regularization:
    """Regularizer weights (paper IV.C-D).

    state_weight: with ``state_mode="exact"`` (the default) the weight of the
    minimal-motion metric relative to the tracking terms (:class:`MinimalMotion`;
    it only resolves redundancy); with ``state_mode="paper"`` the paper's absolute
    pull towards the previous state, ``1/2 w |s - s_bar|^2`` [1/m^2, 1/rad^2] per
    body, which biases reachable targets by about w / (w + sigma^2).
    velocity_weight, velocity_threshold: the barrier ``w sum_i g(3 - tr(R_bar_i^T R_i))``
    with ``g(x) = ((x - t) / t)^3`` above ``t`` (zero, with zero gradient, below).
    ``3 - tr(...) ~ theta^2`` for a per-frame rotation theta [rad], so
    ``t = (omega_max / rate)^2`` (see :func:`velocity_threshold`) and
    ``(x - t) / t ~ (omega / omega_max)^2 - 1``: the barrier, and so its weight,
    does not depend on the sample rate. This is the paper's cubic term divided by
    ``t^3`` (its weight 1e-4 at t = 1.11e-5 would be about 1.4e-19 here).

    actuator_weight: beyond the paper, barriers of the same cubic form on each
    actuator's limits (see :class:`~looprig.core.terms.limits.ActuatorBarrier`):
    velocity above ``limit_fraction`` of its limit (needs ``rate`` [Hz]), position
    within ``position_margin`` [rad or m] of the range's ends.
    acceleration_weight: a quadratic cost on actuator accelerations in units of
    their limits (needs ``rate`` and the previous frame's velocities), the
    acceleration term the paper names as its limitation.
    """

    state_weight: float = 1e-4
    state_mode: str = "exact"
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


def _relative_rotations(point: Point, bodies: np.ndarray) -> np.ndarray:
    """``M = R R_bar^T`` (B, n_free, 3, 3) of the given bodies against the reference."""
    return point.R[:, bodies] @ np.swapaxes(point.reference.R[:, bodies], -1, -2)


class StateRegularizer(LeastSquaresTerm):
    """Pull every free body towards its previous state (``point.reference``).

    Residual (B, 6 n_free): per body ``sqrt(w) [c - c_bar [m], vee(M - M^T) / 4]``;
    ``d r_rot / d dtheta = sqrt(w) (tr(M) I - M) / 4``. Its Gauss-Newton Hessian is
    block diagonal and assembled per body.
    """

    name = "state regularizer"
    unit = "m"

    def __init__(self, free_bodies: np.ndarray, weight: float):
        self.free_bodies = np.asarray(free_bodies, dtype=int)
        self.weight = float(weight)

    def _parts(self, point: Point):
        bodies = self.free_bodies
        M = _relative_rotations(point, bodies)
        sw = np.sqrt(self.weight)
        dc = sw * (point.state[:, bodies, :3] - point.reference.state[:, bodies, :3])
        v = (0.25 * sw) * vee_antisymmetric(M)
        return M, np.concatenate([dc, v], axis=-1)  # (B, nf, 6)

    def _blocks(self, M) -> np.ndarray:
        """dr/ds per body (B, nf, 6, 6), block diagonal."""
        sw = np.sqrt(self.weight)
        blocks = np.zeros(M.shape[:-2] + (6, 6))
        blocks[..., :3, :3] = sw * np.eye(3)
        blocks[..., 3:, 3:] = (0.25 * sw) * relative_angle_matrix_jacobian(M)
        return blocks

    def _scatter(self, point: Point, blocks: np.ndarray) -> np.ndarray:
        """Block-diagonal (B, nf, 6, 6) -> dense (B, N, N) over the free columns."""
        out = np.zeros((point.batch, point.n_vars, point.n_vars))
        cols = point.column_of_body[self.free_bodies, None] + np.arange(6)  # (nf, 6)
        out[:, cols[:, :, None], cols[:, None, :]] = blocks
        return out

    def residual(self, point: Point, jacobian: bool = True):
        M, r = self._parts(point)
        flat = r.reshape(point.batch, -1)
        return flat, (self._scatter(point, self._blocks(M)) if jacobian else None)

    def linearize(self, point: Point, derivatives: bool = True) -> Linearization:
        M, r = self._parts(point)
        value = 0.5 * np.einsum("bia,bia->b", r, r)
        if not derivatives:
            return Linearization(value, None, None)
        blocks = self._blocks(M)
        gradient = np.zeros((point.batch, point.n_vars))
        cols = point.column_of_body[self.free_bodies, None] + np.arange(6)
        gradient[:, cols] = np.einsum("birc,bir->bic", blocks, r)
        hessian = self._scatter(point, np.swapaxes(blocks, -1, -2) @ blocks)
        return Linearization(value, gradient, hessian)


class MinimalMotion(Term):
    """Proximal metric that makes each frame move the motors as little as possible.

    ``H = w L^2 (J_p^T S J_p + eps D)``: J_p the read-off Jacobian of every actuator
    (B, A, N), S = 1 for angles [rad] and 1/L^2 for displacements [m]; D the body
    metric ``diag(1/L^2 [translations], 1 [rotations])`` with eps = 1e-9 (1 for a
    mechanism without actuators, and for ``floating`` bodies: a floating base moves
    like a motor). L: the mean joint distance [m], so w is relative
    to position-tracking terms (whose Hessians grow as L^2 per radian). Value and
    gradient are zero at every iterate (kind ``proximal``): motors that no target
    moves keep their values, and reachable targets are met exactly. The metric is
    taken at the reference (the previous frame), so one solve computes it once.
    """

    name = "minimal motion"
    unit = ""
    kind = TermKind.PROXIMAL

    def __init__(self, readout, free_bodies: np.ndarray, weight: float, length_scale: float, floating=()):
        self.readout = readout
        self.free_bodies = np.asarray(free_bodies, dtype=int)
        self.floating = np.isin(self.free_bodies, np.asarray(floating, dtype=int))  # (n_free,)
        self.weight, self.length_scale = float(weight), float(length_scale)
        L = self.length_scale
        self._row_scale = motor_units(readout, L)  # (A,)
        self._eps = 1e-9 if len(readout.names) else 1.0
        self._body_metric = np.r_[np.full(3, 1.0 / L**2), np.ones(3)]
        self._last = (None, None)  # (reference states, metric at them)
        self._diagonal = (None, None)  # (column_of_body, the diagonal (N,) for it)

    def linearize(self, point: Point, derivatives: bool = True) -> Linearization:
        zero = np.zeros(point.batch)
        if not derivatives:
            return Linearization(zero, None, None)
        reference = point.reference
        origin = reference if reference.origin is None else reference.origin
        if self._last[0] is not origin.state:  # once per reference (for all its frames)
            self._last = (origin.state, self._metric(origin, point))
        factor, diagonal = self._last[1]
        if reference.origin is not None:
            diagonal = diagonal[reference.frames]
            factor = None if factor is None else factor[reference.frames]
        return Linearization(zero, np.zeros((point.batch, point.n_vars)), factor=factor, diagonal=diagonal)

    def _metric(self, reference, point: Point):
        """The metric's factor (B, A, N) (None without motors) and diagonal (B, N) at
        ``reference`` (B frames)."""
        N = point.n_vars
        scale = self.weight * self.length_scale**2
        if self._diagonal[0] is not point.column_of_body:  # the same for every frame
            diagonal = np.zeros(N)
            cols = (point.column_of_body[self.free_bodies, None] + np.arange(6)).ravel()
            eps = np.where(self.floating, 1.0, self._eps)[:, None] * self._body_metric  # (n_free, 6)
            diagonal[cols] = scale * eps.ravel()
            self._diagonal = (point.column_of_body, diagonal)
        factor = None
        if len(self.readout.names):
            factor = self.readout.jacobian(reference.state, reference.R, point.column_of_body, N)
            factor *= (np.sqrt(scale) * self._row_scale)[:, None]
        return factor, np.repeat(self._diagonal[1][None], len(reference.state), axis=0)

    def errors(self, point: Point) -> dict[str, np.ndarray]:
        return {}  # it measures nothing: it only shapes the steps


class MotorRest(LeastSquaresTerm):
    """Pull the motors towards rest values: ``r = sqrt(w) L S (p(s) - p_rest)`` (A,),
    S = 1 for angles, 1/L for displacements, so w is relative like
    :class:`MinimalMotion`'s. Used to bring motors that no target determines back
    to where the clip starts after a restart from a perturbed pose.
    """

    name = "motor rest"
    unit = "m"

    def __init__(self, readout, rest: np.ndarray, weight: float, length_scale: float):
        self.readout, self.rest = readout, np.asarray(rest, dtype=float)
        L = float(length_scale)
        self._row_scale = np.sqrt(weight) * L * motor_units(readout, L)

    def residual(self, point: Point, jacobian: bool = True):
        values = self.readout.read(point.state, previous=self.rest, R=point.R)
        r = self._row_scale * (values - self.rest)
        if not jacobian:
            return r, None
        J = self.readout.jacobian(point.state, point.R, point.column_of_body, point.n_vars)
        return r, J * self._row_scale[:, None]


class VelocityBarrier(Term):
    """The paper's body angular-velocity barrier against ``point.reference``.

    x_i = 3 - tr(R_bar_i^T R_i); grad x = vee(M - M^T), Hess x = tr(M) I - sym(M),
    M = R_i R_bar_i^T; value ``w sum g(x_i)``. The Hessian keeps only the positive
    semi-definite part of each body's 3x3 block (eigenvalues clipped at zero).
    """

    name = "velocity barrier"
    unit = ""
    kind = TermKind.BARRIER

    def __init__(self, free_bodies: np.ndarray, weight: float, threshold: float):
        self.free_bodies = np.asarray(free_bodies, dtype=int)
        self.weight, self.threshold = float(weight), float(threshold)

    def linearize(self, point: Point, derivatives: bool = True) -> Linearization:
        t, w = self.threshold, self.weight
        M = _relative_rotations(point, self.free_bodies)
        x = 3.0 - np.trace(M, axis1=-2, axis2=-1)  # (B, nf)
        e = np.maximum(x - t, 0.0) / t
        value = w * np.sum(e**3, axis=-1)
        if not derivatives:
            return Linearization(value, None, None)
        N = point.n_vars
        gradient = np.zeros((point.batch, N))
        hessian = np.zeros((point.batch, N, N))
        active = np.nonzero(e > 0.0)  # (frame, body) pairs
        if len(active[0]):
            Ma, ea = M[active], e[active]
            dx = vee_antisymmetric(Ma)
            g1, g2 = 3.0 * ea**2 / t, 6.0 * ea / t**2
            hess_x = relative_angle_matrix_jacobian(0.5 * (Ma + np.swapaxes(Ma, -1, -2)))
            h = w * (g2[:, None, None] * dx[:, :, None] * dx[:, None, :] + g1[:, None, None] * hess_x)
            lam, V = np.linalg.eigh(h)
            h = np.einsum("nab,nb,ncb->nac", V, np.maximum(lam, 0.0), V)
            cols = point.column_of_body[self.free_bodies[active[1]], None] + 3 + np.arange(3)  # (n, 3)
            gradient[active[0][:, None], cols] = w * g1[:, None] * dx
            hessian[active[0][:, None, None], cols[:, :, None], cols[:, None, :]] = h
        return Linearization(value, gradient, hessian)
