"""Limit checks of actuator curves.

:func:`check_limits` tests every sample (position against ``lower`` / ``upper``,
``|velocity|`` and ``|acceleration|`` against their limits) and merges runs of
consecutive violating samples into one :class:`~looprig.core.curves.violations.Violation`
per run, whose ``peak`` is the sample that exceeds its bound the most.
"""

from dataclasses import dataclass

import numpy as np

from ..errors import CurvesError, did_you_mean
from .actuator_curves import DERIVATIVE, DERIVATIVE_METHODS, ActuatorCurves, derivative_unit
from .violations import (
    QUANTITIES,
    LimitViolationError,
    Violation,
    merge_violations,
    summarize_violations,
    violations_from_excess,
)


@dataclass(frozen=True)
class LimitCheckSettings:
    """How :func:`check_limits` tests curves.

    derivative: "spline" or "central" (see the module docstring).
    quantities: which of "position", "velocity", "acceleration" to check.
    rtol: a sample violates a bound only if it exceeds it by more than
    ``rtol * max(1, |bound|)`` (in the bound's unit), which absorbs rounding
    noise of curves that touch a limit exactly.
    cyclic: the curves played in a loop (the first sample one period after the
    last): velocities and accelerations by central differences that wrap around.
    """

    derivative: str = DERIVATIVE
    quantities: tuple[str, ...] = QUANTITIES
    rtol: float = 1e-9
    cyclic: bool = False

    def __post_init__(self):
        if self.derivative not in DERIVATIVE_METHODS:
            raise CurvesError(did_you_mean("derivative method", self.derivative, DERIVATIVE_METHODS))
        for q in self.quantities:
            if q not in QUANTITIES:
                raise CurvesError(did_you_mean("quantity", q, QUANTITIES))


def check_limits(curves: ActuatorCurves, settings: LimitCheckSettings | None = None) -> list[Violation]:
    """Violating intervals of the samples of ``curves`` (not the carried ones).

    Returns one :class:`Violation` per run of consecutive violating samples
    per actuator and quantity, sorted by start time (ties by actuator order,
    then position, velocity, acceleration); intervals of one actuator and
    quantity are disjoint. See :func:`all_violations` to include
    ``curves.carried_violations``.
    """
    settings = settings or LimitCheckSettings()
    rates = {}
    if "velocity" in settings.quantities:
        rates["velocity"] = (
            curves.derivative(1, settings.derivative, settings.cyclic),
            curves.velocity_limit,
            1,
        )
    if "acceleration" in settings.quantities:
        rates["acceleration"] = (
            curves.derivative(2, settings.derivative, settings.cyclic),
            curves.acceleration_limit,
            2,
        )
    found: list[Violation] = []
    t = curves.times
    for a, name in enumerate(curves.names):
        unit = curves.units[a]
        if "position" in settings.quantities:
            x = curves.values[:, a]
            lo, hi = curves.lower[a], curves.upper[a]
            over = x - hi - settings.rtol * max(1.0, abs(hi)) if np.isfinite(hi) else -np.inf
            under = lo - x - settings.rtol * max(1.0, abs(lo)) if np.isfinite(lo) else -np.inf
            over = np.broadcast_to(over, x.shape)
            under = np.broadcast_to(under, x.shape)
            excess = np.maximum(over, under)
            limits = np.where(over >= under, hi, lo)
            found += violations_from_excess(name, "position", t, x, excess, limits, unit)
        for quantity, (rate, limit, order) in rates.items():
            if not np.isfinite(limit[a]):
                continue
            r = rate[:, a]
            excess = np.abs(r) - limit[a] - settings.rtol * max(1.0, limit[a])
            limits = np.where(r >= 0, limit[a], -limit[a])
            found += violations_from_excess(
                name, quantity, t, r, excess, limits, derivative_unit(unit, order)
            )
    return merge_violations(found, order=curves.names)


def all_violations(curves: ActuatorCurves, settings: LimitCheckSettings | None = None) -> list[Violation]:
    """:func:`check_limits` merged with ``curves.carried_violations`` (disjoint, sorted)."""
    return merge_violations(check_limits(curves, settings), curves.carried_violations, order=curves.names)


def require_within_limits(
    curves: ActuatorCurves, settings: LimitCheckSettings | None = None, what: str = "curves"
) -> list[Violation]:
    """Raise :class:`LimitViolationError` if :func:`all_violations` finds any; else ``[]``."""
    violations = all_violations(curves, settings)
    if violations:
        raise LimitViolationError(
            f"{what} break {len(violations)} actuator limit(s): {summarize_violations(violations)}",
            violations,
        )
    return violations
