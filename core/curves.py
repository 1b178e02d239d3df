"""Actuator curves: values over time, their derivatives, limit checks, resampling.

An :class:`ActuatorCurves` holds one curve per actuator, sampled at shared
times, in SI units of the actuator's coordinate (an angle [rad] or a
displacement [m]), together with the actuator's limits and hardware id. It is
what the retargeting loop produces and what every hardware export consumes.

Derivatives
    ``"spline"`` (default): the derivative of the interpolating cubic spline
    with not-a-knot end conditions (:class:`scipy.interpolate.CubicSpline`).
    It passes through every sample (no smoothing), is exact for cubics, and
    its velocity error is O(h^3), its acceleration error O(h^2). The same
    spline is used for resampling, so a curve and its resampled copy agree.
    ``"central"``: three-point finite differences (second-order one-sided at
    the ends; ``np.gradient`` with ``edge_order=2``) for velocity, exact for
    quadratics, and the three-point second difference for acceleration (at the
    ends, the second derivative of the cubic through the four end samples),
    exact for quadratics. Both handle non-uniform times.

Limit checks
    :func:`check_limits` tests every sample (position against ``lower`` /
    ``upper``, ``|velocity|`` and ``|acceleration|`` against their limits) and
    merges runs of consecutive violating samples into one :class:`Violation`
    per run, whose ``peak`` is the sample that exceeds its bound the most.

Resampling
    :func:`resample` evaluates the interpolating cubic spline (or PCHIP, or a
    straight line) at a device rate. No low-pass filter is applied: the device
    should reach the source's positions at its frame times. Motion faster than
    the device rate can represent is not silently smoothed away: the resampled
    curve carries the source's violations (``carried_violations``, merged into
    every later check and export), and :func:`compare_peaks` reports (warns or
    raises, see :class:`ResampleSettings`) when the resampled peak velocity
    falls noticeably below the source's.
"""

import math
import os
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from scipy.interpolate import CubicSpline, PchipInterpolator

from .errors import LooprigError, LooprigWarning, did_you_mean
from .mechanism import Actuator, Mechanism
from .readoff import unwrap_sequence

#: Units of an actuator coordinate: angle or displacement.
UNITS = ("rad", "m")
#: Quantities a limit check covers, in report order.
QUANTITIES = ("position", "velocity", "acceleration")
DERIVATIVE_METHODS = ("spline", "central")
RESAMPLE_METHODS = ("cubic", "pchip", "linear")


class CurvesError(LooprigError, ValueError):
    """Actuator curves are malformed: wrong shape, not finite, unknown actuator..."""


class LimitViolationError(LooprigError, ValueError):
    """Curves break an actuator limit, so nothing was written.

    violations: every broken interval (:class:`Violation`). path: the file not
    written, or None. overridable: True if the same call with the override
    (``allow_violations=True``) writes the file with the violations recorded;
    False if the values cannot be written at all (servo ticks beyond the
    register).

    The message is one line naming the first violations, and names no
    override of its own, because the override is spelled differently in each
    front end. A front end sets ``override_hint`` (the CLI
    ``"--allow-violations"``, the Blender add-on its checkbox) before showing
    the error; ``str()`` then ends with "; <hint> writes the file anyway, with
    the violations recorded in it" when the error is overridable.
    """

    def __init__(
        self,
        message: str,
        violations: Sequence["Violation"] = (),
        path=None,
        overridable: bool = True,
    ):
        super().__init__(message)
        self.message = message
        self.violations = tuple(violations)
        self.path = None if path is None else os.fspath(path)
        self.overridable = overridable
        self.override_hint = ""

    def __str__(self) -> str:
        if self.override_hint and self.overridable:
            return (
                f"{self.message}; {self.override_hint} writes the file anyway, "
                "with the violations recorded in it"
            )
        return self.message


class PeakLossWarning(LooprigWarning):
    """Resampling lowered an actuator's peak velocity noticeably (``obj`` names the actuators)."""


class PeakLossError(LooprigError, ValueError):
    """Resampling lowered an actuator's peak velocity noticeably; ``losses`` lists them."""

    def __init__(self, message: str, losses: Sequence["PeakLoss"] = ()):
        super().__init__(message)
        self.losses = tuple(losses)


def derivative_unit(unit: str, order: int) -> str:
    """Unit of the ``order``-th time derivative of a coordinate in ``unit`` ("rad/s^2")."""
    return unit if order == 0 else unit + "/s" if order == 1 else f"{unit}/s^{order}"


# --------------------------------------------------------------------------- violations
@dataclass(frozen=True)
class Violation:
    """One interval in which an actuator breaks a limit.

    actuator: the actuator's name. quantity: ``"position"``, ``"velocity"`` or
    ``"acceleration"`` (hardware exports add ``"tick_range"``, in motor ticks).
    start_time, end_time: first and last violating sample [s] (equal for a
    single sample). peak: the signed value that exceeds its bound the most,
    sampled at ``peak_time`` [s]. limit: the bound it breaks, signed like the
    peak (``upper`` or ``lower`` for positions, ``+limit`` or ``-limit`` for
    rates). unit: unit of ``peak`` and ``limit`` ("rad/s", "m", "tick"...).
    """

    actuator: str
    quantity: str
    start_time: float
    end_time: float
    peak: float
    limit: float
    peak_time: float = math.nan
    unit: str = ""

    @property
    def excess(self) -> float:
        """How far ``peak`` lies beyond ``limit`` (positive), in ``unit``."""
        return abs(self.peak - self.limit)

    def describe(self) -> str:
        """One line for error messages and reports."""
        unit = f" {self.unit}" if self.unit else ""
        when = (
            f"at t={self.start_time:.4f} s"
            if self.start_time == self.end_time
            else f"from t={self.start_time:.4f} s to {self.end_time:.4f} s"
        )
        return (
            f"actuator {self.actuator!r}: {self.quantity} {self.peak:.6g}{unit} beyond limit "
            f"{self.limit:.6g}{unit} {when}"
        )

    def to_dict(self) -> dict:
        """Plain JSON-ready dict (field names as keys)."""
        return {
            "actuator": self.actuator,
            "quantity": self.quantity,
            "start_time": float(self.start_time),
            "end_time": float(self.end_time),
            "peak": float(self.peak),
            "limit": float(self.limit),
            "peak_time": None if math.isnan(self.peak_time) else float(self.peak_time),
            "unit": self.unit,
        }

    @classmethod
    def from_dict(cls, data: Mapping) -> "Violation":
        """The violation of a record written by :meth:`to_dict`; CurvesError naming the bad field."""
        if not isinstance(data, Mapping):
            raise CurvesError(f"a violation record must be an object, got {data!r:.80}")
        fields = {}
        for key in ("actuator", "quantity", "unit"):
            value = data.get(key, "") if key == "unit" else data.get(key)
            if not isinstance(value, str):
                raise CurvesError(f"violation record: {key!r} must be a string, got {value!r:.80}")
            fields[key] = value
        for key in ("start_time", "end_time", "peak", "limit", "peak_time"):
            value = data.get(key)
            if key == "peak_time" and value is None:
                fields[key] = math.nan
                continue
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise CurvesError(f"violation record: {key!r} must be a finite number, got {value!r:.80}")
            fields[key] = float(value)
        return cls(**fields)


def merge_violations(*groups: Iterable[Violation], order: Sequence[str] = ()) -> list[Violation]:
    """Union of violation lists: overlapping intervals of one actuator and quantity merge.

    The merged interval spans both; its peak and limit are those of the larger
    excess. The result is sorted by start time, then by actuator (in ``order``
    if given, else by name) and quantity, and within one actuator and quantity
    the intervals are disjoint.
    """
    rank = {name: i for i, name in enumerate(order)}
    quantity_rank = {q: i for i, q in enumerate((*QUANTITIES, "tick_range"))}
    by_key: dict[tuple[str, str], list[Violation]] = {}
    for group in groups:
        for v in group:
            by_key.setdefault((v.actuator, v.quantity), []).append(v)
    merged: list[Violation] = []
    for items in by_key.values():
        items.sort(key=lambda v: (v.start_time, v.end_time))
        current = items[0]
        for v in items[1:]:
            if v.start_time <= current.end_time:
                top = v if v.excess > current.excess else current
                current = replace(
                    top,
                    start_time=current.start_time,
                    end_time=max(current.end_time, v.end_time),
                )
            else:
                merged.append(current)
                current = v
        merged.append(current)
    merged.sort(
        key=lambda v: (
            v.start_time,
            rank.get(v.actuator, len(rank)),
            v.actuator,
            quantity_rank.get(v.quantity, len(quantity_rank)),
            v.quantity,
        )
    )
    return merged


def violations_from_excess(
    actuator: str,
    quantity: str,
    times: np.ndarray,
    values: np.ndarray,
    excess: np.ndarray,
    limits: np.ndarray,
    unit: str,
) -> list[Violation]:
    """Runs of consecutive samples with ``excess > 0``, one :class:`Violation` each.

    times, values, excess, limits: (F,) arrays; ``limits[f]`` is the signed
    bound that sample f is measured against.
    """
    bad = excess > 0.0
    if not bad.any():
        return []
    edges = np.diff(np.concatenate([[0], bad.astype(np.int8), [0]]))
    starts = np.flatnonzero(edges == 1)
    stops = np.flatnonzero(edges == -1) - 1  # inclusive
    out = []
    for a, b in zip(starts, stops, strict=True):
        k = a + int(np.argmax(excess[a : b + 1]))
        out.append(
            Violation(
                actuator=actuator,
                quantity=quantity,
                start_time=float(times[a]),
                end_time=float(times[b]),
                peak=float(values[k]),
                limit=float(limits[k]),
                peak_time=float(times[k]),
                unit=unit,
            )
        )
    return out


# --------------------------------------------------------------------------- curves
def _limit_array(value, n: int, what: str) -> np.ndarray:
    array = np.broadcast_to(np.asarray(value, dtype=float), (n,)).copy()
    if np.isnan(array).any():
        raise CurvesError(f"{what} must not be NaN (use inf for no limit)")
    return array


@dataclass(frozen=True, eq=False)
class ActuatorCurves:
    """Sampled actuator curves with their limits.

    times: (F,) strictly increasing [s].
    values: (F, A) actuator coordinates, column a in ``units[a]`` ("rad" or "m").
    names: (A,) actuator names (unique). units: (A,) "rad" or "m".
    lower, upper: (A,) position range [rad or m]; velocity_limit: (A,) [rad/s or
    m/s]; acceleration_limit: (A,) [rad/s^2 or m/s^2]; ``inf`` means no limit.
    Scalars broadcast to all actuators.
    hardware_ids: (A,) bus id / channel of each motor, or None.
    carried_violations: violations found on the curve these curves derive from
    (a higher-rate source before :func:`resample`, or a file's record); every
    check through :func:`all_violations` and every export includes them, so
    resampling or a round trip through a file cannot hide a violation.
    The arrays are stored read-only.
    """

    times: np.ndarray
    values: np.ndarray
    names: tuple[str, ...]
    units: tuple[str, ...] = ()
    lower: np.ndarray = -np.inf
    upper: np.ndarray = np.inf
    velocity_limit: np.ndarray = np.inf
    acceleration_limit: np.ndarray = np.inf
    hardware_ids: tuple[int | str | None, ...] = ()
    carried_violations: tuple[Violation, ...] = field(default=())

    def __post_init__(self):
        names = tuple(self.names)
        for i, name in enumerate(names):
            if not isinstance(name, str) or not name:
                raise CurvesError(f"actuator #{i} has no name")
        if len(set(names)) != len(names):
            dupes = sorted({n for n in names if names.count(n) > 1})
            raise CurvesError(f"duplicate actuator names: {', '.join(dupes)}")
        n = len(names)
        if n == 0:
            raise CurvesError("curves need at least one actuator")
        times = np.array(self.times, dtype=float)
        values = np.array(self.values, dtype=float)
        if values.ndim == 1 and n == 1:
            values = values[:, None]
        if times.ndim != 1 or times.size == 0:
            raise CurvesError(f"times must be a non-empty 1-D array [s], got shape {times.shape}")
        if values.shape != (times.size, n):
            raise CurvesError(
                f"values must have shape (frames, actuators) = ({times.size}, {n}), got {values.shape}"
            )
        if not np.all(np.isfinite(times)):
            raise CurvesError("times must be finite")
        if times.size > 1 and not np.all(np.diff(times) > 0):
            f = int(np.flatnonzero(np.diff(times) <= 0)[0])
            raise CurvesError(
                f"times must increase strictly; frame {f + 1} (t={times[f + 1]!r} s) follows t={times[f]!r} s"
            )
        bad = ~np.isfinite(values)
        if bad.any():
            f, a = (int(i) for i in np.argwhere(bad)[0])
            raise CurvesError(
                f"actuator {names[a]!r}: value is {values[f, a]} at frame {f} "
                f"(t={times[f]:.6g} s); curves must be finite"
            )
        units = tuple(self.units) if self.units else ("rad",) * n
        if len(units) != n:
            raise CurvesError(f"expected {n} units (one per actuator), got {len(units)}")
        for name, unit in zip(names, units, strict=True):
            if unit not in UNITS:
                raise CurvesError(f"actuator {name!r}: unit {unit!r} is not one of {UNITS}")
        lower = _limit_array(self.lower, n, "lower limits")
        upper = _limit_array(self.upper, n, "upper limits")
        velocity = _limit_array(self.velocity_limit, n, "velocity limits")
        acceleration = _limit_array(self.acceleration_limit, n, "acceleration limits")
        for a, name in enumerate(names):
            if not lower[a] <= upper[a]:
                raise CurvesError(f"actuator {name!r}: lower limit {lower[a]} exceeds upper limit {upper[a]}")
            if not velocity[a] > 0 or not acceleration[a] > 0:
                raise CurvesError(
                    f"actuator {name!r}: velocity and acceleration limits must be positive "
                    f"(inf for none), got {velocity[a]} and {acceleration[a]}"
                )
        ids = tuple(self.hardware_ids) if self.hardware_ids else (None,) * n
        if len(ids) != n:
            raise CurvesError(f"expected {n} hardware ids (one per actuator), got {len(ids)}")
        carried = tuple(self.carried_violations)
        for v in carried:
            if v.actuator not in names:
                raise CurvesError("carried violation: " + did_you_mean("actuator", v.actuator, names))
        for array in (times, values, lower, upper, velocity, acceleration):
            array.flags.writeable = False
        for name, value in (
            ("names", names),
            ("times", times),
            ("values", values),
            ("units", units),
            ("lower", lower),
            ("upper", upper),
            ("velocity_limit", velocity),
            ("acceleration_limit", acceleration),
            ("hardware_ids", ids),
            ("carried_violations", carried),
        ):
            object.__setattr__(self, name, value)

    # ----------------------------------------------------------------- builders
    @classmethod
    def from_actuators(
        cls,
        actuators: Mapping[str, Actuator],
        values: np.ndarray,
        rate_hz: float,
        start_time: float = 0.0,
        unwrap: bool = True,
    ) -> "ActuatorCurves":
        """Curves at a fixed rate from named :class:`Actuator` records.

        values: (F, A) in the order of ``actuators`` [rad or m]; frame f is at
        ``start_time + f / rate_hz`` [s]. With ``unwrap``, angles are unwrapped
        frame by frame (:func:`looprig.core.readoff.unwrap_sequence`) so a
        curve read off modulo 2 pi stays continuous; displacements are untouched.
        """
        names = list(actuators)
        acts = [actuators[n] for n in names]
        values = np.asarray(values, dtype=float)
        if values.ndim == 1 and len(names) == 1:
            values = values[:, None]
        if values.ndim != 2 or values.shape[1] != len(names):
            raise CurvesError(
                f"values must have shape (frames, {len(names)}) for actuators "
                f"{', '.join(names) or '(none)'}; got {values.shape}"
            )
        if unwrap and len(values) > 1 and np.all(np.isfinite(values)):
            is_angle = np.array([a.unit == "rad" for a in acts], bool)
            values = unwrap_sequence(values, is_angle)
        return cls(
            times=uniform_times(len(values), rate_hz, start_time),
            values=values,
            names=tuple(names),
            units=tuple(a.unit for a in acts),
            lower=[a.lower for a in acts],
            upper=[a.upper for a in acts],
            velocity_limit=[a.velocity_limit for a in acts],
            acceleration_limit=[a.acceleration_limit for a in acts],
            hardware_ids=tuple(a.hardware_id for a in acts),
        )

    @classmethod
    def from_mechanism(
        cls,
        mechanism: Mechanism,
        values: np.ndarray,
        rate_hz: float,
        start_time: float = 0.0,
        unwrap: bool = True,
    ) -> "ActuatorCurves":
        """Curves of a mechanism's actuated joints.

        values: (F, A) in the order of ``mechanism.actuator_names`` [rad or m],
        e.g. the read-offs of a retargeted clip; frame f is at
        ``start_time + f / rate_hz`` [s]. Limits, units and hardware ids come
        from each joint's :class:`Actuator`. See :meth:`from_actuators`.
        """
        actuators = {j.name: j.actuator for j in mechanism.actuated_joints}
        if not actuators:
            raise CurvesError(f"mechanism {mechanism.name!r} has no actuated joints")
        return cls.from_actuators(actuators, values, rate_hz, start_time, unwrap)

    def with_values(self, times: np.ndarray, values: np.ndarray, **changes) -> "ActuatorCurves":
        """Same actuators and limits, new samples (and any other field in ``changes``)."""
        return replace(self, times=times, values=values, **changes)

    # ----------------------------------------------------------------- lookups
    @property
    def n_frames(self) -> int:
        return int(self.times.size)

    @property
    def n_actuators(self) -> int:
        return len(self.names)

    @property
    def duration(self) -> float:
        """Time from first to last sample [s]."""
        return float(self.times[-1] - self.times[0])

    @property
    def rate_hz(self) -> float | None:
        """The sample rate [Hz] if the times are uniform (relative jitter < 1e-6), else None."""
        if self.n_frames < 2:
            return None
        steps = np.diff(self.times)
        period = (self.times[-1] - self.times[0]) / (self.n_frames - 1)
        if np.max(np.abs(steps - period)) > 1e-6 * period:
            return None
        rate = 1.0 / period
        nearest = round(rate)
        return float(nearest) if abs(rate - nearest) < 1e-6 * rate else float(rate)

    def index(self, name: str) -> int:
        """Column of actuator ``name``."""
        try:
            return self.names.index(name)
        except ValueError:
            raise CurvesError(did_you_mean("actuator", name, self.names)) from None

    def column(self, name: str) -> np.ndarray:
        """(F,) values of actuator ``name`` [its unit]."""
        return self.values[:, self.index(name)]

    def is_angle(self) -> np.ndarray:
        """(A,) bool, True where the unit is "rad"."""
        return np.array([u == "rad" for u in self.units], bool)

    # ----------------------------------------------------------------- derivatives
    def spline(self) -> CubicSpline:
        """The interpolating not-a-knot cubic spline through all samples (vector-valued)."""
        if self.n_frames < 2:
            raise CurvesError("a spline needs at least two frames")
        try:
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                return CubicSpline(self.times, self.values, axis=0, bc_type="not-a-knot")
        except ValueError as exc:  # scipy refuses slopes that overflow
            raise CurvesError(
                f"cannot fit a spline through the curves (values up to {np.max(np.abs(self.values)):.3g}, "
                f"frames {np.min(np.diff(self.times)):.3g} s apart): {exc}"
            ) from None

    def derivative(self, order: int, method: str = "spline") -> np.ndarray:
        """(F, A) ``order``-th time derivative (1 or 2) at the samples [unit/s^order].

        method: "spline" or "central" (see the module docstring). A single
        frame has zero derivatives.
        """
        if method not in DERIVATIVE_METHODS:
            raise CurvesError(did_you_mean("derivative method", method, DERIVATIVE_METHODS))
        if order not in (1, 2):
            raise CurvesError(f"derivative order must be 1 or 2, got {order}")
        if self.n_frames < 2:
            return np.zeros_like(self.values)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            if method == "spline":
                out = self.spline()(self.times, order)
            elif order == 1:
                edge = 2 if self.n_frames > 2 else 1
                out = np.gradient(self.values, self.times, axis=0, edge_order=edge)
            else:
                out = _second_difference(self.times, self.values)
        bad = ~np.isfinite(out)
        if bad.any():
            f, a = (int(i) for i in np.argwhere(bad)[0])
            what = "velocity" if order == 1 else "acceleration"
            raise CurvesError(
                f"actuator {self.names[a]!r}: the {what} at t={self.times[f]:.6g} s is too large to "
                f"compute (values up to {np.max(np.abs(self.values[:, a])):.3g} {self.units[a]}, "
                f"frames {np.min(np.diff(self.times)):.3g} s apart)"
            )
        return out

    def velocities(self, method: str = "spline") -> np.ndarray:
        """(F, A) velocities [rad/s or m/s]."""
        return self.derivative(1, method)

    def accelerations(self, method: str = "spline") -> np.ndarray:
        """(F, A) accelerations [rad/s^2 or m/s^2]."""
        return self.derivative(2, method)


def uniform_times(n_frames: int, rate_hz: float, start_time: float = 0.0) -> np.ndarray:
    """(n_frames,) times ``start_time + f / rate_hz`` [s]."""
    rate = float(rate_hz)
    if not np.isfinite(rate) or rate <= 0:
        raise CurvesError(f"rate must be a positive number of frames per second, got {rate_hz}")
    if n_frames < 1:
        raise CurvesError("curves need at least one frame")
    return float(start_time) + np.arange(n_frames) / rate


def _second_difference(t: np.ndarray, x: np.ndarray) -> np.ndarray:
    """(F, A) second derivative on non-uniform times.

    Inside: the three-point second difference (exact for cubics on uniform
    times). Ends: the second derivative of the cubic through the four end
    samples (exact for cubics); with three frames the one parabola's.
    """
    if t.size < 3:
        return np.zeros_like(x)
    h0 = (t[1:-1] - t[:-2])[:, None]
    h1 = (t[2:] - t[1:-1])[:, None]
    inner = 2.0 * (h0 * x[2:] - (h0 + h1) * x[1:-1] + h1 * x[:-2]) / (h0 * h1 * (h0 + h1))
    if t.size < 4:
        return np.concatenate([inner[:1], inner, inner[-1:]], axis=0)
    first = _end_weights(t[:4], t[0]) @ x[:4]
    last = _end_weights(t[-4:], t[-1]) @ x[-4:]
    return np.concatenate([first[None], inner, last[None]], axis=0)


def _end_weights(t4: np.ndarray, at: float) -> np.ndarray:
    """(4,) weights w with sum w_i p(t_i) = p''(at) for every cubic p."""
    s = (t4 - at) / (t4[-1] - t4[0])  # scaled for conditioning
    V = np.vander(s, 4, increasing=True)  # V[i, k] = s_i^k
    w = np.linalg.solve(V.T, np.array([0.0, 0.0, 2.0, 0.0]))
    return w / (t4[-1] - t4[0]) ** 2


# --------------------------------------------------------------------------- limit checks
@dataclass(frozen=True)
class LimitCheckSettings:
    """How :func:`check_limits` tests curves.

    derivative: "spline" or "central" (see the module docstring).
    quantities: which of "position", "velocity", "acceleration" to check.
    rtol: a sample violates a bound only if it exceeds it by more than
    ``rtol * max(1, |bound|)`` (in the bound's unit), which absorbs rounding
    noise of curves that touch a limit exactly.
    """

    derivative: str = "spline"
    quantities: tuple[str, ...] = QUANTITIES
    rtol: float = 1e-9

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
        rates["velocity"] = (curves.velocities(settings.derivative), curves.velocity_limit, 1)
    if "acceleration" in settings.quantities:
        rates["acceleration"] = (
            curves.accelerations(settings.derivative),
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


def summarize_violations(violations: Sequence[Violation], first: int = 3) -> str:
    """One line: the ``first`` violations, then "and N more" (for error messages)."""
    parts = [v.describe() for v in violations[:first]]
    if len(violations) > first:
        parts.append(f"and {len(violations) - first} more")
    return "; ".join(parts)


def format_violations(violations: Sequence[Violation], max_lines: int = 20) -> str:
    """Multi-line listing of violations, at most ``max_lines`` (then a count of the rest)."""
    lines = [v.describe() for v in violations[:max_lines]]
    if len(violations) > max_lines:
        lines.append(f"... and {len(violations) - max_lines} more")
    return "\n".join(lines)


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


# --------------------------------------------------------------------------- resampling
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
    derivative: str = "spline"
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
    derivative: str = "spline",
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
