"""The joint constraints' curvature: the second-order part of the SQP's Newton model.

Where the objectives compete (non-zero residuals at the answer) the constraints
hold the objective's gradient with non-zero multipliers, ``grad f + A^T lam = 0``,
and the Hessian of the Lagrangian ``f + lam . C`` differs from the Gauss-Newton
model by ``sum_j lam_j Hess C_j``. Without that part SQP converges linearly, as
slowly as the constraint forces are large against the curvature the tasks see
(the walker's CoM gait: ~12 iterations a frame, 56 of 961 frames stopped at the
limit); with it, quadratically (docs/solver.md, "The Hessian model", says how
the SQP takes the multipliers and when it adds this part).

Every row is a bilinear form in body-fixed vectors turned by one or two bodies,
so its Hessian through ``retract`` (``R <- Exp(dtheta) R``, ``c <- c + dc``)
has a closed form: with ``w = R x``, ``Exp(theta) w = w + theta x w +
1/2 theta x (theta x w) + ...``, hence

* ``Hess_theta (a . Exp(theta) w) = sym(a w^T) - (a . w) I``       (:func:`_turn`)
* ``d2 / dtheta_i dtheta_j (Exp(theta_i) u) . (Exp(theta_j) v) = [u]x^T [v]x``

per primitive (``mu`` the row's multiplier, 3 of them for a point):

* point ``w_i + c_i - w_j - c_j``: ``theta_i theta_i: turn(mu, w_i)``,
  ``theta_j theta_j: -turn(mu, w_j)``
* dot ``L a . b``: ``theta_i theta_i: mu L turn(b, a)``, ``theta_j theta_j:
  mu L turn(a, b)``, ``theta_i theta_j: mu L [a]x^T [b]x``
* slide ``(w_j + c_j - w_i - c_i) . n - d`` (n and w_i turn with body i, so
  ``w_i . n`` is constant): ``theta_i theta_i: mu turn(w_j + c_j - c_i, n)``,
  ``theta_j theta_j: mu turn(n, w_j)``, ``theta_i theta_j: mu [n]x^T [w_j]x``,
  ``c_i theta_i: mu [n]x``, ``c_j theta_i: -mu [n]x``

The coupling rows (gears, differentials and polynomial couplings through the
joint read-off) keep their Gauss-Newton model: they are rare, and the method's
convergence does not need every second-order part to be exact, only the large
ones (a polynomial coupling's own ``P''(q) dq^2`` included).

The stacks read here are :class:`~looprig.core.model.constraints.ConstraintSet`'s
own (one primitive per stack, the vectors rotated by one einsum as in its
``evaluate``).
"""

import numpy as np
import scipy.sparse as sp

from ..maths.rotations import skew
from ..model.constraints import ConstraintSet

_EYE3 = np.eye(3)


def _turn(a: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Hessian (..., 3, 3) over theta of ``a . Exp(theta) w`` at theta = 0: ``sym(a w^T) - (a.w) I``."""
    aw = a[..., :, None] * w[..., None, :]
    return 0.5 * (aw + np.swapaxes(aw, -1, -2)) - np.einsum("...a,...a->...", a, w)[..., None, None] * _EYE3


def _cross_product_of_skews(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``[u]x^T [v]x = (u . v) I - v u^T``, (..., 3, 3)."""
    return np.einsum("...a,...a->...", u, v)[..., None, None] * _EYE3 - v[..., :, None] * u[..., None, :]


class ConstraintCurvature:
    """``sum_j lam_j Hess C_j`` of an IK constraint set (actuators passive), in the
    solver's tangent coordinates: (B, N, N), symmetric, usually indefinite.

    Built once per problem: the block layout (which 3x3 block of which body pair
    goes where in the N x N matrix) is a sparse scatter matrix, so one product
    assembles the blocks of all frames of a batch.
    """

    def __init__(self, constraints: ConstraintSet):
        if constraints.actuated:
            raise ValueError("ConstraintCurvature is for the IK's constraint sets (actuators passive)")
        self.constraints = constraints
        cs, col = constraints, constraints.column_of_body
        # (body of the block's rows, row offset, body of its columns, column offset) per block kind
        layout = {
            "point": [("bi", 3, "bi", 3), ("bj", 3, "bj", 3)],
            "dot": [("bi", 3, "bi", 3), ("bj", 3, "bj", 3), ("bi", 3, "bj", 3)],
            "slide": [
                ("bi", 3, "bi", 3),
                ("bj", 3, "bj", 3),
                ("bi", 3, "bj", 3),
                ("bi", 0, "bi", 3),
                ("bj", 0, "bi", 3),
            ],
        }
        stacks = {"point": cs._point, "dot": cs._dot, "slide": cs._slide}
        N = cs.n_vars
        rows, cols, sources = [], [], []
        start = 0
        for kind, blocks in layout.items():
            stack = stacks[kind]
            for row_body, row_offset, col_body, col_offset in blocks:
                br, bc = getattr(stack, row_body), getattr(stack, col_body)
                k = len(br)
                index = start + np.arange(9 * k).reshape(k, 3, 3)
                start += 9 * k
                keep = (col[br] >= 0) & (col[bc] >= 0)
                r = (col[br][keep] + row_offset)[:, None, None] + np.arange(3)[:, None]
                c = (col[bc][keep] + col_offset)[:, None, None] + np.arange(3)
                r, c = np.broadcast_arrays(r, c)
                rows.append(r.ravel())
                cols.append(c.ravel())
                sources.append(index[keep].ravel())
                if (row_body, row_offset) != (col_body, col_offset):  # the mirrored block
                    rows.append(c.ravel())
                    cols.append(r.ravel())
                    sources.append(index[keep].ravel())
        flat = np.concatenate(rows) * N + np.concatenate(cols) if rows else np.zeros(0, int)
        source = np.concatenate(sources) if sources else np.zeros(0, int)
        # (N*N, values): one product places every block of every frame
        self._scatter = sp.csr_matrix((np.ones(len(flat)), (flat, source)), shape=(N * N, start))

    def __call__(self, state: np.ndarray, R: np.ndarray, multipliers: np.ndarray) -> np.ndarray:
        """Curvature (B, N, N) at states (B, n, 7) with rotations R (B, n, 3, 3) for
        multipliers (B, m) of the constraint rows (the KKT solve's, in its sign:
        ``grad f + A^T lam = 0``)."""
        cs = self.constraints
        B, L = len(state), cs.length_scale
        c = state[..., :3]
        W = np.einsum("...mab,mb->...ma", R[..., cs._vector_body, :, :], cs._vector_local)
        v = cs._vector_slices
        values = []
        s = cs._point
        if len(s.bi):
            mu = multipliers[:, s.rows]  # (B, K, 3)
            values += [_turn(mu, W[:, v["point_i"]]), -_turn(mu, W[:, v["point_j"]])]
        s = cs._dot
        if len(s.bi):
            mu = L * multipliers[:, s.rows[:, 0], None, None]
            a, b = W[:, v["dot_i"]], W[:, v["dot_j"]]
            values += [mu * _turn(b, a), mu * _turn(a, b), mu * _cross_product_of_skews(a, b)]
        s = cs._slide
        if len(s.bi):
            mu = multipliers[:, s.rows[:, 0], None, None]
            wj, n = W[:, v["slide_j"]], W[:, v["slide_axis"]]
            n_cross = mu * skew(n)
            values += [
                mu * _turn(wj + c[:, s.bj] - c[:, s.bi], n),
                mu * _turn(n, wj),
                mu * _cross_product_of_skews(n, wj),
                n_cross,
                -n_cross,
            ]
        N = cs.n_vars
        if not values:
            return np.zeros((B, N, N))
        stacked = np.concatenate([x.reshape(B, -1) for x in values], axis=1)  # (B, values)
        return np.ascontiguousarray((self._scatter @ stacked.T).T).reshape(B, N, N)
