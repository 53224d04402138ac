"""The pair-difference primitive behind every pair potential (sciad/_core/_rows.py).

Independent reference: plain `jnp` indexing (`take(..., mode="clip")`), whose gather
and scatter-add JAX differentiates and batches itself. The primitive must agree with
it in value, `grad`, `jvp`, reverse over reverse, forward over reverse, under `jit`,
and under `vmap` with every combination of batched and shared arguments (also nested).
Indices include out-of-range ones (the list's padding), which clamp in both directions.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sciad._core._rows import pair_difference, pair_scatter

B, N, M = 3, 7, 11
RNG = np.random.default_rng(0)
X = jnp.asarray(RNG.standard_normal((B, N, 3)))
IDX_I = jnp.asarray(RNG.integers(0, N + 2, (B, M)).astype(np.int32))  # some past the end
IDX_J = jnp.asarray(RNG.integers(0, N + 2, (B, M)).astype(np.int32))
U = jnp.asarray(RNG.standard_normal((B, M, 3)))


def _ref(x, i, j):
    return jnp.take(x, i, axis=0, mode="clip") - jnp.take(x, j, axis=0, mode="clip")


def _ref_scatter(u, i, j):
    z = jnp.zeros((N,) + u.shape[1:], u.dtype)
    return z.at[jnp.clip(i, 0, N - 1)].add(u).at[jnp.clip(j, 0, N - 1)].add(-u)


def _loss(diff):
    return lambda x, i, j: jnp.sum(jnp.sin(diff(x, i, j)) ** 3)


def _close(a, b):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=0, atol=1e-13)


AXES = [(0, 0, 0), (0, None, None), (None, 0, 0), (0, 0, None), (None, None, 0)]


@pytest.mark.parametrize("axes", AXES)
def test_values_and_derivatives_agree_with_jnp_indexing_under_vmap(axes):
    args = tuple(a if ax == 0 else a[0] for a, ax in zip((X, IDX_I, IDX_J), axes, strict=True))
    mine, ref = _loss(pair_difference), _loss(_ref)
    _close(jax.vmap(pair_difference, axes)(*args), jax.vmap(_ref, axes)(*args))
    _close(
        jax.jit(jax.vmap(jax.grad(mine), axes))(*args),
        jax.vmap(jax.grad(ref), axes)(*args),
    )
    hess = jax.vmap(jax.hessian(ref), axes)(*args)
    _close(jax.vmap(jax.hessian(mine), axes)(*args), hess)  # forward over reverse
    _close(jax.vmap(jax.jacrev(jax.grad(mine)), axes)(*args), hess)  # reverse over reverse


def test_jvp_batch_axis_elsewhere_and_nested_vmap():
    v = jnp.cos(X[0])
    mine, ref = _loss(pair_difference), _loss(_ref)
    _close(
        jax.jvp(lambda y: mine(y, IDX_I[0], IDX_J[0]), (X[0],), (v,))[1],
        jax.jvp(lambda y: ref(y, IDX_I[0], IDX_J[0]), (X[0],), (v,))[1],
    )
    xa = jnp.moveaxis(X, 0, 1)  # batch on axis 1 of x and of i
    _close(
        jax.vmap(jax.grad(mine), (1, 1, 0))(xa, IDX_I.T, IDX_J),
        jax.vmap(jax.grad(ref), (1, 1, 0))(xa, IDX_I.T, IDX_J),
    )
    xx, ii, jj = (
        jnp.stack([X, X + 1]),
        jnp.stack([IDX_I, IDX_I[::-1]]),
        jnp.stack([IDX_J, IDX_J[::-1]]),
    )
    _close(
        jax.vmap(jax.vmap(jax.grad(mine)))(xx, ii, jj),
        jax.vmap(jax.vmap(jax.grad(ref)))(xx, ii, jj),
    )


@pytest.mark.parametrize("axes", AXES[:3])
@pytest.mark.parametrize("width", [3, 4])
def test_scatter_is_the_transpose(axes, width):
    u = U if width == 3 else jnp.concatenate([U, U[..., :1]], axis=-1)
    args = tuple(a if ax == 0 else a[0] for a, ax in zip((u, IDX_I, IDX_J), axes, strict=True))
    _close(
        jax.vmap(lambda u, i, j: pair_scatter(u, i, j, N), axes)(*args),
        jax.vmap(_ref_scatter, axes)(*args),
    )
    # <D x, u> = <x, Dᵀ u> for the unbatched pair
    x = X[0][:, :1].repeat(width, axis=1)
    lhs = jnp.sum(pair_difference(x, IDX_I[0], IDX_J[0]) * u[0])
    rhs = jnp.sum(x * pair_scatter(u[0], IDX_I[0], IDX_J[0], N))
    assert abs(float(lhs - rhs)) < 1e-12
