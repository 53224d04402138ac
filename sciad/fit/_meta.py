"""`sciad.meta_fit`: the outer loop of meta-optimisation (bilevel problems).

The objective may itself fit a model (`sciad.fit`) or run a simulation
(`sciad.simulate`); its gradient flows through the inner solve (implicit
differentiation of a fit, checkpointed reverse mode of a simulation), and an optimistix
minimiser takes the outer steps.
"""

from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array
import optimistix as optx

from .._core._results import from_optimistix, raise_on_failure, RESULTS
from .._core._types import FloatScalar, IntScalar, PyTree
from .._core._validate import check_finite, check_int
from ._fit import check_free, free_mask, progress_hook, to_model
from ._noisy import NoiseTolerantBFGS


class MetaResult(eqx.Module):
    """The outcome of [`sciad.meta_fit`][sciad.meta_fit].

    **Fields:**

    - `hyper`: the optimised hyperparameters, in the structure of the `hyper` passed
      in (frozen leaves unchanged).
    - `loss`: the objective at `hyper`.
    - `aux`: the objective's auxiliary output at `hyper` (with `has_aux=True`, e.g.
      the inner `FitResult`), else `None`.
    - `num_steps`: outer optimiser steps taken (each evaluates the objective and its
      gradient once).
    - `result`: `sciad.RESULTS.successful`, or `max_steps_reached`, `nonfinite_state`
      or `optimisation_failed` (another optimiser failure).
    - `stats`: optimistix's statistics (`num_steps`, `max_steps`).

    **Example:**

    ```python
    res = sciad.meta_fit({"weight": jnp.asarray(1.0)}, validation_loss, data,
                         positive=lambda h: h["weight"])
    res.hyper["weight"], res.loss, res.num_steps
    ```
    """

    hyper: PyTree
    loss: FloatScalar
    aux: Any
    num_steps: IntScalar
    result: RESULTS
    stats: dict[str, Any]


def meta_fit(
    hyper: PyTree,
    objective: Callable[[PyTree, Any], Any],
    data: Any = None,
    *,
    solver: optx.AbstractMinimiser | None = None,
    free: Any = None,
    positive: Any = None,
    has_aux: bool = False,
    max_steps: int = 100,
    throw: bool = True,
    progress: bool = False,
) -> MetaResult:
    """Minimise a scalar `objective(hyper, data)` over the float leaves of `hyper`: the
    outer loop of a bilevel (meta-optimisation) problem.

    `objective` typically fits a model or runs a simulation with the hyperparameters
    (a regularisation weight, a step size, a thermostat's friction) and scores the
    outcome, e.g. on held-out data. Its gradient is taken by `jax.grad` through the
    inner solve: through `sciad.fit` by implicit differentiation at the inner optimum,
    through `sciad.simulate` by its adjoint. An optimistix minimiser then takes the
    outer steps; the whole loop is one compiled `while_loop`.

    **Arguments:**

    - `hyper`: the hyperparameters: any PyTree (a dict, a tuple, an Equinox module)
      whose floating-point JAX array leaves are optimised (scalars or arrays).
    - `objective`: `objective(hyper, data) -> scalar`, or `-> (scalar, aux)` with
      `has_aux=True`. Must be differentiable in `hyper`.
    - `data`: anything the objective needs besides `hyper` (training and validation
      data, an initial guess); it may be traced, and the optimum is differentiable
      with respect to it (implicit differentiation of the outer problem).
    - `solver`: an optimistix minimiser. Default
      [`NoiseTolerantBFGS`][sciad.fit.NoiseTolerantBFGS]`(rtol=1e-6, atol=1e-6)`:
      `optx.BFGS` with its Armijo test relaxed by the objective's noise. On a
      ridge-weight problem it took 12 outer steps, against 31 for `optx.BFGS`, 13
      for `optx.LBFGS` and `optx.NonlinearCG` (the latter 100× less accurate) and
      157 for optax's Adam (see
      [Meta-optimisation](../fitting.md#meta-optimisation-an-outer-loop)).
      Any `optx.AbstractMinimiser` works, including an optax optimiser wrapped as
      `optx.OptaxMinimiser(optax.adam(1e-2), rtol=..., atol=...)` (`pip install
      "sciad[optax]"`).
    - `free`: which leaves to optimise: a selector `lambda h: (h["a"], h["b"])` or a
      PyTree of bools like `hyper`. Default: every float array leaf.
    - `positive`: hyperparameters that must stay positive (weights, step sizes,
      friction coefficients), as a selector or a PyTree of bools; they are optimised
      as log h, so h = exp(θ) > 0 at every step, and the optimiser works on their
      relative scale. Their initial values must be > 0.
    - `has_aux`: whether `objective` returns `(scalar, aux)`.
    - `max_steps`: the outer optimiser's step limit.
    - `throw`: raise if the outer optimiser fails; otherwise see `MetaResult.result`.
    - `progress`: print one line per outer step (through the solver's `verbose`).

    **Returns:** a [`sciad.MetaResult`][sciad.MetaResult]. After the solve the
    objective is evaluated once more at the optimum, so `loss` and `aux` belong to
    `hyper` exactly.

    **The inner solve must be tighter than the outer one.** The outer loss moves to
    first order with any error in the inner solution, so an inner fit stopped early
    makes the outer loss noisy and the outer line search stalls. Use an inner
    tolerance at least 100× tighter than the outer one; `sciad.fit`'s default
    Levenberg–Marquardt solves to about √ε ≈ 1e-8 (relative, in float64), which
    suits the default outer tolerance 1e-6. Pass `check_rank=False` to an inner
    `sciad.fit` (its Jacobian and SVD are not needed), and avoid float32.

    **Example:**

    ```python
    def validation_loss(hyper, data):
        train, valid = data
        inner = sciad.fit(guess, regularised, (train, hyper["weight"]), check_rank=False)
        return jnp.sum(residuals(inner.model, valid) ** 2)

    res = sciad.meta_fit({"weight": jnp.asarray(1.0)}, validation_loss, (train, valid),
                         positive=lambda h: h["weight"])
    res.hyper["weight"]
    ```

    References: bilevel optimisation through implicit differentiation, Blondel et
    al. (2022), "Efficient and modular implicit differentiation", NeurIPS; BFGS,
    Nocedal & Wright (2006), *Numerical Optimization*, §6.1.
    """
    if not callable(objective):
        raise TypeError(f"objective must be callable as objective(hyper, data); got {objective!r}.")
    check_finite(hyper, "hyper")
    free_m = free_mask(hyper, free, "free", eqx.is_inexact_array, "hyper")
    pos_m = free_mask(hyper, positive, "positive", lambda _: False, "hyper")
    check_free(hyper, free_m, pos_m, "hyper", "optimise")
    check_int(max_steps, "max_steps", minimum=1)
    for flag, name in (throw, "throw"), (progress, "progress"), (has_aux, "has_aux"):
        if not isinstance(flag, bool):
            raise TypeError(f"{name} must be True or False; got {flag!r}.")
    if solver is None:
        solver = NoiseTolerantBFGS(rtol=1e-6, atol=1e-6)
    if not isinstance(solver, optx.AbstractMinimiser):
        kind = (
            ", a least-squares solver (sciad.fit takes those; meta_fit minimises a scalar)"
            if isinstance(solver, optx.AbstractLeastSquaresSolver)
            else ""
        )
        raise TypeError(
            "solver must be an optimistix minimiser, e.g. optx.BFGS(rtol=1e-6, atol=1e-6) or "
            "optx.OptaxMinimiser(optax.adam(1e-2), rtol=1e-6, atol=1e-6); "
            f"got {type(solver).__name__}{kind}."
        )
    if progress:
        if not hasattr(solver, "verbose"):
            raise ValueError(f"{type(solver).__name__} has no `verbose` hook for progress.")
        solver = eqx.tree_at(lambda s: s.verbose, solver, progress_hook("meta"))

    params, static = eqx.partition(hyper, free_m)
    is_pos = eqx.filter(pos_m, free_m)
    theta0 = jax.tree.map(lambda x, s: jnp.log(x) if s else x, params, is_pos)
    args = (objective, static, is_pos, data, has_aux)
    try:
        raw = eqx.filter_eval_shape(
            lambda th: objective(to_model(th, static, is_pos), data), theta0
        )
    except (TypeError, ValueError) as e:  # the user's objective fails on these inputs
        raise type(e)(f"objective(hyper, data) fails before any optimisation: {e}") from e
    value = _with_aux(raw, has_aux)[0]
    if not (
        isinstance(value, jax.ShapeDtypeStruct)
        and value.shape == ()
        and jnp.issubdtype(value.dtype, jnp.floating)
    ):
        got = (
            f"shape {value.shape} and dtype {value.dtype}"
            if isinstance(value, jax.ShapeDtypeStruct)
            else f"a {type(value).__name__}"
            + ("; pass has_aux=True to return (scalar, aux)" if isinstance(value, tuple) else "")
        )
        raise ValueError(
            "objective(hyper, data) must return a real floating-point scalar"
            + (" as the first element of (scalar, aux)" if has_aux else "")
            + f"; got {got}."
        )
    kw = dict(has_aux=True, max_steps=max_steps, throw=False)
    sol = optx.minimise(_objective, solver, theta0, args, **kw)  # pyright: ignore
    loss, aux = _objective(sol.value, args)
    out = MetaResult(
        hyper=to_model(sol.value, static, is_pos),
        loss=loss,
        aux=aux,
        num_steps=sol.stats["num_steps"],
        result=from_optimistix(sol.result),
        stats=sol.stats,
    )
    return raise_on_failure(out) if throw else out


def _objective(theta: PyTree, args: Any) -> tuple[Array, Any]:
    """The objective in optimiser coordinates (log h for positive leaves), with aux."""
    objective, static, is_pos, data, has_aux = args
    return _with_aux(objective(to_model(theta, static, is_pos), data), has_aux)


def _with_aux(out: Any, has_aux: bool) -> tuple[Any, Any]:
    """The objective's output as (value, aux): aux `None` without `has_aux`."""
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise ValueError(
            "objective(hyper, data) must return a pair (scalar, aux) with has_aux=True; "
            f"got {type(out).__name__}."
        )
    return out
