"""What a run returns, and what to save along the way."""

from collections.abc import Callable

import equinox as eqx
from jaxtyping import Array
import numpy as np

from ._results import RESULTS
from ._types import Anything, PyTree, RealScalarLike, State


def save_state(t: RealScalarLike, y: State, model: Anything) -> State:
    """The default `SaveAt.fn`: save the whole state."""
    return y


class SaveAt(eqx.Module):
    """What `sciad.simulate` saves, and when.

    Save times are step indices on the fixed-step grid t0 + k·dt. Saving an
    observable instead of the state (`fn`) keeps memory small for big systems.

    **Arguments:**

    - `t0`: save the initial state.
    - `t1`: save the final state.
    - `ts`: times to save at, strictly increasing, in [t0, t1], each on the step
      grid (to within 1e-6·dt). Needs concrete `t0` and `dt`.
    - `steps`: save every `steps` steps (after t0).
    - `fn`: `fn(t, y, model) -> PyTree`, what to save; defaults to the state. It is
      a static argument: define it once (not a new `lambda` per call), or every call
      compiles again.

    With nothing chosen, the final state is saved (`t1=True`).

    **Example:**

    ```python
    saveat = sciad.SaveAt(ts=jnp.linspace(0.0, 10.0, 101),
                          fn=lambda t, y, model: model.energy(y))
    ```
    """

    t0: bool = eqx.field(default=False, static=True)
    t1: bool = eqx.field(default=False, static=True)
    ts: Anything = None
    steps: int | None = eqx.field(default=None, static=True)
    fn: Callable = eqx.field(default=save_state, static=True)

    def __check_init__(self):
        for name in ("t0", "t1"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise TypeError(
                    f"SaveAt({name}=...) must be True or False, got {getattr(self, name)!r}."
                )
        if self.steps is not None and (
            isinstance(self.steps, bool)
            or not isinstance(self.steps, (int, np.integer))
            or self.steps < 1
        ):
            raise ValueError(f"SaveAt(steps=...) must be a positive int, got {self.steps!r}.")
        if not callable(self.fn):
            raise TypeError(f"SaveAt(fn=...) must be callable, got {self.fn!r}.")


class Trajectory(eqx.Module):
    """The result of `sciad.simulate` or `sciad.ode.solve`.

    **Fields:**

    - `ts`: save times, shape `(n_saves,)`, or `None` if nothing was saved.
    - `ys`: saved states, or saved observables if `SaveAt(fn=...)`, each leaf with a
      leading axis `n_saves`. Saves after a `max_steps` stop are NaN, with `ts = inf`.
    - `t1`: the time reached.
    - `y1`: the final state.
    - `integrator_state`: what the integrator carries between steps; pass it to
      `simulate(..., integrator_state=...)` with `y0=y1`, `t0=t1` to continue the
      run bit for bit (a time-dependent model: where `t1` is exact, else to within
      the rounding of `t1`).
    - `result`: a `sciad.RESULTS` code.
    - `stats`: for `simulate`, `num_steps` (steps taken) and `first_nonfinite_step`
      (1-based step whose result was first non-finite, or -1); for `sciad.ode.solve`,
      diffrax's statistics (`num_steps`, `num_accepted_steps`, ...), and
      `integrator_state` is `None`.

    **Example:**

    ```python
    traj = sciad.simulate(model, y0, dt=0.01, n_steps=500)
    more = sciad.simulate(model, traj.y1, t0=traj.t1, dt=0.01, n_steps=500,
                          integrator_state=traj.integrator_state)
    ```
    """

    ts: Anything
    ys: PyTree
    t1: Array
    y1: PyTree
    integrator_state: PyTree
    result: RESULTS
    stats: dict[str, Anything]
