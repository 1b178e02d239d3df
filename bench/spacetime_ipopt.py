"""The limited (space-time) retarget of the paper's Boxer clip against its exact
retarget and against IPOPT on the same problem (needs the test extra: casadi).

One JSON line per run, all from one sitting:

* ``exact``: ``limit_mode: "report"`` (the unlimited whole-clip solve);
* ``hold``: the defaults (every declared limit held: core.solvers.spacetime), with its
  tracking cost (the sum over frames of the frame task's 1/2 |r|^2), RMS, mean and
  max hand error, the start it took, and whether ``looprig check --strict`` passes on
  its curves;
* ``ipopt``: tests/nlp_reference.py's IPOPT solve of the same problem (same objective,
  same rows: interior and end speed and acceleration rows, ranges) from the exact
  curve and from looprig's rewound start; its solve time excludes building the model.

The last line gives the ratios: hold / exact time (the issue asks at most 5), IPOPT /
hold time (at least 5), hold / IPOPT tracking cost (at most 1.10).

    python bench/spacetime_ipopt.py [--rate HZ] [--segment S] [--elevation RAD]
"""

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from looprig.core.curves.limit_checks import all_violations
from looprig.core.library import build
from looprig.core.library.clips import boxer_singular_clip
from looprig.core.maths.linalg import single_threaded_blas
from looprig.core.maths.rotations import quat_to_matrix
from looprig.core.retarget import RetargetMapping, TargetSpec, build_problem, retarget
from looprig.core.solvers.spacetime.starts import rewound_start
from looprig.core.terms import FrameObjective, Reference, Targets

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from nlp_reference import solve_reference  # test-only, beside the tests

HAND = TargetSpec("hand", "hand", (1.0, 1.0, 1.0), (1.0, 1.0, 1.0))


def tracking(problem, states, targets) -> np.ndarray:
    """Each frame's tracking cost (F,): the frame task's value."""
    R = quat_to_matrix(states[..., 3:])
    reference = Reference(states, R, np.zeros((len(states), len(problem.readout.names))))
    return problem.frame_terms.linearize(problem.point(states, targets, reference), derivatives=False).value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=1200.0, help="solve rate [Hz]")
    parser.add_argument("--segment", type=float, default=2.0, help="duration of each of the 3 moves [s]")
    parser.add_argument("--elevation", type=float, default=0.05, help="closest approach to the singularity")
    args = parser.parse_args()
    mechanism = build("boxer")
    clip = boxer_singular_clip(rate=args.rate, elevation=args.elevation, segment=args.segment)
    lines = {}
    results = {}
    for name, mode in (("exact", "report"), ("hold", "hold")):
        mapping = RetargetMapping((HAND,), rate=args.rate, limit_mode=mode)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            result = retarget(mechanism, clip, mapping)
            seconds = time.perf_counter() - start
        results[name] = result
        summary = result.summary()
        lines[name] = {
            "run": name,
            "frames": summary["frames"],
            "seconds": round(seconds, 3),
            "mean_position_error_mm": round(1e3 * summary["mean_position_error_m"], 3),
            "max_position_error_mm": round(1e3 * summary["max_position_error_m"], 3),
            "limit_violations": len(all_violations(result.curves)),
            "limited_frames": summary["limited_frames"],
            "limit_solve": summary["limit_solve"],
        }
    mapping = RetargetMapping((HAND,), rate=args.rate, auto_hold=False)
    problem = build_problem(mechanism, mapping)
    samples = clip.resampled(args.rate)
    positions = samples.positions["hand"][:, None]
    rotations = samples.rotations["hand"][:, None]
    targets = Targets(positions, rotations)
    held = results["hold"]
    cost = tracking(problem, held.states, targets)
    lines["hold"]["tracking_cost"] = float(cost.sum())
    lines["hold"]["tracking_rms"] = float(np.sqrt(2 * cost.mean()))
    print(json.dumps(lines["exact"]), flush=True)
    print(json.dumps(lines["hold"]), flush=True)
    exact = results["exact"]
    objective = FrameObjective("hand", HAND.position_weight, HAND.orientation_weight)
    starts = {"exact": exact.curves.values}
    with single_threaded_blas():
        rewound = rewound_start(
            problem, exact.states, exact.curves.values, args.rate, problem.actuator_limits
        )
    if rewound is not None:
        starts["rewound"] = rewound[1]
    best = None
    for name, start in starts.items():
        reference = solve_reference(mechanism, [objective], positions, rotations, args.rate, start)
        line = {
            "run": f"ipopt from the {name} start",
            "seconds": round(reference.seconds, 3),
            "status": reference.status,
            "iterations": reference.iterations,
            "tracking_cost": reference.objective,
            "tracking_rms": float(np.sqrt(2 * reference.objective / len(positions))),
        }
        print(json.dumps(line), flush=True)
        if reference.success and (best is None or reference.objective < best.objective):
            best = reference
    print(
        json.dumps(
            {
                "run": "ratios",
                "hold_over_exact_time": round(lines["hold"]["seconds"] / lines["exact"]["seconds"], 2),
                "ipopt_best_start_over_hold_time": None
                if best is None
                else round(best.seconds / lines["hold"]["seconds"], 2),
                "ipopt_starts": len(starts),
                "hold_over_ipopt_tracking_cost": None
                if best is None
                else round(lines["hold"]["tracking_cost"] / best.objective, 6),
                "hold_over_ipopt_tracking_rms": None
                if best is None
                else round(lines["hold"]["tracking_rms"] / np.sqrt(2 * best.objective / len(positions)), 6),
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
