"""What one SQP iteration costs here, whatever the solver around it: linearising
every term and constraint (with the constraints' Jacobian) and factorising the KKT
system, on the peer benchmark's mechanisms (``bench/peers.py`` sets them up), for
one frame (the per-frame solver: the whole KKT matrix or the tree's null space,
whichever :func:`~looprig.core.step.step_kkt` picks) and for a block of
:data:`~looprig.core.clip.CLIP_BLOCK` frames (the clip solver), in ms a frame,
best of ``--repeat`` runs with BLAS on one thread. A converged frame needs at least
one of each, so these are the floors under looprig's figures in ``make bench-peers``.

    python bench/floors.py [--repeat N]
"""

import argparse
import time

import numpy as np
from looprig.core.clip import CLIP_BLOCK
from looprig.core.linalg import single_threaded_blas
from looprig.core.rotations import quat_to_matrix
from looprig.core.step import build_step, step_kkt
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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
