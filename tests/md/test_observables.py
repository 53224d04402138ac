"""Observables against independent relations: the virial against strain derivatives of the
energy, g(r) of an ideal gas and an fcc crystal, MSD against ballistic and Einstein limits."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sciad
import sciad.md as md

from ..helpers import central_fd
from .test_pair import config  # noqa: F401  (shared fixture)


def _system(box):
    # r_c just below L/2 = 2.5: the strained boxes of the finite differences stay valid.
    pot = md.Truncated(md.LennardJones(1.0, 1.0), cutoff=2.45, shift="energy")
    return md.MDSystem(md.PeriodicBox(jnp.asarray(box)), pot, masses=jnp.ones(64))


def test_virial_equals_minus_strain_derivative(config):  # noqa: F811
    q, box = config
    q = jnp.asarray(q)
    system = _system(box)
    W = md.virial_tensor(system, q)
    assert np.allclose(W, W.T, rtol=1e-12)
    for a in range(3):

        def energy(e, a=a):
            scale = jnp.ones(3).at[a].add(e)  # strain ε along axis a: q_a, L_a → (1 + ε)·
            s = _system(jnp.asarray(box) * scale)
            return s.potential_energy(q * scale[None, :])

        dU = central_fd(energy, jnp.asarray(0.0), eps=1e-6)[()]
        assert np.isclose(W[a, a], -dU, rtol=1e-7)


def test_pressure_ideal_gas_and_virial_route(config):  # noqa: F811
    q, box = config
    q = jnp.asarray(q)
    system = _system(box)
    p = md.maxwell_boltzmann(jax.random.key(0), system.masses, 1.3)
    P = md.pressure(system, (q, p))
    volume = float(np.prod(box))
    kinetic = float(jnp.sum(p**2)) / 2
    expect = (2 * kinetic + float(jnp.trace(md.virial_tensor(system, q)))) / (3 * volume)
    assert np.isclose(P, expect, rtol=1e-12)
    far = md.MDSystem(
        md.PeriodicBox(jnp.full(3, 1000.0)), md.SoftSphere(1.0, 1.0), masses=jnp.ones(64)
    )
    assert np.isclose(md.pressure(far, (q, p)), 2 * kinetic / (3 * 1e9), rtol=1e-12)  # P V = N kT


def test_rdf_ideal_gas_is_one():
    rng = np.random.default_rng(0)
    q = jnp.asarray(rng.uniform(0, 10.0, (1500, 3)))
    space = md.PeriodicBox(jnp.full(3, 10.0))
    r, g = md.radial_distribution(space, q, r_max=4.0, n_bins=20)
    assert r.shape == (20,)
    assert abs(float(jnp.mean(g[5:])) - 1.0) < 0.02
    assert float(jnp.max(jnp.abs(g[5:] - 1.0))) < 0.1


def test_rdf_fcc_first_shell_has_twelve_neighbours():
    q, box = md.lattice("fcc", 4, 1.6)
    r, g = md.radial_distribution(box, q, r_max=3.0, n_bins=300)
    rho = (q.shape[0] - 1) / float(box.volume())  # g is normalised by N(N−1)/2 pairs
    dr = float(r[1] - r[0])
    shell = (r > 1.0) & (r < 0.5 * (1.6 / np.sqrt(2) + 1.6))  # between 1st and 2nd shells
    volumes = 4 * np.pi / 3 * ((r + dr / 2) ** 3 - (r - dr / 2) ** 3)  # exact bin shells
    n1 = float(jnp.sum(jnp.where(shell, g * volumes, 0.0))) * rho
    assert np.isclose(n1, 12.0, rtol=1e-3)
    assert np.isclose(float(r[jnp.argmax(g)]), 1.6 / np.sqrt(2), atol=dr)


def test_smoothed_rdf_is_differentiable():
    rng = np.random.default_rng(1)
    q = jnp.asarray(rng.uniform(0, 4.0, (20, 3)))
    space = md.PeriodicBox(jnp.full(3, 4.0))
    target = jnp.linspace(0.5, 1.5, 30)

    def loss(x):
        return jnp.sum((md.radial_distribution(space, x, 2.0, 30, smoothing=0.1)[1] - target) ** 2)

    g = jax.grad(loss)(q)
    assert np.all(np.isfinite(g))
    v = jnp.asarray(rng.normal(size=q.shape))
    fd = (loss(q + 1e-6 * v) - loss(q - 1e-6 * v)) / 2e-6
    assert np.isclose(jnp.sum(g * v), fd, rtol=1e-6)


def _free(n=400, seed=0):
    g = np.stack(np.meshgrid(*[np.arange(8)] * 3, indexing="ij"), -1).reshape(-1, 3)[:n]
    q = jnp.asarray(100.0 * g, dtype=jnp.float64)
    return md.MDSystem(md.FreeSpace(), md.SoftSphere(1.0, 1.0), masses=jnp.ones(n)), q


def _state(t, y, m):
    return y[0]


STATE_EVERY_50 = sciad.SaveAt(t0=True, steps=50, fn=_state)


def test_msd_ballistic():
    system, q = _free()
    p = md.maxwell_boltzmann(jax.random.key(0), system.masses, 1.0)
    traj = sciad.simulate(system, (q, p), dt=0.01, n_steps=500, saveat=STATE_EVERY_50)
    msd = md.mean_squared_displacement(traj.ys)
    v2 = float(jnp.mean(jnp.sum(p**2, axis=1)))
    assert np.allclose(msd, v2 * np.asarray(traj.ts) ** 2, rtol=1e-10)


def test_msd_einstein_diffusion_under_langevin():
    """Free Langevin particles: MSD = 2dD(t − (1 − e^{−γt})/γ), D = kT/(mγ)."""
    system, q = _free()
    kT, gamma = 1.0, 5.0
    p = md.maxwell_boltzmann(jax.random.key(1), system.masses, kT)
    nvt = md.LangevinBAOAB(friction=gamma, kT=kT, key=jax.random.key(2))
    traj = sciad.simulate(
        system, (q, p), dt=0.01, n_steps=2000, integrator=nvt, saveat=STATE_EVERY_50
    )
    msd = np.asarray(md.mean_squared_displacement(traj.ys))
    t = np.asarray(traj.ts)
    D = kT / gamma
    exact = 6 * D * (t - (1 - np.exp(-gamma * t)) / gamma)
    assert np.allclose(msd[4:], exact[4:], rtol=0.15)  # 400 particles: ~4% statistical error
    assert abs(np.polyfit(t[20:], msd[20:], 1)[0] / 6 - D) < 0.15 * D


@pytest.mark.slow
def test_pressure_is_minus_volume_derivative_for_bonds_lj_and_ewald():
    """Virial pressure (bonded + LJ + Ewald, strain virial by autodiff) = −dU/dV under
    isotropic scaling of positions and box."""
    from .test_bonded import chains, force_field

    q, box, bonds, angles, dihedrals = chains(seed=8)
    q = jnp.asarray(q)
    n = q.shape[0]
    charges = jnp.asarray(np.tile([0.4, -0.4], n // 2))
    space = md.PeriodicBox(jnp.full(3, box))
    pot = force_field(bonds, angles, dihedrals) + md.Ewald.for_accuracy(
        charges, space, cutoff=2.5, accuracy=1e-8
    )
    system = md.MDSystem(
        space, pot, masses=jnp.ones(n), exclusions=md.Exclusions.from_bonds(bonds, 3)
    )
    W = eqx.filter_jit(md.virial_tensor)(system, q)
    assert np.allclose(W, W.T, rtol=1e-9, atol=1e-9)

    @jax.jit
    def energy(s):
        scaled = eqx.tree_at(lambda m: m.space, system, md.PeriodicBox(space.lengths * s))
        return scaled.potential_energy(q * s)

    volume = box**3
    dU_dV = central_fd(energy, jnp.asarray(1.0), eps=1e-6)[()] / (3 * volume)
    assert np.isclose(float(jnp.trace(W)) / (3 * volume), -dU_dV, rtol=1e-7)
    p = md.maxwell_boltzmann(jax.random.key(3), system.masses, 1.0)
    kinetic = float(system.kinetic_energy(p))
    expect = (2 * kinetic + float(jnp.trace(W))) / (3 * volume)
    assert np.isclose(eqx.filter_jit(md.pressure)(system, (q, p)), expect, rtol=1e-12)


def test_strain_virial_of_a_pair_potential_equals_the_analytic_one(config):  # noqa: F811
    q, box = config
    q = jnp.asarray(q)
    system = _system(box)
    pairs = system.pairs(q)
    analytic = md.virial_tensor(system, q)
    by_strain = md.AbstractPotential.virial(system.potential, system.space, q, pairs)
    assert np.allclose(by_strain, analytic, rtol=1e-10, atol=1e-10)
