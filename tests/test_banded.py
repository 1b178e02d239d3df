"""The banded linear algebra of the space-time solve (core.solvers.banded): rows over runs of
frames against their dense matrix, and the interior point's Newton direction against
a dense solve of the whole (primal, slack, multiplier) Newton system."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from looprig.core.errors import SolverError
from looprig.core.solvers.banded import NewtonSystem, RowSet, StencilRows, converged_kkt


def random_rows(rng, frames: int, d: int) -> RowSet:
    """Range, speed and acceleration-like families (two rows per run) with random weights."""
    families = []
    for width in (1, 2, 3):
        K = frames - width + 1
        if K >= 1:
            families.append(StencilRows(rng.normal(size=(K, 2, width, d)), rng.uniform(0.5, 1.5, (K, 2))))
    return RowSet(families, frames, d)


def dense(rows: RowSet) -> np.ndarray:
    """The rows as a dense matrix G (m, F d), in the set's order (family, run, row)."""
    G = []
    for f in rows.families:
        for k in range(len(f.bound)):
            for r in range(f.bound.shape[1]):
                row = np.zeros((rows.frames, rows.d))
                row[k : k + f.width] = f.dense[k, r]
                G.append(row.ravel())
    return np.array(G).reshape(-1, rows.frames * rows.d)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 9), st.integers(1, 4))
def test_rows_and_their_transpose_are_the_dense_matrix(seed, frames, d):
    rng = np.random.default_rng(seed)
    rows = random_rows(rng, frames, d)
    G = dense(rows)
    u, y = rng.normal(size=(frames, d)), rng.normal(size=rows.size)
    np.testing.assert_allclose(rows.times(u), G @ u.ravel(), atol=1e-12)
    np.testing.assert_allclose(rows.transpose(y).ravel(), G.T @ y, atol=1e-12)
    np.testing.assert_array_equal(np.concatenate([p.ravel() for p in rows.split(y)]), y)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 9), st.integers(1, 4))
def test_newton_direction_solves_the_whole_newton_system(seed, frames, d):
    """(du, ds, dz) from the banded, primal-reduced system solve the unreduced one:
    ``H du + G^T dz = -r_d``, ``G du + ds = -r_p``, ``z ds + s dz = -r_c``."""
    rng = np.random.default_rng(seed)
    rows = random_rows(rng, frames, d)
    A = rng.normal(size=(frames, d, d))
    H = A @ np.swapaxes(A, 1, 2) + 0.1 * np.eye(d)
    s, z = rng.uniform(0.01, 2.0, rows.size), rng.uniform(0.01, 2.0, rows.size)
    r_d, r_p, r_c = rng.normal(size=(frames, d)), rng.normal(size=rows.size), rng.normal(size=rows.size)
    du, ds, dz = NewtonSystem(H, rows, s, z).direction(r_d, r_p, r_c)
    G = dense(rows)
    np.testing.assert_allclose((H @ du[..., None])[..., 0] + rows.transpose(dz), -r_d, atol=1e-9)
    np.testing.assert_allclose(G @ du.ravel() + ds, -r_p, atol=1e-9)
    np.testing.assert_allclose(z * ds + s * dz, -r_c, atol=1e-9)


def test_an_indefinite_system_is_refused():
    """A Newton matrix that is not positive definite (H = -I, rows too weak to lift it)."""
    rows = random_rows(np.random.default_rng(0), 3, 2)
    H = -np.broadcast_to(np.eye(2), (3, 2, 2))
    with pytest.raises(SolverError, match="not positive definite"):
        NewtonSystem(H, rows, np.ones(rows.size), np.full(rows.size, 1e-6))


@pytest.mark.parametrize(
    ("r_d", "r_p", "mu", "expected"),
    [(1e-10, 1e-10, 1e-10, True), (1e-6, 0.0, 0.0, False), (0.0, 1e-6, 0.0, False), (0.0, 0.0, 1e-6, False)],
)
def test_converged_kkt_needs_all_three(r_d, r_p, mu, expected):
    assert converged_kkt(np.array([r_d]), np.array([r_p]), mu, 1e-9) is expected


def test_stationarity_is_relative_to_its_parts():
    """A residual of 1e-7 beside parts of 1e3 is rounding, not an error."""
    assert converged_kkt(np.array([1e-7]), np.zeros(1), 0.0, 1e-9, np.array([1e3]))


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.integers(3, 9), st.integers(1, 4))
def test_rows_on_one_unknown_each_are_the_rows_with_those_coefficients(seed, frames, d):
    """:meth:`StencilRows.on_columns` (a motor that is a tree joint: each row reads one
    coordinate) gives the same products and Newton matrix as its dense coefficients."""
    rng = np.random.default_rng(seed)
    families, dense_families = [], []
    for width in (1, 2, 3):
        K = frames - width + 1
        factors, columns = rng.normal(size=(K, 3, width)), rng.integers(0, d, 3)
        rows = StencilRows.on_columns(factors, columns, d, rng.uniform(0.5, 1.5, (K, 3)))
        families.append(rows)
        dense_families.append(StencilRows(rows.dense, rows.bound))
    fast, slow = RowSet(families, frames, d), RowSet(dense_families, frames, d)
    u, y = rng.normal(size=(frames, d)), rng.normal(size=fast.size)
    np.testing.assert_allclose(fast.times(u), slow.times(u), atol=1e-12)
    np.testing.assert_allclose(fast.transpose(y), slow.transpose(y), atol=1e-12)
    A = rng.normal(size=(frames, d, d))
    H = A @ np.swapaxes(A, 1, 2) + 0.1 * np.eye(d)
    s, z = rng.uniform(0.01, 2.0, fast.size), rng.uniform(0.01, 2.0, fast.size)
    r_d, r_p, r_c = rng.normal(size=(frames, d)), rng.normal(size=fast.size), rng.normal(size=fast.size)
    for a, b in zip(
        NewtonSystem(H, fast, s, z).direction(r_d, r_p, r_c),
        NewtonSystem(H, slow, s, z).direction(r_d, r_p, r_c),
        strict=True,
    ):
        np.testing.assert_allclose(a, b, atol=1e-9)
