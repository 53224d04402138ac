"""Bad input gets a precise error naming the argument, before tracing; run-time failures are
reported, never hidden."""

import importlib

import equinox as eqx
import jax
import jax.numpy as jnp
import pytest

import sciad

MIN_CASES = 300  # the bar of issue 18
PILLARS = ("core", "ode", "fit", "md", "rigid")


def test_the_bad_input_suite_has_a_file_per_pillar_and_enough_cases():
    """Each case of `tests/bad_inputs/` is its own pytest item; together they hold at
    least 300 distinct cases."""
    names = []
    for pillar in PILLARS:
        cases = importlib.import_module(f"tests.bad_inputs.test_{pillar}").CASES
        assert cases, pillar
        names += [f"{pillar}: {c[0]}" for c in cases]
    assert len(set(names)) == len(names)
    assert len(names) >= MIN_CASES


def test_traced_nonpositive_dt_is_reported_at_run_time():
    model = sciad.ode.Pendulum(length=1.0, gravity=9.81, damping=0.1)
    run = jax.jit(lambda dt: sciad.simulate(model, jnp.array([1.0, 0.0]), dt=dt, n_steps=10).y1)
    # Under a plain jax.jit, equinox surfaces the same message as a JaxRuntimeError. On a
    # GPU it surfaces when the result is waited for (asynchronous dispatch).
    with pytest.raises(
        (eqx.EquinoxRuntimeError, jax.errors.JaxRuntimeError), match="dt must be positive"
    ):
        jax.block_until_ready(run(-0.1))
