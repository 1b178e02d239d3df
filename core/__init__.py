"""looprig.core: the pure numpy/scipy solver.

One folder per concept, imports flowing one way (docs/architecture.md):
:mod:`.maths` (rotations) <- :mod:`.model` (mechanisms with kinematic loops in
maximal coordinates, constraints, read-off) <- :mod:`.terms` (what the solvers
minimise or enforce) <- :mod:`.solvers` (FK by Gauss-Newton, state-based IK by
SQP after Schumacher, Knoop & Bächer, RA-L 2021, whole clips) <- :mod:`.retarget`;
motion in (:mod:`.tracks`), actuator curves (:mod:`.curves`) and their exports
(:mod:`.export`); robots built in code (:mod:`.library`) and reference solvers
(:mod:`.baselines`). Imports numpy, scipy and threadpoolctl only.
"""

from .curves.actuator_curves import ActuatorCurves
from .curves.violations import LimitViolationError, Violation
from .errors import LooprigError, MechanismError, SolverError, TargetError
from .maths.linalg import single_threaded_blas
from .model.constraints import ConstraintSet
from .model.mechanism import Mechanism
from .model.mobility import MobilityReport, analyse_mobility
from .model.parts import ActuatedMotion, Actuator, Body, Coupling, Frame, Joint, JointKind
from .model.readoff import ActuatorReadout, JointReadout, unwrap_sequence
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
from .solvers.fk import FKResult, FKSettings, assemble, solve_fk
from .solvers.ik import IKProblem, IKResult, IKSettings, IKTargets, solve_ik
from .solvers.step import LinearizedStep, build_step
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
