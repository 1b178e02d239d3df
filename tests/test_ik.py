"""State-based IK: closed-form answers, unreachable targets, invariants."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from looprig.core import (
    FrameObjective,
    IKProblem,
    IKTargets,
    Regularization,
    TargetError,
    single_threaded_blas,
    solve_fk,
    solve_ik,
)
from looprig.core.library import NAMES, build
from looprig.core.library.feasible import feasible_motion

IDENTITY = np.eye(3)[None]


def frame_position(problem: IKProblem, state) -> np.ndarray:
    points, _ = problem.frame_terms.poses(state)
    return points


def track(problem: IKProblem, positions, state=None):
    """Solve a sequence of position targets with warm starts; yields results."""
    state = problem.mechanism.initial_state() if state is None else state
    actuators = problem.readout.read(state)
    with single_threaded_blas():
        for target in positions:
            result = solve_ik(problem, IKTargets(target[None], IDENTITY), state, previous_actuators=actuators)
            state, actuators = result.state, result.actuators
            yield result


def test_fourbar_ik_on_coupler_point_recovers_the_crank_over_three_turns():
    """Targets: the coupler point of FK at crank angles 0..6 pi; IK reads the crank back
    continuously (unwrapped past +-pi)."""
    m = build("fourbar")
    problem = IKProblem(m, [FrameObjective("coupler_point")], regularization=Regularization(1e-8))
    angles = np.linspace(0.0, 6 * np.pi, 541)[1:]
    state, targets = m.initial_state(), []
    for p in angles:
        state = solve_fk(m, [p], initial_state=state).state
        targets.append(frame_position(problem, state)[0])
    results = list(track(problem, targets))
    crank = np.array([r.actuators[0] for r in results])
    assert np.abs(crank - angles).max() < 1e-6
    assert max(r.residual for r in results) < 1e-10 * problem.constraints.length_scale
    assert max(r.position_error[0] for r in results) < 1e-7


@pytest.mark.parametrize("elbow_sign", [1.0, -1.0])
def test_two_link_arm_matches_the_closed_form_elbow(elbow_sign):
    """cos(elbow) = (x^2 + y^2 - l1^2 - l2^2) / (2 l1 l2); the branch follows the start."""
    m = build("two_link_arm")
    l1, l2 = 0.3, 0.25
    start = solve_fk(m, [0.0, elbow_sign * 0.5]).state
    problem = IKProblem(m, [FrameObjective("tip")], regularization=Regularization(1e-9))
    rng = np.random.default_rng(4)
    state = start
    for _ in range(20):
        radius, heading = rng.uniform(0.12, 0.5), rng.uniform(-np.pi, np.pi)
        x, y, _ = frame_position(problem, state)[0]
        # move in polar coordinates, around the unreachable disc |t| < l1 - l2
        radii = np.linspace(np.hypot(x, y), radius, 40)
        headings = np.linspace(np.arctan2(y, x), heading, 40)
        path = np.stack([radii * np.cos(headings), radii * np.sin(headings), 0 * radii], -1)
        *_, result = track(problem, path, state)
        state = result.state
        elbow = np.arccos((radius**2 - l1**2 - l2**2) / (2 * l1 * l2))
        assert result.actuators[1] == pytest.approx(elbow_sign * elbow, abs=1e-7)
        assert result.position_error[0] < 1e-8


def test_unreachable_target_keeps_the_arm_assembled_and_pointing_at_it():
    """Target beyond reach (|t| = 1 m > l1 + l2): the tip stops at the workspace boundary
    on the ray to the target, and every constraint still holds (paper Fig. 5)."""
    m = build("two_link_arm")
    problem = IKProblem(m, [FrameObjective("tip")], regularization=Regularization(1e-9))
    direction = np.array([0.6, 0.8, 0.0])
    state = solve_fk(m, [0.2, 0.4]).state
    path = np.linspace(frame_position(problem, state)[0], direction, 40)
    results = list(track(problem, path, state))
    tol = 1e-10 * problem.constraints.length_scale
    assert all(r.residual <= tol for r in results)
    tip = frame_position(problem, results[-1].state)[0]
    assert np.allclose(tip, 0.55 * direction, atol=1e-5)
    assert results[-1].position_error[0] == pytest.approx(1.0 - 0.55, abs=1e-5)


def test_unreachable_target_on_a_loop_keeps_the_loop_closed():
    m = build("fourbar")
    problem = IKProblem(m, [FrameObjective("coupler_point")])
    state = m.initial_state()
    far = np.array([[5.0, 5.0, 1.0]])
    with single_threaded_blas():
        result = solve_ik(problem, IKTargets(far, IDENTITY), state)
    assert result.residual <= 1e-10 * problem.constraints.length_scale
    assert np.all(np.isfinite(result.state))
    # the closest assembled configuration is no farther than where it started
    assert result.position_error[0] <= np.linalg.norm(frame_position(problem, state)[0] - far[0])


def test_redundant_planar_constraints_solve_cleanly(recwarn):
    """Slider-crank: 20 passive rows, rank 17. No warnings, no NaNs, tracked exactly."""
    m = build("slider_crank")
    problem = IKProblem(m, [FrameObjective("slider_tip", (1, 0, 0))], regularization=Regularization(1e-9))
    x0 = frame_position(problem, m.initial_state())[0]
    results = list(track(problem, [x0 + [dx, 0, 0] for dx in np.linspace(0, -0.1, 50)]))
    assert not recwarn.list
    assert all(np.all(np.isfinite(r.state)) for r in results)
    assert results[-1].position_error[0] < 1e-8


def test_velocity_regularizer_slows_a_sudden_jump():
    """A target that jumps half a turn: the barrier limits the per-frame body rotation."""
    m = build("two_link_arm")
    state = solve_fk(m, [0.0, 0.3]).state
    jump = IKTargets(np.array([[-0.5, 0.05, 0.0]]), IDENTITY)
    plain = IKProblem(m, [FrameObjective("tip")], regularization=Regularization(1e-6))
    limited = IKProblem(
        m,
        [FrameObjective("tip")],
        regularization=Regularization(1e-6, velocity_weight=1e3, velocity_threshold=1e-2),
    )
    with single_threaded_blas():
        free = solve_ik(plain, jump, state)
        slow = solve_ik(limited, jump, state)

    def rotation(result):
        return np.abs(result.actuators - plain.readout.read(state)).max()

    assert rotation(free) > 1.0
    assert rotation(slow) < 0.5 * rotation(free)
    assert slow.residual <= 1e-10 * plain.constraints.length_scale


@pytest.mark.parametrize(
    ("positions", "message"),
    [
        (np.array([[np.nan, 0, 0]]), "not finite"),
        (np.zeros((2, 3)), "expected targets for 1 frames"),
    ],
)
def test_bad_targets_are_rejected(positions, message):
    m = build("two_link_arm")
    problem = IKProblem(m, [FrameObjective("tip")])
    with pytest.raises(TargetError, match=message):
        solve_ik(problem, IKTargets(positions, np.repeat(IDENTITY, len(positions), 0)), m.initial_state())


def test_non_rotation_target_is_rejected():
    m = build("two_link_arm")
    problem = IKProblem(m, [FrameObjective("tip", orientation_weight=(1, 1, 1))])
    with pytest.raises(TargetError, match="not a rotation matrix"):
        solve_ik(problem, IKTargets(np.zeros((1, 3)), 2 * IDENTITY), m.initial_state())


@settings(max_examples=30, deadline=None)
@given(
    name=st.sampled_from(["fourbar", "slider_crank", "two_link_arm"]),
    seed=st.integers(0, 2**32 - 1),
)
def test_random_reachable_targets_are_met_with_assembled_mechanism(name, seed):
    """Targets from FK of random nearby actuator values are reachable by construction."""
    m = build(name)
    frame = m.frames[0].name
    problem = IKProblem(m, [FrameObjective(frame)], regularization=Regularization(1e-9))
    rng = np.random.default_rng(seed)
    goal = solve_fk(m, rng.uniform(-0.4, 0.4, len(m.actuated_joints))).state
    target = frame_position(problem, goal)[0]
    path = np.linspace(frame_position(problem, m.initial_state())[0], target, 10)
    *_, result = track(problem, path)
    assert result.residual <= 1e-10 * problem.constraints.length_scale
    assert result.position_error[0] < 1e-6


@settings(max_examples=16, deadline=None)
@given(name=st.sampled_from(list(NAMES)), seed=st.integers(0, 2**16))
def test_every_reference_mechanism_tracks_a_random_reachable_motion(name, seed):
    """Targets taken from a random motion the mechanism can perform (every named frame,
    position and orientation) are met to 1e-6 m / 1e-6 rad with the constraints held,
    frame after frame."""
    m = build(name)
    problem = IKProblem(
        m,
        [FrameObjective(f.name, (1, 1, 1), (1, 1, 1)) for f in m.frames],
        regularization=Regularization(1e-8),
    )
    states = feasible_motion(m, duration=0.02, rate=1200.0, speed=2.0, seed=seed)
    points, axes = problem.frame_terms.poses(states)
    state, actuators = states[0], problem.readout.read(states[0])
    with single_threaded_blas():
        for p, R in zip(points[1:], axes[1:], strict=True):
            result = solve_ik(problem, IKTargets(p, R), state, previous_actuators=actuators)
            state, actuators = result.state, result.actuators
            assert result.residual <= 1e-10 * problem.constraints.length_scale
            assert result.position_error.max() < 1e-6 and result.orientation_error.max() < 1e-6


def test_a_warm_started_frame_factorises_its_kkt_system_once(monkeypatch):
    """On a smooth motion at 1200 Hz, a frame warm-started from the previous answer
    needs one factorisation: after the Newton step the same factorisation's chord steps
    finish it (the Dancer takes about two steps a frame), and the answer meets its
    targets as the motion does."""
    from looprig.core.solvers import ik

    factorisations = []

    class CountingKKT(ik._FrameKKT):
        def __init__(self, *args, **kwargs):
            factorisations.append(1)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(ik, "_FrameKKT", CountingKKT)
    m = build("dancer")
    problem = IKProblem(m, [FrameObjective(f.name, (1, 1, 1), (1, 1, 1)) for f in m.frames])
    states = feasible_motion(m, duration=0.05, rate=1200.0, seed=1)
    points, axes = problem.frame_terms.poses(states)
    state, actuators, steps = states[0], problem.readout.read(states[0]), 0
    with single_threaded_blas():
        for p, R in zip(points[1:], axes[1:], strict=True):
            result = solve_ik(problem, IKTargets(p, R), state, previous_actuators=actuators)
            state, actuators, steps = result.state, result.actuators, steps + result.iterations
            assert result.converged and result.position_error.max() < 1e-8
    frames = len(states) - 1
    assert len(factorisations) == frames
    assert steps > 1.5 * frames  # the chord steps did the rest
