"""Pair potentials: the user writes the energy of one pair; sciad lifts it to the system."""

import abc
from collections.abc import Callable
from typing import ClassVar, Literal

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int
import numpy as np

from .._core._geometry import safe_norm
from .._core._types import FloatScalar, Positions, RealScalarLike
from .._core._validate import (
    check_finite,
    check_labels,
    check_positive,
    check_real,
    is_concrete,
)
from ._potential import (
    AbstractPotential,
    all_pairs,
    Exclusions,
    pair_displacements,
    Pairs,
    PotentialSum,
)
from ._space import AbstractSpace


def _param():
    return eqx.field(converter=jnp.asarray)


def _check_parameters(
    pot: "AbstractPairPotential",
    positive: tuple[str, ...] = (),
    nonnegative: tuple[str, ...] = (),
    finite: tuple[str, ...] = (),
) -> None:
    """Each named parameter a scalar or an `(n_species, n_species)` matrix, finite, and
    > 0 / >= 0 where asked (values checked when concrete); matrices symmetric."""
    owner = type(pot).__name__
    for names, zero_ok in ((positive, False), (nonnegative, True)):
        for name in names:
            check_positive(getattr(pot, name), f"{owner}.{name}", zero_ok=zero_ok, shape=None)
    for name in finite:
        check_real(getattr(pot, name), f"{owner}.{name}")
        check_finite(getattr(pot, name), f"{owner}.{name}")
    for name in (*positive, *nonnegative, *finite):
        x = getattr(pot, name)
        if np.ndim(x) not in (0, 2) or (np.ndim(x) == 2 and x.shape[0] != x.shape[1]):
            raise ValueError(
                f"{owner}.{name} must be a scalar or an (n_species, n_species) matrix; got "
                f"shape {np.shape(x)}. Mix per-species values into matrices, e.g. with "
                "sciad.md.lorentz_berthelot."
            )
        if np.ndim(x) == 2 and is_concrete(x) and not np.array_equal(x, np.swapaxes(x, 0, 1)):
            raise ValueError(
                f"{owner}.{name} must be a symmetric matrix (the pair of species (a, b) is "
                "the pair (b, a))."
            )
    pot.n_species()


def check_static_length(x: object, name: str) -> None:
    """A cut-off radius: a Python number (static: it fixes neighbour-list sizes), finite
    and > 0."""
    if not isinstance(x, (int, float, np.integer, np.floating)) or isinstance(x, bool):
        raise TypeError(
            f"{name} must be a Python number (it is static: it fixes neighbour-list "
            f"sizes); got {type(x).__name__}."
        )
    check_positive(x, name)


class AbstractPairPotential(AbstractPotential):
    """The energy of one pair as a function of its distance r.

    Implement [`pair_energy`][sciad.md.AbstractPairPotential.pair_energy] for a single
    pair with scalar parameters; sciad vmaps it over pairs, applies the cut-off and
    masks (with gradient-safe double `where`), and mixes species. Parameters may also be
    `(n_species, n_species)` matrices: the pair's entry `[s_i, s_j]` is used. Potentials
    add with `+`: two pair potentials give a [`PairSum`][sciad.md.PairSum] (still a pair
    potential); a pair potential plus any other
    [`AbstractPotential`][sciad.md.AbstractPotential] (bonded terms, Ewald) gives a
    [`PotentialSum`][sciad.md.PotentialSum]. A pair potential is an
    `AbstractPotential` whose energy is Σ over the system's pair list (excluded pairs
    masked out) and whose virial is the analytic −Σ r_a r_b u′(r)/r.

    **Example:**

    ```python
    class Harmonic(sciad.md.AbstractPairPotential):
        k: jax.Array = eqx.field(converter=jnp.asarray)
        r0: jax.Array = eqx.field(converter=jnp.asarray)

        def pair_energy(self, r):
            return 0.5 * self.k * (r - self.r0) ** 2
    ```
    """

    @abc.abstractmethod
    def pair_energy(self, r: FloatScalar) -> FloatScalar:
        """Energy (energy units) of one pair at distance `r` > 0 (length units), scalar."""

    def range(self) -> float:
        """The interaction range (length units): `inf` unless truncated."""
        return float("inf")

    def energy(
        self,
        space: AbstractSpace,
        positions: Positions,
        pairs: Pairs | None = None,
        species: Int[Array, " n"] | None = None,
        exclusions: Exclusions | None = None,
    ) -> FloatScalar:
        """Σ over `pairs` (all pairs if `None`) of u(r), via
        [`pair_energy_sum`][sciad.md.pair_energy_sum] (energy units). `exclusions` are
        not read: the system masks excluded pairs out of `pairs`."""
        if pairs is None:
            pairs = all_pairs(positions.shape[0])
        return pair_energy_sum(self, space, positions, pairs, species)

    def virial(
        self,
        space: AbstractSpace,
        positions: Positions,
        pairs: Pairs | None = None,
        species: Int[Array, " n"] | None = None,
        exclusions: Exclusions | None = None,
    ) -> Float[Array, "d d"]:
        """The analytic pair virial W_ab = −Σ r_a r_b u′(r)/r over `pairs`, shape `(d, d)`.

        Equal to the strain derivative −∂U/∂ε_ab of the pair energy; masked pairs
        contribute exactly zero.
        """
        if pairs is None:
            pairs = all_pairs(positions.shape[0])
        ii, jj, dr, real = pair_displacements(space, positions, pairs)
        r = safe_norm(dr, real)
        du = per_pair(lambda pot: jax.grad(pot.pair_energy), self, species, ii, jj, r)
        w = jnp.where(real, -du / r, 0.0)
        return jnp.einsum("p,pa,pb->ab", w, dr, dr)

    def __add__(self, other: AbstractPotential) -> AbstractPotential:
        if isinstance(other, AbstractPairPotential):
            return PairSum((self, other))
        if isinstance(other, AbstractPotential):
            return PotentialSum(
                (self, *(other.terms if isinstance(other, PotentialSum) else (other,)))
            )
        return NotImplemented

    def n_species(self) -> int | None:
        """The size of the `(n_species, n_species)` parameter matrices (every 2-D
        parameter), or `None` if all are scalars; `ValueError` if they differ or are not
        square."""
        shapes = {np.shape(x) for x in jax.tree.leaves(self) if np.ndim(x) == 2}
        if not shapes:
            return None
        if len(shapes) > 1 or any(a != b for a, b in shapes):
            raise ValueError(
                f"{type(self).__name__}: per-species parameters must be square "
                f"(n_species, n_species) matrices of one size; got shapes {sorted(shapes)}."
            )
        return shapes.pop()[0]

    def for_species(self, si: jax.Array, sj: jax.Array) -> "AbstractPairPotential":
        """This potential with every `(n_species, n_species)` parameter indexed at `[si, sj]`."""
        return jax.tree.map(lambda x: x[si, sj] if jnp.ndim(x) == 2 else x, self)


class PairSum(AbstractPairPotential):
    """The sum of pair potentials, built by `a + b`.

    **Example:** `sciad.md.LennardJones(1.0, 1.0) + sciad.md.Yukawa(0.5, 2.0)`
    """

    terms: tuple[AbstractPairPotential, ...]

    def __check_init__(self):
        if not isinstance(self.terms, tuple) or not self.terms:
            raise ValueError("PairSum.terms must be a non-empty tuple of pair potentials.")
        for t in self.terms:
            if not isinstance(t, AbstractPairPotential):
                raise TypeError(
                    "PairSum.terms must all be sciad.md.AbstractPairPotential; got "
                    f"{type(t).__name__}."
                )
        self.n_species()

    def pair_energy(self, r: FloatScalar) -> FloatScalar:
        """Σ terms."""
        return sum((t.pair_energy(r) for t in self.terms[1:]), self.terms[0].pair_energy(r))

    def range(self) -> float:
        """The largest range of the terms."""
        return max(t.range() for t in self.terms)


class LennardJones(AbstractPairPotential):
    """Lennard-Jones 12-6: u(r) = 4ε[(σ/r)¹² − (σ/r)⁶].

    **Arguments:** `sigma` σ (length), `epsilon` ε (energy); scalars or
    `(n_species, n_species)` matrices (see [`lorentz_berthelot`][sciad.md.lorentz_berthelot]).
    Untruncated: wrap in [`Truncated`][sciad.md.Truncated] for a cut-off.
    Reference: Jones, Proc. R. Soc. A 106, 463 (1924).

    **Example:** `sciad.md.Truncated(sciad.md.LennardJones(sigma=1.0, epsilon=1.0), cutoff=2.5)`
    """

    sigma: jax.Array = _param()
    epsilon: jax.Array = _param()

    def __check_init__(self):
        _check_parameters(self, positive=("sigma",), nonnegative=("epsilon",))

    def pair_energy(self, r: FloatScalar) -> FloatScalar:
        """4ε[(σ/r)¹² − (σ/r)⁶]."""
        x6 = (self.sigma / r) ** 6
        return 4 * self.epsilon * (x6 * x6 - x6)


class Morse(AbstractPairPotential):
    """Morse: u(r) = D[(1 − e^{−α(r − r₀)})² − 1], minimum −D at r₀, zero at infinity.

    **Arguments:** `depth` D (energy), `alpha` α (1/length), `r0` r₀ (length).
    Reference: Morse, Phys. Rev. 34, 57 (1929).

    **Example:** `sciad.md.Morse(depth=1.0, alpha=5.0, r0=1.0)`
    """

    depth: jax.Array = _param()
    alpha: jax.Array = _param()
    r0: jax.Array = _param()

    def __check_init__(self):
        _check_parameters(self, positive=("alpha", "r0"), nonnegative=("depth",))

    def pair_energy(self, r: FloatScalar) -> FloatScalar:
        """D[(1 − e^{−α(r − r₀)})² − 1]."""
        return self.depth * ((1 - jnp.exp(-self.alpha * (r - self.r0))) ** 2 - 1)


class SoftSphere(AbstractPairPotential):
    """Soft sphere: u(r) = (ε/α)(1 − r/σ)^α for r < σ, else 0 (contact range σ).

    **Arguments:** `sigma` σ (length, the contact diameter), `epsilon` ε (energy),
    `alpha` α (dimensionless stiffness exponent, default 2: harmonic).
    Reference: Durian, Phys. Rev. Lett. 75, 4780 (1995).

    **Example:** `sciad.md.SoftSphere(sigma=1.0, epsilon=1.0)`
    """

    sigma: jax.Array = _param()
    epsilon: jax.Array = _param()
    alpha: jax.Array = eqx.field(converter=jnp.asarray, default=2.0)

    def __check_init__(self):
        _check_parameters(self, positive=("sigma", "alpha"), nonnegative=("epsilon",))

    def pair_energy(self, r: FloatScalar) -> FloatScalar:
        """(ε/α)(1 − r/σ)^α inside contact."""
        overlap = jnp.maximum(1 - r / self.sigma, 0.0)
        return self.epsilon / self.alpha * overlap**self.alpha

    def range(self) -> float:
        """σ (concrete values only)."""
        return float(np.max(np.asarray(self.sigma)))


class Yukawa(AbstractPairPotential):
    """Screened Coulomb (Yukawa): u(r) = A e^{−κr} / r.

    **Arguments:** `amplitude` A (energy·length), `kappa` κ (inverse screening
    length, 1/length). Reference: Yukawa, Proc. Phys.-Math. Soc. Japan 17, 48 (1935).

    **Example:** `sciad.md.Truncated(sciad.md.Yukawa(amplitude=1.0, kappa=2.0), cutoff=3.0)`
    """

    amplitude: jax.Array = _param()
    kappa: jax.Array = _param()

    def __check_init__(self):
        _check_parameters(self, nonnegative=("kappa",), finite=("amplitude",))

    def pair_energy(self, r: FloatScalar) -> FloatScalar:
        """A e^{−κr}/r."""
        return self.amplitude * jnp.exp(-self.kappa * r) / r


class GaussianCore(AbstractPairPotential):
    """Gaussian core: u(r) = ε exp(−(r/σ)²), bounded at r = 0.

    **Arguments:** `epsilon` ε (energy), `sigma` σ (length).
    Reference: Stillinger, J. Chem. Phys. 65, 3968 (1976).

    **Example:** `sciad.md.Truncated(sciad.md.GaussianCore(epsilon=1.0, sigma=1.0), cutoff=3.0)`
    """

    epsilon: jax.Array = _param()
    sigma: jax.Array = _param()

    def __check_init__(self):
        _check_parameters(self, positive=("sigma",), finite=("epsilon",))

    def pair_energy(self, r: FloatScalar) -> FloatScalar:
        """ε exp(−(r/σ)²)."""
        return self.epsilon * jnp.exp(-((r / self.sigma) ** 2))


class Truncated(AbstractPairPotential):
    """A pair potential cut off at r_c, optionally shifted.

    - `shift="none"`: u(r) for r < r_c, 0 beyond (energy jumps at r_c).
    - `shift="energy"`: u(r) − u(r_c): continuous energy, force jumps.
    - `shift="force"`: u(r) − u(r_c) − (r − r_c) u′(r_c): energy and force continuous.

    Reference: Allen & Tildesley, *Computer Simulation of Liquids* (2017), §2.8.

    **Arguments:** `potential` (an `AbstractPairPotential`), `cutoff` r_c (length,
    static: it fixes neighbour-list sizes), `shift` as above.

    **Example:** `sciad.md.Truncated(sciad.md.LennardJones(1.0, 1.0), cutoff=2.5, shift="force")`
    """

    potential: AbstractPairPotential
    cutoff: float = eqx.field(static=True)
    shift: Literal["none", "energy", "force"] = eqx.field(static=True, default="none")
    shifts: ClassVar[tuple[str, ...]] = ("none", "energy", "force")

    def __check_init__(self):
        if not isinstance(self.potential, AbstractPairPotential):
            raise TypeError(
                "Truncated.potential must be a sciad.md.AbstractPairPotential; got "
                f"{type(self.potential).__name__}."
            )
        if self.shift not in self.shifts:
            raise ValueError(f"shift must be one of {self.shifts}, got {self.shift!r}.")
        check_static_length(self.cutoff, "Truncated.cutoff")

    def pair_energy(self, r: FloatScalar) -> FloatScalar:
        """The truncated, shifted energy; zero at and beyond the cut-off."""
        rc = jnp.asarray(self.cutoff, dtype=jnp.result_type(r))
        inside = r < rc
        rs = jnp.where(inside, r, rc)  # double where: no gradient from the far branch
        u = self.potential.pair_energy(rs)
        if self.shift != "none":
            u = u - self.potential.pair_energy(rc)
        if self.shift == "force":
            du_rc = jax.grad(self.potential.pair_energy)(rc)
            u = u - (rs - rc) * du_rc
        return jnp.where(inside, u, 0.0)

    def range(self) -> float:
        """The cut-off r_c."""
        return self.cutoff


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


def per_pair(
    fn: Callable[[AbstractPairPotential], Callable],
    potential: AbstractPairPotential,
    species: Int[Array, " n"] | None,
    ii: Int[Array, " m"],
    jj: Int[Array, " m"],
    r: Float[Array, " m"],
) -> Float[Array, " m"]:
    """`fn(potential)(r)` for each pair, with the pair's species parameters if given."""
    n_species = potential.n_species()
    if species is None:
        if n_species is not None:
            raise ValueError(
                f"{type(potential).__name__} has ({n_species}, {n_species}) per-species "
                "parameters but no species were given."
            )
        return jax.vmap(fn(potential))(r)
    if n_species is not None:
        check_labels(species, "species", n_species)
    return jax.vmap(lambda a, b, x: fn(potential.for_species(a, b))(x))(species[ii], species[jj], r)


def wca(sigma: RealScalarLike, epsilon: RealScalarLike) -> Truncated:
    """The Weeks–Chandler–Andersen potential: LJ cut at 2^{1/6}σ and shifted up by ε.

    Purely repulsive; energy and force vanish continuously at r = 2^{1/6}σ.
    Reference: Weeks, Chandler & Andersen, J. Chem. Phys. 54, 5237 (1971).

    **Arguments:** `sigma` σ (length, a concrete scalar: it fixes the cut-off),
    `epsilon` ε (energy).

    **Returns:** a [`Truncated`][sciad.md.Truncated] Lennard-Jones, energy-shifted.

    **Example:** `sciad.md.wca(sigma=1.0, epsilon=1.0)`
    """
    check_positive(sigma, "wca sigma")
    cutoff = 2 ** (1 / 6) * float(np.asarray(sigma))
    return Truncated(
        LennardJones(jnp.asarray(sigma), jnp.asarray(epsilon)), cutoff=cutoff, shift="energy"
    )


def lorentz_berthelot(sigma: jax.Array, epsilon: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Lorentz–Berthelot mixing: σᵢⱼ = (σᵢ + σⱼ)/2, εᵢⱼ = √(εᵢ εⱼ).

    **Arguments:** `sigma`, `epsilon`: shape `(n_species,)` per-species values.

    **Returns:** `(sigma_ij, epsilon_ij)`, each `(n_species, n_species)`.
    Reference: Lorentz, Ann. Phys. 248, 127 (1881); Berthelot, C. R. 126, 1703 (1898).

    **Example:** `sciad.md.LennardJones(*sciad.md.lorentz_berthelot(jnp.array([1.0, 1.2]), jnp.array([1.0, 0.5])))`
    """
    sigma, epsilon = jnp.asarray(sigma), jnp.asarray(epsilon)
    if np.ndim(sigma) != 1 or np.shape(epsilon) != np.shape(sigma):
        raise ValueError(
            "lorentz_berthelot: sigma and epsilon must both have shape (n_species,); got "
            f"{np.shape(sigma)} and {np.shape(epsilon)}."
        )
    check_positive(sigma, "lorentz_berthelot sigma", shape=None)
    check_positive(epsilon, "lorentz_berthelot epsilon", zero_ok=True, shape=None)
    return (sigma[:, None] + sigma[None, :]) / 2, jnp.sqrt(epsilon[:, None] * epsilon[None, :])


def lj_tail_corrections(
    sigma: RealScalarLike, epsilon: RealScalarLike, cutoff: RealScalarLike, density: RealScalarLike
) -> tuple[jax.Array, jax.Array]:
    """Analytic long-range corrections of a plainly truncated LJ fluid (g(r) = 1 beyond r_c).

    Energy per particle: (8/3)πρεσ³[(1/3)(σ/r_c)⁹ − (σ/r_c)³];
    pressure: (16/3)πρ²εσ³[(2/3)(σ/r_c)⁹ − (σ/r_c)³].
    Reference: Allen & Tildesley (2017), §2.8, eqs. (2.144)–(2.145).

    **Arguments:** `sigma`, `epsilon`, `cutoff` r_c, number `density` ρ (1/length³).

    **Returns:** `(energy_per_particle, pressure)` corrections (energy; energy/length³).

    **Example:** `de, dp = sciad.md.lj_tail_corrections(1.0, 1.0, 2.5, 0.84)`
    """
    for name, x, zero_ok in (
        ("sigma", sigma, False),
        ("epsilon", epsilon, True),
        ("cutoff", cutoff, False),
        ("density", density, True),
    ):
        check_positive(x, f"lj_tail_corrections {name}", zero_ok=zero_ok, shape=None)
    s3 = jnp.asarray(sigma) ** 3
    x3 = (jnp.asarray(sigma) / cutoff) ** 3
    e = (8 / 3) * jnp.pi * density * epsilon * s3 * (x3**3 / 3 - x3)
    p = (16 / 3) * jnp.pi * density**2 * epsilon * s3 * (2 * x3**3 / 3 - x3)
    return jnp.asarray(e), jnp.asarray(p)
