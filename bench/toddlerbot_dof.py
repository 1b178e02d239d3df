"""ToddlerBot 2XC's degrees of freedom: looprig's count against MuJoCo's equality Jacobian.

MuJoCo's rows (tests/mujoco_rows.py): every equality's ``efc_J`` rows (4 connects x 3,
9 joint equalities x 1; each checked active and counted) and the two narrow waist
tendons' rows (which looprig reads as couplings). dof = nv - rank, nv = 50 (the free
joint's 6 and 44 hinges). At each pose: the largest residual, the singular values
below 1e-3 and the smallest above, and nv - rank of the equality rows alone and with
the tendons at several tolerances: numpy's default (``matrix_rank``), 1e-10, 1e-9, the
file's closure gap (looprig's :attr:`Mechanism.closure_gap`, 3.6e-8 m), ten times
it and 1e-4 (the spectrum is empty from 6e-8 to 1e-2 at every pose).

Poses: ``qpos0``; looprig's assembled pose; MuJoCo's rows met by Gauss-Newton on the
passive joints (free joint and motors fixed) with the motors at ``qpos0``, at three
random sets of values (seeded) and with the neck's motor at -0.4 and +0.4 rad. Then
the same file with each connect's second site moved onto its first at ``qpos0`` (no
gap: the connect rows then close exactly) and how much each free-joint velocity
opens MuJoCo's rows at ``qpos0`` (a rigid motion of the whole robot cannot open a
loop: whatever it shows is the gap turning). Last, looprig's own figures.

    python bench/toddlerbot_dof.py [--seed 0]
"""

import argparse
import sys
import warnings
from pathlib import Path

import mujoco
import numpy as np
from looprig.cad_import import load_model
from looprig.core import ConstraintSet
from looprig.core.model.mechanism import Mechanism
from looprig.core.model.mobility import analyse_mobility

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from mujoco_rows import assemble, equality_rows, free_dofs, motor_dofs, nullity, without_gap  # test helper

ROOT = Path(__file__).resolve().parents[1]
#: singular values below this are zero (rounding) and not shown
SMALLEST = 1e-14
TODDLERBOT = ROOT / "tests" / "data" / "toddlerbot_2xc" / "toddlerbot_2xc.xml"


def tolerances(J: np.ndarray, gap: float) -> dict[str, float]:
    """The rank tolerances measured at, by name: numpy's default for J, and fixed ones."""
    numpy_default = np.linalg.svd(J, compute_uv=False).max() * max(J.shape) * np.finfo(float).eps
    return {
        "numpy": numpy_default,
        "1e-10": 1e-10,
        "1e-9": 1e-9,
        "gap": gap,
        "10 gap": 10 * gap,
        "1e-4": 1e-4,
    }


def spectrum(mj: mujoco.MjModel, data: mujoco.MjData, gap: float) -> dict:
    """The figures of one pose (``data.qpos``): residual, small singular values, the
    smallest above 1e-3, nv - rank by tolerance for the equalities alone and with tendons."""
    J, r = equality_rows(mj, data)
    J_eq, _ = equality_rows(mj, data, tendons=False)
    s = np.linalg.svd(J, compute_uv=False)
    return {
        "residual": float(np.abs(r).max()),
        "small": np.sort(s[(s < 1e-3) & (s > SMALLEST)]),
        "next": float(s[s >= 1e-3].min()),
        "equalities": {k: nullity(J_eq, t, mj.nv) for k, t in tolerances(J_eq, gap).items()},
        "with tendons": {k: nullity(J, t, mj.nv) for k, t in tolerances(J, gap).items()},
    }


def show(name: str, figures: dict) -> None:
    small = ", ".join(f"{x:.3g}" for x in figures["small"]) or "none"
    print(
        f"{name}: residual {figures['residual']:.3g}; singular values below 1e-3 "
        f"(above {SMALLEST:g}): {small}; next {figures['next']:.3g}"
    )
    for rows in ("equalities", "with tendons"):
        counts = ", ".join(f"{k} {v}" for k, v in figures[rows].items())
        print(f"    nv - rank, {rows:12s}: {counts}")


def poses(mj: mujoco.MjModel, offsets: dict[str, float], seed: int):
    """(name, qpos) of the poses measured (see the module docstring)."""
    yield "qpos0", mj.qpos0.copy()
    q = mj.qpos0.copy()
    for j in range(mj.njnt):
        if mj.joint(j).name in offsets:
            q[mj.jnt_qposadr[j]] = offsets[mj.joint(j).name]
    yield "looprig's assembled pose", q
    data = mujoco.MjData(mj)
    fixed = free_dofs(mj) + motor_dofs(mj)
    motors = [mj.actuator_trnid[a, 0] for a in range(mj.nu)]
    rng = np.random.default_rng(seed)
    settings = [("motors at qpos0", {})]
    for k in range(3):
        values = {}
        for j in motors:
            low, high = np.clip(mj.jnt_range[j], -1.0, 1.0)
            values[j] = rng.uniform(low + 0.25 * (high - low), high - 0.25 * (high - low))
        settings.append((f"random motors (seed {seed}, set {k})", values))
    neck = mj.joint("neck_pitch_act").id
    settings += [(f"neck motor {v:+g} rad", {neck: v}) for v in (-0.4, 0.4)]
    for name, values in settings:
        data.qpos[:] = mj.qpos0
        for j, v in values.items():
            data.qpos[mj.jnt_qposadr[j]] = v
        assemble(mj, data, fixed)
        yield f"MuJoCo-assembled, {name}", data.qpos.copy()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the notes on the tendons and the gap
        model = load_model(TODDLERBOT, meshes=False)
    mechanism = model.mechanism
    gap = mechanism.closure_gap
    mj = mujoco.MjModel.from_xml_path(str(TODDLERBOT))
    data = mujoco.MjData(mj)
    kinds = {int(k): mujoco.mjtEq(int(k)).name for k in set(mj.eq_type)}
    counts = ", ".join(f"{np.sum(mj.eq_type == k)} {name}" for k, name in sorted(kinds.items()))
    print(f"MuJoCo {mujoco.__version__}: nv {mj.nv} (free joint {len(free_dofs(mj))}), equalities {counts}")
    print(f"closure gap (looprig) {gap:.3g} m")
    for name, qpos in poses(mj, model.joint_offsets, args.seed):
        data.qpos[:] = qpos
        show(name, spectrum(mj, data, gap))

    data.qpos[:] = mj.qpos0
    mujoco.mj_forward(mj, data)
    closed = without_gap(mujoco.MjSpec.from_file(str(TODDLERBOT)), mj, data)
    show(
        "no gap (second sites moved onto the first at qpos0), qpos0",
        spectrum(closed, mujoco.MjData(closed), gap),
    )

    data.qpos[:] = mj.qpos0
    J, _ = equality_rows(mj, data)
    opening = np.linalg.norm(J[:, free_dofs(mj)], axis=0)
    print("free joint's velocities, how far each opens MuJoCo's rows at qpos0 [m per m or rad]:")
    print("    " + ", ".join(f"{x:.3g}" for x in opening))

    J = ConstraintSet(mechanism, actuated=False).jacobian(mechanism.initial_state())
    s = np.linalg.svd(J, compute_uv=False)
    gears = Mechanism(
        mechanism.bodies,
        mechanism.joints,
        mechanism.frames,
        mechanism.name,
        [c for c in mechanism.couplings if c.kind == "gear"],
    )
    small = ", ".join(f"{x:.3g}" for x in s[(s < 1e-3) & (s > SMALLEST)])
    print(
        f"looprig: dof {analyse_mobility(mechanism).dof} (with the tendons' couplings), "
        f"{analyse_mobility(gears).dof} (gears only); its passive Jacobian {J.shape}, "
        f"singular values below 1e-3: {small}; next {s[s >= 1e-3].min():.3g}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
