"""windowed_average: forward values are one run's; its gradient is the average of
per-window gradients with the window's start held fixed; bounded in a chaotic liquid."""

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sciad
import sciad.md as md


def _angle(t, y, model):
    return jnp.cos(y[0])


PEND = sciad.ode.Pendulum(length=1.0, gravity=9.81, damping=0.3)
Y0 = jnp.array([1.2, 0.0])
KW = dict(dt=0.01, integrator=sciad.RK4())


def windowed(length, n=120, window=30, y0=Y0, **kw):
    model = eqx.tree_at(lambda m: m.length, PEND, length)
    traj = sciad.windowed_average(
        model, y0, _angle, n_steps=n, window=window, save_every=5, **KW, **kw
    )
    return traj


def test_forward_values_are_one_run():
    traj = windowed(jnp.asarray(1.0))
    ref = sciad.simulate(PEND, Y0, n_steps=120, saveat=sciad.SaveAt(steps=5, fn=_angle), **KW)
    assert traj.ys.shape == (4,)
    assert np.allclose(traj.ys, ref.ys.reshape(4, 6).mean(axis=1), rtol=1e-13)
    assert np.allclose(traj.ts, [0.3, 0.6, 0.9, 1.2]) and np.isclose(traj.t1, 1.2)
    assert np.allclose(traj.y1, ref.y1, rtol=1e-13) and int(traj.stats["num_steps"]) == 120


def test_one_window_is_the_plain_gradient():
    def plain(length):
        model = eqx.tree_at(lambda m: m.length, PEND, length)
        ys = sciad.simulate(
            model, Y0, n_steps=120, saveat=sciad.SaveAt(steps=5, fn=_angle), **KW
        ).ys
        return jnp.mean(ys)

    g = jax.grad(lambda a: jnp.mean(windowed(a, window=120).ys))(jnp.asarray(1.0))
    assert np.isclose(g, jax.grad(plain)(jnp.asarray(1.0)), rtol=1e-12)


@functools.cache  # two tests use the same starts
def _window_starts():
    """The start states of the four 30-step windows of a 120-step run at length 1."""
    starts = [Y0]
    for _ in range(3):
        starts.append(windowed(jnp.asarray(1.0), n=30, window=30, y0=starts[-1]).y1)
    return starts


def window_mean(length, y0):
    """One 30-step window's average from `y0`."""
    return jnp.mean(windowed(length, n=30, window=30, y0=y0).ys)


# d window_mean / d length, compiled once for every start and length it is evaluated at
grad_window_mean = jax.jit(jax.grad(window_mean))


def test_gradient_is_the_mean_of_window_gradients():
    one = jnp.asarray(1.0)
    starts = _window_starts()

    want = np.mean([grad_window_mean(one, y) for y in starts])
    got = jax.grad(lambda a: jnp.mean(windowed(a).ys))(one)
    fwd = jax.jvp(lambda a: jnp.mean(windowed(a).ys), (one,), (jnp.ones(()),))[1]
    assert np.isclose(got, want, rtol=1e-11) and np.isclose(fwd, want, rtol=1e-11)
    # and it is not the untruncated gradient
    assert not np.isclose(got, jax.grad(lambda a: jnp.mean(windowed(a, window=120).ys))(one))


def test_vmap_and_second_order():
    """vmap∘grad equals the loop; grad∘grad is the truncated second derivative: the mean
    of per-window second derivatives with each window's start held fixed (the start's
    own dependence on the parameter is cut at every order)."""
    lengths = jnp.array([0.8, 1.0, 1.3])
    f = lambda a: jnp.mean(windowed(a).ys)
    batched = jax.vmap(jax.grad(f))(lengths)
    grad_f = jax.jit(jax.grad(f))  # one compiled gradient for the loop
    assert np.allclose(batched, [grad_f(a) for a in lengths], rtol=1e-12)
    one = jnp.asarray(1.0)
    starts = _window_starts()

    h = 1e-4
    plus, minus = jnp.asarray(1 + h), jnp.asarray(1 - h)
    fd = np.mean(
        [(grad_window_mean(plus, y) - grad_window_mean(minus, y)) / (2 * h) for y in starts]
    )
    assert np.isclose(jax.grad(jax.grad(f))(one), fd, rtol=1e-6)
    assert np.isclose(jax.jvp(jax.grad(f), (one,), (jnp.ones(()),))[1], fd, rtol=1e-6)


def test_bad_arguments():
    with pytest.raises(ValueError, match="multiple of window"):
        windowed(jnp.asarray(1.0), n=100, window=30)
    with pytest.raises(ValueError, match="window must be a positive int"):
        windowed(jnp.asarray(1.0), window=0)


def _potential(t, y, m):
    return m.potential_energy(y[0])


@pytest.mark.slow
def test_chaotic_liquid_gradient_stays_bounded():
    """LJ liquid, NVE, 2,000 steps (t = 10): the untruncated gradient of ⟨U⟩ with respect
    to ε has blown up by orders of magnitude; the windowed one (0.5 time units) has not,
    and agrees with the equilibrium fluctuation estimate in sign and size."""
    q, box = md.lattice_for_density("fcc", 108, 0.84)
    p = md.maxwell_boltzmann(jax.random.key(0), jnp.ones(108), 1.0, exact=True)
    pot = md.Truncated(md.LennardJones(1.0, 1.0), cutoff=2.5, shift="force")
    system = md.MDSystem(box, pot, masses=jnp.ones(108))

    def mean_u(eps, window):
        s = eqx.tree_at(lambda s: s.potential.potential.epsilon, system, eps)
        traj = sciad.windowed_average(
            s, (q, p), _potential, dt=0.005, n_steps=2000, window=window, save_every=10
        )
        return jnp.mean(traj.ys)

    one = jnp.asarray(1.0)
    g_win = float(jax.grad(mean_u)(one, 100))
    g_all = float(jax.grad(mean_u)(one, 2000))
    print("windowed", g_win, "plain", g_all)
    assert np.isfinite(g_win) and abs(g_all) > 1e3 * abs(g_win)
    # U is about linear in ε at fixed configurations (U/ε ≈ −5.5 per particle)
    u = float(mean_u(one, 100))
    assert -2.0 * abs(u) < g_win < 0.0


def test_window_times_do_not_drift_in_float32():
    """Window start and end times come from one exact clock (t0 + k·dt rounded once),
    not from chaining each window's rounded t1."""
    from fractions import Fraction

    class Still(sciad.AbstractModel):
        def vector_field(self, t, y):
            return jnp.zeros_like(y)

    t0, dt, window = 0.1, 1e-3, 700
    traj = sciad.windowed_average(
        Still(),
        jnp.zeros(1, jnp.float32),
        lambda t, y, m: t,
        dt=dt,
        n_steps=14_000,
        window=window,
        t0=t0,
        save_every=window,
    )
    assert traj.ts.dtype == jnp.float32
    ends = [traj.t1, *traj.ts]
    ks = [14_000, *range(window, 14_001, window)]
    for t, k in zip(ends, ks, strict=True):
        exact = Fraction(t0) + k * Fraction(dt)
        assert abs(Fraction(float(t)) - exact) <= Fraction(float(np.spacing(np.float32(t)))) / 2
    # fn(t) at each window's end, from the window's own clock (which starts at the
    # rounded start time): within one rounding of the outer clock
    assert np.all(np.abs(np.asarray(traj.ys) - np.asarray(traj.ts)) <= np.spacing(traj.ts))
