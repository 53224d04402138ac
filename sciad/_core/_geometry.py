"""Geometry shared by the pillars."""

import jax.numpy as jnp
from jaxtyping import Array, Bool, Float
import numpy as np


def safe_norm(dr: Float[Array, "*b d"], mask: Bool[Array, "*b"]) -> Float[Array, "*b"]:
    """|dr| over the last axis where `mask`, else 1, with finite gradients everywhere.

    The double-`where` trick: masked entries (coincident or padded pairs, r = 0) never
    reach the square root, so their gradient is exactly zero, never NaN. Callers
    discard masked results with a second `where`.
    """
    return jnp.sqrt(jnp.where(mask, jnp.sum(dr**2, axis=-1), 1.0))


# ---------------------------------------------------------------------------------------
# Unit quaternions and SO(3), Hamilton convention, scalar first: q = (w, x, y, z), the
# same as MuJoCo. A quaternion q rotates a vector v to q ⊗ (0, v) ⊗ q*; q and −q are the
# same rotation. Reference: Solà, "Quaternion kinematics for the error-state Kalman
# filter", arXiv:1711.02508 (2017), §1–§4.
# ---------------------------------------------------------------------------------------

# Below this squared rotation angle the series branches are used (their truncation
# error is below 1e-18 there), so that every function is smooth at the identity.
_SMALL_ANGLE2 = 1e-4


def cross(a: Float[Array, "*#b 3"], b: Float[Array, "*#b 3"]) -> Float[Array, "*#b 3"]:
    """a × b over the last axis (`jnp.cross` in about half the traced operations, all
    elementwise, so XLA fuses them: it sits in the inner loop of rigid-body dynamics)."""
    a1 = jnp.concatenate([a[..., 1:], a[..., :1]], axis=-1)  # (a_y, a_z, a_x)
    a2 = jnp.concatenate([a[..., 2:], a[..., :2]], axis=-1)  # (a_z, a_x, a_y)
    b1 = jnp.concatenate([b[..., 1:], b[..., :1]], axis=-1)
    b2 = jnp.concatenate([b[..., 2:], b[..., :2]], axis=-1)
    return a1 * b2 - a2 * b1


def _hamilton_np(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    pw, px, py, pz = p
    qw, qx, qy, qz = q
    return np.array(
        [
            pw * qw - px * qx - py * qy - pz * qz,
            pw * qx + px * qw + py * qz - pz * qy,
            pw * qy - px * qz + py * qw + pz * qx,
            pw * qz + px * qy - py * qx + pz * qw,
        ]
    )


def _matrix_np(q: np.ndarray) -> np.ndarray:
    w, x, y, z = q
    return np.array(
        [
            [w * w + x * x - y * y - z * z, 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), w * w - x * x + y * y - z * z, 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), w * w - x * x - y * y + z * z],
        ]
    )


# Structure constants: (p ⊗ q)_i = H_ijk p_j q_k, and R(q)_ab = T_abjk q_j q_k (a
# quadratic form, recovered by polarisation). Products and rotations are then one or
# two contractions: the few traced operations matter in code traced many times.
_E4 = np.eye(4)
_HAMILTON = np.stack([np.stack([_hamilton_np(a, b) for b in _E4], -1) for a in _E4], -2)
_ROTATION = np.stack(
    [np.stack([(_matrix_np(a + b) - _matrix_np(a - b)) / 4 for b in _E4], -1) for a in _E4],
    -2,
)


def quat_multiply(p: Float[Array, "*#b 4"], q: Float[Array, "*#b 4"]) -> Float[Array, "*#b 4"]:
    """The Hamilton product p ⊗ q (rotation q first, then p), scalar first."""
    h = jnp.asarray(_HAMILTON, dtype=jnp.result_type(p, q))
    return jnp.einsum("ijk,...j,...k->...i", h, p, q)


def quat_conjugate(q: Float[Array, "*#b 4"]) -> Float[Array, "*#b 4"]:
    """q* = (w, −x, −y, −z): the inverse rotation of a unit quaternion."""
    return jnp.concatenate([q[..., :1], -q[..., 1:]], axis=-1)


def quat_normalize(q: Float[Array, "*#b 4"]) -> Float[Array, "*#b 4"]:
    """q / |q| (q must be non-zero)."""
    return q / jnp.linalg.norm(q, axis=-1, keepdims=True)


def quat_rotate(q: Float[Array, "*#b 4"], v: Float[Array, "*#b 3"]) -> Float[Array, "*#b 3"]:
    """The vector v rotated by the unit quaternion q: R(q) v."""
    return jnp.sum(quat_to_matrix(q) * v[..., None, :], axis=-1)


def quat_to_matrix(q: Float[Array, "*#b 4"]) -> Float[Array, "*#b 3 3"]:
    """The rotation matrix R(q) of a unit quaternion (R v = q ⊗ v ⊗ q*).

    R = (w² − |u|²) 1 + 2 u uᵀ + 2 w [u]×, with u = (x, y, z).
    """
    w, x, y, z = (q[..., i] for i in range(4))
    ww, xx, yy, zz = w * w, x * x, y * y, z * z
    xy, xz, yz, wx, wy, wz = x * y, x * z, y * z, w * x, w * y, w * z
    flat = [
        ww + xx - yy - zz, 2 * (xy - wz), 2 * (xz + wy),
        2 * (xy + wz), ww - xx + yy - zz, 2 * (yz - wx),
        2 * (xz - wy), 2 * (yz + wx), ww - xx - yy + zz,
    ]  # fmt: skip
    return jnp.stack(flat, axis=-1).reshape(q.shape[:-1] + (3, 3))


def quat_exp(r: Float[Array, "*#b 3"]) -> Float[Array, "*#b 4"]:
    """The unit quaternion of the rotation vector r (angle |r| about r/|r|).

    exp(r) = (cos(θ/2), sin(θ/2) r/θ), θ = |r|; smooth with finite derivatives of all
    orders at r = 0 (a Taylor branch selected with the double-`where` trick).
    """
    t2 = jnp.sum(r * r, axis=-1, keepdims=True)
    small = t2 < _SMALL_ANGLE2
    theta = jnp.sqrt(jnp.where(small, 1.0, t2))
    cos_half = jnp.where(small, 1 - t2 / 8 + t2 * t2 / 384, jnp.cos(theta / 2))
    sinc_half = jnp.where(small, 0.5 - t2 / 48 + t2 * t2 / 3840, jnp.sin(theta / 2) / theta)
    return jnp.concatenate([cos_half, sinc_half * r], axis=-1)


def quat_log(q: Float[Array, "*#b 4"]) -> Float[Array, "*#b 3"]:
    """The rotation vector r of a unit quaternion (inverse of `quat_exp`), angle in [0, π].

    q and −q give the same r. Smooth at the identity (double-`where` Taylor branch).
    """
    q = jnp.where(q[..., :1] < 0, -q, q)
    w, u = q[..., 0:1], q[..., 1:]
    s2 = jnp.sum(u * u, axis=-1, keepdims=True)
    small = s2 < _SMALL_ANGLE2
    s = jnp.sqrt(jnp.where(small, 1.0, s2))
    w_safe = jnp.where(small, w, 1.0)
    # 2 atan2(s, w) / s, and its series 2/w − 2 s²/(3 w³) + 2 s⁴/(5 w⁵) near s = 0
    series = 2 / w_safe - 2 * s2 / (3 * w_safe**3) + 2 * s2 * s2 / (5 * w_safe**5)
    factor = jnp.where(small, series, 2 * jnp.arctan2(s, w) / s)
    return factor * u


def so3_dexpinv(r: Float[Array, "*#b 3"], w: Float[Array, "*#b 3"]) -> Float[Array, "*#b 3"]:
    """The inverse right Jacobian of SO(3), truncated: J_r⁻¹(r) w ≈ w + ½ r × w + (1/12) r × (r × w).

    If R(t) = R₀ exp(r(t)) has body angular velocity w, then dr/dt = J_r⁻¹(r) w. The
    truncation error is O(|r|³|w|), which is what a 4th-order Runge–Kutta–Munthe-Kaas
    method needs (Munthe-Kaas, BIT 38, 92 (1998); Iserles et al., Acta Numerica 9, 215
    (2000), §4).
    """
    rw = jnp.cross(r, w)
    return w + 0.5 * rw + jnp.cross(r, rw) / 12.0
