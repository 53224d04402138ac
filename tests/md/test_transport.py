"""Velocity autocorrelation and diffusion: the FFT estimator equals the direct double
sum; for Langevin free particles the VACF is d kT/m e^{−γτ} and D = kT/(mγ) by both
Green–Kubo and Einstein."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sciad
import sciad.md as md


def test_vacf_equals_direct_double_sum():
    v = jax.random.normal(jax.random.key(0), (37, 5, 3), dtype=jnp.float64)
    got = md.velocity_autocorrelation(v, max_lag=20)
    vn = np.asarray(v)
    want = [np.mean([np.sum(vn[t] * vn[t + k]) / 5 for t in range(37 - k)]) for k in range(20)]
    assert np.allclose(got, want, rtol=1e-12, atol=1e-13)
    # linear in v ⊗ v: the gradient of C[3] with respect to v matches the closed form
    g = jax.grad(lambda v: md.velocity_autocorrelation(v, max_lag=4)[3])(v)
    want_g = np.zeros_like(vn)
    want_g[3:] += vn[:-3] / (5 * 34)
    want_g[:-3] += vn[3:] / (5 * 34)
    assert np.allclose(g, want_g, rtol=1e-12, atol=1e-14)


def test_green_kubo_and_einstein_on_exponential():
    """Exact inputs: C(τ) = e^{−τ} integrates to 1 (trapezoid error O(dt²)); MSD = 6Dt."""
    dt = 0.01
    vacf = jnp.exp(-dt * jnp.arange(3000.0))
    assert np.isclose(md.green_kubo_diffusion(vacf, dt, d=1), 1.0, rtol=1e-4)
    t = jnp.linspace(0.0, 10.0, 101)
    assert np.isclose(md.einstein_diffusion(6 * 0.37 * t + 0.5, t, d=3, start=10), 0.37)


def _velocity(t, y, model):
    return model.velocity(t, y[1])


@pytest.mark.slow
def test_langevin_free_particles_vacf_and_diffusion():
    n, kT, gamma, dt, m = 125, 1.3, 2.0, 0.01, 2.0
    g = np.stack(np.meshgrid(*[np.arange(5)] * 3, indexing="ij"), -1).reshape(-1, 3)
    q0 = jnp.asarray(100.0 * g, dtype=jnp.float64)  # far apart: no forces
    system = md.MDSystem(md.FreeSpace(), md.SoftSphere(1.0, 1.0), masses=jnp.full(n, m))
    p0 = md.maxwell_boltzmann(jax.random.key(1), system.masses, kT)
    nvt = md.LangevinBAOAB(friction=gamma, kT=kT, key=jax.random.key(2))
    save = sciad.SaveAt(t0=True, steps=5, fn=_velocity)
    traj = sciad.simulate(system, (q0, p0), dt=dt, n_steps=20_000, integrator=nvt, saveat=save)
    lag_dt = 5 * dt
    vacf = np.asarray(md.velocity_autocorrelation(traj.ys, max_lag=100))
    # BAOAB with zero force: p_{k+1} = c p_k + noise exactly, c = e^{−γ dt}
    want = 3 * kT / m * np.exp(-gamma * lag_dt * np.arange(100))
    # statistical error of C(τ) ≈ C(0) √(2 τ_c / T): T = 200, τ_c = 1/γ, over 125 particles
    err = want[0] * np.sqrt(2 * (1 / gamma) / 200 / n)
    assert np.max(np.abs(vacf - want)) < 5 * err, (np.max(np.abs(vacf - want)), err)
    d_exact = kT / (m * gamma)
    d_gk = float(md.green_kubo_diffusion(jnp.asarray(vacf[:60]), lag_dt, d=3))
    assert abs(d_gk - d_exact) < 0.03 * d_exact, (d_gk, d_exact)
    # Einstein from the positions of the same kind of run
    save_q = sciad.SaveAt(t0=True, steps=50, fn=lambda t, y, m: y[0])
    trq = sciad.simulate(system, (q0, p0), dt=dt, n_steps=20_000, integrator=nvt, saveat=save_q)
    msd = md.mean_squared_displacement(trq.ys)
    d_ein = float(md.einstein_diffusion(msd, trq.ts, d=3, start=20))
    # MSD of n independent particles over time T: relative error ≈ √(2 · 2/(3 n) ...) ~ 5%
    assert abs(d_ein - d_exact) < 0.15 * d_exact, (d_ein, d_exact)
