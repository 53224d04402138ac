"""Pair potentials and spaces against independent NumPy references, finite differences and
analytic integrals; gradient safety at r = 0 and at the cut-off."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import quad

import sciad.md as md

from ..helpers import central_fd


def numpy_lj(q, box, sigma, eps, rc, shift):
    """Independent O(N²) Lennard-Jones energy and forces with minimum image."""
    n = len(q)
    e, f = 0.0, np.zeros_like(q)
    urc = 4 * eps * ((sigma / rc) ** 12 - (sigma / rc) ** 6)
    for a in range(n):
        for b in range(a + 1, n):
            d = q[a] - q[b]
            d -= box * np.round(d / box)
            r = np.sqrt(d @ d)
            if r < rc:
                e += 4 * eps * ((sigma / r) ** 12 - (sigma / r) ** 6) - (urc if shift else 0.0)
                fr = 24 * eps * (2 * (sigma / r) ** 12 - (sigma / r) ** 6) / r
                f[a] += fr * d / r
                f[b] -= fr * d / r
    return e, f


@pytest.fixture(scope="module")
def config():
    rng = np.random.default_rng(0)
    box = np.array([5.0, 5.5, 6.0])
    # A jittered simple-cubic arrangement: no overlaps, many pairs inside 2.5 sigma.
    g = np.stack(np.meshgrid(*[np.arange(4)] * 3, indexing="ij"), -1).reshape(-1, 3)
    q = (g + 0.5) * box / 4 + rng.normal(0, 0.08, g.shape)
    return q, box


@pytest.mark.parametrize("shift", [False, True])
def test_lj_energy_and_forces_match_numpy(config, shift):
    q, box = config
    pot = md.Truncated(md.LennardJones(1.0, 1.0), cutoff=2.5, shift="energy" if shift else "none")
    system = md.MDSystem(md.PeriodicBox(jnp.asarray(box)), pot, masses=jnp.ones(len(q)))
    e_ref, f_ref = numpy_lj(q, box, 1.0, 1.0, 2.5, shift)
    assert np.isclose(system.potential_energy(jnp.asarray(q)), e_ref, rtol=1e-12)
    assert np.allclose(system.force(0.0, jnp.asarray(q)), f_ref, rtol=1e-10, atol=1e-12)


def test_forces_are_minus_energy_gradient_by_fd(config):
    q, box = config
    pot = md.Truncated(md.Morse(1.0, 3.0, 1.1), cutoff=2.0, shift="force")
    system = md.MDSystem(md.PeriodicBox(jnp.asarray(box)), pot, masses=jnp.ones(len(q)))
    q5 = jnp.asarray(q[:5])
    small = md.MDSystem(md.PeriodicBox(jnp.asarray(box)), pot, masses=jnp.ones(5))
    fd = -central_fd(small.potential_energy, q5, eps=1e-6)
    assert np.allclose(small.force(0.0, q5), fd, rtol=1e-6, atol=1e-8)
    assert np.allclose(jnp.sum(system.force(0.0, jnp.asarray(q)), axis=0), 0.0, atol=1e-10)


@pytest.mark.parametrize(
    "pot",
    [
        md.LennardJones(1.0, 1.0),
        md.Morse(1.0, 3.0, 1.1),
        md.Yukawa(1.0, 1.5),
        md.GaussianCore(1.0, 0.8),
    ],
    ids=["lj", "morse", "yukawa", "gaussian"],
)
def test_shift_modes_continuity(pot):
    rc = 2.0
    below, above = rc - 1e-9, rc + 1e-9
    plain = md.Truncated(pot, cutoff=rc)
    energy = md.Truncated(pot, cutoff=rc, shift="energy")
    force = md.Truncated(pot, cutoff=rc, shift="force")
    u = pot.pair_energy(jnp.asarray(rc))
    assert np.isclose(plain.pair_energy(jnp.asarray(below)), u, rtol=1e-6)
    assert plain.pair_energy(jnp.asarray(above)) == 0.0
    assert abs(float(energy.pair_energy(jnp.asarray(below)))) < 1e-8
    du = jax.grad(force.pair_energy)
    assert abs(float(du(jnp.asarray(below)))) < 1e-7 and float(du(jnp.asarray(above))) == 0.0
    # Inside, the shifted forms differ from the bare potential only by the shift terms.
    r = jnp.asarray(1.3)
    dur = jax.grad(pot.pair_energy)(jnp.asarray(rc))
    expect = pot.pair_energy(r) - u - (r - rc) * dur
    assert np.isclose(force.pair_energy(r), expect, rtol=1e-12)


def test_wca_is_shifted_repulsive_lj():
    w = md.wca(1.0, 1.5)
    rmin = 2 ** (1 / 6)
    lj = md.LennardJones(1.0, 1.5)
    for r in (0.9, 1.0, 1.1):
        assert np.isclose(w.pair_energy(jnp.asarray(r)), lj.pair_energy(jnp.asarray(r)) + 1.5)
    assert float(w.pair_energy(jnp.asarray(rmin + 1e-6))) == 0.0
    assert abs(float(w.pair_energy(jnp.asarray(rmin - 1e-9)))) < 1e-7
    assert abs(float(jax.grad(w.pair_energy)(jnp.asarray(rmin - 1e-9)))) < 1e-6


def test_soft_sphere_contact_only():
    s = md.SoftSphere(1.0, 2.0)
    assert np.isclose(s.pair_energy(jnp.asarray(0.5)), 2.0 / 2 * 0.25)
    assert float(s.pair_energy(jnp.asarray(1.2))) == 0.0
    assert float(jax.grad(s.pair_energy)(jnp.asarray(1.2))) == 0.0


def test_gradient_safe_at_zero_distance_and_cutoff():
    """Masked coincident pairs and pairs exactly at r_c give finite (zero) gradients."""
    pot = md.Truncated(md.LennardJones(1.0, 1.0), cutoff=2.5)
    space = md.FreeSpace()
    q = jnp.array([[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [2.5, 0.0, 0.0], [1.2, 0.0, 0.0]])
    pairs = (
        jnp.array([0, 0, 0, 4]),
        jnp.array([1, 2, 3, 4]),
        jnp.array([False, True, True, False]),
    )
    g = jax.grad(lambda x: md.pair_energy_sum(pot, space, x, pairs))(q)
    assert np.all(np.isfinite(g))
    lj = md.LennardJones(1.0, 1.0)
    f03 = float(jax.grad(lj.pair_energy)(jnp.asarray(1.2)))
    assert np.isclose(g[3, 0], f03) and g[1, 0] == 0.0 and g[2, 0] == 0.0  # r = r_c: zero


def test_species_mixing_matches_numpy():
    sig_i, eps_i = jnp.array([1.0, 1.4]), jnp.array([1.0, 0.4])
    sig, eps = md.lorentz_berthelot(sig_i, eps_i)
    assert np.isclose(sig[0, 1], 1.2) and np.isclose(eps[0, 1], np.sqrt(0.4))
    q = jnp.array([[0.0, 0.0], [1.1, 0.0], [0.0, 1.3], [1.5, 1.4]])
    species = jnp.array([0, 1, 1, 0])
    system = md.MDSystem(
        md.FreeSpace(), md.LennardJones(sig, eps), masses=jnp.ones(4), species=species
    )
    e = 0.0
    qn, sn = np.asarray(q), np.asarray(species)
    for a in range(4):
        for b in range(a + 1, 4):
            s, ep = float(sig[sn[a], sn[b]]), float(eps[sn[a], sn[b]])
            r = np.linalg.norm(qn[a] - qn[b])
            e += 4 * ep * ((s / r) ** 12 - (s / r) ** 6)
    assert np.isclose(system.potential_energy(q), e, rtol=1e-12)


def test_pair_sum():
    a, b = md.LennardJones(1.0, 1.0), md.Yukawa(0.5, 2.0)
    r = jnp.asarray(1.3)
    assert np.isclose((a + b).pair_energy(r), a.pair_energy(r) + b.pair_energy(r))


def test_lj_tail_corrections_match_quadrature():
    sigma, eps, rc, rho = 1.1, 0.8, 2.5, 0.84
    lj = lambda r: 4 * eps * ((sigma / r) ** 12 - (sigma / r) ** 6)
    dlj = lambda r: 4 * eps * (-12 * sigma**12 / r**13 + 6 * sigma**6 / r**7)
    e_ref = 2 * np.pi * rho * quad(lambda r: r**2 * lj(r), rc, np.inf)[0]
    p_ref = -(2 / 3) * np.pi * rho**2 * quad(lambda r: r**3 * dlj(r), rc, np.inf)[0]
    e, p = md.lj_tail_corrections(sigma, eps, rc, rho)
    assert np.isclose(e, e_ref, rtol=1e-10) and np.isclose(p, p_ref, rtol=1e-10)


def test_minimum_image_periodic_and_triclinic():
    box = md.PeriodicBox(jnp.array([5.0, 5.0, 5.0]))
    assert np.allclose(
        box.displacement(jnp.array([4.9, 0.1, 2.0]), jnp.array([0.1, 4.9, 2.0])), [-0.2, 0.2, 0.0]
    )
    cell = jnp.array([[5.0, 0.0, 0.0], [1.0, 5.0, 0.0], [0.5, 0.7, 5.0]])
    tri = md.TriclinicBox(cell)
    rng = np.random.default_rng(1)
    half = float(tri.min_width()) / 2
    for _ in range(50):
        # A true separation shorter than half the minimum width, hidden behind a random
        # lattice translation: the minimum image must recover it exactly.
        v = rng.normal(size=3)
        v *= rng.uniform(0.1, 0.99) * half / np.linalg.norm(v)
        a = rng.uniform(0, 5, 3)
        b = a - v + rng.integers(-2, 3, 3) @ np.asarray(cell)
        d = np.asarray(tri.displacement(jnp.asarray(a), jnp.asarray(b)))
        assert np.allclose(d, v, atol=1e-12)
    assert np.isclose(tri.volume(), abs(np.linalg.det(np.asarray(cell))))
    w = tri.wrap(jnp.asarray(rng.uniform(-10, 10, (5, 3))))
    s = np.asarray(tri.to_fractional(w))
    assert np.all((s >= -1e-12) & (s < 1 + 1e-12))


def test_periodic_wrap_maps_into_the_box():
    box = md.PeriodicBox(jnp.array([2.0, 3.0, 4.0]))
    r = jnp.array([[-0.5, 3.5, 9.0], [1.0, -7.0, 4.0]])
    assert np.allclose(box.wrap(r), [[1.5, 0.5, 1.0], [1.0, 2.0, 0.0]])


def test_lj_matches_ase_calculator(config):
    """ASE's LennardJones (energy shifted to zero at rc, as ASE does) as an independent reference."""
    ase = pytest.importorskip("ase")
    from ase.calculators.lj import LennardJones as AseLJ

    q, box = config
    atoms = ase.Atoms("Ar" * len(q), positions=q, cell=np.diag(box), pbc=True)
    atoms.calc = AseLJ(sigma=1.0, epsilon=1.0, rc=2.5, smooth=False)
    pot = md.Truncated(md.LennardJones(1.0, 1.0), cutoff=2.5, shift="energy")
    system = md.MDSystem(md.PeriodicBox(jnp.asarray(box)), pot, masses=jnp.ones(len(q)))
    assert np.isclose(
        system.potential_energy(jnp.asarray(q)), atoms.get_potential_energy(), rtol=1e-10
    )
    assert np.allclose(system.force(0.0, jnp.asarray(q)), atoms.get_forces(), rtol=1e-8, atol=1e-10)


class _Tether(md.AbstractPotential):
    """A user-written whole-system term: every particle tied to the origin."""

    k: jax.Array

    def energy(self, space, positions, pairs=None, species=None, exclusions=None):
        return 0.5 * self.k * jnp.sum(positions**2)

    def range(self):
        return 0.0


def test_potentials_add_into_flat_sums():
    lj, yk = md.LennardJones(1.0, 1.0), md.Yukawa(0.5, 2.0)
    bond = md.HarmonicBond(jnp.array([[0, 1]]), k=3.0, r0=1.0)
    tether = _Tether(jnp.asarray(0.2))
    assert isinstance(lj + yk, md.PairSum)
    total = lj + yk + bond + tether
    assert isinstance(total, md.PotentialSum) and len(total.terms) == 3  # PairSum, bond, tether
    assert len((bond + (tether + lj)).terms) == 3
    assert isinstance(sum([bond, tether]), md.PotentialSum)
    assert total.range() == float("inf") and (bond + tether).range() == 0.0
    assert md.Truncated(lj, 2.5).range() == 2.5 == (bond + md.Truncated(lj, 2.5)).range()
    q = jnp.array([[0.0, 0.0, 0.0], [1.2, 0.1, 0.0], [0.3, 1.4, 0.2]])
    space = md.FreeSpace()
    parts = [p.energy(space, q) for p in (lj, yk, bond, tether)]
    assert np.isclose(total.energy(space, q), sum(parts), rtol=1e-14)
    system = md.MDSystem(space, total, masses=jnp.ones(3))
    assert np.isclose(system.potential_energy(q), sum(parts), rtol=1e-14)
    fd = -central_fd(jax.jit(lambda x: system.potential_energy(x)), q, eps=1e-6)
    assert np.allclose(system.force(0.0, q), fd, rtol=1e-6, atol=1e-7)
