"""Images of the live link, recorded motion and retiming panels for docs/blender.md and
docs/pipeline.md, made headless from the bundled demo scene with the real add-on in bpy.

A panel cannot be captured without a window, so each one is drawn with Pillow from its own
``draw()``, run in bpy against :class:`PanelLayout`, a layout that records what the panel
draws: rows and columns, each property with its name and value as the scene holds them,
buttons, labels and lists (:func:`draw_panel`; Blender's default dark theme, icons left out).

* ``blender_live_link_panel.png``: Bake & Export ▸ Live Link before the start and while it
  streams the demo's crank to an emulated servo (tests/dxl_emulator.py through the real
  dynamixel-sdk), the timeline scrubbed: the Stop button and the lag line.
* ``blender_recording_error.png``: the demo's Dynamixel export (the crank's limit raised to
  6 rad/s: the exact solve) played with ``looprig play --record`` on the emulated servo (its
  first-order lag, 20 ms), brought back with Import Recorded Motion, drawn as the Graph
  Editor shows the crank's asked, recorded and error curves
  (:func:`looprig.blender_addon.screenshots.draw_graph_editor`).
* ``blender_retime_panel.png``: the Retarget panel with Timing Stretch, the two markers it
  pins and the status line listing each stretch's time factor.
* ``blender_sound_export.png``: a click track as a sound strip, exported with the curves,
  read back and laid on the clip's timeline under the crank's baked angle.

Run from the repository root::

    .venv/bin/python blender_addon/screenshots_live.py   # writes the four PNGs in docs/images
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

if __package__ in (None, ""):  # run as a script: the repository root on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from blender_addon.screenshots import ROOT, build, draw_graph_editor, retarget_stretched  # noqa: I001  (first: it sets Blender's user resources)

import bpy
import numpy as np

sys.path.insert(0, str(ROOT / "tests"))  # the Protocol 2.0 emulator

#: Blender's default theme: panel, header, text, disabled text, fields, buttons, the depressed one.
PANEL, HEADER, TEXT, DIM = (48, 48, 48), (61, 61, 61), (230, 230, 230), (130, 130, 130)
FIELD, NUMBER, BUTTON, PRESSED, BOX = (29, 29, 29), (84, 84, 84), (84, 84, 84), (71, 114, 179), (40, 40, 40)
ROW, GAP, PAD = 22, 4, 10  # [px] a row's height, between rows, the panel's margin


@dataclass
class Item:
    """One thing a panel drew: ``kind`` "prop" | "operator" | "label" | "list"; ``text`` its
    words; ``value`` a property's shown value; ``style`` "text" | "number" | "enum" | "bool"
    (props), "pressed" (a depressed operator); ``enabled`` as its layout was."""

    kind: str
    text: str
    value: str = ""
    style: str = ""
    enabled: bool = True


@dataclass
class PanelLayout:
    """A recording stand-in for ``bpy.types.UILayout``: children in order, ``horizontal``
    for a row, ``boxed`` for a box; ``enabled``/``alert``/``scale_y`` as panels set them."""

    horizontal: bool = False
    boxed: bool = False
    children: list = field(default_factory=list)
    enabled: bool = True
    alert: bool = False
    active: bool = True
    scale_y: float = 1.0

    def _child(self, horizontal: bool, boxed: bool = False, **_kwargs) -> PanelLayout:
        child = PanelLayout(horizontal, boxed)
        self.children.append(child)
        return child

    def row(self, **kwargs):
        return self._child(True, **kwargs)

    def column(self, **kwargs):
        return self._child(False, **kwargs)

    def box(self):
        return self._child(False, boxed=True)

    def split(self, **kwargs):
        return self._child(True, **kwargs)

    def prop(self, data, name, text=None, **_kwargs):
        rna = data.bl_rna.properties[name]
        value = getattr(data, name)
        label = rna.name if text is None else text
        if rna.type == "ENUM":
            shown, style = rna.enum_items[value].name, "enum"
        elif rna.type == "BOOLEAN":
            shown, style = "x" if value else "", "bool"
        elif rna.type == "FLOAT":
            shown, style = f"{value:.{rna.precision}f}", "number"
        elif rna.type == "INT":
            shown, style = str(value), "number"
        elif rna.type == "POINTER":
            shown, style = (value.name if value is not None else ""), "text"
        else:
            shown, style = str(value), "text"
        self.children.append(Item("prop", label, shown, style))

    def operator(self, idname, text=None, depress=False, icon="", **_kwargs):
        module, name = idname.split(".")
        label = getattr(bpy.types, f"{module.upper()}_OT_{name}").bl_label if text is None else text
        label = label or ("x" if icon == "X" else "")  # an icon-only clear button
        self.children.append(Item("operator", label, style="pressed" if depress else ""))
        return type("OperatorProperties", (), {})()

    def label(self, text="", **_kwargs):
        self.children.append(Item("label", text))

    def template_list(self, _list_type, _list_id, data, prop, *_args, rows=3, **_kwargs):
        names = [getattr(item, "name", "") for item in getattr(data, prop)][:rows]
        self.children.append(Item("list", "\n".join(names), str(rows)))


def _height(node) -> int:
    """[px] the height ``node`` takes."""
    if isinstance(node, Item):
        lines = max(1, int(node.value)) if node.kind == "list" else 1
        return lines * ROW + (GAP if node.kind == "list" else 0)
    if node.horizontal:
        return max((_height(c) for c in node.children), default=0)
    inner = sum(_height(c) + GAP for c in node.children) - (GAP if node.children else 0)
    return round(inner * node.scale_y) + (2 * GAP if node.boxed else 0)


def _draw_node(draw, font, node, x: int, y: int, width: int, enabled: bool = True) -> None:
    """Draw ``node`` at (x, y) [px] across ``width`` [px]."""
    if isinstance(node, Item):
        _draw_item(draw, font, node, x, y, width, enabled)
        return
    enabled = enabled and node.enabled
    if node.boxed:
        draw.rounded_rectangle([x, y, x + width, y + _height(node)], 4, fill=BOX, outline=HEADER)
        x, y, width = x + GAP, y + GAP, width - 2 * GAP
    if node.horizontal:
        count = max(len(node.children), 1)
        share = (width - GAP * (count - 1)) / count
        for k, child in enumerate(node.children):
            _draw_node(draw, font, child, round(x + k * (share + GAP)), y, round(share), enabled)
        return
    for child in node.children:
        h = _height(child)
        _draw_node(draw, font, child, x, y, width, enabled)
        y += round((h + GAP) * node.scale_y) if isinstance(child, Item) else h + GAP


def _draw_item(draw, font, item: Item, x: int, y: int, width: int, enabled: bool) -> None:
    colour = TEXT if enabled else DIM
    mid = y + ROW // 2
    box = [x, y + 1, x + width, y + ROW - 1]
    if item.kind == "label":
        draw.text((x + 4, mid), item.text, fill=colour, font=font, anchor="lm")
    elif item.kind == "operator":
        draw.rounded_rectangle(box, 4, fill=PRESSED if item.style == "pressed" else BUTTON)
        draw.text((x + width / 2, mid), item.text, fill=colour, font=font, anchor="mm")
    elif item.kind == "list":
        draw.rounded_rectangle([x, y, x + width, y + _height(item) - GAP], 4, fill=FIELD)
        for k, line in enumerate(item.text.split("\n") if item.text else ()):
            draw.text((x + 8, y + k * ROW + ROW // 2), line, fill=colour, font=font, anchor="lm")
    elif item.style == "bool":
        draw.rounded_rectangle([x + 2, mid - 7, x + 16, mid + 7], 3, fill=PRESSED if item.value else NUMBER)
        draw.text((x + 22, mid), item.text, fill=colour, font=font, anchor="lm")
    elif item.style == "number":  # the name left, the value right, in one field
        draw.rounded_rectangle(box, 4, fill=NUMBER)
        draw.text((x + 8, mid), item.text, fill=colour, font=font, anchor="lm")
        draw.text((x + width - 8, mid), item.value, fill=colour, font=font, anchor="rm")
    else:  # text and enum: the name, then the field
        split = x + round(0.4 * width)
        draw.text((split - 6, mid), item.text, fill=colour, font=font, anchor="rm")
        draw.rounded_rectangle(
            [split, y + 1, x + width, y + ROW - 1], 4, fill=FIELD if item.style == "text" else NUMBER
        )
        draw.text((split + 8, mid), item.value, fill=colour, font=font, anchor="lm")
        if item.style == "enum":
            draw.text((x + width - 8, mid), "v", fill=colour, font=font, anchor="rm")


def _widest_label(node, font) -> float:
    """[px] the longest label line in ``node``, with a box's margins round it."""
    if isinstance(node, Item):
        return font.getlength(node.text) + 8 if node.kind == "label" else 0.0
    inner = max((_widest_label(c, font) for c in node.children), default=0.0)
    return inner + (2 * GAP if node.boxed else 0)


def draw_panel(panel_class, context, path: Path | None = None, width: int = 380):
    """Run ``panel_class.draw`` in bpy against a :class:`PanelLayout` and draw it (its header
    ``bl_label``, then what it drew) with Pillow, ``width`` [px] or as wide as its longest
    label; saved to ``path`` if given. Returns the image."""
    from PIL import Image, ImageDraw, ImageFont

    layout = PanelLayout()
    panel_class.draw(type("PanelInstance", (), {"layout": layout})(), context)
    font = ImageFont.load_default(size=13)
    width = max(width, round(_widest_label(layout, font)) + 2 * PAD)
    height = 2 * PAD + ROW + GAP + _height(layout)
    image = Image.new("RGB", (width, height), PANEL)
    draw = ImageDraw.Draw(image)
    draw.rectangle([0, 0, width, ROW + PAD], fill=HEADER)
    draw.text((PAD, (ROW + PAD) // 2), "v  " + panel_class.bl_label, fill=TEXT, font=font, anchor="lm")
    _draw_node(draw, font, layout, PAD, ROW + PAD + GAP + PAD // 2, width - 2 * PAD)
    if path is not None:
        image.save(path)
    return image


def live_link_panel(context, path: Path) -> None:
    """The Live Link panel streaming the demo's crank (Solve) to an emulated servo after a
    scrub to frame 20, and above it the panel before the start."""
    from dxl_emulator import EmulatedBus, Servo
    from looprig.blender_addon import live_link
    from PIL import Image

    scene = context.scene
    scene.frame_set(1)
    settings = scene.looprig_live
    with EmulatedBus([Servo(1, mode=4, position=2048)]) as bus:
        settings.port = bus.port
        if bpy.ops.looprig.live_start() != {"FINISHED"}:
            raise SystemExit(f"live link failed: {settings.status}")
        for frame in (2, 3, 4, 20):
            scene.frame_set(frame)
            time.sleep(0.03)
        time.sleep(0.02)  # mid-move: the lag shows
        # the emulator's pseudo-terminal is no example of a port
        settings.port = "/dev/ttyUSB0"
        settings.status = settings.status.replace(bus.port, settings.port)
        during = draw_panel(live_link.LOOPRIG_PT_live, context)
        bpy.ops.looprig.live_stop()
    settings.status = ""
    before = draw_panel(live_link.LOOPRIG_PT_live, context, width=during.width)
    image = Image.new("RGB", (during.width, before.height + during.height + 12), (35, 35, 35))
    image.paste(before, (0, 0))
    image.paste(during, (0, before.height + 12))
    image.save(path)


def recording_graph(context, path: Path) -> None:
    """The demo's export played and recorded on the emulated servo, imported back, drawn as
    the Graph Editor shows the crank: asked (the bake), recorded and error curves."""
    from dxl_emulator import EmulatedBus, Servo
    from looprig.blender_addon import animation, bake, recording
    from looprig.blender_addon.operators_robot import checked_model

    from looprig import live
    from looprig.cli import main as looprig

    folder = Path(tempfile.mkdtemp(prefix="looprig-recording-"))
    exported, played = folder / "demo.dynamixel.json", folder / "played.csv"
    # a crank fast enough for the clip (4.9 rad/s at most): the export is the exact solve,
    # which play accepts (a held one rides its limit, where a tick's rounding may cross it)
    context.scene.looprig.robot.objects["crank_joint"].looprig_joint.velocity_limit = 6.0
    if bpy.ops.looprig.retarget() != {"FINISHED"}:
        raise SystemExit(f"retarget failed: {context.scene.looprig.status}")
    if bpy.ops.looprig.export_curves(filepath=str(exported), format="DXL_JSON") != {"FINISHED"}:
        raise SystemExit("export failed")
    model = checked_model(context)
    curves = bake.read_baked_curves(context, model)
    start = live.LiveMotors.of(curves, bake.dynamixel_settings(model)).ticks(curves.values[0])
    with EmulatedBus([Servo(1, mode=4, position=int(start[0]))]) as bus:
        if looprig(["play", str(exported), "--port", bus.port, "--settle", "0.05", "--record", str(played)]):
            raise SystemExit("play --record failed")
    if bpy.ops.looprig.import_recording(filepath=str(played)) != {"FINISHED"}:
        raise SystemExit("import of the recording failed")
    robot = context.scene.looprig.robot.name
    carrier = bpy.data.objects[recording.carrier_name(robot)]
    root = bake.baked_root(robot)
    drawn = []
    for ob, name, colour in (
        (root, "crank_joint", (0.55, 0.55, 0.55)),
        (carrier, "crank_joint recorded", (0.35, 0.65, 1.0)),
        (carrier, "crank_joint error", (1.0, 0.45, 0.75)),
    ):
        ad = ob.animation_data
        fc = animation.channelbag(ad.action, ad.action_slot).fcurves.find(f'["{name}"]')
        frames, values = animation.read_fcurve(fc)
        drawn.append((f'["{name}"]', frames, values, colour, frames < 0))
    draw_graph_editor(context, path, curves=drawn)


def sound_export(context, path: Path) -> None:
    """A click track (four 80 ms beeps, 0.5 s apart) as a sound strip at frame 13 of the demo,
    exported with the curves (Export Actuator Curves, looprig JSON), read back from the file
    and laid on the clip's timeline (:func:`looprig.audio.aligned`), drawn as the Graph Editor
    shows a sound baked to samples (one key a frame: the loudest sample within it) under the
    crank's baked angle."""
    import soundfile
    from looprig.blender_addon import bake
    from looprig.blender_addon.operators_robot import checked_model
    from looprig.core.export.curves_json import read_audio

    from looprig import audio

    folder = Path(tempfile.mkdtemp(prefix="looprig-sound-"))
    rate, beep = 48000, np.arange(round(0.08 * 48000)) / 48000
    click = np.zeros(2 * rate, np.float32)
    for beat in range(4):
        start = round(beat * 0.5 * rate)
        click[start : start + len(beep)] = 0.9 * np.sin(2 * np.pi * 880 * beep)
    wav, exported = folder / "beat.wav", folder / "clip.json"
    soundfile.write(str(wav), click, rate)
    scene = context.scene
    scene.sequence_editor_create().strips.new_sound("beat", str(wav), 1, 13)
    if bpy.ops.looprig.export_curves(filepath=str(exported), format="JSON", allow_violations=True) != {
        "FINISHED"
    }:
        raise SystemExit("export failed")
    entry = read_audio(exported)
    laid = np.abs(audio.aligned(audio.read_sound(entry["path"]), entry["offset_s"])[:, 0])
    record = bake.bake_record(bake.baked_root(checked_model(context).record.name))
    fps, first = record["fps"], record["frame_start"]
    frames = first + np.arange(int(len(laid) / rate * fps))
    edges = np.round((frames - first + 0.5) * rate / fps).astype(int)
    loudness = np.array([laid[max(e - rate // round(fps), 0) : e].max(initial=0.0) for e in edges])
    name = f"sound: {wav.name} at {entry['offset_s']:g} s (loudest sample a frame)"
    (baked,) = [c for c in _baked_value_curves(context)]
    drawn = [baked, (name, frames, loudness, (0.95, 0.75, 0.25), frames < 0)]
    draw_graph_editor(context, path, curves=drawn)


def _baked_value_curves(context):
    """The baked angle curve of each motor: (label, frames, values, colour, EXTREME mask)."""
    from looprig.blender_addon import animation, bake

    robot = context.scene.looprig.robot.name
    ad = bake.baked_root(robot).animation_data
    bag = animation.channelbag(ad.action, ad.action_slot)
    curves = []
    for item in (a for a in context.scene.looprig.actuators if a.robot == robot):
        fc = bag.fcurves.find(bake.value_path(item.name))
        frames, values = animation.read_fcurve(fc)
        curves.append((bake.value_path(item.name), frames, values, tuple(fc.color), frames < 0))
    return curves


def retime_panel(context, path: Path) -> None:
    """The Retarget panel after a retarget with Timing Stretch and markers at frames 7 and 19."""
    from looprig.blender_addon import panels

    retarget_stretched(context.scene)
    draw_panel(panels.LOOPRIG_PT_solve, context, path, width=420)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default=str(ROOT / "docs" / "images"), help="folder for the PNGs")
    args = parser.parse_args(argv)
    import looprig.blender_addon as addon

    addon.register()
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, make in (
        ("blender_live_link_panel.png", live_link_panel),
        ("blender_recording_error.png", recording_graph),
        ("blender_retime_panel.png", retime_panel),
        ("blender_sound_export.png", sound_export),
    ):
        build()
        make(bpy.context, out / name)
        written.append(out / name)
        print(out / name)
    addon.unregister()
    return 0


if __name__ == "__main__":
    sys.exit(main())
