"""Where a clip starts: the start pose and the first frame, solved exactly.

The first frame has no previous frame to stay near. It is solved from the
clip's start with the minimal-motion metric only shaping the steps; a start with
no gradient towards the target (a singular file pose, such as a slider-crank's
dead centre) is escaped by seeded restarts from perturbed motors, after which
motors that no target determines are brought back to the start.
"""

import dataclasses
from collections.abc import Mapping

import numpy as np

from ..errors import TargetError, did_you_mean
from ..maths.rotations import retract
from ..model.mechanism import Mechanism
from ..model.mobility import analyse_mobility
from ..model.readoff import ActuatorReadout
from ..terms import MotorRest
from .fk import FKSettings, solve_constraints, solve_fk, solve_fk_path
from .ik import IKProblem, IKTargets, solve_ik


def start_state(
    mechanism: Mechanism, start: Mapping[str, float] | None = None, initial_state=None
) -> np.ndarray:
    """Where a clip's solve starts: (n, 7) states.

    ``initial_state`` (n, 7) if given; else the file pose with the motors named in
    ``start`` (name -> value [rad | m]) moved there by continuation from the file
    pose (:func:`~looprig.core.solvers.fk.solve_fk_path`: the assembly mode and every
    motor's branch are kept, however far the values), the other motors held at
    their file values; where the motors over-determine the mechanism (more motors
    than degrees of freedom, as the Dancer's), the others follow as the loops
    require. A start the mechanism cannot reach so is a :class:`TargetError`
    naming the motors and the nearest values on the way that it reaches.
    """
    if initial_state is not None:
        state = np.asarray(initial_state, dtype=float)
        if state.shape != (len(mechanism.bodies), 7) or not np.all(np.isfinite(state)):
            raise TargetError(f"initial state must be finite with shape ({len(mechanism.bodies)}, 7)")
        return state
    if not start:
        return mechanism.initial_state()
    names = mechanism.actuator_names
    for name in start:
        if name not in names:
            raise TargetError("mapping start: " + did_you_mean("actuator", name, names))
    moving = mechanism
    if analyse_mobility(mechanism).dof < len(names):  # over-actuated: free the motors not named
        joints = [
            j if j.actuator_name in start else dataclasses.replace(j, actuator=None) for j in mechanism.joints
        ]
        moving = Mechanism(mechanism.bodies, joints, mechanism.frames, mechanism.name, mechanism.couplings)
    moving_names = moving.actuator_names
    values = ActuatorReadout.of(moving).read(mechanism.initial_state())
    for name, value in start.items():
        values[moving_names.index(name)] = value
    path = solve_fk_path(moving, values)
    if path.complete:
        return path.result.state
    units = {j.actuator_name: j.actuator.unit for j in mechanism.actuated_joints}
    asked = ", ".join(f"{n} = {v:.6g} {units[n]}" for n, v in start.items())
    nearest = ", ".join(f"{n} = {path.reached[moving_names.index(n)]:.4g} {units[n]}" for n in start)
    held = (
        ""
        if moving is not mechanism or len(start) == len(names)
        else " with the other motors at their file values"
    )
    raise TargetError(
        f"mapping start: the robot cannot assemble at {asked}{held}; the nearest it reaches "
        f"on the way from its file pose is {nearest}"
    )


#: Extra starts tried for a first frame that is not met from the given start (a
#: singular file pose such as a slider-crank's dead centre has no gradient).
FIRST_FRAME_STARTS = 8


def solve_first_frame(problem: IKProblem, targets: IKTargets, state: np.ndarray, reach_tolerance: float):
    """Solve frame 0 to full accuracy from ``state`` (n, 7), the clip's start.

    ``problem`` has no terms that compare with a previous frame (velocity barriers,
    acceleration cost); the minimal-motion metric only shapes the steps, and the
    solver gets ten times the iterations; the frame is met when its position
    error is below ``reach_tolerance`` [m]. When the target is still missed, up to
    :data:`FIRST_FRAME_STARTS` perturbed starts (seeded, so reproducible) are tried
    (motor values moved by about 0.5 rad or 0.5 L, assembled by FK, each solved with
    the normal iteration limit) and the closest answer is kept; two restarts that
    end where the best did mean the target is out of reach, and stop the search.
    """
    mechanism = problem.mechanism
    many = dataclasses.replace(problem.settings, max_iterations=10 * problem.settings.max_iterations)
    best = solve_ik(problem, targets, state, settings=many)
    if _frame_error(best) <= reach_tolerance:
        return best
    rng = np.random.default_rng(0)
    cs, readout = problem.constraints, problem.readout
    values = readout.read(state)
    spread = np.where(readout.is_angle, 0.5, 0.5 * cs.length_scale)  # [rad | m]
    tangent_scale = np.r_[np.full(3, 0.1 * cs.length_scale), np.full(3, 0.1)]
    agreeing = 0  # restarts that end where the first solve did: a true optimum, not a trap
    for _ in range(FIRST_FRAME_STARTS):
        if len(values):  # move the motors: the robot stays in its assembly mode
            start = solve_fk(
                mechanism, values + spread * rng.normal(size=len(values)), state, raise_on_failure=False
            )
        else:
            moved = retract(state, rng.normal(size=state.shape[:-1] + (6,)) * tangent_scale)
            start = solve_constraints(cs, moved, None, FKSettings())
        if not start.converged:
            continue
        result = solve_ik(problem, targets, start.state)
        if _frame_error(result) < _frame_error(best) - reach_tolerance * 1e-3:
            best, agreeing = result, 0
        elif abs(_frame_error(result) - _frame_error(best)) <= 1e-6 * _frame_error(best):
            agreeing += 1
        if _frame_error(best) <= reach_tolerance or agreeing >= 2:
            break
    if best.actuators.size and _frame_error(best) <= reach_tolerance:
        # motors that no target determines go back to where the clip starts: pull them
        # there (a slight bias), then solve exactly from that pose
        rest = MotorRest(problem.readout, values, 1e-3, cs.length_scale)
        homing = dataclasses.replace(problem, terms=(*problem.terms, rest))
        homed = solve_ik(homing, targets, best.state, settings=many)
        exact = solve_ik(problem, targets, homed.state, settings=many)
        if _frame_error(exact) <= reach_tolerance:
            best = exact
    return best


def _frame_error(result) -> float:
    return float(np.max(result.position_error, initial=0.0))
