"""Bad input to `sciad.md` and the error each must raise."""

import io

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
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
        r"Truncated.cutoff must be finite and > 0; got -1.0",
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
    (
        "FIRE f_dec",
        lambda: md.FIRE(f_dec=1.5),
        ValueError,
        r"FIRE.f_dec must lie in \(0.0, 1.0\); got 1.5",
    ),
    (
        "FIRE dt order",
        lambda: md.FIRE(dt_start=1.0, dt_max=0.1),
        ValueError,
        "dt_min <= dt_start <= dt_max",
    ),
    (
        "FIRE atol",
        lambda: md.FIRE(atol=-1.0),
        ValueError,
        "FIRE.atol must be finite and >= 0; got -1.0",
    ),
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
        "Ewald cutoff = 2.5 must be at most half the box's smallest width",
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
        r"NoseHooverChain.kT must be finite and > 0; got -1.0",
    ),
    (
        "nhc zero tau",
        lambda: md.NoseHooverChain(kT=1.0, tau=0.0),
        ValueError,
        r"NoseHooverChain.tau must be finite and > 0",
    ),
    (
        "nhc chain length 0",
        lambda: md.NoseHooverChain(1.0, 1.0, chain_length=0),
        ValueError,
        r"NoseHooverChain.chain_length must be an int >= 1; got 0",
    ),
    (
        "nhc chain length float",
        lambda: md.NoseHooverChain(1.0, 1.0, chain_length=2.5),
        TypeError,
        r"NoseHooverChain.chain_length must be an int; got 2.5",
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
        r"BrownianDynamics.friction must be finite and > 0; got -1.0",
    ),
    (
        "brownian negative kT",
        lambda: md.BrownianDynamics(friction=1.0, kT=-0.5, key=jax.random.key(0)),
        ValueError,
        r"BrownianDynamics.kT must be finite and >= 0; got -0.5",
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
        r"CellRescaling.compressibility must be finite and > 0; got -0.1",
    ),
    (
        "npt zero tau_p",
        lambda: _npt(tau_p=0.0),
        ValueError,
        r"CellRescaling.tau_p must be finite and > 0; got 0.0",
    ),
    (
        "npt NaN pressure",
        lambda: _npt(pressure=float("nan")),
        ValueError,
        r"CellRescaling.pressure must be finite; got nan",
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


# data (species, masses, parameters, lists) ---------------------------------------------
# Species labels, masses, coincident particles, overflowed or foreign neighbour lists,
# and parameters that are wrong on their face: each refused before tracing, by name.
_F = md.FreeSpace()
_LJ = md.LennardJones(1.0, 1.0)
_LJ2 = md.LennardJones(jnp.array([[1.0, 1.1], [1.1, 1.2]]), jnp.ones((2, 2)))
_YUK3 = md.Yukawa(jnp.ones((3, 3)), 1.0)
_ONE3 = jnp.ones(3)
_DUP = jnp.array([[0.0, 0.0, 0.0], [1.2, 0.0, 0.0], [1.2, 0.0, 0.0]])
_BOX5 = md.PeriodicBox(jnp.full(3, 5.0))
_TLJ = md.Truncated(_LJ, 2.0)
_Q4 = jnp.array([[0.5, 0.5, 0.5], [1.5, 0.5, 0.5], [0.5, 1.5, 0.5], [0.5, 0.5, 1.5]])
_KEY = jax.random.key(0)
_BONDS = jnp.array([[0, 1]])
_ANGLES = jnp.array([[0, 1, 2]])
_DIHEDRALS = jnp.array([[0, 1, 2, 3]])


def _data_system(**kw):
    return md.MDSystem(**{**dict(space=_F, potential=_LJ, masses=_ONE3), **kw})


def _overflowed_list():
    """A list sized for a sparse configuration, built on a dense one (it overflows)."""
    sparse = jnp.array([[0.5, 0.5, 0.5], [3.0, 0.5, 0.5], [0.5, 3.0, 0.5], [0.5, 0.5, 3.0]])
    builder = md.NeighborListBuilder.create(_BOX5, sparse, cutoff=2.0, skin=0.2)
    return builder.build(_BOX5, _Q4)


def _with_list(system, nbrs):
    return eqx.tree_at(lambda s: s.neighbors, system, nbrs, is_leaf=lambda x: x is None)


_BOXED4 = md.MDSystem(_BOX5, _TLJ, jnp.ones(4))


def _overflowed_run_energy():
    builder = md.NeighborListBuilder.create(_BOX5, _Q4, cutoff=2.0, skin=0.2, capacity=2)
    integ = md.NeighborListIntegrator(sciad.VelocityVerlet(), builder)
    traj = sciad.simulate(
        _BOXED4, (_Q4, jnp.zeros((4, 3))), dt=0.001, n_steps=2, integrator=integ, throw=False
    )
    return integ.model_at(_BOXED4, traj.integrator_state).energy(traj.y1)


def _run_dup(system, q):
    return sciad.simulate(system, (q, jnp.zeros_like(q)), dt=0.01, n_steps=1)


def _fire(**kw):
    return md.FIRE(**kw)


_SPECIES_LABELS = r"MDSystem.species must lie in \[0, 2\) \(there are 2\); got "
_POS = "must be finite and > 0; got "
_NONNEG = "must be finite and >= 0; got "

DATA_CASES = [
    # species labels outside the parameter matrices: never clamped, never wrapped
    (
        "species label above n_species",
        lambda: _data_system(potential=_LJ2, species=jnp.array([0, 1, 2])),
        ValueError,
        _SPECIES_LABELS + "2",
    ),
    (
        "species label negative",
        lambda: _data_system(potential=_LJ2, species=jnp.array([0, 1, -1])),
        ValueError,
        _SPECIES_LABELS + "-1",
    ),
    (
        "species missing for matrices",
        lambda: _data_system(potential=_LJ2),
        ValueError,
        r"MDSystem.potential has \(2, 2\) per-species parameters; pass species=",
    ),
    (
        "species float labels",
        lambda: _data_system(potential=_LJ2, species=jnp.array([0.0, 1.0, 1.0])),
        TypeError,
        "MDSystem.species must be integers; got dtype float",
    ),
    (
        "species float labels without matrices",
        lambda: _data_system(species=jnp.array([0.0, 1.0, 1.0])),
        TypeError,
        "MDSystem.species must be integers; got dtype float",
    ),
    (
        "species truncated matrices",
        lambda: _data_system(potential=md.Truncated(_LJ2, 2.0), species=jnp.array([0, 2, 1])),
        ValueError,
        _SPECIES_LABELS + "2",
    ),
    (
        "species pair_energy_sum label",
        lambda: md.pair_energy_sum(_LJ2, _F, _DUP, md.all_pairs(3), jnp.array([0, 1, 5])),
        ValueError,
        r"species must lie in \[0, 2\) \(there are 2\); got 5",
    ),
    (
        "species pair energy without labels",
        lambda: _LJ2.energy(_F, _Q4),
        ValueError,
        r"LennardJones has \(2, 2\) per-species parameters but no species were given",
    ),
    (
        "species matrices of two sizes",
        lambda: md.LennardJones(jnp.ones((2, 2)), jnp.ones((3, 3))),
        ValueError,
        r"square \(n_species, n_species\) matrices of one size; got shapes \[\(2, 2\), \(3, 3\)\]",
    ),
    (
        "species non-square matrix",
        lambda: md.LennardJones(jnp.ones((2, 3)), 1.0),
        ValueError,
        r"LennardJones.sigma must be a scalar or an \(n_species, n_species\) matrix; got shape "
        r"\(2, 3\)",
    ),
    (
        "species vector parameter",
        lambda: md.Morse(jnp.ones(2), 1.0, 1.0),
        ValueError,
        r"Morse.depth must be a scalar or .* got shape \(2,\). Mix per-species values",
    ),
    (
        "species asymmetric matrix",
        lambda: md.LennardJones(jnp.array([[1.0, 1.1], [1.2, 1.0]]), 1.0),
        ValueError,
        r"LennardJones.sigma must be a symmetric matrix",
    ),
    (
        "species pair sum sizes differ",
        lambda: _LJ2 + _YUK3,
        ValueError,
        r"PairSum: per-species parameters must be square .* \[\(2, 2\), \(3, 3\)\]",
    ),
    (
        "species potential sum sizes differ",
        lambda: md.PotentialSum((_LJ2, _YUK3)),
        ValueError,
        r"different numbers of species \[2, 3\]",
    ),
    # masses
    (
        "masses negative",
        lambda: _data_system(masses=jnp.array([1.0, -1.0, 1.0])),
        ValueError,
        "MDSystem.masses " + _POS + "-1.0",
    ),
    (
        "masses zero",
        lambda: _data_system(masses=jnp.array([1.0, 0.0, 1.0])),
        ValueError,
        "MDSystem.masses " + _POS + "0.0",
    ),
    (
        "masses NaN",
        lambda: _data_system(masses=jnp.array([1.0, jnp.nan, 1.0])),
        ValueError,
        "MDSystem.masses " + _POS + "nan",
    ),
    (
        "masses inf",
        lambda: _data_system(masses=jnp.array([1.0, jnp.inf, 1.0])),
        ValueError,
        "MDSystem.masses " + _POS + "inf",
    ),
    (
        "masses complex",
        lambda: _data_system(masses=jnp.ones(3, complex)),
        TypeError,
        "MDSystem.masses must be real; got dtype complex",
    ),
    ("space not a space", lambda: _data_system(space="box"), TypeError, "MDSystem.space must be"),
    # coincident interacting particles
    (
        "coincident particles simulate",
        lambda: _run_dup(_data_system(), _DUP),
        ValueError,
        r"y0\[0\] \(q\): particles 1 and 2 are at the same point \[1.2, 0.0, 0.0\]",
    ),
    (
        "coincident particles energy",
        lambda: _data_system().energy((_DUP, jnp.zeros((3, 3)))),
        ValueError,
        "q: particles 1 and 2 are at the same point",
    ),
    (
        "coincident particles minimize",
        lambda: md.minimize(_data_system(), _DUP),
        ValueError,
        "q0: particles 1 and 2 are at the same point",
    ),
    (
        "coincident periodic images",
        lambda: _run_dup(
            md.MDSystem(_BOX5, _TLJ, jnp.ones(2)),
            jnp.array([[1.0, 1.0, 1.0], [6.0, 1.0, 1.0]]),
        ),
        ValueError,
        "particles 0 and 1 are at the same point",
    ),
    (
        "coincident three at one point",
        lambda: _run_dup(_data_system(), jnp.zeros((3, 3))),
        ValueError,
        "particles 0 and 1 are at the same point",
    ),
    # neighbour lists carried inside the system
    (
        "list overflowed energy",
        lambda: _with_list(_BOXED4, _overflowed_list()).potential_energy(_Q4),
        ValueError,
        r"MDSystem.neighbors overflowed \(\d+ pairs for a capacity of \d+",
    ),
    (
        "list overflowed constructor",
        lambda: md.MDSystem(_BOX5, _TLJ, jnp.ones(4), neighbors=_overflowed_list()),
        ValueError,
        "MDSystem.neighbors overflowed",
    ),
    (
        "list overflowed simulate",
        lambda: _run_dup(_with_list(_BOXED4, _overflowed_list()), _Q4),
        ValueError,
        "MDSystem.neighbors overflowed",
    ),
    (
        "list overflowed pressure",
        lambda: md.pressure(_with_list(_BOXED4, _overflowed_list()), (_Q4, jnp.zeros((4, 3)))),
        ValueError,
        "MDSystem.neighbors overflowed",
    ),
    (
        "list overflowed model_at after a run",
        _overflowed_run_energy,
        ValueError,
        "MDSystem.neighbors overflowed",
    ),
    (
        "list for another system",
        lambda: md.MDSystem(
            _BOX5,
            _TLJ,
            jnp.ones(3),
            neighbors=md.NeighborListBuilder.create(_BOX5, _Q4, cutoff=2.0, skin=0.2).build(
                _BOX5, _Q4
            ),
        ),
        ValueError,
        "MDSystem.neighbors was built for 4 particles, but the system has 3",
    ),
    (
        "list cutoff below the range",
        lambda: md.MDSystem(
            _BOX5,
            md.Truncated(_LJ, 2.4),
            jnp.ones(4),
            neighbors=md.NeighborListBuilder.create(_BOX5, _Q4, cutoff=2.0, skin=0.2).build(
                _BOX5, _Q4
            ),
        ),
        ValueError,
        "MDSystem.neighbors has cutoff 2.0, below the potential's range 2.4",
    ),
    (
        "list type",
        lambda: _data_system(neighbors=3),
        TypeError,
        "MDSystem.neighbors must be a sciad.md.NeighborList",
    ),
    # pair potentials' parameters
    (
        "LJ sigma negative",
        lambda: md.LennardJones(-1.0, 1.0),
        ValueError,
        "LennardJones.sigma " + _POS,
    ),
    (
        "LJ sigma zero",
        lambda: md.LennardJones(0.0, 1.0),
        ValueError,
        "LennardJones.sigma " + _POS + "0.0",
    ),
    (
        "LJ epsilon negative",
        lambda: md.LennardJones(1.0, -1.0),
        ValueError,
        "LennardJones.epsilon " + _NONNEG,
    ),
    (
        "LJ sigma NaN",
        lambda: md.LennardJones(jnp.nan, 1.0),
        ValueError,
        "LennardJones.sigma " + _POS + "nan",
    ),
    (
        "LJ epsilon complex",
        lambda: md.LennardJones(1.0, 1j),
        TypeError,
        "LennardJones.epsilon must be real",
    ),
    (
        "LJ matrix entry negative",
        lambda: md.LennardJones(jnp.array([[1.0, -1.0], [-1.0, 1.0]]), 1.0),
        ValueError,
        "LennardJones.sigma " + _POS + "-1.0",
    ),
    (
        "Morse depth negative",
        lambda: md.Morse(-1.0, 1.0, 1.0),
        ValueError,
        "Morse.depth " + _NONNEG,
    ),
    ("Morse alpha zero", lambda: md.Morse(1.0, 0.0, 1.0), ValueError, "Morse.alpha " + _POS),
    ("Morse r0 negative", lambda: md.Morse(1.0, 1.0, -1.0), ValueError, "Morse.r0 " + _POS),
    (
        "SoftSphere sigma zero",
        lambda: md.SoftSphere(0.0, 1.0),
        ValueError,
        "SoftSphere.sigma " + _POS,
    ),
    (
        "SoftSphere epsilon negative",
        lambda: md.SoftSphere(1.0, -1.0),
        ValueError,
        "SoftSphere.epsilon " + _NONNEG,
    ),
    (
        "SoftSphere alpha negative",
        lambda: md.SoftSphere(1.0, 1.0, -2.0),
        ValueError,
        "SoftSphere.alpha " + _POS,
    ),
    ("Yukawa kappa negative", lambda: md.Yukawa(1.0, -1.0), ValueError, "Yukawa.kappa " + _NONNEG),
    (
        "Yukawa amplitude NaN",
        lambda: md.Yukawa(jnp.nan, 1.0),
        ValueError,
        "Yukawa.amplitude contains NaN",
    ),
    (
        "GaussianCore sigma negative",
        lambda: md.GaussianCore(1.0, -1.0),
        ValueError,
        "GaussianCore.sigma " + _POS,
    ),
    (
        "GaussianCore epsilon inf",
        lambda: md.GaussianCore(jnp.inf, 1.0),
        ValueError,
        "GaussianCore.epsilon contains NaN or inf",
    ),
    (
        "Truncated cutoff zero",
        lambda: md.Truncated(_LJ, 0.0),
        ValueError,
        "Truncated.cutoff " + _POS + "0.0",
    ),
    (
        "Truncated cutoff NaN",
        lambda: md.Truncated(_LJ, float("nan")),
        ValueError,
        "Truncated.cutoff " + _POS + "nan",
    ),
    (
        "Truncated cutoff array",
        lambda: md.Truncated(_LJ, jnp.asarray(2.5)),
        TypeError,
        "Truncated.cutoff must be a Python number",
    ),
    (
        "Truncated of a bond",
        lambda: md.Truncated(md.HarmonicBond(_BONDS, 1.0, 1.0), 2.5),
        TypeError,
        "Truncated.potential must be a sciad.md.AbstractPairPotential; got HarmonicBond",
    ),
    ("wca sigma negative", lambda: md.wca(-1.0, 1.0), ValueError, "wca sigma " + _POS),
    (
        "lorentz_berthelot epsilon negative",
        lambda: md.lorentz_berthelot(jnp.ones(2), jnp.array([1.0, -1.0])),
        ValueError,
        "lorentz_berthelot epsilon " + _NONNEG + "-1.0",
    ),
    (
        "lorentz_berthelot shapes",
        lambda: md.lorentz_berthelot(jnp.ones(2), jnp.ones(3)),
        ValueError,
        r"sigma and epsilon must both have shape \(n_species,\)",
    ),
    (
        "tail corrections cutoff negative",
        lambda: md.lj_tail_corrections(1.0, 1.0, -2.5, 0.8),
        ValueError,
        "lj_tail_corrections cutoff " + _POS,
    ),
    (
        "tail corrections density negative",
        lambda: md.lj_tail_corrections(1.0, 1.0, 2.5, -0.8),
        ValueError,
        "lj_tail_corrections density " + _NONNEG,
    ),
    (
        "pair sum with a non-pair term",
        lambda: md.PairSum((_LJ, 3)),
        TypeError,
        "PairSum.terms must all be sciad.md.AbstractPairPotential; got int",
    ),
    (
        "potential sum empty",
        lambda: md.PotentialSum(()),
        ValueError,
        "PotentialSum.terms must be a non-empty",
    ),
    # bonded terms
    (
        "bond stiffness negative",
        lambda: md.HarmonicBond(_BONDS, -1.0, 1.0),
        ValueError,
        "HarmonicBond.k " + _NONNEG,
    ),
    (
        "bond rest length negative",
        lambda: md.HarmonicBond(_BONDS, 1.0, -1.0),
        ValueError,
        "HarmonicBond.r0 " + _NONNEG,
    ),
    (
        "bond stiffness per bond negative",
        lambda: md.HarmonicBond(jnp.array([[0, 1], [1, 2]]), jnp.array([1.0, -2.0]), 1.0),
        ValueError,
        "HarmonicBond.k " + _NONNEG + "-2.0",
    ),
    (
        "bond float indices",
        lambda: md.HarmonicBond(jnp.array([[0.0, 1.5]]), 1.0, 1.0),
        TypeError,
        "HarmonicBond.bonds must be integers; got dtype float",
    ),
    (
        "angle stiffness negative",
        lambda: md.HarmonicAngle(_ANGLES, -1.0, 1.0),
        ValueError,
        "HarmonicAngle.k " + _NONNEG,
    ),
    (
        "angle theta0 above pi",
        lambda: md.HarmonicAngle(_ANGLES, 1.0, 4.0),
        ValueError,
        r"HarmonicAngle.theta0 must lie in \[0.0, 3.14159",
    ),
    (
        "angle theta0 negative",
        lambda: md.HarmonicAngle(_ANGLES, 1.0, -0.5),
        ValueError,
        r"HarmonicAngle.theta0 must lie in \[0.0, .*; got -0.5",
    ),
    (
        "angle float indices",
        lambda: md.HarmonicAngle(jnp.array([[0.0, 1.0, 2.0]]), 1.0, 1.0),
        TypeError,
        "HarmonicAngle.angles must be integers",
    ),
    (
        "dihedral periodicity negative",
        lambda: md.PeriodicDihedral(_DIHEDRALS, 1.0, -3, 0.0),
        ValueError,
        "PeriodicDihedral.n " + _NONNEG,
    ),
    (
        "dihedral amplitude NaN",
        lambda: md.PeriodicDihedral(_DIHEDRALS, jnp.nan, 3, 0.0),
        ValueError,
        "PeriodicDihedral.k contains NaN",
    ),
    (
        "dihedral phase inf",
        lambda: md.PeriodicDihedral(_DIHEDRALS, 1.0, 3, jnp.inf),
        ValueError,
        "PeriodicDihedral.phase contains NaN or inf",
    ),
    (
        "dihedral float indices",
        lambda: md.PeriodicDihedral(jnp.array([[0.0, 1.0, 2.0, 3.0]]), 1.0, 3, 0.0),
        TypeError,
        "PeriodicDihedral.dihedrals must be integers",
    ),
    # thermostats and integrators
    (
        "langevin friction negative",
        lambda: md.LangevinBAOAB(-1.0, 1.0, _KEY),
        ValueError,
        "LangevinBAOAB.friction " + _NONNEG + "-1.0",
    ),
    (
        "langevin kT negative",
        lambda: md.LangevinBAOAB(1.0, -1.0, _KEY),
        ValueError,
        "LangevinBAOAB.kT " + _NONNEG + "-1.0",
    ),
    (
        "langevin kT NaN",
        lambda: md.LangevinBAOAB(1.0, jnp.nan, _KEY),
        ValueError,
        "LangevinBAOAB.kT " + _NONNEG + "nan",
    ),
    (
        "langevin friction vector",
        lambda: md.LangevinBAOAB(jnp.ones(2), 1.0, _KEY),
        ValueError,
        r"LangevinBAOAB.friction must be a scalar; got shape \(2,\)",
    ),
    (
        "langevin key int",
        lambda: md.LangevinBAOAB(1.0, 1.0, 0),
        TypeError,
        "LangevinBAOAB.key must be a PRNG key",
    ),
    (
        "langevin key batch",
        lambda: md.LangevinBAOAB(1.0, 1.0, jax.random.split(_KEY, 3)),
        ValueError,
        r"LangevinBAOAB.key must be a single key of shape \(\); got shape \(3,\)",
    ),
    (
        "brownian friction zero",
        lambda: md.BrownianDynamics(0.0, 1.0, _KEY),
        ValueError,
        "BrownianDynamics.friction " + _POS + "0.0",
    ),
    (
        "brownian kT NaN",
        lambda: md.BrownianDynamics(1.0, jnp.nan, _KEY),
        ValueError,
        "BrownianDynamics.kT " + _NONNEG + "nan",
    ),
    (
        "brownian key",
        lambda: md.BrownianDynamics(1.0, 1.0, "seed"),
        TypeError,
        "BrownianDynamics.key must be a PRNG key",
    ),
    (
        "nhc kT zero",
        lambda: md.NoseHooverChain(0.0, 1.0),
        ValueError,
        "NoseHooverChain.kT " + _POS + "0.0",
    ),
    (
        "nhc tau negative",
        lambda: md.NoseHooverChain(1.0, -0.5),
        ValueError,
        "NoseHooverChain.tau " + _POS + "-0.5",
    ),
    (
        "nhc kT NaN",
        lambda: md.NoseHooverChain(jnp.nan, 1.0),
        ValueError,
        "NoseHooverChain.kT " + _POS + "nan",
    ),
    (
        "nhc n_substeps zero",
        lambda: md.NoseHooverChain(1.0, 1.0, n_substeps=0),
        ValueError,
        "NoseHooverChain.n_substeps must be an int >= 1",
    ),
    (
        "nhc kT vector",
        lambda: md.NoseHooverChain(jnp.ones(2), 1.0),
        ValueError,
        r"NoseHooverChain.kT must be a scalar; got shape \(2,\)",
    ),
    (
        "list integrator inner class",
        lambda: md.NeighborListIntegrator(sciad.VelocityVerlet, _LIST),
        TypeError,
        "NeighborListIntegrator.integrator must be a sciad.AbstractIntegrator instance",
    ),
    (
        "list integrator builder",
        lambda: md.NeighborListIntegrator(sciad.VelocityVerlet(), _overflowed_list()),
        TypeError,
        r"NeighborListIntegrator.builder must be a sciad.md.NeighborListBuilder .*got NeighborList",
    ),
    # reweighting
    (
        "reweight kT zero",
        lambda: md.reweighted_average(_PAIR, _PAIR, _Q2[None], 0.0, lambda s, q: q),
        ValueError,
        "reweighted_average kT " + _POS + "0.0",
    ),
    (
        "reweight kT negative",
        lambda: md.reweighted_average(_PAIR, _PAIR, _Q2[None], -1.0, lambda s, q: q),
        ValueError,
        "reweighted_average kT " + _POS + "-1.0",
    ),
    (
        "reweight builder",
        lambda: md.reweighted_average(_PAIR, _PAIR, _Q2[None], 1.0, lambda s, q: q, builder=3),
        TypeError,
        "builder must be a sciad.md.NeighborListBuilder or None; got int",
    ),
    # FIRE's settings
    (
        "FIRE f_inc one",
        lambda: _fire(f_inc=1.0),
        ValueError,
        r"FIRE.f_inc must lie in \(1.0, inf\); got 1.0",
    ),
    (
        "FIRE alpha_start zero",
        lambda: _fire(alpha_start=0.0),
        ValueError,
        r"FIRE.alpha_start must lie in \(0.0, 1.0\); got 0.0",
    ),
    (
        "FIRE f_alpha above one",
        lambda: _fire(f_alpha=1.5),
        ValueError,
        r"FIRE.f_alpha must lie in \(0.0, 1.0\); got 1.5",
    ),
    (
        "FIRE n_min negative",
        lambda: _fire(n_min=-1),
        ValueError,
        "FIRE.n_min must be an int >= 0; got -1",
    ),
    (
        "FIRE max_step negative",
        lambda: _fire(max_step=-0.1),
        ValueError,
        "FIRE.max_step must be finite and > 0; got -0.1",
    ),
    ("FIRE norm not callable", lambda: _fire(norm=2), TypeError, "FIRE.norm must be callable"),
    (
        "FIRE dt_min zero",
        lambda: _fire(dt_min=0.0),
        ValueError,
        "FIRE.dt_min must be finite and > 0; got 0.0",
    ),
    ("FIRE n_min float", lambda: _fire(n_min=2.5), TypeError, "FIRE.n_min must be an int; got 2.5"),
    (
        "FIRE dt_start NaN",
        lambda: _fire(dt_start=float("nan")),
        ValueError,
        "FIRE.dt_start " + _POS + "nan",
    ),
    ("FIRE atol inf", lambda: _fire(atol=float("inf")), ValueError, "FIRE.atol " + _NONNEG + "inf"),
    (
        "FIRE rtol negative",
        lambda: _fire(rtol=-1.0),
        ValueError,
        "FIRE.rtol must be finite and >= 0; got -1.0",
    ),
]


# geometry (spaces, cut-offs, boxes) --------------------------------------------------------
# Every space answers dimension, cell, widths, volume and fractional coordinates; a periodic
# space refuses ranges past half its smallest width (minimum image), a free space refuses
# volume questions, and degenerate boxes are refused before any tracing.

_NAN = float("nan")
_FCC32, _L32 = md.lattice("fcc", 2, 1.6)  # 32 atoms, L = 3.2 (issue 18's example)
_LJ25 = md.Truncated(md.LennardJones(1.0, 1.0), cutoff=2.5)
# A skewed cell: every lattice vector at least 5.8 long, but its smallest width is 2.
_SKEW = md.TriclinicBox(jnp.array([[6.0, 0.0, 0.0], [5.5, 2.0, 0.0], [0.0, 0.0, 6.0]]))
# The neighbour-list test cell: smallest width 4.74, so cutoff + skin <= 2.37.
_TRI = md.TriclinicBox(jnp.array([[5.0, 0.0, 0.0], [1.5, 5.0, 0.0], [-1.0, 1.0, 9.0]]))
_TRI2 = md.TriclinicBox(jnp.array([[5.0, 0.0], [1.0, 5.0]]))
_Q8 = jnp.asarray(np.random.default_rng(0).uniform(0.0, 4.0, (8, 3)))
_BOX10 = md.PeriodicBox(jnp.full(3, 10.0))
_HALF = "must be at most half the box's smallest width"


def _md(space, pot=_LJ25, n=8, **kw):
    return md.MDSystem(space, pot, masses=jnp.ones(n), **kw)


def _run_q(space, q, pot=_LJ25):
    n = q.shape[0]
    return sciad.simulate(_md(space, pot, n), (q, jnp.zeros_like(q)), dt=0.01, n_steps=1)


def _gas(space):
    return md.MDSystem(space, md.Truncated(md.GaussianCore(0.0, 1.0), 1.0), masses=jnp.ones(8))


def _rdf(space=_BOX10, q=_Q8, **kw):
    args = dict(r_max=3.0, n_bins=10)
    return md.radial_distribution(space, q, **{**args, **kw})


def _list(space, q=_Q8, **kw):
    args = dict(cutoff=2.0, skin=0.3)
    return md.NeighborListBuilder.create(space, q, **{**args, **kw})


GEOMETRY_CASES = [
    # boxes refused on their face
    (
        "box negative length",
        lambda: md.PeriodicBox(jnp.array([5.0, -5.0, 5.0])),
        ValueError,
        r"PeriodicBox.lengths must be finite and > 0; got -5.0",
    ),
    (
        "box zero length",
        lambda: md.PeriodicBox(jnp.array([5.0, 0.0, 5.0])),
        ValueError,
        r"PeriodicBox.lengths must be finite and > 0; got 0.0",
    ),
    (
        "box NaN length",
        lambda: md.PeriodicBox(jnp.array([5.0, _NAN, 5.0])),
        ValueError,
        r"PeriodicBox.lengths must be finite and > 0; got nan",
    ),
    (
        "box inf length",
        lambda: md.PeriodicBox(jnp.array([5.0, jnp.inf, 5.0])),
        ValueError,
        r"PeriodicBox.lengths must be finite and > 0; got inf",
    ),
    (
        "box complex lengths",
        lambda: md.PeriodicBox(jnp.array([5.0 + 1j, 5.0, 5.0])),
        TypeError,
        r"PeriodicBox.lengths must be real",
    ),
    (
        "box no dimensions",
        lambda: md.PeriodicBox(jnp.zeros(0)),
        ValueError,
        r"PeriodicBox.lengths must have shape \(d,\), got \(0,\)",
    ),
    (
        "triclinic singular cell",
        lambda: md.TriclinicBox(jnp.array([[4.0, 0.0, 0.0], [0.0, 4.0, 0.0], [4.0, 4.0, 0.0]])),
        ValueError,
        r"TriclinicBox.cell is singular or degenerate: its lattice vectors \(rows\) are linearly",
    ),
    (
        "triclinic flat cell",
        lambda: md.TriclinicBox(jnp.array([[4.0, 0.0], [4.0, 1e-15]])),
        ValueError,
        "TriclinicBox.cell is singular or degenerate",
    ),
    (
        "triclinic zero row",
        lambda: md.TriclinicBox(jnp.array([[4.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 4.0]])),
        ValueError,
        r"TriclinicBox.cell has a zero lattice vector \(row 1\)",
    ),
    (
        "triclinic NaN cell",
        lambda: md.TriclinicBox(jnp.eye(3).at[0, 1].set(_NAN)),
        ValueError,
        "TriclinicBox.cell must be finite",
    ),
    # free space has no cell and no volume
    ("free space volume", lambda: md.FreeSpace().volume(), TypeError, "FreeSpace has no volume"),
    (
        "free space cell",
        lambda: md.FreeSpace().cell_matrix(),
        TypeError,
        r"FreeSpace has no cell: it needs a periodic space",
    ),
    (
        "free space widths",
        lambda: md.FreeSpace().widths(),
        TypeError,
        "FreeSpace has no cell widths",
    ),
    (
        "free space fractional coordinates",
        lambda: md.FreeSpace().to_fractional(_Q8),
        TypeError,
        "FreeSpace has no fractional coordinates",
    ),
    # pair cut-offs past half the box (minimum image), each space and each kind of term
    (
        "fcc cutoff above half box",
        lambda: _md(_L32, n=32),
        ValueError,
        r"The Truncated cut-off = 2.5 " + _HALF + r" \(3.2, so at most 1.6\)",
    ),
    (
        "cutoff above half the short side",
        lambda: _md(md.PeriodicBox(jnp.array([10.0, 10.0, 4.0]))),
        ValueError,
        r"cut-off = 2.5 " + _HALF + r" \(4, so at most 2\)",
    ),
    (
        "cutoff above half a 2-D box",
        lambda: _md(md.PeriodicBox(jnp.array([4.0, 4.0]))),
        ValueError,
        r"cut-off = 2.5 " + _HALF + r" \(4,",
    ),
    (
        "cutoff above half a skewed triclinic width",
        lambda: _md(_SKEW, md.Truncated(md.LennardJones(1.0, 1.0), cutoff=1.5)),
        ValueError,
        r"cut-off = 1.5 " + _HALF + r" \(2, so at most 1\) .* TriclinicBox",
    ),
    (
        "cutoff above half a 2-D triclinic width",
        lambda: _md(_TRI2),
        ValueError,
        r"cut-off = 2.5 " + _HALF + r" \(4.9",
    ),
    (
        "untruncated pair potential in a periodic box",
        lambda: _md(_BOX10, md.LennardJones(1.0, 1.0)),
        ValueError,
        r"LennardJones has infinite range, but in a periodic space",
    ),
    (
        "untruncated pair potential in a triclinic box",
        lambda: _md(_TRI, md.Morse(1.0, 2.0, 1.0)),
        ValueError,
        "Morse has infinite range",
    ),
    (
        "soft sphere diameter above half box",
        lambda: _md(md.PeriodicBox(jnp.full(3, 3.0)), md.SoftSphere(2.0, 1.0)),
        ValueError,
        r"The SoftSphere cut-off = 2 " + _HALF + r" \(3, so at most 1.5\)",
    ),
    (
        "pair sum cutoff above half box",
        lambda: _md(
            md.PeriodicBox(jnp.full(3, 5.0)),
            md.Truncated(md.LennardJones(1.0, 1.0), 1.0) + md.Truncated(md.Yukawa(1.0, 1.0), 3.0),
        ),
        ValueError,
        r"The PairSum cut-off = 3 " + _HALF,
    ),
    (
        "cutoff of one term of a sum above half box",
        lambda: _md(
            md.PeriodicBox(jnp.full(3, 5.0)),
            md.Truncated(md.LennardJones(1.0, 1.0), 3.0)
            + md.HarmonicBond(jnp.array([[0, 1]]), 1.0, 1.0),
        ),
        ValueError,
        r"The Truncated cut-off = 3 " + _HALF,
    ),
    (
        "ewald cutoff above half a triclinic width",
        lambda: _md(_SKEW, md.Ewald(jnp.ones(8), 1.0, 1.5, 2)),
        ValueError,
        r"Ewald cutoff = 1.5 " + _HALF + r" \(2,",
    ),
    (
        "ewald 2-D triclinic",
        lambda: _md(_TRI2, md.Ewald(jnp.ones(8), 1.0, 1.0, 2)),
        ValueError,
        "Ewald summation needs a 3-D cell, got d = 2",
    ),
    (
        "ewald for_accuracy in free space",
        lambda: md.Ewald.for_accuracy(jnp.ones(2), md.FreeSpace(), cutoff=1.0),
        TypeError,
        r"Ewald summation needs a periodic space .* got FreeSpace",
    ),
    (
        "dihedral in a 2-D triclinic cell",
        lambda: _md(_TRI2, md.PeriodicDihedral(jnp.array([[0, 1, 2, 3]]), 1.0, 1, 0.0)),
        ValueError,
        "PeriodicDihedral needs a 3-D space, got d = 2",
    ),
    # positions of another dimension than the space's
    (
        "positions 2-D in a 3-D box",
        lambda: _run_q(_BOX10, _Q8[:, :2]),
        ValueError,
        r"y0\[0\] \(q\) has d = 2 but the space has d = 3",
    ),
    (
        "positions 3-D in a 1-D box",  # lengths (1,) would broadcast over d = 3
        lambda: _run_q(md.PeriodicBox(jnp.array([10.0])), _Q8),
        ValueError,
        r"y0\[0\] \(q\) has d = 3 but the space has d = 1",
    ),
    (
        "positions 3-D in a 2-D triclinic cell",
        lambda: _run_q(md.TriclinicBox(10 * jnp.eye(2)), _Q8),
        ValueError,
        r"has d = 3 but the space has d = 2 \(TriclinicBox",
    ),
    (
        "minimize q0 d vs triclinic cell",
        lambda: md.minimize(_md(md.TriclinicBox(10 * jnp.eye(2))), _Q8),
        ValueError,
        "q0 has d = 3 but the space has d = 2",
    ),
    # neighbour lists: the minimum image must cover cutoff (and cutoff + skin, where the
    # minimum image is exact only up to half the width)
    (
        "list cutoff above half box",
        lambda: _list(md.PeriodicBox(jnp.full(3, 4.0)), cutoff=2.5, skin=0.1),
        ValueError,
        r"cutoff = 2.5 " + _HALF + r" \(4, so at most 2\)",
    ),
    (
        "list cutoff above half a triclinic width",
        lambda: _list(_TRI, cutoff=2.5, skin=0.1),
        ValueError,
        r"cutoff = 2.5 " + _HALF + r" \(4.74",
    ),
    (
        "list cutoff plus skin past the triclinic exact image",
        lambda: _list(_TRI, cutoff=2.0, skin=0.5),
        ValueError,
        r"cutoff \+ skin = 2.5 must be at most 2.37.*TriclinicBox's minimum image is exact",
    ),
    (
        "list positions of another dimension",
        lambda: _list(_BOX10, _Q8[:, :2]),
        ValueError,
        "positions has d = 2 but the space has d = 3",
    ),
    (
        "list built for another space type",
        lambda: _list(_BOX10).build(_TRI, _Q8),
        TypeError,
        "This builder was made for PeriodicBox, got TriclinicBox",
    ),
    # observables that need a volume, and g(r) past half the box
    (
        "pressure in free space",
        lambda: md.pressure(_gas(md.FreeSpace()), (_Q8, _Q8)),
        TypeError,
        r"pressure needs a volume, so a periodic space .* got FreeSpace",
    ),
    (
        "stress tensor in free space",
        lambda: md.stress_tensor(_gas(md.FreeSpace()), (_Q8, _Q8)),
        TypeError,
        "stress_tensor needs a volume",
    ),
    (
        "rdf in free space",
        lambda: _rdf(md.FreeSpace()),
        TypeError,
        "radial_distribution needs a volume",
    ),
    (
        "rdf r_max above half box",
        lambda: _rdf(md.PeriodicBox(jnp.full(3, 5.0))),
        ValueError,
        r"radial_distribution r_max = 3 must be at most half the box's smallest width \(5,",
    ),
    (
        "rdf r_max above half the short side",
        lambda: _rdf(md.PeriodicBox(jnp.array([10.0, 10.0, 5.0]))),
        ValueError,
        r"r_max = 3 must be at most half the box's smallest width \(5, so r_max <= 2.5\)",
    ),
    (
        "rdf r_max above half a triclinic width",
        lambda: _rdf(_SKEW, r_max=1.5),
        ValueError,
        r"r_max = 1.5 must be at most half the box's smallest width \(2,",
    ),
    (
        "rdf r_max negative",
        lambda: _rdf(r_max=-1.0),
        ValueError,
        "radial_distribution r_max must be finite and > 0; got -1.0",
    ),
    ("rdf n_bins zero", lambda: _rdf(n_bins=0), ValueError, "n_bins must be an int >= 1; got 0"),
    ("rdf n_bins float", lambda: _rdf(n_bins=10.0), TypeError, "n_bins must be an int"),
    (
        "rdf smoothing negative",
        lambda: _rdf(smoothing=-0.1),
        ValueError,
        "radial_distribution smoothing must be finite and > 0; got -0.1",
    ),
    (
        "rdf positions of another dimension",
        lambda: _rdf(q=_Q8[:, :2]),
        ValueError,
        "radial_distribution positions q has d = 2 but the space has d = 3",
    ),
    (
        "random positions in free space",
        lambda: md.random_positions(jax.random.key(0), 4, md.FreeSpace(), 1.0),
        TypeError,
        "space must be periodic",
    ),
    (
        "extxyz box of 2-D",
        lambda: md.write_extxyz(io.StringIO(), _Q8, box=_TRI2),
        ValueError,
        r"extended XYZ is 3-D; the cell has shape \(2, 2\)",
    ),
    (
        "extxyz box type",
        lambda: md.write_extxyz(io.StringIO(), _Q8, box=3.0),
        TypeError,
        "box must be a sciad.md space",
    ),
    (
        "green-kubo dimension zero",
        lambda: md.green_kubo_diffusion(jnp.ones(5), 0.1, 0),
        ValueError,
        r"green_kubo_diffusion d \(the dimension\) must be an int >= 1; got 0",
    ),
    (
        "green-kubo negative dt",
        lambda: md.green_kubo_diffusion(jnp.ones(5), -0.1, 3),
        ValueError,
        "green_kubo_diffusion dt must be finite and > 0; got -0.1",
    ),
    (
        "einstein dimension float",
        lambda: md.einstein_diffusion(jnp.ones(5), jnp.arange(5.0), 3.0),
        TypeError,
        r"einstein_diffusion d \(the dimension\) must be an int",
    ),
    (
        "einstein times shape",
        lambda: md.einstein_diffusion(jnp.ones(5), jnp.arange(4.0), 3),
        ValueError,
        r"einstein_diffusion times must have the shape of msd \(5,\)",
    ),
    (
        "einstein start past the frames",
        lambda: md.einstein_diffusion(jnp.ones(5), jnp.arange(5.0), 3, start=4),
        ValueError,
        "einstein_diffusion start = 4 leaves fewer than 2 of the 5 frames",
    ),
]


# smooth cut-offs (Switched) ----------------------------------------------------------------
# r_on and the cut-off are static Python numbers, finite, > 0 and in order; the switch is C²
# or C³; the cut-off is the range that minimum image and neighbour lists must cover.
SWITCH_CASES = [
    (
        "Switched r_on above cutoff",
        lambda: md.Switched(_LJ, r_on=2.5, cutoff=2.0),
        ValueError,
        r"Switched.r_on must be below Switched.cutoff; got r_on = 2.5 and cutoff = 2.0",
    ),
    (
        "Switched r_on equal to cutoff",
        lambda: md.Switched(_LJ, r_on=2.5, cutoff=2.5),
        ValueError,
        r"Switched.r_on must be below Switched.cutoff; got r_on = 2.5 and cutoff = 2.5",
    ),
    (
        "Switched r_on negative",
        lambda: md.Switched(_LJ, r_on=-1.0, cutoff=2.5),
        ValueError,
        "Switched.r_on " + _POS + "-1.0",
    ),
    (
        "Switched r_on NaN",
        lambda: md.Switched(_LJ, r_on=_NAN, cutoff=2.5),
        ValueError,
        "Switched.r_on " + _POS + "nan",
    ),
    (
        "Switched cutoff inf",
        lambda: md.Switched(_LJ, r_on=2.0, cutoff=float("inf")),
        ValueError,
        "Switched.cutoff " + _POS + "inf",
    ),
    (
        "Switched cutoff array",
        lambda: md.Switched(_LJ, r_on=2.0, cutoff=jnp.asarray(2.5)),
        TypeError,
        "Switched.cutoff must be a Python number",
    ),
    (
        "Switched r_on bool",
        lambda: md.Switched(_LJ, r_on=True, cutoff=2.5),
        TypeError,
        "Switched.r_on must be a Python number",
    ),
    (
        "Switched smoothness 4",
        lambda: md.Switched(_LJ, 2.0, 2.5, smoothness=4),
        ValueError,
        r"Switched.smoothness must be one of \(2, 3\); got 4",
    ),
    (
        "Switched smoothness float",
        lambda: md.Switched(_LJ, 2.0, 2.5, smoothness=2.0),
        TypeError,
        "Switched.smoothness must be an int; got 2.0",
    ),
    (
        "Switched of a bond",
        lambda: md.Switched(md.HarmonicBond(_BONDS, 1.0, 1.0), 2.0, 2.5),
        TypeError,
        "Switched.potential must be a sciad.md.AbstractPairPotential; got HarmonicBond",
    ),
    (
        "Switched cutoff above half box",
        lambda: _md(_L32, md.Switched(md.LennardJones(1.0, 1.0), 2.0, 2.5), n=32),
        ValueError,
        r"The Switched cut-off = 2.5 " + _HALF + r" \(3.2, so at most 1.6\)",
    ),
    (
        "Switched beyond the neighbour list's cutoff",
        lambda: md.MDSystem(
            _BOX5,
            md.Switched(_LJ, 2.0, 2.4),
            jnp.ones(4),
            neighbors=md.NeighborListBuilder.create(_BOX5, _Q4, cutoff=2.0, skin=0.2).build(
                _BOX5, _Q4
            ),
        ),
        ValueError,
        "MDSystem.neighbors has cutoff 2.0, below the potential's range 2.4",
    ),
    (
        "Switched species matrices without species",
        lambda: _data_system(potential=md.Switched(_LJ2, 2.0, 2.5)),
        ValueError,
        r"MDSystem.potential has \(2, 2\) per-species parameters; pass species=",
    ),
]


# observables: a state observable takes the state y = (q, p); one of a part takes that part.
# A wrong argument is named with what was expected, never an AttributeError from inside.
_P4 = jnp.zeros((4, 3))
_STATE = "takes the state y = \\(q, p\\), positions and momenta, each of shape \\(n, d\\)"
_STATE_GIVEN = "got a state y = \\(q, p\\) \\(two arrays of shape \\(4, 3\\)\\)"
OBSERVABLE_CASES = [
    (
        "temperature of the momenta alone",
        lambda: _BOXED4.temperature(_P4),
        TypeError,
        "MDSystem.temperature " + _STATE + r".*got one array of shape \(4, 3\)\. Pass \(q, p\)",
    ),
    (
        "energy of the momenta alone",
        lambda: _BOXED4.energy(_P4),
        TypeError,
        "MDSystem.energy " + _STATE + r".*got one array of shape \(4, 3\)",
    ),
    (
        "energy of a triple",
        lambda: _BOXED4.energy((_Q4, _P4, _P4)),
        TypeError,
        "MDSystem.energy " + _STATE + ".*got a tuple of 3",
    ),
    (
        "kinetic energy of the state",
        lambda: _BOXED4.kinetic_energy((_Q4, _P4)),
        TypeError,
        r"MDSystem.kinetic_energy takes the momenta p, one array of shape \(n, d\); "
        + _STATE_GIVEN
        + r"\. Pass y\[1\]",
    ),
    (
        "potential energy of the state",
        lambda: _BOXED4.potential_energy((_Q4, _P4)),
        TypeError,
        r"MDSystem.potential_energy takes the positions q.*" + _STATE_GIVEN + r"\. Pass y\[0\]",
    ),
    (
        "potential energy of None",
        lambda: _BOXED4.potential_energy(None),
        TypeError,
        "MDSystem.potential_energy takes the positions q, one array of shape .*got NoneType",
    ),
    (
        "kinetic energy of too few momenta",
        lambda: _BOXED4.kinetic_energy(jnp.zeros((3, 3))),
        ValueError,
        r"MDSystem.kinetic_energy: the momenta p must have shape \(4, 3\), d being the "
        r"space's dimension, n = len\(MDSystem.masses\); got shape \(3, 3\)",
    ),
    (
        "temperature momenta of another dimension",
        lambda: _BOXED4.temperature((_Q4, jnp.zeros((4, 2)))),
        ValueError,
        r"MDSystem.temperature: the momenta y\[1\] \(p\) must have shape \(4, 3\)",
    ),
    (
        "free-space state halves of two shapes",
        lambda: _gas(md.FreeSpace()).energy((_Q8, jnp.zeros((8, 2)))),
        ValueError,
        r"MDSystem.energy: the positions y\[0\] and momenta y\[1\] must have one shape; "
        r"got \(8, 3\) and \(8, 2\)",
    ),
    (
        "temperature integrator class",
        lambda: _BOXED4.temperature((_Q4, _P4), integrator=sciad.VelocityVerlet),
        TypeError,
        "MDSystem.temperature: integrator must be the sciad.AbstractIntegrator instance",
    ),
    (
        "temperature integrator string",
        lambda: _BOXED4.temperature((_Q4, _P4), integrator="langevin"),
        TypeError,
        "integrator must be the sciad.AbstractIntegrator instance .* got 'langevin'",
    ),
    (
        "temperature kB negative",
        lambda: _BOXED4.temperature((_Q4, _P4), kB=-1.0),
        ValueError,
        "MDSystem.temperature kB must be finite and > 0; got -1.0",
    ),
    (
        "temperature of one particle in NVE",
        lambda: md.MDSystem(md.FreeSpace(), _LJ, jnp.ones(1)).temperature(
            (jnp.zeros((1, 3)), jnp.ones((1, 3)))
        ),
        ValueError,
        r"a single particle whose total momentum is conserved has no degrees of freedom",
    ),
    (
        "pressure of the positions alone",
        lambda: md.pressure(_BOXED4, _Q4),
        TypeError,
        "pressure " + _STATE + r".*got one array of shape \(4, 3\)",
    ),
    (
        "stress tensor of the momenta list",
        lambda: md.stress_tensor(_BOXED4, [_P4]),
        TypeError,
        "stress_tensor " + _STATE + ".*got a list of 1",
    ),
    (
        "virial of the state",
        lambda: md.virial_tensor(_BOXED4, (_Q4, _P4)),
        TypeError,
        r"virial_tensor takes the positions q.*Pass y\[0\]",
    ),
]


CASES = (
    MD_CASES
    + MINIMIZE_CASES
    + FORCEFIELD_CASES
    + ENSEMBLE_CASES
    + LEAD_CASES
    + DATA_CASES
    + GEOMETRY_CASES
    + SWITCH_CASES
    + OBSERVABLE_CASES
)


@pytest.mark.parametrize("name", case_names(CASES))
def test_bad_input(name, bad_input_runner):
    run_case(bad_input_runner, __name__, name)
