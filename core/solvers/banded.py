"""Rows that read a few consecutive frames, and the interior point's Newton system
over them: the banded linear algebra of :mod:`.spacetime`.

Hand-written: scipy has banded Cholesky but no interior point, and a general sparse
solver would not see that the Newton system is banded in time.

For F frames of d unknowns each (u (F, d)), a family of rows reads S consecutive
frames (S = 1: a motor's range; 2: its speed between frames; 3: its acceleration)::

    sum_j a_rj . u_(k + j) <= h_r     for every run k of S frames and row r of the run

A primal-dual interior point (Nocedal & Wright, *Numerical Optimization*, 2nd ed.,
chapter 19) gives every row a slack s > 0 and a multiplier z > 0; its Newton system
reduced to the primal unknowns, ``H + G^T diag(z/s) G`` with H block diagonal (F
blocks d x d), is block-banded with half-bandwidth ``S_max - 1`` frames, so each
iteration is one banded Cholesky factorisation (:func:`scipy.linalg.cholesky_banded`)
of ``F d`` unknowns and bandwidth ``S_max d - 1``: linear in the number of frames.
"""

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.linalg as sla

from ..errors import SolverError


@dataclass(frozen=True)
class StencilRows:
    """One-sided rows over K runs of S consecutive frames, R of them per run, from frame
    ``offset`` on: ``sum_j coefficients[k, r, j] . u[offset + k + j] <= bound[k, r]``.

    coefficients: (K, R, S, d); bound: (K, R). Rows are best scaled so that their bounds
    are of order one (the interior point's tolerances are absolute in the rows' units).
    Rows that each read one unknown of every frame (a motor that is a tree joint reads
    its own coordinate) are given by :meth:`on_columns` instead, and every product
    then costs a few operations on (K, R) arrays instead of products of small matrices.
    """

    coefficients: np.ndarray | None
    bound: np.ndarray
    offset: int = 0
    columns: np.ndarray | None = None  # (R,) the unknown each row reads, :meth:`on_columns`
    factors: np.ndarray | None = None  # (K, R, S) its coefficient there
    d: int = 0  # the unknowns per frame, :meth:`on_columns`

    @classmethod
    def on_columns(cls, factors: np.ndarray, columns: np.ndarray, d: int, bound: np.ndarray, offset: int = 0):
        """Rows that read one unknown each: ``sum_j factors[k, r, j] u[offset + k + j,
        columns[r]] <= bound[k, r]``; d: the unknowns per frame."""
        return cls(None, bound, offset, np.asarray(columns, int), factors, d)

    @property
    def width(self) -> int:
        """S, the frames a row reads."""
        return (self.factors if self.coefficients is None else self.coefficients).shape[2]

    @property
    def size(self) -> int:
        """The number of rows."""
        return self.bound.size

    @property
    def dense(self) -> np.ndarray:
        """The coefficients (K, R, S, d) whichever form the rows were given in."""
        if self.coefficients is not None:
            return self.coefficients
        return self.factors[..., None] * self._selection[None, :, None, :]

    @cached_property
    def _selection(self) -> np.ndarray:
        """(R, d): row r reads unknown ``columns[r]``."""
        E = np.zeros((len(self.columns), self.d))
        E[np.arange(len(self.columns)), self.columns] = 1.0
        return E

    def times(self, u: np.ndarray) -> np.ndarray:
        """The rows' values (K, R) at u (F, d)."""
        K, o = len(self.bound), self.offset
        out = np.zeros(self.bound.shape)
        for j in range(self.width):
            if self.coefficients is None:
                out += self.factors[:, :, j] * u[o + j : o + j + K, self.columns]
            else:
                out += (self.coefficients[:, :, j] @ u[o + j : o + j + K, :, None])[..., 0]
        return out

    def transpose_times(self, y: np.ndarray, out: np.ndarray) -> None:
        """Add ``G^T y`` for row weights y (K, R) to out (F, d)."""
        K, o = len(self.bound), self.offset
        for j in range(self.width):
            if self.coefficients is None:
                out[o + j : o + j + K] += (y * self.factors[:, :, j]) @ self._selection
            else:
                out[o + j : o + j + K] += (y[:, None, :] @ self.coefficients[:, :, j])[:, 0]


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
        c, K, o = rows.coefficients, len(rows.bound), rows.offset
        if c is None:  # rows on one unknown each: on the blocks' diagonals alone
            diagonal = np.arange(self.d)
            for i in range(rows.width):
                weighted = weights * rows.factors[:, :, i]
                for j in range(i + 1):
                    added = (weighted * rows.factors[:, :, j]) @ rows._selection  # (K, d)
                    self.blocks[o + j : o + j + K, i - j, diagonal, diagonal] += added
            return
        for i in range(rows.width):
            weighted = np.swapaxes(c[:, :, i] * weights[..., None], 1, 2)  # (K, d, R)
            for j in range(i + 1):
                self.blocks[o + j : o + j + K, i - j] += weighted @ c[:, :, j]

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
        raise SolverError("space-time solve: the Newton matrix is not positive definite")


class RowSet:
    """Several families of rows stacked into one vector of m rows (family by family,
    run by run): ``G u`` (m,), ``G^T y`` (F, d), the bounds h (m,)."""

    def __init__(self, families: list[StencilRows], frames: int, d: int):
        self.families, self.frames, self.d = families, frames, d
        self.width = max((f.width for f in families), default=1)
        self.size = sum(f.size for f in families)
        self.bound = np.concatenate([f.bound.ravel() for f in families]) if families else np.zeros(0)
        self._splits = np.cumsum([f.size for f in families])[:-1]

    def split(self, y: np.ndarray) -> list[np.ndarray]:
        """A row vector (m,) as one (K, R) array per family."""
        return [
            part.reshape(f.bound.shape)
            for f, part in zip(self.families, np.split(y, self._splits), strict=True)
        ]

    def times(self, u: np.ndarray) -> np.ndarray:
        """``G u`` (m,) for u (F, d)."""
        if not self.families:
            return np.zeros(0)
        return np.concatenate([f.times(u).ravel() for f in self.families])

    def transpose(self, y: np.ndarray) -> np.ndarray:
        """``G^T y`` (F, d) for y (m,)."""
        out = np.zeros((self.frames, self.d))
        for f, part in zip(self.families, self.split(y), strict=True):
            f.transpose_times(part, out)
        return out


class NewtonSystem:
    """The interior point's Newton system at slacks s and multipliers z (m,) of ``rows``:
    ``H + G^T diag(z / s) G`` factorised once (banded Cholesky); :meth:`direction`
    solves for any right-hand side."""

    def __init__(self, H: np.ndarray, rows: RowSet, s: np.ndarray, z: np.ndarray):
        self.rows, self.s, self.z = rows, s, z
        self.w = z / s
        K = _BandedMatrix(rows.frames, rows.d, rows.width)
        K.blocks[:, 0] = H
        for f, part in zip(rows.families, rows.split(self.w), strict=True):
            K.add_stencil(f, part)
        self.factor = K.cholesky()

    def direction(self, r_d: np.ndarray, r_p: np.ndarray, r_c: np.ndarray):
        """The Newton step (du (F, d), ds, dz (m,)) that zeroes the linearised stationarity
        residual r_d (F, d), row residual ``r_p = G u + s - h`` and complementarity
        residual ``r_c = s z - target`` (m,)."""
        rows, s, z = self.rows, self.s, self.z
        rhs = -r_d + rows.transpose(r_c / s - self.w * r_p)
        du = sla.cho_solve_banded((self.factor, True), rhs.ravel(), check_finite=False)
        du = du.reshape(rows.frames, rows.d)
        ds = -r_p - rows.times(du)
        return du, ds, -(r_c + z * ds) / s


def converged_kkt(r_d, r_p, mu: float, tolerance: float, *parts) -> bool:
    """Whether stationarity r_d (relative to the largest of its ``parts``, whose rounding
    is no error), the rows' residual r_p and the mean complementarity mu are all within
    ``tolerance``."""
    scale = max([1.0] + [float(np.abs(p).max(initial=0.0)) for p in parts])
    return bool(
        np.abs(r_d).max(initial=0.0) <= tolerance * scale
        and np.abs(r_p).max(initial=0.0) <= tolerance
        and mu <= tolerance
    )
