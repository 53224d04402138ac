"""Progress meters: `simulate(progress=...)` reports from inside the compiled run, under
`jit`, once for a `vmap` batch, silently through reverse mode's replay, without changing
the numbers; `ode.solve(progress=True)` passes diffrax's meter; bad arguments are refused."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sciad

MODEL = sciad.ode.Pendulum(length=1.0, gravity=9.81, damping=0.1)
Y0 = jnp.array([1.0, 0.0])
N = 10_000


def _lines(capsys):
    jax.effects_barrier()
    return [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("simulate:")]


class Recorder(sciad.AbstractProgressMeter):
    """Records every update on the host."""

    log: list = eqx.field(static=True)

    def update(self, step, n_steps):
        self.log.append((step, n_steps))


def test_text_meter_prints_every_tenth_and_the_end(capsys):
    sciad.simulate(MODEL, Y0, dt=1e-3, n_steps=N, progress=True)
    lines = _lines(capsys)
    assert [ln.split()[1] for ln in lines] == [f"{p}%" for p in range(10, 101, 10)]
    assert lines[-1] == "simulate: 100% (step 10,000 of 10,000)"


def test_under_jit_and_with_uneven_saves(capsys):
    meter = sciad.TextProgressMeter(every=0.25)
    run = jax.jit(
        lambda y: (
            sciad.simulate(
                MODEL, y, dt=1e-3, n_steps=N, saveat=sciad.SaveAt(steps=7), progress=meter
            ).y1
        )
    )
    for _ in range(2):  # a compiled run reused: the meter starts again
        run(Y0)
        lines = _lines(capsys)
        assert [ln.split()[1] for ln in lines] == ["25%", "50%", "75%", "100%"]


def test_one_meter_for_a_vmap_batch(capsys):
    meter = sciad.TextProgressMeter(every=0.5)
    jax.vmap(lambda y: sciad.simulate(MODEL, y, dt=1e-3, n_steps=N, progress=meter).y1)(
        jnp.stack([Y0, 0.5 * Y0, 0.1 * Y0])
    )
    assert [ln.split()[1] for ln in _lines(capsys)] == ["50%", "100%"]


def test_grad_is_unchanged_and_the_replay_is_silent(capsys):
    def loss(length, progress):
        m = eqx.tree_at(lambda m: m.length, MODEL, length)
        return sciad.simulate(m, Y0, dt=1e-3, n_steps=N, progress=progress).y1[0]

    quiet = jax.grad(loss)(1.0, False)
    loud = jax.grad(loss)(1.0, sciad.TextProgressMeter(every=0.5))
    assert float(loud) == float(quiet)
    assert [ln.split()[1] for ln in _lines(capsys)] == ["50%", "100%"]


def test_a_custom_meter_sees_monotone_steps_ending_at_n():
    log = []
    sciad.simulate(MODEL, Y0, dt=1e-3, n_steps=2500, progress=Recorder(log))
    jax.effects_barrier()
    steps = [s for s, _ in log]
    assert steps == sorted(steps) and steps[-1] == 2500 and {n for _, n in log} == {2500}


def test_ode_solve_passes_diffrax_meter(capsys):
    sol = sciad.ode.solve(MODEL, Y0, t0=0.0, t1=5.0, progress=True)
    jax.effects_barrier()
    out = capsys.readouterr()
    assert "100.00%" in out.out + out.err
    ref = sciad.ode.solve(MODEL, Y0, t0=0.0, t1=5.0)
    np.testing.assert_array_equal(np.asarray(sol.y1), np.asarray(ref.y1))


def test_a_meter_fraction_outside_0_1_is_refused():
    # (bad `progress` arguments of simulate and solve: tests/bad_inputs/test_core.py, ode.py)
    with pytest.raises(ValueError, match=r"TextProgressMeter.every must lie in \(0.0, 1.0\]"):
        sciad.TextProgressMeter(every=0.0)
