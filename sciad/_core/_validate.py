"""Checks that run before tracing, so bad input fails with a precise Python error."""

import equinox as eqx
import jax
from jax.core import Tracer
import jax.numpy as jnp
import numpy as np

from ._model import AbstractModel
from ._types import Anything, State


def is_concrete(x: Anything) -> bool:
    """True when `x` holds a value now (not a tracer inside jit/vmap/grad)."""
    return not isinstance(x, Tracer)


def _path(prefix: str, path: tuple) -> str:
    return prefix + jax.tree_util.keystr(path)


def check_model(model: Anything) -> None:
    """`model` must be a `sciad.AbstractModel` with finite concrete parameters."""
    if isinstance(model, type):
        raise TypeError(
            f"model must be an instance, got the class {model.__name__}; "
            f"call it with its parameters, e.g. {model.__name__}(...)."
        )
    if not isinstance(model, AbstractModel):
        raise TypeError(
            "model must be a sciad.AbstractModel (an Equinox module with a "
            f"`vector_field(t, y)` method); got {type(model).__name__}."
        )
    check_finite(model, "model")


def check_finite(tree: Anything, name: str) -> None:
    """Raise `ValueError` naming the first concrete float leaf holding NaN or inf."""
    leaves = jax.tree_util.tree_flatten_with_path(tree)[0]
    for path, leaf in leaves:
        if is_concrete(leaf) and eqx.is_inexact_array_like(leaf):
            if not np.all(np.isfinite(np.asarray(leaf))):
                raise ValueError(
                    f"{_path(name, path)} contains NaN or inf: {leaf!r}. "
                    "Parameters and initial states must be finite."
                )


def check_state(model: AbstractModel, y0: Anything, name: str = "y0") -> State:
    """Convert `y0`'s leaves to arrays; require floating point, finite, and model-valid."""
    leaves = jax.tree_util.tree_flatten_with_path(y0)[0]
    if not leaves:
        raise ValueError(f"{name} is empty; it must hold the initial state.")
    for path, leaf in leaves:
        dtype = jnp.result_type(leaf)
        if not jnp.issubdtype(dtype, jnp.inexact):
            raise TypeError(
                f"{_path(name, path)} has dtype {dtype}; states must be floating "
                f"point. Use e.g. jnp.asarray({name}, dtype=float)."
            )
    y0 = jax.tree.map(jnp.asarray, y0)
    check_finite(y0, name)
    model.check_state(y0)
    return y0


def float_dtype(y0: State) -> Anything:
    """The common floating dtype of the state's leaves (times follow it)."""
    return jnp.finfo(jnp.result_type(*jax.tree_util.tree_leaves(y0))).dtype


def to_float(x: Anything) -> float:
    """A concrete real scalar as a Python float."""
    return float(np.asarray(x))


def check_scalar(x: Anything, name: str) -> None:
    """`x` must be a real scalar, finite when concrete."""
    if isinstance(x, bool) or jnp.ndim(x) != 0:
        raise ValueError(f"{name} must be a real scalar; got {x!r}.")
    if not jnp.issubdtype(jnp.result_type(x), jnp.number) or jnp.iscomplexobj(x):
        raise TypeError(f"{name} must be a real number; got {x!r}.")
    if is_concrete(x) and not np.isfinite(to_float(x)):
        raise ValueError(f"{name} must be finite; got {x}.")


def as_time(x: Anything, dtype: Anything, name: str) -> jax.Array:
    """Check a time-like scalar; a Python scalar becomes an array of `dtype`."""
    check_scalar(x, name)
    if isinstance(x, (int, float, np.floating, np.integer)):
        return jnp.asarray(x, dtype=dtype)
    return jnp.asarray(x)
