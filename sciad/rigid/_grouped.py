"""Batched calls over a model's elements (actuators, activations, tendons): elements of
one static structure run as one vectorised call, so the traced program does not grow
with their number (a Python loop over the elements would trace each one anew)."""

from collections.abc import Callable, Hashable, Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._core._types import Anything


def _take(a: Anything, idx: np.ndarray) -> Anything:
    """a[idx] for a static index array; a slice when contiguous."""
    if idx.size and np.array_equal(idx, np.arange(idx[0], idx[0] + idx.size)):
        return a[int(idx[0]) : int(idx[0]) + idx.size]
    return a[idx]


def assemble(parts: Sequence[Anything], places: Sequence[np.ndarray]) -> Anything:
    """The pytrees `parts` (leading axes: the elements at the indices `places`)
    concatenated and put back in the elements' order."""
    order = np.concatenate(places)
    out = jax.tree.map(lambda *xs: jnp.concatenate(xs), *parts)
    if np.array_equal(order, np.arange(order.size)):
        return out
    return jax.tree.map(lambda x: x[np.argsort(order, kind="stable")], out)


def grouped(items: Sequence[Anything], key: Callable[[Anything], Hashable]) -> list[np.ndarray]:
    """The indices of `items` grouped by `key`, in order of first appearance."""
    groups: dict[Hashable, list[int]] = {}
    for i, x in enumerate(items):
        groups.setdefault(key(x), []).append(i)
    return [np.asarray(g, np.int64) for g in groups.values()]


def map_grouped(items: Sequence[eqx.Module], fn: Callable, *args: Anything) -> Anything:
    """`fn(item, *args_of_item)` for every item (`args`: arrays with one row per item),
    stacked along a leading axis: items of one pytree structure (type and static
    fields) are stacked and `vmap`ped (a lone item: called directly)."""
    parts, places = [], []
    for idx in grouped(items, jax.tree.structure):
        sub = [_take(a, idx) for a in args]
        if idx.size == 1:
            out = jax.tree.map(lambda x: x[None], fn(items[idx[0]], *[s[0] for s in sub]))
        else:
            stacked = jax.tree.map(lambda *xs: jnp.stack(xs), *[items[i] for i in idx])
            out = eqx.filter_vmap(fn)(stacked, *sub)
        parts.append(out)
        places.append(idx)
    return assemble(parts, places)


def stacked(items: Sequence[Anything], name: str, dtype: Anything) -> Anything:
    """The field `name` of every item, stacked along a leading axis, as `dtype`."""
    return jnp.stack([jnp.asarray(getattr(x, name)) for x in items]).astype(dtype)
