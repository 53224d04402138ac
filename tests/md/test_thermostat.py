"""Langevin BAOAB: target temperature within statistical error, equipartition over masses,
reproducible and resumable noise, vmap over seeds, gradients for a fixed key."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sciad
import sciad.md as md

from ..helpers import central_fd, tree_equal_bits


def _block_mean_err(x, blocks=20):
    """Mean and its standard error from block averages (handles time correlation)."""
    x = np.asarray(x)
    b = x[: len(x) // blocks * blocks].reshape(blocks, -1).mean(axis=1)
    return b.mean(), b.std(ddof=1) / np.sqrt(blocks)


def ideal_gas(n=216):
    """Non-interacting particles (soft spheres 50 apart) with two masses."""
    g = np.stack(np.meshgrid(*[np.arange(6)] * 3, indexing="ij"), -1).reshape(-1, 3)
    q = jnp.asarray(50.0 * g[:n], dtype=jnp.float64)
    masses = jnp.where(jnp.arange(n) % 2 == 0, 1.0, 4.0)
    system = md.MDSystem(md.FreeSpace(), md.SoftSphere(1.0, 1.0), masses=masses)
    return system, q


def _kinetic_by_mass(t, y, m):
    ke = jnp.sum(y[1] ** 2, axis=1) / (2 * m.masses)
    light = m.masses == 1.0
    return jnp.stack([jnp.sum(jnp.where(light, ke, 0.0)), jnp.sum(jnp.where(light, 0.0, ke))])


KE_SAVE = sciad.SaveAt(steps=5, fn=_kinetic_by_mass)


def test_ideal_gas_temperature_and_equipartition():
    system, q = ideal_gas()
    kT = 1.7
    p0 = md.maxwell_boltzmann(jax.random.key(1), system.masses, kT)
    nvt = md.LangevinBAOAB(friction=2.0, kT=kT, key=jax.random.key(0))
    traj = sciad.simulate(system, (q, p0), dt=0.01, n_steps=4000, integrator=nvt, saveat=KE_SAVE)
    n_half = q.shape[0] // 2
    t_light = np.asarray(traj.ys[:, 0]) / (1.5 * n_half)  # kT per particle from 3/2 kT
    t_heavy = np.asarray(traj.ys[:, 1]) / (1.5 * n_half)
    for series in (t_light, t_heavy):
        mean, err = _block_mean_err(series)
        assert abs(mean - kT) < 4 * err + 1e-3, (mean, err)
    # Forces really are zero: the O step alone samples Maxwell–Boltzmann exactly.
    assert float(jnp.max(jnp.abs(system.force(0.0, traj.y1[0])))) == 0.0


@pytest.mark.slow
def test_lj_liquid_reaches_target_temperature():
    from .test_system import lj_liquid

    system, (q, p) = lj_liquid(jnp.float64)
    kT = 1.2
    nvt = md.LangevinBAOAB(friction=1.0, kT=kT, key=jax.random.key(3))
    saveat = sciad.SaveAt(steps=10, fn=lambda t, y, m: m.temperature(y, integrator=nvt))
    traj = sciad.simulate(system, (q, p), dt=0.005, n_steps=12_000, integrator=nvt, saveat=saveat)
    temps = np.asarray(traj.ys)[200:]  # after 2,000 steps of equilibration
    mean, err = _block_mean_err(temps)
    assert abs(mean - kT) < 4 * err + 5e-3, (mean, err)


def test_resume_bit_for_bit_and_reproducible():
    system, q = ideal_gas(n=64)
    p0 = md.maxwell_boltzmann(jax.random.key(1), system.masses, 1.0)
    nvt = md.LangevinBAOAB(friction=1.0, kT=1.0, key=jax.random.key(5))
    whole = sciad.simulate(system, (q, p0), dt=0.01, n_steps=200, integrator=nvt)
    again = sciad.simulate(system, (q, p0), dt=0.01, n_steps=200, integrator=nvt)
    half = sciad.simulate(system, (q, p0), dt=0.01, n_steps=100, integrator=nvt)
    rest = sciad.simulate(
        system,
        half.y1,
        t0=half.t1,
        dt=0.01,
        n_steps=100,
        integrator=nvt,
        integrator_state=half.integrator_state,
    )
    assert tree_equal_bits(whole.y1, again.y1) and tree_equal_bits(whole.y1, rest.y1)


def test_vmap_over_seeds():
    system, q = ideal_gas(n=64)
    p0 = jnp.zeros_like(q)

    def run(key):
        nvt = md.LangevinBAOAB(friction=1.0, kT=1.0, key=key)
        return sciad.simulate(system, (q, p0), dt=0.01, n_steps=50, integrator=nvt).y1[1]

    keys = jax.random.split(jax.random.key(0), 3)
    batched = jax.vmap(run)(keys)
    assert np.allclose(batched[1], run(keys[1]), atol=1e-12)
    assert not np.allclose(batched[0], batched[1])


def test_gradient_for_fixed_noise_matches_fd():
    from .test_system import lj_liquid

    system, y0 = lj_liquid(jnp.float64)

    def f(params):
        gamma, kT = params[0], params[1]
        nvt = md.LangevinBAOAB(friction=gamma, kT=kT, key=jax.random.key(2))
        traj = sciad.simulate(system, y0, dt=0.005, n_steps=60, integrator=nvt)
        return system.potential_energy(traj.y1[0])

    x = jnp.array([1.0, 1.5])
    g = jax.grad(f)(x)
    assert np.allclose(g, central_fd(f, x, eps=1e-6), rtol=1e-6)


def test_with_neighbor_list_keeps_the_noise_stream():
    """Refreshing the cached force after a rebuild must not restart the random key."""
    from .test_run import liquid

    system, y0 = liquid(m=4)
    builder = md.NeighborListBuilder.create(system.space, y0[0], cutoff=2.5, skin=0.3)
    nvt = md.LangevinBAOAB(friction=1.0, kT=1.0, key=jax.random.key(7))
    a = sciad.simulate(system, y0, dt=0.005, n_steps=150, integrator=nvt)
    b = sciad.simulate(
        system, y0, dt=0.005, n_steps=150, integrator=md.NeighborListIntegrator(nvt, builder)
    )
    assert np.allclose(a.y1[0], b.y1[0], atol=1e-9)


def test_requires_an_md_system():
    with pytest.raises(TypeError, match="LangevinBAOAB runs a sciad.md.MDSystem"):
        md.LangevinBAOAB(1.0, 1.0, jax.random.key(0)).init(
            sciad.ode.Kepler(mu=1.0), 0.0, (jnp.ones(2), jnp.ones(2))
        )


def test_differentiable_wrt_temperature_through_eqx():
    nvt = md.LangevinBAOAB(friction=1.0, kT=1.0, key=jax.random.key(0))
    assert eqx.is_inexact_array(nvt.kT) and eqx.is_inexact_array(nvt.friction)


@pytest.mark.parametrize("kind", ["langevin", "nose_hoover", "brownian"])
def test_a_resume_state_from_another_point_is_refused(kind):
    """A thermostat's state caches the force at its point: resuming another (t0, y0)
    with it would step with a stale force, so it is refused before tracing (its own
    end point and a refreshed state are accepted)."""
    system = md.MDSystem(md.FreeSpace(), md.LennardJones(1.0, 1.0), masses=jnp.ones(2))
    y0 = (jnp.array([[0.0, 0.0, 0.0], [1.15, 0.0, 0.0]]), jnp.zeros((2, 3)))
    key = jax.random.key(0)
    integ = {
        "langevin": md.LangevinBAOAB(friction=1.0, kT=0.5, key=key),
        "nose_hoover": md.NoseHooverChain(kT=0.5, tau=0.5),
        "brownian": md.BrownianDynamics(friction=1.0, kT=0.5, key=key),
    }[kind]
    run = sciad.simulate(system, y0, dt=1e-3, n_steps=50, integrator=integ)
    again = dict(dt=1e-3, n_steps=5, integrator=integ)
    sciad.simulate(system, run.y1, t0=run.t1, integrator_state=run.integrator_state, **again)
    with pytest.raises(ValueError, match="stale cache"):
        sciad.simulate(system, y0, integrator_state=run.integrator_state, **again)
    fresh = integ.refresh(system, 0.0, y0, run.integrator_state)
    sciad.simulate(system, y0, integrator_state=fresh, **again)
