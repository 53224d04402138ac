"""sciad.fit: recovery, frozen and positive parameters, minimisers, implicit derivatives."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optimistix as optx
import pytest

import sciad

from .helpers import central_fd

T = jnp.linspace(0.0, 1.0, 11)
A = jnp.stack([T, jnp.ones_like(T)], axis=1)


class Line(eqx.Module):
    slope: jax.Array
    intercept: jax.Array

    def __call__(self, t):
        return self.slope * t + self.intercept


def line_residuals(model, data):
    return model(T) - data


Y_LINE = 2.0 * T - 0.5 + 0.1 * jnp.sin(7 * T)
LINE0 = Line(jnp.asarray(1.0), jnp.asarray(0.0))

PEND_TS = jnp.linspace(0.0, 3.0, 31)


def pendulum_angles(model):
    traj = sciad.simulate(
        model, jnp.array([1.0, 0.0]), t1=3.0, dt=0.01, saveat=sciad.SaveAt(ts=PEND_TS)
    )
    return traj.ys[:, 0]


TRUE = sciad.ode.Pendulum(length=1.0, gravity=9.81, damping=0.1)
OBS = pendulum_angles(TRUE)
GUESS = sciad.ode.Pendulum(length=0.8, gravity=9.81, damping=0.3)
PEND_FREE = lambda m: (m.length, m.damping)


def pend_residuals(model, data):
    return pendulum_angles(model) - data


def test_linear_least_squares_exact():
    res = sciad.fit(LINE0, line_residuals, Y_LINE)
    exact = np.linalg.lstsq(np.asarray(A), np.asarray(Y_LINE), rcond=None)[0]
    assert np.allclose([res.model.slope, res.model.intercept], exact, rtol=1e-10)
    r = np.asarray(A) @ exact - np.asarray(Y_LINE)
    assert np.isclose(res.loss, 0.5 * np.sum(r**2), rtol=1e-10)
    assert res.result == sciad.RESULTS.successful and int(res.num_steps) > 0


def test_pendulum_recovery_with_frozen_gravity():
    res = sciad.fit(GUESS, pend_residuals, OBS, free=PEND_FREE, positive=PEND_FREE)
    assert np.isclose(res.model.length, 1.0, rtol=1e-7)
    assert np.isclose(res.model.damping, 0.1, rtol=1e-6)
    assert float(res.model.gravity) == 9.81  # frozen: untouched bit for bit
    assert float(res.loss) < 1e-14


def test_filter_spec_pytree_freezes_like_selector():
    spec = jax.tree.map(lambda _: False, GUESS)
    spec = eqx.tree_at(PEND_FREE, spec, (True, True))
    a = sciad.fit(GUESS, pend_residuals, OBS, free=spec)
    b = sciad.fit(GUESS, pend_residuals, OBS, free=PEND_FREE)
    assert np.allclose(a.model.length, b.model.length, rtol=1e-10)
    assert float(a.model.gravity) == 9.81


def test_positive_reparametrisation_keeps_sign():
    """Data from a *growing* exponential: the best unconstrained rate is −0.5 < 0."""
    model = sciad.ode.ExponentialDecay(rate=1.0)
    ts = jnp.linspace(0.0, 1.0, 6)
    data = jnp.exp(0.5 * ts)

    def residuals(m, d):
        traj = sciad.simulate(m, jnp.array(1.0), t1=1.0, dt=0.01, saveat=sciad.SaveAt(ts=ts))
        return traj.ys - d

    free = sciad.fit(model, residuals, data)
    assert np.isclose(free.model.rate, -0.5, rtol=1e-6)
    pos = sciad.fit(model, residuals, data, positive=lambda m: m.rate, throw=False, max_steps=64)
    assert float(pos.model.rate) > 0.0


def test_minimiser_agrees_with_least_squares():
    ls = sciad.fit(LINE0, line_residuals, Y_LINE)
    scalar_loss = lambda m, d: 0.5 * jnp.sum(line_residuals(m, d) ** 2)
    mn = sciad.fit(LINE0, scalar_loss, Y_LINE, solver=optx.BFGS(rtol=1e-10, atol=1e-10))
    assert np.allclose(mn.model.slope, ls.model.slope, rtol=1e-6)
    assert np.isclose(mn.loss, ls.loss, rtol=1e-8)


def test_implicit_gradient_wrt_data_is_exact_for_linear_model():
    jac = jax.jacrev(
        lambda y: jnp.stack(
            [
                sciad.fit(LINE0, line_residuals, y).model.slope,
                sciad.fit(LINE0, line_residuals, y).model.intercept,
            ]
        )
    )(Y_LINE)
    exact = np.linalg.pinv(np.asarray(A))  # d(argmin)/dy = (AᵀA)⁻¹Aᵀ
    assert np.allclose(jac, exact, rtol=1e-8, atol=1e-12)


def test_implicit_gradient_wrt_hyperparameter():
    """Ridge regression: θ(λ) = (AᵀA + λI)⁻¹Aᵀy, dθ/dλ = −(AᵀA + λI)⁻¹θ."""

    def ridge(m, data):
        y, lam = data
        return jnp.concatenate(
            [line_residuals(m, y), jnp.sqrt(lam) * jnp.stack([m.slope, m.intercept])]
        )

    def theta(lam):
        res = sciad.fit(LINE0, ridge, (Y_LINE, lam))
        return jnp.stack([res.model.slope, res.model.intercept])

    lam = 0.3
    M = np.asarray(A.T @ A) + lam * np.eye(2)
    th = np.linalg.solve(M, np.asarray(A.T @ Y_LINE))
    assert np.allclose(theta(lam), th, rtol=1e-10)
    assert np.allclose(jax.jacrev(theta)(lam), -np.linalg.solve(M, th), rtol=1e-8)


@pytest.mark.slow
def test_implicit_gradient_through_ode_fit_matches_fd():
    """d(fitted length)/d(observation k) by the implicit function theorem vs refitting."""
    k = 7

    def fitted_length(delta):
        obs = OBS.at[k].add(delta)
        return sciad.fit(TRUE, pend_residuals, obs, free=PEND_FREE).model.length

    g = jax.grad(fitted_length)(0.0)
    fd = central_fd(fitted_length, jnp.asarray(0.0), eps=1e-4)[()]
    assert np.isclose(g, fd, rtol=1e-5)


def test_vmap_over_datasets():
    ys = jnp.stack([Y_LINE, 2 * Y_LINE, Y_LINE + 1.0])
    slopes = jax.vmap(lambda y: sciad.fit(LINE0, line_residuals, y).model.slope)(ys)
    loop = [float(sciad.fit(LINE0, line_residuals, y).model.slope) for y in ys]
    assert np.allclose(slopes, loop, rtol=1e-10)


def test_failure_code_and_throw():
    res = sciad.fit(GUESS, pend_residuals, OBS, free=PEND_FREE, max_steps=2, throw=False)
    assert res.result == sciad.RESULTS.optimisation_failed
    with pytest.raises(Exception, match="steps"):
        sciad.fit(GUESS, pend_residuals, OBS, free=PEND_FREE, max_steps=2)


def test_progress_prints_each_step(capfd):
    res = sciad.fit(LINE0, line_residuals, Y_LINE, progress=True)
    jax.effects_barrier()
    out = capfd.readouterr().out
    assert "fit step" in out and "loss" in out
    assert out.count("fit step") >= int(res.num_steps) - 1


def test_warm_start_at_the_optimum_converges():
    first = sciad.fit(GUESS, pend_residuals, OBS, free=PEND_FREE, positive=PEND_FREE)
    again = sciad.fit(first.model, pend_residuals, OBS, free=PEND_FREE, positive=PEND_FREE)
    assert again.result == sciad.RESULTS.successful
    assert np.isclose(again.model.length, 1.0, rtol=1e-7)
