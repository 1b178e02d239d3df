"""The KKT solve: optimality conditions, redundant rows, dense and sparse agree."""

import numpy as np
import pytest
from looprig.core.linalg import KKTSystem


def redundant_qp(seed=0, n=30, m=12):
    """A convex QP whose constraint matrix repeats four rows (consistent right-hand side)."""
    rng = np.random.default_rng(seed)
    B = rng.normal(size=(n, n))
    H = B @ B.T + np.eye(n)
    A = rng.normal(size=(m, n))
    A = np.vstack([A, A[:4] * 2.0])  # 4 redundant rows
    x0 = rng.normal(size=n)
    c = -A @ x0  # A d + c = 0 is solvable
    return H, rng.normal(size=n), A, c


@pytest.mark.parametrize("sparse", [False, True])
def test_step_satisfies_the_kkt_conditions_with_redundant_rows(sparse):
    """H d + A^T lam = -g (up to the tiny regularisation) and A d = -c."""
    H, g, A, c = redundant_qp()
    d, lam = KKTSystem(H, A, 1e-12, 1e-12, sparse=sparse).solve(g, c)
    assert np.all(np.isfinite(d)) and np.all(np.isfinite(lam))
    assert np.abs(A @ d + c).max() < 1e-8
    # stationarity on the null space of A: project H d + g onto it
    _, sv, Vt = np.linalg.svd(A)
    null = Vt[np.sum(sv > 1e-9 * sv[0]) :]
    assert np.abs(null @ (H @ d + g)).max() < 1e-8


def test_dense_and_sparse_factorisations_agree():
    H, g, A, c = redundant_qp(1)
    dense = KKTSystem(H, A, 1e-12, 1e-12, sparse=False).solve(g, c)[0]
    sparse = KKTSystem(H, A, 1e-12, 1e-12, sparse=True).solve(g, c)[0]
    assert np.allclose(dense, sparse, atol=1e-9)
