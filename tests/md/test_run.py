"""Neighbour-list-driven runs: the same trajectories and gradients as all-pairs runs,
rebuilds on the half-skin rule, overflow reported as a result code."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sciad
import sciad.md as md


def liquid(m=5, seed=0):
    """fcc m³ cells at ρ = 0.84 with thermal momenta (T = 1)."""
    q, box = md.lattice_for_density("fcc", 4 * m**3, 0.84)
    n = q.shape[0]
    p = md.maxwell_boltzmann(jax.random.key(seed), jnp.ones(n), 1.0, exact=True)
    pot = md.Truncated(md.LennardJones(1.0, 1.0), cutoff=2.5, shift="force")
    return md.MDSystem(box, pot, masses=jnp.ones(n)), (q, p)


@pytest.fixture(scope="module")
def system_and_state():
    return liquid()


def run(system, y0, integrator, n=200, throw=True):
    return sciad.simulate(system, y0, dt=0.005, n_steps=n, integrator=integrator, throw=throw)


@pytest.mark.parametrize("skin", [0.3, 0.05], ids=["skin0.3", "skin0.05-many-rebuilds"])
def test_same_trajectory_as_all_pairs(system_and_state, skin):
    system, y0 = system_and_state
    builder = md.NeighborListBuilder.create(system.space, y0[0], cutoff=2.5, skin=skin)
    ref = run(system, y0, sciad.VelocityVerlet())
    got = run(system, y0, md.NeighborListIntegrator(sciad.VelocityVerlet(), builder))
    assert got.result == sciad.RESULTS.successful
    assert np.allclose(got.y1[0], ref.y1[0], atol=1e-9) and np.allclose(
        got.y1[1], ref.y1[1], atol=1e-9
    )
    moved = float(jnp.max(jnp.linalg.norm(got.y1[0] - y0[0], axis=1)))
    if skin == 0.05:
        assert moved > skin  # the list must have been rebuilt along the way


def test_overflow_is_reported_not_hidden(system_and_state):
    system, y0 = system_and_state
    small = md.NeighborListBuilder.create(system.space, y0[0], cutoff=2.5, skin=0.3, capacity=100)
    integ = md.NeighborListIntegrator(sciad.VelocityVerlet(), small)
    traj = run(system, y0, integ, n=10, throw=False)
    assert traj.result == sciad.RESULTS.neighbor_overflow
    with pytest.raises(Exception, match="neighbour list overflowed"):
        run(system, y0, integ, n=10)


def test_gradient_matches_all_pairs():
    system, y0 = liquid(m=4)  # 256 atoms: box 6.72, two cells per axis

    def final_energy(eps, integrator):
        s = eqx.tree_at(lambda s: s.potential.potential.epsilon, system, eps)
        return s.potential_energy(run(s, y0, integrator, n=100).y1[0])

    builder = md.NeighborListBuilder.create(system.space, y0[0], cutoff=2.5, skin=0.3)
    nl = md.NeighborListIntegrator(sciad.VelocityVerlet(), builder)
    g_nl = jax.grad(final_energy)(jnp.asarray(1.0), nl)
    g_all = jax.grad(final_energy)(jnp.asarray(1.0), sciad.VelocityVerlet())
    assert np.isfinite(g_nl) and np.isclose(g_nl, g_all, rtol=1e-8)


def test_vmap_over_replicas(system_and_state):
    system, (q0, _) = system_and_state
    builder = md.NeighborListBuilder.create(system.space, q0, cutoff=2.5, skin=0.3)
    integ = md.NeighborListIntegrator(sciad.VelocityVerlet(), builder)
    n = q0.shape[0]

    def final(seed_temperature):
        p = md.maxwell_boltzmann(jax.random.key(0), jnp.ones(n), seed_temperature, exact=True)
        return run(system, (q0, p), integ, n=50).y1[0]

    temps = jnp.array([0.8, 1.2])
    batched = jax.vmap(final)(temps)
    looped = jnp.stack([final(t) for t in temps])
    assert np.allclose(batched, looped, atol=1e-10)
