"""Motors that hold still unless the clip needs them: the default of a retarget.

One module although long: the decision, its linearisation at the clip's start and its
passes read one record of the problem.

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
  is not asked.
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
(:func:`welded`): their bodies merge into those they hold still (:mod:`..model.rigid`), so a
robot of many motors of which a clip moves few is solved as the few (ToddlerBot's head
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

Cost: Jacobians and SVDs at a few poses, one coarse pass with the motors free,
and one batched held pass per candidate tried (the whole-clip solver's machinery,
:mod:`.clip`), whatever the clip's length.
"""

import dataclasses
import time
from dataclasses import dataclass, field

import numpy as np

from ..errors import MechanismError
from ..maths.rotations import quat_to_matrix
from ..model.graph import cycle_rank
from ..model.mechanism import Mechanism
from ..model.parts import JointKind
from ..model.readoff import ActuatorReadout, unwrap_sequence, unwrap_to
from ..terms import ComObjective, ComTask, FrameObjective, FrameTask, MotorLock, Reference, Targets
from ..terms.base import motor_units
from .clip import coarse_then_clip, solve_clip
from .fk import solve_fk
from .ik import IKProblem, IKTargets
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
#: Assembled poses besides the start where a motor must also be unused, and their spread [rad | L].
CHECK_POSES, CHECK_SPREAD = 4, 0.1
#: A motor is unused when a unit motion of it moves the objectives less than this times L [m].
UNUSED_TOLERANCE = 1e-8
#: Relative singular value below which a direction counts as lost (rank tests).
RANK_TOLERANCE = 1e-6


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


class _Linearization:
    """The maps of one pose in dimensionless tangent coordinates (translations in units of
    L): constraints E (m, N), motors P (A, N) [rad | L], objectives O (r, N) [m], with
    weighted axes counted at weight one (orientation rows times L)."""

    def __init__(self, problem: IKProblem, state: np.ndarray):
        cs, readout = problem.constraints, problem.readout
        L = cs.length_scale
        R = quat_to_matrix(state[:, 3:])[None]
        s = state[None]
        frames = FrameTask(
            problem.mechanism,
            [
                FrameObjective(f.frame, np.greater(f.position_weight, 0), np.greater(f.orientation_weight, 0))
                for f in problem.frames
            ],
        )
        points, axes = frames.poses(s, R)
        com = None
        if problem.com is not None:
            com_task = ComTask(problem.mechanism, ComObjective(np.greater(problem.com.weight, 0)))
            com = com_task.com(s)
        reference = Reference(s, R, readout.read(s, R=R))
        point = problem.point(s, Targets(points, axes, com), reference, R)
        scale = 1.0 / problem.step_scale  # tangent per dimensionless unit: L [m] or 1 [rad]
        self.E = np.concatenate([t.linearize(point).jacobian[0] for t in problem.equality_terms]) * scale
        units = motor_units(readout, L)
        self.P = readout.jacobian(s, R, cs.column_of_body, cs.n_vars)[0] * units[:, None] * scale
        rows = [np.zeros((0, cs.n_vars))]
        if len(frames):
            J = frames.residual(point)[1][0]
            J[3 * len(frames) :] *= L
            rows.append(J)
        if com is not None:
            rows.append(com_task.residual(point)[1][0])
        self.O = np.concatenate(rows) * scale
        self.state, self.R, self.L = state, R[0], L
        # (N, d): the motions that keep the constraints, to the precision of the loops' file
        self.assembled = _null_space(self.E, problem.mechanism.closure_gap)

    def free_directions(self, locked) -> np.ndarray:
        """Orthonormal basis (N, d) of the motions that keep the constraints and the ``locked`` motors."""
        locked = list(locked)
        if not locked:
            return self.assembled
        return self.assembled @ _null_space(self.P[locked] @ self.assembled)

    def motor_directions(self, locked):
        """Per motor, the motion (N,) that turns it by one unit with the other motors (and the
        ``locked`` ones) held, or None where the motor cannot move alone (it is coupled to others)."""
        Z = self.free_directions(locked)
        PZ = self.P @ Z
        out = []
        for i in range(len(self.P)):
            unit = np.eye(len(self.P))[i]
            x = np.linalg.lstsq(PZ, unit, rcond=None)[0]
            out.append(None if np.abs(PZ @ x - unit).max(initial=0.0) > 1e-6 else Z @ x)
        return out

    def objective_rank(self, locked) -> int:
        """Rank of the objectives' Jacobian over the motions that keep ``locked`` motors held."""
        return _rank(self.O @ self.free_directions(locked))


def _null_space(A: np.ndarray, floor: float = 0.0) -> np.ndarray:
    """Orthonormal basis (n, d) of the null space of A (m, n), singular values below 1e-10
    of the largest, or below ``floor`` (absolute, A's units), counted as zero."""
    if A.shape[0] == 0:
        return np.eye(A.shape[1])
    _, sigma, Vt = np.linalg.svd(A)
    largest = sigma.max(initial=0.0)
    rank = int((sigma > max(1e-10 * largest, floor)).sum()) if largest > 0 else 0
    return Vt[rank:].T


def _range(A: np.ndarray, tolerance: float) -> np.ndarray:
    """Orthonormal basis of the range of A (singular values above ``tolerance``)."""
    if A.size == 0:
        return np.zeros((len(A), 0))
    U, sigma, _ = np.linalg.svd(A, full_matrices=False)
    return U[:, sigma > tolerance]


def _rank(A: np.ndarray) -> int:
    if A.size == 0:
        return 0
    sigma = np.linalg.svd(A, compute_uv=False)
    return int((sigma > RANK_TOLERANCE * max(sigma.max(initial=0.0), 1e-300)).sum())


def _kinetic_energy(problem: IKProblem, lin: _Linearization, motion: np.ndarray) -> float:
    """Kinetic energy per unit motor speed [kg m^2] of a dimensionless tangent motion (N,)."""
    cs, mechanism = problem.constraints, problem.mechanism
    energy = 0.0
    for b in cs.free_bodies:
        body = mechanism.bodies[b]
        v = lin.L * motion[cs.column_of_body[b] : cs.column_of_body[b] + 3]
        w = motion[cs.column_of_body[b] + 3 : cs.column_of_body[b] + 6]
        energy += body.mass * float(v @ v)
        if body.inertia is not None:
            R = lin.R[b]
            energy += float(w @ (R @ np.asarray(body.inertia, float) @ R.T) @ w)
    return energy


def _check_poses(problem: IKProblem, state: np.ndarray) -> list[np.ndarray]:
    """Assembled states around ``state`` with the motors moved by about CHECK_SPREAD (seeded)."""
    readout: ActuatorReadout = problem.readout
    values = readout.read(state)
    spread = CHECK_SPREAD * np.where(readout.is_angle, 1.0, problem.constraints.length_scale)
    rng = np.random.default_rng(1)
    poses = []
    for _ in range(CHECK_POSES):
        moved = solve_fk(
            problem.mechanism, values + spread * rng.normal(size=len(values)), state, raise_on_failure=False
        )
        if moved.converged:
            poses.append(moved.state)
    return poses


def _unused(problem: IKProblem, lins: list[_Linearization]) -> np.ndarray:
    """(A,) bool: motors that can move with the other motors held (not fixed by them, as in
    an over-actuated loop) and whose motion then moves the objectives in no direction that
    the passive motions (a floating base, every motor held) do not already give, by more
    than UNUSED_TOLERANCE L per unit, at every pose."""
    n = len(problem.readout.names)
    unused = np.ones(n, bool)
    for lin in lins:
        passive = lin.O @ lin.free_directions(range(n))
        Q = _range(passive, UNUSED_TOLERANCE * lin.L)
        for i in np.flatnonzero(unused):
            alone = lin.free_directions([k for k in range(n) if k != i])
            if np.linalg.norm(lin.P[i] @ alone) <= 1e-6:  # the others fix it (over-actuated)
                unused[i] = False
                continue
            moved = lin.O @ alone
            beyond = moved - Q @ (Q.T @ moved)
            unused[i] = beyond.size == 0 or np.linalg.norm(beyond, 2) <= UNUSED_TOLERANCE * lin.L
    return unused


def _on_loops(mechanism) -> set[str]:
    """Names of the joints that close a kinematic loop (removing one lowers the cycle rank
    of the joint graph, grounded bodies merged, ``free`` joints left out)."""
    node = [-1 if b.grounded else i for i, b in enumerate(mechanism.bodies)]
    edges = {
        j.name: (node[mechanism.body_index(j.parent)], node[mechanism.body_index(j.child)])
        for j in mechanism.joints
        if j.kind != JointKind.FREE
    }
    nodes = sorted(set(node))
    rank = cycle_rank(nodes, list(edges.values()))
    return {
        name
        for name in edges
        if cycle_rank(nodes, [edge for other, edge in edges.items() if other != name]) < rank
    }


def welded(mechanism: Mechanism, motors) -> Mechanism:
    """``mechanism`` with the joints of ``motors`` (actuator names) fixed in the initial
    configuration: what holding them there means, with their bodies left to be merged
    into those they are welded to (:class:`~looprig.core.model.rigid.RigidGroups`) instead of
    locked by a row each. A coupling loses its welded sources (their values stay 0, where
    every ``P_k`` vanishes); one left with none fixes its joint too (its offset is 0 in an
    assembled mechanism), and so on down the couplings. A welded motor that follows a
    coupling is refused (``MechanismError``)."""
    fixed = {mechanism.actuated_joint(m).name for m in motors}
    followers = {c.joint: c.name for c in mechanism.couplings}
    clash = sorted(fixed & set(followers))
    if clash:
        raise MechanismError(
            f"motor on joint {clash[0]!r} follows coupling {followers[clash[0]]!r}: it cannot be welded"
        )
    couplings = list(mechanism.couplings)
    while True:
        kept = []
        for c in couplings:
            live = [k for k, source in enumerate(c.sources) if source not in fixed]
            if not live:
                fixed.add(c.joint)
                continue
            polynomial = tuple(c.polynomial[k] for k in live) if c.polynomial else ()
            sources, ratios = tuple(c.sources[k] for k in live), tuple(c.ratios[k] for k in live)
            kept.append(dataclasses.replace(c, sources=sources, ratios=ratios, polynomial=polynomial))
        if len(kept) == len(couplings):
            break
        couplings = kept
    joints = [
        dataclasses.replace(j, kind=JointKind.FIXED, actuator=None) if j.name in fixed else j
        for j in mechanism.joints
    ]
    return Mechanism(mechanism.bodies, joints, mechanism.frames, mechanism.name, kept)


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
    frame is (restarts where the start is singular), the others as the clip solver does
    (:func:`~looprig.core.solvers.clip.coarse_then_clip`: every few in order, then all together)."""
    first = solve_first_frame(
        problem,
        IKTargets(
            targets.positions[0], targets.rotations[0], None if targets.com is None else targets.com[0]
        ),
        state,
        reach_tolerance,
    )
    states = coarse_then_clip(problem, times, targets, first.state, stride=4).states
    values = problem.readout.read(states)
    values[0] = first.actuators
    return _Pass.measure(problem, states, targets, unwrap_sequence(values, problem.readout.is_angle))


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
    lins = [_Linearization(problem, s) for s in (state, *_check_poses(problem, state))]
    # a pose where held motors leave more motion free than elsewhere is singular (a dead
    # centre): its first-order picture is not the mechanism's, so it is not asked
    passive = [lin.free_directions(range(n)).shape[1] for lin in lins]
    lins = [lin for lin, d in zip(lins, passive, strict=True) if d == min(passive)]
    start = lins[0]
    unused = [i for i in np.flatnonzero(_unused(problem, lins)) if i not in already]
    locked = sorted(already | set(unused))

    # redundant motors: only where the motors determine the objectives (no floating base),
    # so that the other motors, not an unanimated base, take over
    moved = start.O @ start.free_directions(range(n))
    determined = moved.size == 0 or np.linalg.norm(moved, 2) <= UNUSED_TOLERANCE * start.L
    directions = start.motor_directions(locked) if determined else []
    energy = {
        i: _kinetic_energy(problem, start, d)
        for i, d in enumerate(directions)
        if d is not None and i not in locked
    }
    # the motors of a loop (the legs of a parallel mechanism) work as a team: holding one
    # while the others move is no animator's intent, so only motors in series are tried
    on_loops = _on_loops(problem.mechanism)
    candidates = sorted((i for i in energy if names[i] not in on_loops), key=lambda i: -energy[i])

    def keeps_rank(i) -> bool:
        """Locking motor i loses no direction the objectives can move in: the structural
        rank (the largest over the poses; one pose may be singular by chance) stays."""
        return max(lin.objective_rank([*locked, i]) for lin in lins) == max(
            lin.objective_rank(locked) for lin in lins
        )

    candidates = [i for i in candidates if keeps_rank(i)]

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
            if not keeps_rank(i):  # the motors held so far took its place
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
