"""Robot -> scene: build bodies, Rigid Body Constraints and actuators; import and export files.

The builders create mesh objects (bodies), Empties carrying Rigid Body
Constraints (joints) and Empties parented to bodies (frames) in a new
collection. Rigid Body Constraints can only be created by Blender's
``rigidbody.constraint_add`` operator (on the active object), so this module
calls it; the robot's bodies get no rigid bodies, so the physics simulation
leaves them alone and keyframes drive them.
"""

from __future__ import annotations

import math
import os
from dataclasses import replace
from pathlib import Path

import bpy
import numpy as np
from looprig.cad_import import MeshRef, load_mesh, load_model, save_mechanism
from looprig.cad_import.native import coupling_to_dict
from looprig.core.maths.rotations import frame_with_axes
from looprig.core.model.filevalues import limit_to_file
from looprig.core.model.mechanism import Mechanism
from mathutils import Matrix

from .materials import apply_colours
from .robot_model import pose_matrix
from .scene_data import (
    EXACT_KEY,
    MESHES_KEY,
    NAME_KEY,
    PLACEHOLDER_KEY,
    mesh_arrays,
    object_world_matrix,
    unit_scale,
)

#: [kg] A body this light without geometry in its file (a massless link, which imports give
#: a token mass) is built as an Empty: nothing to render, still a body of the robot.
MASSLESS = 1e-5


class ImportFailed(Exception):
    """A robot file could not be turned into a scene robot."""


# --------------------------------------------------------------------------- primitives
def new_collection(context, name: str):
    collection = bpy.data.collections.new(name)
    context.scene.collection.children.link(collection)
    return collection


def box_mesh(name: str, size) -> bpy.types.Mesh:
    """A closed box mesh centred on the origin with edge lengths ``size`` (3,)."""
    sx, sy, sz = (0.5 * float(v) for v in size)
    vertices = [(x * sx, y * sy, z * sz) for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]
    faces = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(vertices, [], faces)
    mesh.update()
    return mesh


def triangle_mesh(name: str, vertices: np.ndarray, triangles: np.ndarray, parts=None) -> bpy.types.Mesh:
    """A mesh from (V, 3) vertices and (T, 3) triangles, filled in bulk; ``parts`` (T,): a
    number per triangle kept as its ``material_index`` (see :func:`.materials.apply_colours`)."""
    mesh = bpy.data.meshes.new(name)
    vertices = np.asarray(vertices, dtype=np.float32).reshape(-1, 3)
    triangles = np.asarray(triangles, dtype=np.int32).reshape(-1, 3)
    mesh.vertices.add(len(vertices))
    mesh.vertices.foreach_set("co", vertices.ravel())
    mesh.loops.add(3 * len(triangles))
    mesh.loops.foreach_set("vertex_index", triangles.ravel())
    mesh.polygons.add(len(triangles))
    mesh.polygons.foreach_set("loop_start", np.arange(0, 3 * len(triangles), 3, dtype=np.int32))
    if parts is not None:
        mesh.polygons.foreach_set("material_index", np.asarray(parts, np.int32))
    mesh.update(calc_edges=True)
    mesh.validate()
    return mesh


def bar_object(name: str, start, end, width: float, thickness: float, collection, z_offset: float = 0.0):
    """A box-shaped link from ``start`` to ``end`` (world, Blender units), its origin at the middle."""
    start, end = np.asarray(start, float), np.asarray(end, float)
    length = float(np.linalg.norm(end - start))
    mesh = box_mesh(name, (length + width, width, thickness))
    ob = bpy.data.objects.new(name, mesh)
    angle = math.atan2(end[1] - start[1], end[0] - start[0])
    mid = 0.5 * (start + end) + np.array([0.0, 0.0, z_offset])
    ob.matrix_world = Matrix.Translation(mid.tolist()) @ Matrix.Rotation(angle, 4, "Z")
    collection.objects.link(ob)
    return ob


def constraint_object(
    context, name: str, kind: str, object1, object2, matrix_world, collection, size=0.03, follow=True
):
    """An Empty with a Rigid Body Constraint of ``kind`` joining object1 and object2.

    With ``follow`` the Empty is parented to object1 (keeping its place), so the joint
    moves with the robot when it is animated.
    """
    scene = context.scene
    if scene.rigidbody_world is None:
        bpy.ops.rigidbody.world_add()
    empty = bpy.data.objects.new(name, None)
    empty.empty_display_type = "ARROWS" if kind in ("HINGE", "SLIDER", "PISTON", "GENERIC") else "SPHERE"
    empty.empty_display_size = size
    empty.matrix_world = matrix_world
    collection.objects.link(empty)
    view_layer = context.view_layer
    previous = view_layer.objects.active
    view_layer.objects.active = empty
    try:
        bpy.ops.rigidbody.constraint_add(type=kind)
    finally:
        view_layer.objects.active = previous
    c = empty.rigid_body_constraint
    c.object1, c.object2 = object1, object2
    if follow and object1 is not None:
        empty.parent = object1
        empty.matrix_parent_inverse = object1.matrix_world.inverted()
    return empty


def frame_object(name: str, parent, matrix_world, collection, size=0.02):
    """An Empty parented to ``parent`` (keeping its world matrix): a named robot frame."""
    empty = bpy.data.objects.new(name, None)
    empty.empty_display_type = "PLAIN_AXES"
    empty.empty_display_size = size
    collection.objects.link(empty)
    empty.matrix_world = matrix_world
    empty.parent = parent
    empty.matrix_parent_inverse = parent.matrix_world.inverted()
    return empty


def set_actuator(ob_or_bone, actuator) -> None:
    """Copy a core Actuator (name, limits, hardware id, servo mapping) into looprig_joint settings."""
    js = ob_or_bone.looprig_joint
    js.actuated = True
    js.actuator_name = actuator.name or ""
    js.motion = actuator.motion.value
    finite = math.isfinite(actuator.lower) and math.isfinite(actuator.upper)
    js.use_range = finite
    if finite:
        if js.motion == "angle":
            js.lower_angle, js.upper_angle = actuator.lower, actuator.upper
        else:
            js.lower_length, js.upper_length = actuator.lower, actuator.upper
    js.velocity_limit = actuator.velocity_limit if math.isfinite(actuator.velocity_limit) else 0.0
    js.acceleration_limit = actuator.acceleration_limit if math.isfinite(actuator.acceleration_limit) else 0.0
    js.hardware_id = "" if actuator.hardware_id is None else str(actuator.hardware_id)
    js.zero_offset_ticks, js.direction = actuator.zero_offset_ticks, str(actuator.direction)
    js.metres_per_revolution = actuator.metres_per_revolution or 0.0


# --------------------------------------------------------------------------- mechanism -> scene
def _flat(T) -> list[float]:
    return [float(x) for x in np.asarray(T, float).ravel()]


def build_mechanism(context, mechanism, meshes=None, name: str | None = None):
    """Build a Mechanism in the scene: one mesh object per body, one constraint Empty per
    joint, one Empty per frame; returns the new collection.

    meshes: optional per-body lists of :class:`~looprig.cad_import.MeshRef` (body
    coordinates) to load for display; bodies without one get a small box. The
    float64 values of the mechanism are kept on each object (``looprig_exact``)
    so exporting the untouched robot gives the same file back: with a joint's closure
    gap (``gap`` [m]), the coupling that sets it (``coupling``, as the native file
    writes it, and its place among the couplings, ``coupling_index``) and its motor's
    servo, rotor inertia and limit sources.
    """
    s = unit_scale(context.scene)
    collection = new_collection(context, name or mechanism.name)
    size = _typical_size(mechanism)
    objects = {}
    for index, body in enumerate(mechanism.bodies):
        T_world_body = pose_matrix(body.position, body.orientation)
        mesh, T_object_file, colours = _body_mesh(body, (meshes or {}).get(body.name, []), size, s)
        mesh_is_placeholder = T_object_file is None
        T_object_file = np.eye(4) if T_object_file is None else T_object_file
        ob = bpy.data.objects.new(body.name, mesh)
        collection.objects.link(ob)
        if mesh is None:  # a massless link without geometry: an Empty, nothing to render
            ob.empty_display_type = "PLAIN_AXES"
            ob.empty_display_size = 0.5 * size / s
        elif colours or body.color is not None:
            apply_colours(ob, colours or [body.color])
        if body.color is not None:
            ob.color = body.color
        _name(ob, body.name, index)
        ob.matrix_world = object_world_matrix(T_world_body, s)
        settings = ob.looprig_body
        settings.grounded = body.grounded
        settings.mass_source = "CUSTOM"
        settings.mass = body.mass
        if body.mesh:
            settings.mesh_path = str(body.mesh)
        exact = {
            "matrix_world": _flat(_metres(ob.matrix_world, s)),
            "position": [float(x) for x in body.position],
            "orientation": [float(x) for x in body.orientation],
            "mass": float(body.mass),
            "T_body_object": _flat(np.eye(4)),
            "T_body_mesh": _flat(body.T_body_mesh),
            "T_object_mesh": _flat(T_object_file),
        }
        if body.inertia is not None:
            exact["inertia"] = _flat(body.inertia)
        exact["object_color"] = [float(c) for c in ob.color]
        if body.color is not None:
            exact["color"] = [float(c) for c in body.color]
        ob[EXACT_KEY] = exact
        refs = (meshes or {}).get(body.name, [])
        if refs:
            ob[MESHES_KEY] = [_mesh_ref(r) for r in refs]
        if mesh_is_placeholder:
            ob[PLACEHOLDER_KEY] = True
        objects[body.name] = ob
    couplings = {c.joint: (k, c) for k, c in enumerate(mechanism.couplings)}
    for index, joint in enumerate(mechanism.joints):
        kind, T_world_joint = _constraint_kind(joint)
        empty = constraint_object(
            context,
            joint.name,
            kind,
            objects[joint.parent],
            objects[joint.child],
            object_world_matrix(T_world_joint, s),
            collection,
            size=0.3 * size / s,
        )
        _name(empty, joint.name, index)
        if kind == "GENERIC":
            _lock_generic(empty.rigid_body_constraint, joint)
        exact = {
            "kind": joint.kind.value,
            "matrix_world": _flat(_metres(empty.matrix_world, s)),
            "anchor": [float(x) for x in joint.anchor],
            "axis": [float(x) for x in joint.axis],
        }
        if joint.secondary_axis is not None:
            exact["secondary_axis"] = [float(x) for x in joint.secondary_axis]
        if joint.gap > 0:
            exact["gap"] = float(joint.gap)
        if joint.name in couplings:
            exact["coupling_index"], coupling = couplings[joint.name]
            exact["coupling"] = coupling_to_dict(coupling)
        if joint.actuator is not None:
            set_actuator(empty, joint.actuator)
            a = joint.actuator
            exact["actuator"] = {  # ID properties hold no inf: the file rule
                k: v
                for k, v in (
                    ("lower", limit_to_file(a.lower)),
                    ("upper", limit_to_file(a.upper)),
                    ("velocity_limit", limit_to_file(a.velocity_limit)),
                    ("acceleration_limit", limit_to_file(a.acceleration_limit)),
                )
                if v is not None
            }
            if a.servo is not None:
                exact["actuator"]["servo"] = a.servo
            if a.rotor_inertia > 0:
                exact["actuator"]["rotor_inertia"] = float(a.rotor_inertia)
            if a.limit_sources:
                exact["actuator"]["limit_sources"] = dict(a.limit_sources)
        empty[EXACT_KEY] = exact
    for index, frame in enumerate(mechanism.frames):
        empty = frame_object(
            frame.name,
            objects[frame.body],
            object_world_matrix(pose_matrix(frame.position, frame.orientation), s),
            collection,
            size=0.3 * size / s,
        )
        _name(empty, frame.name, index)
        empty[EXACT_KEY] = {
            "matrix_world": _flat(_metres(empty.matrix_world, s)),
            "position": [float(x) for x in frame.position],
            "orientation": [float(x) for x in frame.orientation],
        }
    return collection


def _name(ob, name: str, index: int) -> None:
    """Remember the file's name (Blender may have renamed the object) and position."""
    ob[NAME_KEY] = {"name": name, "object": ob.name, "index": index}


def _mesh_ref(ref) -> dict:
    item = {"path": str(ref.path), "T_object_mesh": _flat(ref.T_link_mesh), "role": ref.role}
    if ref.rgba is not None:
        item["rgba"] = [float(c) for c in ref.rgba]
    return item


def _metres(matrix, s: float) -> np.ndarray:
    T = np.array(matrix, dtype=float)
    T[:3, :] *= s
    return T


def _typical_size(mechanism) -> float:
    """A length [m] to size placeholder boxes and Empties: the mean joint spacing."""
    points = np.array([j.anchor for j in mechanism.joints] + [b.position for b in mechanism.bodies])
    if len(points) < 2:
        return 0.1
    spread = float(np.median(np.linalg.norm(points - points.mean(axis=0), axis=1)))
    return max(spread * 0.3, 0.01)


def _constraint_kind(joint) -> tuple[str, np.ndarray]:
    """Rigid Body Constraint type and world matrix (local axes placed as Blender expects)."""
    kind = joint.kind.value
    T = np.eye(4)
    T[:3, 3] = joint.anchor
    axis = np.asarray(joint.axis, float)
    if kind in ("prismatic", "cylindrical"):  # SLIDER / PISTON move along local X
        F = frame_with_axes(axis, joint.secondary_axis)  # columns: axis, y, z
        T[:3, :3] = F
        return ("SLIDER" if kind == "prismatic" else "PISTON"), T
    if kind == "universal":  # GENERIC with angular X (axis) and Y (secondary) free
        secondary = np.asarray(joint.secondary_axis, float)
        T[:3, :3] = np.column_stack([axis, secondary, np.cross(axis, secondary)])
        return "GENERIC", T
    F = frame_with_axes(axis, joint.secondary_axis)  # local Z must be the axis
    T[:3, :3] = np.column_stack([F[:, 1], F[:, 2], F[:, 0]])
    blender = {"revolute": "HINGE", "spherical": "POINT", "fixed": "FIXED"}
    return blender.get(kind, "GENERIC"), T


def _lock_generic(c, joint) -> None:
    """Lock the axes of a GENERIC constraint so that it reads back as ``joint.kind``."""
    kind = joint.kind.value
    free_lin = {"planar": "xy", "parallel": "xyz", "free": "xyz"}.get(kind, "")
    free_ang = {"universal": "xy", "planar": "z", "free": "xyz"}.get(kind, "")
    for prefix, free in (("lin", free_lin), ("ang", free_ang)):
        for a in "xyz":
            locked = a not in free
            setattr(c, f"use_limit_{prefix}_{a}", locked)
            if locked:
                setattr(c, f"limit_{prefix}_{a}_lower", 0.0)
                setattr(c, f"limit_{prefix}_{a}_upper", 0.0)


def _body_mesh(body, refs, size: float, s: float):
    """(mesh, T_object_file, part colours) of a body: its visual meshes merged in body
    coordinates, or, without any, a placeholder box (T_object_file None) or, for a
    massless body, no mesh (an Empty)."""
    visual = [r for r in refs if r.role == "visual"] or list(refs)
    if not visual and body.mesh:
        visual = [MeshRef(str(body.mesh), body.T_body_mesh)]
    vertices, triangles, offset, parts, colours = [], [], 0, [], []
    for ref in visual:
        if "://" in ref.path or not os.path.isfile(ref.path):
            continue
        mesh = load_mesh(ref.path)
        v = np.asarray(mesh.vertices, float)
        T = np.asarray(ref.T_link_mesh, float)
        vertices.append((v @ T[:3, :3].T + T[:3, 3]) / s)
        triangles.append(np.asarray(mesh.faces, np.int64) + offset)
        parts.append(np.full(len(mesh.faces), len(colours), np.int32))
        colours.append(ref.rgba)
        offset += len(v)
    if vertices:
        mesh = triangle_mesh(
            body.name, np.concatenate(vertices), np.concatenate(triangles), np.concatenate(parts)
        )
        return mesh, np.asarray(visual[0].T_link_mesh, float), colours
    if body.mass <= MASSLESS:
        return None, None, []
    edge = size / s
    return box_mesh(body.name, (edge, edge, edge)), None, []


# --------------------------------------------------------------------------- files
def import_robot(context, path: str, actuated=()):
    """Import a URDF, MJCF or native file as a scene robot; returns (collection, notes)."""
    path = str(path)
    if not os.path.isfile(path):
        raise ImportFailed("file not found")
    imported = load_model(path, actuated=actuated) if actuated else load_model(path)
    name = Path(path).name.split(".")[0]
    if imported.mechanism.name and imported.mechanism.name != "mechanism":
        name = imported.mechanism.name
    collection = build_mechanism(context, imported.mechanism, imported.meshes, name=name)
    return collection, list(imported.notes)


def write_stl(path: Path, vertices: np.ndarray, triangles: np.ndarray) -> None:
    """Binary STL of a triangle mesh (vertices (V, 3) [m], triangles (T, 3))."""
    tri = np.asarray(vertices, np.float32)[np.asarray(triangles, np.int64)]
    normals = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    lengths = np.linalg.norm(normals, axis=1, keepdims=True)
    normals = np.divide(normals, lengths, out=np.zeros_like(normals), where=lengths > 0)
    record = np.zeros(len(tri), dtype=[("n", "<f4", 3), ("v", "<f4", (3, 3)), ("attr", "<u2")])
    record["n"], record["v"] = normals, tri
    with open(path, "wb") as stream:
        stream.write(b"looprig STL".ljust(80, b" "))
        stream.write(np.uint32(len(tri)).tobytes())
        stream.write(record.tobytes())


def export_robot(context, model, path: str, write_meshes: bool = True) -> Path:
    """Save a checked robot as a native file; bodies whose mesh came from no file get an
    STL (object coordinates, metres) in ``<file>_meshes/`` when ``write_meshes``."""

    path = Path(bpy.path.abspath(path))
    mechanism = model.mechanism
    if write_meshes:
        s = unit_scale(context.scene)
        folder = path.parent / (path.name.split(".")[0] + "_meshes")
        depsgraph = context.evaluated_depsgraph_get()
        bodies = []
        for body in mechanism.bodies:
            record = next(b for b in model.record.bodies if b.name == body.name)
            ob = None if record.bone_name else context.scene.objects[record.object_name]
            if body.mesh is None and ob is not None and PLACEHOLDER_KEY not in ob.keys():
                vertices, triangles = mesh_arrays(ob, depsgraph)
                folder.mkdir(parents=True, exist_ok=True)
                stl = folder / (_safe_name(body.name) + ".stl")
                write_stl(stl, vertices * s, triangles)
                T_object = model.T_body_object[body.name].copy()
                T_object[:3, :3] = T_object[:3, :3] / s  # STL in metres, object coords in BU
                body = replace(body, mesh=str(stl), T_body_mesh=T_object)
            bodies.append(body)
        mechanism = Mechanism(
            bodies, mechanism.joints, mechanism.frames, name=mechanism.name, couplings=mechanism.couplings
        )
    meshes = {
        name: [
            MeshRef(p, np.asarray(T, float), role, None if rgba is None else tuple(rgba))
            for p, T, role, rgba in refs
        ]
        for name, refs in model.meshes.items()
    }
    return save_mechanism(mechanism, path, meshes=meshes or None)


def _safe_name(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
