"""The linear algebra of one Newton step of the clip in tree coordinates
(:mod:`~looprig.core.solvers.tree_newton`), all frames at once, frame axis last.

Per frame the step solves::

    min 1/2 |J_t dq + r_t|^2 + 1/2 (dq^T H dq) + g^T dq   s.t.  J_c dq - eps_d lambda = -r_c

two ways with the same answer:

* :class:`PrimalSteps`: the KKT system ``[[H + J_t^T J_t, J_c^T], [J_c, -eps_d I]]``
  (D + m_c unknowns);
* :class:`RowSpaceSteps`, when H is diagonal and there are fewer rows than coordinates:
  ``(A H^-1 A^T + E) y = r - A H^-1 g``, ``dq = -H^-1 (A^T y + g)`` with ``A = [J_t; J_c]``,
  ``r = [r_t; r_c]`` and E one on the task rows, eps_d on the constraint rows (m_t + m_c
  unknowns, by the push-through identity ``(H + J^T J)^-1 J^T = H^-1 J^T (J H^-1 J^T + I)^-1``).

The frame tasks enter through :func:`least_squares_rows`: rows with the same normal
equations as :meth:`~looprig.core.solvers.tree.TreeKinematics.task_rows`, a target
tracked in two or three axes in three rows instead of three an axis.

With many frames of small systems (:data:`~looprig.core.maths.frame_last.ELIMINATE_FROM`)
the systems are eliminated frame-last (:func:`~looprig.core.maths.frame_last.eliminate`), else solved by
numpy's LAPACK. Each frame keeps its last factorised system, so that a chord step (new
residuals, the old matrix) is one substitution.
"""

import numpy as np

from ..maths.frame_last import (
    ELIMINATE_FROM,
    ELIMINATE_UP_TO,
    eliminate,
    gram,
    put_frames,
    solved,
    take_frames,
    turn,
)
from .tree import TreeKinematics


def least_squares_rows(model: TreeKinematics, R, c, screws, positions, axes):
    """The frame tasks' rows (residual (m, F), Jacobian (m, D, F); None without
    ``screws``) at rotations R
    (n, 3, 3, F) and CoM positions c (n, 3, F) against target positions (K, 3, F) [m] and
    target axes (K, axis, 3, F), with the same normal equations ``J^T J`` and ``J^T r`` as
    :meth:`~looprig.core.solvers.tree.TreeKinematics.task_rows`: the weighted position
    rows; a target tracked in one axis, that axis's three rows; a target tracked in two
    or three, three rows ``L^T Omega`` on its body's angular velocity Omega (3, D, F),
    with ``L L^T = M = sum_a w_a^2 (I - u_a u_a^T)`` (positive definite with two axes or
    more; Cholesky per frame) and residual ``-L^-1 sum_a w_a^2 (u_a x t_a)`` (u_a the
    body's axis at the iterate, t_a its target): ``sum_a |w_a (u_a x omega)|^2`` is
    ``omega^T M omega``, and ``sum_a w_a^2 (u_a x omega) . (u_a - t_a)`` is
    ``-omega . sum_a w_a^2 (u_a x t_a)``."""
    F = R.shape[-1]
    b = model.frame_body
    rows, jacobians = [], []
    positional = model.sqrt_position > 0  # (K, 3)
    if positional.any():
        p = turn(R[b], model.frame_point) + c[b]
        rows.append((model.sqrt_position[:, :, None] * (p - positions))[positional])
        if screws is not None:
            J = model.sqrt_position[:, :, None, None] * model.point_jacobian(screws, b, p)
            jacobians.append(J[positional])
    tracked = model.sqrt_orientation > 0  # (K, 3)
    many = np.flatnonzero(tracked.sum(1) >= 2)
    if len(many):
        r, J = _orientation_rows(model, R, screws, axes, many)
        rows.append(r)
        jacobians.append(J)  # None without screws
    for k in np.flatnonzero(tracked.sum(1) == 1):  # one axis: its own three rows
        a = int(np.flatnonzero(tracked[k])[0])
        w = model.sqrt_orientation[k, a]
        u = turn(R[b[k : k + 1]], model.frame_axes[k : k + 1, a])
        rows.append(w * (u[0] - axes[k, a]))
        if screws is not None:
            jacobians.append(w * model.direction_jacobian(screws, b[k : k + 1], u)[0])
    if not rows:
        return np.zeros((0, F)), (None if screws is None else np.zeros((0, model.D, F)))
    return np.concatenate(rows), (None if screws is None else np.concatenate(jacobians))


def task_row_count(model: TreeKinematics) -> int:
    """How many rows :func:`least_squares_rows` gives."""
    tracked = (model.sqrt_orientation > 0).sum(1)
    return int((model.sqrt_position > 0).sum() + 3 * (tracked > 0).sum())


def _orientation_rows(model: TreeKinematics, R, screws, axes, targets: np.ndarray):
    """:func:`least_squares_rows`' three rows for each of ``targets`` (T,) tracked in two
    or three axes: residual (3 T, F), Jacobian (3 T, D, F) (None without screws)."""
    b = model.frame_body[targets]
    weights = model.sqrt_orientation[targets] ** 2  # (T, 3)
    F = R.shape[-1]
    equal = bool(np.all(weights == weights[:, :1]))  # three axes, one weight: M = 2 w^2 I
    M = None if equal else np.zeros((len(targets), 3, 3, F))
    s = np.zeros((len(targets), 3, F))
    for a in range(3):
        u = turn(R[b], model.frame_axes[targets, a])  # (T, 3, F)
        t = axes[targets, a]
        w = weights[:, a, None, None]
        if not equal:
            M -= w[..., None] * u[:, :, None] * u[:, None]
            M[:, [0, 1, 2], [0, 1, 2]] += w
        s += w * np.stack(
            [
                u[:, 1] * t[:, 2] - u[:, 2] * t[:, 1],
                u[:, 2] * t[:, 0] - u[:, 0] * t[:, 2],
                u[:, 0] * t[:, 1] - u[:, 1] * t[:, 0],
            ],
            axis=1,
        )
    if equal:
        root = np.broadcast_to(np.sqrt(2.0 * weights[:, :1]), (len(targets), F))
        l00 = l11 = l22 = root
        l10 = l20 = l21 = np.zeros_like(root)
    else:  # M = L L^T, three by three, all frames at once
        l00 = np.sqrt(M[:, 0, 0])
        l10, l20 = M[:, 1, 0] / l00, M[:, 2, 0] / l00
        l11 = np.sqrt(M[:, 1, 1] - l10**2)
        l21 = (M[:, 2, 1] - l20 * l10) / l11
        l22 = np.sqrt(M[:, 2, 2] - l20**2 - l21**2)
    # residual -L^-1 s, by forward substitution
    z0 = -s[:, 0] / l00
    z1 = (-s[:, 1] - l10 * z0) / l11
    z2 = (-s[:, 2] - l20 * z0 - l21 * z1) / l22
    r = np.stack([z0, z1, z2], axis=1).reshape(-1, F)
    if screws is None:
        return r, None
    omega = screws[0][None] * model.moves[b][:, None, :, None]  # (T, 3, D, F)
    if equal:
        return r, (root[:, None, None] * omega).reshape(-1, model.D, F)
    J = np.stack(
        [
            l00[:, None] * omega[:, 0] + l10[:, None] * omega[:, 1] + l20[:, None] * omega[:, 2],
            l11[:, None] * omega[:, 1] + l21[:, None] * omega[:, 2],
            l22[:, None] * omega[:, 2],
        ],
        axis=1,
    )  # L^T Omega
    return r, J.reshape(-1, model.D, F)


class PrimalSteps:
    """Each frame's last factorised KKT system ``[[H + J_t^T J_t, J_c^T], [J_c, -eps_d I]]``
    (D + m_c unknowns) and the task Jacobian it was made with."""

    def __init__(self, D: int, mt: int, mc: int, F: int, compliance: float):
        self.D, self.compliance = D, compliance
        self._systems = _Systems(D + mc, F)
        self._Jt = np.empty((mt, D, F))

    def factorize(self, frames: np.ndarray, H, Jt, Jc) -> None:
        """Factorise ``frames``' systems from their metrics H (D, D, B), task Jacobians
        Jt (m_t, D, B) and constraint Jacobians Jc (m_c, D, B)."""
        D, mc, B = self.D, len(Jc), len(frames)
        K = np.empty((D + mc, D + mc, B))
        K[:D, :D] = H + gram(Jt, np.ones(len(Jt)))
        K[:D, D:] = Jc.transpose(1, 0, 2)
        K[D:, :D] = Jc
        K[D:, D:] = 0.0
        K[np.arange(D, D + mc), np.arange(D, D + mc)] = -self.compliance
        self._systems.factorize(frames, K)
        put_frames(self._Jt, frames, Jt)

    def step(self, frames: np.ndarray, rt, rc, g=None) -> np.ndarray:
        """The steps dq (D, B) of ``frames`` for task residuals rt (m_t, B), constraint
        residuals rc (m_c, B) and a gradient g (D, B) (None: zero), on their last
        factorised systems."""
        gradient = (take_frames(self._Jt, frames) * rt[:, None]).sum(0)
        if g is not None:
            gradient += g
        return self._systems.solve(frames, -np.concatenate([gradient, rc]))[: self.D]


class RowSpaceSteps:
    """Each frame's last factorised row-space system ``A H^-1 A^T + E`` (m_t + m_c
    unknowns), with the rows A and the diagonal metric's inverse it was made with."""

    def __init__(self, D: int, mt: int, mc: int, F: int, compliance: float):
        self._E = np.r_[np.ones(mt), np.full(mc, compliance)]
        self._systems = _Systems(mt + mc, F)
        self._A = np.empty((mt + mc, D, F))
        self._inverse = np.empty((D, F))

    @staticmethod
    def applies(H, mt: int, mc: int) -> bool:
        """Whether the metrics H (D, D, F) are diagonal, well scaled (their smallest
        entry at least 1e-6 of their largest, frame by frame: the row-space system keeps
        its digits) and there are fewer rows than coordinates."""
        D = len(H)
        if mt + mc >= D:
            return False
        h = H[np.arange(D), np.arange(D)]
        off = H.copy()
        off[np.arange(D), np.arange(D)] = 0.0
        return not off.any() and bool(np.all(h.min(0) >= 1e-6 * h.max(0))) and bool(np.all(h > 0.0))

    def factorize(self, frames: np.ndarray, H, Jt, Jc) -> None:
        """As :meth:`PrimalSteps.factorize`, for diagonal metrics H."""
        D = len(H)
        inverse = 1.0 / H[np.arange(D), np.arange(D)]  # (D, B)
        A = np.concatenate([Jt, Jc])
        S = gram(A.transpose(1, 0, 2), inverse)  # sum over coordinates: (m, m, B)
        S[np.arange(len(A)), np.arange(len(A))] += self._E[:, None]
        self._systems.factorize(frames, S)
        put_frames(self._A, frames, A)
        put_frames(self._inverse, frames, inverse)

    def step(self, frames: np.ndarray, rt, rc, g=None) -> np.ndarray:
        """As :meth:`PrimalSteps.step`."""
        A, inverse = take_frames(self._A, frames), take_frames(self._inverse, frames)
        r = np.concatenate([rt, rc])
        if g is not None:
            r -= (A * (inverse * g)[None]).sum(1)
        y = self._systems.solve(frames, r)
        w = (A * y[:, None]).sum(0)  # A^T y (D, B)
        if g is not None:
            w += g
        return -inverse * w


def step_systems(H, mt: int, mc: int, compliance: float):
    """The step systems for a Newton method on F frames with metrics H (D, D, F), m_t task
    rows and m_c constraint rows: :class:`RowSpaceSteps` where they apply, else
    :class:`PrimalSteps`."""
    D, F = H.shape[0], H.shape[-1]
    kind = RowSpaceSteps if RowSpaceSteps.applies(H, mt, mc) else PrimalSteps
    return kind(D, mt, mc, F, compliance)


class _Systems:
    """F symmetric systems (n, n) kept with their factors, frame by frame: frame-last
    elimination with many frames of small systems (:data:`ELIMINATE_FROM`), else numpy's LAPACK on the
    kept matrices."""

    def __init__(self, n: int, F: int):
        self.frame_last = F >= ELIMINATE_FROM and n <= ELIMINATE_UP_TO
        self.K = np.zeros((n, n, F) if self.frame_last else (F, n, n))
        self.factors = np.zeros((n, n, F)) if self.frame_last else None

    def factorize(self, frames: np.ndarray, K) -> None:
        """Keep (and factorise) ``frames``' matrices K (n, n, B)."""
        if self.frame_last:
            put_frames(self.K, frames, K)
            put_frames(self.factors, frames, eliminate(K))
        else:
            self.K[frames] = K.transpose(2, 0, 1)

    def solve(self, frames: np.ndarray, rhs) -> np.ndarray:
        """The solutions (n, B) for right-hand sides rhs (n, B) of ``frames``' systems."""
        if self.frame_last:
            if 2 * len(frames) > self.K.shape[-1]:  # most frames: substituted in place
                return solved(self.K, self.factors, rhs, frames)
            with np.errstate(divide="ignore", invalid="ignore"):  # a singular frame fails its caller's test
                return solved(take_frames(self.K, frames), take_frames(self.factors, frames), rhs)
        K = self.K[frames]
        try:
            return np.linalg.solve(K, rhs.T[..., None])[..., 0].T
        except np.linalg.LinAlgError:  # an exactly singular frame: least squares for all
            return np.einsum("fij,jf->if", np.linalg.pinv(K), rhs)


class FrameStepSystem:
    """One frame's factorised step system, kept for the chord steps: the row-space
    system ``A H^-1 A^T + E`` where :meth:`RowSpaceSteps.applies`, else the KKT matrix
    ``[[H + J_t^T J_t, J_c^T], [J_c, -eps_d I]]`` (the systems above at F = 1, for
    :class:`~looprig.core.solvers.tree_frame.FrameNewton`: H (D, D), J_t (m_t, D), J_c (m_c, D))."""

    def __init__(self, H, Jt, Jc, compliance: float, row_space: bool):
        D, mt, mc = len(H), len(Jt), len(Jc)
        self.row_space, self.D = row_space, D
        if row_space:
            self.inverse = 1.0 / np.diag(H)
            self.A = np.concatenate([Jt, Jc])
            self.K = (self.A * self.inverse) @ self.A.T
            diagonal = self.K.reshape(-1)[:: mt + mc + 1]  # a view
            diagonal[:mt] += 1.0
            diagonal[mt:] += compliance
        else:
            self.Jt = Jt
            self.K = np.zeros((D + mc, D + mc))
            self.K[:D, :D] = H + Jt.T @ Jt
            self.K[:D, D:], self.K[D:, :D] = Jc.T, Jc
            self.K.reshape(-1)[(D + mc + 1) * D :: D + mc + 1] = -compliance

    def step(self, rt: np.ndarray, rc: np.ndarray) -> np.ndarray:
        """The step dq (D,) for task residuals rt (m_t,) and constraint residuals rc (m_c,)."""
        if self.row_space:
            return -self.inverse * (self.A.T @ self._solve(np.concatenate([rt, rc])))
        return self._solve(-np.concatenate([self.Jt.T @ rt, rc]))[: self.D]

    def _solve(self, rhs: np.ndarray) -> np.ndarray:
        try:
            return np.linalg.solve(self.K, rhs)
        except np.linalg.LinAlgError:  # exactly singular: least squares
            return np.linalg.pinv(self.K) @ rhs
