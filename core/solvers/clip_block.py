"""The whole-clip SQP in maximal coordinates: a block of frames solved at once by the
per-frame solver's iteration (:func:`~looprig.core.solvers.ik.solve_ik`), vectorised over
frames, for the problems and frames the tree path (:mod:`~looprig.core.solvers.tree_newton`)
does not take.

Every term linearises the whole block (the terms' leading axis), the KKT systems of all
frames are assembled as one (F, K, K) array and solved by one batched LAPACK call, and
the line search runs per frame on masks.
"""

from dataclasses import dataclass

import numpy as np

from ..maths.rotations import quat_to_matrix, retract
from ..terms import Reference, Targets
from .fk import FKSettings, solve_constraints
from .problem import IKProblem, IKSettings, dual_regularization
from .step import build_step, qp_multipliers, step_kkt, with_constraint_curvature


@dataclass
class ClipSolution:
    """Outcome of :func:`solve_clip` for F frames: states (F, n, 7); iterations,
    converged (F,); residual (F,) max |C| [m]."""

    states: np.ndarray
    iterations: np.ndarray
    converged: np.ndarray
    residual: np.ndarray


def solve_block(
    problem: IKProblem, targets: Targets, starts: np.ndarray, reference: Reference, settings: IKSettings
) -> ClipSolution:
    """:func:`solve_clip` on one block of frames."""
    cs = problem.constraints
    tol = cs.tolerance(settings.constraint_tolerance)
    tight = settings.constraint_tolerance * cs.length_scale  # tol, unless the file's loops are open
    compliance = dual_regularization(problem, settings)
    states = np.array(starts, dtype=float)
    F = len(states)
    inverse_limit = problem.step_scale / settings.max_step
    damping = np.full(F, settings.primal_regularization)
    nu = np.zeros(F)
    iterations = np.zeros(F, dtype=int)
    converged = np.zeros(F, dtype=bool)
    residual = np.zeros(F)  # max |C| where each frame stops (known from its last evaluation)
    active = np.arange(F)
    step_at = build_step(problem, _point(problem, states[active], targets, reference, active))
    value, violation = step_at.value, step_at.violation
    l1 = np.abs(step_at.constraint).sum(-1)
    multipliers = np.zeros((F, step_at.constraint.shape[1]))  # nonzero: the Lagrangian's Hessian
    moved = np.zeros(F)  # how far each frame is from where its last factorisation was made
    chords = None  # the next steps of every active frame from the last factorisation
    for _ in range(settings.max_iterations):
        if not len(active):
            break
        chord_iteration = chords is not None
        if chord_iteration:  # as the per-frame solver: no factorisation
            step, chords = chords, None
        else:
            gauss_newton = step_at.model
            step_at.model = with_constraint_curvature(
                problem, gauss_newton, step_at.point, multipliers[active]
            )
            kkt, kkt_frames = (
                step_kkt(problem, step_at, damping[active], compliance),
                active,
            )
            step = kkt.solve(step_at.gradient, step_at.constraint)
            ascent = step_at.model is not gauss_newton and step_at.model.curvature(step) <= 0.0
            if np.any(ascent):  # no descent model there: Gauss-Newton
                multipliers[active[ascent]] = 0.0
                step_at.model = with_constraint_curvature(
                    problem, gauss_newton, step_at.point, multipliers[active]
                )
                kkt = step_kkt(problem, step_at, damping[active], compliance)
                step = kkt.solve(step_at.gradient, step_at.constraint)
        full_step = step.copy()
        step /= np.maximum(1.0, (np.abs(step) * inverse_limit).max(-1, initial=0.0))[:, None]
        size = np.abs(step).max(-1, initial=0.0)
        slope = np.einsum("bn,bn->b", step_at.gradient, step)
        curvature = step_at.model.curvature(step)
        undamped = damping[active] <= settings.undamped_below
        stalled = -(slope + 0.5 * curvature) <= settings.objective_tolerance * value
        done = undamped & ((size <= settings.step_tolerance) | stalled) & (violation <= tol)
        short = done & (size <= settings.step_tolerance)  # a Newton step this short only polishes
        if short.any():
            states[active[short]], violation[short] = _polished(
                cs, states[active[short]], step[short], violation[short], tight, tol
            )
        converged[active[done]] = True
        residual[active[done]] = violation[done]
        keep = ~done
        if not keep.any():
            break
        active, step, slope, curvature = active[keep], step[keep], slope[keep], curvature[keep]
        value, violation, l1 = value[keep], violation[keep], l1[keep]
        iterations[active] += 1
        # l1 merit penalty (Nocedal & Wright 18.36), per frame
        need = l1 > 0.0
        raised = 1.1 * (slope + 0.5 * np.maximum(curvature, 0.0)) / (0.9 * np.where(need, l1, 1.0))
        nu[active] = np.where(need, np.maximum(nu[active], raised), nu[active])
        merit = value + nu[active] * l1
        merit_slope = np.minimum(slope - nu[active] * l1, 0.0)
        alpha = np.ones(len(active))
        accepted = np.zeros(len(active), dtype=bool)
        new_states = states[active].copy()
        new_value, new_violation, new_l1 = value.copy(), violation.copy(), l1.copy()
        trying = np.arange(len(active))
        full_trial = None  # the full steps' subproblem, the next one when all are taken
        for _ in range(1 if chord_iteration else settings.max_backtracks):
            frames = active[trying]
            trial = retract(states[frames], cs.tangent_to_bodies(alpha[trying, None] * step[trying]))
            first = full_trial is None
            ev = build_step(
                problem,
                _point(problem, trial, targets, reference, frames),
                derivatives=first,
                constraint_jacobian=False,  # most frames converge at the full step
            )
            full_trial = ev if first else full_trial
            trial_l1 = np.abs(ev.constraint).sum(-1)
            ok = ev.value + nu[frames] * trial_l1 <= (
                merit[trying] + 1e-4 * alpha[trying] * merit_slope[trying] + 1e-15 * np.abs(merit[trying])
            )
            good = trying[ok]
            accepted[good] = True
            new_states[good] = trial[ok]
            new_value[good], new_violation[good], new_l1[good] = ev.value[ok], ev.violation[ok], trial_l1[ok]
            trying = trying[~ok]
            if not len(trying):
                break
            alpha[trying] *= 0.5
        # gain-ratio damping, as in the per-frame solver
        predicted = -(slope + 0.5 * curvature)
        gain = np.where(
            predicted > 1e-300, (value - new_value) / np.where(predicted > 1e-300, predicted, 1.0), 1.0
        )
        d = damping[active]
        full = accepted & (alpha == 1.0)
        d = np.where(
            full & ((gain > 0.75) | (predicted <= 1e-300)),
            np.maximum(d / 10.0, settings.primal_regularization),
            d,
        )
        d = np.where(full & (gain < 0.25), np.minimum(np.maximum(d, 1e-8) * 4.0, 1e6), d)
        d = np.where(accepted & (alpha < 1.0), np.minimum(np.maximum(d, 1e-8) * 4.0, 1e6), d)
        d = np.where(~accepted, np.minimum(np.maximum(d, 1e-8) * 100.0, 1e6), d)
        if not chord_iteration:  # a chord step that fails is followed by a Newton step
            damping[active] = d
        moved[active] = size[keep] + (moved[active] if chord_iteration else 0.0)
        # as the per-frame solver: once a full step gains less than a fifth of the
        # objective, the objectives compete and the next model is the Lagrangian's
        competing = full & (value - new_value < 0.2 * value)
        multipliers[active] = 0.0
        if competing.any():
            kept = np.flatnonzero(keep)[competing]
            d_full = np.zeros_like(step_at.gradient)
            d_full[kept] = full_step[kept]
            multipliers[active[competing]] = qp_multipliers(step_at, d_full)[kept]
        states[active] = new_states
        if accepted.all() and (alpha == 1.0).all():
            step_at = full_trial
        else:
            step_at = build_step(problem, _point(problem, states[active], targets, reference, active))
        value, violation = step_at.value, step_at.violation
        chord = full & undamped[keep]
        if chord.any():
            # chord step: the last factorisation at the new iterate, as the per-frame
            # solver does; frames it certifies converge without another factorisation,
            # and when it should certify every other frame after one more step (its size
            # times the distance from the factorisation), that step is the next
            rows = np.searchsorted(kkt_frames, active)
            g = np.zeros((len(kkt_frames), cs.n_vars))
            c = np.zeros((len(kkt_frames), step_at.constraint.shape[1]))
            g[rows], c[rows] = step_at.gradient, step_at.constraint
            estimate = kkt.solve(g, c)[rows]
            estimate /= np.maximum(1.0, (np.abs(estimate) * inverse_limit).max(-1, initial=0.0))[:, None]
            estimate_size = np.abs(estimate).max(-1, initial=0.0)
            finished = chord & (estimate_size <= settings.step_tolerance) & (violation <= tol)
            converges = chord & ~competing & (estimate_size * moved[active] <= settings.step_tolerance)
            if converges[~finished].all():
                chords = estimate[~finished]
            if finished.any():
                states[active[finished]], violation[finished] = _polished(
                    cs, states[active[finished]], estimate[finished], violation[finished], tight, tol
                )
                converged[active[finished]] = True
                residual[active[finished]] = violation[finished]
                active = active[~finished]
                if not len(active):
                    break
                step_at = step_at.take(np.flatnonzero(~finished))
                value, violation = step_at.value, step_at.violation
        l1 = np.abs(step_at.constraint).sum(-1)
    else:  # out of iterations: the frames still active stop where they are
        residual[active] = violation
    for f in np.flatnonzero(residual > tol):  # the robot never comes apart
        restored = solve_constraints(cs, states[f], None, FKSettings(tolerance=settings.constraint_tolerance))
        states[f], residual[f] = restored.state, restored.residual
    return ClipSolution(states, iterations, converged & (residual <= tol), residual)


def _polished(cs, states, steps, violation, tight: float, tol: float):
    """Converged frames' states (B, n, 7) and their ``max|C|`` (B,) [m], each moved by its
    last Newton step (B, N) where the constraints hold looser than ``tight`` (loops their
    file leaves open, met to ``tol``) and the step closes them better, as the per-frame
    solver polishes them; the others unchanged."""
    loose = violation > tight
    if not loose.any():
        return states, violation
    states, violation = states.copy(), violation.copy()
    moved = retract(states[loose], cs.tangent_to_bodies(steps[loose]))
    closed = np.abs(cs.evaluate(moved, jacobian=False)[0]).max(-1, initial=0.0)
    better = closed <= np.minimum(tol, np.maximum(violation[loose], tight))
    rows = np.flatnonzero(loose)[better]
    states[rows], violation[rows] = moved[better], closed[better]
    return states, violation


def _point(problem: IKProblem, states, targets: Targets, reference: Reference, frames: np.ndarray):
    """The terms' point at ``states`` (B, n, 7) of the clip's ``frames`` (B,)."""
    return problem.point(states, targets.take(frames), reference.take(frames))


def start_reference(problem: IKProblem, states: np.ndarray) -> Reference:
    """What each frame's terms compare with when none is given: its start (states
    (F, n, 7)), their rotations and motor values."""
    R = quat_to_matrix(states[..., 3:])
    return Reference(states, R, problem.readout.read(states, R=R), None)
