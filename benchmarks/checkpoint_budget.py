"""Gradient time and memory of `CheckpointAdjoint(memory=...)`, the budgeted schedule.

(1) The damped pendulum (RK4, 2 float64 states), 100,000 steps: jax.grad of
    sum(y(T)^2) w.r.t. the model's parameters, with `DirectAdjoint`, the default
    `CheckpointAdjoint()` (levels=2) and `CheckpointAdjoint(memory=2**20)`.
    Bar: budgeted gradient <= 4x the forward run, XLA memory <= 1 MiB.
(2) The 1,000-dimensional harmonic chain of `gradient_memory.py` (velocity Verlet,
    100,000 steps): the default `CheckpointAdjoint()` against
    `CheckpointAdjoint(memory=...)` (default budget 64 MiB). Bar: the budgeted gradient
    no slower than the default.

Memory is XLA's compiled memory analysis (temp + arguments + outputs); times are jitted,
compiled first, minimum over `--repeats` round-robin runs. Gradients are checked equal to
`DirectAdjoint`'s (pendulum) and to the default's (chain) to 1e-12 relative.

Run:  .venv/bin/python benchmarks/checkpoint_budget.py [--quick] [--chain-memory BYTES]
"""

import argparse

from _common import block, chain_problem, compiled_memory, interleaved, machine, mib
import jax
import jax.numpy as jnp

import sciad


def rel(a, b) -> float:
    la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
    num = max(float(jnp.max(jnp.abs(x - y))) for x, y in zip(la, lb, strict=True))
    return num / max(float(jnp.max(jnp.abs(y))) for y in lb)


def pendulum(n: int, reps: int, budget: int) -> None:
    model = sciad.ode.Pendulum(length=1.0, gravity=9.81, damping=0.1)
    y0 = jnp.array([1.0, 0.0])

    def loss(m, adjoint):
        return jnp.sum(sciad.simulate(m, y0, dt=1e-3, n_steps=n, adjoint=adjoint).y1 ** 2)

    adjoints = {
        "DirectAdjoint": sciad.DirectAdjoint(),
        "CheckpointAdjoint()": sciad.CheckpointAdjoint(),
        f"CheckpointAdjoint(memory={budget})": sciad.CheckpointAdjoint(memory=budget),
    }
    fns = {k: jax.jit(jax.grad(lambda m, a=a: loss(m, a))) for k, a in adjoints.items()}
    fwd = jax.jit(lambda m: loss(m, sciad.DirectAdjoint()))
    mem = {k: compiled_memory(f, model) for k, f in fns.items()}
    grads = {k: block(f(model)) for k, f in fns.items()}
    block(fwd(model))
    variants = {"forward": lambda: fwd(model)} | {k: (lambda f=f: f(model)) for k, f in fns.items()}
    res = interleaved(variants, reps)
    t_fwd = res["forward"]["wall"]
    print(f"\n(1) pendulum, RK4, {n} steps; forward {t_fwd * 1e3:.1f} ms")
    print(f"{'':36s} {'grad (ms)':>10s} {'/ forward':>10s} {'XLA total':>12s} {'rel. diff':>10s}")
    for k in fns:
        ratio = res[k]["wall"] / t_fwd
        d = rel(grads[k], grads["DirectAdjoint"])
        print(
            f"{k:36s} {res[k]['wall'] * 1e3:10.1f} {ratio:10.2f} {mib(mem[k]['total']):>12s} "
            f"{d:10.1e}"
        )
    k = f"CheckpointAdjoint(memory={budget})"
    ok = res[k]["wall"] / t_fwd <= 4 and mem[k]["total"] <= 2**20
    print(f"bar: budgeted gradient <= 4x forward with <= 1 MiB: {'MET' if ok else 'NOT MET'}")


def chain(dim: int, n: int, reps: int, budget: int) -> None:
    model, y0 = chain_problem(dim)

    def loss(m, y, adjoint):
        traj = sciad.simulate(
            m, y, dt=0.01, n_steps=n, integrator=sciad.VelocityVerlet(), adjoint=adjoint
        )
        return jnp.sum(traj.y1[0] ** 2)

    adjoints = {
        "CheckpointAdjoint()": sciad.CheckpointAdjoint(),
        f"CheckpointAdjoint(memory={budget})": sciad.CheckpointAdjoint(memory=budget),
    }
    fns = {
        k: jax.jit(jax.grad(lambda m, y, a=a: loss(m, y, a), argnums=(0, 1)))
        for k, a in adjoints.items()
    }
    mem = {k: compiled_memory(f, model, y0) for k, f in fns.items()}
    grads = {k: block(f(model, y0)) for k, f in fns.items()}
    res = interleaved({k: (lambda f=f: f(model, y0)) for k, f in fns.items()}, reps)
    print(f"\n(2) chain dim={dim}, velocity Verlet, {n} steps")
    print(f"{'':36s} {'grad (s)':>10s} {'CPU (s)':>10s} {'XLA total':>12s}")
    for k in fns:
        print(f"{k:36s} {res[k]['wall']:10.3f} {res[k]['cpu']:10.3f} {mib(mem[k]['total']):>12s}")
    names = list(fns)
    ratio = res[names[1]]["wall"] / res[names[0]]["wall"]
    print(f"budgeted / default gradient time: {ratio:.3f}; rel. diff {rel(*grads.values()):.1e}")
    print(f"bar: budgeted no slower than the default: {'MET' if ratio <= 1.0 else 'NOT MET'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, for a smoke test")
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--chain-memory", type=int, default=64 * 2**20)
    a = ap.parse_args()
    reps = a.repeats or (1 if a.quick else 9)
    print(machine())
    pendulum(2_000 if a.quick else 100_000, reps, 2**20)
    chain(100 if a.quick else 1000, 2_000 if a.quick else 100_000, reps, a.chain_memory)


if __name__ == "__main__":
    main()
