"""Degrees of freedom of a mechanism: Grübler count and Jacobian rank.

The Grübler-Kutzbach count ignores geometry; the rank of the passive
constraint Jacobian at an assembled state does not. Their difference shows up
as redundant constraints, normal for planar loops written with spatial joints
(a planar four-bar has Grübler count -2, mobility 1, 3 redundant rows).
"""

from collections import Counter
from dataclasses import asdict, dataclass

import numpy as np

from .constraints import ConstraintSet
from .mechanism import Mechanism
from .readoff import ActuatorReadout


@dataclass(frozen=True)
class MobilityReport:
    """dof: mobility with every actuator free (6 n_free - rank J_IK);
    dof_with_actuators: mobility left when the actuators are locked (0 for a
    fully actuated mechanism, negative never: extra actuator rows are redundant);
    redundant_constraints: passive rows minus rank; grubler: the spatial count
    (one less per coupling); constraint_rows counts the joint rows and the
    ``coupling_rows`` (one per joint coupling); coupling_kinds: how many couplings
    of each :attr:`~looprig.core.model.parts.Coupling.kind` (gear, differential,
    polynomial) there are."""

    bodies: int
    joints: int
    actuators: int
    loops: int
    grubler: int
    constraint_rows: int
    coupling_rows: int
    dof: int
    redundant_constraints: int
    dof_with_actuators: int
    coupling_kinds: dict[str, int]

    def as_dict(self) -> dict:
        return asdict(self)


def numerical_rank(J: np.ndarray, relative_tolerance: float = 1e-9, floor: float = 0.0) -> int:
    """Rank of J from its singular values: those above ``relative_tolerance`` times the
    largest and above ``floor`` (absolute, in J's units)."""
    if J.size == 0:
        return 0
    s = np.linalg.svd(J, compute_uv=False)
    return int(np.sum(s > max(relative_tolerance * max(s[0], 1e-300), floor)))


def analyse_mobility(mechanism: Mechanism, state: np.ndarray | None = None) -> MobilityReport:
    """Mobility at ``state`` (default: the initial configuration, assumed assembled).

    The Jacobians' rows are in metres and their columns in body metres and radians,
    so a singular value is how far a unit motion (one radian) opens the loops [m]. A
    motion that opens them by less than the mechanism's
    :attr:`~looprig.core.model.mechanism.Mechanism.closure_gap` per radian is one its file
    cannot tell from free, and counts as a degree of freedom: ToddlerBot's neck, a
    parallel linkage written to eight digits, is rigid in exact arithmetic (a
    singular value of 3.2e-9 m per radian, the next 8e-3) but closes to 3e-10 m over
    +-0.4 rad of its motor, far within its file's own gap (3.6e-8 m).
    """
    state = mechanism.initial_state() if state is None else state
    passive = ConstraintSet(mechanism, actuated=False)
    actuated = ConstraintSet(mechanism, actuated=True)
    J = passive.jacobian(state)
    rank = numerical_rank(J, floor=mechanism.closure_gap)
    p0 = ActuatorReadout.of(mechanism).read(state)
    rank_act = numerical_rank(actuated.jacobian(state, p0), floor=mechanism.closure_gap)
    return MobilityReport(
        bodies=len(mechanism.bodies),
        joints=len(mechanism.joints),
        actuators=len(mechanism.actuated_joints),
        loops=mechanism.independent_loops(),
        grubler=mechanism.grubler_dof(),
        constraint_rows=passive.n_rows,
        coupling_rows=len(mechanism.couplings),
        dof=passive.n_vars - rank,
        redundant_constraints=passive.n_rows - rank,
        dof_with_actuators=actuated.n_vars - rank_act,
        coupling_kinds=dict(Counter(c.kind for c in mechanism.couplings)),
    )
