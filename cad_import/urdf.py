"""URDF files -> Mechanism.

The common elements are :mod:`.urdf_elements`, a link's inertia, meshes and materials
:mod:`.urdf_links`, URDF+ loops and couplings :mod:`.urdf_plus`; this module reads the tree.

Read with the standard library's XML parser (line numbers in errors). What is
read, and how it maps:

=================== ==========================================================
URDF                looprig
=================== ==========================================================
``<link>``          :class:`Body` (CoM from ``<inertial><origin>``, orientation
                    of the link frame); also a :class:`Frame` of the same name
                    at the link origin, for targets
``<inertial>``      mass [kg], CoM, inertia (rotated into link axes)
no ``<inertial>``   mass properties from the link's meshes (collision meshes,
                    else visual) and ``density``; no meshes: placeholder mass
``<visual>`` /      mesh references (``package://``, ``file://``, relative
``<collision>``     paths; ``scale``); primitives are not kept
revolute,           revolute (continuous: no position limits)
continuous
prismatic           prismatic
fixed               fixed
floating            free
planar              planar (axis = plane normal)
``<limit>``         actuator lower/upper [rad or m], velocity [rad/s or m/s]
``<transmission>``  marks its joints actuated; its ``<actuator name>`` names
                    the motor (curves carry it) and is its hardware id
``<mimic>``         a coupling: value = multiplier * the other's + offset
URDF+ ``<loop>``    a loop closure (revolute, continuous or fixed) between two
                    link frames (arXiv 2411.19753)
URDF+ ``<coupling>`` the successor link's joint turns ``ratio`` times the
                    predecessor link's
=================== ==========================================================

The root link is grounded (``floating_base=True`` instead joins it to a
grounded ``world`` body by a free joint). Joints are actuated when a
``<transmission>``, a ``<looprig_actuator joint="..." name="..."
hardware_id="..." acceleration="..." servo="XC330-M288-T"/>`` element, the YAML side
file's ``name_mot`` or the ``actuated=`` argument names them. Loop closures: see :mod:`.closures`.

Not supported: joint ``<dynamics>``/``<safety_controller>``/``<calibration>``,
``<gazebo>`` extensions, primitive geometry as display, URDF+ prismatic and
planar loops (an error naming the element).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..core.model.parts import JointKind
from . import specs
from .closures import closure_kind, find_sidecar, onshape_closures, read_closure_yaml
from .errors import FileFormatError
from .tree import build_mechanism
from .urdf_elements import origin_transform, unit_axis
from .urdf_links import mass_from_meshes, named_materials, read_inertial, read_meshes
from .urdf_plus import urdf_plus_coupling, urdf_plus_loop
from .xmlfile import XmlDocument, describe

URDF_JOINT_KINDS = {
    "revolute": JointKind.REVOLUTE,
    "continuous": JointKind.REVOLUTE,
    "prismatic": JointKind.PRISMATIC,
    "fixed": JointKind.FIXED,
    "floating": JointKind.FREE,
    "planar": JointKind.PLANAR,
}


@dataclass(frozen=True)
class UrdfOptions:
    """How a URDF is read, besides what its file says.

    package_paths: folders searched for ``package://`` meshes.
    actuated: joint names to actuate in addition to those the file declares.
    closures: extra ``(frame1, frame2, kind)`` closures between links.
    closure_kind: joint closing ``closing_<id>_1/_2`` frame pairs.
    sidecar: YAML closure file, ``"auto"`` to look beside the URDF, None for none.
    floating_base: join the root link to a grounded ``world`` by a free joint.
    """

    package_paths: Sequence = ()
    actuated: Sequence[str] = ()
    closures: Sequence = ()
    closure_kind: str = "spherical"
    sidecar: str | Path | None = "auto"
    floating_base: bool = False


def read_urdf(
    path,
    options: UrdfOptions = UrdfOptions(),
    *,
    settings: specs.ImportSettings = specs.DEFAULT_SETTINGS,
    text: bytes | str | None = None,
) -> specs.TreeModel:
    """Parse a URDF into a :class:`~.specs.TreeModel` (no assembly yet), read as ``options`` say.

    text: the file content, when it is not read from ``path``.
    """
    path = Path(path)
    doc = XmlDocument(path, text)
    root = doc.root
    if root.tag != "robot":
        raise doc.error(root, f"the root element is <{root.tag}>, expected <robot>")
    base = path.parent
    notes: list[str] = []

    materials = named_materials(doc, root)
    links: list[specs.LinkSpec] = []
    for link in root.findall("link"):
        name = doc.text_attr(link, "name", required=True)
        spec = specs.LinkSpec(name=name, element=describe(link), line=doc.line(link))
        has_inertial = read_inertial(doc, link, spec)
        roles = ("visual", "collision") if settings.meshes or not has_inertial else ()
        read_meshes(doc, link, spec, base, options.package_paths, settings, notes, materials, roles)
        if not has_inertial:
            note = mass_from_meshes(spec, settings, path)
            if note:
                notes.append(note)
            else:
                spec.mass = 0.0  # a frame link: no inertial, no mesh
        links.append(spec)
    if not links:
        raise doc.error(root, "the robot has no <link>")
    link_names = [link.name for link in links]

    joints: list[specs.TreeJointSpec] = []
    couplings: list[specs.CouplingSpec] = []
    for joint in root.findall("joint"):
        name = doc.text_attr(joint, "name", required=True)
        kind_name = doc.text_attr(joint, "type", required=True)
        what = f"joint {name!r}"
        if kind_name not in URDF_JOINT_KINDS:
            raise doc.error(
                joint,
                f"unknown joint type {kind_name!r}; URDF types are: " + ", ".join(URDF_JOINT_KINDS),
                what,
            )
        kind = URDF_JOINT_KINDS[kind_name]
        ends = {}
        for role in ("parent", "child"):
            element = joint.find(role)
            if element is None:
                raise doc.error(joint, f"missing <{role}>", what)
            ends[role] = doc.text_attr(element, "link", required=True)
        if kind in (JointKind.FIXED, JointKind.FREE):
            axis = np.array([1.0, 0.0, 0.0])  # unused by these kinds (exporters write 0 0 0)
        else:
            axis = unit_axis(doc, joint.find("axis"))
        spec = specs.TreeJointSpec(
            name=name,
            kind=kind,
            parent=ends["parent"],
            child=ends["child"],
            T_parent_joint=origin_transform(doc, joint),
            axis=axis,
            element=what,
            line=doc.line(joint),
        )
        limit = joint.find("limit")
        if limit is not None and kind in (JointKind.REVOLUTE, JointKind.PRISMATIC):
            if kind_name != "continuous":
                spec.lower = doc.number(limit, "lower", 0.0) if limit.get("lower") else -np.inf
                spec.upper = doc.number(limit, "upper", 0.0) if limit.get("upper") else np.inf
                if spec.lower > spec.upper:
                    raise doc.error(limit, f"lower limit {spec.lower} exceeds upper limit {spec.upper}", what)
            if limit.get("velocity") is not None:
                # a velocity of 0 is a real limit (the joint may not move), not "none":
                # on an actuated joint it is refused when the mechanism is built
                spec.velocity = doc.number(limit, "velocity")
                if spec.velocity < 0:
                    raise doc.error(limit, f"negative velocity limit {spec.velocity}", what)
        mimic = joint.find("mimic")
        if mimic is not None:
            if kind not in (JointKind.REVOLUTE, JointKind.PRISMATIC):
                raise doc.error(mimic, f"a {kind_name} joint cannot mimic another joint", what)
            couplings.append(
                specs.CouplingSpec(
                    name=f"{name}_mimic",
                    joint=name,
                    sources=doc.text_attr(mimic, "joint", required=True),
                    ratios=doc.number(mimic, "multiplier", 1.0),
                    offset=doc.number(mimic, "offset", 0.0),
                    element=f"joint {name!r} <mimic>",
                    line=doc.line(mimic),
                )
            )
        joints.append(spec)
    joint_by_name = {j.name: j for j in joints}
    joint_child = {j.name: j.child for j in joints}
    couplings += [urdf_plus_coupling(doc, element, joints) for element in root.findall("coupling")]
    for c in couplings:
        (source_name,) = c.coupling().sources  # a mimic or URDF+ coupling follows one joint
        source = joint_by_name.get(source_name)
        if source is None or source.kind not in (JointKind.REVOLUTE, JointKind.PRISMATIC):
            valid = ", ".join(
                sorted(j.name for j in joints if j.kind in (JointKind.REVOLUTE, JointKind.PRISMATIC))
            )
            raise FileFormatError(
                path,
                f"mimics {source_name!r}, which is no revolute or prismatic joint; those are: {valid}",
                c.element,
                c.line,
            )

    # actuators: <transmission>, <looprig_actuator>, YAML name_mot, argument
    actuated_names: list[tuple[str, object]] = []
    for transmission in root.findall("transmission"):
        motor = transmission.find("actuator")  # its name is the motor's: the curve's name and hardware id
        for element in transmission.findall("joint"):
            name = doc.text_attr(element, "name", required=True)
            actuated_names.append((name, element))
            if motor is not None and motor.get("name") and name in joint_by_name:
                joint_by_name[name].hardware_id = motor.get("name")
                joint_by_name[name].actuator_name = motor.get("name")
                joint_by_name[name].servo_hints.append(
                    (motor.get("name"), f"actuator name {motor.get('name')!r}")
                )
    for element in root.findall("looprig_actuator"):
        name = doc.text_attr(element, "joint", required=True)
        actuated_names.append((name, element))
        if name in joint_by_name:
            spec = joint_by_name[name]
            spec.actuator_name = element.get("name") or spec.actuator_name
            spec.servo = element.get("servo") or spec.servo  # a catalogue name, checked on building
            hardware = element.get("hardware_id")
            if hardware is not None:
                spec.hardware_id = int(hardware) if hardware.strip().lstrip("-").isdecimal() else hardware
            for attr, field in (
                ("lower", "lower"),
                ("upper", "upper"),
                ("velocity", "velocity"),
                ("acceleration", "acceleration"),
            ):
                if element.get(attr) is not None:
                    setattr(spec, field, doc.number(element, attr))
            if spec.velocity <= 0 or spec.acceleration <= 0:
                raise doc.error(element, "velocity and acceleration limits must be positive")
            if spec.lower > spec.upper:
                raise doc.error(element, f"lower limit {spec.lower} exceeds upper limit {spec.upper}")

    closure_list: list[specs.ClosureSpec] = []
    default_kind = closure_kind(options.closure_kind, path, "closure_kind")
    found, onshape_notes = onshape_closures(link_names, default_kind)
    closure_list += found
    notes += onshape_notes
    for element in root.findall("looprig_closure"):
        name = doc.text_attr(element, "name", required=True)
        kind = closure_kind(
            doc.text_attr(element, "kind", "spherical"), path, describe(element), doc.line(element)
        )
        frame1 = doc.text_attr(element, "frame1", required=True)
        frame2 = doc.text_attr(element, "frame2", required=True)
        for frame in (frame1, frame2):
            if frame not in link_names:
                raise doc.error(
                    element, f"frame {frame!r} is not a link; links are: {', '.join(sorted(link_names))}"
                )
        closure_list.append(
            specs.ClosureSpec(
                name=name,
                kind=kind,
                link1=frame1,
                T_link1_frame=np.eye(4),
                link2=frame2,
                T_link2_frame=np.eye(4),
                axis=unit_axis(doc, element.find("axis"), default=(0.0, 0.0, 1.0)),
                element=describe(element),
                line=doc.line(element),
            )
        )
    closure_list += [urdf_plus_loop(doc, element, link_names) for element in root.findall("loop")]
    sidecar_path = find_sidecar(path) if options.sidecar == "auto" and text is None else options.sidecar
    if sidecar_path not in (None, "auto"):
        yaml_closures, motors = read_closure_yaml(sidecar_path, joint_child, link_names)
        closure_list += yaml_closures
        actuated_names += [(m, None) for m in motors]
    for frame1, frame2, kind in options.closures:
        for frame in (frame1, frame2):
            if frame not in link_names:
                raise FileFormatError(
                    path, f"closure frame {frame!r} is not a link; links are: {', '.join(sorted(link_names))}"
                )
        closure_list.append(
            specs.ClosureSpec(
                name=f"{frame1}__{frame2}",
                kind=closure_kind(kind, path, "closures argument"),
                link1=frame1,
                T_link1_frame=np.eye(4),
                link2=frame2,
                T_link2_frame=np.eye(4),
                element="closures argument",
            )
        )
    actuated_names += [(name, None) for name in options.actuated]
    for name, element in actuated_names:
        if name not in joint_by_name:
            valid = ", ".join(sorted(joint_by_name)) or "(none)"
            problem = f"actuated joint {name!r} does not exist; joints are: {valid}"
            if element is None:
                raise FileFormatError(path, problem)
            raise doc.error(element, problem)
        joint_by_name[name].actuated = True

    _check_links(path, links, joints)
    children = {j.child for j in joints}
    roots = [name for name in link_names if name not in children]
    if len(roots) != 1:
        if not roots:
            # every link is a child: there is a cycle; let the tree check name it
            roots_map = {}
        else:
            raise FileFormatError(
                path,
                f"a URDF has one root link; found {len(roots)}: {', '.join(roots[:10])}"
                " (links not joined to the rest)",
            )
    else:
        roots_map = {roots[0]: np.eye(4)}
    if options.floating_base and roots_map:
        root_link = next(iter(roots_map))
        links.insert(0, specs.LinkSpec(name="world", element="floating base"))
        joints.insert(
            0, specs.TreeJointSpec("world_to_" + root_link, JointKind.FREE, "world", root_link, np.eye(4))
        )
        roots_map = {"world": np.eye(4)}

    frames = [specs.FrameSpec(link.name, link.name, np.eye(4)) for link in links]
    return specs.TreeModel(
        name=root.get("name") or path.stem,
        path=str(path),
        links=links,
        joints=joints,
        closures=closure_list,
        frames=frames,
        roots=roots_map,
        notes=notes,
        couplings=couplings,
    )


def _check_links(path, links: list[specs.LinkSpec], joints: list[specs.TreeJointSpec]) -> None:
    """Duplicate names, joints naming unknown links, links with two parents."""
    names: dict[str, specs.LinkSpec] = {}
    for link in links:
        if link.name in names:
            raise FileFormatError(path, f"duplicate link name {link.name!r}", link.element, link.line)
        names[link.name] = link
    parent_of: dict[str, str] = {}
    seen_joints: set[str] = set()
    for joint in joints:
        if joint.name in seen_joints:
            raise FileFormatError(path, f"duplicate joint name {joint.name!r}", joint.element, joint.line)
        seen_joints.add(joint.name)
        for role in ("parent", "child"):
            name = getattr(joint, role)
            if name not in names:
                valid = ", ".join(sorted(names))
                raise FileFormatError(
                    path,
                    f"{role} link {name!r} does not exist; links are: {valid}",
                    joint.element,
                    joint.line,
                )
        if joint.child in parent_of:
            raise FileFormatError(
                path,
                f"link {joint.child!r} has two parent joints ({parent_of[joint.child]!r} and "
                f"{joint.name!r}); a URDF is a tree (write loops as closures)",
                joint.element,
                joint.line,
            )
        parent_of[joint.child] = joint.name


def load_urdf(
    path,
    *,
    settings: specs.ImportSettings = specs.DEFAULT_SETTINGS,
    text: bytes | str | None = None,
    **options,
) -> specs.ImportedModel:
    """Read a URDF and build its Mechanism; ``options`` are the fields of :class:`UrdfOptions`."""
    return build_mechanism(read_urdf(path, UrdfOptions(**options), settings=settings, text=text), settings)
