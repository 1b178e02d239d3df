"""The one finite-difference harness: perturbs body states through ``retract``."""

import numpy as np
from looprig.core.maths.rotations import retract


def numerical_jacobian(fun, state: np.ndarray, free_bodies: np.ndarray, eps: float = 1e-6):
    """Central differences of ``fun(state) -> (m,)`` over 6 tangent values per free body."""
    columns = []
    for body in free_bodies:
        for k in range(6):
            delta = np.zeros((len(state), 6))
            delta[body, k] = eps
            plus, minus = fun(retract(state, delta)), fun(retract(state, -delta))
            columns.append((plus - minus) / (2 * eps))
    return np.stack(columns, axis=-1)
