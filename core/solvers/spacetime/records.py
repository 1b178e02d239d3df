"""What a space-time solve is asked and what it answers: the clip of F frames and A
motors (:class:`SpaceTimeClip`: states (F, n, 7), motors (F, A) [rad | m]) that
:func:`~.solve.solve_spacetime` and :func:`~.windows.hold_limits` keep within its motor
limits, their tolerances (:class:`SpaceTimeSettings`) and their outcome
(:class:`SpaceTimeSolution`), which :func:`~.windows.hold_limits` splices back into the
whole clip.
"""

import dataclasses
from dataclasses import dataclass

import numpy as np

from ...terms import Targets
from ...terms.limits import ActuatorLimits
from ..ik import IKProblem


@dataclass(frozen=True, eq=False)
class SpaceTimeClip:
    """A clip to keep within its motor limits.

    problem: the IK problem of every frame; targets: batched to F frames; states
    (F, n, 7): assembled, their motors reading actuators (F, A) unwrapped [rad | m]
    (typically the unlimited clip solver's answer); rate: frames per second [Hz];
    limits: the limits held (None: the problem's actuators', :attr:`motor_limits`).
    """

    problem: IKProblem
    targets: Targets
    states: np.ndarray
    actuators: np.ndarray
    rate: float
    limits: ActuatorLimits | None = None

    @property
    def motor_limits(self) -> ActuatorLimits:
        """The limits held: :attr:`limits`, else the problem's actuators'."""
        return self.limits or self.problem.actuator_limits

    def take(self, frames) -> "SpaceTimeClip":
        """The clip of some of its frames (an index array over F), at the same rate."""
        return dataclasses.replace(
            self,
            targets=self.targets.take(frames),
            states=self.states[frames],
            actuators=self.actuators[frames],
        )


@dataclass(frozen=True)
class SpaceTimeSettings:
    """Tolerances of :func:`~.solve.solve_spacetime`.

    limit_tolerance: the interior point's tolerance on stationarity, complementarity and
    how far a limit row may end outside its bound, relative to the bound's size (a speed
    limit's ``v / rate``); max_iterations: interior-point iterations of a stage;
    initial_slack, initial_barrier: the least slack of a limit row at the start and the
    start's barrier parameter (slack times multiplier); coarse_rate: the least rate [Hz]
    of the coarse clip that starts a long one (:func:`~.starts.coarse_stride`; infinite: none);
    warm_barrier: the barrier parameter the whole clip starts with from the coarse
    answer; margin: how far inside its limits a changed clip is held, relative to each
    (a range to its span): curves stored as 32-bit floats (Blender's keys) at up to 60
    frames a second then still pass the check, which a motor riding exactly at its
    speed limit did not (4.0000019 rad/s of 4 read back from the keys).
    """

    limit_tolerance: float = 1e-9
    margin: float = 1e-4
    max_iterations: int = 200
    max_backtracks: int = 30
    initial_slack: float = 1.0
    initial_barrier: float = 1e-1
    initial_damping: float = 1e-4
    coarse_rate: float = 60.0
    warm_barrier: float = 1e-6


@dataclass
class SpaceTimeSolution:
    """Outcome of :func:`~.solve.solve_spacetime` for F frames and A motors.

    states (F, n, 7); actuators (F, A) [rad | m] unwrapped; objective: the summed
    tracking cost; binding (F, A) str: the limit that holds each motor at each frame
    ("" where none: ``position``, ``velocity`` or ``acceleration``); residual (F,) max
    |C| [m]; iterations: interior-point iterations, every start counted; converged:
    tolerances met; start: which start gave it (:func:`~.starts.rewound_start`): "exact"
    (the given curves) or "rewound" (their turns through a singularity taken the other
    way round); changed: from :func:`~.windows.hold_limits`, the frames it solved again
    (the others are the exact answer; ``residual`` is zero there).
    """

    states: np.ndarray
    actuators: np.ndarray
    objective: float
    binding: np.ndarray
    residual: np.ndarray
    iterations: int
    converged: bool
    start: str = "exact"
    changed: np.ndarray | None = None  # (F,) bool: the frames solved again (hold_limits)
    travelled: np.ndarray | None = None  # (F, D): the joint coordinates' steps summed from the start
    multipliers: list | None = None  # per limit-row family (limit_rows): (K, R) at the end
