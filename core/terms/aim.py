"""Aim targets: an axis of a frame points at a point (paper IV.B's frame tasks, for gaze).

A frame F with origin o (world) and a unit axis ``a`` (given in F's axes, turned with
its body: ``a_w = R_b a_b``) aims at a point p when ``a_w`` lies along the line of
sight ``d = p - o``. The residual is

* aim  ``sqrt(w) (a_w - u)``, ``u = d / |d|``                                 (3 rows) [rad]

Why this one: ``|a_w - u| = 2 sin(theta / 2)`` (theta the angle between the axis and
the line of sight) is zero only when the axis points *at* the point, grows
monotonically with theta up to the axis pointing away, and is a polynomial in the
pose and ``u`` -- smooth wherever ``d`` is not zero. ``1/2 |a_w - u|^2 = 1 - cos theta``,
so it is the frame tasks' orientation residual ``R a - a_hat`` with ``a_hat`` the line
of sight, and near the answer it equals the angle itself to third order: the solver's
tolerances on it are tolerances on the angle. The cross product ``a_w x u`` (|.| = sin
theta) was not taken: it also vanishes with the axis pointing *away* from the point,
a second minimum a Gauss-Newton solve started behind the head would settle in; the
angle itself (atan2) is not differentiable at zero, where the answer is.

Its Jacobian on the frame's body (tangent ``[dc, dtheta]``, world, as every term):
``da = -[a]x dtheta``, ``do = dc - [w]x dtheta`` (w: the origin from the body's CoM,
world), ``du = (I - u u^T) / |d| dv`` with ``dv = -do``, so the aim rows are
``sqrt(w) [(I - u u^T) / |d|, -[a]x - (I - u u^T) [w]x / |d|]``. The farther the
point, the less moving the head changes where it is seen.

* **lock** (Blender's Locked Track): the aim turns about the frame's lock axis l (in
  F, turned with it) only: the line of sight is projected across it,
  ``v = d - (d.l) l``, ``u = v / |v|``; the aim is met when ``a_w`` points at the
  point as seen in the plane across l (``a`` perpendicular to ``l``).
* **up** (Blender's Track To): the frame's up axis b (in F, perpendicular to ``a``)
  is kept as close as the robot allows to a world direction g (or a tracked one):

  up  ``sqrt(w) (m b_w - g_perp)``, ``g_perp = g - (g.a_w) a_w``, ``m = |g_perp|``  (3 rows)

  zero exactly when b_w is g turned across the aim axis, the roll Track To gives.
  ``1/2 |m b - g_perp|^2 = m^2 (1 - cos phi)`` (phi the roll error): the roll
  preference fades smoothly as the axis turns towards g (looking straight up), where
  Track To is undetermined too. A neck that cannot roll meets it where g_perp lies
  in the plane its up axis sweeps (a pan-tilt neck with g vertical); elsewhere the
  up rows and the aim rows share the least-squares answer. Without an up axis the
  roll is left to the minimal-motion metric, as every other redundancy.

The target point and the up direction ride in the frame task's target slots:
``point.targets.positions[:, slot]`` is p and column z of
``point.targets.rotations[:, slot]`` is g (see ``looprig.core.retarget``, which
gives each aim a frame objective of zero weight for them), so every solver that
passes targets (per frame, whole clip, under limits) passes aims unchanged.

A point at the frame's origin leaves the line of sight undefined: there (``|v|``
below :data:`DEGENERATE`) the aim rows are zero and the frame is left to the others.
"""

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import TargetError
from ..maths.rotations import cross, quat_to_matrix, skew
from ..model.mechanism import Mechanism
from .base import LeastSquaresTerm, Point, Targets, on_all_columns

#: A line of sight shorter than this [m] (or a projected one) is undefined: no aim there.
DEGENERATE = 1e-12
#: |a . up| or |a . lock| above this (unit vectors) is not perpendicular.
PERPENDICULAR = 1e-6


def unit_vector(value, what: str) -> np.ndarray:
    """A (3,) unit vector from 3 finite numbers, not all zero; :class:`TargetError` naming
    ``what`` otherwise."""
    v = np.asarray(value, dtype=float) if _numbers(value) else None
    if v is None or v.shape != (3,) or not np.all(np.isfinite(v)):
        raise TargetError(f"{what} must be 3 finite numbers, got {value!r:.80}")
    norm = float(np.linalg.norm(v))
    if norm < 1e-9:
        raise TargetError(f"{what} must not be zero, got {v.tolist()}")
    return v / norm


def _numbers(values) -> bool:
    if isinstance(values, np.ndarray):
        return values.dtype.kind in "iuf"
    return isinstance(values, list | tuple) and all(
        isinstance(v, int | float | np.integer | np.floating) and not isinstance(v, bool) for v in values
    )


@dataclass(frozen=True)
class AimObjective:
    """Frame ``frame``'s ``axis`` (in its axes) points at a point.

    up: the frame's up axis (perpendicular to ``axis``), kept towards the up direction
    (Track To), or None; lock: the frame's axis the aim turns about (Locked Track,
    perpendicular to ``axis``), or None; weight: of the aim's (and up's) rows.
    """

    frame: str
    axis: Sequence[float] = (1.0, 0.0, 0.0)
    up: Sequence[float] | None = None
    lock: Sequence[float] | None = None
    weight: float = 1.0

    def checked(self, where: str | None = None) -> "AimObjective":
        """Unit axes, checked; :class:`TargetError` (one line naming ``where``) otherwise."""
        where = where or f"aim {self.frame!r}"
        axis = unit_vector(self.axis, f"{where}: axis")
        up = None if self.up is None else unit_vector(self.up, f"{where}: up")
        lock = None if self.lock is None else unit_vector(self.lock, f"{where}: lock")
        for name, other in (("up", up), ("lock", lock)):
            if other is not None and abs(float(axis @ other)) > PERPENDICULAR:
                raise TargetError(
                    f"{where}: {name} {other.round(6).tolist()} must be perpendicular to the axis "
                    f"{axis.round(6).tolist()}"
                )
        if up is not None and lock is not None:
            raise TargetError(f"{where}: give up (Track To) or lock (Locked Track), not both")
        w = self.weight
        if isinstance(w, bool) or not isinstance(w, int | float) or not np.isfinite(w) or w < 0:
            raise TargetError(f"{where}: weight must be a finite non-negative number, got {w!r:.80}")
        return AimObjective(
            self.frame,
            tuple(axis),
            None if up is None else tuple(up),
            None if lock is None else tuple(lock),
            float(w),
        )


class AimTask(LeastSquaresTerm):
    """All aims of a problem, stacked: per aim 3 aim rows then 3 up rows (zero for an aim
    without an up axis). Aim k's point is ``point.targets.positions[:, slots[k]]`` and its
    up direction column z of ``point.targets.rotations[:, slots[k]]``."""

    name = "aims"
    unit = "rad"

    def __init__(self, mechanism: Mechanism, objectives: Sequence[AimObjective], slots: Sequence[int]):
        objectives = [o.checked() for o in objectives]
        if len(slots) != len(objectives):
            raise TargetError(f"{len(objectives)} aims need as many target slots, got {len(slots)}")
        s0 = mechanism.initial_state()
        R0 = quat_to_matrix(s0[:, 3:])
        self.names = [o.frame for o in objectives]
        self.slots = np.asarray(slots, dtype=int).reshape(-1)
        frames = [mechanism.frame(o.frame) for o in objectives]
        self.body = np.array([mechanism.body_index(f.body) for f in frames], dtype=int)
        m = len(frames)
        self.local_point = np.array(
            [R0[b].T @ (f.position - s0[b, :3]) for b, f in zip(self.body, frames, strict=True)]
        ).reshape(m, 3)
        turn = np.array(
            [R0[b].T @ quat_to_matrix(f.orientation) for b, f in zip(self.body, frames, strict=True)]
        ).reshape(m, 3, 3)  # frame axes in body coordinates

        def in_body(values):
            return np.einsum("mij,mj->mi", turn, np.array(values, dtype=float).reshape(m, 3))

        self.local_axis = in_body([o.axis for o in objectives])
        self.has_up = np.array([o.up is not None for o in objectives], dtype=bool)
        self.has_lock = np.array([o.lock is not None for o in objectives], dtype=bool)
        self.local_up = in_body([o.up if o.up is not None else (0.0, 0.0, 0.0) for o in objectives])
        self.local_lock = in_body([o.lock if o.lock is not None else (0.0, 0.0, 0.0) for o in objectives])
        self.weight = np.array([o.weight for o in objectives], dtype=float)
        self._sqrt_weight = np.sqrt(self.weight)
        self._scatter = None

    def __len__(self) -> int:
        return len(self.body)

    # ------------------------------------------------------------------ geometry
    def geometry(self, state: np.ndarray, R: np.ndarray, targets) -> dict:
        """Per aim, world (B, M, 3): origin ``o``, its offset from the body's CoM ``w``, the
        axes ``a``, ``b`` (up), ``l`` (lock), the point ``p``, the line of sight ``d`` and the
        seen direction ``v`` (d across the lock axis), its length ``n`` (B, M) and
        ``u = v / n`` (``a`` where n is degenerate); the up direction ``g``."""
        Rb = R[:, self.body]  # (B, M, 3, 3)
        w = np.einsum("bmij,mj->bmi", Rb, self.local_point)
        o = state[:, self.body, :3] + w
        a = np.einsum("bmij,mj->bmi", Rb, self.local_axis)
        b = np.einsum("bmij,mj->bmi", Rb, self.local_up)
        lock = np.einsum("bmij,mj->bmi", Rb, self.local_lock)
        p = targets.positions[:, self.slots]
        g = targets.rotations[:, self.slots][..., 2]
        d = p - o
        v = d - np.einsum("bmi,bmi->bm", d, lock)[..., None] * lock  # lock is zero without one
        n = np.linalg.norm(v, axis=-1)
        defined = n > DEGENERATE
        u = np.where(defined[..., None], v / np.where(defined, n, 1.0)[..., None], a)
        return {"o": o, "w": w, "a": a, "b": b, "l": lock, "p": p, "d": d, "v": v, "n": n, "u": u, "g": g}

    def _columns(self, column_of_body: np.ndarray):
        """(columns (6 U,) of N of the U free bodies carrying aims, aims on free bodies
        (index), their column offsets (Kf,) among those columns). Cached."""
        if self._scatter is None or self._scatter[0] is not column_of_body:
            cols = column_of_body[self.body]
            keep = np.flatnonzero(cols >= 0)
            bodies, slot = np.unique(self.body[keep], return_inverse=True)
            columns = (column_of_body[bodies, None] + np.arange(6)).reshape(-1).astype(int)
            self._scatter = (column_of_body, columns, keep, 6 * slot)
        return self._scatter[1:]

    def residual(self, point: Point, jacobian: bool = True):
        r, J, columns = self.compact_residual(point, jacobian)
        return r, None if J is None else on_all_columns(J, columns, point.n_vars)

    def compact_residual(self, point: Point, jacobian: bool = True):
        """The residual (B, 6 M) and its Jacobian on the columns of the aimed free bodies."""
        batch, m = point.batch, len(self)
        geo = self.geometry(point.state, point.R, point.targets)
        a, b, u, g = geo["a"], geo["b"], geo["u"], geo["g"]
        g_perp = g - np.einsum("bmi,bmi->bm", g, a)[..., None] * a
        size = np.linalg.norm(g_perp, axis=-1)
        up = self.has_up[None, :, None]
        sw = self._sqrt_weight[None, :, None]
        r = np.empty((batch, m, 6))
        r[..., :3] = sw * (a - u)
        r[..., 3:] = np.where(up, sw * (size[..., None] * b - g_perp), 0.0)
        r = r.reshape(batch, 6 * m)
        if not jacobian:
            return r, None, None
        columns, keep, offsets = self._columns(point.column_of_body)
        J = np.zeros((batch, 6 * m, len(columns)))
        if not len(keep):
            return r, J, columns
        blocks = self._blocks(geo, g_perp, size)[:, keep]  # (B, Kf, 6, 6)
        blocks *= self._sqrt_weight[keep, None, None]
        rows = (6 * keep[:, None] + np.arange(6))[:, :, None]
        cols = (offsets[:, None] + np.arange(6))[:, None, :]
        J[:, rows, cols] = blocks
        return r, J, columns

    def _blocks(self, geo: dict, g_perp: np.ndarray, size: np.ndarray) -> np.ndarray:
        """Unweighted Jacobian blocks (B, M, 6 rows, 6 columns [dc, dtheta]) of every aim."""
        a, b, lock, d, n, u, w = geo["a"], geo["b"], geo["l"], geo["d"], geo["n"], geo["u"], geo["w"]
        shape = a.shape[:-1]
        eye = np.broadcast_to(np.eye(3), shape + (3, 3))
        defined = n > DEGENERATE
        # du = Q dv, Q = (I - u u^T) / n (zero where the line of sight is undefined)
        Q = (eye - u[..., :, None] * u[..., None, :]) / np.where(defined, n, 1.0)[..., None, None]
        Q = np.where(defined[..., None, None], Q, 0.0)
        # dv = -P dc + (P [w]x - l (l x d)^T + (d.l) [l]x) dtheta,  P = I - l l^T (l = 0: no lock)
        P = eye - lock[..., :, None] * lock[..., None, :]
        dv_dc = -P
        dv_dt = (
            P @ skew(w)
            - lock[..., :, None] * cross(lock, d)[..., None, :]
            + np.einsum("...i,...i->...", d, lock)[..., None, None] * skew(lock)
        )
        da_dt = -skew(a)
        out = np.zeros(shape + (6, 6))
        out[..., :3, :3] = -Q @ dv_dc
        out[..., :3, 3:] = da_dt - Q @ dv_dt
        if self.has_up.any():
            # r_up = m b - g_perp, g_perp = g - (g.a) a, m = |g_perp|
            g = geo["g"]
            ga = np.einsum("...i,...i->...", g, a)[..., None, None]
            dgp = -a[..., :, None] * (g[..., None, :] @ da_dt) - ga * da_dt
            live = size > DEGENERATE
            unit = np.where(live[..., None], g_perp / np.where(live, size, 1.0)[..., None], 0.0)
            dm = unit[..., None, :] @ dgp  # (..., 1, 3)
            up_rows = b[..., :, None] * dm + size[..., None, None] * -skew(b) - dgp
            out[..., 3:, 3:] = np.where(self.has_up[:, None, None], up_rows, 0.0)
        return out

    # ------------------------------------------------------------------ report
    def angles(self, state, R, targets):
        """Per aim (B, M): the angle [rad] between the axis and the line of sight (as seen
        across the lock axis), the up axis's roll error [rad] (0 without an up axis) and
        the distance [m] from the frame's origin to the point (across the lock axis)."""
        geo = self.geometry(state, R, targets)
        a, u, b, g = geo["a"], geo["u"], geo["b"], geo["g"]
        aim = np.arctan2(np.linalg.norm(cross(a, u), axis=-1), np.einsum("bmi,bmi->bm", a, u))
        g_perp = g - np.einsum("bmi,bmi->bm", g, a)[..., None] * a
        roll = np.arctan2(np.linalg.norm(cross(b, g_perp), axis=-1), np.einsum("bmi,bmi->bm", b, g_perp))
        roll = np.where(self.has_up & (np.linalg.norm(g_perp, axis=-1) > DEGENERATE), roll, 0.0)
        return aim, roll, geo["n"]

    def misses(self, state, R, targets) -> np.ndarray:
        """Per aim (B, M) [m]: how far the aim ray passes from the point (the distance times
        sin of the angle; the distance itself once the angle passes 90 degrees)."""
        aim, _, distance = self.angles(state, R, targets)
        return distance * np.where(aim < np.pi / 2, np.sin(aim), 1.0)

    def errors(self, point: Point) -> dict[str, np.ndarray]:
        aim, roll, _ = self.angles(point.state, point.R, point.targets)
        out = {}
        for k, name in enumerate(self.names):
            out[f"{name} aim [rad]"] = aim[:, k]
            if self.has_up[k]:
                out[f"{name} up [rad]"] = roll[:, k]
        return out


def up_rotation(direction: np.ndarray) -> np.ndarray:
    """Rotations (..., 3, 3) whose z column is the unit ``direction`` (..., 3) (a slot's up
    direction; identity where the direction is +z)."""
    z = np.asarray(direction, dtype=float)
    z = z / np.linalg.norm(z, axis=-1, keepdims=True)
    helper = np.where(np.abs(z[..., :1]) < 0.9, np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0]))
    x = helper - np.einsum("...i,...i->...", helper, z)[..., None] * z
    x /= np.linalg.norm(x, axis=-1, keepdims=True)
    out = np.stack([x, cross(z, x), z], axis=-1)
    straight_up = np.all(z == np.array([0.0, 0.0, 1.0]), axis=-1)[..., None, None]
    return np.where(straight_up, np.eye(3), out)


# ---------------------------------------------------------------------- holding's view
def holding_view(mechanism: Mechanism, objectives: Sequence[AimObjective], points, ups, state):
    """Aims as frame objectives, for decisions that read only frame objectives (which
    motors :mod:`looprig.core.solvers.holding` may hold): per aim a frame ``"<frame> aim <k>"`` on
    the aimed body whose x axis is the aim axis (y its up axis), tracked on x (and y) to
    the line of sight from where the frame stands in ``state`` (n, 7) to ``points``
    (F, M, 3) [m] (seen across the lock axis), y towards ``ups`` (F, M, 3) across it.

    Returns the mechanism with those frames, their objectives (zero position weight) and
    their target positions (F, M, 3) and rotations (F, M, 3, 3). The line of sight from
    the start pose is an approximation of the one the solve will see, good for a frame
    that moves little while it aims (a head).
    """
    from ..maths.rotations import quat_from_matrix
    from ..model.parts import Frame
    from .tasks import FrameObjective

    objectives = [o.checked() for o in objectives]
    task = AimTask(mechanism, objectives, np.arange(len(objectives)))
    s = np.asarray(state, dtype=float)[None]
    R = quat_to_matrix(s[..., 3:])
    points = np.asarray(points, dtype=float)
    F, M = points.shape[:2]
    ups = np.broadcast_to(np.asarray(ups, dtype=float), (F, M, 3))
    # the frames' origins and axes at the start
    geo = task.geometry(s, R, Targets(points[:1], up_rotation(ups[:1])))
    origin, lock = geo["o"][0], geo["l"][0]  # (M, 3)
    frames, proxies = list(mechanism.frames), []
    positions, rotations = np.zeros((F, M, 3)), np.zeros((F, M, 3, 3))
    for k, (aim, body) in enumerate(zip(objectives, task.body, strict=True)):
        frame = mechanism.frame(aim.frame)
        R_frame = quat_to_matrix(frame.orientation)
        x = np.asarray(aim.axis)
        y = np.asarray(aim.up) if aim.up is not None else _across(x)
        axes = np.stack([x, y, np.cross(x, y)], -1)  # proxy axes in the frame's axes
        name = f"{aim.frame} aim {k}"
        orientation = quat_from_matrix(R_frame @ axes)
        frames.append(Frame(name, mechanism.bodies[body].name, frame.position, orientation))
        weight = (1.0, 1.0 if aim.up is not None else 0.0, 0.0)
        proxies.append(FrameObjective(name, (0.0, 0.0, 0.0), weight))
        d = points[:, k] - origin[k]
        d = d - (d @ lock[k])[:, None] * lock[k]
        norm = np.linalg.norm(d, axis=-1, keepdims=True)
        sight = np.where(norm > DEGENERATE, d / np.where(norm > DEGENERATE, norm, 1.0), R_frame @ x)
        g = ups[:, k] - np.einsum("fi,fi->f", ups[:, k], sight)[:, None] * sight
        size = np.linalg.norm(g, axis=-1, keepdims=True)
        fallback = np.array([_across(v) for v in sight])
        y_target = np.where(size > 1e-9, g / np.where(size > 1e-9, size, 1.0), fallback)
        rotations[:, k] = np.stack([sight, y_target, np.cross(sight, y_target)], -1)
        positions[:, k] = origin[k]
    proxy_mechanism = Mechanism(
        mechanism.bodies, mechanism.joints, frames, name=mechanism.name, couplings=mechanism.couplings
    )
    return proxy_mechanism, proxies, positions, rotations


def _across(v: np.ndarray) -> np.ndarray:
    """A unit vector perpendicular to the unit vector v."""
    helper = np.array([0.0, 0.0, 1.0]) if abs(v[2]) < 0.9 else np.array([1.0, 0.0, 0.0])
    out = helper - (helper @ v) * v
    return out / np.linalg.norm(out)
