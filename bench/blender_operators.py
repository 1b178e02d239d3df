"""Time the add-on's operators on Reachy Mini, imported through the add-on (the ``bpy`` module).

    .venv/bin/python bench/blender_operators.py [--frames 60] [--repeat 3]

Imports ``../shared/models/reachy_mini/mjcf/reachy_mini.xml`` with *File > Import > Robot
for looprig*, adds one target (the head ``xl_330`` follows an Empty that nods and turns it)
and times, each ``--repeat`` times in a row: Check Robot, Retarget (split into reading the
robot, sampling the targets, the solve and writing keys and bake), Bake, and Export
Actuator Curves (Dynamixel JSON). The first run of an operator builds whatever it caches;
the later ones show what an animator pays when pressing it again (Check #1 runs right
after the import: the first read of the robot). "Check Robot, opened" is the first Check
after saving the scene and opening it in a fresh Python (no cache, no module an earlier
operator imported): what an animator pays on opening the file. "beyond solve" is the
operator's time minus its solve.
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="looprig-bench-"))
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# isort: off
import bpy
import addon_utils  # (bpy's add-on manager, importable once bpy is)
# isort: on

ROOT = Path(__file__).resolve().parents[1]
REACHY = ROOT.parent / "shared" / "models" / "reachy_mini" / "mjcf" / "reachy_mini.xml"


class Phases:
    """Wall time spent in named functions of add-on modules (patched for the bench only)."""

    def __init__(self):
        self.seconds: dict[str, float] = {}

    def wrap(self, module, name: str, label: str):
        original = getattr(module, name)

        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.seconds[label] = self.seconds.get(label, 0.0) + time.perf_counter() - start

        setattr(module, name, timed)

    def take(self) -> dict[str, float]:
        out, self.seconds = self.seconds, {}
        return out


def head_target(context, frames: int):
    """An Empty keyed at every frame on the head's rest pose, nodding 1.5 cm and turning
    10 degrees about z."""
    from blender_addon.operators_robot import checked_model

    mechanism = checked_model(context).mechanism
    head = mechanism.frame("xl_330")  # the head link's frame (the file's frame of that body)
    target = bpy.data.objects.new("head_target", None)
    context.scene.collection.objects.link(target)
    target.rotation_mode = "QUATERNION"
    w, x, y, z = (float(v) for v in head.orientation)
    for f in range(1, frames + 1):
        phase = 2 * math.pi * (f - 1) / (frames - 1)
        target.location = head.position + [0.0, 0.0, 0.015 * math.sin(phase)]
        turn = math.radians(10) * math.sin(phase)
        c, s = math.cos(turn / 2), math.sin(turn / 2)
        target.rotation_quaternion = (c * w - s * z, c * x - s * y, c * y + s * x, c * z + s * w)
        target.keyframe_insert("location", frame=f)
        target.keyframe_insert("rotation_quaternion", frame=f)
    settings = context.scene.looprig
    item = settings.targets.add()
    item.frame, item.target = "xl_330", target
    item.position_weight, item.orientation_weight = (1, 1, 1), (0.1, 0.1, 0.1)
    context.scene.frame_start, context.scene.frame_end = 1, frames


def timed(call) -> float:
    start = time.perf_counter()
    result = call()
    if "FINISHED" not in result:
        raise SystemExit(f"operator failed: {bpy.context.scene.looprig.status}")
    return time.perf_counter() - start


def first_check_after_opening(blend: Path) -> float:
    """Seconds of the first Check Robot in a fresh Python that enables the add-on and opens
    ``blend`` (run as ``--first-check BLEND``)."""
    run = subprocess.run(
        [sys.executable, __file__, "--first-check", str(blend)], capture_output=True, text=True, check=True
    )
    return float(run.stdout.split()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=60)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--first-check", metavar="BLEND", help="open BLEND, print the first Check's seconds")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    addon_utils.enable("blender_addon", default_set=False, handle_error=None)
    if args.first_check:
        bpy.ops.wm.open_mainfile(filepath=args.first_check)
        print(timed(bpy.ops.looprig.check_robot))
        return 0
    if not REACHY.is_file():
        print(f"Reachy Mini not found at {REACHY}", file=sys.stderr)
        return 1
    from blender_addon import bake, motion, operators_bake, operators_retarget

    bpy.ops.wm.read_homefile(use_empty=True)
    context = bpy.context
    start = time.perf_counter()
    bpy.ops.looprig.import_robot(filepath=str(REACHY))
    imported = time.perf_counter() - start
    vertices = sum(len(o.data.vertices) for o in context.scene.objects if o.type == "MESH")
    rows = [("Check Robot #1", timed(bpy.ops.looprig.check_robot), {})]  # the first read of the robot
    blend = Path(tempfile.mkdtemp(prefix="looprig-bench-blend-")) / "reachy_mini.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend), copy=True)
    rows.append(("Check, opened", first_check_after_opening(blend), {}))
    head_target(context, args.frames)
    print(
        f"Reachy Mini (MJCF): imported in {imported:.2f} s, {vertices:,} mesh vertices; {args.frames} frames"
    )

    phases = Phases()
    for name, label in (
        ("checked_model", "read robot"),
        ("track_samples", "sample targets"),
        ("solve", "solve"),
        ("apply_result", "write keys + bake"),
    ):
        phases.wrap(operators_retarget, name, label)
    phases.wrap(operators_bake, "checked_model", "read robot")
    phases.wrap(motion, "sample_states", "sample robot")
    phases.wrap(bake, "read_baked_curves", "read curves")
    out = Path(tempfile.mkdtemp(prefix="looprig-bench-export-"))
    for run in range(2, args.repeat + 1):
        rows.append((f"Check Robot #{run}", timed(bpy.ops.looprig.check_robot), phases.take()))
    for run in range(1, args.repeat + 1):
        seconds = timed(bpy.ops.looprig.retarget)
        rows.append((f"Retarget #{run}", seconds, phases.take()))
    for run in range(1, args.repeat + 1):
        rows.append((f"Bake #{run}", timed(bpy.ops.looprig.bake), phases.take()))
    for run in range(1, args.repeat + 1):
        path = str(out / f"reachy_{run}.json")
        call = lambda path=path: bpy.ops.looprig.export_curves(  # noqa: E731
            filepath=path, format="DXL_JSON", allow_violations=True
        )
        rows.append((f"Export #{run}", timed(call), phases.take()))
    print(f"{'operator':<16}{'total [s]':>11}{'beyond solve [s]':>18}  phases [s]")
    for label, seconds, parts in rows:
        beyond = seconds - parts.get("solve", 0.0)
        detail = ", ".join(f"{k} {v:.3f}" for k, v in parts.items())
        print(f"{label:<16}{seconds:>11.3f}{beyond:>18.3f}  {detail}")
    markers = [o.name for o in bpy.data.objects if "looprig_marker_of" in o.keys()]
    print(f"in-front markers for motors inside other geometry: {len(markers)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
