"""Differentiable equilibrium averages by reweighting saved frames (DiffTRe)."""

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from .._core._types import Anything, FloatScalar, RealScalarLike
from .._core._validate import check_positive
from ._neighbors import NeighborListBuilder
from ._system import MDSystem, with_neighbors


def _energies(system: MDSystem, frames: jax.Array, builder: NeighborListBuilder | None):
    def one(q):
        if builder is None:
            return system.potential_energy(q)
        nbrs = builder.build(system.space, q)
        # An overflowed frame list raises at run time (eqx.error_if in MDSystem.pairs).
        return with_neighbors(system, nbrs).potential_energy(q)

    return jax.lax.map(one, frames)


def reweighted_average(
    system: MDSystem,
    reference: MDSystem,
    frames: jax.Array,
    kT: RealScalarLike,
    fn: Callable[[MDSystem, jax.Array], Anything],
    *,
    builder: NeighborListBuilder | None = None,
) -> tuple[Anything, FloatScalar]:
    """The canonical average ⟨fn⟩ at `system`'s parameters, estimated from frames sampled
    at `reference`'s parameters, differentiable with respect to `system`.

    With U and Û the potential energies of `system` and `reference`, frames q_k drawn
    from the canonical ensemble of `reference` get weights
    w_k ∝ exp(−(U(q_k) − Û(q_k))/kT) (normalised), and

        ⟨fn⟩ ≈ Σ_k w_k fn(system, q_k).

    Its gradient at `system = reference` is the fluctuation formula
    ⟨∂fn/∂θ⟩ − (⟨fn ∂U/∂θ⟩ − ⟨fn⟩⟨∂U/∂θ⟩)/kT: no backpropagation through the dynamics,
    so it is exact in expectation for equilibrium averages however long and chaotic
    the sampling run. It is right for *ensemble* averages of a canonical (NVT) sampler
    (Langevin, Nosé–Hoover), with frames spaced past the correlation time; not for
    dynamical observables (use [`sciad.windowed_average`][sciad.windowed_average]).
    As the parameters move away from the reference the weights degenerate: re-sample
    when the effective sample size `n_eff` falls below about 90% of the frames.

    **Arguments:**

    - `system`: the `MDSystem` at the parameters θ (differentiate with respect to it).
    - `reference`: the `MDSystem` the frames were sampled with (held constant).
    - `frames`: shape `(frames, n, d)`, sampled positions (length).
    - `kT`: the sampling temperature kB·T (energy).
    - `fn`: `fn(system, q) -> PyTree` of arrays, the observable of one frame.
    - `builder`: optional [`NeighborListBuilder`][sciad.md.NeighborListBuilder] (for
      large systems): energies are summed over a list built per frame; a frame whose
      list overflows raises at run time (`eqx.error_if`).

    **Returns:** `(average, n_eff)`: the reweighted average (a PyTree like `fn`'s
    output) and the Kish effective sample size (Σw)²/Σw² (equal to the number of
    frames at θ = θ̂).

    **Example:**

    ```python
    def pressure_of(system, q):
        return sciad.md.pressure(system, (q, jnp.zeros_like(q)))

    avg, n_eff = sciad.md.reweighted_average(system, reference, traj.ys, 1.0, pressure_of)
    ```

    **Reference:** S. Thaler and J. Zavadlav, "Learning neural network potentials from
    experimental data via Differentiable Trajectory Reweighting", *Nat. Commun.* 12,
    6884 (2021); Kish, *Survey Sampling* (1965) for n_eff.
    """
    for name, s in (("system", system), ("reference", reference)):
        if not isinstance(s, MDSystem):
            raise TypeError(f"{name} must be a sciad.md.MDSystem; got {type(s).__name__}.")
    n = system.masses.shape[0]
    if np.ndim(frames) != 3 or np.shape(frames)[1] != n:
        raise ValueError(
            f"frames must have shape (frames, n, d) with n = {n}; got {np.shape(frames)}."
        )
    if not callable(fn):
        raise TypeError(f"fn must be callable as fn(system, q), got {fn!r}.")
    check_positive(kT, "reweighted_average kT")
    if builder is not None and not isinstance(builder, NeighborListBuilder):
        raise TypeError(
            f"builder must be a sciad.md.NeighborListBuilder or None; got {type(builder).__name__}."
        )
    frames = jax.lax.stop_gradient(frames)
    reference = jax.lax.stop_gradient(reference)
    du = _energies(system, frames, builder) - _energies(reference, frames, builder)
    logw = -du / kT
    w = jax.nn.softmax(logw)
    values = jax.lax.map(lambda q: fn(system, q), frames)
    average = jax.tree.map(lambda v: jnp.tensordot(w, v, axes=1), values)
    return average, 1.0 / jnp.sum(w * w)
