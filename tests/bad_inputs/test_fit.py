"""Bad input to `sciad.fit` and the error each must raise."""

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import optimistix as optx
import pytest

import sciad
from sciad.fit import NoiseTolerantArmijo, NoiseTolerantBFGS

from . import case_names, run_case
from ._common import KEPLER, OK, PEND, sim, Y0  # noqa: F401


class Frozen(eqx.Module):
    n: int
    label: str


class Line(eqx.Module):
    slope: jax.Array
    intercept: jax.Array


LINE = Line(jnp.asarray(1.0), jnp.asarray(0.0))
TS10 = jnp.linspace(0.0, 1.0, 10)
OBS10 = 2.0 * TS10 + 0.5
OBS10X2 = jnp.stack([OBS10, OBS10], 1)


def predict(m):
    return m.slope * TS10 + m.intercept


HYPER = {"w": jnp.asarray(0.0), "n": 3}


def quadratic(h, d):
    return (h["w"] - 1.0) ** 2


CASES = [
    (
        "no float parameters",
        lambda: sciad.fit(Frozen(3, "x"), lambda m, d: jnp.zeros(2)),
        ValueError,
        "no free float parameters",
    ),
    (
        "Python float parameter only",
        lambda: sciad.fit(Frozen(3, "x"), lambda m, d: jnp.zeros(2), free=lambda m: m.n),
        ValueError,
        "no free float parameters",
    ),
    (
        "positive must start > 0",
        lambda: sciad.fit(
            sciad.ode.Pendulum(damping=0.0), lambda m, d: jnp.zeros(2), positive=lambda m: m.damping
        ),
        ValueError,
        r"model\.damping is marked positive, so it must start > 0",
    ),
    (
        "positive but frozen",
        lambda: sciad.fit(
            PEND, lambda m, d: jnp.zeros(2), free=lambda m: m.length, positive=lambda m: m.damping
        ),
        ValueError,
        r"model\.damping is marked positive but is not free",
    ),
    (
        "scalar loss for least squares",
        lambda: sciad.fit(PEND, lambda m, d: jnp.sum(m.length**2)),
        ValueError,
        "least-squares solvers need the residuals",
    ),
    (
        "solver type",
        lambda: sciad.fit(PEND, lambda m, d: jnp.zeros(2), solver=diffrax.Tsit5()),
        TypeError,
        "solver must be an optimistix",
    ),
    (
        "free selector",
        lambda: sciad.fit(PEND, lambda m, d: jnp.zeros(2), free=lambda m: m.nope),
        ValueError,
        "free must select leaves of the model",
    ),
    ("loss not callable", lambda: sciad.fit(PEND, 3.0), TypeError, "loss must be callable"),
    (
        "model not a module",
        lambda: sciad.fit({"a": 1.0}, lambda m, d: m["a"]),
        TypeError,
        "model must be an Equinox module",
    ),
    (
        "NaN parameter in fit",
        lambda: sciad.fit(
            Line(jnp.asarray(float("nan")), jnp.asarray(0.0)), lambda m, d: jnp.zeros(2)
        ),
        ValueError,
        r"model\.slope contains NaN",
    ),
    (
        "NaN pendulum length in fit",
        lambda: sciad.fit(sciad.ode.Pendulum(length=float("nan")), lambda m, d: jnp.zeros(2)),
        ValueError,
        r"Pendulum\.length must be finite and > 0; got nan",
    ),
    (
        "max_steps fit",
        lambda: sciad.fit(PEND, lambda m, d: jnp.zeros(2), max_steps=0),
        ValueError,
        "max_steps must be an int >= 1",
    ),
    (
        "progress without hook",
        lambda: sciad.fit(
            PEND,
            lambda m, d: jnp.sum(m.length**2),
            solver=optx.NelderMead(1e-6, 1e-6),
            progress=True,
        ),
        ValueError,
        "has no `verbose` hook",
    ),
    (
        "residuals (10, 1) against data (10,)",
        lambda: sciad.fit(LINE, lambda m, d: predict(m)[:, None] - d, OBS10),
        ValueError,
        r"has shape \(10, 10\), which is data \(shape \(10,\)\) broadcast",
    ),
    (
        "residuals (10,) against data (10, 1)",
        lambda: sciad.fit(LINE, lambda m, d: predict(m) - d, OBS10[:, None]),
        ValueError,
        r"which is data \(shape \(10, 1\)\) broadcast into an outer difference",
    ),
    (
        "residuals broadcast in a (ts, obs) tuple",
        lambda: sciad.fit(LINE, lambda m, d: predict(m)[:, None] - d[1], (TS10, OBS10)),
        ValueError,
        r"which is data\[1\] \(shape \(10,\)\)",
    ),
    (
        "residuals broadcast in a dict",
        lambda: sciad.fit(LINE, lambda m, d: predict(m)[:, None] - d["y"], {"y": OBS10}),
        ValueError,
        r"which is data\['y'\] \(shape \(10,\)\)",
    ),
    (
        "residual leaf broadcast in a tuple of residuals",
        lambda: sciad.fit(LINE, lambda m, d: (predict(m)[:, None] - d, m.slope[None]), OBS10),
        ValueError,
        r"loss\(model, data\)\[0\] has shape \(10, 10\)",
    ),
    (
        "residuals (10, 1, 2) against data (10, 2)",
        lambda: sciad.fit(
            LINE, lambda m, d: jnp.stack([predict(m)] * 2, 1)[:, None, :] - d, OBS10X2
        ),
        ValueError,
        r"has shape \(10, 10, 2\)",
    ),
    (
        "integer residuals",
        lambda: sciad.fit(LINE, lambda m, d: jnp.arange(3)),
        TypeError,
        "residuals must be real floating point",
    ),
    (
        "complex residuals",
        lambda: sciad.fit(LINE, lambda m, d: predict(m) - d, OBS10 + 1j),
        TypeError,
        "residuals must be real floating point",
    ),
    (
        "complex free parameter",
        lambda: sciad.fit(Line(jnp.asarray(1.0 + 0j), jnp.asarray(0.0)), lambda m, d: jnp.zeros(2)),
        TypeError,
        r"model\.slope is complex",
    ),
    (
        "empty residuals",
        lambda: sciad.fit(LINE, lambda m, d: jnp.zeros(0)),
        ValueError,
        "is empty",
    ),
    (
        "no residuals",
        lambda: sciad.fit(LINE, lambda m, d: ()),
        ValueError,
        "loss returned no residuals",
    ),
    (
        "max_steps float fit",
        lambda: sciad.fit(LINE, lambda m, d: predict(m) - d, OBS10, max_steps=10.0),
        TypeError,
        "max_steps must be an int",
    ),
    (
        "throw not bool",
        lambda: sciad.fit(LINE, lambda m, d: predict(m) - d, OBS10, throw="no"),
        TypeError,
        "throw must be True or False",
    ),
    (
        "progress not bool",
        lambda: sciad.fit(LINE, lambda m, d: predict(m) - d, OBS10, progress=1),
        TypeError,
        "progress must be True or False",
    ),
    (
        "check_rank not bool",
        lambda: sciad.fit(LINE, lambda m, d: predict(m) - d, OBS10, check_rank=None),
        TypeError,
        "check_rank must be True or False",
    ),
    (
        "adjoint from diffrax",
        lambda: sciad.fit(
            LINE, lambda m, d: predict(m) - d, OBS10, adjoint=diffrax.RecursiveCheckpointAdjoint()
        ),
        TypeError,
        "adjoint must be an optimistix adjoint",
    ),
    (
        "negative length in a fitted model",
        lambda: sciad.fit(sciad.ode.Pendulum(length=-1.0), lambda m, d: jnp.zeros(2)),
        ValueError,
        r"Pendulum\.length must be finite and > 0",
    ),
    # sciad.meta_fit: the outer loop of meta-optimisation.
    (
        "meta objective not callable",
        lambda: sciad.meta_fit(HYPER, "loss"),
        TypeError,
        r"objective must be callable as objective\(hyper, data\)",
    ),
    (
        "meta no float hyperparameters",
        lambda: sciad.meta_fit({"n": 3, "w": 1.0}, lambda h, d: jnp.asarray(0.0)),
        ValueError,
        "hyper has no free float parameters to optimise",
    ),
    (
        "meta hyperparameter not finite",
        lambda: sciad.meta_fit({"w": jnp.asarray(jnp.nan)}, lambda h, d: h["w"] ** 2),
        ValueError,
        r"hyper\['w'\]",
    ),
    (
        "meta positive must start > 0",
        lambda: sciad.meta_fit(HYPER, quadratic, positive=lambda h: h["w"]),
        ValueError,
        r"hyper\['w'\] is marked positive, so it must start > 0",
    ),
    (
        "meta free selector",
        lambda: sciad.meta_fit(HYPER, quadratic, free=lambda h: h["nope"]),
        ValueError,
        "free must select leaves of the hyper",
    ),
    (
        "meta least-squares solver",
        lambda: sciad.meta_fit(HYPER, quadratic, solver=optx.LevenbergMarquardt(1e-8, 1e-8)),
        TypeError,
        r"solver must be an optimistix minimiser.*got LevenbergMarquardt, a least-squares solver",
    ),
    (
        "meta objective returns a vector",
        lambda: sciad.meta_fit(HYPER, lambda h, d: jnp.stack([h["w"], h["w"]])),
        ValueError,
        r"must return a real floating-point scalar; got shape \(2,\)",
    ),
    (
        "meta objective returns a pair without has_aux",
        lambda: sciad.meta_fit(HYPER, lambda h, d: (quadratic(h, d), 1.0)),
        ValueError,
        "got a tuple; pass has_aux=True",
    ),
    (
        "meta has_aux without a pair",
        lambda: sciad.meta_fit(HYPER, quadratic, has_aux=True),
        ValueError,
        r"^objective\(hyper, data\) must return a pair \(scalar, aux\) with has_aux=True",
    ),
    (
        "meta objective fails",
        lambda: sciad.meta_fit(HYPER, lambda h, d: h["w"] @ d, jnp.zeros(3)),
        ValueError,
        r"objective\(hyper, data\) fails before any optimisation",
    ),
    (
        "meta max_steps zero",
        lambda: sciad.meta_fit(HYPER, quadratic, max_steps=0),
        ValueError,
        "max_steps must be",
    ),
    (
        "meta has_aux not bool",
        lambda: sciad.meta_fit(HYPER, quadratic, has_aux=1),
        TypeError,
        "has_aux must be True or False",
    ),
    (
        "noise-tolerant BFGS negative noise",
        lambda: NoiseTolerantBFGS(rtol=1e-6, atol=1e-6, noise=-1e-8),
        ValueError,
        r"NoiseTolerantArmijo\.noise must be >= 0; got -1e-08",
    ),
    (
        "noise-tolerant Armijo slope",
        lambda: NoiseTolerantArmijo(slope=1.5),
        ValueError,
        r"NoiseTolerantArmijo\.slope must be in \(0\.0, 1\.0\); got 1\.5",
    ),
    (
        "noise-tolerant Armijo noise array",
        lambda: NoiseTolerantArmijo(noise=jnp.asarray(1e-8)),
        TypeError,
        "NoiseTolerantArmijo.noise must be a number",
    ),
]


@pytest.mark.parametrize("name", case_names(CASES))
def test_bad_input(name, bad_input_runner):
    run_case(bad_input_runner, __name__, name)
