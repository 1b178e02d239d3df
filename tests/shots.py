"""Short four-bar shots with a closed-form answer, shared by the CLI, batch and fuzz tests.

The crank of the reference four-bar turns by theta(t) = speed * t^2 [rad]; the
coupler point's path under that motion is written as a tracks file (Y up, cm,
as Maya writes it) with a mapping whose target is that point, so the crank
curve a retarget writes must equal theta(t).
"""

from pathlib import Path

import numpy as np
from looprig.core import FrameObjective, IKProblem, solve_fk
from looprig.core.library import build
from looprig.core.maths.rotations import quat_from_matrix
from looprig.core.retarget import RetargetMapping, TargetSpec
from looprig.core.tracks.format import Clip, Track, write_tracks


def coupler_path(theta: np.ndarray):
    """Coupler point positions (F, 3) [m] and axes (F, 3, 3) for crank angles theta (F,) [rad]."""
    m = build("fourbar")
    problem = IKProblem(m, [FrameObjective("coupler_point")])
    state, states = m.initial_state(), []
    for angle in theta:
        state = solve_fk(m, [angle], initial_state=state).state
        states.append(state)
    points, axes = problem.frame_terms.poses(np.array(states))
    return points[:, 0], axes[:, 0]


def fourbar_shot(folder: Path, name: str = "coupler", speed: float = 2.0, seconds: float = 1.0, rate=240.0):
    """Write NAME.tracks.json and NAME.map.json into folder; returns (tracks, mapping, times, theta)."""
    times = np.arange(round(seconds * rate) + 1) / rate
    theta = speed * times**2
    points, axes = coupler_path(theta)
    clip = Clip(rate, 0, {"coupler": Track(points, quat_from_matrix(axes))})
    tracks = write_tracks(clip, Path(folder) / f"{name}.tracks.json", length_unit="cm", up_axis="Y")
    mapping = Path(folder) / f"{name}.map.json"
    RetargetMapping((TargetSpec("coupler", "coupler_point"),), rate=rate, state_weight=1e-9).save(mapping)
    return tracks, mapping, times, theta
