"""Robot workflow: check the robot, select a problem's object, import and export robots."""

from __future__ import annotations

import functools

import bpy
from bpy.props import BoolProperty, EnumProperty, StringProperty
from bpy_extras.io_utils import ExportHelper, ImportHelper
from looprig.core.errors import LooprigError

from . import robot_records as rr
from .armature import bone_body_name
from .demo_scene import setup_demo
from .model_cache import robot_model
from .scene_build import ImportFailed, export_robot, import_robot
from .scene_data import robot_name
from .scene_graph import motor_candidates


class RobotError(Exception):
    """A problem with the scene's robot, worded for the animator."""


def reports_errors(*errors: type[Exception]):
    """Decorate an operator's ``execute``: an error of one of the types ``errors`` is reported
    to the animator and cancels the operator."""

    def decorate(execute):
        @functools.wraps(execute)
        def reporting_execute(self, context):
            try:
                return execute(self, context)
            except errors as error:
                self.report({"ERROR"}, str(error))
                return {"CANCELLED"}

        return reporting_execute

    return decorate


def robot_collection(context):
    """The scene's robot collection, or RobotError."""
    collection = context.scene.looprig.robot
    if collection is None:
        raise RobotError("no robot: pick the robot's collection in the looprig panel (Robot)")
    return collection


class RobotCollectionOperator:
    """An undoable operator on the scene's robot collection (a mixin before
    ``bpy.types.Operator``): ``run(context, collection)`` does the work; no robot, or a
    :class:`RobotError` that ``run`` raises, is reported and cancels the operator."""

    bl_options = {"REGISTER", "UNDO"}

    @reports_errors(RobotError)
    def execute(self, context):
        self.run(context, robot_collection(context))
        return {"FINISHED"}


def file_filter(*suffixes: str):
    """The hidden ``filter_glob`` of a file browser operator: the browser lists the files
    ending in one of ``suffixes`` (``".json"``, ...; each once)."""
    return StringProperty(default=";".join(dict.fromkeys(f"*{s}" for s in suffixes)), options={"HIDDEN"})


def store_report(settings, model: rr.RobotModel) -> None:
    """Put a check's problems and mobility into ``scene.looprig`` for the panel."""
    settings.problems.clear()
    order = {rr.ERROR: 0, rr.WARNING: 1, rr.INFO: 2}
    for p in sorted(model.problems, key=lambda p: order.get(p.severity, 3)):
        item = settings.problems.add()
        item.severity, item.message = p.severity, p.message
        item.object_name, item.bone_name = p.object_name, p.bone_name
        item.name = p.describe()[:200]
    settings.check_done = True
    settings.check_ok = model.ok
    m = model.mobility
    settings.check_dof = m.dof if m else 0
    settings.check_grubler = m.grubler if m else 0
    settings.check_redundant = m.redundant_constraints if m else 0
    settings.check_loops = m.loops if m else 0
    settings.check_actuators = m.actuators if m else 0


def checked_model(context, operator=None) -> rr.RobotModel:
    """Check the robot (read again only when it changed, see :mod:`.model_cache`); store the
    report; raise RobotError naming the first error."""
    collection = robot_collection(context)
    model = robot_model(context, collection)
    store_report(context.scene.looprig, model)
    if not model.ok:
        errors = model.errors()
        first = errors[0].describe() if errors else "the robot could not be built"
        more = (
            f" (and {len(errors) - 1} more problem(s), listed in the looprig panel)"
            if len(errors) > 1
            else ""
        )
        raise RobotError(f"robot {collection.name!r}: {first}{more}")
    return model


class LOOPRIG_OT_check_robot(bpy.types.Operator):
    """Check the robot: degrees of freedom, redundant constraints, unconnected bodies, problems"""

    bl_idname = "looprig.check_robot"
    bl_label = "Check Robot"
    bl_options = {"REGISTER"}

    @reports_errors(RobotError)
    def execute(self, context):
        model = checked_model(context)
        m = model.mobility
        self.report(
            {"INFO"},
            f"robot OK: {m.dof} DOF, {m.redundant_constraints} redundant constraint(s), "
            f"{m.actuators} actuator(s), {m.loops} loop(s)",
        )
        for p in model.problems:
            if p.severity == rr.WARNING:
                self.report({"WARNING"}, p.describe())
        return {"FINISHED"}


class LOOPRIG_OT_select_object(bpy.types.Operator):
    """Select this object (and bone) and make it active"""

    bl_idname = "looprig.select_object"
    bl_label = "Select"
    bl_options = {"REGISTER", "UNDO"}

    object_name: StringProperty()
    bone_name: StringProperty()

    def execute(self, context):
        ob = context.scene.objects.get(self.object_name)
        if ob is None:
            self.report({"ERROR"}, f"no object {self.object_name!r} in this scene")
            return {"CANCELLED"}
        for other in context.selected_objects:
            other.select_set(False)
        ob.hide_set(False)
        ob.select_set(True)
        context.view_layer.objects.active = ob
        if self.bone_name and ob.type == "ARMATURE" and self.bone_name in ob.data.bones:
            for bone in ob.data.bones:
                bone.select = False
            ob.data.bones[self.bone_name].select = True
            ob.data.bones.active = ob.data.bones[self.bone_name]
        return {"FINISHED"}


def robot_frame_of(ob) -> str:
    """The robot body or frame name an object of the robot stands for (an armature: its
    active bone's body, else the armature's base); empty for a joint object."""
    if ob.rigid_body_constraint is not None:
        return ""
    if ob.type == "ARMATURE":
        bone = ob.data.bones.active
        return bone_body_name(ob, bone.name) if bone is not None else ob.name
    return robot_name(ob)[0]


def fill_from_selection(context, item, bone: bool = False) -> None:
    """A target or aim row ``item`` from the selection, the active object first: the first
    selected object outside the robot becomes its target (with ``bone``, an armature's
    active bone too), the first robot object its robot frame."""
    robot = context.scene.looprig.robot
    in_robot = set(robot.all_objects) if robot is not None else set()
    active = context.active_object
    selected = [active] if active is not None else []
    selected += [o for o in context.selected_objects if o is not active]
    for ob in selected:
        if ob not in in_robot:
            if item.target is None:
                item.target = ob
                if bone and ob.type == "ARMATURE" and ob.data.bones.active is not None:
                    item.bone = ob.data.bones.active.name
        elif not item.frame:
            item.frame = robot_frame_of(ob)


def checked_row(label: str, item, valid, robot_objects, drives: str, follows: str, part: str = "") -> None:
    """Raise :class:`RobotError` unless a target or aim row names a robot body or frame among
    ``valid`` and an object outside the robot (``robot_objects``): ``drives`` and
    ``follows`` end the messages for a missing frame and object, ``part`` starts the one
    for an object of the robot."""
    if not item.frame:
        raise RobotError(f"{label}: pick the robot body or frame {drives}")
    if item.frame not in valid:
        raise RobotError(f"{label}: no robot body or frame {item.frame!r}; they are: {', '.join(valid)}")
    if item.target is None:
        raise RobotError(f"{label}: pick {follows}")
    if item.target.name in robot_objects:
        raise RobotError(f"{label}: {part}{item.target.name!r} is part of the robot; pick an animated object")


def remove_active(settings, rows: str, active: str) -> None:
    """Remove the active row of the collection ``settings.<rows>`` (its index in
    ``settings.<active>``), the next row becoming active."""
    collection = getattr(settings, rows)
    collection.remove(getattr(settings, active))
    setattr(settings, active, max(0, min(getattr(settings, active), len(collection) - 1)))


def add_row(context, rows: str, active: str, label: str, bone: bool = False) -> None:
    """Add a row to ``scene.looprig.<rows>`` filled from the selection
    (:func:`fill_from_selection`), named ``"<label> <n>"``, and make it the active one."""
    settings = context.scene.looprig
    collection = getattr(settings, rows)
    item = collection.add()
    fill_from_selection(context, item, bone=bone)
    item.name = f"{label} {len(collection)}"
    setattr(settings, active, len(collection) - 1)


def draw_rows(layout, settings, rows: str, active: str, kind: str, height: int):
    """Draw the list of ``settings.<rows>`` (``LOOPRIG_UL_<rows>``, ``height`` rows) with its add
    and remove buttons (``looprig.<kind>_add``, ``looprig.<kind>_remove``); the active row, or
    None when there is none."""
    row = layout.row()
    row.template_list(f"LOOPRIG_UL_{rows}", "", settings, rows, settings, active, rows=height)
    col = row.column(align=True)
    col.operator(f"looprig.{kind}_add", text="", icon="ADD")
    col.operator(f"looprig.{kind}_remove", text="", icon="REMOVE")
    collection = getattr(settings, rows)
    index = getattr(settings, active)
    return collection[index] if 0 <= index < len(collection) else None


def row_operators(rows: str, active: str, kind: str, description: str, bone: bool = False):
    """The add and remove operators (``looprig.<kind>_add``, ``looprig.<kind>_remove``) of the
    rows ``scene.looprig.<rows>`` that :func:`draw_rows` draws: add fills a row from the
    selection (:func:`add_row`; ``description`` is its tooltip), remove removes the active row
    (:func:`remove_active`)."""
    title = kind.capitalize()

    def add(self, context):
        add_row(context, rows, active, kind, bone=bone)
        return {"FINISHED"}

    def can_remove(cls, context):
        return len(getattr(context.scene.looprig, rows)) > 0

    def remove(self, context):
        remove_active(context.scene.looprig, rows, active)
        return {"FINISHED"}

    def operator(action: str, doc: str, **methods):
        return type(
            f"LOOPRIG_OT_{kind}_{action}",
            (bpy.types.Operator,),
            {
                "__doc__": doc,
                "bl_idname": f"looprig.{kind}_{action}",
                "bl_label": f"{action.capitalize()} {title}",
                "bl_options": {"REGISTER", "UNDO"},
                **methods,
            },
        )

    return (
        operator("add", description, execute=add),
        operator("remove", f"Remove the active {kind}", poll=classmethod(can_remove), execute=remove),
    )


LOOPRIG_OT_target_add, LOOPRIG_OT_target_remove = row_operators(
    "targets",
    "active_target",
    "target",
    "Add a retarget target: the selected animated object (and its active bone) becomes the target, "
    "the selected robot object (or active bone of the robot's armature) its robot frame",
    bone=True,
)


class LOOPRIG_OT_import_robot(bpy.types.Operator, ImportHelper):
    """Import a robot (URDF, MJCF or native looprig file) as meshes, constraints and actuators"""

    bl_idname = "looprig.import_robot"
    bl_label = "Import Robot (looprig)"
    bl_options = {"REGISTER", "UNDO", "PRESET"}

    filename_ext = ".urdf"
    filter_glob: file_filter(".urdf", ".xml", ".mjcf", ".json")
    actuated: StringProperty(
        name="Actuated Joints",
        description="Comma-separated joint names to actuate besides those the file declares",
    )
    motors: EnumProperty(
        name="Motors",
        items=[
            (
                "FILE",
                "As the File Says",
                "URDF <transmission>, Gepetto YAML name_mot, MJCF actuators, plus the joints listed below",
            ),
            ("LISTED", "Only Listed", "Only the joints listed below"),
        ],
        default="FILE",
    )
    set_robot: BoolProperty(
        name="Use as Robot", description="Make it the scene's looprig robot", default=True
    )

    def execute(self, context):
        actuated = tuple(n.strip() for n in self.actuated.split(",") if n.strip())
        try:
            collection, notes = import_robot(context, self.filepath, actuated=actuated)
        except (ImportFailed, LooprigError, OSError) as error:
            self.report({"ERROR"}, f"cannot import {self.filepath!r}: {error}")
            return {"CANCELLED"}
        if self.motors == "LISTED":
            for name, owner in motor_candidates(collection):
                owner.looprig_joint.actuated = name in actuated
        for note in notes:
            self.report({"WARNING"}, note)
        if self.set_robot:
            context.scene.looprig.robot = collection
        self.report({"INFO"}, f"imported robot {collection.name!r} from {bpy.path.basename(self.filepath)}")
        if self.set_robot and not bpy.app.background and context.window is not None:
            bpy.ops.looprig.pick_motors("INVOKE_DEFAULT")
        return {"FINISHED"}


def _motor_label(joint: str, owner) -> str:
    """A joint that may carry a motor, as the motor dialog lists it: ``j`` or ``j (motor m)``."""
    motor = owner.looprig_joint.actuator_name
    return f"{joint} (motor {motor})" if motor else joint


class LOOPRIG_OT_pick_motors(RobotCollectionOperator, bpy.types.Operator):
    """Choose the joints that carry a motor (their limits and servo settings stay as set)"""

    bl_idname = "looprig.pick_motors"
    bl_label = "Pick Motors"

    names: StringProperty(
        name="Motors",
        description="Comma-separated joints to actuate, all others not, by joint or motor name (for "
        "scripts; the dialog ticks them one by one)",
    )

    def run(self, context, collection):
        candidates = motor_candidates(collection)
        if self.names:
            wanted = {n.strip() for n in self.names.split(",") if n.strip()}
            named = {name: {name, owner.looprig_joint.actuator_name} - {""} for name, owner in candidates}
            unknown = sorted(wanted - set().union(*named.values()))
            if unknown:
                valid = ", ".join(_motor_label(name, owner) for name, owner in candidates)
                raise RobotError(f"no joint {unknown[0]!r} can carry a motor; they are: {valid}")
            for name, owner in candidates:
                owner.looprig_joint.actuated = bool(named[name] & wanted)
        count = sum(owner.looprig_joint.actuated for _name, owner in candidates)
        self.report({"INFO"}, f"robot {collection.name!r}: {count} motor(s)")

    def invoke(self, context, event):
        if context.scene.looprig.robot is None:
            return self.execute(context)
        return context.window_manager.invoke_props_dialog(self, width=360)

    def draw(self, context):
        layout = self.layout
        candidates = motor_candidates(context.scene.looprig.robot)
        if not candidates:
            layout.label(text="No joint of this robot can carry a motor (HINGE, SLIDER, PISTON, bones)")
        col = layout.column(align=True)
        for name, owner in candidates:
            col.prop(owner.looprig_joint, "actuated", text=_motor_label(name, owner))


class LOOPRIG_OT_export_robot(bpy.types.Operator, ExportHelper):
    """Save the scene's robot as a native looprig mechanism file"""

    bl_idname = "looprig.export_robot"
    bl_label = "Export Robot (looprig)"
    bl_options = {"REGISTER"}

    filename_ext = ".json"
    filter_glob: file_filter(".json")
    write_meshes: BoolProperty(
        name="Write Meshes",
        description="Write the bodies' meshes that came from no file as STL files beside the robot file",
        default=True,
    )

    @reports_errors(RobotError, LooprigError, OSError)
    def execute(self, context):
        model = checked_model(context)
        path = export_robot(context, model, self.filepath, write_meshes=self.write_meshes)
        self.report({"INFO"}, f"saved robot {model.mechanism.name!r} to {path}")
        return {"FINISHED"}


class LOOPRIG_OT_add_demo(bpy.types.Operator):
    """Add the demo: a four-bar built from Rigid Body Constraints and a target keyed on its coupler curve"""

    bl_idname = "looprig.add_demo"
    bl_label = "Add Demo Four-bar"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        collection = setup_demo(context)
        self.report({"INFO"}, f"added robot {collection.name!r} and target 'hand': press Retarget")
        return {"FINISHED"}


def menu_import(self, context):
    self.layout.operator(LOOPRIG_OT_import_robot.bl_idname, text="Robot for looprig (.urdf, .xml, .json)")


def menu_export(self, context):
    self.layout.operator(LOOPRIG_OT_export_robot.bl_idname, text="Robot for looprig (.looprig.json)")


classes = (
    LOOPRIG_OT_check_robot,
    LOOPRIG_OT_select_object,
    LOOPRIG_OT_target_add,
    LOOPRIG_OT_target_remove,
    LOOPRIG_OT_import_robot,
    LOOPRIG_OT_pick_motors,
    LOOPRIG_OT_export_robot,
    LOOPRIG_OT_add_demo,
)


_register_classes, _unregister_classes = bpy.utils.register_classes_factory(classes)


def register():
    _register_classes()
    bpy.types.TOPBAR_MT_file_import.append(menu_import)
    bpy.types.TOPBAR_MT_file_export.append(menu_export)


def unregister():
    bpy.types.TOPBAR_MT_file_export.remove(menu_export)
    bpy.types.TOPBAR_MT_file_import.remove(menu_import)
    _unregister_classes()
