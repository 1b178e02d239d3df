"""One frame in tree coordinates (core/solvers/tree_frame.py): its poses, screws and task
rows equal the frame-last kernels' at one frame, and its Newton method takes the same
steps to the same answers as tree_newton.solve_coordinates on one frame, on every
reference mechanism posed from coordinates, with oriented, single-axis and unequally
weighted targets, couplings and held motors; the clip's sequence falls back to the
per-frame solver where it stops."""

import itertools

import numpy as np
import pytest
from looprig.core import FrameObjective, IKProblem, IKSettings, IKTargets, solve_ik
from looprig.core.library import NAMES, build
from looprig.core.library.feasible import feasible_motion
from looprig.core.retarget import RetargetMapping, TargetSpec, retarget
from looprig.core.retarget import solve as solve_module
from looprig.core.solvers import tree, tree_newton
from looprig.core.solvers.clip import coarse_coordinates
from looprig.core.solvers.fk import solve_fk
from looprig.core.solvers.sequence import frames_in_order
from looprig.core.solvers.tree_forward import applies, forward
from looprig.core.solvers.tree_frame import FrameNewton
from looprig.core.solvers.tree_step import least_squares_rows
from looprig.core.terms import MotorLock, Targets
from looprig.core.tracks.samples import TrackSamples
from test_constraints import fan
from test_couplings import COUPLINGS
from test_tree_kinematics import rssr
from test_tree_kinematics import slot as slot_mechanism

SETTINGS = IKSettings(step_tolerance=1e-11)
WEIGHTS = {"oriented": (1, 1), "one axis": (1, (0.0, 0.0, 1.0)), "unequal": (1, (0.5, 1.0, 2.0))}


def _problem(name: str, weights=(1, 1), terms=()) -> IKProblem:
    m = build(name)
    frames = [FrameObjective(f.name, *weights) for f in m.frames]
    return IKProblem(m, frames, terms=terms, settings=SETTINGS)


def _posed(problem: IKProblem) -> bool:
    return tree.unsupported(problem) is None and applies(tree.kinematics(problem))


POSED = [n for n in NAMES if _posed(_problem(n))]


def _cases():
    """(problem, motion (F, n, 7)) for every posed mechanism and target kind, a spatial
    four-bar on ball joints, a coupled fan of each coupling, a slot closing a loop and a
    four-bar with its motor held."""
    for name in POSED:
        for kind, weights in WEIGHTS.items():
            problem = _problem(name, weights)
            if _posed(problem):
                motion = feasible_motion(problem.mechanism, duration=0.05, rate=100, seed=2)
                yield pytest.param(problem, motion, id=f"{name}-{kind}")
    for coupling in COUPLINGS:
        m = fan(coupling)
        motion = np.array([solve_fk(m, [0.4 + t, -0.7, 0.9 - t]).state for t in (0.0, 0.05, 0.1)])
        yield pytest.param(
            IKProblem(m, [FrameObjective(n) for n in ("a", "b")], settings=SETTINGS), motion, id=coupling.name
        )
    for flip in (False, True):  # ball joints, the crank's reached from either side
        m = rssr(flip)
        motion = feasible_motion(m, duration=0.05, rate=100, seed=2)
        for frame, weights in (("tip", (1, 0)), ("rod_end", (1, 1))):
            problem = IKProblem(m, [FrameObjective(frame, *weights)], settings=SETTINGS)
            yield pytest.param(problem, motion, id=f"rssr-{flip}-{frame}")
    slot = slot_mechanism()
    motion = np.array([solve_fk(slot, [t]).state for t in (0.0, 0.1, 0.2)])
    yield pytest.param(IKProblem(slot, [FrameObjective("tip", 1, 1)], settings=SETTINGS), motion, id="slot")
    problem = _problem("fourbar")
    motion = feasible_motion(problem.mechanism, duration=0.05, rate=100, seed=2)
    held = MotorLock(
        problem.readout, np.arange(len(problem.readout.names)), problem.readout.read(motion[-1]), 1.0
    )
    yield pytest.param(_problem("fourbar", terms=[held]), motion, id="fourbar-held")


def _one(x):
    return tuple(np.asarray(a)[..., 0] for a in x)


@pytest.mark.parametrize(("problem", "motion"), list(_cases()))
def test_kernels_equal_the_frame_last_ones_at_one_frame(problem, motion):
    model = tree.kinematics(problem)
    fw = forward(model)
    newton = FrameNewton(model, SETTINGS, 1e-12)
    coordinates = fw.coordinates(*model.to_frames(motion[-1:]))
    A, c, motions = fw.poses(*coordinates)
    P, axis, anchor = newton.poses(*_one(coordinates))
    assert np.abs(P[:, :3] - A[..., 0]).max() <= 1e-13 and np.abs(P[:, 3] - c[..., 0]).max() <= 1e-13
    assert (
        np.abs(axis - motions[0][..., 0]).max() <= 1e-13
        and np.abs(anchor - motions[1][..., 0]).max() <= 1e-13
    )
    omega, v, _, _ = fw.screws(A, c, motions)
    W, V = newton.screws(P[:, 3], axis, anchor)
    assert np.abs(W - omega[..., 0].T).max() <= 1e-13 and np.abs(V - v[..., 0].T).max() <= 1e-13
    points, axes = problem.frame_terms.poses(motion[:1])  # targets elsewhere: nonzero rows
    R = fw.rotations(A)
    rt, Jt = least_squares_rows(
        model, R, c, (omega, v), points.transpose(1, 2, 0), np.swapaxes(axes, -1, -2).transpose(1, 2, 3, 0)
    )
    r1, J1 = newton.task_rows(R[..., 0], c[..., 0], W, V, points[0], np.swapaxes(axes[0], -1, -2), True)
    assert (
        np.abs(r1 - rt[:, 0]).max(initial=0.0) <= 1e-12 and np.abs(J1 - Jt[..., 0]).max(initial=0.0) <= 1e-12
    )
    assert np.abs(r1).max(initial=1.0) > 0.0
    values = tree_newton.joint_values(model, coordinates[0])
    rc, Jc = model.constraint_rows(R, c, (omega, v), values)
    r2, J2 = newton.constraint_rows(R[..., 0], c[..., 0], W, V, values[:, 0], True)
    assert np.abs(r2 - rc[:, 0]).max(initial=0.0) <= 1e-13
    assert np.abs(J2 - Jc[..., 0]).max(initial=0.0) <= 1e-13


@pytest.mark.parametrize(("problem", "motion"), list(_cases()))
def test_newton_takes_the_frame_last_steps_to_the_same_answer(problem, motion):
    """From the motion's first pose to its last pose's targets: the same iterations,
    convergence and coordinates (1e-12) as solve_coordinates on that one frame (the
    planar two-link arm's z axis alone stalls both)."""
    model = tree.kinematics(problem)
    fw = forward(model)
    newton = FrameNewton(model, SETTINGS, 1e-12)
    start = fw.coordinates(*model.to_frames(motion[:1]))
    points, axes = problem.frame_terms.poses(motion[-1:])
    poses, iterations, converged, residual = tree_newton.solve_coordinates(
        model, points, axes, start, SETTINGS, 1e-12
    )
    reached, its, done, res = newton.solve(_one(start), points[0], axes[0])
    assert done == converged[0] and its == iterations[0] >= 2 and res == pytest.approx(residual[0], abs=1e-15)
    for x, y in zip(reached, poses.coordinates, strict=True):
        assert np.abs(x - y[..., 0]).max(initial=0.0) <= 1e-12


@pytest.mark.parametrize(("problem", "motion"), list(_cases()))
def test_the_step_between_two_poses_moves_one_onto_the_other(problem, motion):
    """step_between(a, b) taken from a gives b (1e-12: joint coordinates, roots and ball
    joints), carried_on(b, [that step]) is that step taken again from b less what nothing
    sees, and carried_on(c, [step(a, b), step(b, c)]) from c the step 2 step(b, c) -
    step(a, b), less the same."""
    model = tree.kinematics(problem)
    newton = FrameNewton(model, SETTINGS, 1e-12)
    a, b = (_one(newton.forward.coordinates(*model.to_frames(motion[[k]]))) for k in (0, -1))
    step = newton.step_between(a, b)
    moved = tuple(x.copy() for x in a)
    newton._move(*moved, np.zeros(model.D), step)
    for x, y in zip(moved, b, strict=True):
        assert np.abs(x - y).max(initial=0.0) <= 1e-12
    carried, taken = newton.carried_on(b, [step])
    again = newton.step_between(b, carried)
    seen = step - model.unseen @ (model.unseen.T @ step)
    assert np.abs(again - seen).max(initial=0.0) <= 1e-9 * max(np.abs(step).max(initial=0.0), 1.0)
    a, b, c = (_one(newton.forward.coordinates(*model.to_frames(motion[[k]]))) for k in (0, 1, 2))
    steps = [newton.step_between(a, b), newton.step_between(b, c)]
    step = 2.0 * steps[1] - steps[0]
    carried, taken = newton.carried_on(c, steps)
    again = newton.step_between(c, carried)
    seen = step - model.unseen @ (model.unseen.T @ step)
    assert np.abs(again - seen).max(initial=0.0) <= 1e-9 * max(np.abs(step).max(initial=0.0), 1.0)
    assert np.abs(taken - seen).max(initial=0.0) <= 1e-12 * max(np.abs(step).max(initial=0.0), 1.0)


def test_each_frame_more_carried_on_starts_nearer_the_next():
    """On a smooth motion of the spatial four-bar (ball joints), the next frame's seen
    coordinates are nearer the start carried on from four frames (third order) than from
    three (second order), and from three than from two (first order)."""
    problem = IKProblem(rssr(False), [FrameObjective("tip", 1, 0)], settings=SETTINGS)
    model = tree.kinematics(problem)
    newton = FrameNewton(model, SETTINGS, 1e-12)
    motion = feasible_motion(problem.mechanism, duration=0.2, rate=100, seed=3)
    frames = [_one(newton.forward.coordinates(*model.to_frames(motion[[k]]))) for k in range(len(motion))]
    errors = []
    for k in range(4, len(frames)):
        steps = [newton.step_between(a, b) for a, b in itertools.pairwise(frames[k - 4 : k])]
        for last in (steps[2:], steps[1:], steps):
            start = newton.carried_on(frames[k - 1], last)[0]
            miss = newton.step_between(start, frames[k])
            errors.append(np.abs(miss - model.unseen @ (model.unseen.T @ miss)).max())
    two, three, four = np.array(errors).reshape(-1, 3).T
    assert three.max() < 0.5 * two.max() and np.median(three / two) < 0.5
    assert four.max() < 0.5 * three.max() and np.median(four / three) < 0.5


def test_the_carry_takes_the_order_that_predicted_the_last_step_best():
    """Four steps that grow quadratically frame by frame are carried on to third order
    (exactly); four that jitter about one step (+-1 % in turn) to first order, which
    predicted the last of them best and multiplies the jitter least."""
    problem = _problem("fourbar")
    model = tree.kinematics(problem)
    newton = FrameNewton(model, SETTINGS, 1e-12)
    current = _one(newton.forward.coordinates(*model.to_frames(problem.mechanism.initial_state()[None])))
    seen = np.eye(model.D) - model.unseen @ model.unseen.T
    direction = seen @ np.random.default_rng(0).normal(size=model.D)
    direction *= 1e-3 / np.abs(direction).max()
    k = np.arange(4)
    for sizes, order in ((1 + 0.1 * k + 0.05 * k**2, 3), (1 + 0.01 * (-1.0) ** k, 1)):
        steps = [size * direction for size in sizes]
        _, step = newton.carried_on(current, steps)
        expected = steps[-1] if order == 1 else 3 * steps[-1] - 3 * steps[-2] + steps[-3]
        np.testing.assert_allclose(step, expected, rtol=0, atol=1e-15)
    np.testing.assert_allclose(
        newton.carried_on(current, steps[:3])[1], 3 * steps[2] - 3 * steps[1] + steps[0]
    )


@pytest.mark.parametrize(("problem", "motion"), list(_cases()))
def test_a_converged_solve_says_the_step_it_took(problem, motion):
    """``taken`` after a solve from one frame to the next is the step between its start and
    its answer to second order in the turns (turns added as vectors: within the square of
    the step); None where it did not converge, or after a line search."""
    model = tree.kinematics(problem)
    newton = FrameNewton(model, SETTINGS, 1e-12)
    a = _one(newton.forward.coordinates(*model.to_frames(motion[[0]])))
    points, axes = problem.frame_terms.poses(motion[1:2])
    reached, _, converged, _ = newton.solve(a, points[0], axes[0])
    if converged:
        step = newton.step_between(a, reached)
        assert np.abs(newton.taken - step).max() <= max(np.abs(step).max() ** 2, 1e-12)
    else:
        assert newton.taken is None
    newton.solve(a, points[0], axes[0], line_search=True)
    assert newton.taken is None


def test_the_sequence_falls_back_to_the_per_frame_solver_where_newton_stops():
    """With one iteration allowed, no frame of the sequence converges in tree coordinates;
    the per-frame solver (its own settings) solves each from the frame before, and the
    coordinates read back meet the targets."""
    problem = _problem("fourbar")
    motion = feasible_motion(problem.mechanism, duration=0.1, rate=100, seed=6)
    points, axes = problem.frame_terms.poses(motion)
    targets = Targets(points, axes)
    times = np.arange(len(motion)) / 100.0
    frames, coordinates = coarse_coordinates(
        problem, times, targets, motion[0], stride=2, settings=IKSettings(max_iterations=1)
    )
    fw = forward(tree.kinematics(problem))
    states = fw.states(*fw.poses(*coordinates)[:2])
    reached, _ = problem.frame_terms.tracking_errors(states, None, targets.take(frames))
    assert reached.max() <= 1e-9 * problem.constraints.length_scale


def test_a_first_step_at_the_halfway_frame_keeps_redundant_answers_nearer_the_frame_by_frame_path():
    """The boxer tracked by its hand's position (four joints, three rows: redundant), a
    fast motion at 1200 Hz solved every 64th frame from the one before: aiming the first
    step at the halfway frame's targets (a midpoint rule) leaves its motors nearer the
    per-frame solver's frame-by-frame answers than plain steps do, with the targets met."""
    problem = _problem("boxer", (1, 0))
    motion = feasible_motion(problem.mechanism, duration=0.4, rate=1200, speed=4.0, seed=1)
    points, axes = problem.frame_terms.poses(motion)
    state, actuators = motion[0], problem.readout.read(motion[0])
    path = [actuators]
    for f in range(1, len(motion)):
        result = solve_ik(problem, IKTargets(points[f], axes[f]), state, previous_actuators=actuators)
        state, actuators = result.state, result.actuators
        path.append(actuators)
    model = tree.kinematics(problem)
    fw = forward(model)
    newton = FrameNewton(model, SETTINGS, 1e-12)
    frames = np.arange(0, len(motion), 64)
    deviations = []
    for guided in (False, True):
        current = _one(fw.coordinates(*model.to_frames(motion[:1])))
        for before, f in itertools.pairwise(frames):
            via = (points[(before + f) // 2], axes[(before + f) // 2]) if guided else None
            current, _, converged, _ = newton.solve(current, points[f], axes[f], via)
            assert converged
        state = fw.states(*fw.poses(*(x[..., None] for x in current))[:2])
        reached, _ = problem.frame_terms.tracking_errors(state, None, Targets(points[f][None], axes[f][None]))
        assert reached.max() <= 1e-9 * model.L
        deviations.append(np.abs(problem.readout.read(state)[0] - path[f]).max())
    plain, guided = deviations
    assert guided < 0.8 * plain


@pytest.mark.parametrize(("crank", "goal"), [(-0.75, 0.5), (0.0, -1.0), (-0.5, 1.0)])
def test_a_line_search_reaches_a_far_frame_where_plain_steps_stop(crank, goal):
    """The four-bar tracked by its coupler point's position (determined): from the crank
    at ``crank`` to targets posed at ``goal`` [rad], plain Newton steps stop shrinking;
    with the line search they reach the pose the targets came from (the crank to 1e-9)."""
    problem = _problem("fourbar", (1, 0))
    m = problem.mechanism
    model = tree.kinematics(problem)
    fw = forward(model)
    newton = FrameNewton(model, SETTINGS, 1e-12)
    start = _one(fw.coordinates(*model.to_frames(solve_fk(m, [crank]).state[None])))
    points, axes = problem.frame_terms.poses(solve_fk(m, [goal]).state[None])
    assert not newton.solve(start, points[0], axes[0])[2]
    reached, _, converged, residual = newton.solve(start, points[0], axes[0], line_search=True)
    assert converged and residual <= 1e-9 * model.L
    state = fw.states(*fw.poses(*(x[..., None] for x in reached))[:2])
    assert abs(problem.readout.read(state)[0, 0] - goal) <= 1e-9


@pytest.mark.parametrize(
    ("name", "oriented", "tolerance"), [("fourbar", 0, 1e-9), ("boxer", 0, 2e-6), ("chain_6r6p", 1, 2e-6)]
)
def test_a_retarget_frame_by_frame_in_tree_coordinates_meets_the_per_frame_solver(
    name, oriented, tolerance, monkeypatch
):
    """``whole_clip`` off, a problem whose terms compare no frames is solved frame by
    frame by the Newton method at one frame: its curves are the per-frame solver's (the
    same pipeline with the tree path turned off) to 1e-9 rad on a determined four-bar;
    on redundant chains, whose answers each path resolves along its own steps in the same
    metric, to 2e-6 rad over 30 frames (7e-7 measured); it meets every target."""
    m = build(name)
    states = feasible_motion(m, duration=0.25, rate=120, seed=4)
    problem = _problem(name)
    points, axes = problem.frame_terms.poses(states)
    frames = [f.name for f in m.frames]
    samples = TrackSamples(
        np.arange(len(states)) / 120.0,
        dict(zip(frames, points.transpose(1, 0, 2), strict=True)),
        dict(zip(frames, axes.transpose(1, 0, 2, 3), strict=True)),
    )
    mapping = RetargetMapping(
        tuple(TargetSpec(f, f, orientation_weight=(oriented,) * 3) for f in frames),
        rate=120.0,
        whole_clip=False,
        auto_hold=False,
        limit_mode="report",
    )
    start = states[0]
    calls = []
    monkeypatch.setattr(solve_module, "frames_in_order", _counted(solve_module.frames_in_order, calls))
    newton = retarget(m, samples, mapping, initial_state=start)
    assert calls and np.abs(newton.position_error).max() <= 1e-9
    monkeypatch.setattr(solve_module, "in_coordinates", lambda problem: False)
    sqp = retarget(m, samples, mapping, initial_state=start)
    assert np.abs(newton.curves.values - sqp.curves.values).max() <= tolerance


def _counted(function, calls: list):
    def counted(*args, **kwargs):
        calls.append(1)
        return function(*args, **kwargs)

    return counted


def test_a_dense_clip_takes_one_newton_step_a_frame_to_the_same_answers():
    """The four-bar tracked by its coupler point (determined), a smooth motion at 1200 Hz
    frame by frame: carried on to third order from the three frames before, each frame's
    first Newton step is below the step tolerance and is its last (what it leaves is second
    order in it); the answers meet the targets and are those of steps down to 1e-13
    within 1e-11."""
    problem = _problem("fourbar", (1, 0))
    motion = feasible_motion(problem.mechanism, duration=0.2, rate=1200, seed=5)
    targets = Targets(*problem.frame_terms.poses(motion))
    frames = np.arange(len(motion))
    model = tree.kinematics(problem)
    solved = []
    for settings in (IKSettings(), IKSettings(step_tolerance=1e-13)):
        order = list(frames_in_order(problem, targets, frames, motion[0], settings, predict=True))
        assert all(converged for _, _, converged, _ in order)
        solved.append(order)
    iterations = np.array([x[1] for x in solved[0]])
    assert (iterations[4:] == 1).all()
    coordinates = tuple(np.stack(x, axis=-1) for x in zip(*(x[0] for x in solved[0]), strict=True))
    states = forward(model).posed(coordinates)
    assert problem.frame_terms.tracking_errors(states, None, targets)[0].max() <= 1e-9 * model.L
    default, fine = (np.stack([x[0][0] for x in order]) for order in solved)
    np.testing.assert_allclose(default, fine, rtol=0, atol=1e-11)
