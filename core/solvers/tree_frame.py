"""One frame of the clip's Newton method in tree coordinates
(:mod:`~looprig.core.solvers.tree_newton` at F = 1), for the frames a clip solves in
sequence and for single-frame latency.

Hand-written for one frame: there numpy's cost per call, not its arithmetic, is what a
step pays (the frame-last kernels loop over joints and axes: about 300 calls a step,
0.5-1 ms on the 12-joint chain), so every joint's pose map is made for all joints at
once and the rows and the step are plain 2-D algebra (about 60 calls).

The same steps as :func:`~looprig.core.solvers.tree_newton.solve_coordinates` on one
frame: the Newton step of ``min 1/2 |J_t dq + r_t|^2 + 1/2 dq^T H dq s.t. J_c dq = -r_c``
(the constraints regularised by eps_d), in the rows' space where
:meth:`~looprig.core.solvers.tree_step.RowSpaceSteps.applies` says so, else on the KKT
system; after each Newton step chord steps on the same matrix while they should certify
convergence; the same stopping and failure tests (``tests/test_tree_frame.py`` compares
both to 1e-12), but for one shortcut: a Newton step below the step tolerance is
certified by measuring the loop rows after it instead of by a chord step.

One module of about 520 lines: the one-frame poses, screws, rows, Newton loop and the
carried-on start of the next frame are one class, whose kernels the tests compare one
by one with the batched ones.

Layout, one frame: pose blocks P (n, 4, 3) (rows: the body's axes ``R e_k``, then its
CoM [m]), rotations R (n, 3, 3), screws W, V (D, 3) (a point p on a body the coordinate
moves goes at ``W_d x p + V_d`` per unit coordinate).
"""

import numpy as np
from scipy.spatial.transform import Rotation

from ..maths.rotations import rotvec_from_matrix, skew
from .tree import TreeKinematics
from .tree_forward import forward
from .tree_metric import metric
from .tree_newton import inverse_step_limit, joint_values
from .tree_step import FrameStepSystem, RowSpaceSteps, task_row_count


class FrameNewton:
    """The Newton method of :mod:`~looprig.core.solvers.tree_newton` for one frame of a
    model whose tree joints :func:`~looprig.core.solvers.tree_forward.applies` poses,
    built once per problem and settings."""

    def __init__(self, model: TreeKinematics, settings, compliance: float):
        self.model, self.settings, self.compliance = model, settings, compliance
        fw = self.forward = forward(model)
        D = model.D
        self.tolerance = model.problem.constraints.tolerance(settings.constraint_tolerance)
        self.inverse_limit = inverse_step_limit(model, settings)
        # the tree joints in level order: old and new bodies, constant maps around the turn
        self.old = np.array([j[0] for j in fw.joints], int)
        self.new = np.array([j[1] for j in fw.joints], int)
        self.to_axis = np.array([b[0] for b in fw.blocks]).reshape(-1, 4, 4)
        from_axis = np.array([b[1] for b in fw.blocks]).reshape(-1, 4, 4)
        # a joint's map from_axis G to_axis, with G the turn by theta (rows 0 and 1 of
        # [axes of R_o U; anchor]), then the slide by s (row 3 += s row 2), is
        # C0 + (cos theta - 1) C1 + sin theta C2 + s C3 with constant C's
        e = np.eye(4)
        parts = [
            e,
            np.diag([1.0, 1.0, 0.0, 0.0]),
            np.outer(e[0], e[1]) - np.outer(e[1], e[0]),
            np.outer(e[3], e[2]),
        ]
        self.map_parts = [from_axis @ G @ self.to_axis for G in parts]
        # each joint's turn and slide coordinate (D: none, read from a padded zero)
        self.turn_q = np.array([D if j[6] is None else j[6] for j in fw.joints], int)
        self.slide_q = np.array([D if j[7] is None else j[7] for j in fw.joints], int)
        position = {int(k): i for i, k in enumerate(model.order)}
        self.motion_joint = np.array([position[int(k)] for k in model.motion_joint], int)
        # ball joints: where they are, their slots among the rotations, their motions' axes
        balls = fw.balls
        self.ball_joint = np.array([b.joint for b in balls], int)
        self.ball_slot, self.ball_d = fw.ball_slots, fw.ball_d
        self.ball_carried = np.array([b.carried for b in balls], bool)
        self.ball_motions = np.array(fw.ball_motions, int).reshape(-1, 3)
        # per rotation (roots', then ball joints'): the columns that turn it (a root about
        # world axes, its rows turned; a ball joint about its d axes, S turned on the
        # right where they are carried by the new body, else on the left)
        roots = np.asarray(model.root_columns, int).reshape(-1, 1)
        self.root_turn_columns = roots + np.arange(3, 6)
        self.root_slide_columns = roots + np.arange(3)
        self.ball_columns_3 = fw.ball_columns_3
        self.ball_from_axis, self.ball_to_axis = from_axis[self.ball_joint], self.to_axis[self.ball_joint]
        self.after = np.concatenate([np.zeros(len(roots), bool), self.ball_carried])
        self.still = np.concatenate([(roots + np.arange(6)).reshape(-1), fw.ball_columns]).astype(int)
        # the tree's depths as runs of the level order: per depth its joints' slice and old
        # and new bodies (one product a depth; a lone joint's written in place)
        sizes = [len(level) for level in model.tree.levels]
        ends = np.cumsum(sizes)
        self.depths = [
            (slice(end - size, end), self.old[end - size : end], self.new[end - size : end])
            for size, end in zip(sizes, ends, strict=True)
        ]
        self._padded = np.zeros(D + 1)
        self._weights, self._row_space = None, None  # the last metric given and its kind of step
        #: the sum of the steps (D,) the last :meth:`solve` took to converge (None: it did not,
        #: or a line search took steps back): with turns added as vectors, the step between
        #: its start and its answer to second order in the turns (:meth:`step_between`)
        self.taken = None
        self.P0 = np.zeros((model.n, 4, 3))
        self.P0[fw.fixed_bodies, :3] = fw.axes0[fw.fixed_bodies]
        self.P0[fw.fixed_bodies, 3] = fw.c0[fw.fixed_bodies]
        rot = model.rotation
        self.turn_motions, self.slide_motions = np.flatnonzero(rot), np.flatnonzero(~rot)
        self.turn_columns, self.slide_columns = model.motion_q[rot], model.motion_q[~rot]
        # the frame tasks, grouped as tree_step.least_squares_rows groups them
        tracked = model.sqrt_orientation > 0
        self.positional = model.sqrt_position > 0
        self.oriented = [int(k) for k in np.flatnonzero(tracked.sum(1) >= 2)]
        self.single = [
            (int(k), int(np.flatnonzero(tracked[k])[0])) for k in np.flatnonzero(tracked.sum(1) == 1)
        ]
        self.task_moves = model.moves[model.frame_body]  # (K, D)
        # the loop points' two ends, stacked: bodies (2K,), points on them (2K, 3) [m],
        # the coordinates that move them (2K, D), the second ends' negated
        bi, bj, a, b, _, _ = model.point
        self.loop_points = (
            np.concatenate([bi, bj]),
            np.concatenate([a, b]).reshape(-1, 3),
            np.concatenate([model.moves[bi], -model.moves[bj]]),
        )

    # ------------------------------------------------------------------ kinematics
    def poses(self, q: np.ndarray, rotations: np.ndarray, root_c: np.ndarray, motions: bool = True):
        """Pose blocks P (n, 4, 3) at coordinates q (D,), rotations (r + s, 3, 3) (the
        roots' axes, the ball joints' turns) and root positions (r, 3), and each motion's
        world axis and a point on it (P, 3) (None, None without ``motions``: a chord step
        needs no screws)."""
        model = self.model
        P = self.P0.copy()
        roots = len(model.root_body)
        P[model.root_body, :3] = rotations[:roots]
        P[model.root_body, 3] = root_c
        padded = self._padded
        padded[:-1] = q
        theta = padded[self.turn_q][:, None, None]
        C0, C1, C2, C3 = self.map_parts
        maps = C0 + (np.cos(theta) - 1.0) * C1 + np.sin(theta) * C2 + padded[self.slide_q][:, None, None] * C3
        balls = self.ball_joint
        if len(balls):  # a ball joint's map: from_axis diag(S^T, 1) to_axis
            turns = np.zeros((len(balls), 4, 4))
            turns[:, :3, :3] = B = rotations[self.ball_slot]
            turns[:, 3, 3] = 1.0
            maps[balls] = self.ball_from_axis @ turns @ self.ball_to_axis
        for joints, old, new in self.depths:
            if len(old) == 1:
                np.matmul(maps[joints.start], P[old[0]], out=P[new[0]])
            else:
                P[new] = maps[joints] @ P[old]
        if not motions:
            return P, None, None
        Y = self.to_axis @ P[self.old]  # per joint: [axes of R_o U; anchor] before it moves
        joint_of = self.motion_joint
        axis, anchor = Y[joint_of, 2], Y[joint_of, 3]
        if len(balls):  # the turns' axes: the joint frame's before the turn, or after it (carried)
            before = Y[balls, :3]
            carried = self.ball_carried
            before[carried] = B[carried] @ before[carried]
            axis[self.ball_motions] = self.ball_d @ before
        return P, axis, anchor

    def screws(self, c: np.ndarray, axis: np.ndarray, anchor: np.ndarray):
        """Every coordinate's screw W, V (D, 3) from the CoM positions c (n, 3) and the
        motions' world axes and anchors (P, 3) (a floating root turns about its CoM)."""
        model = self.model
        W, V = np.zeros((model.D, 3)), np.zeros((model.D, 3))
        t, s = self.turn_motions, self.slide_motions
        W[self.turn_columns] = axis[t]
        V[self.turn_columns] = _cross(anchor[t], axis[t])
        V[self.slide_columns] = axis[s]
        for body, col in zip(model.root_body, model.root_columns, strict=True):
            V[col : col + 3] = W[col + 3 : col + 6] = np.eye(3)
            V[col + 3 : col + 6] = -skew(c[body])  # row a: c x e_a
        return W, V

    # ------------------------------------------------------------------ rows
    def task_rows(self, R, c, W, V, positions, axes, jacobian: bool):
        """The frame tasks' rows as :func:`~looprig.core.solvers.tree_step.least_squares_rows`
        gives them: residual (m_t,), Jacobian (m_t, D) (None unless ``jacobian``), against
        target positions (K, 3) [m] and axes (K, axis, 3)."""
        model = self.model
        b = model.frame_body
        rows, jacobians = [], []
        if self.positional.any():
            p = (R[b] @ model.frame_point[:, :, None])[..., 0] + c[b]
            rows.append((model.sqrt_position * (p - positions))[self.positional])
            if jacobian:  # per target: W_d x p + V_d = (W skew(p))_d + V_d, transposed
                moving = np.swapaxes(W @ skew(p) + V, 1, 2)  # (K, 3, D)
                J = model.sqrt_position[:, :, None] * moving * self.task_moves[:, None]
                jacobians.append(J[self.positional])
        for k in self.oriented:
            u = model.frame_axes[k] @ R[b[k]].T  # (axis, 3) at the iterate
            w = model.sqrt_orientation[k] ** 2
            s = w @ _cross(u, axes[k])
            if w[0] == w[1] == w[2]:  # M = 2 w^2 I
                root = np.sqrt(2.0 * w[0])
                rows.append(-s / root)
                if jacobian:
                    jacobians.append(root * W.T * self.task_moves[k])
                continue
            L = np.linalg.cholesky(w.sum() * np.eye(3) - (u.T * w) @ u)
            rows.append(np.linalg.solve(L, -s))
            if jacobian:
                jacobians.append(L.T @ (W.T * self.task_moves[k]))
        for k, a in self.single:
            w = model.sqrt_orientation[k, a]
            u = R[b[k]] @ model.frame_axes[k, a]
            rows.append(w * (u - axes[k, a]))
            if jacobian:  # W_d x u, transposed
                jacobians.append(w * (W @ skew(u)).T * self.task_moves[k])
        r = np.concatenate(rows) if rows else np.zeros(0)
        if not jacobian:
            return r, None
        return r, (np.concatenate(jacobians) if rows else np.zeros((0, model.D)))

    def constraint_rows(self, R, c, W, V, values, jacobian: bool):
        """The loop, coupling and held-motor rows (residual (m_c,), Jacobian (m_c, D) or
        None) as :meth:`TreeKinematics.constraint_rows` gives them: loop points, dots,
        slides and held motors written for one frame; with couplings, that method on a
        one-frame batch."""
        model = self.model
        if model.couplings is not None:
            screws = (W.T[..., None], V.T[..., None]) if jacobian else None
            r, J = model.constraint_rows(R[..., None], c[..., None], screws, values[:, None])
            return r[:, 0], (J[..., 0] if jacobian else None)
        rows, jacobians = [], []
        if len(model.point[0]):  # both ends of every loop point at once
            bodies, local, signed_moves = self.loop_points
            p = _on(R, c, bodies, local)
            K = len(p) // 2
            rows.append((p[:K] - p[K:]).reshape(-1))
            if jacobian:  # per end: (W_d x p + V_d) on the bodies it moves, the second end's negated
                G = (W @ skew(p) + V) * signed_moves[:, :, None]  # (2K, D, 3)
                jacobians.append(np.swapaxes(G[:K] + G[K:], 1, 2).reshape(-1, model.D))
        bi, bj, a, b, _, _ = model.dot
        if len(bi):
            u, w = _on(R, None, bi, a), _on(R, None, bj, b)
            rows.append(model.L * (u * w).sum(1))
            if jacobian:
                side = model.moves[bi] - model.moves[bj]
                jacobians.append(model.L * side * (_cross(u, w) @ W.T))
        bi, bj, a, _, normal, d = model.slide
        if len(bi):
            pi, pj, n = _on(R, c, bi, a), _on(R, c, bj, d), _on(R, None, bi, normal)
            g = pj - pi
            rows.append((g * n).sum(1))
            if jacobian:
                Jg = self._point_jacobian(W, V, bj, pj) - self._point_jacobian(W, V, bi, pi)
                jacobians.append((Jg * n[:, :, None]).sum(1) + model.moves[bi] * (_cross(n, g) @ W.T))
        for term, q, sign in model.locks:
            offset = values[q] - term.values
            turns = term.readout.is_angle[term.motors]
            offset[turns] = np.angle(np.exp(1j * offset[turns]))
            rows.append(term._row_scale * offset)
            if jacobian:
                J = np.zeros((len(q), model.D))
                J[np.arange(len(q)), q] = term._row_scale * sign
                jacobians.append(J)
        if not rows:
            return np.zeros(0), (np.zeros((0, model.D)) if jacobian else None)
        return np.concatenate(rows), (np.concatenate(jacobians) if jacobian else None)

    def _point_jacobian(self, W, V, bodies, p):
        """d p / d q (K, 3, D) of world points p (K, 3) on ``bodies`` (K,)."""
        return np.swapaxes(W @ skew(p) + V, 1, 2) * self.model.moves[bodies][:, None]

    def rows_at(self, coordinates):
        """The Jacobians (rows, D) at ``coordinates`` (as :meth:`solve` takes them) of the
        loop and held-motor rows, the weighted task rows and the motors' read-off, for
        :func:`~looprig.core.solvers.sequence.targets_determine`."""
        model = self.model
        P, axis, anchor = self.poses(*coordinates)
        R, c = P[:, :3].transpose(0, 2, 1), P[:, 3]
        W, V = self.screws(c, axis, anchor)
        values = joint_values(model, coordinates[0][:, None])[:, 0]
        constraints = self.constraint_rows(R, c, W, V, values, True)[1]
        K = len(model.frame_body)
        tasks = self.task_rows(R, c, W, V, np.zeros((K, 3)), np.tile(np.eye(3), (K, 1, 1)), True)[1]
        motors = model.motor_rows(R[..., None], (W.T[..., None], V.T[..., None]))[..., 0]
        return constraints, tasks, motors

    # ------------------------------------------------------------------ solve
    def metric(self, coordinates) -> np.ndarray:
        """The minimal-motion metric with the damping (D, D) at ``coordinates`` (as
        :meth:`solve` takes them)."""
        P, axis, anchor = self.poses(*coordinates)
        W, V = self.screws(P[:, 3], axis, anchor)
        return self._metric(P[:, :3].transpose(0, 2, 1), P[:, 3], W, V)

    def _metric(self, R, c, W, V) -> np.ndarray:
        screws = (W.T[..., None], V.T[..., None])
        return metric(self.model, R[..., None], c[..., None], screws, None, None)[0][..., 0]

    def solve(self, coordinates, position, rotation, via=None, line_search: bool = False, weights=None):
        """:meth:`_solve`; numbers that overflow (targets far out of reach) end it
        unconverged, not with a warning: the caller's per-frame solver says what is
        wrong."""
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            return self._solve(coordinates, position, rotation, via, line_search, weights)

    def _solve(self, coordinates, position, rotation, via, line_search, weights):
        """Newton's method from coordinates ``(q (D,), rotations (r + s, 3, 3), root positions
        (r, 3))`` (assembled) against frame targets position (K, 3) [m] and rotation
        (K, 3, 3). Returns the coordinates reached, iterations, converged and the loop
        rows' largest residual [m], as
        :func:`~looprig.core.solvers.tree_newton.solve_coordinates` on one frame, with one
        shortcut: a Newton step below the step tolerance whose start missed the loop rows
        is not followed by a chord step to certify it; the loop rows are measured after it
        (what it left is second order in it), and where they hold it was the last (a
        frame carried on from three before, :meth:`carried_on`, takes one step).

        ``via``: other targets (position, rotation) the first Newton step aims at instead
        (counted as an iteration; the metric stays the start's), then Newton's method
        toward the frame's own. ``line_search``: a step after which the rows' squared
        residuals have not fallen is taken back, a Newton step then halved (at most five
        times), a chord step replaced by a Newton step (for starts far from the answer
        where the targets determine it; the answer is the same wherever the steps go).
        ``weights``: the metric (D, D) to step in instead of the start's (:meth:`metric`;
        where the targets determine the motors it decides no answer, only the steps)."""
        model, settings = self.model, self.settings
        q, rotations, root_c = (np.array(x, dtype=float) for x in coordinates)
        target_a = np.swapaxes(rotation, -1, -2)  # (K, axis, 3)
        aims = (
            [(position, target_a)]
            if via is None
            else [(via[0], np.swapaxes(via[1], -1, -2)), (position, target_a)]
        )
        P, axis, anchor = self.poses(q, rotations, root_c)
        R, c = P[:, :3].transpose(0, 2, 1), P[:, 3]
        W, V = self.screws(c, axis, anchor)
        H = self._metric(R, c, W, V) if weights is None else weights
        values = joint_values(model, q[:, None])[:, 0]
        mc = model.n_constraints
        if weights is None or weights is not self._weights:  # one metric, one kind of step
            self._weights, self._row_space = (
                weights,
                RowSpaceSteps.applies(H[..., None], task_row_count(model), mc),
            )
        row_space = self._row_space
        system = None
        iterations, converged, residual = 0, False, 0.0
        last, moved, fresh = np.inf, 0.0, True
        search = _Backtracking((1e-9 * model.L) ** 2) if line_search else None
        self.taken, taken = None, np.zeros(model.D)
        evaluated = True  # the rows at q are the first ones computed below
        certify = False  # the last step, a Newton step, was below the step tolerance
        for _ in range(min(settings.max_iterations, 12) * (4 if line_search else 1)):
            if not evaluated:
                P, axis, anchor = self.poses(q, rotations, root_c, fresh)
                R, c = P[:, :3].transpose(0, 2, 1), P[:, 3]
                W, V = self.screws(c, axis, anchor) if fresh else (None, None)
            evaluated = False
            rc, Jc = (
                self.constraint_rows(R, c, W, V, values, fresh)
                if mc
                else (np.zeros(0), np.zeros((0, model.D)))
            )
            if certify:  # what it left of the loop rows is second order in it: measured, not stepped
                residual = float(np.abs(rc).max(initial=0.0))
                if residual <= self.tolerance:
                    converged = True
                    self.taken = taken
                    break
                certify = False
            rt, Jt = self.task_rows(R, c, W, V, *aims[0], fresh)
            if search is not None:
                merit = float(rt @ rt + rc @ rc)
                if search.rejects(merit):
                    q, rotations, root_c, values = search.restored()
                    if not search.newton:  # a chord step that does not descend: a Newton step there
                        fresh = True
                        search.forget()
                    elif search.halvings == 5:
                        break
                    else:
                        self._move(q, rotations, root_c, values, search.halved())
                    continue
                search.keep(q, rotations, root_c, values, merit)
            if iterations == settings.max_iterations:
                break
            if fresh:
                system = FrameStepSystem(H, Jt, Jc, self.compliance, row_space)
            dq = system.step(rt, rc)
            dq /= max(1.0, float((np.abs(dq) * self.inverse_limit).max(initial=0.0)))
            size = float(np.abs(dq).max(initial=0.0))
            violation = float(np.abs(rc).max(initial=0.0))
            iterations += 1
            if search is not None:
                search.took(dq, fresh)
            self._move(q, rotations, root_c, values, dq)
            taken += dq
            if len(aims) > 1:  # the step toward ``via``: a Newton step toward the targets next
                aims.pop(0)
                if search is not None:
                    search.forget()
                continue
            done = size <= settings.step_tolerance and violation <= self.tolerance
            residual = violation
            if done:
                converged = True
                self.taken = None if line_search else taken
                break
            certify = fresh and size <= settings.step_tolerance and not line_search
            if not np.isfinite(size) or (not line_search and iterations > 2 and size > 0.5 * last):
                break
            last = size
            moved = size if fresh else moved + size
            fresh = not fresh and size * moved > settings.step_tolerance
        return (q, rotations, root_c), iterations, converged, residual

    def _move(self, q, rotations, root_c, values, dq) -> None:
        """Step the coordinates (and the joint values read from them) in place by dq (D,),
        as :meth:`~looprig.core.solvers.tree_forward.TreeForward.moved` does: every root
        and ball joint turned at once."""
        q += dq
        values += self.model.sign * dq
        if not len(rotations):
            return
        turns = np.concatenate(
            [dq[self.root_turn_columns], (self.ball_d * dq[self.ball_columns_3][..., None]).sum(1)]
        )
        Qt = np.swapaxes(Rotation.from_rotvec(turns).as_matrix(), 1, 2)
        rotations[:] = np.where(self.after[:, None, None], Qt @ rotations, rotations @ Qt)
        root_c += dq[self.root_slide_columns]
        q[self.still] = 0.0

    def step_between(self, a, b) -> np.ndarray:
        """The step dq (D,) that :meth:`_move` takes from coordinates ``a`` to ``b`` (as
        :meth:`solve` takes them): joint coordinates and root positions by difference,
        each root's and ball joint's turn by the rotation vector between them."""
        (qa, Xa, ca), (qb, Xb, cb) = a, b
        dq = qb - qa
        if len(Xa):  # X_b = Q^T X_a where the turn is carried, else X_a Q^T
            Qt = np.where(self.after[:, None, None], Xb @ np.swapaxes(Xa, 1, 2), np.swapaxes(Xa, 1, 2) @ Xb)
            turns = rotvec_from_matrix(np.swapaxes(Qt, 1, 2))
            roots = len(self.root_turn_columns)
            dq[self.root_turn_columns] = turns[:roots]
            dq[self.ball_columns_3] = (self.ball_d @ turns[roots:, :, None])[..., 0]  # d's rows orthonormal
            dq[self.root_slide_columns] = cb - ca
        return dq

    def carried_on(self, current, steps):
        """Coordinates one frame on from ``current`` (as :meth:`solve` takes them) given the
        ``steps`` (D,) between the one to five frames before and it, oldest first
        (:meth:`step_between`), and the step taken: the last step plus its last first and
        second differences, as far as the steps allow (constant step, acceleration, jerk:
        first to third order) or, with four, as far as the order whose last difference
        is the smallest (the one that predicted the last step best from the three before);
        less what no motor, target or loop sees (:attr:`TreeKinematics.unseen`: carried
        on, a rod's spin would gather speed). Third order (``3 d2 - 3 d1 + d0``) starts a
        smooth clip's next frame within its fourth derivative times the frame time to the
        fourth, and a dense one's first Newton step is its last; on a track with jitter a
        lower order starts nearer (each multiplies the jitter by the norm of its weights:
        1, 2.2, 4.4)."""
        differences = [np.asarray(steps[-4:])]  # the steps, then their first, second, third
        while len(differences[-1]) > 1:
            differences.append(differences[-1][1:] - differences[-1][:-1])
        last = [d[-1] for d in differences]  # the last step and its last differences
        order = 1 + int(np.argmin(np.abs(last[1:]).max(axis=1))) if len(last) == 4 else len(last)
        step = sum(last[:order])
        unseen = self.model.unseen
        step = step - unseen @ (unseen.T @ step)
        q, rotations, root_c = (np.array(x, dtype=float) for x in current)
        self._move(q, rotations, root_c, np.zeros(self.model.D), step)
        return (q, rotations, root_c), step


class _Backtracking:
    """The line search of :meth:`FrameNewton.solve`: the point the last step left (its
    coordinates and joint values), the rows' squared residuals there, and that step."""

    def __init__(self, floor: float):
        self.floor = floor  # squared residuals below this always pass
        self.point, self.merit, self.step, self.newton, self.halvings = None, np.inf, None, True, 0

    def rejects(self, merit: float) -> bool:
        """Whether the last step left the squared residuals at ``merit`` no lower."""
        return self.point is not None and merit >= self.merit and merit > self.floor

    def keep(self, q, rotations, root_c, values, merit: float) -> None:
        """The point the next step leaves, and its squared residuals."""
        self.point = tuple(x.copy() for x in (q, rotations, root_c, values))
        self.merit, self.halvings = merit, 0

    def took(self, step: np.ndarray, newton: bool) -> None:
        """The step taken from the kept point, and whether it was a Newton step."""
        self.step, self.newton = step.copy(), newton

    def restored(self):
        """Copies of the kept point (q, rotations, root positions, joint values)."""
        return tuple(x.copy() for x in self.point)

    def halved(self) -> np.ndarray:
        """Half the last step, which then counts as the step taken."""
        self.step = 0.5 * self.step
        self.halvings += 1
        return self.step

    def forget(self) -> None:
        """No step to take back (the next is a fresh Newton step)."""
        self.point = None


def _on(R: np.ndarray, c, bodies: np.ndarray, local: np.ndarray) -> np.ndarray:
    """Body-fixed vectors ``local`` (K, 3) of ``bodies`` (K,) in world axes (K, 3), as
    points when c (n, 3) [m] is given."""
    world = (R[bodies] @ local[:, :, None])[..., 0]
    return world if c is None else world + c[bodies]


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a x b`` over the last axis, for a few rows: 7 µs at 28 rows against 17 for
    :func:`~looprig.core.maths.rotations.cross` (which wins on large batches) and 37 for
    numpy's."""
    return a.take(_NEXT, -1) * b.take(_AFTER, -1) - a.take(_AFTER, -1) * b.take(_NEXT, -1)


#: the components after each, cyclically: (a x b)_i = a_j b_k - a_k b_j
_NEXT, _AFTER = np.array([1, 2, 0]), np.array([2, 0, 1])
