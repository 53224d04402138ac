"""Quaternion and SO(3) helpers (sciad/_core/_geometry.py) against SciPy's Rotation,
finite differences, and their own inverses."""

import jax
import jax.numpy as jnp
import numpy as np
from scipy.spatial.transform import Rotation

from sciad._core._geometry import (
    cross,
    quat_conjugate,
    quat_exp,
    quat_log,
    quat_multiply,
    quat_normalize,
    quat_rotate,
    quat_to_matrix,
    so3_dexpinv,
)

RNG = np.random.default_rng(0)


def unit(n):
    q = RNG.normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def scipy_rot(q):
    return Rotation.from_quat(np.asarray(q)[..., [1, 2, 3, 0]])  # SciPy is scalar-last


def test_quaternions_match_scipy():
    p, q, v = unit(20), unit(20), RNG.normal(size=(20, 3))
    jp, jq, jv = jnp.asarray(p), jnp.asarray(q), jnp.asarray(v)
    np.testing.assert_allclose(quat_to_matrix(jq), scipy_rot(q).as_matrix(), atol=1e-14)
    np.testing.assert_allclose(quat_rotate(jq, jv), scipy_rot(q).apply(v), atol=1e-14)
    # p ⊗ q is "q first, then p"
    np.testing.assert_allclose(
        quat_to_matrix(quat_multiply(jp, jq)), (scipy_rot(p) * scipy_rot(q)).as_matrix(), atol=1e-14
    )
    np.testing.assert_allclose(
        quat_to_matrix(quat_conjugate(jq)), scipy_rot(q).inv().as_matrix(), atol=1e-14
    )
    np.testing.assert_allclose(cross(jv, jv[::-1]), np.cross(v, v[::-1]), atol=1e-14)
    np.testing.assert_allclose(quat_normalize(3.0 * jq), q, atol=1e-15)


def test_exp_log_match_scipy_and_invert():
    r = RNG.normal(size=(20, 3))
    r *= RNG.uniform(0.0, 3.1, size=(20, 1)) / np.linalg.norm(r, axis=1, keepdims=True)  # |r| < π
    r[0] = 0.0
    r[1] = 1e-5  # the series branch
    q = quat_exp(jnp.asarray(r))
    np.testing.assert_allclose(quat_to_matrix(q), Rotation.from_rotvec(r).as_matrix(), atol=1e-14)
    np.testing.assert_allclose(np.linalg.norm(q, axis=1), 1.0, atol=1e-15)
    np.testing.assert_allclose(quat_log(q), r, atol=1e-13)
    np.testing.assert_allclose(quat_log(-q), r, atol=1e-13)  # q and −q: the same rotation


def test_exp_log_smooth_at_identity():
    """Derivatives of every order are finite at the identity and match the limits."""
    zero = jnp.zeros(3)
    jac = jax.jit(jax.jacfwd(quat_exp))(zero)
    np.testing.assert_allclose(jac, np.vstack([np.zeros(3), 0.5 * np.eye(3)]), atol=1e-15)
    hess = jax.jit(jax.hessian(lambda r: quat_exp(r)[0]))(zero)
    np.testing.assert_allclose(hess, -0.25 * np.eye(3), atol=1e-15)  # cos(|r|/2) ≈ 1 − |r|²/8
    jlog = jax.jit(jax.jacfwd(quat_log))(jnp.array([1.0, 0.0, 0.0, 0.0]))
    np.testing.assert_allclose(jlog[:, 1:], 2 * np.eye(3), atol=1e-15)
    # the branches agree across the switch
    for f in (quat_exp, lambda r: quat_log(quat_exp(r))):
        r_in, r_out = jnp.array([0.00999, 0.0, 0.0]), jnp.array([0.01001, 0.0, 0.0])
        jf = jax.jit(jax.jacfwd(f))
        d = jf(r_in) - jf(r_out)
        assert np.max(np.abs(d)) < 1e-4


def test_dexpinv_against_finite_differences():
    """If R(t) = R0 exp(r(t)) has body angular velocity w, dr/dt = J_r⁻¹(r) w; the
    truncated series is exact to O(|r|³ |w|)."""
    w = jnp.asarray(RNG.normal(size=3))
    for scale, bound in ((0.1, 3e-4), (0.01, 3e-7)):
        r = jnp.asarray(RNG.normal(size=3)) * scale
        q0 = quat_exp(r)
        h = 1e-6
        # r(h) with exp(r(h)) = exp(r) ⊗ exp(h w)
        dr = (
            quat_log(quat_multiply(q0, quat_exp(h * w)))
            - quat_log(quat_multiply(q0, quat_exp(-h * w)))
        ) / (2 * h)
        err = np.linalg.norm(so3_dexpinv(r, w) - dr) / np.linalg.norm(w)
        assert err < bound, (scale, err)
