"""Step times: exact t0 + k·dt in the state's dtype (float32 included), and a refusal
where dt is below the time dtype's resolution."""

from fractions import Fraction

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sciad


class Still(sciad.AbstractModel):
    """dy/dt = 0: the cheapest model, for clock tests."""

    def vector_field(self, t, y):
        return jnp.zeros_like(y)


class Drive(sciad.AbstractModel):
    """dy/dt = cos(ω t): y(t) = y(t0) + (sin ω t − sin ω t0)/ω, a drive that must advance."""

    omega: jax.Array = eqx.field(converter=jnp.asarray)

    def vector_field(self, t, y):
        return jnp.cos(self.omega * t) * jnp.ones_like(y)


def _correctly_rounded(ts, t0, dt, ks):
    """Every ts[i] is t0 + ks[i]·dt (exact rationals) rounded to ts's dtype."""
    for t, k in zip(np.asarray(ts), ks, strict=True):
        exact = Fraction(t0) + int(k) * Fraction(dt)
        half_ulp = Fraction(float(np.spacing(np.abs(t)))) / 2
        assert abs(Fraction(float(t)) - exact) <= half_ulp, (k, float(t), float(exact))


def test_float32_clock_does_not_drift():
    """200,000 float32 steps of 1e-3 end at 200 (accumulating t + dt gave 200.45)."""
    y0 = jnp.zeros(1, jnp.float32)
    traj = sciad.simulate(Still(), y0, dt=1e-3, n_steps=200_000)
    assert traj.t1.dtype == jnp.float32
    assert float(traj.t1) == 200.0
    acc = np.float32(0.0)  # the old clock, for the record
    for _ in range(200_000):
        acc = acc + np.float32(1e-3)
    assert abs(float(acc) - 200.0) > 0.4


@pytest.mark.parametrize("t0, dt", [(0.0, 1e-3), (1e7, 0.75), (-3.0, 0.0123), (12.5, 1 / 3)])
def test_every_saved_time_is_correctly_rounded(t0, dt):
    n = 4096
    y0 = jnp.zeros(1, jnp.float32)
    traj = sciad.simulate(
        Still(), y0, t0=t0, dt=dt, n_steps=n, saveat=sciad.SaveAt(t0=True, steps=7)
    )
    ks = [0, *range(7, n + 1, 7)]
    assert traj.ts.dtype == jnp.float32
    _correctly_rounded(traj.ts, t0, dt, ks)
    _correctly_rounded([traj.t1], t0, dt, [n])


def test_long_run_clock_is_exact_with_a_large_counter():
    """Step counts past 2^24 (where float32 cannot hold k) still give exact times."""
    from sciad._core._clock import StepClock

    t0, dt, n = 3.3, 1e-5, 2**31 - 2
    clock = StepClock.create(t0, dt, jnp.float32, n)
    ks = np.random.default_rng(0).integers(0, n, 300)
    ts = jax.jit(jax.vmap(clock))(jnp.asarray(ks, jnp.int32))
    _correctly_rounded(ts, t0, dt, ks)
    ts64 = jax.vmap(StepClock.create(t0, dt, jnp.float64, n))(jnp.asarray(ks, jnp.int32))
    _correctly_rounded(ts64, t0, dt, ks)


def test_driven_model_advances_at_large_t0_in_float32():
    """At t0 = 1e7 a float32 clock accumulating t + 0.75 moves 1 per step (ulp = 1);
    the exact clock follows the drive like a float64 run."""
    t0, dt, n, omega = 1e7, 0.75, 400, 0.01
    y0 = jnp.zeros(1, jnp.float32)
    model32 = Drive(jnp.float32(omega))
    traj = sciad.simulate(model32, y0, t0=t0, dt=dt, n_steps=n, saveat=sciad.SaveAt(steps=40))
    ref = sciad.simulate(
        Drive(omega), y0.astype(jnp.float64), t0=t0, dt=dt, n_steps=n, saveat=sciad.SaveAt(steps=40)
    )
    exact = (np.sin(omega * (t0 + dt * np.arange(40, n + 1, 40))) - np.sin(omega * t0)) / omega
    assert np.allclose(np.asarray(ref.ys[:, 0]), exact, atol=1e-6)
    # Step and stage times are within one ulp (1.0 at 1e7) of exact, so the drive is
    # off by at most ω·1 and y by at most ω·(t - t0) = 3 at the end.
    err = np.abs(np.asarray(traj.ys[:, 0], np.float64) - exact)
    assert np.all(err <= omega * dt * np.arange(40, n + 1, 40))
    assert np.array_equal(np.asarray(traj.ts, np.float64), t0 + dt * np.arange(40, n + 1, 40))
    # the accumulated clock: 400 steps of fl(t + 0.75) = t + 1 reach 1e7 + 400, not + 300
    acc = np.float32(t0)
    for _ in range(n):
        acc = acc + np.float32(dt)
    assert float(acc) == t0 + n
    frozen = (np.sin(omega * (t0 + n)) - np.sin(omega * t0)) / omega  # drive at those times
    assert abs(frozen - exact[-1]) > 50 * err[-1]


def test_dt_below_resolution_is_refused():
    y0 = jnp.zeros(1, jnp.float32)
    with pytest.raises(ValueError, match="below the resolution of the time dtype float32"):
        sciad.simulate(Still(), y0, t0=1e7, dt=1e-3, n_steps=10)
    # the end of the run counts too: fine at t0, frozen by t1
    with pytest.raises(ValueError, match=r"at t = 16777216"):
        sciad.simulate(Still(), y0, t0=2.0**24 - 4, dt=1.0, n_steps=4)
    sciad.simulate(Still(), y0.astype(jnp.float64), t0=1e7, dt=1e-3, n_steps=10)


def test_dt_below_resolution_traced_is_a_runtime_error():
    y0 = jnp.zeros(1, jnp.float32)

    @jax.jit
    def run(t0):
        return sciad.simulate(Still(), y0, t0=t0, dt=1e-3, n_steps=10).t1

    assert float(run(jnp.float32(5.0))) == pytest.approx(5.01)
    with pytest.raises(Exception, match="below the resolution"):
        jax.block_until_ready(run(jnp.float32(1e7)))


def test_traced_dt_gradient_and_times():
    """Times from a traced dt are exact too, and d t1 / d dt = n."""
    y0 = jnp.zeros(1, jnp.float32)

    def t1(dt):
        return sciad.simulate(Still(), y0, t0=jnp.float32(1.0), dt=dt, n_steps=1000).t1

    dt = jnp.float32(1e-3)
    out = jax.jit(t1)(dt)
    _correctly_rounded([out], 1.0, float(dt), [1000])
    assert float(jax.grad(t1)(dt)) == 1000.0


def test_float64_times_are_exact():
    traj = sciad.simulate(
        Still(), jnp.zeros(1), t0=0.1, dt=0.01, n_steps=1000, saveat=sciad.SaveAt(steps=1)
    )
    _correctly_rounded(traj.ts, 0.1, 0.01, range(1, 1001))
