"""BLAS threads for the solvers' streams of small dense systems.

Per-frame solves are streams of small dense systems. On small machines
OpenBLAS's thread pool makes those up to 100x slower than one thread
(measured: a 40x40 ``solve`` takes 3.7 ms threaded, 0.029 ms single), so
:func:`single_threaded_blas` limits BLAS to one thread around hot loops.
"""

import contextlib
import functools


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
