"""`FitResult`: the fitted model, its uncertainties and a readable report."""

from typing import Any

import equinox as eqx
import jax
from jax.flatten_util import ravel_pytree
import jax.numpy as jnp
from jaxtyping import Array, Float
import numpy as np

from .._core._results import RESULTS
from .._core._types import BoolScalar, FloatScalar, IntScalar, PyTree
from .._core._validate import is_concrete
from ._identifiability import Identifiability


class FitResult(eqx.Module):
    """The outcome of `sciad.fit`.

    **Fields:**

    - `model`: the fitted model (frozen parameters unchanged).
    - `loss`: the final loss: ½Σr² of the residuals (divided by `sigma` if given),
      or the scalar loss.
    - `num_steps`: optimiser steps taken.
    - `result`: `sciad.RESULTS.successful`, or `max_steps_reached`, `nonfinite_state`
      or `optimisation_failed` (another optimiser failure).
    - `stats`: optimistix's statistics.
    - `identifiability`: the SVD of the residuals' Jacobian at the solution, a
      [`sciad.Identifiability`][sciad.Identifiability] (its rank, singular
      values and unidentifiable directions), or `None` for a scalar loss or
      `check_rank=False`.
    - `covariance`: the covariance of the free parameters, shape `(n, n)` over the
      flattened free parameters in the order of `names`, in their own units squared
      (also for parameters fitted as `positive`): s²(JᵀJ)⁻¹ with
      s² = `residual_variance`, or (JᵀJ)⁻¹ with `absolute_sigma=True`, J the
      Jacobian of the (σ-divided) residuals. `inf` on the diagonal and `nan` in the
      row and column of a parameter the data do not determine; `inf` everywhere
      when s² cannot be estimated (no more residuals than parameters). `None`
      where `identifiability` is.
    - `standard_errors`: √diag(`covariance`) in the model's structure: a PyTree like
      `model` holding each free parameter's standard error and `None` at frozen
      leaves (`res.standard_errors.length`), or `None`.
    - `residual_variance`: s² = Σr²/(m − n) of the m (σ-divided) residuals and the
      n free parameters (`inf` if m ≤ n); the reduced χ² when `sigma` are the true
      standard deviations. `None` for a scalar loss.
    - `names`: the names of the flattened free parameters, e.g.
      `("length", "damping")` or `("masses[0]", ...)` (static).
    - `absolute_sigma`: whether `covariance` is (JᵀJ)⁻¹, unscaled (static).

    **Properties:** `parameters` (the free parameters, in the model's structure with
    `None` at frozen leaves), `correlation` (the correlation matrix),
    `rank` (the Jacobian's numerical rank) and `rank_deficient` (`True` when the
    data do not determine every free parameter).

    `print(res)` shows a report: each free parameter as value ± standard error, the
    loss, steps, result and rank (`repr(res)` keeps Equinox's field summary).
    Uncertainties are constants under differentiation (`stop_gradient`).

    **Example:**

    ```python
    res = sciad.fit(sciad.ode.Pendulum(length=0.8), residuals, observed)
    res.model.length, res.loss, res.num_steps, res.result == sciad.RESULTS.successful
    res.rank_deficient  # True: length and gravity are both free, only g/L is observed
    res.standard_errors.damping  # damping's standard error
    print(res)  # length = 1.00117 ± inf, ...
    ```
    """

    model: PyTree
    loss: FloatScalar
    num_steps: IntScalar
    result: RESULTS
    stats: dict[str, Any]
    identifiability: Identifiability | None
    covariance: Float[Array, "n n"] | None
    standard_errors: PyTree | None
    residual_variance: FloatScalar | None
    names: tuple[str, ...] = eqx.field(static=True)
    absolute_sigma: bool = eqx.field(static=True)
    free: tuple[bool, ...] = eqx.field(static=True, repr=False)

    @property
    def parameters(self) -> PyTree:
        """The fitted free parameters: `model` with `None` at frozen leaves."""
        mask = jax.tree.unflatten(jax.tree.structure(self.model), self.free)
        return eqx.filter(self.model, mask)

    @property
    def correlation(self) -> Float[Array, "*batch n n"] | None:
        """The correlation matrix of the free parameters, cov_ij / √(cov_ii cov_jj),
        in the order of `names`; `nan` in the row and column of an undetermined
        parameter. `None` where `covariance` is."""
        if self.covariance is None:
            return None
        d = jnp.sqrt(jnp.diagonal(self.covariance, axis1=-2, axis2=-1))
        corr = self.covariance / (d[..., :, None] * d[..., None, :])
        return jnp.where(jnp.isinf(d[..., :, None]) | jnp.isinf(d[..., None, :]), jnp.nan, corr)

    @property
    def rank(self) -> IntScalar | None:
        """The numerical rank of the residuals' Jacobian at the solution."""
        return None if self.identifiability is None else self.identifiability.rank

    @property
    def rank_deficient(self) -> BoolScalar | None:
        """Whether some combination of free parameters is not determined by the data."""
        return None if self.identifiability is None else self.identifiability.deficient

    def __str__(self) -> str:
        """A report: each free parameter as value ± standard error, then the loss,
        steps, result and rank. Falls back to `repr` under `jit` or for a batch of
        fits (from `vmap`)."""
        if not all(is_concrete(x) for x in jax.tree.leaves(self)) or np.ndim(self.loss) != 0:
            return repr(self)
        values = np.asarray(ravel_pytree(self.parameters)[0])
        errors = (
            None
            if self.standard_errors is None
            else np.asarray(ravel_pytree(self.standard_errors)[0])
        )
        ok = bool(self.result == RESULTS.successful)
        lines = [
            f"FitResult of {type(self.model).__name__}: "
            + ("successful" if ok else str(RESULTS[self.result]).partition(". ")[0].lower())
            + f" after {int(self.num_steps)} steps, loss {float(self.loss):.6g}"
        ]
        width = max(len(n) for n in self.names)
        for k, (name, value) in enumerate(zip(self.names, values, strict=True)):
            text = f"  {name:<{width}} = {value:.6g}"
            if errors is not None:
                text += f" ± {errors[k]:.2g}"
                if np.isinf(errors[k]):
                    text += "  (not determined by the data)"
            lines.append(text)
        lines.append(self._summary())
        return "\n".join(lines)

    def _summary(self) -> str:
        """The report's last line: rank and how the standard errors were made."""
        n = len(self.names)
        if self.identifiability is None:
            why = "a scalar loss" if self.residual_variance is None else "check_rank=False"
            return f"  no standard errors ({why}: no residual Jacobian)"
        text = f"  rank {int(self.identifiability.rank)} of {n}"
        s2 = float(self.residual_variance)  # pyright: ignore[reportArgumentType]
        if self.absolute_sigma:
            return text + f"; errors from (JᵀJ)⁻¹ (absolute sigma); reduced chi² {s2:.4g}"
        return text + f"; errors from s²(JᵀJ)⁻¹ with s² = Σr²/(m − n) = {s2:.4g}"
