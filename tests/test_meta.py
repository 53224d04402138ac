"""`sciad.meta_fit`, the outer loop of meta-optimisation, against closed forms.

The bilevel problem: a ridge-regularised linear fit (`sciad.fit`, Levenberg–Marquardt)
on training data, and the regularisation weight λ chosen to minimise the error on
validation data. Its inner solution w(λ) = (XᵀX + λI)⁻¹Xᵀy is known in closed form, so
the optimal λ* is the root of dL/dλ, found by `scipy.optimize.brentq` to machine
precision, independently of sciad.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optimistix as optx
import pytest
import scipy.optimize

import sciad
from sciad.fit import NoiseTolerantArmijo, NoiseTolerantBFGS

N, P = 20, 8
_k1, _k2, _k3 = jax.random.split(jax.random.PRNGKey(0), 3)
_X = jax.random.normal(_k2, (2 * N, P))
_Y = _X @ jax.random.normal(_k1, (P,)) + 3.0 * jax.random.normal(_k3, (2 * N,))
XT, YT, XV, YV = _X[:N], _Y[:N], _X[N:], _Y[N:]


class Linear(eqx.Module):
    w: jax.Array


def ridge(model, lam):
    return XT @ model.w - YT, jnp.sqrt(lam) * model.w


def validation_error(hyper, yv):
    inner = sciad.fit(Linear(jnp.zeros(P)), ridge, hyper["lam"], check_rank=False)
    return jnp.mean((XV @ inner.model.w - yv) ** 2)


def _closed_form(lam, yv):
    """The validation error L(λ) and dL/dλ of the ridge solution, in NumPy."""
    a, b = np.asarray(XT), np.asarray(YT)
    m = a.T @ a + lam * np.eye(P)
    w = np.linalg.solve(m, a.T @ b)
    r = np.asarray(XV) @ w - np.asarray(yv)
    dw = -np.linalg.solve(m, w)
    return np.mean(r**2), 2 * np.mean(r * (np.asarray(XV) @ dw))


def _best_lambda(yv):
    """λ* by a grid scan for the bracket, then brentq on dL/dλ = 0."""
    grid = np.logspace(-4, 4, 161)
    i = int(np.argmin([_closed_form(lam, yv)[0] for lam in grid]))
    assert 0 < i < len(grid) - 1, "the optimum must be inside the scanned range"
    return scipy.optimize.brentq(
        lambda lam: _closed_form(lam, yv)[1], grid[i - 1], grid[i + 1], xtol=1e-15, rtol=1e-15
    )


LAM_STAR = _best_lambda(YV)


def test_reference_optimum_is_interior():
    assert 0.5 < LAM_STAR < 50.0  # a real trade-off: neither no nor infinite regularisation


def test_finds_the_optimal_regularisation_weight():
    res = sciad.meta_fit(
        {"lam": jnp.asarray(1.0)}, validation_error, YV, positive=lambda h: h["lam"]
    )
    assert res.result == sciad.RESULTS.successful
    lam = float(res.hyper["lam"])
    # The inner fit stops at ~1e-9 relative error, which bounds the outer gradient's accuracy.
    assert lam == pytest.approx(LAM_STAR, rel=1e-6)
    assert float(res.loss) == pytest.approx(_closed_form(lam, YV)[0], rel=1e-10)
    # optx.BFGS takes 31 steps here, most of them rejected trial steps at the optimum
    # (Armijo's test fails in the inner fit's noise); the noise-tolerant search 12.
    assert int(res.num_steps) <= 15
    assert res.aux is None


def test_meta_gradient_matches_finite_differences():
    log_lam = jnp.log(jnp.asarray(2.0))
    grad = jax.grad(lambda t: validation_error({"lam": jnp.exp(t)}, YV))(log_lam)
    h = 1e-5
    up, down = (_closed_form(np.exp(float(log_lam) + s), YV)[0] for s in (h, -h))
    central = (up - down) / (2 * h)
    assert float(grad) == pytest.approx(central, rel=1e-7)
    # and sciad's own objective, differenced: the inner fit's noise is ~1e-12 of the loss
    f = jax.jit(lambda t: validation_error({"lam": jnp.exp(t)}, YV))
    h = 1e-3
    assert float(grad) == pytest.approx(
        float((f(log_lam + h) - f(log_lam - h)) / (2 * h)), rel=1e-5
    )


def test_optimum_is_differentiable_and_jits():
    def best(yv):
        res = sciad.meta_fit(
            {"lam": jnp.asarray(1.0)}, validation_error, yv, positive=lambda h: h["lam"]
        )
        return res.hyper["lam"]

    jitted = eqx.filter_jit(best)
    assert float(jitted(YV)) == pytest.approx(LAM_STAR, rel=1e-6)
    grad = eqx.filter_jit(jax.grad(best))(YV)
    # d λ* / d yv[k] by central differences of the reference optimum
    h = 1e-4
    for k in (0, 7):
        e = np.zeros(N)
        e[k] = h
        fd = (_best_lambda(np.asarray(YV) + e) - _best_lambda(np.asarray(YV) - e)) / (2 * h)
        assert float(grad[k]) == pytest.approx(fd, rel=1e-5, abs=1e-8)


def test_optax_through_optimistix():
    optax = pytest.importorskip("optax")
    solver = optx.OptaxMinimiser(optax.adam(0.1), rtol=1e-7, atol=1e-7)
    # optax's Adam raises a float to an int32 step count, which the suite's strict dtype
    # promotion refuses; users' default ("standard") promotion allows it.
    with jax.numpy_dtype_promotion("standard"):
        res = sciad.meta_fit(
            {"lam": jnp.asarray(1.0)}, validation_error, YV, solver=solver,
            positive=lambda h: h["lam"], max_steps=1000,
        )  # fmt: skip
    assert res.result == sciad.RESULTS.successful
    assert float(res.hyper["lam"]) == pytest.approx(LAM_STAR, rel=1e-3)
    assert int(res.num_steps) > 20  # a first-order method: many cheap steps


class Hyper(eqx.Module):
    centre: jax.Array
    scale: jax.Array
    label: str = eqx.field(static=True)


def test_module_hyperparameters_aux_free_and_progress(capsys):
    def objective(h, target):
        value = jnp.sum((h.centre - target) ** 2) + (h.scale - 2.0) ** 2
        return value, {"centre": h.centre}

    hyper = Hyper(jnp.zeros(3), jnp.asarray(1.0), "x")
    target = jnp.array([1.0, -2.0, 0.5])
    res = sciad.meta_fit(
        hyper, objective, target, has_aux=True, free=lambda h: h.centre, progress=True
    )
    assert isinstance(res.hyper, Hyper) and res.hyper.label == "x"
    np.testing.assert_allclose(res.hyper.centre, target, atol=1e-8)
    assert float(res.hyper.scale) == 1.0  # frozen
    np.testing.assert_allclose(res.aux["centre"], res.hyper.centre, rtol=0, atol=0)
    assert float(res.loss) == pytest.approx(1.0, abs=1e-12)  # (1 - 2)² from the frozen scale
    assert "meta step    1" in capsys.readouterr().out


def test_failure_is_reported_without_throw():
    rosenbrock = lambda h, _: (1 - h[0]) ** 2 + 100 * (h[1] - h[0] ** 2) ** 2
    res = sciad.meta_fit(jnp.array([-1.2, 1.0]), rosenbrock, max_steps=3, throw=False)
    assert res.result == sciad.RESULTS.max_steps_reached
    with pytest.raises(sciad.RunError, match=r"^sciad.meta_fit: the run needed more steps"):
        sciad.meta_fit(jnp.array([-1.2, 1.0]), rosenbrock, max_steps=3)


def _rosenbrock(y, _):
    return (1 - y[0]) ** 2 + 100 * (y[1] - y[0] ** 2) ** 2


def test_noise_free_search_is_optimistix_armijo():
    """With noise = 0 the solver takes optx.BFGS's iterates exactly."""
    y0 = jnp.array([-1.2, 1.0])
    ours = optx.minimise(_rosenbrock, NoiseTolerantBFGS(1e-10, 1e-10, noise=0.0), y0)
    theirs = optx.minimise(_rosenbrock, optx.BFGS(1e-10, 1e-10), y0)
    assert int(ours.stats["num_steps"]) == int(theirs.stats["num_steps"])
    np.testing.assert_array_equal(ours.value, theirs.value)
    np.testing.assert_allclose(ours.value, [1.0, 1.0], atol=1e-8)


@pytest.mark.parametrize("rise, noisy_accepts", [(1e-9, True), (1e-7, False)])
def test_search_relaxes_armijo_by_the_noise(rise, noisy_accepts):
    """A trial point predicted to lower f by 1e-12 but evaluated 1e-9 higher: Armijo
    rejects it; with a relative noise of 1e-8 (allowance 2e-8 at f = 1) it is
    accepted. A rise of 1e-7 is beyond the noise and is rejected by both."""
    y, y_eval = jnp.array([0.0]), jnp.array([1e-12])
    f_info = optx.FunctionInfo.EvalGrad(jnp.asarray(1.0), jnp.array([-1.0]))
    f_eval = optx.FunctionInfo.Eval(jnp.asarray(1.0 + rise))
    no = jnp.asarray(False)
    plain = optx.BacktrackingArmijo()
    relaxed = NoiseTolerantArmijo(noise=1e-8)
    _, accept_plain, _, _ = plain.step(no, y, y_eval, f_info, f_eval, plain.init(y, None))
    _, accept, _, state = relaxed.step(no, y, y_eval, f_info, f_eval, relaxed.init(y, None))
    assert not bool(accept_plain)
    assert bool(accept) == noisy_accepts
    assert float(state.step_size) == (1.0 if noisy_accepts else 0.5)


def test_learns_a_rate_through_a_simulation():
    """The objective runs `sciad.simulate` (no inner fit): learn the decay rate k for
    which 20 RK4 steps of dy/dt = −k y from y = 1 end at a target. The reference solves
    R(k dt)²⁰ = target exactly, R(z) = 1 − z + z²/2 − z³/6 + z⁴/24 being RK4's growth
    factor, so the discretisation error is no part of the comparison."""
    dt, n, target = 0.1, 20, 0.25

    def miss(hyper, target):
        run = sciad.simulate(
            sciad.ode.ExponentialDecay(rate=hyper["rate"]), jnp.asarray(1.0),
            dt=dt, n_steps=n, integrator=sciad.RK4(),
        )  # fmt: skip
        return (run.y1 - target) ** 2

    growth = lambda z: 1 - z + z**2 / 2 - z**3 / 6 + z**4 / 24
    k_star = scipy.optimize.brentq(lambda k: growth(k * dt) ** n - target, 0.1, 2.0, xtol=1e-15)
    res = sciad.meta_fit(
        {"rate": jnp.asarray(1.0)}, miss, jnp.asarray(target), positive=lambda h: h["rate"]
    )
    assert res.result == sciad.RESULTS.successful
    assert float(res.hyper["rate"]) == pytest.approx(k_star, rel=1e-7)
