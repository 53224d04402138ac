"""An MD system as a separable model: space + potential + masses (+ species, exclusions)."""

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Int
import numpy as np

from .._core._integrator import AbstractIntegrator
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


def _what(x: Anything) -> str:
    """A short description of a wrong argument for a message."""
    if isinstance(x, (tuple, list)):
        return f"a {type(x).__name__} of {len(x)}"
    if eqx.is_array_like(x) and not isinstance(x, (str, bytes)):
        return f"one array of shape {np.shape(x)}"
    return f"{type(x).__name__} {x!r}"[:80]


def _is_positions(x: Anything) -> bool:
    return eqx.is_array_like(x) and not isinstance(x, (str, bytes)) and np.ndim(x) == 2


def _part(x: Anything, what: str, owner: str, n: int, d: int | None, index: int) -> Array:
    """`x` if it is one `(n, d)` array (d: the space's dimension, any if `None`), else a
    `TypeError`/`ValueError` that names `owner`, `what` was expected and what came.
    Shapes only: safe under tracing."""
    if isinstance(x, (tuple, list)) and len(x) == 2 and all(_is_positions(a) for a in x):
        raise TypeError(
            f"{owner} takes the {what}, one array of shape (n, d); got a state "
            f"y = (q, p) (two arrays of shape {np.shape(x[0])}). Pass y[{index}]."
        )
    if isinstance(x, (tuple, list)) or not eqx.is_array_like(x) or isinstance(x, (str, bytes)):
        raise TypeError(f"{owner} takes the {what}, one array of shape (n, d); got {_what(x)}.")
    shape = np.shape(x)
    if len(shape) != 2 or shape[0] != n or (d is not None and shape[1] != d):
        want = f"({n}, d)" if d is None else f"({n}, {d}), d being the space's dimension"
        raise ValueError(
            f"{owner}: the {what} must have shape {want}, n = len(MDSystem.masses); "
            f"got shape {shape}."
        )
    return x


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
        # A NumPy False stays concrete under jit, so no run-time check (a host callback,
        # which also keeps the program out of JAX's persistent cache) enters the program.
        cleared = np.zeros(np.shape(nbrs.did_overflow), np.bool_)
        nbrs = eqx.tree_at(lambda x: x.did_overflow, nbrs, cleared)
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
        """U(q) (energy units) of the positions `q`, shape `(n, d)`: pair terms sum
        over [`pairs`][sciad.md.MDSystem.pairs].

        A state `y = (q, p)` or an array of another shape is refused (`TypeError`,
        `ValueError`). With concrete positions, coincident interacting particles are
        refused first (see [`check_positions`][sciad.md.MDSystem.check_positions]).

        **Example:** `u = system.potential_energy(traj.y1[0])`
        """
        q = self.positions_array(q, "MDSystem.potential_energy")
        self.check_positions(q)
        return self.potential.energy(self.space, q, self.pairs(q), self.species, self.exclusions)

    def positions_array(self, q: Anything, owner: str = "MDSystem") -> Positions:
        """`q` if it is the positions of this system: one array of shape `(n, d)`, with
        `n = len(masses)` and `d` the space's dimension. Otherwise a `TypeError` (a
        state `y = (q, p)`, a non-array) or `ValueError` (a shape) naming `owner`.

        **Example:** `q = system.positions_array(q, "my_observable")`
        """
        return _part(q, "positions q", owner, self.masses.shape[0], self.space.dimension(), 0)

    def momenta_array(self, p: Anything, owner: str = "MDSystem") -> Positions:
        """`p` if it is the momenta of this system (as
        [`positions_array`][sciad.md.MDSystem.positions_array] for positions).

        **Example:** `p = system.momenta_array(p, "my_observable")`
        """
        return _part(p, "momenta p", owner, self.masses.shape[0], self.space.dimension(), 1)

    def split_state(self, y: Anything, owner: str = "MDSystem") -> tuple[Positions, Positions]:
        """`(q, p)` if `y` is a state of this system: a pair of arrays, positions and
        momenta, each of shape `(n, d)`. Otherwise a `TypeError` or `ValueError` that
        names `owner` and says what was expected (one array alone is refused: pass
        `(q, p)`).

        **Example:** `q, p = system.split_state(y, "my_observable")`
        """
        if not isinstance(y, (tuple, list)) or len(y) != 2:
            raise TypeError(
                f"{owner} takes the state y = (q, p), positions and momenta, each of shape "
                f"(n, d), as a run carries it; got {_what(y)}. Pass (q, p) (the positions "
                "alone go to MDSystem.potential_energy(q), the momenta alone to "
                "MDSystem.kinetic_energy(p))."
            )
        q = _part(y[0], "positions y[0] (q)", owner, *self._nd(), 0)
        p = _part(y[1], "momenta y[1] (p)", owner, *self._nd(), 1)
        if np.shape(q) != np.shape(p):
            raise ValueError(
                f"{owner}: the positions y[0] and momenta y[1] must have one shape; got "
                f"{np.shape(q)} and {np.shape(p)}."
            )
        return q, p

    def _nd(self) -> tuple[int, int | None]:
        return self.masses.shape[0], self.space.dimension()

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
        """K = Σ |pᵢ|²/(2mᵢ) (energy units) of the momenta `p`, shape `(n, d)`.

        A state `y = (q, p)` is refused (`TypeError`: pass `y[1]`).

        **Example:** `k = system.kinetic_energy(traj.y1[1])`
        """
        p = self.momenta_array(p, "MDSystem.kinetic_energy")
        return jnp.sum(p**2 / (2 * self.masses[:, None]))

    def energy(self, y: State) -> FloatScalar:
        """The total energy H(q, p) = K(p) + U(q) (energy units) of the state
        `y = (q, p)`.

        One array alone is refused (`TypeError`): the energy needs both halves.

        **Example:** `sciad.SaveAt(steps=100, fn=lambda t, y, m: m.energy(y))`
        """
        q, p = self.split_state(y, "MDSystem.energy")
        return self.kinetic_energy(p) + self.potential_energy(q)

    def temperature(
        self,
        y: State,
        *,
        integrator: AbstractIntegrator | None = None,
        kB: RealScalarLike = 1.0,
    ) -> FloatScalar:
        """The kinetic temperature T = 2K_f / (kB N_f) of the state `y = (q, p)`.

        The degrees of freedom N_f follow the ensemble, which the integrator that
        sampled `y` answers ([`conserves_momentum`][sciad.AbstractIntegrator.conserves_momentum]):

        - it conserves the total momentum P = Σpᵢ (NVE integrators such as
          `sciad.VelocityVerlet`, [`NoseHooverChain`][sciad.md.NoseHooverChain], and
          `integrator=None`, the NVE default of `sciad.simulate`): N_f = n·d − d, and
          K_f = K − |P|²/(2Σmᵢ), the kinetic energy about the centre of mass;
        - it does not ([`LangevinBAOAB`][sciad.md.LangevinBAOAB],
          [`BrownianDynamics`][sciad.md.BrownianDynamics]): N_f = n·d and K_f = K.

        Counting n·d − d under a Langevin thermostat would read T high by the factor
        n/(n − 1) (0.2% for 500 particles). `sciad.md` has no constraints or frozen
        atoms, which would remove more degrees of freedom.

        **Arguments:**

        - `y`: the state `(q, p)`, each shape `(n, d)`, as a run carries it (one array
          alone is refused with a `TypeError`).
        - `integrator`: the integrator that ran (keyword), or `None` for NVE.
        - `kB`: Boltzmann's constant in the units of the energy per temperature
          (keyword, > 0); 1 gives T in energy units (kB·T).

        **Returns:** a scalar (temperature units).

        **Example:**

        ```python
        nvt = sciad.md.LangevinBAOAB(friction=1.0, kT=1.5, key=jax.random.key(0))
        temp = sciad.SaveAt(steps=10, fn=lambda t, y, m: m.temperature(y, integrator=nvt))
        ```
        """
        owner = "MDSystem.temperature"
        q, p = self.split_state(y, owner)
        if integrator is not None and not isinstance(integrator, AbstractIntegrator):
            raise TypeError(
                f"{owner}: integrator must be the sciad.AbstractIntegrator instance that "
                "ran the state (e.g. sciad.md.LangevinBAOAB(...)), or None for NVE; got "
                f"{integrator!r}."
            )
        check_positive(kB, f"{owner} kB")
        n, d = np.shape(p)
        kinetic = self.kinetic_energy(p)
        if integrator is None or integrator.conserves_momentum():
            n_dof = n * d - d
            total = jnp.sum(p, axis=0)
            kinetic = kinetic - jnp.sum(total**2) / (2 * jnp.sum(self.masses))
        else:
            n_dof = n * d
        if n_dof < 1:
            raise ValueError(
                f"{owner}: a single particle whose total momentum is conserved has no "
                "degrees of freedom left (n·d − d = 0), so no temperature."
            )
        return 2 * kinetic / (kB * n_dof)

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
