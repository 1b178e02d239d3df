"""Equality terms: the joint constraints of the IK (actuated joints passive), and
motors locked at given values."""

import numpy as np

from ..model.constraints import ConstraintSet
from .base import Linearization, Point, Term, TermKind, motor_units


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


class MotorLock(Term):
    """Motors held at fixed values: ``L S (p(s) - p_held) = 0`` [m] for the chosen
    motors (S = 1 for angles, 1/L for displacements, so rows weigh like the joint
    constraints' metres). Residual (B, H), Jacobian (B, H, N) from the read-off."""

    name = "motor lock"
    unit = "m"
    kind = TermKind.EQUALITY

    def __init__(self, readout, motors: np.ndarray, values: np.ndarray, length_scale: float):
        self.readout = readout
        self.motors = np.asarray(motors, dtype=int)
        self.values = np.asarray(values, dtype=float)
        L = float(length_scale)
        self._row_scale = L * motor_units(readout, L, self.motors)

    def linearize(self, point: Point, derivatives: bool = True) -> Linearization:
        held = self.readout.read(point.state, R=point.R)[..., self.motors]
        angle = self.readout.is_angle[self.motors]
        offset = held - self.values
        offset = np.where(angle, np.angle(np.exp(1j * offset)), offset)  # the nearest turn
        residual = self._row_scale * offset
        value = np.abs(residual).max(axis=-1, initial=0.0)
        if not derivatives:
            return Linearization(value, None, None, residual)
        J = self.readout.jacobian(point.state, point.R, point.column_of_body, point.n_vars)[
            ..., self.motors, :
        ]
        return Linearization(value, None, None, residual, J * self._row_scale[:, None])

    def errors(self, point: Point) -> dict[str, np.ndarray]:
        return {"held motors max |p - p_held| [m]": self.linearize(point, derivatives=False).value}
