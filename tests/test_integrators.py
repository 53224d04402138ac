"""Integrators: convergence order against analytic solutions, conservation, reversibility."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sciad

from .helpers import fit_order

SPLITTINGS = [
    (sciad.SymplecticEuler(), 1),
    (sciad.VelocityVerlet(), 2),
    (sciad.Yoshida4(), 4),
    (sciad.Yoshida6(), 6),
]


def _spring():
    """H = p²/2 + q²/2: q(t) = cos t, p(t) = −sin t from (1, 0)."""
    return sciad.ode.SeparableHamiltonian(
        lambda p: 0.5 * jnp.sum(p**2), lambda q: 0.5 * jnp.sum(q**2)
    )


def _spring_error(integrator, dt, t1=2.0):
    n = int(round(t1 / dt))
    y0 = (jnp.array([1.0]), jnp.array([0.0]))
    traj = sciad.simulate(_spring(), y0, dt=dt, n_steps=n, integrator=integrator)
    q, p = traj.y1
    return float(jnp.hypot(q[0] - np.cos(t1), p[0] + np.sin(t1)))


@pytest.mark.parametrize("integrator, order", SPLITTINGS)
def test_splitting_order(integrator, order):
    assert integrator.order() == order
    # Step sizes in the asymptotic regime but above round-off for each order.
    dts = {1: [0.02, 0.01, 0.005], 2: [0.04, 0.02, 0.01], 4: [0.2, 0.1, 0.05], 6: [0.4, 0.2, 0.1]}[
        order
    ]
    errors = [_spring_error(integrator, dt) for dt in dts]
    assert abs(fit_order(dts, errors) - order) < 0.25, errors


def test_rk4_order_on_damped_driven_oscillator():
    """RK4 on a non-separable system, against the exact damped oscillator solution."""
    m, k, c = 1.0, 4.0, 0.4
    osc = sciad.ode.HarmonicOscillator(mass=m, stiffness=k, damping=c)
    gamma, w0 = c / (2 * m), np.sqrt(k / m)
    wd = np.sqrt(w0**2 - gamma**2)
    ts = np.linspace(0.0, 3.0, 31)
    exact = np.exp(-gamma * ts) * (np.cos(wd * ts) + gamma / wd * np.sin(wd * ts))
    dts = [0.1, 0.05, 0.025]
    errors = []
    for dt in dts:
        saveat = sciad.SaveAt(ts=ts)
        traj = sciad.simulate(
            osc, jnp.array([1.0, 0.0]), t1=3.0, dt=dt, integrator=sciad.RK4(), saveat=saveat
        )
        errors.append(np.max(np.abs(np.asarray(traj.ys[:, 0]) - exact)))
    assert sciad.RK4().order() == 4
    assert abs(fit_order(dts, errors) - 4) < 0.2, errors


@pytest.mark.parametrize("integrator, order", SPLITTINGS[1:])
def test_symplectic_energy_bounded(integrator, order):
    """Energy error of a symplectic method oscillates at O(dt^p) with no drift over 200 periods."""
    model = sciad.ode.Kepler(mu=1.0)
    y0 = model.initial_state(eccentricity=0.5)
    saveat = sciad.SaveAt(steps=100, fn=lambda t, y, m: m.energy(y))
    traj = sciad.simulate(model, y0, dt=0.01, n_steps=40_000, integrator=integrator, saveat=saveat)
    e0 = float(model.energy(y0))
    rel = np.abs((np.asarray(traj.ys) - e0) / e0)
    early, late = rel[: len(rel) // 10].max(), rel[-len(rel) // 10 :].max()
    assert late < 1.5 * early + 1e-13  # no secular growth
    assert rel.max() < {2: 1e-3, 4: 1e-5, 6: 1e-7}[order]


@pytest.mark.parametrize("integrator, _", SPLITTINGS[1:])
def test_time_reversible(integrator, _):
    """Symmetric splittings: n steps forward then n steps with −dt return to the start."""
    model = sciad.ode.Kepler(mu=1.0)
    y0 = model.initial_state(eccentricity=0.3)
    fwd = sciad.simulate(model, y0, dt=0.01, n_steps=500, integrator=integrator)
    q, p = fwd.y1
    state = integrator.init(model, 0.0, (q, p))
    y = (q, p)

    def back(c, _):
        y, s = c
        return integrator.step(model, 0.0, -0.01, y, s), None

    (y, _), _ = jax.lax.scan(back, (y, state), None, length=500)
    assert np.allclose(y[0], y0[0], atol=1e-11) and np.allclose(y[1], y0[1], atol=1e-11)


def test_symplectic_euler_not_reversible_but_symplectic():
    """Symplectic Euler preserves phase-space area: the one-step Jacobian has det 1."""
    model = _spring()
    integ = sciad.SymplecticEuler()

    def one(z):
        y = (z[:1], z[1:])
        (q, p), _ = integ.step(model, 0.0, 0.3, y, integ.init(model, 0.0, y))
        return jnp.concatenate([q, p])

    jac = jax.jacfwd(one)(jnp.array([0.3, -0.7]))
    assert abs(float(jnp.linalg.det(jac)) - 1.0) < 1e-14


def test_force_evaluations_per_step():
    """FSAL caching: a splitting with s drifts costs s force evaluations per step."""
    calls = []

    class Counting(sciad.AbstractSeparableModel):
        def velocity(self, t, p):
            return p

        def force(self, t, q):
            calls.append(1)
            return -q

    for integ in (sciad.VelocityVerlet(), sciad.Yoshida4(), sciad.Yoshida6()):
        calls.clear()
        y = (jnp.array([1.0]), jnp.array([0.0]))
        s = integ.init(Counting(), 0.0, y)
        calls.clear()
        integ.step(Counting(), 0.0, 0.1, y, s)
        assert len(calls) == len(integ.drifts)
    assert len(sciad.Yoshida4.drifts) == 3 and len(sciad.Yoshida6.drifts) == 7


def test_splitting_state_is_named():
    """A splitting integrator's state is a `SplittingState` holding the force F(q)."""
    model, y0 = _spring(), (jnp.array([0.5]), jnp.array([0.0]))
    for integ, _ in SPLITTINGS:
        state = integ.init(model, 0.0, y0)
        assert type(state) is sciad.SplittingState
        np.testing.assert_array_equal(state.force, -y0[0])
        traj = sciad.simulate(model, y0, dt=0.1, n_steps=3, integrator=integ)
        np.testing.assert_allclose(traj.integrator_state.force, -traj.y1[0], rtol=1e-15)


def test_composition_weights_satisfy_the_order_conditions():
    """The one table of composition weights: each set sums to 1, the 3- and 5-stage sets
    meet the 4th-order condition Σwᵢ³ = 0 and the 7-stage set also Σwᵢ⁵ = 0 (Yoshida
    1990, to the 15 digits of his table); Yoshida4 and Yoshida6 drift by them."""
    from sciad._core._integrator import COMPOSITION_WEIGHTS

    for stages, w in COMPOSITION_WEIGHTS.items():
        w = np.asarray(w)
        assert len(w) == stages and np.allclose(w, w[::-1], rtol=0, atol=0)
        assert abs(w.sum() - 1) < 1e-15
        if stages > 1:
            assert abs(np.sum(w**3)) < 1e-13
        if stages == 7:
            assert abs(np.sum(w**5)) < 1e-13
    assert sciad.Yoshida4.drifts == COMPOSITION_WEIGHTS[3]
    assert sciad.Yoshida6.drifts == COMPOSITION_WEIGHTS[7]
    assert sciad.Yoshida4().drift_fractions() == COMPOSITION_WEIGHTS[3]
    assert sciad.RK4().drift_fractions() == (1.0,)
