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
from looprig.core.solvers.clip import CLIP_BLOCK, clip_starts, coarse_states, solve_clip
from looprig.core.solvers.step import build_step, step_kkt
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
    ``repeat``): the coarse frames (their sequence by the per-frame solver and their clip),
    the interpolated starts, the fine clip; and, inside the tree path (``core/solvers/tree.py``)
    on all frames from those starts, its kernels: the starts' assembly and the metric, one
    Newton evaluation (screws, rows and Jacobians, KKT matrices), the batched solve, one
    retraction and the read-back to body states."""
    problem, targets, times, first = setup(mech, None)
    F = len(times)
    out = {}
    coarse = best_seconds(lambda: coarse_states(problem, times, targets, first), repeat)
    known = coarse_states(problem, times, targets, first)
    starts = clip_starts(times, *known)
    out["coarse frames"] = coarse
    out["starts"] = best_seconds(lambda: clip_starts(times, *known), repeat)
    out["fine clip"] = best_seconds(lambda: solve_clip(problem, targets, starts), repeat)
    model = tree.kinematics(problem)
    target_p = np.ascontiguousarray(targets.positions.transpose(1, 2, 0))
    target_a = np.ascontiguousarray(targets.rotations.transpose(1, 3, 2, 0))

    def setup_terms():
        R0, c0 = model.to_frames(starts)
        R, c = R0.copy(), c0.copy()
        model.assemble(R, c)
        screws = model.screws(R, c)
        return R, c, screws, tree._start_terms(model, R0, c0, R, c, starts, screws)

    R, c, screws, (H, _, values) = setup_terms()

    def evaluate():
        s = model.screws(R, c)
        rc, Jc = model.constraint_rows(R, c, s, values)
        rt, Jt = model.task_rows(R, c, s, target_p, target_a)
        return tree._kkt_matrix(H, Jt, Jc, 1e-12), np.concatenate([(Jt * rt[:, None]).sum(0), rc]).T

    K, rhs = evaluate()
    out["tree: assembly, metric"] = best_seconds(setup_terms, repeat)
    out["tree: Newton evaluation"] = best_seconds(evaluate, repeat)
    out["tree: KKT solve"] = best_seconds(lambda: np.linalg.solve(K, rhs[..., None]), repeat)
    dq = np.zeros((model.D, F))
    out["tree: retraction"] = best_seconds(lambda: model.retract(R.copy(), c.copy(), screws, dq), repeat)
    out["tree: to body states"] = best_seconds(lambda: model.to_states(R, c), repeat)
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
