"""Running MD with neighbour lists: an integrator composed from an inner integrator and a builder."""

from typing import ClassVar

import jax
import jax.numpy as jnp
from jaxtyping import Array, Int

from .._core._batching import lazy_cond, lazy_update
from .._core._integrator import (
    AbstractIntegrator,
    AbstractWrappedIntegrator,
    AbstractWrappedState,
)
from .._core._model import AbstractModel
from .._core._results import RESULTS
from .._core._types import Anything, BoolScalar, RealScalarLike, State
from .._core._validate import is_concrete
from ._neighbors import max_displacement, NeighborList, NeighborListBuilder
from ._space import AbstractSpace
from ._system import MDSystem, with_neighbors


def _with_list(model: AbstractModel, nbrs: Anything) -> MDSystem:
    if not isinstance(model, MDSystem):
        raise TypeError(
            f"NeighborListIntegrator runs a sciad.md.MDSystem; got {type(model).__name__}."
        )
    # The integrator reports an overflow itself (`status`), as a result code.
    return with_neighbors(model, nbrs, reported=True)


def _space_of(model: AbstractModel) -> AbstractSpace:
    assert isinstance(model, MDSystem)
    return model.space


class NeighborListState(AbstractWrappedState):
    """The state of [`NeighborListIntegrator`][sciad.md.NeighborListIntegrator].

    **Fields:**

    - `inner`: the inner integrator's state.
    - `neighbors`: the current [`NeighborList`][sciad.md.NeighborList].
    - `overflow`: whether any list built during the run overflowed (sticky).
    - `n_builds`: how many times the list was rebuilt (the initial build not counted).
    - `stale`: whether a particle crossed half the skin within one step (sticky).

    **Example:** `int(traj.integrator_state.n_builds)`
    """

    inner: Anything
    neighbors: NeighborList
    overflow: BoolScalar
    n_builds: Int[Array, ""]
    stale: BoolScalar


class NeighborListIntegrator(AbstractWrappedIntegrator):
    """Any integrator, with an `MDSystem`'s forces summed over a neighbour list.

    Every force evaluation uses a list that is certified valid at its positions. At the
    start of a step the list is rebuilt ahead if the step's drift would likely carry a
    particle past half the skin (displacement so far + 1.5 × the drift at the current
    speed); the old list is still valid there, so cached forces stay exact. After the
    step, if some particle nevertheless ended further than half the skin from where
    the list was built (for compositions with backward drifts such as Yoshida, plus the
    excursion past the straight path), the step is discarded, the list rebuilt at the
    start of the step and the step redone (rare). For velocity Verlet and BAOAB, whose
    only force evaluation is at the end of the step, this is exact: forces equal the
    all-pairs forces (tested to 1e-9 with a skin as small as 0.05).

    Rebuilds stay lazy under `jax.vmap` too: each replica builds only on the steps where
    it needs to (a loop over just those replicas, behind a batching rule; `jax.lax.cond` alone
    would turn a batched "when needed" into "every step, for every replica"), and the
    rare redo runs only on steps where some replica needs it.

    Failures are sticky and reported, never hidden: an overflow (too many pairs, a full
    cell, a box shrunk below the grid) as `RESULTS.neighbor_overflow` (use
    [`run_growing`][sciad.md.run_growing] to grow the capacity and rerun), and a
    particle crossing half the skin within one step as `RESULTS.neighbor_list_stale`.
    Neighbour indices are not differentiated; gradients flow through the distances.

    **Arguments:**

    - `integrator`: the inner integrator (e.g. `sciad.VelocityVerlet()`).
    - `builder`: a [`NeighborListBuilder`][sciad.md.NeighborListBuilder] made for the
      system's space, cut-off (≥ the potential's range) and skin.

    **State:** a [`NeighborListState`][sciad.md.NeighborListState].

    **Example:**

    ```python
    builder = sciad.md.NeighborListBuilder.create(space, q0, cutoff=2.5, skin=0.3)
    integ = sciad.md.NeighborListIntegrator(sciad.VelocityVerlet(), builder)
    traj = sciad.simulate(system, (q0, p0), dt=0.005, n_steps=10_000, integrator=integ)
    ```
    """

    integrator: AbstractIntegrator
    builder: NeighborListBuilder
    requires_separable: ClassVar[bool] = True

    def __check_init__(self):
        if not isinstance(self.integrator, AbstractIntegrator):
            raise TypeError(
                "NeighborListIntegrator.integrator must be a sciad.AbstractIntegrator "
                f"instance such as sciad.VelocityVerlet(); got {self.integrator!r}."
            )
        if not isinstance(self.builder, NeighborListBuilder):
            raise TypeError(
                "NeighborListIntegrator.builder must be a sciad.md.NeighborListBuilder (made "
                f"with NeighborListBuilder.create); got {type(self.builder).__name__}."
            )

    def check(self, model: AbstractModel) -> None:
        """The model is an `MDSystem` whose potential's range the list's cut-off covers."""
        system = _with_list(model, None)
        try:
            reach = float(system.potential.range())
        except (jax.errors.ConcretizationTypeError, TypeError):  # traced parameters
            return
        if reach > self.builder.cutoff * (1 + 1e-12):
            raise ValueError(
                f"The neighbour list's cutoff ({self.builder.cutoff}) is below the "
                f"potential's range ({reach}): pairs in between would be missed. Truncate "
                "the potential (sciad.md.Truncated) or build the list with a larger cutoff."
            )
        self.integrator.check(system)

    def init(self, model: AbstractModel, t0: RealScalarLike, y0: State) -> NeighborListState:
        """A [`NeighborListState`][sciad.md.NeighborListState]: the inner state, the
        list built at q0, its overflow flag, no rebuilds, not stale."""
        assert isinstance(model, MDSystem)
        nbrs = self.builder.build(model.space, y0[0])
        inner = self.integrator.init(_with_list(model, nbrs), t0, y0)
        no = jnp.asarray(False)
        return NeighborListState(inner, nbrs, nbrs.did_overflow, jnp.asarray(0, jnp.int32), no)

    def refresh(
        self, model: AbstractModel, t: RealScalarLike, y: State, state: NeighborListState
    ) -> NeighborListState:
        """A fresh [`init`][sciad.md.NeighborListIntegrator.init]: the list rebuilt at
        `y` and the inner state made anew (the list is part of the cache)."""
        return self.init(model, t, y)

    def inner_model(self, model: AbstractModel, state: NeighborListState) -> MDSystem:
        """The system with the current list (overflow reported by the run's result)."""
        return _with_list(model, state.neighbors)

    def step(
        self,
        model: AbstractModel,
        t: RealScalarLike,
        dt: RealScalarLike,
        y: State,
        state: NeighborListState,
    ) -> tuple[State, NeighborListState]:
        """One inner step with the current list; rebuilt and redone if it went stale."""
        assert isinstance(model, MDSystem)
        inner, nbrs, n_builds, stale = state.inner, state.neighbors, state.n_builds, state.stale
        space = _space_of(self.integrator.model_at(model, inner))
        # 1. Rebuild ahead, at the start of the step, if this step's drift would likely
        # carry a particle past half the skin. The old list is valid here (the last step
        # certified it), so the cached force needs no refresh. Under vmap each replica
        # builds only if it needs to.
        ahead = self._predicted_far(model, nbrs, dt, y, space) > nbrs.skin / 2
        nbrs = lazy_update(ahead, self.builder.build, (space, y[0]), nbrs)
        y1, inner1 = self.integrator.step(_with_list(model, nbrs), t, dt, y, inner)

        def redo():
            new = self.builder.build(space, y[0])
            m = _with_list(model, new)
            return (
                new,
                *self.integrator.step(m, t, dt, y, self.integrator.refresh(m, t, y, inner)),
            )

        # 2. Certify: if a particle still ended past half the skin (the prediction missed),
        # rebuild at the start of the step and redo it (rare; batched under vmap).
        rebuild = self._stale(model, nbrs, dt, y, y1, inner1)
        nbrs, y1, inner1 = lazy_cond(rebuild, redo, lambda: (nbrs, y1, inner1))
        stale = stale | (rebuild & self._stale(model, nbrs, dt, y, y1, inner1))
        n_builds = n_builds + ahead.astype(jnp.int32) + rebuild.astype(jnp.int32)
        overflow = state.overflow | nbrs.did_overflow
        return y1, NeighborListState(inner1, nbrs, overflow, n_builds, stale)

    def _predicted_far(self, model: MDSystem, nbrs: Anything, dt: RealScalarLike, y, space):
        """The largest distance from the list's reference a particle is predicted to reach
        in this step: its displacement so far plus 1.5 × the straight drift Σ|aᵢ|·dt·v
        (the margin covers the kicks within the step)."""
        drifts = self.drift_fractions()
        reach = 1.5 * sum(abs(a) for a in drifts) * jnp.abs(dt)
        step = reach * model.velocity(0.0, y[1])
        return max_displacement(space, y[0], nbrs.reference) + jnp.sqrt(
            jnp.max(jnp.sum(step**2, axis=-1))
        )

    def _stale(self, model: MDSystem, nbrs: Anything, dt: RealScalarLike, y, y1, inner1):
        """Whether a force evaluation of the step from `y` to `y1` may have missed pairs.

        Forces are evaluated at the drifted positions. With drift coefficients aᵢ, the
        positions stay within (Σ|aᵢ| − |Σaᵢ|)·|dt|·max|v| of the straight path between
        the end points (up to the kicks' second-order change); that slack is zero for
        velocity Verlet and BAOAB.
        """
        space = _space_of(self.integrator.model_at(model, inner1))
        drifts = self.drift_fractions()
        slack = sum(abs(a) for a in drifts) - abs(sum(drifts))
        far = max_displacement(space, y1[0], nbrs.reference)
        if slack > 0:
            v = jnp.maximum(model.velocity(0.0, y[1]) ** 2, model.velocity(0.0, y1[1]) ** 2)
            far = far + slack * jnp.abs(dt) * jnp.sqrt(jnp.max(jnp.sum(v, axis=-1)))
        return far > nbrs.skin / 2

    def model_at(self, model: AbstractModel, state: NeighborListState) -> AbstractModel:
        """The system with the current neighbour list (so saved energies cost O(N)),
        and with the inner integrator's own view (a barostat's box, say).

        During a run (a traced state) an overflow is reported by the run's result code;
        called afterwards on a concrete `Trajectory.integrator_state`, an overflowed
        list makes the system's energy raise instead of silently missing pairs."""
        inner, nbrs = state.inner, state.neighbors
        _with_list(model, None)
        system = with_neighbors(model, nbrs, reported=not is_concrete(nbrs.did_overflow))
        return self.integrator.model_at(system, inner)

    @staticmethod
    def rebuilds(state: NeighborListState) -> Int[Array, ""]:
        """How many times the list was rebuilt during a run, from its
        `Trajectory.integrator_state` (the initial build not counted).

        **Example:** `integ.rebuilds(traj.integrator_state)`
        """
        return state.n_builds

    def wrapper_status(self, state: NeighborListState) -> RESULTS:
        """`neighbor_overflow` if any list built during the run overflowed, else
        `neighbor_list_stale` if a particle crossed half the skin within one step (the
        inner integrator's failure, a barostat's `box_too_small` say, comes first)."""
        stale = RESULTS.where(state.stale, RESULTS.neighbor_list_stale, RESULTS.successful)
        return RESULTS.where(state.overflow, RESULTS.neighbor_overflow, stale)
