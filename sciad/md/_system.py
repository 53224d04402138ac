"""An MD system as a separable model: space + potential + masses (+ species, exclusions)."""

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Int
import numpy as np

from .._core._model import AbstractSeparableModel
from .._core._types import Anything, FloatScalar, FloatVector, Positions, RealScalarLike, State
from ._neighbors import NeighborList
from ._pair import pair_energy_sum as pair_energy_sum, per_pair as per_pair
from ._potential import (
    AbstractPotential,
    all_pairs as all_pairs,
    Exclusions,
    pair_displacements as pair_displacements,
    Pairs as Pairs,
)
from ._space import AbstractSpace


def _as_exclusions(x: Anything) -> Exclusions | None:
    if x is None or isinstance(x, Exclusions):
        return x
    return Exclusions(x)


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
    - `masses`: shape `(n,)` (mass units).
    - `species`: optional shape `(n,)` integer species for matrix-valued parameters.
    - `neighbors`: optional [`NeighborList`][sciad.md.NeighborList] whose pairs the
      energy sums over (set by [`NeighborListIntegrator`][sciad.md.NeighborListIntegrator]
      during a run); all pairs when `None`. Its cut-off must cover the potential's
      `range()`.
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
        if np.ndim(self.masses) != 1:
            raise ValueError(f"masses must have shape (n,), got {np.shape(self.masses)}.")
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
        n = np.shape(self.masses)[0]
        if self.exclusions is not None and self.exclusions.n_particles_needed() > n:
            raise ValueError(
                f"exclusions name particle {self.exclusions.n_particles_needed() - 1}, but "
                f"the system has {n} particles."
            )
        self.potential.check_system(self.space, n)

    def potential_energy(self, q: Positions) -> FloatScalar:
        """U(q) (energy units): pair terms sum over [`pairs`][sciad.md.MDSystem.pairs]."""
        return self.potential.energy(self.space, q, self.pairs(q), self.species, self.exclusions)

    def pairs(self, q: Positions) -> Pairs:
        """The non-bonded pairs `(i, j, mask)`: from `neighbors` if set, else all pairs;
        excluded pairs are masked out."""
        if self.neighbors is None:
            i, j, mask = all_pairs(q.shape[0])
        else:
            i, j, mask = self.neighbors.i, self.neighbors.j, self.neighbors.mask()
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
        """q and p have shape (n, d) with n = len(masses) and d the space's dimension."""
        n = self.masses.shape[0]
        for name, a in (("y0[0] (q)", y[0] if isinstance(y, tuple) else y),):
            if np.ndim(a) != 2 or np.shape(a)[0] != n:
                raise ValueError(
                    f"{name} must have shape (n, d) with n = len(masses) = {n}; got {np.shape(a)}."
                )
        super().check_state(y)
