"""Which parameters a fit determines: the rank of the residuals' Jacobian at the solution."""

from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
from jax.flatten_util import ravel_pytree
import jax.numpy as jnp
from jaxtyping import Array, Float
import numpy as np

from .._core._types import BoolScalar, FloatScalar, IntScalar, PyTree


class Identifiability(eqx.Module):
    """The singular value decomposition of the residuals' Jacobian at a fit's solution.

    With p the n free parameters (flattened) and r(p) the residuals, the Jacobian is
    taken in relative units, Jₛ = ∂r/∂p · diag(s) with sₖ = |pₖ| (1 where pₖ = 0), so
    that the rank does not depend on the parameters' units (for parameters fitted as
    positive, Jₛ is the Jacobian in the optimiser's log coordinates). Its numerical
    rank counts the singular values above `tolerance` = σ_max · max(m, n) · ε, the
    default of `numpy.linalg.matrix_rank` (m residuals, ε the dtype's machine
    epsilon). A rank below n means some direction δp = diag(s) v leaves the residuals
    unchanged to first order: the data do not determine the parameters along it, and
    the fitted values there are whatever the initial guess made them.

    **Fields:**

    - `names`: the name of each flattened free parameter, e.g. `("length", "gravity")`
      or `("masses[0]", ...)` (static).
    - `scale`: s, shape `(n,)`.
    - `singular_values`: σ of Jₛ in descending order, shape `(n,)` (padded with zeros
      when there are fewer residuals than parameters).
    - `directions`: V, shape `(n, n)`; column k is the relative-unit parameter
      direction of `singular_values[k]` (Jₛ = U diag(σ) Vᵀ).
    - `tolerance`: the rank threshold.
    - `rank`: the numerical rank; `deficient`: `rank < n`.

    The decomposition is kept whole so that it can be reused: `covariance` turns it
    into the parameters' covariance, diag(s) V diag(σ⁻²) Vᵀ diag(s) times the noise
    variance.

    **Example:**

    ```python
    res = sciad.fit(sciad.ode.Pendulum(length=0.8, gravity=9.0), residuals, observed)
    res.identifiability.rank, res.rank_deficient  # 1, True: only g/L is observed
    res.identifiability.null_directions()  # [{"length": 0.707..., "gravity": 0.707...}]
    ```
    """

    names: tuple[str, ...] = eqx.field(static=True)
    scale: Float[Array, " n"]
    singular_values: Float[Array, " n"]
    directions: Float[Array, "n n"]
    tolerance: FloatScalar
    rank: IntScalar
    deficient: BoolScalar

    def covariance(self, variance: FloatScalar | float = 1.0) -> Float[Array, "n n"]:
        """The covariance of the free parameters, `variance` · (JᵀJ)⁺, from the SVD.

        J is the Jacobian in the parameters' own units, so (JᵀJ)⁺ =
        diag(s) V diag(σ⁻²) Vᵀ diag(s), keeping the `rank` singular values above
        `tolerance` (the pseudo-inverse of `scipy.optimize.curve_fit`'s `trf` method).
        Where that truncation would give a plausible but meaningless finite number, the
        result says so instead:

        - a parameter with a share above √ε in the unidentifiable directions (the
          norm of its row of V's last n − rank columns, relative units) has an
          infinite variance: its diagonal entry is `inf` and the rest of its row and
          column `nan` (the data bound neither it nor its covariances);
        - the other entries are the covariance of the determined parameters, which
          does not depend on how the undetermined directions are resolved;
        - `variance = inf` (the noise variance cannot be estimated, e.g. no more
          residuals than parameters) gives `inf` everywhere, like `curve_fit`;
        - a non-finite Jacobian gives `nan` everywhere.

        Works under `jit` and `vmap`.

        **Arguments:**

        - `variance`: the residuals' variance: 1 when they are already divided by
          their known standard deviations, else an estimate such as Σr²/(m − n).

        **Returns:** an `(n, n)` array over the flattened parameters (order of `names`),
        in the parameters' units squared.

        **Example:**

        ```python
        cov = res.identifiability.covariance(res.residual_variance)  # res.covariance
        cov = res.identifiability.covariance(1.0)  # as if absolute_sigma=True
        ```
        """
        v = self.directions
        n = v.shape[0]
        kept = jnp.arange(n) < self.rank
        sv = jnp.where(kept, self.singular_values, 1.0)
        inverse = jnp.where(kept, 1.0 / sv**2, 0.0)
        cov = (v * inverse[None, :]) @ v.T
        cov = self.scale[:, None] * cov * self.scale[None, :] * variance
        share = jnp.sqrt(jnp.sum(jnp.where(kept[None, :], 0.0, v) ** 2, axis=1))
        loose = share > jnp.sqrt(jnp.finfo(v.dtype).eps)
        cov = jnp.where(loose[:, None] | loose[None, :], jnp.nan, cov)
        cov = jnp.where(jnp.diag(loose), jnp.inf, cov)
        cov = jnp.where(jnp.isinf(variance), jnp.inf, cov)
        return jnp.where(jnp.all(jnp.isfinite(self.singular_values)), cov, jnp.nan)

    def null_directions(self, digits: int = 3) -> list[dict[str, float]]:
        """The unidentifiable directions, one dict per direction, naming the parameters
        that take part (relative-unit components rounded to `digits`; zeros left out).
        Needs concrete values (call it outside `jit`).

        **Returns:** a list with `n − rank` dicts `{parameter name: component}`.
        """
        v = np.asarray(self.directions)
        k = int(self.rank)
        out = []
        for col in v[:, k:].T:
            col = col * np.sign(col[np.argmax(np.abs(col))])  # largest component > 0
            out.append(
                {
                    n: round(float(c), digits)
                    for n, c in zip(self.names, col, strict=True)
                    if round(c, digits)
                }
            )
        return out

    def describe(self) -> str:
        """A sentence naming the unidentifiable parameter combinations (concrete only)."""
        if not np.all(np.isfinite(np.asarray(self.singular_values))):
            return (
                "the residuals' Jacobian at the solution is not finite (NaN or inf), so "
                "which parameters the data determine is unknown; see FitResult.result."
            )
        terms = []
        for d in self.null_directions():
            terms.append(" + ".join(f"{c:g}·{n}" for n, c in d.items()))
        n = len(self.names)
        return (
            f"the residuals do not determine every free parameter: their Jacobian at the "
            f"solution has rank {int(self.rank)} for {n} free parameters (singular values "
            f"{np.asarray(self.singular_values)!s}, tolerance {float(self.tolerance):.3g}). "
            f"Moving the parameters along "
            + "; ".join(terms)
            + " (relative changes, δp/|p|) leaves the residuals unchanged, so the fitted "
            "values along it are arbitrary (set by the initial guess). Fix some of "
            + ", ".join(n for n in self.names if any(n in d for d in self.null_directions()))
            + " (free=), or add data that separates them."
        )


def parameter_names(params: PyTree) -> tuple[str, ...]:
    """Names of the flattened leaves of `params` (the free part of a model)."""
    names = []
    for path, leaf in jax.tree_util.tree_flatten_with_path(params)[0]:
        base = jax.tree_util.keystr(path).lstrip(".") or "parameter"
        size = int(np.size(leaf))
        if np.ndim(leaf) == 0:
            names.append(base)
        else:
            shape = np.shape(leaf)
            names.extend(
                base + "[" + ", ".join(map(str, np.unravel_index(i, shape))) + "]"
                for i in range(size)
            )
    return tuple(names)


@eqx.filter_jit
def identifiability(
    residuals: Callable[[PyTree, Any], PyTree], params: PyTree, args: Any, forward: bool
) -> Identifiability:
    """The [`Identifiability`][sciad.Identifiability] of `residuals` at `params`.

    **Arguments:**

    - `residuals`: `residuals(params, args) -> PyTree of arrays` (a function defined
      once, so that the compiled Jacobian is reused across calls).
    - `params`: the free parameters (a PyTree of float arrays), at the solution.
    - `args`: everything else `residuals` needs.
    - `forward`: forward-mode Jacobian (n passes) if `True`, reverse mode (m passes)
      otherwise; the caller picks the cheaper mode its residuals support.

    **Returns:** the decomposition, not differentiable (inputs are `stop_gradient`-ed).
    """
    params, args = jax.tree.map(
        lambda x: jax.lax.stop_gradient(x) if eqx.is_array(x) else x, (params, args)
    )
    flat, unravel = ravel_pytree(params)

    def r(x: Any) -> Array:
        return ravel_pytree(residuals(unravel(x), args))[0]

    jac = (jax.jacfwd if forward else jax.jacrev)(r)(flat)
    m, n = jac.shape
    scale = jnp.where(flat == 0, 1.0, jnp.abs(flat)).astype(jac.dtype)
    scaled = jac * scale[None, :]
    if m < n:  # pad so that the full right singular basis comes out
        scaled = jnp.concatenate([scaled, jnp.zeros((n - m, n), scaled.dtype)])
    _, sv, vh = jnp.linalg.svd(scaled, full_matrices=False)
    eps = jnp.finfo(scaled.dtype).eps
    tolerance = sv[0] * max(m, n) * eps
    rank = jnp.sum(sv > tolerance)
    return Identifiability(parameter_names(params), scale, sv, vh.T, tolerance, rank, rank < n)
