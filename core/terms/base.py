"""The term model: everything the IK minimises or enforces.

A term has a ``name``, a ``unit`` and a ``kind``, and one method,
:meth:`Term.linearize`, that returns its quadratic model at a *batch* of B
states (a :class:`Point`), in the solver's tangent coordinates: 6 values
``[dc [m], dtheta [rad], world]`` per free body, N = 6 n_free columns in body
order. The same call serves the per-frame solver (B = 1) and the whole-clip
solver (B = frames).

* least squares — ``1/2 |r(s)|^2``: residual r (B, m) and Jacobian (B, m, N);
  Gauss-Newton Hessian ``J^T J``.
* barrier — a smooth penalty that is zero inside its region: value, gradient
  and a positive semi-definite Hessian model.
* equality — constraints ``C(s) = 0`` held exactly: residual and Jacobian.
* proximal — ``1/2 |s - s_k|^2_H`` around the current iterate s_k: zero value and
  gradient, a positive semi-definite metric H. It shortens steps without moving
  the answer: iterated from the previous frame's state it converges to the
  solution nearest to it in the metric (iterated Tikhonov), so it resolves
  redundancy and singular directions without biasing reachable targets.
"""

import enum
from dataclasses import dataclass

import numpy as np

from ..errors import TargetError


class TermKind(enum.Enum):
    LEAST_SQUARES = "least squares"
    BARRIER = "barrier"
    EQUALITY = "equality"
    PROXIMAL = "proximal"  # damps the step: zero value and gradient at every iterate


@dataclass
class Reference:
    """What a frame is regularised towards: the previous frame, batched.

    state (B, n, 7) and its rotation matrices R (B, n, 3, 3); actuators (B, A)
    unwrapped [rad | m]; velocities (B, A) [rad/s | m/s] or None (unknown).
    A reference taken from another (:meth:`take`) keeps it as ``origin`` with the
    indices ``frames`` (B,) of its frames there, so terms can compute what depends
    on the reference alone once for the origin.
    """

    state: np.ndarray
    R: np.ndarray
    actuators: np.ndarray
    velocities: np.ndarray | None = None
    origin: "Reference | None" = None
    frames: np.ndarray | None = None

    def take(self, frames) -> "Reference":
        """The reference of some frames (an index or mask over B)."""
        velocities = None if self.velocities is None else self.velocities[frames]
        index = np.arange(len(self.state))[frames]
        origin, index = (self, index) if self.origin is None else (self.origin, self.frames[index])
        return Reference(
            self.state[frames], self.R[frames], self.actuators[frames], velocities, origin, index
        )


@dataclass
class Targets:
    """Per-frame targets, batched: positions (B, K, 3) [m] world; rotations
    (B, K, 3, 3) world, columns = the frame's axes; com (B, 3) [m] or None."""

    positions: np.ndarray
    rotations: np.ndarray
    com: np.ndarray | None = None

    def take(self, frames) -> "Targets":
        """The targets of some frames (an index or mask over B)."""
        com = None if self.com is None else self.com[frames]
        return Targets(self.positions[frames], self.rotations[frames], com)


@dataclass
class Point:
    """Where terms are linearised: B states with what they are measured against.

    state (B, n, 7) ``[c, q]``; R (B, n, 3, 3) its rotation matrices;
    column_of_body (n,) the first tangent column of each body (-1: grounded);
    n_vars N. ``actuators`` caches the read-off (B, A) once a term asked for it.
    """

    state: np.ndarray
    R: np.ndarray
    targets: Targets
    reference: Reference
    column_of_body: np.ndarray
    n_vars: int
    actuators: np.ndarray | None = None

    @property
    def batch(self) -> int:
        return self.state.shape[0]


@dataclass
class Linearization:
    """One term's model at a :class:`Point`.

    value (B,); gradient (B, N). The Hessian model (B, N, N) is the sum of three
    optional parts, kept apart so a whole problem's model is assembled with one
    product (:func:`~looprig.core.solvers.step.build_step`): ``hessian`` an explicit matrix,
    ``factor`` (B, r, N) contributing ``factor^T factor``, ``diagonal`` (B, N);
    :meth:`hessian_matrix` sums them. Equality terms have none.
    residual (B, m) and jacobian (B, m, N): the least-squares residual, the
    constraint residual, or the inner map of a barrier (its Hessian model is then
    ``J^T diag(curvature) J`` with curvature (B, m)). columns (k,): the columns of N
    that ``jacobian`` and ``factor`` hold when they hold only those, (B, m, k) (the
    others are zero: a tracked frame's Jacobian has its body's six); None: all N.
    """

    value: np.ndarray
    gradient: np.ndarray | None
    hessian: np.ndarray | None = None
    residual: np.ndarray | None = None
    jacobian: np.ndarray | None = None
    curvature: np.ndarray | None = None
    factor: np.ndarray | None = None
    diagonal: np.ndarray | None = None
    columns: np.ndarray | None = None

    def full(self, matrix: np.ndarray) -> np.ndarray:
        """``jacobian`` or ``factor`` (B, m, k) with all N columns (B, m, N)."""
        if self.columns is None:
            return matrix
        return on_all_columns(matrix, self.columns, self.gradient.shape[-1])

    def hessian_matrix(self) -> np.ndarray | None:
        """The whole Hessian model (B, N, N), or None (no derivatives, equality terms)."""
        parts = [self.hessian] if self.hessian is not None else []
        if self.factor is not None:
            factor = self.full(self.factor)
            parts.append(np.swapaxes(factor, -1, -2) @ factor)
        if self.diagonal is not None:
            parts.append(np.einsum("bn,nk->bnk", self.diagonal, np.eye(self.diagonal.shape[-1])))
        return sum(parts[1:], parts[0]) if parts else None


class Term:
    """Base of every term. Subclasses set ``name``, ``unit`` and ``kind`` and
    implement :meth:`linearize` (and :meth:`errors` for the report)."""

    name: str = ""
    unit: str = ""
    kind: TermKind = TermKind.LEAST_SQUARES

    def linearize(self, point: Point, derivatives: bool = True) -> Linearization:
        """The term's model at ``point``; ``derivatives=False`` fills the value only
        (gradient and hessian None), for line searches."""
        raise NotImplementedError

    def errors(self, point: Point) -> dict[str, np.ndarray]:
        """What this term measures, per frame: label (with unit) -> (B,) values.
        By default the term's value, in the units of its objective."""
        return {f"{self.name} value": self.linearize(point, derivatives=False).value}


class LeastSquaresTerm(Term):
    """``1/2 |r|^2`` from :meth:`residual`; Gauss-Newton Hessian ``J^T J``."""

    kind = TermKind.LEAST_SQUARES

    def residual(self, point: Point, jacobian: bool = True):
        """r (B, m) and, if asked, J = dr/ds (B, m, N); else (r, None)."""
        raise NotImplementedError

    def compact_residual(self, point: Point, jacobian: bool = True):
        """(r, J, columns): :meth:`residual`, with J (B, m, k) on ``columns`` (k,) of N
        alone where the term knows J is zero elsewhere; columns None: J has all N."""
        r, J = self.residual(point, jacobian)
        return r, J, None

    def linearize(self, point: Point, derivatives: bool = True) -> Linearization:
        r, J, columns = self.compact_residual(point, jacobian=derivatives)
        value = 0.5 * np.einsum("bm,bm->b", r, r)
        if not derivatives:
            return Linearization(value, None, None, r)
        gradient = (r[:, None, :] @ J)[:, 0]
        if columns is not None:
            gradient = on_all_columns(gradient, columns, point.n_vars)
        return Linearization(value, gradient, None, r, J, factor=J, columns=columns)


def on_all_columns(values: np.ndarray, columns: np.ndarray, n: int) -> np.ndarray:
    """``values`` (..., k) on ``columns`` (k,) of n, as (..., n) with zeros elsewhere."""
    out = np.zeros(values.shape[:-1] + (n,))
    out[..., columns] = values
    return out


def motor_units(readout, length_scale: float, motors=slice(None)) -> np.ndarray:
    """Per motor (A,), the factor that makes its value dimensionless: 1 for an angle
    [rad], 1/L for a displacement [m] (L: the mechanism's mean joint distance)."""
    return np.where(readout.is_angle[motors], 1.0, 1.0 / length_scale)


def weights3(value, what: str) -> np.ndarray:
    """A (3,) weight vector from a scalar or 3 values, finite and non-negative."""
    w = np.broadcast_to(np.asarray(value, dtype=float), (3,)).copy()
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise TargetError(f"{what}: weights must be finite and non-negative, got {w.tolist()}")
    return w
