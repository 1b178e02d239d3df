"""Build: a robot file's mechanism, a clip and a mapping -> the retarget problem.

The motors are decided (:func:`with_motors`), welded bodies merged
(:class:`~looprig.core.model.rigid.RigidGroups`), the clip resampled to the solve
rate and read as targets per frame, the start pose assembled, the motors the clip
does not need chosen to hold (:mod:`~looprig.core.solvers.holding`), and the IK
problems of the frames built from the mapping (:func:`build_problem`). Everything a
solve depends on is a property of the :class:`RetargetProblem`, not a path.
"""

import dataclasses
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..errors import LooprigWarning, TargetError, did_you_mean
from ..maths.linalg import single_threaded_blas
from ..model.mechanism import Mechanism
from ..model.parts import Actuator, JointKind
from ..model.primitives import mean_joint_distance
from ..model.readoff import ActuatorReadout
from ..model.rigid import RigidGroups
from ..solvers.clip import couples_frames, couplings_vanish_inside
from ..solvers.holding import Holding, motors_to_hold
from ..solvers.ik import IKProblem, IKSettings
from ..solvers.start import start_state
from ..terms import AimTask, ComObjective, FrameObjective, MotorLock, Targets
from ..tracks.samples import TrackSamples
from .aims import aims_as_frames, check_fixed_aims, with_homing
from .mapping import RetargetMapping
from .targets import held_values, target_arrays

#: KKT size (unknowns + constraint rows) above which frames are solved one by one even
#: when they could be solved together. The largest reference mechanism, the walker
#: (354 rows), has competing objectives: warm-started from the previous frame's answer
#: a frame of its CoM gait needs about 3 iterations, from an interpolated start 6 and
#: some 50 (tests/test_retargeting.py's step at 60 fps: 0.68 s frame by frame, 1.08 s
#: as a clip).
CLIP_MAX_KKT = 300


@dataclass
class RetargetInputs:
    """What :func:`~looprig.core.retarget.retarget` was given: the robot as its file has it,
    the clip as tracked, the mapping named for the robot, the start state (n, 7) or None,
    and the IK settings or None."""

    mechanism: Mechanism
    samples: TrackSamples
    mapping: RetargetMapping
    initial_state: np.ndarray | None
    settings: IKSettings | None


@dataclass
class RetargetProblem:
    """A retarget, built: ``robot`` is what is solved (motors decided, welded bodies merged
    by ``groups``), ``state`` (n, 7) its start; ``samples`` the clip at the solve rate
    (F frames) and ``targets`` the mapping's per frame (the targets', then the aims'
    slots); ``asked`` the mapping as given (named for the robot), ``mapping`` with the
    motors ``holding`` decided to hold added; ``welds_unused``: the motors no target
    needs are welded where the robot is assembled and the robot solved without them."""

    inputs: RetargetInputs
    asked: RetargetMapping
    mapping: RetargetMapping
    groups: RigidGroups
    state: np.ndarray
    samples: TrackSamples
    targets: Targets
    holding: Holding | None = None
    welds_unused: bool = False

    @property
    def robot(self) -> Mechanism:
        return self.groups.solver

    @property
    def frames(self) -> int:
        return len(self.samples.times)

    @property
    def settings(self) -> IKSettings | None:
        return self.inputs.settings

    def ik(self, mapping: RetargetMapping | None = None, first_frame: bool = False) -> IKProblem:
        """The IK problem of every frame (``first_frame``: of the first, without the terms
        that compare with a previous frame) for ``mapping`` (default: the solved one), its
        ``hold`` motors locked at their values in the start state."""
        mapping = mapping or self.mapping
        held = held_values(self.robot, mapping, self.state)
        return build_problem(self.robot, mapping, self.settings, first_frame=first_frame, held=held)

    @cached_property
    def frame_ik(self) -> IKProblem:
        return self.ik()

    @cached_property
    def homing(self) -> IKProblem | None:
        """With aims, :attr:`frame_ik` with a pull towards the start (:func:`~.aims.with_homing`)."""
        return with_homing(self.frame_ik, self.mapping, self.state)

    @property
    def couples_frames(self) -> bool:
        """Whether a term compares a frame with the previous one."""
        return couples_frames(self.frame_ik)

    @property
    def solves_whole_clip(self) -> bool:
        """Whether the frames after the first are solved together (the clip solver), not one
        by one: the mapping allows it, the KKT system is small enough
        (:data:`CLIP_MAX_KKT`) and every term between frames vanishes inside its bounds."""
        problem = self.frame_ik
        K = problem.constraints.n_vars + problem.constraints.n_rows
        coupled = self.couples_frames and not couplings_vanish_inside(problem)
        return self.mapping.whole_clip and K <= CLIP_MAX_KKT and not coupled

    @property
    def limits_ik(self) -> IKProblem:
        """The problem solved again under the motor limits: only the motors the mapping asks
        to hold are held (those held because the unlimited clip did not need them may help
        where a limit binds)."""
        return self.frame_ik if self.asked.hold == self.mapping.hold else self.ik(self.asked)


def build_retarget(
    mechanism: Mechanism,
    samples: TrackSamples,
    mapping: RetargetMapping,
    initial_state: np.ndarray | None = None,
    settings: IKSettings | None = None,
) -> RetargetProblem:
    """The :class:`RetargetProblem` of a clip (see the module docstring); raises
    :class:`~looprig.core.errors.TargetError` for a clip the mapping cannot drive."""
    mapping = mapping.named_for(mechanism)
    inputs = RetargetInputs(mechanism, samples, mapping, initial_state, settings)
    groups = RigidGroups(mapping.limited(with_motors(mechanism, mapping.motors)))
    if initial_state is not None:
        initial_state = groups.collapse(np.asarray(initial_state, dtype=float))
    state = start_state(groups.solver, mapping.start, initial_state)
    resampled = samples.resampled(mapping.rate)
    targets = Targets(*target_arrays(mapping, resampled))
    _check_frame_count(np.asarray(samples.times, dtype=float), len(resampled.times), mapping.rate)
    check_fixed_aims(groups.solver, mapping, state)
    problem = RetargetProblem(inputs, mapping, mapping, groups, state, resampled, targets)
    if mapping.auto_hold:
        _decide_holding(problem, initial_state is None and not mapping.start)
    return problem


def _check_frame_count(clip_times: np.ndarray, frames: int, rate: float) -> None:
    """A clip without frames, or one the rate leaves one frame of, is a :class:`TargetError`."""
    if frames == 0:
        raise TargetError("the clip has no frames")
    if frames < 2 <= len(clip_times):
        raise TargetError(
            f"a rate of {rate:g} Hz leaves one frame of a "
            f"{clip_times[-1] - clip_times[0]:.3g} s clip; raise the rate"
        )


def _decide_holding(problem: RetargetProblem, starts_assembled: bool) -> None:
    """The motors the clip does not need, held still
    (:func:`~looprig.core.solvers.holding.motors_to_hold`): welded where the robot is
    assembled when the clip starts there (``starts_assembled``), else locked at their
    start values (added to ``problem.mapping``'s ``hold``)."""
    with single_threaded_blas():
        first = problem.ik(first_frame=True)
        first, targets = aims_as_frames(first, problem.mapping, problem.state, problem.targets)
        problem.holding = motors_to_hold(first, targets, problem.state, problem.mapping.reach_tolerance)
    if problem.holding.unused and starts_assembled:
        problem.welds_unused = True
    elif problem.holding.motors:
        hold = (*problem.mapping.hold, *problem.holding.motors)
        problem.mapping = dataclasses.replace(problem.mapping, hold=hold)
        warnings.warn(LooprigWarning(problem.holding.message()), stacklevel=4)


def build_problem(
    mechanism: Mechanism,
    mapping: RetargetMapping,
    settings: IKSettings | None = None,
    first_frame: bool = False,
    held: np.ndarray | None = None,
) -> IKProblem:
    """The IK problem a mapping defines (frame targets in mapping order, CoM, aims).

    Each aim gets a frame objective of zero weight after the targets, whose target slot
    carries its point and up direction (:func:`~looprig.core.retarget.targets.target_arrays`),
    and the aims one :class:`~looprig.core.terms.AimTask`.

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
            held = held_values(mechanism, mapping, mechanism.initial_state())
        motors = [mechanism.actuator_names.index(name) for name in mapping.hold]
        terms = (MotorLock(ActuatorReadout.of(mechanism), motors, held, mean_joint_distance(mechanism)),)
    if aims:
        k = len(mapping.targets)
        terms = (*terms, AimTask(mechanism, aims, np.arange(k, k + len(aims))))
    return IKProblem(mechanism, frames, com, regularization, settings or IKSettings(), terms)


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
