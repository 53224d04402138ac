"""Whole-system energy terms: the interface, sums with `+`, exclusions, and the strain virial."""

import abc
from collections import deque

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Bool, Float, Int
import numpy as np

from .._core._rows import pair_difference
from .._core._types import Anything, FloatScalar, Positions
from ._space import AbstractSpace

Pairs = tuple[Int[Array, " m"], Int[Array, " m"], Bool[Array, " m"]]


def all_pairs(n: int) -> Pairs:
    """Every pair i < j of `n` particles, as `(i, j, mask)` with shape `(n(n−1)/2,)` each.

    **Example:** `i, j, mask = sciad.md.all_pairs(4)  # 6 pairs`
    """
    i, j = np.triu_indices(n, k=1)
    return jnp.asarray(i), jnp.asarray(j), jnp.ones(i.shape, dtype=bool)


def concrete(x: Anything) -> np.ndarray | None:
    """`x` as a NumPy array if its value is known (not traced), else `None`."""
    try:
        return np.asarray(x)
    except (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError):
        return None


class Exclusions(eqx.Module):
    """Pairs of particles left out of the non-bonded pair sums (bonded neighbours).

    [`MDSystem`][sciad.md.MDSystem] removes these pairs from its pair list (all pairs
    or a neighbour list) with a mask, so pair potentials and the real-space part of
    [`Ewald`][sciad.md.Ewald] skip them; `Ewald` also subtracts their reciprocal-space
    interaction. The pairs are stored once (i < j, sorted, unique) together with a
    padded per-particle table of partners, shape `(n_max, max_partners)`, so masking a
    list of m pairs costs O(m · max_partners), with no n × n matrix. Build it outside
    `jit` (the topology is static; its values are read with NumPy).

    **Arguments:** `pairs`: integer array-like of shape `(n_excl, 2)` (any order, any
    duplicates; `(0, 2)` for none).

    **Example:**

    ```python
    excl = sciad.md.Exclusions(jnp.array([[0, 1], [1, 2], [0, 2]]))
    chain = sciad.md.Exclusions.from_bonds(jnp.array([[0, 1], [1, 2], [2, 3]]), separation=3)
    ```
    """

    pairs: Int[Array, "m 2"]
    table: Int[Array, "k w"]

    def __init__(self, pairs: Int[ArrayLike, "m 2"]):
        p = _index_array("Exclusions pairs", pairs, 2)
        if np.any(p[:, 0] == p[:, 1]):
            raise ValueError("Exclusions pairs must join two different particles (i != j).")
        p = np.unique(np.sort(p, axis=1), axis=0).reshape(-1, 2)
        k = int(p.max()) + 1 if len(p) else 1
        partners: list[list[int]] = [[] for _ in range(k)]
        for a, b in p:
            partners[a].append(int(b))
            partners[b].append(int(a))
        w = max(1, max(len(x) for x in partners))
        table = np.full((k, w), -1, dtype=np.int32)
        for a, x in enumerate(partners):
            table[a, : len(x)] = x
        self.pairs = jnp.asarray(p, dtype=jnp.int32)
        self.table = jnp.asarray(table)

    @classmethod
    def from_bonds(cls, bonds: Int[ArrayLike, "nb 2"], separation: int = 3) -> "Exclusions":
        """All pairs at most `separation` bonds apart in the bond graph.

        `separation=3` excludes 1-2, 1-3 and 1-4 pairs (the usual force-field choice
        when the dihedral terms carry the 1-4 interaction), 2 excludes 1-2 and 1-3.

        **Arguments:** `bonds`: shape `(nb, 2)` integer pairs; `separation` ≥ 1.

        **Returns:** an `Exclusions`.

        **Example:** `sciad.md.Exclusions.from_bonds(jnp.array([[0, 1], [1, 2]]), separation=2)`
        """
        b = _index_array("bonds", bonds, 2)
        if not isinstance(separation, int) or separation < 1:
            raise ValueError(f"separation must be an int >= 1, got {separation!r}.")
        k = int(b.max()) + 1 if len(b) else 0
        graph: list[list[int]] = [[] for _ in range(k)]
        for a, c in b:
            graph[a].append(int(c))
            graph[c].append(int(a))
        found = []
        for start in range(k):
            depth = {start: 0}
            queue = deque([start])
            while queue:
                u = queue.popleft()
                if depth[u] == separation:
                    continue
                for v in graph[u]:
                    if v not in depth:
                        depth[v] = depth[u] + 1
                        queue.append(v)
            found.extend((start, v) for v in depth if v > start)
        return cls(np.asarray(found, dtype=np.int64).reshape(-1, 2))

    def excluded(self, i: Int[Array, " m"], j: Int[Array, " m"]) -> Bool[Array, " m"]:
        """Whether each listed pair `(i[k], j[k])` is excluded (either order).

        **Arguments:** `i`, `j`: shape `(m,)` particle indices (a padding sentinel is
        allowed: it is never excluded).

        **Returns:** shape `(m,)`, bool.

        **Example:** `keep = mask & ~excl.excluded(i, j)`
        """
        k = self.table.shape[0]
        row = self.table[jnp.clip(i, 0, k - 1)]
        return (i < k) & jnp.any(row == j.astype(row.dtype)[:, None], axis=1)

    def n_particles_needed(self) -> int:
        """One more than the largest excluded index: the system must have at least this many.

        **Example:** `assert excl.n_particles_needed() <= n`
        """
        return 0 if self.pairs.shape[0] == 0 else self.table.shape[0]


def _index_array(name: str, x: Anything, width: int) -> np.ndarray:
    """A concrete `(m, width)` array of non-negative integers, or a precise error."""
    a = concrete(x)
    if a is None:
        raise ValueError(f"{name} must be concrete (build the topology outside jit).")
    if a.ndim != 2 or a.shape[1] != width:
        raise ValueError(f"{name} must have shape (m, {width}), got {a.shape}.")
    if a.size and not np.issubdtype(a.dtype, np.integer):
        raise TypeError(f"{name} must be integers, got dtype {a.dtype}.")
    a = a.astype(np.int64)
    if np.any(a < 0):
        raise ValueError(f"{name} must be non-negative particle indices.")
    return a


class AbstractPotential(eqx.Module):
    """A whole-system energy term U(q), e.g. a pair potential, bonded terms or Ewald.

    Implement [`energy`][sciad.md.AbstractPotential.energy] (the total energy of the
    configuration) and [`range`][sciad.md.AbstractPotential.range] (how far apart two
    particles can interact through the pair list, which a neighbour list must cover:
    0 for bonded terms). Terms add with `+` into a
    [`PotentialSum`][sciad.md.PotentialSum]; [`MDSystem`][sciad.md.MDSystem] takes any
    term or sum. Forces are −∂U/∂q by autodiff, and the virial −∂U/∂ε is the strain
    derivative by autodiff (override [`virial`][sciad.md.AbstractPotential.virial] for a
    faster formula). A pair potential is the special case
    [`AbstractPairPotential`][sciad.md.AbstractPairPotential]: write one pair.

    **Example:**

    ```python
    class Tether(sciad.md.AbstractPotential):   # each particle tied to the origin
        k: jax.Array = eqx.field(converter=jnp.asarray)

        def energy(self, space, positions, pairs=None, species=None, exclusions=None):
            return 0.5 * self.k * jnp.sum(positions**2)

        def range(self):
            return 0.0

    system = sciad.md.MDSystem(space, sciad.md.LennardJones(1.0, 1.0) + Tether(0.1), masses)
    ```
    """

    @abc.abstractmethod
    def energy(
        self,
        space: AbstractSpace,
        positions: Positions,
        pairs: Pairs | None = None,
        species: Int[Array, " n"] | None = None,
        exclusions: Exclusions | None = None,
    ) -> FloatScalar:
        """The energy of the configuration (energy units), a scalar.

        **Arguments:**

        - `space`: how displacements are measured.
        - `positions`: shape `(n, d)` (length units).
        - `pairs`: `(i, j, mask)`, the non-bonded pairs to sum over (excluded pairs
          already masked out); all pairs when `None`.
        - `species`: shape `(n,)` integer species, or `None`.
        - `exclusions`: the excluded pairs, or `None`.

        **Returns:** a scalar (energy units).
        """

    @abc.abstractmethod
    def range(self) -> float:
        """The largest pair distance this term reads from the pair list (length units).

        A neighbour list's cut-off must be at least this. 0 for terms that use no pair
        list (bonded terms), `inf` for untruncated pair potentials.
        """

    def check_system(self, space: AbstractSpace, n_particles: int) -> None:
        """Raise a precise error if this term cannot act on `n_particles` in `space`.

        [`MDSystem`][sciad.md.MDSystem] calls it at construction (before any tracing).
        The default accepts everything.

        **Arguments:** `space`, `n_particles`.

        **Returns:** nothing.
        """

    def n_species(self) -> int | None:
        """How many species this term's `(n_species, n_species)` parameters cover, or
        `None` if it has no per-species parameters (the default).
        [`MDSystem`][sciad.md.MDSystem] requires species labels in `[0, n_species)`.

        **Returns:** an int or `None`.
        """
        return None

    def virial(
        self,
        space: AbstractSpace,
        positions: Positions,
        pairs: Pairs | None = None,
        species: Int[Array, " n"] | None = None,
        exclusions: Exclusions | None = None,
    ) -> Float[Array, "d d"]:
        """The virial W_ab = −∂U/∂ε_ab under a homogeneous strain of positions and box.

        Positions map to (I + ε) q and the cell's lattice vectors to (I + ε) a, so a
        `PeriodicBox` becomes a `TriclinicBox` under shear (see
        [`strain_space`][sciad.md.strain_space]); the derivative is taken at ε = 0 by
        reverse-mode autodiff (one gradient of the energy). Reference: Thompson,
        Plimpton & Mattson, J. Chem. Phys. 131, 154107 (2009) (the virial of many-body
        and long-range terms); Louwerse & Baerends, Chem. Phys. Lett. 421, 138 (2006).

        **Arguments:** as [`energy`][sciad.md.AbstractPotential.energy].

        **Returns:** shape `(d, d)` (energy units).
        """
        d = positions.shape[1]
        eye = jnp.eye(d, dtype=positions.dtype)

        def strained(eps: Array) -> Array:
            f = eye + eps
            return self.energy(strain_space(space, f), positions @ f.T, pairs, species, exclusions)

        return -jax.grad(strained)(jnp.zeros((d, d), positions.dtype))

    def __add__(self, other: "AbstractPotential") -> "PotentialSum":
        if not isinstance(other, AbstractPotential):
            return NotImplemented
        return PotentialSum(_terms(self) + _terms(other))

    def __radd__(self, other: Anything) -> "AbstractPotential":
        if isinstance(other, int) and other == 0:  # sum([...]) starts from 0
            return self
        return NotImplemented


def _terms(p: AbstractPotential) -> tuple[AbstractPotential, ...]:
    return p.terms if isinstance(p, PotentialSum) else (p,)


class PotentialSum(AbstractPotential):
    """The sum of energy terms, built by `a + b` (e.g. pair + bonded + Ewald).

    Its energy, virial and checks are the sums over the terms; its range is the largest.
    (Two pair potentials add into a [`PairSum`][sciad.md.PairSum], still a pair
    potential.)

    **Arguments:** `terms`: a tuple of `AbstractPotential`s.

    **Example:** `lj + sciad.md.HarmonicBond(bonds, k=100.0, r0=1.0) + ewald`
    """

    terms: tuple[AbstractPotential, ...]

    def energy(
        self,
        space: AbstractSpace,
        positions: Positions,
        pairs: Pairs | None = None,
        species: Int[Array, " n"] | None = None,
        exclusions: Exclusions | None = None,
    ) -> FloatScalar:
        """Σ terms' energies (energy units)."""
        return sum(
            (t.energy(space, positions, pairs, species, exclusions) for t in self.terms[1:]),
            self.terms[0].energy(space, positions, pairs, species, exclusions),
        )

    def range(self) -> float:
        """The largest range of the terms (length units)."""
        return max(t.range() for t in self.terms)

    def __check_init__(self):
        if not isinstance(self.terms, tuple) or not self.terms:
            raise ValueError("PotentialSum.terms must be a non-empty tuple of potentials.")
        for t in self.terms:
            if not isinstance(t, AbstractPotential):
                raise TypeError(
                    "PotentialSum.terms must all be sciad.md.AbstractPotential; got "
                    f"{type(t).__name__}."
                )
        self.n_species()

    def check_system(self, space: AbstractSpace, n_particles: int) -> None:
        """Check every term."""
        for t in self.terms:
            t.check_system(space, n_particles)

    def n_species(self) -> int | None:
        """The terms' common number of species (`None` if none has per-species
        parameters); `ValueError` if two terms disagree."""
        counts = {c for c in (t.n_species() for t in self.terms) if c is not None}
        if len(counts) > 1:
            raise ValueError(
                f"The terms have per-species parameters for different numbers of species "
                f"{sorted(counts)}; every matrix must be (n_species, n_species) for one "
                "n_species."
            )
        return counts.pop() if counts else None

    def virial(
        self,
        space: AbstractSpace,
        positions: Positions,
        pairs: Pairs | None = None,
        species: Int[Array, " n"] | None = None,
        exclusions: Exclusions | None = None,
    ) -> Float[Array, "d d"]:
        """Σ terms' virials (each its own way: analytic for pair terms), shape `(d, d)`."""
        return sum(
            (t.virial(space, positions, pairs, species, exclusions) for t in self.terms[1:]),
            self.terms[0].virial(space, positions, pairs, species, exclusions),
        )


def strain_space(space: AbstractSpace, deformation: Float[Array, "d d"]) -> AbstractSpace:
    """The space deformed by the matrix F = I + ε: every lattice vector a ↦ F a.

    The space's own [`deformed`][sciad.md.AbstractSpace.deformed]: `FreeSpace` is
    unchanged; a periodic cell becomes the `TriclinicBox` with cell · Fᵀ (rows are
    lattice vectors). Differentiable in F; used for the virial.

    **Arguments:** `space`; `deformation` F, shape `(d, d)`.

    **Returns:** an `AbstractSpace`.

    **Example:** `sheared = sciad.md.strain_space(box, jnp.eye(3).at[0, 1].set(0.1))`
    """
    return space.deformed(deformation)


def concrete_range(potential: AbstractPotential) -> float | None:
    """The potential's `range()` as a float, or `None` while it depends on traced values."""
    try:
        return float(potential.range())
    except (jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError):
        return None


def check_range(potential: AbstractPotential, space: AbstractSpace) -> None:
    """Refuse, before tracing, a term whose range reaches past half the periodic box.

    Minimum image sums each pair once, at its nearest image, which is the periodic
    sum only while every term's range (a pair potential's cut-off, Ewald's real-space
    cut-off; `inf` for an untruncated pair potential) is below half the box's smallest
    perpendicular width. Terms whose range depends on traced parameters are skipped.

    **Arguments:** `potential` (a term or a sum), `space`.

    **Returns:** nothing; raises `ValueError` naming the term, its range and the width.
    """
    for term in _terms(potential):
        reach = concrete_range(term)
        if reach is None:
            continue
        if reach == float("inf") and space.periodic:
            raise ValueError(
                f"{type(term).__name__} has infinite range, but in a periodic space "
                "(minimum image) a pair interaction must be cut off below half the box's "
                "smallest width; wrap it in sciad.md.Truncated(potential, cutoff)."
            )
        space.check_range(reach, f"The {type(term).__name__} cut-off")


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
    # Displacements depend on r_i − r_j only; the difference primitive keeps the
    # force's scatter-add cheap on CPU and under vmap (see sciad/_core/_rows.py).
    diff = pair_difference(positions, ii, jj)
    dr = jax.vmap(space.displacement)(diff, jnp.zeros_like(diff))
    return ii, jj, dr, mask & (i != j)


def norm_or_zero(dr: Float[Array, "*b d"]) -> Float[Array, "*b"]:
    """|dr| over the last axis, 0 at dr = 0 with a zero (never NaN) gradient there."""
    r2 = jnp.sum(dr**2, axis=-1)
    nonzero = r2 > 0
    return jnp.where(nonzero, jnp.sqrt(jnp.where(nonzero, r2, 1.0)), 0.0)
