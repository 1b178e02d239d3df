"""Motor speed limits between consecutive frames, held exactly (beyond the paper).

The paper bounds body angular velocities with a cubic barrier (eq. 4-5). Near a
gimbal singularity that bounds the wrong thing: the bodies can turn slowly while
two motors whose axes nearly coincide spin fast in opposite directions, and a
weight strong enough to stop them biases every other frame. The limit lives on
the motors, so it is held there, between each frame and the previous one::

    min_s  f_IK(s)   s.t.  C_IK(s) = 0,  |p_a(s) - p_a,prev| <= h_a,  h_a = k v_a / rate

(p: motor values [rad | m]; v_a: motor a's velocity limit; k: ``limit_fraction``).
This is the limit of a log barrier whose weight goes to zero, solved by an
active set instead: each frame is first solved without the bound; where that
answer keeps every motor within it, it stands unchanged, so the bound changes
nothing on motion that respects it. Otherwise the motors that break it are
locked at the bound towards that answer (a :class:`~looprig.core.terms.MotorLock`,
an equality held like the joints) and the frame is solved again, so the other
motors make up what they can: the least tracking error within the bound. Motors
that this pushes over their own bound are locked too (at most one round per
motor). A locked motor then catches up with the motion at its bound and brakes
before it arrives (``CATCH_UP_BRAKING``), after which the curve follows the
motion exactly again.

Why not a log barrier term: one of weight mu biases every frame by O(mu), and a
small mu needs a continuation and a line search that never steps past the
barrier; the active set gives the mu -> 0 answer with the solver as it is.
"""

import dataclasses
from dataclasses import dataclass

import numpy as np

from .ik import IKProblem, IKResult, IKTargets, solve_ik
from .terms import MotorLock

#: A motor breaks its bound only if it moves more than the bound by this fraction:
#: a clamped motor moves by the bound to the solver's tolerance.
SPEED_TOLERANCE = 1e-6
#: A stretch re-solved under the bound rejoins an answer solved without it once every
#: motor is within this of it [rad | m] (both meet the targets to the solver's tolerance).
REJOIN_TOLERANCE = 1e-8
#: While a clamped motor catches up with the motion, its speed relative to the
#: motion changes by at most this fraction of its bound per frame (it brakes
#: before it arrives): a sudden stop at the bound would make the curve's cubic
#: spline, which the limit checks and the resampling use, overshoot the bound.
CATCH_UP_BRAKING = 0.25
#: Frames the braking adds at most to a catch-up: a lag of 2 h closes in 3 frames
#: with CATCH_UP_BRAKING = 1/4 (sqrt(2 b L) >= h above that), one more for rounding.
BRAKING_FRAMES = 4


def frames_behind(values: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """(F,) bool: the frames a speed bound can touch, predicted from curves ``values``
    (F, A) [rad | m] solved without it and the bound ``steps`` (A,) [rad | m per frame].

    Each motor is followed at most h per frame; its lag L (how far behind the curve
    it is) obeys ``L_k = W_k - clip(W_k, -h, h)`` with ``W_k = L_k-1 + values_k -
    values_k-1``. Frames where a motor is behind, or would be moved by more than h,
    and ``BRAKING_FRAMES`` after each, are the ones the bound may change.
    """
    values = np.asarray(values, dtype=float)
    lag = np.zeros(values.shape[1:])
    behind = np.zeros(len(values), bool)
    for k in range(1, len(values)):
        wanted = lag + values[k] - values[k - 1]
        lag = wanted - np.clip(wanted, -steps, steps)
        behind[k] = bool((np.abs(lag) > 1e-12).any() or (np.abs(wanted) > steps).any())
    affected = behind.copy()
    for k in np.flatnonzero(behind):
        affected[k : k + BRAKING_FRAMES + 1] = True
    return affected


@dataclass
class SpeedLimitedSolve:
    """Per-frame IK of ``problem`` that keeps every motor within ``fraction`` of its
    velocity limit at ``rate`` [Hz] between consecutive frames (see the module
    docstring). One per clip, called frame after frame: it remembers which motors
    are catching up. The clamped problems are built once per set of clamped motors.
    """

    problem: IKProblem
    rate: float
    fraction: float

    def __post_init__(self):
        limits = self.problem.actuator_limits
        self.steps = self.fraction * limits.velocity / self.rate  # (A,) [rad | m] per frame; inf: unlimited
        self._braking = CATCH_UP_BRAKING * np.where(np.isfinite(self.steps), self.steps, 0.0)  # (A,)
        self._clamped: dict[tuple, tuple[IKProblem, MotorLock]] = {}
        self._free = None  # the previous frame's unclamped motor values (A,)
        self._catching_up = np.zeros(len(self.steps), bool)  # (A,) clamped at the previous frame

    @property
    def catching_up(self) -> np.ndarray:
        """(A,) bool: the motors clamped at the last frame solved (still catching up)."""
        return self._catching_up.copy()

    def reset(self) -> None:
        """Forget the last frame: the next one starts with no motor catching up."""
        self._free = None
        self._catching_up[:] = False

    def _with_clamps(self, values: dict[int, float]) -> IKProblem:
        """``problem`` with the motors of ``values`` (motor -> value [rad | m]) locked there."""
        motors = tuple(sorted(values))
        if motors not in self._clamped:
            lock = MotorLock(
                self.problem.readout, motors, np.zeros(len(motors)), self.problem.constraints.length_scale
            )
            self._clamped[motors] = (
                dataclasses.replace(self.problem, terms=(*self.problem.terms, lock)),
                lock,
            )
        problem, lock = self._clamped[motors]
        lock.values = np.array([values[m] for m in motors])  # this frame's values: one problem per motor set
        return problem

    def _wanted(self, free: np.ndarray, previous: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each motor's step towards the unclamped answer ``free`` (A,) from ``previous``
        (A,) [rad | m] within its bound, and which motors must be clamped at it (A,) bool.

        A motor that was not catching up is clamped only if its unclamped step breaks
        the bound. One that was (L behind the motion at the previous frame) moves with
        the motion plus at most ``sqrt(2 b |L|)`` towards it per frame (b:
        ``CATCH_UP_BRAKING`` times its bound) and is released once its step is the
        unclamped one.
        """
        step = free - previous
        wanted = np.clip(step, -self.steps, self.steps)
        clamp = np.abs(step) > self.steps * (1.0 + SPEED_TOLERANCE)
        if self._free is not None and self._catching_up.any():
            # how far the motion moved since the previous frame, as far as a motor can follow
            motion = np.clip(free - self._free, -self.steps, self.steps)
            lag = self._free - previous
            closing = np.sign(lag) * np.minimum(np.abs(lag), np.sqrt(2.0 * self._braking * np.abs(lag)))
            braked = np.clip(motion + closing, -self.steps, self.steps)
            catching = self._catching_up & (np.abs(braked - step) > self.steps * SPEED_TOLERANCE)
            wanted = np.where(catching, braked, wanted)
            clamp |= catching
        return wanted, clamp

    def solve(
        self,
        targets: IKTargets,
        previous_state: np.ndarray,
        previous_actuators: np.ndarray,
        previous_velocities: np.ndarray | None = None,
    ) -> tuple[IKResult, np.ndarray]:
        """One frame from the previous one (state (n, 7), motor values (A,) [rad | m],
        velocities (A,) or None): the IK result and the clamped motors (indices)."""

        def solve(problem):
            return solve_ik(
                problem,
                targets,
                previous_state,
                previous_actuators=previous_actuators,
                previous_velocities=previous_velocities,
            )

        result = solve(self.problem)
        free = result.actuators
        wanted, over = self._wanted(free, previous_actuators)
        clamped: dict[int, float] = {}
        for _ in range(len(self.steps)):
            if not over.any():
                break
            clamped.update({int(m): float(previous_actuators[m] + wanted[m]) for m in np.flatnonzero(over)})
            result = solve(self._with_clamps(clamped))
            # motors left free that now break their bound (making up for the clamped
            # ones) are clamped at their own unclamped step's bound
            over = np.abs(result.actuators - previous_actuators) > self.steps * (1.0 + SPEED_TOLERANCE)
            over[list(clamped)] = False
        self._free = free
        self._catching_up[:] = False
        self._catching_up[list(clamped)] = True
        return result, np.array(sorted(clamped), dtype=int)
