"""The clip's Newton method in tree coordinates, all frames at once, frame axis last.

Per frame, at the iterate, with the task rows ``J_t dq + r_t`` (every frame objective's
weighted rows), the constraint rows ``J_c dq + r_c`` outside the tree (loop closures,
couplings, held motors) and the minimal-motion metric ``H`` in tree coordinates
(:func:`~looprig.core.solvers.tree_metric.metric`), the step is the KKT step of::

    min 1/2 |J_t dq + r_t|^2 + 1/2 dq^T H dq   s.t.  J_c dq = -r_c

(the constraints regularised by eps_d), the per-frame solver's step written in another
basis of the same tangent space, solved by :mod:`~looprig.core.solvers.tree_step`; after
each Newton step the same factors give a chord step.

The iterate is the tree's coordinates, posed by
:class:`~looprig.core.solvers.tree_forward.TreeForward` where every tree joint is a kind
it poses, else the bodies' poses moved by
:meth:`~looprig.core.solvers.tree.TreeKinematics.retract` (:class:`_Poses`).
"""

import numpy as np

from ..maths.frame_last import axis_rotation, dot, matmul3, put_frames, take_frames, turn
from ..model.parts import JointKind
from .tree import TreeKinematics
from .tree_forward import applies, forward
from .tree_metric import metric, start_terms
from .tree_step import least_squares_rows, step_systems, task_row_count


def assemble(model: TreeKinematics, R: np.ndarray, c: np.ndarray) -> None:
    """Put every tree joint together in place, from the roots out (a start interpolated
    between solved frames opens them slightly): the new body keeps the part of its
    rotation relative to the old body that the joint allows (none, about its axis, or
    all) and is moved so that its anchor meets the old body's (along the slide axis
    where the joint slides)."""
    for k in model.order:
        o, b, kind = model.old[k], model.new[k], model.kind[k]
        if kind != JointKind.SPHERICAL:
            relative = matmul3(np.swapaxes(R[o], 0, 1), R[b])  # R_o^T R_b
            if kind in (JointKind.REVOLUTE, JointKind.CYLINDRICAL):
                u = model.axes_old[k][:, 0]
                delta = matmul3(relative, model.relative0[k].T[:, :, None])  # about u, in o's axes
                w = np.stack(
                    [delta[2, 1] - delta[1, 2], delta[0, 2] - delta[2, 0], delta[1, 0] - delta[0, 1]]
                )
                angle = np.arctan2(
                    0.5 * (u[:, None] * w).sum(0), 0.5 * (delta[0, 0] + delta[1, 1] + delta[2, 2] - 1.0)
                )
                turned = axis_rotation(np.broadcast_to(u[None, :, None], (1, 3, len(angle))), angle[None])[0]
                relative = matmul3(turned, np.broadcast_to(model.relative0[k][:, :, None], turned.shape))
            else:
                relative = np.broadcast_to(model.relative0[k][:, :, None], R[b].shape)
            R[b] = matmul3(R[o], relative)
        anchor = turn(R[o][None], model.anchor_old[k][None])[0] + c[o]
        if kind in (JointKind.PRISMATIC, JointKind.CYLINDRICAL):
            n = turn(R[o][None], model.axes_old[k][:, 0][None])[0]
            current = turn(R[b][None], model.anchor_new[k][None])[0] + c[b]
            anchor = anchor + n * dot(current - anchor, n)
        c[b] = anchor - turn(R[b][None], model.anchor_new[k][None])[0]


class _Poses:
    """The iterate of :func:`solve` on F frames: the tree's coordinates, posed by
    :class:`~looprig.core.tree_forward.TreeForward` where every tree joint is a kind it
    poses, else the bodies' poses moved by :meth:`TreeKinematics.retract`."""

    def __init__(self, model: TreeKinematics, R0=None, c0=None, coordinates=None):
        self.model = model
        self.forward = forward(model) if applies(model) else None
        if coordinates is not None:  # (q, rotations, root positions): posed by the forward kinematics
            self.q, self.rotations, self.root_c = (np.array(x, dtype=float) for x in coordinates)
        elif self.forward is None:
            self.R, self.c = R0.copy(), c0.copy()
            assemble(model, self.R, self.c)
        else:
            self.q, self.rotations, self.root_c = self.forward.coordinates(R0, c0)

    @property
    def coordinates(self):
        """The coordinates (q (D, F), rotations (r + s, 3, 3, F), root positions (r, 3, F))."""
        return self.q, self.rotations, self.root_c

    def at(self, frames=None, screws: bool = True):
        """Rotations (n, 3, 3, B), CoM positions (n, 3, B) and screws of ``frames``
        (all: None); ``screws`` False: None for them where the forward kinematics poses
        (a chord step's residuals need none)."""
        pick = (lambda x: x) if frames is None else (lambda x: take_frames(x, frames))
        if self.forward is None:
            R, c = pick(self.R), pick(self.c)
            return R, c, self.model.screws(R, c)
        fw = self.forward
        A, c, motions = fw.poses(pick(self.q), pick(self.rotations), pick(self.root_c), screws)
        return fw.rotations(A), c, fw.screws(A, c, motions) if screws else None

    def step(self, frames, R, c, screws, dq) -> None:
        """Move ``frames`` (at R, c with their screws) by dq (D, B)."""
        if self.forward is None:
            self.model.retract(R, c, screws, dq)
            put_frames(self.R, frames, R)
            put_frames(self.c, frames, c)
            return
        q, axes, positions = (take_frames(x, frames) for x in (self.q, self.rotations, self.root_c))
        self.forward.moved(q, axes, positions, dq)
        for x, y in zip((self.q, self.rotations, self.root_c), (q, axes, positions), strict=True):
            put_frames(x, frames, y)

    def states(self) -> np.ndarray:
        """Body states (F, n, 7) of every frame."""
        if self.forward is None:
            return self.model.to_states(self.R, self.c)
        A, c, _ = self.forward.poses(self.q, self.rotations, self.root_c, motions=False)
        return self.forward.states(A, c)


def solve(model: TreeKinematics, positions, rotations, starts: np.ndarray, settings, compliance: float):
    """Newton's method in tree coordinates (module docstring) on F frames from ``starts``
    (F, n, 7), against frame targets positions (F, K, 3) [m] and rotations (F, K, 3, 3).

    After each Newton step the same factorisation is used again at the new iterate (a
    chord step: the residuals are evaluated, not the Jacobians), as the per-frame solver
    does: it certifies convergence, and while it should certify after one more step (its
    size times the distance from the factorisation below the tolerance) it is that step.

    Returns states (F, n, 7), iterations (F,) (steps taken), converged (F,) and residual
    (F,) [m] (max |C| over the loop rows at the last evaluation; the tree joints hold by
    construction): a frame converges when its loop rows hold
    (``settings.constraint_tolerance`` times L) and its step's largest coordinate is
    below ``settings.step_tolerance`` [rad | m] (that step is taken); a frame whose steps
    stop shrinking, or that runs out of iterations, is not converged (the caller solves
    it again)."""
    R0, c0 = model.to_frames(starts)
    poses = _Poses(model, R0, c0)
    start = poses.at()
    H, g_first, values = start_terms(model, R0, c0, *start)
    converged = _newton(model, poses, start, positions, rotations, H, g_first, values, settings, compliance)
    return (poses.states(), *converged)


def solve_coordinates(model: TreeKinematics, positions, rotations, coordinates, settings, compliance: float):
    """:func:`solve` from starts given as coordinates ``(q (D, F), rotations (r + s, 3, 3, F),
    root positions (r, 3, F))`` of a model whose tree joints
    :func:`~looprig.core.tree_forward.applies` poses (assembled: no first step closes
    them). Returns the :class:`_Poses` reached (their coordinates and states),
    iterations, converged and residual as :func:`solve`."""
    poses = _Poses(model, coordinates=coordinates)
    start = poses.at()
    R, c, screws = start
    H, _ = metric(model, R, c, screws, None, None)
    values = joint_values(model, poses.q)
    return (poses, *_newton(model, poses, start, positions, rotations, H, None, values, settings, compliance))


def joint_values(model: TreeKinematics, q: np.ndarray) -> np.ndarray:
    """The joint values (D, F) [rad | m] that couplings and held motors read, at
    coordinates q (D, F): zero in the file's pose, angles in (-pi, pi] as the read-off
    gives them; zero for the other coordinates."""
    values = np.zeros_like(q)
    k = model.read_q
    if len(k):
        value = q[k] * model.sign[k, None]
        values[k] = np.where(model.angle_coordinate[k, None], np.angle(np.exp(1j * value)), value)
    return values


def _newton(model, poses, start, positions, rotations, H_all, g_first, values_all, settings, compliance):
    """The Newton loop of :func:`solve` on ``poses`` (moved in place), ``start`` their
    rotations, positions and screws as :meth:`_Poses.at` gave them; returns iterations,
    converged and residual (F,)."""
    problem = model.problem
    tol = problem.constraints.tolerance(settings.constraint_tolerance)
    F = positions.shape[0]
    target_p = np.ascontiguousarray(positions.transpose(1, 2, 0))  # (K, 3, F)
    target_a = np.ascontiguousarray(rotations.transpose(1, 3, 2, 0))  # (K, axis, 3, F)
    sign = model.sign
    inverse_limit = inverse_step_limit(model, settings)
    mc, mt = model.n_constraints, task_row_count(model)
    systems = step_systems(H_all, mt, mc, compliance)  # each frame's last factorised step system
    iterations = np.zeros(F, int)
    converged = np.zeros(F, bool)
    failed = np.zeros(F, bool)
    residual = np.zeros(F)
    last = np.full(F, np.inf)  # each frame's previous step size
    moved = np.zeros(F)  # how far each frame is from where its matrix was factorised
    fresh = np.ones(F, bool)  # the next step of each frame is a Newton step
    active = np.arange(F)
    for _ in range(min(settings.max_iterations, 12)):
        if not len(active):
            break
        new = fresh[active]
        R, c, screws = poses.at(active, new.any()) if start is None else start
        start = None
        values = take_frames(values_all, active)
        rc, rt = np.empty((mc, len(active))), np.empty((mt, len(active)))
        for newton in (True, False):  # the frames taking a Newton step, then a chord step
            part = np.flatnonzero(new == newton)
            if not len(part):
                continue
            at = tuple(take_frames(x, part) for x in (R, c, values))
            sub_screws = tuple(take_frames(x, part) for x in screws) if newton else None
            frames = active[part]
            rc[:, part], Jc = model.constraint_rows(*at[:2], sub_screws, at[2])
            rt[:, part], Jt = least_squares_rows(
                model, *at[:2], sub_screws, take_frames(target_p, frames), take_frames(target_a, frames)
            )
            if newton:
                systems.factorize(frames, take_frames(H_all, frames), Jt, Jc)
        first = g_first is not None and iterations.max() == 0  # the first step: around the unassembled starts
        dq = systems.step(active, rt, rc, g_first if first else None)
        dq /= np.maximum(1.0, (np.abs(dq) * inverse_limit[:, None]).max(0))
        size = np.abs(dq).max(0)
        violation = np.abs(rc).max(0, initial=0.0)
        iterations[active] += 1
        poses.step(active, R, c, screws, dq)
        values_all[:, active] = values + sign[:, None] * dq
        done = (size <= settings.step_tolerance) & (violation <= tol)
        bad = ~np.isfinite(size) | ((iterations[active] > 2) & (size > 0.5 * last[active]) & ~done)
        last[active] = size
        residual[active] = violation
        # after a Newton step a chord step; after a chord step another while it should
        # certify after it, else a Newton step
        moved[active] = np.where(new, size, moved[active] + size)
        fresh[active] = ~new & (size * moved[active] > settings.step_tolerance)
        converged[active[done]] = True
        failed[active[bad]] = True
        active = active[~done & ~bad]
    return iterations, converged & ~failed, residual


def inverse_step_limit(model: TreeKinematics, settings) -> np.ndarray:
    """Per coordinate, 1 / its largest step (D,): ``settings.max_step`` [rad] on turns
    (a floating root's too), times L [m] on slides and a root's moves."""
    turns = np.zeros(model.D, bool)
    turns[model.motion_q[model.rotation]] = True
    for col in model.root_columns:
        turns[col + 3 : col + 6] = True
    return np.where(turns, 1.0, 1.0 / model.L) / settings.max_step
