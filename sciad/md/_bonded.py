"""Bonded terms: harmonic bonds, harmonic angles and periodic dihedrals over a static topology."""

import abc
from typing import Any, ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, Int
import numpy as np

from .._core._types import FloatScalar, Positions
from .._core._validate import check_finite, check_in_range, check_positive, check_real
from ._potential import AbstractPotential, concrete, Exclusions, norm_or_zero, Pairs
from ._space import AbstractSpace


def _indices(name: str) -> Any:
    """A field of integer particle indices: floats are refused, never rounded."""

    def convert(x: Int[ArrayLike, "m k"]) -> Int[Array, "m k"]:
        if not jnp.issubdtype(jnp.result_type(x), jnp.integer):
            raise TypeError(f"{name} must be integers; got dtype {jnp.result_type(x)}.")
        return jnp.asarray(x, dtype=jnp.int32)

    return eqx.field(converter=convert)


def _param():
    return eqx.field(converter=jnp.asarray)


def _check_topology(
    name: str,
    idx: Array,
    width: int,
    params: dict[str, Array],
    nonnegative: tuple[str, ...] = (),
    owner: str = "",
) -> None:
    """Shapes (m, width) and per-term parameter shapes; parameters finite (and ≥ 0 where
    asked) when concrete; concrete indices distinct and ≥ 0."""
    if np.ndim(idx) != 2 or np.shape(idx)[1] != width:
        raise ValueError(f"{name} must have shape (m, {width}), got {np.shape(idx)}.")
    m = np.shape(idx)[0]
    for pname, v in params.items():
        if np.shape(v) not in ((), (m,)):
            raise ValueError(
                f"{pname} must be a scalar or have shape ({m},) like {name}, got {np.shape(v)}."
            )
        full = f"{owner}.{pname}"
        if pname in nonnegative:
            check_positive(v, full, zero_ok=True, shape=None)
        else:
            check_real(v, full)
            check_finite(v, full)
    a = concrete(idx)
    if a is None:
        return
    if np.any(a < 0):
        raise ValueError(f"{name} must be non-negative particle indices.")
    for x in range(width):
        for y in range(x + 1, width):
            if np.any(a[:, x] == a[:, y]):
                raise ValueError(f"each row of {name} must name {width} different particles.")


def _check_range(name: str, idx: Array, n_particles: int) -> None:
    a = concrete(idx)
    if a is not None and a.size and int(a.max()) >= n_particles:
        raise ValueError(
            f"{name} names particle {int(a.max())}, but the system has {n_particles} particles."
        )


def _vectors(space: AbstractSpace, positions: Positions, a: Array, b: Array) -> Array:
    """Minimum-image rₐ − r_b for index arrays a, b: shape (m, d)."""
    return jax.vmap(space.displacement)(positions[a], positions[b])


def _safe_atan2(y: Array, x: Array) -> Array:
    """atan2(y, x) with a zero (never NaN) gradient where x = y = 0 (double where)."""
    ok = (x * x + y * y) > 0
    return jnp.where(ok, jnp.arctan2(jnp.where(ok, y, 0.0), jnp.where(ok, x, 1.0)), 0.0)


def bond_angles(u: Float[Array, "m d"], v: Float[Array, "m d"]) -> Float[Array, " m"]:
    """The angle between u and v in [0, π], as atan2(|u × v|, u · v) (gradient-safe)."""
    if u.shape[-1] == 3:
        s = norm_or_zero(jnp.cross(u, v))
    elif u.shape[-1] == 2:
        s = norm_or_zero((u[:, 0] * v[:, 1] - u[:, 1] * v[:, 0])[:, None])
    else:
        raise ValueError(f"Angles need d = 2 or 3, got d = {u.shape[-1]}.")
    return _safe_atan2(s, jnp.sum(u * v, axis=-1))


def dihedral_angles(
    b1: Float[Array, "m 3"], b2: Float[Array, "m 3"], b3: Float[Array, "m 3"]
) -> Float[Array, " m"]:
    """IUPAC dihedral φ ∈ (−π, π] of bond vectors b1, b2, b3 (0 = cis, π = trans).

    φ = atan2(|b2| b1 · (b2 × b3), (b1 × b2) · (b2 × b3)) (Blondel & Karplus,
    J. Comput. Chem. 17, 1132 (1996)); gradient-safe where it is undefined.
    """
    n1, n2 = jnp.cross(b1, b2), jnp.cross(b2, b3)
    y = norm_or_zero(b2) * jnp.sum(b1 * n2, axis=-1)
    x = jnp.sum(n1 * n2, axis=-1)
    return _safe_atan2(y, x)


class AbstractBondedTerm(AbstractPotential):
    """A bonded term: a sum over listed tuples of particles of the energy of one value
    (a length, an angle, a dihedral). Subclasses give `values` and `term_energy`; the
    energy, the zero range (no pair list is read) and the index checks are shared.

    **Example:** see [`HarmonicBond`][sciad.md.HarmonicBond].
    """

    name: ClassVar[str]

    @abc.abstractmethod
    def indices(self) -> Int[Array, "m k"]:
        """The particle tuples, shape `(m, k)`."""

    @abc.abstractmethod
    def values(self, space: AbstractSpace, positions: Positions) -> Float[Array, " m"]:
        """The geometric value of each tuple, shape `(m,)`."""

    @abc.abstractmethod
    def term_energy(self, values: Float[Array, " m"]) -> Float[Array, " m"]:
        """The energy of each tuple given its value (energy units), shape `(m,)`."""

    def energy(
        self,
        space: AbstractSpace,
        positions: Positions,
        pairs: Pairs | None = None,
        species: Int[Array, " n"] | None = None,
        exclusions: Exclusions | None = None,
    ) -> FloatScalar:
        """Σ over tuples of `term_energy(values)`; `pairs`, `species`, `exclusions` are
        not read."""
        return jnp.sum(self.term_energy(self.values(space, positions)))

    def range(self) -> float:
        """0: bonded terms read no pair list."""
        return 0.0

    def check_system(self, space: AbstractSpace, n_particles: int) -> None:
        """Indices below `n_particles`."""
        _check_range(self.name, self.indices(), n_particles)


class HarmonicBond(AbstractBondedTerm):
    """Harmonic bonds: U = Σ_b ½ k_b (r_b − r0_b)², r_b = |r_i − r_j| (minimum image).

    Note the ½ (GROMACS/CHARMM convention k; AMBER's K = k/2). Gradient-safe at
    r = 0: a collapsed bond gets a zero, never NaN, gradient.
    Reference: Allen & Tildesley, *Computer Simulation of Liquids* (2017), §1.3.3.

    **Arguments:**

    - `bonds`: shape `(nb, 2)` integer particle indices (static topology).
    - `k`: force constants (energy/length²), ≥ 0, a scalar or shape `(nb,)`.
    - `r0`: rest lengths (length), ≥ 0, a scalar or shape `(nb,)`.

    **Example:** `sciad.md.HarmonicBond(jnp.array([[0, 1], [1, 2]]), k=100.0, r0=1.0)`
    """

    bonds: Int[Array, "nb 2"] = _indices("HarmonicBond.bonds")
    k: Array = _param()
    r0: Array = _param()

    def __check_init__(self):
        _check_topology(
            "bonds", self.bonds, 2, {"k": self.k, "r0": self.r0}, ("k", "r0"), "HarmonicBond"
        )

    def lengths(self, space: AbstractSpace, positions: Positions) -> Float[Array, " nb"]:
        """The bond lengths r_b (length units), shape `(nb,)`.

        **Example:** `r = bond.lengths(space, q)`
        """
        return norm_or_zero(_vectors(space, positions, self.bonds[:, 0], self.bonds[:, 1]))

    name: ClassVar[str] = "bonds"

    def indices(self) -> Int[Array, "nb 2"]:
        """The bonded pairs."""
        return self.bonds

    def values(self, space: AbstractSpace, positions: Positions) -> Float[Array, " nb"]:
        """The bond lengths (as `lengths`)."""
        return self.lengths(space, positions)

    def term_energy(self, values: Float[Array, " nb"]) -> Float[Array, " nb"]:
        """½ k (r − r0)² per bond."""
        return 0.5 * self.k * (values - self.r0) ** 2


class HarmonicAngle(AbstractBondedTerm):
    """Harmonic angles: U = Σ_a ½ k_a (θ_a − θ0_a)², θ the angle i–j–k at j.

    θ = atan2(|u × v|, u · v) with u = r_i − r_j, v = r_k − r_j (minimum image): exact
    and well-conditioned near 0 and π, where arccos loses precision. At exactly
    collinear (or collapsed) geometry, where θ is not differentiable, the gradient is
    set to zero by the double-`where` trick, never NaN. d = 2 or 3.
    Reference: Allen & Tildesley (2017), §1.3.3; Blondel & Karplus, J. Comput. Chem.
    17, 1132 (1996) (atan2 forms).

    **Arguments:**

    - `angles`: shape `(na, 3)` integer triples `(i, j, k)`, vertex j.
    - `k`: force constants (energy/radian²), ≥ 0, a scalar or shape `(na,)`.
    - `theta0`: equilibrium angles (radians) in [0, π], a scalar or shape `(na,)`.

    **Example:** `sciad.md.HarmonicAngle(jnp.array([[0, 1, 2]]), k=50.0, theta0=1.911)`
    """

    angles: Int[Array, "na 3"] = _indices("HarmonicAngle.angles")
    k: Array = _param()
    theta0: Array = _param()

    def __check_init__(self):
        _check_topology(
            "angles", self.angles, 3, {"k": self.k, "theta0": self.theta0}, ("k",), "HarmonicAngle"
        )
        check_in_range(self.theta0, "HarmonicAngle.theta0", 0.0, float(np.pi))

    def values(self, space: AbstractSpace, positions: Positions) -> Float[Array, " na"]:
        """The angles θ ∈ [0, π] (radians), shape `(na,)`.

        **Example:** `theta = angle.values(space, q)`
        """
        a = self.angles
        u = _vectors(space, positions, a[:, 0], a[:, 1])
        v = _vectors(space, positions, a[:, 2], a[:, 1])
        return bond_angles(u, v)

    name: ClassVar[str] = "angles"

    def indices(self) -> Int[Array, "na 3"]:
        """The angle triples."""
        return self.angles

    def term_energy(self, values: Float[Array, " na"]) -> Float[Array, " na"]:
        """½ k (θ − θ0)² per angle."""
        return 0.5 * self.k * (values - self.theta0) ** 2


class PeriodicDihedral(AbstractBondedTerm):
    """Periodic (proper) dihedrals: U = Σ_t k_t [1 + cos(n_t φ_t − δ_t)].

    φ is the IUPAC dihedral of i–j–k–l (0 = cis, π = trans), from the atan2 form
    φ = atan2(|b2| b1 · (b2 × b3), (b1 × b2) · (b2 × b3)), b1 = r_j − r_i,
    b2 = r_k − r_j, b3 = r_l − r_k (minimum image). Where φ is undefined (three
    collinear atoms) its gradient is set to zero (double `where`), never NaN. Several
    Fourier terms on one dihedral are several rows. 3-D only. The AMBER/CHARMM form.
    Reference: Blondel & Karplus, J. Comput. Chem. 17, 1132 (1996); Cornell et al.,
    J. Am. Chem. Soc. 117, 5179 (1995).

    **Arguments:**

    - `dihedrals`: shape `(nd, 4)` integer quadruples `(i, j, k, l)`.
    - `k`: amplitudes (energy), a scalar or shape `(nd,)`.
    - `n`: periodicities (dimensionless, ≥ 0, usually integers 1–6), a scalar or `(nd,)`.
    - `phase`: phases δ (radians), a scalar or shape `(nd,)`.

    **Example:** `sciad.md.PeriodicDihedral(jnp.array([[0, 1, 2, 3]]), k=1.0, n=3, phase=0.0)`
    """

    dihedrals: Int[Array, "nd 4"] = _indices("PeriodicDihedral.dihedrals")
    k: Array = _param()
    n: Array = _param()
    phase: Array = _param()

    def __check_init__(self):
        _check_topology(
            "dihedrals",
            self.dihedrals,
            4,
            {"k": self.k, "n": self.n, "phase": self.phase},
            ("n",),
            "PeriodicDihedral",
        )

    def values(self, space: AbstractSpace, positions: Positions) -> Float[Array, " nd"]:
        """The dihedral angles φ ∈ (−π, π] (radians), shape `(nd,)`.

        **Example:** `phi = dihedral.values(space, q)`
        """
        if positions.shape[1] != 3:
            raise ValueError(f"Dihedrals need d = 3, got d = {positions.shape[1]}.")
        t = self.dihedrals
        b1 = _vectors(space, positions, t[:, 1], t[:, 0])
        b2 = _vectors(space, positions, t[:, 2], t[:, 1])
        b3 = _vectors(space, positions, t[:, 3], t[:, 2])
        return dihedral_angles(b1, b2, b3)

    name: ClassVar[str] = "dihedrals"

    def indices(self) -> Int[Array, "nd 4"]:
        """The dihedral quadruples."""
        return self.dihedrals

    def term_energy(self, values: Float[Array, " nd"]) -> Float[Array, " nd"]:
        """k [1 + cos(n φ − δ)] per dihedral."""
        return self.k * (1 + jnp.cos(self.n.astype(values.dtype) * values - self.phase))

    def check_system(self, space: AbstractSpace, n_particles: int) -> None:
        """Indices below `n_particles`; a 3-D space."""
        super().check_system(space, n_particles)
        d = space.dimension()
        if d is not None and d != 3:
            raise ValueError(f"PeriodicDihedral needs a 3-D space, got d = {d}.")
