"""Clips played in sequence (core.tracks.chain): transitions continuous to the second derivative,
solved within every motor limit, and the whole chain one file that passes
``looprig check --strict``."""

import json

import numpy as np
import pytest
from looprig.core import FrameObjective, IKProblem, solve_fk
from looprig.core.curves.limit_checks import all_violations
from looprig.core.library import build
from looprig.core.maths.rotations import matrix_from_rotvec, quat_from_matrix
from looprig.core.retarget import RetargetMapping, TargetSpec, TrackSamples, retarget
from looprig.core.solvers.fk import solve_fk_path
from looprig.core.tracks.chain import ChainError, chain_clips
from looprig.core.tracks.format import Clip, Track, write_tracks

from looprig.cli import main

FPS = 60.0
LIMITS = {"velocity": 4.0, "acceleration": 40.0}  # each arm motor's [rad/s], [rad/s^2]


def arm_clip(q: np.ndarray) -> TrackSamples:
    """The two-link arm's tip poses for joint curves q (F, 2) [rad] at 60 fps."""
    arm = build("two_link_arm")
    problem = IKProblem(arm, [FrameObjective("tip")])
    state, states = solve_fk_path(arm, q[0]).result.state, []
    for values in q:
        state = solve_fk(arm, values, initial_state=state).state
        states.append(state)
    points, axes = problem.frame_terms.poses(np.array(states))
    return TrackSamples(np.arange(len(q)) / FPS, {"tip": points[:, 0]}, {"tip": axes[:, 0]})


def two_clips():
    """One second each; the second starts 0.4 rad (shoulder) and 0.45 rad (elbow) away
    from where the first ends, moving otherwise: 0.3 s asks the elbow for ~5.8 rad/s."""
    t = np.arange(61) / FPS
    first = np.column_stack([0.3 + 1.0 * t, 1.0 + 0.5 * np.sin(2.0 * t)])
    second = np.column_stack([1.7 + 0.8 * t, 0.5 + 0.3 * t])
    return arm_clip(first), arm_clip(second)


def mapping(**settings) -> RetargetMapping:
    return RetargetMapping(
        targets=(TargetSpec("tip", "tip"),),
        rate=600.0,
        motor_limits={"shoulder": LIMITS, "elbow": LIMITS},
        **settings,
    )


def test_a_transition_continuing_the_motion_is_the_motion():
    """The quintic Hermite matches position, velocity and acceleration at both ends, so
    between two pieces of one constant-velocity motion (a point at v = (0.3, -0.2, 0.1)
    m/s, turning at 2 rad/s about z) the transition is that motion, exactly."""
    rate, v, w = 120.0, np.array([0.3, -0.2, 0.1]), 2.0

    def piece(start: float, seconds: float) -> TrackSamples:
        t = start + np.arange(round(seconds * rate) + 1) / rate
        turns = matrix_from_rotvec(np.outer(w * t, [0.0, 0.0, 1.0]))
        return TrackSamples(t - start, {"p": np.outer(t, v)}, {"p": turns})

    chain = chain_clips([piece(0.0, 0.5), piece(0.75, 0.5)], 0.25, rate)
    whole = piece(0.0, 1.25)
    assert [p.kind for p in chain.parts] == ["clip", "transition", "clip"]
    np.testing.assert_allclose(chain.samples.times, whole.times, atol=1e-12)
    np.testing.assert_allclose(chain.samples.positions["p"], whole.positions["p"], atol=1e-12)
    np.testing.assert_allclose(chain.samples.rotations["p"], whole.rotations["p"], atol=1e-9)
    inside = chain.transition_frames(chain.samples.times)
    assert inside.sum() == round(0.25 * rate) - 1


def test_clips_that_cannot_be_chained_are_one_line():
    first, second = two_clips()
    with pytest.raises(ChainError, match="two or more clips, got 1"):
        chain_clips([first], 0.3, 600.0)
    with pytest.raises(ChainError, match="clip 1 -> clip 2: a transition lasts a positive number of seconds"):
        chain_clips([first, second], 0.0, 600.0)
    other = TrackSamples(second.times, {"hand": second.positions["tip"]}, {"hand": second.rotations["tip"]})
    with pytest.raises(
        ChainError, match=r"b: its tracks differ from a's \(missing \['tip'\], extra \['hand'\]\)"
    ):
        chain_clips([first, other], 0.3, 600.0, ["a", "b"])


def test_two_chained_clips_with_a_03_s_transition_pass_check_strict_as_one_file(tmp_path, capsys):
    """Done means (issue 26): the transition asks more than the motors give, the chained
    file is solved within every limit and passes ``looprig check --strict``."""
    files = []
    for name, clip in zip(("walk", "wave"), two_clips(), strict=True):
        track = Track(clip.positions["tip"], quat_from_matrix(clip.rotations["tip"]))
        files.append(str(write_tracks(Clip(FPS, 0, {"tip": track}), tmp_path / f"{name}.tracks.json")))
    map_path = tmp_path / "arm.map.json"
    mapping().save(map_path)
    out = tmp_path / "out"
    code = main(["retarget", "two_link_arm", *files, "--map", str(map_path), "-o", str(out), "--quiet"])
    assert code == 0
    report = json.loads((out / "report.json").read_text())
    parts = report["chain"]["parts"]
    assert [(p["name"], p["kind"]) for p in parts] == [
        ("walk", "clip"),
        ("walk -> wave", "transition"),
        ("wave", "clip"),
    ]
    assert parts[1]["end_s"] - parts[1]["start_s"] == pytest.approx(0.3)
    assert report["duration_s"] == pytest.approx(2.3)
    assert report["chain"]["transition_frames"] == 179
    capsys.readouterr()
    assert main(["check", str(out / "curves.csv"), "--strict"]) == 0
    assert "2 actuators, 1381 frames: within limits" in capsys.readouterr().out
    # the limits were needed: the same chain solved exactly breaks them in the transition
    chain = chain_clips(list(two_clips()), 0.3, 600.0)
    exact = retarget(build("two_link_arm"), chain.samples, mapping(limit_mode="report"))
    broken = all_violations(exact.curves)
    assert broken and all(1.0 - 0.3 < v.start_time < 1.3 + 0.3 for v in broken)
    # held: the clips are left only around the transition (braking into it, catching up after)
    held = retarget(build("two_link_arm"), chain.samples, mapping())
    assert chain.release(held) == 179 and all_violations(held.curves) == []
    limited = held.times[held.limited]
    assert limited.size and limited.min() > 1.0 - 0.4 and limited.max() < 1.3 + 0.4
    assert report["limited_frames"] == held.limited.sum()


def test_a_batch_job_plays_its_tracks_in_sequence(tmp_path):
    """A job whose ``tracks`` is a list: its clips chained with the job's ``transition``;
    the jobs file written back reads the same job."""
    from looprig.batch import read_jobs, run_job, write_jobs

    for name, clip in zip(("walk", "wave"), two_clips(), strict=True):
        track = Track(clip.positions["tip"], quat_from_matrix(clip.rotations["tip"]))
        write_tracks(Clip(FPS, 0, {"tip": track}), tmp_path / f"{name}.tracks.json")
    mapping().save(tmp_path / "arm.map.json")
    jobs = tmp_path / "jobs.json"
    job = {"robot": "two_link_arm", "mapping": "arm.map.json", "output": "out", "transition": 0.25}
    job["tracks"] = ["walk.tracks.json", "wave.tracks.json"]
    jobs.write_text(json.dumps({"format": "looprig-jobs", "version": 1, "jobs": [job]}))
    (read,) = read_jobs(jobs)
    assert read.name == "walk" and len(read.track_files) == 2 and read.transition == 0.25
    assert read_jobs(write_jobs(tmp_path / "again.json", [read])) == [read]
    result = run_job(read)
    assert result.status == "ok", result.message
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    transition = report["chain"]["parts"][1]
    assert transition["end_s"] - transition["start_s"] == pytest.approx(0.25)
    assert result.violations == 0


def test_chains_keep_their_timing(tmp_path, capsys):
    """Clips in sequence are not retimed: --pin and timing stretch are refused in one line."""
    files = []
    for name, clip in zip(("walk", "wave"), two_clips(), strict=True):
        track = Track(clip.positions["tip"], quat_from_matrix(clip.rotations["tip"]))
        files.append(str(write_tracks(Clip(FPS, 0, {"tip": track}), tmp_path / f"{name}.tracks.json")))
    mapping().save(tmp_path / "arm.map.json")
    args = ["retarget", "two_link_arm", *files, "--map", str(tmp_path / "arm.map.json"), "-o", str(tmp_path)]
    assert main([*args, "--timing", "stretch", "--pin", "30"]) == 2
    assert "--pin: clips played in sequence are not retimed" in capsys.readouterr().err
    assert main([*args, "--timing", "stretch"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "solved with timing 'keep'" in err
