"""Feedback on the motors themselves: a tint per kind of violation, and a marker drawn in front.

For every actuator the bake writes one hidden 0/1 curve per kind of limit
(``["<actuator> over <kind>"]`` on the robot's root, kinds: range, velocity,
acceleration). The actuator's **motor object** gets a driver on its object colour
that shows the colour of the kind broken at the current frame (:data:`TINTS`; velocity
over acceleration over range when several are), and its own colour otherwise. Drivers
are simple expressions, so they play back without looprig and without Python scripts.

A motor hidden inside other geometry (its bounding box inside another robot mesh's,
e.g. the horns inside Reachy Mini's shell) also gets a **marker**: a small mesh at its
centre, parented to it, drawn in front of everything, tinted by the same driver.
"""

from __future__ import annotations

import bpy
import numpy as np
from mathutils import Matrix, Vector

#: Kinds of limits, the bake's curve suffix and tint per kind (RGB), legend icon per kind.
KINDS = ("position", "velocity", "acceleration")
KIND_LABELS = {"position": "range", "velocity": "velocity", "acceleration": "acceleration"}
TINTS = {"velocity": (1.0, 0.05, 0.05), "acceleration": (1.0, 0.5, 0.0), "position": (0.3, 0.25, 1.0)}
LEGEND_ICONS = {
    "velocity": "COLORSET_01_VEC",
    "acceleration": "COLORSET_02_VEC",
    "position": "COLORSET_06_VEC",
}
#: The tint shown when several kinds are broken at once: the first of these.
PRIORITY = ("velocity", "acceleration", "position")
#: Object property with the colour an object had before looprig tinted it.
COLOR_KEY = "looprig_color"
#: Property on marker objects: the name of the motor object they mark.
MARKER_KEY = "looprig_marker_of"
MARKER_COLLECTION = "looprig markers"


def property_path(key: str) -> str:
    """Data path of the custom property ``key`` (any name: quotes and backslashes escaped)."""
    return f'["{bpy.utils.escape_identifier(key)}"]'


def over_key(actuator: str, kind: str) -> str:
    """Custom property of the 0/1 curve "``actuator`` breaks its ``kind`` limit" on the root."""
    return f"{actuator} over {KIND_LABELS[kind]}"


def over_path(actuator: str, kind: str) -> str:
    """Data path of :func:`over_key`."""
    return property_path(over_key(actuator, kind))


def motor_object(context, model, actuator: str):
    """The object tinted for the actuator named ``actuator`` (its motor name, as the curves
    carry it, or its joint's name): its joint's *Motor Object* (on the constraint object or
    the pose bone), else the driven body's object (for a bone: the first mesh carried by the
    driven bone, else the armature)."""
    joint_name = model.mechanism.actuated_joint(actuator).name
    joint = next(j for j in model.record.joints if j.name == joint_name)
    source = context.scene.objects.get(joint.object_name)
    if source is None:
        return None
    if joint.bone_name:
        pb = source.pose.bones.get(joint.bone_name)
        if pb is not None and pb.looprig_joint.motor_object is not None:
            return pb.looprig_joint.motor_object
        carried = [
            c
            for c in sorted(source.children, key=lambda c: c.name)
            if c.type == "MESH" and c.parent_type == "BONE" and c.parent_bone == joint.bone_name
        ]
        return carried[0] if carried else source
    if source.looprig_joint.motor_object is not None:
        return source.looprig_joint.motor_object
    child = next((b for b in model.record.bodies if b.name == joint.child), None)
    return None if child is None else context.scene.objects.get(child.object_name)


def tint(ob, root, actuator: str) -> None:
    """Drive ``ob.color`` by the actuator's violation curves on ``root`` (adds to the drivers
    of other actuators tinting the same object)."""
    if COLOR_KEY not in ob.keys():
        ob[COLOR_KEY] = list(ob.color)
    base = list(ob[COLOR_KEY])
    ad = ob.animation_data or ob.animation_data_create()
    existing = {(fc.data_path, fc.array_index): fc for fc in ad.drivers}
    for i in range(3):
        fc = existing.get(("color", i)) or ob.driver_add("color", i)
        driver = fc.driver
        driver.type = "SCRIPTED"
        count = len(driver.variables) // len(KINDS)
        for kind in KINDS:
            var = driver.variables.new()
            var.name = f"{kind[0]}{count}"
            var.type = "SINGLE_PROP"
            var.targets[0].id_type = "OBJECT"
            var.targets[0].id = root
            var.targets[0].data_path = over_path(actuator, kind)
        expression = f"{base[i]:.4f}"
        for kind in reversed(PRIORITY):
            over = ", ".join(f"{kind[0]}{k}" for k in range(count + 1))
            expression = f"{TINTS[kind][i]:.4f} if max({over}, 0) else ({expression})"
        driver.expression = expression


def untint(ob) -> None:
    """Remove looprig's colour drivers from ``ob`` and give it its colour back."""
    if COLOR_KEY not in ob.keys():
        return
    ad = ob.animation_data
    if ad is not None:
        for fc in list(ad.drivers):
            if fc.data_path == "color":
                ad.drivers.remove(fc)
    ob.color = list(ob[COLOR_KEY])
    del ob[COLOR_KEY]


def world_box(ob) -> tuple[np.ndarray, np.ndarray]:
    """World-axis-aligned bounds (lower (3,), upper (3,)) of an object's bounding box."""
    corners = np.array([ob.matrix_world @ Vector(c) for c in ob.bound_box])
    return corners.min(axis=0), corners.max(axis=0)


def is_hidden(motor, others) -> bool:
    """True when the motor's world bounding box lies inside another mesh object's."""
    if motor.type != "MESH":
        return False
    lower, upper = world_box(motor)
    for ob in others:
        if ob is motor or ob.type != "MESH" or ob.hide_get():
            continue
        other_lower, other_upper = world_box(ob)
        if np.all(other_lower <= lower) and np.all(upper <= other_upper):
            return True
    return False


def _marker_collection(context):
    collection = bpy.data.collections.get(MARKER_COLLECTION)
    if collection is None:
        collection = bpy.data.collections.new(MARKER_COLLECTION)
    if collection.name not in context.scene.collection.children:
        context.scene.collection.children.link(collection)
    return collection


def _octahedron(name: str, radius: float):
    r = radius
    vertices = [(r, 0, 0), (-r, 0, 0), (0, r, 0), (0, -r, 0), (0, 0, r), (0, 0, -r)]
    faces = [(0, 2, 4), (2, 1, 4), (1, 3, 4), (3, 0, 4), (2, 0, 5), (1, 2, 5), (3, 1, 5), (0, 3, 5)]
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(vertices, [], faces)
    return mesh


def add_marker(context, motor):
    """A small octahedron at the motor's bounding-box centre, parented to it, drawn in front
    of all geometry, not rendered; returns it (the caller tints it)."""
    name = f"looprig marker {motor.name}"
    old = bpy.data.objects.get(name)
    if old is not None:
        bpy.data.objects.remove(old)
    centre = sum((Vector(c) for c in motor.bound_box), Vector()) / 8.0
    lower, upper = world_box(motor)
    radius = max(0.25 * float(np.linalg.norm(upper - lower)), 1e-3)
    marker = bpy.data.objects.new(name, _octahedron(name, radius))
    _marker_collection(context).objects.link(marker)
    marker.parent = motor
    marker.matrix_parent_inverse = Matrix.Identity(4)
    scale = motor.matrix_world.to_scale()
    marker.location = centre
    marker.scale = [1.0 / s if abs(s) > 1e-12 else 1.0 for s in scale]
    marker.show_in_front = True
    marker.hide_render = True
    marker.hide_select = True
    marker.color = (0.6, 0.6, 0.6, 1.0)
    marker.looprig_body.ignore = True
    marker[MARKER_KEY] = motor.name
    return marker


def remove_marker(name: str) -> None:
    ob = bpy.data.objects.get(name)
    if ob is not None and MARKER_KEY in ob.keys():
        mesh = ob.data
        bpy.data.objects.remove(ob)
        if mesh is not None and mesh.users == 0:
            bpy.data.meshes.remove(mesh)
