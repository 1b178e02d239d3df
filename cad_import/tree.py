"""The common description every importer fills in, and how it becomes a Mechanism.

One module although long: the tree description and its conversion are one contract
between every importer and core.

URDF and MJCF describe a kinematic **tree** in joint coordinates (each link's
frame relative to its parent's, moved by the joint value) plus **loop
closures** (two frames, on two links, that must coincide). Importers translate
a file into a :class:`TreeModel`; :func:`build_mechanism` then

1. places every link in the world at the file's zero configuration,
2. **assembles** the loops: when the closure frames do not coincide there (as in
   the Gepetto models, or a loop written straight), the tree becomes a core
   Mechanism with the closures as extra constraint rows, and core's forward
   kinematics solver (damped Gauss-Newton / Levenberg-Marquardt from the zero
   configuration) moves the links until every closure holds,
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

from ..core.errors import MechanismError
from ..core.maths.rotations import nearest_rotation, pose_matrix, quat_from_matrix
from ..core.model.constraints import ConstraintSet
from ..core.model.mechanism import Mechanism
from ..core.model.parts import ActuatedMotion, Actuator, Body, Coupling, Frame, Joint, JointKind, LimitSource
from ..core.model.primitives import FrameClosure, mean_joint_distance
from ..core.model.readoff import ActuatorReadout
from ..core.model.servos import ServoError, ServoMatch, ServoModel, match_servo, servo_model
from ..core.solvers.fk import FKSettings, solve_constraints, solve_fk
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


@dataclass
class CouplingSpec:
    """A joint coupling in tree coordinates: ``q_joint = offset + sum_k P_k(q_sources[k])``
    (:class:`~looprig.core.model.parts.Coupling`'s fields, and where the file says it).

    q are the tree joints' coordinates (zero at the file's zero configuration,
    MJCF ``qpos0``) [rad or m]; the Mechanism's coupling is re-expressed about the
    assembled pose (:meth:`Coupling.shifted`). URDF ``<mimic>``, MJCF joint
    equalities and tendons.
    """

    name: str
    joint: str
    sources: tuple[str, ...] | str
    ratios: tuple[float, ...] | float = 1.0
    offset: float = 0.0
    polynomial: tuple[tuple[float, ...], ...] = ()
    element: str = ""
    line: int | None = None

    def coupling(self) -> Coupling:
        """The coupling in tree coordinates."""
        return Coupling(self.name, self.joint, self.sources, self.ratios, self.offset, self.polynomial)

    def linear(self) -> bool:
        """Whether it ties its joint to one source linearly (a gear)."""
        return len(self.coupling().sources) == 1 and not any(any(p) for p in self.polynomial)


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


# --------------------------------------------------------------------- assembly
def zero_poses(model: TreeModel, order: list[TreeJointSpec]) -> dict[str, np.ndarray]:
    """World transforms (4, 4) of every link at the file's zero configuration."""
    poses = {name: np.asarray(T, float) for name, T in model.roots.items()}
    for joint in order:  # parents before children
        poses[joint.child] = poses[joint.parent] @ joint.T_parent_joint @ joint.T_joint_child
    return {name: _rigid(T) for name, T in poses.items()}


def _rigid(T: np.ndarray) -> np.ndarray:
    """T with its rotation block made orthonormal (round-off removed)."""
    return transform(nearest_rotation(T[:3, :3]), T[:3, 3])


def _origin(T_world_link: np.ndarray, T_link_frame: np.ndarray) -> np.ndarray:
    return T_world_link[:3, :3] @ T_link_frame[:3, 3] + T_world_link[:3, 3]


def _assembly_mechanism(model: TreeModel, order, poses) -> Mechanism:
    """The tree as a Mechanism at its zero configuration, body frames = link frames.

    Every one-coordinate joint carries an unbounded actuator so its value can be
    read off after assembly (the constraint rows are passive).
    """
    bodies = [
        Body(
            link.name,
            position=poses[link.name][:3, 3],
            orientation=quat_from_matrix(poses[link.name][:3, :3]),
            grounded=link.name in model.roots,
        )
        for link in model.links
    ]
    joints = []
    for joint in order:
        T = poses[joint.parent] @ joint.T_parent_joint
        motion = {JointKind.REVOLUTE: ActuatedMotion.ANGLE, JointKind.PRISMATIC: ActuatedMotion.DISPLACEMENT}
        joints.append(
            Joint(
                joint.name,
                joint.kind,
                joint.parent,
                joint.child,
                anchor=T[:3, 3],
                axis=T[:3, :3] @ joint.axis,
                actuator=Actuator(motion[joint.kind]) if joint.kind in motion else None,
            )
        )
    couplings = [c.coupling() for c in model.couplings]
    return Mechanism(bodies, joints, name=model.name, couplings=couplings)


def assemble_tree(
    model: TreeModel, order, poses, settings: ImportSettings
) -> tuple[dict[str, np.ndarray], dict[str, float], float, float]:
    """Close every loop of the tree, starting from the zero configuration.

    The tree becomes a Mechanism and its closures :class:`FrameClosure` rows;
    :func:`looprig.core.solvers.fk.solve_constraints` drives them to zero (tolerance
    relative to the mechanism's mean joint distance). Returns the assembled link
    poses (4, 4), the one-coordinate joints' values there [rad or m], the
    largest initial closure mismatch [m] and the gap the loops keep [m] (0 when
    they close to the tolerance; see :attr:`ImportSettings.gap_tolerance`);
    raises FileFormatError naming the closure when the loops cannot all be closed.
    """
    residual0 = max(
        (
            float(
                np.linalg.norm(
                    (poses[c.link1] @ c.T_link1_frame)[:3, 3] - (poses[c.link2] @ c.T_link2_frame)[:3, 3]
                )
            )
            for c in model.closures
        ),
        default=0.0,
    )
    try:
        mechanism = _assembly_mechanism(model, order, poses)
    except MechanismError as error:
        raise model.error(str(error)) from None
    state = mechanism.initial_state()
    gap = 0.0
    if model.closures or any(abs(c.offset) > 0 for c in model.couplings):
        fk = FKSettings(tolerance=settings.assemble_tolerance, max_iterations=settings.assemble_iterations)
        closures = [
            FrameClosure(c.name, c.kind, c.link1, c.link2, c.T_link1_frame, c.T_link2_frame, c.axis)
            for c in model.closures
        ]
        constraints = ConstraintSet(mechanism, actuated=False, closures=closures)
        within = min(residual0, settings.gap_tolerance * mean_joint_distance(mechanism))

        def closed(result) -> bool:  # to the tolerance, or to the file's own precision
            return result.converged or result.residual <= within

        result = solve_constraints(constraints, state, None, fk)
        starts = _bent_starts(mechanism, settings.assemble_starts - 1)
        while not closed(result) and (start := next(starts, None)) is not None:
            retry = solve_constraints(constraints, start, None, fk)
            result = retry if retry.converged or retry.residual < result.residual else result
        state = result.state
        if closed(result) and not result.converged:
            gap = float(result.residual)  # accepted, and reported
        elif not result.converged:
            worst = next(
                (c for c in [*model.closures, *model.couplings] if c.name == result.worst_joint), None
            )
            if isinstance(worst, ClosureSpec):
                where = f"closure {worst.name!r} ({worst.link1!r} <-> {worst.link2!r})"
            elif worst is not None:
                sources = ", ".join(map(repr, worst.coupling().sources))
                where = f"coupling {worst.name!r} ({worst.joint!r} follows {sources})"
            else:
                where = f"joint {result.worst_joint!r}"
            why = "no pose closes them" if result.infeasible else "assembly did not converge"
            worst = worst or [*model.closures, *model.couplings][0]
            raise model.error(
                f"the loop closures cannot all be met ({why}): residual {result.residual:.3g} m "
                f"after assembly, largest at {where}",
                worst.element,
                worst.line,
            )
    readout = ActuatorReadout(mechanism)
    read = readout.read(state, previous=np.zeros(len(readout.names)))
    values = dict(zip(readout.names, read, strict=True))
    link_poses = {name: _rigid(T) for name, T in zip(mechanism.body_names, pose_matrix(state), strict=True)}
    return link_poses, values, residual0, gap


def _bent_starts(mechanism: Mechanism, count: int):
    """Tree poses with every one-coordinate joint moved a little (seeded, reproducible).

    A loop written straight (every joint at zero) is a singular start: the first
    least-squares step stretches the joints instead of folding them, and the solver
    stalls. Folding the joints first (forward kinematics of the tree) escapes it.
    """
    rng = np.random.default_rng(0)
    readout = ActuatorReadout(mechanism)
    if not readout.names:
        return
    scale = np.where(readout.is_angle, 0.3, 0.3 * mean_joint_distance(mechanism))
    for k in range(count):
        values = scale * (1 + k) * rng.uniform(-1.0, 1.0, len(scale))
        slot = {name: i for i, name in enumerate(readout.names)}
        for c in mechanism.couplings:  # coupled joints bent as their couplings say
            values[slot[c.joint]] = c.value([values[slot[s]] for s in c.sources])
        result = solve_fk(mechanism, values, raise_on_failure=False)
        if result.converged:
            yield result.state


# --------------------------------------------------------------------- mechanism
def _actuator_names(model: TreeModel, notes: list[str]) -> dict[str, str | None]:
    """The name each actuated joint's motor takes: the file's actuator name, else None
    (the joint's). A name that two joints' motors share (one transmission driving
    several joints) or that names another joint is dropped for the joint names, with
    a note."""
    joint_names = {j.name for j in model.joints}
    wanted = {j.name: j.actuator_name or j.name for j in model.joints if j.actuated}
    counts: dict[str, int] = {}
    for name in wanted.values():
        counts[name] = counts.get(name, 0) + 1
    names = {}
    for joint, name in wanted.items():
        if name != joint and (counts[name] > 1 or name in joint_names):
            why = "drives several joints" if counts[name] > 1 else "is the name of another joint"
            notes.append(f"actuator {name!r} {why}; its curve on joint {joint!r} is named {joint!r}")
            name = joint
        names[joint] = None if name == joint else name
    return names


def _servo_of(model: TreeModel, joint: TreeJointSpec, matched: dict[str, list[str]]) -> ServoMatch | None:
    """The catalogue servo of an actuated joint: the one the file names (an unknown name
    is an error naming the joint), else the first of its hints the catalogue recognises.
    Records how it was found in ``matched`` (how -> motor names)."""
    if joint.servo is not None:
        try:
            found = ServoMatch(servo_model(joint.servo), f"{joint.servo!r} named in the file")
        except ServoError as error:
            raise model.error(str(error), joint.element, joint.line) from None
    else:
        found = next(filter(None, (match_servo(name, what) for name, what in joint.servo_hints)), None)
    if found is not None:
        matched.setdefault(f"{found.model.name} ({found.how})", []).append(joint.actuator_name or joint.name)
    return found


def _with_catalogue(actuator: Actuator, servo: ServoModel) -> Actuator:
    """The actuator of a ``servo``: its limits the file leaves open (infinite) taken
    from the catalogue (the velocity limit: the no-load speed at the nominal voltage)."""
    values = {}
    if not np.isfinite(actuator.velocity_limit) and servo.velocity_limit is not None:
        values["velocity"] = servo.velocity_limit
    return actuator.with_limits(values, LimitSource.CATALOGUE, servo=servo.name)


def build_mechanism(model: TreeModel, settings: ImportSettings = DEFAULT_SETTINGS) -> ImportedModel:
    """Assemble the loops of ``model`` and build the validated Mechanism.

    Raises FileFormatError (naming the file and element) for tree errors,
    closures that cannot be met and anything the Mechanism rejects.
    """
    order, link_index = ordered_tree(model)
    for closure in model.closures:
        for link in (closure.link1, closure.link2):
            if link not in link_index:
                valid = ", ".join(sorted(link_index))
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
    poses, values, residual0, gap = assemble_tree(model, order, zero_poses(model, order), settings)
    notes = list(model.notes)
    if gap > 0:
        notes.append(
            f"the loop closures keep a gap of {gap:.3g} m after assembly (the file's own at its zero "
            f"configuration: {residual0:.3g} m); accepted, closed exactly in the initial configuration, and "
            f"met to {residual0:.3g} m elsewhere"
        )

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
                orientation=quat_from_matrix(T[:3, :3]),
                mass=float(mass),
                inertia=inertia,
                grounded=link.name in model.roots,
                mesh=visual.path if visual else None,
                T_body_mesh=visual.T_link_mesh if visual else np.eye(4),
                color=link.color if link.color is not None else (visual.rgba if visual else None),
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
    motor_names = _actuator_names(model, notes)
    matched: dict[str, list[str]] = {}  # how a servo was matched -> the motors
    for joint in model.joints:  # file order
        T_world_joint = poses[joint.child] @ invert(joint.T_joint_child)
        actuator = None
        if joint.name in values:
            offsets[joint.name] = joint.reference + float(values[joint.name])
        if joint.actuated:
            if joint.kind not in (JointKind.REVOLUTE, JointKind.PRISMATIC):
                raise model.error(
                    f"a {joint.kind.value} joint cannot carry an actuator (only revolute and "
                    "prismatic joints can)",
                    joint.element,
                    joint.line,
                )
            if not (joint.velocity > 0 and joint.acceleration > 0):
                raise model.error(
                    f"actuated joint with velocity limit {joint.velocity:g} and acceleration limit "
                    f"{joint.acceleration:g}: a motor needs positive limits (a limit of 0 means it "
                    "may not move; leave the limit out for none)",
                    joint.element,
                    joint.line,
                )
            q0 = offsets[joint.name]
            servo = _servo_of(model, joint, matched)
            actuator = Actuator(
                motion=ActuatedMotion.ANGLE
                if joint.kind == JointKind.REVOLUTE
                else ActuatedMotion.DISPLACEMENT,
                lower=joint.lower - q0,
                upper=joint.upper - q0,
                velocity_limit=joint.velocity,
                acceleration_limit=joint.acceleration,
                hardware_id=joint.hardware_id,
                name=motor_names[joint.name],
                rotor_inertia=joint.armature,
            )
            if servo is not None:
                actuator = _with_catalogue(actuator, servo.model)
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
    info += [
        f"catalogue servo {how} for: " + ", ".join(motors[:8]) + (" ..." if len(motors) > 8 else "")
        for how, motors in matched.items()
    ]
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
                gap=residual0 if gap > 0 else 0.0,  # the loops close no better than the file
            )
        )

    frames = []
    seen_frames: set[str] = set()
    for frame in model.frames:
        if frame.name in seen_frames:
            notes.append(f"duplicate frame name {frame.name!r}: the first one is kept")
            continue
        seen_frames.add(frame.name)
        T = _rigid(poses[frame.link] @ frame.T_link_frame)
        frames.append(
            Frame(frame.name, frame.link, position=T[:3, 3], orientation=quat_from_matrix(T[:3, :3]))
        )

    couplings = []
    for c in model.couplings:
        tree = c.coupling()
        if any(name not in values for name in (tree.joint, *tree.sources)):
            raise model.error("couplings join revolute and prismatic joints", c.element, c.line)
        couplings.append(tree.shifted(values))  # tree q = core q + assembled value v
    try:
        mechanism = Mechanism(bodies, joints, frames, name=model.name, couplings=couplings)
    except MechanismError as error:
        raise model.error(str(error)) from None
    for note in notes:
        warnings.warn(f"{model.path}: {note}", FileFormatWarning, stacklevel=3)
    return ImportedModel(mechanism, meshes, offsets, residual0, model.path, notes + info)
