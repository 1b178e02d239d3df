"""The SQP subproblem at a batch of states: every term linearised (the objective's
Hessian model kept in the parts the terms made), the constraints' Jacobian in the
forms the KKT solves use, the KKT factorisation, and the Lagrangian's curvature
for competing objectives. Shared by the per-frame solver (:mod:`.ik`) and the
whole-clip solver (:mod:`.clip`); ``problem`` is an :class:`~looprig.core.solvers.problem.IKProblem`.
"""

import dataclasses
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from ..model.primitives import JacobianBlocks
from ..terms import Point
from .kkt import DENSE_KKT_ROWS, DenseKKT, ReducedKKT


@dataclass
class HessianModel:
    """The objective's Gauss-Newton model (B, N, N), kept as the parts the terms made:
    ``dense`` (B, N, N) or None, ``factors`` each a pair (F (B, r, k), columns (k,)
    of N, or None for all N) contributing ``F^T F`` on those columns, ``diagonal``
    (B, N). Products with it never form the matrix; a factor that holds only the
    columns of the bodies its term sees (a tracked frame's) costs in proportion to them.
    """

    dense: np.ndarray | None
    factors: list[tuple[np.ndarray, np.ndarray | None]]
    diagonal: np.ndarray

    def times(self, M: np.ndarray) -> np.ndarray:
        """``H M`` for M (B, N, k): (B, N, k)."""
        out = self.diagonal[..., None] * M
        for F, cols in self.factors:
            if cols is None:
                out += np.swapaxes(F, 1, 2) @ (F @ M)
            else:
                out[:, cols] += np.swapaxes(F, 1, 2) @ (F @ M[:, cols])
        if self.dense is not None:
            out += self.dense @ M
        return out

    def project(self, Z: np.ndarray, shift: np.ndarray) -> np.ndarray:
        """``Z^T (H + shift I) Z`` for Z (B, N, D) and shift (B,): (B, D, D)."""
        Zt = np.swapaxes(Z, 1, 2)
        out = Zt @ ((self.diagonal + shift[:, None])[..., None] * Z)
        for F, cols in self.factors:
            FZ = F @ (Z if cols is None else Z[:, cols])
            out += np.swapaxes(FZ, 1, 2) @ FZ
        if self.dense is not None:
            out += Zt @ (self.dense @ Z)
        return out

    def curvature(self, v: np.ndarray) -> np.ndarray:
        """``v^T H v`` per frame for v (B, N): (B,)."""
        out = np.einsum("bn,bn,bn->b", v, self.diagonal, v)
        for F, cols in self.factors:
            Fv = (F @ (v if cols is None else v[:, cols])[..., None])[..., 0]
            out += np.einsum("br,br->b", Fv, Fv)
        if self.dense is not None:
            out += np.einsum("bn,bnk,bk->b", v, self.dense, v)
        return out

    def scale(self) -> np.ndarray:
        """max(|diag H|, 1) per frame (B,): the unit of the relative Levenberg damping."""
        diag = self.diagonal.copy()
        for F, cols in self.factors:
            diag[:, slice(None) if cols is None else cols] += np.einsum("brn,brn->bn", F, F)
        if self.dense is not None:
            diag += np.diagonal(self.dense, axis1=1, axis2=2)
        return np.maximum(np.abs(diag).max(-1, initial=0.0), 1.0)

    def matrix(self) -> np.ndarray:
        """The model as a dense matrix (B, N, N)."""
        B, N = self.diagonal.shape
        out = np.zeros((B, N, N)) if self.dense is None else self.dense.copy()
        out[:, np.arange(N), np.arange(N)] += self.diagonal
        for F, cols in self.factors:
            if cols is None:
                out += np.swapaxes(F, 1, 2) @ F
            else:
                out[:, cols[:, None], cols] += np.swapaxes(F, 1, 2) @ F
        return out

    def take(self, frames: np.ndarray) -> "HessianModel":
        """The model of some frames (an index array over B)."""
        dense = None if self.dense is None else self.dense[frames]
        return HessianModel(dense, [(F[frames], cols) for F, cols in self.factors], self.diagonal[frames])


@dataclass
class LinearizedStep:
    """The SQP subproblem at a batch of B states: the Gauss-Newton model of the
    objective and the linearised constraints.

    value (B,); gradient (B, N); model: the Hessian model (:class:`HessianModel`);
    constraint (B, m) [m]: the joint constraints' rows, then any further equality
    terms'. The joint constraints' Jacobian is kept in the blocks it is made of
    (evaluated with the residual, or when a KKT system first needs it) and assembled
    on demand, in the forms the KKT solves use.
    """

    point: Point
    value: np.ndarray
    gradient: np.ndarray | None
    model: HessianModel | None
    constraint: np.ndarray
    problem: object = None  # the IKProblem (its constraints and spanning tree)
    extra_jacobians: list = field(default_factory=list)  # (B, h, N) of further equality terms
    jacobian_blocks: JacobianBlocks | None = None  # the joint constraints', once evaluated

    def take(self, frames: np.ndarray) -> "LinearizedStep":
        """The subproblem of some frames (an index array over B); Jacobians not yet
        evaluated stay lazy."""
        p = self.point
        point = dataclasses.replace(
            p,
            state=p.state[frames],
            R=p.R[frames],
            targets=p.targets.take(frames),
            reference=p.reference.take(frames),
            actuators=None if p.actuators is None else p.actuators[frames],
        )
        return LinearizedStep(
            point,
            self.value[frames],
            None if self.gradient is None else self.gradient[frames],
            None if self.model is None else self.model.take(frames),
            self.constraint[frames],
            self.problem,
            [J[frames] for J in self.extra_jacobians],
        )

    @property
    def violation(self) -> np.ndarray:
        """max |C| per frame (B,) [m]."""
        return np.abs(self.constraint).max(axis=-1, initial=0.0)

    @property
    def hessian(self) -> np.ndarray:
        """The model Hessian as a dense matrix (B, N, N)."""
        return self.model.matrix()

    @property
    def blocks(self) -> JacobianBlocks:
        """The joint constraints' Jacobian blocks (:meth:`.ConstraintSet.evaluate`)."""
        if self.jacobian_blocks is None:
            cs, p = self.problem.constraints, self.point
            self.jacobian_blocks = cs.evaluate(p.state, jacobian=True, R=p.R)[1]
        return self.jacobian_blocks

    @cached_property
    def constraint_jacobian(self) -> np.ndarray:
        """The whole constraint Jacobian, dense (B, m, N)."""
        dense = self.problem.constraints.dense(self.blocks, (self.point.batch,))
        return np.concatenate([dense, *self.extra_jacobians], axis=1) if self.extra_jacobians else dense

    @cached_property
    def row_blocks(self) -> np.ndarray:
        """The joint constraints' rows on their two bodies (B, m_cs, 2, 6)
        (:meth:`~looprig.core.model.constraints.ConstraintSet.row_blocks`)."""
        return self.problem.constraints.row_blocks(self.blocks, self.point.batch)

    @cached_property
    def loop_jacobian(self) -> np.ndarray:
        """The dense rows (B, m_loop, N) outside the problem's spanning tree, then the
        further equality terms'."""
        cs, rows = self.problem.constraints, self.problem.tree.loop_rows
        loop = cs.dense(self.blocks, (self.point.batch,), rows)
        return np.concatenate([loop, *self.extra_jacobians], axis=1) if self.extra_jacobians else loop


def build_step(
    problem, point: Point, derivatives: bool = True, constraint_jacobian: bool = True
) -> LinearizedStep:
    """Linearise every term of ``problem`` at ``point`` and sum the objective terms.

    The joint constraints are evaluated directly, their Jacobian with them if
    ``constraint_jacobian`` (and ``derivatives``), else when a KKT system first needs
    it (:attr:`LinearizedStep.blocks`: an iterate that only certifies convergence
    never does); further equality terms linearise."""
    B, N = point.batch, point.n_vars
    value = np.zeros(B)
    gradient = model = None
    dense, factors, diagonal = None, [], np.zeros((B, N))
    if derivatives:
        gradient = np.zeros((B, N))
    for term in problem.objective_terms:
        lin = term.linearize(point, derivatives)
        value += lin.value
        if derivatives:
            gradient += lin.gradient
            if lin.hessian is not None:
                dense = lin.hessian if dense is None else dense + lin.hessian
            if lin.factor is not None:
                factors.append((lin.factor, lin.columns))
            if lin.diagonal is not None:
                diagonal += lin.diagonal
    if derivatives:
        model = HessianModel(dense, factors, diagonal)
    cs = problem.constraints
    residual, blocks = cs.evaluate(point.state, jacobian=derivatives and constraint_jacobian, R=point.R)
    extras = [term.linearize(point, derivatives) for term in problem.equality_terms[1:]]
    if extras:
        residual = np.concatenate([residual, *[e.residual for e in extras]], axis=-1)
    if not derivatives:
        return LinearizedStep(point, value, None, None, residual)
    return LinearizedStep(
        point, value, gradient, model, residual, problem, [e.jacobian for e in extras], blocks
    )


def step_kkt(problem, step: LinearizedStep, damping, dual_regularization: float):
    """The factorised KKT system of ``step`` (built with derivatives): whole for one
    small frame, else in the tree's null space (:mod:`~looprig.core.solvers.kkt`); damping (B,).
    Its ``solve(g, c)`` gives the steps (B, N)."""
    B, N = step.gradient.shape
    if B == 1 and N + step.constraint.shape[1] <= DENSE_KKT_ROWS:
        return DenseKKT(step.hessian, step.constraint_jacobian, damping, dual_regularization)
    return ReducedKKT(
        problem.tree,
        step.point.R,
        step.model,
        step.row_blocks,
        step.loop_jacobian,
        damping,
        dual_regularization,
    )


def qp_multipliers(step: LinearizedStep, d: np.ndarray) -> np.ndarray:
    """Least-squares multipliers (B, m) of the QP step d (B, N) taken from ``step``:
    ``g + H d + A^T lam ~ 0``."""
    A = step.constraint_jacobian
    u = step.gradient + step.model.times(d[..., None])[..., 0]
    gram = A @ np.swapaxes(A, 1, 2)
    trace = np.einsum("bii->b", gram)
    gram[:, np.arange(gram.shape[1]), np.arange(gram.shape[1])] += 1e-12 * np.maximum(trace, 1.0)[:, None]
    return -np.linalg.solve(gram, A @ u[..., None])[..., 0]


def with_constraint_curvature(problem, model: HessianModel, point: Point, lam: np.ndarray) -> HessianModel:
    """``model`` plus the joint constraints' curvature ``sum lam_j nabla^2 C_j`` at
    ``point``, for multipliers lam (B, m) (rows past the joint constraints' ignored;
    frames with zero multipliers keep ``model``, which is returned itself when all
    have): the Hessian of the Lagrangian, where
    Gauss-Newton on the objective alone converges only linearly (objectives held
    apart by constraint forces)."""
    B, N = model.diagonal.shape
    rows = problem.constraints.n_rows
    use = np.flatnonzero(np.any(lam[:, :rows] != 0.0, axis=1))
    if not len(use):
        return model
    curvature = np.zeros((B, N, N))
    curvature[use] = problem.constraint_curvature(point.state[use], point.R[use], lam[use, :rows])
    return HessianModel(
        curvature if model.dense is None else model.dense + curvature, model.factors, model.diagonal
    )
