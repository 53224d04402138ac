"""Control flow that stays lazy under `jax.vmap`.

`jax.lax.cond` with a batched predicate becomes a `select` that evaluates both branches
for every batch element. For rare, expensive branches (a neighbour-list rebuild) that
turns "when needed" into "every step, for every replica". `lazy_cond` asks instead
whether *any* batch element needs the branch, runs it (batched) only then, and selects
per element.
"""

from collections.abc import Callable

import jax
from jax.custom_batching import custom_vmap
import jax.numpy as jnp

from ._types import Anything


def tree_where(pred: Anything, a: Anything, b: Anything) -> Anything:
    """Leafwise `lax.select` on a scalar predicate (every dtype, PRNG keys included)."""
    return jax.tree.map(lambda x, y: jax.lax.select(pred, x, y), a, b)


@custom_vmap
def batch_any(pred: Anything) -> Anything:
    """`pred` itself; under `vmap`, whether it holds for any element (unbatched).

    The predicate is boolean, so no derivative flows through it and the custom batching
    rule is safe under `grad`, `jvp` and higher order (tested).
    """
    return pred


@batch_any.def_vmap
def _batch_any_rule(axis_size: int, in_batched: Anything, pred: Anything) -> Anything:
    (batched,) = in_batched
    return (jnp.any(pred) if batched else pred), False


def lazy_cond(pred: Anything, true_fn: Callable[[], Anything], false_fn: Callable[[], Anything]):
    """`true_fn()` where `pred`, else `false_fn()`; `true_fn` only runs when needed.

    Without `vmap` this is `lax.cond`. Under `vmap` with a batched `pred`, `true_fn` runs
    (for the whole batch) only on steps where some element needs it, and each element
    keeps its own branch's value. `false_fn` should be cheap (it runs on both paths).
    """
    return jax.lax.cond(
        batch_any(pred),
        lambda: tree_where(pred, true_fn(), false_fn()),
        false_fn,
    )
