"""FIRE 2.0, the fast inertial relaxation engine, as an optimistix minimiser."""

from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Int, PyTree, Scalar
import optimistix as optx

from .._core._validate import check_in_range, check_int, check_positive


def _dot(a: PyTree, b: PyTree) -> Array:
    """Σ a·b over every leaf."""
    parts = [jnp.vdot(x, y) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True)]
    return sum(parts[1:], parts[0])


def _axpy(alpha: Any, x: PyTree, y: PyTree) -> PyTree:
    """alpha·x + y, leaf by leaf."""
    return jax.tree.map(lambda a, b: alpha * a + b, x, y)


def _scale(alpha: Any, x: PyTree) -> PyTree:
    return jax.tree.map(lambda a: alpha * a, x)


def _select(pred: Any, a: PyTree, b: PyTree) -> PyTree:
    return jax.tree.map(lambda x, y: jnp.where(pred, x, y), a, b)


class _FIREState(eqx.Module):
    velocity: PyTree
    f: Scalar  # the objective at the current iterate
    grad: PyTree  # its gradient
    aux: Any
    tolerance: Scalar  # atol + rtol · norm(∇f(y0))
    dt: Scalar
    last_dt: Scalar  # the time step of the last move (shortened by `max_step`)
    alpha: Scalar
    n_positive: Int[Array, ""]  # consecutive steps with P = F·v > 0
    n_steps: Int[Array, ""]
    result: optx.RESULTS


class FIRE(optx.AbstractMinimiser):
    """FIRE 2.0, the fast inertial relaxation engine: damped dynamics that skis downhill.

    A fictitious particle of unit mass moves under the force F = −∇f. Each step, with
    the power P = F·v of the current velocity:

    - P > 0 (downhill): after more than `n_min` consecutive such steps,
      Δt ← min(f_inc Δt, dt_max) and α ← f_alpha α;
    - P ≤ 0 (uphill): the iterate backs up half of its last move, v ← 0, and, past
      the first `n_min` steps if `initial_delay`, Δt ← f_dec Δt (unless that falls
      below `dt_min`) and α ← alpha_start;
    - semi-implicit Euler: v ← v + Δt F; while downhill the velocity is mixed towards
      the force, v ← (1 − α) v + α |v| F/|F| (with α and |v| from before this step's
      updates, as in LAMMPS's `min_style fire`); then y ← y + Δt v.

    One gradient evaluation per step.

    It is an `optimistix.AbstractMinimiser`, so `optx.minimise(fn, FIRE(), y0)` runs it
    on any PyTree `y0`, and implicit differentiation (`optx.ImplicitAdjoint`) applies.
    [`sciad.md.minimize`][sciad.md.minimize] uses it by default for MD structures.

    **Stopping:** when `norm(∇f(y)) ≤ atol + rtol · norm(∇f(y₀))`; with the default
    `norm=optx.max_norm` that is the largest force component (energy/length units).
    A non-finite objective or gradient stops the run with `optx.RESULTS.nonfinite`.

    **Arguments:**

    - `rtol`, `atol`: the gradient tolerance above (relative to the initial gradient,
      and absolute).
    - `norm`: the norm of the gradient, a function `PyTree -> scalar`.
    - `dt_start`: the initial time step (time units with unit mass:
      length·(energy/length²)^(−1/2)). The defaults suit Lennard-Jones reduced units
      (Hessian eigenvalues up to a few hundred ε/σ²); in other units scale `dt_start`,
      `dt_max` and `dt_min` with a stable step, about 0.3/√(largest eigenvalue).
    - `dt_max`, `dt_min`: bounds on the time step (FIRE 2.0 suggests 10 and 0.02 times
      a stable MD step).
    - `n_min`: the number of P > 0 steps before the step may grow (N_delay).
    - `f_inc` (> 1), `f_dec` (in (0, 1)): time-step growth and shrink factors.
    - `alpha_start` (in (0, 1)), `f_alpha` (in (0, 1)): the initial mixing and its decay.
    - `initial_delay`: keep Δt from shrinking during the first `n_min` steps.
    - `max_step`: if set, a step's displacement is shortened so that its largest
      component is at most `max_step` (length units; like LAMMPS's `dmax`): a
      safeguard against huge forces from overlapping particles; `None` for plain
      FIRE 2.0.

    **Example:**

    ```python
    sol = optx.minimise(lambda y, _: jnp.sum((y - 1.0) ** 4), sciad.md.FIRE(atol=1e-8),
                        jnp.zeros(3), max_steps=10_000)
    ```

    **Reference:** J. Guénolé, W. G. Nöhring, A. Vaid, F. Houllé, Z. Xie, A. Prakash and
    E. Bitzek, "Assessment and optimization of the fast inertial relaxation engine
    (FIRE) for energy minimization in atomistic simulations and its implementation in
    LAMMPS", *Comput. Mater. Sci.* 175, 109584 (2020) (FIRE 2.0 with semi-implicit
    Euler and the half step back; the details follow their LAMMPS implementation);
    E. Bitzek, P. Koskinen, F. Gähler, M. Moseler and P. Gumbsch, "Structural relaxation
    made simple", *Phys. Rev. Lett.* 97, 170201 (2006).
    """

    rtol: float = 0.0
    atol: float = 1e-6
    norm: Callable[[PyTree], Scalar] = optx.max_norm
    dt_start: float = 0.02
    dt_max: float = 0.2
    dt_min: float = 4e-4
    n_min: int = 20
    f_inc: float = 1.1
    f_dec: float = 0.5
    alpha_start: float = 0.25
    f_alpha: float = 0.99
    initial_delay: bool = True
    max_step: float | None = None

    def __check_init__(self):
        for name in ("dt_start", "dt_max", "dt_min"):
            check_positive(getattr(self, name), f"FIRE.{name}")
        if not self.dt_min <= self.dt_start <= self.dt_max:
            raise ValueError(
                f"FIRE needs dt_min <= dt_start <= dt_max, got {self.dt_min}, "
                f"{self.dt_start}, {self.dt_max}."
            )
        for name in ("rtol", "atol"):
            check_positive(getattr(self, name), f"FIRE.{name}", zero_ok=True)
        check_in_range(self.f_inc, "FIRE.f_inc", 1.0, float("inf"), closed=(False, False))
        for name in ("f_dec", "alpha_start", "f_alpha"):
            check_in_range(getattr(self, name), f"FIRE.{name}", 0.0, 1.0, closed=(False, False))
        check_int(self.n_min, "FIRE.n_min", minimum=0)
        if self.max_step is not None:
            check_positive(self.max_step, "FIRE.max_step")
        if not callable(self.norm):
            raise TypeError(f"FIRE.norm must be callable, got {self.norm!r}.")

    def _evaluate(self, fn: Callable, y: PyTree, args: PyTree) -> tuple[Array, PyTree, Any]:
        (f, aux), grad = jax.value_and_grad(lambda x: fn(x, args), has_aux=True)(y)
        return f, grad, aux

    def init(
        self,
        fn: Callable,
        y: PyTree,
        args: PyTree,
        options: dict[str, Any],
        f_struct: jax.ShapeDtypeStruct,
        aux_struct: PyTree[jax.ShapeDtypeStruct],
        tags: frozenset[object],
    ) -> _FIREState:
        """Evaluate f and ∇f at y₀; zero velocity, Δt = dt_start, α = alpha_start."""
        del options, aux_struct, tags
        f, grad, aux = self._evaluate(fn, y, args)
        dtype = f_struct.dtype
        return _FIREState(
            velocity=jax.tree.map(jnp.zeros_like, y),
            f=f,
            grad=grad,
            aux=aux,
            tolerance=jnp.asarray(self.atol, dtype) + self.rtol * self.norm(grad),
            dt=jnp.asarray(self.dt_start, dtype),
            last_dt=jnp.zeros((), dtype),
            alpha=jnp.asarray(self.alpha_start, dtype),
            n_positive=jnp.array(0),
            n_steps=jnp.array(0),
            result=_status(f, grad),
        )

    def step(
        self,
        fn: Callable,
        y: PyTree,
        args: PyTree,
        options: dict[str, Any],
        state: _FIREState,
        tags: frozenset[object],
    ) -> tuple[PyTree, _FIREState, Any]:
        """One FIRE 2.0 iteration (semi-implicit Euler), then f and ∇f at the new y."""
        del options, tags
        force = _scale(-1.0, state.grad)
        v = state.velocity
        power = _dot(force, v)
        uphill = power <= 0
        # The mixing weight α|v|/|F| with this step's α and the velocity before the kick
        # (as in LAMMPS); double where: no sqrt or division at zero, finite gradients.
        f_sq = _dot(force, force)
        v_sq = _dot(v, v)
        mix = ~uphill & (f_sq > 0)
        keep = 1 - state.alpha
        weight = state.alpha * jnp.sqrt(jnp.where(mix, v_sq, 1.0) / jnp.where(mix, f_sq, 1.0))
        n_positive = jnp.where(uphill, 0, state.n_positive + 1)
        grow = ~uphill & (n_positive > self.n_min)
        dt = jnp.where(grow, jnp.minimum(state.dt * self.f_inc, self.dt_max), state.dt)
        alpha = jnp.where(grow, state.alpha * self.f_alpha, state.alpha)
        # Steps are numbered from 1; the initial delay covers steps 1, ..., n_min.
        delayed = self.initial_delay & (state.n_steps < self.n_min)
        shrink = uphill & ~delayed
        dt = jnp.where(shrink & (dt * self.f_dec >= self.dt_min), dt * self.f_dec, dt)
        alpha = jnp.where(shrink, jnp.asarray(self.alpha_start, alpha.dtype), alpha)
        # Uphill: back up half of the last move and stop.
        y = _select(uphill, _axpy(-0.5 * state.last_dt, v, y), y)
        v = _select(uphill, _scale(0.0, v), v)
        # Semi-implicit Euler: kick, mix (only while going downhill), drift.
        v = _axpy(dt, force, v)
        v = _select(mix, _axpy(weight, force, _scale(keep, v)), v)
        move = dt
        if self.max_step is not None:
            largest = dt * optx.max_norm(v)
            big = largest > self.max_step
            move = jnp.where(big, dt * self.max_step / jnp.where(big, largest, 1.0), dt)
        dx = _scale(move, v)
        y = jax.tree.map(jnp.add, y, dx)
        f, grad, aux = self._evaluate(fn, y, args)
        new_state = _FIREState(
            velocity=v,
            f=f,
            grad=grad,
            aux=aux,
            tolerance=state.tolerance,
            dt=dt,
            last_dt=move,
            alpha=alpha,
            n_positive=n_positive,
            n_steps=state.n_steps + 1,
            result=_status(f, grad),
        )
        return y, new_state, aux

    def terminate(
        self,
        fn: Callable,
        y: PyTree,
        args: PyTree,
        options: dict[str, Any],
        state: _FIREState,
        tags: frozenset[object],
    ) -> tuple[Bool[Array, ""], optx.RESULTS]:
        """Stop when the gradient norm is within tolerance, or on a non-finite value."""
        del fn, y, args, options, tags
        converged = self.norm(state.grad) <= state.tolerance
        return converged | (state.result != optx.RESULTS.successful), state.result

    def postprocess(
        self,
        fn: Callable,
        y: PyTree,
        aux: Any,
        args: PyTree,
        options: dict[str, Any],
        state: _FIREState,
        tags: frozenset[object],
        result: optx.RESULTS,
    ) -> tuple[PyTree, Any, dict[str, Any]]:
        """The final iterate, and its auxiliary output."""
        del fn, aux, args, options, tags, result
        return y, state.aux, {}


def _status(f: Array, grad: PyTree) -> optx.RESULTS:
    finite = jnp.isfinite(f) & jnp.all(
        jnp.stack([jnp.all(jnp.isfinite(g)) for g in jax.tree.leaves(grad)])
    )
    return optx.RESULTS.where(finite, optx.RESULTS.successful, optx.RESULTS.nonfinite)


__all__ = ["FIRE"]
