"""MJCF (MuJoCo XML) files -> Mechanism, through MuJoCo's own compiler.

Compiling and its checks are :mod:`.mjcf_compile`, the motors' limits and servos
:mod:`.mjcf_motors`, couplings :mod:`.mjcf_couplings`; this module reads the tree.

The file is parsed and compiled by the ``mujoco`` package (``MjSpec``), so
``<default>`` classes, ``<include>``, ``compiler angle=``/``eulerseq``/
``meshdir``, frame orientations of every kind (quat, euler, axisangle,
xyaxes, zaxis), ``ref`` and mesh inertia are all resolved exactly as MuJoCo
resolves them. The model is placed at ``qpos0`` (the configuration the file
describes) and read back:

===================== ========================================================
MJCF                  looprig
===================== ========================================================
world body            grounded body ``world``
``<body>``            :class:`Body` (mass, CoM, inertia as compiled); also a
                      :class:`Frame` of the same name at the body frame
no joint              fixed joint ``<body>_fixed`` to its parent
hinge / slide         revolute / prismatic
ball / free           spherical / free
several joints        a chain through massless bodies ``<body>__<joint>``
                      (MuJoCo applies a body's joints in order)
``<site>``            :class:`Frame` (targets)
``connect``           spherical closure joint (body1/body2 + anchor, or sites)
``weld``              fixed closure joint (relpose honoured; sites: frames
                      coincide); ``torquescale`` and solver settings ignored
``joint`` equality     coupling ``q1 = c0 + c1 q2 + ... + c4 q2^4`` (about
                      ``qpos0``; a polynomial one when ``c2``..``c4`` are not 0)
fixed ``<tendon>``     on an actuator: the joint the couplings tie its joints
                      to; passive with a range at most :data:`NARROW_TENDON`
                      wide: a coupling, of three or more joints a differential
``<actuator>``        joint transmission: the joint is actuated; the actuator's
                      name is the motor's (curves carry it) and its hardware
                      id; limits from the joint ``range`` and, for position
                      servos, the ``ctrlrange`` mapped to a position; more
                      limits and the servo from looprig's ``<custom>``
                      convention and the default classes (the catalogue)
mesh geoms            mesh references (file, scale and MuJoCo's re-centring
                      undone: ``T_link_mesh`` maps file coordinates)
===================== ========================================================

Not supported (left out with a warning): ``tendon``/``flex`` equalities, spatial tendons,
site/slider-crank/body transmissions, inactive equalities, keyframes
(``qpos0`` is used).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..core.maths.rotations import quat_to_matrix
from ..core.model.parts import JointKind
from .errors import FileFormatError
from .mjcf_compile import compile_mjcf, element_name, mujoco_module
from .mjcf_couplings import joint_equality, on_tendon, passive_tendon, tendon_actuator
from .mjcf_motors import file_limits, servo_hints, servo_limits
from .specs import (
    DEFAULT_SETTINGS,
    ClosureSpec,
    CouplingSpec,
    FrameSpec,
    ImportedModel,
    ImportSettings,
    LinkSpec,
    MeshRef,
    TreeJointSpec,
    TreeModel,
    invert,
    transform,
)
from .tree import build_mechanism


def _pose(pos, quat) -> np.ndarray:
    return transform(quat_to_matrix(np.asarray(quat, float)), np.asarray(pos, float))


def _mesh_path(model, spec, mesh_id: int) -> str:
    start = int(model.mesh_pathadr[mesh_id])
    if start < 0:
        return ""
    raw = bytes(model.paths[start:]).split(b"\0", 1)[0].decode("utf-8", "replace")
    path = Path(raw)
    if not path.is_absolute():
        base = Path(spec.modelfiledir or ".")
        path = base / (spec.meshdir or "") / path
    return str(path.resolve()) if path.is_file() else str(path)


def read_mjcf(path, *, text: str | None = None, settings: ImportSettings = DEFAULT_SETTINGS) -> TreeModel:
    """Compile an MJCF file with MuJoCo and describe it as a :class:`TreeModel`."""
    try:
        return _read_mjcf(path, text, settings)
    except UnicodeDecodeError as error:  # MuJoCo's names and paths (e.g. from an <include>)
        raise FileFormatError(path, f"not UTF-8 text in a name or path: {error.reason}") from None


def _read_mjcf(path, text: str | None, settings: ImportSettings) -> TreeModel:
    mujoco = mujoco_module()
    path = Path(path)
    spec, model, visual_geom = compile_mjcf(path, text, settings.meshes)
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    notes: list[str] = []

    def error(problem, element=None):
        return FileFormatError(path, problem, element)

    body_names = [element_name(model, "body", b, f"body{b}") for b in range(model.nbody)]
    body_names[0] = "world"
    if len(set(body_names)) != len(body_names):
        raise error("body names are not unique")
    T_world = [_pose(data.xpos[b], data.xquat[b]) for b in range(model.nbody)]

    links: list[LinkSpec] = []
    joints: list[TreeJointSpec] = []
    joint_names = [element_name(model, "joint", j, f"joint{j}") for j in range(model.njnt)]
    tree_joint: dict[int, TreeJointSpec] = {}
    kinds = {
        int(mujoco.mjtJoint.mjJNT_HINGE): JointKind.REVOLUTE,
        int(mujoco.mjtJoint.mjJNT_SLIDE): JointKind.PRISMATIC,
        int(mujoco.mjtJoint.mjJNT_BALL): JointKind.SPHERICAL,
        int(mujoco.mjtJoint.mjJNT_FREE): JointKind.FREE,
    }
    for b in range(model.nbody):
        name = body_names[b]
        R_inertia = quat_to_matrix(model.body_iquat[b])
        mass = float(model.body_mass[b])
        links.append(
            LinkSpec(
                name=name,
                mass=mass,
                com=np.array(model.body_ipos[b], float),
                inertia=R_inertia @ np.diag(model.body_inertia[b]) @ R_inertia.T if mass > 0 else None,
                element=f"body {name!r}",
            )
        )
        if b == 0:
            continue
        parent = body_names[int(model.body_parentid[b])]
        T_parent_body = invert(T_world[int(model.body_parentid[b])]) @ T_world[b]
        first, count = int(model.body_jntadr[b]), int(model.body_jntnum[b])
        if count == 0:
            joints.append(
                TreeJointSpec(
                    f"{name}_fixed", JointKind.FIXED, parent, name, T_parent_body, element=f"body {name!r}"
                )
            )
            continue
        previous, T_prev_body = parent, T_parent_body
        for k, j in enumerate(range(first, first + count)):
            jname = joint_names[j]
            child = name if k == count - 1 else f"{name}__{jname}"
            if child != name:
                links.append(LinkSpec(name=child, element=f"joint {jname!r}"))
            anchor = np.array(model.jnt_pos[j], float)
            kind = kinds[int(model.jnt_type[j])]
            spec_joint = TreeJointSpec(
                name=jname,
                kind=kind,
                parent=previous,
                child=child,
                T_parent_joint=T_prev_body @ transform(p=anchor),
                T_joint_child=transform(p=-anchor),
                axis=np.array(model.jnt_axis[j], float) / max(np.linalg.norm(model.jnt_axis[j]), 1e-300),
                element=f"joint {jname!r}",
            )
            if kind in (JointKind.REVOLUTE, JointKind.PRISMATIC):
                qpos0 = float(model.qpos0[model.jnt_qposadr[j]])
                spec_joint.reference = qpos0
                spec_joint.armature = float(model.dof_armature[model.jnt_dofadr[j]])
                if model.jnt_limited[j]:
                    spec_joint.lower, spec_joint.upper = (float(v) for v in model.jnt_range[j])
            joints.append(spec_joint)
            tree_joint[j] = spec_joint
            previous, T_prev_body = child, np.eye(4)

    # meshes and colours
    mesh_type = int(mujoco.mjtGeom.mjGEOM_MESH)
    links_by_name = {link.name: link for link in links}

    def geom_rgba(g: int):
        mat = int(model.geom_matid[g])
        rgba = np.clip(model.mat_rgba[mat] if mat >= 0 else model.geom_rgba[g], 0.0, 1.0)  # display only
        return tuple(float(str(np.float32(c))) for c in rgba)  # MuJoCo's float32, as written

    chosen: dict[str, tuple[bool, int]] = {}  # body -> (visual, geom): its first visual geom, else first geom
    for g in range(model.ngeom):
        body = body_names[int(model.geom_bodyid[g])]
        if body not in chosen or (visual_geom[g] and not chosen[body][0]):
            chosen[body] = (bool(visual_geom[g]), g)
    for body, (_, g) in chosen.items():
        links_by_name[body].color = geom_rgba(g)
    for g in range(model.ngeom):
        if int(model.geom_type[g]) != mesh_type or model.geom_dataid[g] < 0:
            continue
        m = int(model.geom_dataid[g])
        R_mesh = quat_to_matrix(model.mesh_quat[m])
        T_geom_file = (
            transform(R_mesh.T)
            @ transform(p=-np.asarray(model.mesh_pos[m], float))
            @ np.diag([*model.mesh_scale[m], 1.0])
        )
        T_body_geom = _pose(model.geom_pos[g], model.geom_quat[g])
        visual = visual_geom[g]
        rgba = geom_rgba(g)
        links_by_name[body_names[int(model.geom_bodyid[g])]].meshes.append(
            MeshRef(
                _mesh_path(model, spec, m),
                T_body_geom @ T_geom_file,
                "visual" if visual else "collision",
                tuple(float(c) for c in rgba),
            )
        )
    # geoms of a model without visual-only geoms: show the collision meshes
    for link in links:
        if link.meshes and not any(mesh.role == "visual" for mesh in link.meshes):
            link.meshes = [MeshRef(mesh.path, mesh.T_link_mesh, "visual", mesh.rgba) for mesh in link.meshes]

    # frames: bodies and sites
    frames = [FrameSpec(name, name, np.eye(4)) for name in body_names]
    site_names = [element_name(model, "site", s, "") for s in range(model.nsite)]
    site_pose = [_pose(model.site_pos[s], model.site_quat[s]) for s in range(model.nsite)]
    for s, sname in enumerate(site_names):
        if sname:
            frames.append(FrameSpec(sname, body_names[int(model.site_bodyid[s])], site_pose[s]))

    # equality constraints -> closures and couplings
    closures: list[ClosureSpec] = []
    couplings: list[CouplingSpec] = []
    site_obj = int(mujoco.mjtObj.mjOBJ_SITE)
    for e in range(model.neq):
        ename = element_name(model, "eq", e, f"equality{e}")
        etype = int(model.eq_type[e])
        what = f"equality {ename!r}"
        if not model.eq_active0[e]:
            notes.append(f"{what} is inactive; left out")
            continue
        if etype == int(mujoco.mjtEq.mjEQ_JOINT):
            coupling = joint_equality(model, e, ename, joint_names, tree_joint, path)
            if coupling is None:
                notes.append(f"{what} locks joint {joint_names[int(model.eq_obj1id[e])]!r}; left out")
            else:
                couplings.append(coupling)
            continue
        if etype not in (int(mujoco.mjtEq.mjEQ_CONNECT), int(mujoco.mjtEq.mjEQ_WELD)):
            kind_name = mujoco.mjtEq(etype).name.removeprefix("mjEQ_").lower()
            notes.append(f"{what}: {kind_name} equality (a coupling) cannot be expressed; left out")
            continue
        o1, o2 = int(model.eq_obj1id[e]), int(model.eq_obj2id[e])
        eq = np.asarray(model.eq_data[e], float)
        if int(model.eq_objtype[e]) == site_obj:
            b1, b2 = int(model.site_bodyid[o1]), int(model.site_bodyid[o2])
            T1, T2 = site_pose[o1], site_pose[o2]
            if etype == int(mujoco.mjtEq.mjEQ_CONNECT):
                T1, T2 = transform(p=T1[:3, 3]), transform(p=T2[:3, 3])
        else:
            b1, b2 = o1, o2
            if etype == int(mujoco.mjtEq.mjEQ_CONNECT):
                T1, T2 = transform(p=eq[0:3]), transform(p=eq[3:6])
            else:  # weld: body1 point relpos (with relquat) meets body2 point anchor
                T1 = _pose(eq[3:6], eq[6:10])
                T2 = transform(p=eq[0:3])
        if b1 == b2:
            notes.append(f"{what} joins body {body_names[b1]!r} to itself; left out")
            continue
        closures.append(
            ClosureSpec(
                name=ename,
                kind=JointKind.SPHERICAL if etype == int(mujoco.mjtEq.mjEQ_CONNECT) else JointKind.FIXED,
                link1=body_names[b1],
                T_link1_frame=T1,
                link2=body_names[b2],
                T_link2_frame=T2,
                element=what,
            )
        )

    driven = {int(model.actuator_trnid[a, 0]) for a in range(model.nu) if on_tendon(mujoco, model, a)}
    by_joint = (int(mujoco.mjtTrn.mjTRN_JOINT), int(mujoco.mjtTrn.mjTRN_JOINTINPARENT))
    motor_joints = {
        int(model.actuator_trnid[a, 0]) for a in range(model.nu) if model.actuator_trntype[a] in by_joint
    }
    for t in range(model.ntendon):
        if t not in driven:
            passive_tendon(mujoco, model, t, joint_names, tree_joint, motor_joints, couplings, notes)

    # actuators
    motors: dict[str, TreeJointSpec] = {}  # actuator name -> the joint it drives
    for a in range(model.nu):
        aname = element_name(model, "actuator", a, f"actuator{a}")
        what = f"actuator {aname!r}"
        trn = int(model.actuator_trntype[a])
        target = int(model.actuator_trnid[a, 0])
        if trn in (int(mujoco.mjtTrn.mjTRN_JOINT), int(mujoco.mjtTrn.mjTRN_JOINTINPARENT)):
            targets = [target]
        elif trn == int(mujoco.mjtTrn.mjTRN_TENDON):
            adr, num = int(model.tendon_adr[target]), int(model.tendon_num[target])
            wraps = range(adr, adr + num)
            if any(int(model.wrap_type[w]) != int(mujoco.mjtWrap.mjWRAP_JOINT) for w in wraps):
                notes.append(f"{what} drives a spatial tendon; left out")
                continue
            tendon = tendon_actuator(model, a, target, aname, joint_names, tree_joint, couplings, path)
            if tendon is None:
                targets = [int(model.wrap_objid[w]) for w in wraps]
                tendon_name = element_name(model, "tendon", target, str(target))
                notes.append(
                    f"{what} drives tendon {tendon_name!r}, whose joints "
                    + ", ".join(joint_names[t] for t in targets)
                    + " no joint equality couples to one joint; each is actuated"
                )
            else:
                joint, length_to_joint, note = tendon
                joint.actuated, joint.hardware_id = True, aname
                joint.actuator_name = model.actuator(a).name or None
                servo_limits(mujoco, model, a, joint, path, length_to_joint)
                motors[aname] = joint
                joint.servo_hints += servo_hints(spec, a, joint.name, aname)
                if note:
                    notes.append(f"{what}: {note}")
                continue
        else:
            kind_name = mujoco.mjtTrn(trn).name.removeprefix("mjTRN_").lower()
            notes.append(f"{what}: {kind_name} transmission is not supported; left out")
            continue
        for j in targets:
            joint = tree_joint.get(j)
            if joint is None or joint.kind not in (JointKind.REVOLUTE, JointKind.PRISMATIC):
                notes.append(f"{what} drives {joint_names[j]!r}, not a hinge or slide; left out")
                continue
            joint.actuated = True
            joint.hardware_id = aname
            if len(targets) == 1 and model.actuator(a).name:
                joint.actuator_name = aname
            if trn != int(mujoco.mjtTrn.mjTRN_TENDON):
                servo_limits(mujoco, model, a, joint, path)
            if len(targets) == 1:
                motors[aname] = joint
                joint.servo_hints += servo_hints(spec, a, joint.name, aname)
    file_limits(spec, model, motors, path, notes)
    return TreeModel(
        name=spec.modelname or path.stem,
        path=str(path),
        links=links,
        joints=joints,
        closures=closures,
        frames=frames,
        roots={"world": np.eye(4)},
        notes=notes,
        couplings=couplings,
    )


def load_mjcf(path, *, settings: ImportSettings = DEFAULT_SETTINGS, text: str | None = None) -> ImportedModel:
    """Read an MJCF file and build its Mechanism."""
    return build_mechanism(read_mjcf(path, text=text, settings=settings), settings)
