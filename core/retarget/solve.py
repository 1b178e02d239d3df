"""Solve: every frame of a built retarget (:class:`~looprig.core.retarget.problem.RetargetProblem`).

The first frame is solved exactly from the clip's start (:mod:`~looprig.core.solvers.start`);
the others together (:mod:`~looprig.core.solvers.clip`), or one by one, each warm-started
from (and compared with) the previous one, when a term ties every frame to the previous
one (the acceleration cost, the paper's state regularizer). Under barriers between
frames that are zero inside their bounds, the stretches where the clip solver's answer
(solved without them) wakes a barrier are re-solved one by one. With ``limit_mode``
hold (the default), the windows around every motor limit that answer breaks are solved
again under all the limits (:mod:`~looprig.core.solvers.spacetime`). Every frame comes
out assembled.
"""

import dataclasses
import warnings
from dataclasses import dataclass

import numpy as np

from ..errors import LooprigError, LooprigWarning
from ..maths.linalg import single_threaded_blas
from ..maths.rotations import quat_to_matrix
from ..model.readoff import unwrap_sequence
from ..solvers.clip import (
    clip_starts,
    coarse_states,
    coupling_values,
    in_coordinates,
    solve_clip,
    solve_unconverged,
)
from ..solvers.ik import IKProblem, IKTargets, solve_ik
from ..solvers.sequence import frames_in_order
from ..solvers.spacetime.records import SpaceTimeClip
from ..solvers.spacetime.windows import hold_limits
from ..solvers.start import solve_first_frame
from ..solvers.tree import kinematics
from ..solvers.tree_forward import forward
from ..terms import Targets
from ..terms.limits import ActuatorLimits
from .aims import aim_errors, aim_term, homed_first, with_homing
from .problem import RetargetProblem

#: Frames solved by the clip solver between two progress reports and cancel checks: an
#: eighth of the clip, within these bounds (memory is bounded by the solver's blocks,
#: :data:`~looprig.core.solvers.clip.CLIP_BLOCK`).
CLIP_CHUNK = (32, 600)
#: A frame solved in sequence rejoins the clip solver's answer when every motor is
#: within this of it [rad | m].
REJOIN_TOLERANCE = 1e-8


class RetargetCancelled(LooprigError):
    """The caller's ``cancel`` callback asked to stop."""


@dataclass
class FrameErrors:
    """How well each of F frames met its targets: position_error, orientation_error (F, K)
    [m, rad]; com_error (F,) [m]; residual (F,) max |C| [m]; iterations (F,); converged
    (F,) bool."""

    position_error: np.ndarray
    orientation_error: np.ndarray
    com_error: np.ndarray
    residual: np.ndarray
    iterations: np.ndarray
    converged: np.ndarray


@dataclass
class FrameResults(FrameErrors):
    """A retarget's per-frame results as they are filled, F frames: the errors of
    :class:`FrameErrors`; states (F, n, 7); actuators (F, A) [rad | m]; missed_exactly
    (F,) bool: the frames the answer without motor limits misses; limit_solve: what the
    solve under the motor limits did (None: not needed)."""

    states: np.ndarray
    actuators: np.ndarray
    missed_exactly: np.ndarray | None = None
    limit_solve: dict | None = None

    @classmethod
    def empty(cls, frames: int, state: np.ndarray, actuators: int, targets: int) -> "FrameResults":
        return cls(
            position_error=np.empty((frames, targets)),
            orientation_error=np.empty((frames, targets)),
            com_error=np.full(frames, np.nan),
            residual=np.empty(frames),
            iterations=np.empty(frames, int),
            converged=np.empty(frames, bool),
            states=np.empty((frames,) + state.shape),
            actuators=np.empty((frames, actuators)),
        )

    def record(self, f: int, result) -> None:
        """Frame f from an :class:`~looprig.core.solvers.ik.IKResult`."""
        self.states[f], self.actuators[f] = result.state, result.actuators
        self.position_error[f], self.orientation_error[f] = result.position_error, result.orientation_error
        self.com_error[f], self.residual[f] = result.com_error, result.residual
        self.iterations[f], self.converged[f] = result.iterations, result.converged

    def read_motors(self, problem: IKProblem) -> None:
        """The motor values of every frame after the first read from its state, unwrapped
        along the clip from frame 0's (kept as solved)."""
        values = problem.readout.read(self.states)
        values[0] = self.actuators[0]
        self.actuators[:] = unwrap_sequence(values, problem.readout.is_angle)

    def measure(self, problem: IKProblem, targets: Targets, frames=slice(None)) -> None:
        """The tracking errors of ``frames`` and the CoM error of every frame, from the states."""
        R = quat_to_matrix(self.states[frames][..., 3:])
        errors = problem.frame_terms.tracking_errors(self.states[frames], R, targets.take(frames))
        self.position_error[frames], self.orientation_error[frames] = errors
        if problem.com_term is not None:
            diff = (problem.com_term.com(self.states) - targets.com) * (problem.com_term.weight > 0)
            self.com_error[:] = np.linalg.norm(diff, axis=-1)

    def missed(self, problem: IKProblem, targets: Targets, tolerance: float) -> np.ndarray:
        """(F,) bool: frames whose position error, or an aim's miss, exceeds ``tolerance`` [m]."""
        missed = np.max(self.position_error, axis=1, initial=0.0) > tolerance
        if aim_term(problem) is not None:
            missed |= aim_errors(problem, self.states, targets)[1].max(axis=1) > tolerance
        return missed


def solve_frames(problem: RetargetProblem, progress=None, cancel=None) -> FrameResults:
    """Every frame of ``problem`` (see the module docstring). progress(frame, total) is
    called every few frames; cancel() returning True raises :class:`RetargetCancelled`."""
    ik, mapping = problem.frame_ik, problem.mapping
    out = FrameResults.empty(
        problem.frames, problem.state, len(ik.readout.names), problem.targets.positions.shape[1]
    )
    with single_threaded_blas():
        _solve_first_frame(problem, out, progress)
        if problem.solves_whole_clip:
            _solve_whole_clip(problem, out, progress, cancel)
        elif problem.homing is None and not problem.couples_frames and in_coordinates(ik):
            _solve_in_coordinates(problem, out, progress, cancel)
        else:
            _solve_in_sequence(
                ik, problem.targets, mapping.rate, progress, cancel, out, homing=problem.homing
            )
    out.missed_exactly = out.missed(ik, problem.targets, mapping.reach_tolerance)
    if mapping.limit_mode == "hold":
        with single_threaded_blas():
            out.limit_solve = _hold_limits(problem, out)
        if out.limit_solve is not None:
            out.limit_solve["released"] = [m for m in mapping.hold if m not in problem.asked.hold]
    return out


def _solve_first_frame(problem: RetargetProblem, out: FrameResults, progress) -> None:
    """Frame 0, exactly from the clip's start (with aims, homed as the others are)."""
    t = problem.targets
    targets = IKTargets(t.positions[0], t.rotations[0], None if t.com is None else t.com[0])
    first_ik = problem.ik(first_frame=True)
    first = solve_first_frame(first_ik, targets, problem.state, problem.mapping.reach_tolerance)
    out.record(0, homed_first(first_ik, problem.mapping, targets, problem.state, first))
    if progress is not None:
        progress(1, problem.frames)


def _solve_whole_clip(problem: RetargetProblem, out: FrameResults, progress, cancel) -> None:
    """Frames 1.. together by the clip solver, in chunks from a coarse pass's interpolated
    states; terms between frames are left out and, where their barriers wake, the
    stretches mended one by one (:func:`_mend_clip`)."""
    ik, mapping, targets, times = problem.frame_ik, problem.mapping, problem.targets, problem.samples.times
    settings, frames = problem.settings, problem.frames
    clip_ik = ik  # without the barriers that compare frames, which mend it after
    if problem.couples_frames:
        clip_ik = problem.ik(dataclasses.replace(mapping, actuator_weight=0.0, velocity_weight=0.0))
    clip_homing = with_homing(clip_ik, mapping, problem.state)
    chunk_size = int(np.clip(frames // 8, *CLIP_CHUNK))
    coarse = coarse_states(clip_homing or clip_ik, times, targets, out.states[0], settings=settings)
    starts = clip_starts(times, *coarse)
    for start in range(1, frames, chunk_size):
        if cancel is not None and cancel():
            raise RetargetCancelled(f"retarget cancelled at frame {start} of {frames}")
        chunk = np.arange(start, min(start + chunk_size, frames))
        chunk_targets = targets.take(chunk)
        begin = starts[chunk]
        if clip_homing is not None:
            begin = solve_clip(clip_homing, chunk_targets, begin, settings=settings).states
        solution = solve_clip(clip_ik, chunk_targets, begin, settings=settings)
        solution = solve_unconverged(clip_ik, chunk_targets, solution, out.states[chunk[0] - 1])
        out.states[chunk] = solution.states
        out.residual[chunk], out.converged[chunk] = solution.residual, solution.converged
        out.iterations[chunk] = solution.iterations
        if progress is not None:
            progress(int(chunk[-1]) + 1, frames)
    out.read_motors(ik)
    out.measure(ik, targets)
    if problem.couples_frames:
        _mend_clip(ik, targets, mapping.rate, cancel, out, problem.homing)


def _solve_in_coordinates(problem: RetargetProblem, out: FrameResults, progress, cancel) -> None:
    """Frames 1.. one by one in tree coordinates, each from the one before
    (:func:`~looprig.core.solvers.sequence.frames_in_order`: the clip's Newton method at
    one frame), for a problem no term of which compares frames; fills ``out``."""
    ik, targets, frames = problem.frame_ik, problem.targets, problem.frames
    settings = problem.settings or ik.settings
    order = frames_in_order(ik, targets, np.arange(frames), out.states[0], settings, predict=True)
    known = []
    for f, (current, iterations, converged, residual) in enumerate(order):
        if cancel is not None and cancel():
            raise RetargetCancelled(f"retarget cancelled at frame {f} of {frames}")
        known.append(current)
        if f:
            out.iterations[f], out.converged[f], out.residual[f] = iterations, converged, residual
        if progress is not None and f and (f % 50 == 0 or f == frames - 1):
            progress(f + 1, frames)
    fw = forward(kinematics(ik))
    coordinates = tuple(np.stack(x, axis=-1) for x in zip(*known[1:], strict=True))
    if coordinates:
        out.states[1:] = fw.posed(coordinates)
    out.read_motors(ik)
    out.measure(ik, targets)


def _solve_in_sequence(
    problem: IKProblem,
    targets: Targets,
    rate: float,
    progress,
    cancel,
    out: FrameResults,
    start=1,
    rejoin=False,
    homing=None,
) -> int:
    """Frames ``start``.. one by one, each warm-started from (and compared with) the previous
    one; fills ``out``. homing: the problem of :func:`~looprig.core.retarget.aims.with_homing`
    (aims), each frame solved with it first and then from its answer.

    rejoin: the arrays already hold an answer solved without the barriers that compare
    frames (the clip solver's); stop at the first frame whose barriers are all zero and
    that matches it (:data:`REJOIN_TOLERANCE`), keeping that answer. Returns the frame
    after the last one solved (or rejoined).
    """
    positions, rotations, com = targets.positions, targets.rotations, targets.com
    states, act = out.states, out.actuators
    frames = len(states)
    velocities = (act[start - 1] - act[start - 2]) * rate if start >= 2 else None
    for f in range(start, frames):
        if cancel is not None and cancel():
            raise RetargetCancelled(f"retarget cancelled at frame {f} of {frames}")
        frame_targets = IKTargets(positions[f], rotations[f], None if com is None else com[f])
        given = {"previous_actuators": act[f - 1], "previous_velocities": velocities}
        begin = None if homing is None else solve_ik(homing, frame_targets, states[f - 1], **given).state
        result = solve_ik(problem, frame_targets, states[f - 1], begin, **given)
        if rejoin and _rejoins(problem, result, targets, out, f):
            return f + 1
        velocities = (result.actuators - act[f - 1]) * rate
        out.record(f, result)
        if progress is not None and not rejoin and (f % 50 == 0 or f == frames - 1):
            progress(f + 1, frames)
    return frames


def _rejoins(problem: IKProblem, result, targets: Targets, out: FrameResults, f: int) -> bool:
    """Whether frame f's answer ``result`` (solved in sequence) matches the clip solver's
    in ``out`` and leaves every barrier that compares frames at zero."""
    if np.abs(result.actuators - out.actuators[f]).max(initial=0.0) > REJOIN_TOLERANCE:
        return False
    value = coupling_values(
        problem,
        result.state[None],
        targets.take(slice(f, f + 1)),
        out.states[f - 1 : f],
        out.actuators[f - 1 : f],
    )
    return bool(value[0] == 0.0)


def _mend_clip(
    problem: IKProblem, targets: Targets, rate: float, cancel, out: FrameResults, homing=None
) -> None:
    """Re-solve one by one, from the frame before, each stretch of a clip solver's answer
    ``out`` (solved without the barriers that compare frames) where such a barrier of
    ``problem`` is not zero, until the answer rejoins the clip solver's."""
    act = out.actuators
    # frame k is touched by frame k - 1: decided once, as a stretch ends where the answer
    # rejoins the clip solver's, which it keeps (with what it says of later frames) from there
    later = targets.take(slice(1, None))
    touched = np.r_[False, coupling_values(problem, out.states[1:], later, out.states[:-1], act[:-1]) > 0.0]
    f = 1
    while (next_touched := np.flatnonzero(touched[f:])).size:
        start = f + int(next_touched[0])
        f = _solve_in_sequence(problem, targets, rate, None, cancel, out, start, rejoin=True, homing=homing)


def _hold_limits(problem: RetargetProblem, out: FrameResults) -> dict | None:
    """The clip in ``out`` solved again with every motor limit of the robot as a hard
    constraint (:mod:`~looprig.core.solvers.spacetime`: on the differences the limit checks
    read) if its curves break one; ``out`` is updated in place. The problem holds only the
    motors the mapping asks to hold (:attr:`~.problem.RetargetProblem.limits_ik`). Returns
    what the solve did (``binding`` (F, A) str: the limit that holds each motor at each
    frame; ``start``, ``iterations``, ``converged``), or None when the exact answer already
    keeps every limit (and is kept as it is)."""
    ik, mapping, targets = problem.limits_ik, problem.mapping, problem.targets
    limits = ActuatorLimits.of(problem.robot)
    clip = SpaceTimeClip(ik, targets, out.states, out.actuators, mapping.rate, limits)
    solution = hold_limits(clip, cyclic=mapping.cyclic)
    if solution is None:
        return None
    if not solution.converged:  # never a half-solved answer: the exact one, its violations listed
        warnings.warn(
            LooprigWarning(
                f"the clip solved under its motor limits did not converge in {solution.iterations} "
                "iterations: the exact answer is kept and the limits it breaks are listed "
                "(limit_mode report gives it without trying)"
            ),
            stacklevel=4,
        )
        return None
    changed = solution.changed
    out.actuators[:] = solution.actuators
    out.states[changed], out.residual[changed] = solution.states[changed], solution.residual[changed]
    out.converged[changed] = solution.converged
    out.measure(ik, targets, changed)
    return {
        "binding": solution.binding,
        "start": solution.start,
        "iterations": solution.iterations,
        "converged": solution.converged,
        "frames_solved_again": int(changed.sum()),
    }
