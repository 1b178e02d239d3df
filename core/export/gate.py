"""The refusal gate every curve export passes before it writes.

:func:`gate` collects the violations an export would record (the curves'
limits through :func:`~looprig.core.curves.limit_checks.all_violations`, plus any the
format adds) and raises :class:`~looprig.core.curves.violations.LimitViolationError`
unless the caller allows them; nothing is written then. :func:`ticks_gate`
adds the servo's tick range for the Dynamixel formats: ticks outside the
mode's range (or the configured Min/Max Position Limit) are ``"tick_range"``
violations like any other limit, and ticks that do not fit the Goal Position
register at all are refused even with the override (there is no honest
number to write).

The message is one line: the first violations, then "and N more". It names
no override; see :class:`~looprig.core.curves.violations.LimitViolationError`.
"""

import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..curves.actuator_curves import ActuatorCurves
from ..curves.limit_checks import LimitCheckSettings, all_violations
from ..curves.violations import LimitViolationError, Violation, merge_violations, summarize_violations
from .dynamixel import (
    DXL_REGISTER_RANGE,
    DynamixelMotor,
    DynamixelSettings,
    resolve_mode,
    tick_range_violations,
    tick_values,
)


def export_violations(
    curves: ActuatorCurves, check: LimitCheckSettings | None = None, extra: Sequence[Violation] = ()
) -> list[Violation]:
    """Everything an export of ``curves`` records: limits, carried violations and ``extra``."""
    return merge_violations(all_violations(curves, check), extra, order=curves.names)


def gate(
    path,
    curves: ActuatorCurves,
    allow_violations: bool,
    check: LimitCheckSettings | None,
    extra: Sequence[Violation] = (),
) -> list[Violation]:
    """All violations to record, or :class:`LimitViolationError` (nothing written)."""
    violations = export_violations(curves, check, extra)
    if violations and not allow_violations:
        n = len(violations)
        raise LimitViolationError(
            f"refusing to write {os.fspath(path)!r}: the curves break {n} actuator "
            f"limit{'s' if n > 1 else ''}: {summarize_violations(violations)}",
            violations,
            path=path,
        )
    return violations


@dataclass(frozen=True)
class TickPlan:
    """What a Dynamixel export of some curves writes.

    settings: with the mode decided (:func:`resolve_mode`); mode_reason: why
    extended position mode was chosen, or None; motors: (A,) per actuator;
    ticks: (F, A) float Goal Position ticks (unbounded, see :func:`tick_values`);
    violations: their ``"tick_range"`` violations.
    """

    settings: DynamixelSettings
    mode_reason: str | None
    motors: tuple[DynamixelMotor, ...]
    ticks: np.ndarray
    violations: list[Violation]


def plan_ticks(curves: ActuatorCurves, settings: DynamixelSettings | None = None) -> TickPlan:
    """The mode, ticks and tick-range violations a Dynamixel export of ``curves`` writes."""
    settings = settings or DynamixelSettings()
    motors = settings.motors_for(curves.names)
    ticks = tick_values(curves.values, curves.units, motors, curves.names)
    settings, reason = resolve_mode(curves, settings, ticks)
    return TickPlan(settings, reason, motors, ticks, tick_range_violations(curves, ticks, settings))


def tick_violations(curves: ActuatorCurves, settings: DynamixelSettings | None = None) -> list[Violation]:
    """The ``"tick_range"`` violations a Dynamixel export of ``curves`` adds (see :func:`ticks_gate`).

    For reports written beside the exports: an export with the override
    records exactly :func:`export_violations` of the curves with these.
    """
    return plan_ticks(curves, settings).violations


def ticks_gate(
    path,
    curves: ActuatorCurves,
    settings: DynamixelSettings | None,
    allow_violations: bool,
    check: LimitCheckSettings | None,
) -> tuple[DynamixelSettings, tuple[DynamixelMotor, ...], np.ndarray, list[Violation]]:
    """(settings, motors, (F, A) int64 ticks, violations to record) for a Dynamixel export;
    the settings' mode decided (:func:`plan_ticks`).

    Raises :class:`LimitViolationError` if a tick leaves the allowed range and
    ``allow_violations`` is False, and always (``overridable=False``) if a
    tick does not fit the 4-byte Goal Position register.
    """
    plan = plan_ticks(curves, settings)
    settings, motors, ticks, extra = plan.settings, plan.motors, plan.ticks, plan.violations
    lo, hi = DXL_REGISTER_RANGE
    unwritable = [v for v in extra if not lo <= v.peak <= hi]
    if unwritable:
        raise LimitViolationError(
            f"cannot write {os.fspath(path)!r}: {len(unwritable)} stretch(es) of the curves lie beyond "
            f"what a Dynamixel Goal Position can hold ({lo}..{hi} ticks): {summarize_violations(unwritable)}",
            export_violations(curves, check, extra),
            path=path,
            overridable=False,
        )
    violations = gate(path, curves, allow_violations, check, extra)
    return settings, motors, ticks.astype(np.int64), violations
