"""Joint and actuator constraints, vectorised by primitive.

Every joint kind is a combination of three primitives, each evaluated for all
of its instances in the mechanism at once (stacked numpy arrays, no Python loop
over joints):

* ``point`` (3 rows):  ``R_i x_i + c_i - R_j x_j - c_j``                      [m]
* ``dot``   (1 row):   ``L (R_i u_i) . (R_j v_j)`` — axis orthogonality       [m]
* ``slide`` (1 row):   ``(p_j - p_i) . (R_i n_i) - d`` — offset along an axis [m]

``L`` is the mean distance between joint anchors (paper III.C), so rotational
rows weigh like translational ones. ``p_i = R_i x_i + c_i`` are anchor points.
Revolute and cylindrical angle actuators rotate ``u_i`` by the actuator angle
about the joint axis (paper eq. for ``A(p, s_i, s_j)``); displacement actuators
set ``d``.

Jacobians are with respect to the tangent ``[dc, dtheta]`` of each non-grounded
body (see :mod:`rotations`), 6 columns per body in body order; grounded bodies
are not unknowns. All evaluations accept states with leading batch axes.
"""

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from ..maths.rotations import (
    BodyVectors,
    bilinear_entries,
    frame_with_axes,
    quat_to_matrix,
    tangent_block_entries,
)
from .coupling_rows import CouplingRows
from .mechanism import Mechanism
from .parts import ActuatedMotion, JointKind
from .primitives import (
    CLOSURE_POINTS,
    FrameClosure,
    JacobianBlocks,
    JointRows,
    StackBuilder,
    X,
    Y,
    Z,
    mean_joint_distance,
)

_EYE3 = np.eye(3)


class ConstraintSet:
    """The constraint vector ``C(s)`` of a mechanism and its Jacobian.

    With ``actuated=True`` actuator rows are appended (forward kinematics,
    ``C_FK(p, s)``); with ``actuated=False`` actuated joints are passive
    (the state-based IK's ``C_IK(s)``). ``closures`` (:class:`FrameClosure`)
    add the rows of loops that are open in the initial configuration (to
    assemble them); their rows follow the joints' in :meth:`worst_joint`. The
    mechanism's couplings add one row each, last (:class:`CouplingRows`).
    """

    def __init__(self, mechanism: Mechanism, actuated: bool, closures: Sequence[FrameClosure] = ()):
        self.mechanism = mechanism
        self.actuated = actuated
        self.length_scale = mean_joint_distance(mechanism)
        n = len(mechanism.bodies)
        grounded = mechanism.grounded_mask
        self.free_bodies = np.flatnonzero(~grounded)
        self.column_of_body = np.full(n, -1)
        self.column_of_body[self.free_bodies] = 6 * np.arange(len(self.free_bodies))
        self.n_vars = 6 * len(self.free_bodies)

        R0 = quat_to_matrix(mechanism.initial_state()[:, 3:])
        c0 = mechanism.initial_state()[:, :3]
        point, dot, slide = StackBuilder(3), StackBuilder(1), StackBuilder(1)
        row_joint: list[list[int]] = [[], [], []]  # joint index per instance, per primitive
        actuator_slot = {j.name: k for k, j in enumerate(mechanism.actuated_joints)}
        #: per joint: its frame's axes (3, 3 columns) in the parent's and the child's
        #: coordinates, and its anchor (3,) in each body's coordinates [m]
        self.joint_frames: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []

        for jn, joint in enumerate(mechanism.joints):
            i, j = mechanism.body_index(joint.parent), mechanism.body_index(joint.child)
            F = frame_with_axes(joint.axis, joint.secondary_axis)  # world, initial
            rows = JointRows(
                point,
                dot,
                slide,
                row_joint,
                jn,
                i,
                j,
                Fi=R0[i].T @ F,
                Fj=R0[j].T @ F,  # joint frame axes in body coordinates
                xi=R0[i].T @ (joint.anchor - c0[i]),
                xj=R0[j].T @ (joint.anchor - c0[j]),
            )
            self.joint_frames.append((rows.Fi, rows.Fj, rows.xi, rows.xj))
            rows.add_passive(joint.kind)
            if actuated and joint.actuator is not None:
                slot = actuator_slot[joint.name]
                if joint.actuator.motion == ActuatedMotion.ANGLE:
                    # (R_i R[p, a_x] a_y) . (R_j a_z): u(p) = cos p a_y + sin p a_z
                    rows.dot(Y, Z, rotated=rows.Fi[:, Z], actuator=slot)
                else:
                    rows.slide(X, actuator=slot)
        self.closure_names = [c.name for c in closures]
        for k, closure in enumerate(closures):
            T_i, T_j = np.asarray(closure.T_i, float), np.asarray(closure.T_j, float)
            kind = JointKind(closure.kind)
            if kind not in CLOSURE_POINTS:
                raise ValueError(
                    f"closure {closure.name!r}: kind {kind.value} is not one of spherical, revolute, fixed"
                )
            F = frame_with_axes(closure.axis, None)  # closure frame -> joint frame (x = axis)
            for offset in CLOSURE_POINTS[kind]:
                local = self.length_scale * (F @ offset)  # [m] in the closure frames' coordinates
                point.add(
                    mechanism.body_index(closure.body_i),
                    mechanism.body_index(closure.body_j),
                    T_i[:3, :3] @ local + T_i[:3, 3],
                    T_j[:3, :3] @ local + T_j[:3, 3],
                )
                row_joint[0].append(len(mechanism.joints) + k)

        self._point = point.build(0)
        self._dot = dot.build(3 * len(point.items))
        self._slide = slide.build(3 * len(point.items) + len(dot.items))
        self.n_rows = 3 * len(point.items) + len(dot.items) + len(slide.items)
        self.row_joint = np.concatenate(
            [np.repeat(np.array(row_joint[0], dtype=int), 3), row_joint[1], row_joint[2]]
        ).astype(int)
        self.n_actuators = len(actuator_slot)
        self._subsets: dict[bytes, tuple] = {}
        self._couplings = None
        if mechanism.couplings:
            first = len(mechanism.joints) + len(closures)
            self._couplings = CouplingRows(mechanism, self.n_rows, self.length_scale, self.column_of_body)
            self.row_joint = np.concatenate([self.row_joint, first + np.arange(len(mechanism.couplings))])
            self.n_rows += len(mechanism.couplings)
            self.closure_names += [c.name for c in mechanism.couplings]
        self._prepare_vectors()
        self._prepare_scatter()

    # ----------------------------------------------------------------- evaluation
    def _actuator_values(self, p, batch_shape) -> np.ndarray:
        if not (self.actuated and self.n_actuators):
            return np.zeros(batch_shape + (0,))
        p = np.asarray(p, dtype=float)
        if p.shape[-1:] != (self.n_actuators,):
            raise ValueError(f"expected {self.n_actuators} actuator values, got shape {p.shape}")
        return p

    def evaluate(self, state: np.ndarray, actuator_values=None, jacobian: bool = True, R=None):
        """Residual ``C`` (..., m) [m] and, optionally, the Jacobian blocks.

        Returns ``(residual, blocks)`` where ``blocks`` (:class:`JacobianBlocks`) feeds
        :meth:`dense`, :meth:`row_blocks` or :meth:`sparse`; None without ``jacobian``.
        ``R`` may pass the body rotation matrices (..., n, 3, 3) of ``state`` when already known.
        """
        state = np.asarray(state, dtype=float)
        batch = state.shape[:-2]
        p = self._actuator_values(actuator_values, batch)
        c = state[..., :3]
        R = quat_to_matrix(state[..., 3:]) if R is None else R
        n_point, n_dot, n_slide = len(self._point.bi), len(self._dot.bi), len(self._slide.bi)
        points, dots, slides = self._row_slices
        v = self._vector_slices
        # the body-fixed vectors in world axes (..., V, 3), each body's turned by one product;
        # for the Jacobian with the bank's further rows (see _prepare_vectors)
        W = self._turn[jacobian].turn(R)
        if self._acted_dot is not None:  # actuator rows: u rotated by the actuator angle about the joint axis
            slot, body, a, a_turned, index, scaled = self._acted_dot
            angle = p[..., slot, None]  # (..., Ka, 1)
            u = np.cos(angle) * a + np.sin(angle) * a_turned
            W[..., index, :] = np.einsum("...kab,...kb->...ka", R[..., body, :, :], u)
            if jacobian:
                W[..., scaled, :] = self.length_scale * W[..., index, :]
        # anchors [point x_i, slide x_j | point x_j, slide x_i] as world points: the first half
        # minus the second is every point row (p_i - p_j) and every slide's d = p_j - p_i
        anchors = W[..., v["anchors"], :] + c[..., self._anchor_body, :]
        gap = anchors[..., : n_point + n_slide, :] - anchors[..., n_point + n_slide :, :]
        residual = np.empty(batch + (self.n_rows,))
        if n_point:
            residual[..., points] = gap[..., :n_point, :].reshape(batch + (3 * n_point,))
        if n_dot:
            a, b = W[..., v["dot_i"], :], W[..., v["dot_j"], :]
            residual[..., dots] = self.length_scale * np.einsum("...a,...a->...", a, b)
        if n_slide:
            d, n = gap[..., n_point:, :], W[..., v["slide_axis"], :]
            np.einsum("...a,...a->...", d, n, out=residual[..., slides])
            if self._acted_slide is not None:
                rows, slot = self._acted_slide
                residual[..., rows] -= p[..., slot]
        coupling_blocks = None
        if self._couplings is not None:
            coupling_rows, coupling_blocks = self._couplings.evaluate(state, R, jacobian)
            residual[..., slides.stop :] = coupling_rows
        if not jacobian:
            return residual, None

        # every entry of every row's blocks is x1 y2 - x2 y1 over the bank (_prepare_block_entries)
        W[..., v["unit"], :] = _EYE3
        if n_slide:
            np.add(d, W[..., v["slide_i"], :], out=W[..., v["slide_d_wi"], :])
        blocks = bilinear_entries(W.reshape(batch + (-1,)), *self._block_entries)  # (..., m, 2, 6)
        return residual, JacobianBlocks(blocks, coupling_blocks)

    def tolerance(self, relative: float) -> float:
        """[m] the residual ``max|C|`` the solvers accept: ``relative`` times the mean joint
        distance, or the mechanism's :attr:`~looprig.core.model.mechanism.Mechanism.closure_gap`
        when larger (loops its file leaves open by that much close nowhere more tightly)."""
        return max(relative * self.length_scale, self.mechanism.closure_gap)

    def residual(self, state, actuator_values=None) -> np.ndarray:
        """``C(s)``: (..., n, 7) -> (..., m) [m]."""
        return self.evaluate(state, actuator_values, jacobian=False)[0]

    def jacobian(self, state, actuator_values=None, sparse: bool = False):
        """``dC/ds`` in tangent coordinates: (..., m, 6 n_free) dense or (m, N) CSR."""
        _, blocks = self.evaluate(state, actuator_values)
        return self.sparse(blocks) if sparse else self.dense(blocks, np.shape(state)[:-2])

    # ----------------------------------------------------------------- assembly
    def _prepare_vectors(self) -> None:
        """The primitives' body-fixed vectors in one stack, turned by one product per
        evaluation, and the index arrays that read the rows and their Jacobian from it.

        Stack (``_vector_slices``): anchors (point x_i, slide x_j, point x_j, slide x_i), dot
        u_i, dot v_j, slide n_i; with the Jacobian the bank follows: L u_i, then e_x, e_y, e_z
        and each slide's ``d + w_i``, set per evaluation.
        """
        P, D, S = self._point, self._dot, self._slide
        parts = {
            "point_i": (P.bi, P.a),
            "slide_j": (S.bj, S.d),
            "point_j": (P.bj, P.b),
            "slide_i": (S.bi, S.a),
            "dot_i": (D.bi, D.a),
            "dot_j": (D.bj, D.b),
            "slide_axis": (S.bi, S.b),
            "dot_scaled": (D.bi, self.length_scale * D.a),
            "unit": (np.zeros(3, int), None),  # set per evaluation, as the next
            "slide_d_wi": (S.bi, None),
        }
        self._vector_slices, start = {}, 0
        for name, (bodies, _) in parts.items():
            self._vector_slices[name] = slice(start, start + len(bodies))
            start += len(bodies)
        v = self._vector_slices
        v["anchors"] = slice(0, v["slide_i"].stop)
        turned = [(np.asarray(b, int), np.reshape(x, (-1, 3))) for b, x in parts.values() if x is not None]
        bank_body = np.concatenate([b for b, _ in turned])
        bank_local = np.concatenate([x for _, x in turned])
        rotated = v["slide_axis"].stop  # the primitives' own vectors (also read by curvature)
        self._vector_body, self._vector_local = bank_body[:rotated], bank_local[:rotated]
        self._anchor_body = self._vector_body[v["anchors"]]
        n = len(self.column_of_body)
        self._turn = {  # per ``jacobian``: the stack, or the whole bank
            False: BodyVectors(self._vector_body, self._vector_local, n),
            True: BodyVectors(bank_body, bank_local, n, extra=3 + len(S.bi)),
        }
        points = slice(0, 3 * len(P.bi))
        dots = slice(points.stop, points.stop + len(D.bi))
        slides = slice(dots.stop, dots.stop + len(S.bi))
        self._row_slices = (points, dots, slides)
        index = {name: np.arange(s.start, s.stop) for name, s in v.items()}
        self._prepare_block_entries(index)

        acted = np.flatnonzero(D.actuator >= 0)
        self._acted_dot = None
        if len(acted):  # per row: actuator slot, body, u_i, u_i turned +90 deg, its bank rows
            self._acted_dot = (
                D.actuator[acted],
                D.bi[acted],
                D.a[acted],
                D.c[acted],
                index["dot_i"][acted],
                index["dot_scaled"][acted],
            )
        acted = np.flatnonzero(S.actuator >= 0)
        self._acted_slide = (dots.stop + acted, S.actuator[acted]) if len(acted) else None

    def _prepare_block_entries(self, index: dict[str, np.ndarray]) -> None:
        """Where every joint row's Jacobian blocks come from (``index``: the bank rows of each
        part), for :func:`~looprig.core.maths.rotations.bilinear_entries`.

        Translational parts: +-e_k for a point row, -+n for a slide (on body i, then j).
        Rotational parts: point ``w_i × e_k`` and ``e_k × w_j``, dot ``L u × v`` and
        ``v × L u``, slide ``n × (d + w_i)`` and ``w_j × n``. Dot and coupling rows have no
        translational part, coupling rows none at all.
        """
        points, dots, slides = self._row_slices
        x, y, t = (np.full((self.n_rows, 2), -1) for _ in range(3))  # bank vectors, -1: none
        sign = np.zeros((self.n_rows, 2))
        unit = np.tile(index["unit"], len(self._point.bi))  # e_k of each point row
        for rows, side, first, second in [
            (points, 0, np.repeat(index["point_i"], 3), unit),
            (points, 1, unit, np.repeat(index["point_j"], 3)),
            (dots, 0, index["dot_scaled"], index["dot_j"]),
            (dots, 1, index["dot_j"], index["dot_scaled"]),
            (slides, 0, index["slide_axis"], index["slide_d_wi"]),
            (slides, 1, index["slide_j"], index["slide_axis"]),
        ]:
            x[rows, side], y[rows, side] = first, second
        t[points], sign[points] = unit[:, None], (1.0, -1.0)
        t[slides], sign[slides] = index["slide_axis"][:, None], (-1.0, 1.0)
        one = 3 * index["unit"][0]  # e_x = (1, 0, 0)
        self._block_entries = tangent_block_entries(x, y, t, sign, one=one, zero=one + 1)

    def _prepare_scatter(self) -> None:
        """Where each joint row's two blocks go in the dense Jacobian: the flat index of the
        block in ``JacobianBlocks.rows`` (..., 2 m, 6) (free bodies only), its row (k, 1) and
        its columns (k, 6)."""
        body = np.concatenate(
            [
                np.repeat(np.stack([self._point.bi, self._point.bj], -1), 3, axis=0),
                np.stack([self._dot.bi, self._dot.bj], -1),
                np.stack([self._slide.bi, self._slide.bj], -1),
            ]
        ).reshape(-1, 2)  # (m, 2) per row: body i, body j
        col0 = self.column_of_body[body.ravel()]
        source = np.flatnonzero(col0 >= 0)
        self._scatter = (source, (source // 2)[:, None], col0[source][:, None] + np.arange(6))

    def dense(self, blocks: JacobianBlocks, batch_shape=(), rows: np.ndarray | None = None) -> np.ndarray:
        """The Jacobian (..., m, N) from :meth:`evaluate`'s ``blocks``; with ``rows`` (row
        indices) only those rows, in that order."""
        batch_shape = tuple(batch_shape)
        keep_rows, (source, rows_, cols), couplings = self._row_subset(rows)
        J = np.zeros(batch_shape + (len(keep_rows), self.n_vars))
        J[..., rows_, cols] = blocks.rows.reshape(batch_shape + (-1, 6))[..., source, :]
        if couplings is not None:
            for block, (keep, rows_, cols) in zip(blocks.couplings, couplings, strict=True):
                J[..., rows_, cols] += block[..., keep, :]  # bodies may repeat: accumulate
        return J

    def _row_subset(self, rows):
        """The scatter index arrays of :meth:`dense` restricted to ``rows`` (renumbered), cached."""
        if rows is None:
            return np.arange(self.n_rows), self._scatter, self._couplings and self._couplings.scatter
        key = np.asarray(rows, int).tobytes()
        if key not in self._subsets:
            new_row = np.full(self.n_rows + 1, -1)
            new_row[rows] = np.arange(len(rows))
            source, r, c = self._scatter
            inside = new_row[r[:, 0]] >= 0
            couplings = None
            if self._couplings is not None:
                couplings = [
                    (keep[inside], new_row[r[inside]], c[inside])
                    for keep, r, c in self._couplings.scatter
                    for inside in [new_row[r[:, 0]] >= 0]
                ]
            scatter = (source[inside], new_row[r[inside]], c[inside])
            self._subsets[key] = (np.asarray(rows, int), scatter, couplings)
        return self._subsets[key]

    def row_blocks(self, blocks: JacobianBlocks, batch: int) -> np.ndarray:
        """Every point, dot and slide row's Jacobian blocks on its two bodies: (B, m, 2, 6),
        ``[..., 0, :]`` on the joint's parent (body i), ``[..., 1, :]`` on its child
        (coupling rows, which touch four bodies, stay zero). The array ``blocks`` holds:
        read it, do not write to it."""
        return blocks.rows.reshape(batch, self.n_rows, 2, 6)

    def sparse(self, blocks: JacobianBlocks) -> sp.csr_matrix:
        """Unbatched Jacobian as a CSR matrix (for large mechanisms)."""
        source, r, c = self._scatter
        pairs = [(blocks.rows.reshape(-1, 6)[source], r, c)]
        if self._couplings is not None:  # repeated entries are summed by the CSR constructor
            pairs += [
                (block[keep], r, c)
                for block, (keep, r, c) in zip(blocks.couplings, self._couplings.scatter, strict=True)
            ]
        data, rows, cols = [], [], []
        for block, r, c in pairs:
            data.append(block.ravel())
            rows.append(np.broadcast_to(r, block.shape).ravel())
            cols.append(np.broadcast_to(c, block.shape).ravel())
        return sp.csr_matrix(
            (np.concatenate(data), (np.concatenate(rows), np.concatenate(cols))),
            shape=(self.n_rows, self.n_vars),
        )

    def tangent_to_bodies(self, delta: np.ndarray) -> np.ndarray:
        """Spread a tangent vector (..., 6 n_free) to all bodies (..., n, 6), zeros on ground."""
        full = np.zeros(delta.shape[:-1] + (len(self.column_of_body), 6))
        full[..., self.free_bodies, :] = delta.reshape(delta.shape[:-1] + (-1, 6))
        return full

    def worst_joint(self, residual: np.ndarray) -> str:
        """Name of the joint (or closure) with the largest residual row (for messages)."""
        k = self.row_joint[int(np.argmax(np.abs(residual)))]
        joints = self.mechanism.joints
        return joints[k].name if k < len(joints) else self.closure_names[k - len(joints)]
