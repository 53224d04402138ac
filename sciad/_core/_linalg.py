"""Dense linear algebra that never runs LAPACK kernels side by side.

jaxlib 0.10's CPU LAPACK kernels (LU, Cholesky, SVD, eigen, triangular solves) split a
large batch across XLA's intra-op thread pool and then wait for the parts. When as
many such batched calls run at once as the pool has threads (two on a 2-core machine:
XLA runs independent operations concurrently), every thread waits and the program
hangs forever (measured with jax 0.10.1: two independent batched 3×3 solves of 10,000
systems, or two Cholesky factorisations of 1,024 30×30 matrices, hang on 2 cores;
jax 0.11.2 removes that path). sciad's collision functions are `vmap`ped over
thousands of geom pairs in several groups at once, so they use:

- closed forms for matrices up to 3×3 (`small_det`, `small_inv`, `small_solve`):
  elementwise, batched by XLA's fused loops, differentiable like any expression
  (larger matrices go to `jnp.linalg`);
- `sequential_pinv`, whose batch runs one matrix at a time under `vmap` (a loop; no
  derivative, for inputs under `stop_gradient`).
"""

import jax
from jax.custom_batching import sequential_vmap
import jax.numpy as jnp
from jaxtyping import Array

from ._geometry import cross


def _check_small(a: Array) -> int:
    n = a.shape[-1]
    if a.ndim < 2 or a.shape[-2] != n:
        raise ValueError(f"expected square matrices (..., n, n); got shape {a.shape}.")
    return n


def small_det(a: Array) -> Array:
    """The determinant of square matrices `a` (..., n, n) (the cofactor expansion for
    n ≤ 3, else `jnp.linalg.det`; shape (...,)).

    **Example:** `small_det(jnp.eye(3))` is 1.0."""
    n = _check_small(a)
    if n > 3:
        return jnp.linalg.det(a)
    if n == 1:
        return a[..., 0, 0]
    if n == 2:
        return a[..., 0, 0] * a[..., 1, 1] - a[..., 0, 1] * a[..., 1, 0]
    return jnp.sum(a[..., 0, :] * cross(a[..., 1, :], a[..., 2, :]), axis=-1)


def _adjugate(a: Array) -> Array:
    n = _check_small(a)
    if n == 1:
        return jnp.ones_like(a)
    if n == 2:
        return jnp.stack(
            [
                jnp.stack([a[..., 1, 1], -a[..., 0, 1]], -1),
                jnp.stack([-a[..., 1, 0], a[..., 0, 0]], -1),
            ],
            -2,
        )
    r0, r1, r2 = a[..., 0, :], a[..., 1, :], a[..., 2, :]
    # the cofactor matrix's rows are r1 × r2, r2 × r0, r0 × r1; the adjugate is its
    # transpose
    return jnp.stack([cross(r1, r2), cross(r2, r0), cross(r0, r1)], -1)


def small_inv(a: Array) -> Array:
    """The inverse of square matrices `a` (..., n, n): adjugate / determinant for
    n ≤ 3 (inf or nan for a singular matrix, as a division by zero), else
    `jnp.linalg.inv`.

    **Example:** `small_inv(2.0 * jnp.eye(2))` is `0.5 * jnp.eye(2)`."""
    if _check_small(a) > 3:
        return jnp.linalg.inv(a)
    return _adjugate(a) / small_det(a)[..., None, None]


def small_solve(a: Array, b: Array) -> Array:
    """x with a x = b for square `a` (..., n, n) and `b` (..., n) (Cramer's rule for
    n ≤ 3, inf or nan for a singular `a`; else `jnp.linalg.solve`).

    **Example:** `small_solve(2.0 * jnp.eye(3), jnp.ones(3))` is `0.5 * jnp.ones(3)`."""
    if _check_small(a) > 3:
        return jnp.linalg.solve(a, b[..., None])[..., 0]
    return jnp.einsum("...ij,...j->...i", _adjugate(a), b) / small_det(a)[..., None]


@sequential_vmap
def _pinv(m: Array, rtol: Array) -> Array:
    return jnp.linalg.pinv(m, rtol=rtol)


def sequential_pinv(m: Array, rtol: float) -> Array:
    """The Moore–Penrose pseudo-inverse of one matrix `m` (n, n) (singular values below
    `rtol` times the largest dropped), computed one matrix at a time when `vmap`ped.
    `m` is taken under `stop_gradient`: the result carries no derivative.

    **Example:** `sequential_pinv(jnp.diag(jnp.array([2.0, 0.0])), 1e-10)` is
    `diag(0.5, 0)`."""
    m = jax.lax.stop_gradient(m)
    return _pinv(m, jnp.asarray(rtol, m.dtype))
