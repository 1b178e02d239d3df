"""Aims: a robot frame looks at a point, from the animator's tracking constraints or by hand.

* **From constraints**: a target row (robot frame <- animated object or bone) whose object
  or bone carries a Damped Track, Track To or Locked Track constraint (enabled, with
  influence and a target) becomes an aim of the row's robot frame at the constraint's
  target (an Empty the animator keys; a bone of an armature target): the constraint's
  track axis, up axis (Track To, towards the world's Z or the target's with Target Z) or
  lock axis (Locked Track) are in the constrained object's axes, turned into the robot
  frame's by the row's offset rotation. The rig's orientation came from aiming where the
  *rig's* head is, so the row's orientation weights are dropped: the robot aims from
  where its own head is. When a stack has several, the last one counts (it wins in
  Blender too).
* **By hand**: ``scene.looprig.aims`` (:class:`~.properties.LOOPRIG_PG_aim`): a robot
  frame, the object it looks at, its axis, an optional up axis.

The looked-at objects are sampled with the targets (their world positions, in metres) and
passed to core as tracks; :func:`read_aims` gives the mapping's ``aims`` entries. The
"Aims" subpanel of the Targets panel shows both kinds.
"""

from __future__ import annotations

import bpy
from looprig.core.retarget import AimSpec
from mathutils import Euler, Vector

from .operators_robot import RobotError, checked_row, draw_rows, row_operators
from .panels import SidebarPanel, draws_scene_settings
from .properties import AIM_AXES
from .sampling import Source

#: Blender's tracking constraints that become aims.
AIM_CONSTRAINTS = ("DAMPED_TRACK", "TRACK_TO", "LOCKED_TRACK")
_LABELS = {"DAMPED_TRACK": "Damped Track", "TRACK_TO": "Track To", "LOCKED_TRACK": "Locked Track"}
_VECTORS = {identifier: vector for identifier, _, vector in AIM_AXES}


def _track_name(ob, bone: str = "") -> str:
    return f"{ob.name}:{bone}" if bone else ob.name


def axis_vector(identifier: str) -> tuple[float, float, float]:
    """A constraint's axis enum (``TRACK_NEGATIVE_X``, ``UP_Z``, ``LOCK_Y``) or an aim's
    (``NEGATIVE_X``) as a unit vector."""
    for prefix in ("TRACK_", "UP_", "LOCK_"):
        if identifier.startswith(prefix):
            identifier = identifier[len(prefix) :]
    return _VECTORS[identifier]


def owner_constraints(row):
    """The constraint stack of a target row's object (or of its bone)."""
    ob = row.target
    if ob is None:
        return []
    if row.bone:
        bone = ob.pose.bones.get(row.bone) if ob.pose is not None else None
        return [] if bone is None else list(bone.constraints)
    return list(ob.constraints)


def aim_constraint(row):
    """The tracking constraint that aims a target row's object (the last enabled one with
    influence and a target), or None."""
    found = None
    for c in owner_constraints(row):
        if c.type in AIM_CONSTRAINTS and c.enabled and c.influence > 0 and c.target is not None:
            found = c
    return found


def constraint_aim(row, constraint) -> tuple[AimSpec, list[Source]]:
    """The aim (in the row's robot frame) and the sources to sample for a target row's
    tracking ``constraint``."""
    turn = Euler(row.offset_rotation).to_matrix().transposed()  # the track's axes -> the frame's

    def in_frame(identifier):
        return tuple(turn @ Vector(axis_vector(identifier)))

    target = constraint.target
    bone = constraint.subtarget if target.type == "ARMATURE" else ""
    name = _track_name(target, bone)
    sources = [Source(name, target.name, bone)]
    up = lock = up_track = None
    if constraint.type == "TRACK_TO":
        up = in_frame(constraint.up_axis)
        if constraint.use_target_z:
            up_track = name
    elif constraint.type == "LOCKED_TRACK":
        lock = in_frame(constraint.lock_axis)
    spec = AimSpec(
        frame=row.frame,
        axis=in_frame(constraint.track_axis),
        track=name,
        up=up,
        up_track=up_track,
        lock=lock,
    )
    return spec, sources


def picked_aim(item) -> tuple[AimSpec, list[Source]]:
    """The aim and sources of an aim picked by hand (:class:`~.properties.LOOPRIG_PG_aim`)."""
    name = _track_name(item.target)
    up = None if item.up == "NONE" else axis_vector(item.up)
    spec = AimSpec(
        frame=item.frame,
        axis=axis_vector(item.axis),
        track=name,
        up=up,
        up_track=name if up is not None and item.use_target_z else None,
        weight=float(item.weight),
    )
    return spec, [Source(name, item.target.name)]


def read_aims(settings, valid: list[str], robot_objects: set[str]):
    """Every aim of the scene: (aims (AimSpec), sources to sample, indices of the target rows
    whose orientation the aims replace). Raises
    :class:`~.operators_robot.RobotError` naming the aim at fault."""
    aims, sources, aimed_rows = [], [], set()
    for i, row in enumerate(settings.targets):
        constraint = aim_constraint(row) if row.enabled and row.frame in valid else None
        if constraint is None:
            continue
        label = f"target {i + 1} ({row.frame}): {_LABELS[constraint.type]} {constraint.name!r}"
        if constraint.target.name in robot_objects:
            raise RobotError(f"{label}: its target {constraint.target.name!r} is part of the robot")
        try:
            spec, more = constraint_aim(row, constraint)
        except ValueError as error:
            raise RobotError(f"{label}: {error}") from None
        aims.append(spec)
        sources += more
        aimed_rows.add(i)
    for i, item in enumerate(settings.aims):
        if not item.enabled:
            continue
        label = f"aim {i + 1}" + (f" ({item.frame})" if item.frame else "")
        looks_at = "the object it looks at (an Empty you key)"
        checked_row(label, item, valid, robot_objects, "that looks", looks_at)
        try:
            spec, more = picked_aim(item)
        except ValueError as error:
            raise RobotError(f"{label}: {error}") from None
        aims.append(spec)
        sources += more
    return aims, sources, aimed_rows


# --------------------------------------------------------------------------- UI
class LOOPRIG_UL_aims(bpy.types.UIList):
    def draw_item(self, context, layout, data, item, icon, active_data, active_propname, index=0):
        row = layout.row(align=True)
        row.prop(item, "enabled", text="")
        target = item.target.name if item.target else "(no object)"
        axis = dict((i, label) for i, label, _ in AIM_AXES)[item.axis]
        row.label(text=f"{item.frame or '(no frame)'} {axis}  →  {target}", icon="CON_TRACKTO")


LOOPRIG_OT_aim_add, LOOPRIG_OT_aim_remove = row_operators(
    "aims",
    "active_aim",
    "aim",
    "Add an aim: a robot frame looks at an object; the selected object outside the robot (an "
    "Empty) becomes what it looks at, the selected robot object its frame",
)


def constraint_lines(settings) -> list[str]:
    """One line per target row that a tracking constraint aims (what the panel shows)."""
    lines = []
    for i, row in enumerate(settings.targets):
        c = aim_constraint(row) if row.enabled else None
        if c is None:
            continue
        looked = _track_name(c.target, c.subtarget if c.target.type == "ARMATURE" else "")
        axis = c.track_axis.replace("TRACK_NEGATIVE_", "-").replace("TRACK_", "")
        extra = ""
        if c.type == "TRACK_TO":
            extra = f", up {c.up_axis[3:]}" + (" (target Z)" if c.use_target_z else "")
        elif c.type == "LOCKED_TRACK":
            extra = f", about {c.lock_axis[5:]}"
        lines.append(f"target {i + 1} {row.frame or '?'}: {_LABELS[c.type]} {axis} → {looked}{extra}")
    return lines


class LOOPRIG_PT_aims(SidebarPanel, bpy.types.Panel):
    bl_label = "Aims"
    bl_parent_id = "LOOPRIG_PT_targets"

    @draws_scene_settings
    def draw(self, context, layout, settings):
        lines = constraint_lines(settings)
        if lines:
            box = layout.box()
            box.label(text="From tracking constraints (the row's orientation is the aim's):")
            for line in lines:
                box.label(text=line, icon="CONSTRAINT")
        item = draw_rows(layout, settings, "aims", "active_aim", "aim", 2)
        if item is not None:
            col = layout.column()
            col.prop(item, "frame")
            col.prop(item, "target")
            col.prop(item, "axis")
            col.prop(item, "up")
            if item.up != "NONE":
                col.prop(item, "use_target_z")
            col.prop(item, "weight")


classes = (LOOPRIG_UL_aims, LOOPRIG_OT_aim_add, LOOPRIG_OT_aim_remove, LOOPRIG_PT_aims)


register, unregister = bpy.utils.register_classes_factory(classes)
