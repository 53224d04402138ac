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

LJ3 = md.MDSystem(md.FreeSpace(), md.LennardJones(1.0, 1.0), masses=jnp.ones(3))
Q3 = jnp.array([[0.0, 0.0, 0.0], [1.1, 0.0, 0.0], [0.0, 1.1, 0.0]])

MINIMIZE_CASES = [
    (
        "minimize q0 shape",
        lambda: md.minimize(LJ3, jnp.zeros((2, 3))),
        ValueError,
        r"q0 must have shape \(n, d\) with n = len\(masses\) = 3; got \(2, 3\)",
    ),
    (
        "minimize q0 d vs box",
        lambda: md.minimize(eqx.tree_at(lambda s: s.space, LJ3, md.PeriodicBox(jnp.ones(2))), Q3),
        ValueError,
        "q0 has d = 3 but the space has d = 2",
    ),
    (
        "minimize q0 int",
        lambda: md.minimize(LJ3, jnp.zeros((3, 3), int)),
        TypeError,
        "q0 has dtype int",
    ),
    (
        "minimize q0 NaN",
        lambda: md.minimize(LJ3, Q3.at[0, 0].set(jnp.nan)),
        ValueError,
        "q0.* contains NaN",
    ),
    (
        "minimize not an MDSystem",
        lambda: md.minimize(PEND, Q3),
        TypeError,
        "system must be a sciad.md.MDSystem; got Pendulum",
    ),
    (
        "minimize least-squares solver",
        lambda: md.minimize(LJ3, Q3, solver=optx.LevenbergMarquardt(1e-8, 1e-8)),
        TypeError,
        "solver must be an optimistix minimiser",
    ),
    (
        "minimize solver class",
        lambda: md.minimize(LJ3, Q3, solver=md.FIRE),
        TypeError,
        r"solver must be an instance, got the class FIRE; call it, e.g. FIRE\(\)",
    ),
    (
        "minimize max_steps zero",
        lambda: md.minimize(LJ3, Q3, max_steps=0),
        ValueError,
        "max_steps must be a positive int",
    ),
    (
        "minimize max_steps float",
        lambda: md.minimize(LJ3, Q3, max_steps=10.0),
        ValueError,
        "max_steps must be a positive int",
    ),
    (
        "minimize adjoint type",
        lambda: md.minimize(LJ3, Q3, adjoint=sciad.DirectAdjoint()),
        TypeError,
        "adjoint must be an optimistix adjoint",
    ),
    (
        "minimize neighbors type",
        lambda: md.minimize(LJ3, Q3, neighbors=3),
        TypeError,
        "neighbors must be a sciad.md.NeighborListBuilder",
    ),
    (
        "minimize stale list",
        lambda: md.minimize(
            eqx.tree_at(
                lambda s: s.neighbors,
                LJ3,
                md.NeighborListBuilder.create(md.FreeSpace(), Q3, cutoff=2.0, skin=0.1).build(
                    md.FreeSpace(), Q3
                ),
                is_leaf=lambda x: x is None,
            ),
            Q3,
        ),
        ValueError,
        "system carries a fixed neighbour list",
    ),
    (
        "minimize list cutoff below range",
        lambda: md.minimize(
            md.MDSystem(
                md.FreeSpace(), md.Truncated(md.LennardJones(1.0, 1.0), 2.5), masses=jnp.ones(3)
            ),
            Q3,
            neighbors=md.NeighborListBuilder.create(md.FreeSpace(), Q3, cutoff=1.5, skin=0.1),
        ),
        ValueError,
        r"neighbors.cutoff = 1.5 is below the potential's range 2.5",
    ),
    ("FIRE f_dec", lambda: md.FIRE(f_dec=1.5), ValueError, r"FIRE f_dec must lie in \(0, 1\)"),
    (
        "FIRE dt order",
        lambda: md.FIRE(dt_start=1.0, dt_max=0.1),
        ValueError,
        "dt_min <= dt_start <= dt_max",
    ),
    ("FIRE atol", lambda: md.FIRE(atol=-1.0), ValueError, "FIRE atol must be a number >= 0"),
]

BOX4 = md.PeriodicBox(jnp.full(3, 4.0))
PAIR = jnp.array([[0, 1]])

FORCEFIELD_CASES = [
    (
        "bond index shape",
        lambda: md.HarmonicBond(jnp.array([0, 1]), k=1.0, r0=1.0),
        ValueError,
        r"bonds must have shape \(m, 2\)",
    ),
    (
        "angle index shape",
        lambda: md.HarmonicAngle(jnp.array([[0, 1]]), k=1.0, theta0=1.0),
        ValueError,
        r"angles must have shape \(m, 3\)",
    ),
    (
        "bond parameter shape",
        lambda: md.HarmonicBond(PAIR, k=jnp.ones(2), r0=1.0),
        ValueError,
        r"k must be a scalar or have shape \(1,\) like bonds",
    ),
    (
        "bond to itself",
        lambda: md.HarmonicBond(jnp.array([[1, 1]]), k=1.0, r0=1.0),
        ValueError,
        "each row of bonds must name 2 different particles",
    ),
    (
        "negative index",
        lambda: md.PeriodicDihedral(jnp.array([[0, 1, 2, -1]]), k=1.0, n=1, phase=0.0),
        ValueError,
        "dihedrals must be non-negative particle indices",
    ),
    (
        "bond index out of range",
        lambda: md.MDSystem(
            md.FreeSpace(), md.HarmonicBond(jnp.array([[0, 5]]), 1.0, 1.0), masses=jnp.ones(3)
        ),
        ValueError,
        "bonds names particle 5, but the system has 3 particles",
    ),
    (
        "dihedral in 2-D",
        lambda: md.MDSystem(
            md.PeriodicBox(jnp.ones(2) * 5),
            md.PeriodicDihedral(jnp.array([[0, 1, 2, 3]]), k=1.0, n=1, phase=0.0),
            masses=jnp.ones(4),
        ),
        ValueError,
        "PeriodicDihedral needs a 3-D space",
    ),
    (
        "exclusions shape",
        lambda: md.Exclusions(jnp.array([0, 1, 2])),
        ValueError,
        r"Exclusions pairs must have shape \(m, 2\)",
    ),
    (
        "exclusions float",
        lambda: md.Exclusions(jnp.array([[0.0, 1.0]])),
        TypeError,
        "Exclusions pairs must be integers",
    ),
    (
        "exclusion out of range",
        lambda: md.MDSystem(
            md.FreeSpace(), md.LennardJones(1.0, 1.0), masses=jnp.ones(3), exclusions=[[0, 7]]
        ),
        ValueError,
        "exclusions name particle 7, but the system has 3 particles",
    ),
    (
        "potential type",
        lambda: md.MDSystem(md.FreeSpace(), lambda r: r, masses=jnp.ones(2)),
        TypeError,
        "potential must be a sciad.md.AbstractPotential",
    ),
    (
        "ewald in free space",
        lambda: md.MDSystem(md.FreeSpace(), md.Ewald(jnp.ones(2), 1.0, 1.0, 2), masses=jnp.ones(2)),
        TypeError,
        r"Ewald summation needs a periodic space \(PeriodicBox or TriclinicBox\); got FreeSpace",
    ),
    (
        "ewald charges shape",
        lambda: md.MDSystem(BOX4, md.Ewald(jnp.ones(2), 1.0, 1.0, 2), masses=jnp.ones(3)),
        ValueError,
        r"charges must have shape \(3,\) \(one per particle\)",
    ),
    (
        "ewald cutoff",
        lambda: md.MDSystem(BOX4, md.Ewald(jnp.ones(2), 1.0, 2.5, 2), masses=jnp.ones(2)),
        ValueError,
        "Ewald cutoff = 2.5 must be below half the box's smallest width",
    ),
    (
        "ewald kmax",
        lambda: md.Ewald(jnp.ones(2), 1.0, 1.0, 0),
        ValueError,
        "kmax must be >= 1 on every axis",
    ),
    (
        "ewald alpha",
        lambda: md.Ewald(jnp.ones(2), -1.0, 1.0, 2),
        ValueError,
        "alpha must be positive",
    ),
    (
        "ewald 2-D",
        lambda: md.MDSystem(
            md.PeriodicBox(jnp.ones(2) * 5), md.Ewald(jnp.ones(2), 1.0, 1.0, 2), masses=jnp.ones(2)
        ),
        ValueError,
        "Ewald summation needs a 3-D cell",
    ),
]

_PAIR = md.MDSystem(md.FreeSpace(), md.LennardJones(1.0, 1.0), masses=jnp.ones(2))
_PAIR_Y0 = (jnp.array([[0.0, 0.0, 0.0], [1.2, 0.0, 0.0]]), jnp.zeros((2, 3)))
_BOXED = md.MDSystem(
    md.PeriodicBox(jnp.full(3, 5.0)), md.Truncated(md.LennardJones(1.0, 1.0), 2.0), jnp.ones(2)
)
_LANGEVIN = md.LangevinBAOAB(1.0, 1.0, jax.random.key(0))


def _npt(**kw):
    args = dict(thermostat=_LANGEVIN, pressure=1.0, compressibility=0.1, tau_p=1.0)
    return md.CellRescaling(**{**args, **kw}, key=jax.random.key(1))


def _run_md(system, integrator):
    return sciad.simulate(system, _PAIR_Y0, dt=0.01, n_steps=1, integrator=integrator)


ENSEMBLE_CASES = [
    (
        "nhc negative kT",
        lambda: md.NoseHooverChain(kT=-1.0, tau=1.0),
        ValueError,
        r"NoseHooverChain: kT must be finite and > 0, got -1.0",
    ),
    (
        "nhc zero tau",
        lambda: md.NoseHooverChain(kT=1.0, tau=0.0),
        ValueError,
        r"NoseHooverChain: tau must be finite and > 0",
    ),
    (
        "nhc chain length 0",
        lambda: md.NoseHooverChain(1.0, 1.0, chain_length=0),
        ValueError,
        r"chain_length must be an int >= 1, got 0",
    ),
    (
        "nhc chain length float",
        lambda: md.NoseHooverChain(1.0, 1.0, chain_length=2.5),
        ValueError,
        r"chain_length must be an int >= 1, got 2.5",
    ),
    (
        "nhc yoshida weights",
        lambda: md.NoseHooverChain(1.0, 1.0, yoshida_weights=4),
        ValueError,
        r"yoshida_weights must be one of \(1, 3, 5, 7\)",
    ),
    (
        "nhc inner integrator class",
        lambda: md.NoseHooverChain(1.0, 1.0, integrator=sciad.VelocityVerlet),
        TypeError,
        "integrator must be a sciad.AbstractIntegrator instance",
    ),
    (
        "nhc on a non-MD model",
        lambda: sim(
            KEPLER, (jnp.ones(2), jnp.array([0.0, 1.0])), integrator=md.NoseHooverChain(1.0, 1.0)
        ),
        TypeError,
        "NoseHooverChain runs a sciad.md.MDSystem; got Kepler",
    ),
    (
        "nhc one particle",
        lambda: sciad.simulate(
            md.MDSystem(md.FreeSpace(), md.LennardJones(1.0, 1.0), masses=jnp.ones(1)),
            (jnp.zeros((1, 3)), jnp.zeros((1, 3))),
            dt=0.01,
            n_steps=1,
            integrator=md.NoseHooverChain(1.0, 1.0),
        ),
        ValueError,
        "NoseHooverChain needs at least 2 particles",
    ),
    (
        "brownian negative friction",
        lambda: md.BrownianDynamics(friction=-1.0, kT=1.0, key=jax.random.key(0)),
        ValueError,
        r"BrownianDynamics: friction must be finite and > 0, got -1.0",
    ),
    (
        "brownian negative kT",
        lambda: md.BrownianDynamics(friction=1.0, kT=-0.5, key=jax.random.key(0)),
        ValueError,
        r"BrownianDynamics: kT must be finite and >= 0, got -0.5",
    ),
    (
        "brownian on a non-MD model",
        lambda: sim(
            KEPLER,
            (jnp.ones(2), jnp.array([0.0, 1.0])),
            integrator=md.BrownianDynamics(1.0, 1.0, jax.random.key(0)),
        ),
        TypeError,
        "BrownianDynamics runs a sciad.md.MDSystem; got Kepler",
    ),
    (
        "npt negative compressibility",
        lambda: _npt(compressibility=-0.1),
        ValueError,
        r"CellRescaling: compressibility must be finite and > 0, got -0.1",
    ),
    (
        "npt zero tau_p",
        lambda: _npt(tau_p=0.0),
        ValueError,
        r"CellRescaling: tau_p must be finite and > 0, got 0.0",
    ),
    (
        "npt NaN pressure",
        lambda: _npt(pressure=float("nan")),
        ValueError,
        r"CellRescaling: pressure must be a finite scalar",
    ),
    (
        "npt thermostat without kT",
        lambda: _npt(thermostat=sciad.VelocityVerlet()),
        TypeError,
        r"thermostat must be an NVT integrator with a `kT`",
    ),
    (
        "npt Brownian thermostat",
        lambda: _npt(thermostat=md.BrownianDynamics(1.0, 1.0, jax.random.key(0))),
        TypeError,
        "BrownianDynamics has none",
    ),
    (
        "npt in free space",
        lambda: _run_md(_PAIR, _npt()),
        TypeError,
        r"CellRescaling needs a periodic space .* got FreeSpace",
    ),
    (
        "npt on a non-MD model",
        lambda: sim(KEPLER, (jnp.ones(2), jnp.array([0.0, 1.0])), integrator=_npt()),
        TypeError,
        "CellRescaling runs a sciad.md.MDSystem; got Kepler",
    ),
    (
        "npt around a neighbour list",
        lambda: _npt(
            thermostat=md.NeighborListIntegrator(
                _LANGEVIN,
                md.NeighborListBuilder.create(_BOXED.space, _PAIR_Y0[0], cutoff=2.0, skin=0.3),
            )
        ),
        TypeError,
        "CellRescaling goes inside the neighbour list",
    ),
]

# Long runs, transport and gradient estimators (lead).
_Q2 = jnp.array([[0.0, 0.0, 0.0], [1.2, 0.0, 0.0]])
_LIST = md.NeighborListBuilder.create(md.FreeSpace(), _Q2, cutoff=2.0, skin=0.1)


def _grow(**kw):
    args = dict(dt=0.01, n_steps=10, builder=_LIST)
    return md.run_growing(_PAIR, (_Q2, jnp.zeros((2, 3))), **{**args, **kw})


def _win(**kw):
    args = dict(dt=0.01, n_steps=10, window=5)
    return sciad.windowed_average(PEND, Y0, lambda t, y, m: y, **{**args, **kw})


LEAD_CASES = [
    (
        "list cutoff below range",
        lambda: sciad.simulate(
            _PAIR,
            (_Q2, jnp.zeros((2, 3))),
            dt=0.01,
            n_steps=2,
            integrator=md.NeighborListIntegrator(sciad.VelocityVerlet(), _LIST),
        ),
        ValueError,
        r"neighbour list's cutoff \(2.0\) is below the potential's range \(inf\)",
    ),
    (
        "run_growing model",
        lambda: md.run_growing(PEND, Y0, dt=0.1, n_steps=2, builder=_LIST),
        TypeError,
        "run_growing runs a sciad.md.MDSystem",
    ),
    (
        "run_growing builder",
        lambda: _grow(builder=None),
        TypeError,
        "builder must be a sciad.md.NeighborListBuilder",
    ),
    (
        "run_growing chunk",
        lambda: _grow(chunk_steps=0),
        ValueError,
        "chunk_steps must be a positive int",
    ),
    (
        "run_growing save_every",
        lambda: _grow(chunk_steps=10, save_every=3),
        ValueError,
        "save_every must be a positive int dividing chunk_steps",
    ),
    ("run_growing growth", lambda: _grow(growth=1.0), ValueError, "growth must be > 1"),
    (
        "vacf max_lag",
        lambda: md.velocity_autocorrelation(jnp.zeros((5, 2, 3)), max_lag=6),
        ValueError,
        r"max_lag must be an int in \[1, 5\]",
    ),
    (
        "reweight model",
        lambda: md.reweighted_average(PEND, _PAIR, _Q2[None], 1.0, len),
        TypeError,
        "system must be a sciad.md.MDSystem",
    ),
    (
        "reweight frames",
        lambda: md.reweighted_average(_PAIR, _PAIR, _Q2, 1.0, len),
        ValueError,
        r"frames must have shape \(frames, n, d\) with n = 2",
    ),
    ("windowed divisibility", lambda: _win(window=3), ValueError, "multiple of window"),
    ("windowed save_every", lambda: _win(save_every=2), ValueError, "multiple of save_every"),
    ("windowed window", lambda: _win(window=0), ValueError, "window must be a positive int"),
    (
        "windowed fn",
        lambda: sciad.windowed_average(PEND, Y0, None, dt=0.1, n_steps=2, window=1),
        TypeError,
        "fn must be callable",
    ),
]

import sciad.rigid as rigid  # noqa: E402

_HINGE_Y = rigid.HingeJoint(axis=(0.0, 1.0, 0.0))
_LINK = dict(mass=1.0, inertia=(0.1, 0.1, 0.1))
_ONE_LINK = rigid.MultiBody([rigid.Body("a", joint=_HINGE_Y, **_LINK)])
_FREE = rigid.MultiBody([rigid.Body("f", joint=rigid.FreeJoint(), **_LINK)])
_LIMITED = rigid.MultiBody(
    [rigid.Body("a", joint=rigid.HingeJoint(axis=(0.0, 1.0, 0.0), range=(-1.0, 1.0)), **_LINK)]
)

RIGID_CASES = [
    (
        "rigid parent order",
        lambda: rigid.MultiBody(
            [rigid.Body("b", parent="a", joint=_HINGE_Y, **_LINK), rigid.Body("a", **_LINK)]
        ),
        ValueError,
        "parent 'a' is not a body listed before it",
    ),
    (
        "rigid duplicate name",
        lambda: rigid.MultiBody([rigid.Body("a", joint=_HINGE_Y, **_LINK)] * 2),
        ValueError,
        "duplicate body name 'a'",
    ),
    (
        "rigid free joint parent",
        lambda: rigid.MultiBody(
            [
                rigid.Body("a", joint=_HINGE_Y, **_LINK),
                rigid.Body("b", parent="a", joint=rigid.FreeJoint(), **_LINK),
            ]
        ),
        ValueError,
        "a FreeJoint's parent must be the world",
    ),
    (
        "rigid no dofs",
        lambda: rigid.MultiBody([rigid.Body("a", **_LINK)]),
        ValueError,
        "no degrees of freedom",
    ),
    (
        "rigid mass negative",
        lambda: rigid.Body("a", mass=-1.0, inertia=(1.0, 1.0, 1.0)),
        ValueError,
        "mass must be positive",
    ),
    (
        "rigid inertia triangle",
        lambda: rigid.Body("a", mass=1.0, inertia=(0.1, 0.1, 1.0)),
        ValueError,
        "triangle inequality",
    ),
    (
        "rigid inertia shape",
        lambda: rigid.Body("a", mass=1.0, inertia=(0.1, 0.1)),
        ValueError,
        r"inertia must have shape \(3,\)",
    ),
    (
        "rigid no inertia",
        lambda: rigid.Body("a", mass=1.0),
        ValueError,
        "give mass and inertia, or a shape",
    ),
    (
        "rigid shape and inertia",
        lambda: rigid.Body("a", shape=rigid.Sphere(0.1), density=1.0, inertia=(1.0, 1.0, 1.0)),
        ValueError,
        "either inertia or shape",
    ),
    (
        "rigid zero quaternion",
        lambda: rigid.Body("a", quat=(0.0, 0.0, 0.0, 0.0), **_LINK),
        ValueError,
        "non-zero quaternion",
    ),
    (
        "rigid zero axis",
        lambda: rigid.HingeJoint(axis=(0.0, 0.0, 0.0)),
        ValueError,
        "axis must be non-zero",
    ),
    ("rigid range order", lambda: rigid.HingeJoint(range=(1.0, -1.0)), ValueError, "lower < upper"),
    (
        "rigid limit kind",
        lambda: rigid.BallJoint(max_angle=0.5, limit="stiff"),
        ValueError,
        "limit must be 'hard'",
    ),
    (
        "rigid hard limit under RKMK4",
        lambda: sciad.simulate(
            _LIMITED, _LIMITED.default_state(), dt=1e-3, n_steps=1, integrator=rigid.RKMK4()
        ),
        ValueError,
        "hard limits",
    ),
    (
        "rigid negative damping",
        lambda: rigid.SliderJoint(damping=-0.1),
        ValueError,
        "damping must be >= 0",
    ),
    ("rigid sphere radius", lambda: rigid.Sphere(-0.1), ValueError, "radius must be positive"),
    (
        "rigid box shape",
        lambda: rigid.Box(jnp.ones(2)),
        ValueError,
        r"half_extents must have shape \(3,\)",
    ),
    (
        "rigid joint type",
        lambda: rigid.Body("a", joint="hinge", **_LINK),
        TypeError,
        "joint must be a sciad.rigid.AbstractJoint",
    ),
    (
        "rigid actuator joint",
        lambda: rigid.MultiBody(
            [rigid.Body("a", joint=_HINGE_Y, **_LINK)], actuators=[rigid.JointActuator.motor("b")]
        ),
        ValueError,
        "no body named 'b'",
    ),
    (
        "rigid servo on ball",
        lambda: rigid.MultiBody(
            [rigid.Body("a", joint=rigid.BallJoint(), **_LINK)],
            actuators=[rigid.JointActuator.position("a", kp=1.0)],
        ),
        ValueError,
        "needs a hinge or slider",
    ),
    (
        "rigid control shape",
        lambda: rigid.MultiBody(
            [rigid.Body("a", joint=_HINGE_Y, **_LINK)],
            actuators=[rigid.JointActuator.motor("a")],
            control=rigid.ConstantControl(jnp.zeros(2)),
        ),
        ValueError,
        r"control must return shape \(1,\)",
    ),
    (
        "rigid wrench shape",
        lambda: rigid.MultiBody([rigid.Body("a", joint=_HINGE_Y, **_LINK)], wrench=jnp.zeros(6)),
        ValueError,
        r"wrench must return shape \(1, 6\)",
    ),
    (
        "rigid state shape",
        lambda: sciad.simulate(_ONE_LINK, (jnp.zeros(2), jnp.zeros(1)), dt=0.01, n_steps=1),
        ValueError,
        r"y0\[0\] \(q\) must have shape \(1,\)",
    ),
    (
        "rigid state not a tuple",
        lambda: sciad.simulate(_ONE_LINK, jnp.zeros(2), dt=0.01, n_steps=1),
        ValueError,
        r"must be a tuple \(q, v\)",
    ),
    (
        "rigid integrator on ode",
        lambda: sciad.simulate(PEND, Y0, dt=0.01, n_steps=1, integrator=rigid.RKMK4()),
        TypeError,
        "RKMK4 integrates a sciad.rigid.MultiBody; got Pendulum",
    ),
    (
        "rigid splitting on hinges",
        lambda: sciad.simulate(
            _ONE_LINK,
            _ONE_LINK.default_state(),
            dt=0.01,
            n_steps=1,
            integrator=rigid.FreeBodySplitting(),
        ),
        ValueError,
        "FreeBodySplitting integrates free bodies only",
    ),
    (
        "rigid free state nan",
        lambda: sciad.simulate(_FREE, (jnp.full(7, jnp.nan), jnp.zeros(6)), dt=0.01, n_steps=1),
        ValueError,
        "y0.* contains NaN",
    ),
]

_MJCF_HINGE = (
    '<mujoco><worldbody><body name="b"><joint name="j"/><geom size="0.1"/></body>'
    "</worldbody>{}</mujoco>"
)

MJCF_CASES = [
    (
        "mjcf source type",
        lambda: rigid.load_mjcf(3),  # pyright: ignore[reportArgumentType]
        TypeError,
        "a path or an XML string",
    ),
    (
        "mjcf missing file",
        lambda: rigid.load_mjcf("no/such/ant.xml"),
        FileNotFoundError,
        "no such file 'no/such/ant.xml'",
    ),
    (
        "mjcf not a model",
        lambda: rigid.from_mujoco("<mujoco/>"),
        TypeError,
        "needs a compiled mujoco.MjModel; got str",
    ),
    (
        "mjcf compile error",
        lambda: rigid.load_mjcf(
            "<mujoco><worldbody><body><joint type='nope'/></body></worldbody></mujoco>"
        ),
        ValueError,
        "nope",
    ),
    (
        "mjcf two joints",
        lambda: rigid.load_mjcf(
            '<mujoco><worldbody><body name="leg"><joint name="x"/><joint name="y" axis="0 1 0"/>'
            '<geom size="0.1"/></body></worldbody></mujoco>'
        ),
        ValueError,
        r"MJCF body 'leg' has 2 joints \('x', 'y'\); sciad.rigid supports one joint per body",
    ),
    (
        "mjcf tendon",
        lambda: rigid.load_mjcf(
            _MJCF_HINGE.format(
                '<tendon><fixed name="t"><joint joint="j" coef="1"/></fixed></tendon>'
            )
        ),
        ValueError,
        "MJCF tendon 't': tendons are not supported",
    ),
    (
        "mjcf actuator forcerange",
        lambda: rigid.load_mjcf(
            _MJCF_HINGE.format('<actuator><motor name="m" joint="j" forcerange="-1 1"/></actuator>')
        ),
        ValueError,
        "MJCF actuator 'm': forcerange",
    ),
    (
        "mjcf qpos shape",
        lambda: rigid.load_mjcf(_MJCF_HINGE.format("")).qpos_to_q(jnp.zeros(3)),
        ValueError,
        r"qpos must have shape \(\.\.\., 1\); got \(3,\)",
    ),
]

ALL = (
    SIMULATE_CASES
    + SOLVE_CASES
    + FIT_CASES
    + MD_CASES
    + MINIMIZE_CASES
    + FORCEFIELD_CASES
    + ENSEMBLE_CASES
    + LEAD_CASES
    + RIGID_CASES
    + MJCF_CASES
)


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
