"""Retargeting: a clip of tracked frames + a mapping -> robot motion and motor curves.

:func:`retarget` builds the problem (:mod:`.problem`: motors, welded bodies, the clip
resampled to the solve rate and read as targets, the start pose, the motors to hold),
solves every frame (:mod:`.solve`) and reports (:mod:`.report`). Two outcomes of the
holding decision solve a related problem instead: the motors no target needs welded
where the robot is assembled (:func:`_solved_welded`), and redundant motors set free
again when holding them left frames unreachable (:func:`_released`). The mapping and
its file form live in :mod:`.mapping`.
"""

import dataclasses
import warnings
from collections.abc import Callable

import numpy as np

from ..curves.actuator_curves import ActuatorCurves
from ..errors import LooprigWarning
from ..model.mechanism import Mechanism
from ..model.rigid import welded
from ..solvers.ik import IKSettings
from ..tracks.samples import TrackSamples
from .mapping import RetargetMapping
from .problem import RetargetProblem, build_retarget, with_motors
from .report import RetargetResult, report
from .solve import solve_frames


def retarget(
    mechanism: Mechanism,
    samples: TrackSamples,
    mapping: RetargetMapping,
    initial_state: np.ndarray | None = None,
    settings: IKSettings | None = None,
    progress: Callable[[int, int], None] | None = None,
    cancel: Callable[[], bool] | None = None,
) -> RetargetResult:
    """Solve every frame of a clip: build, solve, report (see the module docstring).

    mechanism: the robot (its motors those of :func:`~.problem.with_motors`:
    ``mapping.motors``, else the file's, else every joint); samples: the clip, any rate;
    initial_state (n, 7): where the robot starts (default: assembled at the mapping's
    ``start``). progress(frame, total) is called every few frames; cancel() returning
    True raises :class:`~.solve.RetargetCancelled`. Motors may be named by the robot
    file's actuator names or by their joints' (:meth:`RetargetMapping.named_for`).
    """
    problem = build_retarget(mechanism, samples, mapping, initial_state, settings)
    if problem.welds_unused:
        result = _solved_welded(problem, progress, cancel)
    else:
        result = report(problem, solve_frames(problem, progress, cancel))
    if problem.holding is not None and problem.holding.redundant and result.unreachable.any():
        return _released(result, problem, progress, cancel)
    return result


def _solved_welded(problem: RetargetProblem, progress, cancel) -> RetargetResult:
    """The clip solved with the motors no target depends on welded where the robot is
    assembled, its start (:func:`~looprig.core.model.rigid.welded`): their bodies merge
    into those they are welded to (:mod:`..model.rigid`) instead of being locked row by row
    (ToddlerBot's head nod: 2 motors and 6 bodies to solve, not 30 and 46). The rest as
    :func:`retarget` does on that robot, its redundant motors held as the decision found
    them (it locked the unused ones first: the same question on the welded robot); the
    curves have every motor, the welded ones constant."""
    mechanism, samples, settings = problem.inputs.mechanism, problem.inputs.samples, problem.settings
    mapping, holding = problem.asked, problem.holding
    warnings.warn(LooprigWarning(holding.message()), stacklevel=3)
    robot = mapping.limited(with_motors(mechanism, mapping.motors))
    inner = dataclasses.replace(
        mapping,
        motors=None,
        hold=(*(m for m in mapping.hold if m not in holding.unused), *holding.redundant),
        auto_hold=False,
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
    result.curves = ActuatorCurves.from_mechanism(
        robot, values, mapping.rate, float(result.times[0]), unwrap=False
    )
    result.binding, result.mapping, result.holding = binding, mapping, holding
    return result


def _released(result: RetargetResult, problem: RetargetProblem, progress, cancel) -> RetargetResult:
    """The clip solved again with the redundant motors :mod:`..solvers.holding` held set free, when
    that leaves fewer frames unreachable (a frame between the coarse pass's needed them)."""
    holding, asked = result.holding, result.mapping
    mapping = dataclasses.replace(asked, hold=(*asked.hold, *holding.unused), auto_hold=False)
    given = problem.inputs
    freed = retarget(
        given.mechanism, given.samples, mapping, given.initial_state, given.settings, progress, cancel
    )
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
