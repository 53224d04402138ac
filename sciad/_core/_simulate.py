"""`simulate`: the single fixed-step entry point for every pillar."""

import inspect

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Int
import numpy as np

from ._adjoint import _scan, AbstractAdjoint, CheckpointAdjoint
from ._batching import lazy_cond, tree_where
from ._clock import StepClock
from ._integrator import AbstractIntegrator, RK4, VelocityVerlet
from ._model import AbstractModel, AbstractSeparableModel
from ._progress import AbstractProgressMeter, as_meter, report
from ._results import raise_on_failure, RESULTS
from ._trajectory import SaveAt, Trajectory
from ._types import Anything, RealScalarLike, State
from ._validate import (
    as_time,
    check_model,
    check_real,
    check_scalar,
    check_state,
    float_dtype,
    is_concrete,
    to_float,
)

_GRID_TOL = 1e-6  # in units of dt: how close a time must be to the step grid


def _check_integrator(integrator: Anything, model: AbstractModel) -> AbstractIntegrator:
    if integrator is None:
        integrator = model.default_integrator()
    if integrator is None:
        return VelocityVerlet() if isinstance(model, AbstractSeparableModel) else RK4()
    if isinstance(integrator, type) and issubclass(integrator, AbstractIntegrator):
        raise TypeError(
            f"integrator must be an instance: pass {integrator.__name__}(), "
            f"not {integrator.__name__}."
        )
    if not isinstance(integrator, AbstractIntegrator):
        raise TypeError(
            f"unknown integrator {integrator!r}: integrator must be a "
            "sciad.AbstractIntegrator such as sciad.SymplecticEuler(), "
            "sciad.VelocityVerlet(), sciad.Yoshida4(), sciad.Yoshida6() or "
            "sciad.RK4(). For adaptive diffrax solvers use sciad.ode.solve."
        )
    if integrator.requires_separable and not isinstance(model, AbstractSeparableModel):
        raise TypeError(
            f"integrator {type(integrator).__name__} needs a separable model "
            "(a sciad.AbstractSeparableModel with `velocity` and `force`), but "
            f"{type(model).__name__} is not; use integrator=sciad.RK4()."
        )
    integrator.check(model)
    return integrator


def _count_steps(t0: Anything, t1: Anything, n_steps: Anything, dt: Anything) -> int:
    if (t1 is None) == (n_steps is None):
        raise ValueError("pass exactly one of t1 and n_steps.")
    if n_steps is not None:
        if isinstance(n_steps, bool) or not isinstance(n_steps, (int, np.integer)):
            raise TypeError(
                f"n_steps must be a Python int (it fixes the loop length); got {n_steps!r}."
            )
        if n_steps < 0:
            raise ValueError(f"n_steps must be >= 0, got {n_steps}.")
        return _check_count(int(n_steps))
    if not (is_concrete(t0) and is_concrete(t1) and is_concrete(dt)):
        raise ValueError(
            "t1 fixes the number of steps, so t0, t1 and dt must be concrete values, "
            "not traced; pass n_steps instead to trace t0 or dt."
        )
    t0f, t1f, dtf = to_float(t0), to_float(t1), to_float(dt)
    if t1f < t0f:
        raise ValueError(f"t1 must be >= t0; got t0={t0f}, t1={t1f}.")
    n = (t1f - t0f) / dtf
    k = round(n)
    if abs(n - k) > _GRID_TOL:
        raise ValueError(
            f"(t1 - t0) / dt = {n} is not a whole number of steps; "
            "choose dt to divide t1 - t0, or pass n_steps."
        )
    return _check_count(k)


def _check_count(n: int) -> int:
    """The step counter is an int32: refuse runs it cannot count."""
    if n > _MAX_STEPS:
        raise ValueError(
            f"a run of {n} steps is longer than the int32 step counter allows "
            f"({_MAX_STEPS}); split it into runs resumed with integrator_state."
        )
    return n


_MAX_STEPS = 2**31 - 2  # the counter reaches n + 1 nowhere, n everywhere


def _check_call_args(model: AbstractModel, y0: State, saveat: SaveAt, throw: Anything) -> None:
    """Refuse, before tracing, a state mixing float dtypes, a non-bool `throw`, and a
    `SaveAt.fn` that cannot be called as `fn(t, y, model)`."""
    if not isinstance(throw, (bool, np.bool_)):
        raise TypeError(f"throw must be True or False, got {throw!r}.")
    dtypes = sorted({str(jnp.result_type(x)) for x in jax.tree.leaves(y0)})
    if len(dtypes) > 1:
        raise TypeError(
            f"y0 mixes the dtypes {', '.join(dtypes)}; every leaf of a state must have "
            "one floating dtype (the time dtype follows it). Cast them to one."
        )
    try:
        inspect.signature(saveat.fn).bind(0.0, y0, model)
    except TypeError as e:
        raise TypeError(
            f"SaveAt.fn must be callable as fn(t, y, model); "
            f"{getattr(saveat.fn, '__name__', saveat.fn)!r} cannot be: {e}"
        ) from e
    except ValueError:  # no signature to inspect (a builtin): let it run
        pass


def _saved(out: Anything) -> Anything:
    """`SaveAt.fn`'s output, which must be a PyTree of arrays (checked while tracing)."""
    bad = [x for x in jax.tree.leaves(out) if not eqx.is_array_like(x) or isinstance(x, str)]
    if bad:
        raise TypeError(
            f"SaveAt.fn must return a PyTree of arrays; it returned {bad[0]!r} "
            f"({type(bad[0]).__name__})."
        )
    return out


def _save_indices(saveat: SaveAt, t0: Anything, dt: Anything, n: int) -> np.ndarray:
    """Sorted step indices (0..n) at which to save."""
    idx = []
    if saveat.t0:
        idx.append(0)
    if saveat.t1 or not (saveat.t0 or saveat.steps is not None or saveat.ts is not None):
        idx.append(n)
    if saveat.steps is not None:
        if saveat.steps > n:
            raise ValueError(
                f"SaveAt(steps={saveat.steps}) saves every {saveat.steps} steps, but the run "
                f"has only {n} steps: it would save nothing. Use steps <= {n}, or "
                "SaveAt(t1=True) for the final state."
            )
        idx.extend(range(saveat.steps, n + 1, saveat.steps))
    if saveat.ts is not None:
        if not (is_concrete(saveat.ts) and is_concrete(t0) and is_concrete(dt)):
            raise ValueError(
                "SaveAt(ts=...) needs concrete ts, t0 and dt to place the saves on the "
                "step grid; use SaveAt(steps=k) under tracing."
            )
        check_real(saveat.ts, "SaveAt.ts")
        ts = np.asarray(saveat.ts, dtype=np.float64)
        if ts.ndim != 1 or ts.size == 0:
            raise ValueError(f"SaveAt.ts must be a non-empty 1-D array; got shape {ts.shape}.")
        if not np.all(np.isfinite(ts)):
            raise ValueError(f"SaveAt.ts must be finite; got {ts[~np.isfinite(ts)][0]}.")
        if np.any(np.diff(ts) <= 0):
            raise ValueError("SaveAt.ts must be strictly increasing.")
        t0f, dtf = to_float(t0), to_float(dt)
        t1f = t0f + n * dtf
        if ts[0] < t0f - _GRID_TOL * dtf or ts[-1] > t1f + _GRID_TOL * dtf:
            raise ValueError(
                f"SaveAt.ts must lie in [t0, t1] = [{t0f}, {t1f}]; got [{ts[0]}, {ts[-1]}]."
            )
        k = np.rint((ts - t0f) / dtf)
        off = np.abs((ts - t0f) / dtf - k)
        if np.any(off > _GRID_TOL):
            bad = ts[np.argmax(off)]
            raise ValueError(
                f"SaveAt.ts must lie on the step grid t0 + k*dt (dt={dtf}); {bad} "
                "does not. Use sciad.ode.solve for arbitrary output times."
            )
        idx.extend(int(i) for i in k)
    return np.unique(np.asarray(idx, dtype=np.int64))


def simulate(
    model: AbstractModel,
    y0: State,
    *,
    dt: RealScalarLike,
    t0: RealScalarLike = 0.0,
    t1: RealScalarLike | None = None,
    n_steps: int | None = None,
    integrator: AbstractIntegrator | None = None,
    saveat: SaveAt | None = None,
    adjoint: AbstractAdjoint = CheckpointAdjoint(),
    max_steps: int | None = None,
    throw: bool = True,
    integrator_state: Anything = None,
    progress: "bool | AbstractProgressMeter" = False,
) -> Trajectory:
    """Integrate `model` from `y0` with a fixed-step integrator.

    The loop is a `lax.scan` (nested and checkpointed by `adjoint`), so the run
    composes with `jit`, `vmap`, `grad`, `jvp`, Hessians and grad of grad, and its
    reverse-mode memory grows sublinearly with the number of steps by default.

    **Arguments:**

    - `model`: a `sciad.AbstractModel`; its float fields are the parameters.
    - `y0`: the initial state (a PyTree of float arrays; layout set by the model).
    - `dt`: the step size (model time units), > 0. May be traced with `n_steps`.
    - `t0`: the initial time.
    - `t1`: the final time; `(t1 - t0) / dt` must be a whole number. Or give:
    - `n_steps`: the number of steps (a Python int).
    - `integrator`: a `sciad.AbstractIntegrator`. Default: the model's
      `default_integrator()` if it names one, else `VelocityVerlet()` for separable
      models and `RK4()` otherwise.
    - `saveat`: a `sciad.SaveAt`; default saves the final state.
    - `adjoint`: `sciad.CheckpointAdjoint()` (default, O(√n) reverse-mode memory)
      or `sciad.DirectAdjoint()` (store everything; fastest).
    - `max_steps`: stop after this many steps and report `max_steps_reached`.
    - `throw`: raise on a non-successful result (at run time, inside jit too).
      With `False` the code is returned in `Trajectory.result`.
    - `integrator_state`: resume from a previous `Trajectory.integrator_state`. It holds
      caches computed with the model that ran (a force): to continue with changed
      parameters, pass `integrator.refresh(model, t0, y0, state)` instead. It is checked
      against `(model, t0, y0)` (`AbstractIntegrator.check_resume`): a state of another
      structure, or a cached force from another point or other parameters, is refused.
    - `progress`: report how far the run has got: `True` prints a line every 10% to
      standard error (`sciad.TextProgressMeter()`), or pass a meter
      (`sciad.TqdmProgressMeter()`, your own `sciad.AbstractProgressMeter`). It reports
      once per check block (about 1,000 steps) from inside the compiled run, so it works
      under `jit`; under `vmap` the batch shares one meter; reverse mode's replay of the
      run is not reported again. The report is a host callback, so such a program is
      not stored by the persistent compilation cache.

    Step times are t0 + k·dt computed from the step counter and rounded once to the
    state's dtype (see `StepClock`), so they do not drift however long the run, in
    float32 too; a `dt` below the time dtype's resolution somewhere in [t0, t1]
    (t + dt == t) is refused. A resumed run counts its clock from `t0 = t1`, so a
    time-dependent model resumes bit for bit where t1 is exact (a dyadic `dt`) and to
    within one rounding of t1 otherwise.

    **Returns:** a `sciad.Trajectory`.

    **Example:**

    ```python
    model = sciad.ode.Pendulum(length=1.0, gravity=9.81, damping=0.1)
    traj = sciad.simulate(model, jnp.array([1.0, 0.0]), t1=10.0, dt=0.01,
                          saveat=sciad.SaveAt(ts=jnp.linspace(0, 10, 101)))
    traj.ys.shape  # (101, 2)
    ```
    """
    check_model(model)
    integrator = _check_integrator(integrator, model)
    if not isinstance(adjoint, AbstractAdjoint):
        raise TypeError(
            f"adjoint must be a sciad.AbstractAdjoint (sciad.CheckpointAdjoint() or "
            f"sciad.DirectAdjoint()); got {adjoint!r}. diffrax adjoints belong to "
            "sciad.ode.solve."
        )
    if saveat is None:
        saveat = SaveAt(t1=True)
    if not isinstance(saveat, SaveAt):
        raise TypeError(
            f"saveat must be a sciad.SaveAt; got {type(saveat).__name__}. "
            "diffrax.SaveAt belongs to sciad.ode.solve."
        )
    if isinstance(y0, list) and y0 and all(isinstance(x, (int, float)) for x in y0):
        raise TypeError(
            f"y0 is a list of numbers ({y0!r}); pass an array such as jnp.array({y0!r})."
        )
    y0 = check_state(model, y0)
    _check_call_args(model, y0, saveat, throw)
    meter = as_meter(progress)
    # Step counts and save indices come from the raw arguments: a Python float
    # stays concrete under tracing, an array made from it inside jit does not.
    for name, x in (("t0", t0), ("dt", dt), ("t1", t1)):
        if x is None and name != "t1" or isinstance(x, (str, bytes)):
            raise TypeError(f"{name} must be a real scalar; got {x!r}.")
        if x is not None:
            check_scalar(x, name)
    if is_concrete(dt) and not to_float(dt) > 0:
        raise ValueError(f"dt must be positive, got {to_float(dt)}.")
    n = _count_steps(t0, t1, n_steps, dt)
    if max_steps is not None and (
        isinstance(max_steps, bool) or not isinstance(max_steps, (int, np.integer)) or max_steps < 1
    ):
        raise ValueError(f"max_steps must be a positive int or None, got {max_steps!r}.")
    saves = _save_indices(saveat, t0, dt, n)
    tdtype = float_dtype(y0)
    clock = StepClock.create(t0, dt, tdtype, n).checked(t0, dt, n)
    dt_concrete = is_concrete(dt)  # before as_time: an array made inside jit is traced
    dt = as_time(dt, tdtype, "dt")
    if integrator_state is not None:
        integrator_state = integrator.check_resume(
            model, clock(jnp.asarray(0, jnp.int32)), y0, integrator_state
        )
    n_run = n if max_steps is None else min(n, int(max_steps))
    kept = tuple(int(i) for i in saves if i <= n_run)
    if not dt_concrete:
        dt = eqx.error_if(dt, dt <= 0, "dt must be positive.")
    traj = _run(
        model,
        y0,
        clock,
        dt,
        integrator_state,
        integrator,
        adjoint,
        saveat.fn,
        n_run,
        kept,
        len(saves),
        meter,
    )
    if n_run < n:
        traj = eqx.tree_at(
            lambda tr: tr.result,
            traj,
            RESULTS.where(
                traj.result == RESULTS.successful, RESULTS.max_steps_reached, traj.result
            ),
        )
    return raise_on_failure(traj) if throw else traj


def _all_finite(y: State) -> Anything:
    return jnp.all(jnp.stack([jnp.all(jnp.isfinite(x)) for x in jax.tree.leaves(y)]))


# Non-finite states are looked for once per block of about this many steps (a
# reduction every step costs as much as a cheap step), and the exact first bad step
# is found by replaying the one block after the last finite snapshot.
CHECK_EVERY = 32
# The longest block `block_length` picks: the non-finite replay covers this many steps.
MAX_BLOCK = 2 * CHECK_EVERY


def block_length(n: int, every: int = CHECK_EVERY) -> int:
    """The steps per check block for a run of `n` steps: `every` (CHECK_EVERY, or 1
    for integrators that check every step), or the divisor of `n` nearest to it
    within [CHECK_EVERY/2, MAX_BLOCK], so that the run is whole blocks and the step
    is compiled once (a remainder is a second copy of the step in the compiled
    program: about a second of compile time for a contact step). Falls back to
    CHECK_EVERY (and a remainder) when no such divisor exists."""
    if n % every == 0:
        return every
    near = sorted(range(CHECK_EVERY // 2, MAX_BLOCK + 1), key=lambda b: abs(b - CHECK_EVERY))
    return next((b for b in near if n % b == 0), CHECK_EVERY)


class _Carry(eqx.Module):
    """What one step hands to the next. It holds no time: the time comes from the step
    counter (exact, see StepClock), and is dead code, removed by XLA, for a
    time-independent model."""

    y: State
    state: Anything  # the integrator state
    k: Int[Array, ""]  # the step counter


class _Checked(eqx.Module):
    """A carry with the non-finite check's bookkeeping: `good` is the last carry seen
    finite at a check (a snapshot, without gradient), `bad` whether a check failed."""

    carry: _Carry
    good: _Carry
    bad: Bool[Array, ""]


class _Counted(eqx.Module):
    """A carry with the steps left in a padded save interval (`None`: no padding)."""

    carry: _Carry
    remaining: Int[Array, ""] | None


@eqx.filter_jit
def _run(
    model, y0, clock, dt, istate, integrator, adjoint, fn, n_run, saves, n_saves_total, meter
) -> Trajectory:
    t0 = clock(jnp.asarray(0, jnp.int32))
    if istate is None:
        istate = integrator.init(model, t0, y0)
    every = 1 if integrator.check_every_step(model) else CHECK_EVERY
    # A bound on the blocks of steps in the run (each at least `every` or
    # CHECK_EVERY/2 steps, or one save interval), for the adjoint's memory budget.
    n_blocks = n_run // min(every, CHECK_EVERY // 2) + len(saves) + 2

    def step(c: _Carry) -> _Carry:
        y, s = _one_step(integrator, model, clock(c.k), dt, c.y, c.state)
        return _Carry(y, s, c.k + 1)

    def plain_step(cr: _Counted) -> _Counted:
        return _Counted(step(cr.carry), None)

    def masked_step(cr: _Counted) -> _Counted:
        assert cr.remaining is not None
        c = tree_where(cr.remaining > 0, step(cr.carry), cr.carry)
        return _Counted(c, cr.remaining - 1)

    def check(x: _Checked) -> _Checked:
        """One finiteness check: keep a snapshot of the last finite state (and report
        the progress)."""
        report(meter, x.carry.k, n_run)
        bad = x.bad | ~_all_finite(x.carry.y)
        good = tree_where(bad, x.good, jax.lax.stop_gradient(x.carry))
        return _Checked(x.carry, good, bad)

    def steps(x: _Checked, length: int, stepper, remaining=None) -> _Checked:
        """`length` iterations of `stepper`, checked once per block."""

        def block(length):
            def run(xr):
                x, remaining = xr
                cr = adjoint.steps(stepper, _Counted(x.carry, remaining), length, n_blocks)
                return check(_Checked(cr.carry, x.good, x.bad)), cr.remaining

            return run

        size = block_length(length, every)
        nb, rem = divmod(length, size)
        xr = adjoint.loop(block(size), (x, remaining), nb)
        return (block(rem)(xr) if rem else xr)[0]

    def save(c: _Carry) -> tuple[Anything, Anything]:
        t = clock(c.k)
        return t, _saved(fn(t, c.y, integrator.model_at(model, c.state)))

    c0 = _Carry(y0, istate, jnp.asarray(0, jnp.int32))
    report(meter, c0.k, n_run)
    x = _Checked(c0, jax.lax.stop_gradient(c0), jnp.asarray(False))
    ts = ys = None
    if not saves:
        x = steps(x, n_run, plain_step)
        if n_saves_total:  # every save lies past max_steps: all padding
            shape_t, shape_y = jax.eval_shape(save, x.carry)
            ts = jnp.full((0,), jnp.inf, shape_t.dtype)
            ys = jax.tree.map(lambda a: jnp.zeros((0,) + a.shape, a.dtype), shape_y)
    else:
        x = steps(x, saves[0], plain_step)
        first_t, first_y = save(x.carry)
        gaps = np.diff(np.asarray(saves, dtype=np.int64))
        if gaps.size:
            uniform = bool(np.all(gaps == gaps[0]))
            width = int(gaps.max())
            # Save intervals shorter than a check block are grouped, so that the
            # finiteness check still runs about once per CHECK_EVERY steps.
            per_check = max(1, every // width)
            stepper = plain_step if uniform else masked_step

            def segment(x: _Checked, g):
                """One save interval: `g` real steps, padded to `width` if non-uniform."""
                if per_check > 1:
                    cr = adjoint.steps(stepper, _Counted(x.carry, g), width, n_blocks)
                    x = _Checked(cr.carry, x.good, x.bad)
                else:
                    x = steps(x, width, stepper, g)
                return x, save(x.carry)

            def group(x: _Checked, gs):
                x, out = jax.lax.scan(segment, x, gs, length=per_check if gs is None else None)
                return check(x) if per_check > 1 else x, out

            gaps32 = jnp.asarray(gaps, dtype=jnp.int32)
            n_groups, rem = divmod(gaps.size, per_check)
            x, head = adjoint.save_loop(
                group,
                x,
                None if uniform else gaps32[: n_groups * per_check].reshape(n_groups, per_check),
                n_groups,
            )
            outs = [jax.tree.map(lambda a: a.reshape((-1,) + a.shape[2:]), head)]
            if rem:
                x, tail = jax.lax.scan(
                    segment, x, None if uniform else gaps32[n_groups * per_check :], length=rem
                )
                x = check(x) if per_check > 1 else x
                outs.append(tail)
            rest_t, rest_y = jax.tree.map(lambda *a: jnp.concatenate(a), *outs)
            ts = jnp.concatenate([first_t[None], rest_t])
            ys = jax.tree.map(lambda a, b: jnp.concatenate([a[None], b]), first_y, rest_y)
        else:
            ts = first_t[None]
            ys = jax.tree.map(lambda a: a[None], first_y)
        x = steps(x, n_run - saves[-1], plain_step)
    missing = n_saves_total - len(saves)
    if missing and ts is not None:
        ts = jnp.concatenate([ts, jnp.full((missing,), jnp.inf, ts.dtype)])
        ys = jax.tree.map(
            lambda a: jnp.concatenate([a, jnp.full((missing,) + a.shape[1:], jnp.nan, a.dtype)]),
            ys,
        )
    end, good = x.carry, x.good
    report(meter, end.k, n_run)  # the last block may end without a check
    t1 = clock(end.k)
    if every == 1:  # the snapshot is the state just before the first bad step
        first_bad = jnp.where(x.bad, good.k + 1, -1)
    else:
        # Lazy: a plain cond on the batched flag would replay a block for every world
        # of a vmapped run (a third more steps for a 195-step run), bad or not.
        first_bad = lazy_cond(
            x.bad,
            lambda: _first_bad_step(step, good, min(MAX_BLOCK, n_run)),
            lambda: jnp.asarray(-1, jnp.int32),
        )
    result = RESULTS.where(x.bad, RESULTS.nonfinite_state, integrator.status(end.state))
    stats = {"num_steps": end.k, "first_nonfinite_step": first_bad}
    return Trajectory(ts, ys, t1, end.y, end.state, result, stats)


@eqx.filter_jit
def _one_step(integrator, model, t, dt, y, s):
    """One step, jitted so that it is traced once: every place `_run` takes a step
    (the blocks, a remainder, the non-finite replay) reuses the one traced jaxpr."""
    return integrator.step(model, t, dt, y, s)


def _first_bad_step(step: Anything, good: _Carry, length: int) -> Anything:
    """Replay at most one block from the last finite snapshot; the first bad step."""

    def body(cb):
        c, first = cb
        c = step(c)
        first = jnp.where((first < 0) & ~_all_finite(c.y), c.k, first)
        return c, first

    return _scan(body, (good, jnp.asarray(-1, jnp.int32)), length)[1]
