"""Bad input gets a precise error naming the argument, before tracing; run-time failures are
reported, never hidden."""

import os
from pathlib import Path
import subprocess
import sys

import equinox as eqx
import jax
import jax.numpy as jnp
import pytest

import sciad

from .bad_inputs import ALL

ROOT = Path(__file__).resolve().parents[1]


def test_at_least_twenty_distinct_bad_inputs():
    assert len({c[0] for c in ALL}) >= 20


def test_bad_inputs_give_precise_errors_as_users_see_them():
    """Run the cases without the jaxtyping hook (which would pre-empt the messages)."""
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run(
        [sys.executable, "-m", "tests.bad_inputs"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"{len(ALL)} passed, 0 failed" in proc.stdout


def test_traced_nonpositive_dt_is_reported_at_run_time():
    model = sciad.ode.Pendulum(length=1.0, gravity=9.81, damping=0.1)
    run = jax.jit(lambda dt: sciad.simulate(model, jnp.array([1.0, 0.0]), dt=dt, n_steps=10).y1)
    # Under a plain jax.jit, equinox surfaces the same message as a JaxRuntimeError. On a
    # GPU it surfaces when the result is waited for (asynchronous dispatch).
    with pytest.raises(
        (eqx.EquinoxRuntimeError, jax.errors.JaxRuntimeError), match="dt must be positive"
    ):
        jax.block_until_ready(run(-0.1))
