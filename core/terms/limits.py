"""Actuator limits as barriers (beyond the paper): position range, velocity,
and a quadratic acceleration cost, all through the actuator read-off."""

from dataclasses import dataclass

import numpy as np

from ..model.mechanism import Mechanism
from ..model.readoff import ActuatorReadout
from .base import Linearization, Point, Term, TermKind
from .regularizers import Regularization


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
    """g = e^3 where e > 0: value (B,), dg and d2g (B, A) for e(p) with derivatives de, d2e."""
    on = e > 0.0
    e = np.where(on, e, 0.0)
    return np.sum(e**3, axis=-1), 3.0 * e**2 * de * on, (6.0 * e * de**2 + 3.0 * e**2 * d2e) * on


def actuator_barrier(values, previous, previous_velocity, limits: ActuatorLimits, reg: Regularization):
    """Actuator terms: value (B,) and d/dp, d2/dp2 (B, A) per actuator.

    p: values (B, A) [rad | m]; velocity v = (p - p_prev) rate. Barriers, each
    ``actuator_weight * e^3`` where e > 0: the position range,
    ``e = (p - (upper - m)) / m`` and ``((lower + m) - p) / m``; the velocity limit,
    ``e = (v / (k v_max))^2 - 1`` with k = limit_fraction. The acceleration term is
    quadratic, ``1/2 acceleration_weight (a / a_max)^2`` with
    ``a = (v - v_prev) rate``: a smoothness cost in units of each actuator's limit
    (a barrier there would be too stiff at 1200 Hz).
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
            (velocity**2 * scale - 1.0, 2.0 * velocity * reg.rate * scale, 2.0 * reg.rate**2 * scale + zero)
        )
    total, dg, d2g = np.zeros(values.shape[:-1]), zero.copy(), zero.copy()
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
        total = total + 0.5 * wa * np.sum(accel**2, axis=-1)
        dg = dg + wa * accel * da
        d2g = d2g + wa * da**2
    return total, dg, d2g


class ActuatorBarrier(Term):
    """:func:`actuator_barrier` on the read-off p(s) against ``point.reference``.

    Gradient ``J^T dg``, Hessian model ``J^T diag(d2g) J`` (J: the read-off
    Jacobian, (B, A, N); the read-off's own curvature is left out).
    """

    name = "actuator limits"
    unit = ""
    kind = TermKind.BARRIER

    def __init__(self, readout: ActuatorReadout, limits: ActuatorLimits, regularization: Regularization):
        self.readout, self.limits, self.regularization = readout, limits, regularization

    def linearize(self, point: Point, derivatives: bool = True) -> Linearization:
        ref = point.reference
        values = self.readout.read(point.state, previous=ref.actuators, R=point.R)
        value, dg, d2g = actuator_barrier(
            values, ref.actuators, ref.velocities, self.limits, self.regularization
        )
        if not derivatives:
            return Linearization(value, None, None, values)
        J = self.readout.jacobian(point.state, point.R, point.column_of_body, point.n_vars)
        gradient = (dg[:, None, :] @ J)[:, 0]
        factor = np.sqrt(np.maximum(d2g, 0.0))[:, :, None] * J
        return Linearization(value, gradient, None, values, J, d2g, factor=factor)
