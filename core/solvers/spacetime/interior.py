"""The primal-dual interior point that solves a clip of F frames under its limit rows
(:func:`interior_point`), from states (F, n, 7) and motors (F, A) [rad | m] to a
:class:`~.records.SpaceTimeSolution`: each of the m rows a slack and a multiplier (m,),
the barrier weighted per row (:func:`row_stiffness`), one banded Newton system an
iteration (:class:`~looprig.core.solvers.banded.NewtonSystem`), the fraction to the
boundary, a line search on an l1 merit with a second-order correction where a step
opens the loops, and the loops' multipliers (F, m) of each step for the next model.
"""

import numpy as np

from ...maths.rotations import quat_to_matrix
from ...terms import Reference, Targets
from ..banded import NewtonSystem, RowSet, converged_kkt
from ..ik import IKProblem
from ..joint_space import JointScrews
from ..step import build_step
from .linearization import Linearization, linearize, loop_count
from .records import SpaceTimeSettings, SpaceTimeSolution
from .rows import LimitRows, binding_limits, excess, motor_forces, row_rounding, stencil_rows
from .tree_clip import TreeClip
from .tree_clip import applies as tree_path

#: The weight of the gentle interior point's pull back (:func:`interior_point`),
#: relative to the largest diagonal entry of the tracking's Hessian in joint coordinates.
ANCHOR = 1e-6


def interior_point(
    problem: IKProblem,
    screws: JointScrews,
    targets: Targets,
    states: np.ndarray,
    actuators: np.ndarray,
    families: list[LimitRows],
    settings: SpaceTimeSettings,
    frozen: np.ndarray | None = None,
    gentle: bool = False,
    multipliers: np.ndarray | None = None,
) -> SpaceTimeSolution:
    """:func:`~.solve.solve_spacetime`'s primal-dual interior point on the whole problem
    under the limit rows ``families`` (``frozen``: as :func:`~.rows.limit_rows`).

    ``gentle``, the second try where the first does not converge (loops, a redundant
    motor, an objective a robot a few centimetres long makes tiny): each row that holds
    at the start gets a barrier weight (:func:`row_stiffness`) so that the barrier moves
    it by a fraction of its bound whatever the objective's scale; a pull back to the
    start (:data:`ANCHOR` of the tracking's stiffness, along every joint coordinate;
    towards the iterate the last barrier problem starts from, so no bias is left) keeps
    redundant motors where they are; and a step that opens a loop is closed again along
    the tree before the line search judges it.

    Every limit row gets a slack s > 0 and a multiplier z > 0. Each iteration
    linearises every frame and takes one Newton step of the barrier problem at barrier
    mu (:meth:`~looprig.core.solvers.banded.NewtonSystem.direction`): the slacks and the
    multipliers each at most 99 % of the way to zero, the primal step cut by a line
    search on the l1 merit ``f - mu sum log s + nu_C |C_loops|_1 + nu |G p + s - h|_1``
    (nu above the multipliers seen so far; nu_C above the loops' present ones, falling
    at most tenfold a step). Once the barrier problem is solved to 10 mu, mu drops
    to ``min(mu / 5, mu^1.5)`` (Fiacco and McCormick's monotone rule, as IPOPT's).
    From a warm start (``multipliers`` given: the whole clip after its coarse answer,
    near the central path) each iteration also sets mu by Mehrotra's predictor-corrector
    (Nocedal & Wright, 2nd ed., algorithm 16.4): the complementarity the affine step
    reaches, cubed over mu squared, never above the monotone rule's, and the corrector
    carries the affine step's second-order term: 13 iterations instead of 23 on the
    paper's Boxer clip, whose monotone steps were cut by the fraction to the boundary.
    A Levenberg damping shrinks tenfold after each step taken whole and grows after a
    step the line search cut. Where the longest step opens the loops more than the merit
    allows (a robot with loops, far along a curved path: the Dancer on its dance played
    twice as fast, which took the line search to 1/8 steps and 200 iterations without
    converging), the same Newton system is solved once more with the loops' gap at the
    step's end added (IPOPT's second-order correction) before the step is cut.
    """
    cs, readout, tree = problem.constraints, problem.readout, problem.tree
    F = len(states)
    states = np.array(states, dtype=float)
    values = np.array(actuators, dtype=float)
    reference = Reference(states.copy(), quat_to_matrix(states[..., 3:]), values.copy())

    kin = TreeClip(problem, targets) if tree_path(problem) else None

    def evaluate(S):  # the joints' Jacobian only when the loops ask for it (lazily)
        if kin is not None:
            return kin.evaluate(S)
        return build_step(problem, problem.point(S, targets, reference), constraint_jacobian=False)

    def row_excess(v):
        return np.concatenate([excess(rows, v).ravel() for rows in families]) if families else np.zeros(0)

    barrier = settings.initial_barrier
    rounding = row_rounding(families, values)
    slack = np.maximum(-row_excess(values), settings.initial_slack)
    weight = z = None  # each row's barrier weight and multiplier, set at the first iteration
    displacement = np.zeros((F, tree.dof))  # the gentle pull's: the steps taken since its anchor
    pull = 0.0
    nu_limits = nu_loops = 0.0
    loop_multipliers = None
    damping = settings.initial_damping
    iterations, converged = 0, False
    travelled = np.zeros((F, tree.dof))
    at = evaluate(states)
    tolerance = problem.settings.constraint_tolerance * cs.length_scale
    loops = np.r_[tree.loop_rows, np.arange(tree.cs_rows, at.constraint.shape[1])]
    for _ in range(settings.max_iterations):
        if weight is None and gentle:
            stiffness = linearize(problem, screws, at, values, None, 0.0, frozen, kin=kin).H_theta
            pull = ANCHOR * max(float(np.abs(np.diagonal(stiffness, axis1=1, axis2=2)).max()), 1e-300)
        lin = linearize(
            problem,
            screws,
            at,
            values,
            loop_multipliers,
            damping,
            frozen,
            (pull, displacement) if gentle else None,
            kin,
        )
        if not (np.isfinite(lin.H).all() and np.isfinite(lin.g).all()):  # diverged: not converged
            break
        rows = RowSet([stencil_rows(r, lin.b, lin.B) for r in families], F, lin.W.shape[-1])
        if weight is None:
            weight = row_stiffness(rows, lin.H) if gentle else 1.0
            if multipliers is None:
                z = barrier * weight / slack
            else:  # a warm start: each row's multiplier as given, its slack on the barrier's path
                z = np.maximum(multipliers, barrier * weight)
                slack = np.maximum(-row_excess(values), barrier * weight / z)
        Gz = rows.transpose(z)
        r_d = lin.g + Gz
        r_p = slack - rows.bound  # G u + s - h at u = 0
        mu = float(np.mean(slack * z / weight)) if rows.size else 0.0
        # the tree joints stay as assembled as the start (retract keeps them); the loops close
        assembled = np.abs(at.constraint[:, loops]).max(initial=0.0) <= tolerance
        tight = converged_kkt(r_d, r_p, mu, settings.limit_tolerance, lin.g, Gz)
        # every limit held and the KKT conditions within a thousand times the tolerance: as
        # close as the Newton steps of a nearly flat objective get (a redundant robot's)
        held = float(row_excess(values).max(initial=-np.inf)) <= settings.limit_tolerance
        near = held and converged_kkt(r_d, r_p, mu, 1e3 * settings.limit_tolerance, lin.g, Gz)
        if assembled and (tight or near):
            converged = True
            break
        # the barrier problem at this barrier solved well enough: a smaller barrier
        # (Fiacco-McCormick's monotone rule, as IPOPT's)
        scale = max(1.0, float(np.abs(lin.g).max(initial=0.0)), float(np.abs(Gz).max(initial=0.0)))
        error = max(float(np.abs(r_d).max()) / scale, float(np.abs(r_p).max(initial=0.0)))
        while (
            barrier > settings.limit_tolerance / 10
            and max(error, float(np.abs(slack * z / weight - barrier).max(initial=0.0))) <= 10.0 * barrier
        ):
            barrier = max(settings.limit_tolerance / 10, min(0.2 * barrier, barrier**1.5))
            if barrier == settings.limit_tolerance / 10:  # the last barrier problem: no bias left
                displacement = np.zeros_like(displacement)
        iterations += 1
        if rows.size and multipliers is not None:  # warm: Mehrotra's predictor-corrector
            system = NewtonSystem(lin.H, rows, slack, z)
            du, ds, dz = system.direction(r_d, r_p, slack * z)  # the affine (predictor) step
            reach = (slack + _to_boundary(slack, ds, 1.0) * ds) * (z + _to_boundary(z, dz, 1.0) * dz)
            centred = float(np.mean(reach / weight)) ** 3 / mu**2
            barrier = max(settings.limit_tolerance / 10, min(barrier, centred))
            r_c = slack * z + ds * dz - barrier * weight
            du, ds, dz = system.direction(r_d, r_p, r_c)
        elif rows.size:
            system, r_c = NewtonSystem(lin.H, rows, slack, z), slack * z - barrier * weight
            du, ds, dz = system.direction(r_d, r_p, r_c)
        else:
            du, ds, dz = -np.linalg.solve(lin.H, lin.g[..., None])[..., 0], slack, z
        if not all(np.isfinite(x).all() for x in (du, ds, dz)):  # a singular Newton system
            break  # (not converged: the caller tries its next start)
        boundary = max(0.99, 1.0 - barrier)
        alpha = _to_boundary(slack, ds, boundary)
        alpha_z = _to_boundary(z, dz, boundary)
        theta = lin.q0 + (lin.W @ du[..., None])[..., 0]  # (F, D)
        z_next = z + alpha_z * dz
        force = motor_forces(families, rows.split(z_next), values.shape)
        new_loop_multipliers = _loop_multipliers(problem, lin, theta, force)
        # the merit's penalties: above the multipliers they weigh (l1 exact penalty). The
        # loops' follows their multipliers down (a tenth a step at most): one large estimate
        # far from the answer (1e3 on the Dancer's looped dance, against 0.2 after) kept
        # weighing the loops' second-order gap above the objective's whole decrease, and
        # the line search cut every step to 1/256 for 200 iterations
        nu_limits = max(nu_limits, 1.1 * float(np.abs(z_next).max(initial=0.0)))
        if new_loop_multipliers is not None:
            nu_loops = max(0.1 * nu_loops, 1.1 * float(np.abs(new_loop_multipliers).max(initial=0.0)))

        def merit(
            step_at, v, s, moved, loops=loops, barrier=barrier, nu=(nu_loops, nu_limits), w=(weight, pull)
        ):
            nu_loops, nu_limits = nu
            w, pull = w
            return (
                float(step_at.value.sum())
                + 0.5 * pull * float(np.sum(moved**2))
                - (barrier * float(np.sum(w * np.log(s))) if len(s) else 0.0)
                + nu_loops * float(np.abs(step_at.constraint[:, loops]).sum())
                + nu_limits * float(np.maximum(np.abs(row_excess(v) + s) - rounding, 0.0).sum())
            )

        here = merit(at, values, slack, displacement)
        # the merit's slope along the step: the full step takes the loops' residual and the
        # rows' (the merit's: at the iterate, not r_p, which reads the motors after q0 has
        # restored the loops) to zero, to first order
        slope = (
            float(np.einsum("bd,bd->", lin.g_theta, theta))
            - (barrier * float(np.sum(weight * ds / slack)) if rows.size else 0.0)
            - nu_loops * float(np.abs(at.constraint[:, loops]).sum())
            - nu_limits * float(np.maximum(np.abs(row_excess(values) + slack) - rounding, 0.0).sum())
        )

        def tried(step, slack_step, start=(states, at, values, slack), rates=lin.PZ):
            """The iterate after a step (F, D) of the joint coordinates and (m,) of the slacks."""
            S, at_S, v, s = start
            if kin is not None:  # every motor a tree joint: moved by exactly its step; the
                reached = kin.moved(at_S, step)  # body states are read off once, at the end
                return None, reached, v + (rates @ step[..., None])[..., 0], s + slack_step
            moved = tree.retract(S, at_S.point.R, step)
            if gentle:
                moved, reached = _close_loops(problem, evaluate, moved, loops, tolerance)
            else:
                reached = evaluate(moved)
            return moved, reached, readout.read(moved, previous=v, R=reached.point.R), s + slack_step

        accepted, alpha_max = False, alpha
        for _ in range(settings.max_backtracks):
            trial_states, trial, trial_values, trial_slack = tried(alpha * theta, alpha * ds)
            bar = here + 1e-4 * alpha * min(slope, 0.0) + 1e-13 * abs(here)
            if merit(trial, trial_values, trial_slack, displacement + alpha * theta) <= bar:
                accepted = True
                break
            if alpha == alpha_max and lin.restore is not None and rows.size and not gentle:
                # the longest step opened the loops: once, the same step with their gap at
                # its end restored too (a second-order correction), judged by the same bar
                q0, g, b = lin.corrected(values, trial.constraint[:, loops], alpha)
                rows_c = RowSet([stencil_rows(r, b, lin.B) for r in families], F, lin.W.shape[-1])
                du_c, ds_c, _ = system.direction(g + Gz, slack - rows_c.bound, r_c)
                alpha_c = _to_boundary(slack, ds_c, boundary)
                theta_c = q0 + (lin.W @ du_c[..., None])[..., 0]
                corrected = tried(alpha_c * theta_c, alpha_c * ds_c)
                if merit(*corrected[1:], displacement + alpha_c * theta_c) <= bar:
                    (trial_states, trial, trial_values, trial_slack), alpha, theta = (
                        corrected,
                        alpha_c,
                        theta_c,
                    )
                    accepted = True
                    break
            alpha *= 0.5
        if not accepted:  # at round-off: converged if the KKT conditions nearly hold
            converged = assembled and converged_kkt(r_d, r_p, mu, 1e3 * settings.limit_tolerance, lin.g, Gz)
            break
        # Levenberg: trusted while the first trial (the longest step inside the orthant) holds
        damping = max(damping / 10.0, 1e-12) if alpha == alpha_max else min(max(damping, 1e-8) * 4.0, 1.0)
        states, values, at = trial_states, trial_values, trial
        displacement = displacement + alpha * theta
        travelled += alpha * theta
        slack = trial_slack
        # the multipliers stay within a factor 1e10 of the barrier's central path
        z = np.clip(z_next, barrier * weight / (1e10 * slack), 1e10 * barrier * weight / slack)
        loop_multipliers = new_loop_multipliers
    shapes = [excess(r, values).shape for r in families]
    sizes = np.cumsum([int(np.prod(shape)) for shape in shapes])[:-1]
    z_parts = [part.reshape(shape) for part, shape in zip(np.split(z, sizes), shapes, strict=True)]
    s_parts = [part.reshape(shape) for part, shape in zip(np.split(slack, sizes), shapes, strict=True)]
    if kin is not None:  # the body states, and the joints' residual as the other path reports it
        states = at.point.state
        at = build_step(problem, problem.point(states, targets, reference), constraint_jacobian=False)
    return SpaceTimeSolution(
        states,
        values,
        float(at.value.sum()),
        binding_limits(families, z_parts, s_parts, values.shape),
        np.abs(at.constraint).max(-1, initial=0.0),
        iterations,
        converged,
        travelled=travelled,
        multipliers=z_parts,
    )


def _close_loops(problem, evaluate, states, loops, tolerance: float, steps: int = 3):
    """``states`` (F, n, 7) with their loop rows closed again by up to ``steps``
    Gauss-Newton steps along the tree (minimum norm in joint coordinates, every frame at
    once), and their evaluation; states without loop rows are returned as they are."""
    at = evaluate(states)
    tree = problem.tree
    for _ in range(steps if len(loops) else 0):
        gap = at.constraint[:, loops]
        if np.abs(gap).max(initial=0.0) <= tolerance:
            break
        ALZ = at.loop_jacobian @ tree.joint_basis(states, at.point.R)
        states = tree.retract(states, at.point.R, -(np.linalg.pinv(ALZ, rcond=1e-9) @ gap[..., None])[..., 0])
        at = evaluate(states)
    return states, at


def row_stiffness(rows: RowSet, H: np.ndarray) -> np.ndarray:
    """Each row's barrier weight (m,): ``1 / (c^T H^-1 c)`` for its coefficients c over
    the frames it reads and the Newton Hessians H (F, d, d) there, the force [objective
    per row unit] that moves the row by one unit of its bound. With it the barrier
    parameter is a fraction of the rows' bounds for every family and any objective
    scale: a range row of a robot a few centimetres long and an acceleration row at
    1200 Hz (bound 2e-5 rad) alike. A row that reads no moving frame weighs 1."""
    H_inv = np.linalg.inv(H)
    parts = []
    for f in rows.families:
        K, o = len(f.bound), f.offset
        reach = np.zeros(f.bound.shape)
        for j in range(f.width):
            c = f.dense[:, :, j]  # (K, R, d)
            reach += np.einsum("krd,kde,kre->kr", c, H_inv[o + j : o + j + K], c)
        parts.append(np.where(reach > 0.0, 1.0 / np.where(reach > 0.0, reach, 1.0), 1.0).ravel())
    return np.concatenate(parts) if parts else np.zeros(0)


def _to_boundary(v: np.ndarray, dv: np.ndarray, fraction: float) -> float:
    """The largest step <= 1 along dv that keeps ``fraction`` of v (m,) positive."""
    shrinking = dv < 0.0
    return min(1.0, float(np.min(-fraction * v[shrinking] / dv[shrinking], initial=np.inf)))


def _loop_multipliers(problem, lin: Linearization, theta: np.ndarray, force: np.ndarray):
    """The loop rows' multipliers (F, m) of the step theta (F, D) under motor forces
    (F, A), for the next model's curvature: the least-squares solution of the step's
    stationarity in joint coordinates, ``g + H theta + PZ^T force + (A_L Z)^T lam = 0``;
    None without loop rows."""
    tree, at = problem.tree, lin.at
    n_loop = loop_count(problem, at)
    if not n_loop:
        return None
    ALZ = at.loop_jacobian @ lin.Z  # (F, m_L, D)
    residual = lin.g_theta + (lin.H_theta @ theta[..., None])[..., 0] + (force[:, None, :] @ lin.PZ)[:, 0]
    gram = ALZ @ np.swapaxes(ALZ, 1, 2)
    gram += 1e-12 * np.maximum(np.einsum("bii->b", gram), 1.0)[:, None, None] * np.eye(n_loop)
    lam_loop = -np.linalg.solve(gram, (ALZ @ residual[..., None]))[..., 0]
    lam = np.zeros((len(theta), at.constraint.shape[1]))
    lam[:, tree.loop_rows] = lam_loop[:, : len(tree.loop_rows)]
    return lam
