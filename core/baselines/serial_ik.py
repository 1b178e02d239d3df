"""Serial-chain IK baselines: CCD, triangulation, Jacobian transpose, pseudo-inverse, DLS.

One module although long: five baselines of one benchmark share the chain model and the result record.

Reference solvers for position IK of the tip of an open chain of rigid links
joined by unconstrained ball joints in 3-D, the setting of Müller-Cajar &
Mukundan (2007), against which looprig's state-based IK can be compared on the
same chain (see :mod:`looprig.core.library.serial`). numpy only.

Conventions
-----------
* Lengths, positions and tolerances are in the caller's length unit (the
  triangulation paper's "units"; looprig reads them as metres). Angles in rad.
  Everything is in world coordinates.
* A pose of the chain is the world rotation of every link from its rest
  orientation, ``rotations (n, 3, 3)``; at rest (all identity) the chain lies
  straight from ``base`` along ``direction``. Link ``k`` spans
  ``positions[k] -> positions[k + 1] = positions[k] + lengths[k] rotations[k] direction``.
* Joint ``k`` is the ball joint at ``positions[k]`` between link ``k - 1`` (the
  base for ``k = 0``) and link ``k``; its relative rotation is
  ``rotations[k - 1]^T rotations[k]``. Turning joint ``k`` turns links ``k..n-1``
  rigidly about ``positions[k]``.
* An *iteration* is what each paper counts as one: a sweep over all joints for
  CCD, one Jacobian step for the Jacobian methods, the single pass of
  triangulation. ``joint_updates`` counts joint rotations (triangulation: n).

Sources
-------
* CCD: Müller-Cajar & Mukundan 2007 (seed 001), Sec. 2.2, eqs. (1)-(2); also
  the Baxter slides in seed 002 ("Cyclic Coordinate Descent").
* Triangulation: seed 001, Sec. 3.1 (eqs. 5-7, special cases 3.1.1-3.1.3) and
  Algorithm 1 (unconstrained joints).
* Jacobian transpose and pseudo-inverse: seed 002 (Baxter, "Jacobian inverse
  method", "Jacobian transpose", ``dq = h J^T dx``).
* Damped least squares: seed 004 (Toussaint), slides 27 and 33:
  ``J# = J^T (J J^T + lambda I)^-1``, the singularity-robust pseudo-inverse.
* Rotation cost: seed 001, eq. (3), ``C = sum_i theta_i``.
"""

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..errors import MechanismError, TargetError
from ..maths.rotations import matrix_from_rotvec, rotation_angle, skew, unit_axis_rotation

_EYE3 = np.eye(3)
#: Sine of the angle below which two directions count as parallel.
_PARALLEL = 1e-12


# ----------------------------------------------------------------------------- chain
@dataclass(frozen=True)
class SerialChain:
    """A serial chain of links joined by ball joints, the first one at ``base``.

    lengths: (n,) link lengths, positive [length unit], from the base outwards.
    base: (3,) world position of the first joint [length unit].
    direction: (3,) world direction of the straight rest pose (normalised here).
    """

    lengths: np.ndarray
    base: np.ndarray = field(default_factory=lambda: np.zeros(3))
    direction: np.ndarray = field(default_factory=lambda: np.array([0.0, 1.0, 0.0]))

    def __post_init__(self):
        lengths = np.asarray(self.lengths, dtype=float).reshape(-1)
        if lengths.size == 0 or not np.all(np.isfinite(lengths)) or np.any(lengths <= 0):
            raise MechanismError(f"serial chain: link lengths must be positive and finite, got {lengths}")
        base = np.asarray(self.base, dtype=float).reshape(-1)
        direction = np.asarray(self.direction, dtype=float).reshape(-1)
        if base.shape != (3,) or not np.all(np.isfinite(base)):
            raise MechanismError(f"serial chain: base must be a finite 3-vector, got {self.base}")
        norm = np.linalg.norm(direction) if direction.shape == (3,) else 0.0
        if not np.isfinite(norm) or norm < 1e-12:
            raise MechanismError(f"serial chain: direction must be a non-zero 3-vector, got {self.direction}")
        object.__setattr__(self, "lengths", lengths)
        object.__setattr__(self, "base", base)
        object.__setattr__(self, "direction", direction / norm)

    @property
    def n(self) -> int:
        """Number of links (= number of ball joints)."""
        return len(self.lengths)

    @property
    def total_length(self) -> float:
        """Length of the straight chain [length unit]."""
        return float(self.lengths.sum())

    @property
    def reach(self) -> tuple[float, float]:
        """Inner and outer radius [length unit] of the tip's workspace about ``base``.

        With free ball joints the tip reaches exactly the spherical shell
        ``max(0, 2 max(l) - sum(l)) <= |tip - base| <= sum(l)``: a closed polygon
        with sides l and |tip - base| exists iff no side exceeds the sum of the others.
        """
        total = self.total_length
        return max(0.0, 2.0 * float(self.lengths.max()) - total), total

    def is_reachable(self, target) -> bool:
        """Whether the tip can be placed exactly at ``target`` (3,) [length unit]."""
        inner, outer = self.reach
        distance = float(np.linalg.norm(np.asarray(target, dtype=float) - self.base))
        return inner <= distance <= outer

    def closest_distance(self, target) -> float:
        """Smallest possible tip-to-target distance [length unit] (0 when reachable)."""
        inner, outer = self.reach
        distance = float(np.linalg.norm(np.asarray(target, dtype=float) - self.base))
        return max(0.0, distance - outer, inner - distance)

    def rest_rotations(self) -> np.ndarray:
        """(n, 3, 3) identity rotations: the straight rest pose."""
        return np.repeat(_EYE3[None], self.n, axis=0)

    def positions(self, rotations: np.ndarray) -> np.ndarray:
        """Forward kinematics: joint positions and tip (n + 1, 3) [length unit], world.

        rotations: (n, 3, 3) world rotation of each link from its rest orientation.
        """
        links = self.lengths[:, None] * (np.asarray(rotations) @ self.direction)  # (n, 3)
        return np.vstack([self.base, self.base + np.cumsum(links, axis=0)])


# ----------------------------------------------------------------------------- results
@dataclass
class SerialIKResult:
    """Outcome of one serial-chain IK solve.

    rotations: (n, 3, 3) world rotation of each link from its rest orientation.
    positions: (n + 1, 3) joint positions, tip last [length unit], world.
    error: |tip - target| [length unit]. reached: error <= the method's tolerance.
    iterations: sweeps (CCD), steps (Jacobian methods) or 1 (triangulation).
    joint_updates: number of single-joint rotations applied (CCD, triangulation)
    or joint steps (n per Jacobian step).
    rotation_cost: the sum of the absolute angles of all joint rotations applied
    on the way [rad] (seed 001, eq. 3); nan where the method does not track it.
    errors: (iterations + 1,) tip error before the first and after each iteration.
    details: the underlying solver's own result where there is one (looprig's
    ``IKResult``), else None.
    """

    rotations: np.ndarray
    positions: np.ndarray
    error: float
    reached: bool
    iterations: int
    joint_updates: int
    rotation_cost: float
    errors: np.ndarray
    method: str = ""
    details: object = None

    @property
    def tip(self) -> np.ndarray:
        """(3,) tip position [length unit], world."""
        return self.positions[-1]

    @property
    def joint_rotations(self) -> np.ndarray:
        """(n, 3, 3) relative rotation of each ball joint, ``R_{k-1}^T R_k`` (R_{-1} = I)."""
        parents = np.concatenate([_EYE3[None], self.rotations[:-1]])
        return np.swapaxes(parents, -1, -2) @ self.rotations

    @property
    def joint_angles(self) -> np.ndarray:
        """(n,) rotation angle of each ball joint away from the rest pose [rad]."""
        return rotation_angle(self.joint_rotations)


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


def _check(chain: SerialChain, target, rotations) -> tuple[np.ndarray, np.ndarray]:
    target = np.asarray(target, dtype=float).reshape(-1)
    if target.shape != (3,) or not np.all(np.isfinite(target)):
        raise TargetError(f"serial-chain target must be a finite 3-vector, got {target}")
    if rotations is None:
        return target, chain.rest_rotations()
    rotations = np.array(rotations, dtype=float)
    if rotations.shape != (chain.n, 3, 3) or not np.all(np.isfinite(rotations)):
        raise TargetError(
            f"initial rotations must be finite with shape ({chain.n}, 3, 3), got {rotations.shape}"
        )
    return target, rotations


# ----------------------------------------------------------------------------- settings
@dataclass(frozen=True)
class CCDSettings:
    """Cyclic coordinate descent.

    max_iterations: sweeps over all joints before giving up (seed 001, Sec. 4.2:
    "If it takes CCD more than 99 iterations to reach the target the algorithm aborts").
    tolerance: the target counts as reached once the tip is this close, checked
    after every joint rotation [length unit] (seed 001: 0.5 units).
    stall_tolerance: stop ("a stable position", seed 001 Sec. 4.2) when a sweep
    changes the tip error by less than this [length unit].
    """

    max_iterations: int = 99
    tolerance: float = 1e-6
    stall_tolerance: float = 1e-10


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


@dataclass(frozen=True)
class JacobianSettings:
    """Iterative Jacobian methods (transpose, pseudo-inverse, damped least squares).

    max_iterations: Jacobian steps before giving up (99, as for CCD).
    tolerance: reached when the tip is this close [length unit].
    stall_tolerance: stop when a step changes the tip error by less than this [length unit].
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

    max_iterations: int = 99
    tolerance: float = 1e-6
    stall_tolerance: float = 1e-10
    max_rotation: float = 0.5
    backtracks: int = 8
    damping: float = 0.025
    rcond: float = 1e-6


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
    target, R = _check(chain, target, rotations)
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
    target, R = _check(chain, target, rotations)
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
    target, R = _check(chain, target, rotations)
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


#: The baselines by name, all with the signature ``(chain, target, settings, rotations)``.
METHODS = {
    "ccd": ccd,
    "triangulation": triangulation,
    "jacobian_transpose": jacobian_transpose,
    "pseudo_inverse": pseudo_inverse,
    "damped_least_squares": damped_least_squares,
}
