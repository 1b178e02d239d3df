"""The common description every importer fills in, and how it becomes a Mechanism.

URDF and MJCF describe a kinematic **tree** in joint coordinates (each link's
frame relative to its parent's, moved by the joint value) plus **loop
closures** (two frames, on two links, that must coincide). Importers translate
a file into a :class:`TreeModel`; :func:`build_mechanism` then

1. places every link in the world at the file's zero configuration,
2. **assembles** the loops: when the closure frames do not coincide there (as in
   the Gepetto models), the tree's joint values are moved, by Gauss-Newton with
   minimum-norm steps from the zero configuration, until every closure holds,
3. re-expresses everything in the world coordinates of that assembled pose,
   which becomes the mechanism's initial configuration: body CoM positions and
   link orientations, joint anchors and axes, closure joints, named frames.

Actuator coordinates are zero in the initial configuration (a core
convention), so the file's joint limits are shifted by the assembled joint
value ``q0``: ``lower = lower_file - q0``. The offsets ``q0`` are kept in
:attr:`ImportedModel.joint_offsets` (file value = actuator value + q0).

Transforms are 4x4 homogeneous matrices ``T_a_b`` mapping b coordinates into a
coordinates; lengths in metres, angles in radians.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
from looprig.core.errors import MechanismError
from looprig.core.mechanism import (
    ActuatedMotion,
    Actuator,
    Body,
    Frame,
    Joint,
    JointKind,
    Mechanism,
)
from looprig.core.rotations import (
    complete_frame,
    matrix_from_rotvec,
    quat_from_matrix,
    rotvec_from_quat,
)

from .errors import FileFormatError, FileFormatWarning

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
    a link that has no inertial data. assemble_tolerance: [m] closure residual
    accepted as closed. assemble_iterations: Gauss-Newton iteration limit.
    missing_meshes: ``"error"`` (default) or ``"warn"``: what a mesh file that
    does not exist causes.
    """

    placeholder_mass: float = 1e-6
    density: float = 1000.0
    assemble_tolerance: float = 1e-10
    assemble_iterations: int = 100
    missing_meshes: str = "error"


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


def _axis_rotation(axis: np.ndarray, angle: float) -> np.ndarray:
    return matrix_from_rotvec(np.asarray(axis) * angle)


def joint_motion(joint: TreeJointSpec, q: np.ndarray) -> np.ndarray:
    """``M(q)``: 4x4 motion of a joint in its joint frame for coordinates ``q``."""
    kind = joint.kind
    if kind == JointKind.FIXED:
        return np.eye(4)
    if kind == JointKind.REVOLUTE:
        return transform(_axis_rotation(joint.axis, q[0]))
    if kind == JointKind.PRISMATIC:
        return transform(p=joint.axis * q[0])
    if kind == JointKind.SPHERICAL:
        return transform(matrix_from_rotvec(q[:3]))
    if kind == JointKind.PLANAR:
        F = complete_frame(joint.axis)
        return transform(_axis_rotation(joint.axis, q[2]), F[:, 1] * q[0] + F[:, 2] * q[1])
    if kind == JointKind.FREE:
        return transform(matrix_from_rotvec(q[3:6]), q[:3])
    raise ValueError(f"no tree motion for joint kind {kind}")


# --------------------------------------------------------------------- tree checks
def ordered_tree(model: TreeModel) -> tuple[list[TreeJointSpec], dict[str, int]]:
    """Joints in parent-before-child order and the link index.

    Raises FileFormatError for duplicate names, unknown links, a link with two
    parent joints, cycles, and links not reachable from a root.
    """
    link_index: dict[str, int] = {}
    for i, link in enumerate(model.links):
        if link.name in link_index:
            raise model.error(f"duplicate link name {link.name!r}", link.element, link.line)
        link_index[link.name] = i
    names = set()
    parent_joint: dict[str, TreeJointSpec] = {}
    children: dict[str, list[TreeJointSpec]] = {}
    for joint in model.joints:
        if joint.name in names:
            raise model.error(f"duplicate joint name {joint.name!r}", joint.element, joint.line)
        names.add(joint.name)
        for role in ("parent", "child"):
            name = getattr(joint, role)
            if name not in link_index:
                valid = ", ".join(sorted(link_index)) or "(none)"
                raise model.error(
                    f"{role} link {name!r} does not exist; links are: {valid}", joint.element, joint.line
                )
        if joint.parent == joint.child:
            raise model.error(f"joins link {joint.parent!r} to itself", joint.element, joint.line)
        if joint.child in parent_joint:
            other = parent_joint[joint.child].name
            raise model.error(
                f"link {joint.child!r} has two parent joints ({other!r} and {joint.name!r}); "
                "a tree allows one (write loops as closures)",
                joint.element,
                joint.line,
            )
        if joint.child in model.roots:
            raise model.error(
                f"link {joint.child!r} is a root and cannot be a joint's child", joint.element, joint.line
            )
        parent_joint[joint.child] = joint
        children.setdefault(joint.parent, []).append(joint)
    if not model.roots:
        raise model.error("no root link (every link is some joint's child: the tree has a cycle)")
    order: list[TreeJointSpec] = []
    seen = set(model.roots)
    stack = list(model.roots)
    while stack:
        link = stack.pop()
        for joint in children.get(link, ()):
            if joint.child in seen:  # pragma: no cover - excluded by the one-parent rule
                raise model.error(f"cycle through link {joint.child!r}", joint.element, joint.line)
            seen.add(joint.child)
            order.append(joint)
            stack.append(joint.child)
    unreached = [link.name for link in model.links if link.name not in seen]
    if unreached:
        # walk up from one unreached link to find a cycle for the message
        link, path = unreached[0], []
        while link in parent_joint and link not in path:
            path.append(link)
            link = parent_joint[link].parent
        if link in path:
            cycle = " -> ".join([*path[path.index(link) :], link])
            joint = parent_joint[path[0]]
            raise model.error(f"the joints form a cycle: {cycle}", joint.element, joint.line)
        raise model.error(
            "links not connected to the root: "
            + ", ".join(sorted(unreached)[:20])
            + (" ..." if len(unreached) > 20 else "")
        )
    return order, link_index


# --------------------------------------------------------------------- kinematics
class TreeKinematics:
    """Forward kinematics of a tree model in joint coordinates."""

    def __init__(self, model: TreeModel):
        self.model = model
        self.order, self.link_index = ordered_tree(model)
        self.offsets: dict[str, slice] = {}
        n = 0
        for joint in self.order:
            k = COORDINATES[joint.kind]
            self.offsets[joint.name] = slice(n, n + k)
            n += k
        self.n_coordinates = n

    def link_poses(self, q: np.ndarray) -> dict[str, np.ndarray]:
        """World transforms (4, 4) of every link for coordinates ``q``."""
        poses = {name: np.asarray(T, float) for name, T in self.model.roots.items()}
        for joint in self.order:
            M = joint_motion(joint, q[self.offsets[joint.name]])
            poses[joint.child] = poses[joint.parent] @ joint.T_parent_joint @ M @ joint.T_joint_child
        return poses

    def closure_residual(self, q: np.ndarray, length_scale: float) -> np.ndarray:
        """Stacked closure mismatch [m]: position, plus scaled axis/rotation terms."""
        poses = self.link_poses(q)
        rows = []
        for c in self.model.closures:
            T1 = poses[c.link1] @ c.T_link1_frame
            T2 = poses[c.link2] @ c.T_link2_frame
            rows.append(T1[:3, 3] - T2[:3, 3])
            if c.kind == JointKind.REVOLUTE:
                rows.append(length_scale * np.cross(T1[:3, :3] @ c.axis, T2[:3, :3] @ c.axis))
            elif c.kind == JointKind.FIXED:
                R_rel = T1[:3, :3].T @ T2[:3, :3]
                rows.append(length_scale * rotvec_from_quat(quat_from_matrix(R_rel)))
        return np.concatenate(rows) if rows else np.zeros(0)

    def closure_distance(self, q: np.ndarray) -> float:
        """Largest distance between the origins of paired closure frames [m]."""
        poses = self.link_poses(q)
        distances = [
            np.linalg.norm(
                (poses[c.link1] @ c.T_link1_frame)[:3, 3] - (poses[c.link2] @ c.T_link2_frame)[:3, 3]
            )
            for c in self.model.closures
        ]
        return float(max(distances, default=0.0))


def assemble_tree(kin: TreeKinematics, settings: ImportSettings) -> tuple[np.ndarray, float]:
    """Joint coordinates that close every loop, nearest the zero configuration.

    Gauss-Newton with minimum-norm steps (least squares) and a backtracking
    line search, Jacobian by forward differences. Returns ``(q, residual0)``
    with the largest initial closure mismatch [m]; raises FileFormatError when
    the closures cannot be met.
    """
    model = kin.model
    q = np.zeros(kin.n_coordinates)
    if not model.closures:
        return q, 0.0
    poses = kin.link_poses(q)
    points = np.array([T[:3, 3] for T in poses.values()])
    span = float(np.ptp(points, axis=0).max()) if len(points) > 1 else 1.0
    L = span if span > 1e-9 else 1.0
    r = kin.closure_residual(q, L)
    residual0 = kin.closure_distance(q)
    tol = settings.assemble_tolerance
    cost = 0.5 * r @ r
    h = 1e-7
    for _ in range(settings.assemble_iterations):
        if np.abs(r).max() <= tol:
            return q, residual0
        J = np.empty((len(r), len(q)))
        for k in range(len(q)):
            dq = q.copy()
            dq[k] += h
            J[:, k] = (kin.closure_residual(dq, L) - r) / h
        step = np.linalg.lstsq(J, -r, rcond=1e-10)[0]
        alpha, accepted = 1.0, False
        for _ in range(30):
            trial = q + alpha * step
            r_new = kin.closure_residual(trial, L)
            cost_new = 0.5 * r_new @ r_new
            if cost_new < cost or cost_new <= 0.5 * tol**2:
                accepted = True
                break
            alpha *= 0.5
        if not accepted:
            break
        q, r, cost = trial, r_new, cost_new
    if np.abs(r).max() <= tol:
        return q, residual0
    worst = _worst_closure(model, r)
    raise model.error(
        f"the loop closures cannot all be met: residual {np.abs(r).max():.3g} m after assembly "
        f"(largest at closure {worst.name!r}, {worst.link1!r} <-> {worst.link2!r})",
        worst.element,
        worst.line,
    )


def _worst_closure(model: TreeModel, r: np.ndarray) -> ClosureSpec:
    sizes = [3 + (3 if c.kind != JointKind.SPHERICAL else 0) for c in model.closures]
    bounds = np.cumsum([0, *sizes])
    errors = [np.abs(r[bounds[i] : bounds[i + 1]]).max() for i in range(len(sizes))]
    return model.closures[int(np.argmax(errors))]


# --------------------------------------------------------------------- mechanism
def _quat(T: np.ndarray) -> np.ndarray:
    return quat_from_matrix(T[:3, :3])


def _orthonormal(T: np.ndarray) -> np.ndarray:
    """Nearest rotation to the 3x3 block (removes round-off before quat conversion)."""
    U, _, Vt = np.linalg.svd(T[:3, :3])
    R = U @ Vt
    if np.linalg.det(R) < 0:
        U[:, -1] *= -1
        R = U @ Vt
    out = T.copy()
    out[:3, :3] = R
    return out


def build_mechanism(model: TreeModel, settings: ImportSettings = DEFAULT_SETTINGS) -> ImportedModel:
    """Assemble the loops of ``model`` and build the validated Mechanism.

    Raises FileFormatError (naming the file and element) for tree errors,
    closures that cannot be met and anything the Mechanism rejects.
    """
    kin = TreeKinematics(model)
    for closure in model.closures:
        for link in (closure.link1, closure.link2):
            if link not in kin.link_index:
                valid = ", ".join(sorted(kin.link_index))
                raise model.error(
                    f"closure frame on unknown link {link!r}; links are: {valid}",
                    closure.element,
                    closure.line,
                )
        if closure.kind not in CLOSURE_KINDS:
            raise model.error(
                f"closure kind {closure.kind.value!r} is not one of "
                + ", ".join(k.value for k in CLOSURE_KINDS),
                closure.element,
                closure.line,
            )
    q, residual0 = assemble_tree(kin, settings)
    poses = {name: _orthonormal(T) for name, T in kin.link_poses(q).items()}
    notes = list(model.notes)

    bodies, meshes = [], {}
    massless, no_mass_data = [], []
    for link in model.links:
        T = poses[link.name]
        mass = link.mass
        if mass is None or mass <= 0.0:
            (no_mass_data if mass is None and link.name not in model.roots else massless).append(link.name)
            mass = settings.placeholder_mass
            inertia = None
        else:
            inertia = link.inertia
        T_body_link = transform(p=-np.asarray(link.com, float))  # body origin at the CoM
        body_meshes = [MeshRef(m.path, T_body_link @ m.T_link_mesh, m.role, m.rgba) for m in link.meshes]
        meshes[link.name] = body_meshes
        visual = next((m for m in body_meshes if m.role == "visual"), None)
        bodies.append(
            Body(
                name=link.name,
                position=T[:3, :3] @ link.com + T[:3, 3],
                orientation=_quat(T),
                mass=float(mass),
                inertia=inertia,
                grounded=link.name in model.roots,
                mesh=visual.path if visual else None,
                T_body_mesh=visual.T_link_mesh if visual else np.eye(4),
            )
        )
    info = []
    for names, text, target in (
        (no_mass_data, "link(s) with no mass data (no inertial, no mesh) were given", notes),
        (massless, "massless link(s) were given", info),
    ):
        if names:
            target.append(
                f"{len(names)} {text} {settings.placeholder_mass:g} kg: "
                + ", ".join(names[:10])
                + (" ..." if len(names) > 10 else "")
            )

    joints, offsets = [], {}
    for joint in model.joints:  # file order
        qj = q[kin.offsets[joint.name]]
        T_world_joint = poses[joint.parent] @ joint.T_parent_joint @ joint_motion(joint, qj)
        actuator = None
        if len(qj) == 1:
            offsets[joint.name] = joint.reference + float(qj[0])
        if joint.actuated:
            if joint.kind not in (JointKind.REVOLUTE, JointKind.PRISMATIC):
                raise model.error(
                    f"a {joint.kind.value} joint cannot carry an actuator (only revolute and "
                    "prismatic joints can)",
                    joint.element,
                    joint.line,
                )
            q0 = joint.reference + float(qj[0])
            actuator = Actuator(
                motion=ActuatedMotion.ANGLE
                if joint.kind == JointKind.REVOLUTE
                else ActuatedMotion.DISPLACEMENT,
                lower=joint.lower - q0,
                upper=joint.upper - q0,
                velocity_limit=joint.velocity,
                acceleration_limit=joint.acceleration,
                hardware_id=joint.hardware_id,
            )
        joints.append(
            Joint(
                name=joint.name,
                kind=joint.kind,
                parent=joint.parent,
                child=joint.child,
                anchor=T_world_joint[:3, 3],
                axis=T_world_joint[:3, :3] @ joint.axis,
                actuator=actuator,
            )
        )
    joint_names = {j.name for j in joints}
    for closure in model.closures:
        T1 = poses[closure.link1] @ closure.T_link1_frame
        if closure.name in joint_names:
            raise model.error(
                f"closure name {closure.name!r} is already a joint name", closure.element, closure.line
            )
        joint_names.add(closure.name)
        joints.append(
            Joint(
                name=closure.name,
                kind=closure.kind,
                parent=closure.link1,
                child=closure.link2,
                anchor=T1[:3, 3],
                axis=T1[:3, :3] @ closure.axis,
            )
        )

    frames = []
    seen_frames: set[str] = set()
    for frame in model.frames:
        if frame.name in seen_frames:
            notes.append(f"duplicate frame name {frame.name!r}: the first one is kept")
            continue
        seen_frames.add(frame.name)
        T = _orthonormal(poses[frame.link] @ frame.T_link_frame)
        frames.append(Frame(frame.name, frame.link, position=T[:3, 3], orientation=_quat(T)))

    try:
        mechanism = Mechanism(bodies, joints, frames, name=model.name)
    except MechanismError as error:
        raise model.error(str(error)) from None
    for note in notes:
        warnings.warn(f"{model.path}: {note}", FileFormatWarning, stacklevel=3)
    return ImportedModel(mechanism, meshes, offsets, residual0, model.path, notes + info)
