"""Images for docs/blender.md, made from the bundled demo scene (headless, no GPU needed).

Renders the four-bar demo with Cycles on the CPU (background Blender has no
GPU for viewport captures or Workbench/EEVEE renders) at a few frames after
Retarget + Bake: the robot at rest with the target's path, the robot
following the target, and a frame where the crank motor is over its velocity
limit and tinted red by the bake (the tint is the object colour, shown
through an Object Info material here). The baked actuator curves are plotted
from the scene's F-curves with ``looprig.plotting`` (the Graph Editor overlay
itself is drawn only in a window).

Run from the repository root::

    .venv/bin/python blender_addon/screenshots.py            # writes docs/images/blender_*.png
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="looprig-shots-"))

import bpy
import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _material(name="object colour"):
    """A material whose base colour is the object's colour (so the bake's tint shows)."""
    material = bpy.data.materials.new(name)
    nodes = material.node_tree.nodes
    shader = nodes.get("Principled BSDF")
    info = nodes.new("ShaderNodeObjectInfo")
    material.node_tree.links.new(info.outputs["Color"], shader.inputs["Base Color"])
    shader.inputs["Roughness"].default_value = 0.5
    return material


def _path_curve(scene, points, name="target path"):
    curve = bpy.data.curves.new(name, "CURVE")
    curve.dimensions = "3D"
    curve.bevel_depth = 0.0025
    spline = curve.splines.new("POLY")
    spline.points.add(len(points) - 1)
    spline.points.foreach_set("co", np.hstack([points, np.ones((len(points), 1))]).ravel())
    ob = bpy.data.objects.new(name, curve)
    ob.color = (0.1, 0.1, 0.1, 1.0)
    scene.collection.objects.link(ob)
    return ob


def _marker_sphere(scene, parent, radius, colour, name):
    mesh = bpy.data.meshes.new(name)
    import bmesh

    bm = bmesh.new()
    bmesh.ops.create_uvsphere(bm, u_segments=16, v_segments=8, radius=radius)
    bm.to_mesh(mesh)
    bm.free()
    ob = bpy.data.objects.new(name, mesh)
    scene.collection.objects.link(ob)
    ob.parent = parent
    ob.color = colour
    return ob


def setup_render(scene, resolution=(640, 480), samples=24):
    """Camera above the four-bar, a sun, a light background, Cycles on the CPU."""
    scene.render.engine = "CYCLES"
    scene.cycles.device = "CPU"
    scene.cycles.samples = samples
    scene.cycles.use_denoising = True
    scene.render.resolution_x, scene.render.resolution_y = resolution
    scene.render.film_transparent = False
    scene.view_settings.view_transform = "Standard"
    scene.render.image_settings.color_mode = "RGB"
    scene.render.image_settings.compression = 100
    world = bpy.data.worlds.new("studio")
    world.node_tree.nodes["Background"].inputs["Color"].default_value = (0.55, 0.56, 0.6, 1.0)
    world.node_tree.nodes["Background"].inputs["Strength"].default_value = 1.0
    scene.world = world
    camera = bpy.data.cameras.new("camera")
    camera.type = "ORTHO"
    camera.ortho_scale = 0.68
    ob = bpy.data.objects.new("camera", camera)
    ob.location = (0.12, 0.12, 1.0)
    scene.collection.objects.link(ob)
    scene.camera = ob
    sun = bpy.data.lights.new("sun", "SUN")
    sun.energy = 2.0
    sun_ob = bpy.data.objects.new("sun", sun)
    sun_ob.rotation_euler = (0.4, 0.3, 0.0)
    scene.collection.objects.link(sun_ob)


def build(seconds: float = 2.0):
    """The demo scene, retargeted and baked, dressed for rendering."""
    from looprig.blender_addon import demo_scene as demo

    bpy.ops.wm.read_homefile(use_empty=True)
    context = bpy.context
    scene = context.scene
    collection = demo.setup_demo(context, seconds)
    result = bpy.ops.looprig.retarget()
    if result != {"FINISHED"}:
        raise SystemExit(f"retarget failed: {scene.looprig.status}")
    material = _material()
    for ob in collection.objects:
        if ob.type == "MESH":
            ob.data.materials.append(material)
    hand = scene.objects["hand"]
    frames = np.arange(scene.frame_start, scene.frame_end + 1)
    path = []
    for f in frames:
        scene.frame_set(int(f))
        path.append(np.array(hand.matrix_world.translation))
    path_ob = _path_curve(scene, np.array(path) + [0, 0, 0.03])
    path_ob.data.materials.append(material)
    sphere = _marker_sphere(scene, hand, 0.008, (0.05, 0.05, 0.05, 1.0), "hand marker")
    sphere.location.z = 0.03
    sphere.data.materials.append(material)
    for name in ("crank_joint", "coupler_joint", "rocker_coupler_joint", "rocker_joint"):
        pin = _marker_sphere(scene, collection.objects[name], 0.006, (0.15, 0.15, 0.15, 1.0), name + " pin")
        pin.location.z = 0.02
        pin.data.materials.append(material)
    setup_render(scene)
    return collection


def render(path: Path, frame: int) -> None:
    scene = bpy.context.scene
    scene.frame_set(frame)
    scene.render.filepath = str(path)
    bpy.ops.render.render(write_still=True)


def plot_baked(path: Path) -> None:
    """The baked actuator curves (from the scene's F-curves) with the velocity-limit band."""
    from looprig.blender_addon import bake
    from looprig.blender_addon.operators_robot import checked_model

    from looprig.plotting import PlotSettings, plot_curves

    model = checked_model(bpy.context)
    curves = bake.read_baked_curves(bpy.context, model)
    plot_curves(curves, path, settings=PlotSettings(width=8.0, row_height=2.4, dpi=90))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Render the docs images of the Blender add-on")
    parser.add_argument("--output", default=str(ROOT / "docs" / "images"), help="folder for the PNGs")
    args = parser.parse_args(argv)
    import looprig.blender_addon as addon

    addon.register()
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    build()
    written = []
    for name, frame in (
        ("blender_demo_rest.png", 1),
        ("blender_demo_frame08.png", 8),
        ("blender_demo_frame25_over_limit.png", 25),
    ):
        render(out / name, frame)
        written.append(out / name)
    plot_baked(out / "blender_baked_curves.png")
    written.append(out / "blender_baked_curves.png")
    for path in written:
        print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
    addon.unregister()
    return 0


if __name__ == "__main__":
    sys.exit(main())
