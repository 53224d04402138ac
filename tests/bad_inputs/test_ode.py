"""Bad input to `sciad.ode` (models, `solve`) and the error each must raise."""

import jax.numpy as jnp
import pytest

import sciad

from . import case_names, run_case
from ._common import KEPLER, OK, PEND, sim, Y0  # noqa: F401

CASES = [
    (
        "ts unsorted",
        lambda: sciad.ode.solve(PEND, Y0, jnp.array([0.0, 2.0, 1.0])),
        ValueError,
        "ts must be strictly increasing",
    ),
    (
        "ts outside",
        lambda: sciad.ode.solve(PEND, Y0, jnp.array([0.0, 2.0]), t1=1.0),
        ValueError,
        r"ts must lie in \[t0, t1\]",
    ),
    (
        "ts 2-D",
        lambda: sciad.ode.solve(PEND, Y0, jnp.zeros((2, 2))),
        ValueError,
        "ts must be a non-empty 1-D array",
    ),
    ("no ts, no t1", lambda: sciad.ode.solve(PEND, Y0), ValueError, "pass ts, or t0 and t1"),
    (
        "solver type",
        lambda: sciad.ode.solve(PEND, Y0, jnp.array([0.0, 1.0]), solver=sciad.RK4()),
        TypeError,
        "solver must be a diffrax.AbstractSolver",
    ),
    (
        "sciad adjoint to solve",
        lambda: sciad.ode.solve(PEND, Y0, jnp.array([0.0, 1.0]), adjoint=sciad.DirectAdjoint()),
        TypeError,
        "adjoint must be a diffrax.AbstractAdjoint",
    ),
    (
        "sciad saveat to solve",
        lambda: sciad.ode.solve(PEND, Y0, jnp.array([0.0, 1.0]), saveat=sciad.SaveAt(t1=True)),
        TypeError,
        "saveat must be a diffrax.SaveAt",
    ),
    (
        "solve y0 shape",
        lambda: sciad.ode.solve(sciad.ode.Lorenz(), Y0, jnp.array([0.0, 1.0])),
        ValueError,
        r"y0 must have shape \(3,\)",
    ),
]


@pytest.mark.parametrize("name", case_names(CASES))
def test_bad_input(name, bad_input_runner):
    run_case(bad_input_runner, __name__, name)
