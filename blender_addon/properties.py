"""Everything the add-on stores, under namespaced pointers.

* ``Scene.looprig`` (:class:`LOOPRIG_PG_scene`): the robot collection, the
  retarget targets, the aims picked by hand and the settings, the last check report, bake summary and
  per-frame status of each robot's last retarget.
* ``Object.looprig_joint`` / ``PoseBone.looprig_joint`` (:class:`LOOPRIG_PG_joint`):
  actuator settings of a Rigid Body Constraint object (or a bone).
* ``Object.looprig_body`` / ``PoseBone.looprig_body`` (:class:`LOOPRIG_PG_body`):
  body settings (grounded, mass source).

Values are in SI units (m, rad, kg, s). Velocity and acceleration limits of
0 mean "no limit".
"""

import bpy
from bpy.props import (
    BoolProperty,
    CollectionProperty,
    EnumProperty,
    FloatProperty,
    FloatVectorProperty,
    IntProperty,
    PointerProperty,
    StringProperty,
)
from looprig.core.model.parts import ActuatedMotion
from looprig.core.retarget.settings import RETARGET_SETTINGS

from .scene_graph import robot_frame_names

# --------------------------------------------------------------------------- searches


def _robot_frame_names(self, context, edit_text):
    """Body and frame names of the scene's robot, for the target search field."""
    settings = context.scene.looprig
    names = robot_frame_names(settings.robot) if settings.robot else []
    return [n for n in names if edit_text.lower() in n.lower()]


def _target_bone_names(self, context, edit_text):
    ob = self.target
    if ob is None or ob.type != "ARMATURE":
        return []
    return [b.name for b in ob.data.bones if edit_text.lower() in b.name.lower()]


# --------------------------------------------------------------------------- per object


#: The coordinates a motor can drive (core's :class:`ActuatedMotion`) and their tooltips.
_MOTION_TOOLTIPS = {
    ActuatedMotion.ANGLE: "Rotation about the joint axis [rad]",
    ActuatedMotion.DISPLACEMENT: "Translation along the joint axis [m]",
}


def _motor_limit(label: str, quantity: str, units: str):
    """The setting of a motor's largest ``quantity`` in ``units``; 0 for no limit."""
    return FloatProperty(
        name=f"{label} Limit",
        description=f"Largest {quantity} of the motor [{units}]; 0 for none",
        min=0.0,
        default=0.0,
        precision=4,
    )


class LOOPRIG_PG_joint(bpy.types.PropertyGroup):
    """Actuator settings of a joint (a Rigid Body Constraint object or a bone)."""

    actuated: BoolProperty(
        name="Actuated", description="A motor drives this joint: looprig bakes a curve for it"
    )
    actuator_name: StringProperty(
        name="Motor Name",
        description="The motor's name as the robot names it (a file's actuator name); curves, "
        "exports and the bake carry it. Empty: the joint's name",
    )
    motion: EnumProperty(
        name="Motion",
        description="The joint coordinate the motor drives (cylindrical joints offer both)",
        items=[(motion.value, motion.value.title(), tip) for motion, tip in _MOTION_TOOLTIPS.items()],
        default=ActuatedMotion.ANGLE.value,
    )
    use_range: BoolProperty(name="Limit Range", description="The motor has a position range")
    lower_angle: FloatProperty(name="Min", subtype="ANGLE", default=-3.14159265, description="[rad]")
    upper_angle: FloatProperty(name="Max", subtype="ANGLE", default=3.14159265, description="[rad]")
    lower_length: FloatProperty(name="Min", subtype="DISTANCE", default=-0.1, description="[m]")
    upper_length: FloatProperty(name="Max", subtype="DISTANCE", default=0.1, description="[m]")
    velocity_limit: _motor_limit("Velocity", "speed", "rad/s or m/s")
    acceleration_limit: _motor_limit("Acceleration", "acceleration", "rad/s² or m/s²")
    hardware_id: StringProperty(
        name="Hardware ID",
        description="Bus id or channel of the motor (digits are written as an integer)",
    )
    zero_offset_ticks: IntProperty(
        name="Zero Offset",
        description="Servo Goal Position ticks at actuator value 0 (Dynamixel exports)",
        default=2048,
    )
    direction: EnumProperty(
        name="Direction",
        description="Servo direction of a positive actuator value (Dynamixel exports)",
        items=[("1", "Forward", "Counter-clockwise (increasing ticks)"), ("-1", "Reversed", "Clockwise")],
        default="1",
    )
    metres_per_revolution: FloatProperty(
        name="Travel per Turn",
        description="Displacement per servo turn for a linear actuator [m/rev]; 0 if unknown",
        subtype="DISTANCE",
        min=0.0,
        default=0.0,
        precision=5,
    )
    motor_object: PointerProperty(
        name="Motor Object",
        type=bpy.types.Object,
        description="Object tinted red when the motor is too fast (default: the driven body)",
    )


class LOOPRIG_PG_body(bpy.types.PropertyGroup):
    """Body settings of a mesh object (or a bone) of a robot."""

    grounded: BoolProperty(
        name="Grounded", description="Fixed to the world (a Passive rigid body is grounded too)"
    )
    ignore: BoolProperty(
        name="Not a Body", description="Leave this object out of the robot (decoration, helpers)"
    )
    mass_source: EnumProperty(
        name="Mass",
        items=[
            ("AUTO", "Automatic", "Rigid body mass if the object has one, else mesh volume × density"),
            ("DENSITY", "Density", "Mesh volume × density"),
            ("CUSTOM", "Custom", "The mass given here"),
        ],
        default="AUTO",
    )
    density: FloatProperty(name="Density", description="[kg/m³]", min=1e-6, default=1000.0)
    mass: FloatProperty(name="Mass", description="[kg]", min=0.0, default=1.0, precision=5)
    mesh_path: StringProperty(
        name="Mesh File",
        description="Display mesh file this body came from (kept for the native file)",
        subtype="FILE_PATH",
    )


# --------------------------------------------------------------------------- scene


class LOOPRIG_PG_target(bpy.types.PropertyGroup):
    """One retarget target: a robot body or frame follows an animated object or bone."""

    enabled: BoolProperty(name="Enabled", default=True)
    frame: StringProperty(
        name="Robot Frame",
        description="Robot body (mesh object) or named frame (Empty parented to a body)",
        search=_robot_frame_names,
    )
    target: PointerProperty(name="Target", type=bpy.types.Object, description="The animated object")
    bone: StringProperty(name="Bone", description="Bone of an armature target", search=_target_bone_names)
    offset_location: FloatVectorProperty(
        name="Offset", subtype="TRANSLATION", size=3, description="Target point in the target's axes"
    )
    offset_rotation: FloatVectorProperty(
        name="Offset Rotation", subtype="EULER", size=3, description="Target axes relative to the target's"
    )
    position_weight: FloatVectorProperty(name="Position Weight", size=3, min=0.0, default=(1.0, 1.0, 1.0))
    orientation_weight: FloatVectorProperty(
        name="Orientation Weight", size=3, min=0.0, default=(0.0, 0.0, 0.0)
    )


#: Axes of a robot frame an aim can name: (identifier, label, vector in the frame's axes).
AIM_AXES = (
    ("X", "X", (1.0, 0.0, 0.0)),
    ("Y", "Y", (0.0, 1.0, 0.0)),
    ("Z", "Z", (0.0, 0.0, 1.0)),
    ("NEGATIVE_X", "-X", (-1.0, 0.0, 0.0)),
    ("NEGATIVE_Y", "-Y", (0.0, -1.0, 0.0)),
    ("NEGATIVE_Z", "-Z", (0.0, 0.0, -1.0)),
)


class LOOPRIG_PG_aim(bpy.types.PropertyGroup):
    """An aim picked by hand: a robot frame's axis looks at an object (an Empty the animator
    keys), as a Damped Track does, or a Track To with an up axis."""

    enabled: BoolProperty(name="Enabled", default=True)
    frame: StringProperty(
        name="Robot Frame",
        description="Robot body or named frame that looks at the target",
        search=_robot_frame_names,
    )
    target: PointerProperty(
        name="Look At", type=bpy.types.Object, description="The object it looks at (its origin)"
    )
    axis: EnumProperty(
        name="Axis",
        description="The robot frame's axis that points at the target",
        items=[(i, label, f"The frame's {label} axis") for i, label, _ in AIM_AXES],
        default="X",
    )
    up: EnumProperty(
        name="Up",
        description="The frame's axis kept up (as Track To); None: the roll is left to the "
        "minimal-motion metric (as Damped Track)",
        items=[("NONE", "None", "No up axis")]
        + [(i, label, f"The frame's {label} axis") for i, label, _ in AIM_AXES],
        default="NONE",
    )
    use_target_z: BoolProperty(
        name="Target Z", description="Up is the target's Z axis instead of the world's"
    )
    weight: FloatProperty(name="Weight", min=0.0, default=1.0)


class LOOPRIG_PG_problem(bpy.types.PropertyGroup):
    """A line of the robot check: severity, message and the object to click."""

    severity: StringProperty()
    message: StringProperty()
    object_name: StringProperty()
    bone_name: StringProperty()


class LOOPRIG_PG_actuator_summary(bpy.types.PropertyGroup):
    """Per-actuator result of a robot's last bake (persists in the file)."""

    robot: StringProperty(description="The robot collection's name")
    unit: StringProperty()
    minimum: FloatProperty()
    maximum: FloatProperty()
    peak_velocity: FloatProperty()
    velocity_limit: FloatProperty(description="0 = none")
    violation_count: IntProperty()
    first_violation_frame: FloatProperty()
    first_violation_time: FloatProperty(description="[s] from the first baked sample")
    motor_object: StringProperty()
    # violating intervals as flat frame pairs [start0, end0, start1, end1, ...]
    intervals: StringProperty()


class LOOPRIG_PG_violation(bpy.types.PropertyGroup):
    """One interval in which an actuator breaks a limit (``name``: the actuator), from a bake."""

    robot: StringProperty(description="The robot collection's name")
    quantity: StringProperty(description="position, velocity or acceleration")
    frame: FloatProperty(description="Scene frame of the first violating sample")
    end_frame: FloatProperty(description="Scene frame of the last violating sample")
    time: FloatProperty(description="[s] from the first baked sample")
    end_time: FloatProperty(description="[s] from the first baked sample")
    peak: FloatProperty(description="The value beyond the limit the most")
    limit: FloatProperty(description="The limit it breaks")
    unit: StringProperty()


class LOOPRIG_PG_binding(bpy.types.PropertyGroup):
    """A motor limit that keeps a retarget's targets out of reach (``name``: the motor)."""

    limit: StringProperty(description="position (the range), velocity or acceleration")
    samples: IntProperty(description="How many samples it binds on")


class LOOPRIG_PG_stretch(bpy.types.PropertyGroup):
    """Consecutive limited or unreachable samples of a retarget (``name``: its label:
    the binding motors and limits, or the targets out of reach, and the worst miss)."""

    status: StringProperty(description="limited or unreachable")
    frame: FloatProperty(description="Scene frame of the first sample")
    end_frame: FloatProperty(description="Scene frame of the last sample")
    time: FloatProperty(description="[s] from the first retargeted sample")
    end_time: FloatProperty(description="[s] from the first retargeted sample")
    miss: FloatProperty(description="Worst position miss [m]")
    marker: StringProperty(description="The timeline marker looprig added for it")
    marker_frame: IntProperty(description="The frame of that marker")


class LOOPRIG_PG_frame_status(bpy.types.PropertyGroup):
    """Per-frame status of a robot's last retarget: how many samples are exact (targets
    met), limited (a motor limit binds) or unreachable, and where."""

    robot: StringProperty(description="The robot collection's name")
    samples: IntProperty(description="Samples retargeted")
    exact: IntProperty(description="Samples whose targets are met")
    limited: IntProperty(description="Samples whose targets a motor limit keeps the robot from")
    unreachable: IntProperty(description="Samples whose targets lie outside the workspace")
    worst_miss: FloatProperty(description="Largest position miss of a sample [m]")
    worst_frame: FloatProperty(description="Scene frame of that sample")
    worst_time: FloatProperty(description="[s] from the first retargeted sample")
    sample_frames: FloatProperty(description="Scene frames per sample")
    limits: CollectionProperty(type=LOOPRIG_PG_binding)
    stretches: CollectionProperty(type=LOOPRIG_PG_stretch)
    active_stretch: IntProperty()


class LOOPRIG_PG_scene(bpy.types.PropertyGroup):
    """looprig settings of a scene."""

    robot: PointerProperty(
        name="Robot",
        type=bpy.types.Collection,
        description="Collection holding the robot: mesh bodies, Rigid Body Constraints, armature",
    )
    root: PointerProperty(
        name="Root",
        type=bpy.types.Object,
        description="Object carrying the baked actuator curves (default: the grounded body)",
    )
    targets: CollectionProperty(type=LOOPRIG_PG_target)
    active_target: IntProperty(name="Active Target")
    aims: CollectionProperty(type=LOOPRIG_PG_aim)
    active_aim: IntProperty(name="Active Aim")
    use_com: BoolProperty(name="Centre of Mass", description="Add a centre-of-mass target")
    com_target: PointerProperty(name="CoM Target", type=bpy.types.Object)
    com_weight: FloatVectorProperty(name="CoM Weight", size=3, min=0.0, default=(1.0, 1.0, 0.0))
    # retarget settings: generated from core.retarget.settings below (SOLVER_SETTINGS)
    use_scene_range: BoolProperty(name="Scene Range", default=True)
    frame_start: IntProperty(name="Start", default=1)
    frame_end: IntProperty(name="End", default=250)
    rate: FloatProperty(
        name="Rate",
        description="Solve and sampling rate [Hz]; above the scene rate targets are sampled "
        "between frames. 0 = the scene frame rate",
        min=0.0,
        default=0.0,
    )
    bake_after_retarget: BoolProperty(
        name="Bake After Retarget",
        description="Bake the actuator curves right after a retarget",
        default=True,
    )
    tint_motors: BoolProperty(
        name="Tint Motors",
        description="Colour the motors in the viewport at frames where they break a limit "
        "(red: velocity, orange: acceleration, violet: range)",
        default=True,
    )
    show_overlays: BoolProperty(
        name="Graph Overlays", description="Draw velocity-limit bands in the Graph Editor", default=True
    )
    show_status: BoolProperty(
        name="Frame Status",
        description="Shade limited (orange) and unreachable (magenta) frames in the timeline and "
        "animation editors, and draw the asked pose beside the robot's frame on those frames",
        default=True,
    )
    # ----- last check
    check_done: BoolProperty()
    check_ok: BoolProperty()
    check_dof: IntProperty()
    check_grubler: IntProperty()
    check_redundant: IntProperty()
    check_loops: IntProperty()
    check_actuators: IntProperty()
    problems: CollectionProperty(type=LOOPRIG_PG_problem)
    active_problem: IntProperty()
    # ----- last retarget / bake
    status: StringProperty(name="Status")
    actuators: CollectionProperty(type=LOOPRIG_PG_actuator_summary)
    active_actuator: IntProperty()
    violations: CollectionProperty(type=LOOPRIG_PG_violation)
    active_violation: IntProperty()
    frame_status: CollectionProperty(type=LOOPRIG_PG_frame_status)


#: The retarget settings the panel shows, one property each, reflected from
#: core.retarget.settings (``rate`` stays the scene's own: 0 there means the scene frame rate).
SOLVER_SETTINGS = tuple(s for s in RETARGET_SETTINGS if s.name != "rate")


def _setting_property(setting):
    """The Blender property of a :class:`~looprig.core.retarget.settings.Setting`: its name, help,
    unit, default and range; an optional number is 0 when unset ("0: off")."""
    name = setting.name.replace("_", " ").title()
    unit = f" [{setting.unit}]" if setting.unit else ""
    description = f"{setting.help}{unit}" + ("; 0: off" if setting.optional else "")
    if setting.kind is bool:
        return BoolProperty(name=name, description=description, default=setting.default)
    if setting.kind is str:
        items = [(choice, choice.title(), "") for choice in setting.choices]
        return EnumProperty(name=name, description=description, items=items, default=setting.default)
    limits = {"min": setting.minimum if setting.minimum is not None else -1e30}
    if setting.maximum is not None:
        limits["max"] = setting.maximum
    default = 0.0 if setting.default is None else setting.default
    return FloatProperty(name=name, description=description, default=default, precision=6, **limits)


def solver_settings(settings) -> dict:
    """The retarget settings of the scene's looprig properties, as core expects them
    (an optional setting at 0 is unset)."""
    values = {}
    for setting in SOLVER_SETTINGS:
        value = getattr(settings, setting.name)
        values[setting.name] = None if setting.optional and value == 0 else value
    return values


LOOPRIG_PG_scene.__annotations__.update({s.name: _setting_property(s) for s in SOLVER_SETTINGS})


classes = (
    LOOPRIG_PG_joint,
    LOOPRIG_PG_body,
    LOOPRIG_PG_target,
    LOOPRIG_PG_aim,
    LOOPRIG_PG_problem,
    LOOPRIG_PG_actuator_summary,
    LOOPRIG_PG_violation,
    LOOPRIG_PG_binding,
    LOOPRIG_PG_stretch,
    LOOPRIG_PG_frame_status,
    LOOPRIG_PG_scene,
)

#: (owner type, attribute, property group) pointers this module adds.
_POINTERS = (
    (bpy.types.Scene, "looprig", LOOPRIG_PG_scene),
    (bpy.types.Object, "looprig_joint", LOOPRIG_PG_joint),
    (bpy.types.Object, "looprig_body", LOOPRIG_PG_body),
    (bpy.types.PoseBone, "looprig_joint", LOOPRIG_PG_joint),
    (bpy.types.PoseBone, "looprig_body", LOOPRIG_PG_body),
)


_register_classes, _unregister_classes = bpy.utils.register_classes_factory(classes)


def register():
    _register_classes()
    for owner, name, group in _POINTERS:
        setattr(owner, name, PointerProperty(type=group))


def unregister():
    for owner, name, _group in reversed(_POINTERS):
        if hasattr(owner, name):
            delattr(owner, name)
    _unregister_classes()
