"""Linear algebra of the solvers: the regularised KKT solve and BLAS threads.

Per-frame solves are streams of small dense systems. On small machines
OpenBLAS's thread pool makes those up to 100x slower than one thread
(measured: a 40x40 ``solve`` takes 3.7 ms threaded, 0.029 ms single), so
:func:`single_threaded_blas` limits BLAS to one thread around hot loops.
"""

import contextlib
import functools

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla

#: KKT systems at least this large are factorised as sparse matrices. Measured on
#: the walker's 354-row system (one BLAS thread): dense LU 1.7 ms, sparse 2.1 ms
#: with assembly; dense LU grows as n^3, so much larger mechanisms go sparse.
SPARSE_KKT_SIZE = 500


class KKTSystem:
    """Factorised KKT matrix of an equality-constrained QP step.

    ``min_d 1/2 d^T H d + g^T d  s.t.  A d + c = 0`` through the quasi-definite
    matrix ``[[H + eps_p I, A^T], [A, -eps_d I]]``; ``eps_d`` keeps it non-singular
    when rows of A are dependent (redundant constraints), ``eps_p`` (relative to
    the largest diagonal entry of H) damps directions no term determines.
    H: (N, N), A: (m, N) dense. One factorisation serves several right-hand sides
    (:meth:`solve`), e.g. a chord step at the next iterate. ``sparse`` picks SuperLU
    or dense LU; by default systems of ``SPARSE_KKT_SIZE`` rows or more go sparse.
    """

    def __init__(
        self, H: np.ndarray, A: np.ndarray, primal_reg: float, dual_reg: float, sparse: bool | None = None
    ):
        n, m = H.shape[0], A.shape[0]
        self.n = n
        scale = max(float(np.max(np.abs(np.diag(H)), initial=0.0)), 1.0)
        if n + m >= SPARSE_KKT_SIZE if sparse is None else sparse:
            As = sp.csr_matrix(A)
            K = sp.bmat(
                [
                    [sp.csr_matrix(H) + primal_reg * scale * sp.identity(n), As.T],
                    [As, -dual_reg * sp.identity(m)],
                ],
                format="csc",
            )
            self._sparse = spla.splu(K, permc_spec="COLAMD")
        else:
            K = np.empty((n + m, n + m))
            K[:n, :n] = H
            K[np.arange(n), np.arange(n)] += primal_reg * scale
            K[:n, n:] = A.T
            K[n:, :n] = A
            K[n:, n:] = 0.0
            K[np.arange(n, n + m), np.arange(n, n + m)] = -dual_reg
            self._sparse = None
            self._lu, self._pivots, info = _getrf(K, overwrite_a=True)
            if info > 0:  # an exactly zero pivot: keep a least-squares solve instead
                self._lu, self._pivots, self._K = None, None, K

    def solve(self, g: np.ndarray, c: np.ndarray):
        """Step ``d`` (N,) and multipliers ``lam`` (m,) for gradient g and residual c."""
        rhs = np.concatenate([-g, -c])
        if self._sparse is not None:
            solution = self._sparse.solve(rhs)
        elif self._lu is not None:
            solution, _ = _getrs(self._lu, self._pivots, rhs)
        else:
            solution = np.linalg.lstsq(self._K, rhs, rcond=None)[0]
        return solution[: self.n], solution[self.n :]


_getrf, _getrs = sla.lapack.get_lapack_funcs(("getrf", "getrs"), dtype=np.float64)


@functools.cache
def _thread_controller():
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # pragma: no cover - threadpoolctl is a declared dependency
        return None
    return ThreadpoolController()


@contextlib.contextmanager
def single_threaded_blas():
    """Limit BLAS/OpenMP pools to one thread inside the block (no-op without
    threadpoolctl). Enter it once around a loop of solves, not per solve."""
    controller = _thread_controller()
    if controller is None:
        yield
        return
    with controller.limit(limits=1):
        yield


def blas_info() -> str:
    """Short description of the BLAS libraries and their thread counts."""
    controller = _thread_controller()
    if controller is None:
        return "unknown (threadpoolctl missing)"
    return (
        ", ".join(
            f"{lib.internal_api} {lib.version} x{lib.num_threads}" for lib in controller.lib_controllers
        )
        or "none loaded"
    )
