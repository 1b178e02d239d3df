"""looprig.core: the pure numpy/scipy solver.

Mechanisms with kinematic loops in maximal coordinates, forward kinematics by
Gauss-Newton, state-based IK by SQP (Schumacher, Knoop & Bächer, RA-L 2021),
actuator read-off, retargeting of clips, actuator curves and their exports
(:mod:`.curves`, :mod:`.export`), the tracks format (:mod:`.tracks`, :mod:`.bvh`).
Imports numpy and scipy only.
"""

from .constraints import ConstraintSet
from .curves import ActuatorCurves, LimitViolationError, Violation
from .errors import LooprigError, MechanismError, SolverError, TargetError
from .fk import FKResult, FKSettings, assemble, solve_fk
from .ik import IKProblem, IKResult, IKSettings, IKTargets, solve_ik
from .linalg import single_threaded_blas
from .mechanism import (
    ActuatedMotion,
    Actuator,
    Body,
    Coupling,
    Frame,
    Joint,
    JointKind,
    Mechanism,
)
from .mobility import MobilityReport, analyse_mobility
from .readoff import ActuatorReadout, JointReadout, unwrap_sequence
from .retarget import (
    AimSpec,
    ComSpec,
    RetargetMapping,
    RetargetResult,
    SupportPhase,
    TargetSpec,
    TrackSamples,
    retarget,
)
from .step import LinearizedStep, build_step
from .terms import ComObjective, FrameObjective, Regularization, Term, TermKind, velocity_threshold

__all__ = [
    "ActuatedMotion",
    "Actuator",
    "ActuatorCurves",
    "ActuatorReadout",
    "AimSpec",
    "Body",
    "ComObjective",
    "ComSpec",
    "ConstraintSet",
    "Coupling",
    "FKResult",
    "FKSettings",
    "Frame",
    "FrameObjective",
    "IKProblem",
    "IKResult",
    "IKSettings",
    "IKTargets",
    "Joint",
    "JointKind",
    "JointReadout",
    "LimitViolationError",
    "LinearizedStep",
    "LooprigError",
    "Mechanism",
    "MechanismError",
    "MobilityReport",
    "Regularization",
    "RetargetMapping",
    "RetargetResult",
    "SolverError",
    "SupportPhase",
    "TargetError",
    "TargetSpec",
    "Term",
    "TermKind",
    "TrackSamples",
    "Violation",
    "analyse_mobility",
    "assemble",
    "build_step",
    "retarget",
    "single_threaded_blas",
    "solve_fk",
    "solve_ik",
    "unwrap_sequence",
    "velocity_threshold",
]
