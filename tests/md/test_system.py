"""MD systems through sciad.simulate: NVE conservation, gradients through trajectories,
agreement between adjoints, batching over replicas."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sciad
import sciad.md as md

from ..helpers import central_fd, fd_directional


def fcc(m, density):
    """An fcc lattice of m³ cells (4 m³ atoms) at the given number density, and its box edge."""
    a = (4 / density) ** (1 / 3)
    base = np.array([[0, 0, 0], [0.5, 0.5, 0], [0.5, 0, 0.5], [0, 0.5, 0.5]])
    g = np.stack(np.meshgrid(*[np.arange(m)] * 3, indexing="ij"), -1).reshape(-1, 1, 3)
    return (g + base).reshape(-1, 3) * a, a * m


def lj_liquid(dtype, sigma=1.0, epsilon=1.0, seed=0):
    q, L = fcc(3, 0.84)  # 108 atoms, box 5.04 > 2 × cut-off
    n = len(q)
    rng = np.random.default_rng(seed)
    p = rng.normal(size=q.shape)
    p -= p.mean(0)
    p *= np.sqrt((3 * n - 3) / np.sum(p**2))  # T = 1
    pot = md.Truncated(
        md.LennardJones(jnp.asarray(sigma, dtype), jnp.asarray(epsilon, dtype)), 2.5, "force"
    )
    system = md.MDSystem(md.PeriodicBox(jnp.full(3, L, dtype)), pot, masses=jnp.ones(n, dtype))
    return system, (jnp.asarray(q, dtype), jnp.asarray(p, dtype))


@pytest.mark.slow
@pytest.mark.parametrize(
    "dtype, bound", [(jnp.float64, 2e-4), (jnp.float32, 2e-4)], ids=["f64", "f32"]
)
def test_nve_energy_bounded_over_10000_steps(dtype, bound):
    """Velocity Verlet, dt = 0.005, shifted-force LJ at ρ = 0.84: measured max |ΔE/E| is
    7.7e-5 (f64) and 9.1e-5 (f32) with drift ~1e-5; the bound allows 2×."""
    system, y0 = lj_liquid(dtype)
    saveat = sciad.SaveAt(steps=100, fn=lambda t, y, m: m.energy(y))
    traj = sciad.simulate(system, y0, dt=jnp.asarray(0.005, dtype), n_steps=10_000, saveat=saveat)
    e = np.asarray(traj.ys, np.float64)
    e0 = float(system.energy(y0))
    assert np.max(np.abs(e - e0)) / abs(e0) < bound
    assert abs(e[-10:].mean() - e[:10].mean()) / abs(e0) < 5e-5  # no secular drift
    assert np.allclose(
        jnp.sum(traj.y1[1], axis=0), 0.0, atol=1e-9 if dtype == jnp.float64 else 1e-3
    )


def _potential(t, y, m):
    return m.potential_energy(y[0])


POTENTIAL_EVERY_10 = sciad.SaveAt(steps=10, fn=_potential)  # one object: compiled once


def mean_potential(params, adjoint=sciad.CheckpointAdjoint(), n_steps=100):
    system, y0 = lj_liquid(jnp.float64)
    system = eqx.tree_at(
        lambda s: (s.potential.potential.sigma, s.potential.potential.epsilon),
        system,
        (params[0], params[1]),
    )
    traj = sciad.simulate(
        system, y0, dt=0.005, n_steps=n_steps, adjoint=adjoint, saveat=POTENTIAL_EVERY_10
    )
    return jnp.mean(traj.ys)


P = jnp.array([1.0, 1.0])


def test_gradient_wrt_sigma_epsilon_matches_fd():
    g = jax.grad(mean_potential)(P)
    fd = central_fd(mean_potential, P, eps=1e-6)
    assert np.all(np.isfinite(g)) and np.allclose(g, fd, rtol=1e-6)


def test_adjoints_agree_and_forward_mode():
    ga = jax.grad(lambda p: mean_potential(p, sciad.CheckpointAdjoint()))(P)
    gb = jax.grad(lambda p: mean_potential(p, sciad.DirectAdjoint()))(P)
    assert np.allclose(ga, gb, rtol=1e-11)
    v = jnp.array([0.3, -1.0])
    tangent = jax.jvp(mean_potential, (P,), (v,))[1]
    assert np.isclose(tangent, ga @ v, rtol=1e-10)
    assert np.isclose(tangent, fd_directional(mean_potential, P, v), rtol=1e-6)


def test_gradient_wrt_box_and_masses():
    system, y0 = lj_liquid(jnp.float64)

    def f(box, masses):
        s = eqx.tree_at(lambda s: (s.space.lengths, s.masses), system, (box, masses))
        return sciad.simulate(s, y0, dt=0.005, n_steps=50).y1[0][0, 0]

    gbox, gm = jax.grad(f, argnums=(0, 1))(system.space.lengths, system.masses)
    fd_box = central_fd(lambda b: f(b, system.masses), system.space.lengths)
    assert np.allclose(gbox, fd_box, rtol=1e-6, atol=1e-9)
    v = jnp.sin(jnp.arange(108.0))
    assert np.isclose(
        gm @ v, fd_directional(lambda m: f(system.space.lengths, m), system.masses, v), rtol=1e-6
    )


def test_vmap_over_replicas_of_epsilon():
    eps = jnp.array([0.8, 1.0, 1.2])
    batched = jax.vmap(lambda e: mean_potential(jnp.stack([1.0, e]), n_steps=50))(eps)
    looped = jnp.stack([mean_potential(jnp.stack([1.0, e]), n_steps=50) for e in eps])
    assert np.allclose(batched, looped, rtol=1e-12)


# --------------------------------------------------------------------------- bad data at run time


def _sparse_list_on_dense():
    """A list sized on a sparse configuration, built on a dense one: it overflows."""
    box = md.PeriodicBox(jnp.full(3, 5.0))
    dense = jnp.asarray(fcc(1, 0.5)[0] + 0.25, jnp.float64)  # 4 atoms, all within 2.0
    sparse = jnp.array([[0.5, 0.5, 0.5], [3.0, 0.5, 0.5], [0.5, 3.0, 0.5], [0.5, 0.5, 3.0]])
    builder = md.NeighborListBuilder.create(box, sparse, cutoff=2.0, skin=0.2)
    system = md.MDSystem(box, md.Truncated(md.LennardJones(1.0, 1.0), 2.0), jnp.ones(4))
    return system, builder, dense


def _with_list(system, nbrs):
    return eqx.tree_at(lambda s: s.neighbors, system, nbrs, is_leaf=lambda x: x is None)


def test_overflowed_list_inside_the_system_never_drops_pairs():
    system, builder, dense = _sparse_list_on_dense()
    nbrs = builder.build(system.space, dense)
    assert bool(nbrs.did_overflow) and int(nbrs.count) == 6 > builder.capacity
    listed = _with_list(system, nbrs)
    with pytest.raises(ValueError, match="MDSystem.neighbors overflowed"):
        listed.potential_energy(dense)  # concrete flag: before tracing
    energy = eqx.filter_jit(lambda s, q: s.potential_energy(q))
    with pytest.raises(Exception, match="MDSystem.neighbors overflowed"):
        jax.block_until_ready(energy(listed, dense))  # traced flag: at run time
    run = eqx.filter_jit(
        lambda s, q: sciad.simulate(s, (q, jnp.zeros_like(q)), dt=1e-3, n_steps=3, throw=False)
    )
    with pytest.raises(Exception, match="MDSystem.neighbors overflowed"):
        jax.block_until_ready(run(listed, dense).y1)
    # A list with room gives the all-pairs energy: 6 pairs at distance a/√2, a = 2.0,
    # u = 4(r⁻¹² − r⁻⁶) each (independent of sciad's pair code).
    roomy = md.NeighborListBuilder.create(system.space, dense, cutoff=2.0, skin=0.2)
    r = float(np.sqrt(2.0))
    expected = 6 * 4 * (r**-12 - r**-6)
    assert np.isclose(
        float(energy(_with_list(system, roomy.build(system.space, dense)), dense)), expected
    )
    assert np.isclose(float(system.potential_energy(dense)), expected)


def test_coincident_particles_refused_before_and_reported_at_run_time():
    system = md.MDSystem(md.FreeSpace(), md.LennardJones(1.0, 1.0), masses=jnp.ones(3))
    q = jnp.array([[0.0, 0.0, 0.0], [1.2, 0.0, 0.0], [1.2, 0.0, 0.0]])
    y0 = (q, jnp.zeros_like(q))
    with pytest.raises(ValueError, match="particles 1 and 2 are at the same point"):
        sciad.simulate(system, y0, dt=0.01, n_steps=2)
    traj = jax.jit(lambda y: sciad.simulate(system, y, dt=0.01, n_steps=2, throw=False))(y0)
    assert traj.result == sciad.RESULTS.nonfinite_state
    assert int(traj.stats["first_nonfinite_step"]) == 1  # the very first step's state
    # An excluded pair does not interact: allowed, and the energy is that of the other pairs.
    excluded = md.MDSystem(
        md.FreeSpace(),
        md.LennardJones(1.0, 1.0),
        masses=jnp.ones(3),
        exclusions=jnp.array([[1, 2]]),
    )
    u = 4 * (1.2**-12 - 1.2**-6)
    assert np.isclose(float(excluded.potential_energy(q)), 2 * u)
    # Bonded terms alone read no pairs: a collapsed bond is finite (½ k r0²).
    bond = md.MDSystem(md.FreeSpace(), md.HarmonicBond(jnp.array([[1, 2]]), 3.0, 0.5), jnp.ones(3))
    assert np.isclose(float(bond.potential_energy(q)), 0.5 * 3.0 * 0.25)


def test_species_energy_matches_the_matrix_entries():
    """Labels index the matrices exactly (no clamping): a hand-summed reference."""
    sigma = jnp.array([[1.0, 1.1], [1.1, 1.3]])
    eps = jnp.array([[1.0, 0.5], [0.5, 2.0]])
    species = jnp.array([0, 1, 1])
    q = jnp.array([[0.0, 0.0, 0.0], [1.3, 0.0, 0.0], [0.0, 1.5, 0.0]])
    system = md.MDSystem(md.FreeSpace(), md.LennardJones(sigma, eps), jnp.ones(3), species=species)
    expected = 0.0
    for i, j in ((0, 1), (0, 2), (1, 2)):
        a, b = int(species[i]), int(species[j])
        r = float(np.linalg.norm(q[i] - q[j]))
        s, e = float(sigma[a, b]), float(eps[a, b])
        expected += 4 * e * ((s / r) ** 12 - (s / r) ** 6)
    assert np.isclose(float(system.potential_energy(q)), expected, rtol=1e-12)
    with pytest.raises(ValueError, match=r"MDSystem.species must lie in \[0, 2\)"):
        md.MDSystem(md.FreeSpace(), md.LennardJones(sigma, eps), jnp.ones(3), species=species + 1)


def test_reweighting_with_an_overflowing_list_raises():
    """Per-frame lists that overflow are an error at run time, not a truncated energy."""
    system, builder, dense = _sparse_list_on_dense()
    frames = jnp.stack([dense, dense + 0.01])

    def fn(s, q):
        return s.potential_energy(q)

    with pytest.raises(Exception, match="MDSystem.neighbors overflowed"):
        jax.block_until_ready(
            md.reweighted_average(system, system, frames, 1.0, fn, builder=builder)[0]
        )
    roomy = md.NeighborListBuilder.create(system.space, dense, cutoff=2.0, skin=0.2)
    got, n_eff = md.reweighted_average(system, system, frames, 1.0, fn, builder=roomy)
    want, _ = md.reweighted_average(system, system, frames, 1.0, fn)
    assert np.isclose(float(got), float(want), rtol=1e-12) and np.isclose(float(n_eff), 2.0)


def _langevin(friction=1.0):
    return md.LangevinBAOAB(friction=friction, kT=1.0, key=jax.random.key(0))


def test_temperature_counts_degrees_of_freedom_by_the_integrator():
    """N_f = n·d − d, about the centre of mass, for integrators that conserve the total
    momentum; n·d, all of K, for stochastic thermostats (also inside the wrappers)."""
    system, (q, p) = lj_liquid(jnp.float64)
    n = q.shape[0]
    p = p + 0.3 * system.masses[:, None]  # a drifting centre of mass
    kinetic = float(system.kinetic_energy(p))
    com = float(jnp.sum(jnp.sum(p, axis=0) ** 2) / (2 * jnp.sum(system.masses)))
    nve, all_dof = 2 * (kinetic - com) / (3 * n - 3), 2 * kinetic / (3 * n)
    builder = md.NeighborListBuilder.create(system.space, q, cutoff=2.5, skin=0.3)
    conserving = [
        None,
        sciad.VelocityVerlet(),
        sciad.Yoshida4(),
        md.NoseHooverChain(kT=1.0, tau=0.5),
        md.NeighborListIntegrator(sciad.VelocityVerlet(), builder),
        _langevin(friction=0.0),  # no thermostat: velocity Verlet
    ]
    stochastic = [
        _langevin(),
        md.BrownianDynamics(friction=1.0, kT=1.0, key=jax.random.key(0)),
        md.NeighborListIntegrator(_langevin(), builder),
        md.CellRescaling(
            _langevin(), pressure=1.0, compressibility=0.1, tau_p=1.0, key=jax.random.key(1)
        ),
    ]
    for integ in conserving:
        assert np.isclose(system.temperature((q, p), integrator=integ), nve, rtol=1e-14), integ
    for integ in stochastic:
        got = system.temperature((q, p), integrator=integ, kB=2.0)
        assert np.isclose(got, all_dof / 2.0, rtol=1e-14), integ


def test_nve_temperature_is_unchanged_and_galilean_invariant():
    """With zero total momentum the NVE temperature is 2K/(n·d − d) as before (the
    liquid's momenta are scaled to T = 1 exactly); a uniform drift does not heat it."""
    system, (q, p) = lj_liquid(jnp.float64)
    assert np.isclose(system.temperature((q, p)), 1.0, rtol=1e-14)
    drifted = p + system.masses[:, None] * jnp.array([[0.5, -1.0, 2.0]])
    assert np.isclose(system.temperature((q, drifted)), 1.0, rtol=1e-13)
    assert system.temperature((q, drifted), integrator=_langevin()) > 1.5  # the drift counts


def test_langevin_temperature_averages_to_kT():
    """An ideal gas of n = 8 (zero forces: BAOAB's O step samples the momenta exactly)
    under Langevin at kT = 1.3: the mean of `temperature(y, integrator=nvt)` (K over n·d)
    and of the default reading (K about the centre of mass over n·d − d, unbiased for
    any canonical sample too) are kT within 4 block-averaged standard errors. The old
    reading, all of K over n·d − d, is n/(n − 1) = 14% high here, more than 20 errors
    away (measured: 1.301 ± 0.007 and 1.295 ± 0.008 against 1.487)."""
    n, kT = 8, 1.3
    q = jnp.asarray(50.0 * np.arange(3 * n, dtype=np.float64).reshape(n, 3))
    system = md.MDSystem(md.FreeSpace(), md.SoftSphere(1.0, 1.0), masses=jnp.linspace(1, 4, n))
    nvt = md.LangevinBAOAB(friction=5.0, kT=kT, key=jax.random.key(2))

    def readings(t, y, m):
        old = 2 * m.kinetic_energy(y[1]) / (3 * n - 3)
        return jnp.stack([m.temperature(y, integrator=nvt), m.temperature(y), old])

    p0 = md.maxwell_boltzmann(jax.random.key(1), system.masses, kT)
    saveat = sciad.SaveAt(steps=1, fn=readings)
    traj = sciad.simulate(system, (q, p0), dt=0.1, n_steps=6000, integrator=nvt, saveat=saveat)
    temps = np.asarray(traj.ys)
    blocks = temps[: len(temps) // 40 * 40].reshape(40, -1, 3).mean(axis=1)
    mean, err = blocks.mean(axis=0), blocks.std(axis=0, ddof=1) / np.sqrt(40)
    assert np.all(np.abs(mean[:2] - kT) < 4 * err[:2]), (mean, err)
    assert np.all(err[:2] < 0.01 * kT), err
    assert abs(mean[2] - kT) > 20 * err[2], (mean, err)  # the old count is detected
