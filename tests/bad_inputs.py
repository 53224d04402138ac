"""Bad inputs and the precise error each must raise, as users see them.

Run as `python -m tests.bad_inputs` (no jaxtyping hook, like a user's session); it prints
"N passed, M failed" and exits non-zero on any failure. `tests/test_errors.py` runs it.
"""

import re
import sys

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import optimistix as optx

import sciad

PEND = sciad.ode.Pendulum(length=1.0, gravity=9.81, damping=0.1)
KEPLER = sciad.ode.Kepler(mu=1.0)
Y0 = jnp.array([1.0, 0.0])
OK = dict(dt=0.01, n_steps=10)


def sim(model=PEND, y0=Y0, **kw):
    args = {**OK, **kw}
    return sciad.simulate(model, y0, **args)


SIMULATE_CASES = [
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

SOLVE_CASES = [
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


class Frozen(eqx.Module):
    n: int
    label: str


FIT_CASES = [
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

import sciad.md as md  # noqa: E402

MD_CASES = [
    (
        "truncation shift",
        lambda: md.Truncated(md.LennardJones(1.0, 1.0), cutoff=2.5, shift="smooth"),
        ValueError,
        "shift must be one of",
    ),
    (
        "truncation cutoff",
        lambda: md.Truncated(md.LennardJones(1.0, 1.0), cutoff=-1.0),
        ValueError,
        "cutoff must be positive",
    ),
    (
        "box lengths shape",
        lambda: md.PeriodicBox(jnp.ones((2, 2))),
        ValueError,
        "lengths must have shape",
    ),
    (
        "triclinic cell shape",
        lambda: md.TriclinicBox(jnp.ones((2, 3))),
        ValueError,
        r"cell must have shape \(d, d\)",
    ),
    (
        "md masses shape",
        lambda: md.MDSystem(md.FreeSpace(), md.LennardJones(1.0, 1.0), masses=jnp.ones((2, 2))),
        ValueError,
        r"masses must have shape \(n,\)",
    ),
    (
        "md species shape",
        lambda: md.MDSystem(
            md.FreeSpace(), md.LennardJones(1.0, 1.0), masses=jnp.ones(3), species=jnp.zeros(2, int)
        ),
        ValueError,
        "species must have shape",
    ),
    (
        "md positions shape",
        lambda: sciad.simulate(
            md.MDSystem(md.FreeSpace(), md.LennardJones(1.0, 1.0), masses=jnp.ones(3)),
            (jnp.zeros((2, 3)), jnp.zeros((2, 3))),
            dt=0.01,
            n_steps=1,
        ),
        ValueError,
        r"y0\[0\] \(q\) must have shape \(n, d\) with n = len\(masses\) = 3",
    ),
]

ALL = SIMULATE_CASES + SOLVE_CASES + FIT_CASES + MD_CASES


def main() -> int:
    """Run every case; print one line per failure and a closing count."""
    jax.config.update("jax_enable_x64", True)
    failed = 0
    for name, call, exc, match in ALL:
        try:
            call()
        except exc as e:
            if not re.search(match, str(e)):
                failed += 1
                print(f"FAIL {name}: message {str(e)[:300]!r} does not match {match!r}")
            continue
        except Exception as e:  # noqa: BLE001 - report the wrong type
            failed += 1
            print(f"FAIL {name}: raised {type(e).__name__}: {str(e)[:300]}")
            continue
        failed += 1
        print(f"FAIL {name}: no error raised")
    print(f"{len(ALL) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
