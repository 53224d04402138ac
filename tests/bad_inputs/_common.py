"""Shared fixtures of the bad-input cases: a pendulum, a Kepler problem and a short run."""

import jax.numpy as jnp

import sciad

PEND = sciad.ode.Pendulum(length=1.0, gravity=9.81, damping=0.1)
KEPLER = sciad.ode.Kepler(mu=1.0)
Y0 = jnp.array([1.0, 0.0])
OK = dict(dt=0.01, n_steps=10)


def sim(model=PEND, y0=Y0, **kw):
    args = {**OK, **kw}
    return sciad.simulate(model, y0, **args)
