"""The result codes every sciad run reports, and the error that reports a failed run."""

import os

import equinox as eqx
from equinox.internal import unvmap_any
import jax
from jax.core import Tracer
import jax.numpy as jnp
import numpy as np
import optimistix as optx

from ._types import Anything
from ._validate import is_concrete


class RESULTS(eqx.Enumeration):
    """Outcome of a run, carried in `Trajectory.result` and `FitResult.result`.

    With `throw=True` (the default) anything but `successful` is raised as an
    error: a [`RunError`][sciad.RunError] whose first line is the message when the run's
    values exist (outside transforms, under `grad` or an eager `vmap`), else at run time
    through `eqx.branched_error_if` (inside `jax.jit`). With
    `throw=False` the code is returned, and under `jax.vmap` every batch element
    carries its own code.

    **Example:**

    ```python
    traj = sciad.simulate(model, y0, dt=0.1, n_steps=100, throw=False)
    ok = traj.result == sciad.RESULTS.successful
    ```
    """

    successful = ""
    max_steps_reached = (
        "The run needed more steps than `max_steps` allowed; it stopped early. "
        "Raise `max_steps`, or take larger steps."
    )
    nonfinite_state = (
        "The state became non-finite (NaN or inf). "
        "Common causes: too large a step (try half the dt), or an unstable model. "
        "`Trajectory.stats['first_nonfinite_step']` gives the first bad step."
    )
    neighbor_overflow = (
        "A neighbour list overflowed its static capacity; forces would be wrong. "
        "Rebuild with a larger capacity (`sciad.md.run_growing` does it for you)."
    )
    neighbor_list_stale = (
        "A particle moved more than half the neighbour-list skin within one step, so "
        "pairs could have been missed. Use a larger skin or a smaller step."
    )
    box_too_small = (
        "The periodic box became narrower than twice the interaction range (a barostat "
        "compressed it), so the minimum-image convention no longer holds and forces "
        "would be wrong. Start from a larger box (more particles), use a shorter "
        "cut-off, or let the box relax more slowly (larger tau_p)."
    )
    event_occurred = "A terminating event occurred and stopped the run."
    step_size_too_small = "The adaptive step size fell below its minimum."
    solver_failed = (
        "The solver failed: an implicit solve did not converge, or a linear solve "
        "was singular. Try a tighter tolerance, a smaller step, or another solver."
    )
    optimisation_failed = (
        "The optimiser did not converge: it reached its step limit, or the problem "
        "was singular or non-finite."
    )


class RunError(eqx.EquinoxRuntimeError):
    """A run ended with a [`RESULTS`][sciad.RESULTS] code other than `successful`, and
    `throw=True` asked for an error.

    The first line of the message says what happened and where the run stopped, e.g.
    `sciad.simulate: the state became non-finite (NaN or inf) at step 119 of 200.`,
    followed by the code's advice. It is raised this way, as a plain Python error,
    whenever the run's values exist when `simulate` returns: a call outside transforms
    (`simulate` compiles its loop itself), under `jax.grad`, or under `jax.vmap` without
    `jax.jit` around it (then the first line says how many runs of the batch failed).
    Inside `jax.jit` or another staged transform the code is known only while the
    compiled program runs, so equinox raises it (`eqx.branched_error_if`): an
    `equinox.EquinoxRuntimeError` (a `jax.errors.JaxRuntimeError` under a plain
    `jax.jit`) whose text starts with equinox's report of the stack and then gives the
    same message without the step. To have the short form there too, run with
    `throw=False` under the transform and check the result outside it with
    [`check_result`][sciad.check_result].

    A subclass of `equinox.EquinoxRuntimeError`, so `except eqx.EquinoxRuntimeError`
    catches both forms.

    **Fields:** `result`, the `RESULTS` code.

    **Example:**

    ```python
    try:
        sciad.simulate(model, y0, dt=10.0, n_steps=200)
    except sciad.RunError as e:
        print(e.result == sciad.RESULTS.nonfinite_state)  # True
    ```
    """

    def __init__(self, message: str, result: RESULTS):
        super().__init__(message)
        self.result = result


RunError.__module__ = "sciad"  # shown as `sciad.RunError: ...`, its public name


def _stopped(code: RESULTS, stats: dict[str, Anything], t1: Anything) -> str:
    """Where a concrete, unbatched run failed, from its `stats` and `t1`, if known."""
    steps, first = stats.get("num_steps"), stats.get("first_nonfinite_step")
    if bool(code == RESULTS.nonfinite_state) and first is not None and int(first) > 0:
        return f" at step {int(first)}" + ("" if steps is None else f" of {int(steps)}")
    if bool(code == RESULTS.max_steps_reached) and steps is not None:
        return f" after {int(steps)} steps" + ("" if t1 is None else f" (t = {float(t1):.6g})")
    return ""


# The call each result type comes from, named in the message when no owner is given.
_OWNERS = {
    "Trajectory": "sciad.simulate",
    "FitResult": "sciad.fit",
    "MetaResult": "sciad.meta_fit",
    "MinimizeResult": "sciad.md.minimize",
}


def check_result(out: Anything, owner: str | None = None) -> bool:
    """Raise [`RunError`][sciad.RunError] if a concrete run failed.

    When the result of `out` is concrete and a failure (in some batch element: any code
    but `successful` and the stop of a terminating event, `event_occurred`),
    this raises a `RunError` whose first line names `owner`, what happened and where
    the run stopped, then the code's advice. `simulate`, `ode.solve`, `fit`,
    `meta_fit` and `md.minimize` call it with `throw=True`; call it yourself after a
    run with `throw=False` under `jax.jit` or `jax.vmap`, outside the transform, for
    the same short message.

    **Arguments:**

    - `out`: what a run returned: a `sciad.Trajectory` (from `simulate`,
      `windowed_average`, `ode.solve`, `md.run_growing`), a `sciad.FitResult`, a
      `sciad.MetaResult` or a `sciad.md.MinimizeResult`, possibly batched by `vmap`.
    - `owner`: the call the message names (default: the call that returns `out`'s
      type, e.g. `"sciad.simulate"` for a `Trajectory`).

    **Returns:** `True` if the result is concrete and successful, `False` if it is
    traced (inside a transform, where Python cannot look at it).

    **Example:**

    ```python
    run = jax.jit(lambda y: sciad.simulate(model, y, dt=0.1, n_steps=100, throw=False))
    traj = run(y0)
    sciad.check_result(traj)  # raises sciad.RunError if the run failed
    ```
    """
    name = type(out).__name__
    if name not in _OWNERS or not isinstance(getattr(out, "result", None), RESULTS):
        raise TypeError(
            "check_result takes what a sciad run returns (a Trajectory, FitResult, "
            f"MetaResult or MinimizeResult); got {name}."
        )
    ok = ~_failed(out.result)
    if not is_concrete(ok):
        return False
    _raise_if_failed(name, owner, *_parts(out))
    return True


def _parts(out: Anything) -> tuple[RESULTS, dict[str, Anything], Anything]:
    """What the message of a failed run reads: its code, the step counts of its
    `stats`, and its `t1`."""
    stats = getattr(out, "stats", None) or {}
    steps = {k: stats[k] for k in ("num_steps", "first_nonfinite_step") if k in stats}
    return out.result, steps, getattr(out, "t1", None)


def _raise_if_failed(
    name: str, owner: str | None, result: RESULTS, stats: dict[str, Anything], t1: Anything
) -> None:
    """Raise `RunError` if the concrete `result` (possibly batched) is a failure."""
    ok = np.asarray(~_failed(result))
    if ok.all():
        return
    index = int(np.flatnonzero(~ok.reshape(-1))[0])
    code = jax.tree.map(lambda v: jnp.reshape(v, (-1,))[index], result)
    if ok.ndim == 0:
        where = _stopped(code, stats, t1)
    else:
        where = f" in {int(np.sum(~ok))} of {ok.size} runs of the batch (the first: run {index})"
    head, advice = _head_and_advice(code)
    raise RunError(
        f"{owner or _OWNERS[name]}: {head}{where}.\n{advice}\n"
        f"(With throw=False the run returns its {name} instead, with this code in "
        f"`{name}.result`.)",
        code,
    )


def _head_and_advice(code: RESULTS) -> tuple[str, str]:
    """A code's message as what happened (lower case, no full stop) and the advice."""
    head, _, advice = str(RESULTS[code]).partition(". ")
    return head[0].lower() + head[1:], advice


def raise_on_failure(out: Anything, owner: str | None = None) -> Anything:
    """`out` (a run's `Trajectory`, `FitResult`, ...), tied to an error raised if its
    result is not successful.

    A concrete result (a call outside transforms) is checked at once, raising
    `RunError` with the message first (`check_result`). So is a result that is traced
    only by `jax.vmap` or autodiff run eagerly (no `jax.jit` or other staging around
    the call): its values exist, so they are read (through `jax.pure_callback`, only
    when some batch element failed) and checked the same way. A result traced by
    staging is checked when the compiled program runs (`eqx.branched_error_if`, whose
    message names `owner` but follows equinox's report of the stack), tied to every
    array of `out` except PRNG keys, which equinox's `error_if` cannot carry.
    """
    if check_result(out, owner):
        return out
    name = type(out).__name__
    failed = _failed(out.result)
    if not _staging() and os.environ.get("EQX_ON_ERROR", "raise") == "raise":
        if bool(unvmap_any(failed)):  # concrete: nothing is staged
            _raise_if_failed(name, owner, *_gather(_parts(out)))
        return out
    index = sum(
        jnp.where(out.result == getattr(RESULTS, code), i, 0) for i, code in enumerate(_CODES)
    )
    checked, rest = eqx.partition(out, _not_key)
    checked = eqx.branched_error_if(
        checked, failed, index, _traced_messages(owner or _OWNERS[name], name)
    )
    return eqx.combine(checked, rest)


# The codes of `RESULTS` in order, to index the messages of a traced check.
_CODES = (
    "successful",
    "max_steps_reached",
    "nonfinite_state",
    "neighbor_overflow",
    "neighbor_list_stale",
    "box_too_small",
    "event_occurred",
    "step_size_too_small",
    "solver_failed",
    "optimisation_failed",
)


def _traced_messages(owner: str, name: str) -> list[str]:
    """The message of each code for a run checked inside a staged transform, where the
    step and the batch element are not known to the message."""
    out = []
    for code in _CODES:
        head, advice = (
            _head_and_advice(getattr(RESULTS, code)) if code != "successful" else ("", "")
        )
        out.append(
            f"{owner}: {head}.\n{advice}\n(Raised at run time inside jax.jit or another "
            "staged transform, so this message cannot come first or say the step. For "
            f"that, run with throw=False and call sciad.check_result on the {name} "
            "outside the transform.)"
        )
    return out


def _staging() -> bool:
    """Whether JAX is staging a computation out (`jax.jit`, `lax.scan`, a checkpoint,
    ...), as opposed to running it eagerly, possibly under `vmap` or autodiff."""
    return isinstance(jnp.zeros(()) + 1, Tracer)


def _gather(parts: Anything) -> Anything:
    """The concrete values of `parts`, traced by an eager `jax.vmap` or autodiff only,
    with their batch axes in front: a `jax.pure_callback` sees the whole batch at once
    and hands it back here (it does not raise itself: JAX would turn that into a
    `JaxRuntimeError`)."""
    leaves, treedef = jax.tree.flatten(jax.lax.stop_gradient(parts))
    seen: list[list[np.ndarray]] = []

    def keep(*xs: Anything) -> Anything:
        seen.append([np.asarray(x) for x in xs])
        return np.zeros(np.shape(xs[0]), np.bool_)

    done = jax.pure_callback(
        keep, jax.ShapeDtypeStruct((), jnp.bool_), *leaves, vmap_method="broadcast_all"
    )
    bool(unvmap_any(done))  # a concrete value: waits for the callback
    (values,) = seen
    return jax.tree.unflatten(treedef, [jnp.asarray(v) for v in values])


def from_optimistix(code: optx.RESULTS) -> RESULTS:
    """An optimistix result code as sciad's: `successful`, `max_steps_reached`,
    `nonfinite_state`, or `optimisation_failed` for every other failure."""
    out = RESULTS.where(
        code == optx.RESULTS.nonlinear_max_steps_reached,
        RESULTS.max_steps_reached,
        RESULTS.optimisation_failed,
    )
    out = RESULTS.where(code == optx.RESULTS.nonfinite, RESULTS.nonfinite_state, out)
    return RESULTS.where(code == optx.RESULTS.successful, RESULTS.successful, out)


def _failed(result: RESULTS) -> Anything:
    """Whether a run failed: any code but `successful`, or a terminating event's stop."""
    return (result != RESULTS.successful) & (result != RESULTS.event_occurred)


def _not_key(x: Anything) -> bool:
    return eqx.is_array(x) and not jnp.issubdtype(x.dtype, jax.dtypes.prng_key)
