"""The paper's Boxer experiment (Schumacher et al. 2021, Sec. V-2, Fig. 7).

A hand motion whose reference (a spherical shoulder) moves smoothly past the
Boxer's shoulder singularity is retargeted at 1200 Hz (hand position and
orientation tracked) without and with velocity regularization; one JSON line
per run: peak actuator velocities against the servo limit (as the limit checks
read the curves, and sample to sample), tracking errors, limit violations by kind,
solve time.

Runs: the paper's (its absolute state weight 2e-4) without and with its body
velocity barrier; looprig's exact answer (``limit_mode: "report"``); looprig's
defaults, which hold every declared limit (range, speed, acceleration: the windows
of the clip that break one solved again under them all, core.solvers.spacetime).

Paper (its clip and robot): unregularized peak 147.04 rad/s, mean error
0.02 mm, max 3.89 mm; regularized peak 5.90 rad/s, mean 1.66 mm, max 24.03 mm.

    python bench/boxer_singularity.py [--segment S] [--elevation RAD] [--rate HZ]
"""

import argparse
import json
import time
from collections import Counter

import numpy as np
from looprig.core.curves.limit_checks import all_violations
from looprig.core.library import build
from looprig.core.library.clips import boxer_singular_clip
from looprig.core.retarget import RetargetMapping, TargetSpec, retarget

HAND = TargetSpec("hand", "hand", (1.0, 1.0, 1.0), (1.0, 1.0, 1.0))
PAPER_STATE = {"state_weight": 2e-4, "state_mode": "paper"}

#: Runs: name -> mapping keyword arguments. The exact runs ask for limit_mode report
#: (the paper's and looprig's unlimited answers); the defaults hold every limit.
REPORT = {"limit_mode": "report"}
RUNS = {
    "unregularized (paper state weight)": {**PAPER_STATE, **REPORT},
    "body velocity barrier (paper)": {
        **PAPER_STATE,
        **REPORT,
        "velocity_weight": 1e-5,
        "max_angular_velocity": 1.5,
    },
    "exact (limit_mode report)": REPORT,
    "defaults (every limit held)": {},
}


def run(name: str, options: dict, segment: float, elevation: float, rate: float) -> dict:
    mechanism = build("boxer")
    clip = boxer_singular_clip(rate=rate, elevation=elevation, segment=segment)
    mapping = RetargetMapping((HAND,), rate=rate, **options)
    start = time.perf_counter()
    result = retarget(mechanism, clip, mapping)
    seconds = time.perf_counter() - start
    summary = result.summary()
    kinds = Counter(v.quantity for v in all_violations(result.curves))
    steps = np.abs(np.diff(result.curves.values, axis=0)) * rate
    return result, {
        "run": name,
        "options": options,
        "frames": summary["frames"],
        "peak_velocity_rad_s": {a["name"]: round(a["peak_velocity"], 3) for a in summary["actuators"]},
        "peak_step_speed_rad_s": dict(
            zip(result.curves.names, steps.max(axis=0).round(3).tolist(), strict=True)
        ),
        "velocity_limit_rad_s": round(summary["actuators"][0]["velocity_limit"], 3),
        "mean_position_error_mm": round(1e3 * summary["mean_position_error_m"], 4),
        "max_position_error_mm": round(1e3 * summary["max_position_error_m"], 3),
        "max_orientation_error_rad": round(summary["max_orientation_error_rad"], 4),
        "violations": dict(kinds),
        "unconverged_frames": summary["unconverged_frames"],
        "limited_frames": summary["limited_frames"],
        "limit_solve": summary["limit_solve"],
        "ms_per_frame": round(1e3 * seconds / summary["frames"], 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--segment", type=float, default=2.0, help="duration of each of the 3 moves [s]")
    parser.add_argument(
        "--elevation", type=float, default=0.05, help="closest approach to the singularity [rad]"
    )
    parser.add_argument("--rate", type=float, default=1200.0, help="solve rate [Hz]")
    parser.add_argument("--runs", nargs="*", default=list(RUNS), choices=list(RUNS))
    args = parser.parse_args()
    for name in args.runs:
        _, line = run(name, RUNS[name], args.segment, args.elevation, args.rate)
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
