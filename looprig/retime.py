"""Timing ``stretch``: the solved path retimed under the motors' limits (TOPP-RA), then
the clip solved again along the new timing.

:func:`retarget_timed` is what the command line, batch jobs and the Blender add-on
call: with timing ``keep`` it is :func:`looprig.core.retarget.retarget`; with
``stretch`` it solves the clip exactly (``limit_mode`` report), asks TOPP-RA
(``toppra``, the ``retime`` extra) for the fastest path speed that keeps every
motor's speed and acceleration limit, capped at the clip's own speed (so the clip
is slowed only where a limit binds), cuts the clip at the pins
(:mod:`looprig.core.tracks.retime`), samples the tracks along the new timing and solves
them again with the mapping's ``limit_mode`` (by default every limit held: what
retiming cannot mend, a range or a stretch that cannot be slowed, the space-time
solve holds). docs/retarget.md says why toppra was taken.
"""

import dataclasses
import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .core import LooprigError
from .core.curves.actuator_curves import ActuatorCurves
from .core.curves.limit_checks import all_violations
from .core.retarget import RetargetResult, TrackSamples, retarget
from .core.tracks.retime import RetimeError, Retiming, SpeedProfile, plan_retiming

#: TOPP-RA keeps each motor within this fraction of its speed and acceleration
#: limits: the clip solved again along the new timing follows the path to the IK's
#: tolerance and its differences at the solve rate differ slightly from the path's
#: derivatives; the space-time solve holds whatever is left.
LIMIT_MARGIN = 0.95
#: Most path acceleration |d^2(clip time)/d(new time)^2| [1/s]: the playing speed
#: changes smoothly even where no motor moves (where TOPP-RA has nothing to bound it).
MAX_PATH_ACCELERATION = 20.0
#: Gridpoints of TOPP-RA: at most this many per second of clip (the solved samples,
#: thinned); the limits hold at the gridpoints.
GRID_RATE = 300.0
#: A limit TOPP-RA takes for an unlimited motor [rad | m per s, per s^2].
UNLIMITED = 1e9


def _toppra():
    try:
        import toppra
    except ImportError:
        raise LooprigError("timing 'stretch' needs toppra: pip install 'looprig[retime]'") from None
    logging.getLogger("toppra").setLevel(logging.ERROR)  # its warnings on an infeasible trial are expected
    return toppra


class PathTiming:
    """The solved path of a clip as TOPP-RA sees it: the motors (F, A) at their clip
    times (F,) [s], plus the clip time itself as a last coordinate, whose velocity
    limit is the path-speed cap and whose acceleration limit
    :data:`MAX_PATH_ACCELERATION`."""

    def __init__(self, curves: ActuatorCurves, margin: float = LIMIT_MARGIN):
        self.toppra = _toppra()
        self.times = np.asarray(curves.times, float)
        coordinates = np.column_stack([curves.values, self.times])
        self.path = self.toppra.SplineInterpolator(self.times, coordinates)
        self.velocity = margin * np.minimum(np.asarray(curves.velocity_limit, float), UNLIMITED)
        self.acceleration = margin * np.minimum(np.asarray(curves.acceleration_limit, float), UNLIMITED)
        step = max(1, round(1.0 / (GRID_RATE * float(np.median(np.diff(self.times))))))
        self.grid = self.times[::step]

    def _gridpoints(self, start: float, end: float) -> np.ndarray:
        inside = self.grid[(self.grid > start + 1e-12) & (self.grid < end - 1e-12)]
        return np.concatenate([[start], inside, [end]])

    def profile(self, start, end, cap, speed_start, speed_end) -> SpeedProfile | None:
        """The fastest path speed over clip times [start, end] [s], at most ``cap``,
        from ``speed_start`` to ``speed_end`` (:data:`~looprig.core.tracks.retime.ProfileSolver`)."""
        ta = self.toppra
        velocity = np.append(self.velocity, cap)
        acceleration = np.append(self.acceleration, MAX_PATH_ACCELERATION)
        constraints = [
            ta.constraint.JointVelocityConstraint(np.column_stack([-velocity, velocity])),
            ta.constraint.JointAccelerationConstraint(np.column_stack([-acceleration, acceleration])),
        ]
        grid = self._gridpoints(start, end)
        path = _window(self.path, start, end)
        solver = ta.algorithm.TOPPRA(constraints, path, gridpoints=grid, solver_wrapper="seidel")
        speed_end = self._controllable_end(solver, speed_end)
        _, speed, _, K = solver.compute_parameterization(speed_start, speed_end, return_data=True)
        if speed is None and np.all(np.isfinite(K)) and speed_start**2 > K[0, 1]:
            # too fast to brake in time for what follows: start as fast as still controllable
            # (at the clip's start nothing precedes; at a pin the space-time solve mends the jump)
            _, speed, _ = solver.compute_parameterization(np.sqrt(max(K[0, 1], 0.0)) * (1 - 1e-9), speed_end)
        if speed is None or not np.all(np.isfinite(speed)):
            return None
        speed = np.maximum(speed, 0.0)
        if np.any(speed[1:-1] <= 0.0):
            return None
        return SpeedProfile(grid, speed)

    @staticmethod
    def _controllable_end(solver, speed_end: float, steps: int = 16) -> float:
        """``speed_end``, or the fastest end speed from which the stretch is controllable
        (bisection): a path that cannot speed up in time to end as fast as it could
        stand ends slower (the next stretch then starts so)."""
        if np.all(np.isfinite(solver.compute_controllable_sets(speed_end, speed_end))):
            return speed_end
        low, high = 0.0, speed_end
        for _ in range(steps):
            middle = 0.5 * (low + high)
            if np.all(np.isfinite(solver.compute_controllable_sets(middle, middle))):
                low = middle
            else:
                high = middle
        return low

    def speed_at(self, t: float) -> float:
        """The most path speed the limits allow at clip time t [s] with no path
        acceleration (speed below every velocity limit, curvature term below every
        acceleration limit); at most 1."""
        d1 = np.abs(self.path(np.array([t]), 1)[0, :-1])
        d2 = np.abs(self.path(np.array([t]), 2)[0, :-1])
        with np.errstate(divide="ignore"):
            speeds = np.concatenate([self.velocity / d1, np.sqrt(self.acceleration / d2), [1.0]])
        return float(np.min(speeds))


def _window(path, start: float, end: float):
    """``path`` (a toppra path) between path positions ``start`` and ``end``: TOPP-RA
    parametrises a whole path, and a stretch's ends (pins) need not be samples."""
    base = _toppra().interpolator.AbstractGeometricPath

    class Window(base):
        def __call__(self, positions, order=0):
            return path(positions, order)

        @property
        def dof(self):
            return path.dof

        @property
        def path_interval(self):
            return np.array([start, end])

    return Window()


def retime(curves: ActuatorCurves, pins: Sequence[float] = ()) -> Retiming:
    """The new timing of the path ``curves`` (motors (F, A) at their clip times [s]) with
    ``pins`` [s] (:func:`looprig.core.tracks.retime.plan_retiming`)."""
    path = PathTiming(curves)
    start, end = float(curves.times[0]), float(curves.times[-1])
    return plan_retiming(start, end, pins, path.profile, path.speed_at, curves.rate_hz)


@dataclass
class Timed:
    """What :func:`solve_timed` solved: the result, and the tracks it solved (the clip's,
    or the clip's along its new timing, at the result's times)."""

    result: RetargetResult
    samples: TrackSamples


def solve_timed(
    mechanism,
    samples: TrackSamples,
    mapping,
    pins: Sequence[float] = (),
    initial_state=None,
    settings=None,
    progress=None,
    cancel=None,
) -> Timed:
    """:func:`~looprig.core.retarget.retarget` with the mapping's ``timing``: ``keep``
    solves the clip as timed; ``stretch`` retimes it with ``pins`` (clip times [s],
    :func:`looprig.core.tracks.retime.pin_times` for frame numbers) kept at their times (see
    the module docstring). The result's ``retiming`` lists each stretch's time factor
    (:meth:`~looprig.core.tracks.retime.Retiming.to_dict`); its times are the new ones."""
    if mapping.timing == "keep":
        if len(pins):
            raise RetimeError("pins keep frames at their times when timing is 'stretch'; timing is 'keep'")
        return Timed(
            retarget(mechanism, samples, mapping, initial_state, settings, progress, cancel), samples
        )
    exact = retarget(
        mechanism,
        samples,
        dataclasses.replace(mapping, limit_mode="report"),
        initial_state,
        settings,
        progress,
        cancel,
    )
    plan = retime(exact.curves, pins)
    if plan.is_identity and (mapping.limit_mode == "report" or not all_violations(exact.curves)):
        exact.mapping = dataclasses.replace(exact.mapping, limit_mode=mapping.limit_mode)
        timed = Timed(exact, samples)
    else:
        retimed = plan.samples(samples, mapping.rate)
        result = retarget(mechanism, retimed, mapping, initial_state, settings, progress, cancel)
        timed = Timed(result, retimed)
    timed.result.retiming = plan.to_dict()
    return timed


def retarget_timed(mechanism, samples, mapping, pins: Sequence[float] = (), **options) -> RetargetResult:
    """The result of :func:`solve_timed` (``options``: its initial_state, settings,
    progress and cancel)."""
    return solve_timed(mechanism, samples, mapping, pins, **options).result


def retiming_lines(retiming: dict | None) -> list[str]:
    """One line per stretch of a result's ``retiming`` (:meth:`Retiming.to_dict`) for
    people: ``stretch 2.000-3.000 s -> 2.000-3.106 s: time x1.106 (slowed to 0.57)``."""
    if not retiming:
        return []
    lines = [
        f"retimed {retiming['original_duration_s']:.3f} s -> {retiming['duration_s']:.3f} s, "
        f"pins at {', '.join(f'{p:.3f}' for p in retiming['pins_s']) or 'none'} s"
    ]
    for s in retiming["stretches"]:
        how = []
        if s["slowest"] < 1.0 - 1e-6:
            how.append(f"slowed to {s['slowest']:.2f}")
        if s["catch_up"] > 1.0:
            how.append(f"caught up at {s['catch_up']:.2f}")
        if s["held_in_space"]:
            how.append("too fast to catch up before its pin: timing kept, limits held in space")
        span = f"{s['start_s']:.3f}-{s['end_s']:.3f} s -> {s['new_start_s']:.3f}-{s['new_end_s']:.3f} s"
        note = f" ({', '.join(how)})" if how else ""
        lines.append(f"stretch {span}: time x{s['time_factor']:.3f}{note}")
    return lines
