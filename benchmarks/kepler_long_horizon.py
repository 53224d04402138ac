"""Long-horizon energy error: symplectic `sciad.Yoshida4` vs diffrax Tsit5 at the same cost.

Kepler problem `sciad.ode.Kepler(mu=1.0)`, `y0 = model.initial_state(eccentricity=0.5)`
(a = 1, period 2*pi), float64, over T = 2,000 time units (about 318 orbits):

- sciad: 100,000 steps of `sciad.Yoshida4()`, dt = 0.02, 3 force evaluations per step
  (300,000 in all), energy saved every 10 steps with `SaveAt(steps=10, fn=energy)`.
- diffrax Tsit5, `ConstantStepSize`, 50,000 steps of dt = 0.04: Tsit5 uses 6
  vector-field evaluations per step (7 stages, first-same-as-last), so the same
  300,000 evaluations. Energy computed from `SaveAt(steps=True)` at the same times
  (every 5th step, t = 0.2 k) as sciad's.
- diffrax Tsit5 + `PIDController(rtol=atol=tol)`, tol tuned (bisection in log tol) so
  that 6 * num_steps is about 300,000; energy at every step it takes.

Reports, for each: max |dE/E0| over the whole run, over the first and the last 10% of
the time span, the slope of a least-squares line through dE/E0 vs t (per orbit, and
times T), and wall time (jitted, compiled before timing, min over `--repeats` runs),
both for the runs above (with their saving) and for the same runs saving only the
final state.
Expected: Yoshida4's error is bounded (last 10% ~ first 10%, slope ~ 0); Tsit5 drifts
secularly (linear growth of dE/E0).

Run:  .venv/bin/python benchmarks/kepler_long_horizon.py           (full size)
      .venv/bin/python benchmarks/kepler_long_horizon.py --quick   (smoke test)
"""

import argparse
import math

from _common import block, interleaved, machine
import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

import sciad

SAVE_EVERY = 10


def drift_stats(t: np.ndarray, rel: np.ndarray, period: float) -> dict[str, float]:
    t_end = t[-1]
    first = t <= 0.1 * t_end
    last = t >= 0.9 * t_end
    slope = np.polyfit(t, rel, 1)[0]
    return {
        "max": float(np.max(np.abs(rel))),
        "first10": float(np.max(np.abs(rel[first]))),
        "last10": float(np.max(np.abs(rel[last]))),
        "slope_per_orbit": float(slope * period),
        "trend_over_run": float(slope * t_end),
        "final": float(rel[-1]),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, for a smoke test")
    ap.add_argument("--steps", type=int, default=None, help="Yoshida4 steps")
    ap.add_argument("--dt", type=float, default=0.02, help="Yoshida4 step size")
    ap.add_argument("--repeats", type=int, default=None)
    a = ap.parse_args()
    n = a.steps or (1_000 if a.quick else 100_000)
    reps = a.repeats or (1 if a.quick else 7)
    dt = a.dt
    T = n * dt
    evals = 3 * n
    n_tsit = evals // 6

    model = sciad.ode.Kepler(mu=1.0)
    y0 = model.initial_state(eccentricity=0.5)
    period = float(model.period())
    E0 = float(model.energy(y0))
    print(machine())
    print(
        f"Kepler mu=1, e=0.5, a=1, period {period:.4f}; T = {T:g} ({T / period:.1f} orbits); "
        f"E0 = {E0}; budget {evals} force/vector-field evaluations; min over {reps} runs"
    )

    def energy(t, y, m):
        return m.energy(y)

    @jax.jit
    def run_yoshida(m, y0):
        tr = sciad.simulate(
            m,
            y0,
            dt=dt,
            n_steps=n,
            integrator=sciad.Yoshida4(),
            saveat=sciad.SaveAt(t0=True, steps=SAVE_EVERY, fn=energy),
        )
        return tr.ts, tr.ys

    term = diffrax.ODETerm(lambda t, y, m: m.vector_field(t, y))

    @jax.jit
    def run_tsit_const(m, y0):
        sol = diffrax.diffeqsolve(
            term,
            diffrax.Tsit5(),
            t0=0.0,
            t1=T,
            dt0=T / n_tsit,
            y0=y0,
            args=m,
            saveat=diffrax.SaveAt(t0=True, steps=True),
            stepsize_controller=diffrax.ConstantStepSize(),
            max_steps=n_tsit + 16,
        )
        return sol.ts, jax.vmap(m.energy)(sol.ys), sol.stats["num_steps"]

    @eqx.filter_jit
    def run_tsit_adaptive(m, y0, tol):
        sol = diffrax.diffeqsolve(
            term,
            diffrax.Tsit5(),
            t0=0.0,
            t1=T,
            dt0=None,
            y0=y0,
            args=m,
            saveat=diffrax.SaveAt(t0=True, steps=True),
            stepsize_controller=diffrax.PIDController(rtol=tol, atol=tol),
            max_steps=4 * n_tsit,
        )
        return sol.ts, jax.vmap(m.energy)(sol.ys), sol.stats["num_steps"]

    # The same runs, final state only (no saving): the cost of the steps alone.
    @jax.jit
    def final_yoshida(m, y0):
        return sciad.simulate(m, y0, dt=dt, n_steps=n, integrator=sciad.Yoshida4()).y1

    def final_tsit(controller, dt0, max_steps):
        @jax.jit
        def run(m, y0):
            return diffrax.diffeqsolve(
                term,
                diffrax.Tsit5(),
                t0=0.0,
                t1=T,
                dt0=dt0,
                y0=y0,
                args=m,
                saveat=diffrax.SaveAt(t1=True),
                stepsize_controller=controller,
                max_steps=max_steps,
            ).ys

        return run

    # Tune the adaptive tolerance: 6 evaluations per attempted step (+1 for dt0).
    lo, hi = -16.0, -4.0
    tol = 10.0**hi
    for _ in range(14):
        mid = 0.5 * (lo + hi)
        steps = int(run_tsit_adaptive(model, y0, jnp.asarray(10.0**mid))[2])
        if 6 * steps > evals:
            lo = mid
        else:
            hi = mid
        tol = 10.0**hi
    tol_arr = jnp.asarray(tol)

    out_y = block(run_yoshida(model, y0))
    out_c = block(run_tsit_const(model, y0))
    out_a = block(run_tsit_adaptive(model, y0, tol_arr))
    fin = {
        "sciad Yoshida4": final_yoshida,
        "diffrax Tsit5 constant": final_tsit(diffrax.ConstantStepSize(), T / n_tsit, n_tsit + 16),
        "diffrax Tsit5 adaptive": final_tsit(
            diffrax.PIDController(rtol=tol, atol=tol), None, 4 * n_tsit
        ),
    }
    for f in fin.values():
        block(f(model, y0))
    res = interleaved(
        {
            "sciad Yoshida4": lambda: run_yoshida(model, y0),
            "diffrax Tsit5 constant": lambda: run_tsit_const(model, y0),
            "diffrax Tsit5 adaptive": lambda: run_tsit_adaptive(model, y0, tol_arr),
        }
        | {f"{k} (final)": (lambda f=f: f(model, y0)) for k, f in fin.items()},
        reps,
    )

    rows = {}
    t_y, e_y = np.asarray(out_y[0]), np.asarray(out_y[1])
    rows["sciad Yoshida4"] = (
        drift_stats(t_y, (e_y - E0) / abs(E0), period),
        f"dt={dt}, {n} steps",
        evals,
    )
    t_c, e_c, ns_c = np.asarray(out_c[0]), np.asarray(out_c[1]), int(out_c[2])
    keep = np.isfinite(t_c)
    t_c, e_c = t_c[keep], e_c[keep]
    # Tsit5 steps are (T / n_tsit) long: every `stride`-th lands on sciad's save times.
    stride = max(1, round(SAVE_EVERY * dt / (T / n_tsit)))
    assert np.allclose(t_c[::stride][: t_y.size], t_y[: t_c[::stride].size], atol=1e-9)
    rows["diffrax Tsit5 constant"] = (
        drift_stats(t_c[::stride], (e_c[::stride] - E0) / abs(E0), period),
        f"dt={T / n_tsit:g}, {ns_c} steps",
        6 * ns_c,
    )
    t_a, e_a, ns_a = np.asarray(out_a[0]), np.asarray(out_a[1]), int(out_a[2])
    keep = np.isfinite(t_a)
    rows["diffrax Tsit5 adaptive"] = (
        drift_stats(t_a[keep], (e_a[keep] - E0) / abs(E0), period),
        f"rtol=atol={tol:.2e}, {ns_a} steps",
        6 * ns_a + 1,
    )

    print(
        "\n| method | steps | evaluations | max abs dE/E0 | first 10% | last 10% | last/first |"
        " trend per orbit | trend over run | wall, saving (s) | wall, final only (s) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for k, (s, desc, ev) in rows.items():
        print(
            f"| {k} | {desc} | {ev} | {s['max']:.2e} | {s['first10']:.2e} | {s['last10']:.2e} | "
            f"{s['last10'] / s['first10']:.2f} | {s['slope_per_orbit']:+.2e} | "
            f"{s['trend_over_run']:+.2e} | {res[k]['wall']:.4f} | {res[k + ' (final)']['wall']:.4f} |"
        )
    sy = rows["sciad Yoshida4"][0]
    bounded = sy["last10"] <= 2 * sy["first10"] and abs(sy["trend_over_run"]) <= sy["max"]
    print(
        f"\nYoshida4 energy error bounded, no secular drift (last 10% <= 2 x first 10%, "
        f"|trend over run| <= max error): {'YES' if bounded else 'NO'}"
    )
    sc = rows["diffrax Tsit5 constant"][0]
    print(
        f"Tsit5 (same cost) drifts: last/first = {sc['last10'] / sc['first10']:.1f}, "
        f"trend over run {sc['trend_over_run']:+.2e} vs its first-10% max {sc['first10']:.2e}"
    )
    print(
        f"max error ratio Tsit5 constant / Yoshida4 = {sc['max'] / sy['max']:.2f}; "
        f"orbits: {T / period:.1f}; log10 tol = {math.log10(tol):.2f}"
    )


if __name__ == "__main__":
    main()
