"""Spatial (6-D) algebra in Plücker coordinates, all in one fixed (world) frame.

A motion vector is (ω, v_O): angular velocity and the velocity of the body-fixed point
at the frame origin O. A force vector is (n_O, f): moment about O and force. Spatial
vectors of different bodies are expressed in the same frame, so tree sums need no
transforms. Reference: Featherstone, *Rigid Body Dynamics Algorithms* (2008), ch. 2.
"""

import jax.numpy as jnp
from jaxtyping import Array, Float

from .._core._geometry import cross

Vec6 = Float[Array, "*b 6"]


def matvec(a: Float[Array, "*#b m n"], x: Float[Array, "*#b n"]) -> Float[Array, "*#b m"]:
    """A x for stacks of small matrices, as a fusible multiply-and-sum: XLA on CPU runs
    a batched `dot_general` of 3×3 or 6×6 blocks as one small GEMM call per block,
    several times slower under `vmap`."""
    return jnp.sum(a * x[..., None, :], axis=-1)


def matmul(a: Float[Array, "*#b m k"], b: Float[Array, "*#b k n"]) -> Float[Array, "*#b m n"]:
    """A B for stacks of small matrices (see `matvec`)."""
    return jnp.sum(a[..., :, :, None] * b[..., None, :, :], axis=-2)


def skew(c: Float[Array, "*b 3"]) -> Float[Array, "*b 3 3"]:
    """[c]×, the matrix with [c]× x = c × x."""
    zero = jnp.zeros_like(c[..., 0])
    x, y, z = c[..., 0], c[..., 1], c[..., 2]
    rows = [[zero, -z, y], [z, zero, -x], [-y, x, zero]]
    return jnp.stack([jnp.stack(r, axis=-1) for r in rows], axis=-2)


def _crosses(a: list, b: list) -> list:
    """Several cross products as one batched `cross` (fewer traced operations)."""
    out = cross(jnp.stack(a), jnp.stack(b))
    return [out[i] for i in range(len(a))]


def cross_motion(v: Vec6, m: Vec6) -> Vec6:
    """v ×ₘ m: the rate of change of motion vector m carried along with velocity v."""
    w, vo = v[..., :3], v[..., 3:]
    mw, mv = m[..., :3], m[..., 3:]
    a, b, c = _crosses([w, w, vo], [mw, mv, mw])
    return jnp.concatenate([a, b + c], axis=-1)


def cross_force(v: Vec6, f: Vec6) -> Vec6:
    """v ×* f: the rate of change of force vector f carried along with velocity v."""
    w, vo = v[..., :3], v[..., 3:]
    fn, ff = f[..., :3], f[..., 3:]
    a, b, c = _crosses([w, vo, w], [fn, ff, ff])
    return jnp.concatenate([a + b, c], axis=-1)


def spatial_inertia(
    mass: Float[Array, "*b"], com: Float[Array, "*b 3"], inertia_com: Float[Array, "*b 3 3"]
) -> Float[Array, "*b 6 6"]:
    """The 6×6 spatial inertia about the frame origin of a body with mass m, centre of
    mass c and rotational inertia I_c about c (all in that frame):

        [[I_c − m [c]×[c]×,  m [c]×],
         [−m [c]×,            m 1  ]]

    (RBDA eq. 2.63, for the (angular; linear) ordering).
    """
    m = mass[..., None, None]
    cx = skew(com)
    eye = jnp.broadcast_to(jnp.eye(3, dtype=com.dtype), cx.shape)
    top = jnp.concatenate([inertia_com - m * matmul(cx, cx), m * cx], axis=-1)
    bottom = jnp.concatenate([-m * cx, m * eye], axis=-1)
    return jnp.concatenate([top, bottom], axis=-2)


def wrench_at_origin(
    point: Float[Array, "*b 3"], force: Float[Array, "*b 3"], torque: Float[Array, "*b 3"]
) -> Vec6:
    """The force vector (n_O, f) of a force applied at `point` plus a pure `torque`."""
    return jnp.concatenate([torque + cross(point, force), force], axis=-1)
