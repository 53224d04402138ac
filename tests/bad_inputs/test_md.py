"""Bad input to `sciad.md` and the error each must raise."""

import equinox as eqx
import jax
import jax.numpy as jnp
import optimistix as optx
import pytest

import sciad
import sciad.md as md  # noqa: E402

from . import case_names, run_case
from ._common import KEPLER, OK, PEND, sim, Y0  # noqa: F401

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


CASES = MD_CASES + MINIMIZE_CASES + FORCEFIELD_CASES + ENSEMBLE_CASES + LEAD_CASES


@pytest.mark.parametrize("name", case_names(CASES))
def test_bad_input(name, bad_input_runner):
    run_case(bad_input_runner, __name__, name)
