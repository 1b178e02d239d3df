"""Forward kinematics from the spanning tree's joint coordinates, frame axis last.

The iterate of :func:`~looprig.core.solvers.tree_newton.solve` is the tree's joint coordinates ``q``
(D, F): each revolute, prismatic or cylindrical tree joint's turn [rad] and slide [m]
away from the file's pose; and rotations: each floating root's pose and each ball
joint's turn S away from the file's pose (its three coordinates stay zero: a step turns
S about the joint's axes, as a root turns, so no chart of three angles is ever
singular). From them every body's pose
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

import math
from dataclasses import dataclass

import numpy as np

from ..maths.frame_last import axis_angle, axis_rotation, cross, dot, matmul3, quaternions
from ..maths.rotations import quat_to_matrix
from ..model.parts import JointKind

#: Tree joint kinds :class:`TreeForward` poses from coordinates (a universal or planar
#: joint's turns about two bodies' axes have no such form; :func:`~looprig.core.solvers.tree_newton.solve`
#: retracts those).
FORWARD_KINDS = {
    JointKind.FIXED,
    JointKind.REVOLUTE,
    JointKind.PRISMATIC,
    JointKind.CYLINDRICAL,
    JointKind.SPHERICAL,
}


def basis_with_axis(u: np.ndarray) -> np.ndarray:
    """A right-handed orthonormal basis (3, 3) whose third column is the unit vector u."""
    a, b, c = (float(v) for v in u)
    if abs(a) <= min(abs(b), abs(c)):  # x = e_k x u for u's smallest component k, normalised
        x = np.array([0.0, -c, b])
    elif abs(b) <= abs(c):
        x = np.array([c, 0.0, -a])
    else:
        x = np.array([-b, a, 0.0])
    x /= math.sqrt(x @ x)
    y = np.array([b * x[2] - c * x[1], c * x[0] - a * x[2], a * x[1] - b * x[0]])  # u x x
    return np.stack([x, y, np.asarray(u, dtype=float)], axis=1)


@dataclass(frozen=True)
class Ball:
    """A spherical tree joint as :class:`TreeForward` poses it: its place in the level
    order, its slot among the rotations (after the roots'), its three coordinates (3,)
    with their axes ``d`` (3, 3), one a row, in the joint frame's axes before the turn
    (``carried`` False: axes fixed in the old body) or after it (True: in the new body,
    as :data:`~looprig.core.solvers.kkt.MOTIONS` takes a child's)."""

    joint: int
    slot: int
    columns: np.ndarray
    d: np.ndarray
    carried: bool


class TreeForward:
    """Forward kinematics of a spanning tree (its
    :class:`~looprig.core.solvers.tree.TreeShape`) from its coordinates, built once per
    tree (:func:`forward`)."""

    def __init__(self, model):
        self.model = model
        s0 = model.initial_state
        R0 = quat_to_matrix(s0[:, 3:])
        self.axes0 = np.ascontiguousarray(R0.transpose(0, 2, 1))  # (n, 3, 3): A0[b, k] = R0 e_k
        self.c0 = s0[:, :3].copy()
        reached = set(model.new.tolist()) | set(model.root_body.tolist())
        self.fixed_bodies = np.array([b for b in range(model.n) if b not in reached], int)
        self.blocks = []  # per tree joint: the constant (4, 4) maps of :meth:`poses`
        self.joints = []  # per tree joint in level order: (old, new, U^T, V^T, anchors, turn, slide, ball)
        self.balls = []
        roots = len(model.root_body)
        for i, k in enumerate(model.order):
            turn = slide = ball = None
            motions = model.motions_of[k]
            if model.kind[k] == JointKind.SPHERICAL:  # the joint frame itself: its axes are the turns'
                U = model.axes_old[k]
            else:
                u = model.axes_old[k][:, 0]
                U = basis_with_axis(u / np.linalg.norm(u))
            V = U.T @ model.relative0[k]
            if model.kind[k] == JointKind.SPHERICAL:
                carried = bool(model.axis_body[motions[0]] == model.new[k])
                d = np.array([(V if carried else U.T) @ model.axis_local[p] for p in motions])
                ball = len(self.balls)
                self.balls.append(Ball(i, roots + ball, model.motion_q[motions], d, carried))
            for p in motions if ball is None else ():
                if model.rotation[p]:
                    turn = int(model.motion_q[p])
                else:
                    slide = int(model.motion_q[p])
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
                    ball,
                )
            )
            self.blocks.append((to_axis, from_axis))
        self.turns = np.array([j[6] for j in self.joints if j[6] is not None], int)
        self.motion_of_coordinate = {int(q): p for p, q in enumerate(model.motion_q)}
        self.ball_columns = (
            np.concatenate([b.columns for b in self.balls]) if self.balls else np.zeros(0, int)
        )
        # every ball joint at once for :meth:`moved`: its d rows (s, 3, 3), coordinates (s, 3),
        # slots among the rotations and whether its turn is carried by the new body; and per
        # ball the motions its coordinates drive, for :meth:`poses`
        self.ball_d = np.array([b.d for b in self.balls]).reshape(-1, 3, 3)
        self.ball_columns_3 = self.ball_columns.reshape(-1, 3)
        self.ball_slots = np.array([b.slot for b in self.balls], int)
        carried = np.array([b.carried for b in self.balls], bool)
        self.carried_balls, self.other_balls = np.flatnonzero(carried), np.flatnonzero(~carried)
        self.ball_motions = [
            np.array([self.motion_of_coordinate[int(q)] for q in b.columns], int) for b in self.balls
        ]

    # ------------------------------------------------------------------ coordinates
    def coordinates(self, R: np.ndarray, c: np.ndarray, near: np.ndarray | None = None):
        """The coordinates of poses R (n, 3, 3, F), c (n, 3, F): q (D, F), read joint by
        joint (each turn about, slide along its axis as the old body holds it; a floating
        root's and a ball joint's columns zero), the rotations (r + s, 3, 3, F) (each
        root's world axes, then each ball joint's turn S as rows ``S e_k``) and the roots'
        positions (r, 3, F). A pose whose tree joints are open reads as the assembled one
        nearest joint by joint. Turns are read in (-pi, pi], or within pi of ``near``
        (D, F) where given."""
        model = self.model
        q = np.zeros((model.D, R.shape[-1]))
        rotations = np.empty((len(model.root_body) + len(self.balls), 3, 3, R.shape[-1]))
        for old, new, Ut, Vt, anchor_old, anchor_new, turn, slide, ball in self.joints:
            if turn is not None or ball is not None:  # U^T (R_o^T R_n) V^T = Rz(theta) or S when assembled
                rel = np.einsum("jif,jkf->ikf", R[old], R[new])
                M = np.einsum("ij,jkf,kl->ilf", Ut, rel, Vt)
            if turn is not None:
                q[turn] = np.arctan2(M[1, 0] - M[0, 1], M[0, 0] + M[1, 1])
            if ball is not None:
                rotations[self.balls[ball].slot] = M.transpose(1, 0, 2)
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
            q[self.ball_columns] = 0.0
        roots = model.root_body
        rotations[: len(roots)] = R[roots].transpose(0, 2, 1, 3)
        return q, rotations, c[roots].copy()

    def zero_rotations(self, F: int = 1) -> np.ndarray:
        """The rotations (r + s, 3, 3, F) of the file's pose."""
        roots = self.axes0[self.model.root_body]
        balls = np.broadcast_to(np.eye(3), (len(self.balls), 3, 3))
        return np.repeat(np.concatenate([roots, balls])[..., None], F, axis=-1)

    # ------------------------------------------------------------------ poses
    def poses(self, q: np.ndarray, rotations: np.ndarray, root_c: np.ndarray, motions: bool = True):
        """Every body's axes A (n, 3, 3, F) and CoM c (n, 3, F) [m] at coordinates q (D, F),
        rotations (r + s, 3, 3, F) and root positions, and each motion's world axis and a
        point on it (P, 3, F), the screws' ingredients (:meth:`screws`; ``motions`` False:
        None, for a step that evaluates residuals only). A and c are views of one
        (n, 4, 3, F) array of pose blocks ``[axes; CoM]``, each tree joint two products by
        constant (4, 4) maps and a turn of two rows (all three rows by S^T at a ball joint)."""
        model = self.model
        F = q.shape[-1]
        P = np.empty((model.n, 4, 3, F))
        fixed, roots = self.fixed_bodies, len(model.root_body)
        P[fixed, :3] = self.axes0[fixed][..., None]
        P[fixed, 3] = self.c0[fixed][..., None]
        P[model.root_body, :3] = rotations[:roots]
        P[model.root_body, 3] = root_c
        if motions:
            axis, anchor = np.empty((2, len(model.motion_q), 3, F))
        cos = np.cos(q[self.turns])
        sin = np.sin(q[self.turns])
        t = 0
        for (old, new, *_, turn, slide, ball), (to_axis, from_axis) in zip(
            self.joints, self.blocks, strict=True
        ):
            Y = (to_axis @ P[old].reshape(4, 3 * F)).reshape(4, 3, F)  # [axes of R_o U; anchor]
            if turn is not None:
                x, y = Y[0] * cos[t], Y[1] * cos[t]
                x += Y[1] * sin[t]
                y -= Y[0] * sin[t]
                Y[0], Y[1] = x, y
                t += 1
                if motions:
                    p = self.motion_of_coordinate[turn]
                    axis[p], anchor[p] = Y[2], Y[3]
            if ball is not None:
                b = self.balls[ball]
                before = Y[:3].copy()
                Y[:3] = np.einsum("kjf,jif->kif", rotations[b.slot], before)
                if motions:
                    p = self.ball_motions[ball]
                    axis[p] = np.einsum("kj,jif->kif", b.d, Y[:3] if b.carried else before)
                    anchor[p] = Y[3]
            if slide is not None:
                if motions:
                    p = self.motion_of_coordinate[slide]
                    axis[p], anchor[p] = Y[2], Y[3]
                Y[3] += Y[2] * q[slide]
            np.matmul(from_axis, Y.reshape(4, 3 * F), out=P[new].reshape(4, 3 * F))
        return P[:, :3], P[:, 3], (axis, anchor) if motions else None

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

    def moved(self, q, rotations, root_c, dq) -> None:
        """Step the coordinates in place by dq (D, F): joint coordinates add; a floating
        root turns about its CoM by ``dq[3:6]`` (world) and moves by ``dq[:3]``; a ball
        joint's S turns by its three coordinates' step about their axes."""
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
                x = rotations[r, a]
                rotations[r, a] = x * ca + cross(k, x) * sa + k * dot(k, x) * (1.0 - ca)
        if len(self.balls):  # every ball joint's turn at once, in its d rows' axes
            u = np.einsum("spk,spf->skf", self.ball_d, dq[self.ball_columns_3])
            Qt = axis_rotation(*axis_angle(u)).transpose(0, 2, 1, 3)
            # rows S e_k; S <- S Q where the new body carries the turn, else Q S
            for picked, carried in ((self.carried_balls, True), (self.other_balls, False)):
                if len(picked):
                    slots, B = self.ball_slots[picked], rotations[self.ball_slots[picked]]
                    rotations[slots] = matmul3(Qt[picked], B) if carried else matmul3(B, Qt[picked])
        q[self.ball_columns] = 0.0

    @staticmethod
    def states(A: np.ndarray, c: np.ndarray) -> np.ndarray:
        """Body states (F, n, 7) of axes A (n, 3, 3, F) and CoM positions c (n, 3, F)."""
        return np.concatenate([c, quaternions(A)], axis=1).transpose(2, 0, 1).copy()

    def posed(self, coordinates) -> np.ndarray:
        """Body states (F, n, 7) at ``coordinates`` (q (D, F), rotations, root positions)."""
        return self.states(*self.poses(*coordinates, motions=False)[:2])


def applies(model) -> bool:
    """Whether every tree joint of ``model`` is a kind :class:`TreeForward` poses."""
    return all(kind in FORWARD_KINDS for kind in model.kind)


def forward(model) -> TreeForward:
    """The model's :class:`TreeForward`, built on first use and kept on its
    :class:`~looprig.core.solvers.tree.TreeShape`: it reads the tree alone, so every
    problem on one tree shares it."""
    shape = model.shape
    built = getattr(shape, "_forward", None)
    if built is None:
        built = shape._forward = TreeForward(shape)
    return built
