"""The space-time interior point's kinematics in tree coordinates (core.solvers.spacetime.tree_clip)
against its maximal-coordinate path: the same iterate, linearisation and step to
rounding, and the same solve."""

import dataclasses

import numpy as np
import pytest
from looprig.core.library import build
from looprig.core.library.clips import boxer_singular_clip
from looprig.core.maths.rotations import quat_to_matrix
from looprig.core.retarget import RetargetMapping, TargetSpec, build_problem, retarget
from looprig.core.solvers.joint_space import JointScrews
from looprig.core.solvers.spacetime import interior
from looprig.core.solvers.spacetime.linearization import linearize, objective_curvature
from looprig.core.solvers.spacetime.records import SpaceTimeClip
from looprig.core.solvers.spacetime.solve import solve_spacetime, tracking_only
from looprig.core.solvers.spacetime.tree_clip import TreeClip, applies
from looprig.core.solvers.step import build_step
from looprig.core.terms import Reference, Targets

HAND = TargetSpec("hand", "hand", (1.0, 1.0, 1.0), (1.0, 1.0, 1.0))


def tracking_problem(mechanism, mapping):
    """The problem the space-time solve runs: the tracking terms alone."""
    return tracking_only(build_problem(mechanism, dataclasses.replace(mapping, auto_hold=False)))


@pytest.fixture(scope="module")
def boxer():
    mechanism = build("boxer")
    clip = boxer_singular_clip(rate=200.0, elevation=0.05, segment=0.5)
    mapping = RetargetMapping((HAND,), rate=200.0, limit_mode="report")
    exact = retarget(mechanism, clip, mapping)
    samples = clip.resampled(200.0)
    targets = Targets(samples.positions["hand"][:, None], samples.rotations["hand"][:, None])
    return mechanism, clip, mapping, exact, targets


def test_the_tree_path_serves_robots_without_loops_only():
    assert applies(tracking_problem(build("boxer"), RetargetMapping((HAND,), rate=100.0)))
    fourbar = build("fourbar")
    target = TargetSpec("p", "coupler_point", (1.0, 1.0, 1.0), (0.0, 0.0, 0.0))
    assert not applies(tracking_problem(fourbar, RetargetMapping((target,), rate=100.0)))


def test_iterate_linearisation_and_step_equal_the_maximal_paths(boxer):
    """Off the exact answer (random joint steps), every quantity the interior point
    reads: the tracking value, Newton's Hessian and gradient in joint coordinates (the
    tracking's curvature too), the motors' rates, the retracted iterate and its motors."""
    mechanism, _, mapping, exact, targets = boxer
    problem = tracking_problem(mechanism, mapping)
    rng = np.random.default_rng(3)
    tree = problem.tree
    S = tree.retract(
        exact.states,
        quat_to_matrix(exact.states[..., 3:]),
        0.05 * rng.standard_normal((len(exact.states), tree.dof)),
    )
    values = problem.readout.read(S, previous=exact.curves.values)
    reference = Reference(S.copy(), quat_to_matrix(S[..., 3:]), values.copy())
    screws = JointScrews(tree, len(mechanism.bodies))
    at = build_step(problem, problem.point(S, targets, reference), constraint_jacobian=False)
    kin = TreeClip(problem, targets)
    point = kin.evaluate(S)
    np.testing.assert_allclose(point.value, at.value, rtol=0, atol=1e-14)
    maximal = linearize(problem, screws, at, values, None, 1e-4)
    frame_last = linearize(problem, screws, point, values, None, 1e-4, kin=kin)
    for name in ("H_theta", "g_theta", "PZ", "H", "g", "b", "B"):
        np.testing.assert_allclose(
            getattr(frame_last, name), getattr(maximal, name), rtol=0, atol=1e-12, err_msg=name
        )
    np.testing.assert_allclose(
        kin.curvature(point, screws), objective_curvature(problem, screws, at.point), atol=1e-13
    )
    step = 0.02 * rng.standard_normal((len(S), tree.dof))
    moved = kin.moved(point, step)
    S2 = tree.retract(S, at.point.R, step)
    np.testing.assert_allclose(moved.point.state[..., :3], S2[..., :3], atol=1e-14)
    np.testing.assert_allclose(np.abs((moved.point.state[..., 3:] * S2[..., 3:]).sum(-1)), 1.0, atol=1e-14)
    motors = values + (frame_last.PZ @ step[..., None])[..., 0]
    np.testing.assert_allclose(motors, problem.readout.read(S2, previous=values), atol=1e-13)


def test_the_limited_solve_is_the_same_on_either_path(boxer, monkeypatch):
    mechanism, _, mapping, exact, targets = boxer
    problem = build_problem(mechanism, dataclasses.replace(mapping, auto_hold=False))
    clip = SpaceTimeClip(problem, targets, exact.states, exact.curves.values, mapping.rate)
    tree_answer = solve_spacetime(clip)
    monkeypatch.setattr(interior, "tree_path", lambda problem: False)
    maximal_answer = solve_spacetime(clip)
    assert tree_answer.converged and maximal_answer.converged
    assert tree_answer.objective == pytest.approx(maximal_answer.objective, rel=1e-9)
    np.testing.assert_allclose(tree_answer.actuators, maximal_answer.actuators, atol=1e-6)
    # the tree's joints stay assembled as the retraction composes them (rounding only)
    assert tree_answer.residual.max() <= problem.constraints.tolerance(problem.settings.constraint_tolerance)
