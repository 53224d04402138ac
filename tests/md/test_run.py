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
    # Saved observables see the list during the run; the overflow stays a result code.
    saveat = sciad.SaveAt(steps=5, fn=lambda t, y, m: m.potential_energy(y[0]))
    saved = sciad.simulate(
        system, y0, dt=0.005, n_steps=10, integrator=integ, saveat=saveat, throw=False
    )
    assert saved.result == sciad.RESULTS.neighbor_overflow and saved.ys.shape == (2,)
    # After the run the overflowed list inside the system refuses to give an energy.
    after = integ.model_at(system, traj.integrator_state)
    with pytest.raises(ValueError, match="MDSystem.neighbors overflowed"):
        after.potential_energy(traj.y1[0])


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


def test_vmap_over_replicas_rebuilds_only_when_needed(system_and_state):
    """Replicas at different temperatures: the same trajectories and per-replica rebuild
    counts as single runs, and under vmap the rebuild stays a real `cond` (not a
    `select` that would rebuild every step)."""
    system, (q0, _) = system_and_state
    builder = md.NeighborListBuilder.create(system.space, q0, cutoff=2.5, skin=0.3)
    integ = md.NeighborListIntegrator(sciad.VelocityVerlet(), builder)
    n = q0.shape[0]

    def final(temperature):
        p = md.maxwell_boltzmann(jax.random.key(0), jnp.ones(n), temperature, exact=True)
        traj = run(system, (q0, p), integ, n=120)
        return traj.y1[0], integ.rebuilds(traj.integrator_state)

    temps = jnp.array([0.5, 2.0])
    batched, builds = jax.vmap(final)(temps)
    singles = [final(t) for t in temps]
    assert np.allclose(batched, jnp.stack([s[0] for s in singles]), atol=1e-10)
    assert [int(b) for b in builds] == [int(s[1]) for s in singles]
    assert int(builds[0]) < int(builds[1])  # the hot replica rebuilds more often
    assert 0 < int(builds[1]) < 120

    def step(p):
        y = (q0, p)
        state = integ.init(system, 0.0, y)
        return integ.step(system, 0.0, 0.005, y, state)[0]

    jaxpr = jax.make_jaxpr(jax.vmap(step))(jnp.zeros((2, n, 3)))
    assert "cond[" in str(jaxpr)  # the rebuild branch is still lazy under vmap


@pytest.mark.parametrize("mode", ["grad", "jvp"])
def test_batched_rebuild_differentiates(system_and_state, mode):
    """grad and jvp through vmapped replicas equal the loop of single-replica gradients."""
    system, (q0, p0) = system_and_state
    builder = md.NeighborListBuilder.create(system.space, q0, cutoff=2.5, skin=0.1)
    integ = md.NeighborListIntegrator(sciad.VelocityVerlet(), builder)

    def energy(scale):
        return system.potential_energy(run(system, (q0, scale * p0), integ, n=40).y1[0])

    scales = jnp.array([0.9, 1.3])
    if mode == "grad":
        got = jax.grad(lambda s: jnp.sum(jax.vmap(energy)(s)))(scales)
    else:
        got = jax.jvp(jax.vmap(energy), (scales,), (jnp.ones(2),))[1]
    want = jnp.stack([jax.grad(energy)(s) for s in scales])
    assert np.allclose(got, want, rtol=1e-9)


def test_saved_energy_uses_the_current_list(system_and_state):
    """SaveAt.fn receives the system with the integrator's current neighbour list."""
    system, y0 = system_and_state
    builder = md.NeighborListBuilder.create(system.space, y0[0], cutoff=2.5, skin=0.05)
    integ = md.NeighborListIntegrator(sciad.VelocityVerlet(), builder)
    saveat = sciad.SaveAt(steps=20, fn=_saved_energy)
    traj = sciad.simulate(system, y0, dt=0.005, n_steps=100, integrator=integ, saveat=saveat)
    listed, ref = traj.ys[:, 0], traj.ys[:, 1]
    assert np.allclose(listed, ref, rtol=1e-12) and bool(jnp.all(traj.ys[:, 2]))


def _saved_energy(t, y, model):
    plain = eqx.tree_at(lambda m: m.neighbors, model, None)
    has_list = jnp.asarray(float(model.neighbors is not None))
    return jnp.stack([model.potential_energy(y[0]), plain.potential_energy(y[0]), has_list])
