"""State-based inverse kinematics (paper IV.C(b), eq. 3): the per-frame SQP on an
:class:`~looprig.core.solvers.problem.IKProblem` (its linearised step is :mod:`.step`).

Actuated joints become passive (the robot is a puppet) and the solver works
directly on body states::

    min_s  f_IK(s) + R(s)   s.t.  C_IK(s) = 0

by sequential quadratic programming: each iteration solves the KKT system of a
Gauss-Newton model of the objective and the linearised constraints, then runs
a backtracking line search on the l1 merit ``f + nu |C|_1`` (penalty from
:func:`_penalty`, with a second-order correction against the Maratos effect). The
constraint block of the KKT matrix carries a tiny negative diagonal, which keeps
it non-singular when constraints are redundant (planar loops) without changing
the converged state. Unreachable targets therefore give the closest assembled
configuration: the constraints are met on every solve, reachable or not.
"""

from dataclasses import dataclass

import numpy as np

from ..maths.rotations import quat_to_matrix, retract
from ..terms import (
    Reference,
    Targets,
)
from .fk import FKSettings, solve_constraints
from .problem import IKProblem, IKResult, IKSettings, IKTargets, dual_regularization
from .step import build_step, qp_multipliers, step_kkt, with_constraint_curvature


def _single(targets: IKTargets) -> Targets:
    """One frame's targets with a batch axis of one."""
    return Targets(
        targets.positions[None], targets.rotations[None], None if targets.com is None else targets.com[None]
    )


class _Iterate:
    """One state (a batch of one) with its linearised step, for the per-frame SQP."""

    def __init__(self, problem: IKProblem, state, targets: Targets, ref: Reference, trial: bool = False):
        self.state = state
        # a trial's constraint Jacobian waits for a factorisation there (a chord step or
        # a certified convergence needs none)
        point = problem.point(state[None], targets, ref)
        self.step = build_step(problem, point, constraint_jacobian=not trial)
        self.R = self.step.point.R[0]
        self.c = self.step.constraint[0]
        self.value = float(self.step.value[0])
        self.gradient = self.step.gradient[0]
        self.violation = _max_abs(self.c)


class _FrameKKT:
    """The KKT step of one frame (:class:`~looprig.core.solvers.kkt.ReducedKKT` on a
    batch of one), factorised once for several right-hand sides."""

    def __init__(self, problem: IKProblem, it: _Iterate, damping: float, dual_regularization: float):
        self._kkt = step_kkt(problem, it.step, np.array([damping]), dual_regularization)

    def solve(self, g: np.ndarray, c: np.ndarray) -> np.ndarray:
        """The step d (N,) for gradient g (N,) and constraint residual c (m,)."""
        return self._kkt.solve(g[None], c[None])[0]


@dataclass
class _Merit:
    """The l1 merit ``f + nu |C|_1`` at the current iterate and its slope along the step."""

    nu: float
    value: float
    slope: float

    def accepts(self, candidate: _Iterate, alpha: float) -> bool:
        """Armijo condition for the step length ``alpha``."""
        value = candidate.value + self.nu * float(np.abs(candidate.c).sum())
        return value <= self.value + 1e-4 * alpha * self.slope + 1e-15 * abs(self.value)


def _penalty(nu: float, slope: float, curvature: float, violation_l1: float) -> float:
    """l1 merit penalty, raised so the step is a descent direction of the merit.

    Nocedal & Wright (18.36): ``nu >= (g.d + 1/2 d^T H d) / ((1 - rho) |c|_1)``, rho = 0.1.
    It needs no multipliers: those of redundant rows (planar loops) are arbitrary.
    """
    if violation_l1 <= 0.0:
        return nu
    return max(nu, 1.1 * (slope + 0.5 * max(curvature, 0.0)) / (0.9 * violation_l1))


def _max_abs(x: np.ndarray) -> float:
    """Largest absolute entry (0 for an empty array)."""
    return float(np.abs(x).max()) if x.size else 0.0


def _errors(problem: IKProblem, state, R, targets: IKTargets):
    """Tracking errors over the weighted axes: positions (K,) [m], orientations (K,)
    [rad] (see :meth:`FrameTask.errors`), CoM [m] (nan without a CoM objective)."""
    frames = Targets(targets.positions, targets.rotations)
    pos_err, ori_err = problem.frame_terms.tracking_errors(state, R, frames)
    com_err = np.nan
    if problem.com_term is not None:
        diff = (problem.com_term.com(state) - targets.com) * (problem.com_term.weight > 0)
        com_err = float(np.linalg.norm(diff))
    return pos_err, ori_err, com_err


def solve_ik(
    problem: IKProblem,
    targets: IKTargets,
    previous_state: np.ndarray,
    initial_state: np.ndarray | None = None,
    previous_actuators: np.ndarray | None = None,
    previous_velocities: np.ndarray | None = None,
    settings: IKSettings | None = None,
) -> IKResult:
    """Solve one IK frame.

    previous_state: (n, 7) the regularizers' reference (the previous frame);
    initial_state: the starting iterate (default: previous_state, a warm start);
    previous_actuators: (A,) the previous frame's actuator values, the unwrap
    reference of the read-off (default: read off previous_state);
    previous_velocities: (A,) the previous frame's actuator velocities, for the
    acceleration barrier (default: none);
    settings: overrides ``problem.settings`` for this solve (e.g. more iterations
    for a first frame far from the start).
    """
    targets = problem.check_targets(targets)
    settings = settings or problem.settings
    cs = problem.constraints
    tol = cs.tolerance(settings.constraint_tolerance)
    tight = settings.constraint_tolerance * cs.length_scale  # tol, unless the file's loops are open
    compliance = dual_regularization(problem, settings)
    previous = np.asarray(previous_state, dtype=float)
    state = np.array(previous if initial_state is None else initial_state, dtype=float)

    R_previous = quat_to_matrix(previous[:, 3:])
    if previous_actuators is None:
        previous_actuators = problem.readout.read(previous, R=R_previous)
    ref = Reference(
        previous[None],
        R_previous[None],
        np.asarray(previous_actuators, float)[None],
        None if previous_velocities is None else np.asarray(previous_velocities, float)[None],
    )
    frame_targets = _single(targets)
    it = _Iterate(problem, state, frame_targets, ref)
    # per tangent component, 1 / its largest step: rotations [1/rad], translations [1/m]
    inverse_limit = problem.step_scale / settings.max_step
    damping = settings.primal_regularization  # relative Levenberg damping of the model Hessian
    nu = 0.0  # l1 merit penalty
    polished_result = None  # (state, residual, rotations) after a final chord step
    converged = False
    iteration = 0
    last_step = None  # (iterate, step) of the last accepted step: its QP multipliers
    chord = None  # the next step from the last factorisation (a chord step), when it converges
    moved = 0.0  # how far the iterate is from where that factorisation was made (max-norm)
    for iteration in range(1, settings.max_iterations + 1):
        if chord is not None:
            step = chord
        else:
            gauss_newton = it.step.model
            if last_step is not None:
                previous, d = last_step
                lam = qp_multipliers(previous.step, d[None])
                it.step.model = with_constraint_curvature(problem, gauss_newton, it.step.point, lam)
            kkt = _FrameKKT(problem, it, damping, compliance)
            step = kkt.solve(it.gradient, it.c)
            if it.step.model is not gauss_newton and it.step.model.curvature(step[None])[0] <= 0.0:
                it.step.model = gauss_newton  # not a descent model here (far from the answer)
                kkt = _FrameKKT(problem, it, damping, compliance)
                step = kkt.solve(it.gradient, it.c)
        full_step = step.copy()
        step /= max(1.0, float((np.abs(step) * inverse_limit).max(initial=0.0)))
        step_size = _max_abs(step)
        # a step is only a convergence test when damping does not shorten it
        undamped = damping <= settings.undamped_below
        slope = float(it.gradient @ step)
        curvature = float(it.step.model.curvature(step[None])[0])
        # converged: the constraints hold and the next step moves (almost) nothing, or
        # gains (almost) nothing when the targets cannot all be met at once
        stalled = -(slope + 0.5 * curvature) <= settings.objective_tolerance * it.value
        if undamped and (step_size <= settings.step_tolerance or stalled) and it.violation <= tol:
            converged = True
            iteration -= 1
            break
        violation_l1 = float(np.abs(it.c).sum())
        nu = _penalty(nu, slope, curvature, violation_l1)
        merit = _Merit(nu, it.value + nu * violation_l1, min(slope - nu * violation_l1, 0.0))
        alpha = 1.0
        accepted = False
        for _ in range(1 if chord is not None else settings.max_backtracks):
            trial = _Iterate(
                problem,
                retract(it.state, cs.tangent_to_bodies(alpha * step)),
                frame_targets,
                ref,
                trial=True,
            )
            if merit.accepts(trial, alpha):
                accepted = True
                break
            if alpha == 1.0 and trial.violation > it.violation and chord is None:
                # second-order correction: pull the full step back onto the constraints
                # with the same factorisation before giving up on it (Maratos effect)
                correction = kkt.solve(np.zeros_like(step), trial.c)
                corrected = _Iterate(
                    problem,
                    retract(trial.state, cs.tangent_to_bodies(correction)),
                    frame_targets,
                    ref,
                )
                if merit.accepts(corrected, alpha):
                    trial, accepted = corrected, True
                    break
            alpha *= 0.5
        chord_taken = chord is not None
        if chord_taken:
            chord = None
            if not accepted:  # the chord step does not descend: factorise afresh
                continue
        # damp less where the quadratic model predicts the objective well, more where not
        elif accepted and alpha == 1.0:
            predicted = -(slope + 0.5 * curvature)
            gain = (it.value - trial.value) / predicted if predicted > 1e-300 else 1.0
            if gain > 0.75 or predicted <= 1e-300:
                damping = max(damping / 10.0, settings.primal_regularization)
            elif gain < 0.25:
                damping = min(max(damping, 1e-8) * 4.0, 1e6)
        elif accepted:
            damping = min(max(damping, 1e-8) * 4.0, 1e6)
        else:
            damping = min(max(damping, 1e-8) * 100.0, 1e6)
        if not accepted:
            continue
        # Gauss-Newton while the objective falls fast (it is vanishing: the targets are
        # met); once a full step gains less than a fifth of it, the objectives compete
        # and the next model adds the constraints' curvature (Fletcher & Xu's hybrid
        # switch; a cut step says the start is far, not that the objectives compete)
        competing = alpha == 1.0 and it.value - trial.value < 0.2 * it.value
        last_step = (it, full_step) if competing else None
        it = trial
        if alpha == 1.0 and undamped:
            # chord step: the same factorisation at the new iterate, a cheap Newton
            # step estimate that certifies convergence or polishes the constraints,
            # else is the next step if it should certify convergence after it: near the
            # answer its error is about its size times the distance from where the
            # matrix was factorised (not with competing objectives: the Lagrangian's model)
            estimate = kkt.solve(it.gradient, it.c)
            estimate /= max(1.0, float((np.abs(estimate) * inverse_limit).max(initial=0.0)))
            moved = step_size + (moved if chord_taken else 0.0)
            converges = _max_abs(estimate) * moved <= settings.step_tolerance
            chord = estimate if converges and not competing else None
            if _max_abs(estimate) <= settings.step_tolerance:
                if it.violation <= tight:
                    converged = True
                    break
                # polish the constraints with the chord step; a Newton step this short
                # leaves a residual of its square, so only the residual is checked (loops
                # their file leaves open: the polish is kept where it closes them better)
                polished = retract(it.state, cs.tangent_to_bodies(estimate))
                R_polished = quat_to_matrix(polished[:, 3:])
                c_polished = cs.evaluate(polished, jacobian=False, R=R_polished)[0]
                if _max_abs(c_polished) <= min(tol, max(it.violation, tight)):
                    polished_result = (polished, c_polished, R_polished)
                    converged = True
                    break
                if it.violation <= tol:
                    converged = True
                    break
    state, c, R = polished_result or (it.state, it.c, it.R)
    objective = it.value

    message = ""
    residual = _max_abs(c)
    if residual > tol:
        # restore feasibility: the robot never comes apart, whatever the targets ask
        restored = solve_constraints(cs, state, None, FKSettings(tolerance=settings.constraint_tolerance))
        state, residual = restored.state, restored.residual
        restored_iterate = _Iterate(problem, state, frame_targets, ref)
        objective, R = restored_iterate.value, restored_iterate.R
        message = "constraints restored after the SQP iterations"
        if not restored.converged:
            message = f"could not keep the mechanism assembled: {restored.message}"
    if not converged and not message:
        message = f"stopped after {iteration} iterations without converging (the mechanism is assembled)"
    pos_err, ori_err, com_err = _errors(problem, state, R, targets)
    actuators = problem.readout.read(state, previous=previous_actuators, R=R)
    return IKResult(
        state=state,
        actuators=actuators,
        iterations=iteration,
        converged=converged and residual <= tol,
        residual=residual,
        objective=objective,
        position_error=pos_err,
        orientation_error=ori_err,
        com_error=com_err,
        message=message,
    )
