"""Space-time retargeting: every frame of a clip at once, with hard motor limits.

Over the F frames of a clip::

    min  sum_k f(s_k)                                  (tracking; the IK problem's objective)
    s.t. C(s_k) = 0                                    (joints and loops: never apart)
         lower <= p_k <= upper                         (each motor's range)
         |p_(k+1) - p_k| <= v / rate                   (its speed between frames)
         |p_(k+1) - 2 p_k + p_(k-1)| <= a / rate^2     (its acceleration)

with ``p_k`` the motors read off ``s_k``. Frames couple only through the motor
rows' neighbour differences. Each SQP iteration linearises every frame with the
clip solver's kernels (:func:`~looprig.core.step.build_step`, the spanning tree
of :class:`~looprig.core.kkt.ReducedKKT`), moves each frame in the null space of
its linearised joint rows, ``d_k = delta_k + T_k u_k`` (``delta_k`` restores the
rows, ``T_k`` (N, dof) spans the mechanism's motions), so the motors move by
``P_k d_k`` (the read-off Jacobian) and every limit row is linear in the unknowns
``u`` (F, dof): the subproblem is a QP banded in time, solved by
:func:`~looprig.core.banded_qp.solve_banded_qp`. A line search on an l1 merit
(objective, joint residuals and limit excess) globalises the iterations; the
Hessian is Gauss-Newton's, plus the joints' curvature times their multipliers
once the limits hold the targets away (the Lagrangian's, as in the per-frame
solver) and the minimal-motion metric.
"""

import os
from dataclasses import dataclass

import numpy as np

from .banded_qp import StencilRows, solve_banded_qp
from .ik import IKProblem
from .kkt import ReducedKKT
from .rotations import quat_to_matrix, retract
from .step import build_step, with_constraint_curvature
from .terms import Reference, Targets
from .terms.limits import ActuatorLimits

_TRACE = os.environ.get("LOOPRIG_TRACE")
#: The stencils of the motor rows: range (one frame), speed (two), acceleration (three).
STENCILS = {"position": (1.0,), "velocity": (-1.0, 1.0), "acceleration": (1.0, -2.0, 1.0)}


@dataclass(frozen=True)
class SpaceTimeSettings:
    """Tolerances of :func:`solve_spacetime`.

    limit_tolerance: how far a limit row may end outside its bound, relative to the
    bound's size (a speed limit's ``v / rate``); step_tolerance [rad | m]: converged when
    the largest motor change of a step is below it; max_iterations: SQP iterations.
    """

    limit_tolerance: float = 1e-9
    step_tolerance: float = 1e-7
    max_iterations: int = 60
    max_backtracks: int = 12


@dataclass
class SpaceTimeSolution:
    """Outcome of :func:`solve_spacetime` for F frames and A motors.

    states (F, n, 7); actuators (F, A) [rad | m] unwrapped; objective: the summed
    tracking cost; binding (F, A) str: the limit that holds each motor at each frame
    ("" where none: ``position``, ``velocity`` or ``acceleration``); residual (F,) max
    |C| [m]; iterations: SQP iterations; converged: tolerances met.
    """

    states: np.ndarray
    actuators: np.ndarray
    objective: float
    binding: np.ndarray
    residual: np.ndarray
    iterations: int
    converged: bool


@dataclass
class _Rows:
    """The limit rows of one stencil family, normalised by their bounds: at every run
    of frames k.. (K runs), one row per channel: a motor and a sign."""

    quantity: str
    motor: np.ndarray  # (R,)
    sign: np.ndarray  # (R,) +1: an upper bound, -1: a lower one
    bound: np.ndarray  # (R,) [rad | m], in the rows' own units before normalising
    scale: np.ndarray  # (R,) the normaliser

    @property
    def stencil(self) -> tuple[float, ...]:
        return STENCILS[self.quantity]


def limit_rows(limits: ActuatorLimits, frames: int, rate: float) -> list[_Rows]:
    """Every finite limit of every motor as one-sided stencil rows over ``frames``."""
    span = np.where(np.isfinite(limits.upper - limits.lower), limits.upper - limits.lower, 1.0)
    families = []
    for quantity, stencil in STENCILS.items():
        if frames < len(stencil):
            continue
        if quantity == "position":
            uppers, lowers, scale = limits.upper, -limits.lower, np.maximum(span, 1e-6)
        else:
            step = limits.velocity / rate if quantity == "velocity" else limits.acceleration / rate**2
            uppers, lowers, scale = step, step, step
        channels = [
            (m, sign, bound, scale[m])
            for m in range(len(limits.lower))
            for sign, bound in ((1.0, uppers[m]), (-1.0, lowers[m]))
            if np.isfinite(bound)
        ]
        if channels:
            motor, sign, bound, norm = (np.array(c) for c in zip(*channels, strict=True))
            families.append(_Rows(quantity, motor.astype(int), sign, bound, norm))
    return families


def _runs(rows: _Rows, values: np.ndarray) -> np.ndarray:
    """The stencil of ``rows`` applied to each channel's motor (K, R) of values (F, A)."""
    K = len(values) - len(rows.stencil) + 1
    return sum(w * values[j : j + K, rows.motor] for j, w in enumerate(rows.stencil))


def excess(rows: _Rows, values: np.ndarray) -> np.ndarray:
    """How far each row is past its bound at motor values (F, A), normalised (K, R)."""
    return (rows.sign * _runs(rows, values) - rows.bound) / rows.scale


def _stencil(rows: _Rows, b: np.ndarray, B: np.ndarray) -> StencilRows:
    """The QP rows of ``rows`` for motor values ``b + B u`` (b (F, A), B (F, A, d))."""
    K = len(b) - len(rows.stencil) + 1
    weight = rows.sign / rows.scale  # (R,)
    coefficients = np.stack(
        [w * weight[:, None] * B[j : j + K][:, rows.motor] for j, w in enumerate(rows.stencil)], axis=2
    )  # (K, R, S, d)
    return StencilRows(coefficients, -excess(rows, b))


def motor_forces(families: list[_Rows], multipliers: list[np.ndarray], shape) -> np.ndarray:
    """The limit rows' multipliers (K, R) as forces on each frame's motors (F, A)."""
    force = np.zeros(shape)
    for rows, z in zip(families, multipliers, strict=True):
        K = len(z)
        per_channel = z * (rows.sign / rows.scale)
        for j, w in enumerate(rows.stencil):
            for r, m in enumerate(rows.motor):
                force[j : j + K, m] += w * per_channel[:, r]
    return force


#: Each stage of the limits' homotopy divides how far the limits are eased by this.
HOMOTOPY_FACTOR = 4.0


def solve_spacetime(
    problem: IKProblem,
    targets: Targets,
    states: np.ndarray,
    actuators: np.ndarray,
    rate: float,
    limits: ActuatorLimits | None = None,
    settings: SpaceTimeSettings | None = None,
) -> SpaceTimeSolution:
    """The clip ``targets`` (batched to F frames) solved at once under hard motor limits
    (module docstring), from assembled ``states`` (F, n, 7) whose motors read
    ``actuators`` (F, A) unwrapped [rad | m]: typically the unlimited clip solver's
    answer. ``limits``: the problem's actuators' by default.

    A start far outside the limits (a motor at ten times its speed) linearises badly,
    so the limits are tightened in stages: first eased to what the start uses, then
    eased by a quarter as much per stage, each stage starting from the last one's
    answer, the last stage holding the true limits to convergence."""
    settings = settings or SpaceTimeSettings()
    limits = limits or problem.actuator_limits
    values = np.asarray(actuators, dtype=float)
    steps = np.abs(np.diff(values, axis=0)).max(0, initial=0.0) * rate
    turns = np.abs(np.diff(values, 2, axis=0)).max(0, initial=0.0) * rate**2
    over = np.maximum(values.max(0) - limits.upper, 0.0), np.maximum(limits.lower - values.min(0), 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = max(
            1.0,
            float(
                np.nanmax(np.where(np.isfinite(limits.velocity), steps / limits.velocity, 1.0), initial=1.0)
            ),
            float(
                np.nanmax(
                    np.where(np.isfinite(limits.acceleration), turns / limits.acceleration, 1.0), initial=1.0
                )
            ),
        )
    stages = max(0, int(np.ceil(np.log(ratio) / np.log(HOMOTOPY_FACTOR))))
    total = 0
    for stage in range(stages, -1, -1):
        ease = HOMOTOPY_FACTOR ** (stage - stages) if stage else 0.0  # 1 .. 0
        eased = ActuatorLimits(
            limits.lower - over[1] * ease,
            limits.upper + over[0] * ease,
            limits.velocity * max(1.0, ratio * ease),
            limits.acceleration * max(1.0, ratio * ease),
        )
        solution = _sqp(problem, targets, states, values, rate, eased, settings, final=stage == 0)
        states, values = solution.states, solution.actuators
        total += solution.iterations
    solution.iterations = total
    return solution


def _sqp(
    problem: IKProblem,
    targets: Targets,
    states: np.ndarray,
    actuators: np.ndarray,
    rate: float,
    limits: ActuatorLimits,
    settings: SpaceTimeSettings,
    final: bool,
) -> SpaceTimeSolution:
    """One stage of :func:`solve_spacetime`: SQP under ``limits``; a stage before the
    ``final`` one stops as soon as its limits hold."""
    cs, readout = problem.constraints, problem.readout
    F = len(states)
    states = np.array(states, dtype=float)
    values = np.array(actuators, dtype=float)
    families = limit_rows(limits, F, rate)
    reference = Reference(states.copy(), quat_to_matrix(states[..., 3:]), values.copy())
    nu_limits, nu_joints = 0.0, 0.0
    multipliers = None
    qp_multipliers = None
    iterations, converged = 0, False

    def evaluate(S, derivatives=True):
        point = problem.point(S, targets, reference)
        return build_step(problem, point, derivatives=derivatives)

    def limit_excess(v):
        return sum(float(np.maximum(excess(rows, v), 0.0).sum()) for rows in families)

    at = evaluate(states)
    for _ in range(settings.max_iterations):
        iterations += 1
        model = at.model
        if multipliers is not None:
            model = with_constraint_curvature(problem, model, at.point, multipliers)
        kkt = ReducedKKT(problem.tree, at.point.R, model, at.row_blocks, at.loop_jacobian, np.zeros(F), 0.0)
        T, delta = _motions(kkt, at.constraint)
        H = kkt.model.project(T, np.zeros(F))
        if multipliers is not None:  # the Lagrangian's Hessian only where it is convex on the motions
            bad = np.linalg.eigvalsh(H)[:, 0] <= 0.0
            if bad.any():
                H[bad] = at.model.take(np.flatnonzero(bad)).project(T[bad], np.zeros(bad.sum()))
        H += (
            1e-12
            * np.maximum(np.abs(np.diagonal(H, axis1=1, axis2=2)).max(-1), 1e-300)[:, None, None]
            * np.eye(H.shape[-1])
        )
        Hdelta = model.times(delta[..., None])[..., 0]
        g_full = at.gradient + Hdelta
        g = (g_full[:, None, :] @ T)[:, 0]
        P = readout.jacobian(at.point.state, at.point.R, cs.column_of_body, cs.n_vars)  # (F, A, N)
        B = P @ T
        b = values + (P @ delta[..., None])[..., 0]
        qp = solve_banded_qp(H, g, [_stencil(rows, b, B) for rows in families])
        d = delta + (T @ qp.u[..., None])[..., 0]
        # joint multipliers of the QP step (least squares of its stationarity), for the
        # next model's curvature
        force = motor_forces(families, qp.multipliers, values.shape)
        A_full = at.constraint_jacobian
        residual_force = at.gradient + model.times(d[..., None])[..., 0] + (force[:, None, :] @ P)[:, 0]
        gram = A_full @ np.swapaxes(A_full, 1, 2)
        gram += 1e-12 * np.maximum(np.einsum("bii->b", gram), 1.0)[:, None, None] * np.eye(gram.shape[-1])
        new_multipliers = -np.linalg.solve(gram, (A_full @ residual_force[..., None]))[..., 0]
        qp_multipliers = qp.multipliers
        # l1 merit: objective + joint residuals + limit excess (normalised rows)
        z_max = max((float(z.max(initial=0.0)) for z in qp.multipliers), default=0.0)
        nu_limits = max(nu_limits, 1.1 * z_max)
        nu_joints = max(nu_joints, 1.1 * float(np.abs(new_multipliers).max(initial=0.0)))
        c_l1 = float(np.abs(at.constraint).sum())
        merit = float(at.value.sum()) + nu_joints * c_l1 + nu_limits * limit_excess(values)
        slope = (
            float(np.einsum("bn,bn->", at.gradient, d)) - nu_joints * c_l1 - nu_limits * limit_excess(values)
        )
        motor_step = float(np.abs((P @ d[..., None])[..., 0]).max(initial=0.0))
        alpha = 1.0
        accepted = False
        for _ in range(settings.max_backtracks):
            trial_states = retract(states, cs.tangent_to_bodies(alpha * d))
            trial = evaluate(trial_states)
            trial_values = readout.read(trial_states, previous=values, R=trial.point.R)
            trial_merit = (
                float(trial.value.sum())
                + nu_joints * float(np.abs(trial.constraint).sum())
                + nu_limits * limit_excess(trial_values)
            )
            if trial_merit <= merit + 1e-4 * alpha * min(slope, 0.0) + 1e-14 * abs(merit):
                accepted = True
                break
            alpha *= 0.5
        if not accepted:
            break
        states, values, at = trial_states, trial_values, trial
        multipliers = new_multipliers
        small = motor_step <= settings.step_tolerance
        held = all(
            float(excess(rows, values).max(initial=-np.inf)) <= settings.limit_tolerance for rows in families
        )
        if held and (not final or small):
            converged = True
            break
    binding = _binding(families, qp_multipliers, values.shape)
    return SpaceTimeSolution(
        states,
        values,
        float(at.value.sum()),
        binding,
        np.abs(at.constraint).max(-1, initial=0.0),
        iterations,
        converged,
    )


def _motions(kkt: ReducedKKT, constraint: np.ndarray):
    """Each frame's motions T (F, N, dof) — the null space of its linearised joint and
    loop rows — and the step delta (F, N) that restores those rows (minimum norm in
    the tree's coordinates)."""
    Z = kkt.Z
    e = kkt.particular(constraint)
    if not len(kkt.loop):
        return Z, e
    ALZ = kkt.A_L @ Z  # (F, m_L, D)
    c_loop = constraint[:, kkt.loop] + (kkt.A_L @ e[..., None])[..., 0]
    _, sv, Vt = np.linalg.svd(ALZ)
    rank = int((sv[0] > 1e-9 * max(sv[0].max(initial=0.0), 1e-300)).sum())
    W = np.swapaxes(Vt[:, rank:], 1, 2)  # (F, D, dof)
    q0 = -(np.linalg.pinv(ALZ, rcond=1e-9) @ c_loop[..., None])[..., 0]
    return Z @ W, e + (Z @ q0[..., None])[..., 0]


def _binding(families: list[_Rows], multipliers, shape) -> np.ndarray:
    """Per frame and motor, the limit whose rows carry the largest multiplier ("" if none)."""
    out = np.full(shape, "", dtype=object)
    if multipliers is None:
        return out
    best = np.full(shape, 1e-8)
    for rows, z in zip(families, multipliers, strict=True):
        K = len(z)
        for j in range(len(rows.stencil)):
            for r, m in enumerate(rows.motor):
                stronger = np.flatnonzero(z[:, r] > best[j : j + K, m]) + j
                best[stronger, m] = z[stronger - j, r]
                out[stronger, m] = rows.quantity
    return out
