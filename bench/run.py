"""Benchmark: IK time and accuracy on every reference mechanism, per frame and as a clip.

For each mechanism, a smooth 1-second motion the mechanism can perform is
sampled at 1200 Hz (:func:`looprig.core.library.feasible.feasible_motion`); every named
frame of the mechanism is tracked in position and orientation (and the centre
of mass, for the walker), warm-starting each frame from the previous one, as a
retarget does; then the same targets by the whole-clip solver
(:func:`looprig.core.solvers.clip.coarse_then_clip`): its time per frame, the frames it
converged and its largest distance from the per-frame answer [m]. Prints one
JSON object per line.

    python bench/run.py [NAME ...] [--rate HZ] [--duration S] [--blas {single,default}]
"""

import argparse
import json
import time

import numpy as np
from looprig.core import ComObjective, FrameObjective, IKProblem, IKTargets, solve_ik
from looprig.core.library import NAMES, build
from looprig.core.library.feasible import feasible_motion
from looprig.core.maths.linalg import blas_info, single_threaded_blas
from looprig.core.solvers.clip import coarse_then_clip
from looprig.core.terms import Targets

#: Paper Table I, C++ on an i7-6700K [ms/frame].
PAPER_MS = {"boxer": 0.14, "dancer": 0.68, "walker": 13.99}
#: Mechanisms whose CoM is tracked too (horizontal axes, as the paper's Walker).
COM_WEIGHT = {"walker": (10.0, 10.0, 0.0)}


def build_problem(name: str) -> IKProblem:
    mechanism = build(name)
    frames = [FrameObjective(f.name, (1, 1, 1), (1, 1, 1)) for f in mechanism.frames]
    com = ComObjective(COM_WEIGHT[name]) if name in COM_WEIGHT else None
    return IKProblem(mechanism, frames, com)


def clip_targets(problem: IKProblem, states: np.ndarray) -> list[IKTargets]:
    points, axes = problem.frame_terms.poses(states)
    com = problem.com_term.com(states) if problem.com_term is not None else [None] * len(states)
    return [IKTargets(p, R, c) for p, R, c in zip(points, axes, com, strict=True)]


def run(name: str, rate: float, duration: float) -> dict:
    problem = build_problem(name)
    mechanism = problem.mechanism
    states = feasible_motion(mechanism, duration=duration, rate=rate, seed=1)
    targets = clip_targets(problem, states)
    state, actuators = states[0], problem.readout.read(states[0])
    times, iterations, residual, pos_err, ori_err = [], [], 0.0, 0.0, 0.0
    solved = [state]
    for target in targets[1:]:
        start = time.perf_counter()
        result = solve_ik(problem, target, state, previous_actuators=actuators)
        times.append(time.perf_counter() - start)
        state, actuators = result.state, result.actuators
        solved.append(state)
        iterations.append(result.iterations)
        residual = max(residual, result.residual)
        pos_err = max(pos_err, float(np.max(result.position_error, initial=0.0)))
        ori_err = max(ori_err, float(np.max(result.orientation_error, initial=0.0)))
    ms = 1e3 * np.array(times)
    line = {
        "mechanism": name,
        "bodies": len(mechanism.bodies),
        "joints": len(mechanism.joints),
        "actuators": len(mechanism.actuated_joints),
        "tracked_frames": len(problem.frames),
        "com_objective": problem.com is not None,
        "frames": len(times),
        "rate_hz": rate,
        "median_ms": round(float(np.median(ms)), 4),
        "frames_per_second": round(len(ms) / (1e-3 * float(np.sum(ms))), 1),
        "p95_ms": round(float(np.percentile(ms, 95)), 4),
        "iterations_mean": round(float(np.mean(iterations)), 3),
        "max_residual": float(f"{residual:.3g}"),
        "max_residual_relative": float(f"{residual / problem.constraints.length_scale:.3g}"),
        "max_position_error_m": float(f"{pos_err:.3g}"),
        "max_orientation_error_rad": float(f"{ori_err:.3g}"),
    }
    if name in PAPER_MS:
        line["paper_ms"] = PAPER_MS[name]
    batch = Targets(
        np.array([t.positions for t in targets]),
        np.array([t.rotations for t in targets]),
        None if problem.com is None else np.array([t.com for t in targets]),
    )
    start = time.perf_counter()
    clip = coarse_then_clip(problem, np.arange(len(states)) / rate, batch, states[0])
    line["clip_ms_per_frame"] = round(1e3 * (time.perf_counter() - start) / (len(states) - 1), 4)
    line["clip_converged"] = round(float(clip.converged[1:].mean()), 4)
    line["clip_vs_frame_max_m"] = float(
        f"{np.abs(clip.states[..., :3] - np.array(solved)[..., :3]).max():.3g}"
    )
    return line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", default=list(NAMES))
    parser.add_argument("--rate", type=float, default=1200.0, help="sample rate [Hz]")
    parser.add_argument("--duration", type=float, default=1.0, help="clip length [s]")
    parser.add_argument(
        "--blas",
        choices=["single", "default"],
        default="single",
        help="BLAS threads in the solve: one (default) or the library default",
    )
    args = parser.parse_args()
    for name in args.names:
        if args.blas == "single":
            with single_threaded_blas():
                line = run(name, args.rate, args.duration)
                line["blas"] = "single-threaded: " + blas_info()
        else:
            line = run(name, args.rate, args.duration)
            line["blas"] = "default: " + blas_info()
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
