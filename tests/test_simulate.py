"""sciad.simulate: saving, resuming exactly, result codes, batching, dtypes."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sciad

from .helpers import tree_allclose, tree_equal_bits

PENDULUM = sciad.ode.Pendulum(length=1.0, gravity=9.81, damping=0.1)
Y0 = jnp.array([1.0, 0.0])
KEPLER_MODEL = sciad.ode.Kepler(mu=1.0)


class Blowup(sciad.AbstractModel):
    """dy/dt = r·y², y(0) = 1/c: finite-time blow-up at t = 1/(r y0)."""

    rate: jax.Array

    def vector_field(self, t, y):
        return self.rate * y**2


class CheckedRK4(sciad.AbstractIntegrator):
    """RK4 that asks `simulate` to check finiteness after every step (as a contact
    solver does): the first bad step then comes from the snapshot, with no replay."""

    requires_separable = False

    def order(self):
        return 4

    def init(self, model, t0, y0):
        return sciad.RK4().init(model, t0, y0)

    def step(self, model, t, dt, y, state):
        return sciad.RK4().step(model, t, dt, y, state)

    def check_every_step(self, model):
        return True


CHECKS = pytest.mark.parametrize("integrator", [sciad.RK4(), CheckedRK4()], ids=["blocks", "every"])


def _stepwise(model, y0, dt, n, integrator):
    """Reference: a Python loop of integrator.step."""
    y, s, out = y0, integrator.init(model, 0.0, y0), [y0]
    for i in range(n):
        y, s = integrator.step(model, i * dt, dt, y, s)
        out.append(y)
    return out


def test_saveat_ts_matches_python_loop():
    ts = jnp.linspace(0.0, 1.0, 11)
    traj = sciad.simulate(PENDULUM, Y0, t1=1.0, dt=0.01, saveat=sciad.SaveAt(ts=ts))
    ref = _stepwise(PENDULUM, Y0, 0.01, 100, sciad.RK4())
    assert np.allclose(traj.ts, ts, atol=1e-12)
    assert np.allclose(traj.ys, jnp.stack(ref[::10]), atol=1e-13)
    assert np.allclose(traj.y1, ref[-1], atol=1e-13)
    assert int(traj.stats["num_steps"]) == 100
    assert traj.result == sciad.RESULTS.successful


def test_saveat_steps_t0_t1_and_fn():
    saveat = sciad.SaveAt(t0=True, steps=25, fn=lambda t, y, m: m.energy(y))
    traj = sciad.simulate(PENDULUM, Y0, n_steps=100, dt=0.01, saveat=saveat)
    ref = _stepwise(PENDULUM, Y0, 0.01, 100, sciad.RK4())
    expect = jnp.stack([PENDULUM.energy(ref[i]) for i in (0, 25, 50, 75, 100)])
    assert traj.ys.shape == (5,)
    assert np.allclose(traj.ys, expect, atol=1e-13)
    assert np.allclose(traj.ts, [0.0, 0.25, 0.5, 0.75, 1.0], atol=1e-12)


def test_non_uniform_saveat_ts():
    ts = jnp.array([0.0, 0.03, 0.1, 0.11, 0.5])
    traj = sciad.simulate(PENDULUM, Y0, t1=0.6, dt=0.01, saveat=sciad.SaveAt(ts=ts))
    ref = _stepwise(PENDULUM, Y0, 0.01, 60, sciad.RK4())
    assert np.allclose(traj.ts, ts, atol=1e-12)
    assert np.allclose(traj.ys, jnp.stack([ref[i] for i in (0, 3, 10, 11, 50)]), atol=1e-13)
    assert np.allclose(traj.y1, ref[-1], atol=1e-13)


def test_default_saves_final_state_only():
    traj = sciad.simulate(PENDULUM, Y0, n_steps=10, dt=0.01)
    assert traj.ys.shape == (1, 2) and np.array_equal(traj.ys[0], traj.y1)


@pytest.mark.parametrize(
    "integrator", [sciad.VelocityVerlet(), sciad.Yoshida4(), sciad.SymplecticEuler()]
)
@pytest.mark.parametrize("adjoint", [sciad.CheckpointAdjoint(), sciad.DirectAdjoint()])
def test_resume_is_bit_for_bit(integrator, adjoint):
    model = sciad.ode.Kepler(mu=1.0)
    y0 = model.initial_state(eccentricity=0.5)
    kw = dict(dt=0.01, integrator=integrator, adjoint=adjoint)
    whole = sciad.simulate(model, y0, n_steps=1000, **kw)
    half = sciad.simulate(model, y0, n_steps=500, **kw)
    rest = sciad.simulate(
        model, half.y1, t0=half.t1, n_steps=500, integrator_state=half.integrator_state, **kw
    )
    assert tree_equal_bits(whole.y1, rest.y1)
    assert tree_equal_bits(whole.t1, rest.t1)


def test_resume_rk4_time_dependent_and_via_disk(tmp_path):
    osc = sciad.ode.HarmonicOscillator(
        mass=1.0, stiffness=2.0, damping=0.1, drive_amplitude=0.5, drive_frequency=1.3
    )
    whole = sciad.simulate(osc, Y0, n_steps=600, dt=0.01)
    half = sciad.simulate(osc, Y0, n_steps=300, dt=0.01)
    path = tmp_path / "run.eqx"
    eqx.tree_serialise_leaves(path, half)
    loaded = eqx.tree_deserialise_leaves(path, half)
    rest = sciad.simulate(
        osc, loaded.y1, t0=loaded.t1, n_steps=300, dt=0.01, integrator_state=loaded.integrator_state
    )
    assert tree_equal_bits(whole.y1, rest.y1)


@CHECKS
def test_nonfinite_reports_exact_step(integrator):
    model = Blowup(jnp.asarray(1.0))
    traj = sciad.simulate(
        model, jnp.array(1.0), dt=0.01, n_steps=300, throw=False, integrator=integrator
    )
    ref = _stepwise(model, jnp.array(1.0), 0.01, 300, sciad.RK4())
    first = next(i for i, y in enumerate(ref) if not np.isfinite(y))
    assert traj.result == sciad.RESULTS.nonfinite_state
    assert int(traj.stats["first_nonfinite_step"]) == first
    with pytest.raises(eqx.EquinoxRuntimeError, match="non-finite"):
        sciad.simulate(model, jnp.array(1.0), dt=0.01, n_steps=300)


@CHECKS
def test_nonfinite_with_saves_and_masked_segments(integrator):
    model = Blowup(jnp.asarray(1.0))
    ref = _stepwise(model, jnp.array(1.0), 0.01, 300, sciad.RK4())
    first = next(i for i, y in enumerate(ref) if not np.isfinite(y))
    for saveat in (sciad.SaveAt(steps=7), sciad.SaveAt(ts=jnp.array([0.0, 0.5, 0.52, 2.0]))):
        traj = sciad.simulate(
            model,
            jnp.array(1.0),
            dt=0.01,
            n_steps=300,
            throw=False,
            saveat=saveat,
            integrator=integrator,
        )
        assert int(traj.stats["first_nonfinite_step"]) == first


@CHECKS
def test_vmap_each_element_reports_its_own_result(integrator):
    model = Blowup(jnp.asarray(1.0))
    run = jax.vmap(
        lambda y0: sciad.simulate(
            model, y0, dt=0.01, n_steps=300, throw=False, integrator=integrator
        )
    )
    trajs = run(jnp.array([1.0, -1.0, 0.5]))
    ok, bad = sciad.RESULTS.successful, sciad.RESULTS.nonfinite_state
    codes = np.asarray(trajs.result._value)
    assert codes[1] == ok._value and codes[0] == bad._value and codes[2] == bad._value
    steps = np.asarray(trajs.stats["first_nonfinite_step"])
    assert steps[1] == -1 and 0 < steps[0] < steps[2]


class Tally:
    """A host-side counter, hashable by identity (a static field of a model)."""

    count = 0


class CountedDecay(sciad.AbstractModel):
    """dy/dt = −y, counting its evaluations through a host callback."""

    tally: Tally = eqx.field(static=True)

    def vector_field(self, t, y):
        def add():
            self.tally.count += 1

        jax.debug.callback(add)
        return -y


def test_vmapped_healthy_run_does_not_replay_a_block():
    """Under vmap the non-finite replay runs only if some world went non-finite: 100
    RK4 steps of a healthy batch cost 100 × 4 batched evaluations (the callback has no
    batched operand, so it runs once per batched evaluation). A plain cond on the
    batched flag also replayed a block of 64 steps: 656 evaluations."""
    model = CountedDecay(Tally())
    run = jax.jit(jax.vmap(lambda y0: sciad.simulate(model, y0, dt=0.01, n_steps=100).y1))
    y1 = run(jnp.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(np.asarray(y1), np.exp(-1.0) * np.array([1.0, 2.0, 3.0]), rtol=1e-9)
    assert model.tally.count == 100 * 4


def test_max_steps_reached():
    traj = sciad.simulate(
        PENDULUM,
        Y0,
        t1=1.0,
        dt=0.01,
        max_steps=40,
        throw=False,
        saveat=sciad.SaveAt(ts=jnp.linspace(0.0, 1.0, 11)),
    )
    assert traj.result == sciad.RESULTS.max_steps_reached
    assert int(traj.stats["num_steps"]) == 40
    assert np.isfinite(traj.ys[:5]).all() and np.isnan(traj.ys[5:]).all()
    assert np.isinf(traj.ts[5:]).all()
    with pytest.raises(eqx.EquinoxRuntimeError, match="max_steps"):
        sciad.simulate(PENDULUM, Y0, t1=1.0, dt=0.01, max_steps=40)


def test_vmap_over_initial_conditions_and_parameters():
    thetas = jnp.linspace(0.1, 1.0, 8)
    lengths = jnp.linspace(0.5, 2.0, 8)

    def run(theta, length):
        model = sciad.ode.Pendulum(length=length, gravity=9.81, damping=0.1)
        return sciad.simulate(model, jnp.stack([theta, 0.0]), n_steps=200, dt=0.01).y1

    batched = jax.vmap(run)(thetas, lengths)
    looped = jnp.stack([run(a, b) for a, b in zip(thetas, lengths, strict=True)])
    assert np.allclose(batched, looped, atol=1e-13)


def test_float32_in_float32_out():
    model = sciad.ode.Pendulum(
        length=jnp.float32(1.0), gravity=jnp.float32(9.81), damping=jnp.float32(0.1)
    )
    traj = sciad.simulate(model, Y0.astype(jnp.float32), n_steps=10, dt=0.01)
    assert traj.y1.dtype == jnp.float32 and traj.ts.dtype == jnp.float32
    ref = sciad.simulate(PENDULUM, Y0, n_steps=10, dt=0.01)
    assert np.allclose(traj.y1, ref.y1, atol=1e-6)


def test_no_recompile_on_new_parameter_values():
    compiles = []

    def listener(event, duration, **kwargs):
        if event == "/jax/core/compile/backend_compile_duration":
            compiles.append(duration)

    class Traced(sciad.AbstractModel):
        k: jax.Array

        def vector_field(self, t, y):
            return -self.k * y

    sciad.simulate(Traced(jnp.asarray(1.0)), jnp.array(1.0), n_steps=5, dt=0.1)
    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        for k in (2.0, 3.0, 4.0):
            out = sciad.simulate(Traced(jnp.asarray(k)), jnp.array(1.0), n_steps=5, dt=0.1)
            jax.block_until_ready(out)
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
    assert compiles == []


def test_jit_of_simulate_with_traced_dt_and_t0():
    @jax.jit
    def run(dt, t0):
        return sciad.simulate(PENDULUM, Y0, t0=t0, n_steps=100, dt=dt).y1

    assert tree_allclose(run(0.01, 0.0), sciad.simulate(PENDULUM, Y0, n_steps=100, dt=0.01).y1)


def test_pytree_state():
    """States may be any PyTree: a dict of arrays here."""

    class Decay2(sciad.AbstractModel):
        def vector_field(self, t, y):
            return {"a": -y["a"], "b": -2.0 * y["b"]}

    traj = sciad.simulate(Decay2(), {"a": jnp.ones(3), "b": jnp.ones(2)}, t1=1.0, dt=0.001)
    assert np.allclose(traj.y1["a"], np.exp(-1.0), rtol=1e-10)
    assert np.allclose(traj.y1["b"], np.exp(-2.0), rtol=1e-10)


@pytest.mark.parametrize(
    "saveat, idx",
    [
        (sciad.SaveAt(steps=1), list(range(1, 61))),
        (sciad.SaveAt(steps=3, t0=True), list(range(0, 61, 3))),
        (
            sciad.SaveAt(ts=jnp.array([0.01, 0.03, 0.04, 0.07, 0.08, 0.1, 0.13])),
            [1, 3, 4, 7, 8, 10, 13],
        ),
    ],
    ids=["every-step", "every-3", "small-non-uniform"],
)
def test_frequent_saves_are_grouped_correctly(saveat, idx):
    """Save intervals shorter than a check block: saves and the final state are exact."""
    traj = sciad.simulate(PENDULUM, Y0, n_steps=60, dt=0.01, saveat=saveat)
    ref = _stepwise(PENDULUM, Y0, 0.01, 60, sciad.RK4())
    assert np.allclose(traj.ys, jnp.stack([ref[i] for i in idx]), atol=1e-13)
    assert np.allclose(traj.ts, 0.01 * np.array(idx), atol=1e-12)
    assert np.allclose(traj.y1, ref[-1], atol=1e-13)


@pytest.mark.parametrize("saveat", [sciad.SaveAt(steps=1), sciad.SaveAt(steps=5)])
def test_nonfinite_step_exact_with_frequent_saves(saveat):
    model = Blowup(jnp.asarray(1.0))
    ref = _stepwise(model, jnp.array(1.0), 0.01, 300, sciad.RK4())
    first = next(i for i, y in enumerate(ref) if not np.isfinite(y))
    traj = sciad.simulate(model, jnp.array(1.0), dt=0.01, n_steps=300, throw=False, saveat=saveat)
    assert int(traj.stats["first_nonfinite_step"]) == first


def test_gradient_with_every_step_saved_matches_fd():
    def f(length):
        model = sciad.ode.Pendulum(length=length, gravity=9.81, damping=0.1)
        traj = sciad.simulate(model, Y0, n_steps=100, dt=0.01, saveat=sciad.SaveAt(steps=1))
        return jnp.sum(traj.ys[:, 0] ** 2)

    g = jax.grad(f)(1.0)
    fd = (f(1.0 + 1e-6) - f(1.0 - 1e-6)) / 2e-6
    assert np.isclose(g, fd, rtol=1e-7)


def test_block_length_divides_the_run_when_it_can():
    """Blocks of 32 steps, or a divisor of n near 32 (one copy of the step), else 32
    and a remainder."""
    from sciad._core._simulate import block_length

    assert [block_length(n) for n in (64, 1000, 195, 300, 97, 5)] == [32, 25, 39, 30, 32, 32]


@pytest.mark.parametrize(("n_steps", "rate"), [(97, 1.06), (195, 0.6), (1000, 0.2)])
def test_nonfinite_exact_for_any_block_length(n_steps, rate):
    """The first bad step is exact whatever the block length: step 97, the remainder
    of a 97-step run (three blocks of 32 and one step); step 169 in blocks of 39;
    step 503 in blocks of 25."""
    model = Blowup(jnp.asarray(rate))
    ref = _stepwise(model, jnp.array(1.0), 0.01, n_steps, sciad.RK4())
    first = next(i for i, y in enumerate(ref) if not np.isfinite(y))
    traj = sciad.simulate(model, jnp.array(1.0), dt=0.01, n_steps=n_steps, throw=False)
    assert traj.result == sciad.RESULTS.nonfinite_state
    assert int(traj.stats["first_nonfinite_step"]) == first


def test_step_is_traced_once():
    """`simulate` traces the integrator's step once, whatever the step count: every
    block, the remainder and the non-finite replay call one jitted step."""
    for n in (97, 1000):
        calls = []

        class Counted(sciad.AbstractModel):  # a fresh class: no cached trace
            rate: jax.Array

            def vector_field(self, t, y, calls=calls):
                calls.append(None)
                return -self.rate * y

        model = Counted(jnp.asarray(1.0))
        jax.make_jaxpr(lambda y, m=model, n=n: sciad.simulate(m, y, dt=0.01, n_steps=n).y1)(Y0)
        # One call from the state check (an `eval_shape`), four from RK4's one trace.
        assert len(calls) == 1 + 4


def test_resume_checks_the_integrator_state():
    """A cached force from another point, or from other parameters, is refused (a stale
    force would be used silently); `refresh` makes a valid state; exact resume passes."""
    model, integ = sciad.ode.Kepler(mu=1.0), sciad.VelocityVerlet()
    y0 = model.initial_state(eccentricity=0.5)
    run = sciad.simulate(model, y0, dt=0.01, n_steps=50, integrator=integ)
    kw = dict(dt=0.01, n_steps=20, integrator=integ)
    with pytest.raises(ValueError, match=r"does not belong .* integrator.refresh"):
        sciad.simulate(model, y0, integrator_state=run.integrator_state, **kw)
    heavier = sciad.ode.Kepler(mu=2.0)
    with pytest.raises(ValueError, match="stale cache"):
        sciad.simulate(heavier, run.y1, t0=run.t1, integrator_state=run.integrator_state, **kw)
    fresh = integ.refresh(heavier, run.t1, run.y1, run.integrator_state)
    resumed = sciad.simulate(heavier, run.y1, t0=run.t1, integrator_state=fresh, **kw)
    restart = sciad.simulate(heavier, run.y1, t0=run.t1, **kw)
    assert tree_equal_bits(resumed.y1, restart.y1)

    @jax.jit
    def traced(y, state):
        return sciad.simulate(model, y, integrator_state=state, **kw).y1

    ok = traced(run.y1, run.integrator_state)  # the right state passes when traced
    assert tree_equal_bits(ok, sciad.simulate(model, run.y1, **kw).y1)
    with pytest.raises(Exception, match="does not belong to this model, t0 and y0"):
        jax.block_until_ready(traced(y0, run.integrator_state))


def test_complex_state_is_refused():
    """A complex state would run through real dynamics as if real. (Through `simulate`
    the suite's jaxtyping hook refuses it first; the bad-input suite checks sciad's own
    message there. No model sets `supports_complex` yet, and the state annotations are
    real, so the opt-in is not exercised.)"""
    from sciad._core._validate import check_state

    z0 = jnp.array([1.0 + 0j, 0.5j])
    with pytest.raises(TypeError, match=r"y0 has complex dtype complex128, but Pendulum"):
        check_state(PENDULUM, z0)
    with pytest.raises(TypeError, match=r"y0\[0\] has complex dtype complex64"):
        check_state(KEPLER_MODEL, (jnp.zeros(2, jnp.complex64), jnp.zeros(2, jnp.complex64)))


def test_saveat_steps_beyond_the_run_is_refused_and_empty_saveat_saves_t1():
    with pytest.raises(ValueError, match=r"SaveAt\(steps=11\).* only 10 steps"):
        sciad.simulate(PENDULUM, Y0, dt=0.01, n_steps=10, saveat=sciad.SaveAt(steps=11))
    every = sciad.simulate(PENDULUM, Y0, dt=0.01, n_steps=10, saveat=sciad.SaveAt(steps=10))
    empty = sciad.simulate(PENDULUM, Y0, dt=0.01, n_steps=10, saveat=sciad.SaveAt())
    assert tree_equal_bits((empty.ts, empty.ys), (every.ts, every.ys))
    # past max_steps: padded and reported, not silent
    stopped = sciad.simulate(
        PENDULUM, Y0, dt=0.01, n_steps=10, max_steps=5, saveat=sciad.SaveAt(steps=10), throw=False
    )
    assert stopped.result == sciad.RESULTS.max_steps_reached and np.isinf(stopped.ts[0])
