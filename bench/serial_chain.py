"""Benchmark: the triangulation paper's experiment on a 9+9+9+9+4 ball-jointed chain.

Reproduces Müller-Cajar & Mukundan (2007, seed 001), Sec. 4 for the
unconstrained chain: a serial chain of links 9, 9, 9, 9 and 4 units (total 40)
with free ball joints in 3-D, its base at the origin; targets uniformly random
in the cube of side 60 centred on the base; a target counts as reached once
the tip is within 0.5 units; CCD gives up after 99 iterations (sweeps). Every
target starts from the same straight rest pose (along +y; the cube's symmetry
makes the axis irrelevant). A target is reachable when it lies within the
chain's length of the base (the chain reaches its whole ball, as no link is
longer than the others together); 7.89% of the cube lies beyond it (the paper
counted 8.27% of its 10,000 targets).

Methods: the paper's two (``ccd``, ``triangulation``), the Jacobian methods
of seeds 002 and 004 (``jacobian_transpose``, ``pseudo_inverse``,
``damped_least_squares``, same 99-step limit) and looprig's state-based IK on
the same chain built as a mechanism with spherical joints (``looprig``: one
``solve_ik`` from the straight pose, regularized towards it, once per SQP
iteration limit; ``looprig_triangulation_start``: started from triangulation's
answer). looprig runs on the first 1000 targets by default (``--looprig-targets
all`` for all of them); the setup line says how many.

The ``looprig`` line at the default limit of 50 SQP iterations is the general IK's
success from the straight pose (issue 10's global-convergence figure): over the
reachable targets, ``reach_rate`` (tip within 0.5 units), ``exact_rate`` (tip within
``EXACT_TOLERANCE``), ``mean_iterations_reachable`` and ``mean_ms_reachable``.

Prints one JSON object per line: first the setup, then one line per method
with, over the reachable targets, ``reach_rate`` (within the iteration limit)
and ``reach_rate_within_20`` (the paper's figure), iteration counts over the
reached targets, time per target [ms] (Python; the paper times nothing and
compares operation counts, eqs. 9-10, so ``mean_joint_updates`` is given as
its ``numIter * numJoints``), the rotation cost (eq. 3: sum of the angles of
all joint rotations applied) and the net joint angles of the final pose [deg];
over the unreachable targets, how much farther the tip stays than the closest
possible point (``unreachable_gap``, length units). ``paper`` holds the
paper's figures where it gives them (Sec. 5).

    python bench/serial_chain.py [--targets N] [--seed S] [--looprig-targets N|all]
                                 [--looprig-iterations K ...] [--methods NAME ...]
"""

import argparse
import json
import time

import numpy as np
from looprig.core.baselines.chain import SerialChain, SerialIKResult
from looprig.core.baselines.geometric import CCDSettings, TriangulationSettings
from looprig.core.baselines.jacobian import JacobianSettings
from looprig.core.baselines.methods import METHODS
from looprig.core.library.serial import TRIANGULATION_PAPER_LENGTHS, chain_state, serial_chain, solve_tip_ik
from looprig.core.library.serial import tip_problem as build_tip_problem
from looprig.core.maths.linalg import blas_info, single_threaded_blas
from looprig.core.solvers.ik import IKSettings

#: Seed 001, Sec. 4: cube side, reach tolerance, CCD iteration limit, the "within" count of Sec. 5.
CUBE_SIDE = 60.0  # [units]
TOLERANCE = 0.5  # [units]
MAX_ITERATIONS = 99
WITHIN = 20
#: looprig's IK runs to convergence: a target it meets counts as exact within this [units].
EXACT_TOLERANCE = 1e-6
#: Seed 001, Sec. 5, unconstrained chain. No timings are given; the operation
#: counts of Sec. 6 are N_CCD = 8.351 * 5 * (3n + r), N_tri = 5 * (5n + r).
PAPER = {
    "setup": {"outside_fraction": 0.0827, "targets": 10000},
    "ccd": {
        "reach_rate_within_20": 0.9212,
        "mean_iterations": 8.351,
        "mean_joint_updates": 8.351 * 5,
        "mean_cost_deg": 315.5,
    },
    "triangulation": {
        "reach_rate": 1.0,
        "mean_iterations": 1.0,
        "mean_joint_updates": 5,
        "mean_cost_deg": 159.9,
    },
}
#: Volume fraction of the cube beyond the chain's reach (radius 40 about its centre): the
#: ball minus six caps of height 10 (they do not overlap, 30^2 + 30^2 > 40^2),
#: 1 - (4/3 pi 40^3 - 6 pi 10^2 (3 40 - 10) / 3) / 60^3.
EXPECTED_OUTSIDE_FRACTION = 1.0 - (4.0 / 3.0 * np.pi * 40.0**3 - 6.0 * np.pi * 100.0 * 110.0 / 3.0) / 60.0**3
LOOPRIG_METHODS = ("looprig", "looprig_triangulation_start")
NOT_COUNTED_FOR_LOOPRIG = (
    "mean_joint_updates",
    "reached_within_20",
    "reach_rate_within_20",
    "mean_iterations_within_20",
)
DEFAULT_LOOPRIG_TARGETS = 1000


def random_targets(count: int, seed: int) -> np.ndarray:
    """(count, 3) targets uniform in the cube of side 60 centred on the base [units]."""
    rng = np.random.default_rng(seed)
    return rng.uniform(-CUBE_SIDE / 2, CUBE_SIDE / 2, size=(count, 3))


def baseline_solver(name: str, chain: SerialChain):
    if name == "ccd":
        settings = CCDSettings(max_iterations=MAX_ITERATIONS, tolerance=TOLERANCE)
    elif name == "triangulation":
        settings = TriangulationSettings(tolerance=TOLERANCE)
    else:
        settings = JacobianSettings(max_iterations=MAX_ITERATIONS, tolerance=TOLERANCE)
    method = METHODS[name]
    return lambda target: method(chain, target, settings)


def looprig_solver(name: str, chain: SerialChain, iterations: int):
    mechanism = serial_chain(chain.lengths, chain.base, chain.direction)
    problem = build_tip_problem(mechanism, settings=IKSettings(max_iterations=iterations))
    if name == "looprig":
        return lambda target: solve_tip_ik(problem, target, tolerance=TOLERANCE)

    def from_triangulation(target):
        guess = METHODS["triangulation"](chain, target, TriangulationSettings(tolerance=TOLERANCE))
        return solve_tip_ik(problem, target, chain_state(mechanism, guess.rotations), tolerance=TOLERANCE)

    return from_triangulation


def _round(value, digits=4):
    return None if value is None or not np.isfinite(value) else round(float(value), digits) + 0.0


def summarise(name: str, chain: SerialChain, targets: np.ndarray, results: list[SerialIKResult], ms):
    reachable = np.array([chain.is_reachable(t) for t in targets])
    reached = np.array([r.reached for r in results]) & reachable
    iterations = np.array([r.iterations for r in results])
    within = reached & (iterations <= WITHIN)
    errors = np.array([r.error for r in results])
    gaps = np.array([r.error - chain.closest_distance(t) for r, t in zip(results, targets, strict=True)])
    n_reach = int(reachable.sum())

    def mean(values, mask):
        return float(np.mean(values[mask])) if mask.any() else None

    line = {
        "method": name,
        "targets": len(targets),
        "reachable": n_reach,
        "reached": int(reached.sum()),
        "reach_rate": _round(reached.sum() / n_reach),
        "reached_within_20": int(within.sum()),
        "reach_rate_within_20": _round(within.sum() / n_reach),
        "mean_iterations": _round(mean(iterations, reached), 3),
        "mean_iterations_within_20": _round(mean(iterations, within), 3),
        "median_iterations": _round(np.median(iterations[reached]), 1) if reached.any() else None,
        "max_iterations": int(iterations.max()),
        "mean_joint_updates": _round(mean(np.array([r.joint_updates for r in results]), reached), 3),
        "median_ms": _round(np.median(ms)),
        "mean_ms": _round(np.mean(ms)),
        "median_ms_reachable": _round(np.median(ms[reachable])),
        "mean_cost_deg": _round(np.degrees(mean(np.array([r.rotation_cost for r in results]), reachable)), 1),
        "mean_joint_angle_deg": _round(
            np.degrees(mean(np.array([r.joint_angles.sum() for r in results]), reachable)), 1
        ),
        "max_error_reached": _round(np.max(errors[reached])) if reached.any() else None,
        "unreachable_gap_median": _round(np.median(gaps[~reachable])) if (~reachable).any() else None,
        "unreachable_gap_max": _round(np.max(gaps[~reachable])) if (~reachable).any() else None,
    }
    if name in PAPER:
        line["paper"] = PAPER[name]
    return line


def run_method(name: str, chain: SerialChain, targets: np.ndarray, looprig_iterations: int) -> dict:
    if name in LOOPRIG_METHODS:
        solve = looprig_solver(name, chain, looprig_iterations)
    else:
        solve = baseline_solver(name, chain)
    results, ms = [], []
    with single_threaded_blas():
        for target in targets:
            start = time.perf_counter()
            results.append(solve(target))
            ms.append(1e3 * (time.perf_counter() - start))
    line = summarise(name, chain, targets, results, np.array(ms))
    if name in LOOPRIG_METHODS:
        converged = [r.details.converged for r in results]
        for key in NOT_COUNTED_FOR_LOOPRIG:
            line[key] = None
        reachable = np.array([chain.is_reachable(t) for t in targets])
        exact = np.array([r.error <= EXACT_TOLERANCE for r in results]) & reachable
        line["exact_tolerance"] = EXACT_TOLERANCE
        line["exact_rate"] = _round(exact.sum() / reachable.sum())
        iterations = np.array([r.iterations for r in results])
        line["mean_iterations_reachable"] = _round(np.mean(iterations[reachable]), 3)
        line["mean_ms_reachable"] = _round(np.mean(np.array(ms)[reachable]))
        line["sqp_iteration_limit"] = looprig_iterations
        line["sqp_converged_rate"] = _round(np.mean(converged))
        line["note"] = (
            "SQP iterations run to convergence or the limit, not to the 0.5 tolerance, so no "
            "'within 20' counts; no rotation cost (the state-based IK moves all bodies at once)"
        )
    else:
        line["iteration_limit"] = 1 if name == "triangulation" else MAX_ITERATIONS
    return line


def _single_threaded_blas_info() -> str:
    with single_threaded_blas():
        return blas_info()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", type=int, default=10000, help="random targets (paper: 10000)")
    parser.add_argument("--seed", type=int, default=2007, help="random seed of the targets")
    parser.add_argument(
        "--looprig-targets",
        default=str(DEFAULT_LOOPRIG_TARGETS),
        help=f"targets for looprig's IK, the first of the same set (default {DEFAULT_LOOPRIG_TARGETS}; "
        "'all' for every target)",
    )
    parser.add_argument(
        "--looprig-iterations",
        type=int,
        nargs="+",
        default=[IKSettings().max_iterations, 200],
        help="SQP iteration limits, one 'looprig' line each (default: looprig's default and 200)",
    )
    parser.add_argument(
        "--methods",
        nargs="*",
        default=[*METHODS, *LOOPRIG_METHODS],
        choices=[*METHODS, *LOOPRIG_METHODS],
    )
    args = parser.parse_args()
    chain = SerialChain(np.array(TRIANGULATION_PAPER_LENGTHS))
    targets = random_targets(args.targets, args.seed)
    n_looprig = len(targets)
    if args.looprig_targets != "all":
        n_looprig = min(int(args.looprig_targets), len(targets))
    reachable = np.array([chain.is_reachable(t) for t in targets])
    setup = {
        "setup": "seed 001 Sec. 4, unconstrained chain",
        "lengths": list(TRIANGULATION_PAPER_LENGTHS),
        "base": chain.base.tolist(),
        "rest_direction": chain.direction.tolist(),
        "cube_side": CUBE_SIDE,
        "tolerance": TOLERANCE,
        "targets": len(targets),
        "seed": args.seed,
        "outside_fraction": _round(1.0 - reachable.mean()),
        "expected_outside_fraction": _round(EXPECTED_OUTSIDE_FRACTION),
        "looprig_targets": n_looprig,
        "looprig_targets_note": (
            "looprig runs on the first targets of the same set; --looprig-targets all runs all"
            if n_looprig < len(targets)
            else "all targets"
        ),
        "blas": "single-threaded: " + _single_threaded_blas_info(),
        "paper": PAPER["setup"],
    }
    print(json.dumps(setup), flush=True)
    for name in args.methods:
        if name not in LOOPRIG_METHODS:
            print(json.dumps(run_method(name, chain, targets, 0)), flush=True)
            continue
        limits = args.looprig_iterations if name == "looprig" else args.looprig_iterations[:1]
        for limit in limits:
            print(json.dumps(run_method(name, chain, targets[:n_looprig], limit)), flush=True)


if __name__ == "__main__":
    main()
