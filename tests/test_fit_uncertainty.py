"""sciad.fit's covariance, standard errors and report, against scipy.optimize.curve_fit.

curve_fit's covariance is taken at the exact optimum (its `popt` refined by a few
Gauss–Newton steps, then passed as `p0`, so that curve_fit returns it unchanged): its
own stopping rule (relative reduction of Σr² below `ftol`) leaves the parameters
accurate to ~1e-8 only, and the covariance moves with them.
"""

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optimistix as optx
import pytest

import sciad

scipy_optimize = pytest.importorskip("scipy.optimize")

TIGHT = optx.LevenbergMarquardt(rtol=1e-12, atol=1e-12)
RNG = np.random.default_rng(20)


class Decay(eqx.Module):
    a: jax.Array
    k: jax.Array
    c: jax.Array

    def __call__(self, t):
        return self.a * jnp.exp(-self.k * t) + self.c


T = np.linspace(0.0, 4.0, 40)
SIGMA = 0.02 + 0.05 * RNG.random(40)
Y = 2.5 * np.exp(-1.3 * T) + 0.5 + SIGMA * RNG.normal(size=40)
DECAY0 = Decay(jnp.asarray(1.0), jnp.asarray(1.0), jnp.asarray(0.0))


def decay_residuals(model, data):
    ts, ys = data
    return model(ts) - ys


@functools.cache
def decay_fit(weighted, absolute=False, check_rank=True):
    """One fit per configuration (a compiled solve per value of `weighted`)."""
    return sciad.fit(
        DECAY0,
        decay_residuals,
        (jnp.asarray(T), jnp.asarray(Y)),
        solver=TIGHT,
        sigma=jnp.asarray(SIGMA) if weighted else None,
        absolute_sigma=absolute,
        check_rank=check_rank,
    )


def decay_np(t, a, k, c):
    return a * np.exp(-k * t) + c


def decay_jac(t, a, k, c):
    e = np.exp(-k * t)
    return np.stack([e, -a * t * e, np.ones_like(t)], axis=1)


def curve_fit_at_optimum(f, jac, t, y, p0, sigma, absolute_sigma):
    """curve_fit's (popt, pcov), with popt refined to the exact optimum first."""
    kw = dict(sigma=sigma, absolute_sigma=absolute_sigma, jac=jac)
    popt, _ = scipy_optimize.curve_fit(f, t, y, p0=p0, **kw)
    w = 1.0 if sigma is None else sigma
    p = popt
    for _ in range(6):  # Gauss–Newton: quadratic for this small-residual problem
        r = (f(t, *p) - y) / w
        p = p - np.linalg.lstsq(jac(t, *p) / np.reshape(w, (-1, 1)), r, rcond=None)[0]
    exact, pcov = scipy_optimize.curve_fit(f, t, y, p0=p, **kw)
    return popt, exact, pcov


@pytest.mark.parametrize("weighted", [False, True], ids=["no-sigma", "sigma"])
def test_decay_covariance_matches_curve_fit(weighted):
    sigma = SIGMA if weighted else None
    for absolute in (False, True):
        res = decay_fit(weighted, absolute)
        popt, exact, pcov = curve_fit_at_optimum(
            decay_np, decay_jac, T, Y, [1.0, 1.0, 0.0], sigma, absolute
        )
        fitted = np.array([res.model.a, res.model.k, res.model.c])
        assert np.allclose(fitted, popt, rtol=1e-6)  # curve_fit as it stops
        assert np.allclose(fitted, exact, rtol=1e-10)
        assert np.allclose(res.covariance, pcov, rtol=1e-8, atol=0)
        errors = np.sqrt(np.diag(pcov))
        assert np.allclose([res.standard_errors.a, res.standard_errors.k], errors[:2], rtol=1e-8)
        assert np.allclose(res.correlation, pcov / np.outer(errors, errors), rtol=1e-8)
        w = 1.0 if sigma is None else sigma
        chi2 = np.sum(((decay_np(T, *exact) - Y) / w) ** 2)
        assert np.isclose(res.residual_variance, chi2 / (40 - 3), rtol=1e-10)
    # the two conventions differ exactly by s²
    assert not np.allclose(res.residual_variance, 1.0, rtol=1e-2)


class Split(eqx.Module):
    """The decay with its amplitude split in two: only a1 + a2 is determined."""

    a1: jax.Array
    a2: jax.Array
    k: jax.Array
    c: jax.Array

    def __call__(self, t):
        return (self.a1 + self.a2) * jnp.exp(-self.k * t) + self.c


def test_rank_deficient_gives_inf_not_a_finite_number():
    data = (jnp.asarray(T), jnp.asarray(Y))
    split0 = Split(jnp.asarray(0.5), jnp.asarray(0.7), jnp.asarray(1.0), jnp.asarray(0.0))
    with pytest.warns(UserWarning, match="rank 3 for 4"):
        bad = sciad.fit(split0, decay_residuals, data, solver=TIGHT)
    good = decay_fit(False)
    cov, se = np.asarray(bad.covariance), bad.standard_errors
    assert np.isinf(se.a1) and np.isinf(se.a2)
    assert np.isposinf(cov[0, 0]) and np.isposinf(cov[1, 1])
    assert np.all(np.isnan(cov[:2, 2:])) and np.isnan(cov[0, 1])
    assert np.all(np.isnan(np.asarray(bad.correlation)[:2]))
    # k and c are determined: their covariance is the well-posed fit's, but for
    # s² = Σr²/(m − n) counting n = 4 free parameters, not 3 (curve_fit's convention)
    dof = (40 - 3) / (40 - 4)
    assert np.allclose(cov[2:, 2:], dof * np.asarray(good.covariance)[1:, 1:], rtol=1e-7)
    assert np.isclose(se.k**2, dof * good.standard_errors.k**2, rtol=1e-7)
    text = str(bad)
    assert "a1 = " in text and "± inf  (not determined by the data)" in text
    assert "rank 3 of 4" in text


def test_fewer_residuals_than_parameters_give_inf():
    pick = np.array([0, 10, 39])
    data = (jnp.asarray(T[pick]), jnp.asarray(Y[pick]))
    res = sciad.fit(DECAY0, decay_residuals, data, solver=TIGHT)
    assert np.isposinf(res.residual_variance)
    assert np.all(np.isposinf(res.covariance))  # s² cannot be estimated: curve_fit's inf
    with pytest.warns(scipy_optimize.OptimizeWarning, match="could not be estimated"):
        _, pcov = scipy_optimize.curve_fit(
            decay_np, T[pick], Y[pick], p0=[1.0, 1.0, 0.0], jac=decay_jac
        )
    assert np.all(np.isinf(pcov))


TS = jnp.linspace(0.0, 3.0, 31)
Y0 = jnp.array([1.0, 0.0])
GRAVITY = 9.81


def angles(model):
    run = sciad.simulate(model, Y0, t1=3.0, dt=0.01, saveat=sciad.SaveAt(ts=TS))
    return run.ys[:, 0]


PEND_SIGMA = np.where(np.arange(31) < 15, 0.01, 0.03)
PEND_OBS = np.asarray(angles(sciad.ode.Pendulum(length=1.0, gravity=GRAVITY, damping=0.1)))
PEND_OBS = PEND_OBS + PEND_SIGMA * RNG.normal(size=31)


def pendulum_residuals(model, observed):
    return angles(model) - observed


def _angles_of(p):
    return angles(sciad.ode.Pendulum(length=p[0], gravity=GRAVITY, damping=p[1]))


_angles_jit = jax.jit(_angles_of)
_jac_jit = jax.jit(jax.jacfwd(_angles_of))


def pendulum_np(t, length, damping):
    del t
    return np.asarray(_angles_jit(jnp.array([length, damping])))


def pendulum_jac(t, length, damping):
    del t
    return np.asarray(_jac_jit(jnp.array([length, damping])))


def test_ode_fit_covariance_matches_curve_fit():
    """A pendulum (sciad.ode) with per-observation sigma, gravity frozen and the
    length fitted as positive: the covariance is in the parameters' own units,
    whatever the optimiser's coordinates. (One compiled solve for both conventions.)"""
    guess = sciad.ode.Pendulum(length=0.8, gravity=GRAVITY, damping=0.3)
    t = np.asarray(TS)
    for absolute in (True, False):
        res = sciad.fit(
            guess,
            pendulum_residuals,
            jnp.asarray(PEND_OBS),
            solver=TIGHT,
            free=lambda m: (m.length, m.damping),
            positive=lambda m: m.length,
            sigma=jnp.asarray(PEND_SIGMA),
            absolute_sigma=absolute,
        )
        _, exact, pcov = curve_fit_at_optimum(
            pendulum_np, pendulum_jac, t, PEND_OBS, [0.8, 0.3], PEND_SIGMA, absolute
        )
        assert res.names == ("length", "damping")
        assert np.allclose([res.model.length, res.model.damping], exact, rtol=1e-9)
        assert np.allclose(res.covariance, pcov, rtol=1e-8, atol=0)
        assert res.standard_errors.gravity is None  # frozen
        assert np.isclose(res.standard_errors.length, np.sqrt(pcov[0, 0]), rtol=1e-8)


def test_report_shows_values_and_errors():
    res = decay_fit(True)
    text = str(res)
    assert "f64[]" not in text and text.startswith("FitResult of Decay: successful after ")
    for name in ("a", "k", "c"):
        value = float(getattr(res.model, name))
        error = float(getattr(res.standard_errors, name))
        assert f"  {name} = {value:.6g} ± {error:.2g}" in text
    assert f"loss {float(res.loss):.6g}" in text and "rank 3 of 3" in text
    assert "s² = Σr²/(m − n) = " in text
    assert "f64[]" in repr(res)  # repr stays Equinox's


def test_scalar_loss_and_check_rank_off_have_no_covariance():
    data = (jnp.asarray(T), jnp.asarray(Y))
    scalar = lambda m, d: jnp.sum(decay_residuals(m, d) ** 2)
    res = sciad.fit(DECAY0, scalar, data, solver=optx.BFGS(rtol=1e-8, atol=1e-8))
    assert res.covariance is None and res.standard_errors is None
    assert res.correlation is None and res.residual_variance is None
    assert "no standard errors (a scalar loss" in str(res) and "a = " in str(res)
    off = decay_fit(False, check_rank=False)
    assert off.covariance is None and np.isfinite(off.residual_variance)
    assert "no standard errors (check_rank=False" in str(off)
    assert bool(eqx.tree_equal(off.parameters, off.model))  # every leaf is free


class Line(eqx.Module):
    slope: jax.Array
    intercept: jax.Array


def line_residuals(m, d):
    return m.slope * jnp.asarray(T) + m.intercept - d


def test_sigma_pytree_under_jit_and_vmap():
    """A number as sigma for one residual leaf, an array for the other, in a batch of
    two fits (vmap, with sigma traced): each gets s²(AᵀA)⁻¹ of its own weighted linear
    problem; a traced sigma that is not > 0 is an error when the fit runs."""
    line0 = Line(jnp.asarray(1.0), jnp.asarray(0.0))
    ys = np.stack([Y, Y[::-1]])
    two = lambda m, d: (line_residuals(m, d), m.slope - 2.0)  # data and a prior
    fits = jax.jit(jax.vmap(lambda d, s: sciad.fit(line0, two, d, sigma=(s, 0.5))))
    batch = fits(jnp.asarray(ys), jnp.asarray([SIGMA, SIGMA]))
    assert batch.covariance.shape == (2, 2, 2) and batch.correlation.shape == (2, 2, 2)
    a = np.concatenate([np.stack([T, np.ones_like(T)], 1) / SIGMA[:, None], [[2.0, 0.0]]])
    for b, y in enumerate(ys):
        rhs = np.concatenate([y / SIGMA, [4.0]])
        p, chi2 = np.linalg.lstsq(a, rhs, rcond=None)[:2]
        assert np.allclose([batch.model.slope[b], batch.model.intercept[b]], p, rtol=1e-8)
        cov = chi2[0] / (41 - 2) * np.linalg.inv(a.T @ a)
        assert np.allclose(batch.covariance[b], cov, rtol=1e-8)
    assert str(batch) == repr(batch)  # a batch has no one-fit report
    with pytest.raises(Exception, match=r"sigma\[0\] must be finite and > 0"):
        fits(jnp.asarray(ys), jnp.asarray([SIGMA, -SIGMA]))


BAD = [
    (dict(sigma=-1.0), ValueError, r"sigma must be finite and > 0; got -1.0"),
    (dict(sigma=jnp.ones(3)), ValueError, r"sigma must have shape \(40,\); got shape \(3,\)"),
    (dict(sigma=(1.0, 2.0)), ValueError, r"sigma must be one number or a PyTree"),
    (dict(sigma=jnp.ones(40, jnp.float32)), TypeError, r"dtype float32 but the residual"),
    (dict(sigma=jnp.ones(40, bool)), TypeError, r"sigma must be real"),
    (dict(absolute_sigma=1), TypeError, r"absolute_sigma"),  # (the test hook's words)
    (dict(absolute_sigma=True, check_rank=False), ValueError, r"check_rank=False skips"),
]


@pytest.mark.parametrize("kwargs, error, match", BAD, ids=[str(c[0]) for c in BAD])
def test_bad_sigma_is_refused_before_solving(kwargs, error, match):
    with pytest.raises(error, match=match):
        sciad.fit(DECAY0, decay_residuals, (jnp.asarray(T), jnp.asarray(Y)), **kwargs)


def test_sigma_with_a_scalar_loss_is_refused():
    scalar = lambda m, d: jnp.sum(decay_residuals(m, d) ** 2)
    with pytest.raises(ValueError, match="loss returned a scalar: return the residuals"):
        sciad.fit(
            DECAY0,
            scalar,
            (jnp.asarray(T), jnp.asarray(Y)),
            sigma=1.0,
            solver=optx.BFGS(1e-8, 1e-8),
        )
