"""Control flow that stays lazy under `jax.vmap`.

`jax.lax.cond` with a batched predicate becomes a `select` that evaluates both branches
for every batch element. For rare, expensive branches (a neighbour-list rebuild) that
turns "when needed" into "every step, for every replica". `lazy_cond` asks instead
whether *any* batch element needs the branch, runs it (batched) only then, and selects
per element. Likewise a `while_loop` under `vmap` iterates the whole batch until its
slowest element is done; `compacting_while` advances only elements still running, a
fixed-size sub-batch at a time.
"""

from collections.abc import Callable

import jax
from jax.custom_batching import custom_vmap
import jax.numpy as jnp

from ._types import Anything


def tree_where(pred: Anything, a: Anything, b: Anything) -> Anything:
    """Leafwise `lax.select` on a scalar predicate (every dtype, PRNG keys included)."""
    return jax.tree.map(lambda x, y: jax.lax.select(pred, x, y), a, b)


def _broadcast_unbatched(tree: Anything, in_batched: Anything, axis_size: int) -> Anything:
    """Give every unbatched leaf of `tree` a leading batch axis (in a `custom_vmap` rule)."""
    return jax.tree.map(
        lambda x, b: x if b else jnp.broadcast_to(x, (axis_size,) + jnp.shape(x)),
        tree,
        in_batched,
    )


def _first_true(mask: Anything, size: int) -> Anything:
    """The indices of the first `size` true elements of the 1-D `mask`, ascending, and
    `len(mask)` in the slots left over: `jnp.nonzero(mask, size=size, fill_value=len(mask))`
    as one scatter by rank, cheaper to compile than `nonzero`'s binary searches."""
    n = mask.shape[0]
    rank = jnp.cumsum(mask) - 1
    return jnp.full(size, n).at[jnp.where(mask, rank, size)].set(jnp.arange(n), mode="drop")


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


def lazy_update(
    pred: Anything, fn: Callable[..., Anything], args: tuple, old: Anything
) -> Anything:
    """`fn(*args)` where `pred`, else `old`, for a `fn` that is not differentiated.

    Without `vmap` this is `lax.cond`. Under `vmap` with a batched `pred`, each batch
    element runs `fn` only if its own `pred` holds (a loop over just those elements,
    each result written in place): a batch of replicas pays for exactly the rebuilds it
    needs, and nothing on steps where none needs one. No derivative flows through `fn`:
    `args` and `old` are cut with `stop_gradient` (and must not need one).
    """
    args, old = jax.lax.stop_gradient((args, old))

    @custom_vmap
    def update(pred, args, old):
        return jax.lax.cond(pred, lambda: fn(*args), lambda: old)

    @update.def_vmap
    def _rule(axis_size, in_batched, pred, args, old):
        pred, args, old = _broadcast_unbatched((pred, args, old), tuple(in_batched), axis_size)
        # Visit only the elements that need `fn`, writing each result in place.
        todo = _first_true(pred, axis_size)

        def one(k, out):
            b = todo[k]
            new = fn(*jax.tree.map(lambda a: a[b], args))
            return jax.tree.map(lambda o, v: o.at[b].set(v), out, new)

        out = jax.lax.fori_loop(0, jnp.sum(pred, dtype=jnp.int32), one, old)
        return out, jax.tree.map(lambda _: True, out)

    return update(pred, args, old)


def compacting_while(
    cond_fn: Callable[[Anything, Anything], Anything],
    body_fn: Callable[[Anything, Anything], Anything],
    data: Anything,
    init: Anything,
    fraction: int = 4,
) -> Anything:
    """`lax.while_loop(lambda c: cond_fn(data, c), lambda c: body_fn(data, c), init)`,
    whose batched form does not make every element pay for the slowest one.

    Under `vmap`, a `while_loop` runs its body on the whole batch until the last element
    is done, so every element pays for the slowest. Here each round gathers the first
    `batch // fraction` elements still running, advances them one iteration together
    and scatters them back: the batch's cost is its total number of iterations (over
    that sub-batch size), not the maximum times the batch size, and the body is
    compiled once. A batch smaller than 4 × `fraction` iterates whole, as a plain
    `while_loop`. Each element's result is the same as the unbatched loop's. `data` is
    read-only; neither it nor `init` may need derivatives (they are cut with
    `stop_gradient`).
    """
    data, init = jax.lax.stop_gradient((data, init))

    @custom_vmap
    def loop(data, init):
        return jax.lax.while_loop(lambda c: cond_fn(data, c), lambda c: body_fn(data, c), init)

    @loop.def_vmap
    def _rule(axis_size, in_batched, data, init):
        data, carry = _broadcast_unbatched((data, init), tuple(in_batched), axis_size)
        running = jax.vmap(cond_fn)
        step = jax.vmap(body_fn)

        def advance(d, c, active):
            new = step(d, c)
            return jax.tree.map(
                lambda n, o: jnp.where(active.reshape((-1,) + (1,) * (n.ndim - 1)), n, o),
                new,
                c,
            )

        size = axis_size // fraction
        if size < 4:  # a small batch: gathering would cost more than it saves
            return jax.lax.while_loop(
                lambda c: jnp.any(running(data, c)),
                lambda c: advance(data, c, running(data, c)),
                carry,
            ), jax.tree.map(lambda _: True, carry)

        def one_round(c):
            # The first `size` elements still running take one step together
            # (index `axis_size` marks an empty slot: dropped on return).
            idx = _first_true(running(data, c), size)
            valid = idx < axis_size
            take = jnp.minimum(idx, axis_size - 1)  # sorted, in bounds
            sub_data, sub = jax.tree.map(
                lambda x: x.at[take].get(mode="promise_in_bounds", indices_are_sorted=True),
                (data, c),
            )
            sub = advance(sub_data, sub, running(sub_data, sub) & valid)
            return jax.tree.map(
                lambda x, s: x.at[idx].set(s, mode="drop", indices_are_sorted=True), c, sub
            )

        carry = jax.lax.while_loop(lambda c: jnp.any(running(data, c)), one_round, carry)
        return carry, jax.tree.map(lambda _: True, carry)

    return loop(data, init)
