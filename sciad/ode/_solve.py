"""Adaptive ODE solving on diffrax, with sciad's models, checks and `Trajectory`."""

from typing import Any

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._core._model import AbstractModel
from .._core._results import raise_on_failure, RESULTS
from .._core._trajectory import Trajectory
from .._core._types import RealScalarLike, State
from .._core._validate import (
    as_time,
    check_int,
    check_model,
    check_positive,
    check_real,
    check_scalar,
    check_state,
    float_dtype,
    is_concrete,
    to_float,
)
from ._sensitivity import ForwardSensitivity

_HIGHER_ORDER_HELP = (
    "sciad.ode.solve's default adjoint, diffrax.RecursiveCheckpointAdjoint, supports "
    "first-order reverse mode (jax.grad) only. For forward mode (jax.jvp, "
    "jax.jacfwd) pass adjoint=diffrax.ForwardMode(); for Hessians, "
    "Hessian-vector products or grad of grad pass adjoint=diffrax.DirectAdjoint(). "
    "Or use sciad.simulate, whose adjoints support every order."
)

# The stiff default controller: PI, chosen on the classical stiff test problems
# (benchmarks/stiff.py; docs/benchmarks.md, "Stiff solves"): 28–64% fewer step attempts
# than diffrax's default I controller, mostly by avoiding rejections.
_STIFF_PI: dict[str, Any] = dict(pcoeff=0.4, icoeff=0.3)

_TRANSLATE = (
    (diffrax.RESULTS.max_steps_reached, RESULTS.max_steps_reached),
    (diffrax.RESULTS.dt_min_reached, RESULTS.step_size_too_small),
    (diffrax.RESULTS.event_occurred, RESULTS.event_occurred),
)


def _translate(result: Any) -> RESULTS:
    """diffrax's result code as a sciad `RESULTS` code."""
    out = RESULTS.where(
        result == diffrax.RESULTS.successful, RESULTS.successful, RESULTS.solver_failed
    )
    for theirs, ours in _TRANSLATE:
        out = RESULTS.where(result == theirs, ours, out)
    return out


def _output_times(ts: Any, t0: Any, t1: Any, dtype: Any) -> tuple[Any, Any, Any]:
    """Check the output times and the interval; time runs forwards only (t0 <= t1)."""
    if ts is None:
        if t0 is None or t1 is None:
            raise ValueError("pass ts, or t0 and t1 together with a diffrax saveat.")
        t0, t1 = as_time(t0, dtype, "t0"), as_time(t1, dtype, "t1")
    else:
        if jnp.ndim(ts) != 1 or jnp.shape(ts)[0] == 0:
            raise ValueError(f"ts must be a non-empty 1-D array; got shape {jnp.shape(ts)}.")
        check_real(ts, "ts")
        if not jnp.issubdtype(jnp.result_type(ts), jnp.floating):
            ts = jnp.asarray(ts, dtype=dtype)
        ts = jnp.asarray(ts)
        t0 = as_time(ts[0] if t0 is None else t0, dtype, "t0")
        t1 = as_time(ts[-1] if t1 is None else t1, dtype, "t1")
    if is_concrete(t0) and is_concrete(t1) and to_float(t1) < to_float(t0):
        raise ValueError(
            f"t1 must be >= t0 (sciad.ode.solve integrates forwards in time, like "
            f"sciad.simulate); got t0={to_float(t0)}, t1={to_float(t1)}. To integrate "
            "backwards, solve the time-reversed model (its vector field negated) forwards."
        )
    if ts is not None and is_concrete(ts) and is_concrete(t0) and is_concrete(t1):
        tsn = np.asarray(ts)
        if not np.all(np.isfinite(tsn)):
            raise ValueError("ts contains NaN or inf.")
        if tsn.size > 1 and np.any(np.diff(tsn) <= 0):
            raise ValueError("ts must be strictly increasing.")
        if tsn[0] < to_float(t0) or tsn[-1] > to_float(t1):
            raise ValueError(
                f"ts must lie in [t0, t1] = [{to_float(t0)}, {to_float(t1)}]; "
                f"got [{tsn[0]}, {tsn[-1]}]."
            )
    return ts, t0, t1


def _check_options(
    ts: Any,
    saveat: Any,
    dt0: Any,
    stepsize_controller: Any,
    rtol: Any,
    atol: Any,
    event: Any,
    stiff: Any,
    max_steps: Any,
) -> None:
    """The argument checks of `solve` that need no model: types, signs and conflicts."""
    if saveat is not None:
        if not isinstance(saveat, diffrax.SaveAt):
            raise TypeError(
                f"saveat must be a diffrax.SaveAt for sciad.ode.solve; got {type(saveat).__name__}."
            )
        if ts is not None:
            raise ValueError(
                "pass ts or saveat, not both: with a diffrax saveat, give the interval as "
                "t0 and t1 (ts would not be saved)."
            )
    if dt0 is not None:
        check_scalar(dt0, "dt0")
        if is_concrete(dt0) and not to_float(dt0) > 0:
            raise ValueError(f"dt0 must be > 0 (time runs forwards); got {to_float(dt0)}.")
    if stepsize_controller is not None:
        if not isinstance(stepsize_controller, diffrax.AbstractStepSizeController):
            raise TypeError(
                "stepsize_controller must be a diffrax.AbstractStepSizeController; "
                f"got {stepsize_controller!r}."
            )
        if rtol is not None or atol is not None:
            raise ValueError(
                "rtol and atol set the default PIDController; with a stepsize_controller "
                "of your own, give the tolerances to it instead."
            )
    for value, name in ((rtol, "rtol"), (atol, "atol")):
        if value is not None:
            check_positive(value, name, zero_ok=True)
    if rtol is not None and atol is not None and is_concrete(rtol) and is_concrete(atol):
        if to_float(rtol) == 0 and to_float(atol) == 0:
            raise ValueError("rtol and atol cannot both be 0.")
    if event is not None and not isinstance(event, diffrax.Event):
        raise TypeError(f"event must be a diffrax.Event; got {event!r}.")
    if stiff is not None and not isinstance(stiff, bool):
        raise TypeError(f"stiff must be True, False or None; got {stiff!r}.")
    if max_steps is not None:
        check_int(max_steps, "max_steps", minimum=1)


def _progress_meter(progress: Any) -> diffrax.AbstractProgressMeter:
    if progress is None or progress is False:
        return diffrax.NoProgressMeter()
    if progress is True:
        return diffrax.TextProgressMeter()
    if isinstance(progress, diffrax.AbstractProgressMeter):
        return progress
    raise TypeError(
        "progress must be True, False or a diffrax progress meter "
        f"(diffrax.TextProgressMeter(), diffrax.TqdmProgressMeter()); got {progress!r}."
    )


def solve(
    model: AbstractModel,
    y0: State,
    ts: Any = None,
    *,
    t0: RealScalarLike | None = None,
    t1: RealScalarLike | None = None,
    dt0: RealScalarLike | None = None,
    solver: diffrax.AbstractSolver | None = None,
    stepsize_controller: diffrax.AbstractStepSizeController | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    saveat: diffrax.SaveAt | None = None,
    adjoint: diffrax.AbstractAdjoint | ForwardSensitivity | None = None,
    event: diffrax.Event | None = None,
    stiff: bool | None = None,
    max_steps: int | None = 4096,
    throw: bool = True,
    progress: "bool | diffrax.AbstractProgressMeter" = False,
) -> Trajectory:
    """Solve `model` adaptively with diffrax and return a `sciad.Trajectory`.

    Defaults: `diffrax.Tsit5()` with diffrax's default (I) `PIDController` at
    (`rtol`, `atol`); when the model is stiff (`model.stiff`, or `stiff=True`),
    `diffrax.Kvaerno5()` with a PI controller, `PIDController(pcoeff=0.4,
    icoeff=0.3)`, which takes 28–64% fewer step attempts there than the I controller
    (Gustafsson, ACM TOMS 20, 496 (1994); measurements and tuning in docs/ode.md,
    "Stiff problems").
    diffrax solvers, step-size controllers, `SaveAt`, events and adjoints pass
    straight through.

    **Arguments:**

    - `model`: a `sciad.AbstractModel`.
    - `y0`: the initial state.
    - `ts`: output times, shape `(n,)`, strictly increasing; t0 = ts[0], t1 = ts[-1]
      unless given. Not together with `saveat` (give `t0` and `t1` then).
    - `t0`, `t1`: the integration interval (default from `ts`), t0 <= t1: time runs
      forwards only, as in `sciad.simulate` (t1 < t0 is refused with or without `ts`;
      integrate the time-reversed model to go backwards).
    - `dt0`: initial step, > 0; default chosen automatically.
    - `solver`, `stepsize_controller`, `saveat`, `event`: diffrax objects.
    - `rtol`, `atol`: tolerances (>= 0, not both 0) of the default PID controller,
      1e-6 and 1e-8 unless given; refused together with a `stepsize_controller`,
      which carries its own.
    - `adjoint`: a diffrax adjoint. The default `RecursiveCheckpointAdjoint` gives
      `jax.grad` only; use `diffrax.ForwardMode()` for `jvp`/`jacfwd` (and
      forward-over-forward second derivatives) and `diffrax.DirectAdjoint()` for
      Hessians and grad of grad. Asking for those through the default raises an
      error that says so. With `diffrax.BacksolveAdjoint()` the final state is
      not saved separately (`Trajectory.y1` is `None`; save `t1=True`).
      Or `sciad.ode.ForwardSensitivity()`: forward sensitivities solved with the
      state and inside the error control, for derivatives accurate to the
      tolerance (few parameters).
    - `stiff`: override `model.stiff` when choosing the default solver.
    - `max_steps`: the most steps diffrax may take (an int >= 1, or `None`).
    - `throw`: raise on failure; otherwise see `Trajectory.result`.
    - `progress`: `True` prints diffrax's text progress meter (the fraction of
      [t0, t1] done); or pass a diffrax meter (`diffrax.TqdmProgressMeter()`). It
      works under `jit` and `vmap` (one meter for the batch).

    **Returns:** a `sciad.Trajectory` with `ts`, `ys` (per `saveat`; by default the
    state at `ts`), the final time and state `t1`, `y1`, `result` and diffrax's `stats`.

    **Example:**

    ```python
    model = sciad.ode.LotkaVolterra()
    traj = sciad.ode.solve(model, jnp.array([10.0, 1.0]), jnp.linspace(0.0, 10.0, 101))
    traj.ys.shape  # (101, 2)
    ```
    """
    check_model(model)
    y0 = check_state(model, y0)
    _check_options(ts, saveat, dt0, stepsize_controller, rtol, atol, event, stiff, max_steps)
    dtype = float_dtype(y0)
    ts, t0, t1 = _output_times(ts, t0, t1, dtype)
    if saveat is None:
        saveat = diffrax.SaveAt(ts=ts)
    if stiff is None:
        stiff = model.stiff
    if solver is None:
        solver = diffrax.Kvaerno5() if stiff else diffrax.Tsit5()
    elif not isinstance(solver, diffrax.AbstractSolver):
        raise TypeError(f"solver must be a diffrax.AbstractSolver; got {solver!r}.")
    if stepsize_controller is None:
        stepsize_controller = diffrax.PIDController(
            rtol=1e-6 if rtol is None else rtol,
            atol=1e-8 if atol is None else atol,
            **(_STIFF_PI if stiff else {}),
        )
    default_adjoint = adjoint is None
    if default_adjoint:
        adjoint = diffrax.RecursiveCheckpointAdjoint()
    elif not isinstance(adjoint, (diffrax.AbstractAdjoint, ForwardSensitivity)):
        raise TypeError(
            "adjoint must be a diffrax.AbstractAdjoint or sciad.ode.ForwardSensitivity "
            f"for sciad.ode.solve; got {adjoint!r}."
        )
    # The final state is saved alongside the user's saves, except for
    # BacksolveAdjoint, which diffrax allows only with a plain SaveAt.
    final_too = not isinstance(adjoint, diffrax.BacksolveAdjoint)
    if final_too:
        subs = diffrax.SaveAt(subs=[saveat.subs, diffrax.SubSaveAt(t1=True)])
    else:
        subs = saveat
    kwargs: dict[str, Any] = dict(
        solver=solver,
        stepsize_controller=stepsize_controller,
        saveat=subs,
        adjoint=adjoint,
        event=event,
        max_steps=max_steps,
        throw=False,  # checked below, with the message first (`raise_on_failure`)
        progress_meter=_progress_meter(progress),
    )
    dynamic, static = eqx.partition((model, y0, t0, t1, dt0), eqx.is_array)

    def call(dyn):
        m, y, a, b, h = eqx.combine(dyn, static)
        return diffrax.diffeqsolve(
            diffrax.ODETerm(_field), t0=a, t1=b, dt0=h, y0=y, args=m, **kwargs
        )

    if isinstance(adjoint, ForwardSensitivity):
        sol = adjoint.solve(model, y0, dict(kwargs, t0=t0, t1=t1, dt0=dt0))
    elif not default_adjoint:
        sol = call(dynamic)
    else:
        try:
            sol = _first_order_only(call, dynamic)
        except TypeError as e:
            if "custom_vjp" not in str(e):
                raise
            raise TypeError(_HIGHER_ORDER_HELP) from e
    if final_too:
        (ts_out, t_final), (ys_out, y_final) = sol.ts, sol.ys  # pyright: ignore
        t_final = t_final[-1]
        y_final = jax.tree.map(lambda a: a[-1], y_final)
    else:
        ts_out, ys_out, t_final, y_final = sol.ts, sol.ys, jnp.asarray(sol.t1), None
    traj = Trajectory(
        ts_out, ys_out, t_final, y_final, None, _translate(sol.result), dict(sol.stats)
    )
    return raise_on_failure(traj, "sciad.ode.solve") if throw else traj


def _field(t: Any, y: Any, model: AbstractModel) -> Any:
    return model.vector_field(t, y)


def _first_order_only(call: Any, dynamic: Any) -> Any:
    """Run `call(dynamic)` so that only first-order reverse mode is defined.

    Wrapping diffrax's reverse-only adjoint in a custom VJP makes forward mode
    fail at the call itself (where `solve` can explain it), and the VJP is itself
    wrapped so that differentiating it again (grad of grad) raises the same
    explanation rather than a while-loop transpose error deep inside JAX.
    """
    out_struct = {}

    def _dyn(sol):
        d, s = eqx.partition(sol, eqx.is_array)
        out_struct["static"] = s
        return d

    @jax.custom_vjp
    def run(dyn):
        return _dyn(call(dyn))

    def fwd(dyn):
        return jax.vjp(lambda d: _dyn(call(d)), dyn)

    def bwd(vjp, ct):
        return _vjp_once(vjp, ct)

    run.defvjp(fwd, bwd)
    return eqx.combine(run(dynamic), out_struct["static"])


@jax.custom_vjp
def _vjp_once(vjp: Any, ct: Any) -> Any:
    return vjp(ct)


def _vjp_once_fwd(vjp: Any, ct: Any) -> Any:
    return vjp(ct), None


def _vjp_once_bwd(_: Any, __: Any) -> Any:
    raise TypeError(_HIGHER_ORDER_HELP)


_vjp_once.defvjp(_vjp_once_fwd, _vjp_once_bwd)
