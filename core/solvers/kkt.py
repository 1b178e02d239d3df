"""The SQP step's KKT solve: in the null space of a spanning tree's joint rows, or
whole for one small frame.

Hand-written: no library solves batches of saddle-point systems shaped by a
mechanism's joint graph from numpy, and this is where the solver spends its time.

In maximal coordinates a step moves each body by a tangent ``d_b = [dc, dtheta]``
(6,), and each joint's linearised rows ``A_old d_old + A_new d_new + c_t = 0`` tie
the steps of its two bodies. Along a spanning tree of the joint graph, rooted at
the ground and at the floating bases, every body's step is the one its tree
parent passes through the joint plus the joint's own motion::

    d_new = -G (c_t + A_old d_old) + N q_t

where ``G`` is a right inverse of ``A_new`` (``A_new G = I``) and ``N`` spans its
null space. Both come from one inverse: with ``S`` the joint's free motions
(rotations about its axes through the anchor, slides along them; :data:`MOTIONS`),
``[A_new; S^T]`` is a 6x6 invertible matrix whose inverse's columns are ``G``
(``S^T G = 0``) and ``N`` (``A_new N = 0`` exactly, on or off the constraint
manifold; ``S^T N = I``, so ``q_t`` are the joint's own coordinates). Stacked over the
tree, ``d = e + Z q`` meets every tree row for any ``q``, the tree's joint
coordinates (D of them: the tree joints' degrees of freedom, 6 per floating
base). Only rows outside the tree (loop closures, couplings, held motors) stay
constraints, and the KKT system of ``N + m`` rows becomes one of ``D + m_loop``::

    [[Z^T (H + eps_p I) Z, (A_L Z)^T], [A_L Z, -eps_d I]] [q, lam] = -[Z^T (g + (H + eps_p I) e), c_L + A_L e]

the same step as the full system (whose tree rows would carry ``-eps_d``
multipliers too). ``Z`` is built level by level from the roots, all joints of
one depth (and all frames of a batch) at once.

A single frame pays numpy's per-call cost for every tree level, so one frame of
a small mechanism factorises the whole matrix instead (:class:`DenseKKT`,
:data:`DENSE_KKT_ROWS`).
"""

from collections import deque

import numpy as np
import scipy.linalg as sla

from ..maths.rotations import (
    BodyVectors,
    cross,
    quat_from_rotvec,
    quat_multiply,
    quat_normalize,
    quat_to_matrix,
    skew,
)
from ..model.constraints import ConstraintSet
from ..model.parts import JointKind

X, Y, Z = 0, 1, 2
#: A joint kind's free motions, each (side, joint-frame axis, rotation): a rotation
#: about the axis through the anchor or a slide along it; side 0 is the axis fixed
#: in the parent, 1 in the child (the joint frames of :class:`ConstraintSet`).
MOTIONS = {
    JointKind.FIXED: (),
    JointKind.REVOLUTE: ((1, X, True),),
    JointKind.PRISMATIC: ((1, X, False),),
    JointKind.CYLINDRICAL: ((1, X, True), (1, X, False)),
    JointKind.SPHERICAL: ((1, X, True), (1, Y, True), (1, Z, True)),
    JointKind.UNIVERSAL: ((0, X, True), (1, Y, True)),
    JointKind.PLANAR: ((1, X, True), (1, Y, False), (1, Z, False)),
    JointKind.PARALLEL: ((1, X, False), (1, Y, False), (1, Z, False)),
}


class _Joints:
    """The tree joints, padded to 6 rows each (``row_mask`` marks the real ones), and
    their P free motions (``real_joint`` (P,): each one's joint)."""

    def __init__(self, entries, cs: ConstraintSet, n_free: int):
        J = len(entries)
        self.rows = np.zeros((J, 6), int)
        self.row_mask = np.zeros((J, 6), bool)
        self.new = np.array([e["new"] for e in entries], int)  # body indices
        self.old = np.array([e["old"] for e in entries], int).reshape(J)
        self.new_slot = cs.column_of_body[self.new] // 6  # free-body slots
        old_cols = cs.column_of_body[np.array([e["old"] for e in entries], int)]
        self.old_slot = np.where(old_cols >= 0, old_cols // 6, n_free)  # n_free: the zero slot
        self.new_side = np.array([e["new_is_child"] for e in entries], int)[:, None]  # 1: child (j)
        for k, e in enumerate(entries):
            self.rows[k, : len(e["rows"])] = e["rows"]
            self.row_mask[k, : len(e["rows"])] = True
        self.old_mask = (self.row_mask & (old_cols >= 0)[:, None])[..., None]  # (J, 6, 1)
        # each free motion: (joint, slot, body, axis in that body, rotation?, q column)
        motions = [(k, slot, *m) for k, e in enumerate(entries) for slot, m in enumerate(e["motions"])]
        P = len(motions)
        self.real_joint = np.array([m[0] for m in motions], int).reshape(P)
        slot = np.array([m[1] for m in motions], int).reshape(P)
        self.motion_slot = slot  # each motion's place among its joint's
        self.motion_row = self.row_mask.sum(1)[self.real_joint] + slot  # where S^T goes
        self.rotation = np.array([m[4] for m in motions], bool).reshape(P, 1)  # else a slide
        self.real_q = np.array([m[5] for m in motions], int).reshape(P)
        # turned at each iterate: every joint's anchor on the body it reaches (from that
        # body's centre), then every motion's axis
        anchors = np.reshape([e["anchor"] for e in entries], (J, 3))
        axes = np.reshape([m[3] for m in motions], (P, 3))
        bodies = np.r_[self.new, np.array([m[2] for m in motions], int)]
        self.vectors = BodyVectors(bodies, np.concatenate([anchors, axes]), len(cs.mechanism.bodies))


class SpanningTree:
    """A spanning tree of the joint graph of an IK constraint set, built once.

    Breadth first from the grounded bodies, then from each body a ``free`` joint
    carries that no joint chain reaches (a floating base), then from any other free
    body none reaches: a floating body the chains reach (a pelvis whose feet are
    welded to the ground) is not a root, so its loop closes at one joint (the two
    legs: 11 coordinates and 5 loop rows instead of 16 and 10). A joint whose rows
    and free motions do not add up to 6 (actuator rows of an FK set) stays outside
    the tree.
    ``dof`` (D): the reduced unknowns; ``loop_rows``: the constraint rows left.
    """

    def __init__(self, cs: ConstraintSet):
        mech = cs.mechanism
        self.n_vars = cs.n_vars
        self.cs_rows = cs.n_rows
        n_free = len(cs.free_bodies)
        grounded = mech.grounded_mask
        rows_of = {jn: np.flatnonzero(cs.row_joint == jn) for jn in range(len(mech.joints))}
        incident: dict[int, list[int]] = {b: [] for b in range(len(mech.bodies))}
        roots = [b for b in range(len(mech.bodies)) if grounded[b]]
        floating = []  # the bodies free joints carry: roots where no joint chain reaches them
        for jn, joint in enumerate(mech.joints):
            i, j = mech.body_index(joint.parent), mech.body_index(joint.child)
            if joint.kind == JointKind.FREE:
                floating.append(j if not grounded[j] else i)
            elif len(rows_of[jn]) + len(MOTIONS[joint.kind]) == 6:
                incident[i].append(jn)
                incident[j].append(jn)
        depth = dict.fromkeys(roots, 0)
        entries: list[dict] = []
        queue = deque(roots)
        column = 0
        while True:
            while queue:
                body = queue.popleft()
                for jn in incident[body]:
                    joint = mech.joints[jn]
                    i, j = mech.body_index(joint.parent), mech.body_index(joint.child)
                    new = j if body == i else i
                    if new in depth:
                        continue
                    depth[new] = depth[body] + 1
                    queue.append(new)
                    Fi, Fj, xi, xj = cs.joint_frames[jn]
                    motions = []
                    for side, axis, rotation in MOTIONS[joint.kind]:
                        motions.append(((i, j)[side], (Fi, Fj)[side][:, axis], rotation, column))
                        column += 1
                    entries.append(
                        {
                            "new": new,
                            "old": body,
                            "new_is_child": new == j,
                            "rows": rows_of[jn],
                            "anchor": xj if new == j else xi,
                            "motions": motions,
                            "depth": depth[new],
                        }
                    )
            unreached = [b for b in range(len(mech.bodies)) if b not in depth]
            if not unreached:
                break
            # a body no joint chain from the roots reaches: a root of its own (a floating
            # base first; one the chains reach, e.g. a pelvis whose feet are welded, is not)
            root = next((b for b in floating if b not in depth), unreached[0])
            roots.append(root)
            depth[root] = 0
            queue.append(root)
        #: free-body slots of the floating roots, 6 unknowns each, after the joints'
        self.root_slots = [int(cs.column_of_body[b]) // 6 for b in dict.fromkeys(roots) if not grounded[b]]
        self.root_columns = column + 6 * np.arange(len(self.root_slots))
        self.dof = column + 6 * len(self.root_slots)
        self.n_free = n_free
        self.joints = _Joints(entries, cs, n_free)
        #: per depth, the positions in ``joints`` of its joints (bodies reached at that depth)
        depths = np.array([e["depth"] for e in entries], int)
        self.levels = [np.flatnonzero(depths == d) for d in np.unique(depths)]
        tree_rows = np.concatenate([e["rows"] for e in entries]) if entries else np.zeros(0, int)
        self.loop_rows = np.setdiff1d(np.arange(cs.n_rows), tree_rows)
        self.column_of_body = cs.column_of_body

    def arms_and_axes(self, R: np.ndarray):
        """Every tree joint's anchor arm (B, J, 3) from the body it reaches (world) and
        every motion's unit axis (B, P, 3), at body rotations R (B, n, 3, 3)."""
        tj = self.joints
        turned = tj.vectors.turn(R)
        return turned[:, : len(tj.new)], turned[:, len(tj.new) :]

    def joint_basis(self, states: np.ndarray, R: np.ndarray) -> np.ndarray:
        """The tangent (B, N, D) that each joint coordinate's unit rate gives every body
        at states (B, n, 7): a joint's motion (a rotation [rad] about its axis through its
        anchor, a slide [m] along it; a floating root's six tangent values) moves the
        bodies past it rigidly. A motor that is a tree joint moves by exactly its
        coordinate along it (unlike the null-space basis of :class:`ReducedKKT`, whose
        coordinates are only a basis)."""
        tj, B = self.joints, len(states)
        arm, axis = self.arms_and_axes(R)
        Zb = np.zeros((B, self.n_free + 1, 6, self.dof))
        for slot, col in zip(self.root_slots, self.root_columns, strict=True):
            Zb[:, slot, :, col : col + 6] = np.eye(6)
        # each motion's unit screw on the body it reaches: [c rate, angular rate]
        own = np.zeros((B, len(tj.new), 6, self.dof))
        screw = np.where(
            tj.rotation,
            np.concatenate([cross(arm[:, tj.real_joint], axis), axis], -1),
            np.concatenate([axis, np.zeros_like(axis)], -1),
        )
        own[:, tj.real_joint, :, tj.real_q] = np.swapaxes(screw, 0, 1)
        centre = states[..., :3]
        for level in self.levels:
            # the rigid carry from the old body to the new: c_new' = c_old' + w x (c_new - c_old)
            offset = centre[:, tj.new[level]] - centre[:, tj.old[level]]  # (B, L, 3)
            carry = np.broadcast_to(np.eye(6), offset.shape[:2] + (6, 6)).copy()
            carry[..., :3, 3:] = -skew(offset)
            Zb[:, tj.new_slot[level]] = carry @ Zb[:, tj.old_slot[level]] + own[:, level]
        return Zb[:, : self.n_free].reshape(B, self.n_vars, self.dof)

    def retract(self, states: np.ndarray, R: np.ndarray, theta: np.ndarray) -> np.ndarray:
        """States (B, n, 7) moved by joint coordinate steps theta (B, D): each tree joint
        turns or slides its side of the tree exactly (its screws taken at ``states``,
        rotations R (B, n, 3, 3)); a floating root moves by ``retract``'s rule. The tree
        joints stay as assembled as they were; a tree motor moves by exactly its step."""
        tj = self.joints
        arm, axis = self.arms_and_axes(R)
        out = states.copy()
        for slot, col in zip(self.root_slots, self.root_columns, strict=True):
            body = np.flatnonzero(self.column_of_body // 6 == slot)[0]
            out[:, body, :3] += theta[:, col : col + 3]
            out[:, body, 3:] = quat_multiply(
                quat_from_rotvec(theta[:, col + 3 : col + 6]), states[:, body, 3:]
            )
        angle = theta[:, tj.real_q]  # (B, P)
        for level in self.levels:
            joints = tj.new[level]
            # the joint's own displacement (rotation q_m, translation t_m) in world, its
            # motions applied last-listed first (a universal joint: the child's axis first)
            q_m = np.zeros((len(states), len(level), 4))
            q_m[..., 0] = 1.0
            t_m = np.zeros((len(states), len(level), 3))
            anchor = states[:, joints, :3] + arm[:, level]
            for place in range(int(tj.motion_slot.max(initial=-1)), -1, -1):
                motions = np.flatnonzero(np.isin(tj.real_joint, level) & (tj.motion_slot == place))
                if not len(motions):
                    continue
                at = np.searchsorted(level, tj.real_joint[motions])
                a, th = axis[:, motions], angle[:, motions, None]
                rot = tj.rotation[motions]  # (p, 1)
                q_step = quat_from_rotvec(np.where(rot, a * th, 0.0))
                R_step = quat_to_matrix(q_step)
                x = anchor[:, at]
                t_step = np.where(rot, x - (R_step @ x[..., None])[..., 0], a * th)
                # (R_s, t_s) o (R_m, t_m) = (R_s R_m, R_s t_m + t_s)
                t_m[:, at] = (R_step @ t_m[:, at, :, None])[..., 0] + t_step
                q_m[:, at] = quat_multiply(q_step, q_m[:, at])
            # carried by the old body's displacement G = X_old' X_old^-1
            old = tj.old[level]
            q_g = quat_multiply(out[:, old, 3:], states[:, old, 3:] * np.array([1.0, -1.0, -1.0, -1.0]))
            R_g = quat_to_matrix(q_g)
            t_g = out[:, old, :3] - (R_g @ states[:, old, :3, None])[..., 0]
            R_m = quat_to_matrix(q_m)
            c = (R_m @ states[:, joints, :3, None])[..., 0] + t_m
            out[:, joints, :3] = (R_g @ c[..., None])[..., 0] + t_g
            out[:, joints, 3:] = quat_normalize(quat_multiply(q_g, quat_multiply(q_m, states[:, joints, 3:])))
        return out


class ReducedKKT:
    """The SQP step of a batch of B frames, solved in the tree's null space.

    tree: the problem's :class:`SpanningTree`; R (B, n, 3, 3): the iterate's body
    rotations; model: the objective's Hessian model (``times``, ``project``,
    ``scale``: :class:`~looprig.core.solvers.step.HessianModel`);
    rows (B, m_cs, 2, 6): the constraint set's rows' blocks on their two bodies
    (:meth:`ConstraintSet.row_blocks`); loop_jacobian (B, m_loop, N): the dense
    Jacobian of the rows outside the tree (loop rows, then any further equality
    rows, e.g. held motors); damping (B,) relative to each Hessian's largest
    diagonal entry; dual_regularization: the loop rows' ``-eps_d``. One
    factorisation serves several right-hand sides (:meth:`solve`).
    """

    def __init__(self, tree: SpanningTree, R, model, rows, loop_jacobian, damping, dual_regularization):
        B, N, D = rows.shape[0], tree.n_vars, tree.dof
        tj = tree.joints
        self.tree, self.model, self.A_L = tree, model, loop_jacobian
        extra = loop_jacobian.shape[1] - len(tree.loop_rows)  # further equality rows, after the set's
        self.loop = np.r_[tree.loop_rows, tree.cs_rows + np.arange(extra)]  # the rows A_L holds
        self.shift = np.asarray(damping, float) * model.scale()  # eps_p (B,), absolute
        # every tree joint at once: its rows' blocks on the body it reaches (new) and comes from
        A_new = rows[:, tj.rows, tj.new_side] * tj.row_mask[..., None]  # (B, J, 6, 6)
        A_old = rows[:, tj.rows, 1 - tj.new_side] * tj.old_mask
        turned = tj.vectors.turn(R)  # (B, J + P, 3) world
        J = len(tj.new)
        arm, axis = turned[:, tj.real_joint], turned[:, J:]  # (B, P, 3): anchor - centre, axis
        # [A_new; S^T] is invertible (S: the joint's motions, rows m..5 where A_new has
        # none); its inverse's columns are a right inverse G of A_new (S^T G = 0), then a
        # null-space basis N (A_new N = 0, S^T N = I)
        M = A_new
        M[:, tj.real_joint, tj.motion_row, :3] = np.where(tj.rotation, cross(arm, axis), axis)
        M[:, tj.real_joint, tj.motion_row, 3:] = np.where(tj.rotation, axis, 0.0)
        # G's columns past a joint's rows meet only zeros (masked residuals, A_old's zero rows)
        self.G = G = _inverse(M)
        N_ = G[:, tj.real_joint, :, tj.motion_row]  # (P, B, 6): the real motions
        self.T = T = G @ A_old
        np.negative(T, out=T)
        # Z level by level from the roots: each body's motions are its parent's, carried
        Zb = np.zeros((B, tree.n_free + 1, 6, D))  # per free-body slot (+ a zero slot for the ground)
        for slot, col in zip(tree.root_slots, tree.root_columns, strict=True):
            Zb[:, slot, :, col : col + 6] = np.eye(6)
        own = np.zeros((B, len(tj.new), 6, D))
        own[:, tj.real_joint, :, tj.real_q] = N_
        for level in tree.levels:
            Zb[:, tj.new_slot[level]] = T[:, level] @ Zb[:, tj.old_slot[level]] + own[:, level]
        self.Z = Zb[:, : tree.n_free].reshape(B, N, D)
        ALZ = loop_jacobian @ self.Z
        mL = ALZ.shape[1]
        K = np.zeros((B, D + mL, D + mL))
        K[:, :D, :D] = model.project(self.Z, self.shift)
        K[:, :D, D:] = np.swapaxes(ALZ, 1, 2)
        K[:, D:, :D] = ALZ
        K[:, np.arange(D, D + mL), np.arange(D, D + mL)] = -dual_regularization
        self.K = K
        self._lu = sla.lu_factor(K[0], check_finite=False) if B == 1 else None

    def particular(self, c: np.ndarray) -> np.ndarray:
        """``e`` (B, N): the step that meets the tree rows of residuals ``c`` (B, M) with q = 0."""
        tree, tj = self.tree, self.tree.joints
        B = c.shape[0]
        driven = -np.einsum("bjxy,bjy->bjx", self.G, c[:, tj.rows] * tj.row_mask)
        eb = np.zeros((B, tree.n_free + 1, 6))
        for level in tree.levels:
            eb[:, tj.new_slot[level]] = (
                np.einsum("bjxy,bjy->bjx", self.T[:, level], eb[:, tj.old_slot[level]]) + driven[:, level]
            )
        return eb[:, : tree.n_free].reshape(B, -1)

    def solve(self, g: np.ndarray, c: np.ndarray) -> np.ndarray:
        """Steps d (B, N) for gradients g (B, N) and constraint residuals c (B, M)."""
        tree = self.tree
        e = self.particular(c)
        He = self.model.times(e[..., None])[..., 0] + self.shift[:, None] * e
        gr = ((g + He)[:, None, :] @ self.Z)[:, 0]  # matmul: a third of einsum's time
        cr = c[:, self.loop] + (self.A_L @ e[..., None])[..., 0]
        rhs = -np.concatenate([gr, cr], axis=1)
        if self._lu is not None:
            q = sla.lu_solve(self._lu, rhs[0], check_finite=False)[None]
        else:
            try:
                q = np.linalg.solve(self.K, rhs[..., None])[..., 0]
            except np.linalg.LinAlgError:  # an exactly singular frame: least squares for all
                q = np.einsum("bij,bj->bi", np.linalg.pinv(self.K), rhs)
        return e + (self.Z @ q[:, : tree.dof, None])[..., 0]


def _inverse(M: np.ndarray) -> np.ndarray:
    """Inverses of a stack of matrices; pseudo-inverses if one is exactly singular (a
    joint whose free motions its own rows block: a joint pulled far apart)."""
    try:
        return np.linalg.inv(M)
    except np.linalg.LinAlgError:
        return np.linalg.pinv(M)


#: A batch of one frame whose whole KKT matrix has at most this many rows is factorised
#: whole (:class:`DenseKKT`): fewer numpy calls than the tree. Measured on one BLAS
#: thread, factorisation and one solve: 0.08 ms dense against 0.24 ms reduced for the
#: four-bar's 36 rows, 0.35 against 0.42 ms for the two legs' 150.
DENSE_KKT_ROWS = 200


class DenseKKT:
    """The KKT step of a batch of one frame from the whole matrix
    ``[[H + eps_p I, A^T], [A, -eps_d I]]`` (LU): H (1, N, N), A (1, M, N), damping (1,)
    relative to H's largest diagonal entry. An exactly singular matrix falls back to
    least squares."""

    def __init__(self, H, A, damping, dual_regularization: float):
        H, A = H[0], A[0]
        n, m = H.shape[0], A.shape[0]
        self.n = n
        K = np.empty((n + m, n + m))
        K[:n, :n] = H
        K[np.arange(n), np.arange(n)] += float(damping[0]) * max(
            float(np.abs(np.diag(H)).max(initial=0.0)), 1.0
        )
        K[:n, n:] = A.T
        K[n:, :n] = A
        K[n:, n:] = 0.0
        K[np.arange(n, n + m), np.arange(n, n + m)] = -dual_regularization
        self._lu, self._pivots, info = _getrf(K, overwrite_a=True)
        self._K = K if info > 0 else None  # an exactly zero pivot: least squares instead

    def solve(self, g: np.ndarray, c: np.ndarray) -> np.ndarray:
        """The step d (1, N) for gradient g (1, N) and constraint residual c (1, M)."""
        rhs = -np.concatenate([g[0], c[0]])
        if self._K is not None:
            solution = np.linalg.lstsq(self._K, rhs, rcond=None)[0]
        else:
            solution = _getrs(self._lu, self._pivots, rhs)[0]
        return solution[None, : self.n]


_getrf, _getrs = sla.lapack.get_lapack_funcs(("getrf", "getrs"), dtype=np.float64)
