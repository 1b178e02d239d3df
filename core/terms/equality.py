"""The joint constraints of the IK (actuated joints passive), as an equality term."""

import numpy as np

from ..constraints import ConstraintSet
from .base import Linearization, Point, Term, TermKind


class JointConstraints(Term):
    """``C_IK(s) = 0`` [m]: every joint, loop closure and ground row of the mechanism
    with the actuators passive. Residual (B, m), Jacobian (B, m, N)."""

    name = "joint constraints"
    unit = "m"
    kind = TermKind.EQUALITY

    def __init__(self, constraints: ConstraintSet):
        self.constraints = constraints

    def linearize(self, point: Point, derivatives: bool = True) -> Linearization:
        c, blocks = self.constraints.evaluate(point.state, jacobian=derivatives, R=point.R)
        value = np.abs(c).max(axis=-1, initial=0.0)
        J = self.constraints.dense(blocks, (point.batch,)) if derivatives else None
        return Linearization(value, None, None, c, J)

    def errors(self, point: Point) -> dict[str, np.ndarray]:
        return {"max |C| [m]": self.linearize(point, derivatives=False).value}
