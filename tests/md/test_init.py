"""Initial conditions: lattices, random packings and Maxwell–Boltzmann momenta."""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sciad.md._init import lattice, lattice_for_density, maxwell_boltzmann, random_positions
from sciad.md._space import FreeSpace, PeriodicBox, TriclinicBox


def _min_image_distances(positions, lengths):
    """All pair distances (i < j) under the orthorhombic minimum image, in NumPy."""
    r = np.asarray(positions)
    dr = r[:, None, :] - r[None, :, :]
    dr -= lengths * np.round(dr / lengths)
    d = np.sqrt(np.sum(dr**2, axis=-1))
    return d[np.triu_indices(len(r), k=1)]


# ---------------------------------------------------------------- lattices

NN = {"sc": 1.0, "bcc": math.sqrt(3) / 2, "fcc": 1 / math.sqrt(2)}
PER_CELL = {"sc": 1, "bcc": 2, "fcc": 4}
COORDINATION = {"sc": 6, "bcc": 8, "fcc": 12}


@pytest.mark.parametrize("kind", ["sc", "bcc", "fcc"])
def test_lattice_geometry(kind):
    a = 1.7
    cells = (3, 4, 5)
    positions, box = lattice(kind, cells, a)
    n = PER_CELL[kind] * 60
    assert positions.shape == (n, 3) and positions.dtype == jnp.float64
    assert isinstance(box, PeriodicBox)
    np.testing.assert_allclose(box.lengths, a * np.array(cells), rtol=1e-15)
    np.testing.assert_allclose(n / float(box.volume()), PER_CELL[kind] / a**3, rtol=1e-14)
    p = np.asarray(positions)
    assert np.all(p >= 0) and np.all(p < np.asarray(box.lengths))
    np.testing.assert_array_equal(np.mod(p, np.asarray(box.lengths)), p)
    d = _min_image_distances(positions, np.asarray(box.lengths))
    # No duplicates under periodic wrapping; the nearest neighbour at the right distance.
    np.testing.assert_allclose(d.min(), NN[kind] * a, rtol=1e-12)
    n_nn = np.sum(np.abs(d - NN[kind] * a) < 1e-9) * 2 / n
    assert n_nn == COORDINATION[kind]


def test_lattice_int_cells_and_dtype():
    positions, box = lattice("fcc", 2, jnp.asarray(1.0, dtype=jnp.float32))
    assert positions.shape == (32, 3) and positions.dtype == jnp.float32
    assert box.lengths.dtype == jnp.float32
    positions, _ = lattice("sc", 2, 1)  # an int constant gives the default float
    assert positions.dtype == jnp.float64


def test_lattice_matches_ase():
    ase_build = pytest.importorskip("ase.build")
    a = 1.6
    positions, box = lattice("fcc", (2, 3, 4), a)
    atoms = ase_build.bulk("Ar", "fcc", a=a, cubic=True).repeat((2, 3, 4))
    np.testing.assert_allclose(positions, atoms.positions, atol=1e-12)
    np.testing.assert_allclose(np.diag(np.asarray(box.lengths)), atoms.cell[:], atol=1e-12)


def test_lattice_differentiable():
    g = jax.grad(lambda a: jnp.sum(lattice("bcc", 2, a)[0]))(1.3)
    np.testing.assert_allclose(g, float(jnp.sum(lattice("bcc", 2, 1.0)[0])), rtol=1e-14)


@pytest.mark.parametrize(
    "n_min, cubic, expected",
    [(1000, True, 1372), (1000, False, 1008), (4000, True, 4000), (32000, True, 32000)],
)
def test_lattice_for_density_lj(n_min, cubic, expected):
    positions, box = lattice_for_density("fcc", n_min, 0.84, cubic=cubic)
    assert positions.shape == (expected, 3)
    np.testing.assert_allclose(expected / float(box.volume()), 0.84, rtol=1e-13)
    if cubic:
        np.testing.assert_allclose(box.lengths, box.lengths[0], rtol=1e-15)


@pytest.mark.parametrize("kind", ["sc", "bcc"])
def test_lattice_for_density_other_kinds(kind):
    positions, box = lattice_for_density(kind, 100, 0.5)
    assert positions.shape[0] >= 100
    np.testing.assert_allclose(positions.shape[0] / float(box.volume()), 0.5, rtol=1e-13)


def test_lattice_errors():
    with pytest.raises(ValueError, match="unknown lattice kind"):
        lattice("hcp", 2, 1.0)
    with pytest.raises(ValueError, match="cells"):
        lattice("fcc", (2, 2), 1.0)
    with pytest.raises(ValueError, match="cells"):
        lattice("fcc", 0, 1.0)
    with pytest.raises(ValueError, match="lattice_constant"):
        lattice("fcc", 2, -1.0)
    with pytest.raises(ValueError, match="n_min"):
        lattice_for_density("fcc", 0, 0.8)
    with pytest.raises(ValueError, match="density"):
        lattice_for_density("fcc", 10, 0.0)


# ---------------------------------------------------------------- random positions


def test_random_positions_min_distance_and_reproducible():
    box = PeriodicBox(jnp.array([8.0, 8.0, 8.0]))
    key = jax.random.key(3)
    positions = random_positions(key, 150, box, 1.0)
    assert positions.shape == (150, 3) and positions.dtype == jnp.float64
    p = np.asarray(positions)
    assert np.all(p >= 0) and np.all(p < 8.0)
    assert _min_image_distances(p, np.full(3, 8.0)).min() >= 1.0
    np.testing.assert_array_equal(random_positions(key, 150, box, 1.0), positions)
    other = random_positions(jax.random.key(4), 150, box, 1.0)
    assert not np.array_equal(np.asarray(other), p)


def test_random_positions_triclinic_and_2d():
    cell = jnp.array([[6.0, 0.0, 0.0], [1.5, 6.0, 0.0], [0.5, 1.0, 6.0]])
    space = TriclinicBox(cell)
    positions = random_positions(jax.random.key(0), 60, space, 1.2)
    dr = jax.vmap(jax.vmap(space.displacement, (None, 0)), (0, None))(positions, positions)
    d = np.sqrt(np.sum(np.asarray(dr) ** 2, axis=-1))[np.triu_indices(60, k=1)]
    assert d.min() >= 1.2
    s = np.asarray(space.to_fractional(positions))
    assert np.all(s >= -1e-12) and np.all(s < 1 + 1e-12)

    box2 = PeriodicBox(jnp.array([5.0, 4.0]))
    positions = random_positions(jax.random.key(1), 10, box2, 0.8)
    assert positions.shape == (10, 2)
    assert _min_image_distances(positions, np.array([5.0, 4.0])).min() >= 0.8


def test_random_positions_jit_and_vmap():
    box = PeriodicBox(jnp.array([5.0, 5.0, 5.0]))
    f = eqx.filter_jit(lambda k: random_positions(k, 20, box, 1.0))
    keys = jax.random.split(jax.random.key(0), 3)
    batch = jax.vmap(f)(keys)
    assert batch.shape == (3, 20, 3)
    np.testing.assert_array_equal(batch[1], random_positions(keys[1], 20, box, 1.0))


def test_random_positions_too_dense():
    box = PeriodicBox(jnp.array([4.0, 4.0, 4.0]))
    with pytest.raises(ValueError, match="densest packing"):
        random_positions(jax.random.key(0), 200, box, 1.0)  # φ ≈ 1.6
    with pytest.raises(ValueError, match="placed only"):
        random_positions(jax.random.key(0), 60, box, 1.0, max_attempts=200)  # φ ≈ 0.49
    with pytest.raises(TypeError, match="PeriodicBox"):
        random_positions(jax.random.key(0), 5, FreeSpace(), 1.0)


# ---------------------------------------------------------------- Maxwell–Boltzmann


def _kinetic_temperature(p, m, kB=1.0):
    n, d = p.shape
    return float(jnp.sum(p**2 / m[:, None])) / (kB * (n * d - d))


def test_maxwell_boltzmann_statistics():
    n, d, temperature = 20_000, 3, 1.5
    masses = jnp.where(jnp.arange(n) % 2 == 0, 1.0, 4.0)
    p = maxwell_boltzmann(jax.random.key(0), masses, temperature, dim=d)
    assert p.shape == (n, d) and p.dtype == jnp.float64
    np.testing.assert_allclose(jnp.sum(p, axis=0), 0.0, atol=1e-12)
    # 2K/(kB T) ~ χ² with n·d − d dof: T_kin has mean T and rel. std √(2/(n·d − d)).
    sem = temperature * math.sqrt(2 / (n * d - d))
    assert abs(_kinetic_temperature(p, masses) - temperature) < 3 * sem
    # Velocity variance kB T / m: the light species' is 4× the heavy one's.
    v = np.asarray(p / masses[:, None])
    var_light, var_heavy = v[0::2].var(), v[1::2].var()
    ratio = var_light / var_heavy
    ratio_sem = ratio * math.sqrt(2 * 2 / (n // 2 * d))  # two independent variances
    assert abs(ratio - 4.0) < 3 * ratio_sem
    np.testing.assert_allclose(var_light, temperature / 1.0, rtol=0.03)
    np.testing.assert_allclose(var_heavy, temperature / 4.0, rtol=0.03)


def test_maxwell_boltzmann_exact_and_kB():
    masses = jnp.linspace(1.0, 3.0, 50)
    kB = 8.617333262e-5
    p = maxwell_boltzmann(jax.random.key(1), masses, 300.0, dim=2, kB=kB, exact=True)
    assert p.shape == (50, 2)
    np.testing.assert_allclose(jnp.sum(p, axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(_kinetic_temperature(p, masses, kB), 300.0, rtol=1e-12)
    np.testing.assert_array_equal(
        p, maxwell_boltzmann(jax.random.key(1), masses, 300.0, dim=2, kB=kB, exact=True)
    )


def test_maxwell_boltzmann_gradient():
    masses = jnp.linspace(1.0, 2.0, 10)
    key = jax.random.key(2)

    def kinetic(temperature, exact):
        p = maxwell_boltzmann(key, masses, temperature, exact=exact)
        return 0.5 * jnp.sum(p**2 / masses[:, None])

    g = jax.grad(kinetic)(jnp.asarray(1.3), True)
    np.testing.assert_allclose(g, (10 * 3 - 3) / 2, rtol=1e-12)
    # Without rescaling K ∝ T, so dK/dT = K/T.
    g = jax.grad(kinetic)(jnp.asarray(1.3), False)
    np.testing.assert_allclose(g, kinetic(1.3, False) / 1.3, rtol=1e-12)


def test_maxwell_boltzmann_float32_and_errors():
    p = maxwell_boltzmann(jax.random.key(0), jnp.ones(8, dtype=jnp.float32), 1.0)
    assert p.dtype == jnp.float32
    with pytest.raises(ValueError, match="n >= 2"):
        maxwell_boltzmann(jax.random.key(0), jnp.ones(1), 1.0, exact=True)
    with pytest.raises(ValueError, match="temperature"):
        maxwell_boltzmann(jax.random.key(0), jnp.ones(4), -1.0)
    with pytest.raises(ValueError, match="masses must be positive"):
        maxwell_boltzmann(jax.random.key(0), jnp.array([1.0, 0.0]), 1.0)
