"""Pendulum periods: the small-angle (simple) pendulum and a large-amplitude physical
pendulum, against 2π√(L/g) and the exact elliptic-integral period."""

import jax.numpy as jnp
import numpy as np
from scipy.special import ellipk

import sciad
import sciad.rigid as rigid

G = 9.81
Y = jnp.array([0.0, 1.0, 0.0])


def crossings(ts, x):
    """Times where x crosses zero upwards (linear interpolation between samples)."""
    i = np.nonzero((x[:-1] < 0) & (x[1:] >= 0))[0]
    return ts[i] - x[i] * (ts[i + 1] - ts[i]) / (x[i + 1] - x[i])


def exact_period(inertia_pivot, mass, d, amplitude):
    """T = 4 √(I/(m g d)) K(sin²(θ₀/2)) (K with parameter m = k²)."""
    return 4 * np.sqrt(inertia_pivot / (mass * G * d)) * ellipk(np.sin(amplitude / 2) ** 2)


def test_simple_and_physical_pendulum_periods():
    """Two independent pendulums in one model, RKMK4, dt = 1e-3, 10 s:

    - a small sphere (r = 1 cm) on a massless 1 m arm, amplitude 0.01 rad: its period
      matches 2π√(L/g) within 3e-5 (measured 2.62e-5: the sphere's own inertia adds
      (2/5)(r/L)²/2 = 2.0e-5 and the amplitude θ₀²/16 = 0.6e-5) and the exact period
      within 1e-8 (measured 2e-11);
    - a 1 m box rod swinging about its end from θ₀ = 2 rad: the exact elliptic period
      within 1e-8 (measured 7e-11).
    """
    r, length = 0.01, 1.0
    half = jnp.array([0.02, 0.03, 0.5])
    model = rigid.MultiBody(
        [
            rigid.Body(
                "bob",
                joint=rigid.HingeJoint(axis=Y),
                shape=rigid.Sphere(r),
                density=1000.0,
                com=jnp.array([0.0, 0.0, -length]),
            ),
            rigid.Body(
                "rod",
                joint=rigid.HingeJoint(axis=Y),
                shape=rigid.Box(half),
                density=1000.0,
                com=jnp.array([0.0, 0.0, -0.5]),
                pos=jnp.array([2.0, 0.0, 0.0]),
            ),
        ]
    )
    amplitudes = np.array([0.01, 2.0])
    traj = sciad.simulate(
        model,
        (jnp.asarray(amplitudes), jnp.zeros(2)),
        dt=1e-3,
        n_steps=10_000,
        integrator=rigid.RKMK4(),
        saveat=sciad.SaveAt(steps=1, t0=True),
    )
    ts, qs = np.asarray(traj.ts), np.asarray(traj.ys[0])
    m_bob, i_bob = (np.asarray(x) for x in rigid.Sphere(r).mass_properties(1000.0))
    m_rod, i_rod = (np.asarray(x) for x in rigid.Box(half).mass_properties(1000.0))
    expected = [
        exact_period(i_bob[1] + m_bob * length**2, m_bob, length, amplitudes[0]),
        exact_period(i_rod[1] + m_rod * 0.5**2, m_rod, 0.5, amplitudes[1]),
    ]
    for k in range(2):
        c = crossings(ts, qs[:, k])
        assert len(c) >= 3
        period = np.mean(np.diff(c))
        assert abs(period - expected[k]) / expected[k] < 1e-8, (k, period, expected[k])
    small = 2 * np.pi * np.sqrt(length / G)
    period = np.mean(np.diff(crossings(ts, qs[:, 0])))
    assert abs(period - small) / small < 3e-5
