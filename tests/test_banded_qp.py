"""The space-time QP (core.banded_qp): its optimum certified by the KKT conditions of
a convex QP (stationarity, feasibility, signs, complementarity), and equal to the
optimum of a dense solve of the same problem by scipy's SLSQP."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from looprig.core.banded_qp import StencilRows, solve_banded_qp
from scipy.optimize import minimize


def random_problem(seed: int, frames: int = 12, d: int = 2):
    """Blocks H (F, d, d), g (F, d), and range, speed and acceleration rows on each
    unknown's sum (a 'motor' read as u_k . 1), bounds that cut the free optimum."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(frames, d, d))
    H = A @ np.swapaxes(A, 1, 2) + 0.1 * np.eye(d)
    g = rng.normal(size=(frames, d)) * 3.0
    ones = np.ones(d)
    families = []
    for stencil, bound in (((1.0,), 1.0), ((-1.0, 1.0), 0.8), ((1.0, -2.0, 1.0), 0.5)):
        K = frames - len(stencil) + 1
        if K < 1:
            continue
        signs = np.array([1.0, -1.0])[:, None, None]  # two rows per run: <= and >=
        coefficients = signs * np.array(stencil)[None, :, None] * ones  # (2, S, d)
        families.append(
            StencilRows(
                np.repeat(coefficients[None], K, axis=0), bound * rng.uniform(0.5, 1.5, (K, 2))
            )
        )
    return H, g, families


def dense_rows(families, frames, d):
    """The rows of ``families`` as a dense matrix G (m, F d) and bounds h (m,), in the
    solver's order (family, run, row)."""
    G, h = [], []
    for f in families:
        for k in range(len(f.bound)):
            for r in range(f.bound.shape[1]):
                row = np.zeros((frames, d))
                row[k : k + f.width] = f.coefficients[k, r]
                G.append(row.ravel())
                h.append(f.bound[k, r])
    return np.array(G), np.array(h)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000))
def test_optimum_meets_the_kkt_conditions(seed):
    H, g, families = random_problem(seed)
    F, d = g.shape
    solution = solve_banded_qp(H, g, families)
    assert solution.converged
    G, h = dense_rows(families, F, d)
    z = np.concatenate([m.ravel() for m in solution.multipliers])
    u = solution.u.ravel()
    stationarity = (H @ solution.u[..., None])[..., 0].ravel() + g.ravel() + G.T @ z
    slack = h - G @ u
    assert np.abs(stationarity).max() < 1e-7
    assert slack.min() > -1e-9  # every row held
    assert z.min() >= 0.0
    assert np.abs(slack * z).max() < 1e-7  # complementarity
    assert (z > 1e-6).any()  # the bounds were chosen to bind


def test_equals_a_dense_solve():
    H, g, families = random_problem(7, frames=8)
    F, d = g.shape
    G, h = dense_rows(families, F, d)
    Hd = np.zeros((F * d, F * d))
    for k in range(F):
        Hd[k * d : (k + 1) * d, k * d : (k + 1) * d] = H[k]
    dense = minimize(
        lambda x: 0.5 * x @ Hd @ x + g.ravel() @ x,
        np.zeros(F * d),
        jac=lambda x: Hd @ x + g.ravel(),
        constraints=[{"type": "ineq", "fun": lambda x: h - G @ x, "jac": lambda x: -G}],
        method="SLSQP",
        options={"ftol": 1e-12, "maxiter": 1000},
    )
    assert dense.success
    solution = solve_banded_qp(H, g, families)
    np.testing.assert_allclose(solution.u.ravel(), dense.x, atol=1e-6)


def test_no_rows_is_the_free_minimum():
    H, g, _ = random_problem(3)
    solution = solve_banded_qp(H, g, [])
    np.testing.assert_allclose((H @ solution.u[..., None])[..., 0], -g, atol=1e-12)


def test_infeasible_rows_do_not_converge():
    """u_0 <= -1 and -u_0 <= -1 cannot both hold: the solver says it did not converge."""
    H, g = np.eye(1)[None], np.zeros((1, 1))
    rows = StencilRows(np.array([[[[1.0]], [[-1.0]]]]), np.array([[-1.0, -1.0]]))
    solution = solve_banded_qp(H, g, [rows], max_iterations=30)
    assert not solution.converged


@pytest.mark.parametrize("frames", [1, 2, 3])
def test_clips_shorter_than_a_stencil(frames):
    """Rows that read more frames than exist are simply absent; one frame still solves."""
    H, g, families = random_problem(11, frames=frames, d=3)
    solution = solve_banded_qp(H, g, families)
    assert solution.converged
