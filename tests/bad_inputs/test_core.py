"""Bad input to the core (`simulate`, `SaveAt`, adjoints, checkpoints, `windowed_average`) and the error each must raise."""

import diffrax
import jax
import jax.numpy as jnp
import pytest

import sciad

from . import case_names, run_case
from ._common import KEPLER, OK, PEND, sim, Y0  # noqa: F401

CASES = [
    ("y0 shape", lambda: sim(y0=jnp.zeros(3)), ValueError, r"y0 must have shape \(2,\)"),
    ("y0 structure", lambda: sim(KEPLER, jnp.zeros(4)), ValueError, r"y0 .* tuple \(q, p\)"),
    ("y0 q/p mismatch", lambda: sim(KEPLER, (jnp.zeros(2), jnp.zeros(3))), ValueError, "q and p"),
    ("y0 integer", lambda: sim(y0=jnp.array([1, 0])), TypeError, "y0 has dtype int"),
    ("y0 NaN", lambda: sim(y0=jnp.array([jnp.nan, 0.0])), ValueError, "y0 contains NaN"),
    ("y0 empty", lambda: sim(y0=()), ValueError, "y0 is empty"),
    ("dt negative", lambda: sim(dt=-0.1), ValueError, "dt must be positive"),
    ("dt zero", lambda: sim(dt=0.0), ValueError, "dt must be positive"),
    ("dt NaN", lambda: sim(dt=float("nan")), ValueError, "dt must be finite"),
    ("dt vector", lambda: sim(dt=jnp.ones(2)), ValueError, "dt must be a real scalar"),
    ("t1 < t0", lambda: sim(n_steps=None, t0=1.0, t1=0.5), ValueError, "t1 must be >= t0"),
    ("t1 and n_steps", lambda: sim(t1=1.0), ValueError, "exactly one of t1 and n_steps"),
    (
        "neither t1 nor n_steps",
        lambda: sim(n_steps=None),
        ValueError,
        "exactly one of t1 and n_steps",
    ),
    ("n_steps negative", lambda: sim(n_steps=-1), ValueError, "n_steps must be >= 0"),
    ("n_steps float", lambda: sim(n_steps=10.0), TypeError, "n_steps must be a Python int"),
    ("t1 off grid", lambda: sim(n_steps=None, t1=0.015), ValueError, "whole number of steps"),
    (
        "NaN parameter",
        lambda: sim(sciad.ode.Pendulum(length=float("nan"))),
        ValueError,
        r"model\.length contains NaN",
    ),
    (
        "saveat outside",
        lambda: sim(saveat=sciad.SaveAt(ts=jnp.array([0.0, 0.5]))),
        ValueError,
        r"SaveAt.ts must lie in \[t0, t1\]",
    ),
    (
        "saveat off grid",
        lambda: sim(saveat=sciad.SaveAt(ts=jnp.array([0.0, 0.055]))),
        ValueError,
        "step grid",
    ),
    (
        "saveat unsorted",
        lambda: sim(saveat=sciad.SaveAt(ts=jnp.array([0.05, 0.01]))),
        ValueError,
        "strictly increasing",
    ),
    ("saveat steps", lambda: sciad.SaveAt(steps=0), ValueError, r"SaveAt\(steps=...\)"),
    ("saveat fn", lambda: sciad.SaveAt(fn=3), TypeError, r"SaveAt\(fn=...\) must be callable"),
    (
        "diffrax saveat",
        lambda: sim(saveat=diffrax.SaveAt(t1=True)),
        TypeError,
        "saveat must be a sciad.SaveAt",
    ),
    ("unknown integrator", lambda: sim(integrator="rk45"), TypeError, "unknown integrator 'rk45'"),
    (
        "diffrax solver as integrator",
        lambda: sim(integrator=diffrax.Tsit5()),
        TypeError,
        "unknown integrator",
    ),
    ("integrator class", lambda: sim(integrator=sciad.RK4), TypeError, r"pass RK4\(\)"),
    (
        "splitting on non-separable",
        lambda: sim(integrator=sciad.VelocityVerlet()),
        TypeError,
        "needs a separable model",
    ),
    (
        "model not a model",
        lambda: sciad.simulate(lambda t, y: -y, Y0, **OK),
        TypeError,
        "model must be a sciad.AbstractModel",
    ),
    (
        "model class",
        lambda: sciad.simulate(sciad.ode.Pendulum, Y0, **OK),
        TypeError,
        "model must be an instance",
    ),
    (
        "diffrax adjoint",
        lambda: sim(adjoint=diffrax.DirectAdjoint()),
        TypeError,
        "adjoint must be a sciad.AbstractAdjoint",
    ),
    ("max_steps zero", lambda: sim(max_steps=0), ValueError, "max_steps must be a positive int"),
    (
        "checkpoint levels",
        lambda: sciad.CheckpointAdjoint(levels=0),
        ValueError,
        r"CheckpointAdjoint\(levels=...\)",
    ),
    (
        "traced t1",
        lambda: jax.jit(lambda t1: sim(n_steps=None, t1=t1).y1)(1.0),
        ValueError,
        "t1 fixes the number of steps",
    ),
    (
        "nbody masses",
        lambda: sciad.ode.NBody(masses=jnp.ones((2, 2))),
        ValueError,
        r"masses must have shape \(n,\)",
    ),
    (
        "nbody q shape",
        lambda: sim(sciad.ode.NBody(masses=jnp.ones(3)), (jnp.zeros((2, 3)), jnp.zeros((2, 3)))),
        ValueError,
        r"y0\[0\] \(q\) must have shape \(n, d\)",
    ),
]


@pytest.mark.parametrize("name", case_names(CASES))
def test_bad_input(name, bad_input_runner):
    run_case(bad_input_runner, __name__, name)
