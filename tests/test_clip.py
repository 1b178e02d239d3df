"""The whole-clip solver reproduces the per-frame solver on every reference mechanism."""

import numpy as np
import pytest
from looprig.core import ComObjective, FrameObjective, IKProblem, IKSettings, IKTargets, solve_ik
from looprig.core.library import NAMES, build
from looprig.core.library.feasible import feasible_motion
from looprig.core.maths.linalg import single_threaded_blas
from looprig.core.maths.rotations import quat_to_matrix
from looprig.core.solvers import tree
from looprig.core.solvers.clip import (
    SEQUENTIAL_COARSE,
    coarse_then_clip,
    couples_frames,
    interpolate_states,
    solve_clip,
    solve_unconverged,
)
from looprig.core.solvers.sequence import determine_on_bodies, targets_determine
from looprig.core.solvers.tree_forward import applies
from looprig.core.terms import Regularization, Targets
from test_tree_kinematics import rssr

TIGHT = IKSettings(step_tolerance=1e-11)


def _problem(name: str) -> IKProblem:
    m = build(name)
    frames = [FrameObjective(f.name, 1, 1) for f in m.frames]
    com = ComObjective((10.0, 10.0, 0.0)) if name == "walker" else None
    return IKProblem(m, frames, com, settings=TIGHT)


def _redundancy(problem: IKProblem, state) -> int:
    """Directions of the constraint manifold at ``state`` that no tracked target sees."""
    A = problem.constraints.jacobian(state)
    s, V = np.linalg.svd(A)[1:]
    Z = V[np.sum(s > 1e-9 * s.max()) :].T  # null space of the constraints
    targets = Targets(*problem.frame_terms.poses(state[None]))
    point = problem.point(state[None], targets, None)
    J = problem.frame_terms.residual(point)[1][0]
    return Z.shape[1] - np.linalg.matrix_rank(J @ Z, tol=1e-9)


@pytest.mark.parametrize("name", NAMES)
def test_clip_solver_equals_the_per_frame_solver(name):
    """Same converged states (1e-9 of the mechanism's size) and motor values (1e-9)
    as warm-started per-frame solves, on a smooth reachable motion at 1200 Hz, where
    the targets determine the state; where they do not (a redundant chain), the same
    targets met and the same minimal-motion resolution from a nearby start (1e-6)."""
    problem = _problem(name)
    states = feasible_motion(problem.mechanism, duration=0.1, rate=1200, seed=1)
    points, axes = problem.frame_terms.poses(states)
    com = None if problem.com_term is None else problem.com_term.com(states)
    with single_threaded_blas():
        sequential, state, actuators = [states[0]], states[0], problem.readout.read(states[0])
        for f in range(1, len(states)):
            target = IKTargets(points[f], axes[f], None if com is None else com[f])
            result = solve_ik(problem, target, state, previous_actuators=actuators)
            state, actuators = result.state, result.actuators
            sequential.append(state)
        times = np.arange(len(states)) / 1200.0
        clip = coarse_then_clip(problem, times, Targets(points, axes, com), states[0])
    sequential = np.array(sequential)
    L = problem.constraints.length_scale
    tolerance = 1e-9 if _redundancy(problem, states[0]) == 0 else 1e-6
    assert clip.converged.all()
    assert np.abs(clip.states[..., :3] - sequential[..., :3]).max() <= tolerance * L
    rotations = quat_to_matrix(clip.states[..., 3:]) - quat_to_matrix(sequential[..., 3:])
    assert np.abs(rotations).max() <= tolerance
    difference = problem.readout.read(clip.states) - problem.readout.read(sequential)
    assert np.abs(np.angle(np.exp(1j * difference))).max(initial=0.0) <= tolerance
    reached, _ = problem.frame_terms.tracking_errors(
        clip.states, quat_to_matrix(clip.states[..., 3:]), Targets(points, axes)
    )
    assert reached.max() <= 1e-9 * L


@pytest.mark.parametrize(
    ("name", "orientation", "determined"),
    [
        ("fourbar", 0, True),  # one degree of freedom, a point that moves with it
        ("delta", 0, True),  # three, and the platform's position
        ("stewart", 1, True),  # six, and the platform's pose
        ("stewart", 0, False),  # six, and only the platform's position
        ("boxer", 0, False),  # four, and only the hand's position
        ("chain_6r6p", 1, False),  # twelve, and the effector's pose
    ],
)
def test_targets_determine_the_state_where_they_see_every_free_direction(name, orientation, determined):
    """On the bodies' motions and, where the tree path applies, on the tree's rows."""
    m = build(name)
    problem = IKProblem(m, [FrameObjective(f.name, 1, orientation) for f in m.frames])
    assert targets_determine(problem, m.initial_state()) is determined
    assert determine_on_bodies(problem, m.initial_state()) is determined


@pytest.mark.parametrize("name", NAMES)
def test_the_tree_rows_decide_as_the_bodies_motions_do(name):
    """Where the tree path poses a reference mechanism from coordinates, targets_determine
    on the tree's rows answers as on the bodies' motions, for every frame tracked in
    position, one axis or in full, at the assembled pose and along a feasible motion."""
    m = build(name)
    motion = feasible_motion(m, duration=0.04, rate=100, seed=4)
    asked = 0
    for weights in ((1, 0), (1, (0, 0, 1)), (1, 1)):
        problem = IKProblem(m, [FrameObjective(f.name, *weights) for f in m.frames[:1]])
        if tree.unsupported(problem) is not None or not applies(tree.kinematics(problem)):
            continue
        for state in (m.initial_state(), motion[-1]):
            assert targets_determine(problem, state) is determine_on_bodies(problem, state)
            asked += 1
    if name in ("fourbar", "slider_crank", "boxer", "dancer", "walker", "chain_6r6p"):
        assert asked


def test_a_direction_that_moves_no_motor_and_no_target_decides_nothing():
    """A spatial four-bar on ball joints tracked at its rocker's tip: the rod's spin
    moves neither the motor nor the tip, so the tip determines the motor (the boxer's
    hand above leaves a direction that moves motors: not determined)."""
    m = rssr()
    problem = IKProblem(m, [FrameObjective("tip", 1, 0)])
    free = problem.tree.dof - len(problem.tree.loop_rows)
    assert free == 2  # the motor and the rod's spin
    assert targets_determine(problem, m.initial_state())
    assert determine_on_bodies(problem, m.initial_state())


def test_interpolated_states_are_unit_and_hit_the_knots():
    m = build("boxer")
    states = feasible_motion(m, duration=0.05, rate=200, seed=2)
    knots = np.arange(0, len(states), 3)
    times = np.arange(len(states)) / 200.0
    out = interpolate_states(times[knots], states[knots], times)
    assert np.allclose(out[knots], states[knots])
    assert np.allclose(np.linalg.norm(out[..., 3:], axis=-1), 1.0)
    R = quat_to_matrix(out[..., 3:])
    assert np.allclose(R @ np.swapaxes(R, -1, -2), np.eye(3), atol=1e-12)


def test_problems_with_terms_between_frames_are_marked_coupled():
    m = build("two_link_arm")
    assert not couples_frames(IKProblem(m, [FrameObjective("tip")]))
    assert couples_frames(
        IKProblem(m, [FrameObjective("tip")], regularization=Regularization(state_mode="paper"))
    )
    barrier = Regularization(velocity_weight=1.0, velocity_threshold=1e-3)
    assert couples_frames(IKProblem(m, [FrameObjective("tip")], regularization=barrier))


@pytest.mark.parametrize("name", ["fourbar", "stewart"])
def test_long_clips_solve_their_coarse_frames_as_a_clip(name):
    """Past SEQUENTIAL_COARSE coarse frames, the coarse frames are themselves solved as
    a clip from every stride^2-th frame: the same answer as the per-frame solver (1e-9),
    each frame's motors included."""
    problem = _problem(name)
    states = feasible_motion(problem.mechanism, duration=0.4, rate=1200, seed=3)
    assert len(np.unique(np.r_[np.arange(0, len(states), 8), len(states) - 1])) > SEQUENTIAL_COARSE
    points, axes = problem.frame_terms.poses(states)
    with single_threaded_blas():
        sequential, state, actuators = [states[0]], states[0], problem.readout.read(states[0])
        for f in range(1, len(states)):
            result = solve_ik(problem, IKTargets(points[f], axes[f]), state, previous_actuators=actuators)
            state, actuators = result.state, result.actuators
            sequential.append(state)
        clip = coarse_then_clip(problem, np.arange(len(states)) / 1200.0, Targets(points, axes), states[0])
    assert clip.converged.all()
    L = problem.constraints.length_scale
    assert np.abs(clip.states[..., :3] - np.array(sequential)[..., :3]).max() <= 1e-9 * L
    motors = problem.readout.read(clip.states) - problem.readout.read(np.array(sequential))
    assert np.abs(motors).max() <= 1e-9


def test_frames_the_clip_leaves_unconverged_are_solved_from_the_frame_before():
    """Starts far from the answer and too few clip iterations leave frames unconverged;
    solve_unconverged solves them again from the frame before: the per-frame answer."""
    problem = _problem("fourbar")
    states = feasible_motion(problem.mechanism, duration=0.05, rate=1200, seed=4)
    points, axes = problem.frame_terms.poses(states)
    targets = Targets(points, axes)
    with single_threaded_blas():
        starts = np.repeat(states[:1], len(states), axis=0)  # every frame starts at frame 0
        rough = solve_clip(problem, targets, starts, settings=IKSettings(max_iterations=1))
        assert not rough.converged[1:].all()
        repaired = solve_unconverged(problem, targets, rough)
    assert repaired.converged.all()
    reached, _ = problem.frame_terms.tracking_errors(
        repaired.states, quat_to_matrix(repaired.states[..., 3:]), targets
    )
    assert reached.max() <= 1e-9 * problem.constraints.length_scale
