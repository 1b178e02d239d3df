"""MJCF (MuJoCo XML) files -> Mechanism, through MuJoCo's own compiler.

One module although long: everything MJCF-specific, and nothing else, lives here.

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
from ..core.model.parts import LIMIT_FIELDS, JointKind
from ..core.model.servos import match_servo
from .errors import MAX_MESH_BYTES, MAX_MODEL_BYTES, FileFormatError, check_file_size
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


def _mujoco():
    try:
        import mujoco
    except ImportError as error:
        raise FileFormatError(None, "reading MJCF needs MuJoCo: pip install 'looprig[cad]'") from error
    return mujoco


def _mujoco_error(path, error: Exception, stage: str) -> FileFormatError:
    """A FileFormatError from MuJoCo's message, with the line it names."""
    message = str(error).strip()
    line = None
    marker = message.rfind(", line ")
    if marker >= 0:
        digits = message[marker + 7 :].split()[0] if message[marker + 7 :].split() else ""
        if digits.isdecimal():
            line = int(digits)
    problem = " ".join(part.strip() for part in message.splitlines() if part.strip())
    for prefix in ("XML Error: ", "Error: ", "ParseXML: "):
        problem = problem.replace(prefix, "")
    return FileFormatError(path, f"MuJoCo {stage} failed: {problem}", line=line)


def compile_mjcf(path, text: str | None = None, meshes: bool = True):
    """``(spec, model, visual)`` for an MJCF file (or its text). Errors as FileFormatError.

    visual: (ngeom,) bool, the geoms that collide with nothing (display only).
    meshes=False leaves out the mesh geoms whose body's inertia does not come from
    its geoms (an explicit ``<inertial>``): reading and processing meshes is most of
    the time a meshed model takes to compile, and kinematics and masses do not
    need them. MuJoCo's warnings are collected rather than written to
    ``MUJOCO_LOG.TXT``; a NaN in the file is an error.
    """
    mujoco = _mujoco()
    messages: list[str] = []
    previous = mujoco.get_mju_user_warning()
    mujoco.set_mju_user_warning(messages.append)
    try:
        try:
            if text is None:
                if not Path(path).is_file():
                    raise FileFormatError(path, "file not found")
                check_file_size(path, MAX_MODEL_BYTES)
                _check_utf8(Path(path).read_bytes(), path)
                spec = mujoco.MjSpec.from_file(str(path))
            else:
                spec = mujoco.MjSpec.from_string(text)
        except FileFormatError:
            raise
        except Exception as error:  # MuJoCo raises ValueError; be safe with others
            raise _mujoco_error(path, error, "parsing") from None
        _check_masses(spec, path)
        if not meshes:
            _drop_unneeded_meshes(mujoco, spec)
        _check_mesh_files(spec, path)
        roles = [(geom, geom.contype == 0 and geom.conaffinity == 0) for geom in spec.geoms]
        # compile on this thread: MuJoCo's mesh thread pool once spun for half an hour in a
        # loaded test run, and one model's meshes compile in well under a second anyway
        spec.compiler.usethread = False
        try:
            model = spec.compile()
        except Exception as error:
            raise _mujoco_error(path, error, "compiling") from None
    finally:
        mujoco.set_mju_user_warning(previous)
    for message in messages:
        if "NaN" in message:
            raise FileFormatError(path, "the file contains a NaN (not a number)")
    bad = [
        name
        for name in (
            "body_pos",
            "body_quat",
            "body_mass",
            "body_ipos",
            "body_inertia",
            "jnt_axis",
            "jnt_pos",
            "jnt_range",
            "site_pos",
            "site_quat",
            "geom_pos",
            "geom_quat",
            "eq_data",
            "actuator_ctrlrange",
            "actuator_gear",
            "tendon_range",
            "wrap_prm",
        )
        if not np.all(np.isfinite(getattr(model, name)))
    ]
    if bad:
        raise FileFormatError(path, "non-finite values in " + ", ".join(bad))
    visual = np.zeros(model.ngeom, bool)
    for geom, is_visual in roles:
        visual[geom.id] = is_visual
    return spec, model, visual


def _check_utf8(data: bytes, path) -> None:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise FileFormatError(path, f"not UTF-8 text: {error.reason}", line=line) from None


def _drop_unneeded_meshes(mujoco, spec) -> None:
    """Delete the mesh geoms no mass depends on, then the meshes no geom uses."""
    from_geoms = spec.compiler.inertiafromgeom
    for body in spec.bodies:
        if from_geoms == mujoco.mjtInertiaFromGeom.mjINERTIAFROMGEOM_TRUE or (
            from_geoms == mujoco.mjtInertiaFromGeom.mjINERTIAFROMGEOM_AUTO and not body.explicitinertial
        ):
            continue
        for geom in list(body.geoms):
            if geom.type == mujoco.mjtGeom.mjGEOM_MESH:
                spec.delete(geom)
    used = {geom.meshname for geom in spec.geoms if geom.type == mujoco.mjtGeom.mjGEOM_MESH}
    for mesh in list(spec.meshes):
        if mesh.name not in used:
            spec.delete(mesh)


def _check_mesh_files(spec, path) -> None:
    """Refuse mesh files over the size limit before MuJoCo reads them."""
    base = Path(spec.modelfiledir or Path(path).parent) / (spec.meshdir or "")
    for mesh in spec.meshes:
        if mesh.file:
            file = Path(mesh.file)
            check_file_size(
                file if file.is_absolute() else base / file, MAX_MESH_BYTES, f"mesh {mesh.name!r}"
            )


def _check_masses(spec, path) -> None:
    """Negative or non-finite masses, densities and inertias are errors, not placeholders.

    MuJoCo itself rejects some (on moving bodies) and silently zeroes others (on
    bodies welded to their parent); looprig refuses them all, naming the element.
    """
    for body in spec.bodies:
        if body.explicitinertial:
            full = np.ravel(body.fullinertia)
            signed = [body.mass, *np.ravel(body.inertia), *full[:3]]  # masses and moments
            finite = [*signed, *full[3:]]  # products of inertia may be negative
            if (
                not (np.isfinite(body.mass) and body.mass >= 0)
                or any(not np.isnan(v) and not np.isfinite(v) for v in finite)
                or any(v < 0 for v in signed if np.isfinite(v))
            ):
                raise FileFormatError(
                    path,
                    f"mass {body.mass:g} kg and inertia must be finite and not negative",
                    f"body {body.name!r} <inertial>",
                )
    for geom in spec.geoms:
        for label, value in (("mass", geom.mass), ("density", geom.density)):
            if not np.isnan(value) and not (np.isfinite(value) and value >= 0):
                owner = geom.parent.name if geom.parent is not None else "?"
                raise FileFormatError(
                    path,
                    f"geom {label} {value:g} must be finite and not negative",
                    f"geom {geom.name!r} of body {owner!r}" if geom.name else f"a geom of body {owner!r}",
                )


def _pose(pos, quat) -> np.ndarray:
    return transform(quat_to_matrix(np.asarray(quat, float)), np.asarray(pos, float))


def _name(model, kind: str, index: int, fallback: str) -> str:
    name = getattr(model, kind)(index).name
    return name if name else fallback


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
    mujoco = _mujoco()
    path = Path(path)
    spec, model, visual_geom = compile_mjcf(path, text, settings.meshes)
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    notes: list[str] = []

    def error(problem, element=None):
        return FileFormatError(path, problem, element)

    body_names = [_name(model, "body", b, f"body{b}") for b in range(model.nbody)]
    body_names[0] = "world"
    if len(set(body_names)) != len(body_names):
        raise error("body names are not unique")
    T_world = [_pose(data.xpos[b], data.xquat[b]) for b in range(model.nbody)]

    links: list[LinkSpec] = []
    joints: list[TreeJointSpec] = []
    joint_names = [_name(model, "joint", j, f"joint{j}") for j in range(model.njnt)]
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
    site_names = [_name(model, "site", s, "") for s in range(model.nsite)]
    site_pose = [_pose(model.site_pos[s], model.site_quat[s]) for s in range(model.nsite)]
    for s, sname in enumerate(site_names):
        if sname:
            frames.append(FrameSpec(sname, body_names[int(model.site_bodyid[s])], site_pose[s]))

    # equality constraints -> closures and couplings
    closures: list[ClosureSpec] = []
    couplings: list[CouplingSpec] = []
    site_obj = int(mujoco.mjtObj.mjOBJ_SITE)
    for e in range(model.neq):
        ename = _name(model, "eq", e, f"equality{e}")
        etype = int(model.eq_type[e])
        what = f"equality {ename!r}"
        if not model.eq_active0[e]:
            notes.append(f"{what} is inactive; left out")
            continue
        if etype == int(mujoco.mjtEq.mjEQ_JOINT):
            coupling = _joint_equality(model, e, ename, joint_names, tree_joint, path)
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

    driven = {int(model.actuator_trnid[a, 0]) for a in range(model.nu) if _on_tendon(mujoco, model, a)}
    by_joint = (int(mujoco.mjtTrn.mjTRN_JOINT), int(mujoco.mjtTrn.mjTRN_JOINTINPARENT))
    motor_joints = {
        int(model.actuator_trnid[a, 0]) for a in range(model.nu) if model.actuator_trntype[a] in by_joint
    }
    for t in range(model.ntendon):
        if t not in driven:
            _passive_tendon(mujoco, model, t, joint_names, tree_joint, motor_joints, couplings, notes)

    # actuators
    motors: dict[str, TreeJointSpec] = {}  # actuator name -> the joint it drives
    for a in range(model.nu):
        aname = _name(model, "actuator", a, f"actuator{a}")
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
            tendon = _tendon_actuator(model, a, target, aname, joint_names, tree_joint, couplings, path)
            if tendon is None:
                targets = [int(model.wrap_objid[w]) for w in wraps]
                notes.append(
                    f"{what} drives tendon {_name(model, 'tendon', target, str(target))!r}, whose joints "
                    + ", ".join(joint_names[t] for t in targets)
                    + " no joint equality couples to one joint; each is actuated"
                )
            else:
                joint, length_to_joint, note = tendon
                joint.actuated, joint.hardware_id = True, aname
                joint.actuator_name = model.actuator(a).name or None
                _servo_limits(mujoco, model, a, joint, path, length_to_joint)
                motors[aname] = joint
                joint.servo_hints += _servo_hints(spec, a, joint.name, aname)
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
                _servo_limits(mujoco, model, a, joint, path)
            if len(targets) == 1:
                motors[aname] = joint
                joint.servo_hints += _servo_hints(spec, a, joint.name, aname)
    _file_limits(spec, model, motors, path, notes)
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


#: [rad or m] a limited fixed tendon whose range is at most this wide holds its length: an equality
NARROW_TENDON = 0.1


def _on_tendon(mujoco, model, a: int) -> bool:
    return int(model.actuator_trntype[a]) == int(mujoco.mjtTrn.mjTRN_TENDON)


def _passive_tendon(
    mujoco, model, t: int, joint_names, tree_joint, driven: set[int], couplings: list, notes: list
) -> None:
    """A fixed tendon no actuator drives: with a narrow ``range`` (at most
    :data:`NARROW_TENDON` wide) it holds its length ``L = sum c_i qpos_i`` at the range's
    middle, an equality: on hinges and slides the coupling
    ``q_d = (L - sum_i c_i r_i) / c_d - sum_(i != d) (c_i / c_d) q_i`` (tree coordinates
    ``q = qpos - r``, ``r = qpos0``), of two joints a gear, of more a differential. The
    joint that follows (d) is the first that no actuator drives (``driven``: joint ids)
    and no earlier coupling sets, else the first no coupling sets. Anything else is left
    out with a note that says so."""
    name = _name(model, "tendon", t, f"tendon{t}")
    what = f"tendon {name!r}"
    adr, num = int(model.tendon_adr[t]), int(model.tendon_num[t])
    wraps = range(adr, adr + num)
    if any(int(model.wrap_type[w]) != int(mujoco.mjtWrap.mjWRAP_JOINT) for w in wraps):
        notes.append(f"{what} is a spatial tendon; left out")
        return
    low, high = (float(v) for v in model.tendon_range[t])
    if not model.tendon_limited[t] or high - low > NARROW_TENDON:
        notes.append(f"{what}: a fixed tendon without a narrow range (a limit, not an equality); left out")
        return
    joints = [int(model.wrap_objid[w]) for w in wraps]
    coefs = [float(model.wrap_prm[w]) for w in wraps]
    names = [joint_names[j] for j in joints]
    if len(joints) < 2 or len(set(joints)) != len(joints):
        notes.append(f"{what} holds joints {', '.join(names)} to a range of {high - low:g}; left out")
        return
    if any(
        j not in tree_joint or tree_joint[j].kind not in (JointKind.REVOLUTE, JointKind.PRISMATIC)
        for j in joints
    ):
        notes.append(f"{what}: its joints {', '.join(names)} are not all hinges or slides; left out")
        return
    set_already = {c.joint for c in couplings}
    free = [k for k, j in enumerate(joints) if names[k] not in set_already and coefs[k] != 0]
    if not free:
        notes.append(f"{what}: every one of its joints {', '.join(names)} follows another coupling; left out")
        return
    d = next((k for k in free if joints[k] not in driven), free[0])
    r = [float(model.qpos0[model.jnt_qposadr[j]]) for j in joints]
    middle = 0.5 * (low + high)
    others = [k for k in range(len(joints)) if k != d]
    offset = (middle - sum(c * x for c, x in zip(coefs, r, strict=True))) / coefs[d]
    couplings.append(
        CouplingSpec(
            name,
            names[d],
            tuple(names[k] for k in others),
            tuple(-coefs[k] / coefs[d] for k in others),
            offset,
            element=what,
        )
    )
    kind = "a coupling" if len(joints) == 2 else "a differential"
    terms = [f"{-coefs[k] / coefs[d]:.6g} {names[k]}" for k in others] + [f"{offset:.6g}"] * (offset != 0)
    notes.append(
        f"{what}: its narrow range [{low:g}, {high:g}] is read as an equality, {kind}: "
        f"{names[d]} = {' + '.join(terms).replace('+ -', '- ')} (values about qpos0)"
    )


#: ``<custom>`` element names of looprig's MJCF convention for motor limits and servos
LIMIT_NUMERIC = "looprig:{limit}:{actuator}"  # <numeric data="value">, joint units
SERVO_TEXT = "looprig:servo:{actuator}"  # <text data="XC330-M288-T">
USER_TEXT = "looprig:actuator_user"  # <text data="rpm">: actuator user[0] is the motor's rpm


def _servo_hints(spec, a: int, joint: str, actuator: str) -> list[tuple[str, str]]:
    """Where the catalogue may find the servo of actuator ``a``: the default class of the
    actuator, then of its joint, then the actuator's name."""
    hints = [(spec.actuators[a].classname.name, "actuator class")]
    spec_joint = spec.joint(joint)
    if spec_joint is not None:
        hints.append((spec_joint.classname.name, "joint class"))
    return [(name, f"{what} {name!r}") for name, what in hints] + [(actuator, f"actuator name {actuator!r}")]


def _file_limits(spec, model, motors: dict[str, TreeJointSpec], path, notes: list[str]) -> None:
    """Motor limits and servos the file states in looprig's ``<custom>`` convention
    (:data:`LIMIT_NUMERIC`, :data:`SERVO_TEXT`, :data:`USER_TEXT`), set on the joints;
    a note names the servo classes the file defines when some motor's class names none.

    Errors name the ``<numeric>`` or ``<text>`` element: an unknown limit or actuator,
    not one finite number, a velocity or acceleration limit not positive.
    """
    known = ", ".join(motors) or "(none)"

    def motor(name: str, element: str) -> TreeJointSpec:
        if name not in motors:
            raise FileFormatError(path, f"no actuator {name!r}; actuators are: {known}", element)
        return motors[name]

    for numeric in spec.numerics:
        parts = numeric.name.split(":")
        if parts[0] != "looprig":
            continue
        element = f"<numeric name={numeric.name!r}>"
        if len(parts) != 3 or parts[1] not in LIMIT_FIELDS:
            raise FileFormatError(
                path, "expected looprig:<lower|upper|velocity|acceleration>:<actuator>", element
            )
        joint, data = motor(parts[2], element), list(numeric.data)
        if len(data) != 1 or not np.isfinite(data[0]):
            raise FileFormatError(path, f"data must be one finite number, got {data}", element)
        if parts[1] in ("velocity", "acceleration") and not data[0] > 0:
            raise FileFormatError(path, f"a {parts[1]} limit must be positive, got {data[0]:g}", element)
        setattr(joint, parts[1], float(data[0]))
    for text in spec.texts:
        element = f"<text name={text.name!r}>"
        if text.name == USER_TEXT:
            if text.data.strip() != "rpm":
                raise FileFormatError(path, f"data must be 'rpm', got {text.data!r}", element)
            _user_rpm(model, motors, path, element)
        elif text.name.startswith(SERVO_TEXT.format(actuator="")):
            motor(text.name.removeprefix(SERVO_TEXT.format(actuator="")), element).servo = text.data.strip()
        elif text.name.startswith("looprig:"):
            raise FileFormatError(path, "expected looprig:servo:<actuator> or looprig:actuator_user", element)
    if model.nuser_actuator and not any(t.name == USER_TEXT for t in spec.texts):
        notes.append(
            "actuators carry user data; if user[0] is each motor's top speed [rev/min] before its gear "
            f"(Cassie's files), add <custom><text name={USER_TEXT!r} data='rpm'/></custom> to read it"
        )
    generic = [
        j for j in motors.values() if not j.servo and not any(match_servo(n) for n, _ in j.servo_hints)
    ]
    defined = [name for name in _default_classes(spec) if match_servo(name)] if generic else []
    if defined:
        classes = sorted({n for j in generic for n, what in j.servo_hints[:2] if n != "main"}) or ["main"]
        names = ", ".join(j.actuator_name or j.name for j in generic)
        notes.append(
            f"motors {names} use class {', '.join(map(repr, classes))}, which names no servo; the file "
            f"defines servo classes {', '.join(defined)}: name each motor's servo in the mapping "
            '("servo": {"motor": "model"}) for catalogue limits'
        )


def _user_rpm(model, motors: dict[str, TreeJointSpec], path, element: str) -> None:
    """Velocity limits from actuator ``user[0]`` [rev/min of the motor] and ``gear``:
    ``user[0] 2 pi / 60 / |gear|`` [rad/s or m/s of the joint]."""
    for a in range(model.nu):
        joint = motors.get(_name(model, "actuator", a, f"actuator{a}"))
        rpm, gear = float(model.actuator_user[a, 0]), abs(float(model.actuator_gear[a, 0]))
        if joint is None or rpm == 0:
            continue
        if not (rpm > 0 and gear > 0):
            problem = f"actuator {a}: user rpm {rpm:g} and gear {gear:g} must be positive"
            raise FileFormatError(path, problem, element)
        joint.velocity = rpm * 2 * np.pi / 60 / gear


def _default_classes(spec) -> list[str]:
    """The ``<default class>`` names the file defines (MuJoCo's merged XML)."""
    from xml.etree import ElementTree

    try:
        root = ElementTree.fromstring(spec.to_xml())
    except (ValueError, ElementTree.ParseError):
        # MuJoCo cannot write every model back (some plugins), nor write names XML cannot hold
        # (control characters it accepted): no classes to name
        return []
    return [d.get("class") for d in root.iter("default") if d.get("class")]


def _joint_equality(model, e: int, name: str, joint_names, tree_joint, path) -> CouplingSpec | None:
    """A joint equality ``q1 - q1_0 = c0 + c1 (q2 - q2_0) + ... + c4 (q2 - q2_0)^4`` as a
    coupling (tree coordinates are ``qpos - qpos0``, MuJoCo's reference), linear or with
    the non-zero higher terms; None for a joint locked to ``c0`` (no joint2)."""
    what = f"equality {name!r}"
    poly = np.asarray(model.eq_data[e][:5], float)
    j1, j2 = int(model.eq_obj1id[e]), int(model.eq_obj2id[e])
    if j2 < 0:
        return None
    for j in (j1, j2):
        joint = tree_joint.get(j)
        if joint is None or joint.kind not in (JointKind.REVOLUTE, JointKind.PRISMATIC):
            raise FileFormatError(path, f"joint {joint_names[j]!r} is not a hinge or slide", what)
    higher = np.trim_zeros(poly[2:], "b")
    polynomial = (tuple(float(c) for c in higher),) if len(higher) else ()
    return CouplingSpec(
        name, joint_names[j1], joint_names[j2], float(poly[1]), float(poly[0]), polynomial, what
    )


def _tendon_actuator(model, a: int, tendon: int, aname: str, joint_names, tree_joint, couplings, path):
    """The joint a fixed-tendon actuator drives, when couplings tie every tendon joint to it.

    Tendon length ``L = sum c_i qpos_i``; with ``q_i = a_i q_s + b_i`` (tree coordinates,
    through the couplings) ``L = g q_s + h``, ``g = sum c_i a_i``. Returns ``(joint s,
    map from tendon length to qpos_s, note)``, or None when the tendon's joints do not all
    follow one joint.
    """
    follows = {c.joint: c for c in couplings if c.linear()}  # gears: a joint that follows one other
    adr, num = int(model.tendon_adr[tendon]), int(model.tendon_num[tendon])
    terms = {}  # source joint name -> (g, h) contributions
    for w in range(adr, adr + num):
        j = int(model.wrap_objid[w])
        name, ratio, offset = joint_names[j], 1.0, 0.0
        for _ in range(len(follows) + 1):  # follow the couplings to the joint nothing sets
            if name not in follows:
                break
            c = follows[name].coupling()
            name, ratio, offset = c.sources[0], ratio * c.ratios[0], ratio * c.offset + offset
        coef, qpos0 = float(model.wrap_prm[w]), float(model.qpos0[model.jnt_qposadr[j]])
        g, h = terms.get(name, (0.0, 0.0))
        terms[name] = (g + coef * ratio, h + coef * (offset + qpos0))
    joints_by_name = {joint.name: joint for joint in tree_joint.values()}
    if len(terms) != 1:
        return None
    ((source, (g, h)),) = terms.items()
    joint = joints_by_name.get(source)
    if joint is None or joint.kind not in (JointKind.REVOLUTE, JointKind.PRISMATIC) or g == 0:
        return None
    qpos0 = joint.reference

    def length_to_joint(length):
        return (length - h) / g + qpos0

    note = ""
    if abs(g - 1.0) > 1e-12:
        note = (
            f"drives joint {source!r} through tendon {_name(model, 'tendon', tendon, str(tendon))!r}; "
            f"the tendon length is {g:g} times the joint value (plus {h:g})"
        )
    return joint, length_to_joint, note


def _servo_limits(mujoco, model, a: int, joint: TreeJointSpec, path, length_to_joint=None) -> None:
    """Narrow a joint's limits by a position servo's control range.

    A servo with fixed gain ``k = gainprm[0] > 0`` and affine bias
    ``biasprm[0] + biasprm[1] q`` (``biasprm[1] < 0``) holds the actuator length
    ``gear * x`` at ``(k ctrl + biasprm[0]) / -biasprm[1]``, ``x`` the joint value or,
    for a tendon, its length (``length_to_joint`` maps it to the joint's value).
    """
    if not model.actuator_ctrllimited[a]:
        return
    if int(model.actuator_gaintype[a]) != int(mujoco.mjtGain.mjGAIN_FIXED):
        return
    if int(model.actuator_biastype[a]) != int(mujoco.mjtBias.mjBIAS_AFFINE):
        return
    gain, b0, b1 = model.actuator_gainprm[a, 0], model.actuator_biasprm[a, 0], model.actuator_biasprm[a, 1]
    gear = model.actuator_gear[a, 0]
    if not (gain > 0 and b1 < 0 and gear != 0):
        return
    ends = [(gain * c + b0) / (-b1) / gear for c in model.actuator_ctrlrange[a]]
    ends = sorted(ends if length_to_joint is None else [length_to_joint(x) for x in ends])
    joint.lower = max(joint.lower, float(ends[0]))
    joint.upper = min(joint.upper, float(ends[1]))
    if joint.lower > joint.upper:
        raise FileFormatError(
            path, "the servo's control range and the joint range do not overlap", joint.element
        )


def load_mjcf(path, *, settings: ImportSettings = DEFAULT_SETTINGS, text: str | None = None) -> ImportedModel:
    """Read an MJCF file and build its Mechanism."""
    return build_mechanism(read_mjcf(path, text=text, settings=settings), settings)
