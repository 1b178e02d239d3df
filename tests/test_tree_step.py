"""The clip's Newton step in tree coordinates (core/solvers/tree_step.py): the compressed
task rows keep the normal equations of the full ones, and the row-space step is the KKT
step, on every library mechanism and on random systems."""

import numpy as np
import pytest
from looprig.core import FrameObjective, IKProblem
from looprig.core.library import NAMES, build
from looprig.core.library.feasible import feasible_motion
from looprig.core.solvers import tree, tree_newton
from looprig.core.solvers.tree_step import (
    PrimalSteps,
    RowSpaceSteps,
    least_squares_rows,
    step_systems,
    task_row_count,
)

TREE_NAMES = [n for n in NAMES if n != "walker"]


def _model_at(name: str, weights, frames: int = 5):
    """The tree model of ``name`` with every frame tracked at ``weights`` (position,
    orientation), posed on a feasible motion, and targets off that motion."""
    m = build(name)
    problem = IKProblem(m, [FrameObjective(f.name, *weights) for f in m.frames])
    model = tree.TreeKinematics(problem)
    states = feasible_motion(m, duration=frames / 100, rate=100, seed=4)[:frames]
    R, c = model.to_frames(states)
    tree_newton.assemble(model, R, c)
    rng = np.random.default_rng(len(name))
    points, axes = problem.frame_terms.poses(states)
    turn = np.linalg.qr(rng.normal(size=(len(states), 1, 3, 3)) * 0.1 + np.eye(3))[0]
    turn *= np.sign(np.diagonal(turn, axis1=-2, axis2=-1))[..., None, :]  # near identity, proper
    targets = (
        (points + 0.01 * rng.normal(size=points.shape)).transpose(1, 2, 0),
        np.swapaxes(turn @ axes, -1, -2).transpose(1, 2, 3, 0),
    )
    return model, R, c, targets


@pytest.mark.parametrize("weights", [(1, 1), (1, (1, 2, 3)), ((1, 0, 2), (3, 1, 0)), (0, (0, 0, 2)), (1, 0)])
@pytest.mark.parametrize("name", TREE_NAMES)
def test_compressed_rows_have_the_normal_equations_of_the_full_rows(name, weights):
    """``J^T J`` and ``J^T r`` of :func:`least_squares_rows` equal those of
    :meth:`TreeKinematics.task_rows` (1e-12 relative) for targets tracked in three, two,
    one and no axes, with unequal weights; the row count is :func:`task_row_count`."""
    model, R, c, targets = _model_at(name, weights)
    screws = model.screws(R, c)
    r, J = model.task_rows(R, c, screws, *targets)
    r2, J2 = least_squares_rows(model, R, c, screws, *targets)
    assert len(r2) == task_row_count(model) <= len(r)
    normal = np.einsum("rif,rjf->fij", J, J)
    scale = np.abs(normal).max() + 1.0
    assert np.abs(np.einsum("rif,rjf->fij", J2, J2) - normal).max() <= 1e-12 * scale
    gradient = np.einsum("rif,rf->fi", J, r)
    assert np.abs(np.einsum("rif,rf->fi", J2, r2) - gradient).max() <= 1e-12 * scale
    assert np.array_equal(least_squares_rows(model, R, c, None, *targets)[0], r2)


def _random_system(D, mt, mc, F, seed, diagonal=True):
    rng = np.random.default_rng(seed)
    if diagonal:
        H = np.zeros((D, D, F))
        H[np.arange(D), np.arange(D)] = rng.uniform(0.5, 2.0, size=(D, F))
    else:
        G = rng.normal(size=(D + 1, D, F))
        H = np.einsum("kif,kjf->ijf", G, G)
    Jt, Jc = rng.normal(size=(mt, D, F)), rng.normal(size=(mc, D, F))
    rt, rc, g = rng.normal(size=(mt, F)), rng.normal(size=(mc, F)), rng.normal(size=(D, F))
    return H, Jt, Jc, rt, rc, g


@pytest.mark.parametrize("F", [4, 64])
@pytest.mark.parametrize(("D", "mt", "mc"), [(12, 6, 0), (11, 3, 5), (6, 2, 1)])
def test_row_space_steps_are_the_kkt_steps(D, mt, mc, F):
    """Where H is diagonal and rows are fewer than coordinates, the row-space step equals
    the KKT step (1e-10 relative), with and without a gradient, on LAPACK's path (few
    frames) and the frame-last elimination's (many), and :func:`step_systems` picks it."""
    H, Jt, Jc, rt, rc, g = _random_system(D, mt, mc, F, seed=D + mt + F)
    frames = np.arange(F)
    primal, rows = PrimalSteps(D, mt, mc, F, 1e-9), step_systems(H, mt, mc, 1e-9)
    assert isinstance(rows, RowSpaceSteps)
    for kkt in (primal, rows):
        kkt.factorize(frames, H, Jt, Jc)
    for gradient in (None, g):
        expected = primal.step(frames, rt, rc, gradient)
        assert np.abs(rows.step(frames, rt, rc, gradient) - expected).max() <= 1e-10 * np.abs(expected).max()
    K = np.zeros((F, D + mc, D + mc))  # and the KKT step is what it says, by LAPACK
    K[:, :D, :D] = (H + np.einsum("rif,rjf->ijf", Jt, Jt)).transpose(2, 0, 1)
    K[:, :D, D:] = Jc.transpose(2, 1, 0)
    K[:, D:, :D] = Jc.transpose(2, 0, 1)
    K[:, D:, D:] = -1e-9 * np.eye(mc)
    rhs = -np.concatenate([np.einsum("rif,rf->if", Jt, rt) + g, rc])
    direct = np.linalg.solve(K, rhs.T[..., None])[..., 0].T[:D]
    assert np.abs(primal.step(frames, rt, rc, g) - direct).max() <= 1e-10 * np.abs(direct).max()


def test_steps_keep_the_kkt_system_where_the_row_space_does_not_apply():
    """A metric with off-diagonal entries, one badly scaled diagonal (a coordinate no
    motor weighs: its row-space system would lose digits) or as many rows as coordinates
    keep the KKT system."""
    H, *_ = _random_system(6, 2, 1, 8, seed=1, diagonal=False)
    assert isinstance(step_systems(H, 2, 1, 1e-9), PrimalSteps)
    H, *_ = _random_system(6, 2, 1, 8, seed=2)
    assert isinstance(step_systems(H, 2, 1, 1e-9), RowSpaceSteps)
    assert isinstance(step_systems(H, 4, 2, 1e-9), PrimalSteps)
    H[3, 3, 5] = 1e-12
    assert isinstance(step_systems(H, 2, 1, 1e-9), PrimalSteps)
