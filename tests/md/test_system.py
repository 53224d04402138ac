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
