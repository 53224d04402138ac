"""Bonded terms and exclusions: energies against hand values and independent NumPy, forces
and parameter gradients against finite differences, finite gradients at degenerate geometry,
NVE conservation of a molecular liquid, and exclusions through neighbour lists."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sciad
import sciad.md as md

from ..helpers import central_fd

THETA0 = np.deg2rad(109.47)

# Jitted evaluations: one compiled program each instead of many op-by-op compilations.
_potential = eqx.filter_jit(lambda system, q: system.potential_energy(q))
_force = eqx.filter_jit(lambda system, q: system.force(0.0, q))


def np_angle(a, b, c):
    """Angle at b by arccos (an independent formula)."""
    u, v = a - b, c - b
    return np.arccos(np.dot(u, v) / np.linalg.norm(u) / np.linalg.norm(v))


def np_dihedral(p0, p1, p2, p3):
    """IUPAC dihedral by projection onto the plane normal to the central bond."""
    b0, b1, b2 = p0 - p1, p2 - p1, p3 - p2
    b1 = b1 / np.linalg.norm(b1)
    v, w = b0 - np.dot(b0, b1) * b1, b2 - np.dot(b2, b1) * b1
    return np.arctan2(np.dot(np.cross(b1, v), w), np.dot(v, w))


def chains(n_chains=8, beads=4, box=8.0, seed=0):
    """Trans zig-zag united-atom chains (bond 1, angle 109.47°) on a cubic grid."""
    rng = np.random.default_rng(seed)
    s, c = np.sin(THETA0 / 2), np.cos(THETA0 / 2)
    mol = np.array([[k * s, (k % 2) * c, 0.0] for k in range(beads)])
    m = next(k for k in range(1, 10) if k**3 >= n_chains)
    sites = np.stack(np.meshgrid(*[np.arange(m)] * 3, indexing="ij"), -1).reshape(-1, 3)
    q = []
    for site in sites[:n_chains]:
        a = rng.normal(size=3) * 0.3  # a small random rotation about a random axis
        th = np.linalg.norm(a)
        kx = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]]) / th
        rot = np.eye(3) + np.sin(th) * kx + (1 - np.cos(th)) * kx @ kx
        q.append((mol - mol.mean(0)) @ rot.T + (site + 0.5) * box / m)
    q = np.concatenate(q)
    idx = np.arange(n_chains * beads).reshape(n_chains, beads)
    bonds = np.concatenate([np.stack([idx[:, k], idx[:, k + 1]], 1) for k in range(beads - 1)])
    angles = np.concatenate(
        [np.stack([idx[:, k], idx[:, k + 1], idx[:, k + 2]], 1) for k in range(beads - 2)]
    )
    dihedrals = np.concatenate(
        [np.stack([idx[:, k + a] for a in range(4)], 1) for k in range(beads - 3)]
    )
    return q, box, bonds, angles, dihedrals


def force_field(bonds, angles, dihedrals, lj_cut=2.5):
    return (
        md.Truncated(md.LennardJones(1.0, 1.0), cutoff=lj_cut, shift="force")
        + md.HarmonicBond(bonds, k=200.0, r0=1.0)
        + md.HarmonicAngle(angles, k=40.0, theta0=THETA0)
        + md.PeriodicDihedral(dihedrals, k=jnp.array(1.5), n=3, phase=0.0)
    )


def molecular_system(**kw):
    q, box, bonds, angles, dihedrals = chains(**kw)
    system = md.MDSystem(
        md.PeriodicBox(jnp.full(3, box)),
        force_field(bonds, angles, dihedrals),
        masses=jnp.ones(len(q)),
        exclusions=md.Exclusions.from_bonds(bonds, separation=3),
    )
    return system, jnp.asarray(q)


def test_hand_computed_values():
    space = md.FreeSpace()
    q = jnp.array([[1.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.5, np.sqrt(3) / 2, 1.0]])
    bond = md.HarmonicBond(
        jnp.array([[0, 1], [1, 2], [0, 2]]), k=2.0, r0=jnp.array([1.5, 1.0, 1.0])
    )
    # ½·2·0.5² + 0 + ½·2·(√2 − 1)²
    assert np.isclose(bond.energy(space, q), 0.25 + (np.sqrt(2) - 1) ** 2, rtol=1e-14)
    angle = md.HarmonicAngle(jnp.array([[0, 1, 2]]), k=3.0, theta0=np.pi / 3)
    assert np.isclose(angle.values(space, q)[0], np.pi / 2, rtol=1e-15)
    assert np.isclose(angle.energy(space, q), 0.5 * 3.0 * (np.pi / 6) ** 2, rtol=1e-14)
    dih = md.PeriodicDihedral(jnp.array([[0, 1, 2, 3]]), k=2.0, n=jnp.array([2]), phase=0.5)
    assert np.isclose(dih.values(space, q)[0], np.pi / 3, rtol=1e-14)  # +60°, IUPAC sign
    assert np.isclose(dih.energy(space, q), 2.0 * (1 + np.cos(2 * np.pi / 3 - 0.5)), rtol=1e-14)
    cis = q.at[3].set(jnp.array([1.0, 0.0, 1.0]))
    trans = q.at[3].set(jnp.array([-1.0, 0.0, 1.0]))
    assert float(dih.values(space, cis)[0]) == 0.0
    assert np.isclose(abs(float(dih.values(space, trans)[0])), np.pi, rtol=1e-15)
    q2 = jnp.array([[1.0, 0.0], [0.0, 0.0], [-1.0, 1.0]])  # 2-D: 135° at particle 1
    assert np.isclose(angle.values(space, q2)[0], 0.75 * np.pi, rtol=1e-15)


def test_energies_match_numpy_across_periodic_boundaries():
    q, box, bonds, angles, dihedrals = chains(seed=3)
    rng = np.random.default_rng(1)
    q = q + rng.normal(0, 0.1, q.shape)  # off-equilibrium
    k_b, r0 = rng.uniform(50, 150, len(bonds)), rng.uniform(0.9, 1.1, len(bonds))
    k_a, t0 = rng.uniform(20, 60, len(angles)), rng.uniform(1.7, 2.2, len(angles))
    k_d, n_d, ph = rng.uniform(0.5, 2, len(dihedrals)), rng.integers(1, 4, len(dihedrals)), 0.3
    e_ref = sum(
        0.5 * k * (np.linalg.norm(q[a] - q[b]) - r) ** 2
        for (a, b), k, r in zip(bonds, k_b, r0, strict=True)
    )
    e_ref += sum(
        0.5 * k * (np_angle(*q[t]) - t0_) ** 2 for t, k, t0_ in zip(angles, k_a, t0, strict=True)
    )
    e_ref += sum(
        k * (1 + np.cos(n * np_dihedral(*q[t]) - ph))
        for t, k, n in zip(dihedrals, k_d, n_d, strict=True)
    )
    pot = (
        md.HarmonicBond(bonds, k_b, r0)
        + md.HarmonicAngle(angles, k_a, t0)
        + md.PeriodicDihedral(dihedrals, k_d, n_d, ph)
    )
    space = md.PeriodicBox(jnp.full(3, box))
    shifted = space.wrap(jnp.asarray(q + np.array([3.3, -5.1, 7.7])))  # molecules cut by the box
    assert np.isclose(pot.energy(space, shifted), e_ref, rtol=1e-12)
    assert np.isclose(pot.energy(md.FreeSpace(), jnp.asarray(q)), e_ref, rtol=1e-12)


def test_forces_match_finite_differences():
    system, q = molecular_system(n_chains=2, box=6.0, seed=2)
    q = q + jnp.asarray(np.random.default_rng(0).normal(0, 0.05, q.shape))
    fd = -central_fd(jax.jit(lambda x: system.potential_energy(x)), q, eps=1e-6)
    f = jax.jit(lambda x: system.force(0.0, x))(q)
    assert np.allclose(f, fd, rtol=1e-6, atol=1e-6)
    assert np.allclose(jnp.sum(f, axis=0), 0.0, atol=1e-10)  # Newton's third law


def test_parameter_gradients_match_finite_differences():
    system, q = molecular_system(n_chains=2, box=6.0, seed=4)
    q = q + jnp.asarray(np.random.default_rng(2).normal(0, 0.08, q.shape))
    leaves = lambda s: (
        s.potential.terms[1].k,
        s.potential.terms[1].r0,
        s.potential.terms[2].k,
        s.potential.terms[2].theta0,
        s.potential.terms[3].k,
        s.potential.terms[3].phase,
    )

    @jax.jit
    def energy(theta):
        s = eqx.tree_at(leaves, system, tuple(theta[i] for i in range(6)))
        return s.potential_energy(q)

    theta = jnp.array([200.0, 1.0, 40.0, THETA0, 1.5, 0.2])
    assert np.allclose(jax.grad(energy)(theta), central_fd(energy, theta, eps=1e-6), rtol=1e-7)


@pytest.mark.parametrize(
    "where",
    ["bond-collapsed", "angle-pi", "angle-zero", "angle-collapsed", "dihedral-collinear"],
)
def test_gradients_finite_at_degenerate_geometry(where):
    q = jnp.array([[1.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.5, 0.8, 1.0]])
    q = {
        "bond-collapsed": q.at[0].set(q[1]),
        "angle-pi": q.at[2].set(jnp.array([-1.0, 0.0, 0.0])),
        "angle-zero": q.at[2].set(jnp.array([2.0, 0.0, 0.0])),
        "angle-collapsed": q.at[2].set(q[1]),
        "dihedral-collinear": q.at[2].set(jnp.array([-1.0, 0.0, 0.0])),
    }[where]
    pot = (
        md.HarmonicBond(jnp.array([[0, 1]]), k=5.0, r0=1.0)
        + md.HarmonicAngle(jnp.array([[0, 1, 2]]), k=5.0, theta0=2.0)
        + md.PeriodicDihedral(jnp.array([[0, 1, 2, 3]]), k=1.0, n=1, phase=0.3)
    )
    space = md.PeriodicBox(jnp.full(3, 10.0))
    e, g = eqx.filter_value_and_grad(lambda a: a[1].energy(space, a[0]))((q, pot))
    assert np.isfinite(e)
    assert all(np.all(np.isfinite(x)) for x in jax.tree.leaves(g))


def test_near_collinear_gradients_match_finite_differences():
    """atan2 forms keep full precision near θ = π, where arccos would lose it."""
    d = 1e-4
    q = jnp.array([[1.0, 0.0, 0.0], [0.0, 0.0, 0.0], [-1.0, d, 0.0], [-1.0, d, 1.0]])
    angle = md.HarmonicAngle(jnp.array([[0, 1, 2]]), k=5.0, theta0=2.0)
    space = md.FreeSpace()
    assert np.isclose(angle.values(space, q)[0], np.pi - np.arctan2(d, 1.0), rtol=1e-15, atol=0)
    g = jax.grad(lambda x: angle.energy(space, x))(q)
    assert np.allclose(
        g, central_fd(lambda x: angle.energy(space, x), q, eps=1e-8), rtol=1e-5, atol=1e-5
    )


def test_exclusions_from_bonds_and_masking():
    bonds = np.array([[0, 1], [1, 2], [2, 3], [3, 4], [2, 5]])
    ex = md.Exclusions.from_bonds(bonds, separation=3)
    expect = {(0, 1), (1, 2), (2, 3), (3, 4), (2, 5), (0, 2), (1, 3), (2, 4), (1, 5), (3, 5),
              (0, 3), (1, 4), (0, 5), (4, 5)}  # fmt: skip
    assert {tuple(p) for p in np.asarray(ex.pairs)} == expect
    assert {tuple(p) for p in np.asarray(md.Exclusions.from_bonds(bonds, 1).pairs)} == {
        tuple(b) for b in bonds
    }
    rng = np.random.default_rng(0)
    i, j = rng.integers(0, 8, 200), rng.integers(0, 8, 200)
    got = np.asarray(ex.excluded(jnp.asarray(i), jnp.asarray(j)))
    assert np.array_equal(
        got, [(min(a, b), max(a, b)) in expect for a, b in zip(i, j, strict=True)]
    )


def test_excluded_pairs_leave_the_pair_sum():
    system, q = molecular_system(n_chains=8, box=8.0, seed=5)
    lj_only = md.Truncated(md.LennardJones(1.0, 1.0), cutoff=2.5, shift="force")
    full = md.MDSystem(system.space, lj_only, masses=system.masses)
    cut = eqx.tree_at(lambda s: s.potential, system, lj_only)
    space, ex = system.space, np.asarray(system.exclusions.pairs)
    r = jnp.linalg.norm(jax.vmap(space.displacement)(q[ex[:, 0]], q[ex[:, 1]]), axis=1)
    e_excl = float(jnp.sum(jax.vmap(lj_only.pair_energy)(r)))
    assert len(ex) == 8 * 6  # 3 + 2 + 1 pairs within three bonds per 4-bead chain
    assert np.isclose(_potential(cut, q), _potential(full, q) - e_excl, rtol=1e-12)


@pytest.mark.slow
def test_exclusions_with_neighbour_lists_equal_all_pairs():
    system, q = molecular_system(n_chains=8, box=9.0, seed=6)
    builder = md.NeighborListBuilder.create(system.space, q, cutoff=2.5, skin=0.4, method="cell")
    assert builder.grid is not None  # the cell-list path
    neighbors = eqx.filter_jit(builder.build)(system.space, q)
    listed = eqx.tree_at(lambda s: s.neighbors, system, neighbors, is_leaf=lambda x: x is None)
    assert np.isclose(_potential(listed, q), _potential(system, q), rtol=1e-12)
    assert np.allclose(_force(listed, q), _force(system, q), rtol=1e-10, atol=1e-10)
    p = md.maxwell_boltzmann(jax.random.key(0), system.masses, 1.0)
    integ = md.NeighborListIntegrator(sciad.VelocityVerlet(), builder)
    a = sciad.simulate(system, (q, p), dt=0.004, n_steps=50, integrator=integ)
    b = sciad.simulate(system, (q, p), dt=0.004, n_steps=50)
    assert np.allclose(a.y1[0], b.y1[0], atol=1e-9) and np.allclose(a.y1[1], b.y1[1], atol=1e-9)


def _energies(system, y0, dt, t1):
    saveat = sciad.SaveAt(steps=10, fn=lambda t, y, m: m.energy(y))
    return np.asarray(sciad.simulate(system, y0, dt=dt, n_steps=round(t1 / dt), saveat=saveat).ys)


@pytest.mark.slow
def test_molecular_liquid_nve_conserves_energy_second_order():
    """8 united-atom butane-like chains (32 beads: bonds, angles, dihedrals, LJ between
    non-excluded pairs), T = 1, over 8 time units: velocity Verlet keeps max |ΔE| at
    1.1e-4 of the kinetic energy (dt = 0.002), with no drift (3e-5), and the fluctuation
    shrinks 3.97× when dt halves (second order). Bounds allow about 3×."""
    system, q = molecular_system()
    p = md.maxwell_boltzmann(jax.random.key(1), system.masses, 1.0, exact=True)
    e0 = float(system.energy((q, p)))
    kinetic = float(system.kinetic_energy(p))
    big = _energies(system, (q, p), 0.004, 8.0)
    small = _energies(system, (q, p), 0.002, 8.0)
    dev_big, dev_small = np.max(np.abs(big - e0)), np.max(np.abs(small - e0))
    assert dev_small / kinetic < 3e-4
    assert 3.0 < dev_big / dev_small < 5.0
    assert abs(small[-20:].mean() - small[:20].mean()) / kinetic < 1e-4  # no drift


@pytest.mark.slow
def test_gradient_through_trajectory_matches_finite_differences():
    system, q = molecular_system(n_chains=1, box=6.0, seed=7)
    p = md.maxwell_boltzmann(jax.random.key(2), system.masses, 1.0)

    @jax.jit
    def final_energy(theta):
        where = lambda s: (s.potential.terms[1].k, s.potential.terms[3].k)
        s = eqx.tree_at(where, system, (theta[0], theta[1]))
        return s.potential_energy(sciad.simulate(s, (q, p), dt=0.005, n_steps=100).y1[0])

    theta = jnp.array([200.0, 1.5])
    g = jax.grad(final_energy)(theta)
    assert np.allclose(g, central_fd(final_energy, theta, eps=1e-5), rtol=1e-6)
