"""Time averages whose gradients stay useful in chaotic systems: truncated backpropagation."""

from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ._adjoint import AbstractAdjoint, CheckpointAdjoint
from ._clock import StepClock
from ._integrator import AbstractIntegrator
from ._model import AbstractModel
from ._results import raise_on_failure, RESULTS
from ._simulate import simulate
from ._trajectory import SaveAt, Trajectory
from ._types import Anything, RealScalarLike, State


def _stop(tree: Anything) -> Anything:
    """stop_gradient on the float leaves (keys and integers pass through)."""
    floats, rest = eqx.partition(tree, eqx.is_inexact_array)
    return eqx.combine(jax.lax.stop_gradient(floats), rest)


def windowed_average(
    model: AbstractModel,
    y0: State,
    fn: Callable[[Anything, State, AbstractModel], Anything],
    *,
    dt: RealScalarLike,
    n_steps: int,
    window: int,
    save_every: int = 1,
    t0: RealScalarLike = 0.0,
    integrator: AbstractIntegrator | None = None,
    adjoint: AbstractAdjoint = CheckpointAdjoint(),
    integrator_state: Anything = None,
    throw: bool = True,
) -> Trajectory:
    """The time average of `fn` along a run, with gradients truncated to windows.

    The run is cut into windows of `window` steps. The forward values are exactly those
    of one long `sciad.simulate` run; in the derivative, each window starts from its
    initial state held constant (`stop_gradient`). The derivative of the average is
    then the average of per-window derivatives: truncated backpropagation through time.

    Why: in a chaotic system (a Lennard-Jones liquid) the exact derivative of a long
    trajectory grows like e^{λt} (λ the largest Lyapunov exponent) — about e⁴ per LJ
    time unit — and is useless, then inf/NaN, after a few time units, although the
    derivative of the *long-time average* is finite. Truncation trades that variance
    for a bias that decays as the window grows past the system's correlation time
    (so take `window·dt` ≳ a few correlation times but ≲ a few Lyapunov times).
    Use the plain gradient for horizons shorter than the Lyapunov time, this estimator
    for long time averages of dynamical systems (NVE or thermostatted), and reweighting
    ([`sciad.md.reweighted_average`][sciad.md.reweighted_average]) for equilibrium
    ensemble averages.

    Memory: reverse mode stores one state per window plus one window's checkpoints.
    Composes with `jit`, `vmap`, `grad`, `jvp` and higher order.

    **Arguments:**

    - `model`, `y0`, `dt`, `t0`, `integrator`, `adjoint`, `integrator_state`, `throw`:
      as for `sciad.simulate` (the adjoint applies within each window).
    - `fn`: `fn(t, y, model) -> PyTree` of arrays to average (static: define it once).
    - `n_steps`: total steps, a multiple of `window`.
    - `window`: steps per window (a Python int), a multiple of `save_every`.
    - `save_every`: evaluate `fn` every `save_every` steps (not at t0).

    **Returns:** a `sciad.Trajectory` whose `ys` are the per-window averages of `fn`
    (leading axis: windows) at `ts` (window end times); the overall average is
    `jnp.mean(traj.ys, axis=0)`. `y1`, `t1` and `integrator_state` resume the run;
    `result` is the first non-successful window's code.

    **Example:**

    ```python
    def potential(t, y, m):
        return m.potential_energy(y[0])

    def mean_energy(eps):
        system = eqx.tree_at(lambda s: s.potential.potential.epsilon, system0, eps)
        traj = sciad.windowed_average(system, y0, potential, dt=0.005,
                                      n_steps=10_000, window=200, save_every=10)
        return jnp.mean(traj.ys)

    jax.grad(mean_energy)(1.0)  # finite; the untruncated gradient is ~1e86
    ```

    **Reference:** R. J. Williams and J. Peng, *Neural Comput.* 2, 490 (1990)
    (truncated BPTT); for chaotic MD, S. S. Schoenholz and E. D. Cubuk, JAX-MD,
    *NeurIPS* 2020, and P. J. Lyu et al. / Metz et al., "Gradients are not all you
    need", arXiv:2111.05803 (2021).
    """
    for name, v in (("n_steps", n_steps), ("window", window), ("save_every", save_every)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}.")
    if n_steps % window or window % save_every:
        raise ValueError(
            f"Need n_steps ({n_steps}) a multiple of window ({window}) and window a "
            f"multiple of save_every ({save_every})."
        )
    if not callable(fn):
        raise TypeError(f"fn must be callable as fn(t, y, model), got {fn!r}.")
    saveat = SaveAt(steps=save_every, fn=fn)

    def run(y, state, t):
        return simulate(
            model,
            y,
            t0=t,
            dt=dt,
            n_steps=window,
            integrator=integrator,
            saveat=saveat,
            adjoint=adjoint,
            integrator_state=state,
            throw=False,
        )

    first = run(y0, integrator_state, t0)  # also validates the inputs before tracing
    # Window start times from one clock, so that they do not drift window by window.
    clock = StepClock.create(t0, dt, first.t1.dtype, n_steps)

    def average(traj):
        return jax.tree.map(lambda a: jnp.mean(a, axis=0), traj.ys)

    def fold(result, steps, traj):
        ok = result == RESULTS.successful
        return RESULTS.where(ok, traj.result, result), steps + traj.stats["num_steps"]

    @jax.checkpoint
    def body(carry, _):
        y, state, k, result, steps = carry
        traj = run(_stop(y), _stop(state), clock(k))
        carry = (traj.y1, traj.integrator_state, k + window, *fold(result, steps, traj))
        return carry, (clock(k + window), average(traj))

    steps0 = jnp.zeros_like(first.stats["num_steps"])
    k0 = jnp.asarray(window, jnp.int32)
    carry = (first.y1, first.integrator_state, k0, *fold(first.result, steps0, first))
    carry, rest = jax.lax.scan(body, carry, None, length=n_steps // window - 1)
    head = (clock(k0), average(first))
    ts, ys = jax.tree.map(lambda a, b: jnp.concatenate([a[None], b]), head, rest)
    y1, state1, k1, result, steps = carry
    t1 = clock(k1)
    traj = Trajectory(ts, ys, t1, y1, state1, result, {"num_steps": steps})
    return raise_on_failure(traj) if throw else traj
