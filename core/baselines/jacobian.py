"""Jacobian serial-chain IK baselines: Jacobian transpose, pseudo-inverse and damped
least squares (sources and conventions: :mod:`.chain`)."""

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..maths.rotations import matrix_from_rotvec, skew
from .chain import IterativeSettings, SerialChain, SerialIKResult, check_target

_EYE3 = np.eye(3)


@dataclass(frozen=True)
class JacobianSettings(IterativeSettings):
    """Iterative Jacobian methods (transpose, pseudo-inverse, damped least squares):
    when they stop (:class:`~.chain.IterativeSettings`, an iteration is a Jacobian
    step) and how they step.

    max_rotation: largest joint rotation of one step [rad]; longer steps are
    scaled down as a whole (the linearisation only holds for small turns).
    backtracks: a step that would increase the tip error is halved up to this
    many times (a step size below 1 "to ensure convergence", seed 004, slide 30);
    when none helps, the iteration stops. 0 takes every step as it comes.
    damping: DLS only, lambda as a fraction of the chain's total length; the
    damped inverse is ``J^T (J J^T + lambda^2 I)^-1`` (lambda^2 [length unit^2]
    plays Toussaint's ``lambda`` of seed 004, slide 33).
    rcond: pseudo-inverse only, singular values of ``J J^T`` below ``rcond`` times
    the largest are treated as zero.
    """

    max_rotation: float = 0.5
    backtracks: int = 8
    damping: float = 0.025
    rcond: float = 1e-6


# ----------------------------------------------------------------------------- Jacobian methods
def position_jacobian(positions: np.ndarray) -> np.ndarray:
    """Tip-position Jacobian (3, 3n) of a ball-joint chain at joint positions (n + 1, 3).

    Columns 3k..3k+2 belong to joint k's rotation vector ``w_k`` [rad], world
    frame: turning joint k moves the tip by ``w_k x (p_tip - p_k)``, so the block
    is ``-skew(p_tip - p_k)`` (the revolute column ``w x r`` of seed 002, three
    axes per ball joint). Units: length unit per rad.
    """
    r = positions[-1] - positions[:-1]  # (n, 3)
    return np.concatenate(-skew(r), axis=1)


def _jacobian_solve(
    chain: SerialChain,
    target,
    settings: JacobianSettings,
    rotations,
    direction: Callable[[np.ndarray, np.ndarray], np.ndarray],
    method: str,
) -> SerialIKResult:
    """Iterate ``R_j <- Exp(sum_{k<=j} w_k) R_j`` with joint steps ``w = direction(r, e)`` (n, 3).

    r: (n, 3) lever arms ``p_tip - p_k``; e: (3,) error ``target - p_tip``. The
    cumulative sum is the first-order motion of link j when every joint k <= j
    turns by w_k (world frame) at once, so one step moves the tip by ``J w`` to
    first order. Steps are scaled so no joint turns by more than ``max_rotation``,
    then halved while they would increase the error (``backtracks``).
    """
    target, R = check_target(chain, target, rotations)
    P = chain.positions(R)
    e = target - P[-1]
    error = float(np.linalg.norm(e))
    errors, cost, steps = [error], 0.0, 0
    reached = error <= settings.tolerance
    while not reached and steps < settings.max_iterations:
        steps += 1
        w = direction(P[-1] - P[:-1], e)  # (n, 3) [rad]
        largest = float(np.linalg.norm(w, axis=1).max())
        if largest > settings.max_rotation:
            w *= settings.max_rotation / largest
        for _ in range(settings.backtracks + 1):
            R_new = matrix_from_rotvec(np.cumsum(w, axis=0)) @ R
            P_new = chain.positions(R_new)
            e_new = target - P_new[-1]
            error_new = float(np.linalg.norm(e_new))
            if error_new <= error or settings.backtracks == 0:
                break
            w *= 0.5
        else:
            break  # no step along this direction reduces the error: a stable position
        cost += float(np.linalg.norm(w, axis=1).sum())
        R, P, e = R_new, P_new, e_new
        errors.append(error_new)
        reached = error_new <= settings.tolerance
        stalled = abs(error - error_new) < settings.stall_tolerance
        error = error_new
        if stalled:
            break
    return SerialIKResult(R, P, error, reached, steps, steps * chain.n, cost, np.array(errors), method)


def _jjt(r: np.ndarray) -> np.ndarray:
    """``J J^T`` (3, 3) for lever arms r (n, 3): ``sum_k |r_k|^2 I - r_k r_k^T`` [length unit^2]."""
    return float(np.sum(r * r)) * _EYE3 - r.T @ r


def jacobian_transpose(
    chain: SerialChain,
    target,
    settings: JacobianSettings = JacobianSettings(),
    rotations: np.ndarray | None = None,
) -> SerialIKResult:
    """Jacobian transpose, ``dq = h J^T dx`` (seed 002, "Jacobian transpose").

    ``J^T e`` is, per joint, the torque ``r_k x e`` of the error pulling on the
    tip (virtual work, seed 002). The step size ``h`` [1 / length unit^2] is the
    one that minimises the linearised error, ``h = (e . J J^T e) / |J J^T e|^2``
    (seed 002 leaves h free). target: (3,) [length unit], world.
    """

    def direction(r, e):
        u = _jjt(r) @ e
        uu = float(u @ u)
        h = float(e @ u) / uu if uu > 0.0 else 0.0
        return h * np.cross(r, e)

    return _jacobian_solve(chain, target, settings, rotations, direction, "jacobian_transpose")


def pseudo_inverse(
    chain: SerialChain,
    target,
    settings: JacobianSettings = JacobianSettings(),
    rotations: np.ndarray | None = None,
) -> SerialIKResult:
    """Jacobian pseudo-inverse, ``dq = J^+ dx`` (seed 002, "The Jacobian inverse").

    ``J^+ = J^T (J J^T)^+`` with the 3x3 ``J J^T`` inverted by SVD, singular values
    below ``rcond`` (relative) dropped: the minimum-norm joint step that moves
    the tip by ``e`` to first order. target: (3,) [length unit], world.
    """

    def direction(r, e):
        y = np.linalg.pinv(_jjt(r), rcond=settings.rcond) @ e
        return np.cross(r, y)

    return _jacobian_solve(chain, target, settings, rotations, direction, "pseudo_inverse")


def damped_least_squares(
    chain: SerialChain,
    target,
    settings: JacobianSettings = JacobianSettings(),
    rotations: np.ndarray | None = None,
) -> SerialIKResult:
    """Damped least squares, ``dq = J^T (J J^T + lambda^2 I)^-1 dx`` (seed 004, slides 27, 33).

    The regularised IK step ``argmin |J dq - e|^2 + lambda^2 |dq|^2``, i.e.
    Toussaint's ``J# = W^-1 J^T (J W^-1 J^T + C^-1)^-1`` with W = I and
    ``C^-1 = lambda^2 I``; singularity-robust where the chain is stretched.
    lambda = ``settings.damping`` x total length [length unit].
    target: (3,) [length unit], world.
    """
    lam2 = (settings.damping * chain.total_length) ** 2

    def direction(r, e):
        y = np.linalg.solve(_jjt(r) + lam2 * _EYE3, e)
        return np.cross(r, y)

    return _jacobian_solve(chain, target, settings, rotations, direction, "damped_least_squares")
