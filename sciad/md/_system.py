"""An MD system as a separable model: space + potential + masses (+ species)."""

from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int
import numpy as np

from .._core._geometry import safe_norm
from .._core._model import AbstractSeparableModel
from .._core._types import FloatScalar, FloatVector, Positions, RealScalarLike, State
from ._neighbors import NeighborList
from ._pair import AbstractPairPotential
from ._space import AbstractSpace

Pairs = tuple[Int[Array, " m"], Int[Array, " m"], Bool[Array, " m"]]


def all_pairs(n: int) -> Pairs:
    """Every pair i < j of `n` particles, as `(i, j, mask)` with shape `(n(n−1)/2,)` each.

    **Example:** `i, j, mask = sciad.md.all_pairs(4)  # 6 pairs`
    """
    i, j = np.triu_indices(n, k=1)
    return jnp.asarray(i), jnp.asarray(j), jnp.ones(i.shape, dtype=bool)


def pair_energy_sum(
    potential: AbstractPairPotential,
    space: AbstractSpace,
    positions: Positions,
    pairs: Pairs,
    species: Int[Array, " n"] | None = None,
) -> FloatScalar:
    """Σ over the listed pairs of u(|r_i − r_j|), gradient-safe for masked pairs.

    Masked pairs (padding, or i = j) are given the distance 1 before the potential is
    evaluated and their energy is discarded with a second `where`, so their gradient is
    exactly zero (never NaN) even at r = 0.

    **Arguments:**

    - `potential`: an `AbstractPairPotential` (truncated or not).
    - `space`: how displacements are measured.
    - `positions`: shape `(n, d)` (length units).
    - `pairs`: `(i, j, mask)`, each shape `(m,)`; indices may be the sentinel `n` where
      `mask` is false.
    - `species`: shape `(n,)` integer species, for matrix-valued parameters.

    **Returns:** the potential energy (energy units), a scalar.

    **Example:** `sciad.md.pair_energy_sum(lj, space, q, sciad.md.all_pairs(len(q)))`
    """
    ii, jj, dr, real = pair_displacements(space, positions, pairs)
    r = safe_norm(dr, real)
    u = per_pair(lambda pot: pot.pair_energy, potential, species, ii, jj, r)
    return jnp.sum(jnp.where(real, u, 0.0))


def pair_displacements(
    space: AbstractSpace, positions: Positions, pairs: Pairs
) -> tuple[Int[Array, " m"], Int[Array, " m"], Float[Array, "m d"], Bool[Array, " m"]]:
    """Minimum-image displacements of listed pairs, and which pairs are real.

    Sentinel indices (`n`, for padding) are clamped to valid ones; their pairs, and
    i = j, are marked not real.

    **Returns:** `(i, j, dr, real)`: clamped indices, r_i − r_j with shape `(m, d)`,
    and a mask.
    """
    i, j, mask = pairs
    n = positions.shape[0]
    ii, jj = jnp.minimum(i, n - 1), jnp.minimum(j, n - 1)
    dr = jax.vmap(space.displacement)(positions[ii], positions[jj])
    return ii, jj, dr, mask & (i != j)


def per_pair(
    fn: Callable[[AbstractPairPotential], Callable],
    potential: AbstractPairPotential,
    species: Int[Array, " n"] | None,
    ii: Int[Array, " m"],
    jj: Int[Array, " m"],
    r: Float[Array, " m"],
) -> Float[Array, " m"]:
    """`fn(potential)(r)` for each pair, with the pair's species parameters if given."""
    if species is None:
        return jax.vmap(fn(potential))(r)
    return jax.vmap(lambda a, b, x: fn(potential.for_species(a, b))(x))(species[ii], species[jj], r)


class MDSystem(AbstractSeparableModel):
    """Particles interacting through a pair potential in a space: a separable Hamiltonian.

    H(q, p) = Σᵢ |pᵢ|²/(2mᵢ) + Σ_{i<j} u(|qᵢ − qⱼ|). Forces are −∂U/∂q by autodiff. Run
    it with `sciad.simulate` and any splitting integrator (NVE with `VelocityVerlet`).
    Without a neighbour list the energy sums over all pairs (O(N²)), which suits a few
    hundred particles; run with [`NeighborListIntegrator`][sciad.md.NeighborListIntegrator]
    for larger systems.

    **Arguments:**

    - `space`: a `sciad.md` space (the box is a differentiable parameter).
    - `potential`: an `AbstractPairPotential`.
    - `masses`: shape `(n,)` (mass units).
    - `species`: optional shape `(n,)` integer species for matrix-valued parameters.
    - `neighbors`: optional [`NeighborList`][sciad.md.NeighborList] whose pairs the
      energy sums over (set by [`NeighborListIntegrator`][sciad.md.NeighborListIntegrator]
      during a run); all pairs when `None`.

    **State:** `(q, p)`, positions and momenta, each shape `(n, d)`.

    **Example:**

    ```python
    system = sciad.md.MDSystem(space, sciad.md.Truncated(sciad.md.LennardJones(1.0, 1.0), 2.5),
                               masses=jnp.ones(len(q0)))
    traj = sciad.simulate(system, (q0, p0), dt=0.005, n_steps=1000)
    ```
    """

    space: AbstractSpace
    potential: AbstractPairPotential
    masses: FloatVector = eqx.field(converter=jnp.asarray)
    species: Int[Array, " n"] | None = None
    neighbors: NeighborList | None = None

    def __check_init__(self):
        if np.ndim(self.masses) != 1:
            raise ValueError(f"masses must have shape (n,), got {np.shape(self.masses)}.")
        if self.species is not None and np.shape(self.species) != np.shape(self.masses):
            raise ValueError(
                f"species must have shape {np.shape(self.masses)} like masses, "
                f"got {np.shape(self.species)}."
            )

    def potential_energy(self, q: Positions) -> FloatScalar:
        """U(q): the pair energy over `neighbors`' pairs if set, else all pairs (energy units)."""
        return pair_energy_sum(self.potential, self.space, q, self.pairs(q), self.species)

    def pairs(self, q: Positions) -> Pairs:
        """The interacting pairs `(i, j, mask)`: from `neighbors` if set, else all pairs."""
        if self.neighbors is None:
            return all_pairs(q.shape[0])
        return self.neighbors.i, self.neighbors.j, self.neighbors.mask()

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
