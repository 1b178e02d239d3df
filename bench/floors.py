"""What one SQP iteration costs here, whatever the solver around it: linearising
every term and constraint (with the constraints' Jacobian) and factorising the KKT
system, on the peer benchmark's mechanisms (``bench/peers.py`` sets them up), for
one frame (the per-frame solver: the whole KKT matrix or the tree's null space,
whichever :func:`~looprig.core.solvers.step.step_kkt` picks) and for a block of
:data:`~looprig.core.solvers.clip.CLIP_BLOCK` frames (the clip solver), in ms a frame,
best of ``--repeat`` runs with BLAS on one thread. A converged frame needs at least
one of each, so these are the floors under looprig's figures in ``make bench-peers``.
Then the whole-clip solve's stages and the tree path's kernels (:func:`clip_split`).

    python bench/floors.py [--repeat N]
"""

import argparse
import time

import numpy as np
from looprig.core.maths.linalg import single_threaded_blas
from looprig.core.maths.rotations import quat_to_matrix
from looprig.core.solvers import tree
from looprig.core.solvers.clip import CLIP_BLOCK, coarse_coordinates, in_coordinates, interpolate_coordinates
from looprig.core.solvers.problem import dual_regularization
from looprig.core.solvers.step import build_step, step_kkt
from looprig.core.solvers.tree_forward import forward
from looprig.core.solvers.tree_metric import metric
from looprig.core.solvers.tree_newton import solve_coordinates
from looprig.core.solvers.tree_step import least_squares_rows, step_systems
from looprig.core.terms import Reference
from peers import SETUPS, setup


def best_seconds(run, repeat: int) -> float:
    """The shortest of ``repeat`` timed calls of ``run`` [s]."""
    best = np.inf
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def floors(mech: str, batch: int, repeat: int) -> tuple[float, float]:
    """ms a frame of one linearisation and of one KKT factorisation (with the
    assembly of what it needs), at the trajectory's first pose repeated ``batch``
    times."""
    problem, targets, _, first = setup(mech, 1)
    states = np.repeat(first[None], batch, axis=0)
    R = quat_to_matrix(states[..., 3:])
    reference = Reference(states, R, problem.readout.read(states, R=R), None)
    point = problem.point(states, targets.take(np.zeros(batch, int)), reference, R=R)

    def linearise():
        step = build_step(problem, point)
        step.blocks  # noqa: B018 - the constraints' Jacobian, evaluated on first use
        return step

    damping = np.zeros(batch)
    linearising = best_seconds(linearise, repeat)
    both = best_seconds(lambda: step_kkt(problem, linearise(), damping, 1e-12), repeat)
    return 1e3 * linearising / batch, 1e3 * (both - linearising) / batch


def clip_split(mech: str, repeat: int) -> dict[str, float]:
    """ms a frame of each stage of ``coarse_then_clip`` on the whole trajectory (best of
    ``repeat``), kept in tree coordinates (:func:`~looprig.core.solvers.clip.in_coordinates`):
    the coarse frames (their sequence by the per-frame solver and their clip), the starts
    interpolated joint by joint, the fine clip; and the fine clip's kernels on all frames
    at those starts: poses from coordinates, screws, task and loop rows with Jacobians, the
    metric, the step systems (:mod:`~looprig.core.solvers.tree_step`: made and
    eliminated), one step on them, and the read-back to body states."""
    problem, targets, times, first = setup(mech, None)
    assert in_coordinates(problem), mech
    F = len(times)
    settings = problem.settings
    out = {}
    out["coarse frames"] = best_seconds(
        lambda: coarse_coordinates(problem, times, targets, first, settings=settings), repeat
    )
    coarse, known = coarse_coordinates(problem, times, targets, first, settings=settings)
    out["starts"] = best_seconds(lambda: interpolate_coordinates(times[coarse], known, times), repeat)
    starts = interpolate_coordinates(times[coarse], known, times)
    compliance = dual_regularization(problem, settings)
    model = tree.kinematics(problem)
    out["fine clip"] = best_seconds(
        lambda: solve_coordinates(model, targets.positions, targets.rotations, starts, settings, compliance),
        repeat,
    )
    fw = forward(model)
    target_p = np.ascontiguousarray(targets.positions.transpose(1, 2, 0))
    target_a = np.ascontiguousarray(targets.rotations.transpose(1, 3, 2, 0))
    A, c, motions = fw.poses(*starts)
    R = fw.rotations(A)
    screws = fw.screws(A, c, motions)
    values = np.zeros((model.D, F))
    H, _ = metric(model, R, c, screws, None, None)
    rt, Jt = least_squares_rows(model, R, c, screws, target_p, target_a)
    rc, Jc = model.constraint_rows(R, c, screws, values)
    systems = step_systems(H, len(rt), len(rc), compliance)
    frames = np.arange(F)
    systems.factorize(frames, H, Jt, Jc)
    out["kernel: poses"] = best_seconds(lambda: fw.poses(*starts), repeat)
    out["kernel: screws"] = best_seconds(lambda: fw.screws(A, c, motions), repeat)
    out["kernel: task rows"] = best_seconds(
        lambda: least_squares_rows(model, R, c, screws, target_p, target_a), repeat
    )
    out["kernel: loop rows"] = best_seconds(lambda: model.constraint_rows(R, c, screws, values), repeat)
    out["kernel: metric"] = best_seconds(lambda: metric(model, R, c, screws, None, None), repeat)
    out["kernel: step systems"] = best_seconds(lambda: systems.factorize(frames, H, Jt, Jc), repeat)
    out["kernel: a chord step"] = best_seconds(lambda: systems.step(frames, rt, rc), repeat)
    out["kernel: to body states"] = best_seconds(lambda: fw.states(A, c), repeat)
    return {name: 1e3 * seconds / F for name, seconds in out.items()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args(argv)
    print(f"| mech | one frame: linearise | one frame: KKT | {CLIP_BLOCK} frames: linearise | KKT |")
    print("|---|---|---|---|---|")
    with single_threaded_blas():
        for mech in SETUPS:
            one = floors(mech, 1, args.repeat)
            block = floors(mech, CLIP_BLOCK, max(3, args.repeat // 10))
            print(f"| {mech} | {one[0]:.3f} | {one[1]:.3f} | {block[0]:.4f} | {block[1]:.4f} |")
        splits = {mech: clip_split(mech, max(3, args.repeat // 10)) for mech in SETUPS}
    print()
    print("| ms a frame | " + " | ".join(splits) + " |")
    print("|---|" + "---|" * len(splits))
    for stage in next(iter(splits.values())):
        print(f"| {stage} | " + " | ".join(f"{split[stage]:.4f}" for split in splits.values()) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
