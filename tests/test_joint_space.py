"""Joint coordinates along the spanning tree (SpanningTree.retract / joint_basis and
core.solvers.joint_space): the retraction keeps the tree's joints assembled, its first order
is the joint basis, a tree motor moves by exactly its coordinate, and the curvature of
body-fixed points and directions equals second differences through the retraction."""

import numpy as np
import pytest
from looprig.core import IKProblem
from looprig.core.library import build
from looprig.core.maths.rotations import quat_to_matrix, retract
from looprig.core.solvers.joint_space import JointScrews

MECHANISMS = ["boxer", "fourbar", "stewart", "walker", "all_joints", "delta", "dancer", "chain_6r6p"]


def moved(name, seed=0):
    """The mechanism's problem and a batch of one state moved 0.3 rad along its joints."""
    problem = IKProblem(build(name))
    s0 = problem.mechanism.initial_state()[None]
    theta = np.random.default_rng(seed).normal(size=(1, problem.tree.dof)) * 0.3
    return problem, problem.tree.retract(s0, quat_to_matrix(s0[..., 3:]), theta)


@pytest.mark.parametrize("name", MECHANISMS)
def test_retract_keeps_tree_joints_and_moves_tree_motors_exactly(name):
    problem, state = moved(name)
    cs, tree = problem.constraints, problem.tree
    residual = cs.evaluate(state, jacobian=False)[0][0]
    tree_rows = np.setdiff1d(np.arange(cs.n_rows), tree.loop_rows)
    assert np.abs(residual[tree_rows]).max(initial=0.0) < 1e-14
    R = quat_to_matrix(state[..., 3:])
    Z = tree.joint_basis(state, R)
    P = problem.readout.jacobian(state, R, cs.column_of_body, cs.n_vars)
    u = np.random.default_rng(1).normal(size=(1, tree.dof))
    before = problem.readout.read(state)
    after = problem.readout.read(tree.retract(state, R, 0.5 * u), previous=before)
    np.testing.assert_allclose(after - before, 0.5 * (P @ Z @ u[..., None])[..., 0], atol=1e-12)


@pytest.mark.parametrize("name", MECHANISMS)
def test_joint_basis_is_the_retraction_to_first_order(name):
    """retract along theta and the body-wise retraction along Z theta differ by O(|theta|^2)."""
    problem, state = moved(name)
    tree, cs = problem.tree, problem.constraints
    R = quat_to_matrix(state[..., 3:])
    Z = tree.joint_basis(state, R)
    u = np.random.default_rng(2).normal(size=(1, tree.dof))
    gaps = []
    for eps in (1e-4, 5e-5):
        along_tree = tree.retract(state, R, eps * u)
        body_wise = retract(state, cs.tangent_to_bodies((Z @ (eps * u)[..., None])[..., 0]))
        gaps.append(np.abs(along_tree - body_wise).max())
    assert gaps[1] == pytest.approx(gaps[0] / 4, rel=0.01)


@pytest.mark.parametrize("name", ["boxer", "stewart", "walker", "all_joints"])
@pytest.mark.parametrize("points", [True, False])
def test_curvature_equals_second_differences(name, points):
    """sum_b a_b . d2 x_b for a vector fixed in every body (a point or a direction),
    against central second differences of the same sum through the retraction."""
    problem, state = moved(name, seed=3)
    tree, n = problem.tree, len(problem.mechanism.bodies)
    rng = np.random.default_rng(4)
    local, force = rng.normal(size=(n, 3)) * 0.1, rng.normal(size=(1, n, 3))
    R = quat_to_matrix(state[..., 3:])

    def value(theta):
        S = tree.retract(state, R, theta[None])
        x = (quat_to_matrix(S[0, :, 3:]) @ local[..., None])[..., 0] + (S[0, :, :3] if points else 0.0)
        return float((force[0] * x).sum())

    D, h = tree.dof, 1e-4
    numeric = np.zeros((D, D))
    for i in range(D):
        for j in range(i, D):
            ei, ej = np.eye(D)[i] * h, np.eye(D)[j] * h
            numeric[i, j] = numeric[j, i] = (
                value(ei + ej) - value(ei - ej) - value(ej - ei) + value(-ei - ej)
            ) / (4 * h * h)
    screws = JointScrews(tree, n)
    x = (R[0] @ local[..., None])[..., 0] + (state[0, :, :3] if points else 0.0)
    analytic = screws.curvature(screws.at(state, R), np.arange(n), x[None], force, points)[0]
    np.testing.assert_allclose(analytic, numeric, atol=1e-6 * max(1.0, np.abs(numeric).max()))
