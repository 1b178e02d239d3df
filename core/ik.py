"""State-based inverse kinematics (paper IV.C(b), eq. 3).

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

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .constraints import ConstraintSet
from .errors import TargetError
from .fk import FKSettings, solve_constraints
from .linalg import KKTSystem
from .mechanism import Mechanism
from .objectives import (
    ActuatorLimits,
    ComObjective,
    ComTerm,
    FrameObjective,
    FrameTerms,
    Regularization,
    actuator_barrier,
    com_residual,
    frame_residuals,
    state_regularizer,
    velocity_barrier,
)
from .readoff import ActuatorReadout
from .rotations import cross, quat_to_matrix, retract, vee_antisymmetric


@dataclass(frozen=True)
class IKSettings:
    """Tolerances of the SQP solver.

    constraint_tolerance: ``max|C| <= constraint_tolerance * L`` (L: mean joint distance).
    step_tolerance: converged when the constraints hold and the largest component of
    the next step (m or rad) is below it; Newton steps shrink quadratically, so what
    is left after a step of 1e-7 is far below it.
    objective_tolerance: also converged when the next step would lower the
    objective by less than this fraction of it (targets that cannot all be met
    at once: Gauss-Newton converges linearly there).
    primal_regularization: the smallest Levenberg damping of the model Hessian
    (relative to its largest diagonal entry); it shrinks tenfold after a full
    step whose objective decrease matches the model's prediction, and grows after
    a poorly predicted or cut step (a hundredfold when no step was found).
    dual_regularization: the negative diagonal of the constraint block.
    """

    constraint_tolerance: float = 1e-10
    step_tolerance: float = 1e-7
    max_iterations: int = 50
    max_backtracks: int = 8
    max_step: float = 2.0  # largest step per iteration [rad], times L for positions [m]
    undamped_below: float = 1e-6  # relative damping under which a short step means converged
    objective_tolerance: float = 1e-9  # converged when a step would lower the objective less, relatively
    primal_regularization: float = 1e-12
    dual_regularization: float = 1e-12


@dataclass
class IKTargets:
    """Target values for one frame.

    positions: (K, 3) world [m]; rotations: (K, 3, 3) world, columns = frame axes;
    com: (3,) world [m] or None. K is the number of frame objectives, in order.
    """

    positions: np.ndarray
    rotations: np.ndarray
    com: np.ndarray | None = None


@dataclass
class IKResult:
    """Outcome of one IK solve.

    state (n, 7); actuators (n_act,) read off and unwrapped [rad | m];
    residual: max |C_IK| [m]; position_error (K,) [m] over weighted axes;
    orientation_error (K,) [rad] over weighted axes; com_error [m] (nan without CoM).
    """

    state: np.ndarray
    actuators: np.ndarray
    iterations: int
    converged: bool
    residual: float
    objective: float  # at the last full model evaluation
    position_error: np.ndarray
    orientation_error: np.ndarray
    com_error: float
    message: str = ""


@dataclass
class IKProblem:
    """Everything about an IK solve that does not change from frame to frame.

    Build once per clip; pass per-frame :class:`IKTargets` to :func:`solve_ik`.
    """

    mechanism: Mechanism
    frames: Sequence[FrameObjective] = ()
    com: ComObjective | None = None
    regularization: Regularization = field(default_factory=Regularization)
    settings: IKSettings = field(default_factory=IKSettings)

    def __post_init__(self):
        self.constraints = ConstraintSet(self.mechanism, actuated=False)
        self.frame_terms = FrameTerms(self.mechanism, self.frames)
        self.com_term = None if self.com is None else ComTerm(self.mechanism, self.com)
        self.readout = ActuatorReadout(self.mechanism)
        self.actuator_limits = ActuatorLimits.of(self.mechanism)
        n_free = len(self.constraints.free_bodies)
        per_body = self.regularization.state_weight * np.array([1, 1, 1, 0.25, 0.25, 0.25])
        self.state_hessian_diagonal = np.tile(per_body, n_free)
        # translations are measured in mean joint distances L, so a step of L [m] counts as 1 [rad]
        self.step_scale = np.tile(np.r_[np.full(3, 1.0 / self.constraints.length_scale), np.ones(3)], n_free)
        reg = self.regularization
        if min(reg.state_weight, reg.velocity_weight, reg.velocity_threshold) < 0:
            raise TargetError("regularizer weights and threshold must be non-negative")
        if reg.velocity_weight > 0 and reg.velocity_threshold <= 0:
            raise TargetError("the velocity regularizer needs a positive threshold")

    def check_targets(self, targets: IKTargets) -> IKTargets:
        """Validate shapes and finiteness; returns float arrays."""
        k = len(self.frame_terms)
        positions = np.asarray(targets.positions, dtype=float).reshape(-1, 3) if k else np.zeros((0, 3))
        rotations = np.asarray(targets.rotations, dtype=float).reshape(-1, 3, 3) if k else np.zeros((0, 3, 3))
        if positions.shape != (k, 3) or rotations.shape != (k, 3, 3):
            raise TargetError(
                f"expected targets for {k} frames ({', '.join(self.frame_terms.names)}), got "
                f"positions {np.shape(targets.positions)} and rotations {np.shape(targets.rotations)}"
            )
        gram = np.swapaxes(rotations, -1, -2) @ rotations  # R^T R = I for rotations ...
        handed = np.einsum("ka,ka->k", cross(rotations[:, :, 0], rotations[:, :, 1]), rotations[:, :, 2])
        valid = np.abs(gram - np.eye(3)).max(initial=0.0) <= 1e-6 and (handed > 0).all()  # ... and det = +1
        if not (valid and np.isfinite(positions).all()):  # NaN fails the tests above too
            for name, p, R, h in zip(self.frame_terms.names, positions, rotations, handed, strict=True):
                if not (np.isfinite(p).all() and np.isfinite(R).all()):
                    raise TargetError(f"target for frame {name!r} is not finite")
                if np.abs(R.T @ R - np.eye(3)).max() > 1e-6 or h <= 0:
                    raise TargetError(f"target rotation for frame {name!r} is not a rotation matrix")
        com = None
        if self.com_term is not None:
            if targets.com is None:
                raise TargetError("the problem has a CoM objective but no CoM target was given")
            com = np.asarray(targets.com, dtype=float).reshape(3)
            if not np.all(np.isfinite(com)):
                raise TargetError("CoM target is not finite")
        return IKTargets(positions, rotations, com)


@dataclass
class _Reference:
    """What one frame's solve regularizes towards: the previous frame.

    state (n, 7) and its rotation matrices R (n, 3, 3); actuators (A,) unwrapped
    [rad | m]; velocities (A,) [rad/s | m/s] or None (no acceleration barrier).
    """

    state: np.ndarray
    R: np.ndarray
    actuators: np.ndarray
    velocities: np.ndarray | None


class _Model:
    """Objective value, gradient and Gauss-Newton Hessian at one state (rotations R)."""

    def __init__(self, problem: IKProblem, state, R, targets: IKTargets, ref: _Reference):
        cs = problem.constraints
        parts_r, parts_J = [], []
        if len(problem.frame_terms):
            r, J = frame_residuals(
                problem.frame_terms,
                state,
                R,
                targets.positions,
                targets.rotations,
                cs.column_of_body,
                cs.n_vars,
            )
            parts_r.append(r)
            parts_J.append(J)
        if problem.com_term is not None:
            r, J = com_residual(problem.com_term, state, targets.com, cs.column_of_body, cs.n_vars)
            parts_r.append(r)
            parts_J.append(J)
        r_obj = np.concatenate(parts_r) if len(parts_r) > 1 else (parts_r[0] if parts_r else np.zeros(0))
        J_obj = (
            np.vstack(parts_J) if len(parts_J) > 1 else (parts_J[0] if parts_J else np.zeros((0, cs.n_vars)))
        )
        reg = problem.regularization
        self.value = 0.5 * float(r_obj @ r_obj)
        self.gradient = J_obj.T @ r_obj
        self.hessian = J_obj.T @ J_obj
        nf = len(cs.free_bodies)
        diag = np.arange(nf)
        if reg.state_weight > 0 and nf:
            value, gradient = state_regularizer(state, R, ref.state, ref.R, cs.free_bodies, reg.state_weight)
            self.value += value
            self.gradient += gradient.ravel()
            # Gauss-Newton Hessian at zero rotation, w diag(1, 1, 1, 1/4, 1/4, 1/4): exact at
            # the previous state and within O(theta^2) for a per-frame rotation theta
            self.hessian.flat[:: cs.n_vars + 1] += problem.state_hessian_diagonal
        if reg.velocity_weight > 0 and nf:
            value, g, h = velocity_barrier(
                R, ref.R, cs.free_bodies, reg.velocity_weight, reg.velocity_threshold
            )
            self.value += value
            self.gradient.reshape(nf, 6)[:, 3:] += g
            H = self.hessian.reshape(nf, 6, nf, 6)
            H[diag, 3:, diag, 3:] += h
        if (reg.actuator_weight > 0 or reg.acceleration_weight > 0) and len(ref.actuators):
            values = problem.readout.read(state, previous=ref.actuators, R=R)
            J = problem.readout.jacobian(state, R, cs.column_of_body, cs.n_vars)
            value, dg, d2g = actuator_barrier(
                values, ref.actuators, ref.velocities, problem.actuator_limits, reg
            )
            self.value += value
            self.gradient += J.T @ dg
            self.hessian += (J.T * d2g) @ J


class _Iterate:
    """A state with everything the SQP needs there: rotations, constraints, model."""

    def __init__(self, problem: IKProblem, state, targets: IKTargets, ref: _Reference):
        self.state = state
        self.R = quat_to_matrix(state[:, 3:])
        self.c, self.blocks = problem.constraints.evaluate(state, R=self.R)
        self.model = _Model(problem, state, self.R, targets, ref)

        self.violation = _max_abs(self.c)


@dataclass
class _Merit:
    """The l1 merit ``f + nu |C|_1`` at the current iterate and its slope along the step."""

    nu: float
    value: float
    slope: float

    def accepts(self, candidate: _Iterate, alpha: float) -> bool:
        """Armijo condition for the step length ``alpha``."""
        value = candidate.model.value + self.nu * float(np.abs(candidate.c).sum())
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
    [rad], CoM [m]. R: the bodies' rotation matrices at ``state``."""
    terms = problem.frame_terms
    k = len(terms)
    pos_err, ori_err = np.zeros(k), np.zeros(k)
    if k:
        points, axes = terms.poses(state, R)
        error = (points - targets.positions) * (terms.position_weight > 0)
        pos_err = np.sqrt(np.einsum("ka,ka->k", error, error))
        tracked = terms.orientation_weight > 0  # (K, 3)
        # with two or more axes tracked the rotation is determined: report its angle
        R_err = np.swapaxes(axes, -1, -2) @ targets.rotations
        sin2 = vee_antisymmetric(R_err)  # 2 sin(angle) u
        cos2 = R_err[:, 0, 0] + R_err[:, 1, 1] + R_err[:, 2, 2] - 1.0  # 2 cos(angle)
        ori_err = np.arctan2(np.sqrt(np.einsum("ka,ka->k", sin2, sin2)), cos2)
        single = terms.single_axis
        if single.any():  # one axis (or none): the angle between that axis and its target
            cos = np.clip(np.sum(axes * targets.rotations, axis=-2), -1.0, 1.0)  # (K, 3)
            sin = np.linalg.norm(
                cross(np.swapaxes(axes, -1, -2), np.swapaxes(targets.rotations, -1, -2)), axis=-1
            )
            per_axis = np.where(tracked, np.arctan2(sin, cos), 0.0).max(-1)
            ori_err = np.where(single, per_axis, ori_err)
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
    tol = settings.constraint_tolerance * cs.length_scale
    previous = np.asarray(previous_state, dtype=float)
    state = np.array(previous if initial_state is None else initial_state, dtype=float)

    R_previous = quat_to_matrix(previous[:, 3:])
    if previous_actuators is None:
        previous_actuators = problem.readout.read(previous, R=R_previous)
    ref = _Reference(previous, R_previous, np.asarray(previous_actuators, float), previous_velocities)
    it = _Iterate(problem, state, targets, ref)
    # per tangent component, 1 / its largest step: rotations [1/rad], translations [1/m]
    inverse_limit = problem.step_scale / settings.max_step
    damping = settings.primal_regularization  # relative Levenberg damping of the model Hessian
    nu = 0.0  # l1 merit penalty
    polished_result = None  # (state, residual, rotations) after a final chord step
    converged = False
    iteration = 0
    for iteration in range(1, settings.max_iterations + 1):
        kkt = KKTSystem(it.model.hessian, cs.dense(it.blocks), damping, settings.dual_regularization)
        step, _ = kkt.solve(it.model.gradient, it.c)
        step /= max(1.0, float((np.abs(step) * inverse_limit).max(initial=0.0)))
        step_size = _max_abs(step)
        # a step is only a convergence test when damping does not shorten it
        undamped = damping <= settings.undamped_below
        slope = float(it.model.gradient @ step)
        curvature = float(step @ it.model.hessian @ step)
        # converged: the constraints hold and the next step moves (almost) nothing, or
        # gains (almost) nothing when the targets cannot all be met at once
        stalled = -(slope + 0.5 * curvature) <= settings.objective_tolerance * it.model.value
        if undamped and (step_size <= settings.step_tolerance or stalled) and it.violation <= tol:
            converged = True
            iteration -= 1
            break
        violation_l1 = float(np.abs(it.c).sum())
        nu = _penalty(nu, slope, curvature, violation_l1)
        merit = _Merit(nu, it.model.value + nu * violation_l1, min(slope - nu * violation_l1, 0.0))
        alpha = 1.0
        accepted = False
        for _ in range(settings.max_backtracks):
            trial = _Iterate(problem, retract(it.state, cs.tangent_to_bodies(alpha * step)), targets, ref)
            if merit.accepts(trial, alpha):
                accepted = True
                break
            if alpha == 1.0 and trial.violation > it.violation:
                # second-order correction: pull the full step back onto the constraints
                # with the same factorisation before giving up on it (Maratos effect)
                correction, _ = kkt.solve(np.zeros_like(step), trial.c)
                corrected = _Iterate(
                    problem,
                    retract(trial.state, cs.tangent_to_bodies(correction)),
                    targets,
                    ref,
                )
                if merit.accepts(corrected, alpha):
                    trial, accepted = corrected, True
                    break
            alpha *= 0.5
        # damp less where the quadratic model predicts the objective well, more where not
        if accepted and alpha == 1.0:
            predicted = -(slope + 0.5 * curvature)
            gain = (it.model.value - trial.model.value) / predicted if predicted > 1e-300 else 1.0
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
        it = trial
        if alpha == 1.0 and undamped:
            # chord step: the same factorisation at the new iterate, a cheap Newton
            # step estimate that certifies convergence or polishes the constraints
            chord, _ = kkt.solve(it.model.gradient, it.c)
            chord /= max(1.0, float((np.abs(chord) * inverse_limit).max(initial=0.0)))
            if _max_abs(chord) <= settings.step_tolerance:
                if it.violation <= tol:
                    converged = True
                    break
                # polish the constraints with the chord step; a Newton step this short
                # leaves a residual of its square, so only the residual is checked
                polished = retract(it.state, cs.tangent_to_bodies(chord))
                R_polished = quat_to_matrix(polished[:, 3:])
                c_polished = cs.evaluate(polished, jacobian=False, R=R_polished)[0]
                if _max_abs(c_polished) <= tol:
                    polished_result = (polished, c_polished, R_polished)
                    converged = True
                    break
    state, c, R = polished_result or (it.state, it.c, it.R)
    objective = it.model.value

    message = ""
    residual = _max_abs(c)
    if residual > tol:
        # restore feasibility: the robot never comes apart, whatever the targets ask
        restored = solve_constraints(cs, state, None, FKSettings(tolerance=settings.constraint_tolerance))
        state, residual = restored.state, restored.residual
        restored_iterate = _Iterate(problem, state, targets, ref)
        objective, R = restored_iterate.model.value, restored_iterate.R
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
