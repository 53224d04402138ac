"""Checks that run before tracing, so bad input fails with a precise Python error."""

import dataclasses

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
    # Inside an outer jit even operations on concrete values are staged: evaluate the
    # invariants on the concrete values now.
    with jax.ensure_compile_time_eval():
        recheck_modules(model)


def recheck_modules(tree: Anything) -> None:
    """Run again the `__check_init__` invariants of every Equinox module in `tree` whose
    values are all concrete: a model edited with `eqx.tree_at` or `jax.tree.map` (a
    negative length, say) skipped them, since neither calls `__init__`."""
    seen: set[int] = set()

    def visit(x: Anything) -> None:
        if isinstance(x, eqx.Module):
            if id(x) in seen:
                return
            seen.add(id(x))
            if all(is_concrete(leaf) for leaf in jax.tree.leaves(x)):
                for cls in reversed(type(x).__mro__):
                    check = cls.__dict__.get("__check_init__")
                    if check is not None:
                        check(x)
            children = [getattr(x, f.name, None) for f in dataclasses.fields(x)]
        elif isinstance(x, (tuple, list)):
            children = list(x)
        elif isinstance(x, dict):
            children = list(x.values())
        else:
            return
        for child in children:
            visit(child)

    visit(tree)


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
        if jnp.issubdtype(dtype, jnp.complexfloating) and not model.supports_complex:
            raise TypeError(
                f"{_path(name, path)} has complex dtype {dtype}, but "
                f"{type(model).__name__} does not support complex states (its "
                "`supports_complex` is False): it would run as if real. Split the state "
                "into real and imaginary parts."
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


# --------------------------------------------------------------------------- the toolkit
# One set of checks for every pillar. Each names the argument in its message (pass the
# owner too: "NoseHooverChain.kT"), checks shapes always and values only when concrete
# (a traced value is checked at run time, if at all), and raises before any tracing.


def _values(x: Anything) -> np.ndarray | None:
    """`x` as a float64 NumPy array if it is concrete, else `None`."""
    return np.asarray(x, dtype=np.float64) if is_concrete(x) else None


def check_shape(x: Anything, name: str, shape: tuple[int, ...]) -> None:
    """`x` must have exactly `shape` (`ValueError` naming both shapes otherwise)."""
    if np.shape(x) != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}; got shape {np.shape(x)}.")


def check_real(x: Anything, name: str) -> None:
    """`x` must be real numbers (not complex, not bool, not strings): `TypeError`."""
    if isinstance(x, (bool, str)) or x is None:
        raise TypeError(f"{name} must be a real number or array; got {x!r}.")
    dtype = jnp.result_type(x)
    if jnp.issubdtype(dtype, jnp.complexfloating) or not jnp.issubdtype(dtype, jnp.number):
        raise TypeError(f"{name} must be real; got dtype {dtype}.")


def check_positive(
    x: Anything, name: str, *, zero_ok: bool = False, shape: tuple[int, ...] | None = ()
) -> None:
    """`x` must be finite and > 0 (or >= 0 with `zero_ok`) everywhere; with `shape`
    (default: a scalar; `None`: any shape) its shape is checked too."""
    check_real(x, name)
    if shape is not None:
        if shape == () and np.ndim(x) != 0:
            raise ValueError(f"{name} must be a scalar; got shape {np.shape(x)}.")
        check_shape(x, name, shape)
    v = _values(x)
    if v is None:
        return
    ok = (v >= 0) if zero_ok else (v > 0)
    if not np.all(ok & np.isfinite(v)):
        bound = ">= 0" if zero_ok else "> 0"
        bad = v if v.ndim == 0 else v[~(ok & np.isfinite(v))][0]
        raise ValueError(f"{name} must be finite and {bound}; got {bad}.")


def check_in_range(
    x: Anything,
    name: str,
    lo: float,
    hi: float,
    *,
    closed: tuple[bool, bool] = (True, True),
) -> None:
    """`x` (scalar or array) must lie in [lo, hi]; `closed` says which ends belong."""
    check_real(x, name)
    v = _values(x)
    if v is None:
        return
    low = (v >= lo) if closed[0] else (v > lo)
    high = (v <= hi) if closed[1] else (v < hi)
    if not np.all(low & high):
        interval = f"{'[' if closed[0] else '('}{lo}, {hi}{']' if closed[1] else ')'}"
        bad = v if v.ndim == 0 else v[~(low & high)][0]
        raise ValueError(f"{name} must lie in {interval}; got {bad}.")


def check_int(x: Anything, name: str, *, minimum: int | None = 1, allowed: Anything = None) -> int:
    """`x` must be a Python (or NumPy) int, not a bool, >= `minimum` and in `allowed`
    if given; returns it as an `int`."""
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
        raise TypeError(f"{name} must be an int; got {x!r}.")
    if minimum is not None and x < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}; got {x}.")
    if allowed is not None and x not in allowed:
        raise ValueError(f"{name} must be one of {tuple(allowed)}; got {x}.")
    return int(x)


def check_labels(labels: Anything, name: str, n: int) -> None:
    """Integer labels (species, indices) must lie in [0, n): no clamping, no wrapping."""
    dtype = jnp.result_type(labels)
    if not jnp.issubdtype(dtype, jnp.integer):
        raise TypeError(f"{name} must be integers; got dtype {dtype}.")
    if is_concrete(labels):
        v = np.asarray(labels)
        if v.size and (v.min() < 0 or v.max() >= n):
            bad = v.min() if v.min() < 0 else v.max()
            raise ValueError(f"{name} must lie in [0, {n}) (there are {n}); got {bad}.")


def check_key(key: Anything, name: str) -> None:
    """`key` must be one PRNG key: a typed `jax.random.key(...)` of shape `()` or a raw
    `jax.random.PRNGKey(...)` (uint32, shape `(2,)`): `TypeError` otherwise."""
    dtype = getattr(key, "dtype", None)
    if dtype is not None and jnp.issubdtype(dtype, jax.dtypes.prng_key):
        if np.shape(key) != ():
            raise ValueError(f"{name} must be a single key of shape (); got shape {np.shape(key)}.")
        return
    if dtype == jnp.uint32 and np.shape(key) == (2,):
        return
    raise TypeError(
        f"{name} must be a PRNG key such as jax.random.key(0); got {type(key).__name__}"
        f"{'' if dtype is None else f' of dtype {dtype}'}."
    )


def as_float_array(x: Anything, name: str, shape: tuple[int, ...] | None = None) -> jax.Array:
    """`x` as a floating-point array (integers become floats): real (`TypeError`
    otherwise), of exactly `shape` if given, and finite when concrete (`ValueError`)."""
    if isinstance(x, (list, tuple)):
        try:
            x = jnp.asarray(x)
        except (TypeError, ValueError) as e:
            raise TypeError(f"{name} must be a real number or array; got {x!r}.") from e
    check_real(x, name)
    if shape is not None:
        check_shape(x, name, shape)
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.floating):
        x = x.astype(float)
    v = _values(x)
    if v is not None and not np.all(np.isfinite(v)):
        raise ValueError(f"{name} must be finite; got {v if v.ndim else float(v)}.")
    return x
