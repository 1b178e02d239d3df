"""Frame-last vector algebra (core/frame_last.py) against numpy's own: products, and the
elimination of quasi-definite KKT systems against LAPACK."""

import numpy as np
import pytest
from looprig.core.maths.frame_last import (
    apply,
    cross,
    dot,
    eliminate,
    gram,
    matmul3,
    put_frames,
    quaternions,
    solved,
    take_frames,
    turn,
)
from looprig.core.maths.rotations import quat_from_matrix, quat_from_rotvec, quat_to_matrix


def test_products_match_numpy():
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(4, 3, 7)), rng.normal(size=(4, 3, 7))
    A, B = rng.normal(size=(4, 3, 3, 7)), rng.normal(size=(4, 3, 3, 7))
    assert np.allclose(cross(a, b), np.cross(a, b, axis=1))
    assert np.allclose(dot(a, b), np.einsum("kaf,kaf->kf", a, b))
    assert np.allclose(matmul3(A, B), np.einsum("kijf,kjlf->kilf", A, B))
    assert np.allclose(apply(A[0], a[0]), np.einsum("ijf,jf->if", A[0], a[0]))
    local = rng.normal(size=(4, 3))
    assert np.allclose(turn(A, local), np.einsum("kijf,kj->kif", A, local))


def test_quaternions_match_quat_from_matrix_near_every_pivot():
    """Rotations near the identity and near half turns about x, y and z (each of the four
    pivots) and random ones: the quaternions of :func:`quat_from_matrix` (w >= 0) to 1e-15."""
    rng = np.random.default_rng(3)
    near = [np.zeros(3), np.pi * np.eye(3)[0], np.pi * np.eye(3)[1], np.pi * np.eye(3)[2]]
    rotvecs = np.concatenate([np.array(near) + 1e-9 * rng.normal(size=(4, 3)), rng.normal(size=(40, 3))])
    R = quat_to_matrix(quat_from_rotvec(rotvecs)).reshape(4, 11, 3, 3)  # (n, F, 3, 3)
    A = np.ascontiguousarray(R.transpose(0, 3, 2, 1))  # axes (n, axis, component, F)
    assert np.abs(quaternions(A) - quat_from_matrix(R).transpose(0, 2, 1)).max() <= 1e-15


def test_taken_frames_are_contiguous_and_the_same_values():
    x = np.arange(2 * 3 * 8.0).reshape(2, 3, 8)
    picked = take_frames(x, np.array([1, 4, 6]))
    assert picked.flags.c_contiguous and np.array_equal(picked, x[..., [1, 4, 6]])
    assert take_frames(x, np.arange(8)) is x


def test_put_frames_writes_the_picked_frames_only():
    x = np.zeros((2, 3, 8))
    values = np.arange(2 * 3 * 3.0).reshape(2, 3, 3)
    put_frames(x, np.array([1, 4, 6]), values)
    expected = np.zeros((2, 3, 8))
    expected[..., [1, 4, 6]] = values
    assert np.array_equal(x, expected)
    every = np.arange(2 * 3 * 8.0).reshape(2, 3, 8)
    put_frames(x, np.arange(8), every)
    assert np.array_equal(x, every)


@pytest.mark.parametrize("m", [0, 1, 3, 4, 12])
def test_gram_matches_einsum_with_row_and_frame_weights(m):
    rng = np.random.default_rng(m)
    rows = rng.normal(size=(m, 5, 9))
    for weights in (rng.random(m), rng.random((m, 9))):
        w = weights if weights.ndim == 2 else weights[:, None]
        assert np.allclose(
            gram(rows, weights) + np.zeros((5, 5, 9)), np.einsum("rf,rif,rjf->ijf", w, rows, rows)
        )


@pytest.mark.parametrize(
    ("D", "mc", "conditioning"), [(12, 0, 1e-3), (11, 5, 1e-3), (3, 2, 1e-3), (6, 4, 1e-14)]
)
def test_elimination_solves_quasi_definite_systems_as_lapack(D, mc, conditioning):
    """[[M, C^T], [C, -eps I]] with M positive definite (its smallest eigenvalue about
    ``conditioning``): K x = b to 1e-12 relative, as numpy's LU with pivoting, for many
    frames and new right-hand sides; frames the elimination without pivoting leaves
    inexact are solved again with pivoting."""
    rng = np.random.default_rng(D + mc)
    F = 50
    J = rng.normal(size=(F, D - 1, D))
    M = np.einsum("fri,frj->fij", J, J) + conditioning * np.eye(D)
    C = rng.normal(size=(F, mc, D))
    K = np.zeros((F, D + mc, D + mc))
    K[:, :D, :D], K[:, :D, D:], K[:, D:, :D] = M, C.transpose(0, 2, 1), C
    K[:, D:, D:] = -1e-12 * np.eye(mc)
    Kt = np.ascontiguousarray(K.transpose(1, 2, 0))
    factors = eliminate(Kt)
    for _ in range(2):
        b = rng.normal(size=(D + mc, F))
        x = solved(Kt, factors, b)
        residual = np.abs(np.einsum("ijf,jf->if", Kt, x) - b).max(0)
        assert np.all(residual <= 1e-12 * (np.abs(Kt).max((0, 1)) * np.abs(x).max(0) + np.abs(b).max(0)))
        expected = np.linalg.solve(K, b.T[..., None])[..., 0].T
        if conditioning > 1e-6:
            assert np.abs(x - expected).max() <= 1e-10 * np.abs(expected).max()
        # some frames in place, the others' systems anything: the same answers as copied out
        frames = np.flatnonzero(rng.random(F) < 0.7)
        spoiled, spoiled_factors = Kt.copy(), factors.copy()
        others = np.setdiff1d(np.arange(F), frames)
        spoiled[..., others], spoiled_factors[..., others[::2]] = np.nan, 0.0
        in_place = solved(spoiled, spoiled_factors, b[:, frames], frames)
        copied = solved(Kt[..., frames], factors[..., frames], b[:, frames])
        assert np.isfinite(in_place).all()
        assert np.abs(in_place - copied).max() <= 1e-12 * np.abs(copied).max()
