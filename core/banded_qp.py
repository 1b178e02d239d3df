"""Convex QPs whose unknowns are a sequence of frames coupled only by rows that
read a few consecutive frames: the space-time subproblem of :mod:`.spacetime`.

Hand-written: scipy has banded Cholesky but no QP solver, and a general sparse QP
library would not see that the Newton system is banded in time.

The problem, for F frames of d unknowns each (u (F, d))::

    min  sum_k  1/2 u_k^T H_k u_k + g_k^T u_k
    s.t. sum_j a_rj . u_(k_r + j) <= h_r     for every row r of every stencil family

A family's rows read S consecutive frames (S = 1: a motor's range; 2: its speed
between frames; 3: its acceleration), each row from its own first frame ``k_r``.
A primal-dual interior-point method with Mehrotra's predictor-corrector solves it
(Nocedal & Wright, *Numerical Optimization*, 2nd ed., section 16.6). Its Newton
system reduced to the primal unknowns, ``H + G^T diag(z/s) G``, is block-banded
with half-bandwidth ``(S_max - 1)`` frames, so each iteration is one banded
Cholesky factorisation (:func:`scipy.linalg.cholesky_banded`) of ``F d`` unknowns
and bandwidth ``S_max d - 1``: linear in the number of frames.
"""

from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla

from .errors import SolverError


@dataclass(frozen=True)
class StencilRows:
    """One-sided rows over every run of S consecutive frames, R of them per run:
    ``sum_j coefficients[k, r, j] . u[k + j] <= bound[k, r]`` for k = 0 .. F - S.

    coefficients: (F - S + 1, R, S, d); bound: (F - S + 1, R). Rows are best scaled so
    that their bounds are of order one (the interior point's tolerances are absolute in
    the rows' units).
    """

    coefficients: np.ndarray
    bound: np.ndarray

    @property
    def width(self) -> int:
        """S, the frames a row reads."""
        return self.coefficients.shape[2]

    @property
    def size(self) -> int:
        """The number of rows."""
        return self.bound.size

    def times(self, u: np.ndarray) -> np.ndarray:
        """The rows' values (K, R) at u (F, d)."""
        K = len(self.bound)
        out = np.zeros(self.bound.shape)
        for j in range(self.width):
            out += (self.coefficients[:, :, j] @ u[j : j + K, :, None])[..., 0]
        return out

    def transpose_times(self, y: np.ndarray, out: np.ndarray) -> None:
        """Add ``G^T y`` for row weights y (K, R) to out (F, d)."""
        K = len(self.bound)
        for j in range(self.width):
            out[j : j + K] += (y[:, None, :] @ self.coefficients[:, :, j])[:, 0]


@dataclass
class QPSolution:
    """The optimum of :func:`solve_banded_qp`: u (F, d); multipliers (one (K, R) array
    per family with rows, >= 0); iterations; converged: whether the tolerances were met."""

    u: np.ndarray
    multipliers: list[np.ndarray]
    iterations: int
    converged: bool


class _BandedMatrix:
    """A symmetric block-banded matrix of F blocks of d, kept as its lower block
    diagonals ``blocks[k, o] = M[k + o, k]`` (F, W, d, d), and its lower banded form
    for LAPACK (:func:`scipy.linalg.cholesky_banded`)."""

    def __init__(self, frames: int, d: int, width: int):
        self.frames, self.d, self.width = frames, d, width
        self.blocks = np.zeros((frames, width, d, d))
        # entry (o, p, q) of block k goes to ab[o d + p - q, k d + q] when o d + p - q >= 0
        o, p, q = np.meshgrid(np.arange(width), np.arange(d), np.arange(d), indexing="ij")
        keep = (o * d + p - q >= 0).ravel()
        k = np.arange(frames)[:, None]
        self._band_row = np.broadcast_to((o * d + p - q).ravel()[keep], (frames, keep.sum()))
        self._band_col = k * d + q.ravel()[keep]
        self._keep = keep
        self._inside = self._band_col + self._band_row < frames * d  # blocks past the end are zero
        self.bandwidth = width * d - 1

    def add_stencil(self, rows: StencilRows, weights: np.ndarray) -> None:
        """Add ``G^T diag(weights) G`` of one family of rows (weights (K, R))."""
        c, K = rows.coefficients, len(rows.bound)
        for i in range(rows.width):
            weighted = np.swapaxes(c[:, :, i] * weights[..., None], 1, 2)  # (K, d, R)
            for j in range(i + 1):
                self.blocks[j : j + K, i - j] += weighted @ c[:, :, j]

    def cholesky(self) -> np.ndarray:
        """The lower banded Cholesky factor. Near a QP's solution the rows' weights z/s
        span many decades and rounding can make the positive definite matrix fail the
        factorisation: its diagonal is then raised by a few ulps of its largest entry,
        then more; :class:`SolverError` if that does not help."""
        ab = np.zeros((self.bandwidth + 1, self.frames * self.d))
        values = self.blocks.reshape(self.frames, -1)[:, self._keep]
        ab[self._band_row[self._inside], self._band_col[self._inside]] = values[self._inside]
        largest = float(np.abs(ab[0]).max(initial=0.0))
        for shift in (0.0, 1e-14, 1e-12, 1e-10):
            ab[0] += shift * largest
            try:
                return sla.cholesky_banded(ab, lower=True, check_finite=False)
            except np.linalg.LinAlgError:
                continue
        raise SolverError("space-time QP: the Newton matrix is not positive definite")


def solve_banded_qp(
    H: np.ndarray,
    g: np.ndarray,
    families: list[StencilRows],
    tolerance: float = 1e-9,
    max_iterations: int = 200,
) -> QPSolution:
    """Minimise ``sum 1/2 u^T H u + g^T u`` under the rows of ``families`` (module docstring).

    H: (F, d, d) symmetric positive definite blocks (the caller adds any damping);
    g: (F, d). Converged when the stationarity, the rows' violation and the mean
    complementarity are below ``tolerance`` (relative to the gradient's size for
    stationarity). Raises :class:`SolverError` if the Newton matrix stops being
    positive definite.
    """
    F, d = g.shape
    width = max((f.width for f in families), default=1)
    m = sum(f.size for f in families)
    u = np.zeros((F, d))
    if m == 0:
        return QPSolution(-np.linalg.solve(H, g[..., None])[..., 0], [], 0, True)
    h = np.concatenate([f.bound.ravel() for f in families])
    splits = np.cumsum([f.size for f in families])[:-1]

    def G_times(v):
        return np.concatenate([f.times(v).ravel() for f in families])

    def G_transpose(y):
        out = np.zeros((F, d))
        for f, part in zip(families, np.split(y, splits), strict=True):
            f.transpose_times(part.reshape(f.bound.shape), out)
        return out

    s = np.maximum(h - G_times(u), 1.0)
    z = np.ones(m)
    converged, iterations = False, 0
    for _ in range(max_iterations):
        Hu, Gz = (H @ u[..., None])[..., 0], G_transpose(z)
        r_d = Hu + g + Gz
        r_p = G_times(u) + s - h
        mu = float(s @ z) / m
        if not (np.isfinite(mu) and mu < 1e30):  # diverging: the rows have no common point
            break
        # stationarity relative to the sizes of its parts: rounding in them is not an error
        scale = max(1.0, float(np.abs(g).max()), float(np.abs(Hu).max()), float(np.abs(Gz).max()))
        if np.abs(r_d).max() <= tolerance * scale and np.abs(r_p).max() <= tolerance and mu <= tolerance:
            converged = True
            break
        w = z / s
        K = _BandedMatrix(F, d, width)
        K.blocks[:, 0] = H
        for f, part in zip(families, np.split(w, splits), strict=True):
            K.add_stencil(f, part.reshape(f.bound.shape))
        factor = K.cholesky()

        def direction(r_c, s=s, z=z, w=w, r_d=r_d, r_p=r_p, factor=factor):
            """The Newton step (du, ds, dz) for complementarity residual r_c."""
            rhs = -r_d + G_transpose(r_c / s - w * r_p)
            du = sla.cho_solve_banded((factor, True), rhs.ravel(), check_finite=False).reshape(F, d)
            ds = -r_p - G_times(du)
            return du, ds, -(r_c + z * ds) / s

        du, ds, dz = direction(s * z)  # the affine predictor
        alpha = _step_to_boundary(s, ds, z, dz, 1.0)
        if not np.isfinite(alpha):
            break
        mu_affine = float((s + alpha * ds) @ (z + alpha * dz)) / m
        sigma = (mu_affine / mu) ** 3
        du, ds, dz = direction(s * z + ds * dz - sigma * mu)  # Mehrotra's corrector
        alpha = _step_to_boundary(s, ds, z, dz, 0.995)
        u += alpha * du
        s += alpha * ds
        z += alpha * dz
        iterations += 1
    multipliers = [part.reshape(f.bound.shape) for f, part in zip(families, np.split(z, splits), strict=True)]
    return QPSolution(u, multipliers, iterations, converged)


def _step_to_boundary(s, ds, z, dz, fraction: float) -> float:
    """The largest step <= 1 that keeps s and z positive, times ``fraction``."""
    alpha = 1.0
    for v, dv in ((s, ds), (z, dz)):
        shrinking = dv < 0.0
        if shrinking.any():
            alpha = min(alpha, float(np.min(-v[shrinking] / dv[shrinking])) * fraction)
    return alpha
