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

#: KKT systems at least this large are factorised as sparse matrices.
SPARSE_KKT_SIZE = 160


def solve_kkt(H, g, A, c, primal_reg: float, dual_reg: float):
    """Step ``d`` and multipliers ``lam`` of the equality-constrained QP.

    ``min_d 1/2 d^T H d + g^T d  s.t.  A d + c = 0`` through the quasi-definite
    system ``[[H + eps_p I, A^T], [A, -eps_d I]] [d; lam] = [-g; -c]``; ``eps_d``
    keeps it non-singular when rows of A are dependent (redundant constraints).
    H: (N, N), g: (N,), A: (m, N) dense or sparse, c: (m,).
    """
    n, m = len(g), len(c)
    scale = max(float(np.max(np.abs(np.diag(H)), initial=0.0)), 1.0)
    rhs = np.concatenate([-g, -c])
    if n + m >= SPARSE_KKT_SIZE:
        A = sp.csr_matrix(A)
        K = sp.bmat(
            [[sp.csr_matrix(H) + primal_reg * scale * sp.identity(n), A.T],
             [A, -dual_reg * sp.identity(m)]],
            format="csc",
        )
        solution = spla.splu(K, permc_spec="COLAMD").solve(rhs)
    else:
        A = A.toarray() if sp.issparse(A) else A
        K = np.empty((n + m, n + m))
        K[:n, :n] = H + primal_reg * scale * np.eye(n)
        K[:n, n:] = A.T
        K[n:, :n] = A
        K[n:, n:] = -dual_reg * np.eye(m)
        _, _, solution, info = sla.lapack.dgesv(K, rhs, overwrite_a=True, overwrite_b=True)
        if info != 0:  # exactly singular pivot: fall back to least squares
            solution = np.linalg.lstsq(K, np.concatenate([-g, -c]), rcond=None)[0]
    return solution[:n], solution[n:]


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
    return ", ".join(
        f"{lib.internal_api} {lib.version} x{lib.num_threads}" for lib in controller.lib_controllers
    ) or "none loaded"
