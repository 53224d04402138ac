"""Forward sensitivities solved with the state, inside the step-size controller's error norm."""

from collections.abc import Callable
from typing import Any

import diffrax
import equinox as eqx
import jax
from jax.custom_derivatives import SymbolicZero
from jax.flatten_util import ravel_pytree
import jax.numpy as jnp
import numpy as np

from .._core._model import AbstractModel
from .._core._types import Anything

_ADJOINTS = (diffrax.ForwardMode, diffrax.DirectAdjoint)


class ForwardSensitivity(eqx.Module):
    """Differentiate `sciad.ode.solve` by forward sensitivities under error control.

    Pass `adjoint=sciad.ode.ForwardSensitivity()` to `sciad.ode.solve`. The solve then
    integrates, together with the state y, the forward sensitivity equations

    dS/dt = ∂f/∂y · S + ∂f/∂θ,   S(t₀) = ∂y₀/∂θ,

    for S = ∂y/∂θ, where θ are the floating-point array leaves of `(model, y0)` that
    `wrt` selects (P numbers in all). The step-size controller's error norm covers the
    sensitivities too, so the steps are chosen for the derivatives as well as for the
    state: the norm is the largest of the controller's own `norm` of the state's
    scaled error and of each sensitivity's, as CVODES does with `errconS = SUNTRUE`.
    Each sensitivity is measured as S·p̄ᵢ with p̄ᵢ = |θᵢ| (1 where θᵢ = 0), CVODES's
    `pbar`, so that the same `rtol` and `atol` apply to the change of y under a
    relative change of each parameter.

    The diffrax adjoints (the default `RecursiveCheckpointAdjoint`, `ForwardMode`,
    `DirectAdjoint`) differentiate the discrete solve whose steps were chosen for
    the state alone; their derivatives are consistent with the computed trajectory
    but their error is not controlled and can exceed the requested tolerance many
    times over (a stiff Van der Pol oscillator is 0.5% off at `rtol=1e-8`; see
    `docs/benchmarks.md`). Use `ForwardSensitivity` when the derivatives themselves
    must be accurate, for few parameters: every solve (differentiated or not)
    carries P extra copies of the state, and an implicit solver factorises a
    Jacobian (P + 1) times as wide. For many parameters and a scalar loss prefer the
    reverse-mode adjoints.

    Derivatives w.r.t. `model` and `y0` come from the computed S through a custom
    JVP: `jax.jvp`, `jax.jacfwd`, `jax.grad` and `jax.jacrev` all work (also under
    `jit` and `vmap`) and agree to rounding. Second derivatives differentiate the
    sensitivity solve itself with `adjoint` (their steps are chosen for y and S,
    not for the second derivatives): `diffrax.ForwardMode()` (the default) gives
    forward-over-anything (`jax.hessian`, `jax.jacfwd(jax.jacrev(f))`, `jax.jvp` of
    `jax.grad`); `diffrax.DirectAdjoint()` also gives reverse-over-reverse
    (`jax.grad` of `jax.grad`) at a higher cost. Differentiating w.r.t. anything
    without a sensitivity (a parameter `wrt` leaves out, `t0`, `t1`, `ts`, `dt0`, the
    controller's tolerances) raises a `ValueError` that names it, rather than
    returning a wrong zero. Events are not supported (the event time's sensitivity
    is not computed). With `saveat=diffrax.SaveAt(fn=...)` the saved outputs'
    sensitivities come from S through `jax.linearize` of `fn`. Fixed-step
    controllers (`diffrax.ConstantStepSize`, `StepTo`) run unchanged; among the
    adaptive ones only `diffrax.PIDController` (or a `ClipStepSizeController`
    around one) exposes the norm this needs.

    **Arguments:**

    - `wrt`: which parameters get sensitivities: an Equinox filter spec for the pair
      `(model, y0)`: `True` (every floating-point array of both; the default), a
      bool or a callable `leaf -> bool` applied to every leaf, or a PyTree prefix of
      `(model, y0)` of those, e.g. `(True, False)` for the model's parameters only,
      or for one parameter
      `(eqx.tree_at(lambda m: m.mu, jax.tree.map(lambda _: False, model), True), False)`.
      Only floating-point array leaves can be selected.
    - `adjoint`: how the sensitivity solve is differentiated for second derivatives,
      `diffrax.ForwardMode()` (default) or `diffrax.DirectAdjoint()`.

    **Returns:** (from `sciad.ode.solve`) the usual `sciad.Trajectory`, whose
    derivatives w.r.t. `model` and `y0` are the error-controlled sensitivities;
    `stats["num_steps"]` counts the steps of the joint solve.

    **Example:**

    ```python
    y0 = jnp.array([2.0, 0.0])

    def x_end(mu):
        m = sciad.ode.VanDerPol(mu=mu)
        traj = sciad.ode.solve(m, y0, jnp.array([0.0, 20.0]), rtol=1e-8, atol=1e-8,
                               adjoint=sciad.ode.ForwardSensitivity())
        return traj.ys[-1, 0]

    dx_dmu = jax.grad(x_end)(jnp.asarray(10.0))  # or jax.jacfwd: the same number
    ```

    Reference: Hindmarsh et al., "SUNDIALS: Suite of nonlinear and
    differential/algebraic equation solvers", ACM TOMS 31 (2005) 363; the CVODES
    user guide, "Forward sensitivity analysis" (the sensitivity equations, `pbar`
    and the error control of the sensitivities, `errconS`).
    """

    wrt: Any = True
    adjoint: diffrax.AbstractAdjoint = diffrax.ForwardMode()

    def __check_init__(self):
        if not isinstance(self.adjoint, _ADJOINTS):
            raise TypeError(
                "ForwardSensitivity.adjoint must be diffrax.ForwardMode() or "
                "diffrax.DirectAdjoint() (how second derivatives differentiate the "
                f"sensitivity solve); got {self.adjoint!r}."
            )
        for leaf in jax.tree_util.tree_leaves(self.wrt):
            if not (isinstance(leaf, bool) or callable(leaf)):
                raise TypeError(
                    "ForwardSensitivity.wrt must be a bool, a callable leaf -> bool, or "
                    f"a PyTree prefix of (model, y0) of those; got a leaf {leaf!r}."
                )

    def solve(self, model: AbstractModel, y0: Anything, kwargs: dict) -> Any:
        """Run diffrax on the state and its sensitivities (called by `sciad.ode.solve`).

        **Arguments:**

        - `model`, `y0`: the checked model and initial state.
        - `kwargs`: the `diffrax.diffeqsolve` keyword arguments other than `terms`,
          `y0` and `args`, as `sciad.ode.solve` built them (`adjoint`,
          `stepsize_controller` and the `saveat` functions are replaced).

        **Returns:** the `diffrax.Solution` of the state (the sensitivities stripped),
        whose derivatives w.r.t. `model` and `y0` are the computed sensitivities.
        """
        if kwargs["event"] is not None:
            raise ValueError(
                "sciad.ode.solve with adjoint=ForwardSensitivity() does not support "
                "events (the event time's sensitivity is not computed); use a diffrax "
                "adjoint instead."
            )
        spec = _selection(self.wrt, model, y0)
        kwargs = dict(
            kwargs,
            adjoint=self.adjoint,
            stepsize_controller=_with_sensitivity_norm(kwargs["stepsize_controller"]),
        )
        user_subs = kwargs["saveat"].subs
        kwargs["saveat"] = eqx.tree_at(
            lambda s: s.subs,
            kwargs["saveat"],
            jax.tree.map(lambda sub: _sensitivity_saves(sub, spec[0]), user_subs, is_leaf=_is_sub),
        )
        dynamic, static = eqx.partition((model, y0, kwargs), eqx.is_array)
        spec_dyn = jax.tree.map(lambda w, x: w if eqx.is_array(x) else None, spec, (model, y0))
        sol_static: dict = {}

        def augmented(dyn):
            m, y, kw = eqx.combine(dyn, static)
            theta, _ = eqx.partition((m, y), spec)
            flat, unravel = ravel_pytree(theta)
            pbar = jax.lax.stop_gradient(jnp.where(flat == 0, 1, jnp.abs(flat)))
            dirs = jax.vmap(unravel)(jnp.diag(pbar))
            s0 = jax.tree.map(
                lambda d, leaf: (
                    jnp.zeros((flat.size,) + jnp.shape(leaf), jnp.result_type(leaf))
                    if d is None
                    else d
                ),
                dirs[1],
                y,
                is_leaf=lambda x: x is None,
            )
            sol = diffrax.diffeqsolve(
                diffrax.ODETerm(_WithSensitivities(_vector_field, spec[0])),
                y0=(y, s0),
                args=(m, dirs[0]),
                **kw,
            )
            pairs = jax.tree.map(lambda _, out: out, user_subs, sol.ys, is_leaf=_is_sub)
            values = jax.tree.map(lambda _, p: p[0], user_subs, pairs, is_leaf=_is_sub)
            sens = jax.tree.map(lambda _, p: p[1], user_subs, pairs, is_leaf=_is_sub)
            d, s = eqx.partition(eqx.tree_at(lambda x: x.ys, sol, values), eqx.is_array)
            sol_static["static"] = s
            return d, sens, pbar

        @jax.custom_jvp
        def run(dyn):
            return augmented(dyn)[0]

        def run_jvp(primals, tangents):
            (dyn,), (tan,) = primals, tangents
            out, sens, pbar = augmented(dyn)
            coeff = ravel_pytree(_parameter_tangents(tan, spec_dyn))[0] / pbar
            ys_dot = jax.tree.map(lambda s: _contract(coeff, s), sens)
            out_dot = jax.tree.map(_zero_tangent, out)
            out_dot = eqx.tree_at(lambda x: x.ys, out_dot, ys_dot)
            return out, out_dot

        run.defjvp(run_jvp, symbolic_zeros=True)
        return eqx.combine(run(dynamic), sol_static["static"])


def _contract(coeff: Any, s: Any) -> Any:
    """Σᵢ coeffᵢ sᵢ over the sensitivity axis (axis 1 of a saved series `(n, P, ...)`)."""
    return jnp.tensordot(s, coeff, axes=([1], [0]))


def _is_sub(x: Any) -> bool:
    return isinstance(x, diffrax.SubSaveAt)


def _zero_tangent(x: Any) -> Any:
    if jnp.issubdtype(jnp.result_type(x), jnp.inexact):
        return jnp.zeros_like(x)
    return np.zeros(jnp.shape(x), dtype=jax.dtypes.float0)


class _WithSensitivities(eqx.Module):
    """`fn(t, y, model)` together with its sensitivities along each column of S,
    ∂fn/∂y·Sᵢ + ∂fn/∂θ·p̄ᵢeᵢ: the augmented vector field when `fn` is the model's
    vector field, a saved output's sensitivities when `fn` is a `SubSaveAt.fn`."""

    fn: Callable
    spec: Any

    def __call__(self, t: Any, state: Any, args: Any) -> Any:
        y, s = state
        model, dirs = args
        theta, rest = eqx.partition(model, self.spec)

        def g(yy, th):
            return self.fn(t, yy, eqx.combine(th, rest))

        value, lin = jax.linearize(g, y, theta)
        return value, jax.vmap(lin)(s, dirs)


def _vector_field(t: Any, y: Any, model: AbstractModel) -> Any:
    return model.vector_field(t, y)


def _sensitivity_saves(sub: diffrax.SubSaveAt, spec: Any) -> diffrax.SubSaveAt:
    return eqx.tree_at(lambda x: x.fn, sub, _WithSensitivities(sub.fn, spec))


class _SensitivityNorm(eqx.Module):
    """The largest of `norm` over the state's error and over each sensitivity's."""

    norm: Callable

    def __call__(self, tree: Any) -> Any:
        y, s = tree
        return jnp.maximum(self.norm(y), jnp.max(jax.vmap(self.norm)(s)))


def _with_sensitivity_norm(controller: Any) -> Any:
    """`controller` with its error norm over the state and the sensitivities."""
    if isinstance(controller, diffrax.ClipStepSizeController):
        return eqx.tree_at(
            lambda c: c.controller, controller, _with_sensitivity_norm(controller.controller)
        )
    if isinstance(controller, diffrax.PIDController):
        return eqx.tree_at(lambda c: c.norm, controller, _SensitivityNorm(controller.norm))
    if isinstance(controller, diffrax.AbstractAdaptiveStepSizeController):
        raise TypeError(
            "adjoint=ForwardSensitivity() puts the sensitivities into the error norm of "
            "a diffrax.PIDController (or a ClipStepSizeController around one); got "
            f"the adaptive controller {type(controller).__name__}, whose norm it cannot "
            "reach."
        )
    return controller


def _selection(wrt: Any, model: AbstractModel, y0: Any) -> Any:
    """The filter spec of `wrt` resolved to a bool per leaf of `(model, y0)`: only
    floating-point arrays, and at least one."""
    try:
        spec = jax.tree.map(
            lambda w, sub: jax.tree.map(lambda x: bool(w(x) if callable(w) else w), sub),
            wrt,
            (model, y0),
        )
    except ValueError as e:
        raise ValueError(
            "ForwardSensitivity.wrt must be a bool, a callable, or a PyTree prefix of "
            f"(model, y0); its structure does not match: {e}"
        ) from e
    spec = jax.tree.map(lambda w, x: w and eqx.is_inexact_array(x), spec, (model, y0))
    if not any(jax.tree_util.tree_leaves(spec)):
        raise ValueError(
            "ForwardSensitivity.wrt selects no floating-point array of (model, y0); "
            "there is nothing to compute sensitivities for."
        )
    return spec


def _parameter_tangents(tan: Any, spec_dyn: Any) -> Any:
    """The tangents of the selected parameters (zeros where symbolically zero).

    Raises if anything without a sensitivity is differentiated: an unselected leaf of
    `(model, y0)`, or the times, tolerances and other solve arguments.
    """
    model_y0, options = tan[:2], tan[2]
    selected = []

    def visit(path: Any, t: Any, chosen: bool) -> None:
        if isinstance(t, SymbolicZero):
            zero = jnp.zeros(t.shape, t.dtype)  # pyright: ignore[reportArgumentType]
            selected.append(zero if chosen else None)
            return
        if not chosen:
            raise ValueError(
                "sciad.ode.solve with adjoint=ForwardSensitivity(wrt=...) was "
                f"differentiated with respect to (model, y0){jax.tree_util.keystr(path)}, "
                "which wrt does not select: it has no sensitivity. Select it in wrt."
            )
        selected.append(t)

    jax.tree_util.tree_map_with_path(
        lambda path, chosen, t: visit(path, t, chosen), spec_dyn, model_y0, is_leaf=_is_tangent_leaf
    )
    for path, t in jax.tree_util.tree_flatten_with_path(options, is_leaf=_is_tangent_leaf)[0]:
        if not isinstance(t, SymbolicZero):
            raise ValueError(
                "sciad.ode.solve with adjoint=ForwardSensitivity() differentiates "
                "with respect to the model's parameters and y0 only; it was "
                f"differentiated with respect to the solve argument {jax.tree_util.keystr(path)} "
                "(a time or a tolerance). Use a diffrax adjoint to differentiate with "
                "respect to times."
            )
    return [x for x in selected if x is not None]


def _is_tangent_leaf(x: Any) -> bool:
    return isinstance(x, SymbolicZero)
