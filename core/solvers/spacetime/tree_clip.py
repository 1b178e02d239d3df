"""The space-time interior point's kinematics in tree coordinates, frame axis last.

:func:`~.solve.solve_spacetime` steps in the spanning tree's joint coordinates. On a
robot with no loop rows (every joint a tree joint: a serial arm, the Boxer), whose
objective :mod:`..tree` supports (frame targets), each iterate is kept
here as the bodies' rotations (n, 3, 3, F) and centres (n, 3, F) and moved, evaluated
and linearised by :class:`~looprig.core.solvers.tree.TreeKinematics`'s kernels, every numpy
call over the F frames at once, instead of through the body states (F, n, 7), the
null-space joint basis and the terms' maximal-coordinate Jacobians: the same
quantities in the same coordinates (the tests compare them to 1e-12), at a fraction of
the per-frame cost. A motor is a tree joint then, so its value moves by exactly its
coordinate's step.
"""

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ...maths.rotations import quat_from_matrix
from ...terms import Targets
from ..joint_space import JointScrews
from ..tree import kinematics, turn, unsupported


def applies(problem) -> bool:
    """Whether :class:`TreeClip` serves ``problem`` (an :class:`~looprig.core.solvers.problem.IKProblem`):
    no loop rows and no further equality rows (held motors), frame targets only
    (:func:`~looprig.core.solvers.tree.unsupported` admits the rest)."""
    return (
        not len(problem.tree.loop_rows)
        and len(problem.equality_terms) == 1
        and problem.com_term is None
        and len(problem.frame_terms) > 0
        and unsupported(problem) is None
    )


@dataclass
class _Frames:
    """An iterate's body states as the terms read them: state (F, n, 7), R (F, n, 3, 3),
    the targets; for :func:`~.linearization.objective_curvature`."""

    R_last: np.ndarray
    c_last: np.ndarray
    targets: Targets

    @cached_property
    def state(self) -> np.ndarray:
        q = quat_from_matrix(self.R_last.transpose(3, 0, 1, 2))
        return np.concatenate([self.c_last.transpose(2, 0, 1), q], axis=-1)

    @cached_property
    def R(self) -> np.ndarray:
        return np.ascontiguousarray(self.R_last.transpose(3, 0, 1, 2))


@dataclass
class TreePoint:
    """One iterate of the whole clip: rotations R (n, 3, 3, F), centres c (n, 3, F) [m];
    value (F,): each frame's tracking cost ``1/2 |r|^2``; residual (m_t, F): the frame
    tasks' weighted rows; screws: the coordinates' screws there
    (:meth:`~looprig.core.solvers.tree.TreeKinematics.screws`), once linearised; constraint
    (F, 0): no loop rows."""

    R: np.ndarray
    c: np.ndarray
    value: np.ndarray
    residual: np.ndarray
    point: _Frames
    screws: tuple | None = None

    rows: int = 0  # the joint rows the other path's iterate carries (all met by the tree)

    @property
    def constraint(self) -> np.ndarray:
        """(F, rows) zeros: no loop row is open (the joints' residual is measured at the end)."""
        return np.zeros((len(self.value), self.rows))


class TreeClip:
    """The clip's kinematics in tree coordinates for :func:`applies` problems: targets
    positions (F, K, 3) [m] and rotations (F, K, 3, 3) of the problem's frame tasks."""

    def __init__(self, problem, targets: Targets):
        self.model = kinematics(problem)
        self.rows = problem.tree.cs_rows
        self.targets = targets
        self.positions = np.ascontiguousarray(np.asarray(targets.positions).transpose(1, 2, 0))
        self.axes = np.ascontiguousarray(
            np.swapaxes(np.asarray(targets.rotations), -1, -2).transpose(1, 2, 3, 0)
        )

    def _point(self, R: np.ndarray, c: np.ndarray) -> TreePoint:
        r, _ = self.model.task_rows(R, c, None, self.positions, self.axes)
        return TreePoint(R, c, 0.5 * (r * r).sum(0), r, _Frames(R, c, self.targets), rows=self.rows)

    def evaluate(self, states: np.ndarray) -> TreePoint:
        """The iterate at body states (F, n, 7)."""
        return self._point(*self.model.to_frames(states))

    def moved(self, at: TreePoint, step: np.ndarray) -> TreePoint:
        """The iterate ``at`` moved by joint coordinate steps (F, D), every tree joint
        turned or slid exactly (:meth:`~looprig.core.solvers.tree.TreeKinematics.retract`)."""
        R, c = at.R.copy(), at.c.copy()
        self.model.retract(R, c, self._screws(at), np.ascontiguousarray(step.T))
        return self._point(R, c)

    def _screws(self, at: TreePoint):
        if at.screws is None:
            at.screws = self.model.screws(at.R, at.c)
        return at.screws

    def curvature(self, at: TreePoint, order: JointScrews) -> np.ndarray:
        """The tracking's second-order part in the joint coordinates (F, D, D) that
        Gauss-Newton leaves out: ``sum_k a_k . d2 x_k`` over the frames' points and axes
        x_k under the objective's gradient a_k with respect to them, ``a . (omega_c1 x
        J_c2(x))`` for c1 outer to c2 (``order``: :class:`~looprig.core.solvers.joint_space.JointScrews`,
        whose :meth:`~looprig.core.solvers.joint_space.JointScrews.curvature` this is, frame axis last)."""
        m, screws = self.model, self._screws(at)
        body = m.frame_body
        Rb = at.R[body]
        p = turn(Rb, m.frame_point) + at.c[body]  # (K, 3, F)
        pairs = [(m.sqrt_position[:, :, None] ** 2 * (p - self.positions), m.point_jacobian(screws, body, p))]
        for axis in m.task_axes:
            u = turn(Rb, m.frame_axes[:, axis])
            pull = m.sqrt_orientation[:, axis, None, None] ** 2 * (u - self.axes[:, axis])
            pairs.append((pull, m.direction_jacobian(screws, body, u)))
        X = 0.0
        for force, J in pairs:  # a x omega_c = -(omega_c x a), on the coordinates that move x
            M = -m.direction_jacobian(screws, body, force)  # (K, 3, D, F)
            X = X + (M[:, :, :, None] * J[:, :, None]).sum((0, 1))  # (D, D, F)
        X = X.transpose(2, 0, 1)
        XT = np.swapaxes(X, 1, 2)
        return np.where(order.symmetric, 0.5 * (X + XT), np.where(order.outer_first, X, XT))

    def linearized(self, at: TreePoint):
        """At ``at``: the tracking's Gauss-Newton Hessian (F, D, D) and gradient (F, D) in
        the joint coordinates, and the motors' rates per coordinate (F, A, D)."""
        _, J = self.model.task_rows(at.R, at.c, self._screws(at), self.positions, self.axes)
        J = np.ascontiguousarray(J.transpose(2, 0, 1))  # (F, m_t, D)
        Jt = np.swapaxes(J, 1, 2)
        gradient = (Jt @ at.residual.T[..., None])[..., 0]
        rates = np.ascontiguousarray(self.model.motor_rows(at.R, at.screws).transpose(2, 0, 1))
        return Jt @ J, gradient, rates
