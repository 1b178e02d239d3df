"""looprig's side of the peer benchmark (``../shared/peer-bench``): the same files,
trajectories and convergence rule as PlaCo and Pinocchio-GN there.

Called by ``side_by_side.sh`` as
``python bench/peers.py --mech M --iters 20 --tol 1e-9 --reps R --out DIR [--frames N]``;
writes one record per variant (``looprig-clip``: the whole-clip solver, its total
time divided by the frames; ``looprig-frame``: the per-frame solver, warm-started;
``looprig-tree-frame``: the clip's Newton method in tree coordinates on one frame at a
time, warm-started, as a clip's sequence solves its frames) in the schema of
the peer bench's ``common.Recorder``. ``make bench-peers`` runs it.

The models carry no motors; the joints the trajectory names are given one here,
so the minimal-motion metric works in joint space as the peers' damping does,
and the models are written in the trajectory's first pose (see :func:`posed_copy`).
Bodies welded together (the two legs' soles to the ground) are solved as one, as
``retarget`` does (:class:`~looprig.core.model.rigid.RigidGroups`) and as Pinocchio
folds fixed joints into their parents.
"""

import argparse
import dataclasses
import os
import sys
import tempfile
import time
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
from looprig.cad_import import load_mechanism
from looprig.core import Actuator, IKSettings, IKTargets, JointKind, Mechanism, solve_ik
from looprig.core.maths.linalg import single_threaded_blas
from looprig.core.maths.rotations import quat_to_matrix
from looprig.core.model.rigid import RigidGroups
from looprig.core.solvers import tree
from looprig.core.solvers.clip import coarse_then_clip
from looprig.core.solvers.problem import IKProblem, dual_regularization
from looprig.core.solvers.tree_frame import FrameNewton
from looprig.core.terms import FrameObjective, Targets

PEER_BENCH = Path(os.environ.get("PEER_BENCH", Path(__file__).resolve().parents[2] / "shared" / "peer-bench"))

#: per mechanism: model file, tracked frame, tracked in orientation too, motors
#: (None: every joint the trajectory names; the four-bar's loop leaves one)
SETUPS = {
    "fourbar": ("fourbar.xml", "coupler_point", False, ("crank",)),
    "serial12": ("serial12.xml", "ee", True, None),
    "twolegs": ("twolegs.xml", "pelvis", True, None),
}


#: what each variant runs on
NOTES = {
    "clip": "numpy, kept in tree coordinates (core/solvers/tree_forward.py: all three)",
    "frame": "numpy, maximal coordinates",
    "tree-frame": "numpy, tree coordinates, one frame (core/solvers/tree_frame.py)",
}


def motorised(mechanism: Mechanism, names) -> Mechanism:
    """The joints the trajectory names get a motor (angle or displacement)."""
    joints = []
    for j in mechanism.joints:
        if j.name in names and j.kind in (JointKind.REVOLUTE, JointKind.PRISMATIC):
            motion = "angle" if j.kind == JointKind.REVOLUTE else "displacement"
            j = dataclasses.replace(j, actuator=Actuator(motion=motion))
        joints.append(j)
    return Mechanism(mechanism.bodies, joints, mechanism.frames, name=mechanism.name)


def posed_copy(path: Path, values: dict[str, float], folder: Path) -> Path:
    """A copy of an MJCF file whose bodies are turned (hinges) or moved (slides) by the
    given joint values [rad | m], so its written pose is the trajectory's first
    (the peers start there; a closed loop's assembly could otherwise pick the other branch)."""
    tree = ElementTree.parse(path)
    for body in tree.getroot().iter("body"):
        for joint in body.findall("joint"):
            q = values.get(joint.get("name"))
            if q is None:
                continue
            axis = np.array(joint.get("axis", "0 0 1").split(), float)
            if joint.get("type", "hinge") == "hinge":
                assert not {"quat", "euler", "axisangle", "xyaxes", "zaxis"} & set(body.attrib)
                body.set("axisangle", " ".join(f"{x:.17g}" for x in (*axis, q)))
            else:
                position = np.array(body.get("pos", "0 0 0").split(), float) + q * axis
                body.set("pos", " ".join(f"{x:.17g}" for x in position))
    copy = folder / path.name
    tree.write(copy)
    return copy


def setup(mech: str, frames: int | None):
    file, frame, oriented, motors = SETUPS[mech]
    traj = dict(np.load(PEER_BENCH / "models" / f"{mech}_traj.npz"))
    names = [str(n) for n in traj["joint_names"]]
    reference = traj["q_ref"][0] if "q_ref" in traj else traj["q0"]
    with tempfile.TemporaryDirectory() as folder:
        model = posed_copy(
            PEER_BENCH / "models" / file, dict(zip(names, reference, strict=True)), Path(folder)
        )
        # welded bodies solved as one, as retarget does (and as Pinocchio's fixed joints)
        mechanism = RigidGroups(motorised(load_mechanism(model), motors or names)).solver
    count = frames or len(traj["t"])
    positions = traj["target_pos"][:count, None]
    if "target_rot" in traj:
        rotations = traj["target_rot"][:count, None]
    else:
        rotations = np.tile(np.eye(3), (count, 1, 1, 1))
    weight = (1.0, 1.0, 1.0) if oriented else (0.0, 0.0, 0.0)
    problem = IKProblem(mechanism, [FrameObjective(frame, (1, 1, 1), weight)])
    start = mechanism.initial_state()  # the trajectory's first pose, written in the copy
    first = solve_ik(
        problem,
        IKTargets(positions[0], rotations[0]),
        start,
        settings=IKSettings(step_tolerance=1e-12, max_iterations=500),
    )
    return problem, Targets(positions, rotations), traj["t"][:count], first.state


def errors(problem: IKProblem, states, targets: Targets):
    """Per frame: position error [m], rotation error [deg], loop residual [m]."""
    R = quat_to_matrix(states[..., 3:])
    position, rotation = problem.frame_terms.tracking_errors(states, R, targets)
    residual = np.abs(problem.constraints.residual(states)).max(-1, initial=0.0)
    return position[:, 0], np.degrees(rotation[:, 0]), residual


def run_frame(problem, targets, first, settings):
    states, iterations, seconds = [first], [0], [0.0]
    state, actuators = first, problem.readout.read(first)
    for f in range(1, len(targets.positions)):
        target = IKTargets(targets.positions[f], targets.rotations[f])
        start = time.perf_counter()
        result = solve_ik(problem, target, state, previous_actuators=actuators, settings=settings)
        seconds.append(time.perf_counter() - start)
        state, actuators = result.state, result.actuators
        states.append(state)
        iterations.append(result.iterations)
    return np.array(states), np.array(iterations), np.array(seconds[1:])


def run_tree_frame(problem, targets, first, settings):
    """:class:`~looprig.core.solvers.tree_frame.FrameNewton` frame by frame, each from the
    one before's coordinates; the timing covers the solve, not the body states."""
    model = tree.kinematics(problem)
    newton = FrameNewton(model, settings, dual_regularization(problem, settings))
    current = tuple(x[..., 0] for x in newton.forward.coordinates(*model.to_frames(first[None])))
    known, iterations, seconds = [current], [0], []
    for f in range(1, len(targets.positions)):
        start = time.perf_counter()
        current, count, _, _ = newton.solve(current, targets.positions[f], targets.rotations[f])
        seconds.append(time.perf_counter() - start)
        known.append(current)
        iterations.append(count)
    coordinates = tuple(np.stack(x, axis=-1) for x in zip(*known, strict=True))
    states = newton.forward.states(*newton.forward.poses(*coordinates)[:2])
    return states, np.array(iterations), np.array(seconds)


def run_clip(problem, targets, times, first, settings):
    start = time.perf_counter()
    solution = coarse_then_clip(problem, times, targets, first, settings=settings)
    elapsed = time.perf_counter() - start
    seconds = np.full(len(times) - 1, elapsed / (len(times) - 1))
    return solution.states, solution.iterations, seconds


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mech", required=True, choices=sorted(SETUPS))
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--tol", type=float, default=1e-9)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--frames", type=int, default=None)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(PEER_BENCH))
    os.environ["PEER_RESULTS_DIR"] = args.out
    from common import Recorder  # the peers' record schema

    settings = IKSettings(step_tolerance=args.tol, max_iterations=args.iters)
    problem, targets, times, first = setup(args.mech, args.frames)
    config = {"iters": args.iters, "tol": args.tol, "tag": f"tol{args.tol:.0e}_max{args.iters}"}
    for variant, run in (("clip", run_clip), ("frame", run_frame), ("tree-frame", run_tree_frame)):
        recorder = Recorder(f"looprig-{variant}", args.mech, config, notes=NOTES[variant])
        with single_threaded_blas():
            for _ in range(args.reps):
                recorder.start_rep()
                if variant == "clip":
                    states, iterations, seconds = run(problem, targets, times, first, settings)
                else:
                    states, iterations, seconds = run(problem, targets, first, settings)
                position, rotation, residual = errors(problem, states, targets)
                oriented = SETUPS[args.mech][2]
                for f, dt in enumerate(seconds, start=1):
                    recorder.frame(
                        dt,
                        float(position[f]),
                        float(rotation[f]) if oriented else None,
                        loop_pos_m=float(residual[f]),
                        iters=int(iterations[f]),
                    )
        recorder.write(config["tag"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
