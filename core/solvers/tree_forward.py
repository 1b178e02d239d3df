"""Forward kinematics from the spanning tree's joint coordinates, frame axis last.

The iterate of :func:`~looprig.core.solvers.tree_newton.solve` is the tree's joint coordinates ``q``
(D, F): each revolute, prismatic or cylindrical tree joint's turn [rad] and slide [m]
away from the file's pose, and each floating root's pose. From them every body's pose
follows one tree depth at a time (:meth:`TreeForward.poses`), each joint with constant
bases: the new body's rotation is ``R_old U Rz(theta) V`` with ``U`` a basis whose third
column is the joint axis and ``V = U^T R_old0^T R_new0``, so a joint costs two products
by a constant 3x3 matrix (one BLAS call each on the frames' (3, 3F) block) and a turn
of two columns. Poses from coordinates are assembled by construction: no tree joint
ever opens, and the screws of the tree's coordinates (what :class:`TreeKinematics`'s
rows and metric read) come out of the same pass.

Layout: a body's rotation R is kept as its axes ``A[k] = R e_k`` (n, 3 axes, 3, F), so
``R C`` for a constant C is ``C^T`` times A's (3, 3F) block; :meth:`TreeForward.rotations`
gives R itself (n, 3, 3, F) as a view.

Hand-written: no library offers batched forward kinematics over a frame axis in numpy.
"""

import numpy as np

from ..maths.frame_last import cross, dot, quaternions
from ..maths.rotations import quat_to_matrix
from ..model.parts import JointKind

#: Tree joint kinds :class:`TreeForward` poses from coordinates (a spherical joint's
#: three turns have no such constant-basis form; :func:`~looprig.core.solvers.tree_newton.solve`
#: retracts those).
FORWARD_KINDS = {JointKind.FIXED, JointKind.REVOLUTE, JointKind.PRISMATIC, JointKind.CYLINDRICAL}


def basis_with_axis(u: np.ndarray) -> np.ndarray:
    """A right-handed orthonormal basis (3, 3) whose third column is the unit vector u."""
    helper = np.eye(3)[int(np.argmin(np.abs(u)))]
    x = np.cross(helper, u)
    x /= np.linalg.norm(x)
    return np.stack([x, np.cross(u, x), u], axis=1)


class TreeForward:
    """Forward kinematics of a :class:`~looprig.core.solvers.tree.TreeKinematics` from its
    coordinates, built once per problem (:func:`forward`)."""

    def __init__(self, model):
        self.model = model
        mech = model.problem.mechanism
        s0 = mech.initial_state()
        R0 = quat_to_matrix(s0[:, 3:])
        self.axes0 = np.ascontiguousarray(R0.transpose(0, 2, 1))  # (n, 3, 3): A0[b, k] = R0 e_k
        self.c0 = s0[:, :3].copy()
        reached = set(model.new.tolist()) | set(model.root_body.tolist())
        self.fixed_bodies = np.array([b for b in range(model.n) if b not in reached], int)
        self.blocks = []  # per tree joint: the constant (4, 4) maps of :meth:`poses`
        self.joints = []  # per tree joint in level order: (old, new, U^T, V^T, anchors, turn, slide)
        for k in model.order:
            turn = slide = None
            for p in model.motions_of[k]:
                if model.rotation[p]:
                    turn = int(model.motion_q[p])
                else:
                    slide = int(model.motion_q[p])
            u = model.axes_old[k][:, 0]
            U = basis_with_axis(u / np.linalg.norm(u))
            V = U.T @ model.relative0[k]
            # on a pose block [axes; CoM] (4, 3F): to_axis gives [axes of R_o U; the anchor],
            # from_axis the new body's [axes; CoM] from that (turned, slid)
            to_axis, from_axis = np.eye(4), np.eye(4)
            to_axis[:3, :3], to_axis[3, :3] = U.T, model.anchor_old[k]
            from_axis[:3, :3], from_axis[3, :3] = V.T, -model.anchor_new[k] @ V.T
            self.joints.append(
                (
                    int(model.old[k]),
                    int(model.new[k]),
                    np.ascontiguousarray(U.T),
                    np.ascontiguousarray(V.T),
                    model.anchor_old[k],
                    model.anchor_new[k],
                    turn,
                    slide,
                )
            )
            self.blocks.append((to_axis, from_axis))
        self.turns = np.array([j[6] for j in self.joints if j[6] is not None], int)
        self.motion_of_coordinate = {int(q): p for p, q in enumerate(model.motion_q)}

    # ------------------------------------------------------------------ coordinates
    def coordinates(self, R: np.ndarray, c: np.ndarray, near: np.ndarray | None = None):
        """The coordinates (D, F) of poses R (n, 3, 3, F), c (n, 3, F), read joint by joint
        (each turn about, slide along its axis as the old body holds it; a floating root's
        columns zero), and the roots' poses (axes (r, 3, 3, F), positions (r, 3, F)). A
        pose whose tree joints are open reads as the assembled one nearest joint by joint.
        Turns are read in (-pi, pi], or within pi of ``near`` (D, F) where given."""
        model = self.model
        q = np.zeros((model.D, R.shape[-1]))
        for old, new, Ut, Vt, anchor_old, anchor_new, turn, slide in self.joints:
            if turn is not None:  # U^T (R_o^T R_n) V^T = Rz(theta) when assembled
                rel = np.einsum("jif,jkf->ikf", R[old], R[new])
                M = np.einsum("ij,jkf,kl->ilf", Ut, rel, Vt)
                q[turn] = np.arctan2(M[1, 0] - M[0, 1], M[0, 0] + M[1, 1])
            if slide is not None:
                u = np.einsum("ijf,j->if", R[old], Ut[2])
                gap = (
                    np.einsum("ijf,j->if", R[new], anchor_new)
                    + c[new]
                    - np.einsum("ijf,j->if", R[old], anchor_old)
                    - c[old]
                )
                q[slide] = (gap * u).sum(0)
        if near is not None:
            turns = model.angle_coordinate
            q[turns] += 2.0 * np.pi * np.round((near[turns] - q[turns]) / (2.0 * np.pi))
        roots = model.root_body
        return q, np.ascontiguousarray(R[roots].transpose(0, 2, 1, 3)), c[roots].copy()

    # ------------------------------------------------------------------ poses
    def poses(self, q: np.ndarray, root_axes: np.ndarray, root_c: np.ndarray):
        """Every body's axes A (n, 3, 3, F) and CoM c (n, 3, F) [m] at coordinates q (D, F)
        and root poses, and each motion's world axis and a point on it (P, 3, F), the
        screws' ingredients (:meth:`screws`). A and c are views of one (n, 4, 3, F) array
        of pose blocks ``[axes; CoM]``, each tree joint two products by constant (4, 4)
        maps and a turn of two rows."""
        model = self.model
        F = q.shape[-1]
        P = np.empty((model.n, 4, 3, F))
        fixed = self.fixed_bodies
        P[fixed, :3] = self.axes0[fixed][..., None]
        P[fixed, 3] = self.c0[fixed][..., None]
        P[model.root_body, :3] = root_axes
        P[model.root_body, 3] = root_c
        n_motions = len(model.motion_q)
        axis = np.empty((n_motions, 3, F))
        anchor = np.empty((n_motions, 3, F))
        cos = np.cos(q[self.turns])
        sin = np.sin(q[self.turns])
        t = 0
        for (old, new, *_, turn, slide), (to_axis, from_axis) in zip(self.joints, self.blocks, strict=True):
            Y = (to_axis @ P[old].reshape(4, 3 * F)).reshape(4, 3, F)  # [axes of R_o U; anchor]
            if turn is not None:
                x, y = Y[0] * cos[t], Y[1] * cos[t]
                x += Y[1] * sin[t]
                y -= Y[0] * sin[t]
                Y[0], Y[1] = x, y
                t += 1
                p = self.motion_of_coordinate[turn]
                axis[p], anchor[p] = Y[2], Y[3]
            if slide is not None:
                p = self.motion_of_coordinate[slide]
                axis[p], anchor[p] = Y[2], Y[3]
                Y[3] += Y[2] * q[slide]
            np.matmul(from_axis, Y.reshape(4, 3 * F), out=P[new].reshape(4, 3 * F))
        return P[:, :3], P[:, 3], (axis, anchor)

    @staticmethod
    def rotations(A: np.ndarray) -> np.ndarray:
        """Rotation matrices (n, 3, 3, F) of axes A (n, 3, 3, F) (a view)."""
        return A.transpose(0, 2, 1, 3)

    def screws(self, A: np.ndarray, c: np.ndarray, motions):
        """The coordinates' screws omega, v (3, D, F) (:meth:`TreeKinematics.screws`'s
        layout) from the motions' world axes and anchors (P, 3, F) that :meth:`poses`
        returned."""
        axis, anchor = motions
        return self.model.motion_screws(c, anchor, axis)

    def moved(self, q, root_axes, root_c, dq) -> None:
        """Step the coordinates in place by dq (D, F): joint coordinates add; a floating
        root turns about its CoM by ``dq[3:6]`` (world) and moves by ``dq[:3]``."""
        model = self.model
        cols = model.root_columns
        q += dq
        for r, col in enumerate(cols):
            q[col : col + 6] = 0.0
            root_c[r] += dq[col : col + 3]
            w = dq[col + 3 : col + 6]
            angle = np.sqrt((w**2).sum(0))
            k = w / np.where(angle > 0.0, angle, 1.0)
            ca, sa = np.cos(angle), np.sin(angle)
            for a in range(3):  # Rodrigues on each axis
                x = root_axes[r, a]
                root_axes[r, a] = x * ca + cross(k, x) * sa + k * dot(k, x) * (1.0 - ca)

    @staticmethod
    def states(A: np.ndarray, c: np.ndarray) -> np.ndarray:
        """Body states (F, n, 7) of axes A (n, 3, 3, F) and CoM positions c (n, 3, F)."""
        return np.concatenate([c, quaternions(A)], axis=1).transpose(2, 0, 1).copy()


def applies(model) -> bool:
    """Whether every tree joint of ``model`` is a kind :class:`TreeForward` poses."""
    return all(kind in FORWARD_KINDS for kind in model.kind)


def forward(model) -> TreeForward:
    """The model's :class:`TreeForward`, built on first use and kept on it."""
    built = getattr(model, "_forward", None)
    if built is None:
        built = model._forward = TreeForward(model)
    return built
