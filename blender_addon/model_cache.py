"""The robot model of a collection, built once and rebuilt only when what it was built from changes.

Reading a robot (:func:`.scene_graph.read_model`) evaluates its rest pose, measures every
mesh and analyses the mechanism: seconds on a robot with millions of vertices. Every
operator needs the model, so it is kept per collection with a **fingerprint** of
everything the reader looks at: the scene's unit scale; per object of the robot (and
their parents, and meshes carried by its bones) its name, type, parenting, local
transform channels as the rest pose sets them (:func:`.rest.rest_channels`), the
custom properties a file import kept, looprig body and joint settings, rigid body and rigid body constraint
settings, constraints and modifiers, its display colour (before looprig's tint) and the
digest of its mesh; per armature its bones
(rest matrices, connection, parent) and pose bones (channels, locks, constraints,
looprig settings). A change to any of them builds the model again; anything else
(the frame, the tint colours, the selection) reuses it.
"""

from __future__ import annotations

import hashlib
import json

from .mesh_mass import mesh_digest, object_mesh
from .rest import rest_channels
from .robot_records import RobotModel
from .scene_data import EXACT_KEY, MESHES_KEY, NAME_KEY, idprop_to_python, unit_scale
from .scene_graph import body_color, read_model

#: Property identifiers that say how something is shown or picked, never what it is.
_UI_PROPERTIES = {
    "rna_type",
    "select",
    "select_head",
    "select_tail",
    "hide",
    "hide_select",
    "is_active",
    "active",
    "show_expanded",
    "is_override_data_editable",
}

#: Custom properties of an object that the reader uses.
READ_KEYS = (EXACT_KEY, MESHES_KEY, NAME_KEY)

_models: dict[int, tuple[str, RobotModel]] = {}


def _plain(value):
    """An RNA value as something ``repr`` writes deterministically (IDs by name)."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if hasattr(value, "bl_rna") and hasattr(value, "name") and hasattr(value, "users"):
        return ("ID", value.name)
    if hasattr(value, "__len__"):
        return tuple(_plain(v) for v in value)
    return type(value).__name__


def rna_values(struct) -> tuple:
    """Every plain property of an RNA struct (a property group, a constraint, a modifier), as
    (identifier, value) pairs; collections and UI state are left out."""
    if struct is None:
        return ()
    out = []
    for prop in struct.bl_rna.properties:
        key = prop.identifier
        if key in _UI_PROPERTIES or prop.type == "COLLECTION":
            continue
        value = getattr(struct, key, None)
        if prop.type == "POINTER" and not hasattr(value, "users"):
            continue  # nested structs (e.g. a constraint's space object) are read by what they point at
        out.append((key, _plain(value)))
    return tuple(out)


def _canonical(value) -> str:
    """ID property values (nested groups and arrays too) as sorted JSON."""
    return json.dumps(value, sort_keys=True, default=idprop_to_python)


def _read_properties(ob) -> tuple:
    """The custom properties the reader uses (what a file import kept)."""
    return tuple((key, _canonical(idprop_to_python(ob[key]))) for key in READ_KEYS if key in ob.keys())


def _object_part(ob, depsgraph) -> tuple:
    part = [
        ob.name,
        ob.type,
        ob.parent.name if ob.parent else None,
        ob.parent_type,
        ob.parent_bone,
        _plain(ob.matrix_parent_inverse),
        _canonical(rest_channels(ob)),  # with the pose bones' channels
        _read_properties(ob),
        rna_values(ob.looprig_body),
        rna_values(ob.looprig_joint),
        rna_values(ob.rigid_body),
        rna_values(ob.rigid_body_constraint),
        tuple(rna_values(c) for c in ob.constraints),
        tuple(rna_values(m) for m in ob.modifiers),
    ]
    if ob.type in ("MESH", "EMPTY"):
        part.append(body_color(ob))
    if ob.type == "MESH":
        with object_mesh(ob, depsgraph) as mesh:
            part.append(mesh_digest(mesh))
    if ob.type == "ARMATURE":
        part.append(tuple(_bone_part(pb) for pb in ob.pose.bones))
    return tuple(part)


def _bone_part(pb) -> tuple:
    bone = pb.bone
    return (
        pb.name,
        bone.parent.name if bone.parent else None,
        bone.use_connect,
        _plain(bone.matrix_local),
        _plain(bone.tail_local),
        tuple(pb.lock_location),
        tuple(pb.lock_rotation),
        (pb.lock_ik_x, pb.lock_ik_y, pb.lock_ik_z),
        rna_values(pb.looprig_body),
        rna_values(pb.looprig_joint),
        # the influence is a channel (looprig keys the IK closures' to 0), read with the rest
        tuple(tuple(v for v in rna_values(c) if v[0] != "influence") for c in pb.constraints),
    )


def robot_objects_read(collection) -> list:
    """Every object the robot reader may look at: the collection's, their parents, the meshes
    carried by its armatures' bones; sorted by name."""
    found = {ob.name: ob for ob in collection.all_objects}
    for ob in list(found.values()):
        parent = ob.parent
        while parent is not None and parent.name not in found:
            found[parent.name] = parent
            parent = parent.parent
        if ob.type == "ARMATURE":
            for child in ob.children:
                if child.parent_type == "BONE":
                    found.setdefault(child.name, child)
    return [found[name] for name in sorted(found)]


def fingerprint(context, collection) -> str:
    """Digest of everything :func:`.scene_graph.read_model` reads for ``collection``."""
    depsgraph = context.evaluated_depsgraph_get()
    digest = hashlib.sha1(repr((collection.name, unit_scale(context.scene))).encode())
    for ob in robot_objects_read(collection):
        digest.update(repr(_object_part(ob, depsgraph)).encode())
    return digest.hexdigest()


def robot_model(context, collection) -> RobotModel:
    """The checked model of the robot in ``collection``: the cached one while its fingerprint
    holds, else read again (and cached)."""
    key = collection.session_uid
    stamp = fingerprint(context, collection)
    cached = _models.get(key)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    model = read_model(context, collection)
    _models[key] = (stamp, model)
    return model
