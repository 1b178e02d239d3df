"""Objective residuals, gradients and Hessians against finite differences."""

import dataclasses

import numpy as np
import pytest
from jacobians import numerical_jacobian
from looprig.core import ComObjective, FrameObjective, IKTargets, Regularization
from looprig.core.ik import IKProblem, _Model, _Reference
from looprig.core.library import build
from looprig.core.objectives import (
    ComTerm,
    FrameTerms,
    com_residual,
    frame_residuals,
    state_regularizer,
    velocity_barrier,
)
from looprig.core.rotations import matrix_from_rotvec, quat_to_matrix, retract


def rotations(state):
    return quat_to_matrix(state[:, 3:])


@pytest.fixture
def arm_state():
    m = build("two_link_arm")
    rng = np.random.default_rng(3)
    state = retract(m.initial_state(), rng.normal(scale=0.4, size=(len(m.bodies), 6)))
    return m, state, rng


def test_frame_residual_jacobian(arm_state):
    m, state, rng = arm_state
    terms = FrameTerms(
        m, [FrameObjective("tip", (1, 2, 3), (4, 0, 5)), FrameObjective("upper_arm", (1, 1, 1), (1, 1, 1))]
    )
    cols = np.array([-1, 0, 6])
    targets = rng.normal(size=(2, 3)), matrix_from_rotvec(rng.normal(size=(2, 3)))
    _, J = frame_residuals(terms, state, rotations(state), *targets, cols, 12)
    numeric = numerical_jacobian(
        lambda s: frame_residuals(terms, s, rotations(s), *targets, cols, 12)[0], state, [1, 2]
    )
    assert np.abs(J - numeric).max() < 1e-8


def test_orientation_residual_is_the_papers_objective(arm_state):
    """1/2 sum w_a |R a - a_hat|^2 == sum w_a (1 - (R a) . a_hat)."""
    m, state, rng = arm_state
    w = np.array([0.5, 2.0, 3.0])
    terms = FrameTerms(m, [FrameObjective("tip", (0, 0, 0), w)])
    target = matrix_from_rotvec(rng.normal(size=3))[None]
    r, _ = frame_residuals(terms, state, rotations(state), np.zeros((1, 3)), target, np.array([-1, 0, 6]), 12)
    _, axes = terms.poses(state)
    paper = np.sum(w * (1 - np.sum(axes[0] * target[0], axis=0)))
    assert np.isclose(0.5 * r @ r, paper)


def test_com_residual_jacobian(arm_state):
    m, state, _ = arm_state
    term = ComTerm(m, ComObjective((1, 0, 4)))
    cols = np.array([-1, 0, 6])
    target = np.array([0.1, 0.2, 0.3])
    _, J = com_residual(term, state, target, cols, 12)
    numeric = numerical_jacobian(lambda s: com_residual(term, s, target, cols, 12)[0], state, [1, 2])
    assert np.abs(J - numeric).max() < 1e-9


def test_state_regularizer_gradient(arm_state):
    _, state, rng = arm_state
    previous = retract(state, rng.normal(scale=0.3, size=(3, 6)))
    free = np.array([1, 2])
    Rp = rotations(previous)
    value, gradient = state_regularizer(state, rotations(state), previous, Rp, free, 2.0)
    numeric = numerical_jacobian(
        lambda s: np.atleast_1d(state_regularizer(s, rotations(s), previous, Rp, free, 2.0)[0]), state, free
    )[0]
    assert np.abs(gradient.ravel() - numeric).max() < 1e-8
    assert value > 0 and state_regularizer(previous, Rp, previous, Rp, free, 2.0)[0] == 0.0


def test_velocity_barrier_gradient_and_threshold(arm_state):
    _, state, _ = arm_state
    free = np.array([1, 2])
    previous = retract(state, np.array([[0] * 6, [0, 0, 0, 0.3, 0.1, 0], [0, 0, 0, 1e-4, 0, 0]], float))
    t = 1e-3
    Rp = rotations(previous)
    value, grad, _ = velocity_barrier(rotations(state), Rp, free, 2.0, t)
    # body 2 moved by 1e-4 rad: x ~ 1e-8 < t, inactive; body 1 moved ~0.316 rad: active
    assert np.all(grad[1] == 0)
    theta = np.hypot(0.3, 0.1)
    assert np.isclose(value, 2.0 * ((2 - 2 * np.cos(theta) - t) / t) ** 3)
    numeric = numerical_jacobian(
        lambda s: np.atleast_1d(velocity_barrier(rotations(s), Rp, free, 2.0, t)[0]), state, free
    )[0].reshape(2, 6)
    assert np.abs(numeric[:, 3:] - grad).max() <= 1e-7 * np.abs(grad).max()
    assert np.allclose(numeric[:, :3], 0.0)


def test_model_gradient_matches_objective_differences():
    """The SQP model's gradient is the derivative of its value (all terms together)."""
    m = build("fourbar")
    problem = IKProblem(
        m,
        [FrameObjective("coupler_point", (1, 2, 3), (1, 1, 0))],
        ComObjective((1, 0, 1)),
        Regularization(state_weight=0.1, velocity_weight=5e-3, velocity_threshold=1e-2),
    )
    rng = np.random.default_rng(0)
    state = retract(m.initial_state(), rng.normal(scale=0.2, size=(4, 6)))
    previous = retract(state, rng.normal(scale=0.1, size=(4, 6)))
    from looprig.core.ik import IKTargets

    targets = IKTargets(
        np.array([[0.1, 0.2, 0.0]]), matrix_from_rotvec(np.array([[0, 0, 0.3]])), np.array([0.1, 0.1, 0.0])
    )
    ref = _Reference(previous, rotations(previous), problem.readout.read(previous), None)
    model = _Model(problem, state, rotations(state), targets, ref)
    free = problem.constraints.free_bodies
    numeric = numerical_jacobian(
        lambda s: np.atleast_1d(_Model(problem, s, rotations(s), targets, ref).value), state, free
    )[0]
    assert np.allclose(model.gradient, numeric, atol=1e-7)


def test_com_ignores_the_world_a_floating_base_hangs_from():
    """sum M_i c_i / M over the robot: a grounded body joined only by free joints is the world."""
    from looprig.core import Body, Joint, JointKind, Mechanism

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
    assert np.allclose(ComTerm(m, ComObjective()).com(m.initial_state()), [0, 0, (2 * 1.0 + 0.5) / 3])
    boxer = build("boxer")  # a fixed base counts: the grounded torso is part of the robot
    masses = boxer.masses
    expected = masses @ boxer.initial_state()[:, :3] / masses.sum()
    assert np.allclose(ComTerm(boxer, ComObjective()).com(boxer.initial_state()), expected)


def test_actuator_barrier_gradient_through_the_read_off():
    """Position and velocity barriers (active) and the acceleration term against differences."""
    from looprig.core import Actuator

    m = build("two_link_arm")
    limited = Actuator(lower=-0.2, upper=0.2, velocity_limit=1.0, acceleration_limit=50.0)
    joints = [dataclasses.replace(j, actuator=limited) for j in m.joints]
    m = type(m)(m.bodies, joints, m.frames)
    reg = Regularization(
        state_weight=0.0, actuator_weight=2.0, acceleration_weight=0.5, position_margin=0.1, rate=100.0
    )
    problem = IKProblem(m, [FrameObjective("tip")], regularization=reg)
    from looprig.core import solve_fk

    previous = solve_fk(m, [0.0, 0.05]).state
    state = solve_fk(m, [0.15, 0.2]).state  # near the upper end, 15 rad/s, accelerating
    ref = _Reference(previous, rotations(previous), np.array([0.0, 0.05]), np.array([0.5, -0.2]))
    targets = IKTargets(np.zeros((1, 3)), np.eye(3)[None])
    model = _Model(problem, state, rotations(state), targets, ref)
    free = problem.constraints.free_bodies
    numeric = numerical_jacobian(
        lambda s: np.atleast_1d(_Model(problem, s, rotations(s), targets, ref).value), state, free
    )[0]
    assert model.value > 1.0  # every barrier is active
    assert np.abs(model.gradient - numeric).max() <= 1e-6 * np.abs(numeric).max()
