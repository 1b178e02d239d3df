"""Motors that hold still unless the clip needs them: the default of a retarget.

An animator expects a motor nobody animated to stay where it is. Before a clip is
solved, :func:`motors_to_hold` picks the motors to lock exactly at their value at
the clip's start (with :class:`~looprig.core.terms.MotorLock`, the equality term
behind the mapping's ``hold``); ``docs/retarget.md`` states the rule for users.

* **unused** — moving the motor, the other motors held, moves no targeted frame
  (on its weighted axes) and not the centre of mass, beyond what the passive
  motions (a floating base) already do. Decided on the linearised constraints,
  read-off and tasks at the start pose and at :data:`CHECK_POSES` assembled poses
  around it (motors moved by about :data:`CHECK_SPREAD` rad, seeded). A pose
  where the held motors leave more motion free than at the others is singular (a
  slider-crank's dead centre, where the crank moves nothing to first order) and
  is not asked. The check poses are made only for a question the start cannot
  settle (:class:`~looprig.core.solvers.motor_roles.Linearizations`): a motor the
  joint graph shows moving no target (an antenna) needs none.
* **redundant** — the other motors can do its work. Only where the motors
  determine the objectives (with a floating base the base, no motor, would take
  over), and only motors in series: the motors of a loop (the legs of a parallel
  mechanism) work as a team. Candidates keep the objectives' structural rank
  (the largest over the poses) when locked; they are tried one by one, the one
  whose motion moves the most mass first (kinetic energy per unit motor speed: a
  body yaw that carries a whole head before a wrist), and held when the coarse frames of the clip
  (:data:`COARSE_FRAMES` of them), solved with it locked from the free pass's
  answers, still meet every target as well as with the motor free (within
  :data:`REACH_SLACK` times the reach tolerance), keep the motors in their ranges
  wherever the free pass does, and do not make the motors travel more than
  :data:`TRAVEL_RATIO` times as far. When the free pass already misses a target
  (beyond the reach tolerance), no redundant motor is held: there is no reach
  to keep.

A retarget whose clip starts where the robot is assembled welds the unused motors there
(:func:`~looprig.core.model.rigid.welded`): their bodies merge into those they hold
still, so a robot of many motors of which a clip moves few is solved as the few (ToddlerBot's head
nod: 2 of 30 motors).

The trade-off, on a 7-DoF arm with only the hand targeted: its base joint is the
heaviest redundant motor, so it is held when the other six follow the hand
within their ranges without travelling much further; the arm then moves like a
6-DoF arm and gives up the null-space motion that keeps it away from limits and
singularities. Where that costs reach, range or a detour (much more travel), the
joint stays free and the minimal-motion metric shares the motion. The decision
is made on the start pose and a coarse pass (:func:`~looprig.core.retarget.retarget`
solves the clip again with the redundant motors free when a frame between the
coarse ones turns out to need one); ``auto_hold = false`` (``--no-auto-hold``)
frees every motor but those in the mapping's ``hold``.

Cost: Jacobians and SVDs at the start (and at the check poses where asked), one coarse
pass with the motors free, and one batched held pass per candidate tried (the
whole-clip solver's machinery, :mod:`.clip`), whatever the clip's length.
"""

import dataclasses
import time
from dataclasses import dataclass, field

import numpy as np

from ..maths.rotations import quat_to_matrix
from ..model.readoff import unwrap_sequence, unwrap_to
from ..terms import MotorLock, Targets
from ..terms.base import motor_units
from .clip import MAX_SEQUENTIAL_MOTION, coarse_then_clip, solve_clip, target_motion
from .ik import IKProblem, IKTargets
from .motor_roles import UNUSED_TOLERANCE, Linearizations, kinetic_energy, loop_joints
from .start import solve_first_frame

#: Frames of the coarse pass that tries a redundant motor held (spread evenly, ends included).
COARSE_FRAMES = 25
#: A held motor may add at most this fraction of the reach tolerance to any coarse frame's miss.
REACH_SLACK = 0.01
#: A held motor may make the other motors travel at most this many times as far (coarse pass).
TRAVEL_RATIO = 2.0
#: Iterations of a held pass (from the free pass's states a reachable frame needs a few;
#: one a held motor makes unreachable would use them all).
HELD_ITERATIONS = 20
#: Most redundant candidates tried with a coarse pass (heaviest first).
MAX_TRIALS = 8


@dataclass(frozen=True)
class Holding:
    """The motors :func:`motors_to_hold` locks, with their values at the clip's start.

    unused, redundant: motor names; values: name -> [rad | m]; kept_free: the
    redundant candidates a coarse pass refused, name -> why; passes: coarse passes
    run; seconds: the time the decision took [s].
    """

    unused: tuple[str, ...] = ()
    redundant: tuple[str, ...] = ()
    values: dict = field(default_factory=dict)
    kept_free: dict = field(default_factory=dict)
    passes: int = 0
    seconds: float = 0.0

    @property
    def motors(self) -> tuple[str, ...]:
        return self.unused + self.redundant

    def message(self) -> str | None:
        """One line naming the held motors and how to free them (None: none held)."""
        if not self.motors:
            return None
        parts = []
        if self.unused:
            parts.append(f"{', '.join(self.unused)} (no target depends on them)")
        if self.redundant:
            parts.append(f"{', '.join(self.redundant)} (the other motors meet every target)")
        return (
            f"held at their start values: {'; '.join(parts)}; "
            "target them, or set auto_hold false (--no-auto-hold) to let them move"
        )

    def to_dict(self) -> dict:
        """JSON-ready: the held motors with their values, and the candidates kept free."""
        return {
            "unused": list(self.unused),
            "redundant": list(self.redundant),
            "values": {name: float(v) for name, v in self.values.items()},
            "kept_free": dict(self.kept_free),
        }


def _with_locks(problem: IKProblem, motors, values) -> IKProblem:
    if not len(motors):
        return problem
    lock = MotorLock(problem.readout, motors, values[list(motors)], problem.constraints.length_scale)
    return dataclasses.replace(problem, terms=(*problem.terms, lock))


@dataclass
class _Pass:
    """A coarse pass: per coarse frame the states (C, n, 7), the miss (C,) [m] (the largest
    of the position error, L times the orientation error and the CoM error) and the motor
    values (C, A) [rad | m]."""

    states: np.ndarray
    miss: np.ndarray
    values: np.ndarray

    @classmethod
    def measure(cls, problem: IKProblem, states: np.ndarray, targets: Targets, near: np.ndarray) -> "_Pass":
        """The pass of ``states`` against ``targets``; angles unwrapped towards ``near`` (C, A)."""
        R = quat_to_matrix(states[..., 3:])
        position, orientation = problem.frame_terms.tracking_errors(states, R, targets)
        miss = np.maximum(
            position.max(-1, initial=0.0), problem.constraints.length_scale * orientation.max(-1, initial=0.0)
        )
        if problem.com_term is not None:
            com = (problem.com_term.com(states) - targets.com) * (problem.com_term.weight > 0)
            miss = np.maximum(miss, np.linalg.norm(com, axis=-1))
        values = unwrap_to(problem.readout.read(states, R=R), near, problem.readout.is_angle)
        return cls(states, miss, values)


def _travel(path: np.ndarray, units: np.ndarray) -> float:
    """Total motor travel along motor values (C, A) [rad, displacements in units of L]."""
    return float(np.abs(np.diff(path, axis=0) * units).sum())


def _free_pass(problem: IKProblem, targets: Targets, times, state, reach_tolerance: float) -> _Pass:
    """The coarse frames at ``times`` (C,) [s]: the first from ``state`` as the clip's first
    frame is (restarts where the start is singular; ``state`` itself where it meets the
    targets already, the clip starting where the robot is), the others as the clip solver
    does (:func:`~looprig.core.solvers.clip.coarse_then_clip`: every few in order, then all
    together) or, where no frame's targets move more than
    :data:`~looprig.core.solvers.clip.MAX_SEQUENTIAL_MOTION` from the first's (the spacing
    the clip solver takes its frames in sequence at), all together from the first: each
    redundant answer then the nearest the start instead of along the path, which differ
    to second order in the motion (Reachy Mini's free travel 8.0167 against 8.0162)."""
    values = problem.readout.read(state)
    start = _Pass.measure(problem, state[None], targets.take([0]), values[None])
    if start.miss[0] > problem.constraints.tolerance(problem.settings.constraint_tolerance):
        first = solve_first_frame(
            problem,
            IKTargets(
                targets.positions[0], targets.rotations[0], None if targets.com is None else targets.com[0]
            ),
            state,
            reach_tolerance,
        )
        state, values = first.state, first.actuators
    if target_motion(problem, targets, np.arange(1, len(times)), start=0) <= MAX_SEQUENTIAL_MOTION:
        states = solve_clip(problem, targets, np.repeat(state[None], len(times), axis=0)).states
    else:
        states = coarse_then_clip(problem, times, targets, state).states
    read = problem.readout.read(states)
    read[0] = values
    return _Pass.measure(problem, states, targets, unwrap_sequence(read, problem.readout.is_angle))


def _held_pass(problem: IKProblem, targets: Targets, free: _Pass) -> _Pass:
    """The coarse frames solved together (:func:`~looprig.core.solvers.clip.solve_clip`) with a motor
    held, each from the free pass's state: the held answer nearest to the free one."""
    settings = dataclasses.replace(problem.settings, max_iterations=HELD_ITERATIONS)
    solution = solve_clip(problem, targets, free.states, settings=settings)
    return _Pass.measure(problem, solution.states, targets, free.values)


def motors_to_hold(
    problem: IKProblem,
    targets: Targets,
    state: np.ndarray,
    reach_tolerance: float,
) -> Holding:
    """The motors of ``problem`` to lock at their values in ``state`` (n, 7), the clip's
    start; see the module docstring. ``problem``: the clip's first-frame problem (no
    terms between frames; motors it already locks are left alone); ``targets``: the
    whole clip's, batched over frames; ``reach_tolerance`` [m]."""
    began = time.perf_counter()
    readout = problem.readout
    names, n = readout.names, len(readout.names)
    if n == 0:
        return Holding()
    values = readout.read(state)
    already = {int(m) for t in problem.terms if isinstance(t, MotorLock) for m in t.motors}
    lins = Linearizations(problem, state)
    start = lins.start
    unused = [i for i in np.flatnonzero(lins.unused()) if i not in already]
    locked = sorted(already | set(unused))

    # redundant motors: only where the motors determine the objectives (no floating base),
    # so that the other motors, not an unanimated base, take over
    moved = start.O @ start.free_directions(range(n))
    determined = moved.size == 0 or np.linalg.norm(moved, 2) <= UNUSED_TOLERANCE * start.L
    directions = start.motor_directions(locked) if determined else []
    energy = {
        i: kinetic_energy(problem, start, d)
        for i, d in enumerate(directions)
        if d is not None and i not in locked
    }
    # the motors of a loop (the legs of a parallel mechanism) work as a team: holding one
    # while the others move is no animator's intent, so only motors in series are tried
    on_loops = loop_joints(problem.mechanism)
    candidates = sorted((i for i in energy if names[i] not in on_loops), key=lambda i: -energy[i])

    candidates = [i for i in candidates if lins.keeps_rank(locked, i)]

    kept_free, passes, redundant = {}, 0, []
    if candidates:
        count = len(targets.positions)
        frames = np.unique(np.linspace(0, count - 1, min(COARSE_FRAMES, count)).round().astype(int))
        coarse = targets.take(frames)
        free = _free_pass(
            _with_locks(problem, locked, values), coarse, frames.astype(float), state, reach_tolerance
        )
        passes = 1
        if free.miss.max() > reach_tolerance:  # holding cannot keep what is not there
            why = f"the clip misses targets by up to {free.miss.max():.3g} m with every motor free"
            kept_free = dict.fromkeys((names[i] for i in candidates), why)
            candidates = []
        units = motor_units(readout, problem.constraints.length_scale)
        limits = problem.actuator_limits

        def excess(v):  # (C, A) how far outside its range each motor is [rad | m]
            return np.maximum(limits.lower - v, 0) + np.maximum(v - limits.upper, 0)

        free_travel = _travel(np.concatenate([values[None], free.values]), units)
        tried = 0
        for i in candidates:
            if not lins.keeps_rank(locked, i):  # the motors held so far took its place
                continue
            if tried == MAX_TRIALS:
                kept_free[names[i]] = f"not tried (at most {MAX_TRIALS} trials)"
                continue
            tried += 1
            held = _held_pass(_with_locks(problem, [*locked, i], values), coarse, free)
            passes += 1
            missed = held.miss > free.miss + REACH_SLACK * reach_tolerance
            travel = _travel(np.concatenate([values[None], held.values]), units)
            if missed.any():
                kept_free[names[i]] = f"a target would be missed by {held.miss[missed].max():.3g} m"
            elif (excess(held.values) > excess(free.values) + 1e-9).any():
                kept_free[names[i]] = "a motor would leave its range"
            elif travel > TRAVEL_RATIO * free_travel + 1e-9:
                kept_free[names[i]] = (
                    f"the motors would travel {travel / max(free_travel, 1e-300):.3g}x as far"
                )
            else:
                locked.append(i)
                redundant.append(i)
    return Holding(
        unused=tuple(names[i] for i in unused),
        redundant=tuple(names[i] for i in redundant),
        values={names[i]: float(values[i]) for i in (*unused, *redundant)},
        kept_free=kept_free,
        passes=passes,
        seconds=time.perf_counter() - began,
    )
