"""Joint and actuator constraints, vectorised by primitive.

One module although long: every primitive and the stacked evaluation that serves them all.

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
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .mechanism import ActuatedMotion, JointKind, Mechanism
from .readoff import JointReadout
from .rotations import cross, frame_with_axes, quat_to_matrix, skew

X, Y, Z = 0, 1, 2
_EYE3 = np.eye(3)


def mean_joint_distance(mechanism: Mechanism) -> float:
    """Mean pairwise distance between joint anchors [m] (1.0 if undefined)."""
    anchors = np.array([j.anchor for j in mechanism.joints if j.kind != JointKind.FREE])
    if len(anchors) < 2:
        return 1.0
    diff = anchors[:, None, :] - anchors[None, :, :]
    dist = np.linalg.norm(diff, axis=-1)[np.triu_indices(len(anchors), k=1)]
    mean = float(dist.mean())
    return mean if mean > 1e-9 else 1.0


#: Closure rows as coincident points, offsets in joint-frame axes times the length
#: scale: one point (spherical), two on the axis (revolute), three (fixed). Unlike
#: dot-product rows they have no spurious half-turn solutions, so a loop written far
#: from closed assembles onto the right branch.
CLOSURE_POINTS = {
    JointKind.SPHERICAL: (np.zeros(3),),
    JointKind.REVOLUTE: (np.zeros(3), np.array([1.0, 0.0, 0.0])),
    JointKind.FIXED: (np.zeros(3), np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0])),
}


@dataclass(frozen=True)
class FrameClosure:
    """Two body-fixed frames that must coincide: a loop closure written open.

    Files written in joint coordinates (URDF with closures, MJCF ``connect``)
    often place a loop's two ends apart; such a closure cannot be a
    :class:`~looprig.core.mechanism.Joint` (whose anchor is one point of the
    initial configuration) until the loop is assembled. ``T_i`` and ``T_j``
    (4, 4) place the frames in the coordinates of ``body_i`` and ``body_j``
    (origin at the body's state position, body axes) [m]. ``kind``: spherical
    (origins coincide), revolute (origins coincide, ``axis`` shared) or fixed
    (frames coincide); ``axis`` (3,) is in the frames' own coordinates. Rows:
    point coincidences (:data:`CLOSURE_POINTS`).
    """

    name: str
    kind: JointKind
    body_i: str
    body_j: str
    T_i: np.ndarray
    T_j: np.ndarray
    axis: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, 1.0]))


@dataclass
class _Stack:
    """Instances of one primitive: body indices, local vectors, row numbers."""

    bi: np.ndarray  # (K,) int
    bj: np.ndarray  # (K,) int
    a: np.ndarray  # (K, 3) local on i: point x_i, or axis u_i
    b: np.ndarray  # (K, 3) local on j: point x_j, or axis v_j
    c: np.ndarray  # (K, 3) local on i: u_i rotated +90 deg (dot), or slide axis n_i
    d: np.ndarray  # (K, 3) local on j: point x_j (slide only)
    rows: np.ndarray  # (K, r) int
    actuator: np.ndarray  # (K,) index into the actuator values, or -1


class _StackBuilder:
    def __init__(self, width: int):
        self.width = width
        self.items: list[tuple] = []

    def add(self, bi, bj, a, b, c=None, d=None, actuator=-1):
        zero = np.zeros(3)
        self.items.append((bi, bj, a, b, zero if c is None else c, zero if d is None else d, actuator))

    def build(self, first_row: int) -> _Stack:
        k = len(self.items)
        cols = list(zip(*self.items, strict=True)) if k else [[]] * 7
        rows = first_row + np.arange(k * self.width).reshape(k, self.width)
        return _Stack(
            bi=np.array(cols[0], dtype=int),
            bj=np.array(cols[1], dtype=int),
            a=np.array(cols[2], dtype=float).reshape(k, 3),
            b=np.array(cols[3], dtype=float).reshape(k, 3),
            c=np.array(cols[4], dtype=float).reshape(k, 3),
            d=np.array(cols[5], dtype=float).reshape(k, 3),
            rows=rows,
            actuator=np.array(cols[6], dtype=int),
        )


@dataclass
class _JointRows:
    """Adds the primitive instances of one joint to the stacks."""

    point_stack: _StackBuilder
    dot_stack: _StackBuilder
    slide_stack: _StackBuilder
    row_joint: list[list[int]]
    joint: int
    i: int
    j: int
    Fi: np.ndarray
    Fj: np.ndarray
    xi: np.ndarray
    xj: np.ndarray

    def point(self):
        self.point_stack.add(self.i, self.j, self.xi, self.xj)
        self.row_joint[0].append(self.joint)

    def dot(self, ai, aj, rotated=None, actuator=-1):
        self.dot_stack.add(self.i, self.j, self.Fi[:, ai], self.Fj[:, aj], rotated, actuator=actuator)
        self.row_joint[1].append(self.joint)

    def slide(self, axis, actuator=-1):
        self.slide_stack.add(
            self.i, self.j, self.xi, self.Fi[:, axis], self.Fi[:, axis], self.xj, actuator=actuator
        )
        self.row_joint[2].append(self.joint)

    def rotation_lock(self):
        self.dot(X, Y)
        self.dot(X, Z)
        self.dot(Y, Z)

    def add_passive(self, kind: JointKind):
        """The rows of a passive joint of this kind (see the module docstring)."""
        if kind in (JointKind.FIXED, JointKind.REVOLUTE, JointKind.SPHERICAL, JointKind.UNIVERSAL):
            self.point()
        if kind in (JointKind.PRISMATIC, JointKind.CYLINDRICAL):
            self.slide(Y)
            self.slide(Z)
        if kind in (JointKind.FIXED, JointKind.PRISMATIC, JointKind.PARALLEL):
            self.rotation_lock()
        if kind in (JointKind.REVOLUTE, JointKind.CYLINDRICAL, JointKind.PLANAR):
            self.dot(X, Y)
            self.dot(X, Z)
        if kind == JointKind.UNIVERSAL:
            self.dot(X, Y)
        if kind == JointKind.PLANAR:
            self.slide(X)
        # FREE: no rows


class _CouplingRows:
    """Rows ``s (q_joint - ratio q_source - offset)`` of a mechanism's couplings, vectorised.

    q from :class:`~looprig.core.readoff.JointReadout` (exact Jacobian blocks);
    ``s`` is the length scale L for an angle-valued joint (rows in metres, like the
    dot rows), 1 for a displacement. Each row touches four bodies (the two joints'
    parents and children), which may repeat, so its Jacobian is accumulated.
    """

    def __init__(self, mechanism: Mechanism, first_row: int, length_scale: float, column_of_body: np.ndarray):
        couplings = mechanism.couplings
        K = len(couplings)
        joints = [mechanism.joint(c.joint) for c in couplings] + [
            mechanism.joint(c.source) for c in couplings
        ]
        self.readout = JointReadout(mechanism, joints)
        self.rows = first_row + np.arange(K)
        self.ratio = np.array([c.ratio for c in couplings])
        self.offset = np.array([c.offset for c in couplings])
        self.scale = np.where(self.readout.is_angle[:K], length_scale, 1.0)
        r = self.readout
        bodies = [r.parent[:K], r.child[:K], r.parent[K:], r.child[K:]]
        self.scatter = []
        for b in bodies:  # per body slot: kept couplings, their rows (Kf, 1), columns (Kf, 6)
            col0 = column_of_body[b]
            keep = np.flatnonzero(col0 >= 0)
            self.scatter.append((keep, self.rows[keep][:, None], col0[keep][:, None] + np.arange(6)))

    def evaluate(self, state, R, jacobian: bool):
        K = len(self.rows)
        q = self.readout.read(state, R=R)  # (..., 2K)
        rows = self.scale * (q[..., :K] - self.ratio * q[..., K:] - self.offset)
        if not jacobian:
            return rows, None
        parent, child = self.readout.blocks(state, R)  # (..., 2K, 6)
        a, b = self.scale[:, None], (self.scale * self.ratio)[:, None]
        return rows, (
            a * parent[..., :K, :],
            a * child[..., :K, :],
            -b * parent[..., K:, :],
            -b * child[..., K:, :],
        )


class ConstraintSet:
    """The constraint vector ``C(s)`` of a mechanism and its Jacobian.

    With ``actuated=True`` actuator rows are appended (forward kinematics,
    ``C_FK(p, s)``); with ``actuated=False`` actuated joints are passive
    (the state-based IK's ``C_IK(s)``). ``closures`` (:class:`FrameClosure`)
    add the rows of loops that are open in the initial configuration (to
    assemble them); their rows follow the joints' in :meth:`worst_joint`. The
    mechanism's couplings add one row each, last (:class:`_CouplingRows`).
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
        point, dot, slide = _StackBuilder(3), _StackBuilder(1), _StackBuilder(1)
        row_joint: list[list[int]] = [[], [], []]  # joint index per instance, per primitive
        actuator_slot = {j.name: k for k, j in enumerate(mechanism.actuated_joints)}
        #: per joint: its frame's axes (3, 3 columns) in the parent's and the child's
        #: coordinates, and its anchor (3,) in each body's coordinates [m]
        self.joint_frames: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []

        for jn, joint in enumerate(mechanism.joints):
            i, j = mechanism.body_index(joint.parent), mechanism.body_index(joint.child)
            F = frame_with_axes(joint.axis, joint.secondary_axis)  # world, initial
            rows = _JointRows(
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
        self._prepare_vectors()
        self._prepare_scatter()
        self._subsets: dict[bytes, tuple] = {}
        self._couplings = None
        if mechanism.couplings:
            first = len(mechanism.joints) + len(closures)
            self._couplings = _CouplingRows(mechanism, self.n_rows, self.length_scale, self.column_of_body)
            self.row_joint = np.concatenate([self.row_joint, first + np.arange(len(mechanism.couplings))])
            self.n_rows += len(mechanism.couplings)
            self.closure_names += [c.name for c in mechanism.couplings]

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

        Returns ``(residual, blocks)`` where ``blocks`` feeds :meth:`dense` or
        :meth:`sparse`; ``blocks`` is None without ``jacobian``. ``R`` may pass the
        body rotation matrices (..., n, 3, 3) of ``state`` when already known.
        """
        state = np.asarray(state, dtype=float)
        batch = state.shape[:-2]
        p = self._actuator_values(actuator_values, batch)
        c = state[..., :3]
        R = quat_to_matrix(state[..., 3:]) if R is None else R
        L = self.length_scale
        residual = np.empty(batch + (self.n_rows,))
        blocks = []

        W = np.einsum("...mab,mb->...ma", R[..., self._vector_body, :, :], self._vector_local)
        v = self._vector_slices

        s = self._point
        if len(s.bi):
            wi, wj = W[..., v["point_i"], :], W[..., v["point_j"], :]
            residual[..., s.rows.ravel()] = (wi + c[..., s.bi, :] - wj - c[..., s.bj, :]).reshape(
                batch + (-1,)
            )
            if jacobian:
                Ji = np.zeros(wi.shape + (6,))
                Jj = np.zeros(wi.shape + (6,))
                Ji[..., :3] = _EYE3
                Jj[..., :3] = -_EYE3
                Ji[..., 3:] = -skew(wi)
                Jj[..., 3:] = skew(wj)
                blocks.append((s, Ji, Jj))

        s = self._dot
        if len(s.bi):
            a, b = W[..., v["dot_i"], :], W[..., v["dot_j"], :]
            acted = s.actuator >= 0
            if acted.any():  # actuator rows: u rotated by the actuator angle about the joint axis
                angle = p[..., s.actuator[acted]]  # (..., Ka)
                u = np.cos(angle)[..., None] * s.a[acted] + np.sin(angle)[..., None] * s.c[acted]
                a = a.copy()
                a[..., acted, :] = np.einsum("...kab,...kb->...ka", R[..., s.bi[acted], :, :], u)
            residual[..., s.rows[:, 0]] = L * np.sum(a * b, axis=-1)
            if jacobian:
                axb = L * cross(a, b)
                Ji = np.zeros(axb.shape[:-1] + (1, 6))
                Jj = np.zeros(axb.shape[:-1] + (1, 6))
                Ji[..., 0, 3:] = axb
                Jj[..., 0, 3:] = -axb
                blocks.append((s, Ji, Jj))

        s = self._slide
        if len(s.bi):
            wi, wj, n = W[..., v["slide_i"], :], W[..., v["slide_j"], :], W[..., v["slide_axis"], :]
            d = (wj + c[..., s.bj, :]) - (wi + c[..., s.bi, :])
            offset = np.zeros(batch + (len(s.bi),))
            acted = s.actuator >= 0
            if acted.any():
                offset[..., acted] = p[..., s.actuator[acted]]
            residual[..., s.rows[:, 0]] = np.sum(d * n, axis=-1) - offset
            if jacobian:
                Ji = np.empty(n.shape[:-1] + (1, 6))
                Jj = np.empty(n.shape[:-1] + (1, 6))
                Ji[..., 0, :3] = -n
                Ji[..., 0, 3:] = cross(n, d) - cross(wi, n)
                Jj[..., 0, :3] = n
                Jj[..., 0, 3:] = cross(wj, n)
                blocks.append((s, Ji, Jj))
        if self._couplings is not None:
            rows, coupling_blocks = self._couplings.evaluate(state, R, jacobian)
            residual[..., self._couplings.rows] = rows
            blocks.append(coupling_blocks)
        return residual, (blocks if jacobian else None)

    def residual(self, state, actuator_values=None) -> np.ndarray:
        """``C(s)``: (..., n, 7) -> (..., m) [m]."""
        return self.evaluate(state, actuator_values, jacobian=False)[0]

    def jacobian(self, state, actuator_values=None, sparse: bool = False):
        """``dC/ds`` in tangent coordinates: (..., m, 6 n_free) dense or (m, N) CSR."""
        _, blocks = self.evaluate(state, actuator_values)
        return self.sparse(blocks) if sparse else self.dense(blocks, np.shape(state)[:-2])

    # ----------------------------------------------------------------- assembly
    def _prepare_vectors(self) -> None:
        """All body-fixed vectors of all primitives in one stack, rotated by one einsum."""
        parts = {
            "point_i": (self._point.bi, self._point.a),
            "point_j": (self._point.bj, self._point.b),
            "dot_i": (self._dot.bi, self._dot.a),
            "dot_j": (self._dot.bj, self._dot.b),
            "slide_i": (self._slide.bi, self._slide.a),
            "slide_j": (self._slide.bj, self._slide.d),
            "slide_axis": (self._slide.bi, self._slide.b),
        }
        self._vector_slices, start = {}, 0
        for name, (bodies, _) in parts.items():
            self._vector_slices[name] = slice(start, start + len(bodies))
            start += len(bodies)
        self._vector_body = np.concatenate([b for b, _ in parts.values()]).astype(int)
        self._vector_local = np.concatenate([v for _, v in parts.values()]).reshape(-1, 3)

    def _prepare_scatter(self) -> None:
        """Row/column index arrays for the blocks of free bodies, per primitive."""
        self._scatter = []
        for s in (self._point, self._dot, self._slide):
            if not len(s.bi):
                continue
            entry = []
            for bodies in (s.bi, s.bj):
                col0 = self.column_of_body[bodies]
                keep = np.flatnonzero(col0 >= 0)
                rows = s.rows[keep][:, :, None]  # (Kf, r, 1)
                cols = (col0[keep][:, None] + np.arange(6))[:, None, :]  # (Kf, 1, 6)
                entry.append((keep, rows, cols))
            self._scatter.append(entry)

    def dense(self, blocks, batch_shape=(), rows: np.ndarray | None = None) -> np.ndarray:
        """The Jacobian (..., m, N) from :meth:`evaluate`'s ``blocks``; with ``rows`` (sorted
        row indices, each joint's rows all in or all out) only those rows, in that order."""
        keep_rows, scatter, couplings = self._row_subset(rows)
        J = np.zeros(tuple(batch_shape) + (len(keep_rows), self.n_vars))
        for (_, Ji, Jj), entry in zip(blocks[: len(self._scatter)], scatter, strict=True):
            for block, (keep, rows_, cols) in zip((Ji, Jj), entry, strict=True):
                if len(keep):
                    J[..., rows_, cols] = block[..., keep, :, :]
        if self._couplings is not None and couplings is not None:
            for block, (keep, rows_, cols) in zip(blocks[-1], couplings, strict=True):
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
            scatter = [
                [
                    (keep[inside], new_row[r[inside]], c[inside])
                    for keep, r, c in entry
                    for inside in [(new_row[r[..., 0]] >= 0).all(-1)]
                ]
                for entry in self._scatter
            ]
            couplings = None
            if self._couplings is not None:
                couplings = [
                    (keep[inside], new_row[r[inside]], c[inside])
                    for keep, r, c in self._couplings.scatter
                    for inside in [new_row[r[:, 0]] >= 0]
                ]
            self._subsets[key] = (np.asarray(rows, int), scatter, couplings)
        return self._subsets[key]

    def row_blocks(self, blocks, batch: int) -> np.ndarray:
        """Every point, dot and slide row's Jacobian blocks on its two bodies: (B, m, 2, 6),
        ``[..., 0, :]`` on the joint's parent (body i), ``[..., 1, :]`` on its child
        (coupling rows, which touch four bodies, stay zero)."""
        out = np.zeros((batch, self.n_rows, 2, 6))
        for s, Ji, Jj in blocks[: len(self._scatter)]:
            out[:, s.rows.ravel(), 0] = Ji.reshape(batch, -1, 6)
            out[:, s.rows.ravel(), 1] = Jj.reshape(batch, -1, 6)
        return out

    def sparse(self, blocks) -> sp.csr_matrix:
        """Unbatched Jacobian as a CSR matrix (for large mechanisms)."""
        data, rows, cols = [], [], []
        pairs = [
            (block, scatter)
            for (_, Ji, Jj), entry in zip(blocks[: len(self._scatter)], self._scatter, strict=True)
            for block, scatter in zip((Ji, Jj), entry, strict=True)
        ]
        if self._couplings is not None:  # repeated entries are summed by the CSR constructor
            pairs += list(zip(blocks[-1], self._couplings.scatter, strict=True))
        for block, (keep, r, c) in pairs:
            if len(keep):
                shape = block[keep].shape
                data.append(block[keep].ravel())
                rows.append(np.broadcast_to(r, shape).ravel())
                cols.append(np.broadcast_to(c, shape).ravel())
        if not data:
            return sp.csr_matrix((self.n_rows, self.n_vars))
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
