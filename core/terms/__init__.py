"""Terms of the IK problem: tasks, regularizers, limits and constraints.

See :mod:`.base` for the protocol; one module per family.
"""

from .aim import AimObjective, AimTask
from .base import LeastSquaresTerm, Linearization, Point, Reference, Targets, Term, TermKind
from .curvature import ConstraintCurvature
from .equality import JointConstraints, MotorLock
from .limits import ActuatorBarrier, ActuatorLimits, actuator_barrier
from .regularizers import (
    MinimalMotion,
    MotorRest,
    Regularization,
    StateRegularizer,
    VelocityBarrier,
    velocity_threshold,
)
from .tasks import ComObjective, ComTask, FrameObjective, FrameTask, robot_mask

__all__ = [
    "ActuatorBarrier",
    "ActuatorLimits",
    "AimObjective",
    "AimTask",
    "ComObjective",
    "ComTask",
    "ConstraintCurvature",
    "FrameObjective",
    "FrameTask",
    "JointConstraints",
    "LeastSquaresTerm",
    "Linearization",
    "MinimalMotion",
    "MotorLock",
    "MotorRest",
    "Point",
    "Reference",
    "Regularization",
    "StateRegularizer",
    "Targets",
    "Term",
    "TermKind",
    "VelocityBarrier",
    "actuator_barrier",
    "robot_mask",
    "velocity_threshold",
]
