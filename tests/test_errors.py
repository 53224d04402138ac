"""Bad input gets a precise error naming the argument, before tracing; run-time failures are
reported, never hidden."""

import importlib

import equinox as eqx
import jax
import jax.numpy as jnp
import pytest

import sciad

MIN_CASES = 300  # the bar of issue 18
PILLARS = ("core", "ode", "fit", "md", "rigid")


def test_the_bad_input_suite_has_a_file_per_pillar_and_enough_cases():
    """Each case of `tests/bad_inputs/` is its own pytest item; together they hold at
    least 300 distinct cases."""
    names = []
    for pillar in PILLARS:
        cases = importlib.import_module(f"tests.bad_inputs.test_{pillar}").CASES
        assert cases, pillar
        names += [f"{pillar}: {c[0]}" for c in cases]
    assert len(set(names)) == len(names)
    assert len(names) >= MIN_CASES


def test_traced_nonpositive_dt_is_reported_at_run_time():
    model = sciad.ode.Pendulum(length=1.0, gravity=9.81, damping=0.1)
    run = jax.jit(lambda dt: sciad.simulate(model, jnp.array([1.0, 0.0]), dt=dt, n_steps=10).y1)
    # Under a plain jax.jit, equinox surfaces the same message as a JaxRuntimeError. On a
    # GPU it surfaces when the result is waited for (asynchronous dispatch).
    with pytest.raises(
        (eqx.EquinoxRuntimeError, jax.errors.JaxRuntimeError), match="dt must be positive"
    ):
        jax.block_until_ready(run(-0.1))


# A blow-up: RK4 with a step ten times past the oscillator's stability limit (ω = 10).
_SPRING = sciad.ode.HarmonicOscillator(mass=1.0, stiffness=100.0)
_BLOWUP = dict(dt=1.0, n_steps=200, integrator=sciad.RK4())
_Y0 = jnp.array([1.0, 0.0])


def test_a_blown_up_run_says_what_happened_on_its_first_line():
    """Outside transforms the result is known when `simulate` returns: the error is a
    plain `sciad.RunError` whose first line names the call, the failure and the step
    (the one `throw=False` reports), and whose next line is the advice."""
    quiet = sciad.simulate(_SPRING, _Y0, **_BLOWUP, throw=False)
    step = int(quiet.stats["first_nonfinite_step"])
    assert step > 0
    with pytest.raises(sciad.RunError) as info:
        sciad.simulate(_SPRING, _Y0, **_BLOWUP)
    lines = str(info.value).splitlines()
    assert lines[0] == (
        f"sciad.simulate: the state became non-finite (NaN or inf) at step {step} of 200."
    )
    assert "too large a step (try half the dt)" in lines[1]
    assert info.value.result == sciad.RESULTS.nonfinite_state
    assert isinstance(info.value, eqx.EquinoxRuntimeError)  # caught as before


def test_max_steps_and_a_windowed_run_report_first_too():
    with pytest.raises(sciad.RunError) as info:
        sciad.simulate(_SPRING, _Y0, dt=0.01, n_steps=100, max_steps=10)
    assert str(info.value).splitlines()[0] == (
        "sciad.simulate: the run needed more steps than `max_steps` allowed; it stopped "
        "early after 10 steps (t = 0.1)."
    )
    with pytest.raises(sciad.RunError, match=r"^sciad.simulate: the state became non-finite"):
        sciad.windowed_average(
            _SPRING,
            _Y0,
            lambda t, y, m: y[0],
            dt=1.0,
            n_steps=200,
            window=100,
            integrator=sciad.RK4(),
        )


def test_under_vmap_the_run_raises_with_the_message_first():
    """Under an eager `jax.vmap` (no `jax.jit` around it) the values exist, so
    `throw=True` raises the plain `sciad.RunError` too, saying how many runs of the batch
    failed and which first; a batch that runs cleanly raises nothing."""
    y0s = jnp.array([[1.0, 0.0], [0.0, 0.0], [2.0, 0.0]])  # the middle one stays at rest
    with pytest.raises(sciad.RunError) as info:
        jax.vmap(lambda y: sciad.simulate(_SPRING, y, **_BLOWUP))(y0s)
    assert str(info.value).splitlines()[0] == (
        "sciad.simulate: the state became non-finite (NaN or inf) in 2 of 3 runs of the "
        "batch (the first: run 0)."
    )
    assert info.value.result == sciad.RESULTS.nonfinite_state
    fine = jax.vmap(lambda y: sciad.simulate(_SPRING, y, dt=0.01, n_steps=10))(y0s)
    assert bool(jnp.all(fine.result == sciad.RESULTS.successful))


def test_under_jit_equinox_reports_it_and_check_result_gives_the_short_form():
    """Inside `jax.jit` the code is known only at run time: equinox raises its
    `EquinoxRuntimeError` (or, under a plain `jax.jit`, JAX's `JaxRuntimeError`) with the
    message after its stack report; the message names the call and the workaround. A
    run with `throw=False` under the transform, checked outside with
    `sciad.check_result`, gives the short form again; batched, it says how many runs
    failed."""
    run = jax.jit(
        lambda y, throw: sciad.simulate(_SPRING, y, **_BLOWUP, throw=throw), static_argnums=1
    )
    with pytest.raises((eqx.EquinoxRuntimeError, jax.errors.JaxRuntimeError)) as info:
        jax.block_until_ready(run(_Y0, True))
    text = str(info.value)
    assert "sciad.simulate: the state became non-finite (NaN or inf).\n" in text
    assert "run with throw=False and call sciad.check_result on the Trajectory" in text
    traj = run(_Y0, False)
    with pytest.raises(
        sciad.RunError,
        match=r"^sciad.simulate: the state became non-finite .* at step \d+ of 200\.\n",
    ):
        sciad.check_result(traj)
    y0s = jnp.array([[1.0, 0.0], [0.0, 0.0], [2.0, 0.0]])  # the middle one stays at rest
    batch = jax.vmap(lambda y: sciad.simulate(_SPRING, y, **_BLOWUP, throw=False))(y0s)
    with pytest.raises(
        sciad.RunError,
        match=r"non-finite \(NaN or inf\) in 2 of 3 runs of the batch \(the first: run 0\)\.",
    ):
        sciad.check_result(batch)
    fine = sciad.simulate(_SPRING, _Y0, dt=0.01, n_steps=10, throw=False)
    assert sciad.check_result(fine) is True

    def inside(y):
        traj = sciad.simulate(_SPRING, y, **_BLOWUP, throw=False)
        assert sciad.check_result(traj) is False  # traced: Python cannot look at it
        return traj.y1

    jax.jit(inside)(_Y0)


def test_every_code_has_a_traced_message():
    """The traced check names each code by its place in `_CODES`: every code of
    `RESULTS` is there once."""
    from sciad._core._results import _CODES

    assert len(set(_CODES)) == len(_CODES) == len(sciad.RESULTS)
    assert all(isinstance(getattr(sciad.RESULTS, code), sciad.RESULTS) for code in _CODES)


def test_check_result_refuses_what_is_not_a_trajectory():
    with pytest.raises(TypeError, match="check_result takes what a sciad run returns .*got Array"):
        sciad.check_result(_Y0)
