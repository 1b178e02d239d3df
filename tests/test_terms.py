"""Every IK term against finite differences, through ``retract``: one harness.

A term is tested by adding a case to ``CASES``: a function that builds the term
and a batch of two :class:`Point` s on a reference mechanism. The harness checks,
per frame of the batch:

* the gradient is the derivative of the value;
* a residual's Jacobian (least squares, equality, or a barrier's inner map) is
  the derivative of the residual;
* least squares: gradient ``J^T r`` and Gauss-Newton Hessian ``J^T J``;
* barriers with an inner map: Hessian ``J^T diag(curvature) J``; without:
  Hessian = the symmetrised derivative of the gradient where it is exact;
* proximal terms: zero value and gradient; every Hessian symmetric and
  positive semi-definite.

The joint constraints' curvature ``sum_j lam_j Hess C_j`` (the Newton model's
second-order part) is checked against second differences of ``lam . C`` through
``retract``, on mechanisms that use every primitive.
"""

import dataclasses

import numpy as np
import pytest
from jacobians import numerical_jacobian
from looprig.core import Actuator, Body, ComObjective, FrameObjective, Joint, JointKind, Mechanism, solve_fk
from looprig.core.library import build
from looprig.core.maths.rotations import (
    matrix_from_rotvec,
    quat_conjugate,
    quat_multiply,
    quat_to_matrix,
    retract,
    rotvec_from_quat,
)
from looprig.core.solvers.ik import IKProblem, IKTargets
from looprig.core.solvers.step import build_step
from looprig.core.terms import (
    ActuatorBarrier,
    ActuatorLimits,
    AimObjective,
    AimTask,
    ComTask,
    FrameTask,
    JointConstraints,
    LeastSquaresTerm,
    MinimalMotion,
    MotorLock,
    MotorRest,
    Point,
    Reference,
    Regularization,
    StateRegularizer,
    Targets,
    Term,
    TermKind,
    VelocityBarrier,
)
from looprig.core.terms.aim import up_rotation
from looprig.core.terms.curvature import ConstraintCurvature


def _point(problem: IKProblem, states, references, targets: Targets, actuators=None, velocities=None):
    states, references = np.asarray(states), np.asarray(references)
    R_ref = quat_to_matrix(references[..., 3:])
    if actuators is None:
        actuators = problem.readout.read(references, R=R_ref)
    return problem.point(states, targets, Reference(references, R_ref, actuators, velocities))


def _random_states(mechanism, rng, scale, count=2):
    s0 = mechanism.initial_state()
    return np.stack([retract(s0, rng.normal(scale=scale, size=(len(s0), 6))) for _ in range(count)])


def _fourbar_targets(rng, com=True):
    return Targets(
        rng.normal(scale=0.1, size=(2, 1, 3)),
        matrix_from_rotvec(rng.normal(size=(2, 1, 3))),
        rng.normal(scale=0.1, size=(2, 3)) if com else None,
    )


def case_frame_task(rng):
    m = build("two_link_arm")
    problem = IKProblem(m)
    term = FrameTask(m, [FrameObjective("tip", (1, 2, 3), (4, 0, 5)), FrameObjective("upper_arm", 1, 1)])
    states = _random_states(m, rng, 0.4)
    targets = Targets(rng.normal(size=(2, 2, 3)), matrix_from_rotvec(rng.normal(size=(2, 2, 3))))
    return term, _point(problem, states, states, targets)


def case_aim_task(rng):
    """Aims with and without an up axis, one turning about a lock axis, on two bodies."""
    m = build("two_link_arm")
    aims = [
        AimObjective("tip", (1, 0, 0), weight=2.0),
        AimObjective("tip", (0, 1, 0), up=(0, 0, 1), weight=0.5),
        AimObjective("upper_arm", (0, 0, 1), lock=(1, 0, 0)),
    ]
    term = AimTask(m, aims, [0, 1, 2])
    states = _random_states(m, rng, 0.4)
    targets = Targets(rng.normal(size=(2, 3, 3)), up_rotation(rng.normal(size=(2, 3, 3))))
    return term, _point(IKProblem(m), states, states, targets)


def case_com_task(rng):
    m = build("fourbar")
    term = ComTask(m, ComObjective((1, 0, 4)))
    states = _random_states(m, rng, 0.3)
    return term, _point(IKProblem(m), states, states, _fourbar_targets(rng))


def case_state_regularizer(rng):
    m = build("boxer")
    problem = IKProblem(m)
    term = StateRegularizer(problem.constraints.free_bodies, 2.0)
    states = _random_states(m, rng, 0.4)
    references = np.stack([retract(s, rng.normal(scale=0.3, size=(len(s), 6))) for s in states])
    return term, _point(problem, states, references, _fourbar_targets(rng, com=False))


def case_minimal_motion(rng):
    m = build("dancer")
    problem = IKProblem(m)
    term = MinimalMotion(
        problem.readout, problem.constraints.free_bodies, 1e-3, problem.constraints.length_scale
    )
    states = _random_states(m, rng, 0.2)
    return term, _point(problem, states, states, _fourbar_targets(rng, com=False))


def case_motor_rest(rng):
    m = build("slider_crank")
    problem = IKProblem(m)
    rest = rng.normal(size=len(m.actuator_names))
    term = MotorRest(problem.readout, rest, 1e-2, problem.constraints.length_scale)
    states = _random_states(m, rng, 0.2)
    return term, _point(problem, states, states, _fourbar_targets(rng, com=False))


def case_motor_lock(rng):
    m = build("dancer")
    problem = IKProblem(m)
    motors = np.array([0, 3, 5])
    term = MotorLock(problem.readout, motors, rng.normal(size=3), problem.constraints.length_scale)
    states = _random_states(m, rng, 0.2)
    return term, _point(problem, states, states, _fourbar_targets(rng, com=False))


def case_velocity_barrier(rng):
    m = build("boxer")
    problem = IKProblem(m)
    free = problem.constraints.free_bodies
    term = VelocityBarrier(free, 2.0, 1e-3)
    states = _random_states(m, rng, 0.4)
    # some bodies move by ~0.3 rad (active), others by 1e-4 rad (inactive)
    steps = rng.normal(scale=0.3, size=(2, len(m.bodies), 6))
    steps[:, ::2] *= 3e-4
    return term, _point(problem, states, retract(states, steps), _fourbar_targets(rng, com=False))


def case_actuator_barrier(rng):
    """Position and velocity barriers (active) and the acceleration term, through the read-off."""
    m = build("two_link_arm")
    limited = Actuator(lower=-0.2, upper=0.2, velocity_limit=1.0, acceleration_limit=50.0)
    m = Mechanism(m.bodies, [dataclasses.replace(j, actuator=limited) for j in m.joints], m.frames)
    reg = Regularization(
        state_weight=0.0, actuator_weight=2.0, acceleration_weight=0.5, position_margin=0.1, rate=100.0
    )
    problem = IKProblem(m, regularization=reg)
    term = ActuatorBarrier(problem.readout, ActuatorLimits.of(m), reg)
    previous = np.stack([solve_fk(m, [0.0, 0.05]).state, solve_fk(m, [-0.05, 0.1]).state])
    states = np.stack([solve_fk(m, [0.15, 0.2]).state, solve_fk(m, [-0.17, 0.19]).state])
    states = np.stack([retract(s, rng.normal(scale=1e-3, size=(len(s), 6))) for s in states])  # off the loop
    actuators = np.array([[0.0, 0.05], [-0.05, 0.1]])
    velocities = np.array([[0.5, -0.2], [0.1, 0.3]])
    point = _point(problem, states, previous, _fourbar_targets(rng, com=False), actuators, velocities)
    assert np.all(term.linearize(point, derivatives=False).value > 1.0)  # every barrier bites
    return term, point


def case_joint_constraints(rng):
    m = build("walker")
    problem = IKProblem(m)
    states = _random_states(m, rng, 0.1)
    return JointConstraints(problem.constraints), _point(problem, states, states, _fourbar_targets(rng))


CASES = [
    case_frame_task,
    case_aim_task,
    case_minimal_motion,
    case_motor_rest,
    case_motor_lock,
    case_com_task,
    case_state_regularizer,
    case_velocity_barrier,
    case_actuator_barrier,
    case_joint_constraints,
]


def _term_classes(cls=Term):
    for sub in cls.__subclasses__():
        if "tests" not in sub.__module__:
            yield sub
        yield from _term_classes(sub)


def test_every_term_class_has_a_case():
    covered = {type(case(np.random.default_rng(0))[0]) for case in CASES}
    concrete = {c for c in _term_classes() if c.__module__.startswith("looprig.core.terms.")}
    concrete -= {c for c in concrete if c.__name__ == "LeastSquaresTerm"}
    assert concrete <= covered, f"terms without a finite-difference case: {concrete - covered}"


def _frame(point: Point, b: int, state):
    """Point ``b`` of a batch, at another state."""
    ref, tg = point.reference, point.targets
    one = lambda x: None if x is None else x[b : b + 1]  # noqa: E731
    return Point(
        state[None],
        quat_to_matrix(state[None, :, 3:]),
        Targets(tg.positions[b : b + 1], tg.rotations[b : b + 1], one(tg.com)),
        Reference(ref.state[b : b + 1], ref.R[b : b + 1], ref.actuators[b : b + 1], one(ref.velocities)),
        point.column_of_body,
        point.n_vars,
    )


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__[5:])
def test_term_derivatives_match_finite_differences(case):
    term, point = case(np.random.default_rng(7))
    lin = term.linearize(point)
    hessian = lin.hessian_matrix()
    free = np.flatnonzero(point.column_of_body >= 0)
    assert lin.value.shape == (point.batch,)
    for b in range(point.batch):
        at = lambda s: term.linearize(_frame(point, b, s), derivatives=False)  # noqa: E731,B023
        state = point.state[b]
        if term.kind == TermKind.PROXIMAL:  # a metric around the iterate: nothing to differentiate
            assert np.all(lin.value == 0.0) and np.all(lin.gradient == 0.0)
        elif term.kind != TermKind.EQUALITY:
            numeric = numerical_jacobian(lambda s: at(s).value, state, free)[0]  # noqa: B023
            assert np.abs(lin.gradient[b] - numeric).max() <= 1e-7 * max(1.0, np.abs(numeric).max())
        if isinstance(term, LeastSquaresTerm):  # the residual itself, also where linearize skips it
            residual = lambda s: term.residual(_frame(point, b, s), jacobian=False)[0][0]  # noqa: E731,B023
            r, J = (x[b] for x in term.residual(point))
        elif lin.jacobian is not None:
            residual = lambda s: at(s).residual[0]  # noqa: E731,B023
            r, J = lin.residual[b], lin.jacobian[b]
        if isinstance(term, LeastSquaresTerm) or lin.jacobian is not None:
            numeric = numerical_jacobian(residual, state, free)
            assert np.abs(J - numeric).max() <= 1e-7 * max(1.0, np.abs(numeric).max())
        if term.kind == TermKind.LEAST_SQUARES:
            if lin.jacobian is not None:  # the columns it holds, and zeros elsewhere
                assert np.array_equal(lin.full(lin.jacobian)[b], J)
            assert np.allclose(lin.gradient[b], J.T @ r, atol=1e-12)
            assert np.allclose(hessian[b], J.T @ J, atol=1e-12)
        elif term.kind == TermKind.BARRIER and lin.curvature is not None:
            assert np.allclose(hessian[b], J.T @ (lin.curvature[b, :, None] * J), atol=1e-10)
        elif term.kind == TermKind.BARRIER:
            gradient = lambda s: term.linearize(_frame(point, b, s)).gradient[0]  # noqa: E731,B023
            numeric = numerical_jacobian(gradient, state, free)
            numeric = 0.5 * (numeric + numeric.T)
            assert np.abs(hessian[b] - numeric).max() <= 1e-6 * max(1.0, np.abs(numeric).max())
        if hessian is not None:
            assert np.allclose(hessian[b], hessian[b].T)
            assert np.linalg.eigvalsh(hessian[b]).min() >= -1e-9 * max(1.0, np.abs(hessian[b]).max())


def test_orientation_residual_is_the_papers_objective():
    """1/2 sum w_a |R a - a_hat|^2 == sum w_a (1 - (R a) . a_hat)."""
    rng = np.random.default_rng(3)
    m = build("two_link_arm")
    w = np.array([0.5, 2.0, 3.0])
    term = FrameTask(m, [FrameObjective("tip", (0, 0, 0), w)])
    state = _random_states(m, rng, 0.4, count=1)
    target = matrix_from_rotvec(rng.normal(size=3))[None, None]
    point = _point(IKProblem(m), state, state, Targets(np.zeros((1, 1, 3)), target))
    _, axes = term.poses(state[0])
    paper = np.sum(w * (1 - np.sum(axes[0] * target[0, 0], axis=0)))
    assert np.isclose(term.linearize(point, derivatives=False).value[0], paper)


def test_velocity_barrier_is_zero_below_its_threshold():
    """g(x) = ((x - t) / t)^3 above t: a body turned by theta has x = 2 - 2 cos(theta)."""
    m = build("two_link_arm")
    problem = IKProblem(m)
    free = problem.constraints.free_bodies
    state = m.initial_state()[None]
    previous = retract(state, np.array([[[0] * 6, [0, 0, 0, 0.3, 0.1, 0], [0, 0, 0, 1e-4, 0, 0]]], float))
    t = 1e-3
    point = _point(problem, state, previous, Targets(np.zeros((1, 0, 3)), np.zeros((1, 0, 3, 3))))
    lin = VelocityBarrier(free, 2.0, t).linearize(point)
    theta = np.hypot(0.3, 0.1)
    assert np.isclose(lin.value[0], 2.0 * ((2 - 2 * np.cos(theta) - t) / t) ** 3)
    assert np.all(lin.gradient[0, problem.constraints.column_of_body[2] :] == 0.0)  # body 2 inactive


def test_step_gradient_is_the_derivative_of_the_summed_objective():
    """build_step sums every objective term of a problem (tasks, regularizers, barriers)."""
    m = build("fourbar")
    problem = IKProblem(
        m,
        [FrameObjective("coupler_point", (1, 2, 3), (1, 1, 0))],
        ComObjective((1, 0, 1)),
        Regularization(state_weight=0.1, velocity_weight=5e-3, velocity_threshold=1e-2),
    )
    rng = np.random.default_rng(0)
    state = retract(m.initial_state(), rng.normal(scale=0.2, size=(4, 6)))[None]
    previous = retract(state, rng.normal(scale=0.1, size=(1, 4, 6)))
    targets = Targets(
        np.array([[[0.1, 0.2, 0.0]]]),
        matrix_from_rotvec(np.array([[[0, 0, 0.3]]])),
        np.array([[0.1, 0.1, 0.0]]),
    )
    point = _point(problem, state, previous, targets)
    step = build_step(problem, point)
    free = problem.constraints.free_bodies
    numeric = numerical_jacobian(
        lambda s: build_step(problem, _frame(point, 0, s), derivatives=False).value, state[0], free
    )[0]
    assert len(problem.objective_terms) == 4
    assert np.allclose(step.gradient[0], numeric, atol=1e-7)
    assert step.constraint_jacobian.shape == (1, problem.constraints.n_rows, problem.constraints.n_vars)


def test_report_names_every_term_with_units():
    m = build("fourbar")
    problem = IKProblem(m, [FrameObjective("coupler_point")], ComObjective())
    state = m.initial_state()[None]
    targets = Targets(np.zeros((1, 1, 3)), np.eye(3)[None, None], np.zeros((1, 3)))
    point = _point(problem, state, state, targets)
    labels = [row[2] for row in problem.report(point)]
    assert labels == ["coupler_point position [m]", "com [m]", "max |C| [m]"]


def test_targets_for_the_com_of_a_floating_robot_exclude_the_world():
    """sum M_i c_i / M over the robot: a grounded body joined only by free joints is the world."""
    m = Mechanism(
        [
            Body("world", mass=5.0, grounded=True),
            Body("pelvis", position=np.array([0.0, 0.0, 1.0]), mass=2.0),
            Body("leg", position=np.array([0.0, 0.0, 0.5]), mass=1.0),
        ],
        [
            Joint("float", JointKind.FREE, "world", "pelvis"),
            Joint("hip", JointKind.REVOLUTE, "pelvis", "leg", anchor=np.array([0.0, 0, 1.0])),
        ],
    )
    assert np.allclose(ComTask(m, ComObjective()).com(m.initial_state()), [0, 0, (2 * 1.0 + 0.5) / 3])
    boxer = build("boxer")  # a fixed base counts: the grounded torso is part of the robot
    expected = boxer.masses @ boxer.initial_state()[:, :3] / boxer.masses.sum()
    assert np.allclose(ComTask(boxer, ComObjective()).com(boxer.initial_state()), expected)


def test_ik_targets_are_validated():
    problem = IKProblem(build("fourbar"), [FrameObjective("coupler_point")])
    with pytest.raises(Exception, match="not finite"):
        problem.check_targets(IKTargets(np.full((1, 3), np.nan), np.eye(3)[None]))


def test_minimal_motion_metric_is_the_motor_motion():
    """Along a motion of the one motor, d^T H d = w L^2 dp^2 (plus a 1e-9 share of body motion)."""
    m = build("fourbar")
    problem = IKProblem(m)
    L, free = problem.constraints.length_scale, problem.constraints.free_bodies
    term = MinimalMotion(problem.readout, free, 2.0, L)
    dp = 1e-6
    a, b = solve_fk(m, [0.3]).state, solve_fk(m, [0.3 + dp]).state
    rotation = rotvec_from_quat(quat_multiply(b[:, 3:], quat_conjugate(a[:, 3:])))
    d = np.concatenate([b[:, :3] - a[:, :3], rotation], axis=1)[free].ravel()
    point = _point(problem, a[None], a[None], Targets(np.zeros((1, 0, 3)), np.zeros((1, 0, 3, 3))))
    H = term.linearize(point).hessian_matrix()[0]
    assert np.isclose(d @ H @ d, 2.0 * L**2 * dp**2, rtol=1e-4)


def _second_differences(fun, state: np.ndarray, constraints, eps: float = 1e-4) -> np.ndarray:
    """Hessian (N, N) of ``fun(states (P, n, 7)) -> (P,)`` at ``state`` over the tangent
    through ``retract``, by central second differences (all perturbations in one batch)."""
    N = constraints.n_vars
    E = eps * np.eye(N)
    i, j = np.triu_indices(N, k=1)
    deltas = np.concatenate([np.zeros((1, N)), E, -E, E[i] + E[j], E[i] - E[j], -E[i] + E[j], -E[i] - E[j]])
    values = fun(retract(state[None], constraints.tangent_to_bodies(deltas)))
    f0, plus, minus = values[0], values[1 : 1 + N], values[1 + N : 1 + 2 * N]
    pp, pm, mp, mm = values[1 + 2 * N :].reshape(4, -1)
    H = np.diag((plus - 2 * f0 + minus) / eps**2)
    H[i, j] = H[j, i] = (pp - pm - mp + mm) / (4 * eps**2)
    return H


@pytest.mark.parametrize("name", ["stewart", "chain_6r6p", "slider_crank", "all_joints"])
def test_constraint_curvature_is_the_hessian_of_the_multiplied_constraints(name):
    """sum_j lam_j Hess C_j (C: the IK's joint rows) equals the Hessian of lam . C(retract(s, d))
    over d at 0, for every primitive (point, dot, slide), per frame of a batch of two."""
    rng = np.random.default_rng(5)
    m = build(name)
    cs = IKProblem(m).constraints
    states = _random_states(m, rng, 0.3)
    multipliers = rng.normal(size=(2, cs.n_rows))
    curvature = ConstraintCurvature(cs)(states, quat_to_matrix(states[..., 3:]), multipliers)
    for b in range(2):
        numeric = _second_differences(lambda s: cs.residual(s) @ multipliers[b], states[b], cs)  # noqa: B023
        assert np.abs(curvature[b] - numeric).max() <= 1e-6 * max(1.0, np.abs(numeric).max())
        assert np.allclose(curvature[b], curvature[b].T)
