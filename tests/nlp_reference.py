"""An independent whole-clip reference: the limited retargeting problem as one NLP, solved by IPOPT.

Test- and benchmark-only (it needs ``casadi``, the ``test`` extra; ``looprig.core``
never imports it). It models the mechanism on its own, without looprig's solver
code: only the geometry of the :class:`~looprig.core.model.mechanism.Mechanism`
(bodies, joints, frames, couplings) and the quaternion helper of
:mod:`looprig.core.maths.rotations` for constant data are read.

The model (:class:`ReferenceModel`): a **spanning tree in joint coordinates**
with **product-of-exponentials** kinematics, plus **loop-closure equality rows**.

* Graph: bodies are nodes, every grounded body is one node (the ground), joints
  are edges. A union-find spanning tree takes the actuated joints first, so every
  motor is a tree coordinate; the joints it leaves out close the loops.
* Each tree joint is a product of elementary screws, given in world coordinates
  at the initial configuration (parent side first): revolute = a rotation about
  ``axis`` through ``anchor``; prismatic = a translation along ``axis``;
  cylindrical = both; universal = rotations about ``axis`` then
  ``secondary_axis``; spherical = rotations about the three axes of
  ``frame_with_axes(axis, secondary_axis)`` (x, y, z Euler angles); planar = two
  translations in the plane and a rotation about its normal; parallel = three
  translations; free = three translations and three rotations; fixed = none.
  A joint's coordinates measure its child relative to its parent; walked from
  child to parent the tree uses the inverse product.
* A body's displacement from its initial pose is ``G_b = prod_j exp(xi_j theta_j)``
  along its tree path from the ground (a rotation ``D`` and translation ``t``:
  a point ``x`` of the body at the initial configuration is at ``D x + t``).
* A joint outside the tree between bodies P and C gives equality rows: anchor
  coincidence ``x_P = x_C`` (revolute, universal, spherical, fixed), axis
  constraints as dot products of turned axes (revolute: ``(D_P a) . (D_C b) =
  (D_P a) . (D_C c) = 0``; universal: ``(D_P axis) . (D_C secondary) = 0``;
  locked orientation: ``(D_P a) . (D_C b)``, ``(D_P a) . (D_C c)``, ``(D_P b) .
  (D_C c)``), and for sliding kinds the anchors' offset across the axis. A
  coupling of two tree joints is one linear row. Rows that are linearly
  dependent at the initial configuration (a planar loop's out-of-plane rows,
  identically zero in the tree) are dropped, the rest kept (pivoted QR).

Motor values are tree coordinates: an angle about the joint axis or a
displacement along it, zero at the initial configuration, as
:class:`~looprig.core.model.readoff.ActuatorReadout` reads them (angles unwrapped: the
coordinate is continuous).

:func:`solve_reference` solves, over all F frames at once,

    min  sum_k sum_objectives 1/2 [sum_axes w_pos (p - p^)^2 + sum_{a in x,y,z} w_a |R a - a^|^2]
    s.t. closure(q_k) = 0,  lower <= m_k <= upper,  |m_{k+1} - m_k| <= velocity / rate,
         |m_{k+1} - 2 m_k + m_{k-1}| <= acceleration / rate^2        (every motor m, frame k)
         and at the clip's ends the velocity and acceleration as looprig's limit checks
         read them: |(-3 m_0 + 4 m_1 - m_2) / 2| <= velocity / rate,
         |2 m_0 - 5 m_1 + 4 m_2 - m_3| <= acceleration / rate^2 (and mirrored at the end)

(the value is looprig's ``FrameTask`` value) with IPOPT, exact Hessians, one
symbolic frame function mapped over the frames (sparse, banded in time).
Benchmarks import it with ``sys.path.insert(0, str(ROOT / "tests"))``; tests
import it directly (pytest puts ``tests/`` on ``sys.path``).
"""

import time
from collections.abc import Sequence
from dataclasses import dataclass

import casadi as ca
import numpy as np
import scipy.linalg
from looprig.core.maths.rotations import frame_with_axes, quat_to_matrix
from looprig.core.model.mechanism import Mechanism
from looprig.core.model.parts import ActuatedMotion, Joint, JointKind
from looprig.core.terms import FrameObjective

_EYE = np.eye(3)
_ROTATION, _TRANSLATION = "R", "P"


def _joint_screws(joint: Joint) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """Elementary screws of a joint, parent side first: (kind R or P, unit axis (3,),
    point on the axis (3,) [m]), world coordinates at the initial configuration."""
    kind, anchor = JointKind(joint.kind), np.asarray(joint.anchor, float)
    frame = frame_with_axes(joint.axis, joint.secondary_axis)  # columns: axis, y, z
    a = frame[:, 0]
    if kind == JointKind.FIXED:
        return []
    if kind == JointKind.REVOLUTE:
        return [(_ROTATION, a, anchor)]
    if kind == JointKind.PRISMATIC:
        return [(_TRANSLATION, a, anchor)]
    if kind == JointKind.CYLINDRICAL:
        return [(_ROTATION, a, anchor), (_TRANSLATION, a, anchor)]
    if kind == JointKind.UNIVERSAL:
        secondary = np.asarray(joint.secondary_axis, float)
        return [(_ROTATION, a, anchor), (_ROTATION, secondary / np.linalg.norm(secondary), anchor)]
    if kind == JointKind.SPHERICAL:
        return [(_ROTATION, frame[:, i], anchor) for i in range(3)]
    if kind == JointKind.PLANAR:
        return [
            (_TRANSLATION, frame[:, 1], anchor),
            (_TRANSLATION, frame[:, 2], anchor),
            (_ROTATION, a, anchor),
        ]
    if kind == JointKind.PARALLEL:
        return [(_TRANSLATION, _EYE[i], anchor) for i in range(3)]
    if kind == JointKind.FREE:
        return [(_TRANSLATION, _EYE[i], anchor) for i in range(3)] + [
            (_ROTATION, _EYE[i], anchor) for i in range(3)
        ]
    raise NotImplementedError(f"joint {joint.name!r}: kind {kind.value} is not modelled")


def _screw_motion(kind: str, axis: np.ndarray, point: np.ndarray, value):
    """exp(xi value) as (D (3, 3), t (3,)) casadi SX: a rotation by ``value`` [rad] about
    ``axis`` through ``point``, or a translation by ``value`` [m] along ``axis``."""
    if kind == _TRANSLATION:
        return ca.SX(ca.DM(_EYE)), ca.DM(axis) * value
    K = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
    D = ca.DM(_EYE) + ca.sin(value) * ca.DM(K) + (1.0 - ca.cos(value)) * ca.DM(K @ K)
    return D, ca.mtimes(ca.DM(_EYE) - D, ca.DM(point))


def _compose(first, second):
    """(D1, t1) then applied after (D2, t2): the displacement x -> D1 (D2 x + t2) + t1."""
    return ca.mtimes(first[0], second[0]), ca.mtimes(first[0], second[1]) + first[1]


@dataclass(frozen=True)
class TreeJoint:
    """A joint of the spanning tree: ``joint`` (the Mechanism's), its coordinates
    ``columns`` (slice of the coordinate vector), ``reversed`` when the tree walks it
    from its child to its parent."""

    joint: Joint
    columns: slice
    reversed: bool


class ReferenceModel:
    """A mechanism in spanning-tree joint coordinates (see the module docstring).

    mechanism: the Mechanism; frames: the FrameObjective sequence whose frames the
    model poses (K of them). Attributes: ``n_coordinates`` (nq), ``coordinate_names``
    (nq,), ``motor_columns`` (A,) the coordinates that are the motors (order of
    ``mechanism.actuator_names``), ``tree`` (TreeJoint per tree joint),
    ``loop_joints`` (joints closing loops), ``n_closure`` and ``n_kept`` (closure rows
    in all and kept as independent), casadi functions of one frame's coordinates
    q (nq,) and targets (12 K,) (positions (K, 3) then rotations (K, 3, 3), flattened
    row-major): ``frame_function`` -> (cost, kept closure rows (n_kept,)),
    ``pose_function`` -> (frame positions (3 K,), frame rotations (9 K,), all closure rows,
    body rotations (9 n,), body positions (3 n,)).
    """

    def __init__(self, mechanism: Mechanism, frames: Sequence[FrameObjective] = ()):
        self.mechanism = mechanism
        self.objectives = tuple(frames)
        self._build_tree()
        q = ca.SX.sym("q", self.n_coordinates)
        targets = ca.SX.sym("targets", 12 * len(self.objectives))
        motions = self._body_motions(q)
        positions, rotations = self._frame_poses(motions)
        closure = self._closure_rows(q, motions)
        self.n_closure = int(closure.numel())
        self.kept_rows = self._independent_rows(ca.Function("closure", [q], [closure]))
        self.n_kept = len(self.kept_rows)
        cost = self._cost(positions, rotations, targets)
        residual = self._residual(positions, rotations, targets)
        kept = closure[self.kept_rows.tolist()] if self.n_kept else ca.SX(0, 1)
        self.frame_function = ca.Function("frame", [q, targets], [cost, kept], ["q", "targets"], ["f", "g"])
        body_R = ca.vertcat(*[ca.reshape(D.T, 9, 1) for D, _ in motions])  # row-major per body
        body_t = ca.vertcat(*[t for _, t in motions])
        self.pose_function = ca.Function(
            "poses",
            [q],
            [
                ca.vertcat(*positions) if positions else ca.SX(0, 1),
                ca.vertcat(*[ca.reshape(R.T, 9, 1) for R in rotations]) if rotations else ca.SX(0, 1),
                closure,
                body_R,
                body_t,
            ],
        )
        self._assembly_function = ca.Function("assembly", [q], [closure, ca.jacobian(closure, q)])
        self._tracking_function = ca.Function(
            "tracking", [q, targets], [residual, ca.jacobian(residual, q), kept, ca.jacobian(kept, q)]
        )

    # ----------------------------------------------------------------- the tree
    def _build_tree(self) -> None:
        mech = self.mechanism
        node = {b.name: ("ground" if b.grounded else b.name) for b in mech.bodies}
        root = {n: n for n in set(node.values())}

        def find(n):
            while root[n] != n:
                root[n] = root[root[n]]
                n = root[n]
            return n

        ordered = [j for j in mech.joints if j.actuator is not None] + [
            j for j in mech.joints if j.actuator is None
        ]
        tree_joints, loop_joints = set(), []
        for joint in ordered:
            a, b = find(node[joint.parent]), find(node[joint.child])
            if node[joint.parent] == node[joint.child]:
                continue  # between two grounded bodies: no unknowns, nothing to close
            if a == b:
                if joint.actuator is not None:
                    raise NotImplementedError(
                        f"actuated joint {joint.name!r} closes a loop of actuated joints (an "
                        "over-actuated mechanism): the reference needs every motor in the tree"
                    )
                loop_joints.append(joint)
            else:
                root[a] = b
                tree_joints.add(joint.name)
        # walk the tree from the ground: each body's (tree joint, reversed) in path order
        adjacency: dict[str, list[tuple[Joint, str, bool]]] = {}
        for joint in mech.joints:
            if joint.name in tree_joints:
                p, c = node[joint.parent], node[joint.child]
                adjacency.setdefault(p, []).append((joint, c, False))
                adjacency.setdefault(c, []).append((joint, p, True))
        self._path: dict[str, list[tuple[Joint, bool]]] = {"ground": []}
        queue = ["ground"]
        while queue:
            here = queue.pop(0)
            for joint, there, rev in adjacency.get(here, []):
                if there not in self._path:
                    self._path[there] = [*self._path[here], (joint, rev)]
                    queue.append(there)
        self._node = node
        # coordinates, in mechanism joint order
        self.tree, self.coordinate_names, self._screws = [], [], {}
        column = 0
        for joint in mech.joints:
            if joint.name not in tree_joints:
                continue
            screws = _joint_screws(joint)
            self._screws[joint.name] = screws
            rev = any(j.name == joint.name and r for path in self._path.values() for j, r in path)
            self.tree.append(TreeJoint(joint, slice(column, column + len(screws)), rev))
            self.coordinate_names += [f"{joint.name}[{i}]" for i in range(len(screws))]
            column += len(screws)
        self.n_coordinates = column
        self.loop_joints = loop_joints
        self._tree_by_name = {t.joint.name: t for t in self.tree}
        self.motor_columns = np.array([self._motor_column(j) for j in mech.actuated_joints], dtype=int)
        self.is_angle = np.array(
            [ActuatedMotion(j.actuator.motion) == ActuatedMotion.ANGLE for j in mech.actuated_joints], bool
        )

    def _motor_column(self, joint: Joint) -> int:
        tree = self._tree_by_name[joint.name]
        kinds = [kind for kind, _, _ in self._screws[joint.name]]
        wanted = _ROTATION if ActuatedMotion(joint.actuator.motion) == ActuatedMotion.ANGLE else _TRANSLATION
        return tree.columns.start + kinds.index(wanted)

    def _joint_motion(self, joint: Joint, q, reverse: bool):
        """The joint's displacement of child relative to parent (or its inverse)."""
        tree = self._tree_by_name[joint.name]
        screws = self._screws[joint.name]
        values = [q[i] for i in range(tree.columns.start, tree.columns.stop)]
        pairs = list(zip(screws, values, strict=True))
        motion = (ca.SX(ca.DM(_EYE)), ca.SX(3, 1))
        for (kind, axis, point), value in reversed(pairs) if reverse else pairs:
            motion = _compose(motion, _screw_motion(kind, axis, point, -value if reverse else value))
        return motion

    def _body_motions(self, q) -> list:
        """Per body (mechanism order) its displacement (D, t) from the initial pose."""
        motions = []
        for body in self.mechanism.bodies:
            motion = (ca.SX(ca.DM(_EYE)), ca.SX(3, 1))
            for joint, rev in self._path[self._node[body.name]]:
                motion = _compose(motion, self._joint_motion(joint, q, rev))
            motions.append(motion)
        return motions

    # ----------------------------------------------------------------- frames, cost, closure
    def _frame_poses(self, motions):
        positions, rotations = [], []
        for objective in self.objectives:
            frame = self.mechanism.frame(objective.frame)
            D, t = motions[self.mechanism.body_index(frame.body)]
            positions.append(ca.mtimes(D, ca.DM(frame.position)) + t)
            rotations.append(ca.mtimes(D, ca.DM(quat_to_matrix(frame.orientation))))
        return positions, rotations

    def _cost(self, positions, rotations, targets):
        K = len(self.objectives)
        cost = ca.SX(0)
        for k, objective in enumerate(self.objectives):
            w_p = np.broadcast_to(np.asarray(objective.position_weight, float), (3,))
            w_o = np.broadcast_to(np.asarray(objective.orientation_weight, float), (3,))
            target_p = targets[3 * k : 3 * k + 3]
            target_R = ca.reshape(targets[3 * K + 9 * k : 3 * K + 9 * k + 9], 3, 3).T  # row-major
            e = positions[k] - target_p
            cost += 0.5 * ca.sum1(ca.DM(w_p) * e**2)
            for a in range(3):
                if w_o[a] != 0.0:
                    d = rotations[k][:, a] - target_R[:, a]
                    cost += 0.5 * w_o[a] * ca.sumsqr(d)
        return cost

    def _residual(self, positions, rotations, targets):
        """The weighted residual r (12 K,) with cost = |r|^2 / 2 (position rows, then
        the three axis rows per frame axis)."""
        K = len(self.objectives)
        rows = []
        for k, objective in enumerate(self.objectives):
            w_p = np.broadcast_to(np.asarray(objective.position_weight, float), (3,))
            w_o = np.broadcast_to(np.asarray(objective.orientation_weight, float), (3,))
            target_R = ca.reshape(targets[3 * K + 9 * k : 3 * K + 9 * k + 9], 3, 3).T
            rows.append(ca.DM(np.sqrt(w_p)) * (positions[k] - targets[3 * k : 3 * k + 3]))
            rows += [np.sqrt(w_o[a]) * (rotations[k][:, a] - target_R[:, a]) for a in range(3)]
        return ca.vertcat(*rows) if rows else ca.SX(0, 1)

    def _closure_rows(self, q, motions):
        rows = []
        index = self.mechanism.body_index
        for joint in self.loop_joints:
            kind = JointKind(joint.kind)
            DP, tP = motions[index(joint.parent)]
            DC, tC = motions[index(joint.child)]
            anchor = ca.DM(joint.anchor)
            xP, xC = ca.mtimes(DP, anchor) + tP, ca.mtimes(DC, anchor) + tC
            F = frame_with_axes(joint.axis, joint.secondary_axis)
            aP = [ca.mtimes(DP, ca.DM(F[:, i])) for i in range(3)]
            aC = [ca.mtimes(DC, ca.DM(F[:, i])) for i in range(3)]
            if kind in (JointKind.FIXED, JointKind.REVOLUTE, JointKind.SPHERICAL, JointKind.UNIVERSAL):
                rows.append(xP - xC)
            if kind in (JointKind.REVOLUTE, JointKind.CYLINDRICAL):
                rows += [ca.dot(aP[0], aC[1]), ca.dot(aP[0], aC[2])]
            if kind in (JointKind.PRISMATIC, JointKind.CYLINDRICAL):
                rows += [ca.dot(xC - xP, aP[1]), ca.dot(xC - xP, aP[2])]
            if kind in (JointKind.FIXED, JointKind.PRISMATIC, JointKind.PARALLEL):
                rows += [ca.dot(aP[0], aC[1]), ca.dot(aP[0], aC[2]), ca.dot(aP[1], aC[2])]
            if kind == JointKind.UNIVERSAL:
                secondary = np.asarray(joint.secondary_axis, float)
                rows.append(ca.dot(aP[0], ca.mtimes(DC, ca.DM(secondary / np.linalg.norm(secondary)))))
            if kind == JointKind.PLANAR:
                rows += [ca.dot(aP[0], aC[1]), ca.dot(aP[0], aC[2]), ca.dot(xC - xP, aP[0])]
        for coupling in self.mechanism.couplings:  # q_j = offset + sum_k sum_p c_kp q_k^p
            names = (coupling.joint, *coupling.sources)
            if any(name not in self._tree_by_name for name in names):
                raise NotImplementedError(f"coupling {coupling.name!r} joins a joint outside the tree")
            qj, *qs = (q[self._tree_by_name[name].columns.start] for name in names)
            value = coupling.offset
            for x, coefficients in zip(qs, coupling.coefficients(), strict=True):
                value += sum(float(c) * x ** (p + 1) for p, c in enumerate(coefficients))
            rows.append(qj - value)
        return ca.vertcat(*rows) if rows else ca.SX(0, 1)

    def _independent_rows(self, closure: ca.Function) -> np.ndarray:
        """Indices of closure rows independent at the initial configuration (q = 0)."""
        if self.n_closure == 0:
            return np.zeros(0, dtype=int)
        q = ca.SX.sym("q", self.n_coordinates)
        J = np.array(ca.Function("J", [q], [ca.jacobian(closure(q), q)])(np.zeros(self.n_coordinates)))
        _, R, pivots = scipy.linalg.qr(J.T, mode="economic", pivoting=True)
        diagonal = np.abs(np.diag(R))
        rank = int(np.sum(diagonal > 1e-9 * max(diagonal.max(initial=0.0), 1.0)))
        return np.sort(pivots[:rank])

    # ----------------------------------------------------------------- numeric helpers
    def motors(self, coordinates: np.ndarray) -> np.ndarray:
        """Motor values (..., A) [rad or m] of coordinates (..., nq)."""
        return np.asarray(coordinates)[..., self.motor_columns]

    def poses(self, coordinates: np.ndarray) -> dict[str, np.ndarray]:
        """For coordinates (F, nq): frame ``positions`` (F, K, 3) [m] and ``rotations``
        (F, K, 3, 3) (columns: the frame's axes, world), ``closure`` (F, n_closure) all
        rows [m or 1], body ``body_rotations`` (F, n, 3, 3) and ``body_positions`` (F, n, 3)
        (CoMs, world [m])."""
        Q = np.atleast_2d(np.asarray(coordinates, float))
        F, K, n = len(Q), len(self.objectives), len(self.mechanism.bodies)
        out = self.pose_function.map(F)(Q.T)
        p, R, g, DB, tB = (np.array(o).T for o in out)
        D = DB.reshape(F, n, 3, 3)
        R0 = quat_to_matrix(np.array([b.orientation for b in self.mechanism.bodies]))
        c0 = np.array([b.position for b in self.mechanism.bodies])
        return {
            "positions": p.reshape(F, K, 3),
            "rotations": R.reshape(F, K, 3, 3),
            "closure": g.reshape(F, self.n_closure),
            "body_rotations": D @ R0,
            "body_positions": np.einsum("fnij,nj->fni", D, c0) + tB.reshape(F, n, 3),
        }

    def assemble(
        self, motors: np.ndarray, start: np.ndarray | None = None, tolerance: float = 1e-13
    ) -> np.ndarray:
        """Coordinates (F, nq) with the given motor values (F, A) and every closure row
        met, by Gauss-Newton (minimum-norm steps) on the passive coordinates, frame by
        frame, each from the previous frame's answer (the first from ``start`` (nq,),
        default the initial configuration, all zeros). Raises RuntimeError when a frame
        does not close to ``tolerance`` [m or 1]."""
        M = np.atleast_2d(np.asarray(motors, float))
        q = np.zeros(self.n_coordinates) if start is None else np.array(start, float)
        passive = np.setdiff1d(np.arange(self.n_coordinates), self.motor_columns)
        out = np.empty((len(M), self.n_coordinates))
        for f, m in enumerate(M):
            q[self.motor_columns] = m
            for _ in range(100):
                g, J = (np.array(v) for v in self._assembly_function(q))
                g = g.ravel()
                if not g.size or np.abs(g).max() <= tolerance:
                    break
                step = np.linalg.lstsq(J[:, passive], -g, rcond=1e-12)[0]
                step *= min(1.0, 0.5 / max(np.abs(step).max(), 1e-300))
                q[passive] += step
            else:
                raise RuntimeError(f"frame {f}: the loops do not close (max residual {np.abs(g).max():.3g})")
            out[f] = q
        return out

    def track(
        self,
        positions: np.ndarray,
        rotations: np.ndarray,
        start: np.ndarray | None = None,
        iterations: int = 50,
    ) -> np.ndarray:
        """Exact IK by continuation: coordinates (F, nq) that minimise each frame's
        tracking cost subject to its closure rows, frame after frame, each from the
        previous frame's answer (the first from ``start`` (nq,), default zeros), by
        Levenberg-Marquardt steps on the equality-constrained least squares (a start
        curve for :func:`solve_reference` that stays on one branch).
        positions (F, K, 3) [m], rotations (F, K, 3, 3): the targets."""
        P, R = np.asarray(positions, float), np.asarray(rotations, float)
        F, K = P.shape[:2]
        params = np.concatenate([P.reshape(F, 3 * K), R.reshape(F, 9 * K)], axis=1)
        q = np.zeros(self.n_coordinates) if start is None else np.array(start, float)
        n, m = self.n_coordinates, self.n_kept
        out = np.empty((F, n))
        for f in range(F):
            damping = 1e-6
            for _ in range(iterations):
                r, J, g, G = (np.array(v) for v in self._tracking_function(q, params[f]))
                r, g = r.ravel(), g.ravel()
                H = J.T @ J
                KKT = np.block(
                    [[H + damping * (np.trace(H) / n + 1e-12) * np.eye(n), G.T], [G, np.zeros((m, m))]]
                )
                step = np.linalg.lstsq(KKT, -np.concatenate([J.T @ r, g]), rcond=1e-14)[0][:n]
                step *= min(1.0, 0.5 / max(np.abs(step).max(), 1e-300))
                q = q + step
                if np.abs(step).max() < 1e-12:
                    break
            out[f] = q
        return out


@dataclass
class ReferenceSolution:
    """The reference optimum of a clip.

    motors: (F, A) motor values [rad or m] (continuous, zero at the initial
    configuration, ``ActuatorReadout`` order); objective: the tracking cost at the
    optimum (sum over frames of looprig's FrameTask value); positions: (F, K, 3) the
    tracked frames' world positions [m]; rotations: (F, K, 3, 3) their axes (columns,
    world); coordinates: (F, nq) all tree coordinates; seconds: IPOPT's own wall time
    (the solver call, its function evaluations included, model building excluded) [s];
    build_seconds: model and NLP building plus the start's assembly [s]; status:
    IPOPT's return status; iterations: IPOPT iterations; success: IPOPT converged;
    closure_residual: max |row| over all closure rows and frames [m or 1];
    timings: IPOPT's wall times [s] by part (``t_wall_total``, ``t_wall_nlp_hess_l``, ...).
    """

    motors: np.ndarray
    objective: float
    positions: np.ndarray
    rotations: np.ndarray
    coordinates: np.ndarray
    seconds: float
    build_seconds: float
    status: str
    iterations: int
    success: bool
    closure_residual: float
    timings: dict


def _limit(value, default: np.ndarray, name: str) -> np.ndarray:
    out = default if value is None else np.broadcast_to(np.asarray(value, float), default.shape)
    if np.any(np.isnan(out)):
        raise ValueError(f"{name}: NaN limit")
    return np.array(out, float)


def solve_reference(
    mechanism: Mechanism,
    frames: Sequence[FrameObjective],
    positions: np.ndarray,
    rotations: np.ndarray,
    rate: float,
    start_motors: np.ndarray,
    *,
    lower=None,
    upper=None,
    velocity=None,
    acceleration=None,
    tolerance: float = 1e-10,
    max_iterations: int = 3000,
    model: ReferenceModel | None = None,
    expand: bool = True,
    ipopt_options: dict | None = None,
) -> ReferenceSolution:
    """Solve the whole-clip limited tracking problem (module docstring) with IPOPT.

    mechanism: the Mechanism; frames: K FrameObjective (weights per world axis for
    positions, per frame axis for orientations); positions (F, K, 3) [m] and rotations
    (F, K, 3, 3) the targets per frame and objective; rate [Hz] the frame rate;
    start_motors (F, A) the start curves [rad or m] (angles unwrapped frame to frame
    first, then the passive coordinates assembled, frame after frame). lower, upper [rad or m], velocity
    [rad/s or m/s], acceleration [rad/s^2 or m/s^2]: (A,) limits (scalars broadcast),
    default the actuators' declared ones; inf: none. tolerance: IPOPT's ``tol``.
    model: a prebuilt :class:`ReferenceModel` of these mechanism and frames.
    expand: expand the mapped frame function into one scalar graph (SX) before solving
    (faster function evaluations in IPOPT, slower building: about 10 s for 3601 Boxer frames).
    ipopt_options: IPOPT options that override the ones above (e.g. ``{"mu_strategy": "adaptive"}``).
    """
    begin = time.perf_counter()
    model = model or ReferenceModel(mechanism, frames)
    P = np.asarray(positions, float)
    Rt = np.asarray(rotations, float)
    F, K = P.shape[:2]
    if P.shape != (F, len(model.objectives), 3) or Rt.shape != (F, K, 3, 3):
        raise ValueError(
            f"targets: positions (F, K, 3) and rotations (F, K, 3, 3), got {P.shape}, {Rt.shape}"
        )
    actuators = [j.actuator for j in mechanism.actuated_joints]
    A = len(actuators)
    start = np.asarray(start_motors, float).reshape(F, A).copy()
    for f in range(1, F):  # angles continuous: each within half a turn of the previous frame's
        turns = np.round((start[f - 1] - start[f]) / (2 * np.pi))
        start[f] += np.where(model.is_angle, 2 * np.pi * turns, 0.0)
    lo = _limit(lower, np.array([a.lower for a in actuators]), "lower")
    hi = _limit(upper, np.array([a.upper for a in actuators]), "upper")
    v = _limit(velocity, np.array([a.velocity_limit for a in actuators]), "velocity")
    acc = _limit(acceleration, np.array([a.acceleration_limit for a in actuators]), "acceleration")
    nq = model.n_coordinates
    x0 = model.assemble(start)

    X = ca.MX.sym("q", nq, F)
    targets = ca.MX.sym("targets", 12 * K, F)
    cost, closure = model.frame_function.map(F)(X, targets)
    constraints, lbg, ubg = [], [], []
    if model.n_kept:
        constraints.append(ca.vec(closure))
        lbg.append(np.zeros(model.n_kept * F))
        ubg.append(np.zeros(model.n_kept * F))
    for m, column in enumerate(model.motor_columns):
        curve = X[int(column), :].T  # (F, 1)
        if np.isfinite(v[m]) and F >= 2:
            constraints.append(curve[1:] - curve[:-1])
            lbg.append(np.full(F - 1, -v[m] / rate))
            ubg.append(np.full(F - 1, v[m] / rate))
            if F >= 4:  # the clip's end velocities as the checks read them (one-sided, 2nd order)
                constraints.append(
                    ca.vertcat(
                        -1.5 * curve[0] + 2 * curve[1] - 0.5 * curve[2],
                        0.5 * curve[-3] - 2 * curve[-2] + 1.5 * curve[-1],
                    )
                )
                lbg.append(np.full(2, -v[m] / rate))
                ubg.append(np.full(2, v[m] / rate))
        if np.isfinite(acc[m]) and F >= 3:
            constraints.append(curve[2:] - 2 * curve[1:-1] + curve[:-2])
            lbg.append(np.full(F - 2, -acc[m] / rate**2))
            ubg.append(np.full(F - 2, acc[m] / rate**2))
            if F >= 5:  # the end accelerations: the cubic through the four end samples
                constraints.append(
                    ca.vertcat(
                        2 * curve[0] - 5 * curve[1] + 4 * curve[2] - curve[3],
                        -curve[-4] + 4 * curve[-3] - 5 * curve[-2] + 2 * curve[-1],
                    )
                )
                lbg.append(np.full(2, -acc[m] / rate**2))
                ubg.append(np.full(2, acc[m] / rate**2))
    lbx = np.full((F, nq), -np.inf)
    ubx = np.full((F, nq), np.inf)
    lbx[:, model.motor_columns] = lo
    ubx[:, model.motor_columns] = hi
    nlp = {"x": ca.vec(X), "p": ca.vec(targets), "f": ca.sum2(cost), "g": ca.vertcat(*constraints)}
    options = {
        "print_time": False,
        "record_time": True,
        "expand": expand,
        "ipopt": {
            "print_level": 0,
            "sb": "yes",
            "tol": tolerance,
            "constr_viol_tol": tolerance,
            "bound_relax_factor": 0.0,  # limits held exactly, not relaxed by 1e-8
            "max_iter": max_iterations,
            "hessian_approximation": "exact",
            **(ipopt_options or {}),
        },
    }
    solver = ca.nlpsol("reference", "ipopt", nlp, options)
    parameters = np.concatenate([P.reshape(F, 3 * K), Rt.reshape(F, 9 * K)], axis=1).T  # (12 K, F)
    build_seconds = time.perf_counter() - begin
    clock = time.perf_counter()
    result = solver(
        x0=x0.T.ravel(order="F"),
        p=parameters.ravel(order="F"),
        lbx=lbx.T.ravel(order="F"),
        ubx=ubx.T.ravel(order="F"),
        lbg=np.concatenate(lbg) if lbg else np.zeros(0),
        ubg=np.concatenate(ubg) if ubg else np.zeros(0),
    )
    call_seconds = time.perf_counter() - clock
    stats = solver.stats()
    Q = np.array(result["x"]).reshape(F, nq)
    poses = model.poses(Q)
    return ReferenceSolution(
        motors=model.motors(Q),
        objective=float(result["f"]),
        positions=poses["positions"],
        rotations=poses["rotations"],
        coordinates=Q,
        seconds=float(stats.get("t_wall_total", call_seconds)),
        build_seconds=build_seconds,
        status=str(stats["return_status"]),
        iterations=int(stats["iter_count"]),
        success=bool(stats["success"]),
        closure_residual=float(np.abs(poses["closure"]).max(initial=0.0)),
        timings={k: float(v) for k, v in stats.items() if k.startswith("t_wall")},
    )
