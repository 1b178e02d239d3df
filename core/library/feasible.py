"""Smooth motions that a mechanism can perform, for tests and benchmarks.

A random velocity field (sums of sinusoids) is projected onto the tangent space
of the constraint manifold, integrated, and each frame is re-assembled, so
every state of the result satisfies the joint constraints: targets taken from
it are reachable by construction, whatever the mechanism.
"""

import numpy as np

from ..maths.rotations import retract
from ..model.constraints import ConstraintSet
from ..model.mechanism import Mechanism
from ..solvers.fk import FKSettings, solve_constraints


def feasible_motion(
    mechanism: Mechanism,
    duration: float = 1.0,
    rate: float = 1200.0,
    speed: float = 0.5,
    seed: int = 0,
    start: np.ndarray | None = None,
) -> np.ndarray:
    """States (F, n, 7) of a smooth assembled motion starting at ``start``.

    duration [s], rate [Hz]; speed: peak of each random velocity component
    [rad/s], and [L m/s] for translations (L: mean joint distance).
    """
    cs = ConstraintSet(mechanism, actuated=False)
    rng = np.random.default_rng(seed)
    n = cs.n_vars
    freq = rng.uniform(0.3, 1.2, size=(3, n))  # [Hz]
    phase = rng.uniform(0, 2 * np.pi, size=(3, n))
    amplitude = rng.uniform(-1.0, 1.0, size=(3, n)) * speed / 3.0
    unit = np.tile(np.r_[np.full(3, cs.length_scale), np.ones(3)], len(cs.free_bodies))
    frames = round(duration * rate) + 1
    state = mechanism.initial_state() if start is None else np.array(start, dtype=float)
    states = np.empty((frames,) + state.shape)
    states[0] = state
    dt = 1.0 / rate
    settings = FKSettings(tolerance=1e-13)
    for f in range(1, frames):
        t = (f - 0.5) * dt
        velocity = unit * np.sum(amplitude * np.sin(2 * np.pi * freq * t + phase), axis=0)
        J = cs.jacobian(state)
        _, sv, Vt = np.linalg.svd(J) if len(J) else (None, np.zeros(0), np.eye(n))
        rank = int(np.sum(sv > 1e-9 * (sv[0] if len(sv) else 1.0)))
        null = Vt[rank:]  # (n - rank, n) basis of motions that keep the joints together
        step = null.T @ (null @ velocity) * dt
        state = solve_constraints(cs, retract(state, cs.tangent_to_bodies(step)), None, settings).state
        states[f] = state
    return states
