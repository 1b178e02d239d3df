"""What every importer fills in: a kinematic tree in joint coordinates (links, tree joints,
closures, couplings, named frames, mesh references) and the import settings; transforms are
4x4 homogeneous matrices ``T_a_b`` mapping b coordinates into a coordinates [m, rad].
:func:`~.tree.build_mechanism` turns a :class:`TreeModel` into an :class:`ImportedModel`."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..core.maths.rotations import nearest_rotation
from ..core.model.mechanism import Mechanism
from ..core.model.parts import Coupling, JointKind
from .errors import FileFormatError

#: Joint coordinates each tree joint kind carries (FK and assembly).
COORDINATES = {
    JointKind.FIXED: 0,
    JointKind.REVOLUTE: 1,
    JointKind.PRISMATIC: 1,
    JointKind.SPHERICAL: 3,
    JointKind.PLANAR: 3,
    JointKind.FREE: 6,
}


#: Joint kinds a loop closure may have.
CLOSURE_KINDS = (JointKind.SPHERICAL, JointKind.REVOLUTE, JointKind.FIXED)


@dataclass(frozen=True)
class ImportSettings:
    """Options shared by the importers.

    placeholder_mass: [kg] given to links without mass (dummy frames, the world
    body); bodies must have positive mass, and this keeps them out of the CoM.
    density: [kg/m^3] used to compute mass, CoM and inertia from the meshes of
    a link that has no inertial data. assemble_tolerance: closure residual
    accepted as closed, relative to the mechanism's mean joint distance (so
    [m per m]; a 5 cm four-bar closes to 5e-12 m, a 2 m robot to 2e-10 m).
    assemble_iterations: iteration limit of the assembly (core FK solver).
    gap_tolerance: a residual the loops keep after assembly, relative to the mean
    joint distance, accepted (and reported) when the file's own zero configuration
    has a gap at least as large: a file whose closure sites are written to a few
    digits cannot close to ``assemble_tolerance`` (ToddlerBot's neck, eight digits:
    3.6e-9 m after assembly, 3e-8 m in the file; PlaCo's spherical parallel
    mechanism in MJCF, six significant digits as ``%g`` writes them: 1.0e-7 m, 1.2e-6
    of its size, 2.9e-7 m in the file); a larger gap is an error.
    assemble_starts: how many starts the assembly tries (the file's pose, then
    poses with the tree's joints bent) before declaring the loops open.
    missing_meshes: ``"error"`` (default) or ``"warn"``: what a mesh file that
    does not exist causes. meshes: False reads only the meshes masses depend on
    (links and bodies without inertial data): no mesh references, no mesh
    colours, much faster for meshed MJCF files — for commands that need the
    kinematics only (``looprig info``).
    """

    placeholder_mass: float = 1e-6
    density: float = 1000.0
    assemble_tolerance: float = 1e-10  # relative to the mean joint distance
    assemble_iterations: int = 100
    gap_tolerance: float = 1e-5  # relative to the mean joint distance: six significant digits
    assemble_starts: int = 4
    missing_meshes: str = "error"
    meshes: bool = True


DEFAULT_SETTINGS = ImportSettings()


@dataclass(frozen=True)
class MeshRef:
    """A mesh file shown on (or giving mass to) a link or body.

    path: absolute file path (or a URI that could not be resolved, kept as is).
    T_link_mesh: (4, 4) affine map from mesh-file coordinates to the frame it
    belongs to (link frame in a :class:`TreeModel`, body frame — origin at the
    CoM — in an :class:`ImportedModel`); it includes the mesh scale.
    role: ``"visual"`` or ``"collision"``. rgba: colour (4,) in [0, 1] or None.
    """

    path: str
    T_link_mesh: np.ndarray
    role: str = "visual"
    rgba: tuple[float, float, float, float] | None = None


@dataclass
class LinkSpec:
    """A rigid link of the tree, in its own link frame.

    mass: [kg] or None when the file gives none. com: (3,) [m] link frame.
    inertia: (3, 3) [kg m^2] about the CoM in link axes, or None.
    """

    name: str
    mass: float | None = None
    com: np.ndarray = field(default_factory=lambda: np.zeros(3))
    inertia: np.ndarray | None = None
    meshes: list[MeshRef] = field(default_factory=list)
    element: str = ""
    line: int | None = None
    color: tuple[float, float, float, float] | None = None  # display rgba in [0, 1]


@dataclass
class TreeJointSpec:
    """A tree joint: ``T_world_child = T_world_parent T_parent_joint M(q) T_joint_child``.

    axis: (3,) unit, joint frame (hinge / slide axis, plane normal for planar).
    ``M(q)`` is the joint motion in the joint frame (rotation about / slide
    along ``axis``; rotation vector for spherical; two in-plane slides then a
    turn for planar; translation then rotation vector for free).
    limits: file joint coordinate [rad or m] and velocity [rad/s or m/s];
    reference: the file's joint value at ``q = 0`` (MJCF ``ref``), so the file
    value is ``reference + q``.
    """

    name: str
    kind: JointKind
    parent: str
    child: str
    T_parent_joint: np.ndarray
    T_joint_child: np.ndarray = field(default_factory=lambda: np.eye(4))
    axis: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, 1.0]))
    lower: float = -np.inf
    upper: float = np.inf
    reference: float = 0.0
    velocity: float = np.inf
    acceleration: float = np.inf
    actuated: bool = False
    hardware_id: int | str | None = None
    actuator_name: str | None = None  # the motor's name in the file; None: the joint's
    servo: str | None = None  # the servo model the file names for the motor (looprig tag, MJCF <text>)
    armature: float = 0.0  # [kg m^2 or kg] rotor inertia reflected to the joint (MJCF armature)
    #: (name, what) the catalogue may recognise a servo in when ``servo`` is None, in order:
    #: e.g. ("XC330", "class 'XC330'"), the MJCF default class and the actuator's name
    servo_hints: list[tuple[str, str]] = field(default_factory=list)
    element: str = ""
    line: int | None = None


@dataclass
class ClosureSpec:
    """Loop closure: frame 1 (on link1) and frame 2 (on link2) must coincide.

    kind: spherical (origins coincide), revolute (origins coincide and the
    frames' ``axis`` is shared), fixed (the frames coincide entirely).
    axis: (3,) in frame 1 coordinates, for revolute closures.
    """

    name: str
    kind: JointKind
    link1: str
    T_link1_frame: np.ndarray
    link2: str
    T_link2_frame: np.ndarray
    axis: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, 1.0]))
    element: str = ""
    line: int | None = None


@dataclass(frozen=True, eq=False)
class CouplingSpec(Coupling):
    """A joint coupling in tree coordinates (a :class:`~looprig.core.model.parts.Coupling`)
    and where the file says it (``element``, ``line``).

    q are the tree joints' coordinates (zero at the file's zero configuration,
    MJCF ``qpos0``) [rad or m]; the Mechanism's coupling is re-expressed about the
    assembled pose (:meth:`Coupling.shifted`). URDF ``<mimic>``, MJCF joint
    equalities and tendons.
    """

    element: str = ""
    line: int | None = None

    def coupling(self) -> Coupling:
        """The coupling in tree coordinates."""
        return Coupling(self.name, self.joint, self.sources, self.ratios, self.offset, self.polynomial)

    def linear(self) -> bool:
        """Whether it ties its joint to one source linearly (a gear)."""
        return len(self.sources) == 1 and not any(any(p) for p in self.polynomial)


@dataclass
class FrameSpec:
    """A named frame on a link: ``T_link_frame`` (4, 4)."""

    name: str
    link: str
    T_link_frame: np.ndarray


@dataclass
class TreeModel:
    """What an importer read: links, tree joints, closures, frames.

    roots: links fixed to the world (grounded); their world pose is
    ``T_world_root`` (identity unless given). Links are in any order.
    """

    name: str
    path: str | None
    links: list[LinkSpec]
    joints: list[TreeJointSpec]
    closures: list[ClosureSpec] = field(default_factory=list)
    frames: list[FrameSpec] = field(default_factory=list)
    roots: dict[str, np.ndarray] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    couplings: list[CouplingSpec] = field(default_factory=list)

    def error(self, problem: str, element: str | None = None, line: int | None = None):
        return FileFormatError(self.path, problem, element, line)


@dataclass
class ImportedModel:
    """The result of importing a file.

    mechanism: the validated :class:`Mechanism`, in the assembled initial
    configuration. meshes: per body, every mesh reference (``T_link_mesh`` in
    body coordinates, origin at the CoM); ``Body.mesh`` holds the first visual
    one. joint_offsets: per tree joint with one coordinate, the file's joint
    value at the initial configuration ``q0`` [rad or m] (file value = actuator
    value + q0). closure_residual: largest closure mismatch [m] before assembly.
    notes: what was approximated or left out (also issued as warnings).
    """

    mechanism: Mechanism
    meshes: dict[str, list[MeshRef]]
    joint_offsets: dict[str, float]
    closure_residual: float
    source: str | None
    notes: list[str]


# --------------------------------------------------------------------- transforms
def transform(R: np.ndarray | None = None, p=None) -> np.ndarray:
    """4x4 transform with rotation ``R`` (3, 3) and translation ``p`` (3,)."""
    T = np.eye(4)
    if R is not None:
        T[:3, :3] = R
    if p is not None:
        T[:3, 3] = p
    return T


def invert(T: np.ndarray) -> np.ndarray:
    """Inverse of a rigid 4x4 transform."""
    R, p = T[:3, :3], T[:3, 3]
    return transform(R.T, -R.T @ p)


def rigid_transform(T: np.ndarray) -> np.ndarray:
    """T with its rotation block made orthonormal (round-off removed)."""
    return transform(nearest_rotation(T[:3, :3]), T[:3, 3])
