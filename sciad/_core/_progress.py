"""Progress meters for long runs: `simulate(..., progress=...)` reports how far a run has
got from inside the compiled loop (a `jax.debug.callback` once per check block of about
`CHECK_EVERY` steps), under `jit` and `vmap` (one meter for the whole batch)."""

import abc
import sys
import threading
from typing import Any
import weakref

import equinox as eqx
import jax
import numpy as np

from ._types import Anything
from ._validate import check_in_range


class AbstractProgressMeter(eqx.Module):
    """How `simulate` reports progress: `start`, `update` and `close` run on the host
    (Python), called from the compiled run through `jax.debug.callback`.

    Implement `update(step, n_steps)`; `start` and `close` default to nothing.

    **Example:**

    ```python
    class Log(sciad.AbstractProgressMeter):
        steps: list = eqx.field(static=True)

        def update(self, step, n_steps):
            self.steps.append(step)

    steps = []
    sciad.simulate(model, y0, dt=0.01, n_steps=10_000, progress=Log(steps))
    ```
    """

    def start(self, n_steps: int) -> None:
        """Called once when a run (or a replay of it by reverse mode) begins."""

    @abc.abstractmethod
    def update(self, step: int, n_steps: int) -> None:
        """Called with the number of steps done so far, at most once per check block."""

    def close(self, n_steps: int) -> None:
        """Called once when the run has done all `n_steps` steps."""


class TextProgressMeter(AbstractProgressMeter):
    """Print a line each time the run crosses another `every` fraction of its steps,
    e.g. `simulate: 40% (step 4,000 of 10,000)`, to standard error.

    **Arguments:**

    - `every`: the fraction between lines, in (0, 1]; default 0.1 (every 10%).
    - `label`: the first word of each line; default `"simulate"`.

    **Example:**

    ```python
    traj = sciad.simulate(model, y0, dt=0.01, n_steps=100_000, progress=True)
    # simulate: 10% (step 10,000 of 100,000) ... simulate: 100% (step 100,000 of 100,000)
    ```
    """

    every: float = eqx.field(static=True, default=0.1)
    label: str = eqx.field(static=True, default="simulate")

    def __check_init__(self):
        check_in_range(self.every, "TextProgressMeter.every", 0.0, 1.0, closed=(False, True))

    def update(self, step: int, n_steps: int) -> None:
        """Print a line when `step` crosses the next multiple of `every`·`n_steps`."""
        state = _host_state(self)
        if step <= state.get("step", 0):  # a repeat, or reverse mode's replay of the run
            return
        state["step"] = step
        fraction = step / max(n_steps, 1)
        mark = int(np.floor(fraction / self.every + 1e-9))
        if mark > state.get("mark", 0) or step == n_steps:
            state["mark"] = mark
            print(
                f"{self.label}: {100 * fraction:.0f}% (step {step:,} of {n_steps:,})",
                file=sys.stderr,
                flush=True,
            )

    def start(self, n_steps: int) -> None:
        """Forget the previous run's position."""
        _host_state(self).clear()


class TqdmProgressMeter(AbstractProgressMeter):
    """A `tqdm` progress bar (install `tqdm`; not a sciad dependency).

    **Arguments:** `label`: the bar's description; default `"simulate"`.

    **Example:**

    ```python
    traj = sciad.simulate(model, y0, dt=0.01, n_steps=100_000,
                          progress=sciad.TqdmProgressMeter())
    ```
    """

    label: str = eqx.field(static=True, default="simulate")

    def __check_init__(self):
        try:
            import tqdm  # noqa: F401
        except ImportError as e:
            raise ImportError(
                "TqdmProgressMeter needs tqdm: pip install tqdm (or use progress=True for "
                "sciad's text meter)."
            ) from e

    def start(self, n_steps: int) -> None:
        """Open a new bar."""
        import tqdm

        state = _host_state(self)
        if state.get("bar") is not None:
            state["bar"].close()
        state["bar"] = tqdm.tqdm(total=n_steps, desc=self.label, unit="step")
        state["step"] = 0

    def update(self, step: int, n_steps: int) -> None:
        """Advance the bar to `step`."""
        state = _host_state(self)
        if state.get("bar") is None:
            self.start(n_steps)
        if step > state["step"]:  # reverse mode's replay of the run stays silent
            state["bar"].update(step - state["step"])
            state["step"] = step

    def close(self, n_steps: int) -> None:
        """Close the bar."""
        state = _host_state(self)
        if state.get("bar") is not None:
            state["bar"].close()
            state["bar"] = None


# Host-side positions of the meters, by meter identity (meters are frozen modules).
_STATES: dict[int, dict[str, Any]] = {}
_LOCK = threading.Lock()


def _host_state(meter: AbstractProgressMeter) -> dict[str, Any]:
    """The meter's host-side position; dropped with the meter (a new meter per call of
    `simulate(progress=True)` must not leave an entry behind, nor hand its `id` on)."""
    key = id(meter)
    with _LOCK:
        if key not in _STATES:
            _STATES[key] = {}
            weakref.finalize(meter, _STATES.pop, key, None)
        return _STATES[key]


def as_meter(progress: Anything) -> AbstractProgressMeter | None:
    """`progress` as a meter: `False`/`None` → none, `True` → a `TextProgressMeter`."""
    if progress is None or progress is False:
        return None
    if progress is True:
        return TextProgressMeter()
    if isinstance(progress, AbstractProgressMeter):
        return progress
    raise TypeError(
        "progress must be True, False or a sciad progress meter "
        f"(sciad.TextProgressMeter(), sciad.TqdmProgressMeter()); got {progress!r}."
    )


def report(meter: AbstractProgressMeter | None, step: Anything, n_steps: int) -> None:
    """From traced code: tell `meter` that `step` (an int scalar, unbatched) steps of
    `n_steps` are done. A step of 0 starts the meter, `n_steps` closes it."""
    if meter is None:
        return

    def host(k: Anything) -> None:
        k = int(np.max(np.asarray(k)))  # one meter for a batch: every member is at k
        if k == 0:
            meter.start(n_steps)
            return
        meter.update(k, n_steps)
        if k >= n_steps:
            meter.close(n_steps)

    jax.debug.callback(host, step)
