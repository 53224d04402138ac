"""Test-wide settings: float64, strict dtype and rank promotion (DESIGN §3)."""

import gc

import jax
import pytest

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_numpy_dtype_promotion", "strict")
jax.config.update("jax_numpy_rank_promotion", "raise")


@pytest.fixture(autouse=True, scope="module")
def _drop_compiled_programs():
    """Drop JAX's caches of traced and compiled programs after each test module, so a
    long-lived xdist worker does not accumulate every module's executables (workers
    grew past 7 GB of resident memory without this)."""
    yield
    jax.clear_caches()
    gc.collect()
