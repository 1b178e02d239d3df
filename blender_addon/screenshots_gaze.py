"""The gaze rig image of docs/blender.md, headless (Cycles on the CPU, as :mod:`.screenshots`).

Reachy Mini imported from the shared models, an Empty ``look`` keyed round a circle of
radius 0.15 m, 0.5 m in front of its head, and a rig Empty ``head_ctrl`` at the head with
a Damped Track (X) at it; the target row ``head <- head_ctrl`` (position weight 0) makes
the constraint an aim. After Retarget the robot is rendered at a frame of the circle
with the circle, the look-at Empty (a sphere) and the line of sight from the head.

Run from the repository root (needs ``../shared/models/reachy_mini``)::

    .venv/bin/python blender_addon/screenshots_gaze.py     # writes docs/images/blender_gaze_reachy.png
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

if __package__ in (None, ""):  # run as a script: the repository root on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from blender_addon import screenshots  # noqa: I001  (first: it sets Blender's user resources)

import bpy
import numpy as np

ROOT = screenshots.ROOT
REACHY = ROOT.parent / "shared" / "models" / "reachy_mini" / "mjcf" / "reachy_mini.xml"
FPS, FRAMES = 24, 49


def build(frame: int):
    """The gaze rig on Reachy Mini, retargeted, dressed for rendering at ``frame``."""
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if bpy.ops.looprig.import_robot(filepath=str(REACHY)) != {"FINISHED"}:
            raise SystemExit("could not import Reachy Mini")
    scene.render.fps, scene.frame_start, scene.frame_end = FPS, 1, FRAMES
    origin = np.array(bpy.data.objects["head"].matrix_world.translation)
    w = 2 * np.pi * np.arange(FRAMES) / (FRAMES - 1)
    points = origin + np.stack([np.full_like(w, 0.5), 0.15 * np.cos(w), 0.15 * np.sin(w)], -1)
    look = bpy.data.objects.new("look", None)
    scene.collection.objects.link(look)
    for f, p in enumerate(points):
        look.location = tuple(p)
        look.keyframe_insert("location", frame=f + 1)
    rig = bpy.data.objects.new("head_ctrl", None)
    scene.collection.objects.link(rig)
    rig.location = tuple(origin)
    constraint = rig.constraints.new("DAMPED_TRACK")
    constraint.target, constraint.track_axis = look, "TRACK_X"
    row = scene.looprig.targets.add()
    row.frame, row.target, row.position_weight = "head", rig, (0.0, 0.0, 0.0)
    scene.looprig.bake_after_retarget = False
    if bpy.ops.looprig.retarget() != {"FINISHED"}:
        raise SystemExit(f"retarget failed: {scene.looprig.status}")
    material = screenshots._material()
    for ob in scene.objects:
        if ob.type == "MESH" and not ob.data.materials:
            ob.data.materials.append(material)
            if tuple(ob.color) == (1.0, 1.0, 1.0, 1.0):
                ob.color = (0.8, 0.8, 0.82, 1.0)
    path = screenshots._path_curve(scene, np.vstack([points, points[:1]]), "look path")
    path.data.materials.append(material)
    sphere = screenshots._marker_sphere(scene, look, 0.012, (0.85, 0.35, 0.05, 1.0), "look marker")
    sphere.data.materials.append(material)
    scene.frame_set(frame)
    sight = screenshots._path_curve(
        scene, np.array([origin, np.array(look.matrix_world.translation)]), "line of sight"
    )
    sight.color = (0.85, 0.35, 0.05, 1.0)
    sight.data.materials.append(material)
    screenshots.setup_render(scene, resolution=(800, 520))
    camera = scene.camera
    camera.data.type = "PERSP"
    camera.data.lens = 40
    camera.location = tuple(origin + [0.75, -0.75, 0.3])
    target = origin + [0.22, 0.0, 0.0]
    direction = target - np.array(camera.location)
    from mathutils import Vector

    camera.rotation_euler = Vector(tuple(direction)).to_track_quat("-Z", "Y").to_euler()
    return scene


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Render the gaze rig image of docs/blender.md")
    parser.add_argument("--output", default=str(ROOT / "docs" / "images"), help="folder for the PNG")
    parser.add_argument("--frame", type=int, default=31, help="scene frame to render")
    args = parser.parse_args(argv)
    if not REACHY.exists():
        raise SystemExit(f"{REACHY} is not here")
    import blender_addon as addon

    addon.register()
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    build(args.frame)
    screenshots.render(out / "blender_gaze_reachy.png", args.frame)
    print(out / "blender_gaze_reachy.png")
    addon.unregister()
    return 0


if __name__ == "__main__":
    sys.exit(main())
