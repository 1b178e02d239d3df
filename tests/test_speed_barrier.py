"""Motor speed limits held on clips that break them (``limit_mode`` hold, the default),
where the retired greedy speed bound (``respect_speed_limits``) was tested: the Boxer
through its exact gimbal singularity and a parallel robot whose loops must stay
closed. Every limit holds on the curves as the checks read them, the robot stays
assembled, and a frame no limit touches is the exact answer."""

import dataclasses
import json

import numpy as np
import pytest
from looprig.core import Mechanism
from looprig.core.curves.limit_checks import all_violations
from looprig.core.errors import LooprigWarning
from looprig.core.library import build
from looprig.core.library.clips import delta_platform_clip
from looprig.core.library.parallel import delta
from looprig.core.retarget import RetargetMapping, TargetSpec, retarget
from test_closed_forms import ALL_AXES, BOXER_RATE, boxer_clip_through_the_singularity

HAND = (TargetSpec("hand", "hand", ALL_AXES, ALL_AXES),)


def _with_speed_limit(mechanism: Mechanism, velocity: float) -> Mechanism:
    """``mechanism`` with every actuator's velocity limit set to ``velocity`` [rad/s]."""
    joints = [
        dataclasses.replace(j, actuator=dataclasses.replace(j.actuator, velocity_limit=velocity))
        if j.actuator is not None
        else j
        for j in mechanism.joints
    ]
    return Mechanism(mechanism.bodies, joints, mechanism.frames, name=mechanism.name)


def test_a_mapping_that_asks_for_the_retired_speed_bound_loads_and_says_what_happens(tmp_path):
    path = tmp_path / "old.map.json"
    data = RetargetMapping(HAND).to_dict()
    path.write_text(json.dumps({**data, "respect_speed_limits": True}))
    with pytest.warns(LooprigWarning, match="'respect_speed_limits' is retired: every declared motor limit"):
        mapping = RetargetMapping.load(path)
    assert mapping.limit_mode == "hold"


def test_a_speed_limit_the_motion_respects_changes_nothing():
    """The Boxer through its exact gimbal singularity with 100 rad/s servos: no limit is
    broken, so the defaults give the exact answer, bit for bit."""
    _, clip = boxer_clip_through_the_singularity()
    boxer = _with_speed_limit(build("boxer"), 100.0)
    exact = retarget(boxer, clip, RetargetMapping(HAND, rate=BOXER_RATE, limit_mode="report"))
    held = retarget(boxer, clip, RetargetMapping(HAND, rate=BOXER_RATE))
    assert not all_violations(exact.curves)
    assert np.array_equal(held.curves.values, exact.curves.values) and np.array_equal(
        held.states, exact.states
    )


def test_boxer_through_an_exact_gimbal_singularity_keeps_every_limit():
    """Through the exact singularity the exact answer spins yaw and pitch fast; with
    servos at half its peak speed, held, every limit keeps (as the checks read the
    curves), the arm stays assembled, the frames the limits keep from the hand are
    reported as limited, and the frames left as they were are exact."""
    _, clip = boxer_clip_through_the_singularity()
    fast = retarget(build("boxer"), clip, RetargetMapping(HAND, rate=BOXER_RATE, limit_mode="report"))
    peak = np.abs(np.diff(fast.curves.values, axis=0)).max() * BOXER_RATE
    boxer = _with_speed_limit(build("boxer"), 0.5 * peak)
    exact = retarget(boxer, clip, RetargetMapping(HAND, rate=BOXER_RATE, limit_mode="report"))
    held = retarget(boxer, clip, RetargetMapping(HAND, rate=BOXER_RATE))
    assert all_violations(exact.curves) and not all_violations(held.curves)
    assert held.residual.max() < 1e-9
    summary = held.summary()
    assert summary["limited_frames"] > 0 and summary["limit_solve"]["converged"]
    same = np.all(held.curves.values == exact.curves.values, axis=1)
    assert held.position_error[same].max(initial=0.0) < 1e-8


def test_a_parallel_robot_keeps_its_loops_closed_under_its_limits():
    """The 3-RSS delta of tests/test_closed_forms.py with its motors limited to 70 % of
    the clip's fastest speed: held, the solve converges (its gentle second try: loops
    closed after each step), every limit keeps, and every loop stays closed. The limits
    bind across the clip here (the platform lags and catches up), so every frame moves."""
    rate = 200.0
    samples, _ = delta_platform_clip(rate)
    spec = (TargetSpec("platform", "platform", ALL_AXES, ALL_AXES),)
    fastest = np.abs(
        np.diff(
            retarget(delta(), samples, RetargetMapping(spec, rate=rate, limit_mode="report")).curves.values,
            axis=0,
        )
    )
    mechanism = _with_speed_limit(delta(), 0.7 * fastest.max() * rate)
    exact = retarget(mechanism, samples, RetargetMapping(spec, rate=rate, limit_mode="report"))
    held = retarget(mechanism, samples, RetargetMapping(spec, rate=rate))
    assert all_violations(exact.curves) and not all_violations(held.curves)
    assert held.summary()["limit_solve"]["converged"] and held.residual.max() < 1e-9
    assert held.summary()["limited_frames"] > 0 and held.summary()["unreachable_frames"] == 0
