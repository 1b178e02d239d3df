"""The inverse-kinematics problem (paper IV.C(b), eq. 3) and its records: the solver's
settings, one frame's targets, the result, and :class:`IKProblem`, which builds the
objective and constraint terms from frame and CoM objectives, regularisers and the
mechanism's joints, and the spanning tree the solvers reduce to.
"""

import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import TargetError
from ..maths.rotations import cross, quat_to_matrix
from ..model.constraints import ConstraintSet
from ..model.mechanism import Mechanism
from ..model.parts import JointKind
from ..model.readoff import ActuatorReadout
from ..terms import (
    ActuatorBarrier,
    ActuatorLimits,
    ComObjective,
    ComTask,
    ConstraintCurvature,
    FrameObjective,
    FrameTask,
    JointConstraints,
    MinimalMotion,
    Point,
    Reference,
    Regularization,
    StateRegularizer,
    Targets,
    Term,
    TermKind,
    VelocityBarrier,
)
from .kkt import SpanningTree


@dataclass(frozen=True)
class IKSettings:
    """Tolerances of the SQP solver.

    constraint_tolerance: ``max|C| <= constraint_tolerance * L`` (L: mean joint distance).
    step_tolerance: converged when the constraints hold and the largest component of
    the next step (m or rad) is below it; Newton steps shrink quadratically, so what
    is left after a step of 1e-7 is far below it.
    objective_tolerance: also converged when the next step would lower the
    objective by less than this fraction of it (targets that cannot all be met
    at once: Gauss-Newton converges linearly there).
    primal_regularization: the smallest Levenberg damping of the model Hessian
    (relative to its largest diagonal entry); it shrinks tenfold after a full
    step whose objective decrease matches the model's prediction, and grows after
    a poorly predicted or cut step (a hundredfold when no step was found).
    dual_regularization: the negative diagonal of the constraint block (a compliance of the
    constraints [m^2 per unit objective]); larger for loops their file leaves open
    (:func:`dual_regularization`).
    """

    constraint_tolerance: float = 1e-10
    step_tolerance: float = 1e-7
    max_iterations: int = 50
    max_backtracks: int = 8
    max_step: float = 2.0  # largest step per iteration [rad], times L for positions [m]
    undamped_below: float = 1e-6  # relative damping under which a short step means converged
    objective_tolerance: float = 1e-9  # converged when a step would lower the objective less, relatively
    primal_regularization: float = 1e-12
    dual_regularization: float = 1e-12


@dataclass
class IKTargets:
    """Target values for one frame.

    positions: (K, 3) world [m]; rotations: (K, 3, 3) world, columns = frame axes;
    com: (3,) world [m] or None. K is the number of frame objectives, in order.
    """

    positions: np.ndarray
    rotations: np.ndarray
    com: np.ndarray | None = None


@dataclass
class IKResult:
    """Outcome of one IK solve.

    state (n, 7); actuators (n_act,) read off and unwrapped [rad | m];
    residual: max |C_IK| [m]; position_error (K,) [m] over weighted axes;
    orientation_error (K,) [rad] over weighted axes; com_error [m] (nan without CoM).
    """

    state: np.ndarray
    actuators: np.ndarray
    iterations: int
    converged: bool
    residual: float
    objective: float  # at the last full model evaluation
    position_error: np.ndarray
    orientation_error: np.ndarray
    com_error: float
    message: str = ""


#: Per mechanism (immutable once built), the parts every problem on it shares.
_PARTS: "weakref.WeakKeyDictionary[Mechanism, tuple]" = weakref.WeakKeyDictionary()


def _mechanism_parts(mechanism: Mechanism) -> tuple:
    """The joint constraints, their term, spanning tree, curvature, the motors' read-off
    and limits of ``mechanism``, built on its first problem and shared by the others (a
    retarget builds several problems on one robot: with and without held motors)."""
    parts = _PARTS.get(mechanism)
    if parts is None:
        constraints = ConstraintSet(mechanism, actuated=False)
        parts = _PARTS[mechanism] = (
            constraints,
            JointConstraints(constraints),
            SpanningTree(constraints),
            ActuatorReadout.of(mechanism),
            ConstraintCurvature(constraints),
            ActuatorLimits.of(mechanism),
        )
    return parts


@dataclass
class IKProblem:
    """Everything about an IK solve that does not change from frame to frame.

    Build once per clip; pass per-frame :class:`IKTargets` to :func:`solve_ik`.
    ``frames``, ``com`` and ``regularization`` are compiled into :attr:`terms`
    (frame task, CoM task, regularizers, actuator barriers); ``terms`` adds any
    further :class:`~looprig.core.terms.Term` (built for this mechanism): objectives,
    or equality terms held like the joint constraints (:attr:`constraint_term`;
    all of them: :attr:`equality_terms`).
    """

    mechanism: Mechanism
    frames: Sequence[FrameObjective] = ()
    com: ComObjective | None = None
    regularization: Regularization = field(default_factory=Regularization)
    settings: IKSettings = field(default_factory=IKSettings)
    terms: Sequence[Term] = ()

    def __post_init__(self):
        reg = self.regularization
        if min(reg.state_weight, reg.velocity_weight, reg.velocity_threshold) < 0:
            raise TargetError("regularizer weights and threshold must be non-negative")
        if reg.velocity_weight > 0 and reg.velocity_threshold <= 0:
            raise TargetError("the velocity regularizer needs a positive threshold")
        (
            self.constraints,
            self.constraint_term,
            self.tree,
            self.readout,
            self.constraint_curvature,
            self.actuator_limits,
        ) = _mechanism_parts(self.mechanism)
        self.frame_terms = FrameTask(self.mechanism, self.frames)
        self.com_term = None if self.com is None else ComTask(self.mechanism, self.com)
        free = self.constraints.free_bodies
        compiled: list[Term] = [self.frame_terms] if len(self.frame_terms) else []
        if self.com_term is not None:
            compiled.append(self.com_term)
        if reg.state_mode not in ("exact", "paper"):
            raise TargetError(f"state_mode must be 'exact' or 'paper', got {reg.state_mode!r}")
        if len(free) and reg.state_weight > 0 and reg.state_mode == "paper":
            compiled.append(StateRegularizer(free, reg.state_weight))
        elif len(free) and reg.state_weight > 0:
            compiled.append(
                MinimalMotion(
                    self.readout,
                    free,
                    reg.state_weight,
                    self.constraints.length_scale,
                    floating_bodies(self.mechanism),
                )
            )
        if len(free) and reg.velocity_weight > 0:
            compiled.append(VelocityBarrier(free, reg.velocity_weight, reg.velocity_threshold))
        if len(self.readout.names) and (reg.actuator_weight > 0 or reg.acceleration_weight > 0):
            compiled.append(ActuatorBarrier(self.readout, self.actuator_limits, reg))
        extra = [t for t in self.terms if t.kind != TermKind.EQUALITY]
        self.objective_terms: list[Term] = compiled + extra
        self.equality_terms: list[Term] = [self.constraint_term] + [
            t for t in self.terms if t.kind == TermKind.EQUALITY
        ]
        # translations are measured in mean joint distances L, so a step of L [m] counts as 1 [rad]
        self.step_scale = np.tile(
            np.r_[np.full(3, 1.0 / self.constraints.length_scale), np.ones(3)], len(free)
        )

    def check_targets(self, targets: IKTargets) -> IKTargets:
        """Validate shapes and finiteness; returns float arrays."""
        k = len(self.frame_terms)
        positions = np.asarray(targets.positions, dtype=float).reshape(-1, 3) if k else np.zeros((0, 3))
        rotations = np.asarray(targets.rotations, dtype=float).reshape(-1, 3, 3) if k else np.zeros((0, 3, 3))
        if positions.shape != (k, 3) or rotations.shape != (k, 3, 3):
            raise TargetError(
                f"expected targets for {k} frames ({', '.join(self.frame_terms.names)}), got "
                f"positions {np.shape(targets.positions)} and rotations {np.shape(targets.rotations)}"
            )
        gram = np.swapaxes(rotations, -1, -2) @ rotations  # R^T R = I for rotations ...
        handed = np.einsum("ka,ka->k", cross(rotations[:, :, 0], rotations[:, :, 1]), rotations[:, :, 2])
        valid = np.abs(gram - np.eye(3)).max(initial=0.0) <= 1e-6 and (handed > 0).all()  # ... and det = +1
        if not (valid and np.isfinite(positions).all()):  # NaN fails the tests above too
            for name, p, R, h in zip(self.frame_terms.names, positions, rotations, handed, strict=True):
                if not (np.isfinite(p).all() and np.isfinite(R).all()):
                    raise TargetError(f"target for frame {name!r} is not finite")
                if np.abs(R.T @ R - np.eye(3)).max() > 1e-6 or h <= 0:
                    raise TargetError(f"target rotation for frame {name!r} is not a rotation matrix")
        com = None
        if self.com_term is not None:
            if targets.com is None:
                raise TargetError("the problem has a CoM objective but no CoM target was given")
            com = np.asarray(targets.com, dtype=float).reshape(3)
            if not np.all(np.isfinite(com)):
                raise TargetError("CoM target is not finite")
        return IKTargets(positions, rotations, com)

    def point(self, state, targets: Targets, reference: Reference, R=None) -> Point:
        """The :class:`~looprig.core.terms.Point` of states (B, n, 7) for ``targets``
        and ``reference`` (both batched to B)."""
        state = np.asarray(state, dtype=float)
        R = quat_to_matrix(state[..., 3:]) if R is None else R
        cs = self.constraints
        return Point(state, R, targets, reference, cs.column_of_body, cs.n_vars)

    def report(self, point: Point) -> list[tuple[str, str, str, np.ndarray]]:
        """Every term's errors at ``point``: (term, kind, label with unit, (B,) values)."""
        rows = []
        for term in [*self.objective_terms, *self.equality_terms]:
            for label, values in term.errors(point).items():
                rows.append((term.name, term.kind.value, label, values))
        return rows


def dual_regularization(problem: IKProblem, settings: IKSettings) -> float:
    """The constraint block's negative diagonal ``eps_d`` for ``problem``: a step meets the
    linearised constraints up to ``eps_d`` times their multipliers, the pull of the
    objectives on them [m per metre of target miss, at weight 1].

    ``settings.dual_regularization`` (vanishing: exact constraints), or the mechanism's
    :attr:`~looprig.core.model.mechanism.Mechanism.closure_gap` [m] when larger: loops that
    close no better than that yield by at most the gap under the pull of a target a
    metre away, and a motion that opens them by ``s`` [m per rad], far below the gap
    (ToddlerBot's neck: 3.2e-9 m per rad, rigid in exact arithmetic), is held back by
    only ``s^2 / eps_d`` of the objectives' curvature: its targets are met to ~1e-10.
    """
    return max(settings.dual_regularization, problem.mechanism.closure_gap)


def floating_bodies(mechanism: Mechanism) -> np.ndarray:
    """Indices of the bodies a ``free`` joint carries (floating bases)."""
    return np.array(
        [mechanism.body_index(j.child) for j in mechanism.joints if j.kind == JointKind.FREE], int
    )
