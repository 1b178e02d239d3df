"""The constraint rows of couplings (:class:`~looprig.core.model.parts.Coupling`):
a joint that follows others through a gear ratio, a differential or a polynomial."""

import numpy as np

from .mechanism import Mechanism
from .readoff import JointReadout


def polynomial_and_slope(coefficients: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``P(x) = sum_p c_p x^p`` (p = 1..P) and ``P'(x)`` by Horner, per term: coefficients
    (T, P), x (..., T) -> two (..., T) arrays."""
    value = np.zeros_like(x)
    slope = np.zeros_like(x)
    for c in coefficients.T[::-1]:  # c_P first
        slope = slope * x + value
        value = value * x + c
    return value * x, slope * x + value


class CouplingRows:
    """Rows ``s (q_joint - offset - sum_k P_k(q_source_k))`` of a mechanism's couplings
    (:class:`~looprig.core.model.parts.Coupling`), vectorised over couplings and their terms.

    q from :class:`~looprig.core.model.readoff.JointReadout` (exact Jacobian blocks), read for
    the K coupled joints and then the T terms (one per source of each coupling, all
    couplings' in one stack, their polynomials padded to one degree); ``s`` is the length
    scale L for an angle-valued joint (rows in metres, like the dot rows), 1 for a
    displacement. The row's derivative is ``s (dq_joint - sum_k P_k'(q_k) dq_k)``. A row
    touches the parents and children of its joints, which may repeat, so its Jacobian is
    accumulated; the blocks come in slots (the joints' parents, their children, then per
    term rank r the parents and children of every coupling's r-th source), none of which
    holds a row twice, so each slot scatters with one fancy-indexed add.
    """

    def __init__(self, mechanism: Mechanism, first_row: int, length_scale: float, column_of_body: np.ndarray):
        couplings = mechanism.couplings
        K = len(couplings)
        term_coupling = np.array([k for k, c in enumerate(couplings) for _ in c.sources], int)  # (T,)
        term_rank = np.array([r for c in couplings for r in range(len(c.sources))], int)
        joints = [mechanism.joint(c.joint) for c in couplings]
        joints += [mechanism.joint(s) for c in couplings for s in c.sources]
        self.readout = JointReadout(mechanism, joints)
        self.rows = first_row + np.arange(K)
        self.offset = np.array([c.offset for c in couplings])
        coefficients = [c.coefficients() for c in couplings]
        degree = max(x.shape[1] for x in coefficients)
        self.coefficients = np.concatenate(
            [np.pad(x, ((0, 0), (0, degree - x.shape[1]))) for x in coefficients]
        )  # (T, P)
        self.scale = np.where(self.readout.is_angle[:K], length_scale, 1.0)
        self.term_coupling = term_coupling
        self.sum_terms = np.zeros((len(term_coupling), K))  # (T, K): adds each coupling's terms
        self.sum_terms[np.arange(len(term_coupling)), term_coupling] = 1.0
        r = self.readout
        # per slot: its entries in the readout's joints, and which body of each (0 parent, 1 child)
        entries = [np.arange(K)] + [
            K + np.flatnonzero(term_rank == rank) for rank in range(term_rank.max() + 1)
        ]
        self.slots = [(e, side) for e in entries for side in (0, 1)]
        entry_row = self.rows[np.concatenate([np.arange(K), term_coupling])]  # (K + T,)
        self.scatter = []
        for e, side in self.slots:  # per slot: kept entries, their rows (Kf, 1), columns (Kf, 6)
            col0 = column_of_body[(r.parent, r.child)[side][e]]
            keep = np.flatnonzero(col0 >= 0)
            self.scatter.append((keep, entry_row[e][keep][:, None], col0[keep][:, None] + np.arange(6)))

    def evaluate(self, state, R, jacobian: bool):
        """Rows (..., K) [m] and, with ``jacobian``, their blocks per slot (..., k, 6)."""
        K = len(self.rows)
        q = self.readout.read(state, R=R)  # (..., K + T)
        value, slope = polynomial_and_slope(self.coefficients, q[..., K:])
        rows = self.scale * (q[..., :K] - self.offset - value @ self.sum_terms)
        if not jacobian:
            return rows, None
        blocks = self.readout.blocks(state, R)  # (..., K + T, 2, 6)
        weight = np.concatenate(
            [np.broadcast_to(self.scale, slope.shape[:-1] + (K,)), -self.scale[self.term_coupling] * slope],
            -1,
        )
        weighted = weight[..., None, None] * blocks
        return rows, tuple(weighted[..., e, side, :] for e, side in self.slots)
