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
    assert res.result == sciad.RESULTS.max_steps_reached
    with pytest.raises(sciad.RunError, match=r"^sciad.fit: the run needed more .* after 2 steps"):
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


def test_length_and_gravity_together_are_flagged_and_warned():
    """Only g/L is observable: the Jacobian has rank 1, its null direction is equal
    relative changes of length and gravity (g/L fixed), and the fit warns naming both."""
    guess = sciad.ode.Pendulum(length=0.8, gravity=9.0, damping=0.1)
    with pytest.warns(UserWarning, match=r"rank 1 for 2 free parameters.*length.*gravity"):
        res = sciad.fit(guess, pend_residuals, OBS, free=lambda m: (m.length, m.gravity))
    assert res.result == sciad.RESULTS.successful
    assert np.isclose(res.model.gravity / res.model.length, 9.81, rtol=1e-8)  # g/L found
    assert int(res.rank) == 1 and bool(res.rank_deficient)
    ident = res.identifiability
    assert ident.names == ("length", "gravity")
    (null,) = ident.null_directions()
    assert null == {"length": 0.707, "gravity": 0.707}
    # the null direction really leaves the residuals unchanged: δp = ε·diag(s)v
    v = np.asarray(ident.directions)[:, 1] * np.asarray(ident.scale)
    moved = eqx.tree_at(
        lambda m: (m.length, m.gravity),
        res.model,
        (res.model.length + 1e-4 * v[0], res.model.gravity + 1e-4 * v[1]),
    )
    drift = np.abs(np.asarray(pend_residuals(moved, OBS) - pend_residuals(res.model, OBS)))
    assert drift.max() < 1e-12


def test_well_posed_fit_has_full_rank_and_no_warning():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        res = sciad.fit(GUESS, pend_residuals, OBS, free=PEND_FREE, positive=PEND_FREE)
    assert int(res.rank) == 2 and not bool(res.rank_deficient)
    # singular values of the relative-unit Jacobian against numpy on a finite-difference one
    p = np.array([float(res.model.length), float(res.model.damping)])

    def r(x):
        m = eqx.tree_at(PEND_FREE, res.model, (jnp.asarray(x[0]), jnp.asarray(x[1])))
        return pend_residuals(m, OBS)

    fd = np.stack(
        [(r(p + h) - r(p - h)) / (2e-6 * p[k]) for k, h in enumerate(1e-6 * np.diag(p))], 1
    )
    sv = np.linalg.svd(fd * p[None, :], compute_uv=False)
    assert np.allclose(res.identifiability.singular_values, sv, rtol=1e-6)
    assert int(res.rank) == np.linalg.matrix_rank(fd * p[None, :])


def test_linear_fit_rank_matches_numpy_and_jit_gives_flag_only():
    """Line fit: rank 2; a third, duplicated parameter (slope split into two) is rank 2 of 3."""

    class Split(eqx.Module):
        a: jax.Array
        b: jax.Array
        intercept: jax.Array

    res = sciad.fit(LINE0, line_residuals, Y_LINE)
    assert int(res.rank) == 2 and not bool(res.rank_deficient)
    split = Split(jnp.asarray(0.5), jnp.asarray(0.5), jnp.asarray(0.0))
    res_fn = lambda m, d: (m.a + m.b) * T + m.intercept - d
    with pytest.warns(UserWarning, match="rank 2 for 3"):
        bad = sciad.fit(split, res_fn, Y_LINE)
    assert np.isclose(bad.model.a + bad.model.b, res.model.slope, rtol=1e-10)
    (null,) = bad.identifiability.null_directions()
    assert set(null) == {"a", "b"} and null["a"] == -null["b"]  # a − b is free
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # traced: the flag, no warning
        flag = jax.jit(lambda y: sciad.fit(split, res_fn, y).rank_deficient)(Y_LINE)
    assert bool(flag)


def test_check_rank_off_and_scalar_loss_leave_it_unset():
    off = sciad.fit(LINE0, line_residuals, Y_LINE, check_rank=False)
    assert off.identifiability is None and off.rank is None and off.rank_deficient is None
    scalar_loss = lambda m, d: 0.5 * jnp.sum(line_residuals(m, d) ** 2)
    mn = sciad.fit(LINE0, scalar_loss, Y_LINE, solver=optx.BFGS(rtol=1e-10, atol=1e-10))
    assert mn.identifiability is None
    # a minimiser given residuals gets the check (reverse mode)
    mr = sciad.fit(LINE0, line_residuals, Y_LINE, solver=optx.BFGS(rtol=1e-10, atol=1e-10))
    assert int(mr.rank) == 2


def test_residual_shape_mismatch_is_refused_before_solving():
    """(n, 1) predictions minus (n,) observations broadcast to (n, n): refused, either way
    round and inside a (ts, observations) tuple; a per-column scale is not refused."""
    column = lambda m, d: pendulum_angles(m)[:, None] - d
    row = lambda m, d: pendulum_angles(m) - d[1]
    two = jnp.stack([OBS, 2 * OBS], axis=1)  # (31, 2) observations, scaled per column
    scaled = lambda m, d: (jnp.stack([pendulum_angles(m), 2 * pendulum_angles(m)], 1) - d[0]) / d[1]
    with jax.numpy_rank_promotion("allow"):  # as in a user's session
        with pytest.raises(ValueError, match=r"shape \(31, 31\), which is data \(shape \(31,\)\)"):
            sciad.fit(GUESS, column, OBS)
        with pytest.raises(ValueError, match=r"data\[1\] \(shape \(31, 1\)\)"):
            sciad.fit(GUESS, row, (PEND_TS, OBS[:, None]))
        res = sciad.fit(GUESS, scaled, (two, jnp.array([1.0, 2.0])), free=PEND_FREE)
    assert np.isfinite(float(res.loss)) and int(res.rank) == 2


def test_fit_result_repr_is_short():
    res = sciad.fit(LINE0, line_residuals, Y_LINE)
    text = repr(res)
    assert "rank=i64[]" in text and "names=('slope', 'intercept')" in text
    assert len(text.splitlines()) < 25


def test_random_bad_data_is_refused_by_sciad_or_reported():
    """Seeded fuzz: random data shapes, dtypes and values, and residuals that match or
    broadcast them. Each fit either raises a sciad ValueError/TypeError (raised from
    sciad's own code, before solving) or returns a result that is finite and
    successful or flagged as failed: never a silent NaN or an outer-difference fit."""
    import traceback

    rng = np.random.default_rng(18)
    shapes = [(11,), (11, 1), (1, 11), (11, 2)]
    dtypes = [np.float64, np.float32, np.int64, np.complex128, np.bool_]
    styles = {
        "diff": lambda m, d: m(T) - d,
        "column": lambda m, d: m(T)[:, None] - d,
        "first": lambda m, d: m(T) - jnp.reshape(d, (-1,))[:11],
    }
    outcomes = {"refused": 0, "fitted": 0, "failed": 0}
    for _ in range(16):
        shape = shapes[rng.integers(len(shapes))]
        dtype = dtypes[rng.integers(len(dtypes))]
        values = rng.normal(size=shape) * 10.0 ** rng.integers(-3, 4)
        values = values.astype(dtype) if dtype is not np.bool_ else values > 0
        if np.issubdtype(values.dtype, np.inexact) and rng.random() < 0.25:
            values.flat[rng.integers(values.size)] = np.nan
        data = jnp.asarray(values)
        name = list(styles)[rng.integers(len(styles))]
        try:
            with jax.numpy_rank_promotion("allow"), jax.numpy_dtype_promotion("standard"):
                res = sciad.fit(LINE0, styles[name], data, throw=False, check_rank=False)
        except (ValueError, TypeError) as e:
            frame = traceback.extract_tb(e.__traceback__)[-1].filename
            assert "/sciad/" in frame, (shape, dtype, name, frame, str(e)[:200])
            outcomes["refused"] += 1
            continue
        ok = res.result == sciad.RESULTS.successful
        assert not ok or np.isfinite(float(res.loss)), (shape, dtype, name)
        with jax.numpy_rank_promotion("allow"), jax.numpy_dtype_promotion("standard"):
            n_res = np.prod(jax.eval_shape(styles[name], LINE0, data).shape)
        assert n_res <= data.size or n_res == 11, (shape, dtype, name)  # no outer difference
        outcomes["fitted" if ok else "failed"] += 1
    assert outcomes["refused"] > 0 and outcomes["fitted"] > 0, outcomes
