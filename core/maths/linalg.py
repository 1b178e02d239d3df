"""Small dense linear algebra for the solvers: BLAS threads for their streams of small
systems, and null spaces by the SVD.

Per-frame solves are streams of small dense systems. On small machines
OpenBLAS's thread pool makes those up to 100x slower than one thread
(measured: a 40x40 ``solve`` takes 3.7 ms threaded, 0.029 ms single), so
:func:`single_threaded_blas` limits BLAS to one thread around hot loops.
"""

import contextlib
import functools

import numpy as np


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


def null_space(A: np.ndarray, relative: float, floor: float = 0.0) -> np.ndarray:
    """Orthonormal basis (n, d) of the null space of A (m, n): singular values below
    ``relative`` times the largest, or below ``floor`` (absolute, A's units), count as
    zero; every direction when A has no rows."""
    if A.shape[0] == 0:
        return np.eye(A.shape[1])
    _, sigma, Vt = np.linalg.svd(A)
    largest = sigma.max(initial=0.0)
    rank = int((sigma > max(relative * largest, floor)).sum()) if largest > 0 else 0
    return Vt[rank:].T
