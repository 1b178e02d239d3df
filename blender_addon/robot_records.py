"""A robot read from a scene, as plain records, and the scene's joint vocabulary (no bpy).

The scene readers (:mod:`.scene_graph`, :mod:`.armature`) fill these records;
:func:`.robot_model.build_robot` checks them and builds the
:class:`~looprig.core.model.mechanism.Mechanism`. Conventions: metres, radians,
kilograms, world z up; 4x4 matrices ``T_a_b`` map b coordinates into a
coordinates; quaternions ``(w, x, y, z)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from looprig.core.model.mechanism import Mechanism
from looprig.core.model.parts import Actuator, JointKind

ERROR, WARNING, INFO = "ERROR", "WARNING", "INFO"

#: Rigid Body Constraint types and the joint kind each one is.
CONSTRAINT_KINDS = {
    "FIXED": JointKind.FIXED,
    "POINT": JointKind.SPHERICAL,
    "HINGE": JointKind.REVOLUTE,
    "SLIDER": JointKind.PRISMATIC,
    "PISTON": JointKind.CYLINDRICAL,
}
#: GENERIC constraints: the kind follows from which axes are locked.
GENERIC_TYPES = ("GENERIC", "GENERIC_SPRING")
AXES = "xyz"


@dataclass(frozen=True)
class Problem:
    """One finding of a robot check.

    severity: ``"ERROR"`` (the robot cannot be solved), ``"WARNING"`` or
    ``"INFO"``. object_name: the Blender object to select (may be empty);
    bone_name: the bone within it, for armature rigs.
    """

    severity: str
    message: str
    object_name: str = ""
    bone_name: str = ""

    def describe(self) -> str:
        where = self.object_name + (f":{self.bone_name}" if self.bone_name else "")
        return f"{where}: {self.message}" if where else self.message


@dataclass
class BodyRecord:
    """A body read from the scene.

    name: unique body name (an object name, or ``armature:bone``).
    T_world_object: (4, 4) the object's (or bone's) world matrix [m], may scale.
    mass: [kg] or None when it follows from ``volume_properties`` and ``density``.
    com_world: (3,) centre of mass [m] or None for the object origin.
    inertia_world: (3, 3) about the CoM in world axes [kg m^2], or None.
    mesh: display mesh file of the body, with T_object_mesh (4, 4) mapping file
    coordinates into the object's. mesh_refs: every mesh file of the body
    (``{"path", "T_object_mesh" (16,), "role", "rgba"}``), as a file import found them.
    exact: the float64 values a file import wrote, used while the object is
    where the import put it (Blender stores single precision). color: display
    colour (r, g, b, a) in [0, 1], or None.
    """

    name: str
    object_name: str
    T_world_object: np.ndarray
    mass: float | None
    grounded: bool = False
    com_world: np.ndarray | None = None
    inertia_world: np.ndarray | None = None
    mesh: str | None = None
    T_object_mesh: np.ndarray | None = None
    bone_name: str = ""
    exact: dict | None = None
    mesh_refs: list[dict] = field(default_factory=list)
    color: tuple[float, float, float, float] | None = None
    order: int = 1 << 30


@dataclass
class JointRecord:
    """A joint read from a constraint object (or a bone).

    kind: a :class:`JointKind` value, or None when ``problem`` says why not.
    T_world_joint: (4, 4) the constraint object's world matrix [m]: the anchor
    is its origin, axes its local axes. axis / secondary_axis: world (3,).
    actuator: the motor as the joint's looprig settings give it (SI units, a missing
    limit infinite), None when not actuated; building the robot adds what a file import
    recorded on it (:func:`.robot_model.build_robot`).
    """

    name: str
    object_name: str
    kind: str | None
    parent: str | None
    child: str | None
    T_world_joint: np.ndarray
    axis: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, 1.0]))
    secondary_axis: np.ndarray | None = None
    actuator: Actuator | None = None
    bone_name: str = ""
    problem: str = ""
    exact: dict | None = None
    order: int = 1 << 30

    @property
    def anchor(self) -> np.ndarray:
        return np.asarray(self.T_world_joint, float)[:3, 3]


@dataclass
class FrameRecord:
    """A named frame: an Empty parented to a body (position/orientation world)."""

    name: str
    object_name: str
    body: str
    T_world_frame: np.ndarray
    exact: dict | None = None
    order: int = 1 << 30


@dataclass
class RobotRecord:
    """Everything read from one robot collection."""

    name: str
    bodies: list[BodyRecord] = field(default_factory=list)
    joints: list[JointRecord] = field(default_factory=list)
    frames: list[FrameRecord] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


@dataclass
class RobotModel:
    """The outcome of :func:`build_robot`.

    mechanism: None when an ERROR problem prevents it. meshes: per body name, the
    mesh files as (path, T_body_mesh (4, 4), role, rgba). T_body_object: per body
    name, (4, 4) the object's matrix in body coordinates (scale included), to
    turn solved body poses back into object matrices. mobility: the
    :class:`~looprig.core.model.mobility.MobilityReport` or None.
    """

    record: RobotRecord
    mechanism: Mechanism | None
    problems: list[Problem]
    T_body_object: dict[str, np.ndarray] = field(default_factory=dict)
    mobility: object | None = None
    meshes: dict[str, list[tuple]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.mechanism is not None and not any(p.severity == ERROR for p in self.problems)

    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == ERROR]


def generic_joint_kind(
    linear_locked: tuple[bool, bool, bool], angular_locked: tuple[bool, bool, bool]
) -> tuple[JointKind, int, int | None] | str:
    """Joint kind of a GENERIC constraint from its locked axes (local x, y, z).

    Returns ``(kind, axis, secondary)`` with axis indices into the constraint
    object's local axes, or an error message listing the supported patterns.
    """
    L = [i for i in range(3) if not linear_locked[i]]
    A = [i for i in range(3) if not angular_locked[i]]
    if not L and not A:
        return JointKind.FIXED, 2, None
    if not L and len(A) == 1:
        return JointKind.REVOLUTE, A[0], None
    if not L and len(A) == 2:
        return JointKind.UNIVERSAL, A[0], A[1]
    if not L and len(A) == 3:
        return JointKind.SPHERICAL, 2, None
    if len(L) == 1 and not A:
        return JointKind.PRISMATIC, L[0], None
    if len(L) == 1 and A == L:
        return JointKind.CYLINDRICAL, L[0], None
    if len(L) == 3 and not A:
        return JointKind.PARALLEL, 2, None
    if len(L) == 2 and len(A) == 1 and A[0] not in L:
        return JointKind.PLANAR, A[0], None
    if len(L) == 3 and len(A) == 3:
        return JointKind.FREE, 2, None
    free = ", ".join([f"linear {AXES[i]}" for i in L] + [f"angular {AXES[i]}" for i in A])
    return (
        f"GENERIC constraint with free axes ({free}) is no looprig joint; lock axes "
        "(limits with lower = upper) so that the free ones are: one angular (revolute), "
        "two angular (universal), three angular (spherical), one linear (prismatic), "
        "one linear and the same angular (cylindrical), two linear and the third "
        "angular (planar), three linear (parallel), none (fixed) or all (free)"
    )
