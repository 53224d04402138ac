"""Overhead of `sciad.simulate` over a hand-written `lax.scan` (forward run only).

Measures: 100,000 velocity-Verlet steps of a 1,000-dimensional harmonic chain
(float64, final state only) with `sciad.simulate(..., integrator=sciad.VelocityVerlet())`,
both with the default `CheckpointAdjoint` and with `DirectAdjoint`, against a
hand-written `jax.lax.scan` of the same kick-drift-kick step (force cached in the
carry, one force evaluation per step). Everything is jitted and compiled before
timing; each figure is the minimum over `--repeats` runs (other processes may share
the CPU). Prints the ratio sciad / scan (bar: <= 1.10) and checks that the final
states agree to 1e-12.

Run:  .venv/bin/python benchmarks/simulate_overhead.py           (full size)
      .venv/bin/python benchmarks/simulate_overhead.py --quick   (smoke test)
"""

import argparse

from _common import (
    block,
    chain_problem,
    interleaved,
    machine,
    verlet_scan,
    verlet_scan_carry,
)
import jax
import jax.numpy as jnp

import sciad

BAR = 1.10


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, for a smoke test")
    ap.add_argument("--dim", type=int, default=None)
    ap.add_argument("--steps", type=int, default=None)
    ap.add_argument("--repeats", type=int, default=None)
    a = ap.parse_args()
    dim = a.dim or (100 if a.quick else 1000)
    n = a.steps or (2_000 if a.quick else 100_000)
    reps = a.repeats or (1 if a.quick else 50)
    dt = 0.01

    print(machine())
    print(f"chain dim={dim}, steps={n}, dt={dt}, float64, min over {reps} runs")
    model, y0 = chain_problem(dim)

    scan = jax.jit(lambda m, y: verlet_scan(m, y, dt, n))

    def sim(adjoint):
        return jax.jit(
            lambda m, y: (
                sciad.simulate(
                    m, y, dt=dt, n_steps=n, integrator=sciad.VelocityVerlet(), adjoint=adjoint
                ).y1
            )
        )

    variants = {
        "lax.scan (anchor)": scan,
        "sciad CheckpointAdjoint": sim(sciad.CheckpointAdjoint()),
        "sciad DirectAdjoint": sim(sciad.DirectAdjoint()),
    }
    outs = {name: block(f(model, y0)) for name, f in variants.items()}  # compile + warm up
    res = interleaved({k: (lambda f=f: f(model, y0)) for k, f in variants.items()}, reps)

    anchor = "lax.scan (anchor)"
    ref = outs[anchor]
    print(
        f"\n{'variant':26s} {'min wall (s)':>12s} {'ratio':>6s} {'min CPU (s)':>11s} "
        f"{'ratio':>6s} {'median wall':>11s} {'max |dy|':>9s}"
    )
    ok = True
    for name in variants:
        err = max(float(jnp.max(jnp.abs(a - b))) for a, b in zip(outs[name], ref, strict=True))
        r = res[name]["wall"] / res[anchor]["wall"]
        rc = res[name]["cpu"] / res[anchor]["cpu"]
        print(
            f"{name:26s} {res[name]['wall']:12.4f} {r:6.3f} {res[name]['cpu']:11.4f} {rc:6.3f} "
            f"{res[name]['median']:11.4f} {err:9.1e}"
        )
        if name != anchor:
            ok &= r <= BAR
            ok &= err <= 1e-12
    # Saving an observable every k steps, against a scan that saves as often
    # (outer scan over saves, inner scan of k steps): the finiteness check is grouped
    # over save intervals, so frequent saves keep the overhead small.
    print()
    save_ratios = {}
    for k in (10,) if a.quick else (1, 10, 100):  # (quick: one interval, the same code path)

        def scan_saving(m, y, k=k):
            def outer(c, _):
                c = verlet_scan_carry(m, c, dt, k)
                return c, c[0][0]

            carry = (y[0], y[1], m.force(0.0, y[0]))
            return jax.lax.scan(outer, carry, None, length=n // k)[1]

        sim_saving = jax.jit(
            lambda m, y, k=k: (
                sciad.simulate(
                    m,
                    y,
                    dt=dt,
                    n_steps=n,
                    integrator=sciad.VelocityVerlet(),
                    saveat=sciad.SaveAt(steps=k, fn=lambda t, yy, mm: yy[0][0]),
                ).ys
            )
        )
        pair = {"scan": jax.jit(scan_saving), "sciad": sim_saving}
        got = {name: block(f(model, y0)) for name, f in pair.items()}
        assert float(jnp.max(jnp.abs(got["scan"] - got["sciad"]))) <= 1e-12
        rk = interleaved({name: (lambda f=f: f(model, y0)) for name, f in pair.items()}, reps)
        save_ratios[k] = rk["sciad"]["wall"] / rk["scan"]["wall"]
        print(
            f"saving every {k:3d} steps: scan {rk['scan']['wall']:.4f} s, sciad "
            f"{rk['sciad']['wall']:.4f} s, ratio {save_ratios[k]:.3f}"
        )
    # Informational: the Python-side cost of calling sciad.simulate without an outer
    # jax.jit (argument checks, the check_state probe, jit dispatch), on a run so small
    # that the steps themselves cost nothing, against a jitted 1-step scan.
    tiny_model, tiny_y0 = chain_problem(3)
    scan_tiny = jax.jit(lambda m, y: verlet_scan(m, y, dt, 1))
    tiny = {
        "sciad.simulate, no outer jit, 1 step": lambda: (
            sciad.simulate(tiny_model, tiny_y0, dt=dt, n_steps=1).y1
        ),
        "jitted lax.scan, 1 step": lambda: scan_tiny(tiny_model, tiny_y0),
    }
    for f in tiny.values():
        block(f())
    res_tiny = interleaved(tiny, 1 if a.quick else 20)
    print()
    for k, v in res_tiny.items():
        print(f"per-call cost, {k}: {v['wall'] * 1e6:.0f} us (min wall)")
    print(
        f"\nbar: wall ratio <= {BAR} and final states agree to 1e-12: {'MET' if ok else 'NOT MET'}"
    )


if __name__ == "__main__":
    main()
