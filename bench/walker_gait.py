"""The paper's walker experiment (Schumacher et al. 2021, Sec. V-4), on looprig's Walker.

Two steps (`walker_step_clip`): feet tracked (orientation weight 100, position 10),
pelvis height only (1), CoM (10, 10, 0) kept over the feet in contact. One JSON
line with and one without the CoM objective: tracking and CoM errors, SQP
iterations (mean, and frames stopped at the iteration limit), solve time.

Paper (its robot): max frame error 1.11 mm, max CoM error 1.30 mm.

    python bench/walker_gait.py [--rate HZ]
"""

import argparse
import json
import time

import numpy as np
from looprig.core.library import build
from looprig.core.library.clips import walker_step_clip
from looprig.core.retarget import ComSpec, RetargetMapping, TargetSpec, retarget
from looprig.core.solvers.ik import IKSettings
from looprig.core.terms import ComObjective, ComTask

TARGETS = (
    TargetSpec("left_foot", "left_foot", (10, 10, 10), (100, 100, 100)),
    TargetSpec("right_foot", "right_foot", (10, 10, 10), (100, 100, 100)),
    TargetSpec("pelvis", "pelvis_frame", (0, 0, 1), (1, 1, 1)),
)


def support_distance(mechanism, result, samples, support) -> np.ndarray:
    """Horizontal distance [m] of the CoM from the centroid of the feet in contact, per frame."""
    com = ComTask(mechanism, ComObjective()).com(result.states)
    distance = np.zeros(len(result.times))
    for phase in support:
        inside = (result.times >= phase.start - 1e-9) & (result.times <= phase.end + 1e-9)
        centre = np.mean(
            [
                [np.interp(result.times, samples.times, samples.positions[f][:, k]) for k in (0, 1)]
                for f in phase.frames
            ],
            axis=0,
        ).T  # (F, 2)
        distance[inside] = np.linalg.norm(com[inside, :2] - centre[inside], axis=1)
    return distance


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=240.0, help="solve rate [Hz]")
    args = parser.parse_args()
    mechanism = build("walker")
    samples, support = walker_step_clip()
    limit = IKSettings().max_iterations
    for name, com in (("with CoM objective", ComSpec((10, 10, 0), support=support)), ("without", None)):
        start = time.perf_counter()
        result = retarget(mechanism, samples, RetargetMapping(TARGETS, com, rate=args.rate))
        seconds = time.perf_counter() - start
        print(
            json.dumps(
                {
                    "run": name,
                    "frames": len(result.times),
                    "rate_hz": args.rate,
                    "max_foot_error_mm": round(1e3 * float(result.position_error[:, :2].max()), 3),
                    "max_pelvis_height_error_mm": round(1e3 * float(result.position_error[:, 2].max()), 3),
                    "max_foot_orientation_error_rad": round(float(result.orientation_error[:, :2].max()), 5),
                    "max_com_over_support_mm": round(
                        1e3 * float(support_distance(mechanism, result, samples, support).max()), 3
                    ),
                    "max_residual": float(f"{result.residual.max():.3g}"),
                    "iterations_mean": round(float(result.iterations.mean()), 2),
                    "frames_at_iteration_limit": int((result.iterations >= limit).sum()),
                    "ms_per_frame": round(1e3 * seconds / len(result.times), 3),
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
