"""Geometric serial-chain IK baselines: cyclic coordinate descent and triangulation
(sources and conventions: :mod:`.chain`)."""

import math
from dataclasses import dataclass

import numpy as np

from ..maths.rotations import unit_axis_rotation
from .chain import IterativeSettings, SerialChain, SerialIKResult, check_target

_EYE3 = np.eye(3)
#: Sine of the angle below which two directions count as parallel.
_PARALLEL = 1e-12


# ----------------------------------------------------------------------------- rotations
def _perpendicular(u: np.ndarray, preferred: np.ndarray) -> np.ndarray:
    """A unit vector orthogonal to ``u``: ``preferred`` made orthogonal, or a world axis."""
    u = u / np.linalg.norm(u)
    for axis in (preferred, *np.eye(3)[np.argsort(np.abs(u))]):
        w = axis - np.dot(axis, u) * u
        norm = np.linalg.norm(w)
        if norm > 1e-6:
            return w / norm
    raise AssertionError("unreachable: some world axis is not parallel to u")  # pragma: no cover


def _turn(a: np.ndarray, b: np.ndarray, offset: float, fallback: np.ndarray) -> tuple[np.ndarray, float]:
    """Turn vector ``a`` towards ``b`` (both (3,), any length) about ``a x b`` until
    ``offset`` [rad] is left between them.

    Returns the rotation (3, 3) and its signed angle ``angle(a, b) - offset`` [rad]
    (0 and the identity when a or b is zero). When a and b are parallel the axis
    is ``fallback`` made orthogonal to a (seed 001, Sec. 3.1.1: "an arbitrary r
    needs to be chosen").
    """
    a_norm, b_norm = math.hypot(*a.tolist()), math.hypot(*b.tolist())
    if a_norm == 0.0 or b_norm == 0.0:
        return _EYE3, 0.0
    a0, a1, a2 = (a / a_norm).tolist()  # unit vectors: no under- or overflow below
    b0, b1, b2 = (b / b_norm).tolist()
    v0, v1, v2 = a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0
    sin = math.hypot(v0, v1, v2)
    cos = a0 * b0 + a1 * b1 + a2 * b2
    angle = math.atan2(sin, cos) - offset
    if sin > _PARALLEL:
        # make the axis exactly orthogonal to a: near 180 deg the cross product's
        # rounding tilts it by ~1e-16 / sin, which Rodrigues' u u^T term would carry
        # into the turned a; orthogonal, the tilt only enters scaled by sin(angle)
        u0, u1, u2 = v0 / sin, v1 / sin, v2 / sin
        along = u0 * a0 + u1 * a1 + u2 * a2
        u0, u1, u2 = u0 - along * a0, u1 - along * a1, u2 - along * a2
        norm = math.hypot(u0, u1, u2)
        return unit_axis_rotation(u0 / norm, u1 / norm, u2 / norm, angle), angle
    if angle == 0.0:
        return _EYE3, 0.0
    return unit_axis_rotation(*_perpendicular(a, fallback).tolist(), angle), angle


# ----------------------------------------------------------------------------- settings
@dataclass(frozen=True)
class CCDSettings(IterativeSettings):
    """Cyclic coordinate descent (:class:`~.chain.IterativeSettings`): an iteration is a
    sweep over all joints; the tolerance is checked after every joint rotation (seed
    001: 0.5 units).
    """


@dataclass(frozen=True)
class TriangulationSettings:
    """Triangulation (one pass, no iteration limit).

    tolerance: reached when the final tip error is below it [length unit].
    fallback_axis: (3,) rotation axis when a link is parallel to its target
    vector, made orthogonal to the link (seed 001, Sec. 3.1.1 and Algorithm 1
    use the vertical y axis).
    """

    tolerance: float = 1e-6
    fallback_axis: tuple[float, float, float] = (0.0, 1.0, 0.0)


# ----------------------------------------------------------------------------- CCD
def ccd(
    chain: SerialChain,
    target,
    settings: CCDSettings = CCDSettings(),
    rotations: np.ndarray | None = None,
) -> SerialIKResult:
    """Cyclic coordinate descent for the tip position (seed 001, Sec. 2.2).

    Each sweep visits the joints from the tip towards the base; joint ``c``
    turns by ``theta = acos(e . t)`` about ``r = e x t`` (eqs. 1-2), with
    ``e = unit(p_tip - p_c)`` and ``t = unit(target - p_c)``, which points the
    tip at the target as seen from that joint. The tip error never increases.
    A target on the line of a straight chain is a fixed point (every joint
    already points the tip at it), as it is for the Jacobian methods
    (``J^T e = 0``); triangulation has no such case.

    target: (3,) [length unit], world. rotations: (n, 3, 3) initial pose (default:
    straight rest pose). Returns a :class:`SerialIKResult`.
    """
    target, R = check_target(chain, target, rotations)
    P = chain.positions(R)
    error = float(np.linalg.norm(P[-1] - target))
    errors, cost, updates, sweeps = [error], 0.0, 0, 0
    reached = error <= settings.tolerance
    while not reached and sweeps < settings.max_iterations:
        sweeps += 1
        for k in range(chain.n - 1, -1, -1):
            Q, angle = _turn(P[-1] - P[k], target - P[k], 0.0, _EYE3[1])
            if angle == 0.0:
                continue  # the tip or the target sits at this joint, or it already points right
            P[k + 1 :] = P[k] + (P[k + 1 :] - P[k]) @ Q.T
            R[k:] = Q @ R[k:]
            cost += angle
            updates += 1
            error = float(np.linalg.norm(P[-1] - target))
            if error <= settings.tolerance:
                reached = True
                break
        errors.append(error)
        if abs(errors[-2] - error) < settings.stall_tolerance:
            break
    return SerialIKResult(R, P, error, reached, sweeps, updates, cost, np.array(errors), "ccd")


# ----------------------------------------------------------------------------- triangulation
def triangulation(
    chain: SerialChain,
    target,
    settings: TriangulationSettings = TriangulationSettings(),
    rotations: np.ndarray | None = None,
) -> SerialIKResult:
    """Triangulation: one pass from the base to the tip by the law of cosines (seed 001, Sec. 3).

    At joint i (position ``p_i``), with ``a`` the length of link i, ``b`` the
    length of the rest of the chain when straight and ``c = |target - p_i|``,
    link i is turned about ``a x c`` until its angle to the target vector is

        delta_b = acos((a^2 + c^2 - b^2) / (2 a c))                   (eq. 5)

    i.e. by ``theta = acos(a . c) - delta_b`` (eqs. 6-7), so that link i, the
    straight rest of the chain and the target vector form a triangle. Links
    beyond i turn with it. The special cases of Sec. 3.1 follow from eq. 5
    with its cosine clipped to [-1, 1]: ``c >= a + b`` (out of reach, Sec.
    3.1.3) gives ``delta_b = 0``, link i points at the target; ``c <= b - a``
    (too close) gives ``delta_b = 180 deg``, link i points away from it, as
    the paper does. Where the paper also points away for ``c < a - b`` (a link
    longer than the rest; the target cannot be reached), ``delta_b = 0`` points
    link i at the target instead, which leaves the tip as close to it as
    possible; for the last link (b = 0) this points it exactly at the target.
    Once a triangle has been formed every later joint finds ``c = a + b`` and
    points straight at the target (Sec. 3.1.2). ``delta_b`` is computed as
    ``atan2(sqrt(max(q, 0)), a^2 + c^2 - b^2)`` with Heron's
    ``q = (a + b + c)(b + c - a)(a - b + c)(a + b - c) = 16 area^2``: the same
    angle, exactly 0 or 180 deg when no triangle exists (q <= 0), and without
    the loss of digits of acos near 0 and 180 deg.

    Every reachable target is reached (up to rounding) and unreachable ones
    leave the chain stretched towards them. iterations = 1, joint_updates = n.
    target: (3,) [length unit], world; rotations: (n, 3, 3) initial pose
    (default: straight rest pose).
    """
    target, R = check_target(chain, target, rotations)
    fallback = np.asarray(settings.fallback_axis, dtype=float)
    P = chain.positions(R)
    lengths = chain.lengths
    remaining = np.concatenate([np.cumsum(lengths[::-1])[::-1][1:], [0.0]])  # b for each joint
    errors = [float(np.linalg.norm(P[-1] - target))]
    cost = 0.0
    for i in range(chain.n):
        c_vec = target - P[i]
        c = math.hypot(*c_vec.tolist())
        if c == 0.0:
            continue  # the target is at this joint: any direction of link i is as good
        a, b = lengths[i], remaining[i]
        # eq. (5) as atan2(4 area, 2 a c cos): Heron's 16 area^2 vanishes (clipped at 0) exactly
        # when no triangle can be formed, and unlike acos near 1 it loses no digits at the edges
        q = (a + b + c) * (b + c - a) * (a - b + c) * (a + b - c)
        delta = math.atan2(math.sqrt(q) if q > 0.0 else 0.0, a * a + c * c - b * b)
        Q, theta = _turn(P[i + 1] - P[i], c_vec, delta, fallback)
        P[i + 1 :] = P[i] + (P[i + 1 :] - P[i]) @ Q.T
        R[i:] = Q @ R[i:]
        cost += abs(theta)
    error = float(np.linalg.norm(P[-1] - target))
    errors.append(error)
    reached = error <= settings.tolerance
    return SerialIKResult(R, P, error, reached, 1, chain.n, cost, np.array(errors), "triangulation")
