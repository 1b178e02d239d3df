"""Report: a solved retarget as its result: curves, errors, the frames limits bound and
the frames no solve could meet."""

from dataclasses import dataclass, field

import numpy as np

from ..curves.actuator_curves import ActuatorCurves
from ..curves.limit_checks import LimitCheckSettings, all_violations
from ..model.filevalues import limit_to_file
from ..solvers.holding import Holding
from .aims import aim_errors, warn_near_aims
from .mapping import RetargetMapping
from .problem import RetargetProblem
from .solve import FrameErrors, FrameResults


@dataclass
class RetargetResult(FrameErrors):
    """Per-frame outcome of :func:`retarget`: the errors of
    :class:`~looprig.core.retarget.solve.FrameErrors`, and

    times (F,) [s]; states (F, n, 7); curves: the actuator curves (unwrapped);
    unreachable (F,) bool;
    aim_error (F, M) [rad]: per aim the angle between its axis and the line of sight
    (aim_names: their frames); aim_miss (F, M) [m]: how far the aim ray passes from the
    point (what ``reach_tolerance`` judges, as it does the position errors).
    """

    mapping: RetargetMapping
    times: np.ndarray
    states: np.ndarray
    curves: ActuatorCurves
    unreachable: np.ndarray
    target_names: list[str] = field(default_factory=list)
    holding: Holding | None = None  # the motors held because the clip does not need them
    binding: np.ndarray | None = None  # (F, A) str: the limit holding each motor ("" none), limit_mode hold
    limited: np.ndarray | None = None  # (F,) bool: frames whose targets met exactly only past a motor limit
    limit_solve: dict | None = None  # the space-time solve's start, iterations, convergence, released motors
    aim_error: np.ndarray | None = None  # (F, M) [rad]
    aim_miss: np.ndarray | None = None  # (F, M) [m]
    aim_names: list[str] = field(default_factory=list)
    retiming: dict | None = None  # timing "stretch": each stretch's time factor (looprig.retime)

    def limited_by(self) -> dict[str, dict[str, int]]:
        """Per motor, the limits that bind it (``binding``) and on how many limited frames:
        ``{"elbow": {"velocity": 120, "acceleration": 40}}``; empty without a limited frame."""
        if self.binding is None or self.limited is None or not self.limited.any():
            return {}
        out = {}
        for a, name in enumerate(self.curves.names):
            kinds, counts = np.unique(self.binding[self.limited, a], return_counts=True)
            found = {str(k): int(c) for k, c in zip(kinds, counts, strict=True) if k}
            if found:
                out[name] = found
        return out

    def summary(self) -> dict:
        """JSON-ready report: accuracy, per-actuator range, peak velocity, violations."""
        velocities = self.curves.velocities()
        violations = all_violations(self.curves, LimitCheckSettings(cyclic=self.mapping.cyclic))
        actuators = []
        for a, name in enumerate(self.curves.names):
            values = self.curves.values[:, a]
            actuators.append(
                {
                    "name": name,
                    "unit": self.curves.units[a],
                    "min": float(values.min()),
                    "max": float(values.max()),
                    "peak_velocity": float(np.abs(velocities[:, a]).max()),
                    "velocity_limit": limit_to_file(self.curves.velocity_limit[a]),
                    "violations": [v.to_dict() for v in violations if v.actuator == name],
                }
            )
        return {
            "frames": len(self.times),
            "rate_hz": self.mapping.rate,
            "duration_s": float(self.times[-1] - self.times[0]) if len(self.times) else 0.0,
            "max_residual": float(self.residual.max(initial=0.0)),
            "max_position_error_m": float(np.max(self.position_error, initial=0.0)),
            "mean_position_error_m": float(np.mean(self.position_error)) if self.position_error.size else 0.0,
            "max_orientation_error_rad": float(np.max(self.orientation_error, initial=0.0)),
            "max_aim_error_rad": None
            if self.aim_error is None
            else float(np.max(self.aim_error, initial=0.0)),
            "max_com_error_m": float(np.nanmax(self.com_error))
            if np.isfinite(self.com_error).any()
            else None,
            "unreachable_frames": int(self.unreachable.sum()),
            "limited_frames": 0 if self.limited is None else int(self.limited.sum()),
            "limited_by": self.limited_by(),
            "limit_mode": self.mapping.limit_mode,
            "limit_solve": self.limit_solve,
            "timing": self.mapping.timing,
            "retiming": self.retiming,
            "unconverged_frames": int((~self.converged).sum()),
            "iterations_mean": float(self.iterations.mean()) if len(self.iterations) else 0.0,
            "actuators": actuators,
            "held_motors": None if self.holding is None else self.holding.to_dict(),
        }


def report(problem: RetargetProblem, out: FrameResults) -> RetargetResult:
    """The :class:`RetargetResult` of ``problem`` solved into ``out``: the curves of the
    robot as given (welded bodies expanded), and per frame whether it was met, limited (a
    frame the exact answer met and the limited one misses is the limits' doing) or
    unreachable; with aims, their errors and a warning where a point comes near."""
    ik, mapping, targets, times = problem.frame_ik, problem.mapping, problem.targets, problem.samples.times
    curves = ActuatorCurves.from_mechanism(
        problem.robot, out.actuators, mapping.rate, float(times[0]), unwrap=False
    )
    limit_solve = out.limit_solve
    binding = None if limit_solve is None else limit_solve.pop("binding")
    missed = out.missed(ik, targets, mapping.reach_tolerance)
    aim_error = aim_miss = None
    if mapping.aims:
        aim_error, aim_miss = aim_errors(ik, out.states, targets)[:2]
        warn_near_aims(ik, mapping, out.states, targets, times)
    limited = missed & ~out.missed_exactly if binding is not None else np.zeros(problem.frames, bool)
    unreachable = missed & ~limited
    k = len(mapping.targets)
    return RetargetResult(
        mapping=problem.asked,
        times=times,
        states=problem.groups.expand(out.states),
        curves=curves,
        position_error=out.position_error[:, :k],
        orientation_error=out.orientation_error[:, :k],
        com_error=out.com_error,
        residual=out.residual,
        iterations=out.iterations,
        converged=out.converged,
        unreachable=unreachable,
        target_names=[t.frame for t in mapping.targets],
        holding=problem.holding,
        binding=binding,
        limited=limited,
        limit_solve=limit_solve,
        aim_error=aim_error,
        aim_miss=aim_miss,
        aim_names=[a.frame for a in mapping.aims],
    )
