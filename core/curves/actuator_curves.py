"""Actuator curves: values over time and their derivatives.

An :class:`ActuatorCurves` holds one curve per actuator, sampled at shared
times, in SI units of the actuator's coordinate (an angle [rad] or a
displacement [m]), together with the actuator's limits and hardware id. It is
what the retargeting loop produces and what every hardware export consumes.

Derivatives
    ``"central"`` (default, :data:`DERIVATIVE`): three-point finite differences
    (second-order one-sided at the ends; ``np.gradient`` with ``edge_order=2``)
    for velocity, exact for quadratics, and the three-point second difference
    for acceleration (at the ends, the second derivative of the cubic through
    the four end samples), exact for quadratics. A servo streamed sample by
    sample moves between samples at their difference quotients: a central
    velocity is the mean of the two around a sample, so curves whose every
    difference keeps a speed limit keep it here too, which the space-time solve
    (:mod:`..solvers.spacetime`) makes exact for every limit.
    ``"spline"``: the derivative of the interpolating cubic spline with
    not-a-knot end conditions (:class:`scipy.interpolate.CubicSpline`). It passes
    through every sample (no smoothing), is exact for cubics, and its velocity
    error is O(h^3), its acceleration error O(h^2); resampling uses the same
    spline. Near a kink its derivative at a sample can exceed every difference
    quotient around it. Both handle non-uniform times.

Limit checks, limit records and resampling
    :mod:`looprig.core.curves.limit_checks` tests the samples against the limits;
    :mod:`looprig.core.curves.violations` records each broken interval;
    :mod:`looprig.core.curves.resample` resamples to a device rate without hiding
    what the source broke.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import numpy as np
from scipy.interpolate import CubicSpline

from ..errors import CurvesError, did_you_mean
from ..model.mechanism import Mechanism
from ..model.parts import Actuator
from ..model.readoff import unwrap_sequence
from .violations import (
    Violation,
)

#: Units of an actuator coordinate: angle or displacement.
UNITS = ("rad", "m")
DERIVATIVE_METHODS = ("spline", "central")
#: How velocities and accelerations are taken, and limits checked, unless asked otherwise.
DERIVATIVE = "central"


def derivative_unit(unit: str, order: int) -> str:
    """Unit of the ``order``-th time derivative of a coordinate in ``unit`` ("rad/s^2")."""
    return unit if order == 0 else unit + "/s" if order == 1 else f"{unit}/s^{order}"


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
        frame by frame (:func:`looprig.core.model.readoff.unwrap_sequence`) so a
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
        actuators = {j.actuator_name: j.actuator for j in mechanism.actuated_joints}
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

    def derivative(self, order: int, method: str = DERIVATIVE, cyclic: bool = False) -> np.ndarray:
        """(F, A) ``order``-th time derivative (1 or 2) at the samples [unit/s^order].

        method: "spline" or "central" (see the module docstring). A single
        frame has zero derivatives. cyclic: the curves played in a loop, the first
        sample one period after the last (uniform times only): the central
        differences wrap around at both ends.
        """
        if method not in DERIVATIVE_METHODS:
            raise CurvesError(did_you_mean("derivative method", method, DERIVATIVE_METHODS))
        if order not in (1, 2):
            raise CurvesError(f"derivative order must be 1 or 2, got {order}")
        if cyclic and (method != "central" or self.rate_hz is None):
            raise CurvesError(
                "curves played in a loop are checked by central differences on uniform times "
                f"(method {method!r}, {'uniform' if self.rate_hz else 'non-uniform'} times)"
            )
        if self.n_frames < 2:
            return np.zeros_like(self.values)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            if cyclic:
                after, before = np.roll(self.values, -1, axis=0), np.roll(self.values, 1, axis=0)
                rate = float(self.n_frames - 1) / self.duration
                if order == 1:
                    out = (after - before) * (0.5 * rate)
                else:
                    out = (after - 2.0 * self.values + before) * rate**2
            elif method == "spline":
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

    def velocities(self, method: str = DERIVATIVE) -> np.ndarray:
        """(F, A) velocities [rad/s or m/s]."""
        return self.derivative(1, method)

    def accelerations(self, method: str = DERIVATIVE) -> np.ndarray:
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
