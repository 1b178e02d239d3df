"""The tree-coordinate clip path (core/solvers/tree.py): its Jacobians against finite differences
through its own retraction, a closed form, and the same answers as the maximal-coordinate
clip solver where both apply."""

import numpy as np
import pytest
from looprig.core import FrameObjective, IKProblem, IKSettings, IKTargets, solve_ik
from looprig.core.library import NAMES, build
from looprig.core.library._build import hinge, link
from looprig.core.library.feasible import feasible_motion
from looprig.core.maths.linalg import single_threaded_blas
from looprig.core.maths.rotations import quat_to_matrix
from looprig.core.model.mechanism import Mechanism
from looprig.core.model.parts import Actuator, Body, Frame, Joint, JointKind
from looprig.core.solvers import tree, tree_metric, tree_newton
from looprig.core.solvers.clip import clip_starts, solve_clip
from looprig.core.solvers.clip_block import solve_block, start_reference
from looprig.core.solvers.fk import solve_fk
from looprig.core.terms import MotorLock, Targets
from test_constraints import fan
from test_couplings import COUPLINGS

TREE_NAMES = [n for n in NAMES if n != "walker"]  # the walker: frame by frame in retarget
FD_NAMES = [
    n
    for n in NAMES
    if tree.unsupported(IKProblem(build(n), [FrameObjective(f.name, 1, 1) for f in build(n).frames])) is None
]


def _problem(name: str, terms=(), settings=None) -> IKProblem:
    m = build(name)
    frames = [FrameObjective(f.name, 1, 1) for f in m.frames]
    return IKProblem(m, frames, terms=terms, settings=settings or IKSettings())


def _rows(model, R, c, values, targets):
    screws = model.screws(R, c)
    rc, Jc = model.constraint_rows(R, c, screws, values)
    rt, Jt = model.task_rows(R, c, screws, *targets)
    return np.concatenate([rc, rt]), np.concatenate([Jc, Jt]), screws


def _check_jacobians(problem: IKProblem, state: np.ndarray):
    """Every loop, coupling, held-motor and task row's Jacobian in tree coordinates at
    ``state`` (n, 7) against central differences of the rows along each coordinate,
    moved by :meth:`retract` (held motors' and coupled joints' values moved with them)."""
    model = tree.TreeKinematics(problem)
    R, c = model.to_frames(state[None])
    tree_newton.assemble(model, R, c)
    points, axes = problem.frame_terms.poses(model.to_states(R, c))
    targets = (points.transpose(1, 2, 0) + 0.01, np.swapaxes(axes, -1, -2).transpose(1, 2, 3, 0))
    values = tree_metric.start_terms(model, *model.to_frames(state[None]), R, c, model.screws(R, c))[2]
    _, J, screws = _rows(model, R, c, values, targets)
    h = 1e-6
    sign = np.ones(model.D)
    for q, s in model.coordinate.values():
        sign[q] = s
    for k in range(model.D):
        moved = []
        for step in (h, -h):
            Rk, ck = R.copy(), c.copy()
            dq = np.zeros((model.D, 1))
            dq[k] = step
            model.retract(Rk, ck, screws, dq)
            moved.append(_rows(model, Rk, ck, values + sign[:, None] * dq, targets)[0])
        numeric = (moved[0] - moved[1]) / (2 * h)
        assert np.abs(numeric - J[:, k]).max() <= 1e-7 * max(1.0, np.abs(J).max()), k


@pytest.mark.parametrize("name", FD_NAMES)
def test_tree_jacobians_match_differences_through_the_retraction(name):
    """On every supported reference mechanism (the walker: a floating root), with every
    motor held."""
    problem = _problem(name)
    state = feasible_motion(problem.mechanism, duration=0.01, rate=100, seed=3)[0]
    readout = problem.readout
    locks = [MotorLock(readout, np.arange(len(readout.names)), readout.read(state) + 0.01, 0.3)]
    if tree.unsupported(_problem(name, locks)) is None:
        problem = _problem(name, locks)
    _check_jacobians(problem, state)


@pytest.mark.parametrize("coupling", COUPLINGS, ids=lambda c: c.name)
def test_tree_jacobians_of_couplings_match_differences(coupling):
    """The coupled fan (a differential, a polynomial): its coupling rows read tree joints."""
    m = fan(coupling)
    problem = IKProblem(m, [FrameObjective(name) for name in ("a", "b")])
    assert tree.unsupported(problem) is None and tree.kinematics(problem).couplings is not None
    state = solve_fk(m, [0.4, -0.7, 0.9]).state
    _check_jacobians(problem, state)


def slot() -> Mechanism:
    """A crank carrying two links whose ends slide along each other: the prismatic joint
    closes the loop, so its slide and dot rows are loop rows."""
    a, b, c = np.array([0.1, 0.0, 0.0]), np.array([0.1, 0.08, 0.0]), np.array([0.18, 0.03, 0.0])
    return Mechanism(
        [
            Body("ground", grounded=True),
            link("crank", np.zeros(3), a),
            link("left", a, b),
            link("right", a, c),
        ],
        [
            hinge("r0", "ground", "crank", np.zeros(3), actuator=Actuator()),
            hinge("r1", "crank", "left", a),
            hinge("r2", "crank", "right", a + [0.0, 0.0, 0.01]),
            Joint("slot", JointKind.PRISMATIC, "left", "right", anchor=b, axis=c - b),
        ],
        [Frame("tip", "right", position=c)],
    )


def rssr(reversed_ball: bool = False) -> Mechanism:
    """A spatial four-bar: a crank about z and a rocker about y, their tips joined by a
    rod on two ball joints (Reachy Mini's legs are such rods). The crank's ball joint is
    declared from the rod to the crank when ``reversed_ball`` (the tree then reaches it
    from its child); the rocker's closes the loop; the rod's spin is seen by nothing."""
    a, pivot, b = np.array([0.05, 0.0, 0.0]), np.array([0.12, 0.03, 0.08]), np.array([0.12, 0.03, 0.03])
    crank_ball = ("rod", "crank") if reversed_ball else ("crank", "rod")
    return Mechanism(
        [
            Body("ground", grounded=True),
            link("crank", np.zeros(3), a),
            link("rod", a, b),
            link("rocker", pivot, b),
        ],
        [
            hinge("motor", "ground", "crank", np.zeros(3), actuator=Actuator()),
            Joint("crank_ball", JointKind.SPHERICAL, *crank_ball, anchor=a),
            hinge("rocker_pivot", "ground", "rocker", pivot, axis=np.array([0.0, 1.0, 0.0])),
            Joint("rocker_ball", JointKind.SPHERICAL, "rod", "rocker", anchor=b),
        ],
        [Frame("tip", "rocker", position=b), Frame("rod_end", "rod", position=b)],
    )


def test_tree_jacobians_of_a_slide_closing_a_loop_match_differences():
    """The slot (:func:`slot`): its loop's point, dot and slide rows."""
    m = slot()
    problem = IKProblem(m, [FrameObjective("tip", 1, 1)])
    model = tree.kinematics(problem)
    assert len(model.slide[0]) == 2 and len(model.dot[0]) == 3
    _check_jacobians(problem, m.initial_state())


def test_two_link_elbow_meets_the_law_of_cosines():
    """A planar two-link arm (links 0.3 and 0.25 m) with its tip on targets at distances d
    from the shoulder: the elbow angle that the tree path finds is the closed form
    ``cos(elbow) = (d^2 - l1^2 - l2^2) / (2 l1 l2)``, to 1e-12 rad."""
    m = build("two_link_arm")
    problem = IKProblem(m, [FrameObjective("tip", 1, 0)])
    F = 20
    d = 0.4 + 0.02 * np.sin(np.arange(F) / 3.0)
    phi = 0.3 + 0.01 * np.arange(F)
    tip = (d[:, None] * np.c_[np.cos(phi), np.sin(phi), np.zeros(F)])[:, None]
    eye = np.broadcast_to(np.eye(3), (F, 1, 3, 3))
    bent = solve_ik(problem, IKTargets(tip[0], eye[0]), m.initial_state()).state
    solved, _, converged, _ = tree_newton.solve(
        tree.TreeKinematics(problem),
        tip,
        eye,
        np.repeat(bent[None], F, axis=0),
        IKSettings(step_tolerance=1e-12),
        1e-12,
    )
    assert converged.all()
    expected = np.arccos((d**2 - 0.3**2 - 0.25**2) / (2 * 0.3 * 0.25))
    angle = problem.readout.read(solved)[:, 1]  # the elbow motor
    assert np.abs(np.abs(angle) - expected).max() <= 1e-12


@pytest.mark.parametrize("name", TREE_NAMES)
def test_tree_path_gives_the_maximal_coordinate_answers(name):
    """From the same interpolated starts, the tree path and the maximal-coordinate block
    solver converge to the same states (1e-9 of the size) and motor values (1e-9 rad)."""
    settings = IKSettings(step_tolerance=1e-11)
    problem = _problem(name, settings=settings)
    if tree.unsupported(problem) is not None:
        pytest.skip(tree.unsupported(problem))
    states = feasible_motion(problem.mechanism, duration=0.1, rate=1200, seed=1)
    points, axes = problem.frame_terms.poses(states)
    targets = Targets(points, axes)
    times = np.arange(len(states)) / 1200.0
    coarse = np.r_[np.arange(0, len(states), 8), len(states) - 1]
    starts = clip_starts(times, np.unique(coarse), states[np.unique(coarse)])
    with single_threaded_blas():
        fast = solve_clip(problem, targets, starts)
        old = solve_block(problem, targets, starts, start_reference(problem, starts), settings)
    assert fast.converged.all() and old.converged.all()
    L = problem.constraints.length_scale
    assert np.abs(fast.states[..., :3] - old.states[..., :3]).max() <= 1e-9 * L
    difference = quat_to_matrix(fast.states[..., 3:]) - quat_to_matrix(old.states[..., 3:])
    assert np.abs(difference).max() <= 1e-9
    motors = problem.readout.read(fast.states) - problem.readout.read(old.states)
    assert np.abs(np.angle(np.exp(1j * motors))).max(initial=0.0) <= 1e-9


def test_unsupported_problems_fall_back_and_say_why():
    """Joint kinds outside the tree path take the maximal-coordinate path, and the
    reason is given; ball joints, with a spin no motor, target or loop sees, do not."""
    assert "universal" in tree.unsupported(_problem("stewart"))
    assert tree.unsupported(IKProblem(rssr(), [FrameObjective("tip", 1, 0)])) is None


@pytest.mark.parametrize("reversed_ball", [False, True])
def test_ball_joints_give_the_maximal_coordinate_motors_and_targets(reversed_ball):
    """A spatial four-bar on ball joints (:func:`rssr`) tracked by its rocker's tip: the
    tree path and the maximal-coordinate block solver reach the same targets, motor
    values (1e-9 rad) and rocker; the rod's spin about its own axis, which nothing sees,
    is resolved by each path's metric along its own steps (they agree to 1e-6 rad)."""
    settings = IKSettings(step_tolerance=1e-11)
    m = rssr(reversed_ball)
    problem = IKProblem(m, [FrameObjective("tip", 1, 0)], settings=settings)
    states = feasible_motion(m, duration=0.1, rate=1200, seed=1)
    targets = Targets(*problem.frame_terms.poses(states))
    times = np.arange(len(states)) / 1200.0
    coarse = np.unique(np.r_[np.arange(0, len(states), 8), len(states) - 1])
    starts = clip_starts(times, coarse, states[coarse])
    with single_threaded_blas():
        fast = solve_clip(problem, targets, starts)
        old = solve_block(problem, targets, starts, start_reference(problem, starts), settings)
    assert fast.converged.all() and old.converged.all()
    motors = problem.readout.read(fast.states) - problem.readout.read(old.states)
    assert np.abs(np.angle(np.exp(1j * motors))).max() <= 1e-9
    rocker = m.body_index("rocker")
    assert np.abs(fast.states[:, rocker] - old.states[:, rocker]).max() <= 1e-9
    rod = m.body_index("rod")
    spin = quat_to_matrix(fast.states[:, rod, 3:]) @ np.swapaxes(quat_to_matrix(old.states[:, rod, 3:]), 1, 2)
    assert np.arccos(np.clip((np.trace(spin, axis1=1, axis2=2) - 1) / 2, -1, 1)).max() <= 1e-6


@pytest.mark.parametrize("name", TREE_NAMES)
def test_assembly_keeps_assembled_states_and_closes_the_tree_joints_of_opened_ones(name):
    problem = _problem(name)
    if tree.unsupported(problem) is not None:
        pytest.skip(tree.unsupported(problem))
    model = tree.TreeKinematics(problem)
    states = feasible_motion(problem.mechanism, duration=0.05, rate=100, seed=4)
    R, c = model.to_frames(states)
    tree_newton.assemble(model, R, c)
    L = problem.constraints.length_scale
    assert np.abs(model.to_states(R, c)[..., :3] - states[..., :3]).max() <= 1e-9 * L
    opened = states.copy()
    noise = np.random.default_rng(0).normal(scale=1e-4, size=states.shape)
    opened += noise * L
    opened[..., 3:] /= np.linalg.norm(opened[..., 3:], axis=-1, keepdims=True)
    grounded = problem.mechanism.grounded_mask
    opened[:, grounded] = states[:, grounded]
    R, c = model.to_frames(opened)
    tree_newton.assemble(model, R, c)
    tree_rows = np.setdiff1d(np.arange(problem.constraints.n_rows), problem.tree.loop_rows)
    residual = problem.constraints.residual(model.to_states(R, c))[:, tree_rows]
    assert np.abs(residual).max(initial=0.0) <= 1e-12 * max(L, 1.0)
