"""The primitive rows every joint is made of, stacked over all of their instances.

* ``point`` (3 rows):  ``R_i x_i + c_i - R_j x_j - c_j``                      [m]
* ``dot``   (1 row):   ``L (R_i u_i) . (R_j v_j)`` — axis orthogonality       [m]
* ``slide`` (1 row):   ``(p_j - p_i) . (R_i n_i) - d`` — offset along an axis [m]

A joint kind is a combination of them (:meth:`JointRows.add_passive`); loop closures
written open are point coincidences (:class:`FrameClosure`). ``L`` is
:func:`mean_joint_distance` (paper III.C). :class:`~looprig.core.model.constraints.ConstraintSet`
evaluates the stacks.
"""

from dataclasses import dataclass, field

import numpy as np

from .mechanism import Mechanism
from .parts import JointKind

#: Columns of a joint frame: its axis, then the two axes completing it.
X, Y, Z = 0, 1, 2


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
    :class:`~looprig.core.model.mechanism.Joint` (whose anchor is one point of the
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
class Stack:
    """Instances of one primitive: body indices, local vectors, row numbers."""

    bi: np.ndarray  # (K,) int
    bj: np.ndarray  # (K,) int
    a: np.ndarray  # (K, 3) local on i: point x_i, or axis u_i
    b: np.ndarray  # (K, 3) local on j: point x_j, or axis v_j
    c: np.ndarray  # (K, 3) local on i: u_i rotated +90 deg (dot), or slide axis n_i
    d: np.ndarray  # (K, 3) local on j: point x_j (slide only)
    rows: np.ndarray  # (K, r) int
    actuator: np.ndarray  # (K,) index into the actuator values, or -1


class StackBuilder:
    """Collects the instances of one primitive, ``width`` rows each, into a :class:`Stack`."""

    def __init__(self, width: int):
        self.width = width
        self.items: list[tuple] = []

    def add(self, bi, bj, a, b, c=None, d=None, actuator=-1):
        zero = np.zeros(3)
        self.items.append((bi, bj, a, b, zero if c is None else c, zero if d is None else d, actuator))

    def build(self, first_row: int) -> Stack:
        k = len(self.items)
        cols = list(zip(*self.items, strict=True)) if k else [[]] * 7
        rows = first_row + np.arange(k * self.width).reshape(k, self.width)
        return Stack(
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
class JointRows:
    """Adds the primitive instances of one joint to the stacks."""

    point_stack: StackBuilder
    dot_stack: StackBuilder
    slide_stack: StackBuilder
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


@dataclass
class JacobianBlocks:
    """The constraint Jacobian as :meth:`ConstraintSet.evaluate` makes it, before assembly.

    rows (..., m, 2, 6): every row's derivative by the tangent of its joint's parent
    (``[..., 0, :]``, body i) and of its child (``[..., 1, :]``, body j), zero for the
    coupling rows; couplings: those rows' blocks on the bodies of their joints ((..., k, 6)
    per slot, :class:`~looprig.core.model.coupling_rows.CouplingRows`), or None.
    """

    rows: np.ndarray
    couplings: tuple | None = None
