"""The spanning tree's kinematics in tree (joint) coordinates, the frame axis last:
which problems the tree path takes (:func:`unsupported`) and :class:`TreeKinematics`
(assembly, screws, retraction, the loop, coupling, motor and task rows), which the
clip's Newton method (:mod:`~looprig.core.solvers.tree_newton`) and the space-time
solve build on.

Hand-written: kinematics and Jacobians laid out over the frame axis (every numpy call
works on length-F vectors), which no library offers for a batch of small mechanisms.

The unknowns of each frame are the coordinates of the problem's spanning tree
(:class:`~looprig.core.solvers.kkt.SpanningTree`): a joint's free motions (a rotation
[rad] about an axis through its anchor, a slide [m] along it) and six world-twist values
per floating root (``[dc, dtheta]``, the root turning about its CoM). A step ``dq`` turns
or slides every tree joint exactly, so only the rows outside the tree (loop closures,
couplings, held motors) are constraints.

One module of about 480 lines: the rows are written over the tree's own arrays (which
bodies each coordinate moves, the motions' axes, the loop primitives; built once per
tree, :class:`TreeShape`), so the classes that build those and the rows that read them
stay together; the forward kinematics,
metric, steps and Newton loop that build on it live in ``tree_*`` modules of their own.

Layout: body rotations ``R`` (n, 3, 3, F), CoM positions ``c`` (n, 3, F) [m], world;
screws ``omega``, ``v`` (3, D, F), component first; Jacobians (rows, D, F) or, per
point, (K, 3, D, F). The vector axis of (..., 3, F) arrays is second to last.
"""

import functools
import weakref

import numpy as np

from ..maths.frame_last import apply, axis_angle, axis_rotation, cross, dot, matmul3, turn
from ..maths.rotations import quat_from_matrix, quat_to_matrix
from ..model.coupling_rows import polynomial_and_slope as _polynomial
from ..model.parts import JointKind
from ..terms import FrameTask, JointConstraints, MinimalMotion, MotorLock
from .joint_space import JointScrews
from .kkt import MOTIONS

#: Joint kinds whose tree joints :func:`~looprig.core.solvers.tree_newton.assemble` puts back together (a
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
    """Why ``problem`` (an :class:`~looprig.core.solvers.problem.IKProblem`) cannot be solved in tree
    coordinates by this module, or None: joint kinds outside :data:`TREE_KINDS`,
    objective terms other than frame tasks and the minimal-motion metric, equality terms
    other than the joint constraints and held motors, and held or coupled joints that
    are not one-coordinate tree joints. A direction no motor, target or loop sees (a
    rod's spin between two ball joints) is resolved by the metric's small parts and the
    damping, as in the per-frame solver."""
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


#: Per spanning tree, the :class:`TreeShape` every problem on it shares (a shape holds no
#: reference to its tree or mechanism, so its entry goes with the tree).
_SHAPES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def shape_of(problem) -> "TreeShape":
    """The :class:`TreeShape` of ``problem``'s spanning tree, built on the first problem
    on it (a retarget builds several on one robot: with and without held motors)."""
    shape = _SHAPES.get(problem.tree)
    if shape is None:
        shape = _SHAPES[problem.tree] = TreeShape(problem)
    return shape


class TreeShape:
    """What :class:`TreeKinematics` reads from the mechanism and its spanning tree alone, in
    the frame-last layout: which bodies each coordinate moves, the tree joints' motions
    (axes and anchors in body coordinates), the loop rows' primitives and the
    one-coordinate joints (:func:`shape_of`: once per tree)."""

    def __init__(self, problem):
        tree, cs, mech = problem.tree, problem.constraints, problem.mechanism
        tj = tree.joints
        self.n, self.D, self.L = len(mech.bodies), tree.dof, cs.length_scale
        self.moves = JointScrews(tree, self.n).moves.astype(float)  # (n, D)
        self.initial_state = s0 = mech.initial_state()
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
        #: motor m's joint (an actuator may carry its own name); the motors that close
        #: loops (revolute: :func:`unsupported`)
        self.motor_joints = [j.name for j in mech.actuated_joints]
        self.loop_motors = np.array(
            [m for m, n in enumerate(self.motor_joints) if n not in self.coordinate], int
        )

    @staticmethod
    def _instances(stack, loop: set):
        keep = np.array([set(r.tolist()) <= loop for r in stack.rows], bool).reshape(-1)
        return stack.bi[keep], stack.bj[keep], stack.a[keep], stack.b[keep], stack.c[keep], stack.d[keep]

    def motion_screws(self, c: np.ndarray, anchor: np.ndarray, axis: np.ndarray):
        """:meth:`TreeKinematics.screws` from the CoM positions c (n, 3, F) and each
        motion's world anchor and axis (P, 3, F)."""
        F = c.shape[-1]
        omega, v = np.zeros((3, self.D, F)), np.zeros((3, self.D, F))
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


class TreeKinematics(TreeShape):
    """The spanning tree of an :class:`~looprig.core.solvers.problem.IKProblem` in the frame-last
    layout: its :class:`TreeShape` (shared), the rows read from joint values (couplings,
    held motors) and the frame tasks' rows, built once per problem."""

    def __init__(self, problem):
        self.shape = shape_of(problem)
        vars(self).update(vars(self.shape))
        self.problem, self.tree = problem, problem.tree
        cs = problem.constraints
        self.couplings = cs._couplings
        if self.couplings is not None:
            names = self.couplings.readout.names
            self.coupling_q = np.array([self.coordinate[n][0] for n in names], int)
            self.coupling_sign = np.array([self.coordinate[n][1] for n in names])
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

    def screws(self, R: np.ndarray, c: np.ndarray):
        """Every coordinate's screw at the iterate: omega, v (3, D, F), component first (a
        point p moves at ``omega x p + v``), and each motion's anchor (P, 3, F) [m] and
        axis (P, 3, F)."""
        axis = turn(R[self.axis_body], self.axis_local)
        joint_new = self.new[self.motion_joint]
        anchor = turn(R[joint_new], self.anchor_new[self.motion_joint]) + c[joint_new]
        return self.motion_screws(c, anchor, axis)

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

    @functools.cached_property
    def read_q(self) -> np.ndarray:
        """The coordinates (sorted) whose joint values couplings and held motors read."""
        read = [] if self.couplings is None else [self.coupling_q]
        read += [k for _, k, _ in self.locks]
        return np.unique(np.concatenate(read)) if read else np.zeros(0, int)

    @functools.cached_property
    def unseen(self) -> np.ndarray:
        """An orthonormal basis (D, k) of the directions of the tree coordinates that, at
        the initial configuration, no loop row, held motor, weighted target row or motor
        sees (a rod's spin between two ball joints, fixed in coordinates where the ball's
        axes turn with the rod)."""
        s0 = self.problem.mechanism.initial_state()[None]
        R, c = self.to_frames(s0)
        screws = self.screws(R, c)
        frames = self.problem.frame_terms.poses(s0)
        targets = (frames[0].transpose(1, 2, 0), np.swapaxes(frames[1], -1, -2).transpose(1, 2, 3, 0))
        rows = [
            self.constraint_rows(R, c, screws, np.zeros((self.D, 1)))[1],
            self.task_rows(R, c, screws, *targets)[1],
            self.motor_rows(R, screws),
        ]
        A = np.concatenate(rows)[..., 0]
        if not A.size:
            return np.eye(self.D)
        singular, V = np.linalg.svd(A)[1:]
        seen = int(np.sum(singular > 1e-6 * max(singular.max(initial=0.0), 1e-300)))
        return np.ascontiguousarray(V[seen:].T)

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
            Qr = axis_rotation(*axis_angle(dq[col + 3 : col + 6]))[0]
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


def kinematics(problem) -> TreeKinematics:
    """The problem's :class:`TreeKinematics`, built on first use and kept on it."""
    model = getattr(problem, "_tree_kinematics", None)
    if model is None:
        model = problem._tree_kinematics = TreeKinematics(problem)
    return model
