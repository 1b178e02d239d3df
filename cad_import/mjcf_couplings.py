"""Couplings in an MJCF model: joint equalities (``polycoef``), fixed tendons held to a narrow
range, and actuators that drive a tendon."""

from __future__ import annotations

import numpy as np

from ..core.model.parts import JointKind
from .errors import FileFormatError
from .mjcf_compile import element_name
from .specs import (
    CouplingSpec,
)

#: [rad or m] a limited fixed tendon whose range is at most this wide holds its length: an equality
NARROW_TENDON = 0.1


def on_tendon(mujoco, model, a: int) -> bool:
    return int(model.actuator_trntype[a]) == int(mujoco.mjtTrn.mjTRN_TENDON)


def passive_tendon(
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
    name = element_name(model, "tendon", t, f"tendon{t}")
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


def joint_equality(model, e: int, name: str, joint_names, tree_joint, path) -> CouplingSpec | None:
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


def tendon_actuator(model, a: int, tendon: int, aname: str, joint_names, tree_joint, couplings, path):
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
            f"drives joint {source!r} through tendon {element_name(model, 'tendon', tendon, str(tendon))!r}; "
            f"the tendon length is {g:g} times the joint value (plus {h:g})"
        )
    return joint, length_to_joint, note
