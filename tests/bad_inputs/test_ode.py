"""Bad input to `sciad.ode` (models, `solve`) and the error each must raise."""

import diffrax
import jax.numpy as jnp
import pytest

import sciad

from . import case_names, run_case
from ._common import KEPLER, OK, PEND, sim, Y0  # noqa: F401

# Every built-in model with each parameter value that is wrong on its face. The value is
# source text, evaluated in the runner, so that the case name shows it.
MODEL_PARAMETERS = [
    ("Pendulum", "length", "-1.0"),
    ("Pendulum", "length", "0.0"),
    ("Pendulum", "gravity", "-9.81"),
    ("Pendulum", "gravity", "0.0"),
    ("Pendulum", "damping", "-0.1"),
    ("Pendulum", "length", "float('inf')"),
    ("Pendulum", "length", "True"),
    ("Pendulum", "length", "1j"),
    ("HarmonicOscillator", "mass", "0.0"),
    ("HarmonicOscillator", "mass", "-1.0"),
    ("HarmonicOscillator", "stiffness", "-4.0"),
    ("HarmonicOscillator", "damping", "-0.1"),
    ("HarmonicOscillator", "drive_amplitude", "float('nan')"),
    ("HarmonicOscillator", "drive_frequency", "float('inf')"),
    ("DoublePendulum", "mass1", "0.0"),
    ("DoublePendulum", "mass2", "0.0"),
    ("DoublePendulum", "length1", "0.0"),
    ("DoublePendulum", "length2", "0.0"),
    ("DoublePendulum", "gravity", "0.0"),
    ("DoublePendulum", "length2", "-1.0"),
    ("NBody", "masses", "jnp.array([1.0, -1.0])"),
    ("NBody", "masses", "jnp.array([1.0, 0.0])"),
    ("NBody", "G", "-1.0"),
    ("NBody", "G", "0.0"),
    ("NBody", "softening", "-0.01"),
    ("Kepler", "mu", "-1.0"),
    ("Kepler", "mu", "0.0"),
    ("ExponentialDecay", "rate", "float('nan')"),
    ("ExponentialDecay", "rate", "1j"),
    ("LotkaVolterra", "alpha", "-1.0"),
    ("LotkaVolterra", "beta", "-1.0"),
    ("LotkaVolterra", "gamma", "-1.0"),
    ("LotkaVolterra", "delta", "-1.0"),
    ("Lorenz", "sigma", "-10.0"),
    ("Lorenz", "sigma", "0.0"),
    ("Lorenz", "beta", "-1.0"),
    ("Lorenz", "rho", "float('nan')"),
    ("VanDerPol", "mu", "-1.0"),
    ("FitzHughNagumo", "tau", "0.0"),
    ("FitzHughNagumo", "tau", "-12.5"),
    ("FitzHughNagumo", "b", "-0.8"),
    ("FitzHughNagumo", "a", "float('inf')"),
    ("FitzHughNagumo", "current", "float('nan')"),
    ("SIR", "beta", "-0.3"),
    ("SIR", "gamma", "-0.1"),
    ("Robertson", "k1", "-1.0"),
    ("Robertson", "k2", "-1.0"),
    ("Robertson", "k3", "-1.0"),
]
_EXTRA = {"NBody": "masses=jnp.ones(2), "}
_NEEDS = {
    "must be finite and > 0": {
        ("Pendulum", "length"),
        ("Pendulum", "gravity"),
        ("HarmonicOscillator", "mass"),
        ("DoublePendulum", "mass1"),
        ("DoublePendulum", "mass2"),
        ("DoublePendulum", "length1"),
        ("DoublePendulum", "length2"),
        ("DoublePendulum", "gravity"),
        ("NBody", "masses"),
        ("NBody", "G"),
        ("Kepler", "mu"),
        ("Lorenz", "sigma"),
        ("Lorenz", "beta"),
        ("FitzHughNagumo", "tau"),
    },
    "contains NaN or inf": {
        ("HarmonicOscillator", "drive_amplitude"),
        ("HarmonicOscillator", "drive_frequency"),
        ("ExponentialDecay", "rate"),
        ("Lorenz", "rho"),
        ("FitzHughNagumo", "a"),
        ("FitzHughNagumo", "current"),
    },
}


def _model_case(cls, param, value):
    if value in ("True", "1j"):
        exc, need = TypeError, "must be real"
    else:
        exc = ValueError
        need = next((k for k, v in _NEEDS.items() if (cls, param) in v), "must be finite and >= 0")
    extra = "" if param == "masses" else _EXTRA.get(cls, "")
    call = eval(f"lambda: sciad.ode.{cls}({extra}{param}={value})")  # noqa: S307
    return (f"{cls} {param} {value}", call, exc, rf"{cls}\.{param} {need}")


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
    (
        "NBody masses empty",
        lambda: sciad.ode.NBody(masses=jnp.zeros(0)),
        ValueError,
        r"NBody\.masses must have shape \(n,\) with n >= 1",
    ),
    (
        "Hamiltonian not callable",
        lambda: sciad.ode.HamiltonianSystem(3.0),
        TypeError,
        r"HamiltonianSystem\.hamiltonian must be a function H\(q, p\)",
    ),
    (
        "separable potential not callable",
        lambda: sciad.ode.SeparableHamiltonian(lambda p: jnp.sum(p**2), None),
        TypeError,
        r"SeparableHamiltonian\.potential must be a function V\(q\)",
    ),
    (
        "separable kinetic not callable",
        lambda: sciad.ode.SeparableHamiltonian(jnp.ones(2), lambda q: jnp.sum(q**2)),
        TypeError,
        r"SeparableHamiltonian\.kinetic must be a function T\(p\)",
    ),
    (
        "Lagrangian not callable",
        lambda: sciad.ode.LagrangianSystem("L"),
        TypeError,
        r"LagrangianSystem\.lagrangian must be a function L\(q, qdot\)",
    ),
    (
        "parameter is text",
        lambda: sciad.ode.Pendulum(length="long"),
        TypeError,
        "a model parameter must be a real number or array",
    ),
    (
        "Kepler eccentricity 1",
        lambda: KEPLER.initial_state(1.0),
        ValueError,
        r"Kepler\.initial_state eccentricity must lie in \[0\.0, 1\.0\)",
    ),
    (
        "Kepler eccentricity 1.5",
        lambda: KEPLER.initial_state(1.5),
        ValueError,
        r"eccentricity must lie in \[0\.0, 1\.0\)",
    ),
    (
        "Kepler eccentricity negative",
        lambda: KEPLER.initial_state(-0.1),
        ValueError,
        r"eccentricity must lie in \[0\.0, 1\.0\)",
    ),
    (
        "Kepler eccentricity NaN",
        lambda: KEPLER.initial_state(float("nan")),
        ValueError,
        "eccentricity must be finite",
    ),
    (
        "Kepler eccentricity vector",
        lambda: KEPLER.initial_state(jnp.array([0.1, 0.2])),
        ValueError,
        "eccentricity must be a real scalar",
    ),
    (
        "Kepler semi-major axis negative",
        lambda: KEPLER.initial_state(0.5, semi_major_axis=-1.0),
        ValueError,
        r"Kepler\.initial_state semi_major_axis must be finite and > 0",
    ),
    (
        "Kepler semi-major axis zero",
        lambda: KEPLER.initial_state(0.5, semi_major_axis=0.0),
        ValueError,
        r"semi_major_axis must be finite and > 0",
    ),
    (
        "Kepler period semi-major axis",
        lambda: KEPLER.period(-1.0),
        ValueError,
        r"Kepler\.period semi_major_axis must be finite and > 0",
    ),
    (
        "solve backwards without ts",
        lambda: sciad.ode.solve(PEND, Y0, t0=1.0, t1=0.0, saveat=diffrax.SaveAt(t1=True)),
        ValueError,
        "t1 must be >= t0",
    ),
    (
        "solve t0 after ts",
        lambda: sciad.ode.solve(PEND, Y0, jnp.array([0.5]), t0=1.0),
        ValueError,
        "t1 must be >= t0",
    ),
    (
        "solve ts decreasing",
        lambda: sciad.ode.solve(PEND, Y0, jnp.array([1.0, 0.0])),
        ValueError,
        "t1 must be >= t0",
    ),
    (
        "solve ts with saveat",
        lambda: sciad.ode.solve(PEND, Y0, jnp.array([0.0, 1.0]), saveat=diffrax.SaveAt(t1=True)),
        ValueError,
        "pass ts or saveat, not both",
    ),
    (
        "solve ts complex",
        lambda: sciad.ode.solve(PEND, Y0, jnp.array([0.0, 1.0j])),
        TypeError,
        "ts must be real",
    ),
    (
        "solve ts NaN",
        lambda: sciad.ode.solve(PEND, Y0, jnp.array([0.0, float("nan"), 2.0]), t1=2.0),
        ValueError,
        "ts contains NaN or inf",
    ),
    (
        "solve t1 NaN",
        lambda: sciad.ode.solve(PEND, Y0, t0=0.0, t1=float("nan"), saveat=diffrax.SaveAt(t1=True)),
        ValueError,
        "t1 must be finite",
    ),
    (
        "solve dt0 negative",
        lambda: sciad.ode.solve(PEND, Y0, jnp.array([0.0, 1.0]), dt0=-0.1),
        ValueError,
        "dt0 must be > 0",
    ),
    (
        "solve dt0 zero",
        lambda: sciad.ode.solve(PEND, Y0, jnp.array([0.0, 1.0]), dt0=0.0),
        ValueError,
        "dt0 must be > 0",
    ),
    (
        "solve rtol negative",
        lambda: sciad.ode.solve(PEND, Y0, jnp.array([0.0, 1.0]), rtol=-1e-6),
        ValueError,
        "rtol must be finite and >= 0",
    ),
    (
        "solve atol NaN",
        lambda: sciad.ode.solve(PEND, Y0, jnp.array([0.0, 1.0]), atol=float("nan")),
        ValueError,
        "atol must be finite and >= 0",
    ),
    (
        "solve tolerances both zero",
        lambda: sciad.ode.solve(PEND, Y0, jnp.array([0.0, 1.0]), rtol=0.0, atol=0.0),
        ValueError,
        "rtol and atol cannot both be 0",
    ),
    (
        "solve rtol with controller",
        lambda: sciad.ode.solve(
            PEND,
            Y0,
            jnp.array([0.0, 1.0]),
            rtol=1e-10,
            stepsize_controller=diffrax.PIDController(rtol=1e-6, atol=1e-8),
        ),
        ValueError,
        "give the tolerances to it instead",
    ),
    (
        "solve controller type",
        lambda: sciad.ode.solve(PEND, Y0, jnp.array([0.0, 1.0]), stepsize_controller=1e-6),
        TypeError,
        "stepsize_controller must be a diffrax.AbstractStepSizeController",
    ),
    (
        "solve event type",
        lambda: sciad.ode.solve(PEND, Y0, jnp.array([0.0, 1.0]), event=lambda t, y, a: y[0]),
        TypeError,
        "event must be a diffrax.Event",
    ),
    (
        "solve stiff string",
        lambda: sciad.ode.solve(PEND, Y0, jnp.array([0.0, 1.0]), stiff="yes"),
        TypeError,
        "stiff must be True, False or None",
    ),
    (
        "solve max_steps zero",
        lambda: sciad.ode.solve(PEND, Y0, jnp.array([0.0, 1.0]), max_steps=0),
        ValueError,
        "max_steps must be an int >= 1",
    ),
    (
        "solve max_steps float",
        lambda: sciad.ode.solve(PEND, Y0, jnp.array([0.0, 1.0]), max_steps=100.0),
        TypeError,
        "max_steps must be an int",
    ),
    (
        "solve progress a sciad meter",
        lambda: sciad.ode.solve(
            PEND, Y0, jnp.array([0.0, 1.0]), progress=sciad.TextProgressMeter()
        ),
        TypeError,
        "progress must be True, False or a diffrax progress meter",
    ),
    (
        "solve adjoint a string",
        lambda: sciad.ode.solve(PEND, Y0, jnp.array([0.0, 1.0]), adjoint="forward"),
        TypeError,
        "adjoint must be a diffrax.AbstractAdjoint or sciad.ode.ForwardSensitivity",
    ),
    (
        "ForwardSensitivity wrt a number",
        lambda: sciad.ode.ForwardSensitivity(wrt=1.0),
        TypeError,
        r"ForwardSensitivity\.wrt must be a bool, a callable leaf -> bool, or a PyTree prefix",
    ),
    (
        "ForwardSensitivity wrt an array",
        lambda: sciad.ode.ForwardSensitivity(wrt=jnp.array(True)),
        TypeError,
        r"ForwardSensitivity\.wrt must be a bool",
    ),
    (
        "ForwardSensitivity adjoint backsolve",
        lambda: sciad.ode.ForwardSensitivity(adjoint=diffrax.BacksolveAdjoint()),
        TypeError,
        r"ForwardSensitivity\.adjoint must be diffrax\.ForwardMode\(\) or diffrax\.DirectAdjoint\(\)",
    ),
    (
        "solve ForwardSensitivity wrt structure",
        lambda: sciad.ode.solve(
            PEND,
            Y0,
            jnp.array([0.0, 1.0]),
            adjoint=sciad.ode.ForwardSensitivity(wrt=(True, False, True)),
        ),
        ValueError,
        r"ForwardSensitivity\.wrt must be .* prefix of \(model, y0\); its structure does not match",
    ),
    (
        "solve ForwardSensitivity wrt nothing",
        lambda: sciad.ode.solve(
            PEND, Y0, jnp.array([0.0, 1.0]), adjoint=sciad.ode.ForwardSensitivity(wrt=False)
        ),
        ValueError,
        r"ForwardSensitivity\.wrt selects no floating-point array of \(model, y0\)",
    ),
    (
        "solve ForwardSensitivity with an event",
        lambda: sciad.ode.solve(
            PEND,
            Y0,
            t0=0.0,
            t1=1.0,
            saveat=diffrax.SaveAt(t1=True),
            event=diffrax.Event(lambda t, y, args, **kw: y[0]),
            adjoint=sciad.ode.ForwardSensitivity(),
        ),
        ValueError,
        "adjoint=ForwardSensitivity\\(\\) does not support events",
    ),
] + [_model_case(*row) for row in MODEL_PARAMETERS]


@pytest.mark.parametrize("name", case_names(CASES))
def test_bad_input(name, bad_input_runner):
    run_case(bad_input_runner, __name__, name)
