"""Coulomb interactions in periodic cells by Ewald summation."""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, Int
import numpy as np

from .._core._geometry import safe_norm
from .._core._linalg import small_inv
from .._core._types import FloatScalar, FloatVector, Positions, RealScalarLike
from ._potential import (
    AbstractPotential,
    all_pairs,
    concrete,
    Exclusions,
    norm_or_zero,
    pair_displacements,
    Pairs,
)
from ._space import AbstractSpace


def _kmax(k: int | tuple[int, int, int]) -> tuple[int, int, int]:
    if isinstance(k, (int, np.integer)):
        if not isinstance(k, bool):
            return (int(k), int(k), int(k))
        raise TypeError(f"kmax must be an int or a tuple of 3 ints, got {k!r}.")
    t = tuple(k)
    if len(t) != 3 or not all(isinstance(x, (int, np.integer)) for x in t):
        raise TypeError(f"kmax must be an int or a tuple of 3 ints, got {k!r}.")
    return (int(t[0]), int(t[1]), int(t[2]))


def _half_space(kmax: tuple[int, int, int]) -> np.ndarray:
    """Integer vectors m with |m_a| ≤ kmax_a, one of each pair ±m, m ≠ 0: shape (K, 3)."""
    axes = [np.arange(-k, k + 1) for k in kmax]
    m = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 3)
    first = (m[:, 0] > 0) | ((m[:, 0] == 0) & (m[:, 1] > 0))
    first |= (m[:, 0] == 0) & (m[:, 1] == 0) & (m[:, 2] > 0)
    return m[first]


def _check_periodic(space: AbstractSpace) -> None:
    if not space.periodic:
        raise TypeError(
            "Ewald summation needs a periodic space (PeriodicBox or TriclinicBox); got "
            f"{type(space).__name__}. For an open system sum the bare Coulomb pairs instead."
        )


class Ewald(AbstractPotential):
    """Coulomb energy of point charges in a periodic cell, by Ewald summation.

    U = k_e [ Σ_{i<j, r<r_c} qᵢqⱼ erfc(αr)/r                  (real space, minimum image)
            + (2π/V) Σ_{k≠0} e^{−k²/4α²}/k² |Σⱼ qⱼ e^{ik·rⱼ}|²   (reciprocal space)
            − (α/√π) Σᵢ qᵢ²                                     (self energy)
            − Σ_{excluded i<j} qᵢqⱼ erf(αr)/r                   (excluded pairs)
            − π Q²/(2Vα²) ]                                     (neutralising background)

    The real-space sum runs over the system's pair list (all pairs or a neighbour list,
    excluded pairs masked out) within the cut-off r_c, with the double-`where` trick at
    masked pairs and at r_c. Reciprocal vectors k = 2π m · cell⁻ᵀ run over the static
    integer set |m_a| ≤ kmax_a (half of it, using k ↔ −k symmetry), so `PeriodicBox` and
    `TriclinicBox` are treated alike and the box stays differentiable (strain virial,
    barostats). Excluded pairs (bonded neighbours) get no Coulomb interaction at all
    with their nearest image. A net charge Q ≠ 0 is neutralised by a uniform background
    (the standard convention: the energy is then independent of α); the term vanishes
    for neutral systems. 3-D only. Gaussian units by default (`coulomb` k_e = 1); e.g.
    k_e = 138.935458 kJ mol⁻¹ nm e⁻² or 332.0637 kcal mol⁻¹ Å e⁻².

    Accuracy: the real-space error ∝ erfc(α r_c), the reciprocal one ∝ e^{−k_c²/4α²}
    with k_c the smallest |k| left out; [`for_accuracy`][sciad.md.Ewald.for_accuracy]
    chooses α and kmax for a tolerance. Cost O(N · #k) per evaluation (no mesh: for
    thousands of charges a PME/PPPM method would scale better).
    Reference: Ewald, Ann. Phys. 369, 253 (1921); Allen & Tildesley, *Computer
    Simulation of Liquids* (2017), §6.2; Hub, de Groot & van der Spoel, J. Chem.
    Theory Comput. 10, 381 (2014) (the background term).

    **Arguments:**

    - `charges`: shape `(n,)` (charge units), a differentiable parameter.
    - `alpha`: the splitting parameter α (1/length).
    - `cutoff`: the real-space cut-off r_c (length, static; at most half the box's
      smallest width, for the minimum image: checked when an `MDSystem` is built, and
      reported as `RESULTS.box_too_small` if a barostat compresses the box past it).
    - `kmax`: the largest integer reciprocal index per axis, an int or 3 ints (static).
    - `coulomb`: the Coulomb constant k_e (energy·length/charge²), default 1.

    **Example:**

    ```python
    ewald = sciad.md.Ewald(charges, alpha=3.0, cutoff=1.2, kmax=8)
    system = sciad.md.MDSystem(box, ewald + lj, masses)
    ```
    """

    charges: FloatVector = eqx.field(converter=jnp.asarray)
    alpha: FloatScalar = eqx.field(converter=jnp.asarray)
    cutoff: float = eqx.field(static=True)
    kmax: tuple[int, int, int] = eqx.field(static=True, converter=_kmax)
    coulomb: FloatScalar = eqx.field(converter=jnp.asarray, default=1.0)

    def __check_init__(self):
        if np.ndim(self.charges) != 1:
            raise ValueError(f"charges must have shape (n,), got {np.shape(self.charges)}.")
        if np.ndim(self.alpha) != 0 or np.ndim(self.coulomb) != 0:
            raise ValueError("alpha and coulomb must be scalars.")
        if not self.cutoff > 0:
            raise ValueError(f"cutoff must be positive, got {self.cutoff}.")
        if min(self.kmax) < 1:
            raise ValueError(f"kmax must be >= 1 on every axis, got {self.kmax}.")
        a = concrete(self.alpha)
        if a is not None and not a > 0:
            raise ValueError(f"alpha must be positive, got {a}.")

    @classmethod
    def for_accuracy(
        cls,
        charges: Float[ArrayLike, " n"],
        space: AbstractSpace,
        cutoff: float,
        accuracy: float = 1e-6,
        coulomb: RealScalarLike = 1.0,
    ) -> "Ewald":
        """An `Ewald` whose truncation factors are below `accuracy`.

        α = √(−ln ε)/r_c, so erfc(α r_c) ≲ ε; every k with |k| ≤ 2α√(−ln ε) (where
        e^{−k²/4α²} ≤ ε) is kept: kmax_a = ⌈k_c |a_a|/(2π)⌉ for lattice vector a_a,
        since |m_a| = |k · a_a|/(2π) ≤ |k| |a_a|/(2π). Relative errors of the energy are
        then of order ε (Kolafa & Perram, Mol. Simul. 9, 351 (1992)).

        **Arguments:** `charges` shape `(n,)`; `space` (a concrete periodic box);
        `cutoff` r_c (length); `accuracy` ε; `coulomb` k_e.

        **Returns:** an `Ewald`.

        **Example:** `ewald = sciad.md.Ewald.for_accuracy(charges, box, cutoff=1.2, accuracy=1e-8)`
        """
        _check_periodic(space)
        if not 0 < accuracy < 1:
            raise ValueError(f"accuracy must lie in (0, 1), got {accuracy}.")
        s = math.sqrt(-math.log(accuracy))
        alpha = s / cutoff
        kc = 2 * alpha * s
        cell = np.asarray(space.cell_matrix(), dtype=np.float64)
        k0, k1, k2 = (
            max(1, math.ceil(kc * float(np.linalg.norm(a)) / (2 * math.pi))) for a in cell
        )
        return cls(
            jnp.asarray(charges), jnp.asarray(alpha), cutoff, (k0, k1, k2), jnp.asarray(coulomb)
        )

    def range(self) -> float:
        """The real-space cut-off r_c (length units)."""
        return self.cutoff

    def check_system(self, space: AbstractSpace, n_particles: int) -> None:
        """A 3-D periodic space, `n_particles` charges, and r_c below half the smallest width."""
        _check_periodic(space)
        d = space.dimension()
        if d != 3:
            raise ValueError(f"Ewald summation needs a 3-D cell, got d = {d}.")
        if np.shape(self.charges) != (n_particles,):
            raise ValueError(
                f"charges must have shape ({n_particles},) (one per particle), "
                f"got {np.shape(self.charges)}."
            )
        space.check_range(self.cutoff, "Ewald cutoff")

    def energy(
        self,
        space: AbstractSpace,
        positions: Positions,
        pairs: Pairs | None = None,
        species: Int[Array, " n"] | None = None,
        exclusions: Exclusions | None = None,
    ) -> FloatScalar:
        """The total Ewald energy (energy units); see the class docstring."""
        _check_periodic(space)
        if positions.shape[1] != 3:
            raise ValueError(f"Ewald summation needs d = 3, got d = {positions.shape[1]}.")
        if pairs is None:
            pairs = all_pairs(positions.shape[0])
        parts = self.energy_terms(space, positions, pairs, exclusions)
        return parts[0] + parts[1] + parts[2] + parts[3] + parts[4]

    def energy_terms(
        self,
        space: AbstractSpace,
        positions: Positions,
        pairs: Pairs,
        exclusions: Exclusions | None = None,
    ) -> tuple[FloatScalar, FloatScalar, FloatScalar, FloatScalar, FloatScalar]:
        """The five parts: (real, reciprocal, self, excluded, background), energy units.

        **Arguments:** `space` (periodic), `positions` `(n, 3)`, `pairs` `(i, j, mask)`
        (excluded pairs masked out), `exclusions` or `None`.

        **Returns:** a tuple of five scalars; the energy is their sum.

        **Example:** `real, recip, self_, excl, background = ewald.energy_terms(box, q, sciad.md.all_pairs(len(q)))`
        """
        q, alpha, ke = self.charges, self.alpha, self.coulomb
        cell = space.cell_matrix()
        volume = space.volume()

        # Real space: erfc(αr)/r inside the cut-off (double where at masks and r_c).
        ii, jj, dr, real = pair_displacements(space, positions, pairs)
        r = safe_norm(dr, real)
        inside = real & (r < self.cutoff)
        rs = jnp.where(inside, r, self.cutoff)
        u = q[ii] * q[jj] * jax.scipy.special.erfc(alpha * rs) / rs
        e_real = jnp.sum(jnp.where(inside, u, 0.0))

        # Reciprocal space over the static half set of k-vectors.
        m = jnp.asarray(_half_space(self.kmax), dtype=positions.dtype)
        k = 2 * jnp.pi * m @ small_inv(cell).T
        k2 = jnp.sum(k * k, axis=-1)
        phase = positions @ k.T  # (n, K)
        s_re = q @ jnp.cos(phase)
        s_im = q @ jnp.sin(phase)
        weight = jnp.exp(-k2 / (4 * alpha**2)) / k2
        e_recip = (4 * jnp.pi / volume) * jnp.sum(weight * (s_re**2 + s_im**2))

        e_self = -alpha / math.sqrt(math.pi) * jnp.sum(q * q)
        total = jnp.sum(q)
        e_background = -jnp.pi * total**2 / (2 * volume * alpha**2)

        if exclusions is None or exclusions.pairs.shape[0] == 0:
            e_excl = jnp.zeros((), positions.dtype)
        else:
            a, b = exclusions.pairs[:, 0], exclusions.pairs[:, 1]
            rx = norm_or_zero(jax.vmap(space.displacement)(positions[a], positions[b]))
            nz = rx > 0
            rxs = jnp.where(nz, rx, 1.0)
            f = jnp.where(
                nz, jax.scipy.special.erf(alpha * rxs) / rxs, 2 * alpha / math.sqrt(math.pi)
            )
            e_excl = -jnp.sum(q[a] * q[b] * f)
        return (
            ke * e_real,
            ke * e_recip,
            ke * e_self,
            ke * e_excl,
            ke * e_background,
        )
