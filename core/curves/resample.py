"""Resampling actuator curves to a device rate without hiding what the source broke.

:func:`resample` evaluates the interpolating cubic spline (or PCHIP, or a
straight line) at a device rate. No low-pass filter is applied: the device
should reach the source's positions at its frame times. Motion faster than
the device rate can represent is not silently smoothed away: the resampled
curve carries the source's violations (``carried_violations``, merged into
every later check and export), and :func:`compare_peaks` reports (warns or
raises, see :class:`ResampleSettings`) when the resampled peak velocity falls
noticeably below the source's.
"""

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.interpolate import PchipInterpolator

from ..errors import CurvesError, LooprigError, LooprigWarning, did_you_mean
from .actuator_curves import DERIVATIVE, DERIVATIVE_METHODS, ActuatorCurves, derivative_unit, uniform_times
from .limit_checks import LimitCheckSettings, all_violations

RESAMPLE_METHODS = ("cubic", "pchip", "linear")


class PeakLossWarning(LooprigWarning):
    """Resampling lowered an actuator's peak velocity noticeably (``obj`` names the actuators)."""


class PeakLossError(LooprigError, ValueError):
    """Resampling lowered an actuator's peak velocity noticeably; ``losses`` lists them."""

    def __init__(self, message: str, losses: Sequence["PeakLoss"] = ()):
        super().__init__(message)
        self.losses = tuple(losses)


@dataclass(frozen=True)
class ResampleSettings:
    """How :func:`resample` builds the device-rate curve.

    method: "cubic" (interpolating not-a-knot spline, the same one the
    "spline" derivatives use; reproduces smooth peaks between source samples,
    may overshoot near corners), "pchip" (shape-preserving, never overshoots
    the samples, flattens extrema) or "linear".
    peak_tolerance: relative drop of an actuator's peak |velocity| (resampled
    vs source, both measured on their samples with ``derivative``) beyond which
    the loss is reported; 0.05 means the resampled peak may be 5 % lower.
    on_peak_loss: "warn" (:class:`PeakLossWarning`), "raise"
    (:class:`PeakLossError`) or "ignore".
    carry_violations: check the source's limits (``check``) and store its
    violations, with its own carried ones, in the result's ``carried_violations``.
    """

    method: str = "cubic"
    peak_tolerance: float = 0.05
    on_peak_loss: str = "warn"
    derivative: str = DERIVATIVE
    carry_violations: bool = True
    check: LimitCheckSettings = field(default_factory=LimitCheckSettings)

    def __post_init__(self):
        if self.method not in RESAMPLE_METHODS:
            raise CurvesError(did_you_mean("resampling method", self.method, RESAMPLE_METHODS))
        if self.on_peak_loss not in ("warn", "raise", "ignore"):
            raise CurvesError(
                did_you_mean("on_peak_loss action", self.on_peak_loss, ("warn", "raise", "ignore"))
            )
        if not 0.0 <= self.peak_tolerance < 1.0:
            raise CurvesError(f"peak_tolerance must lie in [0, 1), got {self.peak_tolerance}")
        if self.derivative not in DERIVATIVE_METHODS:
            raise CurvesError(did_you_mean("derivative method", self.derivative, DERIVATIVE_METHODS))


@dataclass(frozen=True)
class PeakLoss:
    """An actuator whose peak |velocity| dropped in resampling [rad/s or m/s]."""

    actuator: str
    source_peak: float
    resampled_peak: float
    unit: str

    @property
    def ratio(self) -> float:
        """resampled_peak / source_peak."""
        return self.resampled_peak / self.source_peak if self.source_peak > 0 else 1.0

    def problem(self, rate_hz: float | None = None) -> str:
        """The loss in words, without the actuator's name; ``rate_hz`` names the device rate [Hz]."""
        rate = "" if rate_hz is None else f" to {rate_hz:g} Hz"
        return (
            f"peak velocity {self.source_peak:.6g} {self.unit} in the source but "
            f"{self.resampled_peak:.6g} {self.unit} after resampling{rate} "
            f"({100 * (1 - self.ratio):.1f} % lower)"
        )

    def describe(self) -> str:
        """One line for error messages and reports."""
        return f"actuator {self.actuator!r}: {self.problem()}"


def compare_peaks(
    source: ActuatorCurves,
    resampled: ActuatorCurves,
    tolerance: float = 0.05,
    derivative: str = DERIVATIVE,
) -> list[PeakLoss]:
    """Actuators whose peak |velocity| on ``resampled``'s samples is more than
    ``tolerance`` (relative) below the peak on ``source``'s samples."""
    v_src = np.max(np.abs(source.velocities(derivative)), axis=0)
    v_res = np.max(np.abs(resampled.velocities(derivative)), axis=0)
    losses = []
    for a, name in enumerate(source.names):
        b = resampled.index(name)
        if v_res[b] < (1.0 - tolerance) * v_src[a]:
            unit = derivative_unit(source.units[a], 1)
            losses.append(PeakLoss(name, float(v_src[a]), float(v_res[b]), unit))
    return losses


def resample(
    curves: ActuatorCurves,
    rate_hz: float,
    settings: ResampleSettings | None = None,
) -> ActuatorCurves:
    """``curves`` at ``rate_hz`` [Hz]: frames at ``t0 + k / rate_hz`` up to the last source time.

    The result keeps names, units, limits and hardware ids; with
    ``settings.carry_violations`` its ``carried_violations`` hold the
    source's violations (so an export of the resampled curve refuses what
    the source broke). A peak velocity drop beyond ``settings.peak_tolerance``
    is reported as ``settings.on_peak_loss`` says (see :func:`compare_peaks`).
    """
    settings = settings or ResampleSettings()
    if curves.n_frames < 2:
        raise CurvesError("resampling needs at least two frames")
    t0 = float(curves.times[0])
    n = math.floor(curves.duration * float(rate_hz) + 1e-9) + 1
    times = uniform_times(n, rate_hz, t0)
    times[-1] = min(times[-1], float(curves.times[-1]))
    if settings.method == "cubic":
        values = curves.spline()(times)
    elif settings.method == "pchip":
        values = PchipInterpolator(curves.times, curves.values, axis=0)(times)
    else:
        values = np.column_stack(
            [np.interp(times, curves.times, curves.values[:, a]) for a in range(curves.n_actuators)]
        ).reshape(n, curves.n_actuators)
    carried = curves.carried_violations
    if settings.carry_violations:
        carried = tuple(all_violations(curves, settings.check))
    out = curves.with_values(times, values, carried_violations=carried)
    if settings.on_peak_loss != "ignore" and n >= 2:
        losses = compare_peaks(curves, out, settings.peak_tolerance, settings.derivative)
        advice = "motion faster than the device rate can represent; raise the rate or slow the animation"
        if losses and settings.on_peak_loss == "raise":
            raise PeakLossError(
                f"resampling to {rate_hz} Hz lowers peak velocities: "
                + "; ".join(loss.describe() for loss in losses)
                + f" ({advice})",
                losses,
            )
        for loss in losses:
            warnings.warn(
                PeakLossWarning(f"{loss.problem(rate_hz)}; {advice}", obj=f"actuator {loss.actuator!r}"),
                stacklevel=2,
            )
    return out
