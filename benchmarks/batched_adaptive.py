"""Batched adaptive solving: `sciad.ode.solve` under `jax.vmap` vs raw diffrax and scipy.

Measures, in float64:

1. `jax.vmap` of `sciad.ode.solve(sciad.ode.LotkaVolterra(), y0, ts)` over 10,000
   initial conditions against `jax.vmap` of a raw `diffrax.diffeqsolve` with the same
   solver (Tsit5), the same `PIDController(rtol=1e-6, atol=1e-8)`, the same
   `SaveAt(ts=ts)` (t in [0, 10], 11 save points) and the same `max_steps` (4096).
   Both jitted and compiled before timing; minimum over `--repeats` runs.
   Bar: sciad / diffrax <= 1.05.
2. A Python loop of `scipy.integrate.solve_ivp` (RK45, same rtol/atol, `t_eval=ts`) over
   100 of the initial conditions, scaled x100 to 10,000. Bar: sciad >= 10x faster.

Checks: sciad and raw diffrax agree (they run the same solver), and both agree with
a tight-tolerance scipy reference (DOP853, rtol = atol = 1e-12) to the accuracy that
rtol=1e-6 allows; scipy RK45 likewise.

Run:  .venv/bin/python benchmarks/batched_adaptive.py           (full size)
      .venv/bin/python benchmarks/batched_adaptive.py --quick   (smoke test)
"""

import argparse
import time

from _common import block, interleaved, machine
import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import scipy.integrate

import sciad

RTOL, ATOL = 1e-6, 1e-8
BAR_DIFFRAX = 1.05
BAR_SCIPY = 10.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, for a smoke test")
    ap.add_argument("--batch", type=int, default=None)
    ap.add_argument("--scipy-n", type=int, default=None)
    ap.add_argument("--repeats", type=int, default=None)
    a = ap.parse_args()
    batch = a.batch or (20 if a.quick else 10_000)
    n_scipy = a.scipy_n or (2 if a.quick else 100)
    reps = a.repeats or (1 if a.quick else 10)

    print(machine())
    model = sciad.ode.LotkaVolterra()
    ts = jnp.linspace(0.0, 10.0, 11)
    rng = np.random.default_rng(0)
    y0s = jnp.asarray(
        np.stack([rng.uniform(1.0, 10.0, batch), rng.uniform(0.5, 5.0, batch)], axis=1)
    )
    params = tuple(float(x) for x in (model.alpha, model.beta, model.gamma, model.delta))
    print(
        f"LotkaVolterra(alpha, beta, gamma, delta)={params}, batch={batch}, "
        f"t in [0, 10], {ts.size} saves, Tsit5 + PID(rtol={RTOL}, atol={ATOL}), float64, "
        f"min over {reps} runs"
    )

    @jax.jit
    def run_sciad(m, y0s):
        return jax.vmap(lambda y0: sciad.ode.solve(m, y0, ts, rtol=RTOL, atol=ATOL).ys)(y0s)

    term = diffrax.ODETerm(lambda t, y, m: m.vector_field(t, y))

    @jax.jit
    def run_diffrax(m, y0s):
        def one(y0):
            return diffrax.diffeqsolve(
                term,
                diffrax.Tsit5(),
                t0=ts[0],
                t1=ts[-1],
                dt0=None,
                y0=y0,
                args=m,
                saveat=diffrax.SaveAt(ts=ts),
                stepsize_controller=diffrax.PIDController(rtol=RTOL, atol=ATOL),
                max_steps=4096,
            ).ys

        return jax.vmap(one)(y0s)

    ys_sciad = block(run_sciad(model, y0s))
    ys_diffrax = block(run_diffrax(model, y0s))
    res = interleaved(
        {
            "diffrax (anchor)": lambda: run_diffrax(model, y0s),
            "sciad.ode.solve": lambda: run_sciad(model, y0s),
        },
        reps,
    )

    # scipy: a Python loop over n_scipy initial conditions, scaled to the full batch.
    y0_np = np.asarray(y0s[:n_scipy])
    ts_np = np.asarray(ts)
    alpha, beta, gamma, delta = params

    def f(t, y):
        return [alpha * y[0] - beta * y[0] * y[1], delta * y[0] * y[1] - gamma * y[1]]

    def scipy_loop(method, rtol, atol):
        return np.stack(
            [
                scipy.integrate.solve_ivp(
                    f, (0.0, 10.0), y0, method=method, rtol=rtol, atol=atol, t_eval=ts_np
                ).y.T
                for y0 in y0_np
            ]
        )

    scipy_loop("RK45", RTOL, ATOL)  # warm up
    scipy_times = []
    for _ in range(max(3, reps // 2)):
        t = time.perf_counter()
        ys_scipy = scipy_loop("RK45", RTOL, ATOL)
        scipy_times.append(time.perf_counter() - t)
    t_scipy = min(scipy_times) * batch / n_scipy
    ys_ref = scipy_loop("DOP853", 1e-12, 1e-12)

    t_dfx, t_sci = res["diffrax (anchor)"]["wall"], res["sciad.ode.solve"]["wall"]
    r_dfx = t_sci / t_dfx
    r_cpu = res["sciad.ode.solve"]["cpu"] / res["diffrax (anchor)"]["cpu"]
    speedup = t_scipy / t_sci
    print(f"\n{'variant':34s} {'min wall (s)':>12s} {'min CPU (s)':>11s} {'median wall':>11s}")
    for k, v in res.items():
        print(f"{k:34s} {v['wall']:12.4f} {v['cpu']:11.4f} {v['median']:11.4f}")
    print(
        f"{'scipy RK45 loop, x' + str(batch // n_scipy) + ' (est.)':34s} {t_scipy:12.4f} "
        f"{'':11s} {'':11s}  ({n_scipy} solves: min {min(scipy_times):.4f} s)"
    )
    print(f"\nsciad / diffrax (wall): {r_dfx:.3f}   (CPU time: {r_cpu:.3f})   bar <= {BAR_DIFFRAX}")
    print(f"scipy / sciad speed-up: {speedup:.1f}x   bar >= {BAR_SCIPY}x")

    d_sd = float(jnp.max(jnp.abs(ys_sciad - ys_diffrax)))
    d_ref = float(np.max(np.abs(np.asarray(ys_sciad[:n_scipy]) - ys_ref)))
    d_rk45 = float(np.max(np.abs(ys_scipy - ys_ref)))
    scale = float(np.max(np.abs(ys_ref)))
    print(f"max |sciad - diffrax|                 = {d_sd:.2e}")
    print(f"max |sciad - scipy DOP853 @1e-12|     = {d_ref:.2e}  (solution scale {scale:.1f})")
    print(f"max |scipy RK45 - scipy DOP853 @1e-12| = {d_rk45:.2e}")
    ok_agree = d_sd <= 1e-12 and d_ref <= 1e-3 * scale
    ok1 = r_dfx <= BAR_DIFFRAX
    ok2 = speedup >= BAR_SCIPY
    print(f"bar sciad/diffrax <= {BAR_DIFFRAX}: {'MET' if ok1 else 'NOT MET'}")
    print(f"bar >= {BAR_SCIPY}x faster than scipy: {'MET' if ok2 else 'NOT MET'}")
    print(f"answers agree: {'YES' if ok_agree else 'NO'}")


if __name__ == "__main__":
    main()
