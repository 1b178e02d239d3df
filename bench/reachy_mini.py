"""Reachy Mini, URDF against MJCF: one robot, two files, the same head clip.

Prints per file: bodies in the file and solved (welded bodies merged, see
core/rigid.py), joints, motors, and ms per frame of a default retarget (whole
clip), of the per-frame solver (``whole_clip`` off) and of the whole clip with
``auto_hold`` off, with the largest head error; the motors the default held
(core/holding.py), the time that decision took and the largest drift of the
untargeted motors (antennas, body yaw) [rad]. ``make bench`` runs it; the models
are in ../shared/models/reachy_mini.

    python bench/reachy_mini.py [--frames N] [--rate HZ]
"""

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from looprig.cad_import import load_mechanism
from looprig.core.errors import LooprigWarning
from looprig.core.model.rigid import RigidGroups
from looprig.core.retarget import RetargetMapping, TargetSpec, TrackSamples, retarget
from scipy.spatial.transform import Rotation

MODELS = Path(__file__).resolve().parents[2] / "shared" / "models" / "reachy_mini"
#: the motors (the URDF declares none: they are named here, as the MJCF's actuators are)
MOTORS = ("yaw_body", *(f"stewart_{k}" for k in range(1, 7)), "right_antenna", "left_antenna")
FILES = (MODELS / "mjcf" / "reachy_mini.xml", MODELS / "urdf" / "robot.urdf")


def head_clip(mechanism, frames: int, rate: float) -> TrackSamples:
    """The head frame nodding and turning by up to 0.15 rad and moving by 8 mm."""
    frame = mechanism.frame("xl_330")
    t = np.arange(frames) / rate
    phase = 2 * np.pi * t / max(t[-1], 1e-9)
    rotvec = np.stack([0.15 * np.sin(phase), 0.1 * np.sin(2 * phase), 0.12 * np.sin(phase)], -1)
    R = Rotation.from_rotvec(rotvec).as_matrix()
    R0 = Rotation.from_quat(frame.orientation[[1, 2, 3, 0]]).as_matrix()
    shift = np.stack([0 * t, 0.008 * np.sin(phase), 0.004 * np.sin(2 * phase)], -1)
    position = frame.position + shift
    return TrackSamples(t, {"head": position}, {"head": R @ R0})


def run(path: Path, frames: int, rate: float) -> dict:
    options = {} if path.suffix == ".xml" else {"actuated": MOTORS}
    mechanism = load_mechanism(path, **options)
    clip = head_clip(mechanism, frames, rate)
    line = {
        "file": path.name,
        "bodies": len(mechanism.bodies),
        "solved_bodies": len(RigidGroups(mechanism).solver.bodies),
        "joints": len(mechanism.joints),
        "motors": len(mechanism.actuator_names),
    }
    untargeted = [mechanism.actuator_names.index(n) for n in ("yaw_body", "left_antenna", "right_antenna")]
    for variant, settings in (
        ("clip", {}),
        ("frame", {"whole_clip": False}),
        ("clip_no_hold", {"auto_hold": False}),
    ):
        mapping = RetargetMapping(
            (TargetSpec("head", "xl_330", (1, 1, 1), (1, 1, 1)),), rate=rate, **settings
        )
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LooprigWarning)  # the held motors are printed below
            result = retarget(mechanism, clip, mapping)
        line[f"{variant}_ms_per_frame"] = round(1e3 * (time.perf_counter() - start) / frames, 3)
        line[f"{variant}_max_error_m"] = float(f"{result.position_error.max():.3g}")
        values = result.curves.values[:, untargeted]
        line[f"{variant}_untargeted_drift_rad"] = float(f"{np.abs(values - values[0]).max():.3g}")
        if result.holding is not None:
            line[f"{variant}_held"] = list(result.holding.motors)
            line[f"{variant}_hold_decision_ms"] = round(1e3 * result.holding.seconds, 1)
    return line


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=600)
    parser.add_argument("--rate", type=float, default=600.0)
    args = parser.parse_args(argv)
    for path in FILES:
        if not path.exists():
            print(f"{path}: not found", file=sys.stderr)
            continue
        print(json.dumps(run(path, args.frames, args.rate)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
