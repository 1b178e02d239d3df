"""Rigid groups: welded bodies solved as one, original states recovered exactly."""

import dataclasses

import numpy as np
import pytest
from looprig.core import (
    Actuator,
    Body,
    Frame,
    FrameObjective,
    IKProblem,
    Joint,
    JointKind,
    Mechanism,
    MechanismError,
    solve_fk,
)
from looprig.core.library import build
from looprig.core.maths.rotations import quat_from_rotvec, quat_to_matrix
from looprig.core.model.rigid import RigidGroups
from looprig.core.retarget import RetargetMapping, TargetSpec, TrackSamples, retarget

Z = np.array([0.0, 0.0, 1.0])


def welded_arm() -> Mechanism:
    """The library's two-link arm plus a tool welded to the lower link (with its own
    orientation and inertia), a massless dummy link welded to the base and a massless
    flange welded to the tool."""
    arm = build("two_link_arm")
    tip = arm.frame("tip").position
    tool_q = quat_from_rotvec(np.array([0.2, -0.1, 0.4]))
    bodies = [
        *arm.bodies,
        Body(
            "tool",
            position=tip + [0.02, 0.01, 0.0],
            orientation=tool_q,
            mass=0.3,
            inertia=np.diag([1e-3, 2e-3, 3e-3]),
        ),
        Body("base_dummy", position=np.zeros(3), mass=1e-9),
        Body("flange", position=tip + [0.04, 0.0, 0.0], mass=1e-9),
    ]
    ground = next(b.name for b in arm.bodies if b.grounded)
    lower = arm.bodies[-1].name
    joints = [
        *arm.joints,
        Joint("tool_weld", JointKind.FIXED, lower, "tool", anchor=tip),
        Joint("dummy_weld", JointKind.FIXED, ground, "base_dummy", anchor=np.zeros(3)),
        Joint("flange_weld", JointKind.FIXED, "tool", "flange", anchor=tip + [0.04, 0.0, 0.0]),
    ]
    frames = [*arm.frames, Frame("tool_point", "flange", position=tip + [0.05, 0.0, 0.0])]
    return Mechanism(bodies, joints, frames, name="welded_arm")


def test_groups_merge_mass_and_recover_every_body_exactly():
    m = welded_arm()
    groups = RigidGroups(m)
    assert len(groups.solver.bodies) == len(m.bodies) - 3
    assert all(j.kind != JointKind.FIXED for j in groups.solver.joints)
    assert np.isclose(groups.solver.masses.sum(), m.masses.sum())
    com = lambda mech, s: mech.masses @ s[:, :3] / mech.masses.sum()  # noqa: E731
    assert np.allclose(com(groups.solver, groups.solver.initial_state()), com(m, m.initial_state()))
    assert np.allclose(groups.expand(groups.solver.initial_state()), m.initial_state(), atol=1e-14)
    # any motion: the welded bodies follow their group exactly, and collapse inverts expand
    moved = solve_fk(groups.solver, [0.7, -1.1]).state
    full = groups.expand(moved)
    assert np.allclose(groups.collapse(full), moved, atol=1e-14)
    R = quat_to_matrix(full[:, 3:])
    i, j = [b.name for b in m.bodies].index("tool"), len(build("two_link_arm").bodies) - 1
    relative0 = quat_to_matrix(m.bodies[j].orientation).T @ quat_to_matrix(m.bodies[i].orientation)
    assert np.allclose(R[j].T @ R[i], relative0)
    for name in ["tool", "flange", "base_dummy", "tool_point", *[b.name for b in m.bodies]]:
        groups.solver.frame(name)  # every body and frame stays addressable by name


def test_merged_inertia_is_the_parallel_axis_sum():
    """I = sum R_i I_i R_i^T + m_i (|d|^2 1 - d d^T) about the merged CoM, in the leader's axes."""
    m = welded_arm()
    inertial = Mechanism(
        [
            dataclasses.replace(b, inertia=np.diag([1e-4, 1e-4, 1e-4]) if b.inertia is None else b.inertia)
            for b in m.bodies
        ],
        m.joints,
        m.frames,
    )
    merged_groups = RigidGroups(inertial)
    tool = [b.name for b in inertial.bodies].index("tool")
    members = [
        b
        for b, g in zip(inertial.bodies, merged_groups.group_of, strict=True)
        if g == merged_groups.group_of[tool]
    ]
    lower = merged_groups.solver.bodies[merged_groups.group_of[tool]]
    assert len(members) == 3 and lower.name == "tool"  # the heaviest member leads
    R_lead = quat_to_matrix(lower.orientation)
    expected = np.zeros((3, 3))
    for b in members:
        R = R_lead.T @ quat_to_matrix(b.orientation)
        d = R_lead.T @ (b.position - lower.position)
        expected += R @ b.inertia @ R.T + b.mass * (d @ d * np.eye(3) - np.outer(d, d))
    assert np.allclose(lower.inertia, expected)


def test_retarget_of_a_welded_robot_equals_the_plain_one_and_tracks_welded_frames():
    arm, welded = build("two_link_arm"), welded_arm()
    t = np.linspace(0.0, 0.5, 61)
    tip = np.stack([0.5 * np.cos(0.5 * t), 0.5 * np.sin(0.5 * t), 0 * t], -1)
    samples = TrackSamples(t, {"tip": tip}, {"tip": np.tile(np.eye(3), (61, 1, 1))})
    mapping = RetargetMapping((TargetSpec("tip", "tip"),), rate=120.0)
    plain, solved = retarget(arm, samples, mapping), retarget(welded, samples, mapping)
    assert np.allclose(solved.curves.values, plain.curves.values, atol=1e-9)
    assert solved.states.shape[1] == len(welded.bodies)
    # the tool frame, on a welded massless flange, can be a target too (a bent-arm motion)
    solver = RigidGroups(welded).solver
    states = np.array([solve_fk(solver, [0.3 + 0.5 * x, 0.8]).state for x in t])
    points, _ = IKProblem(solver, [FrameObjective("tool_point")]).frame_terms.poses(states)
    track = TrackSamples(t, {"tool": points[:, 0]}, {"tool": np.tile(np.eye(3), (61, 1, 1))})
    result = retarget(welded, track, RetargetMapping((TargetSpec("tool", "tool_point"),), rate=120.0))
    assert result.position_error.max() < 1e-8


def test_a_motor_between_welded_bodies_is_refused():
    arm = build("two_link_arm")
    lower, upper = arm.bodies[-1].name, arm.bodies[-2].name
    elbow = next(j for j in arm.joints if j.child == lower)
    weld = Joint("weld", JointKind.FIXED, upper, lower, anchor=elbow.anchor)
    m = Mechanism(arm.bodies, [*arm.joints, weld], arm.frames)
    assert elbow.actuator is not None and isinstance(elbow.actuator, Actuator)
    with pytest.raises(MechanismError, match="cannot move"):
        RigidGroups(m)


def test_three_hinge_balls_become_spherical_joints_and_the_links_follow():
    """Reachy Mini's URDF writes each of its 7 ball joints as three hinges with two
    massless links: solved as 17 bodies, like the MJCF; the expanded states of all 45
    links meet the file's own joints (three hinges included) to 1e-10 m."""
    from pathlib import Path

    from looprig.cad_import import load_mechanism
    from looprig.core.model.constraints import ConstraintSet

    path = Path(__file__).resolve().parents[2] / "shared" / "models" / "reachy_mini" / "urdf" / "robot.urdf"
    if not path.exists():
        pytest.skip(f"the shared Reachy Mini model is not at {path}")
    motors = ("yaw_body", *(f"stewart_{k}" for k in range(1, 7)), "right_antenna", "left_antenna")
    m = load_mechanism(path, actuated=motors)
    groups = RigidGroups(m)
    assert (len(m.bodies), len(groups.solver.bodies), len(groups.balls)) == (45, 17, 7)
    assert sum(j.kind == JointKind.SPHERICAL for j in groups.solver.joints) == 5 + 7
    moved = solve_fk(groups.solver, [0.1, 0.2, -0.1, 0.15, -0.2, 0.1, 0.05, 0.3, -0.3]).state
    full = groups.expand(moved)
    assert np.abs(ConstraintSet(m, actuated=False).residual(full)).max() < 1e-10
    assert np.allclose(groups.collapse(full), moved, atol=1e-12)
