"""Small vector algebra on the frame-last layout: vectors (..., 3, F) and 3x3 matrices
(..., 3, 3, F), the frame axis last, as the tree-coordinate kernels keep them.

Hand-written: each is a few elementwise numpy operations on length-F rows, which for
stacks of 3-vectors and 3x3 matrices beat numpy's batched ``cross`` and ``matmul``
(measured: 65 us against 265 us for 1200 3x3 products).
"""

import numpy as np


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a x b`` over the vector axis (second to last, length 3), broadcast."""
    a0, a1, a2 = a[..., 0, :], a[..., 1, :], a[..., 2, :]
    b0, b1, b2 = b[..., 0, :], b[..., 1, :], b[..., 2, :]
    return np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-2)


def dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a . b`` over the vector axis (second to last)."""
    return a[..., 0, :] * b[..., 0, :] + a[..., 1, :] * b[..., 1, :] + a[..., 2, :] * b[..., 2, :]


def turn(R: np.ndarray, local: np.ndarray) -> np.ndarray:
    """Body-fixed vectors in world axes: R (K, 3, 3, F), local (K, 3) -> (K, 3, F)."""
    return (
        R[:, :, 0] * local[:, None, 0, None]
        + R[:, :, 1] * local[:, None, 1, None]
        + R[:, :, 2] * local[:, None, 2, None]
    )


def matmul3(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Products of 3x3 matrices (..., 3, 3, F)."""
    return (
        A[..., :, 0, None, :] * B[..., None, 0, :, :]
        + A[..., :, 1, None, :] * B[..., None, 1, :, :]
        + (A[..., :, 2, None, :] * B[..., None, 2, :, :])
    )


def apply(Q: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``Q x`` for matrices Q (3, 3, F) and vectors x (3, F)."""
    return Q[:, 0] * x[0] + Q[:, 1] * x[1] + Q[:, 2] * x[2]


def axis_rotation(axis: np.ndarray, angle: np.ndarray) -> np.ndarray:
    """Rotations (K, 3, 3, F) by angle (K, F) [rad] about unit axes (K, 3, F) (Rodrigues)."""
    s, c = np.sin(angle), np.cos(angle)
    x, y, z = axis[:, 0], axis[:, 1], axis[:, 2]
    Q = (1.0 - c)[:, None, None] * axis[:, :, None] * axis[:, None, :]
    Q[:, 0, 0] += c
    Q[:, 1, 1] += c
    Q[:, 2, 2] += c
    Q[:, 0, 1] -= s * z
    Q[:, 1, 0] += s * z
    Q[:, 0, 2] += s * y
    Q[:, 2, 0] -= s * y
    Q[:, 1, 2] -= s * x
    Q[:, 2, 1] += s * x
    return Q


def axis_angle(rotvec: np.ndarray):
    """(unit axes (K, 3, F), angles (K, F)) of rotation vectors (K, 3, F), or (3, F) with
    K = 1; any axis for zero."""
    v = rotvec.reshape(-1, 3, rotvec.shape[-1])
    angle = np.sqrt((v**2).sum(1))
    axis = v / np.where(angle > 0.0, angle, 1.0)[:, None]
    axis[:, 0] = np.where(angle > 0.0, axis[:, 0], 1.0)
    return axis, angle


def take_frames(x: np.ndarray, frames: np.ndarray) -> np.ndarray:
    """``x[..., frames]`` (frames: increasing indices on the last axis), C-contiguous:
    numpy's fancy indexing on the last axis lays the picked frames outermost in memory,
    and every elementwise operation on the result, and on what it makes, then strides
    (measured: a 16x16 elimination of 1200 frames 6x slower). ``x`` itself when
    ``frames`` is every frame."""
    if len(frames) == x.shape[-1]:
        return x
    return np.ascontiguousarray(x[..., frames])


def put_frames(x: np.ndarray, frames: np.ndarray, values: np.ndarray) -> None:
    """``x[..., frames] = values`` (frames: increasing indices on the last axis), a plain
    copy when ``frames`` is every frame: numpy's fancy assignment on the last axis
    scatters with a stride (measured: 16x16 systems of 1200 frames 1.6 ms against 0.2)."""
    if values is x:  # taken whole by take_frames and changed in place
        return
    if len(frames) == x.shape[-1]:
        x[...] = values
    else:
        x[..., frames] = values


def gram(rows: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``sum_r w_r a_r a_r^T`` (D, D, F) of rows a (m, D, F) with weights w (m,) or
    (m, F): a few rows as outer products, more by one batched BLAS product a frame
    (numpy's einsum over the frame axis pays ten times more)."""
    weighted = rows * (weights[:, None] if weights.ndim == 2 else weights[:, None, None])
    if len(rows) <= 3:
        return sum(w[:, None] * r[None] for w, r in zip(weighted, rows, strict=True))
    by_frame = np.ascontiguousarray(rows.transpose(2, 0, 1))  # (F, m, D)
    weighted = np.ascontiguousarray(weighted.transpose(2, 1, 0))  # (F, D, m)
    return np.matmul(weighted, by_frame).transpose(1, 2, 0)


#: From this many frames, and up to this many unknowns, :func:`eliminate` and
#: :func:`substitute` beat numpy's batched LAPACK on a factorisation and two solves (a
#: Newton step and its chord step; LAPACK factorises again for each): measured, time
#: against LAPACK's, 4x4 systems 2.3 at 100 frames, 0.77 at 450, 0.42 at 1200; 16x16
#: 2.8 at 100, 1.07 at 450, 0.83 at 1200; 26x26 1.4 at 450 and 1.3 at 1200. Each
#: elimination pivot is a few numpy calls whatever the frames: with fewer frames the
#: calls, not the arithmetic, cost.
ELIMINATE_FROM, ELIMINATE_UP_TO = 450, 20


def eliminate(K: np.ndarray) -> np.ndarray:
    """The ``L D L^T`` factors (n, n, F) of F symmetric systems K (n, n, F) at once,
    without pivoting: the multipliers of ``L`` below the diagonal, ``D`` on it (above
    it, what K had). K has a positive definite leading block and a negative definite
    trailing one (a regularised KKT matrix is quasi-definite, so every pivot is nonzero
    in any order, Vanderbei 1995), or is positive definite. Each pivot updates the
    lower triangle of the trailing block a row at a time, on all frames at once: half
    the work of a full update, and with many frames faster than numpy's batched LAPACK,
    which pays a call per small matrix (:data:`ELIMINATE_FROM`)."""
    A = np.array(K, dtype=float, order="C")
    n = len(A)
    for k in range(n - 1):
        column = A[k + 1 :, k].copy()  # (n-k-1, F): the pivot's column before division
        A[k + 1 :, k] /= A[k, k]
        for i in range(k + 1, n):
            A[i, k + 1 : i + 1] -= A[i, k] * column[: i - k]
    return A


def solved(K: np.ndarray, factors: np.ndarray, b: np.ndarray, frames: np.ndarray | None = None) -> np.ndarray:
    """The solutions (n, B) of K x = b (K (n, n, F), its :func:`eliminate` factors, b
    (n, B)) for ``frames`` (B,) of the F (None: all): substituted; a frame whose
    residual ``b - K x`` is above 1e-12 of ``|K| |x|`` is refined once (the residual
    solved again), and where that still leaves it above, solved again by LAPACK with
    pivoting: without pivoting an ill-conditioned frame loses digits (ToddlerBot's neck
    linkage, rigid only below its file's precision).

    With ``frames``, every frame is substituted (zero right-hand sides on the others,
    whose K and factors may hold anything) instead of copying the asked frames' systems
    out: with most frames asked, the copies cost more than the substitution."""
    F = K.shape[-1]
    picked = np.arange(F) if frames is None else np.asarray(frames)
    full = b
    if len(picked) < F:
        full = np.zeros(b.shape[:1] + (F,))
        full[:, picked] = b
    with np.errstate(all="ignore"):  # frames not asked for may hold anything
        x = substitute(factors, full)
        off = _inexact(K, x, full)
    if len(picked) < F:
        x, off = x[:, picked], off[picked]
    if off.any():
        where = picked[off]
        x[:, off] += substitute(
            factors[..., where], b[:, off] - np.einsum("ijf,jf->if", K[..., where], x[:, off])
        )
        off[off] = _inexact(K[..., where], x[:, off], b[:, off])
    if off.any():
        where = picked[off]
        with np.errstate(all="ignore"):
            try:
                x[:, off] = np.linalg.solve(K[..., where].transpose(2, 0, 1), b[:, off].T[..., None])[
                    ..., 0
                ].T
            except np.linalg.LinAlgError:  # an exactly singular frame: least squares
                x[:, off] = np.einsum(
                    "fij,jf->if", np.linalg.pinv(K[..., where].transpose(2, 0, 1)), b[:, off]
                )
    return x


def _inexact(K: np.ndarray, x: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per frame (F,), whether x (n, F) misses K x = b by more than 1e-12 of ``|K| |x|``
    (or is not finite)."""
    with np.errstate(invalid="ignore", over="ignore"):
        scale = np.abs(K).max((0, 1)) * np.abs(x).max(0) + np.abs(b).max(0)
        off = np.abs(b - np.einsum("ijf,jf->if", K, x)).max(0) > 1e-12 * scale
    return off | ~np.isfinite(x).all(0)


def substitute(factors: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The solutions (n, F) of the systems :func:`eliminate` factored, for right-hand
    sides b (n, F): ``L z = b``, then ``L^T x = D^-1 z``."""
    x = np.array(b, dtype=float)
    n = len(x)
    for k in range(n - 1):
        x[k + 1 :] -= factors[k + 1 :, k] * x[k]
    x /= factors[np.arange(n), np.arange(n)]
    for k in range(n - 2, -1, -1):
        x[k] -= (factors[k + 1 :, k] * x[k + 1 :]).sum(0)
    return x


def quaternions(A: np.ndarray) -> np.ndarray:
    """Unit quaternions (..., 4, F) (w >= 0) of rotations given by their axes A
    (..., 3, 3, F) (``A[..., a, i, :]``: component i of axis a, the rotation matrix's
    column a), from the largest of the four candidate pivots (accurate everywhere),
    as :func:`~looprig.core.maths.rotations.quat_from_matrix` on this layout."""

    def R(i, j):  # the rotation matrix's entry (i, j)
        return A[..., j, i, :]

    trace = R(0, 0) + R(1, 1) + R(2, 2)
    s21, s02, s10 = R(2, 1) - R(1, 2), R(0, 2) - R(2, 0), R(1, 0) - R(0, 1)
    p01, p02, p12 = R(0, 1) + R(1, 0), R(0, 2) + R(2, 0), R(1, 2) + R(2, 1)
    d0, d1, d2, d3 = (
        1.0 + trace,
        1.0 + 2.0 * R(0, 0) - trace,
        1.0 + 2.0 * R(1, 1) - trace,
        1.0 + 2.0 * R(2, 2) - trace,
    )
    candidates = np.stack(
        [
            np.stack([d0, s21, s02, s10]),
            np.stack([s21, d1, p01, p02]),
            np.stack([s02, p01, d2, p12]),
            np.stack([s10, p02, p12, d3]),
        ]
    )  # (4 candidates, 4, ..., F); candidate k has component k equal to 4 q_k^2
    pivot = np.argmax(np.stack([d0, d1, d2, d3]), axis=0)
    q = np.take_along_axis(candidates, pivot[None, None], axis=0)[0]
    norm = np.sqrt((q * q).sum(0))
    return np.moveaxis(q / np.where(q[:1] < 0.0, -norm, norm), 0, -2)
