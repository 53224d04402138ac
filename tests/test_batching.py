"""`sciad._core._batching.compacting_while`: a while loop whose batched form lets the
elements still running continue as a smaller batch."""

import jax
import jax.numpy as jnp
import numpy as np

from sciad._core._batching import compacting_while


def collatz_steps(n: int) -> int:
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


def collatz(evaluated: list):
    """Steps of the Collatz map from n to 1; `evaluated` counts the element evaluations
    of the body (the callback has a batched operand, so it runs once per element of
    every batch the body is applied to)."""

    def cond(data, carry):
        n, _ = carry
        return n != 1

    def body(data, carry):
        n, steps = carry
        jax.debug.callback(lambda x: evaluated.append(1), n)
        return jnp.where(n % 2 == 0, n // 2, 3 * n + 1), steps + data

    return lambda n: compacting_while(cond, body, jnp.asarray(1), (n, jnp.asarray(0)))[1]


def test_each_element_gets_the_unbatched_result():
    ns = np.arange(1, 65)
    expected = [collatz_steps(int(n)) for n in ns]
    f = collatz([])
    assert int(jax.jit(f)(jnp.asarray(27))) == 111
    np.testing.assert_array_equal(np.asarray(jax.jit(jax.vmap(f))(jnp.asarray(ns))), expected)
    # Nested vmap (the inner batch of 32 is compacted, the outer of 2 iterates whole), a
    # small batch, which iterates whole.
    nested = jax.jit(jax.vmap(jax.vmap(f)))(jnp.asarray(ns).reshape(2, 32))
    np.testing.assert_array_equal(np.asarray(nested).ravel(), expected)
    np.testing.assert_array_equal(
        np.asarray(jax.jit(jax.vmap(f))(jnp.asarray(ns[:3]))), expected[:3]
    )


def test_only_running_elements_are_advanced():
    """64 starting values, 0–112 steps each. Each round advances the first 16 values
    still running, so the batch costs 16 × (number of rounds) element evaluations,
    which an independent count of the rounds gives exactly; a plain vmapped while loop
    evaluates 64 × 112 = 7,168 elements (here 2,592)."""
    ns = np.arange(1, 65)
    left = np.array([collatz_steps(int(n)) for n in ns])
    rounds = 0
    while (left > 0).any():
        left[np.nonzero(left > 0)[0][:16]] -= 1
        rounds += 1
    evaluated = []
    jax.block_until_ready(jax.jit(jax.vmap(collatz(evaluated)))(jnp.asarray(ns)))
    assert len(evaluated) == 16 * rounds
    assert len(evaluated) < 0.4 * 64 * 112
