"""Images for docs/blender.md, made from the bundled demo scene (headless, no GPU needed).

Renders the four-bar demo with Cycles on the CPU (background Blender has no
GPU for viewport captures or Workbench/EEVEE renders) at a few frames after
Retarget + Bake: the robot at rest with the target's path, the robot
following the target, and a frame where the crank motor is over its velocity
limit and tinted red by the bake (the tint is the object colour, shown
through an Object Info material here), and one where it is beyond its range
(violet). The Graph Editor's overlay is drawn only in a window, so its content
is drawn here with Pillow from the same data: the baked F-curves and the
band geometry of :mod:`.overlay_geometry` (:func:`draw_graph_editor`).

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


#: Graph Editor look (Blender's default theme): background, grid, text, key points.
GRAPH_BACKGROUND, GRAPH_GRID, GRAPH_TEXT = (48, 48, 48), (62, 62, 62), (205, 205, 205)
GRAPH_SECONDS = (150, 150, 150)
MARKER_COLOUR = (240, 240, 240)


def _rgb(colour, alpha=None):
    rgb = tuple(round(255 * float(c)) for c in colour[:3])
    return rgb if alpha is None else (*rgb, round(255 * alpha))


def _baked_curves(context):
    """Per baked F-curve of the scene's robot: (label, frames, values, colour, extreme mask),
    and the bake summary lines."""
    from looprig.blender_addon import animation, bake

    robot = context.scene.looprig.robot.name
    root = bake.baked_root(robot)
    ad = root.animation_data
    bag = animation.channelbag(ad.action, ad.action_slot)
    items = [a for a in context.scene.looprig.actuators if a.robot == robot]
    curves = []
    for item in items:
        for path in (bake.value_path(item.name), bake.velocity_path(item.name)):
            fc = bag.fcurves.find(path)
            frames, values = animation.read_fcurve(fc)
            extreme = np.array([k.type == "EXTREME" for k in fc.keyframe_points])
            curves.append((path, frames, values, tuple(fc.color), extreme))
    return curves, items, bake.bake_record(root)


def draw_graph_editor(context, path: Path, size=(960, 440), curves=None) -> None:
    """The Graph Editor's content after a bake, drawn from the scene's data: the baked
    F-curves (their colours, EXTREME keys), the velocity-limit band and violating
    intervals from :mod:`.overlay_geometry` (what the Graph Editor's draw handler draws,
    which needs a window), and the violation markers with frame and seconds. ``curves``:
    (label, frames, values, colour, EXTREME mask) to draw instead of the baked ones (no band)."""
    from looprig.blender_addon.overlay_geometry import (
        BAND_COLOUR,
        OVER_COLOUR,
        VIOLATION_COLOUR,
        band_rectangles,
        velocity_overlay,
    )
    from PIL import Image, ImageDraw, ImageFont

    baked, items, record = _baked_curves(context)
    if curves is None:
        curves = baked
    else:
        items = []
    fps, first = record["fps"], record["frame_start"]
    width, height = size
    left, right, top, bottom = 60, 20, 34, 54
    x0 = min(float(f[0]) for _, f, _, _, _ in curves)
    x1 = max(float(f[-1]) for _, f, _, _, _ in curves)
    limits = [a.velocity_limit for a in items if a.velocity_limit > 0]
    high = max([float(np.max(np.abs(v))) for _, _, v, _, _ in curves] + limits) * 1.15
    geometries = []  # what the draw handler draws, from the same data and geometry
    for item in items:
        if item.velocity_limit > 0:
            _, frames, values, _, _ = next(c for c in curves if c[0] == f'["{item.name} velocity"]')
            geometries.append((velocity_overlay(frames, values, item.velocity_limit), item.velocity_limit))
    image = Image.new("RGBA", size, GRAPH_BACKGROUND)
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=13)

    def xy(frame, value):
        u = left + (frame - x0) / (x1 - x0) * (width - left - right)
        return u, top + (high - value) / (2 * high) * (height - top - bottom)

    for frame in range(int(np.ceil(x0 / 5) * 5), int(x1) + 1, 5):  # grid and frame ruler
        u, _ = xy(frame, 0)
        draw.line([(u, top), (u, height - bottom)], fill=GRAPH_GRID)
        if frame % 10 == 0:
            draw.text((u, height - bottom + 4), str(frame), fill=GRAPH_TEXT, font=font, anchor="mt")
            seconds = (frame - first) / fps
            draw.text(
                (u, height - bottom + 19), f"{seconds:.2f} s", fill=GRAPH_SECONDS, font=font, anchor="mt"
            )
    step = 10 ** np.floor(np.log10(high / 3))
    step *= next(k for k in (1, 2, 5, 10) if high / (k * step) <= 4)
    for value in np.arange(-np.floor(high / step), np.floor(high / step) + 1) * step:
        _, v = xy(x0, value)
        draw.line([(left, v), (width - right, v)], fill=GRAPH_GRID)
        draw.text((left - 6, v), f"{value:.3g}", fill=GRAPH_TEXT, font=font, anchor="rm")
    shading = Image.new("RGBA", size, (0, 0, 0, 0))
    for geometry, limit in geometries:
        for a0, b0, a1, b1 in band_rectangles(geometry, limit):
            ImageDraw.Draw(shading).rectangle(
                [xy(a0, b1), xy(a1, b0)], fill=_rgb(VIOLATION_COLOUR, VIOLATION_COLOUR[3])
            )
    image.alpha_composite(shading)
    for geometry, _limit in geometries:
        for a0, b0, a1, b1 in geometry.band:
            draw.line([xy(a0, b0), xy(a1, b1)], fill=_rgb(BAND_COLOUR), width=2)
        for piece in geometry.over:
            draw.line([xy(a, b) for a, b in piece], fill=_rgb(OVER_COLOUR), width=5)
    for _label, frames, values, colour, extreme in curves:
        draw.line([xy(f, v) for f, v in zip(frames, values, strict=True)], fill=_rgb(colour), width=2)
        for f, v, is_extreme in zip(frames, values, extreme, strict=True):
            u, w = xy(f, v)
            r = 3 if is_extreme else 2
            draw.ellipse([u - r, w - r, u + r, w + r], fill=(255, 220, 130) if is_extreme else (0, 0, 0))
    robot = context.scene.looprig.robot.name
    for marker in context.scene.timeline_markers:  # the violations' and the animator's (pins)
        if marker.name.startswith(f"looprig {robot}: ") or not marker.name.startswith("looprig "):
            u, _ = xy(marker.frame, 0)
            draw.line([(u, top), (u, height - bottom)], fill=MARKER_COLOUR)
            draw.text((u + 4, top + 4), marker.name, fill=MARKER_COLOUR, font=font, anchor="lt")
    legend = left
    for label, _, _, colour, _ in curves:
        draw.rectangle([legend, 10, legend + 12, 22], fill=_rgb(colour))
        draw.text((legend + 18, 16), label, fill=GRAPH_TEXT, font=font, anchor="lm")
        legend += 30 + font.getbbox(label)[2]
    note = "frames (seconds from the first baked frame)"
    draw.text((width - right, 16), note, fill=GRAPH_TEXT, font=font, anchor="rm")
    image.convert("RGB").save(path)


def retarget_stretched(scene) -> None:
    """Retarget the demo with Timing Stretch and markers at frames 7 and 19 pinned."""
    scene.looprig.timing = "stretch"
    for name, frame in (("beat 1", 7), ("beat 2", 19)):
        scene.timeline_markers.new(name, frame=frame)
    if bpy.ops.looprig.retarget() != {"FINISHED"}:
        raise SystemExit(f"retarget failed: {scene.looprig.status}")


def draw_retimed(context, path: Path) -> None:
    """The demo retimed (:func:`retarget_stretched`), as the Graph Editor shows it after
    the bake (:func:`draw_graph_editor`): the crank held under its 4 rad/s limit, its
    action ending after the scene's last frame."""
    retarget_stretched(context.scene)
    draw_graph_editor(context, path)


def draw_strips(context, path: Path) -> None:
    """The demo's target pushed into two NLA strips, the whole turn (frames 1-49) and its
    frames 13-37 from frame 57 on, solved by Retarget NLA Strips (the 8-frame gap a
    transition), as the Graph Editor shows it after the bake, the gap marked."""
    scene = context.scene
    hand = scene.objects["hand"]
    action, hand.animation_data.action = hand.animation_data.action, None
    track = hand.animation_data.nla_tracks.new()
    track.strips.new("walk", 1, action)
    wave = track.strips.new("wave", 57, action)
    wave.action_frame_start, wave.action_frame_end = 13, 37
    scene.frame_end = 81
    for name, frame in (("walk ends", 49), ("wave starts", 57)):
        scene.timeline_markers.new(name, frame=frame)
    if bpy.ops.looprig.retarget_strips() != {"FINISHED"}:
        raise SystemExit(f"retarget failed: {scene.looprig.status}")
    draw_graph_editor(context, path)


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
    draw_graph_editor(bpy.context, out / "blender_graph_editor.png")
    written.append(out / "blender_graph_editor.png")
    # a range limit too: the crank turns past 1 rad from frame 9 on and is tinted violet there
    joint = bpy.context.scene.looprig.robot.objects["crank_joint"].looprig_joint
    joint.use_range, joint.lower_angle, joint.upper_angle = True, -1.0, 1.0
    if bpy.ops.looprig.bake() != {"FINISHED"}:
        raise SystemExit(f"bake failed: {bpy.context.scene.looprig.status}")
    render(out / "blender_demo_frame45_over_range.png", 45)
    written.append(out / "blender_demo_frame45_over_range.png")
    build()
    draw_retimed(bpy.context, out / "blender_retime_markers.png")
    written.append(out / "blender_retime_markers.png")
    build()
    draw_strips(bpy.context, out / "blender_nla_strips.png")
    written.append(out / "blender_nla_strips.png")
    for path in written:
        print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
    addon.unregister()
    return 0


if __name__ == "__main__":
    sys.exit(main())
