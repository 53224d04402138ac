"""Geometry shared by the pillars."""

import jax.numpy as jnp
from jaxtyping import Array, Bool, Float


def safe_norm(dr: Float[Array, "*b d"], mask: Bool[Array, "*b"]) -> Float[Array, "*b"]:
    """|dr| over the last axis where `mask`, else 1, with finite gradients everywhere.

    The double-`where` trick: masked entries (coincident or padded pairs, r = 0) never
    reach the square root, so their gradient is exactly zero, never NaN. Callers
    discard masked results with a second `where`.
    """
    return jnp.sqrt(jnp.where(mask, jnp.sum(dr**2, axis=-1), 1.0))
