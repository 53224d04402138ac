"""Replicas under `vmap`: 16 Langevin runs of N = 256 at 16 temperatures, sciad vs JAX-MD.

The LJ fluid of `md_lj_nve.py` (density 0.84, cut at 2.5σ, dt = 0.005, float32) with
N = 256, one start state (fcc + a Langevin warm-up), replica r at kT_r (default 16
temperatures from 0.8 to 2.3), friction 1, its own random key and momenta drawn at
kT_r. Each library runs the 16 replicas two ways:

- vmap: one jitted `jax.vmap` over (kT, key, momenta) of a single run;
- loop: a Python loop calling a jitted single run once per replica (compiled once).

sciad: `NeighborListIntegrator(LangevinBAOAB(friction, kT, key), builder)` via
`sciad.simulate`. JAX-MD (optional anchor): `simulate.nvt_langevin` with
`energy.lennard_jones_neighbor_list` (`OrderedSparse`) and a `lax.fori_loop` of `apply`
+ `neighbors.update`; under `vmap` its `lax.cond` on a batched predicate becomes a
`select`, so every replica rebuilds at every step. Printed: replica-steps/s (16 ×
steps / minimum wall time over `--repeats` interleaved runs), vmap / loop per library
(bar: sciad's ≥ 1, aim 2), sciad / JAX-MD, compile times, and the rebuilds of the
looped single runs. The final mean kinetic temperatures of the replicas are printed
as a sanity check (they should track kT_r).

Run:  .venv/bin/python benchmarks/md_vmap_replicas.py             (sciad only)
      /work/bench-venv/bin/python benchmarks/md_vmap_replicas.py  (with JAX-MD)
      .venv/bin/python benchmarks/md_vmap_replicas.py --quick     (smoke test)
"""

import argparse
import dataclasses
import time

from _common import block, interleaved, machine, package_version
import _md
import jax
import jax.numpy as jnp
import numpy as np

import sciad
from sciad import md

F32 = jnp.float32
FRICTION, SKIN = 1.0, 0.3
BAR, AIM = 1.0, 2.0


def _ref0(t, y, model):
    return model.neighbors.reference[0]


def sciad_side(q, p, L, kts, steps):
    n = q.shape[0]
    system = _md.lj_system(L, n, F32)
    q0 = jnp.asarray(q, F32)
    builder = md.NeighborListBuilder.create(system.space, q0, cutoff=_md.CUTOFF, skin=SKIN)
    keys = jax.random.split(jax.random.key(1), len(kts))
    p0s = jnp.asarray(p, F32)[None] * jnp.sqrt(jnp.asarray(kts, F32))[:, None, None]
    kts = jnp.asarray(kts, F32)

    def integ(kt, key):
        thermo = md.LangevinBAOAB(friction=jnp.asarray(FRICTION, F32), kT=kt, key=key)
        return md.NeighborListIntegrator(thermo, builder)

    def single(kt, key, p0):
        return sciad.simulate(
            system, (q0, p0), dt=_md.DT, n_steps=steps, integrator=integ(kt, key)
        ).y1

    def refs(kt, key, p0):
        save = sciad.SaveAt(steps=1, fn=_ref0)
        return sciad.simulate(
            system, (q0, p0), dt=_md.DT, n_steps=steps, integrator=integ(kt, key), saveat=save
        ).ys

    t = time.perf_counter()
    vm = jax.jit(jax.vmap(single)).lower(kts, keys, p0s).compile()
    c_vmap = time.perf_counter() - t
    t = time.perf_counter()
    one = jax.jit(single).lower(kts[0], keys[0], p0s[0]).compile()
    c_one = time.perf_counter() - t

    def loop():
        return [one(kts[r], keys[r], p0s[r]) for r in range(len(kts))]

    rj = jax.jit(refs)
    rebuilds = []
    for r in range(len(kts)):
        ref = np.concatenate([np.asarray(q0[0])[None], np.asarray(rj(kts[r], keys[r], p0s[r]))])
        rebuilds.append(int(np.sum(np.any(np.diff(ref, axis=0) != 0, axis=1))))
    y_v = block(vm(kts, keys, p0s))
    y_l = loop()
    agree = max(float(jnp.max(jnp.abs(y_v[0][r] - y_l[r][0]))) for r in range(len(kts)))
    temps = [
        float(system.temperature((y_v[0][r], y_v[1][r]), integrator=integ(kts[r], keys[r])))
        for r in range(len(kts))
    ]
    info = {
        "builder": f"grid={builder.grid}, capacity={builder.capacity}",
        "compile_vmap": c_vmap,
        "compile_one": c_one,
        "rebuilds": rebuilds,
        "agree": agree,
        "temps": temps,
    }
    return (lambda: vm(kts, keys, p0s)), loop, info


def jaxmd_side(q, p, L, kts, steps):
    from jax_md import energy, partition, simulate, space

    box = jnp.asarray(L, F32)
    disp, shift = space.periodic(box)
    one = jnp.asarray(1.0, F32)
    neighbor_fn, energy_fn = energy.lennard_jones_neighbor_list(
        disp,
        box,
        sigma=one,
        epsilon=one,
        r_cutoff=jnp.asarray(_md.CUTOFF, F32),
        dr_threshold=jnp.asarray(SKIN, F32),
        format=partition.OrderedSparse,
    )
    R = jnp.asarray(q, F32)
    nbrs = neighbor_fn.allocate(R)
    init_fn, apply_fn = simulate.nvt_langevin(
        energy_fn, shift, jnp.asarray(_md.DT, F32), kT=one, gamma=jnp.asarray(FRICTION, F32)
    )
    keys = jax.random.split(jax.random.PRNGKey(1), len(kts))
    p0s = jnp.asarray(p, F32)[None] * jnp.sqrt(jnp.asarray(kts, F32))[:, None, None]
    kts = jnp.asarray(kts, F32)

    def single(kt, key, p0, nb):
        st = init_fn(key, R, kT=kt, mass=one, neighbor=nb)
        st = dataclasses.replace(st, momentum=p0)

        def body(i, c):
            s, nb, k = c
            s = apply_fn(s, neighbor=nb, kT=kt)
            nb2 = nb.update(s.position)
            k = k + jnp.any(nb2.reference_position != nb.reference_position).astype(jnp.int32)
            return s, nb2, k

        s, nb, k = jax.lax.fori_loop(0, steps, body, (st, nb, jnp.int32(0)))
        return s.position, s.momentum, nb.did_buffer_overflow, k

    nbs = jax.tree.map(lambda x: jnp.broadcast_to(x, (len(kts),) + x.shape), nbrs)
    t = time.perf_counter()
    vm = jax.jit(jax.vmap(single)).lower(kts, keys, p0s, nbs).compile()
    c_vmap = time.perf_counter() - t
    t = time.perf_counter()
    onej = jax.jit(single).lower(kts[0], keys[0], p0s[0], nbrs).compile()
    c_one = time.perf_counter() - t

    def loop():
        return [onej(kts[r], keys[r], p0s[r], nbrs) for r in range(len(kts))]

    out_v = block(vm(kts, keys, p0s, nbs))
    out_l = loop()
    overflow = bool(jnp.any(out_v[2])) or any(bool(o[2]) for o in out_l)
    info = {
        "compile_vmap": c_vmap,
        "compile_one": c_one,
        "rebuilds": [int(o[3]) for o in out_l],
        "rebuilds_vmap": [int(k) for k in out_v[3]],
        "overflow": overflow,
        "agree": max(float(jnp.max(jnp.abs(out_v[0][r] - out_l[r][0]))) for r in range(len(kts))),
        "temps": [float(jnp.sum(out_v[1][r] ** 2) / (3 * len(q) - 3)) for r in range(len(kts))],
    }
    return (lambda: vm(kts, keys, p0s, nbs)), loop, info


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, for a smoke test")
    ap.add_argument("--n", type=int, default=None)
    ap.add_argument("--replicas", type=int, default=None)
    ap.add_argument("--steps", type=int, default=None)
    ap.add_argument("--warmup", type=int, default=None)
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--no-jaxmd", action="store_true")
    a = ap.parse_args()
    n = a.n or (128 if a.quick else 256)
    n_rep = a.replicas or (2 if a.quick else 16)
    steps = a.steps or (20 if a.quick else 1000)
    warmup = a.warmup if a.warmup is not None else (0 if a.quick else 1000)
    reps = a.repeats or (1 if a.quick else 3)
    kts = np.round(0.8 + 0.1 * np.arange(n_rep), 6)

    print(machine())
    jax_md = None if a.no_jaxmd else _md.load_jax_md()
    q, p, L = _md.fluid_state(n, warmup)
    print(
        f"LJ fluid N={n} (box {L:.4f}), {n_rep} Langevin replicas, kT = {kts[0]}..{kts[-1]}, "
        f"friction {FRICTION}, skin {SKIN}, dt {_md.DT}, {steps} steps, float32; "
        f"min wall over {reps} interleaved runs"
    )
    sides = {"sciad": sciad_side(q, p, L, kts, steps)}
    if jax_md is not None:
        print(f"JAX-MD {package_version('jax-md')}")
        sides["JAX-MD"] = jaxmd_side(q, p, L, kts, steps)
    variants = {}
    for name, (vm, loop, _) in sides.items():
        variants[f"{name} vmap"] = vm
        variants[f"{name} loop"] = loop
    res = interleaved(variants, reps)
    rate = {k: n_rep * steps / r["wall"] for k, r in res.items()}

    print(
        "\n| library | vmap (replica-steps/s) | loop (replica-steps/s) | vmap / loop | "
        "compile vmap (s) | compile single (s) | rebuilds per replica (loop) |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, (_, _, info) in sides.items():
        v, lp = rate[f"{name} vmap"], rate[f"{name} loop"]
        rb = info["rebuilds"]
        print(
            f"| {name} | {v:,.0f} | {lp:,.0f} | {v / lp:.2f} | {info['compile_vmap']:.1f} | "
            f"{info['compile_one']:.1f} | {min(rb)}–{max(rb)} of {steps} |"
        )
    for name, (_, _, info) in sides.items():
        t = ", ".join(f"{x:.2f}" for x in info["temps"])
        print(f"{name}: final kinetic T per replica: {t}")
        print(f"{name}: max |q_vmap − q_loop| = {info['agree']:.2e}")
        if "builder" in info:
            print(f"{name}: builder {info['builder']}")
        if "rebuilds_vmap" in info:
            print(
                f"{name}: lists actually replaced under vmap (the build itself runs every step): {info['rebuilds_vmap']}"
            )
            print(f"{name}: any overflow: {info['overflow']}")
    s_ratio = rate["sciad vmap"] / rate["sciad loop"]
    print(
        f"\nsciad vmap / loop = {s_ratio:.2f} (bar >= {BAR}, aim {AIM}: "
        f"{'MET' if s_ratio >= BAR else 'NOT MET'})"
    )
    if "JAX-MD" in sides:
        j_ratio = rate["JAX-MD vmap"] / rate["JAX-MD loop"]
        print(f"JAX-MD vmap / loop = {j_ratio:.2f}")
        print(
            f"sciad / JAX-MD: vmap {rate['sciad vmap'] / rate['JAX-MD vmap']:.2f}, "
            f"loop {rate['sciad loop'] / rate['JAX-MD loop']:.2f}, "
            f"best vs best {max(rate['sciad vmap'], rate['sciad loop']) / max(rate['JAX-MD vmap'], rate['JAX-MD loop']):.2f}"
        )


if __name__ == "__main__":
    main()
