"""Forward kinematics against closed-form solutions."""

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from looprig.core import ActuatorReadout, ConstraintSet, SolverError, analyse_mobility, assemble, solve_fk
from looprig.core.library import build
from looprig.core.library.planar import fourbar_closed_form, slider_crank_closed_form
from looprig.core.maths.rotations import quat_to_matrix, retract


def planar_angle(state_row) -> float:
    R = quat_to_matrix(state_row[3:])
    return float(np.arctan2(R[1, 0], R[0, 0]))


def test_fourbar_rocker_follows_freudenstein_over_a_full_turn():
    """Rocker angle from circle intersection: B on circle(A, coupler) and circle(O4, rocker)."""
    m = build("fourbar")
    cs = ConstraintSet(m, actuated=True)
    theta0 = np.pi / 2
    rocker0, _ = fourbar_closed_form(theta0)
    state = m.initial_state()
    worst = 0.0
    for p in np.linspace(0.0, 2 * np.pi, 361)[1:]:
        result = solve_fk(m, [p], initial_state=state, constraints=cs)
        state = result.state
        expected, _ = fourbar_closed_form(theta0 + p)
        got = planar_angle(state[3])
        worst = max(worst, abs(np.angle(np.exp(1j * (got - (expected - rocker0))))))
        assert result.residual < 1e-11 * cs.length_scale
    assert worst < 1e-9


def test_slider_crank_slider_follows_closed_form():
    """x = r cos t + sqrt(l^2 - r^2 sin^2 t)."""
    m = build("slider_crank")
    theta0 = np.pi / 3
    state = m.initial_state()
    slider = m.body_index("slider")
    for p in np.linspace(0.0, 2 * np.pi, 73)[1:]:
        state = solve_fk(m, [p], initial_state=state).state
        assert abs(state[slider, 0] - slider_crank_closed_form(theta0 + p)) < 1e-10
        assert abs(state[slider, 1]) < 1e-12


def rocker_driven_fourbar():
    """The fourbar driven at the rocker, which swings through a limited range only."""
    m = build("fourbar")
    joints = [
        dataclasses.replace(j, actuator=m.joint("crank_joint").actuator if j.name == "rocker_joint" else None)
        for j in m.joints
    ]
    return type(m)(m.bodies, joints, m.frames, name="rocker_driven")


@pytest.mark.parametrize("p", [1.2, -1.0])
def test_infeasible_actuator_value_reports_minimum_norm_residual(p):
    with pytest.raises(SolverError, match="no assembly satisfies") as info:
        solve_fk(rocker_driven_fourbar(), [p])
    result = info.value.result
    assert result.infeasible and not result.converged and result.residual > 1e-3
    assert np.all(np.isfinite(result.state))


def test_mirror_solution_of_the_angle_row_is_flagged():
    """The single actuator row is also zero half a turn away; FK must not pass that off."""
    with pytest.raises(SolverError, match="mirror solution"):
        solve_fk(rocker_driven_fourbar(), [np.pi])


def test_wrong_number_of_actuator_values_is_an_error():
    with pytest.raises(SolverError, match="has 1 actuators \\(crank_joint\\), got 2"):
        solve_fk(build("fourbar"), [0.1, 0.2])


def test_assemble_closes_a_disturbed_loop():
    m = build("fourbar")
    rng = np.random.default_rng(1)
    disturbed = retract(m.initial_state(), rng.normal(scale=0.02, size=(4, 6)) * ~m.grounded_mask[:, None])
    result = assemble(m, disturbed)
    assert result.converged and result.residual < 1e-11
    assert analyse_mobility(m, result.state).dof == 1


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(-0.3, 0.3), min_size=2, max_size=2))
def test_fk_read_off_returns_the_commanded_values(p):
    m = build("two_link_arm")
    result = solve_fk(m, p)
    assert np.allclose(ActuatorReadout(m).read(result.state), p, atol=1e-10)
    # two-link arm closed form: tip = l1 (cos a, sin a) + l2 (cos(a+b), sin(a+b))
    tip = m.frame("tip")
    forearm = result.state[m.body_index("forearm")]
    local = tip.position - m.bodies[m.body_index("forearm")].position
    world = quat_to_matrix(forearm[3:]) @ local + forearm[:3]
    a, b = p
    expected = [0.3 * np.cos(a) + 0.25 * np.cos(a + b), 0.3 * np.sin(a) + 0.25 * np.sin(a + b), 0.0]
    assert np.allclose(world, expected, atol=1e-10)


def test_start_at_a_maximum_of_the_actuator_row_still_assembles():
    """A quarter turn away the angle row's gradient vanishes; FK must not call that infeasible."""
    m = build("two_link_arm")
    result = solve_fk(m, [np.pi / 2, 0.0])
    assert np.allclose(ActuatorReadout(m).read(result.state), [np.pi / 2, 0.0], atol=1e-9)
