"""An MD system as a separable model: space + potential + masses (+ species, exclusions)."""

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Int
import numpy as np

from .._core._model import AbstractSeparableModel
from .._core._types import Anything, FloatScalar, FloatVector, Positions, RealScalarLike, State
from .._core._validate import check_labels, check_positive, is_concrete
from ._neighbors import NeighborList
from ._pair import pair_energy_sum as pair_energy_sum, per_pair as per_pair
from ._potential import (
    AbstractPotential,
    all_pairs as all_pairs,
    check_range,
    Exclusions,
    pair_displacements as pair_displacements,
    Pairs as Pairs,
)
from ._space import AbstractSpace


def _as_exclusions(x: Anything) -> Exclusions | None:
    if x is None or isinstance(x, Exclusions):
        return x
    return Exclusions(x)


def _reach(potential: AbstractPotential) -> float | None:
    """The potential's range, or `None` while its parameters are traced."""
    try:
        return float(potential.range())
    except (jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError):
        return None


def _excluded(exclusions: Exclusions, a: int, b: int) -> bool:
    with jax.ensure_compile_time_eval():
        return bool(exclusions.excluded(jnp.asarray([a]), jnp.asarray([b]))[0])


def _concrete(tree: Anything) -> bool:
    return all(is_concrete(x) for x in jax.tree.leaves(tree))


def _overflow_message(nbrs: NeighborList) -> str:
    if is_concrete(nbrs.count):
        count = f"{int(np.max(np.asarray(nbrs.count)))} pairs for a capacity of {nbrs.capacity}"
    else:
        count = f"more pairs than its capacity of {nbrs.capacity}"
    return (
        f"MDSystem.neighbors overflowed ({count}, or a cell "
        "or the grid overflowed): pairs are missing and the energy would be wrong. Build "
        "the list with a larger capacity (a new NeighborListBuilder.create at these "
        "positions), or run with sciad.md.NeighborListIntegrator / run_growing."
    )


def _check_neighbors(nbrs: Anything, n: int, reach: float | None) -> None:
    """A list carried by the system: the right type, particle count and cut-off, and,
    when its flag is concrete, not overflowed."""
    if not isinstance(nbrs, NeighborList):
        raise TypeError(
            "MDSystem.neighbors must be a sciad.md.NeighborList (built with "
            f"NeighborListBuilder.build) or None; got {type(nbrs).__name__}."
        )
    m = np.shape(nbrs.reference)[-2]
    if m != n:
        raise ValueError(f"MDSystem.neighbors was built for {m} particles, but the system has {n}.")
    if reach is not None and reach > nbrs.cutoff * (1 + 1e-12):
        raise ValueError(
            f"MDSystem.neighbors has cutoff {nbrs.cutoff}, below the potential's range "
            f"{reach}: pairs in between would be missed. Truncate the potential "
            "(sciad.md.Truncated) or build the list with a larger cutoff."
        )
    if is_concrete(nbrs.did_overflow) and np.any(np.asarray(nbrs.did_overflow)):
        raise ValueError(_overflow_message(nbrs))


def with_neighbors(system: Anything, nbrs: Anything, *, reported: bool = False) -> "MDSystem":
    """`system` (an `MDSystem`) with `nbrs` as its pair list.

    With `reported=True` the caller reports the list's overflow itself, as a `RESULTS`
    code (a neighbour-list integrator during a run, `minimize`): the list goes in with
    its overflow flag cleared, so that the system's own check (an error) does not
    pre-empt that code. Otherwise an overflowed list makes every energy raise.
    """
    if reported and nbrs is not None:
        nbrs = eqx.tree_at(lambda x: x.did_overflow, nbrs, jnp.zeros_like(nbrs.did_overflow))
    return eqx.tree_at(lambda m: m.neighbors, system, nbrs, is_leaf=lambda x: x is None)


class MDSystem(AbstractSeparableModel):
    """Particles interacting through a potential in a space: a separable Hamiltonian.

    H(q, p) = Σᵢ |pᵢ|²/(2mᵢ) + U(q), with U a pair potential Σ_{i<j} u(|qᵢ − qⱼ|) or
    any [`AbstractPotential`][sciad.md.AbstractPotential] (sums of pair, bonded and
    Ewald terms). Forces are −∂U/∂q by autodiff. Run
    it with `sciad.simulate` and any splitting integrator (NVE with `VelocityVerlet`).
    Without a neighbour list the energy sums over all pairs (O(N²)), which suits a few
    hundred particles; run with [`NeighborListIntegrator`][sciad.md.NeighborListIntegrator]
    for larger systems.

    **Arguments:**

    - `space`: a `sciad.md` space (the box is a differentiable parameter).
    - `potential`: an [`AbstractPotential`][sciad.md.AbstractPotential]: a pair
      potential, bonded terms, [`Ewald`][sciad.md.Ewald], or a sum of them with `+`.
    - `masses`: shape `(n,)` (mass units), finite and > 0.
    - `species`: optional shape `(n,)` integer species for matrix-valued parameters,
      each in `[0, n_species)` (required when the potential has
      `(n_species, n_species)` parameters; never clamped or wrapped).
    - `neighbors`: optional [`NeighborList`][sciad.md.NeighborList] whose pairs the
      energy sums over (set by [`NeighborListIntegrator`][sciad.md.NeighborListIntegrator]
      during a run); all pairs when `None`. It must be built for these `n` particles
      and its cut-off must cover the potential's `range()`. An overflowed list (pairs
      missing) makes every energy raise: before tracing if its flag is concrete, else
      at run time (`eqx.error_if`).
    - `exclusions`: optional [`Exclusions`][sciad.md.Exclusions] (or an `(n_excl, 2)`
      integer array, converted): pairs masked out of the non-bonded pair list, e.g.
      `Exclusions.from_bonds(bonds, separation=3)`.

    **State:** `(q, p)`, positions and momenta, each shape `(n, d)`.

    **Example:**

    ```python
    system = sciad.md.MDSystem(space, sciad.md.Truncated(sciad.md.LennardJones(1.0, 1.0), 2.5),
                               masses=jnp.ones(len(q0)))
    traj = sciad.simulate(system, (q0, p0), dt=0.005, n_steps=1000)
    ```
    """

    space: AbstractSpace
    potential: AbstractPotential
    masses: FloatVector = eqx.field(converter=jnp.asarray)
    species: Int[Array, " n"] | None = None
    neighbors: NeighborList | None = None
    exclusions: Exclusions | None = eqx.field(default=None, converter=_as_exclusions)

    def __check_init__(self):
        if not isinstance(self.space, AbstractSpace):
            raise TypeError(
                "MDSystem.space must be a sciad.md space (FreeSpace, PeriodicBox, "
                f"TriclinicBox); got {type(self.space).__name__}."
            )
        if np.ndim(self.masses) != 1:
            raise ValueError(f"masses must have shape (n,), got {np.shape(self.masses)}.")
        check_positive(self.masses, "MDSystem.masses", shape=None)
        if self.species is not None and np.shape(self.species) != np.shape(self.masses):
            raise ValueError(
                f"species must have shape {np.shape(self.masses)} like masses, "
                f"got {np.shape(self.species)}."
            )
        if not isinstance(self.potential, AbstractPotential):
            raise TypeError(
                "potential must be a sciad.md.AbstractPotential (a pair potential, bonded "
                f"terms, Ewald or their sum); got {type(self.potential).__name__}."
            )
        n_species = self.potential.n_species()
        if n_species is not None and self.species is None:
            raise ValueError(
                f"MDSystem.potential has ({n_species}, {n_species}) per-species parameters; "
                "pass species= (one integer label in [0, n_species) per particle)."
            )
        if self.species is not None and n_species is not None:
            check_labels(self.species, "MDSystem.species", n_species)
        elif self.species is not None and not jnp.issubdtype(
            jnp.result_type(self.species), jnp.integer
        ):
            raise TypeError(
                f"MDSystem.species must be integers; got dtype {jnp.result_type(self.species)}."
            )
        n = np.shape(self.masses)[0]
        if self.exclusions is not None and self.exclusions.n_particles_needed() > n:
            raise ValueError(
                f"exclusions name particle {self.exclusions.n_particles_needed() - 1}, but "
                f"the system has {n} particles."
            )
        if self.neighbors is not None:
            _check_neighbors(self.neighbors, n, _reach(self.potential))
        self.potential.check_system(self.space, n)
        check_range(self.potential, self.space)  # cut-off below half the box (minimum image)

    def potential_energy(self, q: Positions) -> FloatScalar:
        """U(q) (energy units): pair terms sum over [`pairs`][sciad.md.MDSystem.pairs].

        With concrete positions, coincident interacting particles are refused first
        (see [`check_positions`][sciad.md.MDSystem.check_positions])."""
        self.check_positions(q)
        return self.potential.energy(self.space, q, self.pairs(q), self.species, self.exclusions)

    def pairs(self, q: Positions) -> Pairs:
        """The non-bonded pairs `(i, j, mask)`: from `neighbors` if set, else all pairs;
        excluded pairs are masked out. An overflowed list raises (`ValueError` when its
        flag is concrete, `eqx.error_if` at run time): its pairs are incomplete."""
        if self.neighbors is None:
            i, j, mask = all_pairs(q.shape[0])
        else:
            nbrs = self.neighbors
            i, j, mask = nbrs.i, nbrs.j, nbrs.mask()
            if is_concrete(nbrs.did_overflow):
                if np.any(np.asarray(nbrs.did_overflow)):
                    raise ValueError(_overflow_message(nbrs))
            else:
                mask = eqx.error_if(mask, nbrs.did_overflow, _overflow_message(nbrs))
        if self.exclusions is not None:
            mask = mask & ~self.exclusions.excluded(i, j)
        return i, j, mask

    def velocity(self, t: RealScalarLike, p: State) -> State:
        """dq/dt = p/m."""
        return p / self.masses[:, None]

    def force(self, t: RealScalarLike, q: State) -> State:
        """dp/dt = −∂U/∂q."""
        return -jax.grad(self.potential_energy)(q)

    def kinetic_energy(self, p: Positions) -> FloatScalar:
        """Σ |pᵢ|²/(2mᵢ) (energy units)."""
        return jnp.sum(p**2 / (2 * self.masses[:, None]))

    def energy(self, y: State) -> FloatScalar:
        """Total energy H(q, p)."""
        q, p = y
        return self.kinetic_energy(p) + self.potential_energy(q)

    def temperature(self, p: Positions, kB: RealScalarLike = 1.0) -> FloatScalar:
        """Kinetic temperature 2K / (kB (n d − d)), with the d centre-of-mass degrees removed."""
        n, d = p.shape
        return 2 * self.kinetic_energy(p) / (kB * (n * d - d))

    def check_state(self, y: State) -> None:
        """q and p have shape (n, d) with n = len(masses) and d the space's dimension;
        with concrete values, no two interacting particles at one point and no
        overflowed neighbour list."""
        n = self.masses.shape[0]
        for name, a in (("y0[0] (q)", y[0] if isinstance(y, tuple) else y),):
            if np.ndim(a) != 2 or np.shape(a)[0] != n:
                raise ValueError(
                    f"{name} must have shape (n, d) with n = len(masses) = {n}; got {np.shape(a)}."
                )
        self.space.check_positions(y[0] if isinstance(y, tuple) else y, "y0[0] (q)")
        super().check_state(y)
        self.check_positions(y[0], "y0[0] (q)")
        if self.neighbors is not None:
            _check_neighbors(self.neighbors, n, _reach(self.potential))

    def check_positions(self, q: Positions, name: str = "q") -> None:
        """Raise `ValueError` if two particles that interact sit at one point.

        A pair at distance 0 that is within the potential's range and not excluded has
        an undefined (NaN) energy or force. Checked only when `q` is concrete (outside
        `jit`): at run time such a state is reported as `RESULTS.nonfinite_state`.
        Coincidence is exact equality of the positions wrapped into the cell
        (O(n log n)).

        **Arguments:** `q`, shape `(n, d)` (length units); `name` for the message.

        **Returns:** nothing.

        **Example:** `system.check_positions(q0)`
        """
        if not is_concrete(q) or np.ndim(q) != 2 or np.shape(q)[0] < 2:
            return
        if not _concrete((self.space, self.exclusions)) or _reach(self.potential) == 0.0:
            return  # bonded terms only: coincident particles interact through no pair
        with jax.ensure_compile_time_eval():  # q may be a constant closed over by a jit
            w = np.asarray(self.space.wrap(jnp.asarray(q)))
        order = np.lexsort(w.T[::-1])
        same = np.all(w[order][1:] == w[order][:-1], axis=1)
        for k in np.flatnonzero(same & ~np.r_[False, same[:-1]]):  # the start of each run
            end = k + 1
            while end < len(same) and same[end]:
                end += 1
            group = sorted(int(x) for x in order[k : end + 1])
            for a_, a in enumerate(group):
                for b in group[a_ + 1 :]:
                    if self.exclusions is None or not _excluded(self.exclusions, a, b):
                        raise ValueError(
                            f"{name}: particles {a} and {b} are at the same point "
                            f"{w[a].tolist()} (distance 0) and interact: their energy "
                            "and force are undefined (NaN). Move one of them, or exclude "
                            "the pair (MDSystem.exclusions)."
                        )
