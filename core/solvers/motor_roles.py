"""The first-order picture behind holding motors (:mod:`.holding`): at a pose, which
motors move the targeted frames and the centre of mass, which directions the others
leave free, how much mass each motor's motion carries, and which joints close loops."""

import numpy as np

from ..maths.linalg import null_space
from ..maths.rotations import quat_to_matrix
from ..model.constraints import ConstraintSet
from ..model.graph import joined, on_cycles
from ..model.parts import JointKind
from ..model.readoff import ActuatorReadout
from ..terms import ComObjective, ComTask, FrameObjective, FrameTask, Reference, Targets
from ..terms.base import motor_units
from .fk import solve_fk
from .ik import IKProblem

#: Assembled poses besides the start where a motor must also be unused, and their spread [rad | L].
CHECK_POSES, CHECK_SPREAD = 4, 0.1
#: A motor is unused when a unit motion of it moves the objectives less than this times L [m].
UNUSED_TOLERANCE = 1e-8
#: Relative singular value below which a direction is free (null spaces).
NULL_TOLERANCE = 1e-10
#: Relative singular value below which a direction counts as lost (rank tests).
RANK_TOLERANCE = 1e-6


class Linearization:
    """The maps of one pose in dimensionless tangent coordinates (translations in units of
    L): constraints E (m, N), motors P (A, N) [rad | L], objectives O (r, N) [m], with
    weighted axes counted at weight one (orientation rows times L)."""

    def __init__(self, problem: IKProblem, state: np.ndarray):
        cs, readout = problem.constraints, problem.readout
        L = cs.length_scale
        R = quat_to_matrix(state[:, 3:])[None]
        s = state[None]
        frames = FrameTask(
            problem.mechanism,
            [
                FrameObjective(f.frame, np.greater(f.position_weight, 0), np.greater(f.orientation_weight, 0))
                for f in problem.frames
            ],
        )
        points, axes = frames.poses(s, R)
        com = None
        if problem.com is not None:
            com_task = ComTask(problem.mechanism, ComObjective(np.greater(problem.com.weight, 0)))
            com = com_task.com(s)
        reference = Reference(s, R, readout.read(s, R=R))
        point = problem.point(s, Targets(points, axes, com), reference, R)
        scale = 1.0 / problem.step_scale  # tangent per dimensionless unit: L [m] or 1 [rad]
        self.E = np.concatenate([t.linearize(point).jacobian[0] for t in problem.equality_terms]) * scale
        units = motor_units(readout, L)
        self.P = readout.jacobian(s, R, cs.column_of_body, cs.n_vars)[0] * units[:, None] * scale
        rows = [np.zeros((0, cs.n_vars))]
        if len(frames):
            J = frames.residual(point)[1][0]
            J[3 * len(frames) :] *= L
            rows.append(J)
        if com is not None:
            rows.append(com_task.residual(point)[1][0])
        self.O = np.concatenate(rows) * scale
        self.state, self.R, self.L = state, R[0], L
        # (N, d): the motions that keep the constraints, to the precision of the loops' file:
        # of the spanning tree's joint motions (which keep the tree joints: their rows
        # vanish on them to rounding, hence the floor relative to all of E) those that keep
        # the other rows; the same space as E's null space, an SVD of D columns, not N
        tree_motions = np.linalg.qr(problem.tree.joint_basis(s, R)[0] / scale[:, None])[0]
        floor = max(problem.mechanism.closure_gap, NULL_TOLERANCE * np.linalg.norm(self.E))
        self.assembled = tree_motions @ null_space(self.E @ tree_motions, NULL_TOLERANCE, floor)

    def free_directions(self, locked) -> np.ndarray:
        """Orthonormal basis (N, d) of the motions that keep the constraints and the ``locked`` motors."""
        locked = list(locked)
        if not locked:
            return self.assembled
        return self.assembled @ null_space(self.P[locked] @ self.assembled, NULL_TOLERANCE)

    def motor_directions(self, locked):
        """Per motor, the motion (N,) that turns it by one unit with the other motors (and the
        ``locked`` ones) held, or None where the motor cannot move alone (it is coupled to others)."""
        Z = self.free_directions(locked)
        PZ = self.P @ Z
        out = []
        for i in range(len(self.P)):
            unit = np.eye(len(self.P))[i]
            x = np.linalg.lstsq(PZ, unit, rcond=None)[0]
            out.append(None if np.abs(PZ @ x - unit).max(initial=0.0) > 1e-6 else Z @ x)
        return out

    def objective_rank(self, locked) -> int:
        """Rank of the objectives' Jacobian over the motions that keep ``locked`` motors held."""
        return _rank(self.O @ self.free_directions(locked))


def _range(A: np.ndarray, tolerance: float) -> np.ndarray:
    """Orthonormal basis of the range of A (singular values above ``tolerance``)."""
    if A.size == 0:
        return np.zeros((len(A), 0))
    U, sigma, _ = np.linalg.svd(A, full_matrices=False)
    return U[:, sigma > tolerance]


def _rank(A: np.ndarray) -> int:
    if A.size == 0:
        return 0
    sigma = np.linalg.svd(A, compute_uv=False)
    return int((sigma > RANK_TOLERANCE * max(sigma.max(initial=0.0), 1e-300)).sum())


def kinetic_energy(problem: IKProblem, lin: Linearization, motion: np.ndarray) -> float:
    """Kinetic energy per unit motor speed [kg m^2] of a dimensionless tangent motion (N,)."""
    cs, bodies = problem.constraints, problem.mechanism.bodies
    free = cs.free_bodies
    columns = cs.column_of_body[free]
    v = lin.L * motion[columns[:, None] + np.arange(3)]  # (B, 3) [m per unit]
    w = motion[columns[:, None] + np.arange(3, 6)]  # (B, 3) [rad per unit]
    mass = np.array([bodies[b].mass for b in free])
    inertia = np.array([np.zeros((3, 3)) if bodies[b].inertia is None else bodies[b].inertia for b in free])
    body_w = np.einsum("bji,bj->bi", lin.R[free], w)  # in body axes: w^T R I R^T w = (R^T w)^T I (R^T w)
    return float(mass @ (v * v).sum(1) + np.einsum("bi,bij,bj->", body_w, inertia, body_w))


class Linearizations:
    """The poses a decision asks (:class:`Linearization` each): the start's always, the
    :func:`check_poses`' only once a question needs them.

    A pose where the held motors leave more motion free than at the others is singular
    (a dead centre): its first-order picture is not the mechanism's, so it is not asked.
    A start whose constraints and motors have full row rank leaves the least motion free
    of any pose, so it is never the one dropped and the questions it settles alone need
    no other pose: a motor it finds moving the objectives is used; one the joint graph
    shows moving no objective anywhere (:func:`unused_by_structure`) is unused; locking
    motors keeps the objectives' structural rank where the start keeps the frames' full
    rank (a frame's rows are a rigid map of its body's motion: their rank is the same at
    every pose). Otherwise the check poses are made at once and the start is the first
    pose kept."""

    def __init__(self, problem: IKProblem, state: np.ndarray):
        self.problem, self.state = problem, state
        self.start = Linearization(problem, state)
        self._poses = None
        n = len(problem.readout.names)
        passive = self.start.free_directions(range(n)).shape[1]
        E = self.start.E
        if passive != E.shape[1] - len(E) - n:  # the start may be singular
            self.start = self.poses[0]
        # the rank no pose exceeds: the frames' (a CoM objective's rows join the bodies' motions)
        self._full_rank = None if problem.com is not None else _rank(self.start.O)

    @property
    def poses(self) -> list[Linearization]:
        """The start and the check poses, singular ones left out (made on first use)."""
        if self._poses is None:
            lins = [self.start] + [
                Linearization(self.problem, s) for s in check_poses(self.problem, self.state)
            ]
            n = len(self.problem.readout.names)
            passive = [lin.free_directions(range(n)).shape[1] for lin in lins]
            self._poses = [lin for lin, d in zip(lins, passive, strict=True) if d == min(passive)]
        return self._poses

    def unused(self) -> np.ndarray:
        """(A,) bool: :func:`unused_motors` over :attr:`poses`."""
        unused = unused_motors(self.problem, [self.start])
        if (unused & ~unused_by_structure(self.problem, np.flatnonzero(unused))).any():
            unused = unused_motors(self.problem, self.poses)
        return unused

    def keeps_rank(self, locked, motor: int) -> bool:
        """Whether locking ``motor`` besides ``locked`` loses no direction the objectives
        can move in: the structural rank (the largest over the poses; one pose may be
        singular by chance) stays."""
        rank = self.start.objective_rank([*locked, motor])
        if rank == self._full_rank:
            return True
        return max(lin.objective_rank([*locked, motor]) for lin in self.poses) == max(
            lin.objective_rank(locked) for lin in self.poses
        )


def check_poses(problem: IKProblem, state: np.ndarray) -> list[np.ndarray]:
    """Assembled states around ``state`` with the motors moved by about CHECK_SPREAD (seeded)."""
    readout: ActuatorReadout = problem.readout
    values = readout.read(state)
    spread = CHECK_SPREAD * np.where(readout.is_angle, 1.0, problem.constraints.length_scale)
    rng = np.random.default_rng(1)
    actuated = ConstraintSet(problem.mechanism, actuated=True)  # built once for the poses
    poses = []
    for _ in range(CHECK_POSES):
        moved = solve_fk(
            problem.mechanism,
            values + spread * rng.normal(size=len(values)),
            state,
            raise_on_failure=False,
            constraints=actuated,
        )
        if moved.converged:
            poses.append(moved.state)
    return poses


def unused_motors(problem: IKProblem, lins: list[Linearization]) -> np.ndarray:
    """(A,) bool: motors that can move with the other motors held (not fixed by them, as in
    an over-actuated loop) and whose motion then moves the objectives in no direction that
    the passive motions (a floating base, every motor held) do not already give, by more
    than UNUSED_TOLERANCE L per unit, at every pose."""
    n = len(problem.readout.names)
    unused = np.ones(n, bool)
    for lin in lins:
        passive = lin.O @ lin.free_directions(range(n))
        Q = _range(passive, UNUSED_TOLERANCE * lin.L)
        for i in np.flatnonzero(unused):
            alone = lin.free_directions([k for k in range(n) if k != i])
            if np.linalg.norm(lin.P[i] @ alone) <= 1e-6:  # the others fix it (over-actuated)
                unused[i] = False
                continue
            moved = lin.O @ alone
            beyond = moved - Q @ (Q.T @ moved)
            unused[i] = beyond.size == 0 or np.linalg.norm(beyond, 2) <= UNUSED_TOLERANCE * lin.L
    return unused


def unused_by_structure(problem: IKProblem, motors=None) -> np.ndarray:
    """(A,) bool: motors (of ``motors``, None: all) that move no objective at any pose,
    read off the joint graph: on a grounded mechanism without couplings or a CoM
    objective, a motor whose joint closes no loop and whose side away from the ground
    (what it moves, the other motors held) carries no targeted frame, such as an antenna."""
    mechanism, readout = problem.mechanism, problem.readout
    unused = np.zeros(len(readout.names), bool)
    if (
        problem.com is not None
        or mechanism.couplings
        or any(j.kind == JointKind.FREE for j in mechanism.joints)
    ):
        return unused
    node = [-1 if b.grounded else i for i, b in enumerate(mechanism.bodies)]
    edges = {
        j.name: (node[mechanism.body_index(j.parent)], node[mechanism.body_index(j.child)])
        for j in mechanism.joints
    }
    targeted = {
        node[mechanism.body_index(mechanism.frame(f.frame).body)]
        for f in problem.frames
        if np.any(np.greater(f.position_weight, 0)) or np.any(np.greater(f.orientation_weight, 0))
    }
    for i in range(len(unused)) if motors is None else motors:
        joint = mechanism.actuated_joints[i].name
        side = joined(edges, edges[joint][1], joint)
        if -1 in side:  # the child side is grounded: the parent's moves, unless it is grounded too
            side = joined(edges, edges[joint][0], joint)
        unused[i] = -1 not in side and not targeted.intersection(side)
    return unused


def loop_joints(mechanism) -> set[str]:
    """Names of the joints that close a kinematic loop (removing one leaves its bodies
    connected: it lies on a cycle of the joint graph, grounded bodies merged, ``free``
    joints left out)."""
    node = [-1 if b.grounded else i for i, b in enumerate(mechanism.bodies)]
    edges = {
        j.name: (node[mechanism.body_index(j.parent)], node[mechanism.body_index(j.child)])
        for j in mechanism.joints
        if j.kind != JointKind.FREE
    }
    return {name for name, looped in zip(edges, on_cycles(edges.values()), strict=True) if looped}
