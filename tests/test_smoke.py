import jax.numpy as jnp

import sciad


def test_pendulum_rk4_matches_adaptive_solve():
    model = sciad.ode.Pendulum(length=1.0, gravity=9.81, damping=0.1)
    y0 = jnp.array([1.0, 0.0])
    ts = jnp.linspace(0.0, 10.0, 101)
    fixed = sciad.simulate(model, y0, t1=10.0, dt=0.001, saveat=sciad.SaveAt(ts=ts))
    adaptive = sciad.ode.solve(model, y0, ts, rtol=1e-10, atol=1e-12)
    assert fixed.ys.shape == (101, 2)
    assert jnp.max(jnp.abs(fixed.ys - adaptive.ys)) < 1e-9
