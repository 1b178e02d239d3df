"""ToddlerBot 2XC's head nod against Reachy Mini's head clip, one sitting, the same rate.

ToddlerBot (tests/data/toddlerbot_2xc, Menagerie's file, meshes stripped): its head
nods about the neck's pitch axis by ``--amplitude`` rad (one sine period over
``--seconds``), the torso targeted where it stands; both in position and orientation,
every other setting the default. Reachy Mini (../shared/models/reachy_mini, MJCF):
bench/reachy_mini.py's head clip, as many frames, the same rate, default settings.

Prints one JSON line per robot: seconds per frame, the largest head errors in
looprig's report [m, rad], the largest closure residual [m], unconverged frames,
the motors held; for ToddlerBot also the curves put back into MuJoCo
(:func:`mujoco_head_errors`): the head's largest distance and angle from the
targets [m, rad] when MuJoCo's own equality and tendon rows decide the passive
joints from the motors' values, and the same at rest (the motors where the file
assembles) against the head looprig assembled. Last line: the ratio of the times per
frame. (The motors no target depends on are held where the robot is assembled, so
the default solve welds them: :func:`looprig.core.model.rigid.welded`.)

    python bench/toddlerbot.py [--seconds 2] [--rate 1200] [--amplitude 0.2]
"""

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from looprig.cad_import import load_mechanism, load_model
from looprig.core.errors import LooprigWarning
from looprig.core.retarget import RetargetMapping, TargetSpec, TrackSamples, retarget
from scipy.spatial.transform import Rotation

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from mujoco_rows import assemble, free_dofs, motor_dofs  # test helper: MuJoCo's own rows
from reachy_mini import FILES as REACHY_FILES
from reachy_mini import head_clip as reachy_head_clip

TODDLERBOT = Path(__file__).resolve().parents[1] / "tests" / "data" / "toddlerbot_2xc" / "toddlerbot_2xc.xml"


def nod_clip(mechanism, seconds: float, rate: float, amplitude: float) -> TrackSamples:
    """The head frame turned about the neck's pitch axis (through its anchor) by
    ``amplitude sin(2 pi t / seconds)`` [rad], the torso frame still; the frames'
    poses at the assembled initial configuration."""
    head, torso, pitch = mechanism.frame("head"), mechanism.frame("torso"), mechanism.joint("neck_pitch")
    t = np.arange(round(seconds * rate) + 1) / rate
    nod = Rotation.from_rotvec(np.outer(amplitude * np.sin(2 * np.pi * t / seconds), pitch.axis))
    R_head = (nod * Rotation.from_quat(head.orientation[[1, 2, 3, 0]])).as_matrix()
    R_torso = Rotation.from_quat(torso.orientation[[1, 2, 3, 0]]).as_matrix()
    return TrackSamples(
        t,
        {
            "head": pitch.anchor + nod.apply(head.position - pitch.anchor),
            "torso": np.tile(torso.position, (len(t), 1)),
        },
        {"head": R_head, "torso": np.tile(R_torso, (len(t), 1, 1))},
    )


def angle_between(R_a: np.ndarray, R_b: np.ndarray) -> float:
    """[rad] the angle of R_a^T R_b, R_a and R_b (3, 3) rotations."""
    return float(Rotation.from_matrix(R_a.T @ R_b).magnitude())


def mujoco_head_errors(model, result, clip: TrackSamples, stride: int) -> dict:
    """Every ``stride``-th frame of ``result`` put back into MuJoCo: the motors' file
    values (curve + the assembled offset) and the torso's pose set, the passive joints
    solved by Gauss-Newton on MuJoCo's own rows (tests/mujoco_rows.py: the equalities'
    ``efc_pos``/``efc_J``, the narrow tendons' lengths about their ranges' middles);
    the head's pose (``xpos``, ``xmat``) against the target [m, rad]. ``rest``: the same
    with every motor at its assembled value, against the head looprig assembled."""
    import mujoco

    mj = mujoco.MjModel.from_xml_path(str(TODDLERBOT))
    data = mujoco.MjData(mj)
    mechanism = model.mechanism
    free = mj.joint("torso_freejoint")
    motors = {mj.actuator(a).name: mj.joint(mj.actuator_trnid[a, 0]) for a in range(mj.nu)}
    torso = mechanism.frame("torso")

    def head_pose(motor_values: dict, torso_position, torso_rotation, start: np.ndarray):
        data.qpos[:] = start
        data.qpos[free.qposadr[0] : free.qposadr[0] + 3] = torso_position
        quat = np.empty(4)
        mujoco.mju_mat2Quat(quat, np.ascontiguousarray(torso_rotation).reshape(-1))
        data.qpos[free.qposadr[0] + 3 : free.qposadr[0] + 7] = quat
        for name, joint in motors.items():
            data.qpos[joint.qposadr[0]] = motor_values[name]
        residual = assemble(mj, data, free_dofs(mj) + motor_dofs(mj))
        body = mj.body("head").id
        return data.xpos[body].copy(), data.xmat[body].reshape(3, 3).copy(), residual

    offsets = model.joint_offsets
    start = mj.qpos0.copy()
    for j in range(1, mj.njnt):
        start[mj.joint(j).qposadr[0]] = offsets.get(mj.joint(j).name, 0.0)
    names = result.curves.names
    frames = range(0, len(result.times), stride)
    position_error, angle_error, residual = [], [], []
    head_frame = mechanism.frame("head")
    for f in frames:
        values = {n: offsets[motors[n].name] + result.curves.values[f, names.index(n)] for n in motors}
        # a body's frame in looprig is the body's own in the file: the torso's pose is its target
        p, R, res = head_pose(values, clip.positions["torso"][f], clip.rotations["torso"][f], start)
        position_error.append(np.linalg.norm(p - clip.positions["head"][f]))
        angle_error.append(angle_between(R, clip.rotations["head"][f]))
        residual.append(res)
    rest_values = {n: offsets[motors[n].name] for n in motors}
    R_torso = Rotation.from_quat(torso.orientation[[1, 2, 3, 0]]).as_matrix()
    p, R, _ = head_pose(rest_values, torso.position, R_torso, start)
    R_head = Rotation.from_quat(head_frame.orientation[[1, 2, 3, 0]]).as_matrix()
    return {
        "mujoco_head_error_m": float(f"{max(position_error):.3g}"),
        "mujoco_head_error_rad": float(f"{max(angle_error):.3g}"),
        "mujoco_closure_residual_m": float(f"{max(residual):.3g}"),
        "mujoco_rest_head_error_m": float(f"{np.linalg.norm(p - head_frame.position):.3g}"),
        "mujoco_rest_head_error_rad": float(f"{angle_between(R, R_head):.3g}"),
    }


def timed(mechanism, clip: TrackSamples, mapping: RetargetMapping):
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LooprigWarning)
        result = retarget(mechanism, clip, mapping)
    return result, time.perf_counter() - start


def report(name: str, result, seconds: float, head: int) -> dict:
    frames = len(result.times)
    return {
        "robot": name,
        "frames": frames,
        "rate_hz": result.mapping.rate,
        "seconds": round(seconds, 2),
        "ms_per_frame": round(1e3 * seconds / frames, 3),
        "head_error_m": float(f"{result.position_error[:, head].max():.3g}"),
        "head_error_rad": float(f"{result.orientation_error[:, head].max():.3g}"),
        "max_residual_m": float(f"{result.residual.max():.3g}"),
        "unconverged_frames": int((~result.converged).sum()),
        "iterations_mean": round(float(result.iterations.mean()), 2),
        "held": [] if result.holding is None else list(result.holding.motors),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--rate", type=float, default=1200.0)
    parser.add_argument("--amplitude", type=float, default=0.2, help="the nod's amplitude [rad]")
    parser.add_argument("--check-every", type=int, default=10, help="frames put back into MuJoCo: every n-th")
    args = parser.parse_args(argv)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LooprigWarning)
        model = load_model(TODDLERBOT, meshes=False)
    mechanism = model.mechanism
    nod = nod_clip(mechanism, args.seconds, args.rate, args.amplitude)
    targets = tuple(TargetSpec(k, k, (1, 1, 1), (1, 1, 1)) for k in ("head", "torso"))
    result, seconds = timed(mechanism, nod, RetargetMapping(targets, rate=args.rate))
    toddler = report("toddlerbot_2xc", result, seconds, head=0)
    toddler.update(mujoco_head_errors(model, result, nod, args.check_every))
    print(json.dumps(toddler), flush=True)

    reachy_file = REACHY_FILES[0]
    if not reachy_file.exists():
        print(f"{reachy_file}: not found", file=sys.stderr)
        return 1
    reachy = load_mechanism(reachy_file)
    clip = reachy_head_clip(reachy, toddler["frames"], args.rate)
    result, seconds = timed(
        reachy, clip, RetargetMapping((TargetSpec("head", "xl_330", (1, 1, 1), (1, 1, 1)),), rate=args.rate)
    )
    line = report("reachy_mini", result, seconds, head=0)
    print(json.dumps(line), flush=True)
    print(json.dumps({"ratio_per_frame": round(toddler["ms_per_frame"] / line["ms_per_frame"], 2)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
