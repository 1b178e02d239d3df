"""Where the interior point starts a clip (states (F, n, 7), motors (F, A) [rad | m])
other than at its exact answer: the rewound start, whose turns through a singularity
are taken the other way round (:func:`rewound_start`), and the whole clip moved to the
answer found on every stride-th frame (:func:`coarse_stride`, :func:`refined_start`),
with that answer's multipliers interpolated in time (:func:`refined_multipliers`).
"""

import numpy as np
from scipy.interpolate import BSpline

from ...maths.rotations import quat_to_matrix
from ...terms.limits import ActuatorLimits
from ..ik import IKProblem
from .records import SpaceTimeSolution
from .rows import LimitRows

#: A motor that moves by more than this many times its speed limit in one frame is
#: turning through a singularity (the exact answer flips it by about half a turn).
FLIP_SPEED = 4.0


def rewound_start(problem: IKProblem, states, actuators, rate: float, limits: ActuatorLimits):
    """A second start (states (F, n, 7), motors (F, A)) for a clip whose exact answer
    turns motors through a singularity and leaves their ranges, or None.

    Near a singularity (the Boxer's shoulder in gimbal lock) the exact answer flips
    some motors by about half a turn within a few frames; the same poses are reached
    by flipping them the other way round, which puts every later frame's values one
    turn away. Such a flip is where an angle motor moves by more than
    :data:`FLIP_SPEED` times its speed limit in a frame; after each flip, each motor
    that can is shifted by the whole turns that fit its range best, and across the
    flip its values are interpolated (the states there moved along the tree joints;
    the interior point closes any loops). The states after the flip do not change:
    a whole turn is no motion. Angle motors that are not tree joints are left alone."""
    values = np.asarray(actuators, dtype=float)
    steps = np.abs(np.diff(values, axis=0)) * rate  # (F - 1, A) [rad/s]
    angle = problem.readout.is_angle & np.isfinite(limits.velocity) & np.isfinite(limits.upper - limits.lower)
    fast = ((steps > FLIP_SPEED * limits.velocity) & angle).any(axis=1)
    if not fast.any():
        return None
    edges = np.flatnonzero(np.diff(np.r_[0, fast.astype(int), 0]))
    windows = edges.reshape(-1, 2)  # flips: frames start .. end move fast (step k: k -> k + 1)
    shifted = values.copy()
    for start, end in windows:
        after = shifted[end:]  # every later frame, shifted together
        turns = np.zeros(values.shape[1])
        for a in np.flatnonzero(angle):
            candidates = np.arange(-2, 3)
            excess = [
                np.maximum(after[:, a] + 2 * np.pi * k - limits.upper[a], 0.0).sum()
                + np.maximum(limits.lower[a] - after[:, a] - 2 * np.pi * k, 0.0).sum()
                for k in candidates
            ]
            turns[a] = candidates[int(np.argmin(excess))]
        shifted[end:] += 2 * np.pi * turns
        span = np.arange(start, end + 1)  # interpolated across the flip
        w = (span - start) / max(end - start, 1)
        shifted[span] = (1 - w)[:, None] * shifted[start] + w[:, None] * shifted[end]
    if np.array_equal(shifted, values):
        return None
    theta = np.zeros((len(values), problem.tree.dof))
    columns = tree_motor_columns(problem, states[:1])
    for a in range(values.shape[1]):
        if a in columns:
            column, sign = columns[a]
            theta[:, column] = (shifted[:, a] - values[:, a]) * sign
        else:
            shifted[:, a] = values[:, a]
    moved = problem.tree.retract(np.asarray(states, float), quat_to_matrix(states[..., 3:]), theta)
    return moved, problem.readout.read(moved, previous=shifted)


def tree_motor_columns(problem: IKProblem, state: np.ndarray) -> dict[int, tuple[int, float]]:
    """The motors that are tree joints: motor index -> (its joint coordinate, +-1: the
    motor's value per unit of the coordinate), read at ``state`` (1, n, 7)."""
    R = quat_to_matrix(state[..., 3:])
    Z = problem.tree.joint_basis(state, R)
    P = problem.readout.jacobian(state, R, problem.constraints.column_of_body, problem.constraints.n_vars)
    PZ = (P @ Z)[0]  # (A, D): a tree motor's row is one +-1
    columns = {}
    for a, row in enumerate(PZ):
        column = int(np.argmax(np.abs(row)))
        if np.isclose(abs(row[column]), 1.0) and np.isclose(np.abs(row).sum(), 1.0):
            columns[a] = (column, float(np.sign(row[column])))
    return columns


def refined_start(problem, coarse_solution: SpaceTimeSolution, states, values, coarse, frozen):
    """The clip's start (states (F, n, 7), motors (F, A)) moved to the answer found on its
    ``coarse`` frames (every stride-th): the tree motors to that answer's values, other
    tree joints by its joint coordinates' travel, both along :func:`_smoothed` (frames
    past the last coarse one keep its values); ``frozen`` frames stay."""
    stride = int(coarse[1] - coarse[0]) if len(coarse) > 1 else 1
    blend = _eased(frozen, len(values), stride)[:, None]
    theta = blend * _smoothed(coarse_solution.travelled, stride, len(values))
    motors = values + blend * (_smoothed(coarse_solution.actuators, stride, len(values)) - values)
    for a, (column, sign) in tree_motor_columns(problem, states[:1]).items():
        theta[:, column] = (motors[:, a] - values[:, a]) * sign
    if frozen is not None:
        theta[frozen] = 0.0
    moved = problem.tree.retract(states, quat_to_matrix(states[..., 3:]), theta)
    return moved, problem.readout.read(moved, previous=np.where(np.isfinite(motors), motors, values))


def _eased(frozen: np.ndarray | None, frames: int, stride: int) -> np.ndarray:
    """Per frame (F,), how far the start moves to the coarse answer: 0 on ``frozen``
    frames, rising smoothly (C2, over ``stride`` frames) to 1 away from them, so that
    the start joins the kept frames without a kink their acceleration rows would read."""
    kept = np.zeros(0, int) if frozen is None else np.flatnonzero(frozen)
    if not len(kept):
        return np.ones(frames)
    f = np.arange(frames)
    after = np.searchsorted(kept, f).clip(1, len(kept)) - 1  # the last kept frame at or before
    nearest = np.minimum(np.abs(f - kept[after]), np.abs(kept[np.minimum(after + 1, len(kept) - 1)] - f))
    t = np.clip((nearest - 1) / stride, 0.0, 1.0)
    return t**3 * (10.0 - 15.0 * t + 6.0 * t**2)


def _smoothed(samples: np.ndarray, stride: int, frames: int) -> np.ndarray:
    """The uniform cubic B-spline whose control points are ``samples`` (K, ...), one
    every ``stride`` frames from frame 0, at ``frames`` frames (frames past the last
    sample keep its value). Its values, slopes and curvatures are convex combinations of
    the samples, their first and their second differences, so every range, speed and
    acceleration row the samples keep at the coarse rate the fine frames keep too (an
    interpolating spline overshoots the accelerations by up to 3x): the whole clip's
    interior point then starts inside its limits. The ends are extended linearly, so
    the curve passes through the first and last samples."""
    samples = np.asarray(samples, dtype=float)  # (at least 64 of them: coarse_stride)
    K = len(samples)
    control = np.concatenate([2 * samples[:1] - samples[1:2], samples, 2 * samples[-1:] - samples[-2:-1]])
    knots = np.arange(K + 6) - 3.0
    at = np.minimum(np.arange(frames) / stride, K - 1)
    return BSpline(knots, control, 3, extrapolate=False)(at)


def refined_multipliers(
    families: list[LimitRows], coarse_families: list[LimitRows], multipliers, stride: int
):
    """The limit rows' multipliers (m,) on the whole clip from those on every ``stride``-th
    frame, interpolated in time per channel: the rows are normalised by their bounds, so
    a multiplier is about the same function of time at any rate. A family the coarse
    clip lacks (an end it does not reach) gets zeros."""
    coarse = {(c.quantity, c.stencil): (c, z) for c, z in zip(coarse_families, multipliers, strict=True)}
    parts = []
    for rows in families:
        c, z = coarse.get((rows.quantity, rows.stencil), (None, None))
        if c is None or c.runs < 2 or rows.runs < 2 or not np.array_equal(c.motor, rows.motor):
            parts.append(np.zeros((rows.runs, len(rows.motor))))
            continue
        centre = (len(rows.stencil) - 1) / 2
        fine_t = rows.first + np.arange(rows.runs) + centre
        coarse_t = (c.first + np.arange(c.runs) + centre) * stride
        parts.append(np.stack([np.interp(fine_t, coarse_t, column) for column in z.T], axis=1))
    return np.concatenate([p.ravel() for p in parts]) if parts else np.zeros(0)


def coarse_stride(frames: int, rate: float, coarse_rate: float) -> int:
    """Every how many frames the starts are compared and the answer first sought: the
    largest of 16, 8, 4 or 2 that keeps at least ``coarse_rate`` [Hz] and 64 frames; 1 (the
    clip as it is) for short or slow clips."""
    for stride in (16, 8, 4, 2):
        if rate / stride >= coarse_rate and frames // stride >= 64:
            return stride
    return 1
