"""Shared helpers for ODE model definitions."""

import equinox as eqx
import jax.numpy as jnp

from .._core._types import Anything


def param(default: Anything = None) -> Anything:
    """A model parameter field: stored as a JAX array (so jit never retraces on it)."""
    if default is None:
        return eqx.field(converter=jnp.asarray)
    return eqx.field(converter=jnp.asarray, default=default)
