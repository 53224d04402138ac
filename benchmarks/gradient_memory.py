"""Reverse-mode memory and time: `CheckpointAdjoint` (default) vs `DirectAdjoint`.

Measures `jax.grad` of L = sum(q(T)^2) with respect to the chain stiffness k and the
initial state (q0, p0), through 100,000 velocity-Verlet steps of the 1,000-dimensional
harmonic chain (float64, dt = 0.01), with `sciad.CheckpointAdjoint()` (the default,
nested `jax.checkpoint` of `lax.scan`) and `sciad.DirectAdjoint()` (store every step).

Peak memory is measured two ways:

(a) XLA's compiled memory analysis of the jitted gradient,
    `jax.jit(f).lower(args).compile().memory_analysis()`: temp + argument + output
    bytes (minus aliased bytes, none here). This is what the executable allocates.
(b) Peak RSS of a fresh subprocess per variant: the child imports, builds the inputs
    and compiles the gradient ahead of time, resets its RSS high-water mark
    (`/proc/self/clear_refs`, so the compiler's own peak does not hide the run's),
    takes `resource.getrusage(RUSAGE_SELF).ru_maxrss` as the baseline, runs the
    gradient once, and reports ru_maxrss minus the baseline. The children run before
    the parent does any heavy work.

Bar: checkpointed peak <= 1/10 of store-everything. Also reports gradient wall time
(jitted, compiled before timing, min over `--repeats` runs), checks that the two
gradients agree (relative 1e-10) and that both match central finite differences at
1,000 steps (d/dk, and a random direction in the initial state), to 1e-8 relative.

Run:  .venv/bin/python benchmarks/gradient_memory.py           (full size)
      .venv/bin/python benchmarks/gradient_memory.py --quick   (smoke test)
"""

import argparse
import json
import os
import resource
import subprocess
import sys

from _common import block, chain_problem, compiled_memory, interleaved, machine, mib
import jax
import jax.numpy as jnp
import numpy as np

import sciad

DT = 0.01
BAR = 0.1
ADJOINTS = {"CheckpointAdjoint": sciad.CheckpointAdjoint(), "DirectAdjoint": sciad.DirectAdjoint()}


def loss(model, y0, adjoint, n):
    q, p = sciad.simulate(
        model, y0, dt=DT, n_steps=n, integrator=sciad.VelocityVerlet(), adjoint=adjoint
    ).y1
    return jnp.sum(q**2)


def grad_fn(adjoint, n):
    return jax.jit(jax.grad(lambda m, y: loss(m, y, adjoint, n), argnums=(0, 1)))


def child(name: str, dim: int, n: int) -> None:
    """Run in a fresh process: peak RSS of one gradient evaluation."""
    model, y0 = chain_problem(dim)
    compiled = grad_fn(ADJOINTS[name], n).lower(model, y0).compile()
    reset = True
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset the RSS high-water mark (Linux >= 4.0)
    except OSError:
        reset = False
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    block(compiled(model, y0))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out = {"baseline_kib": base, "peak_kib": peak, "delta_kib": peak - base, "reset": reset}
    print(json.dumps(out))


def rel(a, b) -> float:
    la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
    num = max(float(jnp.max(jnp.abs(x - y))) for x, y in zip(la, lb, strict=True))
    den = max(float(jnp.max(jnp.abs(y))) for y in lb)
    return num / den


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, for a smoke test")
    ap.add_argument("--dim", type=int, default=None)
    ap.add_argument("--steps", type=int, default=None)
    ap.add_argument("--fd-steps", type=int, default=None)
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--child", choices=sorted(ADJOINTS), help=argparse.SUPPRESS)
    a = ap.parse_args()
    dim = a.dim or (100 if a.quick else 1000)
    n = a.steps or (200 if a.quick else 100_000)
    n_fd = a.fd_steps or (n if a.quick else 1_000)
    reps = a.repeats or (1 if a.quick else 7)
    if a.child:
        child(a.child, dim, n)
        return

    print(machine())
    print(f"chain dim={dim}, steps={n}, dt={DT}, float64; grad of sum(q(T)^2) wrt (k, q0, p0)")

    # (b) Peak RSS, each variant in a fresh process, before this process does any work.
    rss = {}
    for name in ADJOINTS:
        cmd = [sys.executable, os.path.abspath(__file__), "--child", name]
        cmd += ["--dim", str(dim), "--steps", str(n)]
        r = subprocess.run(cmd, capture_output=True, text=True, check=True)
        rss[name] = json.loads(r.stdout.strip().splitlines()[-1])

    model, y0 = chain_problem(dim)
    fns = {name: grad_fn(adj, n) for name, adj in ADJOINTS.items()}
    # (a) XLA's compiled memory analysis.
    mem = {name: compiled_memory(f, model, y0) for name, f in fns.items()}
    grads = {name: block(f(model, y0)) for name, f in fns.items()}
    res = interleaved({k: (lambda f=f: f(model, y0)) for k, f in fns.items()}, reps)
    fwd = jax.jit(lambda m, y: loss(m, y, sciad.CheckpointAdjoint(), n))
    block(fwd(model, y0))
    t_fwd = interleaved({"forward": lambda: fwd(model, y0)}, reps)["forward"]

    print(
        f"\n{'':20s} {'XLA total':>12s} {'XLA temp':>12s} {'RSS delta':>12s} "
        f"{'grad wall (s)':>13s} {'grad CPU (s)':>12s}"
    )
    for name in ADJOINTS:
        print(
            f"{name:20s} {mib(mem[name]['total']):>12s} {mib(mem[name]['temp']):>12s} "
            f"{mib(rss[name]['delta_kib'] * 1024):>12s} {res[name]['wall']:13.4f} "
            f"{res[name]['cpu']:12.4f}"
        )
    print(f"forward only (CheckpointAdjoint, same loss): {t_fwd['wall']:.4f} s")
    for name in ADJOINTS:
        print(f"  XLA analysis {name}: {mem[name]}")
        print(f"  RSS child {name}: {rss[name]}")
    r_xla = mem["CheckpointAdjoint"]["total"] / mem["DirectAdjoint"]["total"]
    r_rss = rss["CheckpointAdjoint"]["delta_kib"] / max(rss["DirectAdjoint"]["delta_kib"], 1)
    r_time = res["CheckpointAdjoint"]["wall"] / res["DirectAdjoint"]["wall"]
    print(
        f"\nmemory checkpointed / store-everything: XLA {r_xla:.4f} (1/{1 / r_xla:.0f}), "
        f"RSS {r_rss:.4f} (1/{1 / max(r_rss, 1e-9):.0f})   bar <= {BAR}"
    )
    print(f"gradient time checkpointed / store-everything: {r_time:.3f}")
    print(
        f"gradient time / forward time: "
        f"{res['CheckpointAdjoint']['wall'] / t_fwd['wall']:.2f} (checkpointed), "
        f"{res['DirectAdjoint']['wall'] / t_fwd['wall']:.2f} (direct)"
    )

    agree = rel(grads["CheckpointAdjoint"], grads["DirectAdjoint"])
    print(f"max rel. difference of the two gradients ({n} steps): {agree:.2e}")

    # Finite differences at n_fd steps, central, h = 1e-3 (L is quadratic in y0 -- the
    # chain is linear -- and smooth in k; smaller h only adds round-off).
    h = 1e-3
    # (at n_fd = n, as in a quick run, the functions compiled above serve: no new compiles)
    f_fd = fwd if n_fd == n else jax.jit(lambda m, y: loss(m, y, sciad.DirectAdjoint(), n_fd))
    v = jax.tree.map(lambda x: jnp.asarray(np.random.default_rng(1).standard_normal(x.shape)), y0)
    fd_k = (f_fd(type(model)(model.k + h), y0) - f_fd(type(model)(model.k - h), y0)) / (2 * h)
    yp = jax.tree.map(lambda x, d: x + h * d, y0, v)
    ym = jax.tree.map(lambda x, d: x - h * d, y0, v)
    fd_v = (f_fd(model, yp) - f_fd(model, ym)) / (2 * h)
    fd_ok = True
    for name, adj in ADJOINTS.items():
        gm, gy = (fns[name] if n_fd == n else grad_fn(adj, n_fd))(model, y0)
        dv = sum(jnp.vdot(g, d) for g, d in zip(gy, v, strict=True))
        ek = abs(float(gm.k - fd_k)) / abs(float(fd_k))
        ev = abs(float(dv - fd_v)) / abs(float(fd_v))
        fd_ok &= ek < 1e-8 and ev < 1e-8
        print(
            f"FD check ({n_fd} steps) {name}: dL/dk {float(gm.k):.10e} vs FD {float(fd_k):.10e} "
            f"(rel {ek:.1e}); dL/dy0.v {float(dv):.10e} vs FD {float(fd_v):.10e} (rel {ev:.1e})"
        )
    ok = r_xla <= BAR and r_rss <= BAR
    print(f"\nbar: checkpointed memory <= 1/10 of store-everything: {'MET' if ok else 'NOT MET'}")
    print(
        f"gradients agree to 1e-10 relative: {'YES' if agree <= 1e-10 else 'NO'}; "
        f"finite differences agree: {'YES' if fd_ok else 'NO'}"
    )


if __name__ == "__main__":
    main()
