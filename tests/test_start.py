"""Where a clip starts: any start the mechanism reaches assembles there (issue 25, item 1).

On d29a55b a start more than about a quarter turn from the file pose settled on
the actuator row's mirror solution and was refused; starts are now reached by
continuation from the file pose.
"""

import dataclasses
import re

import numpy as np
import pytest
from looprig.core import ActuatorReadout, ConstraintSet, TargetError, analyse_mobility, solve_fk
from looprig.core.library import NAMES, build
from looprig.core.library.planar import fourbar_closed_form
from looprig.core.solvers.fk import solve_fk_path
from looprig.core.solvers.start import start_state

#: Starts per motor, spread evenly over its range (both ends included).
STARTS = 5
#: Mechanisms whose every start inside the ranges is reachable: serial chains, full-turn
#: cranks, and loops that follow any one motor (the Stewart platform's legs cannot all be
#: stretched alone to the ends of their ranges).
ALL_REACHABLE = set(NAMES) - {"stewart"}


def spread(mechanism, joint) -> np.ndarray:
    """Starts over a motor's range; an unlimited angle over a whole turn [rad], an
    unlimited displacement over +-L [m] (L the mean joint distance)."""
    actuator = joint.actuator
    half = np.pi if actuator.unit == "rad" else ConstraintSet(mechanism, actuated=True).length_scale
    lo = actuator.lower if np.isfinite(actuator.lower) else -half
    hi = actuator.upper if np.isfinite(actuator.upper) else half
    return np.linspace(lo, hi, STARTS)


def nearest_reached(message: str, name: str) -> float:
    match = re.search(rf"nearest it reaches on the way from its file pose is .*\b{name} = (\S+) ", message)
    assert match, message
    return float(match[1])


@pytest.mark.parametrize("name", NAMES)
def test_starts_over_every_motor_range_assemble_there_or_name_the_nearest(name):
    """Each start assembles (constraints held to 1e-10 L, the motor read back at its value,
    the other motors at their file values unless the motors over-determine the robot),
    or is refused naming the motor and the nearest value it reaches: 1e-4 short of it
    assembles, 1e-3 past it (from there) does not."""
    mechanism = build(name)
    cs = ConstraintSet(mechanism, actuated=False)
    readout = ActuatorReadout(mechanism)
    file_values = readout.read(mechanism.initial_state())
    over_actuated = analyse_mobility(mechanism).dof < len(file_values)
    refused = []
    for a, joint in enumerate(mechanism.actuated_joints):
        motor = joint.actuator_name
        for value in spread(mechanism, joint):
            try:
                state = start_state(mechanism, {motor: float(value)})
            except TargetError as error:
                refused.append((motor, value, str(error)))
                continue
            assert np.max(np.abs(cs.residual(state))) < 1e-10 * cs.length_scale
            expected = file_values.copy()
            expected[a] = value
            got = readout.read(state, previous=expected)
            assert abs(got[a] - value) < 1e-9, (motor, value, got[a])
            if not over_actuated:
                np.testing.assert_allclose(got, expected, atol=1e-9)
    if name in ALL_REACHABLE:
        assert not refused, refused[:3]
    for motor, value, message in refused:
        a = mechanism.actuator_names.index(motor)
        nearest = nearest_reached(message, motor)
        assert abs(nearest) < abs(value) and np.sign(nearest) in (0, np.sign(value))
        outwards = np.sign(value - nearest)
        goal = file_values.copy()
        goal[a] = nearest - 1e-4 * outwards  # the printed value, rounded, may lie just past the edge
        inside = solve_fk_path(mechanism, goal)
        assert inside.complete, (motor, nearest)
        goal[a] = nearest + 1e-3 * outwards
        beyond = solve_fk(mechanism, goal, inside.result.state, raise_on_failure=False)
        assert not beyond.converged, (motor, nearest)


def test_the_boxer_shoulder_starts_past_a_quarter_turn():
    """The issue's case: a 3-DoF shoulder rotated 2.2 rad from the file pose (d29a55b
    settled at 2.2 - pi, "the mirror solution")."""
    boxer = build("boxer")
    readout = ActuatorReadout(boxer)
    for motor in ("shoulder_yaw", "shoulder_pitch"):
        state = start_state(boxer, {motor: 2.2})
        values = readout.read(state, previous=np.zeros(len(boxer.actuator_names)))
        expected = np.zeros_like(values)
        expected[boxer.actuator_names.index(motor)] = 2.2
        np.testing.assert_allclose(values, expected, atol=1e-9)


def rocker_driven_fourbar():
    """The four-bar driven at its rocker, which swings through a limited range only."""
    m = build("fourbar")
    joints = [
        dataclasses.replace(j, actuator=m.joint("crank_joint").actuator if j.name == "rocker_joint" else None)
        for j in m.joints
    ]
    return type(m)(m.bodies, joints, m.frames, name="rocker_driven")


def rocker_extremes(ground=0.3, crank=0.1, coupler=0.35, rocker=0.3) -> np.ndarray:
    """The rocker's extreme angles [rad], where crank and coupler are collinear: the
    coupler pin B at ``coupler +- crank`` from the crank pivot and ``rocker`` from O4
    (upper branch), measured from the file pose (crank at pi/2)."""
    angles = []
    for reach in (coupler + crank, coupler - crank):
        a = (reach**2 - rocker**2 + ground**2) / (2 * ground)  # along the ground line from O2
        h = np.sqrt(reach**2 - a**2)
        angles.append(np.arctan2(h, a - ground))
    return np.sort(np.array(angles) - fourbar_closed_form(np.pi / 2)[0])


@pytest.mark.parametrize("side", [0, 1])
def test_a_rocker_pushed_past_its_dead_point_is_refused_at_the_closed_form_extreme(side):
    """Driven at the rocker, the four-bar reaches the rocker's extremes (crank and
    coupler collinear) and no further: the refusal names that extreme."""
    mechanism = rocker_driven_fourbar()
    extreme = rocker_extremes()[side]
    asked = extreme + (0.2 if side else -0.2)
    with pytest.raises(TargetError, match="rocker_joint") as caught:
        start_state(mechanism, {"rocker_joint": asked})
    assert abs(nearest_reached(str(caught.value), "rocker_joint") - extreme) < 1e-3
    inside = start_state(mechanism, {"rocker_joint": extreme - np.sign(asked) * 1e-2})
    assert abs(ActuatorReadout(mechanism).read(inside)[0] - (extreme - np.sign(asked) * 1e-2)) < 1e-9
