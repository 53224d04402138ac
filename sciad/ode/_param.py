"""Shared helpers for ODE model definitions: parameter fields and their checks."""

from collections.abc import Iterable

import equinox as eqx
import jax
import jax.numpy as jnp

from .._core._types import Anything
from .._core._validate import check_finite, check_positive, check_real


def _as_param(x: Anything) -> jax.Array:
    """A parameter value as a JAX array (a `TypeError` for text, `None` and the like)."""
    try:
        return jnp.asarray(x)
    except (TypeError, ValueError) as e:
        raise TypeError(f"a model parameter must be a real number or array; got {x!r}.") from e


def param(default: Anything = None) -> Anything:
    """A model parameter field: stored as a JAX array (so jit never retraces on it)."""
    if default is None:
        return eqx.field(converter=_as_param)
    return eqx.field(converter=_as_param, default=default)


def check_params(
    model: Anything,
    *,
    positive: Iterable[str] = (),
    nonnegative: Iterable[str] = (),
    real: Iterable[str] = (),
) -> None:
    """Check a model's parameters by name, before any tracing.

    `positive` must be finite and > 0, `nonnegative` finite and >= 0, `real` finite
    real numbers of any sign. Values are checked only where concrete (a parameter
    traced by `vmap`/`grad` passes unchecked), at any shape (a batch of parameters
    built for `vmap` is checked element by element). Messages name the owner, as in
    "Pendulum.length must be finite and > 0; got -1.0."
    """
    owner = type(model).__name__
    for name in positive:
        check_positive(getattr(model, name), f"{owner}.{name}", shape=None)
    for name in nonnegative:
        check_positive(getattr(model, name), f"{owner}.{name}", zero_ok=True, shape=None)
    for name in real:
        check_real(getattr(model, name), f"{owner}.{name}")
        check_finite(getattr(model, name), f"{owner}.{name}")
