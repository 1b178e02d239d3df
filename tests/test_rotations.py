"""Rotation identities (property-based)."""

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from looprig.core.maths import rotations as rot

vectors = arrays(np.float64, 3, elements=st.floats(-3.0, 3.0))
quaternions = arrays(np.float64, 4, elements=st.floats(-1.0, 1.0)).filter(lambda q: np.linalg.norm(q) > 0.1)


@given(quaternions)
def test_matrix_is_a_rotation_and_converts_back(q):
    R = rot.quat_to_matrix(rot.quat_normalize(q))
    assert np.allclose(R @ R.T, np.eye(3), atol=1e-12)
    assert np.isclose(np.linalg.det(R), 1.0)
    assert np.allclose(rot.quat_to_matrix(rot.quat_from_matrix(R)), R, atol=1e-12)


@given(vectors.filter(lambda v: np.linalg.norm(v) < np.pi - 1e-6))
def test_exp_log_round_trip(v):
    """Log returns the representative with angle in [0, pi]."""
    assert np.allclose(rot.rotvec_from_quat(rot.quat_from_rotvec(v)), v, atol=1e-9)


@given(vectors)
def test_exp_matches_rodrigues(v):
    """R = I + sin(t) K + (1 - cos t) K^2 with K = skew(v / t), t = |v|."""
    t = np.linalg.norm(v)
    K = rot.skew(v / t) if t > 0 else np.zeros((3, 3))
    expected = np.eye(3) + np.sin(t) * K + (1 - np.cos(t)) * K @ K
    assert np.allclose(rot.matrix_from_rotvec(v), expected, atol=1e-12)


@given(quaternions, quaternions)
def test_product_composes_rotations(p, q):
    p, q = rot.quat_normalize(p), rot.quat_normalize(q)
    assert np.allclose(
        rot.quat_to_matrix(rot.quat_multiply(p, q)), rot.quat_to_matrix(p) @ rot.quat_to_matrix(q)
    )


@given(quaternions, arrays(np.float64, 3, elements=st.floats(-1e-3, 1e-3)))
def test_retract_rotates_on_the_left_in_world(q, dtheta):
    state = np.concatenate([np.zeros(3), rot.quat_normalize(q)])[None]
    moved = rot.retract(state, np.concatenate([np.zeros(3), dtheta])[None])
    expected = rot.matrix_from_rotvec(dtheta) @ rot.quat_to_matrix(state[0, 3:])
    assert np.allclose(rot.quat_to_matrix(moved[0, 3:]), expected, atol=1e-14)


@settings(max_examples=50)
@given(arrays(np.float64, 3, elements=st.floats(-1.0, 1.0)).filter(lambda a: np.linalg.norm(a) > 0.1))
def test_complete_frame_is_right_handed_orthonormal(axis):
    F = rot.complete_frame(axis)
    assert np.allclose(F.T @ F, np.eye(3), atol=1e-12)
    assert np.isclose(np.linalg.det(F), 1.0)
    assert np.allclose(F[:, 0], axis / np.linalg.norm(axis))


def test_small_angle_branches_are_continuous():
    for t in (1e-12, 1e-9, 1e-7):
        v = np.array([t, -2 * t, 0.5 * t])
        assert np.allclose(rot.rotvec_from_quat(rot.quat_from_rotvec(v)), v, rtol=1e-6, atol=1e-20)


@given(quaternions, vectors)
def test_relative_angle_jacobian_matches_finite_differences(q, axis):
    """d vee(M - M^T) under M <- Exp(d) M equals (tr M) I - M."""
    M = rot.quat_to_matrix(rot.quat_normalize(q))
    eps = 1e-6
    numeric = np.stack(
        [
            (
                rot.vee_antisymmetric(rot.matrix_from_rotvec(eps * e) @ M)
                - rot.vee_antisymmetric(rot.matrix_from_rotvec(-eps * e) @ M)
            )
            / (2 * eps)
            for e in np.eye(3)
        ],
        axis=-1,
    )
    assert np.allclose(rot.relative_angle_matrix_jacobian(M), numeric, atol=1e-8)


@given(vectors)
def test_rotation_angle_and_scalar_axis_rotation(v):
    """|v| folded into [0, pi] is the angle of Exp(v); the scalar Rodrigues form equals Exp."""
    t = np.linalg.norm(v)
    expected = np.pi - abs(np.pi - t % (2 * np.pi))
    assert np.isclose(rot.rotation_angle(rot.matrix_from_rotvec(v)), expected, atol=1e-7)
    if t > 0:
        u = v / t
        assert np.allclose(rot.unit_axis_rotation(*u.tolist(), t), rot.matrix_from_rotvec(v), atol=1e-12)


@given(vectors)
def test_log_of_a_rotation_matrix_is_its_rotation_vector(v):
    """Log(Exp(v)) = v for turns below pi (the log's domain: at pi the axis's sign is lost)."""
    t = np.linalg.norm(v)
    assume(t < 3.0)
    assert np.allclose(rot.rotvec_from_matrix(rot.matrix_from_rotvec(v)), v, atol=1e-10)


@given(quaternions, vectors, vectors)
def test_pose_matrix_round_trip_and_nearest_rotation(q, p, scale):
    """A scaled rotation's polar factor is the rotation; poses survive the 4x4 round trip."""
    state = np.concatenate([p, rot.quat_normalize(q)])
    T = rot.pose_matrix(state)
    back = rot.pose_from_matrix(T)
    assert np.allclose(back[:3], p) and np.isclose(abs(back[3:] @ state[3:]), 1.0)  # q and -q alike
    R = T[:3, :3]
    stretched = R @ np.diag(1.5 + np.abs(scale))  # positive scale along the body axes
    assert np.allclose(rot.nearest_rotation(stretched), R, atol=1e-9)


@settings(max_examples=25)
@given(st.integers(0, 2**32 - 1))
def test_body_vectors_turn_each_vector_by_its_body(seed):
    """turn(R)[..., v, :] = R[..., body_v, :, :] @ vector_v, for bodies carrying any number
    of vectors (some none) and leading batch axes."""
    rng = np.random.default_rng(seed)
    n, V = 5, int(rng.integers(1, 12))
    bodies = rng.integers(0, n - 1, V)  # the last body carries nothing
    vectors = rng.normal(size=(V, 3))
    R = rot.quat_to_matrix(rot.quat_normalize(rng.normal(size=(2, 3, n, 4))))
    expected = np.einsum("...vab,vb->...va", R[..., bodies, :, :], vectors)
    assert np.allclose(rot.BodyVectors(bodies, vectors, n).turn(R), expected, atol=1e-14)


@settings(max_examples=25)
@given(st.integers(0, 2**32 - 1))
def test_tangent_blocks_are_signed_translations_and_cross_products(seed):
    """bilinear_entries with tangent_block_entries' indices: ``[sign t, x × y]`` per block,
    zero where a part is missing (-1), over a batch of banks."""
    rng = np.random.default_rng(seed)
    V, S = 6, (4, 2)
    bank = rng.normal(size=(3, V + 1, 3))
    bank[:, V] = [1.0, 0.0, 0.0]  # the entries one and zero
    x, y, t = (rng.integers(-1, V, S) for _ in range(3))
    sign = rng.choice([-1.0, 1.0], S)
    entries = rot.tangent_block_entries(x, y, t, sign, one=3 * V, zero=3 * V + 1)
    blocks = rot.bilinear_entries(bank.reshape(3, -1), *entries)

    def vector(i):  # the bank's vectors i (3, *S, 3), zero for -1
        return np.where((i >= 0)[..., None], bank[:, i], 0.0)

    assert blocks.shape == (3, *S, 6)
    assert np.allclose(blocks[..., :3], sign[..., None] * vector(t), atol=1e-15)
    assert np.allclose(blocks[..., 3:], np.cross(vector(x), vector(y)), atol=1e-14)
