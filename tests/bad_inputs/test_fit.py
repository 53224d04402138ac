"""Bad input to `sciad.fit` and the error each must raise."""

import diffrax
import equinox as eqx
import jax.numpy as jnp
import optimistix as optx
import pytest

import sciad

from . import case_names, run_case
from ._common import KEPLER, OK, PEND, sim, Y0  # noqa: F401


class Frozen(eqx.Module):
    n: int
    label: str


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
        lambda: sciad.fit(sciad.ode.Pendulum(length=float("nan")), lambda m, d: jnp.zeros(2)),
        ValueError,
        r"model\.length contains NaN",
    ),
    (
        "max_steps fit",
        lambda: sciad.fit(PEND, lambda m, d: jnp.zeros(2), max_steps=0),
        ValueError,
        "max_steps must be a positive int",
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
]


@pytest.mark.parametrize("name", case_names(CASES))
def test_bad_input(name, bad_input_runner):
    run_case(bad_input_runner, __name__, name)
