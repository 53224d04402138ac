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
    # Nested vmap, and an unbatched operand broadcast by the rule.
    nested = jax.jit(jax.vmap(jax.vmap(f)))(jnp.asarray(ns).reshape(8, 8))
    np.testing.assert_array_equal(np.asarray(nested).ravel(), expected)


def test_the_stragglers_run_as_a_quarter_batch():
    """64 starting values, 0–112 steps each: the whole batch iterates while more than
    16 are running, then the 16 slots of the sub-batch iterate up to the longest one.
    A plain vmapped while loop evaluates 64 × 112 = 7,168 elements (here 2,896)."""
    ns = np.arange(1, 65)
    steps = np.array([collatz_steps(int(n)) for n in ns])
    k1 = next(k for k in range(200) if np.sum(steps > k) <= 16)
    expected = 64 * k1 + 16 * (steps.max() - k1)
    evaluated = []
    jax.block_until_ready(jax.jit(jax.vmap(collatz(evaluated)))(jnp.asarray(ns)))
    assert len(evaluated) == expected
    assert expected < 0.5 * 64 * steps.max()
