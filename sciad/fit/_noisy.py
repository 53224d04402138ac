"""A BFGS for noisy objectives: the outer loop's default solver.

An objective that fits a model inside carries the inner solve's error into its value
to first order: two evaluations at nearly the same point differ by ~1e-12 to 1e-8 of
the value, while near the optimum a step is predicted to lower it by far less. Armijo's
sufficient-decrease test then rejects every step, the step halves again and again, and
the solve crawls without terminating (what issue 20 reported for `sciad.fit` nested
with `optx.BFGS`). Relaxing the test by the noise level lets BFGS take the last small
steps and stop by its step-size criterion.
"""

from collections.abc import Callable
from typing import cast

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, PyTree, Scalar
import lineax as lx
import optimistix as optx


class _SearchState(eqx.Module):
    step_size: Scalar


class NoiseTolerantArmijo(optx.AbstractSearch):
    """A backtracking line search with Armijo's condition relaxed by the noise in the
    objective: a step Δy from y is accepted if

    f(y + Δy) ≤ f(y) + c ∇f(y)·Δy + 2 ε |f(y)|

    with c = `slope` and ε = `noise`, the relative error of an evaluation of f. With
    `noise=0` this is `optx.BacktrackingArmijo`.

    **Arguments:**

    - `noise`: ε, the relative noise of the objective's values (≥ 0).
    - `decrease_factor`: the factor by which a rejected step shrinks, in (0, 1).
    - `slope`: c in Armijo's condition, in (0, 1).
    - `step_init`: the first step size tried after an accepted step (> 0).

    Reference: A. S. Berahas, R. H. Byrd and J. Nocedal (2019), "Derivative-free
    optimization of noisy functions via quasi-Newton methods", *SIAM J. Optim.* 29(2),
    965–993 (the relaxed Armijo condition, §2.2).
    """

    noise: float = 1e-8
    decrease_factor: float = 0.5
    slope: float = 0.1
    step_init: float = 1.0

    def __check_init__(self):
        for value, name, lo, hi in (
            (self.noise, "noise", 0.0, jnp.inf),
            (self.decrease_factor, "decrease_factor", 0.0, 1.0),
            (self.slope, "slope", 0.0, 1.0),
            (self.step_init, "step_init", 0.0, jnp.inf),
        ):
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise TypeError(f"NoiseTolerantArmijo.{name} must be a number; got {value!r}.")
            ok = lo <= value < hi if name == "noise" else lo < value < hi
            if not ok:
                bounds = ">= 0" if name == "noise" else f"in ({lo}, {hi})"
                raise ValueError(f"NoiseTolerantArmijo.{name} must be {bounds}; got {value}.")

    def init(self, y: PyTree, f_info_struct: PyTree) -> _SearchState:
        del y, f_info_struct
        return _SearchState(step_size=jnp.array(self.step_init))

    def step(
        self,
        first_step: Bool[Array, ""],
        y: PyTree,
        y_eval: PyTree,
        f_info: PyTree,
        f_eval_info: PyTree,
        state: _SearchState,
    ) -> tuple[Scalar, Bool[Array, ""], optx.RESULTS, _SearchState]:
        y_diff = jax.tree.map(jnp.subtract, y_eval, y)
        predicted = f_info.compute_grad_dot(y_diff)
        f, f_eval = f_info.as_min(), f_eval_info.as_min()
        allowance = 2 * self.noise * jnp.abs(f)
        armijo = f_eval - f <= self.slope * predicted + allowance
        accept = first_step | (armijo & (predicted <= 0))
        step_size = cast(
            Scalar, jnp.where(accept, self.step_init, self.decrease_factor * state.step_size)
        )
        return step_size, accept, optx.RESULTS.successful, _SearchState(step_size=step_size)


class NoiseTolerantBFGS(optx.AbstractBFGS):
    """BFGS with a [`NoiseTolerantArmijo`][sciad.fit.NoiseTolerantArmijo] line search:
    optimistix's `optx.BFGS` for an objective whose values carry a small relative error,
    such as one that fits a model or runs an adaptive solve inside. It is the default
    solver of [`sciad.meta_fit`][sciad.meta_fit].

    **Arguments:**

    - `rtol`, `atol`: terminate when an accepted step changes y by less than
      `atol + rtol |y|` and f by less than `atol + rtol |f|` (optimistix's Cauchy
      criterion, as in `optx.BFGS`).
    - `noise`: the relative error of an evaluation of the objective (default 1e-8, the
      accuracy of an inner least-squares fit in float64).
    - `norm`: the norm of those changes (default `optx.max_norm`).
    - `verbose`: optimistix's `verbose` hook.

    **Example:**

    ```python
    from sciad.fit import NoiseTolerantBFGS

    solver = NoiseTolerantBFGS(rtol=1e-6, atol=1e-6, noise=1e-8)
    res = sciad.meta_fit(hyper, objective, data, solver=solver)
    ```

    Reference: BFGS, J. Nocedal and S. J. Wright (2006), *Numerical Optimization*,
    §6.1; the relaxed line search, Berahas, Byrd and Nocedal (2019).
    """

    rtol: float
    atol: float
    norm: Callable[[PyTree], Scalar]
    use_inverse: bool
    descent: optx.NewtonDescent
    search: NoiseTolerantArmijo
    verbose: Callable[..., None]

    def __init__(
        self,
        rtol: float,
        atol: float,
        noise: float = 1e-8,
        norm: Callable[[PyTree], Scalar] = optx.max_norm,
        verbose: bool | Callable[..., None] = False,
    ):
        self.rtol = rtol
        self.atol = atol
        self.norm = norm
        self.use_inverse = True
        self.descent = optx.NewtonDescent(linear_solver=lx.Cholesky())
        self.search = NoiseTolerantArmijo(noise=noise)
        if verbose is True:
            verbose = _print_all
        self.verbose = verbose if callable(verbose) else _print_nothing


def _print_nothing(**kwargs) -> None:
    del kwargs


def _print_all(**kwargs) -> None:
    """Print every `(name, value)` pair optimistix passes to its `verbose` hook."""
    names = ", ".join(f"{name}: {{}}" for name, _ in kwargs.values())
    jax.debug.print(names, *[value for _, value in kwargs.values()], ordered=True)
