"""Forward kinematics from tree coordinates (core/tree_forward.py): poses read back to the
same coordinates, every coordinate's screw against finite differences of the poses, and
starts interpolated in coordinates through full turns. The clip kept in coordinates is
checked against the per-frame solver in test_clip.py (coarse_then_clip takes it)."""

import numpy as np
import pytest
from looprig.core import FrameObjective, IKProblem
from looprig.core.library import NAMES, build
from looprig.core.library.feasible import feasible_motion
from looprig.core.solvers import tree
from looprig.core.solvers.clip import in_coordinates, interpolate_coordinates
from looprig.core.solvers.tree_forward import FORWARD_KINDS, applies, forward
from test_tree_kinematics import rssr


def _problem(name: str) -> IKProblem:
    m = build(name)
    return IKProblem(m, [FrameObjective(f.name, 1, 1) for f in m.frames])


POSED = [n for n in NAMES if applies(tree.kinematics(_problem(n)))]
#: every posed reference mechanism, and a spatial four-bar on ball joints with its crank's
#: ball reached from either side
PROBLEMS = [pytest.param(_problem(n), id=n) for n in POSED] + [
    pytest.param(IKProblem(rssr(flip), [FrameObjective("tip", 1, 1)]), id=f"rssr-{flip}")
    for flip in (False, True)
]


def test_the_library_has_robots_posed_from_coordinates_and_others():
    """Revolute, prismatic, cylindrical, ball and fixed tree joints are posed (a rod on
    two ball joints); universal and planar ones are not (their clips are retracted joint
    by joint instead)."""
    assert {"fourbar", "slider_crank"} <= set(POSED)
    assert applies(tree.kinematics(IKProblem(rssr(), [FrameObjective("tip", 1, 1)])))
    assert in_coordinates(_problem("fourbar"))  # coarse_then_clip keeps its clip in coordinates
    assert set(NAMES) - set(POSED)
    for name in set(NAMES) - set(POSED):
        assert set(tree.kinematics(_problem(name)).kind) - FORWARD_KINDS


@pytest.mark.parametrize("problem", PROBLEMS)
def test_poses_read_back_to_their_coordinates_and_the_file_pose_is_zero(problem):
    """Posing the coordinates read from a motion gives that motion (1e-12 of the size, or
    twice the motion's own joint residual), and zero coordinates give the file's pose."""
    model = tree.kinematics(problem)
    fw = forward(model)
    states = feasible_motion(problem.mechanism, duration=0.05, rate=100, seed=3)
    R, c = model.to_frames(states)
    coordinates = fw.coordinates(R, c)
    A, c2, _ = fw.poses(*coordinates)
    L = problem.constraints.length_scale
    opened = np.abs(problem.constraints.residual(states)).max()
    assert np.abs(c2 - c).max() <= 1e-12 * L + 2 * opened
    assert np.abs(fw.rotations(A) - R).max() <= 1e-12 + 2 * opened / L
    A0, c0, _ = fw.poses(np.zeros((model.D, 1)), fw.zero_rotations(), fw.c0[model.root_body][..., None])
    s0 = problem.mechanism.initial_state()
    assert np.abs(fw.states(A0, c0)[0, :, :3] - s0[:, :3]).max() <= 1e-12 * L


@pytest.mark.parametrize("problem", PROBLEMS)
def test_screws_are_the_derivatives_of_the_poses(problem):
    """Each coordinate's screw moves every body's CoM and axes as central differences of
    the poses stepped by it do (1e-7; a ball joint's and a root's coordinates turn
    their rotations), and equals the retraction's screw at the same pose (1e-12)."""
    model = tree.kinematics(problem)
    fw = forward(model)
    states = feasible_motion(problem.mechanism, duration=0.02, rate=100, seed=5)
    q, rotations, positions = fw.coordinates(*model.to_frames(states))
    A, c, motions = fw.poses(q, rotations, positions)
    omega, v, _, _ = fw.screws(A, c, motions)
    retracted = model.screws(fw.rotations(A), c)
    assert np.abs(omega - retracted[0]).max() <= 1e-12 and np.abs(v - retracted[1]).max() <= 1e-12
    h = 1e-6
    for j in range(model.D):
        stepped = []
        for sign in (1.0, -1.0):
            point = [x.copy() for x in (q, rotations, positions)]
            dq = np.zeros_like(q)
            dq[j] = sign * h
            fw.moved(*point, dq)
            stepped.append(fw.poses(*point))
        (Au, cu, _), (Ad, cd, _) = stepped
        moves = model.moves[:, j][:, None, None]
        w, u = omega[:, j][None], v[:, j][None]
        expected_c = (np.cross(w, c, axis=1) + u) * moves
        assert np.abs((cu - cd) / (2 * h) - expected_c).max() <= 1e-7
        expected_A = np.cross(w[:, None], A, axis=2) * moves[..., None]
        assert np.abs((Au - Ad) / (2 * h) - expected_A).max() <= 1e-7


def test_coordinates_interpolate_through_full_turns():
    """A crank turning past pi keeps turning in the interpolated starts (no jump back
    through zero), and the known frames are kept exactly."""
    problem = _problem("fourbar")
    model = tree.kinematics(problem)
    fw = forward(model)
    q0, axes, positions = fw.coordinates(*model.to_frames(problem.mechanism.initial_state()[None]))
    turns = np.linspace(0.0, 7.0, 8)
    q = q0 + np.outer(np.ones(model.D), turns) * model.angle_coordinate[:, None]
    known = (q, np.repeat(axes, 8, -1), np.repeat(positions, 8, -1))
    times = np.arange(8.0)
    out = interpolate_coordinates(times, known, np.linspace(0.0, 7.0, 29))
    assert np.allclose(out[0][:, ::4], q, atol=1e-15)
    assert np.all(np.diff(out[0][model.angle_coordinate], axis=-1) > 0)
