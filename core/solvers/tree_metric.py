"""The minimal-motion metric in tree coordinates (:func:`metric`, with the per-frame
solver's damping) and what the clip's Newton method reads at its starts: joint values
from poses (:func:`read`) and the first step's gradient around unassembled starts.

Layout as :mod:`~looprig.core.solvers.tree`: rotations R (n, 3, 3, F), CoM positions
c (n, 3, F) [m], screws (3, D, F), the frame axis last.
"""

import numpy as np

from ..maths.frame_last import cross, dot, gram, turn
from ..terms import MinimalMotion
from .tree import TreeKinematics


def metric(model: TreeKinematics, R, c, screws, moved_motors, moved_bodies):
    """The minimal-motion metric in tree coordinates with the per-frame solver's damping
    (D, D, F) at the iterate (the block's assembled starts), and the gradient (D, F) of
    its value there around the unassembled starts.

    :class:`~looprig.core.terms.MinimalMotion`'s ``w L^2 (J_p^T S J_p + eps D)`` on the
    tree's joint basis Z (the bodies' :func:`body_tangents`), plus the per-frame solver's
    Levenberg ``eps_p I`` on the body tangents (:func:`damping`): the motors' part (their
    read-off Jacobian is :meth:`TreeKinematics.motor_rows`) and the floating bodies'
    ``D`` (weight 1) exactly; the other bodies' ``eps D`` (eps = 1e-9) and the damping
    (1e-12) by their diagonal on Z. Where a motor, target or loop sees a direction those
    two shift the answer by about their weight relative to the motors' (1e-9 of a step);
    where nothing else does (a rod's spin between two ball joints) they alone resolve it,
    each path along its own steps (a spatial four-bar's rod: 3e-8 rad apart).

    The starts' assembly (:meth:`TreeKinematics.assemble`) counts as part of the first
    step, as the per-frame solver's first step counts its move onto the tree joints:
    moved_motors (A, F) [rad | m]: the motors' values at the assembled starts minus the
    starts'; moved_bodies (n, 6, F): every body's tangent ``[dc, dtheta]`` [m, rad]
    from its start to its assembled start. Both None: starts assembled, g zero."""
    problem = model.problem
    F, D = R.shape[-1], model.D
    first_step = moved_motors is not None
    H, g = np.zeros((D, D, F)), np.zeros((D, F))
    bodies = problem.constraints.free_bodies
    alpha = np.zeros((len(bodies), F))  # each body's weight on dc [1/m^2] ...
    beta = np.zeros((len(bodies), F))  # ... and on dtheta, except the floating bodies'
    floating = np.zeros(len(bodies), bool)
    shift = damping(model, R)
    terms = [t for t in problem.objective_terms if isinstance(t, MinimalMotion)]
    if terms:
        term = terms[0]
        scale = term.weight * term.length_scale**2
        motor_weight = scale * term._row_scale**2  # (A,)
        tree_motors = [m for m, name in enumerate(model.motor_joints) if name in model.coordinate]
        if tree_motors:  # one coordinate each: a diagonal entry
            q, sign = np.array([model.coordinate[model.motor_joints[m]] for m in tree_motors]).T
            q = q.astype(int)
            H[q, q] += motor_weight[tree_motors, None]
            if first_step:
                g[q] += (motor_weight[tree_motors] * sign)[:, None] * moved_motors[tree_motors]
        loop = model.loop_motors
        if len(loop):
            rows = model.motor_rows(R, screws)[loop]  # (A_loop, D, F)
            H += gram(rows, motor_weight[loop])
            if first_step:
                g += ((motor_weight[loop, None] * moved_motors[loop])[:, None] * rows).sum(0)
        floating = term.floating
        metric_body = scale * term._body_metric
        alpha += np.where(floating, metric_body[0], term._eps * metric_body[0])[:, None]
        beta += np.where(floating, metric_body[3], term._eps * metric_body[3])[:, None]
    alpha += shift
    beta += shift
    # the floating bodies exactly: T^T W T and T^T W a over their tangents T (6, D, F)
    for k in np.flatnonzero(floating):
        T = body_tangents(model, c, screws, bodies[k : k + 1])[0]
        W = np.concatenate([np.broadcast_to(alpha[k], (3, F)), np.broadcast_to(beta[k], (3, F))])
        H += gram(T, W)
        if first_step:
            g += (W[:, None] * T * moved_bodies[bodies[k]][:, None]).sum(0)
    # the others by the diagonal: per coordinate, sums over the bodies it moves of
    # alpha |omega x c + v|^2 + beta |omega|^2, from their weighted moments
    others = bodies[~floating]
    a, b, cb = alpha[~floating], beta[~floating], c[others]  # (B,), (B,), (B, 3, F)
    spread = (a[:, None, None] * cb[:, :, None] * cb[:, None]).reshape(-1, 9, F)
    moments = [a[:, None], a[:, None] * cb, spread, b[:, None]]
    if first_step:
        dc, dtheta = moved_bodies[others, :3], moved_bodies[others, 3:]
        moments += [a[:, None] * cross(cb, dc), a[:, None] * dc, b[:, None] * dtheta]
    sums = np.tensordot(model.moves[others].T, np.concatenate(moments, axis=1), axes=1)  # (D, 14 | 23, F)
    omega, v = screws[0].transpose(1, 0, 2), screws[1].transpose(1, 0, 2)  # (D, 3, F)
    second = sums[:, 4:13].reshape(D, 3, 3, F)
    turned = (second * omega[:, None]).sum(2)  # (D, 3, F): A2 omega
    diagonal = (
        dot(omega, omega) * (second[:, 0, 0] + second[:, 1, 1] + second[:, 2, 2] + sums[:, 13])
        - dot(omega, turned)
        + 2.0 * dot(cross(v, omega), sums[:, 1:4])
        + dot(v, v) * sums[:, 0]
    )
    H[np.arange(D), np.arange(D)] += diagonal
    if first_step:
        g += dot(omega, sums[:, 14:17]) + dot(v, sums[:, 17:20]) + dot(omega, sums[:, 20:23])
    return H, g


def body_tangents(model: TreeKinematics, c, screws, bodies: np.ndarray) -> np.ndarray:
    """Each of ``bodies``' tangent ``[dc, dtheta]`` per unit coordinate (B, 6, D, F) at
    the iterate (CoM positions c (n, 3, F), screws): the tree's joint basis."""
    omega = screws[0]
    moves = model.point_jacobian(screws, bodies, c[bodies])
    return np.concatenate([moves, omega[None] * model.moves[bodies][:, None, :, None]], axis=1)


def damping(model: TreeKinematics, R) -> np.ndarray:
    """The per-frame solver's Levenberg damping ``eps_p`` (F,): 1e-12 times the largest
    diagonal entry of the frame tasks' Gauss-Newton Hessian in body coordinates, at least
    1e-12 (its smallest damping, relative to :meth:`HessianModel.scale`)."""
    F = R.shape[-1]
    # the tasks' Gauss-Newton diagonal per body: translations w_p; rotations from the
    # position rows (e_m x arm) and the orientation rows (1 - u_m^2 per tracked axis u)
    b = model.frame_body
    arm = turn(R[b], model.frame_point) ** 2  # (K, 3, F): x^2, y^2, z^2
    w = model.sqrt_position**2  # (K, 3)
    block = np.empty((len(b), 6, F))
    block[:, :3] = w[:, :, None]
    block[:, 3:] = w[:, [1, 0, 0], None] * arm[:, [2, 2, 1]] + w[:, [2, 2, 1], None] * arm[:, [1, 0, 0]]
    for axis in model.task_axes:
        u = turn(R[b], model.frame_axes[:, axis])
        block[:, 3:] += model.sqrt_orientation[:, axis, None, None] ** 2 * (1.0 - u**2)
    if len(np.unique(b)) < len(b):  # bodies with several targets: their sums
        diagonal = np.zeros((model.n, 6, F))
        np.add.at(diagonal, b, block)
        block = diagonal
    return 1e-12 * np.maximum(block.max((0, 1), initial=0.0), 1.0)


def read(readout, R: np.ndarray, c: np.ndarray) -> np.ndarray:
    """The joint values (K, F) [rad | m] a :class:`~looprig.core.model.readoff.JointReadout`
    reads at rotations R (n, 3, 3, F) and CoM positions c (n, 3, F): its formula on
    the frame-last layout (angles from the child's reference axis against the parent's
    joint axes, displacements of the child anchor along the parent's axis)."""
    parent, child = R[readout.parent], R[readout.child]
    y = turn(child, readout.y_child)
    values = np.arctan2(
        dot(y, turn(parent, readout.F_parent[:, :, 2])), dot(y, turn(parent, readout.F_parent[:, :, 1]))
    )
    if readout.is_angle.all():
        return values
    offset = turn(child, readout.x_child) + c[readout.child]
    offset -= turn(parent, readout.x_parent) + c[readout.parent]
    along = dot(offset, turn(parent, readout.F_parent[:, :, 0]))
    return np.where(readout.is_angle[:, None], values, along)


def start_terms(model: TreeKinematics, R0, c0, R, c, screws):
    """At the assembled starts (R (n, 3, 3, F), c (n, 3, F); before assembly R0, c0):
    the minimal-motion metric with the damping (D, D, F) and its
    gradient there around the unassembled starts (D, F) (:func:`metric`), and the joint
    values (D, F) [rad | m] of the coordinates that couplings and held motors read."""
    F = R.shape[-1]
    # the bodies' tangents from start to assembled start: dc, and dtheta from
    # R R0^T ~ I + [dtheta]x (the assembly turns a body by at most a start's defect)
    turned = np.stack(
        [
            R[:, 2] * R0[:, 1] - R[:, 1] * R0[:, 2],
            R[:, 0] * R0[:, 2] - R[:, 2] * R0[:, 0],
            R[:, 1] * R0[:, 0] - R[:, 0] * R0[:, 1],
        ],
        axis=1,
    ).sum(2)  # (n, 3, F): vee(R R0^T - R0 R^T)
    moved_bodies = np.concatenate([c - c0, 0.5 * turned], axis=1)
    readout = model.problem.readout
    motors = read(readout, R, c)
    moved = motors - read(readout, R0, c0)
    moved = np.where(readout.is_angle[:, None], np.angle(np.exp(1j * moved)), moved)  # (A, F)
    H, g = metric(model, R, c, screws, moved, moved_bodies)
    values = np.zeros((model.D, F))
    if model.couplings is not None:
        values[model.coupling_q] = read(model.couplings.readout, R, c)
    for term, q, _ in model.locks:
        values[q] = motors[term.motors]
    return H, g, values
