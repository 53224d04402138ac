"""Initial conditions: crystal lattices, random non-overlapping packings, thermal momenta."""

from collections.abc import Sequence
import itertools
import math

import equinox as eqx
import jax
from jax.core import Tracer
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray
import numpy as np

from .._core._types import FloatScalar, Positions, RealScalarLike
from ._space import AbstractSpace, PeriodicBox

#: Fractional coordinates of the atoms in one conventional cubic cell.
_BASIS: dict[str, np.ndarray] = {
    "sc": np.array([[0.0, 0.0, 0.0]]),
    "bcc": np.array([[0.0, 0.0, 0.0], [0.5, 0.5, 0.5]]),
    # ASE's order for bulk(..., "fcc", cubic=True).
    "fcc": np.array([[0.0, 0.0, 0.0], [0.0, 0.5, 0.5], [0.5, 0.0, 0.5], [0.5, 0.5, 0.0]]),
}

#: Densest packing fraction of equal balls in d dimensions (d = 1, 2, 3).
_MAX_PACKING = {1: 1.0, 2: math.pi / (2 * math.sqrt(3)), 3: math.pi / (3 * math.sqrt(2))}


def _float_scalar(x: RealScalarLike, name: str) -> FloatScalar:
    """`x` as a floating scalar array; integers become the default float dtype."""
    if isinstance(x, bool) or jnp.ndim(x) != 0:
        raise ValueError(f"{name} must be a real scalar; got {x!r}.")
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.floating):
        x = x.astype(jnp.result_type(float))
    return x


def _concrete_positive(x: FloatScalar, name: str) -> None:
    if not isinstance(x, Tracer) and not float(x) > 0:
        raise ValueError(f"{name} must be positive and finite; got {float(x)}.")


def _check_kind(kind: str) -> np.ndarray:
    if kind not in _BASIS:
        raise ValueError(f"unknown lattice kind {kind!r}; choose one of {sorted(_BASIS)}.")
    return _BASIS[kind]


def _check_cells(cells: int | Sequence[int]) -> tuple[int, int, int]:
    reps = (cells,) * 3 if isinstance(cells, (int, np.integer)) else tuple(cells)
    if len(reps) != 3 or not all(
        isinstance(m, (int, np.integer)) and not isinstance(m, bool) and m >= 1 for m in reps
    ):
        raise ValueError(
            f"cells must be a positive int or a tuple of 3 positive ints; got {cells!r}."
        )
    return (int(reps[0]), int(reps[1]), int(reps[2]))


def lattice(
    kind: str, cells: int | Sequence[int], lattice_constant: RealScalarLike
) -> tuple[Float[Array, "n 3"], PeriodicBox]:
    """A cubic crystal (simple, body-centred or face-centred cubic) filling a periodic box.

    The conventional cubic cell of side `a` is repeated `cells` times along x, y and z;
    the origin atom of cell (i, j, k) sits at a·(i, j, k). The atoms are ordered cell by
    cell (k fastest), the basis atoms innermost, as in ASE's
    `bulk(symbol, kind, a=a, cubic=True).repeat(cells)`.

    | kind    | atoms per cell | nearest-neighbour distance | coordination |
    |---------|----------------|----------------------------|--------------|
    | `"sc"`  | 1              | a                          | 6            |
    | `"bcc"` | 2              | a√3/2                      | 8            |
    | `"fcc"` | 4              | a/√2                       | 12           |

    **Arguments:**

    - `kind`: `"sc"`, `"bcc"` or `"fcc"`.
    - `cells`: the number of cells along each axis: an int (the same along x, y, z) or a
      tuple `(n₁, n₂, n₃)`.
    - `lattice_constant`: the cubic cell side `a` (length units). Differentiable: the
      positions and the box are linear in it.

    **Returns:** `(positions, box)`: positions of shape `(n, 3)` with
    n = (atoms per cell)·n₁·n₂·n₃, all inside `[0, L)`, and the
    [`PeriodicBox`][sciad.md.PeriodicBox] with lengths `a·(n₁, n₂, n₃)`. The dtype is
    that of `lattice_constant` (the default float for Python numbers).

    **Example:**

    ```python
    positions, box = sciad.md.lattice("fcc", 10, 1.0)  # 4000 atoms, number density 4
    ```

    Reference: Ashcroft & Mermin, *Solid State Physics* (1976), ch. 4.
    """
    basis = _check_kind(kind)
    reps = _check_cells(cells)
    a = _float_scalar(lattice_constant, "lattice_constant")
    _concrete_positive(a, "lattice_constant")
    offsets = np.array(list(itertools.product(*(range(m) for m in reps))), dtype=np.float64)
    frac = (offsets[:, None, :] + basis[None, :, :]).reshape(-1, 3)
    positions = jnp.asarray(frac, dtype=a.dtype) * a
    box = PeriodicBox(jnp.asarray(reps, dtype=a.dtype) * a)
    return positions, box


def _near_cubic_cells(n_cells: int, cubic: bool) -> tuple[int, int, int]:
    """The repetitions with n₁·n₂·n₃ ≥ n_cells: m³, or the smallest near-cube if not cubic."""
    m = max(1, round(n_cells ** (1 / 3)))
    while m**3 < n_cells:
        m += 1
    while m > 1 and (m - 1) ** 3 >= n_cells:
        m -= 1
    if cubic:
        return (m, m, m)
    k = m - 1
    options = [
        (k, k, k),
        (k, k, k + 1),
        (k, k + 1, k + 1),
        (k + 1, k + 1, k + 1),
    ]
    return min((o for o in options if min(o) >= 1 and math.prod(o) >= n_cells), key=math.prod)


def lattice_for_density(
    kind: str, n_min: int, density: RealScalarLike, *, cubic: bool = True
) -> tuple[Float[Array, "n 3"], PeriodicBox]:
    """The smallest `kind` crystal with at least `n_min` atoms at number density `density`.

    The lattice constant is a = (b/ρ)^(1/3) for b atoms per cell, so the number density
    is exactly ρ. With `cubic=True` the box is a cube of m³ cells, with m the smallest
    integer such that b·m³ ≥ `n_min`; with `cubic=False` the repetitions may differ by
    one between axes (e.g. 6×6×7), which gets closer to `n_min`.

    For the Lennard-Jones fluid at ρ = 0.84 (fcc, b = 4):

    | n_min  | cubic=True               | cubic=False               |
    |--------|--------------------------|---------------------------|
    | 1000   | 7³ cells → 1372 atoms    | 6×6×7 cells → 1008 atoms  |
    | 4000   | 10³ cells → 4000 atoms   | 10³ cells → 4000 atoms    |
    | 32000  | 20³ cells → 32000 atoms  | 20³ cells → 32000 atoms   |

    with a = (4/0.84)^(1/3) ≈ 1.6822 σ.

    **Arguments:**

    - `kind`: `"sc"`, `"bcc"` or `"fcc"`.
    - `n_min`: the minimum number of atoms (a positive int).
    - `density`: the number density ρ (atoms per length³). Differentiable.
    - `cubic`: whether to use the same number of cells along every axis.

    **Returns:** `(positions, box)` as from [`lattice`][sciad.md.lattice]; read the atom
    count from `positions.shape[0]`.

    **Example:**

    ```python
    positions, box = sciad.md.lattice_for_density("fcc", 4000, 0.84)
    assert positions.shape == (4000, 3)
    ```
    """
    basis = _check_kind(kind)
    if isinstance(n_min, bool) or not isinstance(n_min, (int, np.integer)) or n_min < 1:
        raise ValueError(f"n_min must be a positive int; got {n_min!r}.")
    rho = _float_scalar(density, "density")
    _concrete_positive(rho, "density")
    b = basis.shape[0]
    reps = _near_cubic_cells(-(-int(n_min) // b), cubic)
    a = (b / rho) ** (1 / 3)
    return lattice(kind, reps, a)


def _pair_d2(space: AbstractSpace, a: Array, b: Array) -> Array:
    """Squared minimum-image distances between `a` (k, d) and `b` (n, d): shape (k, n)."""
    ds = space.to_fractional(a)[:, None, :] - space.to_fractional(b)[None, :, :]
    dr = space.from_fractional(ds - jnp.round(ds))
    return jnp.sum(dr**2, axis=-1)


@eqx.filter_jit
def _rsa(
    key: PRNGKeyArray,
    n: int,
    space: AbstractSpace,
    min_distance: FloatScalar,
    n_rounds: int,
    batch: int,
) -> tuple[Positions, Array, Array]:
    """Random sequential addition; returns (positions, success flag, number placed)."""
    cell = space.cell_matrix()
    d, dtype = cell.shape[0], cell.dtype
    min_d2 = min_distance.astype(dtype) ** 2
    index = jnp.arange(n)

    def place(i, carry):
        positions, ok, placed = carry
        key_i = jax.random.fold_in(key, i)

        def cond(state):
            r, found, _ = state
            return ok & ~found & (r < n_rounds)

        def body(state):
            r, _, _ = state
            u = jax.random.uniform(jax.random.fold_in(key_i, r), (batch, d), dtype=dtype)
            candidates = space.from_fractional(u)
            d2 = _pair_d2(space, candidates, positions)  # (batch, n)
            d2 = jnp.where(index[None, :] < i, d2, jnp.inf)
            good = jnp.all(d2 >= min_d2, axis=1)
            return r + 1, jnp.any(good), candidates[jnp.argmax(good)]

        init = (jnp.asarray(0), jnp.asarray(False), jnp.zeros((d,), dtype))
        _, found, chosen = jax.lax.while_loop(cond, body, init)
        positions = positions.at[i].set(jnp.where(found, chosen, positions[i]))
        return positions, ok & found, placed + found.astype(placed.dtype)

    init = (jnp.zeros((n, d), dtype), jnp.asarray(True), jnp.asarray(0))
    return jax.lax.fori_loop(0, n, place, init)


def random_positions(
    key: PRNGKeyArray,
    n: int,
    space: AbstractSpace,
    min_distance: RealScalarLike,
    max_attempts: int = 10_000,
) -> Positions:
    """Uniformly random positions with no two closer than `min_distance` (minimum image).

    Random sequential addition: particle i is drawn uniformly in the cell until it lies
    at least `min_distance` from particles 0 … i−1, with a budget of `max_attempts`
    candidates per particle (drawn 64 at a time). It runs in JAX (`lax.fori_loop` and
    `lax.while_loop`), so it is deterministic per `key`, runs on the accelerator and
    composes with `jit` and `vmap`; the cost is O(n² · attempts). RSA jams at a packing
    fraction φ = n·v_ball(min_distance/2)/V of about 0.38 in 3-D (0.55 in 2-D), so
    denser fluids should start from a [`lattice`][sciad.md.lattice] and melt.

    **Arguments:**

    - `key`: a JAX PRNG key.
    - `n`: the number of particles (a Python int).
    - `space`: a periodic space ([`PeriodicBox`][sciad.md.PeriodicBox],
      [`TriclinicBox`][sciad.md.TriclinicBox], ...) of any dimension d. For a finite region
      of free space pass a `PeriodicBox` of that size: the minimum-image distance never
      exceeds the free distance, so the result is non-overlapping in free space too.
    - `min_distance`: the smallest allowed pair distance (length units), e.g. σ for
      hard spheres of diameter σ.
    - `max_attempts`: the candidate budget per particle.

    **Returns:** positions of shape `(n, d)` inside the cell, dtype of the box.

    **Raises:** `ValueError` before sampling when φ exceeds the densest packing (0.7405
    in 3-D, 0.9069 in 2-D), and after sampling when a particle found no place within
    its budget (under `jit`, an `equinox` runtime error instead).

    **Example:**

    ```python
    box = sciad.md.PeriodicBox(jnp.array([10.0, 10.0, 10.0]))
    positions = sciad.md.random_positions(jax.random.key(0), 200, box, min_distance=1.0)
    ```

    Reference: Widom, J. Chem. Phys. 44, 3888 (1966); Feder, J. Theor. Biol. 87, 237
    (1980) (the RSA jamming limit).
    """
    if not isinstance(space, AbstractSpace) or not space.periodic:
        raise TypeError(
            "space must be periodic, e.g. a PeriodicBox or TriclinicBox (the region to "
            "fill); got "
            f"{type(space).__name__}. For free space, pass PeriodicBox(region lengths): "
            "its minimum-image distances never exceed free-space distances."
        )
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n must be a non-negative int; got {n!r}.")
    if isinstance(max_attempts, bool) or not isinstance(max_attempts, (int, np.integer)):
        raise ValueError(f"max_attempts must be a positive int; got {max_attempts!r}.")
    if max_attempts < 1:
        raise ValueError(f"max_attempts must be a positive int; got {max_attempts!r}.")
    sigma = _float_scalar(min_distance, "min_distance")
    d = int(np.shape(space.cell_matrix())[0])
    volume = space.volume()
    if not isinstance(sigma, Tracer) and not isinstance(volume, Tracer):
        if not float(sigma) >= 0:
            raise ValueError(f"min_distance must be >= 0; got {float(sigma)}.")
        ball = math.pi ** (d / 2) / math.gamma(d / 2 + 1) * (float(sigma) / 2) ** d
        phi = n * ball / float(volume)
        if d in _MAX_PACKING and phi > _MAX_PACKING[d]:
            raise ValueError(
                f"{n} particles with min_distance {float(sigma)} cannot fit in a box of "
                f"volume {float(volume)}: packing fraction {phi:.3f} exceeds the densest "
                f"packing {_MAX_PACKING[d]:.4f} in {d}-D."
            )
    batch = min(64, int(max_attempts))
    n_rounds = -(-int(max_attempts) // batch)
    positions, ok, placed = _rsa(key, int(n), space, sigma, n_rounds, batch)
    if isinstance(ok, Tracer):
        return eqx.error_if(
            positions, ~ok, "random_positions: a particle found no place within max_attempts."
        )
    if not bool(ok):
        ball = math.pi ** (d / 2) / math.gamma(d / 2 + 1) * (float(sigma) / 2) ** d
        raise ValueError(
            f"random_positions placed only {int(placed)} of {n} particles: particle "
            f"{int(placed)} found no place in {max_attempts} attempts (packing fraction "
            f"{n * ball / float(volume):.3f}; random sequential addition jams near 0.38 "
            "in 3-D). Use a larger box, a smaller min_distance, more max_attempts, or "
            "start from sciad.md.lattice."
        )
    return positions


def maxwell_boltzmann(
    key: PRNGKeyArray,
    masses: Float[ArrayLike, " n"],
    temperature: RealScalarLike,
    dim: int = 3,
    kB: RealScalarLike = 1.0,
    exact: bool = False,
) -> Float[Array, "n d"]:
    """Momenta drawn from the Maxwell–Boltzmann distribution at temperature T, with zero total momentum.

    Each component is drawn as p = √(m k_B T)·ξ with ξ ~ N(0, 1); then the centre-of-mass
    motion is removed, pᵢ ← pᵢ − mᵢ·P/M (P the total momentum, M the total mass), so
    Σpᵢ = 0 to rounding. That projection leaves n·d − d degrees of freedom and
    2K/(k_B T) exactly χ²-distributed with n·d − d degrees of freedom, so the kinetic
    temperature T_kin = 2K / (k_B (n·d − d)), with K = Σ|pᵢ|²/(2mᵢ), has mean T and
    relative standard deviation √(2/(n·d − d)). With `exact=True` the momenta are
    rescaled so that T_kin = T exactly.

    The momenta are √T times a key-dependent sample, so they are differentiable in
    `temperature` (for T > 0) and `masses`; with `exact=True`, dK/dT = (n·d − d)·k_B/2.

    **Arguments:**

    - `key`: a JAX PRNG key.
    - `masses`: shape `(n,)`, the particle masses (mass units), e.g. per species.
    - `temperature`: T ≥ 0 (temperature units; energy units when `kB=1`).
    - `dim`: the spatial dimension d (a Python int).
    - `kB`: Boltzmann's constant in the chosen units (1 for reduced LJ units;
      8.617333262e-5 eV/K for ASE's units).
    - `exact`: rescale so that the instantaneous kinetic temperature equals T (needs
      n ≥ 2).

    **Returns:** momenta of shape `(n, d)` (mass·length/time), with the dtype of
    `masses`. Velocities are `momenta / masses[:, None]`.

    **Example:**

    ```python
    masses = jnp.ones(4000)
    momenta = sciad.md.maxwell_boltzmann(jax.random.key(0), masses, 0.722, exact=True)
    ```

    Reference: Frenkel & Smit, *Understanding Molecular Simulation*, 2nd ed. (2002),
    §4.4 and §6.1.
    """
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < 1:
        raise ValueError(f"dim must be a positive int; got {dim!r}.")
    masses = jnp.asarray(masses)
    if masses.ndim != 1 or not jnp.issubdtype(masses.dtype, jnp.floating):
        raise ValueError(
            f"masses must be a floating array of shape (n,); got {masses.dtype}{masses.shape}."
        )
    n = masses.shape[0]
    if exact and n < 2:
        raise ValueError(
            f"exact=True needs n >= 2 particles (n·d − d > 0 degrees of freedom); got n={n}."
        )
    t = jnp.asarray(temperature)
    kb = jnp.asarray(kB)
    if not isinstance(t, Tracer) and not float(t) >= 0:
        raise ValueError(f"temperature must be >= 0; got {float(t)}.")
    if not isinstance(masses, Tracer) and not np.all(np.asarray(masses) > 0):
        raise ValueError("masses must be positive.")
    xi = jax.random.normal(key, (n, int(dim)), dtype=masses.dtype)
    p1 = jnp.sqrt(masses)[:, None] * xi  # momenta at k_B T = 1
    p1 = p1 - masses[:, None] * (jnp.sum(p1, axis=0) / jnp.sum(masses))[None, :]
    if exact:
        dof = n * int(dim) - int(dim)
        kinetic2 = jnp.sum(p1**2 / masses[:, None])  # 2K at k_B T = 1
        p1 = p1 * jnp.sqrt(dof / kinetic2)
    return p1 * jnp.sqrt(kb * t)


__all__ = ["lattice", "lattice_for_density", "maxwell_boltzmann", "random_positions"]
