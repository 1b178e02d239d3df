"""Every frame of a clip linearised in the spanning tree's joint coordinates, the
interior point's Newton model (F frames, D coordinates, dof motions, A motors): the
step ``theta = q0 + W u`` (F, D) that keeps the loops closed to first order, Newton's
Hessian H (F, dof, dof) (Gauss-Newton's plus the tracked points' and axes' curvature,
:func:`objective_curvature`, and the loops' curvature times their multipliers), made
convex frame by frame, its gradient g (F, dof), and the motors ``b + B u`` (F, A)
[rad | m] that the limit rows read.
"""

from dataclasses import dataclass

import numpy as np

from ..joint_space import JointScrews
from ..step import with_constraint_curvature
from .tree_clip import TreeClip


@dataclass
class Linearization:
    """Every frame of a clip linearised in joint coordinates (F frames, D coordinates,
    dof motions, A motors): the step ``theta = q0 + W u`` keeps the loops closed to
    first order; H (F, dof, dof) and g (F, dof): the objective's Newton model in u;
    motors ``b + B u`` (F, A) [rad | m]; ``at``: the terms' linearisation."""

    at: object
    Z: np.ndarray  # (F, N, D) joint basis
    W: np.ndarray  # (F, D, dof)
    q0: np.ndarray  # (F, D)
    H: np.ndarray
    g: np.ndarray
    b: np.ndarray
    B: np.ndarray
    PZ: np.ndarray  # (F, A, D) the motors' rates per coordinate
    H_theta: np.ndarray  # (F, D, D)
    g_theta: np.ndarray  # (F, D)
    restore: np.ndarray | None  # (F, D, m) the loop rows' pseudo-inverse: q0 = -restore C
    frozen: np.ndarray | None  # (F,) bool

    def corrected(self, values: np.ndarray, gap: np.ndarray, alpha: float):
        """The step's loop restoration q0 (F, D), its gradient g (F, dof) and motors b
        (F, A) for the loops' residual ``gap`` (F, m) at the end of the step cut to
        ``alpha`` added to ``alpha`` times the start's: a second-order correction (Nocedal &
        Wright, 2nd ed., 18.3; IPOPT's), the same Jacobian and so the same Newton matrix."""
        q0 = alpha * self.q0 - (self.restore @ gap[..., None])[..., 0]
        if self.frozen is not None:
            q0 = np.where(self.frozen[:, None], 0.0, q0)
        Wt = np.swapaxes(self.W, 1, 2)
        g = (Wt @ (self.g_theta + (self.H_theta @ q0[..., None])[..., 0])[..., None])[..., 0]
        if self.frozen is not None:
            g[self.frozen] = 0.0
        return q0, g, values + (self.PZ @ q0[..., None])[..., 0]


def linearize(
    problem,
    screws: JointScrews,
    at,
    values,
    loop_multipliers,
    damping: float,
    frozen=None,
    anchor=None,
    kin: TreeClip | None = None,
) -> Linearization:
    """The :class:`Linearization` at ``at`` (a :class:`~looprig.core.solvers.step.LinearizedStep`
    of every frame) whose motors read ``values`` (F, A); loop_multipliers (F, m) or None;
    damping: Levenberg's, relative to each frame's largest Hessian diagonal entry;
    frozen (F,) bool or None: frames that do not move (their steps are exactly zero: no
    gradient, no motor rate, an identity Hessian); anchor: (weight, displacement (F, D))
    of the gentle interior point's pull back to its start, or None; kin: the iterate's
    kinematics in tree coordinates (``at`` a :class:`~.tree_clip.TreePoint`),
    or None (a :class:`~looprig.core.solvers.step.LinearizedStep`)."""
    cs, tree = problem.constraints, problem.tree
    F = len(at.value)
    if kin is not None:  # no loops: the tree's own kernels
        Z = None
        H_theta, g_theta, PZ = kin.linearized(at)
        H_theta = H_theta + kin.curvature(at, screws)
    else:
        S, R = at.point.state, at.point.R
        Z = tree.joint_basis(S, R)
        model = at.model
        if loop_multipliers is not None:
            model = with_constraint_curvature(problem, model, at.point, loop_multipliers)
        H_theta = model.project(Z, np.zeros(F)) + objective_curvature(problem, screws, at.point)
        g_theta = (at.gradient[:, None, :] @ Z)[:, 0]
        PZ = problem.readout.jacobian(S, R, cs.column_of_body, cs.n_vars) @ Z
    if anchor is not None:
        pull, displacement = anchor
        H_theta = H_theta + pull * np.eye(tree.dof)
        g_theta = g_theta + pull * displacement
    if loop_count(problem, at):  # (the joints' Jacobian only then)
        loop = np.r_[tree.loop_rows, np.arange(tree.cs_rows, at.constraint.shape[1])]
        ALZ = at.loop_jacobian @ Z  # (F, m_L, D)
        _, sv, Vt = np.linalg.svd(ALZ)
        rank = int((sv[0] > 1e-9 * max(float(sv[0].max(initial=0.0)), 1e-300)).sum())
        W = np.swapaxes(Vt[:, rank:], 1, 2)
        restore = np.linalg.pinv(ALZ, rcond=1e-9)
        q0 = -(restore @ at.constraint[:, loop, None])[..., 0]
    else:
        W = np.broadcast_to(np.eye(tree.dof), (F, tree.dof, tree.dof))
        q0, restore = np.zeros((F, tree.dof)), None
    Wt = np.swapaxes(W, 1, 2)
    H = _convex(Wt @ H_theta @ W, damping)
    if frozen is not None and frozen.any():
        q0 = np.where(frozen[:, None], 0.0, q0)
    g = (Wt @ (g_theta + (H_theta @ q0[..., None])[..., 0])[..., None])[..., 0]
    b = values + (PZ @ q0[..., None])[..., 0]
    B = PZ @ W
    if frozen is not None and frozen.any():
        H[frozen] = np.abs(np.diagonal(H, axis1=1, axis2=2)).max() * np.eye(H.shape[-1])
        g[frozen], B = 0.0, np.where(frozen[:, None, None], 0.0, B)
    return Linearization(at, Z, W, q0, H, g, b, B, PZ, H_theta, g_theta, restore, frozen)


def loop_count(problem, at) -> int:
    """How many rows the tree leaves to close: its loops' and the further equality terms'."""
    return len(problem.tree.loop_rows) + at.constraint.shape[1] - problem.tree.cs_rows


def objective_curvature(problem, screws: JointScrews, point) -> np.ndarray:
    """The tracking terms' second-order part in joint coordinates (F, D, D): the frames'
    points and axes and the bodies' centres (for the CoM) weighted by the gradient of
    the objective with respect to them (:meth:`JointScrews.curvature`)."""
    S, R, targets = point.state, point.R, point.targets
    at = screws.at(S, R)
    F, D = len(S), problem.tree.dof
    H = np.zeros((F, D, D))
    frames = problem.frame_terms
    if len(frames):
        points, axes = frames.poses(S, R)  # (F, K, 3), (F, K, 3, 3) columns: axes
        force = frames.position_weight * (points - targets.positions)
        H += screws.curvature(at, frames.body, points, force, points=True)
        if frames.orientation_weight.any():
            u = np.swapaxes(axes, -1, -2)  # (F, K, axis, 3)
            pull = frames.orientation_weight[..., None] * (u - np.swapaxes(targets.rotations, -1, -2))
            bodies = np.repeat(frames.body, 3)
            H += screws.curvature(at, bodies, u.reshape(F, -1, 3), pull.reshape(F, -1, 3), points=False)
    com = problem.com_term
    if com is not None:
        force = com.weight * (com.com(S) - targets.com)  # (F, 3)
        per_body = com.fraction[None, :, None] * force[:, None, :]
        H += screws.curvature(at, np.arange(S.shape[1]), S[..., :3], per_body, points=True)
    return H


def _convex(H: np.ndarray, damping: float) -> np.ndarray:
    """The reduced Hessians H (F, d, d) made positive definite: a frame whose Newton
    Hessian has a negative eigenvalue (far from the answer, or a target pulling the
    robot over a ridge) is shifted by it (the inertia correction of interior-point
    methods), then every frame gets ``damping`` (at least 1e-12) times the largest
    diagonal entry of the clip's Hessians on its diagonal."""
    scale = max(float(np.abs(np.diagonal(H, axis1=1, axis2=2)).max(initial=0.0)), 1e-300)
    if not np.isfinite(H).all():  # a diverged iterate: the interior point stops on it
        return H
    lowest = np.linalg.eigvalsh(H)[:, 0]
    shift = np.maximum(-1.1 * lowest, 0.0) + max(damping, 1e-12) * scale
    return H + shift[:, None, None] * np.eye(H.shape[-1])
