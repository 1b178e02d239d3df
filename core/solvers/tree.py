"""Whole-clip IK in tree (joint) coordinates, the frame axis last.

One module although long: the kinematics (:class:`TreeKinematics`: assembly, screws,
retraction, rows), the metric and the Newton loop share one frame-last layout and the
tree's coordinate bookkeeping, and the space-time solve builds on the same kernels.

Hand-written: kinematics, Jacobians and small dense solves laid out over the frame axis
(every numpy call works on length-F vectors), which no library offers for a batch of
small mechanisms; numpy's stacked 3x3 products and batched LAPACK pay more per frame.

The unknowns of each frame are the coordinates of the problem's spanning tree
(:class:`~looprig.core.kkt.SpanningTree`): a joint's free motions (a rotation [rad]
about an axis through its anchor, a slide [m] along it) and six world-twist values per
floating root (``[dc, dtheta]``, the root turning about its CoM), taken incrementally
at each iterate: a step ``dq`` turns or slides every tree joint exactly
(:meth:`TreeKinematics.retract`), so the tree joints stay assembled and only the rows
outside the tree — loop closures, couplings, held motors — are constraints. Per frame,
at the iterate, with the task rows ``J_t dq + r_t`` (every frame objective's weighted
rows), the constraint rows ``J_c dq + r_c`` and the minimal-motion metric ``H`` in tree
coordinates (``Z^T H_s Z`` with ``Z`` the tree's joint basis and ``H_s`` the metric
of :class:`~looprig.core.terms.MinimalMotion` in body coordinates, taken at the block's
starts, with the per-frame solver's Levenberg damping ``eps_p Z^T Z``: :func:`metric`),
the step is the KKT step of::

    min 1/2 |J_t dq + r_t|^2 + 1/2 dq^T H dq   s.t.  J_c dq = -r_c

(``[[H + J_t^T J_t, J_c^T], [J_c, -eps_d I]]``), the per-frame solver's step written in
another basis of the same tangent space; after each Newton step the same matrix gives
a chord step (:func:`solve`).

Layout: body rotations ``R`` (n, 3, 3, F), CoM positions ``c`` (n, 3, F) [m], world;
screws ``omega``, ``v`` (3, D, F), component first; Jacobians (rows, D, F) or, per
point, (K, 3, D, F). The vector axis of (..., 3, F) arrays is second to last.
"""

import numpy as np

from ..maths.frame_last import (
    ELIMINATE_FROM,
    apply,
    axis_rotation,
    cross,
    dot,
    eliminate,
    matmul3,
    substitute,
    turn,
)
from ..maths.rotations import quat_from_matrix, quat_to_matrix
from ..model.coupling_rows import polynomial_and_slope as _polynomial
from ..model.parts import JointKind
from ..terms import FrameTask, JointConstraints, MinimalMotion, MotorLock
from .joint_space import JointScrews
from .kkt import MOTIONS
from .tree_forward import applies, forward

#: Joint kinds whose tree joints :meth:`TreeKinematics.assemble` puts back together (a
#: start interpolated between solved frames opens them slightly); free joints carry roots.
TREE_KINDS = {
    JointKind.FIXED,
    JointKind.REVOLUTE,
    JointKind.PRISMATIC,
    JointKind.CYLINDRICAL,
    JointKind.SPHERICAL,
    JointKind.FREE,
}


def unsupported(problem) -> str | None:
    """Why ``problem`` (an :class:`~looprig.core.ik.IKProblem`) cannot be solved in tree
    coordinates by this module, or None: joint kinds outside :data:`TREE_KINDS`,
    objective terms other than frame tasks and the minimal-motion metric, equality terms
    other than the joint constraints and held motors, and held or coupled joints that
    are not one-coordinate tree joints."""
    mech = problem.mechanism
    kinds = {j.kind for j in mech.joints} - TREE_KINDS
    if kinds:
        return f"joint kinds {sorted(k.value for k in kinds)}"
    terms = [t for t in problem.objective_terms if not isinstance(t, (FrameTask, MinimalMotion))]
    if terms:
        return f"objective terms {[t.name for t in terms]}"
    extra = [t for t in problem.equality_terms if not isinstance(t, (JointConstraints, MotorLock))]
    if extra:
        return f"equality terms {[t.name for t in extra]}"
    coordinate = _joint_coordinates(problem)
    motor_joints = [j.name for j in mech.actuated_joints]  # motor m's joint (actuators may be renamed)
    joints = [motor_joints[m] for t in problem.equality_terms[1:] for m in t.motors]
    joints += [c.joint for c in mech.couplings] + [s for c in mech.couplings for s in c.sources]
    missing = [name for name in joints if name not in coordinate]
    if missing:
        return f"joints {missing} are not one-coordinate tree joints"
    readout = problem.readout
    loose = [
        n
        for n, angle in zip(motor_joints, readout.is_angle, strict=True)
        if n not in coordinate and not angle
    ]
    if loose:
        return f"displacement motors {loose} close loops"
    unseen = kinematics(problem).unseen()
    if unseen:
        return f"{unseen} directions that no motor, target or loop sees (the damping resolves them)"
    return None


def _joint_coordinates(problem) -> dict[str, tuple[int, float]]:
    """Per joint name of a one-coordinate tree joint: (its coordinate, +1 if a unit step
    moves its child forward, -1 if the tree reaches the joint from its child)."""
    tree, cs, mech = problem.tree, problem.constraints, problem.mechanism
    tj = tree.joints
    out = {}
    for k in range(len(tj.new)):
        motions = np.flatnonzero(tj.real_joint == k)
        if len(motions) == 1:
            joint = mech.joints[cs.row_joint[tj.rows[k, 0]]]
            out[joint.name] = (int(tj.real_q[motions[0]]), 1.0 if tj.new_side[k, 0] else -1.0)
    return out


class TreeKinematics:
    """The spanning tree of an :class:`~looprig.core.ik.IKProblem` in the frame-last
    layout: which bodies each coordinate moves, the tree joints' motions (axes and anchors
    in body coordinates), the loop rows' primitives and the rows read from joint values
    (couplings, held motors), built once per problem."""

    def __init__(self, problem):
        tree, cs, mech = problem.tree, problem.constraints, problem.mechanism
        tj = tree.joints
        self.problem, self.tree = problem, tree
        self.n, self.D, self.L = len(mech.bodies), tree.dof, cs.length_scale
        self.moves = JointScrews(tree, self.n).moves.astype(float)  # (n, D)
        s0 = mech.initial_state()
        R0 = quat_to_matrix(s0[:, 3:])
        # tree joints in level order: (joint, old body, new body, mechanism joint index)
        self.order = np.concatenate(tree.levels) if tree.levels else np.zeros(0, int)
        self.joint_index = cs.row_joint[tj.rows[:, 0]] if len(tj.new) else np.zeros(0, int)
        self.new, self.old = tj.new, tj.old
        frames = cs.joint_frames
        # per tree joint: anchors on the new and the old body, the joint frame's axes in the old
        new_child = tj.new_side[:, 0].astype(bool)
        # frames[j]: (axes in parent, axes in child, anchor in parent, anchor in child)
        ends = [
            frames[j] if nc else (frames[j][1], frames[j][0], frames[j][3], frames[j][2])
            for j, nc in zip(self.joint_index, new_child, strict=True)
        ]
        self.anchor_new = np.reshape([e[3] for e in ends], (-1, 3))
        self.anchor_old = np.reshape([e[2] for e in ends], (-1, 3))
        self.axes_old = np.reshape([e[0] for e in ends], (-1, 3, 3))
        self.kind = [mech.joints[j].kind for j in self.joint_index]
        # the new body's rotation relative to the old one's in the initial configuration
        self.relative0 = (
            np.einsum("kba,kbc->kac", R0[self.old], R0[self.new]) if len(self.new) else np.zeros((0, 3, 3))
        )
        # motions: coordinate, joint, body holding the axis, axis there, rotation?
        P = len(tj.real_joint)
        self.motion_q = tj.real_q
        self.motion_joint = tj.real_joint
        self.rotation = tj.rotation[:, 0]
        self.axis_body = np.zeros(P, int)
        self.axis_local = np.zeros((P, 3))
        for p in range(P):
            k = tj.real_joint[p]
            jn = self.joint_index[k]
            joint = mech.joints[jn]
            side, axis, _ = MOTIONS[joint.kind][tj.motion_slot[p]]
            i, j = mech.body_index(joint.parent), mech.body_index(joint.child)
            self.axis_body[p] = (i, j)[side]
            self.axis_local[p] = frames[jn][side][:, axis]
        self.motions_of = [
            np.flatnonzero(tj.real_joint == k)[::-1] for k in range(len(tj.new))
        ]  # last listed first
        self.root_body = np.array(
            [int(np.flatnonzero(tree.column_of_body // 6 == slot)[0]) for slot in tree.root_slots], int
        )
        self.root_columns = tree.root_columns
        # the loop rows' primitives (instances whose rows lie outside the tree)
        loop = set(tree.loop_rows.tolist())
        self.point = self._instances(cs._point, loop)
        self.dot = self._instances(cs._dot, loop)
        self.slide = self._instances(cs._slide, loop)
        # joint-value rows: couplings (rows of the constraint set), then held motors
        self.coordinate = _joint_coordinates(problem)
        #: per coordinate: +-1 from a unit step to the joint value its joint reads (1 where
        #: none), and whether it turns (else it slides or is a root's)
        self.sign = np.ones(self.D)
        for q, sign in self.coordinate.values():
            self.sign[q] = sign
        self.angle_coordinate = np.zeros(self.D, bool)
        self.angle_coordinate[self.motion_q[self.rotation]] = True
        self.couplings = cs._couplings
        if self.couplings is not None:
            names = self.couplings.readout.names
            self.coupling_q = np.array([self.coordinate[n][0] for n in names], int)
            self.coupling_sign = np.array([self.coordinate[n][1] for n in names])
        #: motor m's joint (an actuator may carry its own name); the motors that close
        #: loops (revolute: :func:`unsupported`)
        self.motor_joints = [j.name for j in mech.actuated_joints]
        self.loop_motors = np.array(
            [m for m, n in enumerate(self.motor_joints) if n not in self.coordinate], int
        )
        self.locks = []
        for term in problem.equality_terms[1:]:
            names = [self.motor_joints[m] for m in term.motors]
            q = np.array([self.coordinate[n][0] for n in names], int)
            sign = np.array([self.coordinate[n][1] for n in names])
            self.locks.append((term, q, sign))
        self.n_constraints = (
            3 * len(self.point[0])
            + len(self.dot[0])
            + len(self.slide[0])
            + (0 if self.couplings is None else len(self.couplings.rows))
            + sum(len(t.motors) for t, _, _ in self.locks)
        )
        ft = problem.frame_terms
        self.frame_body = ft.body
        self.frame_point = ft.local_point
        self.frame_axes = np.swapaxes(ft.local_axes, -1, -2)  # (K, axis, 3) in body coordinates
        self.sqrt_position = ft.sqrt_position_weight  # (K, 3)
        self.sqrt_orientation = ft.sqrt_orientation_weight  # (K, 3)
        self.task_axes = [a for a in range(3) if self.sqrt_orientation[:, a].any()]
        weighted = [self.sqrt_position > 0]
        weighted += [np.repeat(self.sqrt_orientation[:, a, None] > 0, 3, 1) for a in self.task_axes]
        self.task_keep = np.flatnonzero(np.concatenate(weighted, axis=1))

    @staticmethod
    def _instances(stack, loop: set):
        keep = np.array([set(r.tolist()) <= loop for r in stack.rows], bool).reshape(-1)
        return stack.bi[keep], stack.bj[keep], stack.a[keep], stack.b[keep], stack.c[keep], stack.d[keep]

    # ------------------------------------------------------------------ states
    def to_frames(self, states: np.ndarray):
        """Body states (F, n, 7) -> rotations (n, 3, 3, F), positions (n, 3, F)."""
        R = quat_to_matrix(states[..., 3:])
        return np.ascontiguousarray(R.transpose(1, 2, 3, 0)), np.ascontiguousarray(
            states[..., :3].transpose(1, 2, 0)
        )

    @staticmethod
    def to_states(R: np.ndarray, c: np.ndarray) -> np.ndarray:
        """Rotations (n, 3, 3, F), positions (n, 3, F) -> body states (F, n, 7)."""
        q = quat_from_matrix(R.transpose(3, 0, 1, 2))
        return np.concatenate([c.transpose(2, 0, 1), q], axis=-1)

    def assemble(self, R: np.ndarray, c: np.ndarray) -> None:
        """Put every tree joint together in place, from the roots out (a start interpolated
        between solved frames opens them slightly): the new body keeps the part of its
        rotation relative to the old body that the joint allows (none, about its axis, or
        all) and is moved so that its anchor meets the old body's (along the slide axis
        where the joint slides)."""
        for k in self.order:
            o, b, kind = self.old[k], self.new[k], self.kind[k]
            if kind != JointKind.SPHERICAL:
                relative = matmul3(np.swapaxes(R[o], 0, 1), R[b])  # R_o^T R_b
                if kind in (JointKind.REVOLUTE, JointKind.CYLINDRICAL):
                    u = self.axes_old[k][:, 0]
                    delta = matmul3(relative, self.relative0[k].T[:, :, None])  # about u, in o's axes
                    w = np.stack(
                        [delta[2, 1] - delta[1, 2], delta[0, 2] - delta[2, 0], delta[1, 0] - delta[0, 1]]
                    )
                    angle = np.arctan2(
                        0.5 * (u[:, None] * w).sum(0), 0.5 * (delta[0, 0] + delta[1, 1] + delta[2, 2] - 1.0)
                    )
                    turned = axis_rotation(
                        np.broadcast_to(u[None, :, None], (1, 3, len(angle))), angle[None]
                    )[0]
                    relative = matmul3(turned, np.broadcast_to(self.relative0[k][:, :, None], turned.shape))
                else:
                    relative = np.broadcast_to(self.relative0[k][:, :, None], R[b].shape)
                R[b] = matmul3(R[o], relative)
            anchor = turn(R[o][None], self.anchor_old[k][None])[0] + c[o]
            if kind in (JointKind.PRISMATIC, JointKind.CYLINDRICAL):
                n = turn(R[o][None], self.axes_old[k][:, 0][None])[0]
                current = turn(R[b][None], self.anchor_new[k][None])[0] + c[b]
                anchor = anchor + n * dot(current - anchor, n)
            c[b] = anchor - turn(R[b][None], self.anchor_new[k][None])[0]

    def screws(self, R: np.ndarray, c: np.ndarray):
        """Every coordinate's screw at the iterate: omega, v (3, D, F), component first (a
        point p moves at ``omega x p + v``), and each motion's anchor (P, 3, F) [m] and
        axis (P, 3, F)."""
        F = R.shape[-1]
        omega, v = np.zeros((3, self.D, F)), np.zeros((3, self.D, F))
        axis = turn(R[self.axis_body], self.axis_local)
        joint_new = self.new[self.motion_joint]
        anchor = turn(R[joint_new], self.anchor_new[self.motion_joint]) + c[joint_new]
        rot = self.rotation
        omega[:, self.motion_q[rot]] = axis[rot].transpose(1, 0, 2)
        v[:, self.motion_q[rot]] = cross(anchor[rot], axis[rot]).transpose(1, 0, 2)
        v[:, self.motion_q[~rot]] = axis[~rot].transpose(1, 0, 2)
        for body, col in zip(self.root_body, self.root_columns, strict=True):
            x, y, z = c[body]
            for a in range(3):
                v[a, col + a] = 1.0
                omega[a, col + 3 + a] = 1.0
            # a turn about the CoM: v = c x e_a
            v[1, col + 3], v[2, col + 3] = z, -y
            v[0, col + 4], v[2, col + 4] = -z, x
            v[0, col + 5], v[1, col + 5] = y, -x
        return omega, v, anchor, axis

    def motor_rows(self, R: np.ndarray, screws) -> np.ndarray:
        """The motors' read-off Jacobian in tree coordinates (A, D, F): +-1 on its own
        coordinate for a motor that is a tree joint; ``n . (omega_child - omega_parent)``
        for a revolute motor that closes a loop (:func:`unsupported` admits no other)."""
        readout = self.problem.readout
        rows = np.zeros((len(readout.names), self.D, R.shape[-1]))
        for m, name in enumerate(self.motor_joints):
            if name in self.coordinate:
                q, sign = self.coordinate[name]
                rows[m, q] = sign
            else:
                n = turn(R[readout.parent[m]][None], readout.F_parent[m][:, 0][None])  # (1, 3, F)
                side = self.moves[readout.child[m]] - self.moves[readout.parent[m]]
                rows[m] = side[:, None] * _along(screws[0], n)[0]
        return rows

    def unseen(self) -> int:
        """How many directions of the tree coordinates, at the initial configuration,
        no loop row, held motor, weighted target row or motor sees: the per-frame solver
        resolves them by its eps-weighted body metric and its damping, along its own path."""
        s0 = self.problem.mechanism.initial_state()[None]
        R, c = self.to_frames(s0)
        screws = self.screws(R, c)
        values = np.zeros((self.D, 1))
        frames = self.problem.frame_terms.poses(s0)
        targets = (frames[0].transpose(1, 2, 0), np.swapaxes(frames[1], -1, -2).transpose(1, 2, 3, 0))
        rows = [
            self.constraint_rows(R, c, screws, values)[1],
            self.task_rows(R, c, screws, *targets)[1],
            self.motor_rows(R, screws),
        ]
        A = np.concatenate(rows)[..., 0]
        if not A.size:
            return self.D
        singular = np.linalg.svd(A, compute_uv=False)
        return self.D - int(np.sum(singular > 1e-6 * max(singular.max(initial=0.0), 1e-300)))

    def point_jacobian(self, screws, bodies: np.ndarray, p: np.ndarray) -> np.ndarray:
        """d p / d q (K, 3, D, F) of world points p (K, 3, F) on ``bodies`` (K,)."""
        J = self.direction_jacobian(screws, bodies, p)
        J += screws[1][None] * self.moves[bodies][:, None, :, None]
        return J

    def direction_jacobian(self, screws, bodies: np.ndarray, u: np.ndarray) -> np.ndarray:
        """d u / d q (K, 3, D, F) of world directions u (K, 3, F) on ``bodies`` (K,):
        ``omega x u`` for the coordinates that move the body."""
        w = screws[0][None]  # (1, 3, D, F)
        u = u[:, :, None]  # (K, 3, 1, F)
        J = np.empty((len(bodies), 3) + w.shape[2:])
        np.subtract(w[:, 1] * u[:, 2], w[:, 2] * u[:, 1], out=J[:, 0])
        np.subtract(w[:, 2] * u[:, 0], w[:, 0] * u[:, 2], out=J[:, 1])
        np.subtract(w[:, 0] * u[:, 1], w[:, 1] * u[:, 0], out=J[:, 2])
        J *= self.moves[bodies][:, None, :, None]
        return J

    def retract(self, R: np.ndarray, c: np.ndarray, screws, dq: np.ndarray) -> None:
        """Move the iterate in place by steps dq (D, F): every tree joint turns about (or
        slides along) its axis at the iterate, from the roots out, carrying the bodies past
        it; a floating root turns about its CoM by ``dq[3:6]`` and moves by ``dq[:3]``."""
        _, _, anchor, axis = screws
        F = R.shape[-1]
        Q = [None] * self.n  # each body's displacement (Q, t): x -> Q x + t (None: identity, zero)
        t = [None] * self.n
        for body, col in zip(self.root_body, self.root_columns, strict=True):
            Qr = axis_rotation(*_axis_angle(dq[col + 3 : col + 6]))[0]
            Q[body] = Qr
            t[body] = c[body] + dq[col : col + 3] - apply(Qr, c[body])
        for k in self.order:
            Qm, tm = None, None
            for p in self.motions_of[k]:
                theta = dq[self.motion_q[p]]
                if self.rotation[p]:
                    Qs = axis_rotation(axis[p][None], theta[None])[0]
                    ts = anchor[p] - apply(Qs, anchor[p])
                else:
                    Qs, ts = None, axis[p] * theta
                if tm is None:
                    Qm, tm = Qs, ts
                    continue
                if Qs is not None:  # (Q_s, t_s) o (Q_m, t_m) = (Q_s Q_m, Q_s t_m + t_s)
                    Qm, tm = (Qs if Qm is None else matmul3(Qs, Qm)), apply(Qs, tm)
                tm = tm + ts
            o, b = self.old[k], self.new[k]
            if tm is None:
                tm = np.zeros((3, F))
            if t[o] is not None:  # carried by the old body's displacement
                if Q[o] is not None:
                    Qm, tm = (Q[o] if Qm is None else matmul3(Q[o], Qm)), apply(Q[o], tm)
                tm = tm + t[o]
            Q[b], t[b] = Qm, tm
        for b in range(self.n):
            if Q[b] is not None:
                R[b] = matmul3(Q[b], R[b])
            if t[b] is not None:
                c[b] = (c[b] if Q[b] is None else apply(Q[b], c[b])) + t[b]

    # ------------------------------------------------------------------ rows
    def constraint_rows(self, R, c, screws, values=None):
        """The constraint rows (residual (m_c, F) [m], Jacobian (m_c, D, F), None without
        ``screws``): loop points, dots and slides, then couplings, then held motors
        (``values``: (D, F) the coordinates' joint values [rad | m])."""
        F = R.shape[-1]
        residuals, jacobians = [], []
        jacobian = screws is not None
        bi, bj, a, b, _, _ = self.point
        if len(bi):
            pi, pj = turn(R[bi], a) + c[bi], turn(R[bj], b) + c[bj]
            residuals.append((pi - pj).reshape(-1, F))
        if len(bi) and jacobian:
            J = self.point_jacobian(screws, bi, pi) - self.point_jacobian(screws, bj, pj)
            jacobians.append(J.reshape(-1, self.D, F))
        bi, bj, a, b, _, _ = self.dot
        if len(bi):
            u, w = turn(R[bi], a), turn(R[bj], b)
            residuals.append(self.L * dot(u, w))
        if len(bi) and jacobian:
            side = (self.moves[bi] - self.moves[bj])[:, :, None]
            jacobians.append(self.L * side * _along(screws[0], cross(u, w)))
        bi, bj, a, _, nrm, d = self.slide
        if len(bi):
            pi, pj, n = turn(R[bi], a) + c[bi], turn(R[bj], d) + c[bj], turn(R[bi], nrm)
            g = pj - pi
            residuals.append(dot(g, n))
        if len(bi) and jacobian:
            Jg = self.point_jacobian(screws, bj, pj) - self.point_jacobian(screws, bi, pi)  # (K, 3, D, F)
            J = (Jg * n[:, :, None]).sum(1) + self.moves[bi][:, :, None] * _along(screws[0], cross(n, g))
            jacobians.append(J)
        if self.couplings is not None:
            cp = self.couplings
            K = len(cp.rows)
            q = values[self.coupling_q]  # (K + T, F)
            value, slope = (x.T for x in _polynomial(cp.coefficients, q[K:].T))
            residuals.append(cp.scale[:, None] * (q[:K] - cp.offset[:, None] - cp.sum_terms.T @ value))
        if self.couplings is not None and jacobian:
            J = np.zeros((K, self.D, F))
            np.add.at(
                J, (np.arange(K), self.coupling_q[:K]), cp.scale[:, None] * self.coupling_sign[:K, None]
            )
            terms = cp.term_coupling
            np.add.at(
                J,
                (terms, self.coupling_q[K:]),
                -(cp.scale[terms] * self.coupling_sign[K:])[:, None] * slope,
            )
            jacobians.append(J)
        for term, q, sign in self.locks:
            offset = values[q] - term.values[:, None]
            offset = np.where(
                term.readout.is_angle[term.motors][:, None], np.angle(np.exp(1j * offset)), offset
            )
            residuals.append(term._row_scale[:, None] * offset)
            if jacobian:
                J = np.zeros((len(q), self.D, F))
                J[np.arange(len(q)), q] = (term._row_scale * sign)[:, None]
                jacobians.append(J)
        if not residuals:
            return np.zeros((0, F)), (np.zeros((0, self.D, F)) if jacobian else None)
        return np.concatenate(residuals), (np.concatenate(jacobians) if jacobian else None)

    def task_rows(self, R, c, screws, positions, axes):
        """The frame tasks' weighted rows (residual (m_t, F), Jacobian (m_t, D, F), None
        without ``screws``) against target positions (K, 3, F) [m] and target axes
        (K, axis, 3, F): per frame, position x, y, z, then per weighted axis its three;
        rows of zero weight left out."""
        F = R.shape[-1]
        b = self.frame_body
        Rb = R[b]
        p = turn(Rb, self.frame_point) + c[b]  # (K, 3, F)
        residuals = [self.sqrt_position[:, :, None] * (p - positions)]
        if screws is not None:
            jacobians = [self.sqrt_position[:, :, None, None] * self.point_jacobian(screws, b, p)]
        for axis in self.task_axes:
            w = self.sqrt_orientation[:, axis]
            u = turn(Rb, self.frame_axes[:, axis])
            residuals.append(w[:, None, None] * (u - axes[:, axis]))
            if screws is not None:
                jacobians.append(w[:, None, None, None] * self.direction_jacobian(screws, b, u))
        r = np.concatenate(residuals, axis=1).reshape(-1, F)[self.task_keep]
        if screws is None:
            return r, None
        return r, np.concatenate(jacobians, axis=1).reshape(-1, self.D, F)[self.task_keep]


def _along(omega: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``omega_c . w_k`` (K, D, F) for screws' omega (3, D, F) and vectors w (K, 3, F)."""
    return omega[0] * w[:, 0, None] + omega[1] * w[:, 1, None] + omega[2] * w[:, 2, None]


def _axis_angle(rotvec: np.ndarray):
    """(unit axes (1, 3, F), angles (1, F)) of rotation vectors (3, F); any axis for zero."""
    angle = np.sqrt((rotvec**2).sum(0))
    axis = rotvec / np.where(angle > 0.0, angle, 1.0)
    axis[0] = np.where(angle > 0.0, axis[0], 1.0)
    return axis[None], angle[None]


def kinematics(problem) -> TreeKinematics:
    """The problem's :class:`TreeKinematics`, built on first use and kept on it."""
    model = getattr(problem, "_tree_kinematics", None)
    if model is None:
        model = problem._tree_kinematics = TreeKinematics(problem)
    return model


def metric(model: TreeKinematics, R, c, screws, moved_motors, moved_bodies):
    """The minimal-motion metric in tree coordinates with the per-frame solver's damping
    (D, D, F) at the iterate (the block's assembled starts), and the gradient (D, F) of
    its value there around the unassembled starts.

    :class:`~looprig.core.terms.MinimalMotion`'s ``w L^2 (J_p^T S J_p + eps D)`` on the
    tree's joint basis Z (the bodies' :func:`body_tangents`), plus the per-frame solver's
    Levenberg ``eps_p I`` on the body tangents (:func:`damping`): the motors' part (their
    read-off Jacobian is :meth:`TreeKinematics.motor_rows`) and the floating bodies'
    ``D`` (weight 1) exactly; the other bodies' ``eps D`` (eps = 1e-9) and the damping
    (1e-12) by their diagonal on Z. With every direction seen by a motor, target or loop
    (:func:`unsupported` refuses the others) those two shift the answer by about their
    weight relative to the motors' (1e-9 of a step); where nothing else sees a direction
    they alone would resolve it, along the per-frame solver's own path.

    The starts' assembly (:meth:`TreeKinematics.assemble`) counts as part of the first
    step, as the per-frame solver's first step counts its move onto the tree joints:
    moved_motors (A, F) [rad | m]: the motors' values at the assembled starts minus the
    starts'; moved_bodies (n, 6, F): every body's tangent ``[dc, dtheta]`` [m, rad]
    from its start to its assembled start. Both None: starts assembled, g zero."""
    problem = model.problem
    F, D = R.shape[-1], model.D
    first_step = moved_motors is not None
    H, g = np.zeros((D, D, F)), np.zeros((D, F))
    bodies = problem.constraints.free_bodies
    alpha = np.zeros((len(bodies), F))  # each body's weight on dc [1/m^2] ...
    beta = np.zeros((len(bodies), F))  # ... and on dtheta, except the floating bodies'
    floating = np.zeros(len(bodies), bool)
    shift = damping(model, R)
    terms = [t for t in problem.objective_terms if isinstance(t, MinimalMotion)]
    if terms:
        term = terms[0]
        scale = term.weight * term.length_scale**2
        motor_weight = scale * term._row_scale**2  # (A,)
        for m, name in enumerate(model.motor_joints):
            if name in model.coordinate:  # one coordinate: a diagonal entry
                q, sign = model.coordinate[name]
                H[q, q] += motor_weight[m]
                if first_step:
                    g[q] += motor_weight[m] * sign * moved_motors[m]
        loop = model.loop_motors
        if len(loop):
            rows = model.motor_rows(R, screws)[loop]  # (A_loop, D, F)
            H += np.einsum("adf,aef->def", motor_weight[loop, None, None] * rows, rows)
            if first_step:
                g += ((motor_weight[loop, None] * moved_motors[loop])[:, None] * rows).sum(0)
        floating = term.floating
        metric_body = scale * term._body_metric
        alpha += np.where(floating, metric_body[0], term._eps * metric_body[0])[:, None]
        beta += np.where(floating, metric_body[3], term._eps * metric_body[3])[:, None]
    alpha += shift
    beta += shift
    # the floating bodies exactly: T^T W T and T^T W a over their tangents T (6, D, F)
    for k in np.flatnonzero(floating):
        T = body_tangents(model, c, screws, bodies[k : k + 1])[0]
        W = np.concatenate([np.broadcast_to(alpha[k], (3, F)), np.broadcast_to(beta[k], (3, F))])
        H += np.einsum("kdf,kef->def", W[:, None] * T, T)
        if first_step:
            g += (W[:, None] * T * moved_bodies[bodies[k]][:, None]).sum(0)
    # the others by the diagonal: per coordinate, sums over the bodies it moves of
    # alpha |omega x c + v|^2 + beta |omega|^2, from their weighted moments
    others = bodies[~floating]
    a, b, cb = alpha[~floating], beta[~floating], c[others]  # (B,), (B,), (B, 3, F)
    spread = (a[:, None, None] * cb[:, :, None] * cb[:, None]).reshape(-1, 9, F)
    moments = [a[:, None], a[:, None] * cb, spread, b[:, None]]
    if first_step:
        dc, dtheta = moved_bodies[others, :3], moved_bodies[others, 3:]
        moments += [a[:, None] * cross(cb, dc), a[:, None] * dc, b[:, None] * dtheta]
    sums = np.tensordot(model.moves[others].T, np.concatenate(moments, axis=1), axes=1)  # (D, 14 | 23, F)
    omega, v = screws[0].transpose(1, 0, 2), screws[1].transpose(1, 0, 2)  # (D, 3, F)
    second = sums[:, 4:13].reshape(D, 3, 3, F)
    turned = (second * omega[:, None]).sum(2)  # (D, 3, F): A2 omega
    diagonal = (
        dot(omega, omega) * (second[:, 0, 0] + second[:, 1, 1] + second[:, 2, 2] + sums[:, 13])
        - dot(omega, turned)
        + 2.0 * dot(cross(v, omega), sums[:, 1:4])
        + dot(v, v) * sums[:, 0]
    )
    H[np.arange(D), np.arange(D)] += diagonal
    if first_step:
        g += dot(omega, sums[:, 14:17]) + dot(v, sums[:, 17:20]) + dot(omega, sums[:, 20:23])
    return H, g


def body_tangents(model: TreeKinematics, c, screws, bodies: np.ndarray) -> np.ndarray:
    """Each of ``bodies``' tangent ``[dc, dtheta]`` per unit coordinate (B, 6, D, F) at
    the iterate (CoM positions c (n, 3, F), screws): the tree's joint basis."""
    omega = screws[0]
    moves = model.point_jacobian(screws, bodies, c[bodies])
    return np.concatenate([moves, omega[None] * model.moves[bodies][:, None, :, None]], axis=1)


def damping(model: TreeKinematics, R) -> np.ndarray:
    """The per-frame solver's Levenberg damping ``eps_p`` (F,): 1e-12 times the largest
    diagonal entry of the frame tasks' Gauss-Newton Hessian in body coordinates, at least
    1e-12 (its smallest damping, relative to :meth:`HessianModel.scale`)."""
    F = R.shape[-1]
    # the tasks' Gauss-Newton diagonal per body: translations w_p; rotations from the
    # position rows (e_m x arm) and the orientation rows (1 - u_m^2 per tracked axis u)
    diagonal = np.zeros((model.n, 6, F))
    b = model.frame_body
    arm = turn(R[b], model.frame_point)  # (K, 3, F)
    w = model.sqrt_position**2  # (K, 3)
    x, y, z = arm[:, 0] ** 2, arm[:, 1] ** 2, arm[:, 2] ** 2
    block = np.zeros((len(b), 6, F))
    block[:, :3] = w[:, :, None]
    block[:, 3] = w[:, 1, None] * z + w[:, 2, None] * y
    block[:, 4] = w[:, 0, None] * z + w[:, 2, None] * x
    block[:, 5] = w[:, 0, None] * y + w[:, 1, None] * x
    for axis in model.task_axes:
        u = turn(R[b], model.frame_axes[:, axis])
        block[:, 3:] += model.sqrt_orientation[:, axis, None, None] ** 2 * (1.0 - u**2)
    np.add.at(diagonal, b, block)
    return 1e-12 * np.maximum(diagonal.max((0, 1)), 1.0)


class _Poses:
    """The iterate of :func:`solve` on F frames: the tree's coordinates, posed by
    :class:`~looprig.core.tree_forward.TreeForward` where every tree joint is a kind it
    poses, else the bodies' poses moved by :meth:`TreeKinematics.retract`."""

    def __init__(self, model: TreeKinematics, R0=None, c0=None, coordinates=None):
        self.model = model
        self.forward = forward(model) if applies(model) else None
        if coordinates is not None:  # (q, root axes, root positions): posed by the forward kinematics
            self.q, self.root_axes, self.root_c = (np.array(x, dtype=float) for x in coordinates)
        elif self.forward is None:
            self.R, self.c = R0.copy(), c0.copy()
            model.assemble(self.R, self.c)
        else:
            self.q, self.root_axes, self.root_c = self.forward.coordinates(R0, c0)

    @property
    def coordinates(self):
        """The coordinates (q (D, F), root axes (r, 3, 3, F), root positions (r, 3, F))."""
        return self.q, self.root_axes, self.root_c

    def at(self, frames=None):
        """Rotations (n, 3, 3, B), CoM positions (n, 3, B) and screws of ``frames``
        (all: None)."""
        if self.forward is None:
            R, c = (self.R, self.c) if frames is None else (self.R[..., frames], self.c[..., frames])
            return R, c, self.model.screws(R, c)
        fw = self.forward
        pick = (lambda x: x) if frames is None else (lambda x: x[..., frames])
        A, c, motions = fw.poses(pick(self.q), pick(self.root_axes), pick(self.root_c))
        return fw.rotations(A), c, fw.screws(A, c, motions)

    def step(self, frames, R, c, screws, dq) -> None:
        """Move ``frames`` (at R, c with their screws) by dq (D, B)."""
        if self.forward is None:
            self.model.retract(R, c, screws, dq)
            self.R[..., frames], self.c[..., frames] = R, c
            return
        q, axes, positions = self.q[:, frames], self.root_axes[..., frames], self.root_c[..., frames]
        self.forward.moved(q, axes, positions, dq)
        self.q[:, frames], self.root_axes[..., frames], self.root_c[..., frames] = q, axes, positions

    def states(self, frames=None) -> np.ndarray:
        """Body states (F, n, 7) of ``frames`` (all: None)."""
        if self.forward is None:
            R, c = (self.R, self.c) if frames is None else (self.R[..., frames], self.c[..., frames])
            return self.model.to_states(R, c)
        pick = (lambda x: x) if frames is None else (lambda x: x[..., frames])
        A, c, _ = self.forward.poses(pick(self.q), pick(self.root_axes), pick(self.root_c))
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
    H, g_first, values = _start_terms(model, R0, c0, *poses.at())
    converged = _newton(model, poses, positions, rotations, H, g_first, values, settings, compliance)
    return (poses.states(), *converged)


def solve_coordinates(model: TreeKinematics, positions, rotations, coordinates, settings, compliance: float):
    """:func:`solve` from starts given as coordinates ``(q (D, F), root axes (r, 3, 3, F),
    root positions (r, 3, F))`` of a model whose tree joints
    :func:`~looprig.core.tree_forward.applies` poses (assembled: no first step closes
    them). Returns the :class:`_Poses` reached (their coordinates and states),
    iterations, converged and residual as :func:`solve`."""
    poses = _Poses(model, coordinates=coordinates)
    R, c, screws = poses.at()
    H, _ = metric(model, R, c, screws, None, None)
    values = np.zeros((model.D, R.shape[-1]))
    read_q = [] if model.couplings is None else [model.coupling_q]
    read_q += [q for _, q, _ in model.locks]
    if read_q:  # joint values: zero in the file's pose; angles as the read-off gives them
        q = np.unique(np.concatenate(read_q))
        value = poses.q[q] * np.array([model.sign[i] for i in q])[:, None]
        values[q] = np.where(model.angle_coordinate[q, None], np.angle(np.exp(1j * value)), value)
    return (poses, *_newton(model, poses, positions, rotations, H, None, values, settings, compliance))


def _newton(model, poses, positions, rotations, H_all, g_first, values_all, settings, compliance):
    """The Newton loop of :func:`solve` on ``poses`` (moved in place); returns iterations,
    converged and residual (F,)."""
    problem = model.problem
    tol = problem.constraints.tolerance(settings.constraint_tolerance)
    F = positions.shape[0]
    target_p = np.ascontiguousarray(positions.transpose(1, 2, 0))  # (K, 3, F)
    target_a = np.ascontiguousarray(rotations.transpose(1, 3, 2, 0))  # (K, axis, 3, F)
    sign = model.sign
    rotation_coordinate = np.zeros(model.D, bool)
    rotation_coordinate[model.motion_q[model.rotation]] = True
    for col in model.root_columns:
        rotation_coordinate[col + 3 : col + 6] = True
    inverse_limit = np.where(rotation_coordinate, 1.0, 1.0 / model.L) / settings.max_step
    D, mc, mt = model.D, model.n_constraints, len(model.task_keep)
    frame_last = F >= ELIMINATE_FROM  # factors kept (n, n, F) by eliminate, else K (F, n, n) for LAPACK
    n = D + mc
    K_all = np.empty((n, n, F) if frame_last else (F, n, n))  # each frame's last factorised KKT matrix
    Jt_all = np.empty((mt, D, F))  # and the task Jacobian it was made with
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
        R, c, screws = poses.at(active)
        values = values_all[:, active]
        new = fresh[active]
        rc, rt = np.empty((mc, len(active))), np.empty((mt, len(active)))
        if new.any():
            sub = (R[..., new], c[..., new])
            sub_screws = tuple(x[..., new] for x in screws)
            rc[:, new], Jc = model.constraint_rows(*sub, sub_screws, values[:, new])
            rt[:, new], Jt = model.task_rows(
                *sub, sub_screws, target_p[..., active[new]], target_a[..., active[new]]
            )
            K = _kkt_matrix(H_all[..., active[new]], Jt, Jc, compliance)
            if frame_last:
                K_all[..., active[new]] = eliminate(K.transpose(1, 2, 0))
            else:
                K_all[active[new]] = K
            Jt_all[..., active[new]] = Jt
        if not new.all():
            sub = (R[..., ~new], c[..., ~new])
            rc[:, ~new] = model.constraint_rows(*sub, None, values[:, ~new])[0]
            rt[:, ~new] = model.task_rows(
                *sub, None, target_p[..., active[~new]], target_a[..., active[~new]]
            )[0]
        gradient = (Jt_all[..., active] * rt[:, None]).sum(0)
        if g_first is not None and iterations.max() == 0:  # the first step: around the unassembled starts
            gradient += g_first
        rhs = -np.concatenate([gradient, rc])  # (D + mc, Fa)
        if frame_last:
            with np.errstate(divide="ignore", invalid="ignore"):  # a singular frame fails below
                dq = substitute(K_all[..., active], rhs)[:D]
        else:
            K = K_all[active]
            try:
                dq = np.linalg.solve(K, rhs.T[..., None])[..., 0].T[:D]
            except np.linalg.LinAlgError:  # an exactly singular frame: least squares for all
                dq = np.einsum("fij,jf->if", np.linalg.pinv(K), rhs)[:D]
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


def _kkt_matrix(H, Jt, Jc, compliance: float) -> np.ndarray:
    """The KKT matrices (F, D + m_c, D + m_c) ``[[H + J_t^T J_t, J_c^T], [J_c, -eps_d I]]``
    of metrics H (D, D, F) (with the damping), task Jacobians J_t (m_t, D, F) and
    constraint Jacobians J_c (m_c, D, F); eps_d: the ``compliance``."""
    D, mc, F = H.shape[0], Jc.shape[0], H.shape[-1]
    K = np.empty((F, D + mc, D + mc))
    Kt = K.transpose(1, 2, 0)  # (D + mc, D + mc, F) view
    Kt[:D, :D] = H
    rows = np.ascontiguousarray(Jt.transpose(2, 0, 1))  # (F, m_t, D): one BLAS product a frame
    K[:, :D, :D] += np.matmul(rows.transpose(0, 2, 1), rows)
    Kt[:D, D:] = Jc.transpose(1, 0, 2)
    Kt[D:, :D] = Jc
    Kt[D:, D:] = 0.0
    Kt[np.arange(D, D + mc), np.arange(D, D + mc)] = -compliance
    return K


def read(readout, R: np.ndarray, c: np.ndarray) -> np.ndarray:
    """The joint values (K, F) [rad | m] a :class:`~looprig.core.readoff.JointReadout`
    reads at rotations R (n, 3, 3, F) and CoM positions c (n, 3, F): its formula on
    the frame-last layout (angles from the child's reference axis against the parent's
    joint axes, displacements of the child anchor along the parent's axis)."""
    parent, child = R[readout.parent], R[readout.child]
    y = turn(child, readout.y_child)
    values = np.arctan2(
        dot(y, turn(parent, readout.F_parent[:, :, 2])), dot(y, turn(parent, readout.F_parent[:, :, 1]))
    )
    if readout.is_angle.all():
        return values
    offset = turn(child, readout.x_child) + c[readout.child]
    offset -= turn(parent, readout.x_parent) + c[readout.parent]
    along = dot(offset, turn(parent, readout.F_parent[:, :, 0]))
    return np.where(readout.is_angle[:, None], values, along)


def _start_terms(model: TreeKinematics, R0, c0, R, c, screws):
    """At the assembled starts (R (n, 3, 3, F), c (n, 3, F); before assembly R0, c0):
    the minimal-motion metric with the damping (D, D, F) and its
    gradient there around the unassembled starts (D, F) (:func:`metric`), and the joint
    values (D, F) [rad | m] of the coordinates that couplings and held motors read."""
    F = R.shape[-1]
    # the bodies' tangents from start to assembled start: dc, and dtheta from
    # R R0^T ~ I + [dtheta]x (the assembly turns a body by at most a start's defect)
    turned = np.stack(
        [
            R[:, 2] * R0[:, 1] - R[:, 1] * R0[:, 2],
            R[:, 0] * R0[:, 2] - R[:, 2] * R0[:, 0],
            R[:, 1] * R0[:, 0] - R[:, 0] * R0[:, 1],
        ],
        axis=1,
    ).sum(2)  # (n, 3, F): vee(R R0^T - R0 R^T)
    moved_bodies = np.concatenate([c - c0, 0.5 * turned], axis=1)
    readout = model.problem.readout
    motors = read(readout, R, c)
    moved = motors - read(readout, R0, c0)
    moved = np.where(readout.is_angle[:, None], np.angle(np.exp(1j * moved)), moved)  # (A, F)
    H, g = metric(model, R, c, screws, moved, moved_bodies)
    values = np.zeros((model.D, F))
    if model.couplings is not None:
        values[model.coupling_q] = read(model.couplings.readout, R, c)
    for term, q, _ in model.locks:
        values[q] = motors[term.motors]
    return H, g, values
