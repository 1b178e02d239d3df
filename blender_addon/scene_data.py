"""Plain reads of scene data shared by the robot reader, the armature reader and the writers.

Keys of the ID properties looprig stores on objects, the scene's unit scale,
matrices in metres, a joint's actuator settings as a core
:class:`~looprig.core.model.parts.Actuator`, and an evaluated mesh as arrays.
Nothing here imports another module of the add-on.
"""

from __future__ import annotations

import math

import numpy as np
from looprig.core.model.parts import ActuatedMotion, Actuator
from mathutils import Matrix

#: ID property with the float64 values a file import wrote on an object.
EXACT_KEY = "looprig_exact"
#: ID property listing a body's mesh files (path, T_object_mesh, role, rgba) from an import.
MESHES_KEY = "looprig_meshes"
#: ID property marking a placeholder mesh (a body without geometry in its file).
PLACEHOLDER_KEY = "looprig_placeholder"
#: ID property with the name a file gave an object's body, joint or frame, the object name it
#: got (Blender renames clashes and cuts names at 63 bytes) and its position in the file.
NAME_KEY = "looprig_name"


def unit_scale(scene) -> float:
    """Metres per Blender unit."""
    s = float(scene.unit_settings.scale_length)
    return s if s > 0 else 1.0


def to_metres(T, s: float) -> np.ndarray:
    """(4, 4) matrix in Blender units -> metres (linear block and translation scaled)."""
    out = np.array(T, dtype=float)
    out[:3, :] *= s
    return out


def object_world_matrix(T_world_object_m: np.ndarray, s: float) -> Matrix:
    """A metre-valued world matrix back in Blender units, as a mathutils Matrix."""
    T = np.array(T_world_object_m, dtype=float)
    T[:3, :] /= s
    return Matrix(T.tolist())


def idprop_to_python(value):
    """ID property values (groups, arrays) as plain dicts, lists and numbers."""
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if hasattr(value, "to_list"):
        return value.to_list()
    return value


def robot_name(ob) -> tuple[str, int]:
    """The body, joint or frame name of an object and its order in the robot.

    The name a file import gave it while the object keeps the name it got then; else
    the object's name (sorted after the imported ones).
    """
    named = ob.get(NAME_KEY)
    if named is not None and named.get("object") == ob.name:
        return str(named["name"]), int(named.get("index", 0))
    return ob.name, 1 << 30


def _hardware_id(text: str):
    text = text.strip()
    if not text:
        return None
    return int(text) if text.lstrip("-").isdecimal() else text


def _limit(value: float) -> float:
    return float(value) if value > 0 else math.inf


def panel_actuator(settings, kind: str | None) -> Actuator | None:
    """The motor a joint's ``looprig_joint`` settings describe (None when not actuated): SI
    units, a limit the panel leaves at 0 (or a range it does not use) infinite; a revolute
    joint drives its angle, a prismatic one its displacement, whatever the settings say."""
    if not settings.actuated:
        return None
    motion = settings.motion
    if kind == "prismatic":
        motion = "displacement"
    elif kind == "revolute":
        motion = "angle"
    lower, upper = -math.inf, math.inf
    if settings.use_range:
        if motion == "angle":
            lower, upper = settings.lower_angle, settings.upper_angle
        else:
            lower, upper = settings.lower_length, settings.upper_length
    return Actuator(
        motion=ActuatedMotion(motion),
        lower=float(lower),
        upper=float(upper),
        velocity_limit=_limit(settings.velocity_limit),
        acceleration_limit=_limit(settings.acceleration_limit),
        hardware_id=_hardware_id(settings.hardware_id),
        zero_offset_ticks=int(settings.zero_offset_ticks),
        direction=int(settings.direction),
        metres_per_revolution=settings.metres_per_revolution or None,
        name=settings.actuator_name or None,
    )


def mesh_arrays(ob, depsgraph) -> tuple[np.ndarray, np.ndarray]:
    """(V, 3) vertices in object coordinates [Blender units] and (T, 3) triangles of the
    evaluated mesh (modifiers applied)."""
    evaluated = ob.evaluated_get(depsgraph)
    mesh = evaluated.to_mesh()
    try:
        mesh.calc_loop_triangles()
        vertices = np.empty(len(mesh.vertices) * 3, dtype=np.float64)
        mesh.vertices.foreach_get("co", vertices)
        triangles = np.empty(len(mesh.loop_triangles) * 3, dtype=np.int64)
        mesh.loop_triangles.foreach_get("vertices", triangles)
    finally:
        evaluated.to_mesh_clear()
    return vertices.reshape(-1, 3), triangles.reshape(-1, 3)
