"""Forward kinematics: actuator values -> assembled state (paper III.C).

``min_s 1/2 |C_FK(p, s)|^2`` by Gauss-Newton steps with backtracking line
search, switching to Levenberg-Marquardt (adaptive damping) when a full
Gauss-Newton step cannot make progress, as from far starts. The normal
equations carry a tiny damping so that redundant constraints (planar loops)
do not make them singular.

A far goal (an angle more than about a quarter turn from the start, where a
direct solve can settle on the mirror solution) is reached by continuation,
:func:`solve_fk_path`: small FK steps along the straight line in motor space,
each warm-started from the last assembly, so the robot keeps its assembly
mode and every motor its branch.
"""

from dataclasses import dataclass

import numpy as np

from ..errors import SolverError
from ..maths.rotations import retract
from ..model.constraints import ConstraintSet
from ..model.mechanism import Mechanism
from ..model.readoff import ActuatorReadout


@dataclass(frozen=True)
class FKSettings:
    """Tolerances and limits of the forward-kinematics solver.

    tolerance: converged when ``max|C| <= tolerance * L`` (L: mean joint distance).
    stationarity, stall_decrease: a residual whose gradient vanishes
    (``|J^T C| <= stationarity * max diag(J^T J)``) or that three accepted steps in a
    row reduce by less than ``stall_decrease`` (relative) means the actuator values
    are infeasible: the returned state is the minimum-norm residual configuration.
    """

    tolerance: float = 1e-11
    max_iterations: int = 200
    stationarity: float = 1e-14
    stall_decrease: float = 1e-9  # relative cost decrease that counts as no progress
    damping: float = 1e-12  # relative Tikhonov term for rank-deficient J^T J
    max_step: float = 0.5  # largest step component [m or rad]
    max_backtracks: int = 30


@dataclass
class FKResult:
    """Outcome of :func:`solve_fk`.

    state: (n, 7) bodies ``[c, q]``; residual: max |C| [m]; converged: residual at
    tolerance; infeasible: stalled at a non-zero minimum (actuator values that no
    assembly satisfies); worst_joint: joint with the largest residual row.
    """

    state: np.ndarray
    residual: float
    iterations: int
    converged: bool
    infeasible: bool
    worst_joint: str
    message: str


def solve_constraints(
    constraints: ConstraintSet,
    state: np.ndarray,
    actuator_values=None,
    settings: FKSettings = FKSettings(),
) -> FKResult:
    """Drive ``C(s)`` to zero from ``state``.

    Gauss-Newton steps with backtracking while they make good progress (a warm
    start needs one or two); after a step that had to be cut below a quarter,
    Levenberg-Marquardt with gain-ratio damping (Nielsen's rule) takes over.
    A residual that stops decreasing is reported as infeasible.
    """
    tol = constraints.tolerance(settings.tolerance)
    state = np.array(state, dtype=float)
    C, blocks = constraints.evaluate(state, actuator_values)
    cost = 0.5 * C @ C
    mu = None  # Levenberg-Marquardt damping; None while Gauss-Newton works
    growth = 2.0
    stalled = 0
    escaped = False
    infeasible = False
    iteration = 0
    for iteration in range(1, settings.max_iterations + 1):
        if np.max(np.abs(C), initial=0.0) <= tol:
            iteration -= 1
            break
        J = constraints.dense(blocks)
        g = J.T @ C
        JTJ = J.T @ J
        scale = max(float(np.max(np.diag(JTJ))), 1e-300)
        if np.max(np.abs(g)) <= settings.stationarity * scale:
            if escaped:
                infeasible = True
                break
            # a stationary point with a residual may be a saddle or maximum of |C|^2
            # (an angle actuator started a quarter turn away): nudge once and go on
            escaped = True
            nudge = np.random.default_rng(0).normal(scale=1e-4, size=len(g))
            state = retract(state, constraints.tangent_to_bodies(nudge))
            C, blocks = constraints.evaluate(state, actuator_values)
            cost = 0.5 * C @ C
            continue
        damping = settings.damping * scale if mu is None else mu
        step = -np.linalg.solve(JTJ + damping * np.eye(len(g)), g)
        step *= min(1.0, settings.max_step / max(np.max(np.abs(step)), 1e-300))
        if mu is None:
            alpha = 1.0
            for _ in range(settings.max_backtracks):
                trial = retract(state, constraints.tangent_to_bodies(alpha * step))
                C_new, blocks_new = constraints.evaluate(trial, actuator_values)
                cost_new = 0.5 * C_new @ C_new
                if cost_new <= cost + 1e-4 * alpha * (g @ step):
                    break
                alpha *= 0.5
            accepted = cost_new < cost
            if alpha < 0.25:
                mu = 1e-3 * scale  # far from a solution: hand over to Levenberg-Marquardt
        else:
            trial = retract(state, constraints.tangent_to_bodies(step))
            C_new, blocks_new = constraints.evaluate(trial, actuator_values)
            cost_new = 0.5 * C_new @ C_new
            predicted = -(g @ step) - 0.5 * step @ JTJ @ step
            gain = (cost - cost_new) / max(predicted, 1e-300)
            accepted = gain > 0
            if accepted:
                mu *= max(1.0 / 3.0, 1.0 - (2.0 * gain - 1.0) ** 3)
                growth = 2.0
            else:
                mu *= growth
                growth *= 2.0
        if accepted:
            decrease = (cost - cost_new) / max(cost, 1e-300)
            state, C, blocks, cost = trial, C_new, blocks_new, cost_new
            stalled = stalled + 1 if decrease < settings.stall_decrease else 0
        if stalled >= 3 or (mu is not None and mu > 1e12 * scale):
            infeasible = True
            break
    residual = float(np.max(np.abs(C), initial=0.0))
    converged = residual <= tol
    worst = constraints.worst_joint(C) if len(C) else ""
    if converged:
        message = f"assembled in {iteration} iterations, residual {residual:.3g} m"
    elif infeasible:
        message = (
            f"no assembly satisfies the actuator values: minimum-norm residual {residual:.3g} m, "
            f"largest at joint {worst!r}"
        )
    else:
        message = (
            f"did not converge in {settings.max_iterations} iterations: residual {residual:.3g} m, "
            f"largest at joint {worst!r}"
        )
    return FKResult(state, residual, iteration, converged, infeasible and not converged, worst, message)


def solve_fk(
    mechanism: Mechanism,
    actuator_values,
    initial_state: np.ndarray | None = None,
    settings: FKSettings = FKSettings(),
    raise_on_failure: bool = True,
    constraints: ConstraintSet | None = None,
) -> FKResult:
    """Assembled state for actuator values (radians / metres, actuator order).

    Starts from ``initial_state`` (default: the initial configuration). Raises
    :class:`SolverError` (with ``.result``) when it fails, unless
    ``raise_on_failure`` is False. Pass a prebuilt ``constraints`` (actuated) to
    skip rebuilding it in loops.
    """
    constraints = constraints or ConstraintSet(mechanism, actuated=True)
    p = np.asarray(actuator_values, dtype=float).reshape(-1)
    if p.shape != (constraints.n_actuators,):
        raise SolverError(
            f"mechanism {mechanism.name!r} has {constraints.n_actuators} actuators "
            f"({', '.join(mechanism.actuator_names)}), got {p.size} values"
        )
    if not np.all(np.isfinite(p)):
        raise SolverError(f"actuator values must be finite, got {p.tolist()}")
    start = mechanism.initial_state() if initial_state is None else initial_state
    result = solve_constraints(constraints, start, p, settings)
    if result.converged:
        _check_actuator_branch(mechanism, result, p)
    if raise_on_failure and not result.converged:
        raise SolverError(f"forward kinematics of {mechanism.name!r}: {result.message}", result)
    return result


@dataclass
class FKPath:
    """Outcome of :func:`solve_fk_path`.

    result: FK at the last motor values reached (the goal when ``complete``);
    reached: (A,) those motor values [rad | m], actuator order; complete: the
    whole path assembled; steps: FK solves tried.
    """

    result: FKResult
    reached: np.ndarray
    complete: bool
    steps: int


def solve_fk_path(
    mechanism: Mechanism,
    actuator_values,
    initial_state: np.ndarray | None = None,
    settings: FKSettings = FKSettings(),
    max_step: float = 0.25,
    min_step: float = 1e-5,
) -> FKPath:
    """Assemble at ``actuator_values`` (A,) [rad | m] by continuation from ``initial_state``.

    ``initial_state`` (n, 7), assembled (default: the file pose), gives the motor
    values the path starts from (its read-off). Each step moves every motor by
    at most ``max_step`` (rad, or ``max_step`` L for displacements, L the mean
    joint distance [m]) along the straight line to the goal, solved by
    :func:`solve_fk` from the previous assembly; a step that does not assemble
    (on the goal's branch) is halved. Where the line leaves what the mechanism
    can reach, the step falls below ``min_step`` (same units): the path stops
    there, ``complete`` False, and ``reached`` holds the nearest values on the
    line that assemble (within ``min_step``).
    """
    constraints = ConstraintSet(mechanism, actuated=True)
    goal = np.asarray(actuator_values, dtype=float).reshape(-1)
    start = mechanism.initial_state() if initial_state is None else np.asarray(initial_state, dtype=float)
    readout = ActuatorReadout.of(mechanism)
    here = readout.read(start, previous=goal)
    scale = np.where(readout.is_angle, 1.0, constraints.length_scale)  # [rad | m] per unit step
    distance = float(np.max(np.abs(goal - here) / scale, initial=0.0))  # path length in steps' units
    done, step, steps = 0.0, max_step, 0
    result = solve_fk(mechanism, here, start, settings, raise_on_failure=False, constraints=constraints)
    while result.converged and done < distance:
        steps += 1
        size = min(step, distance - done)
        values = here + (goal - here) * ((done + size) / distance)
        trial = solve_fk(
            mechanism, values, result.state, settings, raise_on_failure=False, constraints=constraints
        )
        if trial.converged:
            result, done, step = trial, done + size, min(max_step, 2.0 * step)
        elif size > min_step:
            step = size / 2.0
        else:
            break
    reached = here + (goal - here) * (done / distance) if distance > 0 else here
    return FKPath(result, reached if done < distance else goal, result.converged and done >= distance, steps)


def _check_actuator_branch(mechanism: Mechanism, result: FKResult, p: np.ndarray) -> None:
    """Flag a state whose read-off differs from the requested values.

    One dot-product row per angle actuator is also zero at ``angle + pi``; a far
    start can land there. Such a result is marked not converged.
    """
    readout = ActuatorReadout.of(mechanism)
    got = readout.read(result.state, previous=p)
    wrong = np.flatnonzero(np.abs(got - p) > 1e-6 * max(1.0, np.abs(p).max()))
    if len(wrong):
        k = wrong[0]
        result.converged = False
        result.message = (
            f"actuator {readout.names[k]!r} settled at {got[k]:.6g} instead of {p[k]:.6g} "
            "(the mirror solution); start from a state closer to the target, or reach it by "
            "continuation (solve_fk_path)"
        )


def assemble(
    mechanism: Mechanism,
    state: np.ndarray | None = None,
    settings: FKSettings = FKSettings(),
    raise_on_failure: bool = True,
) -> FKResult:
    """Close the loops of a mechanism whose state violates them (actuators free).

    Useful for models whose zero configuration does not satisfy the closures.
    """
    constraints = ConstraintSet(mechanism, actuated=False)
    start = mechanism.initial_state() if state is None else state
    result = solve_constraints(constraints, start, None, settings)
    if raise_on_failure and not result.converged:
        raise SolverError(f"assembling {mechanism.name!r}: {result.message}", result)
    return result
