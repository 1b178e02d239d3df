"""Rotation maths in one place: unit quaternions (w, x, y, z), rotation
vectors, rotation matrices and the retraction used by every solver.

All functions accept leading batch axes (``...``). Conventions:

* A body state row is ``[cx, cy, cz, qw, qx, qy, qz]``: CoM position [m] and
  the unit quaternion rotating body coordinates into world coordinates.
* Tangent (update) vectors are ``[dc (3), dtheta (3)]`` with ``dtheta`` a
  rotation vector [rad] in **world** coordinates, applied on the left:
  ``R <- Exp(dtheta) R``. So ``d(R v) = dtheta x (R v)``.
"""

import math

import numpy as np

SMALL_ANGLE = 1e-8  # [rad] below this, series expansions replace sin/cos ratios


def skew(v: np.ndarray) -> np.ndarray:
    """Cross-product matrix: ``skew(v) @ w == cross(v, w)``. (..., 3) -> (..., 3, 3)."""
    v = np.asarray(v, dtype=float)
    out = np.zeros(v.shape + (3,))
    out[..., 0, 1], out[..., 0, 2] = -v[..., 2], v[..., 1]
    out[..., 1, 0], out[..., 1, 2] = v[..., 2], -v[..., 0]
    out[..., 2, 0], out[..., 2, 1] = -v[..., 1], v[..., 0]
    return out


def quat_normalize(q: np.ndarray) -> np.ndarray:
    """Unit quaternions with non-negative w (one sign for each rotation)."""
    q = np.asarray(q, dtype=float)
    norm = np.sqrt(np.einsum("...a,...a->...", q, q))[..., None]
    return q / np.where(q[..., :1] < 0.0, -norm, norm)


# (p outer q)_flat (16,) @ _HAMILTON = p * q: the Hamilton product as one matmul.
_HAMILTON = np.zeros((4, 4, 4))
for _i, _j, _k, _sign in [
    (0, 0, 0, 1), (1, 1, 0, -1), (2, 2, 0, -1), (3, 3, 0, -1),
    (0, 1, 1, 1), (1, 0, 1, 1), (2, 3, 1, 1), (3, 2, 1, -1),
    (0, 2, 2, 1), (1, 3, 2, -1), (2, 0, 2, 1), (3, 1, 2, 1),
    (0, 3, 3, 1), (1, 2, 3, 1), (2, 1, 3, -1), (3, 0, 3, 1),
]:  # fmt: skip
    _HAMILTON[_i, _j, _k] = _sign
_HAMILTON = _HAMILTON.reshape(16, 4)


def quat_multiply(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Hamilton product ``p * q`` (rotate by q, then by p). (..., 4)."""
    outer = np.asarray(p, dtype=float)[..., :, None] * np.asarray(q, dtype=float)[..., None, :]
    return outer.reshape(outer.shape[:-2] + (16,)) @ _HAMILTON


def quat_conjugate(q: np.ndarray) -> np.ndarray:
    """Inverse of a unit quaternion. (..., 4)."""
    return np.asarray(q, dtype=float) * np.array([1.0, -1.0, -1.0, -1.0])


# R_flat (9,) = (q_a q_b for a <= b) (10,) @ _QUAT_TO_MATRIX: the homogeneous form of the
# rotation matrix of a unit quaternion, one matmul for any batch (the products gathered
# with np.take: broadcasting over a trailing axis of 4 costs twice as much in batches).
_QUAT_TO_MATRIX = np.zeros((4, 4, 3, 3))
for (_a, _b, _r, _c), _v in {
    (0, 0, 0, 0): 1,
    (1, 1, 0, 0): 1,
    (2, 2, 0, 0): -1,
    (3, 3, 0, 0): -1,
    (0, 0, 1, 1): 1,
    (1, 1, 1, 1): -1,
    (2, 2, 1, 1): 1,
    (3, 3, 1, 1): -1,
    (0, 0, 2, 2): 1,
    (1, 1, 2, 2): -1,
    (2, 2, 2, 2): -1,
    (3, 3, 2, 2): 1,
    (1, 2, 0, 1): 2,
    (0, 3, 0, 1): -2,
    (1, 3, 0, 2): 2,
    (0, 2, 0, 2): 2,
    (1, 2, 1, 0): 2,
    (0, 3, 1, 0): 2,
    (2, 3, 1, 2): 2,
    (0, 1, 1, 2): -2,
    (1, 3, 2, 0): 2,
    (0, 2, 2, 0): -2,
    (2, 3, 2, 1): 2,
    (0, 1, 2, 1): 2,
}.items():
    _QUAT_TO_MATRIX[_a, _b, _r, _c] = _v
_PAIR_A, _PAIR_B = np.triu_indices(4)  # the table's entries all have a <= b
_QUAT_TO_MATRIX = _QUAT_TO_MATRIX[_PAIR_A, _PAIR_B].reshape(10, 9)


def quat_to_matrix(q: np.ndarray) -> np.ndarray:
    """Rotation matrices of unit quaternions. (..., 4) -> (..., 3, 3)."""
    q = np.asarray(q, dtype=float)
    flat = q.reshape(-1, 4)
    products = np.take(flat, _PAIR_A, axis=1) * np.take(flat, _PAIR_B, axis=1)
    return products.dot(_QUAT_TO_MATRIX).reshape(q.shape[:-1] + (3, 3))


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cross product over the last axis (..., 3); a lean ``np.cross`` for hot loops."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    out = np.empty(np.broadcast_shapes(a.shape, b.shape))
    out[..., 0] = a1 * b2 - a2 * b1
    out[..., 1] = a2 * b0 - a0 * b2
    out[..., 2] = a0 * b1 - a1 * b0
    return out


class BodyVectors:
    """Vectors fixed in bodies, turned to world axes all at once.

    bodies (V,): each vector's body index among n bodies; vectors (V, 3): in body
    coordinates; ``extra`` further rows follow in :meth:`turn`'s result, zero (room for
    the caller's own vectors). :meth:`turn` is one product of each carrying body's
    rotation with its vectors (as the columns of ``local`` (bodies, 3, k), zero padded)
    and one gather.
    """

    def __init__(self, bodies: np.ndarray, vectors: np.ndarray, n: int, extra: int = 0):
        bodies = np.asarray(bodies, dtype=int)
        used, position = np.unique(bodies, return_inverse=True)
        if not len(used):
            used = np.zeros(1, dtype=int)  # one body for the zero column of the extra rows
        self.bodies = slice(None) if len(used) == n else used  # the bodies that carry vectors
        slot = np.zeros(len(bodies), dtype=int)  # each vector's column among its body's
        count = np.zeros(len(used), dtype=int)
        for k, p in enumerate(position):
            slot[k], count[p] = count[p], count[p] + 1
        width = max(int(count.max(initial=0)), 1) + (extra > 0)  # the last column stays zero
        self.local = np.zeros((len(used), 3, width))
        self.local[position, :, slot] = np.reshape(vectors, (-1, 3))
        index = (3 * position[:, None] + np.arange(3)) * width + slot[:, None]  # (V, 3) in the product
        self.index = np.concatenate([index, np.full((extra, 3), width - 1)])

    def turn(self, R: np.ndarray) -> np.ndarray:
        """The vectors in world axes (..., V, 3) for body rotations R (..., n, 3, 3)."""
        batch = R.shape[:-3]
        R = R[..., self.bodies, :, :]
        frames, bodies = math.prod(batch), R.shape[-3]
        if frames == 1:
            turned = (R @ self.local).reshape(1, -1)
        else:  # one product per body over all frames, (3 frames, 3) @ (3, k): numpy's stacked
            # products of single 3x3 matrices cost ~0.1 us each, more than this reordering
            by_body = R.reshape(frames, bodies, 3, 3).transpose(1, 0, 2, 3).reshape(bodies, 3 * frames, 3)
            by_body = by_body @ self.local  # (bodies, 3 frames, k)
            turned = by_body.reshape(bodies, frames, -1).transpose(1, 0, 2).reshape(frames, -1)
        # (mode "wrap": every index is in range, and numpy's bounds check costs more)
        return np.take(turned, self.index, axis=-1, mode="wrap").reshape(batch + self.index.shape)


_XYZ, _YZX, _ZXY = np.arange(3), np.array([1, 2, 0]), np.array([2, 0, 1])


def tangent_block_entries(x, y, t, sign, one: int, zero: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices that make :func:`bilinear_entries` build derivatives by body tangents
    ``[dc, dtheta]`` (6 columns): translational part ``sign t``, rotational part ``x × y``.

    x, y, t (S): indices of vectors in a bank (..., V, 3) (-1: none, a zero part); sign (S):
    +1 or -1; one, zero: the flat indices of a bank entry equal to 1 and of one equal to 0.
    Returns (first, second), (2, *S, 6) each: a translation is ``t 1 - 0 0`` (or ``0 0 - t 1``),
    a rotation ``x_yzx y_zxy - x_zxy y_yzx``.
    """
    x, y, t, sign = (np.asarray(a) for a in (x, y, t, sign))

    def entries(vectors, components):
        return np.where(vectors[..., None] >= 0, 3 * vectors[..., None] + components, zero)

    first, second = np.full((2, 2) + x.shape + (6,), zero)
    for k, positive in enumerate((sign > 0, sign < 0)):  # t 1 in (x1, y2) or in (x2, y1)
        first[k, ..., :3] = np.where(positive[..., None], entries(t, _XYZ), zero)
        second[k, ..., :3] = np.where(positive[..., None], one, zero)
    first[0, ..., 3:], second[0, ..., 3:] = entries(x, _YZX), entries(y, _ZXY)
    first[1, ..., 3:], second[1, ..., 3:] = entries(x, _ZXY), entries(y, _YZX)
    return first, second


def bilinear_entries(bank: np.ndarray, first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """``x1 y2 - x2 y1`` (..., *S) over the entries of ``bank`` (..., E), all at once:
    ``first`` (2, *S) indexes x1 and x2, ``second`` y2 and y1 (see :func:`tangent_block_entries`)."""
    batch = bank.shape[:-1]
    # frames last while gathering: each gathered entry is then one contiguous row of frames
    flat = np.ascontiguousarray(bank.reshape(-1, bank.shape[-1]).T)  # (E, frames)
    x, y = (np.take(flat, index, axis=0, mode="wrap") for index in (first, second))
    x *= y  # in place: one large temporary fewer
    out = x[0] - x[1]  # (*S, frames)
    return out.transpose((out.ndim - 1, *range(out.ndim - 1))).reshape(batch + first.shape[1:])


def quat_from_matrix(R: np.ndarray) -> np.ndarray:
    """Unit quaternions (w >= 0) of rotation matrices. (..., 3, 3) -> (..., 4).

    Uses the largest of the four candidate pivots for accuracy everywhere.
    """
    R = np.asarray(R, dtype=float)
    tr = R[..., 0, 0] + R[..., 1, 1] + R[..., 2, 2]
    candidates = np.stack(
        [
            np.stack(
                [
                    1 + tr,
                    R[..., 2, 1] - R[..., 1, 2],
                    R[..., 0, 2] - R[..., 2, 0],
                    R[..., 1, 0] - R[..., 0, 1],
                ],
                axis=-1,
            ),
            np.stack(
                [
                    R[..., 2, 1] - R[..., 1, 2],
                    1 + 2 * R[..., 0, 0] - tr,
                    R[..., 0, 1] + R[..., 1, 0],
                    R[..., 0, 2] + R[..., 2, 0],
                ],
                axis=-1,
            ),
            np.stack(
                [
                    R[..., 0, 2] - R[..., 2, 0],
                    R[..., 0, 1] + R[..., 1, 0],
                    1 + 2 * R[..., 1, 1] - tr,
                    R[..., 1, 2] + R[..., 2, 1],
                ],
                axis=-1,
            ),
            np.stack(
                [
                    R[..., 1, 0] - R[..., 0, 1],
                    R[..., 0, 2] + R[..., 2, 0],
                    R[..., 1, 2] + R[..., 2, 1],
                    1 + 2 * R[..., 2, 2] - tr,
                ],
                axis=-1,
            ),
        ],
        axis=-2,
    )  # (..., 4 candidates, 4); candidate k has component k equal to 4 q_k^2
    pivot = np.argmax(np.diagonal(candidates, axis1=-2, axis2=-1), axis=-1)
    q = np.take_along_axis(candidates, pivot[..., None, None], axis=-2)[..., 0, :]
    return quat_normalize(q)


def quat_from_rotvec(v: np.ndarray) -> np.ndarray:
    """``Exp``: rotation vector [rad] (..., 3) -> unit quaternion (..., 4)."""
    v = np.asarray(v, dtype=float)
    angle = np.sqrt(np.einsum("...a,...a->...", v, v))
    half = 0.5 * angle
    out = np.empty(v.shape[:-1] + (4,))
    out[..., 0] = np.cos(half)
    # sin(a/2)/a; below SMALL_ANGLE its series 1/2 - a^2/48 is 1/2 in floating point
    ratio = np.where(angle < SMALL_ANGLE, 0.5, np.sin(half) / np.maximum(angle, SMALL_ANGLE))
    out[..., 1:] = ratio[..., None] * v
    return out


def rotvec_from_quat(q: np.ndarray) -> np.ndarray:
    """``Log``: unit quaternion (..., 4) -> rotation vector [rad] in [0, pi]."""
    q = quat_normalize(q)
    w = np.clip(q[..., :1], -1.0, 1.0)
    s = np.linalg.norm(q[..., 1:], axis=-1, keepdims=True)
    angle = 2.0 * np.arctan2(s, w)
    small = s < SMALL_ANGLE
    ratio = np.where(small, 2.0 / np.where(small, w, 1.0), angle / np.where(small, 1.0, s))
    return ratio * q[..., 1:]


def matrix_from_rotvec(v: np.ndarray) -> np.ndarray:
    """Rodrigues: rotation vector [rad] (..., 3) -> rotation matrix (..., 3, 3)."""
    return quat_to_matrix(quat_from_rotvec(v))


def axis_angle_matrix(axis: np.ndarray, angle) -> np.ndarray:
    """Rotation by ``angle`` [rad] about unit ``axis``. Broadcasts -> (..., 3, 3)."""
    axis = np.asarray(axis, dtype=float)
    return matrix_from_rotvec(axis * np.asarray(angle, dtype=float)[..., None])


def retract(state: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """Move body states along tangent vectors.

    state: (..., n, 7) ``[c, q]``; delta: (..., n, 6) ``[dc [m], dtheta [rad], world]``.
    Returns ``[c + dc, Exp(dtheta) * q]`` with re-normalised quaternions (w >= 0).
    """
    out = np.empty(np.broadcast(state[..., 0], delta[..., 0]).shape + (7,))
    out[..., :3] = state[..., :3] + delta[..., :3]
    dq = quat_from_rotvec(delta[..., 3:])
    q = quat_multiply(dq, state[..., 3:])
    norm = np.sqrt(np.einsum("...a,...a->...", q, q))
    out[..., 3:] = q / np.where(q[..., 0] < 0.0, -norm, norm)[..., None]
    return out


def complete_frame(axis: np.ndarray) -> np.ndarray:
    """Orthonormal right-handed frame whose first column is ``axis``.

    axis: (..., 3), non-zero. Returns (..., 3, 3) with columns (x, y, z), x = axis/|axis|.
    The y column is the unit vector orthogonal to x closest to the world axis least
    aligned with x, so the choice is deterministic.
    """
    x = np.asarray(axis, dtype=float)
    x = x / np.linalg.norm(x, axis=-1, keepdims=True)
    helper = np.eye(3)[np.argmin(np.abs(x), axis=-1)]
    y = helper - np.sum(helper * x, axis=-1, keepdims=True) * x
    y /= np.linalg.norm(y, axis=-1, keepdims=True)
    return np.stack([x, y, cross(x, y)], axis=-1)


def frame_with_axes(primary: np.ndarray, secondary: np.ndarray | None) -> np.ndarray:
    """Right-handed frame (3, 3) with x = primary and y = secondary made orthogonal.

    Without ``secondary``, the y axis is chosen by :func:`complete_frame`.
    """
    if secondary is None:
        return complete_frame(primary)
    x = np.asarray(primary, dtype=float)
    x = x / np.linalg.norm(x)
    y = np.asarray(secondary, dtype=float) - np.dot(secondary, x) * x
    y /= np.linalg.norm(y)
    return np.stack([x, y, np.cross(x, y)], axis=-1)


def relative_angle_matrix_jacobian(M: np.ndarray) -> np.ndarray:
    """``d vee(M - M^T) / d dtheta`` for ``M <- Exp(dtheta) M``: ``tr(M) I - M``.

    M: (..., 3, 3) -> (..., 3, 3). Used by the state and velocity regularizers.
    """
    tr = M[..., 0, 0] + M[..., 1, 1] + M[..., 2, 2]
    out = -M
    out[..., 0, 0] += tr
    out[..., 1, 1] += tr
    out[..., 2, 2] += tr
    return out


def vee_antisymmetric(M: np.ndarray) -> np.ndarray:
    """``vee(M - M^T)``: (..., 3, 3) -> (..., 3); equals 2 sin(phi) u for a rotation."""
    out = np.empty(M.shape[:-1])
    out[..., 0] = M[..., 2, 1] - M[..., 1, 2]
    out[..., 1] = M[..., 0, 2] - M[..., 2, 0]
    out[..., 2] = M[..., 1, 0] - M[..., 0, 1]
    return out


def rotvec_from_matrix(R: np.ndarray) -> np.ndarray:
    """``Log``: rotation matrices (..., 3, 3) turning by less than pi -> rotation vectors
    [rad] (..., 3) (scipy's ``as_rotvec`` first makes R orthogonal: four times the time)."""
    v = 0.5 * vee_antisymmetric(R)  # sin(phi) u
    sin = np.sqrt((v * v).sum(-1))
    phi = np.arctan2(sin, 0.5 * (R[..., 0, 0] + R[..., 1, 1] + R[..., 2, 2] - 1.0))
    return v * (phi / np.where(sin > 0.0, sin, 1.0))[..., None]


def rotation_angle(R: np.ndarray) -> np.ndarray:
    """Angle [rad] in [0, pi] of rotation matrices (..., 3, 3), accurate at 0 and pi."""
    R = np.asarray(R, dtype=float)
    sin = 0.5 * np.linalg.norm(vee_antisymmetric(R), axis=-1)
    cos = 0.5 * (R[..., 0, 0] + R[..., 1, 1] + R[..., 2, 2] - 1.0)
    return np.arctan2(sin, cos)


def unit_axis_rotation(x: float, y: float, z: float, angle: float) -> np.ndarray:
    """Rotation (3, 3) by ``angle`` [rad] about the unit axis (x, y, z).

    Rodrigues' ``cos I + sin [u]x + (1 - cos) u u^T`` in Python scalars: for hot
    loops over single joints, where numpy's per-call cost on 3-vectors dominates.
    """
    c, s = math.cos(angle), math.sin(angle)
    t = 1.0 - c
    return np.array(
        [
            [c + t * x * x, t * x * y - s * z, t * x * z + s * y],
            [t * x * y + s * z, c + t * y * y, t * y * z - s * x],
            [t * x * z - s * y, t * y * z + s * x, c + t * z * z],
        ]
    )


def nearest_rotation(M: np.ndarray) -> np.ndarray:
    """The rotation closest to M (..., 3, 3) in Frobenius norm (polar factor, det +1).

    Removes scale, shear and round-off, e.g. before converting to a quaternion.
    """
    U, _, Vt = np.linalg.svd(np.asarray(M, dtype=float))
    flip = np.linalg.det(U @ Vt) < 0
    U[..., :, -1] *= np.where(flip, -1.0, 1.0)[..., None]
    return U @ Vt


def pose_matrix(state: np.ndarray) -> np.ndarray:
    """Homogeneous transforms (..., 4, 4) of poses ``[p (3) [m], q (4) wxyz]`` (..., 7)."""
    state = np.asarray(state, dtype=float)
    T = np.zeros(state.shape[:-1] + (4, 4))
    T[..., :3, :3] = quat_to_matrix(state[..., 3:])
    T[..., :3, 3] = state[..., :3]
    T[..., 3, 3] = 1.0
    return T


def pose_from_matrix(T: np.ndarray) -> np.ndarray:
    """Poses ``[p, q]`` (..., 7) of transforms (..., 4, 4); the rotation part is made
    orthonormal first (:func:`nearest_rotation`), so scaled or float32 input is fine."""
    T = np.asarray(T, dtype=float)
    q = quat_from_matrix(nearest_rotation(T[..., :3, :3]))
    return np.concatenate([T[..., :3, 3], q], axis=-1)
