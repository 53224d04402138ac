"""Lennard-Jones fluid, NVE with neighbour lists: `sciad.md` vs JAX-MD (and LAMMPS, OpenMM).

The system (issue 4): density 0.84, kT = 1.0, LJ (σ = ε = 1) cut at 2.5σ, dt = 0.005,
N = 1,000, 4,000 and 32,000 in a periodic cube, float32. Every code starts from the
same state: fcc sites (random vacancies when N ≠ 4m³), thermal momenta, `--warmup`
Langevin steps at kT = 1 (sciad, untimed), momenta rescaled to exactly kT = 1.

- sciad: `MDSystem(PeriodicBox, Truncated(LennardJones(1, 1), 2.5), masses)` run by
  `sciad.simulate` with `NeighborListIntegrator(VelocityVerlet(), builder)` (jitted,
  compiled ahead of time, saving only the final state), for each skin in `--skins`.
- JAX-MD (anchor, optional): `space.periodic`, `energy.lennard_jones_neighbor_list`
  (cell list, `OrderedSparse` pairs; its default smoothing from r_onset = 2.0 to 2.5,
  which costs the same as a hard cut), `simulate.nve`, and a `lax.fori_loop` of
  `apply` + `neighbors.update` every step, overflow checked after the run (the
  documented pattern), for each skin (`dr_threshold`) in `--jaxmd-skins`.
- LAMMPS (one rank, double precision, `lj/cut 2.5`, `neighbor skin bin`, check every
  step) and OpenMM (CPU platform, `--openmm-threads` threads, plain cut-off) when they
  import; they start from the same state.

Printed per variant: steps/s (minimum wall time over `--repeats` interleaved runs of
`--steps` steps), neighbour-list rebuilds in those steps, ahead-of-time compile time,
the cost of one forced rebuild and of one force evaluation (jitted, min over runs), and
the total-energy drift per particle over the run (each code with its own Hamiltonian).
Then the float64 figures at each code's best skin, and the ratios sciad / JAX-MD (bar:
≥ 2, aim 5) and sciad / LAMMPS (aim ≥ 0.5). The potential energy of the start state is
checked against JAX-MD's (hard cut, 1e-5 relative in float32).

Run:  .venv/bin/python benchmarks/md_lj_nve.py                  (sciad only: no JAX-MD here)
      /work/bench-venv/bin/python benchmarks/md_lj_nve.py       (with the anchors)
      .venv/bin/python benchmarks/md_lj_nve.py --quick          (smoke test)
"""

import argparse
import dataclasses
import time

from _common import block, interleaved, machine, package_version
import _md
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

import sciad
from sciad import md

BAR_JAXMD, AIM_JAXMD, AIM_LAMMPS = 2.0, 5.0, 0.5


def _ref0(t, y, model):
    """Saved every step in the diagnostic run: the list's reference position of atom 0."""
    return model.neighbors.reference[0]


def _min_time(fn, repeats: int) -> float:
    block(fn())
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        block(fn())
        best = min(best, time.perf_counter() - t)
    return best


# -- sciad ----------------------------------------------------------------------------


class SciadRun:
    def __init__(self, q, p, L, dtype, skin: float, steps: int, cost_repeats: int):
        n = q.shape[0]
        self.label = f"sciad skin={skin}"
        self.skin = skin
        self.system = _md.lj_system(L, n, dtype)
        self.y0 = (jnp.asarray(q, dtype), jnp.asarray(p, dtype))
        self.builder = md.NeighborListBuilder.create(
            self.system.space, self.y0[0], cutoff=_md.CUTOFF, skin=skin
        )
        integ = md.NeighborListIntegrator(sciad.VelocityVerlet(), self.builder)

        def run(system, y):
            return sciad.simulate(system, y, dt=_md.DT, n_steps=steps, integrator=integ).y1

        t = time.perf_counter()
        self.compiled = jax.jit(run).lower(self.system, self.y0).compile()
        self.compile_s = time.perf_counter() - t
        self.fn = lambda: self.compiled(self.system, self.y0)

        def diag(system, y):
            save = sciad.SaveAt(steps=1, fn=_ref0)
            return sciad.simulate(
                system, y, dt=_md.DT, n_steps=steps, integrator=integ, saveat=save
            ).ys

        refs = np.asarray(jax.jit(diag)(self.system, self.y0))
        refs = np.concatenate([np.asarray(self.y0[0][0])[None], refs])
        self.rebuilds = int(np.sum(np.any(np.diff(refs, axis=0) != 0, axis=1)))
        y1 = block(self.fn())
        self.overflow = False  # simulate raises on overflow (throw=True)

        self._build = build = jax.jit(self.builder.build)
        self._force = force = jax.jit(lambda s, nb, q: _with(s, nb).force(0.0, q))
        self._pe = jax.jit(lambda s, nb, q: _with(s, nb).potential_energy(q))
        self.drift = abs(self.energy(y1) - self.energy(self.y0)) / n
        self.pe0 = self.pe(self.y0[0]) / n
        nbrs = build(self.system.space, y1[0])
        self.build_s = _min_time(lambda: build(self.system.space, y1[0]), cost_repeats)
        self.force_s = _min_time(lambda: force(self.system, nbrs, y1[0]), cost_repeats)

    def pe(self, q) -> float:
        return float(self._pe(self.system, self._build(self.system.space, q), q))

    def energy(self, y) -> float:
        return self.pe(y[0]) + float(self.system.kinetic_energy(y[1]))


def _with(system, nbrs):
    return eqx.tree_at(lambda m: m.neighbors, system, nbrs, is_leaf=lambda x: x is None)


# -- JAX-MD ---------------------------------------------------------------------------


class JaxMDRun:
    def __init__(
        self, jax_md, q, p, L, dtype, skin: float, steps: int, cost_repeats: int, fmt: str
    ):
        from jax_md import energy, partition, quantity, simulate, space

        n = q.shape[0]
        self.label = f"JAX-MD skin={skin}"
        self.skin = skin
        box = jnp.asarray(L, dtype)
        disp, shift = space.periodic(box)
        one = jnp.asarray(1.0, dtype)
        self.neighbor_fn, self.energy_fn = energy.lennard_jones_neighbor_list(
            disp,
            box,
            sigma=one,
            epsilon=one,
            r_cutoff=jnp.asarray(_md.CUTOFF, dtype),
            dr_threshold=jnp.asarray(skin, dtype),
            format=getattr(partition.NeighborListFormat, fmt),
        )
        R, P = jnp.asarray(q, dtype), jnp.asarray(p, dtype)
        t = time.perf_counter()
        nbrs = self.neighbor_fn.allocate(R)
        self.allocate_s = time.perf_counter() - t
        init_fn, apply_fn = simulate.nve(self.energy_fn, shift, jnp.asarray(_md.DT, dtype))
        state = init_fn(jax.random.PRNGKey(0), R, kT=one, mass=one, neighbor=nbrs)
        state = dataclasses.replace(state, momentum=P)
        assert state.position.dtype == dtype and state.force.dtype == dtype

        def run(state, nbrs):
            def body(i, c):
                s, nb = c
                s = apply_fn(s, neighbor=nb)
                return s, nb.update(s.position)

            return jax.lax.fori_loop(0, steps, body, (state, nbrs))

        def diag(state, nbrs):
            def body(i, c):
                s, nb, k = c
                s = apply_fn(s, neighbor=nb)
                nb2 = nb.update(s.position)
                k = k + jnp.any(nb2.reference_position != nb.reference_position).astype(jnp.int32)
                return s, nb2, k

            return jax.lax.fori_loop(0, steps, body, (state, nbrs, jnp.int32(0)))

        # The documented pattern: run, and if the list overflowed, reallocate and rerun.
        for _ in range(3):
            t = time.perf_counter()
            compiled = jax.jit(run).lower(state, nbrs).compile()
            self.compile_s = time.perf_counter() - t
            s1, nb1 = block(compiled(state, nbrs))
            if not bool(nb1.did_buffer_overflow):
                break
            nbrs = self.neighbor_fn.allocate(R, extra_capacity=8)
            state = dataclasses.replace(
                init_fn(jax.random.PRNGKey(0), R, kT=one, mass=one, neighbor=nbrs), momentum=P
            )
        self.overflow = bool(nb1.did_buffer_overflow)
        self.fn = lambda: compiled(state, nbrs)
        self.rebuilds = int(jax.jit(diag)(state, nbrs)[2])
        self.capacity = int(nbrs.idx.shape[-1])

        ej = jax.jit(lambda R, nb: self.energy_fn(R, neighbor=nb))

        def total(s, nb):
            nb = self.neighbor_fn.allocate(s.position)
            return float(ej(s.position, nb)) + float(
                quantity.kinetic_energy(momentum=s.momentum, mass=s.mass)
            )

        self.drift = abs(total(s1, nb1) - total(state, nbrs)) / n

        # One forced rebuild: update with a reference position moved by a whole σ.
        stale = dataclasses.replace(nb1, reference_position=nb1.reference_position + 1.0)
        upd = jax.jit(lambda R, nb: self.neighbor_fn.update(R, nb))
        frc = jax.jit(lambda R, nb: quantity.force(self.energy_fn)(R, neighbor=nb))
        self.build_s = _min_time(lambda: upd(s1.position, stale), cost_repeats)
        self.force_s = _min_time(lambda: frc(s1.position, nb1), cost_repeats)

        # The potential energy of the start state with a hard cut at 2.5 (r_onset =
        # r_cutoff: the smoothing factor is 1 inside and 0 outside; forward values only).
        _, e_hard = energy.lennard_jones_neighbor_list(
            disp,
            box,
            sigma=one,
            epsilon=one,
            r_onset=jnp.asarray(_md.CUTOFF, dtype),
            r_cutoff=jnp.asarray(_md.CUTOFF, dtype),
            dr_threshold=jnp.asarray(skin, dtype),
        )
        self.pe0_hard = float(jax.jit(e_hard)(R, neighbor=self.neighbor_fn.allocate(R))) / n


# -- the table ------------------------------------------------------------------------


def row(n, dtype, v, steps, r, ratio="") -> str:
    return (
        f"| {n} | {jnp.dtype(dtype).name} | {v.label} | {steps / r['wall']:,.1f} | "
        f"{steps / r['cpu']:,.1f} | "
        f"{v.rebuilds}/{steps} | {v.compile_s:.1f} | {1e3 * v.build_s:.2f} | "
        f"{1e3 * v.force_s:.2f} | {v.drift:.1e} | {ratio} |"
    )


HEADER = (
    "| N | dtype | variant | steps/s | steps/CPU-s | rebuilds | compile (s) | one rebuild (ms) | "
    "one force (ms) | \\|ΔE\\|/N | sciad / JAX-MD |\n|---|---|---|---|---|---|---|---|---|---|---|"
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, for a smoke test")
    ap.add_argument("--sizes", type=int, nargs="*", default=None)
    ap.add_argument("--steps", type=int, default=None, help="steps per timed run")
    ap.add_argument("--warmup", type=int, default=None, help="Langevin steps before timing")
    ap.add_argument("--skins", type=float, nargs="*", default=None, help="sciad skins")
    ap.add_argument("--jaxmd-skins", type=float, nargs="*", default=None)
    ap.add_argument("--jaxmd-format", default="OrderedSparse", choices=["Sparse", "OrderedSparse"])
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--no-f64", action="store_true", help="skip the float64 runs")
    ap.add_argument("--no-jaxmd", action="store_true")
    ap.add_argument("--no-lammps", action="store_true")
    ap.add_argument("--no-openmm", action="store_true")
    ap.add_argument("--openmm-threads", type=int, default=2)
    a = ap.parse_args()
    sizes = a.sizes or ([256] if a.quick else [1000, 4000, 32000])
    skins = a.skins or ([0.3] if a.quick else [0.2, 0.3, 0.4, 0.5])
    jskins = a.jaxmd_skins or ([0.3] if a.quick else [0.3, 0.5])
    reps = a.repeats or (1 if a.quick else 3)
    cost_reps = 1 if a.quick else 10
    warmup = a.warmup if a.warmup is not None else (20 if a.quick else 1000)

    print(machine())
    jax_md = None if a.no_jaxmd else _md.load_jax_md()
    lammps = None if (a.no_lammps or a.quick) else _md.load_lammps()
    openmm = None if (a.no_openmm or a.quick) else _md.load_openmm()
    if jax_md is not None:
        print(f"JAX-MD {package_version('jax-md')} (format {a.jaxmd_format})")
    print(
        f"LJ fluid: density {_md.DENSITY}, kT {_md.KT}, cutoff {_md.CUTOFF}, dt {_md.DT}, "
        f"NVE; start = fcc + {warmup} Langevin steps; min wall over {reps} interleaved runs"
    )

    lines, summary = [HEADER], []
    for n in sizes:
        steps = a.steps or (20 if a.quick else int(np.clip(1_000_000 // n, 100, 1000)))
        q, p, L = _md.fluid_state(n, warmup)
        print(f"\nN = {n}: box {L:.4f}, {steps} steps per timed run", flush=True)
        best = {}
        for dtype in (jnp.float32,) if (a.no_f64 or a.quick) else (jnp.float32, jnp.float64):
            f32 = dtype == jnp.float32
            s_variants = [
                SciadRun(q, p, L, dtype, s, steps, cost_reps)
                for s in (skins if f32 else [best["sciad"]])
            ]
            j_variants = []
            if jax_md is not None:
                j_variants = [
                    JaxMDRun(jax_md, q, p, L, dtype, s, steps, cost_reps, a.jaxmd_format)
                    for s in (jskins if f32 else [best["jaxmd"]])
                ]
            variants = {v.label: v for v in s_variants + j_variants}
            res = interleaved({k: v.fn for k, v in variants.items()}, reps)
            sw = min(res[v.label]["wall"] for v in s_variants)
            s_best = min(s_variants, key=lambda v: res[v.label]["wall"])
            jw = min((res[v.label]["wall"] for v in j_variants), default=None)
            jc = min((res[v.label]["cpu"] for v in j_variants), default=None)
            sc = min(res[v.label]["cpu"] for v in s_variants)
            if f32:
                best["sciad"] = s_best.skin
                if j_variants:
                    best["jaxmd"] = min(j_variants, key=lambda v: res[v.label]["wall"]).skin
            for v in s_variants:
                r = (
                    f"{jw / res[v.label]['wall']:.2f} (CPU {jc / res[v.label]['cpu']:.2f})"
                    if jw and jc
                    else ""
                )
                lines.append(row(n, dtype, v, steps, res[v.label], r))
            for v in j_variants:
                lines.append(row(n, dtype, v, steps, res[v.label]))
                assert not v.overflow, "JAX-MD neighbour list overflowed"
            if j_variants:
                j0 = j_variants[0]
                err = abs(s_best.pe0 - j0.pe0_hard) / abs(j0.pe0_hard)
                tol = 1e-5 if f32 else 1e-10
                print(
                    f"  {jnp.dtype(dtype).name}: start PE/N sciad {s_best.pe0:.7f}, "
                    f"JAX-MD (hard cut) {j0.pe0_hard:.7f}, rel {err:.1e} "
                    f"({'OK' if err < tol else 'MISMATCH'} at {tol:g})"
                )
                summary.append(
                    f"N={n} {jnp.dtype(dtype).name}: sciad/JAX-MD steps/s = {jw / sw:.2f} "
                    f"(by CPU time {jc / sc:.2f}) "
                    f"(bar {BAR_JAXMD}, aim {AIM_JAXMD}: "
                    f"{'MET' if jw / sw >= BAR_JAXMD else 'NOT MET'})"
                )
            if f32:
                best["sciad_rate"] = steps / sw
            print(f"  done {jnp.dtype(dtype).name}", flush=True)

        if lammps is not None:
            wall, cpu, builds, pe = min(
                (_md.lammps_nve(lammps, q, p, L, steps, best["sciad"]) for _ in range(reps)),
                key=lambda x: x[0],
            )
            ratio = best["sciad_rate"] / (steps / wall)
            lines.append(
                f"| {n} | float64 | LAMMPS 1 rank skin={best['sciad']} | {steps / wall:,.1f} | "
                f"{steps / cpu:,.1f} | {builds}/{steps} | | | | | sciad/LAMMPS {ratio:.2f} |"
            )
            summary.append(
                f"N={n}: sciad(f32)/LAMMPS(1 rank) steps/s = {ratio:.2f} (aim {AIM_LAMMPS})"
            )
        if openmm is not None:
            wall, cpu, pe = min(
                (_md.openmm_nve(openmm, q, p, L, steps, a.openmm_threads) for _ in range(reps)),
                key=lambda x: x[0],
            )
            ratio = best["sciad_rate"] / (steps / wall)
            lines.append(
                f"| {n} | mixed | OpenMM CPU {a.openmm_threads} threads | {steps / wall:,.1f} | "
                f"{steps / cpu:,.1f} | | | | | | sciad/OpenMM {ratio:.2f} |"
            )

    print("\n" + "\n".join(lines))
    print(
        "\nsteps/s: min wall time; rebuilds: neighbour-list builds in the timed steps; "
        "compile: ahead-of-time lower+compile of the timed run; one rebuild: a forced build "
        "(JAX-MD: `update` with a stale reference); |ΔE|/N: total-energy change over the "
        "run per particle (each code's own Hamiltonian); sciad / JAX-MD: best JAX-MD "
        "skin's time over this row's time (> 1: sciad faster)."
    )
    for s in summary:
        print(s)


if __name__ == "__main__":
    main()
