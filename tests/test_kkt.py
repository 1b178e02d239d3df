"""The KKT steps (in the null space of a spanning tree, and whole for one frame)
equal the full KKT step."""

import functools

import numpy as np
import pytest
from looprig.core import FrameObjective, IKProblem, build_step
from looprig.core.library import NAMES, build
from looprig.core.maths.rotations import quat_to_matrix, retract
from looprig.core.model.mechanism import Mechanism
from looprig.core.model.mobility import analyse_mobility
from looprig.core.model.parts import Joint, JointKind
from looprig.core.solvers.fk import FKSettings, solve_constraints
from looprig.core.solvers.kkt import DenseKKT, ReducedKKT
from looprig.core.solvers.step import step_kkt
from looprig.core.terms import Reference, Targets


def _welded_walker() -> Mechanism:
    """The walker with both feet welded to the ground: its pelvis, on a free joint, is
    reached from the ground through either leg."""
    walker = build("walker")
    anchor = {f.name: f.position for f in walker.frames}
    welds = [Joint(f"{foot}_weld", JointKind.FIXED, "world", foot, anchor[foot]) for foot in FEET]
    return Mechanism(walker.bodies, [*walker.joints, *welds], walker.frames, name="welded walker")


FEET = ("left_foot", "right_foot")
MECHANISMS = {**{name: functools.partial(build, name) for name in NAMES}, "welded_walker": _welded_walker}


def _step(name: str, seed: int, batch: int = 3):
    """A linearised step at ``batch`` states near the file pose, assembled to the FK
    tolerance (the residual a solve leaves), tracking every frame towards a moved pose."""
    mechanism = MECHANISMS[name]()
    problem = IKProblem(mechanism, [FrameObjective(f.name, 1, 1) for f in mechanism.frames])
    cs = problem.constraints
    rng = np.random.default_rng(seed)
    states = []
    for _ in range(batch):
        moved = retract(mechanism.initial_state(), cs.tangent_to_bodies(0.05 * rng.normal(size=cs.n_vars)))
        states.append(solve_constraints(cs, moved, None, FKSettings()).state)
    states = np.array(states)
    R = quat_to_matrix(states[..., 3:])
    positions, rotations = problem.frame_terms.poses(states)
    targets = Targets(positions + 0.01 * rng.normal(size=positions.shape), rotations)
    reference = Reference(states, R, problem.readout.read(states, R=R), None)
    return problem, build_step(problem, problem.point(states, targets, reference))


def _full_kkt_step(step, b: int, damping: float, dual: float) -> np.ndarray:
    """The step of the whole KKT matrix [[H + eps_p I, A^T], [A, -eps_d I]] of frame b."""
    H, A = step.hessian[b], step.constraint_jacobian[b]
    n, m = H.shape[0], A.shape[0]
    eps_p = damping * max(np.abs(np.diag(H)).max(), 1.0)
    K = np.block([[H + eps_p * np.eye(n), A.T], [A, -dual * np.eye(m)]])
    return np.linalg.solve(K, -np.r_[step.gradient[b], step.constraint[b]])[:n]


@pytest.mark.parametrize("name", MECHANISMS)
@pytest.mark.parametrize("damping", [1e-12, 1e-3])
def test_reduced_step_equals_the_full_kkt_step(name, damping):
    """On every reference mechanism (every joint kind, loops, a floating base) and a
    floating base the legs reach, batched."""
    problem, step = _step(name, seed=3)
    reduced = step_kkt(problem, step, np.full(step.point.batch, damping), 1e-12)
    assert isinstance(reduced, ReducedKKT)
    d = reduced.solve(step.gradient, step.constraint)
    H, A = step.hessian, step.constraint_jacobian
    for b in range(step.point.batch):
        full = _full_kkt_step(step, b, damping, 1e-12)
        whole = DenseKKT(H[b : b + 1], A[b : b + 1], np.array([damping]), 1e-12)
        one = whole.solve(step.gradient[b : b + 1], step.constraint[b : b + 1])[0]
        for answer in (d[b], one):
            assert np.abs(answer - full).max() <= 1e-7 * max(np.abs(full).max(), 1e-6), name


@pytest.mark.parametrize("name", MECHANISMS)
def test_tree_rows_are_met_exactly_and_the_tree_counts_the_mobility(name):
    """d = e + Z q meets the tree's rows for any q; D minus the independent loop rows is
    the mechanism's mobility (its degrees of freedom, actuators passive)."""
    problem, step = _step(name, seed=4, batch=1)
    tree = problem.tree
    reduced = ReducedKKT(
        tree, step.point.R, step.model, step.row_blocks, step.loop_jacobian, np.array([1e-12]), 1e-12
    )
    A = step.constraint_jacobian[0][: problem.constraints.n_rows]
    tree_rows = np.setdiff1d(np.arange(problem.constraints.n_rows), tree.loop_rows)
    q = np.random.default_rng(5).normal(size=tree.dof)
    d = reduced.particular(step.constraint)[0] + reduced.Z[0] @ q
    assert np.abs(A[tree_rows] @ d + step.constraint[0][tree_rows]).max(initial=0.0) <= 1e-12
    loop = step.loop_jacobian[0] @ reduced.Z[0]
    independent = np.linalg.matrix_rank(loop, tol=1e-9) if loop.size else 0
    assert tree.dof - independent == analyse_mobility(problem.mechanism, step.point.state[0]).dof


def test_a_floating_base_the_legs_reach_is_no_root_of_the_tree():
    """With its feet welded, the walker's pelvis is reached through a leg: no floating
    root (its 6 coordinates would close a second loop through the other leg), and the
    tree leaves one weld or joint per independent loop outside."""
    free, welded = build("walker"), _welded_walker()
    assert IKProblem(free, []).tree.root_slots  # feet free: the pelvis is the floating root
    tree = IKProblem(welded, []).tree
    assert tree.root_slots == []
    loops = len(welded.joints) - 1 - (len(welded.bodies) - 1)  # the free joint joins no loop
    closing = {int(j) for j in IKProblem(welded, []).constraints.row_joint[tree.loop_rows]}
    assert len(closing) == loops


def test_one_frame_factorisation_serves_several_right_hand_sides():
    """A batch of one (the per-frame solver) gives the batched answer for new g and c."""
    problem, step = _step("walker", seed=6, batch=2)
    rng = np.random.default_rng(7)
    g, c = rng.normal(size=step.gradient.shape), 1e-6 * rng.normal(size=step.constraint.shape)
    batched = step_kkt(problem, step, np.full(2, 1e-6), 1e-12).solve(g, c)
    first = np.array([0])
    point = problem.point(
        step.point.state[:1], step.point.targets.take(first), step.point.reference.take(first)
    )
    one = build_step(problem, point)
    single = ReducedKKT(
        problem.tree, one.point.R, one.model, one.row_blocks, one.loop_jacobian, np.array([1e-6]), 1e-12
    ).solve(g[:1], c[:1])
    assert np.abs(single[0] - batched[0]).max() <= 1e-9 * np.abs(batched[0]).max()


def test_a_singular_joint_frame_falls_back_to_least_squares():
    """A revolute joint bent a right angle off its axis has its free rotation blocked
    by its own rows: the step is still finite (pseudo-inverse), not an exception."""
    problem, step = _step("two_link_arm", seed=8, batch=2)
    tj = problem.tree.joints
    rows = step.row_blocks.copy()
    rows[1, tj.rows[0, tj.row_mask[0]], tj.new_side[0, 0], 3:] = 0.0  # no rotation rows: rank-deficient
    rows[1, tj.rows[0, 0], tj.new_side[0, 0], :] = 0.0
    reduced = ReducedKKT(
        problem.tree, step.point.R, step.model, rows, step.loop_jacobian, np.full(2, 1e-6), 1e-12
    )
    d = reduced.solve(step.gradient, step.constraint)
    assert np.isfinite(d).all()


@pytest.mark.parametrize("name", ["walker", "stewart", "welded_walker"])
def test_the_hessian_model_acts_as_the_sum_of_its_terms_hessians(name):
    """HessianModel's products (frame tasks' factors on their bodies' columns alone)
    equal those of the dense sum of every objective term's Hessian model."""
    problem, step = _step(name, seed=6)
    B, N = step.gradient.shape
    H = sum(term.linearize(step.point).hessian_matrix() for term in problem.objective_terms)
    model, rng = step.model, np.random.default_rng(8)
    M, v, Z, shift = (rng.normal(size=s) for s in ((B, N, 4), (B, N), (B, N, 5), (B,)))
    shift = np.abs(shift)
    close = functools.partial(np.testing.assert_allclose, rtol=1e-12, atol=1e-12 * np.abs(H).max())
    close(model.matrix(), H)
    close(model.times(M), H @ M)
    close(model.curvature(v), np.einsum("bn,bnk,bk->b", v, H, v))
    shifted = H + shift[:, None, None] * np.eye(N)
    close(model.project(Z, shift), np.swapaxes(Z, 1, 2) @ shifted @ Z)
    close(model.scale(), np.maximum(np.abs(np.diagonal(H, axis1=1, axis2=2)).max(-1), 1.0))
    close(model.take(np.array([2, 0])).matrix(), H[[2, 0]])
