"""Live link: the robot's motors follow the timeline on real servos while the animator plays
or scrubs (:mod:`looprig.live` does the streaming; this module only connects the scene).

Start Live Link reads the robot, its targets and ``scene.looprig_live`` (port, baud, rate,
source, what the servos do on a stop), opens a :class:`~looprig.live.LiveLink` (servos
pinged and checked before the first packet) and adds a frame-change handler: every frame
Blender shows, played or scrubbed to, is handed to the link. With the source "Solve", the
handler reads the targets' world matrices at that frame (main thread) and the link's
thread solves them with the per-frame solver, each frame from its seed (the link's start
solves the frame range once: its warm-up); with "Baked Curves", the link reads the
baked motor curves (bake again after changing the animation). The link moves every motor
towards the frame's values within its velocity and acceleration limits, so a jump of the
timeline is a limited move.

Stops: Stop Live Link (the panel button), Esc (a modal operator started with the link in
the UI), opening another file (``load_pre``), disabling the add-on and closing Blender
(``atexit``); each leaves the servos as set (hold the last goal, or torque off). The
panel shows the lag (the time the servos still need to reach the frame shown), the work
per period and, if the port disappears, the one-line reason, redrawn by the monitor.
The settings live in their own pointer, ``scene.looprig_live``, next to ``scene.looprig``.
"""

from __future__ import annotations

import atexit
import time

import bpy
import numpy as np
from bpy.props import EnumProperty, FloatProperty, IntProperty, PointerProperty, StringProperty
from looprig.core.errors import LooprigError

from looprig import live

from . import bake
from .operators_retarget import frame_range, read_mapping
from .operators_robot import RobotError, checked_model
from .panels import SidebarPanel
from .sampling import Clip, make_clip, samples_from_matrices, scene_fps, track_samples
from .scene_data import unit_scale


class LOOPRIG_PG_live(bpy.types.PropertyGroup):
    port: StringProperty(name="Port", description="Serial port of the servo bus, e.g. /dev/ttyUSB0")
    baud: IntProperty(name="Baud", default=1_000_000, min=9600, description="Baud rate of the servo bus")
    rate: FloatProperty(
        name="Rate", default=100.0, min=50.0, max=100.0, description="Packets per second [Hz]"
    )
    source: EnumProperty(
        name="Source",
        items=[
            ("SOLVE", "Solve", "Each frame solved from the targets as the animator plays or scrubs"),
            ("BAKED", "Baked Curves", "The baked motor curves (bake again after changing the animation)"),
        ],
        default="SOLVE",
    )
    on_stop: EnumProperty(
        name="On Stop",
        items=[
            ("hold", "Hold", "The servos hold the last goal, torque on"),
            ("torque-off", "Torque Off", "The servos' torque is switched off"),
        ],
        default="hold",
    )
    status: StringProperty(name="Status", default="")


class _Session:
    """The one running link: the link, its scene, and how a frame becomes the source's payload."""

    link: live.LiveLink | None = None
    scene_name = ""
    payload = None  # (scene) -> payload for the source, or None


def running() -> bool:
    return _Session.link is not None


def _targets_now(sources, solver):
    """(scene) -> the targets at the frame shown: the sources' world matrices [m] read now
    (the frame-change handler runs after the scene was evaluated) -> IKTargets."""
    clip = Clip(np.zeros(1), np.zeros(1), 1.0, 1.0)

    def payload(scene):
        s = unit_scale(scene)
        matrices = {}
        for src in sources:
            ob = bpy.data.objects[src.object_name]
            T = np.array(ob.matrix_world)
            if src.bone:
                T = T @ np.array(ob.pose.bones[src.bone].matrix)
            T[:3, :] *= s
            matrices[src.name] = T[None]
        return solver.targets_of(samples_from_matrices(matrices, clip))

    return payload


def start(context) -> str:
    """Open the link from the scene's settings; returns a status line with the start-up time
    [s] (the frame range sampled and solved, the servos checked: all before the first packet;
    RobotError / LooprigError with the reason, nothing left open, when it cannot start)."""
    if running():
        raise RobotError("the live link is already running: stop it first")
    began = time.perf_counter()  # the start-up: sampling, warm-up, servo checks
    scene = context.scene
    settings = scene.looprig_live
    if not settings.port:
        raise RobotError("live link: give the servos' serial port (e.g. /dev/ttyUSB0)")
    model = checked_model(context)
    options = live.LiveSettings(rate=settings.rate, on_stop=settings.on_stop)
    fps = scene_fps(scene)
    if settings.source == "BAKED":
        curves = bake.read_baked_curves(context, model)
        record = bake.bake_record(bake.baked_root(model.record.name))
        source, payload = live.curve_source(curves, record["frame_start"], record["fps"]), None
    else:
        # the frame range's targets now: the solver's warm-up solves them all before the first
        # packet, each frame's state the seed of its later solves (a scrub starts from its frame's)
        mapping, sources = read_mapping(context, model, fps)
        clip = make_clip(scene, *frame_range(scene))
        solver = live.FrameSolver(
            model.mechanism, mapping, track_samples(context, sources, clip), clip.frame_start
        )
        curves, source, payload = solver.curves, solver, _targets_now(sources, solver)
    # the servos' mode and mounting as the bake's exports write them (Operating Mode 4)
    motors = live.LiveMotors.of(curves, bake.dynamixel_settings(model, "extended_position"), options)
    link = live.LiveLink(motors, source, settings.port, settings.baud, options, fps)
    frame = scene.frame_current + scene.frame_subframe
    link.open(frame, None if payload is None else payload(scene))
    _Session.link, _Session.scene_name, _Session.payload = link, scene.name, payload
    if on_frame not in bpy.app.handlers.frame_change_post:
        bpy.app.handlers.frame_change_post.append(on_frame)
    defaulted = f"; default limits for {', '.join(motors.defaulted)}" if motors.defaulted else ""
    settings.status = (
        f"live on {settings.port} at {settings.rate:g} Hz, {len(motors.names)} servos "
        f"(start-up {time.perf_counter() - began:.2f} s){defaulted}"
    )
    return settings.status


def on_frame(scene, depsgraph=None) -> None:
    """frame_change_post: hand the frame shown (and its targets) to the link."""
    link = _Session.link
    if link is None or scene.name != _Session.scene_name or not link.running:
        return
    payload = None if _Session.payload is None else _Session.payload(scene)
    link.seek(scene.frame_current + scene.frame_subframe, payload)


def stop(scene=None) -> str:
    """Stop the link (the servos as set), remove the handler; returns a status line: the
    summary, or the reason the stream ended (a port that disappeared)."""
    link, _Session.link = _Session.link, None
    if on_frame in bpy.app.handlers.frame_change_post:
        bpy.app.handlers.frame_change_post.remove(on_frame)
    if link is None:
        return "the live link is not running"
    try:
        report = link.stop()
        work = 1e3 * report.work_s
        line = (
            f"live link stopped after {len(report.sent)} packets (work per period max "
            f"{work.max(initial=0.0):.1f} ms); servos "
            + ("hold the last goal" if link.settings.on_stop == "hold" else "torque off")
        )
    except LooprigError as error:
        line = f"live link stopped: {error}"
    scene = scene or bpy.data.scenes.get(_Session.scene_name)
    if scene is not None:
        scene.looprig_live.status = line
    return line


def status_line() -> str:
    """What the link is doing now, for the panel: frame, lag, work per period, or its error."""
    link = _Session.link
    if link is None:
        return ""
    s = link.status
    if s.error:
        return s.error
    return (
        f"frame {s.frame:.1f}, lag {s.lag_s:.3f} s, work {s.last_ms:.1f} ms (max {s.max_ms:.1f}), "
        f"{s.packets} packets" + (", real-time" if s.realtime else "")
    )


def monitor_event(context, event_type: str, event_value: str) -> set:
    """The monitor's reaction to one UI event: Esc stops the link (and passes on, so playback
    stops too); a timer tick redraws the panel and, if the stream ended on its own (a port
    that disappeared), stops it with its reason."""
    if not running():
        return {"FINISHED"}
    if event_type == "ESC" and event_value == "PRESS":
        stop(context.scene)
        return {"FINISHED", "PASS_THROUGH"}
    if event_type == "TIMER":
        if not _Session.link.running:
            stop(context.scene)
            return {"FINISHED"}
        for area in context.screen.areas if context.screen else ():
            if area.type == "VIEW_3D":
                area.tag_redraw()
    return {"PASS_THROUGH"}


class LOOPRIG_OT_live_start(bpy.types.Operator):
    """Stream the robot's motors to the servos while you play or scrub (Esc or Stop Live Link stops)"""

    bl_idname = "looprig.live_start"
    bl_label = "Start Live Link"
    bl_options = {"REGISTER"}

    def execute(self, context):
        try:
            line = start(context)
        except (RobotError, LooprigError, ValueError) as error:
            context.scene.looprig_live.status = f"live link not started: {error}"
            self.report({"ERROR"}, str(error))
            return {"CANCELLED"}
        self.report({"INFO"}, line)
        return {"FINISHED"}

    def invoke(self, context, event):
        result = self.execute(context)
        if result == {"FINISHED"} and not bpy.app.background and context.window is not None:
            bpy.ops.looprig.live_monitor("INVOKE_DEFAULT")
        return result


class LOOPRIG_OT_live_stop(bpy.types.Operator):
    """Stop the live link: the servos hold the last goal or switch their torque off, as set"""

    bl_idname = "looprig.live_stop"
    bl_label = "Stop Live Link"
    bl_options = {"REGISTER"}

    def execute(self, context):
        line = stop(context.scene)
        self.report({"WARNING"} if "disappeared" in line else {"INFO"}, line)
        return {"FINISHED"}


class LOOPRIG_OT_live_monitor(bpy.types.Operator):
    """Watch the running live link: Esc stops it; the panel shows its lag"""

    bl_idname = "looprig.live_monitor"
    bl_label = "Live Link Monitor"
    bl_options = {"INTERNAL"}

    _timer = None

    def invoke(self, context, event):
        wm = context.window_manager
        self._timer = wm.event_timer_add(0.1, window=context.window)
        wm.modal_handler_add(self)
        return {"RUNNING_MODAL"}

    def modal(self, context, event):
        result = monitor_event(context, event.type, event.value)
        if "FINISHED" in result:
            context.window_manager.event_timer_remove(self._timer)
            if "disappeared" in context.scene.looprig_live.status:
                self.report({"ERROR"}, context.scene.looprig_live.status)
        return result


class LOOPRIG_PT_live(SidebarPanel, bpy.types.Panel):
    bl_label = "Live Link"
    bl_parent_id = "LOOPRIG_PT_bake"
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context):
        layout = self.layout
        settings = context.scene.looprig_live
        column = layout.column()
        column.enabled = not running()
        column.prop(settings, "port")
        row = column.row(align=True)
        row.prop(settings, "baud")
        row.prop(settings, "rate")
        column.prop(settings, "source")
        column.prop(settings, "on_stop")
        if running():
            layout.operator("looprig.live_stop", icon="CANCEL", depress=True)
            layout.label(text=status_line(), icon="PLAY")
        else:
            layout.operator("looprig.live_start", icon="PLAY")
        if settings.status:
            layout.label(text=settings.status, icon="INFO")


@bpy.app.handlers.persistent
def _stop_before_load(*_args) -> None:
    """load_pre: another file is opened; the link stops first (the servos as set)."""
    if running():
        stop()


def _stop_on_exit() -> None:
    """atexit: Blender closes; the link stops first (the servos as set)."""
    if running():
        stop()


classes = (
    LOOPRIG_PG_live,
    LOOPRIG_OT_live_start,
    LOOPRIG_OT_live_stop,
    LOOPRIG_OT_live_monitor,
    LOOPRIG_PT_live,
)


_register_classes, _unregister_classes = bpy.utils.register_classes_factory(classes)


def register():
    _register_classes()
    bpy.types.Scene.looprig_live = PointerProperty(type=LOOPRIG_PG_live)
    bpy.app.handlers.load_pre.append(_stop_before_load)
    atexit.register(_stop_on_exit)


def unregister():
    if running():
        stop()
    atexit.unregister(_stop_on_exit)
    if _stop_before_load in bpy.app.handlers.load_pre:
        bpy.app.handlers.load_pre.remove(_stop_before_load)
    del bpy.types.Scene.looprig_live
    _unregister_classes()
