"""How a fixed-step run is differentiated: the loop strategy is an argument of `simulate`."""

import abc
from collections.abc import Callable
import math

import equinox as eqx
import jax
import jax.numpy as jnp

from ._types import Anything

Carry = Anything


def _scan(body: Callable[[Carry], Carry], carry: Carry, length: int) -> Carry:
    """`length` applications of `body` as one `lax.scan`."""
    if length == 0:
        return carry
    return jax.lax.scan(lambda c, _: (body(c), None), carry, None, length=length)[0]


class AbstractAdjoint(eqx.Module):
    """How `sciad.simulate` runs its loop, and so how reverse mode stores the run.

    Every adjoint here is built from `lax.scan` and `jax.checkpoint`, so every one
    composes with `jit`, `vmap`, `grad`, `jvp`, `jacfwd`, Hessians and grad of grad.
    They differ only in the memory/compute trade-off of reverse mode.

    **Example:**

    ```python
    grad = jax.grad(lambda k: sciad.simulate(model(k), y0, dt=0.01, n_steps=10**5,
                                             adjoint=sciad.CheckpointAdjoint(levels=3)).y1[0])
    ```
    """

    @abc.abstractmethod
    def loop(self, body: Callable[[Carry], Carry], carry: Carry, length: int) -> Carry:
        """Apply `body` `length` times (a static Python int) to `carry`."""

    def save_loop(
        self,
        body: Callable[[Carry, Anything], tuple[Carry, Anything]],
        carry: Carry,
        xs: Anything,
        length: int,
    ) -> tuple[Carry, Anything]:
        """`jax.lax.scan(body, carry, xs, length=length)` over the save intervals of a
        run: each `body` call runs one interval (its steps through
        [`loop`][sciad.AbstractAdjoint.loop]) and returns what is saved at its end. The
        adjoint decides what reverse mode stores of each interval.

        **Arguments:** `body(carry, x) -> (carry, saved)`; `carry`; `xs` (or `None`);
        `length`, a static Python int.

        **Returns:** `(carry, saved values stacked along a new leading axis)`.

        Default: a plain scan (every interval's intermediates are stored).
        """
        return jax.lax.scan(body, carry, xs, length=length)


class DirectAdjoint(AbstractAdjoint):
    """Store everything: one `lax.scan`; reverse mode keeps every step's state.

    No recomputation, but memory O(n_steps): for 100,000 velocity-Verlet steps of a
    1,000-dimensional chain (float64) the gradient needs 763 MiB, against 15 MiB for
    `CheckpointAdjoint` — and on a 2-core CPU it was not faster (0.72 s against
    0.57 s; see docs/benchmarks.md). Use it for short runs. Forward mode costs no
    memory either way.

    **Example:** `sciad.simulate(model, y0, dt=0.01, n_steps=100, adjoint=sciad.DirectAdjoint())`
    """

    def loop(self, body: Callable[[Carry], Carry], carry: Carry, length: int) -> Carry:
        """A plain scan."""
        return _scan(body, carry, length)


class CheckpointAdjoint(AbstractAdjoint):
    """Nested checkpointing: reverse-mode memory O(levels · n^(1/levels)).

    The run is split into chunks of about n^((levels-1)/levels) units; only the
    chunk boundaries are stored, and each chunk is recomputed (recursively) during
    the backward pass. Reverse mode costs about `levels` forward passes. The unit
    is a block of about 32 steps (the non-finite check's granularity; a divisor of
    the step count near 32 where there is one), so with the default
    `levels=2`, 100,000 steps are 3,125 blocks in chunks of 56 blocks: a gradient
    through 100,000 velocity-Verlet steps of a 1,000-dimensional chain needs 15 MiB
    instead of `DirectAdjoint`'s 763 MiB (measured; docs/benchmarks.md). Built on
    `jax.checkpoint` of `lax.scan`, so forward mode and every higher order compose
    (unlike diffrax's `RecursiveCheckpointAdjoint`).
    Reference: Griewank & Walther, *Evaluating Derivatives* (2008), ch. 12.

    **Arguments:**

    - `levels`: nesting depth, at least 1 (1 stores every step, like `DirectAdjoint`).

    **Example:** `sciad.simulate(model, y0, dt=0.01, n_steps=10**5, adjoint=sciad.CheckpointAdjoint(levels=3))`
    """

    levels: int = eqx.field(default=2, static=True)

    def __check_init__(self):
        if isinstance(self.levels, bool) or not isinstance(self.levels, int) or self.levels < 1:
            raise ValueError(
                f"CheckpointAdjoint(levels=...) must be an int >= 1, got {self.levels!r}."
            )

    def loop(self, body: Callable[[Carry], Carry], carry: Carry, length: int) -> Carry:
        """Recursive checkpointed scans."""
        return _checkpointed(body, carry, length, self.levels)

    def save_loop(
        self,
        body: Callable[[Carry, Anything], tuple[Carry, Anything]],
        carry: Carry,
        xs: Anything,
        length: int,
    ) -> tuple[Carry, Anything]:
        """A scan of checkpointed intervals: reverse mode stores each interval's start
        and its saved values, and recomputes the interval (itself checkpointed by
        [`loop`][sciad.CheckpointAdjoint.loop])."""
        return jax.lax.scan(jax.checkpoint(body, prevent_cse=False), carry, xs, length=length)


def _checkpointed(body: Callable, carry: Carry, length: int, levels: int) -> Carry:
    if levels == 1 or length <= 2:
        return _scan(body, carry, length)
    chunk = max(1, math.ceil(length ** ((levels - 1) / levels)))
    n_chunks = -(-length // chunk)
    if n_chunks * chunk == length:
        run = body
    else:
        # The last chunk is padded and its extra units skipped by a `cond` on a
        # counter, rather than run as a shorter chunk: one copy of `body` in the
        # compiled program, not two. The counter is not batched under `vmap`, so the
        # `cond` stays a branch (it is not turned into a select of both sides).
        carry = (carry, jnp.asarray(0, jnp.int32))

        def run(ci):
            c, i = ci
            return jax.lax.cond(i < length, body, lambda c: c, c), i + 1

    def run_chunk(c):
        return _checkpointed(run, c, chunk, levels - 1)

    carry = _scan(jax.checkpoint(run_chunk, prevent_cse=False), carry, n_chunks)
    return carry if run is body else carry[0]
