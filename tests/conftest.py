"""Test-wide settings: float64, strict dtype and rank promotion (DESIGN §3)."""

import jax

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_numpy_dtype_promotion", "strict")
jax.config.update("jax_numpy_rank_promotion", "raise")
