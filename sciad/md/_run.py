"""Running MD with neighbour lists: an integrator composed from an inner integrator and a builder."""

from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Int

from .._core._batching import lazy_cond
from .._core._integrator import AbstractIntegrator
from .._core._model import AbstractModel
from .._core._results import RESULTS
from .._core._types import Anything, RealScalarLike, State
from ._neighbors import needs_rebuild, NeighborListBuilder
from ._system import MDSystem


def _with_list(model: AbstractModel, nbrs: Anything) -> MDSystem:
    if not isinstance(model, MDSystem):
        raise TypeError(
            f"NeighborListIntegrator runs a sciad.md.MDSystem; got {type(model).__name__}."
        )
    return eqx.tree_at(lambda m: m.neighbors, model, nbrs, is_leaf=lambda x: x is None)


class NeighborListIntegrator(AbstractIntegrator):
    """Any integrator, with an `MDSystem`'s forces summed over a neighbour list.

    At the start of each step the list is rebuilt if it could go stale at any force
    evaluation of the step: if a particle's displacement since the last build, plus
    twice the distance the fastest particle covers in the step's drifts, exceeds half
    the skin. The build runs only when needed, under `jax.vmap` too: a batch of
    replicas rebuilds (together) only on steps where some replica needs it, and each
    replica keeps its own list otherwise (`jax.lax.cond` alone would turn a batched
    "when needed" into "every step").
    After a rebuild the inner integrator's state is refreshed (`refresh`), so a force
    cached with the old list is recomputed with the new one (a thermostat's key is kept). Forces then equal the all-pairs
    forces (tested to 1e-9 with a skin as small as 0.05). An overflow (too many pairs, a
    full cell, a box shrunk below the grid) is sticky and reported as
    `RESULTS.neighbor_overflow`: with `throw=True` the run raises; with `throw=False`
    rebuild the builder larger and rerun. Neighbour indices are not differentiated;
    gradients flow through the distances.

    **Arguments:**

    - `integrator`: the inner integrator (e.g. `sciad.VelocityVerlet()`).
    - `builder`: a [`NeighborListBuilder`][sciad.md.NeighborListBuilder] made for the
      system's space, cut-off (≥ the potential's range) and skin.

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

    def order(self) -> int:
        """The inner integrator's order."""
        return self.integrator.order()

    def init(self, model: AbstractModel, t0: RealScalarLike, y0: State) -> Anything:
        """(inner state, the list built at q0, overflow flag, number of rebuilds)."""
        assert isinstance(model, MDSystem)
        nbrs = self.builder.build(model.space, y0[0])
        inner = self.integrator.init(_with_list(model, nbrs), t0, y0)
        return inner, nbrs, nbrs.did_overflow, jnp.asarray(0, jnp.int32)

    def step(
        self,
        model: AbstractModel,
        t: RealScalarLike,
        dt: RealScalarLike,
        y: State,
        state: Anything,
    ) -> tuple[State, Anything]:
        """Rebuild if needed (re-initialising the inner state), then one inner step."""
        assert isinstance(model, MDSystem)
        inner, nbrs, overflow, n_builds = state
        rebuild = self._needs_rebuild(model, nbrs, dt, y)

        def rebuilt():
            new = self.builder.build(model.space, y[0])
            return new, self.integrator.refresh(_with_list(model, new), t, y, inner)

        nbrs, inner = lazy_cond(rebuild, rebuilt, lambda: (nbrs, inner))
        y, inner = self.integrator.step(_with_list(model, nbrs), t, dt, y, inner)
        n_builds = n_builds + rebuild.astype(jnp.int32)
        return y, (inner, nbrs, overflow | nbrs.did_overflow, n_builds)

    def _needs_rebuild(self, model: MDSystem, nbrs: Anything, dt: RealScalarLike, y: State):
        """Rebuild now if the list could go stale at any force evaluation of this step.

        Forces are evaluated after drifts, so the positions at the start of the step are
        not enough: the displacement so far plus twice the distance the fastest particle
        covers in this step's drifts (Σ|aᵢ|·|dt|·max|v|; the factor 2 covers the kicks
        within the step) must stay below skin/2.
        """
        q, p = y
        moved = jax.vmap(model.space.displacement)(q, nbrs.reference)
        speed = jnp.sqrt(jnp.max(jnp.sum(model.velocity(0.0, p) ** 2, axis=-1)))
        drifts = getattr(self.integrator, "drifts", (1.0,))
        reach = 2 * sum(abs(a) for a in drifts) * jnp.abs(dt) * speed
        far = jnp.sqrt(jnp.max(jnp.sum(moved**2, axis=-1))) + reach
        return needs_rebuild(nbrs, model.space, q) | (far > self.builder.skin / 2)

    def model_at(self, model: AbstractModel, state: Anything) -> AbstractModel:
        """The system with the current neighbour list (so saved energies cost O(N)),
        and with the inner integrator's own view (a barostat's box, say)."""
        inner, nbrs = state[:2]
        return self.integrator.model_at(_with_list(model, nbrs), inner)

    @staticmethod
    def rebuilds(state: Anything) -> Int[Array, ""]:
        """How many times the list was rebuilt during a run, from its
        `Trajectory.integrator_state` (the initial build not counted).

        **Example:** `integ.rebuilds(traj.integrator_state)`
        """
        return state[3]

    def status(self, state: Anything) -> RESULTS:
        """`neighbor_overflow` if any list built during the run overflowed."""
        return RESULTS.where(state[2], RESULTS.neighbor_overflow, RESULTS.successful)
