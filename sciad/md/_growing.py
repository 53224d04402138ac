"""Long neighbour-list runs that grow the list's capacity on overflow, chunk by chunk."""

from collections.abc import Callable
import dataclasses

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._core._integrator import AbstractIntegrator, VelocityVerlet
from .._core._results import check_result, RESULTS, RunError
from .._core._simulate import simulate
from .._core._trajectory import SaveAt, Trajectory
from .._core._types import Anything, RealScalarLike, State
from .._core._validate import float_dtype
from ._neighbors import NeighborListBuilder
from ._run import NeighborListIntegrator
from ._system import MDSystem


def _grown(builder: NeighborListBuilder, seen: list, growth: float):
    """A builder with room for `growth` × the largest need seen in the `(space, q)`
    configurations of the chunk (the box may have changed under a barostat): a grid
    that fits the smallest of its boxes (in free space: the largest particle cloud)."""
    fresh = [
        NeighborListBuilder.create(
            space, q, cutoff=builder.cutoff, skin=builder.skin, capacity_factor=growth
        )
        for space, q in seen
    ]
    grids = [b.grid for b in fresh]
    pick = np.min if seen[0][0].periodic else np.max
    grid = None if None in grids else tuple(int(g) for g in pick(np.asarray(grids), axis=0))
    return NeighborListBuilder(
        builder.cutoff,
        builder.skin,
        max([int(np.ceil(growth * builder.capacity))] + [b.capacity for b in fresh]),
        max([int(np.ceil(growth * builder.max_per_cell))] + [b.max_per_cell for b in fresh]),
        grid,
        builder.space_type,
    )


def run_growing(
    system: MDSystem,
    y0: State,
    *,
    dt: RealScalarLike,
    n_steps: int,
    builder: NeighborListBuilder,
    t0: RealScalarLike = 0.0,
    integrator: AbstractIntegrator = VelocityVerlet(),
    chunk_steps: int = 1000,
    save_every: int | None = None,
    fn: Callable = SaveAt().fn,
    growth: float = 1.5,
    max_regrowths: int = 8,
    integrator_state: Anything = None,
    on_chunk: Callable[[int, Trajectory], None] | None = None,
) -> tuple[Trajectory, NeighborListBuilder]:
    """Run a neighbour-list simulation in chunks, growing the list when it overflows.

    Each chunk of `chunk_steps` steps is one compiled `sciad.simulate` call with
    `throw=False`. If a chunk reports `RESULTS.neighbor_overflow` (too many pairs, a
    full cell, or a box that shrank below the cell grid), it is discarded, the builder
    is grown (capacity and cell slots × `growth`, a new grid for the current box) and
    the chunk is rerun from its start state, with the inner integrator's state (a
    thermostat's key, say) kept, so the rerun is the run that would have happened with
    a large enough list from the start. Any other failure raises. A grown builder
    compiles once more; later chunks reuse it.

    This is a host-side driver for long production runs (it is not traceable: capacity
    is a static shape). Inside `jit`/`grad`, size the builder and let `simulate` report
    overflow. `on_chunk(k, traj)` sees every accepted chunk, e.g. to write a checkpoint
    of `traj.integrator_state` with `eqx.tree_serialise_leaves`; pass that state back as
    `integrator_state` to resume exactly.

    **Arguments:**

    - `system`: an `MDSystem`; `y0 = (q, p)`, each shape `(n, d)`.
    - `dt`, `n_steps`: the step (time units) and the total number of steps.
    - `t0`: the initial time (pass the previous run's `t1` when resuming).
    - `builder`: the initial [`NeighborListBuilder`][sciad.md.NeighborListBuilder].
    - `integrator`: the inner integrator (default `sciad.VelocityVerlet()`).
    - `chunk_steps`: steps per compiled chunk (a multiple of `save_every`).
    - `save_every`, `fn`: save `fn(t, y, model)` every `save_every` steps (as
      `SaveAt(steps=save_every, fn=fn)`); `None` saves nothing but the final state.
    - `growth`: the factor (> 1) applied to the capacity on overflow.
    - `max_regrowths`: give up after this many regrowths, raising a
      [`sciad.RunError`][sciad.RunError] (`RESULTS.neighbor_overflow`).
    - `integrator_state`: resume from the `integrator_state` of an earlier run.
    - `on_chunk`: optional callback `(chunk_index, chunk_trajectory)`.

    **Returns:** `(trajectory, builder)`: one `Trajectory` for the whole run (saves
    concatenated; `stats["regrowths"]` counts the regrowths) and the final builder.

    **Example:**

    ```python
    small = sciad.md.NeighborListBuilder.create(space, q0, cutoff=2.5, skin=0.3, capacity=100)
    traj, builder = sciad.md.run_growing(system, (q0, p0), dt=0.005, n_steps=2000,
                                         builder=small, chunk_steps=500)
    ```
    """
    if not isinstance(system, MDSystem):
        raise TypeError(f"run_growing runs a sciad.md.MDSystem; got {type(system).__name__}.")
    if not isinstance(builder, NeighborListBuilder):
        raise TypeError(f"builder must be a sciad.md.NeighborListBuilder; got {builder!r}.")
    for name, v in (("n_steps", n_steps), ("chunk_steps", chunk_steps)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}.")
    if save_every is not None and (
        not isinstance(save_every, (int, np.integer)) or save_every < 1 or chunk_steps % save_every
    ):
        raise ValueError(
            f"save_every must be a positive int dividing chunk_steps = {chunk_steps}, "
            f"got {save_every!r}."
        )
    if not growth > 1.0:
        raise ValueError(f"growth must be > 1, got {growth!r}.")
    saveat = SaveAt(t1=True) if save_every is None else SaveAt(steps=save_every, fn=fn)
    # Every chunk starts from an integrator state and a strongly typed time, the first
    # one too, so that equal chunks share one compiled program.
    t = jnp.asarray(t0, dtype=float_dtype(y0))
    y, k, regrowths, ts, ys, chunk_index, last = y0, 0, 0, [], [], 0, None
    state = _start(integrator_state, builder, integrator, system, t, y)
    while k < n_steps:
        m = min(chunk_steps, n_steps - k)
        integ = NeighborListIntegrator(integrator, builder)
        traj = _chunk(system, y, t, dt, m, integ, saveat, state)
        if traj.result == RESULTS.neighbor_overflow:
            regrowths += 1
            if regrowths > max_regrowths:
                raise RunError(
                    "sciad.md.run_growing: the neighbour list still overflowed after "
                    f"{max_regrowths} regrowths (in the chunk from step {k}); check the "
                    "system (is it collapsing?), or raise max_regrowths.",
                    traj.result,
                )
            start = integ.model_at(system, state)
            end = integ.model_at(system, traj.integrator_state)
            assert isinstance(start, MDSystem) and isinstance(end, MDSystem)
            builder = _grown(builder, [(start.space, y[0]), (end.space, traj.y1[0])], growth)
            state = _start(integrator_state if k == 0 else state, builder, integrator, system, t, y)
            continue
        check_result(traj, "sciad.md.run_growing")
        if save_every is not None:
            ts.append(traj.ts)
            ys.append(traj.ys)
        if on_chunk is not None:
            on_chunk(chunk_index, traj)
        y, state, t, k, last = traj.y1, traj.integrator_state, traj.t1, k + m, traj
        chunk_index += 1
    assert last is not None
    if save_every is not None:
        last = eqx.tree_at(
            lambda tr: (tr.ts, tr.ys),
            last,
            (jnp.concatenate(ts), jax.tree.map(lambda *a: jnp.concatenate(a), *ys)),
        )
    stats = {**last.stats, "regrowths": regrowths, "num_steps": jnp.asarray(k)}
    return eqx.tree_at(lambda tr: tr.stats, last, stats), builder


def _start(state, builder, integrator, system, t, y) -> Anything:
    """The state a chunk starts from: a fresh one at the run's start (`state` None), so
    that a regrown first chunk also recomputes the inner integrator's cached forces
    (from the overflowed list, wrong); else the resumed or carried state with its list
    rebuilt by `builder` (inner state, keys, the rebuild count and the stale flag kept:
    its cached forces came from a list that did not overflow)."""
    fresh = NeighborListIntegrator(integrator, builder).init(system, t, y)
    if state is None:
        return fresh
    if state.neighbors.capacity == builder.capacity:
        return state
    return dataclasses.replace(state, neighbors=fresh.neighbors, overflow=fresh.overflow)


@eqx.filter_jit
def _chunk(system, y, t, dt, m, integ, saveat, state) -> Trajectory:
    return simulate(
        system,
        y,
        t0=t,
        dt=dt,
        n_steps=m,
        integrator=integ,
        saveat=saveat,
        throw=False,
        integrator_state=state,
    )
