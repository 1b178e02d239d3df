"""How the common description every importer fills in (:mod:`.specs`) becomes a Mechanism.

URDF and MJCF describe a kinematic **tree** in joint coordinates (each link's
frame relative to its parent's, moved by the joint value) plus **loop
closures** (two frames, on two links, that must coincide). Importers translate
a file into a :class:`~.specs.TreeModel`; :func:`build_mechanism` then

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
:attr:`~.specs.ImportedModel.joint_offsets` (file value = actuator value + q0).

Transforms are 4x4 homogeneous matrices ``T_a_b`` mapping b coordinates into a
coordinates; lengths in metres, angles in radians.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..core.errors import MechanismError
from ..core.maths.rotations import pose_matrix, quat_from_matrix
from ..core.model.constraints import ConstraintSet
from ..core.model.mechanism import Mechanism
from ..core.model.parts import ActuatedMotion, Actuator, Body, Frame, Joint, JointKind
from ..core.model.primitives import FrameClosure, mean_joint_distance
from ..core.model.readoff import ActuatorReadout
from ..core.solvers.fk import FKSettings, solve_constraints, solve_fk
from .errors import FileFormatWarning
from .motors import catalogue_servo, motor_curve_names, with_catalogue_limits
from .specs import (
    CLOSURE_KINDS,
    DEFAULT_SETTINGS,
    ClosureSpec,
    ImportedModel,
    ImportSettings,
    MeshRef,
    TreeModel,
    invert,
    rigid_transform,
    transform,
)
from .tree_order import ordered_tree, zero_poses


def _origin(T_world_link: np.ndarray, T_link_frame: np.ndarray) -> np.ndarray:
    return T_world_link[:3, :3] @ T_link_frame[:3, 3] + T_world_link[:3, 3]


def _joint_at(name, kind, parent, child, T_world_joint: np.ndarray, axis, **details) -> Joint:
    """The joint whose frame stands at ``T_world_joint``: anchored at its origin, ``axis``
    (joint frame) turned into world axes; ``details`` are the other Joint fields."""
    anchor = T_world_joint[:3, 3]
    world_axis = T_world_joint[:3, :3] @ axis
    return Joint(name, kind, parent, child, anchor=anchor, axis=world_axis, **details)


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
        actuator = Actuator(motion[joint.kind]) if joint.kind in motion else None
        joints.append(
            _joint_at(joint.name, joint.kind, joint.parent, joint.child, T, joint.axis, actuator=actuator)
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
    link_poses = {
        name: rigid_transform(T) for name, T in zip(mechanism.body_names, pose_matrix(state), strict=True)
    }
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
    motor_names = motor_curve_names(model, notes)
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
            servo = catalogue_servo(model, joint, matched)
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
                actuator = with_catalogue_limits(actuator, servo.model)
        joints.append(
            _joint_at(
                joint.name,
                joint.kind,
                joint.parent,
                joint.child,
                T_world_joint,
                joint.axis,
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
        closing_gap = residual0 if gap > 0 else 0.0  # the loops close no better than the file
        joints.append(
            _joint_at(
                closure.name, closure.kind, closure.link1, closure.link2, T1, closure.axis, gap=closing_gap
            )
        )

    frames = []
    seen_frames: set[str] = set()
    for frame in model.frames:
        if frame.name in seen_frames:
            notes.append(f"duplicate frame name {frame.name!r}: the first one is kept")
            continue
        seen_frames.add(frame.name)
        T = rigid_transform(poses[frame.link] @ frame.T_link_frame)
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
