"""Gradient of a long MD run w.r.t. (σ, ε): sciad `CheckpointAdjoint` vs JAX-MD's plain `jax.grad`.

Loss: the mean potential energy over the steps of an NVE run of the LJ fluid
(density 0.84, cut at 2.5σ, dt = 0.005, N = `--n`, default 256, from the warmed-up
start state of `md_lj_nve.py`), differentiated w.r.t. (σ, ε) at σ = ε = 1.

- sciad: `sciad.simulate` with `NeighborListIntegrator(VelocityVerlet(), builder)`,
  `SaveAt(steps=1, fn=potential energy)` and `CheckpointAdjoint()` (the default).
- JAX-MD (optional anchor): `energy.lennard_jones_neighbor_list` with σ, ε passed as
  call-time parameters, `simulate.nve`, and a `lax.fori_loop` of `apply` +
  `neighbors.update` accumulating the energy; `jax.grad` straight through it (stores
  every step's residuals, the integer neighbour list included).

Peak memory two ways, as in `gradient_memory.py`: (a) XLA's compiled memory analysis
of the jitted gradient (temp + argument + output − alias); (b) the peak-RSS increase
of one gradient evaluation in a fresh subprocess (compiled first, high-water mark
reset). Time: wall time of one gradient (compiled first; min over `--repeats`).

Gradient values at `--value-steps` (default 400, 1,000, 10,000) in float32 and
float64 show the chaos of long trajectories: the exact gradient of a chaotic run grows
roughly like e^{λt} and is meaningless as an optimisation signal long before it
overflows. The two codes integrate different Hamiltonians (JAX-MD smooths the energy
from r = 2.0 to 2.5), so their values differ even at short times. Also: sciad's
gradient against central finite differences at `--fd-steps` (float64), and the NaN
σ-gradient of JAX-MD's built-in LJ (issue jax-md#258, its reproduction verbatim, and
in the neighbour-list run).

Run:  .venv/bin/python benchmarks/md_gradient_memory.py             (sciad only)
      /work/bench-venv/bin/python benchmarks/md_gradient_memory.py  (with JAX-MD)
      .venv/bin/python benchmarks/md_gradient_memory.py --quick     (smoke test)
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time

from _common import block, compiled_memory, machine, mib
import _md
import jax
import jax.numpy as jnp
import numpy as np

import sciad
from sciad import md

SKIN = 0.3
DTYPES = {"float32": jnp.float32, "float64": jnp.float64}


def _pe(t, y, model):
    return model.potential_energy(y[0])


def sciad_grad(q, p, L, dtype, steps, shift="none"):
    """(jitted grad of the mean PE w.r.t. (σ, ε), its arguments)."""
    n = q.shape[0]
    q0, p0 = jnp.asarray(q, dtype), jnp.asarray(p, dtype)
    space = md.PeriodicBox(jnp.full((3,), L, dtype))
    builder = md.NeighborListBuilder.create(space, q0, cutoff=_md.CUTOFF, skin=SKIN)
    integ = md.NeighborListIntegrator(sciad.VelocityVerlet(), builder)
    save = sciad.SaveAt(steps=1, fn=_pe)

    def loss(params):
        system = _md.lj_system(L, n, dtype, params[0], params[1], shift)
        traj = sciad.simulate(
            system,
            (q0, p0),
            dt=_md.DT,
            n_steps=steps,
            integrator=integ,
            saveat=save,
            adjoint=sciad.CheckpointAdjoint(),
        )
        return jnp.mean(traj.ys)

    return jax.jit(jax.grad(loss)), jax.jit(loss), (jnp.ones((2,), dtype),)


_JAXMD_SETUP: dict = {}


def jaxmd_grad(q, p, L, dtype, steps):
    import dataclasses

    key = (jnp.dtype(dtype).name, q.shape[0])
    if key not in _JAXMD_SETUP:
        _JAXMD_SETUP[key] = _jaxmd_setup(q, p, L, dtype)
    R, P, one, nbrs0, energy_fn, init_fn, apply_fn = _JAXMD_SETUP[key]

    def loss(params, nbrs):
        kw = {"sigma": params[0], "epsilon": params[1]}
        st = init_fn(jax.random.PRNGKey(0), R, kT=one, mass=one, neighbor=nbrs, **kw)
        st = dataclasses.replace(st, momentum=P)

        def body(i, c):
            s, nb, acc = c
            s = apply_fn(s, neighbor=nb, **kw)
            nb = nb.update(s.position)
            return s, nb, acc + energy_fn(s.position, neighbor=nb, **kw)

        _, nb, acc = jax.lax.fori_loop(0, steps, body, (st, nbrs, jnp.zeros((), dtype)))
        return acc / steps, nb.did_buffer_overflow

    # The list is closed over, not passed, and made once per dtype: its static metadata
    # holds an array (the cell size), which jit's caches cannot compare between lists.
    g = jax.jit(jax.grad(lambda pr: loss(pr, nbrs0)[0]))
    f = jax.jit(lambda pr: loss(pr, nbrs0))
    return g, f, (jnp.ones((2,), dtype),)


def _jaxmd_setup(q, p, L, dtype):
    from jax_md import energy, partition, simulate, space

    box = jnp.asarray(L, dtype)
    disp, shift = space.periodic(box)
    one = jnp.asarray(1.0, dtype)
    neighbor_fn, energy_fn = energy.lennard_jones_neighbor_list(
        disp,
        box,
        sigma=one,
        epsilon=one,
        r_cutoff=jnp.asarray(_md.CUTOFF, dtype),
        dr_threshold=jnp.asarray(SKIN, dtype),
        format=partition.OrderedSparse,
    )
    R, P = jnp.asarray(q, dtype), jnp.asarray(p, dtype)
    nbrs0 = neighbor_fn.allocate(R, extra_capacity=4)
    init_fn, apply_fn = simulate.nve(energy_fn, shift, jnp.asarray(_md.DT, dtype))
    return R, P, one, nbrs0, energy_fn, init_fn, apply_fn


def build(lib, q, p, L, dtype, steps):
    return (sciad_grad if lib == "sciad" else jaxmd_grad)(q, p, L, dtype, steps)


def child(lib: str, n: int, steps: int, dtype: str, warmup: int, max_gib: float) -> None:
    """Run in a fresh process: peak RSS of one gradient evaluation."""
    q, p, L = _md.fluid_state(n, warmup)
    g, _, args = build(lib, q, p, L, DTYPES[dtype], steps)
    compiled = g.lower(*args).compile()
    need = compiled_memory(g, *args)["total"]
    if need > max_gib * 2**30:  # do not allocate tens of GiB on a shared machine
        print(json.dumps({"skipped": f"XLA needs {need / 2**30:.1f} GiB > {max_gib} GiB"}))
        return
    reset = True
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        reset = False
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t = time.perf_counter()
    block(compiled(*args))
    wall = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"delta_kib": peak - base, "reset": reset, "wall": wall}))


def jaxmd_issue_258():
    """The reproduction from jax-md#258, verbatim but for the print."""
    from jax_md import energy, quantity, space

    def total_force(R, sigma):
        displacement_fn, shift = space.free()
        energy_fn = energy.lennard_jones_pair(displacement_fn, sigma=sigma)
        force_fn = quantity.force(energy_fn)
        F = force_fn(R)
        return jnp.sum(F**2.0)

    R = jnp.array([[1.0, 2.0, 3.0], [2.0, 3.0, 5.0]], dtype=jnp.float32)
    return float(total_force(R, jnp.float32(2.0))), float(
        jax.grad(total_force, argnums=1)(R, jnp.float32(2.0))
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, for a smoke test")
    ap.add_argument("--n", type=int, default=None)
    ap.add_argument("--mem-steps", type=int, nargs="*", default=None)
    ap.add_argument("--value-steps", type=int, nargs="*", default=None)
    ap.add_argument("--fd-steps", type=int, default=None)
    ap.add_argument("--warmup", type=int, default=None)
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--max-run-gib", type=float, default=6.0, help="skip runs XLA says need more")
    ap.add_argument("--no-jaxmd", action="store_true")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    a = ap.parse_args()
    n = a.n or (128 if a.quick else 256)
    mem_steps = a.mem_steps or ([20] if a.quick else [1000, 10000])
    value_steps = a.value_steps or ([20] if a.quick else [400, 1000, 10000])
    fd_steps = a.fd_steps or (10 if a.quick else 100)
    dtypes = {"float32": jnp.float32} if a.quick else DTYPES
    warmup = a.warmup if a.warmup is not None else (0 if a.quick else 1000)
    reps = a.repeats or (1 if a.quick else 2)
    if a.child:
        child(a.child[0], n, int(a.child[1]), a.child[2], warmup, a.max_run_gib)
        return

    print(machine())
    jax_md = None if a.no_jaxmd else _md.load_jax_md()
    libs = ["sciad"] + (["JAX-MD"] if jax_md is not None else [])
    print(
        f"LJ fluid N={n}, NVE dt={_md.DT}, skin {SKIN}; loss = mean potential energy over the "
        f"run; grad w.r.t. (sigma, epsilon) at (1, 1)"
    )

    # (b) Peak RSS, float32, each in a fresh process, before this process does heavy work.
    rss = {}
    for lib in libs:
        for k in mem_steps:
            cmd = [sys.executable, os.path.abspath(__file__), "--n", str(n)]
            cmd += ["--warmup", str(warmup), "--max-run-gib", str(a.max_run_gib)]
            cmd += ["--child", lib, str(k), "float32"]
            r = subprocess.run(cmd, capture_output=True, text=True)
            out = json.loads(r.stdout.strip().splitlines()[-1]) if r.returncode == 0 else None
            if out is not None and "skipped" in out:
                print(f"NOTE: RSS child {lib} {k} steps skipped: {out['skipped']}")
            elif out is not None:
                rss[lib, k] = out
            else:
                print(f"NOTE: RSS child {lib} {k} steps failed: {r.stderr.strip()[-300:]}")

    q, p, L = _md.fluid_state(n, warmup)
    print("\n## Memory and time (float32)\n")
    print(
        "| library | steps | XLA total | XLA temp | RSS increase | grad wall (s) | "
        "forward wall (s) | compile (s) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    mem = {}
    built = {}  # (lib, dtype, steps) -> the jitted functions, compiled once between both tables
    for lib in libs:
        for k in mem_steps:
            g, f, args = built[lib, "float32", k] = build(lib, q, p, L, jnp.float32, k)
            t = time.perf_counter()
            cg = g.lower(*args).compile()
            c_s = time.perf_counter() - t
            mem[lib, k] = m = compiled_memory(g, *args)
            if m["total"] > a.max_run_gib * 2**30:
                wall = fwd = float("nan")
            else:
                wall = min(_timed(cg, *args) for _ in range(reps))
                cf = f.lower(*args).compile()
                block(cf(*args))
                fwd = min(_timed(cf, *args) for _ in range(reps))
            r = rss.get((lib, k))
            rs = mib(r["delta_kib"] * 1024) if r else "-"
            print(
                f"| {lib} | {k} | {mib(m['total'])} | {mib(m['temp'])} | {rs} | {wall:.2f} | "
                f"{fwd:.2f} | {c_s:.1f} |"
            )
    if "JAX-MD" in libs:
        for k in mem_steps:
            print(
                f"memory JAX-MD / sciad at {k} steps: XLA "
                f"{mem['JAX-MD', k]['total'] / mem['sciad', k]['total']:.1f}x"
                + (
                    f", RSS {rss['JAX-MD', k]['delta_kib'] / max(rss['sciad', k]['delta_kib'], 1):.1f}x"
                    if ("JAX-MD", k) in rss and ("sciad", k) in rss
                    else ""
                )
            )

    print("\n## Gradient values (chaos)\n")
    print("| library | dtype | steps | mean PE/N | dL/dsigma | dL/depsilon |")
    print("|---|---|---|---|---|---|")
    for lib in libs:
        for dname, dtype in dtypes.items():
            for k in value_steps:
                if (lib, dname, k) not in built:
                    built[lib, dname, k] = build(lib, q, p, L, dtype, k)
                g, f, args = built[lib, dname, k]
                if compiled_memory(g, *args)["total"] > a.max_run_gib * 2**30:
                    print(
                        f"| {lib} | {dname} | {k} | (skipped: XLA needs > {a.max_run_gib} GiB) | | |"
                    )
                    continue
                gs = np.asarray(g(*args)).ravel()
                val = f(*args)
                val = float(val[0] if isinstance(val, tuple) else val)
                print(f"| {lib} | {dname} | {k} | {val / n:.5f} | {gs[0]:.4g} | {gs[1]:.4g} |")

    # sciad against central finite differences (float64, short run: not yet chaotic),
    # with the force-shifted cut-off: with the plain cut the energy jumps by u(r_c) when
    # a pair crosses r_c, so a finite difference over a perturbed trajectory picks up
    # jumps that the (pathwise) derivative rightly ignores.
    g, f, (x,) = sciad_grad(q, p, L, jnp.float64, fd_steps, shift="force")
    gs = np.asarray(g(x))
    h = 1e-6
    fd = [(float(f(x.at[i].add(h))) - float(f(x.at[i].add(-h)))) / (2 * h) for i in range(2)]
    rel = max(abs(gs[i] - fd[i]) / abs(fd[i]) for i in range(2))
    print(
        f"\nsciad vs central FD ({fd_steps} steps, float64, force-shifted cut, h={h}): grad {gs[0]:.8g}, {gs[1]:.8g}; "
        f"FD {fd[0]:.8g}, {fd[1]:.8g}; max rel {rel:.1e} ({'OK' if rel < 1e-6 else 'MISMATCH'})"
    )
    if jax_md is not None:
        e, gsig = jaxmd_issue_258()
        print(
            f"jax-md#258 reproduction: total_force = {e:.7g}, d/dsigma = {gsig} "
            f"({'NaN: reproduced' if np.isnan(gsig) else 'finite: not reproduced'})"
        )


def _timed(fn, *args) -> float:
    t = time.perf_counter()
    block(fn(*args))
    return time.perf_counter() - t


if __name__ == "__main__":
    main()
