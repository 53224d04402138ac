"""How to write the core loop: forward time, gradient time and gradient memory of each option.

The design record (docs/design.md) cites these figures. On the 1,000-dimensional
harmonic chain, 100,000 steps, float64, dt = 0.01, it measures for each loop:

- forward time (final state only),
- `jax.grad` of L = sum(q(T)^2) w.r.t. (k, q0, p0): wall time and XLA's compiled
  memory analysis (temp + argument + output bytes of the jitted gradient),
- (a second table) the forward cost of saving q[0] every k = 1, 10, 32, 100 steps with
  `sciad.SaveAt(steps=k, fn=...)`, against a scan that saves as often,
- whether `jax.jvp` (forward mode), `jax.hessian` (forward-over-reverse) and
  `jax.grad(jax.grad(...))` (reverse-over-reverse), all w.r.t. k, go through,
  tried on a 100-step run.

Loops:

1. `lax.scan`: a hand-written velocity-Verlet scan (force cached in the carry).
2. `lax.scan` + per-step finite check: the same scan, also reducing
   `all(isfinite(q)) & all(isfinite(p))` into a flag every step; and the same with
   a last-finite snapshot of the carry updated (`jnp.where`) every step.
3. `lax.scan` + block check: a scan of 32-step blocks with the finite check and a
   snapshot update once per block (what `sciad.simulate` does).
4. `lax.scan` + `jax.checkpoint`: a scan of `jax.checkpoint`-ed inner scans of about
   sqrt(n) steps (two levels; the scheme `sciad.CheckpointAdjoint()` uses).
5. `sciad.simulate`, `CheckpointAdjoint()` (default) and `DirectAdjoint()`.
6. `diffrax.diffeqsolve` with `diffrax.SemiImplicitEuler()` on the split form
   ((dq/dt = p, dp/dt = F(q)), one force evaluation per step, as Verlet; first order,
   so its numbers are a cost comparison, not an accuracy one), `ConstantStepSize`,
   `SaveAt(t1=True)`, `max_steps = n + 16`, and its default
   `RecursiveCheckpointAdjoint()`. diffrax has no velocity Verlet. `diffrax.Tsit5` on
   the first-order form (6 evaluations per step) is tried for composability only.

The check variants return their non-finite flag (and the gradient's loss depends on
it, as `simulate(throw=True)` makes it), so that XLA cannot drop the check as dead
code. With `--quick` (a smoke test) the composability checks (many compilations) are
skipped and one saving interval (k = 10) is run.
Each time is the minimum over `--repeats` jitted, pre-compiled runs (other processes
may share the CPU; min CPU time is printed too).

Run:  .venv/bin/python benchmarks/loop_options.py           (full size)
      .venv/bin/python benchmarks/loop_options.py --quick   (smoke test)
"""

import argparse
import math

from _common import (
    block,
    chain_problem,
    compiled_memory,
    interleaved,
    machine,
    mib,
    verlet_scan,
    verlet_scan_checkpointed,
    verlet_step,
)
import diffrax
import jax
import jax.numpy as jnp

import sciad

DT = 0.01
BLOCK = 32
SAVE_EVERY = (1, 10, 32, 100)


def _q0(t, y, m):
    return y[0][0]


def _step(model, c):
    return verlet_step(model, c, DT)


def _finite(q, p):
    return jnp.all(jnp.isfinite(q)) & jnp.all(jnp.isfinite(p))


def scan_step_check(model, y0, n):
    q0, p0 = y0

    def body(x, _):
        c, bad = x
        c = _step(model, c)
        return (c, bad | ~_finite(c[0], c[1])), None

    ((q, p, _), bad), _ = jax.lax.scan(
        body, ((q0, p0, model.force(0.0, q0)), jnp.asarray(False)), None, length=n
    )
    return q, p, bad


def scan_step_check_snapshot(model, y0, n):
    q0, p0 = y0

    def body(x, _):
        c, good, bad = x
        c = _step(model, c)
        ok = _finite(c[0], c[1])
        good = jax.tree.map(lambda g, x: jnp.where(bad | ~ok, g, x), good, c)
        return (c, jax.lax.stop_gradient(good), bad | ~ok), None

    c = (q0, p0, model.force(0.0, q0))
    (c, good, bad), _ = jax.lax.scan(body, (c, c, jnp.asarray(False)), None, length=n)
    return c[0], c[1], bad


def scan_block_check(model, y0, n):
    q0, p0 = y0

    def inner(c, _):
        return _step(model, c), None

    def outer(x, _):
        c, good, bad = x
        c = jax.lax.scan(inner, c, None, length=BLOCK)[0]
        ok = _finite(c[0], c[1])
        good = jax.tree.map(lambda g, x: jnp.where(bad | ~ok, g, x), good, c)
        return (c, jax.lax.stop_gradient(good), bad | ~ok), None

    c = (q0, p0, model.force(0.0, q0))
    nb, rem = divmod(n, BLOCK)
    (c, good, bad), _ = jax.lax.scan(outer, (c, c, jnp.asarray(False)), None, length=nb)
    c = jax.lax.scan(inner, c, None, length=rem)[0]
    return c[0], c[1], bad


def scan_saving(model, y0, n, every):
    """The plain scan, emitting q[0] every `every` steps (a scan of inner scans)."""
    q0, p0 = y0

    def inner(c, _):
        return _step(model, c), None

    def outer(c, _):
        c = jax.lax.scan(inner, c, None, length=every)[0]
        return c, c[0][0]

    c, ys = jax.lax.scan(outer, (q0, p0, model.force(0.0, q0)), None, length=n // every)
    return c[0], c[1], ys


def diffrax_sie(model, y0, n):
    terms = (
        diffrax.ODETerm(lambda t, p, m: m.velocity(t, p)),
        diffrax.ODETerm(lambda t, q, m: m.force(t, q)),
    )
    return _diffrax_final(terms, diffrax.SemiImplicitEuler(), y0, model, n)


def loss(out):
    """sum(q(T)^2); a loop's non-finite flag, if it returns one, is kept live (as
    `simulate(throw=True)` keeps it), else XLA would drop the check as dead code."""
    L = jnp.sum(out[0] ** 2)
    if len(out) == 3:
        L = L + jnp.where(out[2], jnp.nan, 0.0)
    return L


def diffrax_tsit5(model, y0, n):
    """Tsit5 on the first-order form, constant step (used only for the composability row)."""
    term = diffrax.ODETerm(lambda t, y, m: m.vector_field(t, y))
    return _diffrax_final(term, diffrax.Tsit5(), y0, model, n)


def _diffrax_final(terms, solver, y0, model, n):
    """n constant steps of `solver` with RecursiveCheckpointAdjoint; the final (q, p)."""
    sol = diffrax.diffeqsolve(
        terms,
        solver,
        t0=0.0,
        t1=n * DT,
        dt0=DT,
        y0=y0,
        args=model,
        saveat=diffrax.SaveAt(t1=True),
        stepsize_controller=diffrax.ConstantStepSize(),
        max_steps=n + 16,
        adjoint=diffrax.RecursiveCheckpointAdjoint(),
    )
    q, p = sol.ys
    return q[-1], p[-1]


def nearest_divisor(n: int) -> int:
    r = math.isqrt(n)
    return min((d for d in range(1, n + 1) if n % d == 0), key=lambda d: abs(d - r))


def options(n: int) -> dict:
    chunk = nearest_divisor(n)

    def sim(adjoint):
        return lambda m, y, n: (
            sciad.simulate(
                m, y, dt=DT, n_steps=n, integrator=sciad.VelocityVerlet(), adjoint=adjoint
            ).y1
        )

    return {
        "lax.scan": lambda m, y, n: verlet_scan(m, y, DT, n),
        "lax.scan + per-step check": scan_step_check,
        "lax.scan + per-step check + snapshot": scan_step_check_snapshot,
        f"lax.scan + {BLOCK}-step block check": scan_block_check,
        f"lax.scan + jax.checkpoint ({chunk} steps)": lambda m, y, n: verlet_scan_checkpointed(
            m, y, DT, n, nearest_divisor(n)
        ),
        "sciad.simulate CheckpointAdjoint": sim(sciad.CheckpointAdjoint()),
        "sciad.simulate DirectAdjoint": sim(sciad.DirectAdjoint()),
        "diffrax SemiImplicitEuler + RCA": diffrax_sie,
    }


def composes(run, model, y0) -> tuple[str, ...]:
    """Do `jax.jvp`, `jax.hessian` (forward-over-reverse) and `jax.grad(jax.grad)`
    (reverse-over-reverse), all w.r.t. k, go through a 100-step run?"""

    def final_q(k):
        return run(type(model)(k), y0, 100)[0]

    def loss_k(k):
        return loss(run(type(model)(k), y0, 100))

    out = []
    for f in (
        lambda: jax.jvp(final_q, (model.k,), (jnp.ones_like(model.k),)),
        lambda: jax.hessian(loss_k)(model.k),
        lambda: jax.grad(jax.grad(loss_k))(model.k),
    ):
        try:
            block(jax.jit(f)())
            out.append("yes")
        except Exception as e:  # report which error, do not fail the benchmark
            out.append(f"no ({type(e).__name__})")
    return tuple(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, for a smoke test")
    ap.add_argument("--dim", type=int, default=None)
    ap.add_argument("--steps", type=int, default=None)
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--grad-repeats", type=int, default=None)
    a = ap.parse_args()
    dim = a.dim or (100 if a.quick else 1000)
    n = a.steps or (2_000 if a.quick else 100_000)
    reps = a.repeats or (1 if a.quick else 20)
    greps = a.grad_repeats or (1 if a.quick else 5)
    save_every = (10,) if a.quick else SAVE_EVERY  # one saving interval: the same code path

    print(machine())
    print(
        f"chain dim={dim}, steps={n}, dt={DT}, float64; min over {reps} (forward) / "
        f"{greps} (gradient) runs"
    )
    model, y0 = chain_problem(dim)
    opts = options(n)

    fwd = {k: jax.jit(lambda m, y, r=r: r(m, y, n)) for k, r in opts.items()}
    outs = {k: block(f(model, y0)) for k, f in fwd.items()}
    t_fwd = interleaved({k: (lambda f=f: f(model, y0)) for k, f in fwd.items()}, reps)

    def make_grad(r):
        return jax.jit(jax.grad(lambda m, y: loss(r(m, y, n)), argnums=(0, 1)))

    grads = {k: make_grad(r) for k, r in opts.items()}
    mem = {k: compiled_memory(g, model, y0) for k, g in grads.items()}
    gvals = {k: block(g(model, y0)) for k, g in grads.items()}
    t_grad = interleaved({k: (lambda g=g: g(model, y0)) for k, g in grads.items()}, greps)
    skipped = ("skipped (--quick)",) * 3
    comp = {k: skipped if a.quick else composes(r, model, y0) for k, r in opts.items()}

    base = "lax.scan"
    ref_q = outs[base][0]
    ref_g = gvals[base][0].k
    print(
        "\n| loop | forward (s) | fwd / scan | fwd CPU (s) | grad (s) | grad / scan | "
        "grad memory (XLA) | jvp | hessian | grad of grad | max abs dq(T) vs scan | "
        "dL/dk rel. diff |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for k in opts:
        dq = float(jnp.max(jnp.abs(outs[k][0] - ref_q)))
        dg = abs(float(gvals[k][0].k - ref_g)) / abs(float(ref_g))
        print(
            f"| {k} | {t_fwd[k]['wall']:.4f} | {t_fwd[k]['wall'] / t_fwd[base]['wall']:.2f} | "
            f"{t_fwd[k]['cpu']:.4f} | {t_grad[k]['wall']:.3f} | "
            f"{t_grad[k]['wall'] / t_grad[base]['wall']:.2f} | {mib(mem[k]['total'])} | "
            f"{' | '.join(comp[k])} | {dq:.1e} | {dg:.1e} |"
        )
    # Saving along the way: sciad.simulate(SaveAt(steps=k)) vs a scan that saves as often.
    save_fns = {}
    for every in save_every:
        save_fns[f"lax.scan saving every {every}"] = jax.jit(
            lambda m, y, e=every: scan_saving(m, y, n, e)[2]
        )
        save_fns[f"sciad.simulate saving every {every}"] = jax.jit(
            lambda m, y, e=every: (
                sciad.simulate(m, y, dt=DT, n_steps=n, saveat=sciad.SaveAt(steps=e, fn=_q0)).ys
            )
        )
    save_out = {k: block(f(model, y0)) for k, f in save_fns.items()}
    t_save = interleaved({k: (lambda f=f: f(model, y0)) for k, f in save_fns.items()}, reps)
    print("\nForward runs that save q[0] every k steps (sciad: SaveAt(steps=k, fn=...)):\n")
    print(
        "| k | lax.scan (s) | sciad.simulate (s) | ratio | lax.scan CPU (s) | sciad CPU (s) "
        "| CPU ratio | same values |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for every in save_every:
        a_, b_ = f"lax.scan saving every {every}", f"sciad.simulate saving every {every}"
        same = bool(jnp.array_equal(save_out[a_], save_out[b_]))
        print(
            f"| {every} | {t_save[a_]['wall']:.4f} | {t_save[b_]['wall']:.4f} | "
            f"{t_save[b_]['wall'] / t_save[a_]['wall']:.2f} | {t_save[a_]['cpu']:.4f} | "
            f"{t_save[b_]['cpu']:.4f} | {t_save[b_]['cpu'] / t_save[a_]['cpu']:.2f} | {same} |"
        )
    c5 = skipped if a.quick else composes(diffrax_tsit5, model, y0)
    print(
        f"\ndiffrax Tsit5 + RCA (first-order form, constant step), 100 steps: jvp {c5[0]}, "
        f"hessian {c5[1]}, grad of grad {c5[2]}"
    )
    print(
        "\n(diffrax SemiImplicitEuler is a different, first-order method: its state and "
        "gradient differ from Verlet's by the O(dt) method difference, as expected.)"
    )


if __name__ == "__main__":
    main()
