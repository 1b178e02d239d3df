"""Retargeting: a clip of tracked frames + a mapping -> robot motion and motor curves.

One module although long: the loop over a clip and the paths it takes (clip
solver, frame by frame, stretches re-solved under barriers, windows re-solved under
the motor limits) share its arrays.

The clip is resampled to the solve rate (cubic splines for positions,
rotation splines for orientations; the paper samples its input at 1200 Hz).
The first frame is solved exactly from the clip's start (:mod:`..solvers.start`); the
others together (:mod:`..solvers.clip`), or one by one, each warm-started from (and
compared with) the previous one, when a term ties every frame to the previous
one (the acceleration cost, the paper's state regularizer). Under barriers
between frames that are zero inside their bounds, the stretches where the clip
solver's answer (solved without them) wakes a barrier are re-solved one by one.
With ``limit_mode`` hold (the default), the windows around every motor limit
that answer breaks are solved again under all the limits (:mod:`..solvers.spacetime`).
Welded bodies are solved as one (:mod:`..model.rigid`). Every frame comes out assembled;
frames whose targets could not be met are flagged. The mapping and its file
form live in :mod:`.mapping`.
"""

import dataclasses
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..curves.actuator_curves import ActuatorCurves
from ..curves.limit_checks import LimitCheckSettings, all_violations
from ..errors import LooprigError, LooprigWarning, TargetError, did_you_mean
from ..maths.linalg import single_threaded_blas
from ..maths.rotations import quat_to_matrix
from ..model.filevalues import limit_to_file
from ..model.mechanism import Mechanism
from ..model.parts import Actuator, JointKind
from ..model.primitives import mean_joint_distance
from ..model.readoff import ActuatorReadout, unwrap_sequence
from ..model.rigid import RigidGroups, welded
from ..solvers.clip import (
    clip_starts,
    coarse_states,
    couples_frames,
    coupling_values,
    couplings_vanish_inside,
    solve_clip,
    solve_unconverged,
)
from ..solvers.holding import Holding, motors_to_hold
from ..solvers.ik import IKProblem, IKSettings, IKTargets, solve_ik
from ..solvers.spacetime import hold_limits
from ..solvers.start import solve_first_frame, start_state
from ..terms import AimTask, ComObjective, FrameObjective, MotorLock, MotorRest, Targets
from ..terms.aim import holding_view, up_rotation
from ..terms.limits import ActuatorLimits
from ..tracks.samples import TrackSamples
from .mapping import RetargetMapping


class RetargetCancelled(LooprigError):
    """The caller's ``cancel`` callback asked to stop."""


@dataclass
class RetargetResult:
    """Per-frame outcome of :func:`retarget`.

    times (F,) [s]; states (F, n, 7); curves: the actuator curves (unwrapped);
    position_error, orientation_error (F, K) [m, rad]; com_error (F,) [m];
    residual (F,) max |C| [m]; iterations (F,); converged, unreachable (F,) bool;
    aim_error (F, M) [rad]: per aim the angle between its axis and the line of sight
    (aim_names: their frames); aim_miss (F, M) [m]: how far the aim ray passes from the
    point (what ``reach_tolerance`` judges, as it does the position errors).
    """

    mapping: RetargetMapping
    times: np.ndarray
    states: np.ndarray
    curves: ActuatorCurves
    position_error: np.ndarray
    orientation_error: np.ndarray
    com_error: np.ndarray
    residual: np.ndarray
    iterations: np.ndarray
    converged: np.ndarray
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


def build_problem(
    mechanism: Mechanism,
    mapping: RetargetMapping,
    settings: IKSettings | None = None,
    first_frame: bool = False,
    held: np.ndarray | None = None,
) -> IKProblem:
    """The IK problem a mapping defines (frame targets in mapping order, CoM, aims).

    Each aim gets a frame objective of zero weight after the targets, whose target slot
    carries its point and up direction (:func:`_target_arrays`), and the aims one
    :class:`~looprig.core.terms.AimTask`.

    first_frame: without the terms that compare with a previous frame (velocity
    barriers, acceleration cost): the first frame has none. held: the values
    (len(mapping.hold),) [rad | m] the mapping's ``hold`` motors are locked at.
    """
    frames = [FrameObjective(t.frame, t.position_weight, t.orientation_weight) for t in mapping.targets]
    aims = mapping.aim_objectives(mechanism)
    frames += [FrameObjective(a.frame, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)) for a in aims]  # their slots
    com = ComObjective(mapping.com.weight) if mapping.com is not None else None
    regularization = mapping.regularization()
    if first_frame:
        regularization = dataclasses.replace(
            regularization, velocity_weight=0.0, acceleration_weight=0.0, rate=None
        )
    terms = ()
    if mapping.hold:
        if held is None:
            held = _held_values(mechanism, mapping, mechanism.initial_state())
        motors = [mechanism.actuator_names.index(name) for name in mapping.hold]
        terms = (MotorLock(ActuatorReadout(mechanism), motors, held, mean_joint_distance(mechanism)),)
    if aims:
        k = len(mapping.targets)
        terms = (*terms, AimTask(mechanism, aims, np.arange(k, k + len(aims))))
    return IKProblem(mechanism, frames, com, regularization, settings or IKSettings(), terms)


def _target_arrays(mapping: RetargetMapping, samples: TrackSamples):
    """Per-frame target positions (F, K + M, 3), rotations (F, K + M, 3, 3) and CoM (F, 3):
    the K targets', then per aim its point and a rotation whose z column is its up
    direction (the slots :func:`build_problem` gives the aims)."""
    names = set(samples.positions)
    for spec in mapping.targets:
        if spec.track not in names:
            raise TargetError(f"mapping target {spec.frame!r}: " + did_you_mean("track", spec.track, names))
    for i, aim in enumerate(mapping.aims):
        for key in ("track", "up_track"):
            track = getattr(aim, key)
            if track is not None and track not in names:
                where = f"mapping aim {i} ({aim.frame!r})"
                raise TargetError(f"{where}: {key}: " + did_you_mean("track", track, names))
    positions, rotations = [], []
    for spec in mapping.targets:
        R_track = samples.rotations[spec.track]
        offset_R = quat_to_matrix(np.asarray(spec.offset_rotation, dtype=float))
        positions.append(samples.positions[spec.track] + R_track @ np.asarray(spec.offset_position, float))
        rotations.append(R_track @ offset_R)
    positions = np.stack(positions, axis=1) if positions else np.zeros((len(samples.times), 0, 3))
    rotations = np.stack(rotations, axis=1) if rotations else np.zeros((len(samples.times), 0, 3, 3))
    com = None
    if mapping.com is not None:
        com = _com_targets(mapping, samples, positions)
    if mapping.aims:
        points, ups = _aim_arrays(mapping, samples)
        positions = np.concatenate([positions, points], axis=1)
        rotations = np.concatenate([rotations, up_rotation(ups)], axis=1)
    return positions, rotations, com


def _aim_arrays(mapping: RetargetMapping, samples: TrackSamples):
    """Per frame, each aim's point (F, M, 3) [m] and unit up direction (F, M, 3), world."""
    count = len(samples.times)
    points, ups = [], []
    for aim in mapping.aims:
        if aim.track is not None:
            points.append(np.asarray(samples.positions[aim.track], dtype=float))
        else:
            points.append(np.broadcast_to(np.asarray(aim.point, dtype=float), (count, 3)))
        up = np.asarray(aim.up_direction, dtype=float) / np.linalg.norm(aim.up_direction)
        tracked = aim.up_track is not None
        ups.append(samples.rotations[aim.up_track] @ up if tracked else np.tile(up, (count, 1)))
    return np.stack(points, axis=1), np.stack(ups, axis=1)


def _com_targets(mapping: RetargetMapping, samples: TrackSamples, positions: np.ndarray) -> np.ndarray:
    spec = mapping.com
    if spec.track is not None:
        if spec.track not in samples.positions:
            raise TargetError("CoM: " + did_you_mean("track", spec.track, samples.positions))
        return samples.positions[spec.track]
    if not spec.support:
        raise TargetError("a CoM objective needs a track or support phases")
    frames = [t.frame for t in mapping.targets]
    com = np.full((len(samples.times), 3), np.nan)
    for phase in spec.support:
        missing = [f for f in phase.frames if f not in frames]
        if missing:
            raise TargetError(
                f"support phase {phase.start}-{phase.end} s: frames {missing} are not mapping targets "
                f"({', '.join(frames)})"
            )
        inside = (samples.times >= phase.start - 1e-9) & (samples.times <= phase.end + 1e-9)
        idx = [frames.index(f) for f in phase.frames]
        com[inside] = positions[inside][:, idx].mean(axis=1)
    gaps = np.flatnonzero(np.isnan(com[:, 0]))
    if len(gaps):
        raise TargetError(f"support phases do not cover t = {samples.times[gaps[0]]:.4g} s")
    return com


def with_motors(mechanism: Mechanism, motors: Sequence[str] | None = None) -> Mechanism:
    """The mechanism as retargeted, with its motors decided.

    ``motors`` names the motor joints exactly: a named joint without an actuator
    gets a plain one (an angle for a revolute joint, a displacement for a
    prismatic one; no limits), an actuated joint not named becomes passive.
    Without ``motors``, a robot whose file declares no motor (a URDF without
    transmissions) gets one on every revolute and prismatic joint, so every joint
    gets a curve.
    """
    one_coordinate = {JointKind.REVOLUTE: "angle", JointKind.PRISMATIC: "displacement"}
    if motors is None:
        if mechanism.actuated_joints:
            return mechanism
        motors = [j.name for j in mechanism.joints if j.kind in one_coordinate]
    names = {j.name for j in mechanism.joints}
    for name in motors:
        if name not in names:
            raise TargetError("mapping motors: " + did_you_mean("joint", name, names))
    joints = []
    for joint in mechanism.joints:
        if joint.name not in motors:
            joint = dataclasses.replace(joint, actuator=None)
        elif joint.actuator is None:
            if joint.kind not in one_coordinate:
                raise TargetError(
                    f"mapping motors: joint {joint.name!r} is {joint.kind.value}; "
                    "only revolute and prismatic joints can be made motors"
                )
            joint = dataclasses.replace(joint, actuator=Actuator(motion=one_coordinate[joint.kind]))
        joints.append(joint)
    return Mechanism(
        mechanism.bodies, joints, mechanism.frames, name=mechanism.name, couplings=mechanism.couplings
    )


def _held_values(mechanism: Mechanism, mapping: RetargetMapping, state: np.ndarray):
    """The values [rad | m] of the mapping's ``hold`` motors at ``state`` (None: no hold)."""
    if not mapping.hold:
        return None
    names = mechanism.actuator_names
    missing = [name for name in mapping.hold if name not in names]
    if missing:
        raise TargetError("mapping hold: " + did_you_mean("motor", missing[0], names))
    return ActuatorReadout(mechanism).read(state)[[names.index(name) for name in mapping.hold]]


#: Frames solved by the clip solver between two progress reports and cancel checks: an
#: eighth of the clip, within these bounds (memory is bounded by the solver's blocks,
#: :data:`~looprig.core.solvers.clip.CLIP_BLOCK`).
CLIP_CHUNK = (32, 600)
#: KKT size (unknowns + constraint rows) above which frames are solved one by one even
#: when they could be solved together. The largest reference mechanism, the walker
#: (354 rows), has competing objectives: warm-started from the previous frame's answer
#: a frame of its CoM gait needs about 3 iterations, from an interpolated start 6 and
#: some 50 (tests/test_retargeting.py's step at 60 fps: 0.68 s frame by frame, 1.08 s
#: as a clip).
CLIP_MAX_KKT = 300


@dataclass
class _Frames:
    """A retarget's per-frame results as they are filled, F frames: states (F, n, 7);
    actuators (F, A) [rad | m]; position_error, orientation_error (F, K) [m, rad];
    com_error (F,) [m]; residual (F,) [m]; iterations (F,); converged (F,)."""

    states: np.ndarray
    actuators: np.ndarray
    position_error: np.ndarray
    orientation_error: np.ndarray
    com_error: np.ndarray
    residual: np.ndarray
    iterations: np.ndarray
    converged: np.ndarray

    @classmethod
    def empty(cls, frames: int, state: np.ndarray, actuators: int, targets: int) -> "_Frames":
        return cls(
            np.empty((frames,) + state.shape),
            np.empty((frames, actuators)),
            np.empty((frames, targets)),
            np.empty((frames, targets)),
            np.full(frames, np.nan),
            np.empty(frames),
            np.empty(frames, int),
            np.empty(frames, bool),
        )

    def record(self, f: int, result) -> None:
        """Frame f from an :class:`~looprig.core.solvers.ik.IKResult`."""
        self.states[f], self.actuators[f] = result.state, result.actuators
        self.position_error[f], self.orientation_error[f] = result.position_error, result.orientation_error
        self.com_error[f], self.residual[f] = result.com_error, result.residual
        self.iterations[f], self.converged[f] = result.iterations, result.converged


def _solve_in_sequence(
    problem,
    positions,
    rotations,
    com,
    rate,
    progress,
    cancel,
    out: _Frames,
    start=1,
    rejoin=False,
    homing=None,
) -> int:
    """Frames ``start``.. one by one, each warm-started from (and compared with) the previous
    one; fills ``out``. homing: the problem of :func:`_homing` (aims), each frame solved with it
    first and then from its answer.

    rejoin: the arrays already hold an answer solved without the barriers that compare
    frames (the clip solver's); stop at the first frame whose barriers are all zero and
    that matches it (:data:`REJOIN_TOLERANCE`), keeping that answer. Returns the frame
    after the last one solved (or rejoined).
    """
    states, act = out.states, out.actuators
    frames = len(states)
    velocities = (act[start - 1] - act[start - 2]) * rate if start >= 2 else None
    for f in range(start, frames):
        if cancel is not None and cancel():
            raise RetargetCancelled(f"retarget cancelled at frame {f} of {frames}")
        targets = IKTargets(positions[f], rotations[f], None if com is None else com[f])
        given = {"previous_actuators": act[f - 1], "previous_velocities": velocities}
        begin = None if homing is None else solve_ik(homing, targets, states[f - 1], **given).state
        result = solve_ik(problem, targets, states[f - 1], begin, **given)
        if rejoin and _rejoins(problem, result, positions, rotations, com, out, f):
            return f + 1
        velocities = (result.actuators - act[f - 1]) * rate
        out.record(f, result)
        if progress is not None and not rejoin and (f % 50 == 0 or f == frames - 1):
            progress(f + 1, frames)
    return frames


#: A frame solved in sequence rejoins the clip solver's answer when every motor is
#: within this of it [rad | m].
REJOIN_TOLERANCE = 1e-8


def _rejoins(problem, result, positions, rotations, com, out: _Frames, f: int) -> bool:
    """Whether frame f's answer ``result`` (solved in sequence) matches the clip solver's
    in ``out`` and leaves every barrier that compares frames at zero."""
    if np.abs(result.actuators - out.actuators[f]).max(initial=0.0) > REJOIN_TOLERANCE:
        return False
    frame = slice(f, f + 1)
    targets = Targets(positions, rotations, com).take(frame)
    value = coupling_values(
        problem, result.state[None], targets, out.states[f - 1 : f], out.actuators[f - 1 : f]
    )
    return bool(value[0] == 0.0)


def _mend_clip(problem, positions, rotations, com, rate, cancel, out: _Frames, homing=None) -> None:
    """Re-solve one by one, from the frame before, each stretch of a clip solver's answer
    ``out`` (solved without the barriers that compare frames) where such a barrier of
    ``problem`` is not zero, until the answer rejoins the clip solver's."""
    act = out.actuators
    # frame k is touched by frame k - 1: decided once, as a stretch ends where the answer
    # rejoins the clip solver's, which it keeps (with what it says of later frames) from there
    later = Targets(positions, rotations, com).take(slice(1, None))
    touched = np.r_[False, coupling_values(problem, out.states[1:], later, out.states[:-1], act[:-1]) > 0.0]
    f = 1
    while (next_touched := np.flatnonzero(touched[f:])).size:
        start = f + int(next_touched[0])
        f = _solve_in_sequence(
            problem, positions, rotations, com, rate, None, cancel, out, start, rejoin=True, homing=homing
        )


def _hold_limits(problem, mechanism, targets: Targets, samples, mapping, out: _Frames) -> dict | None:
    """The clip in ``out`` solved again with every motor limit of ``mechanism`` as a hard
    constraint (:mod:`..solvers.spacetime`: on the differences the limit checks read) if its
    curves break one; ``out`` is updated in place. ``problem`` holds only the motors the
    mapping asks to hold (motors held because the unlimited clip does not need them may
    help where a limit binds). Returns what the solve did (``binding`` (F, A) str: the
    limit that holds each motor at each frame; ``start``, ``iterations``,
    ``converged``), or None when the exact answer already keeps every limit (and is
    kept as it is)."""
    limits = ActuatorLimits.of(mechanism)
    solution = hold_limits(
        problem, targets, out.states, out.actuators, mapping.rate, limits, cyclic=mapping.cyclic
    )
    if solution is None:
        return None
    if not solution.converged:  # never a half-solved answer: the exact one, its violations listed
        warnings.warn(
            LooprigWarning(
                f"the clip solved under its motor limits did not converge in {solution.iterations} "
                "iterations: the exact answer is kept and the limits it breaks are listed "
                "(limit_mode report gives it without trying)"
            ),
            stacklevel=3,
        )
        return None
    changed = solution.changed
    out.actuators[:] = solution.actuators
    out.states[changed], out.residual[changed] = solution.states[changed], solution.residual[changed]
    out.converged[changed] = solution.converged
    R = quat_to_matrix(out.states[changed][..., 3:])
    errors = problem.frame_terms.tracking_errors(out.states[changed], R, targets.take(changed))
    out.position_error[changed], out.orientation_error[changed] = errors
    if problem.com_term is not None:
        diff = (problem.com_term.com(out.states) - targets.com) * (problem.com_term.weight > 0)
        out.com_error[:] = np.linalg.norm(diff, axis=-1)
    return {
        "binding": solution.binding,
        "start": solution.start,
        "iterations": solution.iterations,
        "converged": solution.converged,
        "frames_solved_again": int(changed.sum()),
    }


def retarget(
    mechanism: Mechanism,
    samples: TrackSamples,
    mapping: RetargetMapping,
    initial_state: np.ndarray | None = None,
    settings: IKSettings | None = None,
    progress: Callable[[int, int], None] | None = None,
    cancel: Callable[[], bool] | None = None,
) -> RetargetResult:
    """Solve every frame of a clip; see the module docstring. The motors are those of
    :func:`with_motors` (``mapping.motors``, else the file's, else every joint).

    progress(frame, total) is called every few frames; cancel() returning True
    raises :class:`RetargetCancelled`. Motors may be named by the robot file's
    actuator names or by their joints' (:meth:`RetargetMapping.named_for`).
    """
    given = (mechanism, samples, initial_state)
    mapping = mapping.named_for(mechanism)
    # welded bodies are solved as one (core.model.rigid); states come back for every body
    groups = RigidGroups(mapping.limited(with_motors(mechanism, mapping.motors)))
    mechanism = groups.solver
    if initial_state is not None:
        initial_state = groups.collapse(np.asarray(initial_state, dtype=float))
    state = start_state(mechanism, mapping.start, initial_state)
    clip_times = np.asarray(samples.times, dtype=float)
    samples = samples.resampled(mapping.rate)
    positions, rotations, com = _target_arrays(mapping, samples)
    frames = len(samples.times)
    if frames == 0:
        raise TargetError("the clip has no frames")
    if frames < 2 <= len(clip_times):
        raise TargetError(
            f"a rate of {mapping.rate:g} Hz leaves one frame of a "
            f"{clip_times[-1] - clip_times[0]:.3g} s clip; raise the rate"
        )
    _check_fixed_aims(mechanism, mapping, state)
    asked, holding = mapping, None  # the motors the clip does not need hold still (core.solvers.holding)
    if mapping.auto_hold:
        with single_threaded_blas():
            holding = motors_to_hold(
                *_holding_problem(mechanism, mapping, settings, state, Targets(positions, rotations, com)),
                state,
                mapping.reach_tolerance,
            )
        if holding.unused and initial_state is None and not mapping.start:  # held where assembled
            return _welded_unused(given, mapping, holding, settings, progress, cancel)
        if holding.motors:
            mapping = dataclasses.replace(mapping, hold=(*mapping.hold, *holding.motors))
            warnings.warn(LooprigWarning(holding.message()), stacklevel=2)
    held = _held_values(mechanism, mapping, state)
    problem = build_problem(mechanism, mapping, settings, held=held)
    n_act, k = len(problem.readout.names), positions.shape[1]  # the targets', then the aims' slots
    out = _Frames.empty(frames, state, n_act, k)
    with single_threaded_blas():
        targets = IKTargets(positions[0], rotations[0], None if com is None else com[0])
        first_problem = build_problem(mechanism, mapping, settings, first_frame=True, held=held)
        first = solve_first_frame(first_problem, targets, state, mapping.reach_tolerance)
        first = _homed_first(first_problem, mapping, targets, state, first)
        out.record(0, first)
        if progress is not None:
            progress(1, frames)
        K = problem.constraints.n_vars + problem.constraints.n_rows
        coupled = couples_frames(problem)
        homing = _homing(problem, mapping, state)
        if not mapping.whole_clip or K > CLIP_MAX_KKT or (coupled and not couplings_vanish_inside(problem)):
            _solve_in_sequence(
                problem, positions, rotations, com, mapping.rate, progress, cancel, out, homing=homing
            )
        else:
            clip_problem = problem  # without the barriers that compare frames, which mend it after
            if coupled:
                free = dataclasses.replace(mapping, actuator_weight=0.0, velocity_weight=0.0)
                clip_problem = build_problem(mechanism, free, settings, held=held)
            clip_homing = _homing(clip_problem, mapping, state)
            target_batch = Targets(positions, rotations, com)
            chunk_size = int(np.clip(frames // 8, *CLIP_CHUNK))
            coarse = coarse_states(
                clip_homing or clip_problem, samples.times, target_batch, out.states[0], settings=settings
            )
            starts = clip_starts(samples.times, *coarse)
            for start in range(1, frames, chunk_size):
                if cancel is not None and cancel():
                    raise RetargetCancelled(f"retarget cancelled at frame {start} of {frames}")
                chunk = np.arange(start, min(start + chunk_size, frames))
                chunk_targets = target_batch.take(chunk)
                begin = starts[chunk]
                if clip_homing is not None:
                    begin = solve_clip(clip_homing, chunk_targets, begin, settings=settings).states
                solution = solve_clip(clip_problem, chunk_targets, begin, settings=settings)
                solution = solve_unconverged(clip_problem, chunk_targets, solution, out.states[chunk[0] - 1])
                out.states[chunk] = solution.states
                out.residual[chunk], out.converged[chunk] = solution.residual, solution.converged
                out.iterations[chunk] = solution.iterations
                if progress is not None:
                    progress(int(chunk[-1]) + 1, frames)
            values = problem.readout.read(out.states)
            values[0] = out.actuators[0]
            out.actuators[:] = unwrap_sequence(values, problem.readout.is_angle)
            R = quat_to_matrix(out.states[..., 3:])
            errors = problem.frame_terms.tracking_errors(out.states, R, target_batch)
            out.position_error[:], out.orientation_error[:] = errors
            if problem.com_term is not None:
                diff = (problem.com_term.com(out.states) - com) * (problem.com_term.weight > 0)
                out.com_error[:] = np.linalg.norm(diff, axis=-1)
            if coupled:
                _mend_clip(problem, positions, rotations, com, mapping.rate, cancel, out, homing)
    limit_solve = None
    missed_exactly = _missed(problem, out, Targets(positions, rotations, com), mapping.reach_tolerance)
    if mapping.limit_mode == "hold":
        # the motors held only because the unlimited clip did not need them are free
        held_asked = _held_values(mechanism, asked, state)
        free = (
            problem
            if asked.hold == mapping.hold
            else build_problem(mechanism, asked, settings, held=held_asked)
        )
        with single_threaded_blas():
            limit_solve = _hold_limits(
                free, mechanism, Targets(positions, rotations, com), samples, mapping, out
            )
        if limit_solve is not None:
            limit_solve["released"] = [m for m in mapping.hold if m not in asked.hold]
    curves = ActuatorCurves.from_mechanism(
        mechanism, out.actuators, mapping.rate, float(samples.times[0]), unwrap=False
    )
    binding = None if limit_solve is None else limit_solve.pop("binding")
    missed = _missed(problem, out, Targets(positions, rotations, com), mapping.reach_tolerance)
    aim_error = aim_miss = None
    if mapping.aims:
        aim_error, aim_miss = _aim_errors(problem, out.states, Targets(positions, rotations, com))[:2]
        _warn_near_aims(problem, mapping, out.states, Targets(positions, rotations, com), samples.times)
    # a frame the exact answer met and the limited one misses is the limits' doing
    limited = missed & ~missed_exactly if binding is not None else np.zeros(frames, bool)
    unreachable = missed & ~limited
    result = RetargetResult(
        mapping=asked,
        times=samples.times,
        states=groups.expand(out.states),
        curves=curves,
        position_error=out.position_error[:, : len(mapping.targets)],
        orientation_error=out.orientation_error[:, : len(mapping.targets)],
        com_error=out.com_error,
        residual=out.residual,
        iterations=out.iterations,
        converged=out.converged,
        unreachable=unreachable,
        target_names=[t.frame for t in mapping.targets],
        holding=holding,
        binding=binding,
        limited=limited,
        limit_solve=limit_solve,
        aim_error=aim_error,
        aim_miss=aim_miss,
        aim_names=[a.frame for a in mapping.aims],
    )
    if holding is not None and holding.redundant and unreachable.any():
        return _released(result, given, settings, progress, cancel)
    return result


#: Weight of the pull towards the clip's start that each frame of a clip with aims is solved
#: with first (:func:`_homing`; relative, as :class:`~looprig.core.terms.MotorRest`'s).
AIM_HOMING_WEIGHT = 1e-2


def _homing(problem, mapping: RetargetMapping, state: np.ndarray):
    """With aims, ``problem`` with a pull of the motors towards their values in ``state`` (the
    clip's start), else None.

    An aim leaves its frame free to roll about the line of sight and to move along it (a
    Stewart head: four of its six freedoms); resolved frame to frame by the minimal-motion
    metric alone, that freedom drifts (a gaze that goes round a circle comes back with the
    head moved). Each frame is solved with the pull first (the nearest pose to the start,
    slightly biased), then exactly from there: the exact answer nearest it in the metric,
    whatever the path that led there (as the first frame's motors no target determines are
    brought back to the start, :func:`~looprig.core.solvers.start.solve_first_frame`).
    """
    if not mapping.aims or not len(problem.readout.names):
        return None
    rest = MotorRest(
        problem.readout, problem.readout.read(state), AIM_HOMING_WEIGHT, problem.constraints.length_scale
    )
    return dataclasses.replace(problem, terms=(*problem.terms, rest))


def _homed_first(problem, mapping: RetargetMapping, targets: IKTargets, state, first):
    """With aims, the first frame ``first`` (an :class:`~looprig.core.solvers.ik.IKResult` of
    ``problem``) solved as :func:`_homing` solves the others, when that meets it as well."""
    homing = _homing(problem, mapping, state)
    if homing is None:
        return first
    many = dataclasses.replace(problem.settings, max_iterations=10 * problem.settings.max_iterations)
    homed = solve_ik(homing, targets, state, first.state, settings=many)
    exact = solve_ik(problem, targets, state, homed.state, settings=many)
    frame = Targets(targets.positions[None], targets.rotations[None])

    def miss(result):
        aims = _aim_errors(problem, result.state[None], frame)[1].max()
        return max(aims, float(np.max(result.position_error, initial=0.0)))

    return exact if miss(exact) <= max(mapping.reach_tolerance, miss(first)) else first


def _aim_term(problem) -> AimTask | None:
    return next((t for t in problem.terms if isinstance(t, AimTask)), None)


def _aim_errors(problem, states: np.ndarray, targets: Targets):
    """Per frame and aim (F, M): the aim's angle [rad], its miss [m] and the distance from
    the frame's origin to the point [m] (across a lock axis)."""
    term = _aim_term(problem)
    R = quat_to_matrix(states[..., 3:])
    angle, _, distance = term.angles(states, R, targets)
    return angle, term.misses(states, R, targets), distance


def _missed(problem, out: _Frames, targets: Targets, tolerance: float) -> np.ndarray:
    """(F,) bool: frames whose position error, or an aim's miss, exceeds ``tolerance`` [m]."""
    missed = np.max(out.position_error, axis=1, initial=0.0) > tolerance
    if _aim_term(problem) is not None:
        missed |= _aim_errors(problem, out.states, targets)[1].max(axis=1) > tolerance
    return missed


#: A fixed aim point nearer than this [m] to its frame's origin at the start is refused.
AIM_AT_ORIGIN = 1e-6


def _check_fixed_aims(mechanism: Mechanism, mapping: RetargetMapping, state: np.ndarray) -> None:
    """A fixed aim point at its frame's origin (at the clip's start) is a one-line
    :class:`TargetError` naming the aim."""
    fixed = [(i, a) for i, a in enumerate(mapping.aims) if a.point is not None]
    if not fixed:
        return
    aims = mapping.aim_objectives(mechanism)
    term = AimTask(mechanism, [aims[i] for i, _ in fixed], np.arange(len(fixed)))
    points = np.array([a.point for _, a in fixed], dtype=float)[None]
    upright = np.broadcast_to(np.eye(3), points.shape + (3,))
    geo = term.geometry(state[None], quat_to_matrix(state[None, :, 3:]), Targets(points, upright))
    for (i, aim), distance in zip(fixed, np.linalg.norm(geo["d"][0], axis=-1), strict=True):
        if distance < AIM_AT_ORIGIN:
            raise TargetError(
                f"mapping aim {i} ({aim.frame!r}): the point {list(aim.point)} is at the frame's origin "
                f"({distance * 1000:.3g} mm from it at the start): an aim needs a point away from it"
            )


def _warn_near_aims(problem, mapping: RetargetMapping, states, targets: Targets, times) -> None:
    """One warning per stretch of frames where an aim's point is nearer its frame's origin
    than the aim's ``min_distance``."""
    distance = _aim_errors(problem, states, targets)[2]
    for i, aim in enumerate(mapping.aims):
        near = np.r_[False, distance[:, i] < aim.min_distance, False]
        edges = np.flatnonzero(np.diff(near.astype(int)))
        for start, end in zip(edges[::2], edges[1::2] - 1, strict=True):
            closest = distance[start : end + 1, i].min()
            warnings.warn(
                LooprigWarning(
                    f"aim {i} ({aim.frame!r}) at {aim.source}: the point is within {aim.min_distance:g} m of "
                    f"the frame's origin at t = {times[start]:.4g}-{times[end]:.4g} s (closest "
                    f"{closest * 1000:.3g} mm): the line of sight turns fast there"
                ),
                stacklevel=3,
            )


def _holding_problem(mechanism, mapping: RetargetMapping, settings, state, targets: Targets):
    """The first-frame problem and the clip's targets :func:`~looprig.core.solvers.holding.motors_to_hold`
    decides on: with aims, each aim tracked as the direction of a frame of its body
    (:func:`~looprig.core.terms.aim.holding_view`; holding reads frame objectives only)."""
    problem = build_problem(
        mechanism, mapping, settings, first_frame=True, held=_held_values(mechanism, mapping, state)
    )
    if not mapping.aims:
        return problem, targets
    k, aims = len(mapping.targets), mapping.aim_objectives(mechanism)
    points, ups = targets.positions[:, k:], targets.rotations[:, k:, :, 2]
    proxy_mechanism, proxies, positions, rotations = holding_view(mechanism, aims, points, ups, state)
    locks = tuple(t for t in problem.terms if not isinstance(t, AimTask))
    problem = dataclasses.replace(
        problem, mechanism=proxy_mechanism, frames=(*problem.frames[:k], *proxies), terms=locks
    )
    positions = np.concatenate([targets.positions[:, :k], positions], axis=1)
    rotations = np.concatenate([targets.rotations[:, :k], rotations], axis=1)
    return problem, Targets(positions, rotations, targets.com)


def _welded_unused(given, mapping: RetargetMapping, holding: Holding, settings, progress, cancel):
    """The clip solved with the motors no target depends on welded where the robot is
    assembled, its start (:func:`~looprig.core.model.rigid.welded`): their bodies merge
    into those they are welded to (:mod:`..model.rigid`) instead of being locked row by row
    (ToddlerBot's head nod: 2 motors and 6 bodies to solve, not 30 and 46). The rest as
    :func:`retarget` does on that robot; the curves have every motor, the welded ones
    constant; ``mapping``: named for the robot, ``holding``: the decision on it."""
    mechanism, samples, _ = given
    warnings.warn(LooprigWarning(holding.message()), stacklevel=3)
    robot = mapping.limited(with_motors(mechanism, mapping.motors))
    inner = dataclasses.replace(
        mapping,
        motors=None,
        hold=tuple(m for m in mapping.hold if m not in holding.unused),
        motor_limits=None,
        servo=None,
        derive_acceleration=False,
    )
    with warnings.catch_warnings():  # the held motors are said once, above
        warnings.filterwarnings("ignore", "held at their start values", LooprigWarning)
        result = retarget(welded(robot, holding.unused), samples, inner, None, settings, progress, cancel)
    names = robot.actuator_names
    values = np.empty((len(result.times), len(names)))
    binding = None if result.binding is None else np.full(values.shape, "", dtype=result.binding.dtype)
    for a, name in enumerate(names):
        if name in holding.unused:
            values[:, a] = holding.values[name]
            continue
        k = result.curves.names.index(name)
        values[:, a] = result.curves.values[:, k]
        if binding is not None:
            binding[:, a] = result.binding[:, k]
    inner_holding = result.holding or Holding()
    result.curves = ActuatorCurves.from_mechanism(
        robot, values, mapping.rate, float(result.times[0]), unwrap=False
    )
    result.binding, result.mapping = binding, mapping
    result.holding = dataclasses.replace(
        inner_holding,
        unused=holding.unused + inner_holding.unused,
        values={**{m: holding.values[m] for m in holding.unused}, **inner_holding.values},
        passes=holding.passes + inner_holding.passes,
        seconds=holding.seconds + inner_holding.seconds,
    )
    return result


def _released(result: RetargetResult, given, settings, progress, cancel) -> RetargetResult:
    """The clip solved again with the redundant motors :mod:`..solvers.holding` held set free, when
    that leaves fewer frames unreachable (a frame between the coarse pass's needed them);
    ``given``: retarget's mechanism, samples and initial state."""
    holding, asked = result.holding, result.mapping
    mapping = dataclasses.replace(asked, hold=(*asked.hold, *holding.unused), auto_hold=False)
    mechanism, samples, initial_state = given
    freed = retarget(mechanism, samples, mapping, initial_state, settings, progress, cancel)
    missed = int(result.unreachable.sum())
    if freed.unreachable.sum() >= missed:
        return result
    why = f"released: {missed} frame(s) unreachable with it held"
    freed.mapping = asked
    freed.holding = dataclasses.replace(
        holding,
        redundant=(),
        values={name: holding.values[name] for name in holding.unused},
        kept_free={**holding.kept_free, **dict.fromkeys(holding.redundant, why)},
    )
    message = f"{', '.join(holding.redundant)} {why}; solved again with it free"
    warnings.warn(LooprigWarning(message), stacklevel=3)
    return freed
