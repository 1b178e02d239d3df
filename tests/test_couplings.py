"""The solvers meet couplings with several sources and polynomial terms (their rows go
through ConstraintSet like every loop row): the per-frame IK and retargeting, frame by
frame and as a whole clip, recover poses that forward kinematics made, with the coupled
joint where its coupling puts it."""

import numpy as np
import pytest
from looprig.core.model.parts import Coupling
from looprig.core.model.readoff import JointReadout
from looprig.core.retarget import RetargetMapping, TargetSpec, TrackSamples, retarget
from looprig.core.solvers.fk import solve_fk
from looprig.core.solvers.ik import IKProblem, IKTargets, solve_ik
from looprig.core.terms import FrameObjective
from test_constraints import fan

COUPLINGS = [
    Coupling("diff", "r3", ("r1", "r2"), (0.5, -0.25)),
    Coupling("poly", "r3", "r1", 0.8, 0.0, ((-0.3, 0.2, 0.1),)),
]


@pytest.mark.parametrize("coupling", COUPLINGS, ids=lambda c: c.name)
def test_ik_recovers_a_forward_kinematics_pose_of_a_coupled_fan(coupling):
    """Targets: the centres of mass of the three arms where forward kinematics put them at
    motor values (0.4, -0.7, 0.9). From the initial configuration the IK (motors passive)
    meets them to 1e-9 m, its constraint rows (the coupling's among them) hold to its
    tolerance, and the coupled joint r3 reads its coupling's value of r1 and r2."""
    m = fan(coupling)
    goal = solve_fk(m, [0.4, -0.7, 0.9]).state
    arms = ("a", "b", "c")
    problem = IKProblem(m, [FrameObjective(name) for name in arms])
    targets = IKTargets(goal[[m.body_index(name) for name in arms], :3], np.repeat(np.eye(3)[None], 3, 0))
    result = solve_ik(problem, targets, m.initial_state())
    reached = result.state[[m.body_index(name) for name in arms], :3]
    assert np.abs(reached - targets.positions).max() < 1e-9
    assert (
        np.abs(problem.constraints.residual(result.state)).max() <= 1e-10 * problem.constraints.length_scale
    )
    r1, r2, r3 = JointReadout(m, [m.joint(n) for n in ("r1", "r2", "r3")]).read(result.state)
    assert abs(r1 + 0.7) < 1e-8 and abs(r2 - 0.9) < 1e-8
    assert r3 == pytest.approx(coupling.value([r1, r2][: len(coupling.sources)]), abs=1e-9)
    assert abs(r3) > 0.3


@pytest.mark.parametrize("whole_clip", [True, False])
def test_retarget_follows_a_clip_of_the_coupled_fan(whole_clip):
    """A second of the fan's arms moved by forward kinematics (a differential with squared
    terms on both sources), retargeted frame by frame and as a whole clip: every frame meets
    its targets to 1e-9 m and r3 reads its coupling's value at every frame."""
    coupling = Coupling("diff", "r3", ("r1", "r2"), (0.5, -0.25), 0.0, ((0.0, 0.1), (0.3,)))
    m = fan(coupling)
    t = np.linspace(0.0, 1.0, 61)
    motors = np.stack([0.3 * np.sin(2 * np.pi * t), 0.5 * np.sin(np.pi * t), -0.4 * t], -1)
    states = np.array([solve_fk(m, values).state for values in motors])
    arms = ("a", "b", "c")
    positions = {a: states[:, m.body_index(a), :3] for a in arms}
    rotations = {a: np.repeat(np.eye(3)[None], len(t), 0) for a in arms}
    targets = tuple(TargetSpec(a, a, (1.0, 1.0, 1.0), (0.0, 0.0, 0.0)) for a in arms)
    mapping = RetargetMapping(targets, rate=60, whole_clip=whole_clip, limit_mode="report")
    result = retarget(m, TrackSamples(t, positions, rotations), mapping)
    assert result.converged.all() and result.position_error.max() < 1e-9
    r1, r2, r3 = JointReadout(m, [m.joint(n) for n in ("r1", "r2", "r3")]).read(result.states).T
    expected = [coupling.value(x) for x in zip(r1, r2, strict=True)]
    np.testing.assert_allclose(r3, expected, atol=1e-9)
    assert np.ptp(r3) > 0.3
