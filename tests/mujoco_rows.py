"""MuJoCo's own constraint rows of a model, to hold looprig's mobility and poses against.

Test- and benchmark-only (needs ``mujoco``; ``bench/toddlerbot.py`` and
``bench/toddlerbot_dof.py`` put this folder on their path). The rows are the ones
MuJoCo's solver would enforce: every active equality's (``efc_J`` rows of type
``mjCNSTR_EQUALITY``: 3 per ``connect``, 6 per ``weld``, 1 per ``joint``) and, for
each passive fixed tendon whose range is at most
:data:`looprig.cad_import.mjcf.NARROW_TENDON` wide (read by looprig as an
equality), the tendon's length about its range's middle (MuJoCo only limits it).
Rows are in metres or radians, columns are MuJoCo's ``nv`` velocities (a free
joint's 3 translations [m], then 3 rotations [rad]).
"""

import mujoco
import numpy as np
from looprig.cad_import.mjcf_couplings import NARROW_TENDON

EQUALITY = int(mujoco.mjtConstraint.mjCNSTR_EQUALITY)
ROWS_PER_EQUALITY = {
    int(mujoco.mjtEq.mjEQ_CONNECT): 3,
    int(mujoco.mjtEq.mjEQ_WELD): 6,
    int(mujoco.mjtEq.mjEQ_JOINT): 1,
}


def narrow_tendons(mj: mujoco.MjModel) -> np.ndarray:
    """(k,) the fixed tendons no actuator drives whose limited range is at most
    ``NARROW_TENDON`` wide."""
    tendon = int(mujoco.mjtTrn.mjTRN_TENDON)
    driven = {int(mj.actuator_trnid[a, 0]) for a in range(mj.nu) if mj.actuator_trntype[a] == tendon}
    return np.array(
        [
            t
            for t in range(mj.ntendon)
            if mj.tendon_limited[t]
            and np.diff(mj.tendon_range[t])[0] <= NARROW_TENDON
            and t not in driven
            and all(mj.wrap_type[w] == mujoco.mjtWrap.mjWRAP_JOINT for w in range(*tendon_wraps(mj, t)))
        ],
        dtype=int,
    )


def tendon_wraps(mj: mujoco.MjModel, t: int) -> tuple[int, int]:
    """The range of tendon ``t``'s wrap indices."""
    return int(mj.tendon_adr[t]), int(mj.tendon_adr[t] + mj.tendon_num[t])


def equality_rows(mj: mujoco.MjModel, data: mujoco.MjData, tendons: bool = True):
    """(J, r) at ``data.qpos`` (``mj_forward`` is called): J (m, nv) the equality rows
    (and, with ``tendons``, the narrow tendons' rows), r (m,) their residuals [m, rad].

    Raises AssertionError unless every equality is active and has its rows in ``efc``
    (an inactive one, or one of a kind counted here as none, would be missed)."""
    mujoco.mj_forward(mj, data)
    assert data.eq_active.all(), "an equality is inactive"
    assert all(int(k) in ROWS_PER_EQUALITY for k in mj.eq_type), "an equality of a kind not counted here"
    expected = sum(ROWS_PER_EQUALITY[int(k)] for k in mj.eq_type)
    rows = data.efc_type[: data.nefc] == EQUALITY
    assert rows.sum() == expected, f"{rows.sum()} equality rows in efc, {expected} expected"
    J = data.efc_J.reshape(data.nefc, mj.nv)[rows].copy()
    r = data.efc_pos[: data.nefc][rows].copy()
    if tendons:
        narrow = narrow_tendons(mj)
        T = np.zeros((len(narrow), mj.nv))
        for i, t in enumerate(narrow):
            for w in range(*tendon_wraps(mj, t)):
                T[i, mj.jnt_dofadr[mj.wrap_objid[w]]] += mj.wrap_prm[w]
        J = np.vstack([J, T])
        r = np.r_[r, data.ten_length[narrow] - mj.tendon_range[narrow].mean(axis=1)]
    return J, r


def assemble(
    mj: mujoco.MjModel, data: mujoco.MjData, fixed, tolerance: float = 1e-13, steps: int = 100
) -> float:
    """Gauss-Newton on MuJoCo's rows (:func:`equality_rows`) over every velocity not in
    ``fixed`` (indices into ``nv``), from ``data.qpos``, which it updates; stops when the
    largest residual is below ``tolerance`` or a step stalls. Returns the largest
    residual [m, rad] left (a file's closure gap can keep it above ``tolerance``)."""
    free = np.setdiff1d(np.arange(mj.nv), np.asarray(list(fixed), dtype=int))
    qvel = np.zeros(mj.nv)
    for _ in range(steps):
        J, r = equality_rows(mj, data)
        if np.abs(r).max() < tolerance:
            break
        step = np.linalg.lstsq(J[:, free], -r, rcond=1e-12)[0]
        qvel[:] = 0.0
        qvel[free] = step
        mujoco.mj_integratePos(mj, data.qpos, qvel, 1.0)
        if np.abs(step).max() < 1e-15:
            break
    return float(np.abs(equality_rows(mj, data)[1]).max())


def motor_dofs(mj: mujoco.MjModel) -> list[int]:
    """The velocity index of each actuator's joint (joint transmissions)."""
    joint = int(mujoco.mjtTrn.mjTRN_JOINT)
    return [
        int(mj.jnt_dofadr[mj.actuator_trnid[a, 0]]) for a in range(mj.nu) if mj.actuator_trntype[a] == joint
    ]


def free_dofs(mj: mujoco.MjModel) -> list[int]:
    """The velocity indices of every free joint (3 translations, 3 rotations each)."""
    free = int(mujoco.mjtJoint.mjJNT_FREE)
    return [int(mj.jnt_dofadr[j]) + k for j in range(mj.njnt) if mj.jnt_type[j] == free for k in range(6)]


def without_gap(spec: mujoco.MjSpec, mj: mujoco.MjModel, data: mujoco.MjData) -> mujoco.MjModel:
    """The model compiled from ``spec`` with each site ``connect``'s second site moved onto
    its first at ``data``'s pose (``mj_forward`` done): its connects close exactly there."""
    for e in spec.equalities:
        if e.type == mujoco.mjtEq.mjEQ_CONNECT and e.objtype == mujoco.mjtObj.mjOBJ_SITE:
            first, second = mj.site(e.name1).id, mj.site(e.name2).id
            body = mj.site_bodyid[second]
            R = data.xmat[body].reshape(3, 3)
            spec.site(e.name2).pos = R.T @ (data.site_xpos[first] - data.xpos[body])
    return spec.compile()


def nullity(J: np.ndarray, tolerance: float, nv: int) -> int:
    """nv minus the number of J's singular values above ``tolerance`` [m or rad per unit
    velocity]."""
    return nv - int((np.linalg.svd(J, compute_uv=False) > tolerance).sum())
